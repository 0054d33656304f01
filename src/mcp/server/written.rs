//! Answers that a transport writes as text. The SDK's `CallToolResult` holds its structured
//! content as a `serde_json::Value`, a map entry and a `String` per field, built only to be
//! written out at once; a list of 50 bookings is some 900 of them. A transport that writes its
//! messages itself (stdio's, in `front/stdio.rs`) puts a [`WrittenAnswers`] on each request it
//! hands the SDK; the tool call then writes its answer straight from the answer's type to JSON
//! text, leaves it there under the request's id, and sends the rest of the result through the SDK
//! without it; [`line`] puts it back where it belongs as the response is written. The client reads
//! the same JSON either way.

use rmcp::model::{CallToolResult, JsonRpcMessage, JsonRpcVersion2_0, RequestId, ServerJsonRpcMessage, ServerResult};
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The structured answers a session's transport is to write, by the id of the request each
/// answers. One is taken out as its response is written, so the map holds the calls under way.
#[derive(Clone, Default)]
pub struct WrittenAnswers(Arc<Mutex<HashMap<RequestId, Box<RawValue>>>>);

impl WrittenAnswers {
    /// Leaves the answer to request `id` for its response.
    pub fn put(&self, id: RequestId, answer: Box<RawValue>) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(id, answer);
    }

    fn take(&self, id: &RequestId) -> Option<Box<RawValue>> {
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
            let whole = Answered { jsonrpc: &response.jsonrpc, id: &response.id, result: WithAnswer { result, structured_content: &answer } };
            return serde_json::to_string(&whole);
        }
        // Only a tool's result leaves an answer; a response of another kind keeps its own.
        tracing::error!(id = %response.id, "an answer was left for a response that is not a tool's result");
    }
    serde_json::to_string(message)
}

/// A response with a tool's result: as `JsonRpcResponse` writes it.
#[derive(Serialize)]
struct Answered<'a> {
    jsonrpc: &'a JsonRpcVersion2_0,
    id: &'a RequestId,
    result: WithAnswer<'a>,
}

/// A `CallToolResult` and its structured content, written as the one object the SDK would write.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WithAnswer<'a> {
    #[serde(flatten)]
    result: &'a CallToolResult,
    structured_content: &'a RawValue,
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
        answers.put(NumberOrString::Number(7), serde_json::value::to_raw_value(&answer).unwrap());
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
        answers.put(NumberOrString::String("a".into()), serde_json::value::to_raw_value(&json!({"rooms": []})).unwrap());
        let other = line(&response(CallToolResult::success(vec![]), 1), &answers).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&other).unwrap().pointer("/result/structuredContent"), None);
        let own = JsonRpcMessage::response(ServerResult::CallToolResult(CallToolResult::success(vec![])), NumberOrString::String("a".into()));
        assert_eq!(serde_json::from_str::<Value>(&line(&own, &answers).unwrap()).unwrap()["result"]["structuredContent"], json!({"rooms": []}));
    }
}
