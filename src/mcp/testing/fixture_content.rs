//! More conformance fixtures, for the suite's resource, prompt, completion, logging, progress and
//! content scenarios: `test://static-text`, `test://static-binary`, the template
//! `test://template/{id}/data`, the prompts `test_simple_prompt`, `test_prompt_with_arguments`,
//! `test_prompt_with_embedded_resource` and `test_prompt_with_image`, and the tools
//! `test_tool_with_logging`, `test_tool_with_progress`, `test_simple_text`, `test_image_content`,
//! `test_audio_content`, `test_embedded_resource`, `test_multiple_content_types`,
//! `test_error_handling`, `test_logging_tool` and `json_schema_2020_12_tool`. Built only with the `testing` feature and served only under
//! `serve --conformance-fixtures`, beside the studio's own; they know nothing of the studio.

#![allow(deprecated)] // logging notifications: deprecated in 2026-07-28, tested for 2025-11-25.

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolResponse, CallToolResult, CompleteResult, InputRequest, InputRequests, InputRequiredResult, CompletionInfo, ContentBlock, GetPromptResult, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Reference, Resource, ResourceContents,
    ResourceTemplate, Role, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use schemars::JsonSchema;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

#[derive(serde::Deserialize, JsonSchema)]
struct NoArgs {}

fn block(value: Value) -> Result<ContentBlock, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(format!("a fixture content block: {e}"), None))
}

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new("test://static-text", "static-text").with_description("Conformance fixture: a text resource.").with_mime_type("text/plain"),
        Resource::new("test://static-binary", "static-binary").with_description("Conformance fixture: a PNG.").with_mime_type("image/png"),
    ]
}

pub fn templates() -> Vec<ResourceTemplate> {
    vec![ResourceTemplate::new("test://template/{id}/data", "template-data")
        .with_description("Conformance fixture: data for an id.")
        .with_mime_type("application/json")]
}

/// Reads a fixture resource; `None` for a URI that is not one.
pub fn read(uri: &str) -> Option<ReadResourceResult> {
    let contents = match uri {
        "test://static-text" => ResourceContents::text("This is the content of the static text resource.", uri).with_mime_type("text/plain"),
        "test://static-binary" => ResourceContents::blob(PNG, uri).with_mime_type("image/png"),
        _ => {
            let id = uri.strip_prefix("test://template/")?.strip_suffix("/data")?;
            let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
            ResourceContents::text(text, uri).with_mime_type("application/json")
        }
    };
    Some(ReadResourceResult::new(vec![contents]))
}

pub fn prompts() -> Vec<Prompt> {
    let required = |name: &str, description: &str| PromptArgument::new(name).with_description(description).with_required(true);
    vec![
        Prompt::new("test_simple_prompt", Some("Conformance fixture: a prompt without arguments."), None),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("Conformance fixture: a prompt with two arguments."),
            Some(vec![required("arg1", "First test argument"), required("arg2", "Second test argument")]),
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("Conformance fixture: a prompt that embeds a resource."),
            Some(vec![required("resourceUri", "URI of the resource to embed")]),
        ),
        Prompt::new("test_prompt_with_image", Some("Conformance fixture: a prompt with an image."), None),
    ]
}

