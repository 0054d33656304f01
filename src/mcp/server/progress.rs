//! Progress and log messages for a synchronous reflow. A request that carries a `progressToken`
//! gets `notifications/progress` as the solve goes; a client that asked for log messages (the
//! request's `io.modelcontextprotocol/logLevel`, or the legacy `logging/setLevel`) gets
//! `notifications/message` at that level or above. Both go out before the result: on stdio as
//! lines before it, over HTTP as a `text/event-stream` response (rmcp switches to it when a
//! notification comes first); rmcp answers 406 to an HTTP client that does not accept SSE, and
//! the check here keeps that so should it ever let one through.
//! The hook the task runner calls is plain and synchronous; a forwarder task sends what it hears.

// Logging is deprecated by SEP-2577 (2026-07-28) yet still part of 2025-11-25, which we serve.
#![allow(deprecated)]

use crate::tasks::{ProgressHook, ReflowProgress};
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken};
use rmcp::service::{RequestContext, RoleServer};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The log level a session asked for with `logging/setLevel` (stdio: the one client; HTTP without
/// sessions: each request has its own, so only the request's `_meta` level counts there).
#[derive(Clone, Default)]
pub struct SessionLevel(Arc<Mutex<Option<LoggingLevel>>>);

impl SessionLevel {
    pub fn set(&self, level: LoggingLevel) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(level);
    }

    fn get(&self) -> Option<LoggingLevel> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Whether an HTTP request accepts a streamed answer; any other transport does.
fn accepts_stream(context: &RequestContext<RoleServer>) -> bool {
    match context.extensions.get::<axum::http::request::Parts>() {
        Some(parts) => parts
            .headers
            .get_all(axum::http::header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/event-stream") || v.contains("*/*")),
        None => true,
    }
}

/// What a caller will be told, and the forwarder that tells it.
pub struct Listener {
    hook: ProgressHook,
    forwarder: JoinHandle<()>,
    sender: mpsc::UnboundedSender<Note>,
}

enum Note {
    Progress(ReflowProgress),
    Done(String, bool),
}

impl Listener {
    /// A listener for this request, or `None` when the caller asked for nothing we can send.
    pub fn for_request(context: &RequestContext<RoleServer>, session: &SessionLevel) -> Option<Listener> {
        let token: Option<ProgressToken> = context.meta.get_progress_token();
        // The least severe level the client wants to hear; `None`: no log messages at all.
        let wanted = context.meta.log_level().or_else(|| session.get()).map(rank);
        let logs = wanted.is_some_and(|w| w <= rank(LoggingLevel::Warning));
        if (token.is_none() && !logs) || !accepts_stream(context) {
            return None;
        }
        let (sender, mut receiver) = mpsc::unbounded_channel::<Note>();
        let peer = context.peer.clone();
        let forwarder = tokio::spawn(async move {
            let mut step = 0.0;
            while let Some(note) = receiver.recv().await {
                let (message, total, failed) = match note {
                    Note::Progress(p) => {
                        let total = (p.total > 0).then_some(p.total as f64 + 1.0);
                        (p.message, total, None)
                    }
                    Note::Done(message, failed) => (message, None, Some(failed)),
                };
                if let Some(token) = &token
                    && failed.is_none()
                {
                    // Progress must grow with every notification: one step per message.
                    step += 1.0;
                    let mut param = ProgressNotificationParam::new(token.clone(), step).with_message(message.clone());
                    if let Some(total) = total {
                        param = param.with_total(total.max(step));
                    }
                    let _ = peer.notify_progress(param).await;
                }
                let level = if failed == Some(true) { LoggingLevel::Warning } else { LoggingLevel::Info };
                if wanted.is_some_and(|w| w <= rank(level)) {
                    let mut param = LoggingMessageNotificationParam::new(level, serde_json::Value::String(message));
                    param.logger = Some("studioflow.reflow".into());
                    let _ = peer.notify_logging_message(param).await;
                }
            }
        });
        let hook_sender = sender.clone();
        let hook: ProgressHook = Arc::new(move |p: &ReflowProgress| {
            let _ = hook_sender.send(Note::Progress(p.clone()));
        });
        Some(Listener { hook, forwarder, sender })
    }

    pub fn hook(&self) -> ProgressHook {
        self.hook.clone()
    }

    /// Sends the last message (the summary, or why it failed) and waits until every notification
    /// is out, so that they all come before the result.
    pub async fn finish(self, summary: String, failed: bool) {
        let _ = self.sender.send(Note::Done(summary, failed));
        let Listener { hook, forwarder, sender } = self;
        drop(hook);
        drop(sender);
        // The runner dropped its copies of the hook when it ended; if one lingers, do not wait forever.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), forwarder).await;
    }
}
