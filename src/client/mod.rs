//! `studioflow client`: an MCP client for a studioflow server that asks for month reflows as
//! durable tasks and follows them the way the Tasks extension asks of clients. It saves a task's id
//! the moment the handle arrives (before printing anything), polls no faster than the server
//! asks, and picks saved tasks up again after a crash (`resume`) instead of starting a second
//! reflow. The wire is `mcp::client`'s business; this module knows no protocol type.
//!
//! - [`state`]: the state file of tasks started and not yet seen to end.
//! - [`poll`]: following one task to its end.
//! - [`terminal`]: progress, notes and the approval question on stderr.
//!
//! Exit codes: 0 completed (or nothing to do); 1 failed, refused after it started, unknown to the
//! server, or the server unreachable; 2 bad flags or a request the server refused at once;
//! 3 cancelled; 4 waiting for an answer that no one gave (no terminal, no `--answer`);
//! 130 interrupted by Ctrl-C (the task goes on, and stays saved).

pub mod poll;
pub mod state;
pub mod terminal;

use crate::mcp::client::{CallError, Endpoint, Outcome, Question, ReflowCall, Session, Started};
use anyhow::{anyhow, Context};
use poll::{Ending, Link};
use state::{now, SavedRequest, SavedServer, SavedTask, StateFile};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use terminal::{say, Answer, Progress};

/// How a client command ended, as its exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    Done,
    Cancelled,
    Unanswered,
    Failed,
    Interrupted,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Done => 0,
            Exit::Failed => 1,
            Exit::Cancelled => 3,
            Exit::Unanswered => 4,
            Exit::Interrupted => 130,
        }
    }
}

/// Why a client command could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The flags or the request were wrong (exit 2); the message says what to change.
    #[error("{0}")]
    Input(String),
    /// Exit 1.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<state::StateError> for ClientError {
    fn from(e: state::StateError) -> Self {
        match e {
            state::StateError::NoHome => ClientError::Input(e.to_string()),
            other => ClientError::Failed(other.into()),
        }
    }
}

/// Which server, as the flags said: at most one of `--server` and `--stdio`.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    pub server: Option<String>,
    pub stdio: Option<String>,
    pub token: Option<String>,
}

impl Connection {
    fn endpoint(&self) -> Result<Option<Endpoint>, ClientError> {
        match (&self.server, &self.stdio) {
            (Some(_), Some(_)) => Err(ClientError::Input("give --server URL or --stdio COMMAND, not both".into())),
            (Some(url), None) => Ok(Some(Endpoint::Http(endpoint_url(url)?))),
            (None, Some(command)) if command.split_whitespace().next().is_some() => Ok(Some(Endpoint::Stdio(command.clone()))),
            (None, Some(_)) => Err(ClientError::Input("--stdio needs a command, e.g. --stdio \"studioflow serve --db studio.db\"".into())),
            (None, None) => Ok(None),
        }
    }

    fn required_endpoint(&self) -> Result<Endpoint, ClientError> {
        self.endpoint()?.ok_or_else(|| {
            ClientError::Input("say which server: --server http://HOST:PORT/mcp or --stdio \"studioflow serve --db FILE\"".into())
        })
    }
}

/// `http://127.0.0.1:8080` means `http://127.0.0.1:8080/mcp`, the one endpoint `serve` has;
/// `https://` reaches a server behind a TLS proxy (the platform's CA certificates are trusted).
fn endpoint_url(url: &str) -> Result<String, ClientError> {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).ok_or_else(|| {
        ClientError::Input(format!("--server {url:?}: give an http:// or https:// URL, e.g. http://127.0.0.1:8080/mcp"))
    })?;
    Ok(if rest.contains('/') { url.to_owned() } else { format!("{url}/mcp") })
}

/// A failed connection: a refused credential is the caller's to fix (exit 2), anything else ours.
fn connect_error(e: CallError) -> ClientError {
    match e {
        CallError::Denied(message) => ClientError::Input(message),
        other => anyhow!("{other}").into(),
    }
}

