//! Following one task to its end, politely: `tasks/get` never sooner than the `pollIntervalMs` of
//! the previous answer (re-read at every answer), longer waits after transport errors (doubling,
//! and at least what `Retry-After` asked), a reconnect after a lost connection, the approval
//! question answered from `--answer` or asked on a terminal, and Ctrl-C at any wait. It keeps the
//! state file's last known state up to date (best effort), and never removes an entry: its caller
//! does, once the end has been told.

use super::state::{now, StateFile};
use super::terminal::{self, Answer, Progress};
use crate::mcp::client::{CallError, Endpoint, Question, Session, TaskState, TaskView};
use std::time::Duration;

/// The wait when a server gives no poll interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Never poll more often than this, whatever a server says.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The first wait after a transport error; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Stop trying after this long without a single answer (the task stays saved).
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);

/// How following a task ended.
#[derive(Debug)]
pub enum Ending {
    /// The task reached a final state; its last answer.
    Final(Box<TaskView>),
    /// The server does not know the task (-32602): expired, or never committed.
    Unknown,
    /// The task waits for an answer, and no one can give it here (no terminal, no `--answer`).
    Unanswered(Vec<Question>),
    /// Ctrl-C.
    Interrupted,
    /// No answer from the server for [`GIVE_UP_AFTER`].
    Unreachable(String),
}

/// The server of one task, connected when needed and reconnected after a failure.
pub struct Link {
    endpoint: Endpoint,
    token: Option<String>,
    session: Option<Session>,
}

impl Link {
    pub fn new(endpoint: Endpoint, token: Option<String>, session: Option<Session>) -> Self {
        Link { endpoint, token, session }
    }

    /// The open session, connecting first if there is none.
    pub async fn session(&mut self) -> Result<&Session, CallError> {
        if self.session.is_none() {
            self.session = Some(Session::connect(&self.endpoint, self.token.as_deref()).await?);
        }
        self.session.as_ref().ok_or_else(|| CallError::Transport { message: "not connected".into(), retry_after: None })
    }

    /// Forgets the session after a transport failure, so the next call connects afresh.
    pub async fn drop_session(&mut self) {
        if let Some(session) = self.session.take() {
            session.close().await;
        }
    }

    pub async fn close(mut self) {
        self.drop_session().await;
    }
}

/// The wait after the `failures`-th transport failure in a row: doubling from [`FIRST_BACKOFF`] up
/// to [`MAX_BACKOFF`], and never shorter than the poll interval or than `Retry-After` asked.
pub fn after_failure(failures: u32, retry_after: Option<Duration>, interval: Duration) -> Duration {
    let doubling = FIRST_BACKOFF.saturating_mul(1 << failures.clamp(1, 7).saturating_sub(1)).min(MAX_BACKOFF);
    doubling.max(retry_after.unwrap_or_default()).max(interval)
}

/// Resolves on Ctrl-C (SIGINT); never, if the signal cannot be watched.
pub async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Follows `task_id` until it ends. The first `tasks/get` goes out after `first_wait`: the handle's
/// poll interval for a new task, the saved one for a resumed task (whose previous client may have
/// polled just before it died).
pub async fn follow(
    link: &mut Link,
    task_id: &str,
    first_wait: Duration,
    answer: Option<Answer>,
    state: &StateFile,
    progress: &mut Progress,
) -> anyhow::Result<Ending> {
    let mut wait = first_wait;
    // The server's latest poll interval: no poll, even after a failure, comes sooner.
    let mut interval = first_wait;
    let mut failures = 0u32;
    let mut unreachable_since: Option<std::time::Instant> = None;
    let mut last_state: Option<TaskState> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = ctrl_c() => return Ok(Ending::Interrupted),
        }
        let asked = tokio::select! {
            asked = async {
                let session = link.session().await?;
                session.get(task_id).await
            } => asked,
            _ = ctrl_c() => return Ok(Ending::Interrupted),
        };
        let task = match asked {
            Ok(task) => task,
            Err(CallError::UnknownTask(_)) => return Ok(Ending::Unknown),
            Err(CallError::Transport { message, retry_after }) => {
                link.drop_session().await;
                failures += 1;
                let since = *unreachable_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= GIVE_UP_AFTER {
                    return Ok(Ending::Unreachable(message));
                }
                wait = after_failure(failures, retry_after, interval);
                progress.note(&format!("  the server did not answer ({message}); asking again in {:.1} s", wait.as_secs_f64()));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        failures = 0;
        unreachable_since = None;
        interval = task.poll_interval.unwrap_or(DEFAULT_INTERVAL).max(MIN_INTERVAL);
        wait = interval;
        progress.show(&task);
        if last_state != Some(task.state) {
            last_state = Some(task.state);
            let (status, message, interval) = (task.state.as_str(), task.status_message.clone(), wait.as_millis() as u64);
            if !task.state.is_final() {
                let saved = state.update(task_id, |saved| {
                    saved.last_status = status.to_owned();
                    saved.last_message = message;
                    saved.last_seen_at = now();
                    saved.poll_interval_ms = interval;
                });
                // Only `status` reads these; a full disk is no reason to stop following the task.
                if let Err(e) = saved {
                    progress.note(&format!("  could not note the task's state in the state file: {e}"));
                }
            }
        }
        match task.state {
            s if s.is_final() => {
                progress.end_line();
                return Ok(Ending::Final(Box::new(task)));
            }
            TaskState::InputRequired if !task.questions.is_empty() => {
                progress.end_line();
                let chosen = match answer {
                    Some(answer) => {
                        for q in &task.questions {
                            progress.note(&q.message);
                        }
                        progress.note(&format!("Answering {} (--answer).", answer.action()));
                        Some(answer)
                    }
                    None if terminal::can_ask() => {
                        let question = task.questions.iter().map(|q| q.message.as_str()).collect::<Vec<_>>().join("\n");
                        let asked = tokio::task::spawn_blocking(move || terminal::ask(&question));
                        tokio::select! {
                            asked = asked => asked.ok().flatten(),
                            _ = ctrl_c() => return Ok(Ending::Interrupted),
                        }
                    }
                    None => None,
                };
                let Some(chosen) = chosen else { return Ok(Ending::Unanswered(task.questions)) };
                for q in &task.questions {
                    let sent = async {
                        let session = link.session().await?;
                        session.answer(task_id, &q.key, chosen.action()).await
                    };
                    match sent.await {
                        Ok(()) => {}
                        Err(CallError::UnknownTask(_)) => return Ok(Ending::Unknown),
                        // The next poll shows the question again if the answer did not arrive.
                        Err(CallError::Transport { message, .. }) => {
                            progress.note(&format!("  the answer did not get through ({message}); asking the server again"));
                            link.drop_session().await;
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                progress.reset();
                last_state = None;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_after_failures_double_and_respect_retry_after_and_the_interval() {
        let ms = Duration::from_millis;
        let waits: Vec<_> = (1..=9).map(|n| after_failure(n, None, ms(250))).collect();
        assert_eq!(waits, [ms(500), ms(1000), ms(2000), ms(4000), ms(8000), ms(16000), ms(30000), ms(30000), ms(30000)]);
        assert_eq!(after_failure(1, Some(Duration::from_secs(120)), ms(250)), Duration::from_secs(120), "Retry-After may ask for more");
        assert_eq!(after_failure(1, None, ms(5000)), ms(5000), "never sooner than the poll interval");
    }
}
