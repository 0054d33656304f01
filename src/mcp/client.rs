//! The client side of the wire, for `studioflow client`: one connection to a studioflow server
//! (Streamable HTTP, or stdio to a server process it starts) over rmcp's client, speaking
//! 2026-07-28 and declaring the Tasks extension on every request. It turns rmcp's types into the
//! plain ones below ([`TaskView`], [`ReflowReport`], [`CallError`]), so that the client's polling,
//! state file and terminal never see the protocol. It does not poll, retry or print.

use crate::reflow_text::{MoveLine, ReflowReport, UnresolvedLine};
use super::server::tools::names;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities, ClientConfig,
    ErrorCode, GetTaskParams, Implementation, JsonObject, ProtocolVersion, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{HttpStatusError, StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// The only tool that becomes a task.
const REFLOW_TOOL: &str = names::REFLOW_MONTH;

/// How long one request may take before it counts as a transport failure.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a server is, as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Streamable HTTP endpoint (`http://127.0.0.1:8080/mcp`).
    Http(String),
    /// A server command the client starts, talking to it on its stdin and stdout.
    Stdio(String),
}

/// The log filter for `studioflow client` when `RUST_LOG` is unset: the client tells every
/// failure in its own words, and rmcp's transport worker would say each again first.
pub const LOG_FILTER: &str = "warn,rmcp::transport::worker=off";

/// Why a request did not get an answer the client can use.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The server does not know the task (-32602): it expired, or was never committed.
    #[error("the server does not know task {0}: it expired or was never committed")]
    UnknownTask(String),
    /// The request did not get through, or no answer came back: worth trying again later.
    #[error("{message}")]
    Transport {
        message: String,
        /// What the server asked for with `Retry-After`, if it did.
        retry_after: Option<Duration>,
    },
    /// The server answered with a JSON-RPC error that asking again will not change.
    #[error("the server refused ({code}): {message}")]
    Refused { code: i32, message: String },
    /// The server wants a bearer token (401), or a token with another scope (403): asking
    /// again with the same credentials will not change it.
    #[error("{0}")]
    Denied(String),
}

impl CallError {
    fn transport(message: impl Into<String>) -> Self {
        CallError::Transport { message: message.into(), retry_after: None }
    }
}

/// A task's state, as the client sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Completed, failed and cancelled never change again.
    pub fn is_final(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Cancelled)
    }
}

/// A question the task waits on (the approval gate).
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The key to answer under.
    pub key: String,
    /// The question and the moves it would apply, as the server wrote them.
    pub message: String,
}

/// How a finished task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The reflow was planned, and applied unless it was a dry run or declined.
    Reflow(ReflowReport),
    /// The tool ended with `isError`: the server's message says what to change.
    Refused(String),
    /// The task failed on the server's side.
    Failed(String),
    Cancelled,
}

/// One answer to `tasks/get` (or the handle of a new task).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub id: String,
    pub state: TaskState,
    pub status_message: Option<String>,
    /// How long to wait before asking again, as the server said this time.
    pub poll_interval: Option<Duration>,
    pub ttl: Option<Duration>,
    pub questions: Vec<Question>,
    /// Set once the task is final.
    pub outcome: Option<Outcome>,
}

/// What asking for a reflow gave.
#[derive(Debug)]
pub enum Started {
    /// A task: its handle.
    Task(TaskView),
    /// The server answered at once (a refusal, or a server that made no task of it).
    Answered(Outcome),
}

/// The arguments of one `reflow_month` call.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflowCall {
    pub month: String,
    pub offline_rooms: Vec<String>,
    pub dry_run: bool,
    pub require_approval: bool,
}

/// One open connection to a server.
pub struct Session {
    service: RunningService<RoleClient, ClientConfig>,
}