fn saved_server(endpoint: &Endpoint) -> SavedServer {
    match endpoint {
        Endpoint::Http(url) => SavedServer::Http(url.clone()),
        Endpoint::Stdio(command) => SavedServer::Stdio(command.clone()),
    }
}

fn endpoint_of(server: &SavedServer) -> Endpoint {
    match server {
        SavedServer::Http(url) => Endpoint::Http(url.clone()),
        SavedServer::Stdio(command) => Endpoint::Stdio(command.clone()),
    }
}

/// The flags that reach `server` again, for the hints we print.
fn server_flags(server: &SavedServer) -> String {
    match server {
        SavedServer::Http(url) => format!("--server {url}"),
        SavedServer::Stdio(command) => format!("--stdio \"{command}\""),
    }
}

fn state_file(path: Option<PathBuf>) -> Result<StateFile, ClientError> {
    Ok(StateFile::new(match path {
        Some(path) => path,
        None => StateFile::default_path()?,
    }))
}

/// The `--state` flag as the hints print it: nothing for the default file.
/// The flags a command printed for later (`resume`, `cancel`) needs to reach the same task: the
/// state file when one was given, and a token when one was given on the command line (named, never
/// shown: `--token TOKEN` stands for the same secret; one from STUDIOFLOW_TOKEN is there anyway).
fn hint_flags(state: &StateFile, given: bool, connection: &Connection) -> String {
    let mut flags = if given { format!(" --state {}", state.path().display()) } else { String::new() };
    if connection.token.is_some() && std::env::var("STUDIOFLOW_TOKEN").ok() != connection.token {
        flags += " --token TOKEN";
    }
    flags
}

/// What `client reflow` asks for.
#[derive(Debug, Clone)]
pub struct ReflowArgs {
    pub month: String,
    pub offline: Vec<String>,
    pub dry_run: bool,
    pub require_approval: bool,
    pub answer: Option<Answer>,
    pub state: Option<PathBuf>,
}

/// Runs a client command on its own runtime. A question waiting on stdin cannot be cancelled, so
/// the runtime is not waited for at exit.
fn run<T>(work: impl std::future::Future<Output = T>) -> Result<T, ClientError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the client's runtime")?;
    let outcome = runtime.block_on(work);
    runtime.shutdown_background();
    Ok(outcome)
}

