//! Tasks for clients of the 2025-11-25 `initialize` handshake (the TypeScript SDK 1.x, and the
//! editors built on it), whose task wire rmcp 3.11 no longer speaks: `params.task` on
//! `tools/call`, a `CreateTaskResult` nested under `task` with `ttl` and `pollInterval`, and
//! `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` without the 2026-07-28 `_meta`.
//! The stdio and HTTP fronts hand such messages here before the SDK sees them; the answers come
//! from the same durable tasks (the same rows, runner and exactly-once apply) as the extension's.
//! The fronts also pass the SDK's answers to `initialize` and `tools/list` through [`rewrite`],
//! which adds the `tasks` capability (for a client that declared its own) and
//! `execution.taskSupport: "optional"` on `reflow_month`.
//!
//! Whose tasks are whose: over HTTP with authentication a task belongs to the principal that
//! created it, and no other sees it (as for the extension's `tasks/*`); `tasks/list` lists the
//! principal's tasks. Without authentication, `tasks/list` shows the tasks of the session: on
//! stdio the process's one client; stateless HTTP has no session, so there it lists nothing (a
//! task id, 160 random bits, still reads it).

use crate::mcp::front::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS};
use crate::mcp::server::tasks::iso;
use crate::mcp::server::tools::{self, call_tool_result, names, Caller, Follow, Reply, ToolError, ToolSpec};
use crate::mcp::server::StudioServer;
use crate::store::{TaskRecord, TaskStatus};
use crate::auth::Principal;
use crate::tasks::{TaskError, Tasks};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many tasks a `tasks/list` page holds.
const PAGE: usize = 50;
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// What to do with a message from a client.
pub enum Route {
    /// The SDK answers it; an answer to rewrite is remembered by its id.
    Forward,
    /// This module answers it ([`Legacy::answer`]).
    Answer,
}

/// Which SDK answer to rewrite.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// `initialize`, from a client that declared the 2025-11-25 `tasks` capability.
    Initialize,
    /// `tools/list` from a client without the 2026-07-28 `_meta`.
    ToolsList,
}

/// The legacy task wire of one session (stdio) or of one request (HTTP).
pub struct Legacy {
    server: StudioServer,
    /// The tasks this session created, for `tasks/list`; `None` where there is no session.
    owned: Option<Mutex<Vec<String>>>,
    /// Answers of the SDK still to rewrite, by request id.
    pending: Mutex<HashMap<String, Rewrite>>,
    /// Who the session's client said it is at `initialize`, for the history's actor.
    who: Mutex<Option<String>>,
    /// The authenticated principal of an HTTP request: the history names it, and it owns tasks.
    principal: Option<Principal>,
}

/// Whether a message speaks the 2026-07-28 wire (its `_meta` names the protocol version).
fn is_current(message: &Value) -> bool {
    // Key by key: a pointer unescapes its `~1` into a new string on every message.
    message.get("params").and_then(|p| p.get("_meta")).and_then(|m| m.get("io.modelcontextprotocol/protocolVersion")).is_some()
}

fn id_key(message: &Value) -> Option<String> {
    message.get("id").map(Value::to_string)
}

fn error(id: &Value, code: i64, message: impl AsRef<str>) -> Value {
    jsonrpc::error(id.clone(), code, message.as_ref())
}

fn reply(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}


/// A task as 2025-11-25 writes it.
fn task_json(record: &TaskRecord) -> Value {
    let mut task = json!({
        "taskId": record.id,
        "status": record.status.as_str(),
        "createdAt": iso(record.created_ms),
        "lastUpdatedAt": iso(record.updated_ms),
        "ttl": record.ttl_ms,
        "pollInterval": record.poll_interval_ms,
    });
    if let Some(message) = &record.status_message {
        task["statusMessage"] = json!(message);
    }
    task
}

/// Adds what a legacy client needs to see to an SDK answer: the `tasks` capability after its
/// `initialize`, and `execution.taskSupport: "optional"` on each tool the table lets run as a task.
fn rewrite(kind: Rewrite, response: &mut Value, tools: &[ToolSpec]) {
    let Some(result) = response.get_mut("result").and_then(Value::as_object_mut) else { return };
    match kind {
        Rewrite::Initialize => {
            if let Some(capabilities) = result.get_mut("capabilities").and_then(Value::as_object_mut) {
                capabilities.insert("tasks".into(), json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}));
            }
        }
        Rewrite::ToolsList => {
            for tool in result.get_mut("tools").and_then(Value::as_array_mut).into_iter().flatten() {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                if tools.iter().any(|spec| spec.name() == name && spec.job.is_some()) {
                    tool["execution"] = json!({"taskSupport": "optional"});
                }
            }
        }
    }
}