/// Who we are, and what we can do: the Tasks extension, declared on every request.
fn client_config() -> ClientConfig {
    // rmcp stamps these capabilities (with the protocol version and client info) into every
    // request's `_meta` once discovery chose 2026-07-28, so tasks/* always declare the extension.
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    ClientConfig::new(capabilities, Implementation::new("studioflow-client", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
}

impl Session {
    /// Connects: starts the server command or reaches the URL, then `server/discover`.
    pub async fn connect(endpoint: &Endpoint, token: Option<&str>) -> Result<Session, CallError> {
        let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        let started = match endpoint {
            Endpoint::Http(url) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = token {
                    // rmcp sends this as `Authorization: Bearer <token>`.
                    config = config.auth_header(token);
                }
                crate::tls::install();
                let transport = StreamableHttpClientTransport::from_config(config);
                tokio::time::timeout(REQUEST_TIMEOUT, client_config().serve_with_lifecycle(transport, lifecycle)).await
            }
            Endpoint::Stdio(command) => {
                let mut words = command.split_whitespace();
                let program = words.next().ok_or_else(|| CallError::Refused { code: 0, message: "--stdio needs a command".into() })?;
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(words);
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::inherit())
                    .spawn()
                    .map_err(|e| CallError::transport(format!("starting {command:?}: {e}")))?;
                tokio::time::timeout(REQUEST_TIMEOUT, client_config().serve_with_lifecycle(transport, lifecycle)).await
            }
        };
        match started {
            Ok(Ok(service)) => Ok(Session { service }),
            Ok(Err(e)) => {
                // The transport's error is not the initialisation error's `source`: look at it directly.
                let refused = match &e {
                    rmcp::service::ClientInitializeError::TransportError { error, .. } => denied(error),
                    other => denied(other),
                };
                Err(refused.unwrap_or_else(|| CallError::transport(unreachable(endpoint, &e))))
            }
            Err(_) => {
                let server = match endpoint {
                    Endpoint::Http(url) => url.clone(),
                    Endpoint::Stdio(command) => format!("{command:?}"),
                };
                Err(CallError::transport(format!("the server at {server} gave no answer within 60 s: is it a studioflow server, and is it overloaded?")))
            }
        }
    }

    /// Closes the connection (a stdio server sees its stdin close and exits).
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
    }

    /// Asks for a month reflow; a server that sees the Tasks extension answers with a task.
    pub async fn start_reflow(&self, call: &ReflowCall) -> Result<Started, CallError> {
        let mut arguments = JsonObject::new();
        arguments.insert("month".into(), json!(call.month));
        arguments.insert("offline_rooms".into(), json!(call.offline_rooms));
        arguments.insert("dry_run".into(), json!(call.dry_run));
        arguments.insert("require_approval".into(), json!(call.require_approval));
        let params = CallToolRequestParams::new(REFLOW_TOOL).with_arguments(arguments);
        // The tool's schema, listed first, tells the transport to mirror `month` into the
        // `Mcp-Param-Month` header, which the server requires of a 2026-07-28 call over HTTP.
        timed(self.service.peer().list_tools(None)).await?;
        match timed(self.service.peer().call_tool_once(params)).await? {
            CallToolResponse::Task(created) => Ok(Started::Task(TaskView {
                id: created.task.task_id.clone(),
                state: state(created.task.status),
                status_message: created.task.status_message.clone(),
                poll_interval: created.task.poll_interval_ms.map(Duration::from_millis),
                ttl: created.task.ttl_ms.map(Duration::from_millis),
                questions: Vec::new(),
                outcome: None,
            })),
            CallToolResponse::Complete(result) => Ok(Started::Answered(outcome_of(&result))),
            // rmcp's enum is non-exhaustive: anything else is input asked for before a task exists.
            _ => Err(CallError::Refused { code: 0, message: "the server asked for input before starting a task, which studioflow never does".into() }),
        }
    }

    /// When, where and whose a booking is, for a person to read: "Tue 8 Sep 2026 11:00-12:30  studio-b
    /// client-013 (party of 1)", in the studio's local time. `None` if it cannot be had.
    /// The studio's clients' names by id (`list_clients`, page by page), so that a person reads
    /// whom to call; empty if the server does not answer.
    pub async fn client_names(&self) -> std::collections::HashMap<String, String> {
        let mut names = std::collections::HashMap::new();
        let mut cursor: Option<String> = None;
        // A studio of 50,000 clients is a hundred pages: a bound, not a limit anyone meets.
        for _ in 0..100 {
            let mut arguments = JsonObject::new();
            arguments.insert("limit".into(), json!(500));
            if let Some(cursor) = &cursor {
                arguments.insert("cursor".into(), json!(cursor));
            }
            let params = CallToolRequestParams::new(names::LIST_CLIENTS).with_arguments(arguments);
            let Some(CallToolResponse::Complete(result)) = timed(self.service.peer().call_tool_once(params)).await.ok() else { break };
            let Some(page) = result.structured_content else { break };
            for client in page.get("clients").and_then(|c| c.as_array()).into_iter().flatten() {
                if let (Some(id), Some(name)) = (client.get("id").and_then(|v| v.as_str()), client.get("name").and_then(|v| v.as_str())) {
                    names.insert(id.to_owned(), name.to_owned());
                }
            }
            match page.get("next_cursor").and_then(|c| c.as_str()) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        names
    }

    /// When, where and whose a booking is, in one line; the client by name when `names` has it.
    pub async fn booking_detail(&self, id: &str, names: &std::collections::HashMap<String, String>) -> Option<String> {
        let mut arguments = JsonObject::new();
        arguments.insert("id".into(), json!(id));
        let params = CallToolRequestParams::new(names::GET_BOOKING).with_arguments(arguments);
        let CallToolResponse::Complete(result) = timed(self.service.peer().call_tool_once(params)).await.ok()? else { return None };
        let booking = result.structured_content.as_ref()?.get("booking")?;
        let start = chrono::DateTime::parse_from_rfc3339(booking.get("start")?.as_str()?).ok()?;
        let end = chrono::DateTime::parse_from_rfc3339(booking.get("end")?.as_str()?).ok()?;
        Some(format!(
            "{}-{}  {}  {} (party of {})",
            start.format("%a %-d %b %Y %H:%M"),
            end.format("%H:%M"),
            booking.get("room")?.as_str()?,
            names.get(booking.get("client")?.as_str()?).map_or_else(|| booking.get("client").and_then(|c| c.as_str()).unwrap_or_default(), String::as_str),
            booking.get("party_size")?.as_u64()?
        ))
    }

    /// `tasks/get`.
    pub async fn get(&self, task_id: &str) -> Result<TaskView, CallError> {
        let answer = timed(self.service.peer().get_task(GetTaskParams::new(task_id))).await.map_err(|e| unknown(e, task_id))?;
        let detailed = answer.task;
        let task = &detailed.task;
        let mut view = TaskView {
            id: task.task_id.clone(),
            state: state(task.status),
            status_message: task.status_message.clone(),
            poll_interval: task.poll_interval_ms.map(Duration::from_millis),
            ttl: task.ttl_ms.map(Duration::from_millis),
            questions: Vec::new(),
            outcome: None,
        };
        match &detailed.payload {
            TaskPayload::Working => {}
            TaskPayload::InputRequired { input_requests } => {
                // Read the questions as JSON: every kind of input request carries `params.message`.
                let requests = serde_json::to_value(input_requests).unwrap_or_default();
                if let Value::Object(map) = requests {
                    for (key, request) in map {
                        let message = request["params"]["message"].as_str().unwrap_or("(the server asks without a message)");
                        view.questions.push(Question { key, message: message.to_owned() });
                    }
                }
            }
            TaskPayload::Completed { result } => view.outcome = Some(completed(result)),
            TaskPayload::Failed { error } => {
                let message = error.get("message").and_then(Value::as_str).unwrap_or("no message").to_owned();
                view.outcome = Some(Outcome::Failed(message));
            }
            TaskPayload::Cancelled => view.outcome = Some(Outcome::Cancelled),
            // A payload of a later revision: keep polling until a state we know.
            _ => {}
        }
        Ok(view)
    }

    /// `tasks/update`: answers the approval question (`accept`, `decline` or `cancel`).
    pub async fn answer(&self, task_id: &str, key: &str, action: &str) -> Result<(), CallError> {
        let mut responses = std::collections::BTreeMap::new();
        responses.insert(key.to_owned(), json!({"action": action, "content": {}}));
        timed(self.service.peer().update_task(UpdateTaskParams::new(task_id, responses))).await.map_err(|e| unknown(e, task_id))
    }

    /// `tasks/cancel`.
    pub async fn cancel(&self, task_id: &str) -> Result<(), CallError> {
        timed(self.service.peer().cancel_task(CancelTaskParams::new(task_id))).await.map_err(|e| unknown(e, task_id))
    }
}

