//! The Tasks extension on the wire: `reflow_month` as a task for clients that declare
//! `io.modelcontextprotocol/tasks`, `tasks/get`, `tasks/update` and `tasks/cancel` answered from
//! the durable task store, and [`ToolRender`], which writes a task's result as exactly the
//! `CallToolResult` that the synchronous call returns.

use super::tools::{reflow_summary, Reply, ToolError};
use super::wire;
use crate::domain::StudioTz;
use crate::store::{ReflowRecord, TaskRecord, TaskStatus};
use crate::tasks::{Render, TaskError};
use rmcp::model::{CallToolResult, ContentBlock, DetailedTask, InputRequests, JsonObject, Task, TaskPayload};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};

/// How many moves the approval question spells out; the rest are in the stored reflow.
const MOVES_SHOWN: usize = 25;

/// A tool's outcome as the `CallToolResult` a client receives.
pub fn call_tool_result(outcome: Result<Reply, ToolError>) -> Result<CallToolResult, McpError> {
    match outcome {
        Ok(reply) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(reply.summary)]);
            result.structured_content = Some(reply.structured);
            Ok(result)
        }
        Err(ToolError::Fix(message)) => Ok(CallToolResult::error(vec![ContentBlock::text(message)])),
        Err(ToolError::Internal(message)) => Err(McpError::internal_error(message, None)),
    }
}

fn to_json(result: &CallToolResult) -> Value {
    serde_json::to_value(result).expect("a CallToolResult always serialises")
}

/// Writes reflow outcomes as the documents MCP clients read.
pub struct ToolRender;

impl Render for ToolRender {
    fn finished(&self, tz: &StudioTz, reflow: &ReflowRecord) -> Value {
        let reply = Reply {
            structured: serde_json::to_value(wire::reflow(tz, reflow)).expect("answers always serialise"),
            summary: reflow_summary(reflow),
        };
        to_json(&call_tool_result(Ok(reply)).expect("a reply is never an internal error"))
    }

    fn refused(&self, message: &str) -> Value {
        to_json(&CallToolResult::error(vec![ContentBlock::text(message)]))
    }

    fn approval(&self, tz: &StudioTz, reflow: &ReflowRecord) -> Value {
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
            message += &format!("\n… and {} more: get_reflow {} shows the whole plan.", reflow.moves.len() - MOVES_SHOWN, reflow.id);
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

    fn failure(&self, message: &str) -> Value {
        json!({"code": -32603, "message": message})
    }
}

fn iso(ms: i64) -> String {
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

/// The task with what its state carries: questions, the result, or the error.
pub fn detailed(record: &TaskRecord) -> Result<DetailedTask, McpError> {
    let object = |value: &Option<Value>, what: &str| -> Result<JsonObject, McpError> {
        match value {
            Some(Value::Object(map)) => Ok(map.clone()),
            _ => Err(McpError::internal_error(format!("task {} has no {what}", record.id), None)),
        }
    };
    let payload = match record.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::InputRequired => {
            let requests: InputRequests = serde_json::from_value(record.input_requests.clone().unwrap_or_default())
                .map_err(|e| McpError::internal_error(format!("task {} holds unreadable questions: {e}", record.id), None))?;
            TaskPayload::InputRequired { input_requests: requests }
        }
        TaskStatus::Completed => TaskPayload::Completed { result: object(&record.result, "result")? },
        TaskStatus::Failed => TaskPayload::Failed { error: object(&record.error, "error")? },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
    };
    Ok(DetailedTask::new(task(record), payload))
}

/// A task error as JSON-RPC sees it: unknown ids and bad answers are the caller's (-32602).
pub fn task_error(e: TaskError) -> McpError {
    match e {
        TaskError::Store(e) => McpError::internal_error(e.to_string(), None),
        other => McpError::invalid_params(other.to_string(), None),
    }
}