impl Legacy {
    /// For a session that lasts (stdio): its tasks are listed.
    pub fn session(server: StudioServer) -> Arc<Legacy> {
        Arc::new(Legacy { server, owned: Some(Mutex::new(Vec::new())), pending: Mutex::new(HashMap::new()), who: Mutex::new(None), principal: None })
    }

    /// For one stateless HTTP request, from `principal` when it was authenticated.
    pub fn stateless(server: StudioServer, principal: Option<Principal>) -> Arc<Legacy> {
        Arc::new(Legacy { server, owned: None, pending: Mutex::new(HashMap::new()), who: Mutex::new(None), principal })
    }

    /// The owner of the tasks this client creates and may see.
    fn owner(&self) -> Option<String> {
        self.principal.as_ref().map(|p| p.id.clone())
    }

    /// Where a message goes; an SDK answer to rewrite is remembered.
    pub fn route(&self, message: &Value) -> Route {
        if is_current(message) {
            return Route::Forward;
        }
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        let remember = |kind| {
            if let Some(id) = id_key(message) {
                self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, kind);
            }
        };
        if method == "initialize"
            && let Some(name) = message.pointer("/params/clientInfo/name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty())
        {
            *self.who.lock().unwrap_or_else(|e| e.into_inner()) = Some(name.to_owned());
        }
        match method {
            "initialize" if message.pointer("/params/capabilities/tasks").is_some() => {
                remember(Rewrite::Initialize);
                Route::Forward
            }
            "tools/list" => {
                remember(Rewrite::ToolsList);
                Route::Forward
            }
            "tools/call" if message.pointer("/params/task").is_some() => Route::Answer,
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" => Route::Answer,
            _ => Route::Forward,
        }
    }

    /// Whether an SDK answer is waiting to be rewritten.
    pub fn has_pending(&self) -> bool {
        !self.pending.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// Rewrites an SDK answer if its request asked for it.
    pub fn rewrite_answer(&self, response: &mut Value) {
        let Some(id) = id_key(response) else { return };
        let kind = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        if let Some(kind) = kind {
            rewrite(kind, response, self.server.tools());
        }
    }

    /// Answers a message that [`Legacy::route`] kept.
    pub async fn answer(&self, message: Value) -> Value {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let task_id = params.get("taskId").and_then(Value::as_str).map(str::to_owned);
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        match (method.as_str(), task_id) {
            ("tools/call", _) => self.call(&id, &params).await,
            ("tasks/list", _) => self.list(&id, &params).await,
            ("tasks/get", Some(task)) => match self.read(&task).await {
                Ok(record) => reply(&id, task_json(&record)),
                Err(e) => e.into_reply(&id),
            },
            ("tasks/cancel", Some(task)) => match self.on_tasks(move |tasks, owner| tasks.cancel(&task, owner)).await {
                Ok(record) => reply(&id, task_json(&record)),
                Err(e) => e.into_reply(&id),
            },
            ("tasks/result", Some(task)) => self.result(&id, &task).await,
            _ => error(&id, INVALID_PARAMS, format!("{method} needs params.taskId")),
        }
    }

    /// `tools/call` with `params.task`: a tool the table lets run as a task becomes a durable one.
    async fn call(&self, id: &Value, params: &Value) -> Value {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        let Some(job) = self.server.tools().iter().find(|spec| spec.name() == name).and_then(|spec| spec.job) else {
            return error(id, INVALID_PARAMS, format!("{name} does not run as a task (its execution.taskSupport is forbidden): call it without params.task"));
        };
        let arguments = match params.get("arguments").cloned().unwrap_or(json!({})) {
            Value::Object(arguments) => arguments,
            other => return error(id, INVALID_PARAMS, format!("params.arguments must be an object, not {other}")),
        };
        // Stateless HTTP has no session to remember the client's name in.
        let who = self.who.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let caller = Caller::of(self.principal.as_ref(), Some(who.as_deref().unwrap_or("unnamed 2025-11-25 client")));
        let job = match job(&caller, arguments) {
            Ok(job) => job,
            Err(e) => return refused(id, e),
        };
        if job.require_approval {
            return refused(id, ToolError::Fix(format!(
                "require_approval needs the io.modelcontextprotocol/tasks extension of protocol 2026-07-28, which this \
                 client (2025-11-25) does not speak: run {name} with dry_run: true, review the plan ({}), then apply it \
                 with {}, or run {name} again without dry_run",
                names::GET_REFLOW,
                names::APPLY_REFLOW,
            )));
        }
        match self.on_tasks(move |tasks, _| tasks.start_reflow(&job)).await {
            Ok(record) => {
                tracing::info!(task_id = %record.id, "reflow task created for a 2025-11-25 client");
                if let Some(owned) = &self.owned {
                    owned.lock().unwrap_or_else(|e| e.into_inner()).push(record.id.clone());
                }
                reply(id, json!({"task": task_json(&record)}))
            }
            Err(Failure::Task(e)) => refused(id, tools::reflow_refusal(e, Follow::Task)),
            Err(other) => other.into_reply(id),
        }
    }

    /// `tasks/list`: the principal's (or this session's) tasks that are still kept, a page at a time.
    async fn list(&self, id: &Value, params: &Value) -> Value {
        let start = match params.get("cursor").and_then(Value::as_str) {
            None => 0,
            Some(cursor) => match cursor.parse::<usize>() {
                Ok(n) => n,
                Err(_) => return error(id, INVALID_PARAMS, format!("cursor {cursor:?} is not one this server gave")),
            },
        };
        let records: Vec<TaskRecord> = if let Some(owner) = self.owner() {
            match self.on_tasks(move |tasks, _| tasks.owned_by(&owner)).await {
                Ok(records) => records,
                Err(e) => return e.into_reply(id),
            }
        } else if let Some(owned) = &self.owned {
            let ids: Vec<String> = owned.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let tasks = self.server.ctx().tasks.clone();
            ids.iter().filter_map(|task| tasks.get(task, None).ok()).collect()
        } else {
            Vec::new()
        };
        let end = (start + PAGE).min(records.len());
        let page: Vec<Value> = records.get(start.min(end)..end).unwrap_or_default().iter().map(task_json).collect();
        let mut result = json!({"tasks": page});
        if end < records.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        reply(id, result)
    }

    /// `tasks/result`: waits until the task is finished, then answers what the synchronous call
    /// would have (the same `CallToolResult`), tagged with the task it belongs to.
    async fn result(&self, id: &Value, task: &str) -> Value {
        loop {
            let record = match self.read(task).await {
                Ok(record) => record,
                Err(e) => return e.into_reply(id),
            };
            if record.status.is_final() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(record.poll_interval_ms.clamp(50, 1000) as u64)).await;
        }
        let key = task.to_owned();
        let view = match self.on_tasks(move |tasks, owner| tasks.view(&key, owner)).await {
            Ok(view) => view,
            Err(e) => return e.into_reply(id),
        };
        if view.task.status == TaskStatus::Cancelled {
            return error(id, INVALID_PARAMS, format!("task {task} was cancelled: nothing was moved"));
        }
        let outcome = tools::finished_reflow(&view).map(|(out, summary)| Reply::new(out, summary));
        let mut answer = self.tool_result(id, outcome);
        if let Some(result) = answer.get_mut("result").and_then(Value::as_object_mut) {
            result.insert("_meta".into(), json!({RELATED_TASK: {"taskId": task}}));
        }
        answer
    }