async fn timed<T>(request: impl std::future::Future<Output = Result<T, ServiceError>>) -> Result<T, CallError> {
    match tokio::time::timeout(REQUEST_TIMEOUT, request).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(call_error(e)),
        Err(_) => Err(CallError::transport("no answer within 60 s")),
    }
}

/// -32602 on a task request means the task is unknown to the server.
fn unknown(e: CallError, task_id: &str) -> CallError {
    match e {
        CallError::Refused { code, .. } if code == ErrorCode::INVALID_PARAMS.0 => CallError::UnknownTask(task_id.to_owned()),
        other => other,
    }
}

/// A 401 or 403 from the server, somewhere down `error`'s sources, told as what to do.
/// What a person reads when the server could not be reached: what happened, at the bottom of
/// the error's chain (the SDK's own layers name Rust types, which say nothing to them), and what
/// to check.
fn unreachable(endpoint: &Endpoint, error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error.to_string();
    let mut source = error.source();
    while let Some(current) = source {
        cause = current.to_string();
        source = current.source();
    }
    // A layer that wraps the rest names a type (`Transport [rmcp::…]`): keep only what follows,
    // without the SDK's note of which request it was.
    if let Some(at) = cause.rfind("error: ") {
        cause = cause[at + "error: ".len()..].to_owned();
    }
    if let Some(at) = cause.find(", when send") {
        cause.truncate(at);
    }
    if cause.starts_with("error sending request") {
        cause = "nothing answered (the connection failed)".to_owned();
    }
    match endpoint {
        Endpoint::Http(url) => format!(
            "cannot reach the server at {url}: {cause}. Check that `studioflow serve --http ...` is running there, and that --server is its /mcp URL"
        ),
        Endpoint::Stdio(command) => {
            format!("the server started with {command:?} stopped before it answered: {cause}. Run that command alone to see why")
        }
    }
}

