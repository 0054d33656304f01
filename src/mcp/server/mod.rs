//! The MCP server: rmcp's `ServerHandler` over the studio's tools. It lists the tools, runs each
//! call's handler off the async tasks (SQLite and the solver never run on a worker another session
//! shares; see [`Hop`]), and turns the answer into a `CallToolResult` with structured content and
//! a one-line summary (the content written by the transport itself where it can, `written.rs`).
//! Resources, prompts and completions are answered from `resources.rs` and `prompts.rs`; a
//! synchronous reflow that asked for progress or log messages goes through `progress.rs`;
//! `subscriptions/listen` on calendars is `watch.rs`, which also serves a legacy session's
//! `resources/subscribe`; `mid_call.rs` asks a legacy client in a session the questions that a
//! 2026-07-28 client gets as an input-required result.
//! The fronts serve any [`Served`] handler: this one, or the conformance suite's wrapper around
//! it (`mcp/testing`), which alone knows of fixtures.

pub(super) mod apps;
mod approval;
pub(in crate::mcp) mod mid_call;
pub(super) mod progress;
mod prompts;
mod resources;
pub(super) mod tasks;
pub(super) mod tools;
mod watch;
pub(super) mod wire;
pub(super) mod written;

pub use approval::RequestStates;
pub use tools::Ctx;

use progress::{Listener, SessionLevel};
use tasks::{approval, detailed, task, task_error};
use tools::{call_tool_result, call_tool_result_written, Caller, Follow, ToolError, ToolSpec};
use written::WrittenAnswers;
use crate::auth::{Principal, Scope};
use crate::domain::Actor;
use crate::tasks::{TaskError, Tasks};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CompleteRequestParams, CompleteResult,
    CreateTaskResult, ExtensionCapabilities, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use std::sync::Arc;

/// Who is calling ([`Caller::of`]): the principal the HTTP front authenticated, or else the local
/// user, named by the client's `clientInfo.name` from the request's `_meta` (2026-07-28) or, for a
/// legacy client, from its `initialize`.
fn caller(context: &RequestContext<RoleServer>) -> Caller {
    let info = context.client_info();
    Caller::of(principal(context), info.as_ref().map(|info| info.name.as_str()))
}

/// Where the request's transport writes answers itself: its answers, and the request's id.
fn written(context: &RequestContext<RoleServer>) -> Option<(WrittenAnswers, rmcp::model::RequestId)> {
    context.extensions.get::<WrittenAnswers>().map(|answers| (answers.clone(), context.id.clone()))
}

/// The principal the HTTP front put on the request, if it authenticated one.
fn principal(context: &RequestContext<RoleServer>) -> Option<&Principal> {
    context.extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<Principal>())
}

/// The studio as an MCP server. Cheap to clone: HTTP makes one per request.
#[derive(Clone)]
pub struct StudioServer {
    ctx: Arc<Ctx>,
    tools: Arc<Vec<ToolSpec>>,
    /// The log level asked for with the legacy `logging/setLevel`, for this session.
    log_level: SessionLevel,
    /// The keys of `requestState`, for a reflow approved without the Tasks extension.
    states: Arc<RequestStates>,
    /// The calendars this session subscribed to with the legacy `resources/subscribe`.
    subscriptions: watch::SessionSubscriptions,
    /// Cancelled when the server begins to stop: the streams that last (`subscriptions/listen`,
    /// a legacy session's updates) end then, rather than hold the graceful stop for ever.
    stopping: tokio_util::sync::CancellationToken,
}

/// What the fronts serve: an MCP handler over the studio. The studio server itself, or (in test
/// builds) the conformance suite's wrapper around it, which adds its fixture tools.
pub trait Served: ServerHandler + Clone + Send + Sync + 'static {
    /// The studio server inside: its tool table and context, for the fronts' own checks.
    fn studio(&self) -> &StudioServer;

    /// A copy for one stateless HTTP request: the same studio, and a log level of its own (there
    /// is no session for `logging/setLevel` to last in).
    fn for_one_request(&self) -> Self;
}

