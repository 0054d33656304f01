//! The Tasks extension on the wire: `reflow_month` as a task for clients that declare
//! `io.modelcontextprotocol/tasks`, `tasks/get`, `tasks/update` and `tasks/cancel` answered from
//! the durable task store. A task's result is written from its stored outcome, by the same code
//! as the synchronous call's answer, so the two are the same document.

use super::tools::{call_tool_result, finished_reflow, Reply};
use crate::store::{ReflowRecord, TaskRecord, TaskStatus};
use crate::tasks::{Approval, TaskError, TaskView};
use crate::domain::StudioTz;
use rmcp::model::{DetailedTask, InputRequests, InputResponses, JsonObject, Task, TaskPayload};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};

/// How many moves the approval question spells out; the rest are in the stored reflow.
const MOVES_SHOWN: usize = 25;

/// The approval question about a recorded plan, as the elicitation a client answers.
pub(super) fn approval_question(tz: &StudioTz, reflow: &ReflowRecord) -> Value {
    let mut message = format!(
        "Apply {} moves, {} unresolved? (reflow {} of {}; cost {})",
        reflow.moves.len(),
        reflow.unresolved.len(),
        reflow.id,
        reflow.month,
        reflow.cost
    );
    for m in reflow.moves.iter().take(MOVES_SHOWN).map(|record| &record.moved) {
        let from = tz.local(m.from_start);
        let to = tz.local(m.to_start);
        message += &format!(
            "\n- {}: {} {} -> {} {}",
            m.booking,
            m.from_room,
            from.format("%a %-d %b %H:%M"),
            m.to_room,
            if to.date() == from.date() { to.format("%H:%M").to_string() } else { to.format("%a %-d %b %H:%M").to_string() }
        );
    }
    if reflow.moves.len() > MOVES_SHOWN {
        message += &format!("\n… and {} more: {} {} shows the whole plan.", reflow.moves.len() - MOVES_SHOWN, super::tools::names::GET_REFLOW, reflow.id);
    }
    for (booking, reason) in &reflow.unresolved {
        message += &format!("\n- {booking} stays where it is: {reason}");
    }
    json!({
        "approve": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "note": {"type": "string", "title": "Note", "description": "Optional: why, for the record."}
                    }
                }
            }
        }
    })
}

/// Reads the answer to the approval question. `None` when the responses do not answer it (the
/// Tasks extension asks that answers to questions not asked are ignored).
pub fn approval(responses: &InputResponses) -> Result<Option<Approval>, McpError> {
    let responses = serde_json::to_value(responses).map_err(|e| McpError::internal_error(e.to_string(), None))?;
    let Some(approve) = responses.get("approve") else { return Ok(None) };
    let refuse = |message: String| McpError::invalid_params(message, None);
    match approve.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(Some(Approval::Accept)),
        Some("decline") => Ok(Some(Approval::Decline)),
        Some("cancel") => Ok(Some(Approval::Cancel)),
        Some(other) => Err(refuse(format!("inputResponses.approve.action: unknown action {other:?}: answer accept, decline or cancel"))),
        None => Err(refuse("inputResponses.approve.action: the answer needs an action: accept, decline or cancel".into())),
    }
}

/// An instant in milliseconds as the task wires write it (RFC 3339, UTC, milliseconds).
pub(in crate::mcp) fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The task's base fields, as `CreateTaskResult` and `tasks/get` carry them.
pub fn task(record: &TaskRecord) -> Task {
    let status = match record.status {
        TaskStatus::Working => rmcp::model::TaskStatus::Working,
        TaskStatus::InputRequired => rmcp::model::TaskStatus::InputRequired,
        TaskStatus::Completed => rmcp::model::TaskStatus::Completed,
        TaskStatus::Failed => rmcp::model::TaskStatus::Failed,
        TaskStatus::Cancelled => rmcp::model::TaskStatus::Cancelled,
    };
    let mut task = Task::new(&record.id, status, iso(record.created_ms), iso(record.updated_ms))
        .with_poll_interval_ms(record.poll_interval_ms.max(0) as u64);
    if let Some(ttl) = record.ttl_ms {
        task = task.with_ttl_ms(ttl.max(0) as u64);
    }
    if let Some(message) = &record.status_message {
        task = task.with_status_message(message);
    }
    task
}

/// The task with what its state carries: the question, the result, or the error, written from
/// the stored outcome and the reflow record.
pub fn detailed(view: &TaskView) -> Result<DetailedTask, McpError> {
    let record = &view.task;
    let payload = match record.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::InputRequired => {
            let reflow = view
                .reflow
                .as_ref()
                .ok_or_else(|| McpError::internal_error(format!("task {} waits with no plan", record.id), None))?;
            let requests: InputRequests = serde_json::from_value(approval_question(&view.tz, reflow))
                .map_err(|e| McpError::internal_error(format!("the question of task {}: {e}", record.id), None))?;
            TaskPayload::InputRequired { input_requests: requests }
        }
        TaskStatus::Completed => {
            let outcome = finished_reflow(view).map(|(out, summary)| Reply::new(out, summary));
            TaskPayload::Completed { result: object(&call_tool_result(outcome)?)? }
        }
        TaskStatus::Failed => {
            let message = record.failure.clone().unwrap_or_else(|| "the reflow failed".into());
            TaskPayload::Failed { error: object(&McpError::internal_error(message, None))? }
        }
        TaskStatus::Cancelled => TaskPayload::Cancelled,
    };
    Ok(DetailedTask::new(task(record), payload))
}

/// A wire document as the JSON object a task payload carries.
fn object(document: &impl serde::Serialize) -> Result<JsonObject, McpError> {
    match serde_json::to_value(document) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(McpError::internal_error(format!("not an object: {other}"), None)),
        Err(e) => Err(McpError::internal_error(e.to_string(), None)),
    }
}

/// A task error as JSON-RPC sees it: unknown ids and bad answers are the caller's (-32602).
pub fn task_error(e: TaskError) -> McpError {
    if e.is_ours() { McpError::internal_error(e.to_string(), None) } else { McpError::invalid_params(e.to_string(), None) }
}