fn denied(error: &(dyn std::error::Error + 'static)) -> Option<CallError> {
    let mut source = Some(error);
    while let Some(current) = source {
        match current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::AuthRequired(_)) => {
                return Some(CallError::Denied(
                    "the server needs a valid bearer token (401): give one with --token or STUDIOFLOW_TOKEN (the studio \
                     creates them with `studioflow token create`); a token that was revoked or expired needs replacing"
                        .into(),
                ));
            }
            Some(StreamableHttpError::InsufficientScope(e)) => {
                let scope = e.required_scope.as_deref().unwrap_or("another scope");
                return Some(CallError::Denied(format!("the token lacks the scope this needs (403): use a token with {scope}")));
            }
            _ => source = current.source(),
        }
    }
    None
}

fn call_error(e: ServiceError) -> CallError {
    match e {
        // Our own failures (-32603) may pass: ask again later.
        ServiceError::McpError(data) if data.code == ErrorCode::INTERNAL_ERROR => {
            CallError::transport(format!("the server failed: {}", data.message))
        }
        ServiceError::McpError(data) => CallError::Refused { code: data.code.0, message: data.message.to_string() },
        ServiceError::TransportSend(error) => {
            if let Some(refused) = denied(error.error.as_ref()) {
                return refused;
            }
            // A 429 or 5xx keeps its Retry-After, somewhere down the error's sources.
            let mut retry_after = None;
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
            while let Some(current) = source {
                // The HTTP transport's error wraps the status `transparent`, so look inside it too.
                let status = match current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                    Some(StreamableHttpError::HttpStatus(status)) => Some(status),
                    _ => current.downcast_ref::<HttpStatusError>(),
                };
                if let Some(status) = status {
                    retry_after = status.retry_after.as_deref().and_then(parse_retry_after);
                    break;
                }
                source = current.source();
            }
            CallError::Transport { message: format!("{error}"), retry_after }
        }
        other => CallError::transport(other.to_string()),
    }
}

/// `Retry-After`: seconds, or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