impl Served for StudioServer {
    fn studio(&self) -> &StudioServer {
        self
    }

    fn for_one_request(&self) -> StudioServer {
        StudioServer { log_level: SessionLevel::default(), subscriptions: watch::SessionSubscriptions::default(), ..self.clone() }
    }
}

impl StudioServer {
    /// The server with a random request-state key of its own (see [`StudioServer::with_request_states`]).
    pub fn new(ctx: Ctx) -> anyhow::Result<Self> {
        let states = RequestStates::random().map_err(anyhow::Error::msg)?;
        Ok(Self::with_request_states(ctx, states))
    }

    /// The server sealing `requestState` with `states`: servers behind one address share them.
    pub fn with_request_states(ctx: Ctx, states: RequestStates) -> Self {
        let mut tools = tools::all();
        for spec in tools.iter_mut().filter(|spec| spec.drawn) {
            apps::point_at_view(&mut spec.tool);
        }
        StudioServer {
            ctx: Arc::new(ctx),
            tools: Arc::new(tools),
            log_level: SessionLevel::default(),
            states: Arc::new(states),
            subscriptions: watch::SessionSubscriptions::default(),
            stopping: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// What ends the lasting streams when the server begins to stop (see the field).
    pub(in crate::mcp) fn stopping(&self) -> tokio_util::sync::CancellationToken {
        self.stopping.clone()
    }

    /// The database and task runner, for the HTTP routes beside `/mcp` (the calendar feeds).
    pub(super) fn ctx(&self) -> Arc<Ctx> {
        self.ctx.clone()
    }

    fn tasks(&self) -> Arc<Tasks> {
        self.ctx.tasks.clone()
    }

    /// Starts a task-capable tool as a durable task; the row is committed before this returns.
    async fn start_task(&self, job: tools::JobOf, arguments: rmcp::model::JsonObject, caller: Caller) -> Result<CallToolResponse, McpError> {
        let job = match job(&caller, arguments) {
            Ok(job) => job,
            Err(e) => return call_tool_result(Err(e)).map(CallToolResponse::Complete),
        };
        let tasks = self.tasks();
        let started = tokio::task::spawn_blocking(move || tasks.start_reflow(&job))
            .await
            .map_err(|e| McpError::internal_error(format!("starting the reflow stopped: {e}"), None))?;
        match started {
            Ok(record) => {
                tracing::info!(task_id = %record.id, "reflow task created");
                Ok(CallToolResponse::Task(CreateTaskResult::new(task(&record))))
            }
            Err(e) => call_tool_result(Err(tools::reflow_refusal(e, Follow::Task))).map(CallToolResponse::Complete),
        }
    }

    /// A reflow's approval asked of a legacy client in a session: the input-required rounds of
    /// `approval.rs`, each question sent as a real `elicitation/create` ([`mid_call`]).
    async fn approve_mid_call(
        &self,
        job: tools::JobOf,
        name: &str,
        arguments: rmcp::model::JsonObject,
        caller: Caller,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (mut responses, mut state) = (None, None);
        for _ in 0..mid_call::MAX_ROUNDS {
            match approval::round(self, job, name, arguments.clone(), responses.take(), state.take(), caller.clone()).await? {
                CallToolResponse::InputRequired(asked) => {
                    responses = Some(mid_call::ask(context, asked.input_requests.unwrap_or_default()).await?);
                    state = asked.request_state;
                }
                done => return Ok(done),
            }
        }
        Err(McpError::internal_error(format!("{name} asked more than {} rounds of questions", mid_call::MAX_ROUNDS), None))
    }

    /// Runs `f` on the durable task store, off the async threads, with the task id and the
    /// caller's principal, which alone may see the task.
    async fn on_task<T: Send + 'static>(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        f: impl FnOnce(&Tasks, &str, Option<&str>) -> Result<T, TaskError> + Send + 'static,
    ) -> Result<T, McpError> {
        let tasks = self.tasks();
        let key = id.to_owned();
        let owner = caller(context).owner;
        tokio::task::spawn_blocking(move || f(&tasks, &key, owner.as_deref()))
            .await
            .map_err(|e| McpError::internal_error(format!("the task request stopped: {e}"), None))?
            .map_err(task_error)
    }

    /// Runs a blocking handler (SQLite) off the async threads.
    async fn blocking<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&Ctx) -> Result<T, McpError> + Send + 'static,
    ) -> Result<T, McpError> {
        let ctx = self.ctx.clone();
        tokio::task::spawn_blocking(move || f(&ctx))
            .await
            .map_err(|e| McpError::internal_error(format!("{what} stopped: {e}"), None))?
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.tools.iter().position(|t| t.name() == name)
    }

    /// The tool table, for the fronts (the scope a call needs, the 2025-11-25 task wire).
    pub(in crate::mcp) fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Runs a tool by name and shapes its answer. With `listener` (a task-capable tool whose
    /// caller asked for progress or log messages) the notifications go out before the answer.
    /// The handler blocks (SQLite, the solver), so it never runs as an ordinary async task: on a
    /// `Hop::ToPool` it runs on the blocking pool, on `Hop::InPlace` or `Hop::Inline` on the thread
    /// that received the call (see [`Hop`]).
    /// Where the transport writes answers itself (`written`: its answers and this request's id),
    /// the answer is left there as JSON text.
    async fn run_tool(
        &self,
        index: usize,
        arguments: rmcp::model::JsonObject,
        caller: Caller,
        listener: Option<Listener>,
        hop: Hop,
        written: Option<(WrittenAnswers, rmcp::model::RequestId)>,
    ) -> Result<CallToolResult, McpError> {
        let this = self.clone();
        let name = self.tools[index].name();
        let progress = listener.as_ref().map(Listener::hook);
        let work = move || {
            let spec = &this.tools[index];
            let call = tools::Call { ctx: &this.ctx, caller: &caller, tool: spec.name(), progress };
            (spec.run)(&call, arguments)
        };
        let stopped = |why: String| McpError::internal_error(format!("the {name} handler stopped: {why}"), None);
        let outcome = match hop {
            Hop::ToPool => tokio::task::spawn_blocking(work).await.map_err(|e| stopped(e.to_string()))?,
            Hop::InPlace => tokio::task::block_in_place(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)))
                .map_err(|panic| stopped(panic_message(panic.as_ref())))?,
            Hop::Inline => std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|panic| stopped(panic_message(panic.as_ref())))?,
        };
        if let Some(listener) = listener {
            let (last, failed) = match &outcome {
                Ok(reply) => (reply.summary.clone(), false),
                Err(ToolError::Fix(message) | ToolError::Internal(message) | ToolError::Transient(message)) => (message.clone(), true),
            };
            listener.finish(last, failed).await;
        }
        log_failure(name, &outcome);
        match written {
            Some((answers, id)) => call_tool_result_written(outcome, &answers, id),
            None => call_tool_result(outcome),
        }
    }
}