/// Writes a fixture prompt; `None` for a name that is not one.
pub fn prompt(name: &str, args: &HashMap<String, String>) -> Option<Result<GetPromptResult, McpError>> {
    let arg = |key: &str| args.get(key).cloned().ok_or_else(|| McpError::invalid_params(format!("{name} needs {key}"), None));
    let user = |value: Value| block(value).map(|content| PromptMessage::new(Role::User, content));
    let messages = match name {
        "test_simple_prompt" => Ok(vec![PromptMessage::new_text(Role::User, "This is a simple prompt for testing.")]),
        "test_prompt_with_arguments" => (|| {
            Ok(vec![PromptMessage::new_text(Role::User, format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1")?, arg("arg2")?))])
        })(),
        "test_prompt_with_embedded_resource" => (|| {
            let uri = arg("resourceUri")?;
            Ok(vec![
                user(json!({"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}))?,
                PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
            ])
        })(),
        "test_prompt_with_image" => (|| {
            Ok(vec![
                user(json!({"type": "image", "data": PNG, "mimeType": "image/png"}))?,
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ])
        })(),
        _ => return None,
    };
    Some(messages.map(GetPromptResult::new))
}

/// Completes a fixture prompt's argument; `None` for a reference that is not a fixture's.
pub fn complete(reference: &Reference, value: &str) -> Option<CompleteResult> {
    let Reference::Prompt(p) = reference else { return None };
    if !p.name.starts_with("test_") {
        return None;
    }
    let values: Vec<String> = ["paris", "park", "party"].iter().filter(|v| v.starts_with(value)).map(|v| v.to_string()).collect();
    CompletionInfo::with_all_values(values).ok().map(CompleteResult::new)
}

pub fn tools() -> Vec<Tool> {
    [
        ("test_tool_with_logging", "Conformance fixture: sends three log messages while it works."),
        ("test_tool_with_progress", "Conformance fixture: reports progress 0, 50 and 100 of 100."),
        ("test_simple_text", "Conformance fixture: answers text."),
        ("test_image_content", "Conformance fixture: answers an image."),
        ("test_audio_content", "Conformance fixture: answers audio."),
        ("test_embedded_resource", "Conformance fixture: answers an embedded resource."),
        ("test_multiple_content_types", "Conformance fixture: answers text, an image and a resource."),
        ("test_error_handling", "Conformance fixture: always a tool error."),
    ]
    .into_iter()
    .map(|(name, description)| Tool::new(name, description, schema_for_type::<NoArgs>()))
    .chain([
        Tool::new("test_missing_capability", "Conformance fixture: needs the client's sampling capability (-32021 without it).", schema_for_type::<NoArgs>()),
        Tool::new("test_streaming_elicitation", "Conformance fixture: asks a question as an input-required result, never as a request of its own.", schema_for_type::<NoArgs>()),
        Tool::new("test_logging_tool", "Conformance fixture: logs only when the request asks for a log level.", schema_for_type::<NoArgs>()),
        Tool::new("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json_schema_2020_12()),
    ])
    .collect()
}

/// The suite's JSON Schema 2020-12 input schema, kept as it is written.
fn json_schema_2020_12() -> std::sync::Arc<rmcp::model::JsonObject> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => std::sync::Arc::new(map),
        _ => std::sync::Arc::new(Default::default()),
    }
}

/// Runs a fixture tool; `None` for a name that is not one.
pub async fn call(name: &str, context: &RequestContext<RoleServer>) -> Option<Result<CallToolResponse, McpError>> {
    Some(run(name, context).await?.map(CallToolResponse::Complete).or_else(|e| match e {
        Asked(question) => Ok(CallToolResponse::InputRequired(question)),
        Failed(e) => Err(e),
    }))
}

/// How a fixture tool did not complete.
enum NotDone {
    Asked(InputRequiredResult),
    Failed(McpError),
}
use NotDone::{Asked, Failed};

impl From<McpError> for NotDone {
    fn from(e: McpError) -> Self {
        Failed(e)
    }
}

async fn run(name: &str, context: &RequestContext<RoleServer>) -> Option<Result<CallToolResult, NotDone>> {
    let content = |values: Vec<Value>| values.into_iter().map(block).collect::<Result<Vec<_>, _>>().map(CallToolResult::success).map_err(Failed);
    let pause = || tokio::time::sleep(Duration::from_millis(50));
    Some(match name {
        "test_tool_with_logging" => {
            for (i, message) in ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate() {
                if i > 0 {
                    pause().await;
                }
                let _ = context.peer.notify_logging_message(LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))).await;
            }
            Ok(CallToolResult::success(vec![ContentBlock::text("Tool with logging executed successfully")]))
        }
        "test_tool_with_progress" => {
            let token = context.meta.get_progress_token();
            for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    pause().await;
                }
                if let Some(token) = &token {
                    let _ = context.peer.notify_progress(ProgressNotificationParam::new(token.clone(), step).with_total(100.0)).await;
                }
            }
            Ok(CallToolResult::success(vec![ContentBlock::text("Tool with progress executed successfully")]))
        }
        "test_logging_tool" => {
            // The 2026-07-28 rule the suite checks: no log message unless the request asked for a level.
            if let Some(level) = context.meta.log_level() {
                let _ = context.peer.notify_logging_message(LoggingMessageNotificationParam::new(level, json!("test_logging_tool ran"))).await;
            }
            Ok(CallToolResult::success(vec![ContentBlock::text("Logged only if asked.")]))
        }
        "test_missing_capability" => {
            let declared = context.client_capabilities().is_some_and(|c| c.sampling.is_some());
            if !declared {
                let mut needed = rmcp::model::ClientCapabilities::default();
                needed.sampling = Some(Default::default());
                return Some(Err(Failed(McpError::missing_required_client_capability(needed))));
            }
            Ok(CallToolResult::success(vec![ContentBlock::text("The client can sample.")]))
        }
        "test_streaming_elicitation" => {
            let question = json!({"method": "elicitation/create", "params": {"mode": "form", "message": "What is your name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}});
            match serde_json::from_value::<InputRequest>(question) {
                Ok(question) => Err(Asked(InputRequiredResult::from_input_requests(InputRequests::from([("user_name".to_owned(), question)])))),
                Err(e) => Err(Failed(McpError::internal_error(e.to_string(), None))),
            }
        }
        "json_schema_2020_12_tool" => Ok(CallToolResult::success(vec![ContentBlock::text("Schema tool called.")])),
        "test_simple_text" => content(vec![json!({"type": "text", "text": "This is a simple text response for testing."})]),
        "test_image_content" => content(vec![json!({"type": "image", "data": PNG, "mimeType": "image/png"})]),
        "test_audio_content" => content(vec![json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"})]),
        "test_embedded_resource" => content(vec![json!({"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}})]),
        "test_multiple_content_types" => content(vec![
            json!({"type": "text", "text": "Multiple content types test:"}),
            json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                "text": "{\"test\":\"data\",\"value\":123}"}}),
        ]),
        "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text("This tool intentionally returns an error for testing")])),
        _ => return None,
    })
}