    /// A tool's outcome as the legacy `CallToolResult` (no `resultType`), or its error.
    fn tool_result(&self, id: &Value, outcome: Result<Reply, ToolError>) -> Value {
        match call_tool_result(outcome).and_then(|r| serde_json::to_value(r).map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))) {
            Ok(mut result) => {
                if let Some(object) = result.as_object_mut() {
                    object.remove("resultType");
                }
                reply(id, result)
            }
            Err(e) => error(id, i64::from(e.code.0), &e.message),
        }
    }

    async fn read(&self, task: &str) -> Result<TaskRecord, Failure> {
        let key = task.to_owned();
        self.on_tasks(move |tasks, owner| tasks.get(&key, owner)).await
    }

    /// Runs `f` on the tasks off the async threads, with the owner whose tasks this client sees.
    async fn on_tasks<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Arc<Tasks>, Option<&str>) -> Result<T, TaskError> + Send + 'static,
    ) -> Result<T, Failure> {
        let tasks = self.server.ctx().tasks.clone();
        let owner = self.owner();
        match tokio::task::spawn_blocking(move || f(&tasks, owner.as_deref())).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(Failure::Task(e)),
            Err(e) => Err(Failure::Stopped(e.to_string())),
        }
    }
}

/// A task that was not created: a JSON-RPC error, since a client that asked for a task reads
/// only a `CreateTaskResult` as success (-32602 with what to change, or -32603 for our failure).
fn refused(id: &Value, e: ToolError) -> Value {
    match e {
        ToolError::Fix(message) => error(id, INVALID_PARAMS, message),
        // The legacy task wire has no retryable answer to a task request: our failure, worded
        // with the retry.
        ToolError::Internal(message) | ToolError::Transient(message) => error(id, INTERNAL_ERROR, message),
    }
}

/// Why a task request got no answer.
enum Failure {
    Task(TaskError),
    Stopped(String),
}

impl Failure {
    fn into_reply(self, id: &Value) -> Value {
        match self {
            Failure::Task(e) if e.is_ours() => error(id, INTERNAL_ERROR, e.to_string()),
            Failure::Task(e) => error(id, INVALID_PARAMS, e.to_string()),
            Failure::Stopped(e) => error(id, INTERNAL_ERROR, format!("the task request stopped: {e}")),
        }
    }
}