/// How a tool's handler, which blocks, gets off the async task that received the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    /// Onto the blocking pool (`spawn_blocking`), and back: two thread switches per call, which
    /// keep the async threads free for the other requests an HTTP server is serving meanwhile.
    ToPool,
    /// On the worker that received the call, after `block_in_place` has handed that worker's
    /// other tasks to a thread of the blocking pool (woken for it): a call on stdio that may take
    /// long or wait on a lock, on a runtime of several workers.
    InPlace,
    /// On the thread that received the call, as it is, with no thread woken: a read on stdio.
    /// One client waits on its answer there, and each thread switch is a wake-up that the
    /// scheduler may delay on a busy machine; a read takes a fraction of a millisecond and waits
    /// on no lock (SQLite's readers do not wait for its writer).
    Inline,
}

impl Hop {
    /// The hop for a call of `spec` that came in with `context`. Over HTTP (its request parts are
    /// on the call) the pool; on stdio none for a quick read (a tool that needs `studio:read` and
    /// never runs as a task), and otherwise in place where the runtime has several workers (the
    /// pool where it has one thread).
    fn for_call(context: &RequestContext<RoleServer>, spec: &ToolSpec) -> Hop {
        let over_http = context.extensions.get::<axum::http::request::Parts>().is_some();
        let threaded = tokio::runtime::Handle::try_current()
            .is_ok_and(|handle| handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let quick_read = spec.job.is_none() && spec.access.most() == Scope::StudioRead;
        match (over_http, quick_read, threaded) {
            (true, _, _) => Hop::ToPool,
            (false, true, _) => Hop::Inline,
            (false, false, true) => Hop::InPlace,
            (false, false, false) => Hop::ToPool,
        }
    }
}

/// What a panic said, as `JoinError` would tell it.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let said = panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str));
    format!("it panicked: {}", said.unwrap_or("(no message)"))
}

