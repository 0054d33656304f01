//! The conformance suite's fixtures for input-required results (2026-07-28 multi round-trip
//! requests, SEP-2322): the `test_input_required_result_*` tools and prompt, and the three
//! elicitation tools, which on 2026-07-28 ask through the same mechanism. Served only under
//! `serve --conformance-fixtures`; they know nothing of the studio. Their `requestState` is sealed
//! with rmcp's codec under a key of this process, as the studio's own approval state is.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequest, InputRequests, InputRequiredResult, Prompt, PromptMessage,
    RequestStateCodec, Role, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct MessageArgs {
    /// The message to show the user.
    #[allow(dead_code)]
    message: String,
}

const PROMPT: &str = "test_input_required_result_prompt";

/// The fixtures, with the key that seals their states.
pub struct Rounds {
    codec: RequestStateCodec,
}

impl Rounds {
    pub fn new() -> Result<Rounds, McpError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| McpError::internal_error(format!("no randomness: {e}"), None))?;
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(Rounds { codec })
    }

    pub fn tools() -> Vec<Tool> {
        use rmcp::handler::server::common::schema_for_type as schema;
        let plain = [
            ("test_input_required_result_elicitation", "Conformance fixture: asks a name (input_required), then greets it."),
            ("test_input_required_result_list_roots", "Conformance fixture: asks for the client's roots, then names them."),
            ("test_input_required_result_request_state", "Conformance fixture: asks a confirmation with a sealed requestState."),
            ("test_input_required_result_multiple_inputs", "Conformance fixture: asks three things at once."),
            ("test_input_required_result_multi_round", "Conformance fixture: two rounds of questions, the state evolving."),
            ("test_input_required_result_tampered_state", "Conformance fixture: refuses an altered requestState."),
            ("test_input_required_result_capabilities", "Conformance fixture: asks only what the request's capabilities allow."),
            ("test_elicitation_sep1034_defaults", "Conformance fixture: an elicitation with defaults for every primitive type."),
            ("test_elicitation_sep1330_enums", "Conformance fixture: an elicitation with the five kinds of enum."),
        ];
        let mut tools: Vec<Tool> = plain.into_iter().map(|(name, about)| Tool::new(name, about, schema::<NoArgs>())).collect();
        tools.push(Tool::new("test_elicitation", "Conformance fixture: asks for a username and an e-mail address.", schema::<MessageArgs>()));
        tools
    }

    pub fn prompts() -> Vec<Prompt> {
        vec![Prompt::new(PROMPT, Some("Conformance fixture: asks for context (input_required), then answers."), None)]
    }

    /// A fixture call, or `None` when the tool is not one of these.
    pub fn call(&self, request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> Option<Result<CallToolResponse, McpError>> {
        let responses = request.input_responses.clone().unwrap_or_default();
        let state = request.request_state.as_deref();
        let answer = |key: &str| responses.get(key).cloned();
        let outcome = match &*request.name {
            "test_input_required_result_elicitation" => match accepted(answer("user_name"), "user_name") {
                Ok(Some(content)) => done(format!("Hello, {}!", content["name"].as_str().unwrap_or("stranger"))),
                Ok(None) => ask(vec![("user_name", name_question("What is your name?"))], None),
                Err(e) => Err(e),
            },
            "test_input_required_result_list_roots" => match answer("client_roots") {
                Some(Value::Object(roots)) if roots.get("roots").is_some_and(Value::is_array) => {
                    let uris: Vec<&str> = roots["roots"].as_array().into_iter().flatten().filter_map(|r| r["uri"].as_str()).collect();
                    done(format!("Roots: {}", uris.join(", ")))
                }
                Some(other) => Err(McpError::invalid_params(format!("inputResponses.client_roots must be a ListRootsResult, not {other}"), None)),
                None => ask(vec![("client_roots", roots_question())], None),
            },
            "test_input_required_result_request_state" => match (state, answer("confirm")) {
                (Some(state), Some(_)) => self.open(state, "request_state").and_then(|_| done("state-ok: the requestState was verified.".into())),
                _ => ask(vec![("confirm", form("Please confirm", json!({"ok": {"type": "boolean"}}), &["ok"]))], Some(self.seal("request_state"))),
            },
            "test_input_required_result_multiple_inputs" => {
                let all = ["user_name", "greeting", "client_roots"].iter().all(|k| responses.contains_key(*k));
                match state {
                    Some(state) if all => self.open(state, "multiple").and_then(|_| done("Received all three answers.".into())),
                    _ => ask(
                        vec![("user_name", name_question("What is your name?")), ("greeting", sampling("Generate a greeting", 50)), ("client_roots", roots_question())],
                        Some(self.seal("multiple")),
                    ),
                }
            }
            "test_input_required_result_multi_round" => match state.map(|s| self.open(s, "")) {
                None => ask(vec![("step1", name_question("Step 1: What is your name?"))], Some(self.seal("round-1"))),
                Some(Err(e)) => Err(e),
                Some(Ok(round)) if round == "round-1" => match accepted(answer("step1"), "step1") {
                    Ok(Some(content)) => {
                        let name = content["name"].as_str().unwrap_or("stranger");
                        let question = form("Step 2: What is your favorite color?", json!({"color": {"type": "string"}}), &["color"]);
                        ask(vec![("step2", question)], Some(self.seal(&format!("round-2:{name}"))))
                    }
                    Ok(None) => ask(vec![("step1", name_question("Step 1: What is your name?"))], Some(self.seal("round-1"))),
                    Err(e) => Err(e),
                },
                Some(Ok(round)) => match (round.strip_prefix("round-2:"), accepted(answer("step2"), "step2")) {
                    (Some(name), Ok(Some(content))) => done(format!("{name} likes {}.", content["color"].as_str().unwrap_or("no colour"))),
                    (_, Err(e)) => Err(e),
                    _ => Err(McpError::invalid_params("requestState: not a state of this tool's rounds", None)),
                },
            },
            "test_input_required_result_tampered_state" => match state {
                Some(state) => self.open(state, "tampered").and_then(|_| done("The requestState was intact.".into())),
                None => ask(vec![("user_name", name_question("What is your name?"))], Some(self.seal("tampered"))),
            },
            "test_input_required_result_capabilities" => {
                if !responses.is_empty() {
                    done(format!("Answered: {}", responses.keys().cloned().collect::<Vec<_>>().join(", ")))
                } else {
                    let declared = context.client_capabilities().and_then(|c| serde_json::to_value(c).ok()).unwrap_or_default();
                    let mut questions = Vec::new();
                    if declared["sampling"].is_object() {
                        questions.push(("capital_question", sampling("What is the capital of France?", 100)));
                    }
                    if declared["elicitation"].is_object() {
                        questions.push(("user_name", name_question("What is your name?")));
                    }
                    if declared["roots"].is_object() {
                        questions.push(("client_roots", roots_question()));
                    }
                    if questions.is_empty() { done("The client can be asked nothing.".into()) } else { ask(questions, None) }
                }
            }
            "test_elicitation" => {
                let message = request.arguments.as_ref().and_then(|a| a.get("message")).and_then(Value::as_str).unwrap_or("Please provide your information").to_owned();
                let schema = json!({"username": {"type": "string", "description": "User's response"}, "email": {"type": "string", "description": "User's email address"}});
                elicited(answer("user_info"), "User response", || form(&message, schema.clone(), &["username", "email"]), "user_info")
            }
            "test_elicitation_sep1034_defaults" => elicited(answer("defaults"), "Elicitation completed", defaults_question, "defaults"),
            "test_elicitation_sep1330_enums" => elicited(answer("enums"), "Elicitation completed", enums_question, "enums"),
            _ => return None,
        };
        Some(outcome)
    }

    /// The fixture prompt, or `None` for any other prompt.
    pub fn prompt(&self, request: &GetPromptRequestParams) -> Option<Result<GetPromptResponse, McpError>> {
        if request.name != PROMPT {
            return None;
        }
        let responses = request.input_responses.clone().unwrap_or_default();
        Some(match accepted(responses.get("user_context").cloned(), "user_context") {
            Ok(Some(content)) => {
                let context = content["context"].as_str().unwrap_or("none").to_owned();
                Ok(GetPromptResponse::Complete(
                    GetPromptResult::new(vec![PromptMessage::new_text(Role::User, format!("Answer with this context: {context}"))])
                        .with_description("A prompt built from the client's answer"),
                ))
            }
            Ok(None) => {
                let question = form("What context should the prompt use?", json!({"context": {"type": "string"}}), &["context"]);
                question.map(|q| GetPromptResponse::InputRequired(InputRequiredResult::from_input_requests(InputRequests::from([("user_context".to_owned(), q)]))))
            }
            Err(e) => Err(e),
        })
    }

    fn seal(&self, what: &str) -> String {
        self.codec.seal(what.as_bytes())
    }

    /// Opens a state this process sealed; `expected` (when not empty) is what it must hold.
    fn open(&self, state: &str, expected: &str) -> Result<String, McpError> {
        let refused = || McpError::invalid_params("requestState failed its integrity check: it was not issued by this server, or was altered", None);
        let bytes = self.codec.open(state).map_err(|_| refused())?;
        let text = String::from_utf8(bytes).map_err(|_| refused())?;
        if !expected.is_empty() && text != expected {
            return Err(refused());
        }
        Ok(text)
    }
}

