//! Answers that a transport writes as text. The SDK's `CallToolResult` holds its structured
//! content as a `serde_json::Value`, a map entry and a `String` per field, built only to be
//! written out at once; a list of 50 bookings is some 900 of them. A transport that writes its
//! messages itself (stdio's, in `front/stdio.rs`) puts a [`WrittenAnswers`] on each request it
//! hands the SDK; the tool call then writes its answer straight from the answer's type to JSON
//! text, leaves it there under the request's id, and sends the rest of the result through the SDK
//! without it; [`line`] puts it back where it belongs as the response is written. The client reads
//! the same JSON either way.

use rmcp::model::{CallToolResult, JsonRpcMessage, JsonRpcVersion2_0, RequestId, ServerJsonRpcMessage, ServerResult};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The structured answers a session's transport is to write, by the id of the request each
/// answers. One is taken out as its response is written, so the map holds the calls under way.
#[derive(Clone, Default)]
pub struct WrittenAnswers(Arc<Mutex<HashMap<RequestId, String>>>);

impl WrittenAnswers {
    /// Leaves the answer to request `id` for its response.
    pub fn put(&self, id: RequestId, answer: String) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(id, answer);
    }

    fn take(&self, id: &RequestId) -> Option<String> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(id)
    }
}

/// One message as the JSON text of a line: a tool's result with the answer left for it in
/// `answers` put back as its `structuredContent`, anything else as the SDK's types write it.
pub fn line(message: &ServerJsonRpcMessage, answers: &WrittenAnswers) -> serde_json::Result<String> {
    if let JsonRpcMessage::Response(response) = message
        && let Some(answer) = answers.take(&response.id)
    {
        if let ServerResult::CallToolResult(result) = &response.result {
            return with_answer(&response.jsonrpc, &response.id, result, &answer);
        }
        // Only a tool's result leaves an answer; a response of another kind keeps its own.
        tracing::error!(id = %response.id, "an answer was left for a response that is not a tool's result");
    }
    serde_json::to_string(message)
}

/// A response with a tool's result, as `JsonRpcResponse` writes it, with `answer` (JSON text) as
/// the result's `structuredContent`: the result is an object, whose closing brace makes way for
/// one more member.
fn with_answer(jsonrpc: &JsonRpcVersion2_0, id: &RequestId, result: &CallToolResult, answer: &str) -> serde_json::Result<String> {
    let result = serde_json::to_string(result)?;
    let Some(members) = result.strip_suffix('}') else {
        return Err(serde::ser::Error::custom(format!("a tool's result written as {result}, not as an object")));
    };
    let mut line = String::with_capacity(result.len() + answer.len() + 64);
    line.push_str("{\"jsonrpc\":");
    line.push_str(&serde_json::to_string(jsonrpc)?);
    line.push_str(",\"id\":");
    line.push_str(&serde_json::to_string(id)?);
    line.push_str(",\"result\":");
    line.push_str(members);
    if !members.ends_with('{') {
        line.push(',');
    }
    line.push_str("\"structuredContent\":");
    line.push_str(answer);
    line.push_str("}}");
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, NumberOrString};
    use serde_json::{json, Value};

    fn response(result: CallToolResult, id: i64) -> ServerJsonRpcMessage {
        JsonRpcMessage::response(ServerResult::CallToolResult(result), NumberOrString::Number(id))
    }

    #[test]
    fn a_written_answer_reads_as_the_sdk_would_write_it() {
        let answer = json!({"bookings": [{"id": "b-1", "room": "studio-a", "notes": "a \"quoted\"\nline", "paid": 0}], "next_cursor": null});
        let mut whole = CallToolResult::success(vec![ContentBlock::text("1 booking.")]);
        whole.structured_content = Some(answer.clone());
        let expected: Value = serde_json::to_value(response(whole, 7)).unwrap();

        let answers = WrittenAnswers::default();
        answers.put(NumberOrString::Number(7), serde_json::to_string(&answer).unwrap());
        let without = CallToolResult::success(vec![ContentBlock::text("1 booking.")]);
        let written = line(&response(without.clone(), 7), &answers).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), expected, "{written}");
        assert!(!written.contains('\n'), "one line: {written}");
        // Taken once: the same id again (a later request may reuse it) writes what it is given.
        let again = line(&response(without, 7), &answers).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&again).unwrap().pointer("/result/structuredContent"), None);
    }

    #[test]
    fn an_answer_goes_only_to_its_own_request() {
        let answers = WrittenAnswers::default();
        answers.put(NumberOrString::String("a".into()), serde_json::to_string(&json!({"rooms": []})).unwrap());
        let other = line(&response(CallToolResult::success(vec![]), 1), &answers).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&other).unwrap().pointer("/result/structuredContent"), None);
        let own = JsonRpcMessage::response(ServerResult::CallToolResult(CallToolResult::success(vec![])), NumberOrString::String("a".into()));
        assert_eq!(serde_json::from_str::<Value>(&line(&own, &answers).unwrap()).unwrap()["result"]["structuredContent"], json!({"rooms": []}));
    }
}
