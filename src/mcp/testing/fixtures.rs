//! Test fixtures for the official MCP conformance suite, and for nothing else: the tools its
//! `tasks-*` scenarios call (`greet`, `slow_compute`, `failing_job`, `protocol_error_job`,
//! `confirm_delete`, `multi_input`, `test_tool_with_task`). They are listed and served only under
//! the hidden `serve --conformance-fixtures` flag (see tests/conformance/README.md). Their tasks live
//! in memory, in rmcp's `TaskManager`, not in the durable task store, and they know nothing of the studio.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, CreateTaskResult, DetailedTask,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject, Tool,
};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::ErrorData as McpError;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::future::Future;
use std::time::Duration;

/// The longest `slow_compute` may sleep; the suite asks for at most 60 s.
const MAX_SLEEP: Duration = Duration::from_secs(600);

/// The key under which `test_tool_with_task` asks for a name in its first round.
const USER_NAME: &str = "user_name";

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowComputeArgs {
    /// How long to work, in seconds.
    seconds: f64,
    /// A label echoed in the result.
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct ConfirmDeleteArgs {
    /// The file to pretend to delete once confirmed.
    filename: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// The fixture tools and the in-memory tasks they start.
#[derive(Default)]
pub struct Fixtures {
    /// rmcp's task runner: ids are UUIDs, so they never collide with the durable `tsk_` ids.
    tasks: TaskManager,
}

impl Fixtures {
    pub fn new() -> Self {
        Self::default()
    }

    /// What `tools/list` adds under the flag.
    pub fn tools(&self) -> Vec<Tool> {
        use rmcp::handler::server::common::schema_for_type as schema;
        vec![
            Tool::new("greet", "Conformance fixture: says hello; never a task.", schema::<GreetArgs>()),
            Tool::new("slow_compute", "Conformance fixture: works `seconds`, then answers; a task when the client declares the tasks extension.", schema::<SlowComputeArgs>()),
            Tool::new("failing_job", "Conformance fixture: a task that ends after a second with a tool error (isError); requires the tasks extension.", schema::<NoArgs>()),
            Tool::new("protocol_error_job", "Conformance fixture: fails with a JSON-RPC internal error (a failed task, when it is one).", schema::<NoArgs>()),
            Tool::new("confirm_delete", "Conformance fixture: a task that asks for confirmation, then completes; requires the tasks extension.", schema::<ConfirmDeleteArgs>()),
            Tool::new("multi_input", "Conformance fixture: a task that asks two questions at once; requires the tasks extension.", schema::<NoArgs>()),
            Tool::new("test_tool_with_task", "Conformance fixture: asks for a name (input_required), then greets it in a task; requires the tasks extension.", schema::<NoArgs>()),
        ]
        .into_iter()
        .chain(super::fixture_content::tools())
        .chain(super::fixture_rounds::Rounds::tools())
        .collect()
    }

    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    /// Runs a fixture. `tasks_declared` says whether the request declared the tasks extension:
    /// only then may the answer be a task.
    pub async fn call(&self, request: CallToolRequestParams, tasks_declared: bool) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        match &*request.name {
            // A legacy `task: {ttl, pollInterval}` param is not a field of the request params: serde drops it.
            "greet" => {
                let args: GreetArgs = parse("greet", args)?;
                Ok(CallToolResponse::Complete(text(format!("Hello, {}!", args.name))))
            }
            "slow_compute" => {
                let args: SlowComputeArgs = parse("slow_compute", args)?;
                let wait = Duration::try_from_secs_f64(args.seconds)
                    .ok()
                    .filter(|d| *d <= MAX_SLEEP)
                    .ok_or_else(|| McpError::invalid_params("slow_compute: seconds must be 0 to 600", None))?;
                let done = text(format!("Computed {} after {} s.", args.label.as_deref().unwrap_or("a result"), args.seconds));
                if !tasks_declared {
                    tokio::time::sleep(wait).await;
                    return Ok(CallToolResponse::Complete(done));
                }
                Ok(self.spawn(move |ctx| async move {
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => Ok(done),
                        _ = ctx.cancelled() => Err(TaskExit::Cancelled),
                    }
                }))
            }
            "failing_job" => {
                require_tasks(tasks_declared)?;
                Ok(self.spawn(|_| async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok(CallToolResult::error(vec![ContentBlock::text("failing_job always fails (as a tool).")]))
                }))
            }
            "protocol_error_job" => {
                let error = McpError::internal_error("protocol_error_job always fails (at the protocol level).", None);
                if !tasks_declared {
                    return Err(error);
                }
                Ok(self.spawn(|_| async move {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Err(TaskExit::Error(error))
                }))
            }
            // Without a task there is nowhere to park a question in this stateless server, so the
            // two fixtures that ask inside their work require the extension.
            "confirm_delete" => {
                require_tasks(tasks_declared)?;
                let args: ConfirmDeleteArgs = parse("confirm_delete", args)?;
                let question = form(&format!("Delete {}?", args.filename), json!({"confirm": {"type": "boolean", "title": "Confirm"}}))?;
                Ok(self.spawn(move |ctx| async move {
                    let answer = ctx.request_input("confirm", question).await?;
                    Ok(if accepted(&answer) && answer["content"]["confirm"] == json!(true) {
                        text(format!("Deleted {}.", args.filename))
                    } else {
                        text(format!("Kept {}.", args.filename))
                    })
                }))
            }
            "multi_input" => {
                require_tasks(tasks_declared)?;
                let questions = [
                    ("name", form("Your name?", json!({"name": {"type": "string", "title": "Name"}}))?),
                    ("confirm", form("Go ahead?", json!({"confirm": {"type": "boolean", "title": "Confirm"}}))?),
                ];
                Ok(self.spawn(move |ctx| async move {
                    // Each question waits on its own tokio task, so both are pending at once.
                    let waiting: Vec<_> = questions
                        .into_iter()
                        .map(|(key, question)| {
                            let ctx = ctx.clone();
                            tokio::spawn(async move { ctx.request_input(key, question).await })
                        })
                        .collect();
                    let mut answered = 0;
                    for handle in waiting {
                        let answer = handle.await.map_err(|e| McpError::internal_error(format!("a question stopped: {e}"), None))??;
                        answered += usize::from(accepted(&answer));
                    }
                    Ok(text(format!("Both questions answered ({answered} accepted).")))
                }))
            }
            "test_tool_with_task" => {
                require_tasks(tasks_declared)?;
                // Round 1 (MRTR): ask for the name; round 2 carries the answer and becomes a task.
                let Some(answer) = request.input_responses.as_ref().and_then(|r| r.get(USER_NAME)) else {
                    let question = form("What is your name?", json!({"name": {"type": "string", "title": "Name"}}))?;
                    let questions = InputRequests::from([(USER_NAME.to_owned(), question)]);
                    return Ok(CallToolResponse::InputRequired(InputRequiredResult::from_input_requests(questions)));
                };
                let name = answer["content"]["name"].as_str().filter(|_| accepted(answer)).map(str::to_owned);
                Ok(self.spawn(move |_| async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Ok(match name {
                        Some(name) => text(format!("Hello, {name}!")),
                        None => CallToolResult::error(vec![ContentBlock::text("No name was given.")]),
                    })
                }))
            }
            other => Err(McpError::invalid_params(format!("{other:?} is not a conformance fixture"), None)),
        }
    }

    /// Starts `work` as an in-memory task; `tasks/get` finds it before this returns.
    fn spawn<F>(&self, work: impl FnOnce(TaskContext) -> F) -> CallToolResponse
    where
        F: Future<Output = Result<CallToolResult, TaskExit>> + Send + 'static,
    {
        let options = TaskOptions::new().with_poll_interval_ms(500);
        CallToolResponse::Task(CreateTaskResult::new(self.tasks.spawn(options, |ctx| Box::pin(work(ctx)))))
    }

    pub fn get_task(&self, id: &str) -> Result<DetailedTask, McpError> {
        self.tasks.get_task(id)
    }

    /// Delivers answers; keys that no question is waiting on are ignored.
    pub fn update_task(&self, id: &str, responses: InputResponses) -> Result<(), McpError> {
        self.tasks.update_task(id, responses)
    }

    pub fn cancel_task(&self, id: &str) -> Result<(), McpError> {
        self.tasks.cancel_task(id)
    }
}

fn parse<A: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<A, McpError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| McpError::invalid_params(format!("the arguments of {tool} do not fit its input schema: {e}"), None))
}

/// -32021 with `data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"] = {}`.
fn require_tasks(tasks_declared: bool) -> Result<(), McpError> {
    if tasks_declared {
        Ok(())
    } else {
        Err(McpError::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build()))
    }
}

fn text(message: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

/// An `elicitation/create` form asking for `properties`.
fn form(message: &str, properties: Value) -> Result<InputRequest, McpError> {
    let request = json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": properties}}
    });
    serde_json::from_value(request).map_err(|e| McpError::internal_error(format!("a fixture question does not parse: {e}"), None))
}

fn accepted(answer: &Value) -> bool {
    answer["action"] == "accept"
}