/// An answer to an elicitation: `Ok(Some(content))` when accepted, `Ok(None)` when absent (ask
/// again), an error when it is not an elicitation result at all.
fn accepted(answer: Option<Value>, key: &str) -> Result<Option<Value>, McpError> {
    let Some(answer) = answer else { return Ok(None) };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(Some(answer.get("content").cloned().unwrap_or(json!({})))),
        Some("decline" | "cancel") => Ok(Some(json!({}))),
        _ => Err(McpError::invalid_params(format!("inputResponses.{key} must be an elicitation result with an action (accept, decline or cancel)"), None)),
    }
}

/// The elicitation tools: ask, then report the answer as the suite expects to read it.
fn elicited(answer: Option<Value>, label: &str, question: impl Fn() -> Result<InputRequest, McpError>, key: &str) -> Result<CallToolResponse, McpError> {
    match answer {
        Some(answer) if answer.get("action").and_then(Value::as_str).is_some() => {
            let action = answer["action"].as_str().unwrap_or_default();
            done(format!("{label}: action={action}, content={}", answer.get("content").cloned().unwrap_or(json!({}))))
        }
        Some(_) => Err(McpError::invalid_params(format!("inputResponses.{key} must be an elicitation result with an action"), None)),
        None => ask(vec![(key, question())], None),
    }
}

fn done(text: String) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
}

fn ask(questions: Vec<(&str, Result<InputRequest, McpError>)>, state: Option<String>) -> Result<CallToolResponse, McpError> {
    let mut requests = InputRequests::new();
    for (key, question) in questions {
        requests.insert(key.to_owned(), question?);
    }
    Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), state)))
}

fn request(value: Value) -> Result<InputRequest, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(format!("a fixture question does not parse: {e}"), None))
}

fn form(message: &str, properties: Value, required: &[&str]) -> Result<InputRequest, McpError> {
    request(json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required}}}))
}

fn name_question(message: &str) -> Result<InputRequest, McpError> {
    form(message, json!({"name": {"type": "string"}}), &["name"])
}

fn roots_question() -> Result<InputRequest, McpError> {
    request(json!({"method": "roots/list", "params": {}}))
}

fn sampling(text: &str, max_tokens: u32) -> Result<InputRequest, McpError> {
    request(json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens}}))
}

fn defaults_question() -> Result<InputRequest, McpError> {
    form(
        "Confirm your details (defaults filled in)",
        json!({
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }),
        &[],
    )
}

fn enums_question() -> Result<InputRequest, McpError> {
    form(
        "Choose your options",
        json!({
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}
        }),
        &[],
    )
}