/// `client reflow`: asks for the reflow as a task, saves its id, follows it to its end.
pub fn reflow(connection: &Connection, args: ReflowArgs) -> Result<Exit, ClientError> {
    let endpoint = connection.required_endpoint()?;
    let month_ok = args.month.len() == 7
        && args.month.as_bytes()[4] == b'-'
        && args.month.bytes().enumerate().all(|(i, b)| i == 4 || b.is_ascii_digit());
    if !month_ok {
        return Err(ClientError::Input(format!("--month {:?}: give the month as YYYY-MM, e.g. 2026-09", args.month)));
    }
    let offline: Vec<String> = args.offline.iter().map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()).collect();
    if offline.is_empty() {
        return Err(ClientError::Input("--offline: name at least one room".into()));
    }
    let given_state = args.state.is_some();
    let state = state_file(args.state)?;
    let flags = hint_flags(&state, given_state, connection);
    // Read the state file before asking the server for anything, so that an unreadable one stops us
    // before a task exists that we could not save.
    state.load()?;
    let call = ReflowCall { month: args.month.clone(), offline_rooms: offline.clone(), dry_run: args.dry_run, require_approval: args.require_approval };
    let token = connection.token.clone();
    run(async move {
        let session = Session::connect(&endpoint, token.as_deref()).await.map_err(connect_error)?;
        let started = match session.start_reflow(&call).await {
            Ok(started) => started,
            Err(CallError::Refused { code, message }) => {
                session.close().await;
                return Err(ClientError::Input(format!("the server refused the request ({code}): {message}")));
            }
            Err(CallError::Denied(message)) => {
                session.close().await;
                return Err(ClientError::Input(message));
            }
            Err(e) => {
                session.close().await;
                return Err(anyhow!("asking for the reflow: {e} (if the request reached the server, a second one is refused with the running task's id)").into());
            }
        };
        let task = match started {
            Started::Task(task) => task,
            Started::Answered(outcome) => {
                session.close().await;
                return match outcome {
                    Outcome::Refused(message) => Err(ClientError::Input(message)),
                    other => Ok(tell(&other)?),
                };
            }
        };
        // Durable before visible: the task is saved before anything is printed.
        let server = saved_server(&endpoint);
        let interval = task.poll_interval.unwrap_or(poll::DEFAULT_INTERVAL).max(poll::MIN_INTERVAL);
        let saved = state.add(SavedTask {
            task_id: task.id.clone(),
            server: server.clone(),
            request: SavedRequest { month: call.month.clone(), offline_rooms: call.offline_rooms.clone(), dry_run: call.dry_run, require_approval: call.require_approval },
            started_at: now(),
            last_status: task.state.as_str().to_owned(),
            last_message: task.status_message.clone(),
            last_seen_at: now(),
            poll_interval_ms: interval.as_millis() as u64,
        });
        let mut progress = Progress::new();
        match saved {
            Ok(()) => progress.note(&format!("Task {} started on {server}; saved in {}.", task.id, state.path().display())),
            // The task runs anyway: follow it, and say how to reach it without the file.
            Err(e) => progress.note(&format!(
                "Task {} started on {server}, but it could not be saved ({e}); if this client stops, cancel it with `studioflow client cancel {} {}`.",
                task.id, task.id, server_flags(&server)
            )),
        }
        progress.show(&task);
        let mut link = Link::new(endpoint, token, Some(session));
        let ending = poll::follow(&mut link, &task.id, interval, args.answer, &state, &mut progress).await;
        let ending = with_details(&mut link, ending).await;
        link.close().await;
        finish(&task.id, &server, ending?, &state, &flags, &mut progress)
    })?
}

/// The most unresolved bookings looked up for their details; the rest are listed by id.
const DETAILS_AT_MOST: usize = 200;

/// Adds when, where and whose each unresolved booking is (best effort: one `get_booking` each),
/// so that the list says whom to call, as `demo`'s does.
async fn with_details(link: &mut Link, ending: anyhow::Result<Ending>) -> anyhow::Result<Ending> {
    let Ok(Ending::Final(mut task)) = ending else { return ending };
    if let Some(Outcome::Reflow(report)) = &mut task.outcome
        && let Ok(session) = link.session().await
    {
        let names = if report.unresolved.is_empty() { Default::default() } else { session.client_names().await };
        for line in report.unresolved.iter_mut().take(DETAILS_AT_MOST) {
            line.detail = session.booking_detail(&line.booking, &names).await;
            // A server that stopped answering is not asked again for each of the rest.
            if line.detail.is_none() {
                break;
            }
        }
    }
    Ok(Ending::Final(task))
}