/// Logs a tool's failure of ours: an error, or a warning for a lost database connection (the
/// caller is told to retry).
fn log_failure(tool: &str, outcome: &Result<tools::Reply, ToolError>) {
    match outcome {
        Err(ToolError::Internal(message)) => tracing::error!(tool, error = %message, "tool failed"),
        Err(ToolError::Transient(message)) => tracing::warn!(tool, error = %message, "tool failed for now: the caller is told to retry"),
        _ => {}
    }
}

impl ServerHandler for StudioServer {
    fn get_info(&self) -> ServerConfig {
        let mut extensions = ExtensionCapabilities::new();
        extensions.insert(apps::EXTENSION.to_owned(), apps::settings());
        // Logging is deprecated by SEP-2577 (2026-07-28) and still part of 2025-11-25.
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_extensions_with(extensions)
            .enable_tools()
            .enable_tasks()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_completions()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("studioflow", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "studioflow keeps a studio's bookings. Times are RFC 3339 with an offset, or local \
                 studio time such as 2026-09-07T10:00. Quick tools answer at once; when a room goes \
                 offline, call {} and then {} for each month it touches; \
                 clients that declare the tasks extension get the reflow as a task to poll.",
                tools::names::SET_ROOM_OFFLINE,
                tools::names::REFLOW_MONTH,
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.iter().map(|t| t.tool.clone()).collect()))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        // The view (MCP Apps) is a resource like the calendars, listed first.
        self.blocking("resources/list", move |ctx| resources::list(ctx, cursor.as_deref(), vec![apps::resource()])).await
    }

    fn accepted_subscription_filter(&self, requested: &rmcp::model::SubscriptionFilter) -> Option<rmcp::model::SubscriptionFilter> {
        Some(watch::accepted(requested))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        watch::listen(self.ctx.clone(), context, self.stopping.clone()).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::templates())
    }

    /// The legacy `resources/subscribe` (2025-11-25; 2026-07-28 clients use `subscriptions/listen`):
    /// a calendar's updates, sent on the session, which this needs.
    #[allow(deprecated)]
    async fn subscribe(&self, request: rmcp::model::SubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        if !mid_call::in_session(&context) {
            return Err(McpError::invalid_request(
                "resources/subscribe needs a session to send updates on: initialize first (over HTTP, send back the Mcp-Session-Id it answers with), or use subscriptions/listen (2026-07-28)",
                None,
            ));
        }
        self.subscriptions.subscribe(self.ctx.clone(), &request.uri, context.peer.clone(), self.stopping.clone())
    }

    #[allow(deprecated)]
    async fn unsubscribe(&self, request: rmcp::model::UnsubscribeRequestParams, _context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        if let Some(view) = apps::read(&uri) {
            return Ok(ReadResourceResponse::from(view));
        }
        self.blocking("resources/read", move |ctx| resources::read(ctx, &uri)).await.map(ReadResourceResponse::from)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(prompts::list())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let mut arguments = std::collections::HashMap::new();
        for (name, value) in request.arguments.unwrap_or_default() {
            let text = match value {
                serde_json::Value::String(text) => text,
                serde_json::Value::Number(n) => n.to_string(),
                other => return Err(McpError::invalid_params(format!("argument {name:?} must be a string, not {other}"), None)),
            };
            arguments.insert(name, text);
        }
        let name = request.name;
        self.blocking("prompts/get", move |ctx| prompts::get(ctx, &name, &arguments)).await.map(GetPromptResponse::from)
    }

    #[allow(deprecated)]
    async fn set_level(&self, request: rmcp::model::SetLevelRequestParams, _context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.log_level.set(request.level);
        Ok(())
    }

    async fn complete(&self, request: CompleteRequestParams, _context: RequestContext<RoleServer>) -> Result<CompleteResult, McpError> {
        self.blocking("completion/complete", move |ctx| prompts::complete(ctx, &request)).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.find(name).map(|i| self.tools[i].tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // Only a month reflow is long work, and only a client that declared the extension may get a task.
        let wants_task = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        let Some(index) = self.find(&request.name) else {
            return Err(McpError::invalid_params(format!("unknown tool {:?}: call tools/list to see the tools", request.name), None));
        };
        let caller = caller(&context);
        let arguments = request.arguments.unwrap_or_default();
        // A tool that may run as a task does so for a client that declared the extension; called
        // synchronously, it tells its progress to a caller that asked to hear it.
        if let Some(job) = self.tools[index].job {
            if wants_task {
                return self.start_task(job, arguments, caller).await;
            }
            // Without the extension, an approval is asked as an input-required result, to a client
            // of 2026-07-28 (the request's `_meta` names it); a legacy client is told the way round.
            let speaks_2026 = context.meta.protocol_version().is_some();
            if speaks_2026 && approval::asked(&arguments, request.request_state.as_deref()) {
                let name = self.tools[index].name();
                return approval::round(self, job, name, arguments, request.input_responses, request.request_state, caller).await;
            }
            // A legacy client in a session that can answer an elicitation is asked the same
            // question mid-call, through the same rounds.
            let elicits = context.client_capabilities().is_some_and(|c| c.elicitation.is_some());
            if !speaks_2026 && elicits && mid_call::can_ask(&context) && approval::asked(&arguments, None) {
                return self.approve_mid_call(job, self.tools[index].name(), arguments, caller, &context).await;
            }
            let listener = Listener::for_request(&context, &self.log_level);
            let hop = Hop::for_call(&context, &self.tools[index]);
            return self.run_tool(index, arguments, caller, listener, hop, written(&context)).await.map(CallToolResponse::Complete);
        }
        let result = self.run_tool(index, arguments, caller, None, Hop::for_call(&context, &self.tools[index]), written(&context)).await?;
        Ok(CallToolResponse::Complete(result))
    }

    async fn get_task(&self, request: GetTaskParams, context: RequestContext<RoleServer>) -> Result<GetTaskResult, McpError> {
        // One line per poll (RUST_LOG=studioflow=debug): how often clients poll, and what the client tests count.
        tracing::debug!(task_id = %request.task_id, "tasks/get");
        let view = self.on_task(&request.task_id, &context, |tasks, id, owner| tasks.view(id, owner)).await?;
        Ok(GetTaskResult::new(detailed(&view)?))
    }

    async fn update_task(&self, request: UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        let answer = approval(&request.input_responses);
        let actor = Actor::new(caller(&context).who, "tasks/update");
        self.on_task(&request.task_id, &context, move |tasks, id, owner| match answer {
                // A bad answer to a task that is not waiting is ignored like any other.
                Ok(Some(approval)) => tasks.answer(id, owner, approval, &actor).map(|_| Ok(())),
                Ok(None) => tasks.get(id, owner).map(|_| Ok(())),
                Err(e) => tasks.get(id, owner).map(|task| if task.status == crate::store::TaskStatus::InputRequired { Err(e) } else { Ok(()) }),
            })
            .await?
    }

    async fn cancel_task(&self, request: CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.on_task(&request.task_id, &context, |tasks, id, owner| tasks.cancel(id, owner)).await.map(|_| ())
    }
}