fn state(status: rmcp::model::TaskStatus) -> TaskState {
    use rmcp::model::TaskStatus as S;
    match status {
        S::Working => TaskState::Working,
        S::InputRequired => TaskState::InputRequired,
        S::Completed => TaskState::Completed,
        S::Failed => TaskState::Failed,
        S::Cancelled => TaskState::Cancelled,
        // A state of a later revision: not one of the final ones we know, so keep polling.
        _ => TaskState::Working,
    }
}

fn completed(result: &JsonObject) -> Outcome {
    match serde_json::from_value::<CallToolResult>(Value::Object(result.clone())) {
        Ok(result) => outcome_of(&result),
        Err(e) => Outcome::Failed(format!("the task's result is not a tool result: {e}")),
    }
}

fn text_of(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect::<Vec<_>>().join("\n")
}

/// The structured answer of `reflow_month`, read back (the fields the client prints).
#[derive(Deserialize)]
struct ReflowOut {
    reflow_id: String,
    month: String,
    applied: bool,
    affected: usize,
    cost: i64,
    lower_bound: Option<i64>,
    /// Absent from servers before prices were kept.
    #[serde(default)]
    absorbed: i64,
    unresolved_bookings: Vec<UnresolvedOut>,
    moves: Vec<MoveOut>,
}

#[derive(Deserialize)]
struct UnresolvedOut {
    booking: String,
    reason: String,
}

#[derive(Deserialize)]
struct MoveOut {
    booking: String,
    from_room: String,
    from_start: String,
    to_room: String,
    to_start: String,
    #[serde(default)]
    from_engineer: Option<String>,
    #[serde(default)]
    to_engineer: Option<String>,
}

fn outcome_of(result: &CallToolResult) -> Outcome {
    if result.is_error == Some(true) {
        return Outcome::Refused(text_of(result));
    }
    let Some(structured) = &result.structured_content else {
        return Outcome::Failed(format!("the reflow's answer has no structured content: {}", text_of(result)));
    };
    match serde_json::from_value::<ReflowOut>(structured.clone()) {
        Ok(r) => Outcome::Reflow(ReflowReport {
            reflow_id: r.reflow_id,
            month: r.month,
            applied: r.applied,
            affected: r.affected,
            cost: r.cost,
            lower_bound: r.lower_bound,
            absorbed: r.absorbed,
            moves: r
                .moves
                .into_iter()
                .map(|m| MoveLine {
                    shifted: m.to_start != m.from_start,
                    booking: m.booking,
                    from_room: m.from_room,
                    to_room: m.to_room,
                    from_engineer: m.from_engineer,
                    to_engineer: m.to_engineer,
                })
                .collect(),
            unresolved: r.unresolved_bookings.into_iter().map(|u| UnresolvedLine { booking: u.booking, detail: None, reason: u.reason }).collect(),
        }),
        Err(e) => Outcome::Failed(format!("the reflow's answer does not read as a reflow: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn a_reflow_answer_reads_back_as_a_report() {
        let mut result = CallToolResult::success(vec![rmcp::model::ContentBlock::text("Moved 1 booking; 1 unresolved.")]);
        result.structured_content = Some(json!({
            "reflow_id": "rf_0001", "month": "2026-09", "applied": true, "affected": 2, "moved": 1, "unresolved": 1,
            "cost": 1001, "lower_bound": 1001,
            "unresolved_bookings": [{"booking": "bk_2", "reason": "pinned by staff"}],
            "moves": [{"booking": "bk_1", "from_room": "b", "from_start": "2026-09-08T10:00:00+01:00",
                       "to_room": "a", "to_start": "2026-09-08T10:00:00+01:00", "to_end": "2026-09-08T11:00:00+01:00"}]
        }));
        let Outcome::Reflow(report) = outcome_of(&result) else { panic!("not a reflow") };
        assert_eq!(
            report.moves[0],
            MoveLine { booking: "bk_1".into(), from_room: "b".into(), to_room: "a".into(), shifted: false, from_engineer: None, to_engineer: None }
        );
        assert_eq!(report.unresolved[0].reason, "pinned by staff");
        let refused = CallToolResult::error(vec![rmcp::model::ContentBlock::text("unknown room x")]);
        assert_eq!(outcome_of(&refused), Outcome::Refused("unknown room x".into()));
    }
}