/// Tells the end of a followed task, forgets it when it is over, and says what the exit is.
fn finish(task_id: &str, server: &SavedServer, ending: Ending, state: &StateFile, flag: &str, progress: &mut Progress) -> Result<Exit, ClientError> {
    match ending {
        Ending::Final(task) => {
            let outcome = task.outcome.clone().unwrap_or(Outcome::Failed("the server sent no result".into()));
            let exit = tell(&outcome)?;
            state.remove(task_id)?;
            Ok(exit)
        }
        Ending::Unknown => {
            progress.note(&format!(
                "Task {task_id} is unknown to {server}: it expired, or was never committed. It is forgotten here; no new reflow was started."
            ));
            state.remove(task_id)?;
            Ok(Exit::Failed)
        }
        Ending::Unanswered(questions) => {
            for Question { message, .. } in &questions {
                progress.note(message);
            }
            progress.note(&format!(
                "Task {task_id} waits for an answer, and there is no terminal to ask on. Answer with \
                 `studioflow client resume{flag} --answer accept` (or decline), or cancel with \
                 `studioflow client cancel {task_id}{flag}`."
            ));
            Ok(Exit::Unanswered)
        }
        Ending::Interrupted => {
            progress.note(&format!(
                "Stopped following task {task_id}: it keeps running on {server}, and stays saved in {}.\n  \
                 Pick it up again: studioflow client resume{flag}\n  \
                 Or cancel it:      studioflow client cancel {task_id}{flag}",
                state.path().display()
            ));
            Ok(Exit::Interrupted)
        }
        Ending::Unreachable(message) => {
            progress.note(&format!(
                "No answer from {server} for 10 minutes ({message}). Task {task_id} stays saved: `studioflow client resume{flag}` later."
            ));
            Ok(Exit::Failed)
        }
    }
}

/// Prints a finished task's outcome: the reflow on stdout, a failure on stderr.
fn tell(outcome: &Outcome) -> Result<Exit, ClientError> {
    let mut out = std::io::stdout().lock();
    let written: std::io::Result<Exit> = (|| match outcome {
        Outcome::Reflow(report) => {
            report.write_headline(&mut out)?;
            report.write_engineer_changes(&mut out)?;
            report.write_unresolved(&mut out)?;
            Ok(Exit::Done)
        }
        Outcome::Refused(message) => {
            say(&format!("The reflow was refused: {message}"));
            Ok(Exit::Failed)
        }
        Outcome::Failed(message) => {
            say(&format!("The reflow failed on the server: {message}"));
            Ok(Exit::Failed)
        }
        Outcome::Cancelled => {
            say("The reflow was cancelled: nothing of it was applied.");
            Ok(Exit::Cancelled)
        }
    })();
    out.flush().context("writing the result")?;
    Ok(written.context("writing the result")?)
}

/// `client resume`: follows every saved task to its end, one after another.
pub fn resume(connection: &Connection, state: Option<PathBuf>, answer: Option<Answer>) -> Result<Exit, ClientError> {
    // A server named on the command line is used only to pick which saved tasks to resume.
    let only = connection.endpoint()?.map(|e| saved_server(&e));
    let given_state = state.is_some();
    let state = state_file(state)?;
    let flags = hint_flags(&state, given_state, connection);
    let saved = state.load()?;
    let tasks: Vec<SavedTask> = saved.iter().filter(|t| only.as_ref().is_none_or(|s| *s == t.server)).cloned().collect();
    if tasks.is_empty() {
        if let (Some(only), false) = (&only, saved.is_empty()) {
            // Tasks are saved, for other servers: resuming nothing there is a mistake, not success.
            let servers: std::collections::BTreeSet<String> = saved.iter().map(|t| t.server.to_string()).collect();
            return Err(ClientError::Input(format!(
                "no saved task is on {only}; {} saved in {} {} on {}: resume {} without --server/--stdio, or with that server",
                saved.len(),
                state.path().display(),
                if saved.len() == 1 { "is" } else { "are" },
                servers.into_iter().collect::<Vec<_>>().join(", "),
                if saved.len() == 1 { "it" } else { "them" },
            )));
        }
        say(&format!("No saved task to resume in {}.", state.path().display()));
        return Ok(Exit::Done);
    }
    let token = connection.token.clone();
    run(async move {
        let mut worst = Exit::Done;
        for saved in tasks {
            let mut progress = Progress::new();
            progress.note(&format!(
                "Resuming task {} ({}) on {}, started {}; last seen {}.",
                saved.task_id, saved.request, saved.server, saved.started_at, saved.last_status
            ));
            let mut link = Link::new(endpoint_of(&saved.server), token.clone(), None);
            let first_wait = Duration::from_millis(saved.poll_interval_ms);
            let ending = poll::follow(&mut link, &saved.task_id, first_wait, answer, &state, &mut progress).await;
            let ending = with_details(&mut link, ending).await;
            link.close().await;
            let exit = finish(&saved.task_id, &saved.server, ending?, &state, &flags, &mut progress)?;
            worst = worst.max(exit);
            if exit == Exit::Interrupted {
                break;
            }
        }
        Ok(worst)
    })?
}

/// `client status`: the saved tasks with their last known state; asks no server.
pub fn status(state: Option<PathBuf>) -> Result<Exit, ClientError> {
    let state = state_file(state)?;
    let tasks = state.load()?;
    let mut out = std::io::stdout().lock();
    let written: std::io::Result<()> = (|| {
        if tasks.is_empty() {
            writeln!(out, "No saved task in {}.", state.path().display())?;
        }
        for t in &tasks {
            writeln!(out, "{}  {}", t.task_id, t.request)?;
            writeln!(out, "    on {}, started {}", t.server, t.started_at)?;
            let message = t.last_message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
            writeln!(out, "    last seen {} at {}{message}", t.last_status, t.last_seen_at)?;
        }
        Ok(())
    })();
    written.context("writing the list")?;
    Ok(Exit::Done)
}

/// `client cancel`: asks the server to cancel a task, shows where it ended, and forgets it if it
/// is over. The server is the saved one unless `--server`/`--stdio` names another.
pub fn cancel(connection: &Connection, task_id: &str, state: Option<PathBuf>) -> Result<Exit, ClientError> {
    let state = state_file(state)?;
    let saved = state.load()?.into_iter().find(|t| t.task_id == task_id);
    let endpoint = match (connection.endpoint()?, &saved) {
        (Some(endpoint), _) => endpoint,
        (None, Some(saved)) => endpoint_of(&saved.server),
        (None, None) => return Err(ClientError::Input(format!(
            "task {task_id} is not saved in {}: say which server with --server URL or --stdio COMMAND",
            state.path().display()
        ))),
    };
    let token = connection.token.clone();
    let task_id = task_id.to_owned();
    run(async move {
        let session = Session::connect(&endpoint, token.as_deref()).await.map_err(connect_error)?;
        let asked = async {
            session.cancel(&task_id).await?;
            session.get(&task_id).await
        }
        .await;
        session.close().await;
        match asked {
            Ok(task) => {
                say(&format!("Task {task_id} is {}.", task.state.as_str()));
                if task.state.is_final() {
                    state.remove(&task_id)?;
                    if task.state == crate::mcp::client::TaskState::Completed {
                        say("It had already completed: cancelling changed nothing, and it is no longer saved.");
                    }
                }
                Ok(Exit::Done)
            }
            Err(CallError::UnknownTask(_)) => {
                say(&format!("Task {task_id} is unknown to the server: it expired, or was never committed."));
                state.remove(&task_id)?;
                Ok(Exit::Failed)
            }
            Err(e) => Err(anyhow!("cancelling {task_id}: {e}").into()),
        }
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_server_address_means_its_mcp_endpoint() {
        assert_eq!(endpoint_url("http://127.0.0.1:8080").unwrap(), "http://127.0.0.1:8080/mcp");
        assert_eq!(endpoint_url("http://h:1/mcp").unwrap(), "http://h:1/mcp");
        assert!(endpoint_url("127.0.0.1:8080").is_err());
        assert_eq!(endpoint_url("https://studio.example").unwrap(), "https://studio.example/mcp");
        assert!(endpoint_url("ftp://studio.example/mcp").is_err());
    }

    #[test]
    fn the_worst_exit_wins() {
        assert_eq!([Exit::Done, Exit::Cancelled, Exit::Failed].into_iter().max(), Some(Exit::Failed));
        assert_eq!(Exit::Cancelled.code(), 3);
    }
}
