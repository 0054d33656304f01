//! The JSON-RPC envelope, as both fronts (stdio and HTTP) check it before the SDK reads a message.
//! The SDK drops what it cannot parse, or answers without an `id`, and reads a known method with
//! params of the wrong shape as an unknown method; so the rule lives here, once: a message is
//! passed on only if the SDK will read it as what it says it is, and anything else gets its
//! JSON-RPC error here, carrying the request's id whenever that id is readable.
//! It knows nothing of tools or of the transport the bytes came on.

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, CancelTaskMethod, CancelTaskParams, ClientJsonRpcMessage,
    ClientRequest, CompleteRequestMethod, ConstString, DiscoverRequestMethod, DiscoverRequestParams,
    GetPromptRequestMethod, GetSkillRequestMethod, GetTaskMethod, GetTaskParams, InitializeRequestParams,
    InitializeResultMethod, JsonObject, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, ListPromptsRequestMethod, ListResourceTemplatesRequestMethod,
    ListResourcesRequestMethod, ListSkillsRequestMethod, ListToolsRequestMethod, NumberOrString,
    PaginatedRequestParams, PingRequestMethod, ReadResourceDirectoryRequestMethod, ReadResourceRequestMethod, RequestId, RequestMetaObject,
    SetLevelRequestMethod, SubscribeRequestMethod, SubscriptionsListenRequestMethod, UnsubscribeRequestMethod,
    UpdateTaskMethod, UpdateTaskParams,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The bytes were not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON was not a JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// A known method whose params do not have its shape.
pub const INVALID_PARAMS: i64 = -32602;
/// The method does not exist (in the protocol version the request speaks).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Our own failure.
pub const INTERNAL_ERROR: i64 = -32603;

/// Methods of the `initialize` handshake's protocol (2025-11-25) that 2026-07-28 removed: a request
/// that speaks 2026-07-28 (its `_meta` says so) and names one of them names a method that does not
/// exist for it.
const REMOVED_IN_2026: &[&str] = &["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// The 2025-11-25 task methods the SDK does not read, answered for legacy requests by `front/legacy.rs`.
const LEGACY_TASK_METHODS: &[&str] = &["tasks/result", "tasks/list"];

/// What a front does with one message.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// The SDK reads it as what it says it is: pass it on unchanged. The message goes with it, as
    /// a JSON value and as the SDK reads it, so that no front reads the bytes again.
    Forward(Value, Box<ClientJsonRpcMessage>),
    /// Not something the SDK can serve: send this error response instead.
    Answer(Value),
    /// A notification or a reply the SDK cannot read: JSON-RPC sends nothing back for either.
    Drop(String),
}

/// A JSON-RPC error response.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Checks one message, as its raw bytes.
pub fn check(bytes: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Verdict::Answer(error(Value::Null, PARSE_ERROR, "parse error: the message is not UTF-8"));
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value) => check_value(value, text),
        Err(e) => Verdict::Answer(error(Value::Null, PARSE_ERROR, &format!("parse error: the message is not JSON ({e})"))),
    }
}

/// Checks one message, read as JSON from `text`. The SDK's own reading is tried on the text, not
/// on the value: the two differ, for one, on a key given twice (the value keeps the last).
fn check_value(value: Value, text: &str) -> Verdict {
    let Value::Object(object) = &value else {
        return Verdict::Answer(error(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: send one JSON-RPC object per message (batches are not supported)",
        ));
    };
    // The id is read as the SDK reads it, so an error echoes exactly the ids the SDK would.
    let id = match object.get("id") {
        None => None,
        Some(raw) => match serde_json::from_value::<NumberOrString>(raw.clone()) {
            Ok(id) => Some(id.into_json_value()),
            Err(_) => {
                return Verdict::Answer(error(
                    Value::Null,
                    INVALID_REQUEST,
                    "invalid request: \"id\" must be a string or an integer from -2^63 to 2^63-1",
                ))
            }
        },
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    let fault = |code, message: String| Verdict::Answer(error(reply_id.clone(), code, &message));
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return fault(INVALID_REQUEST, "invalid request: \"jsonrpc\" must be \"2.0\"".into());
    }
    match object.get("method") {
        Some(Value::String(method)) => match check_call(method, object, id.is_some(), text, fault) {
            Ok(message) => Verdict::Forward(value, Box::new(message)),
            Err(verdict) => verdict,
        },
        Some(_) => fault(INVALID_REQUEST, "invalid request: \"method\" must be a string".into()),
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            // A client's reply to a request of ours: never answered, only passed on if readable.
            match serde_json::from_str::<ClientJsonRpcMessage>(text) {
                Ok(message) => Verdict::Forward(value, Box::new(message)),
                Err(e) => Verdict::Drop(format!("a reply the SDK cannot read: {e}")),
            }
        }
        None => fault(INVALID_REQUEST, "invalid request: a request needs a \"method\" string".into()),
    }
}

/// A request (with an id) or a notification (without): its params must fit its method. The
/// message as the SDK reads it when it reads it as what it says it is. The SDK's own reading comes
/// first; only a message it cannot read is read again, method by method, for an error that names
/// the field.
fn check_call(
    method: &str,
    object: &Map<String, Value>,
    is_request: bool,
    text: &str,
    fault: impl Fn(i64, String) -> Verdict,
) -> Result<ClientJsonRpcMessage, Verdict> {
    let speaks_2026 = object
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str)
        .is_some_and(|v| v >= "2026-07-28");
    if speaks_2026 && REMOVED_IN_2026.contains(&method) {
        let message = format!("method not found: {method} is not part of MCP 2026-07-28 (it belongs to the initialize handshake)");
        return Err(if is_request { fault(METHOD_NOT_FOUND, message) } else { Verdict::Drop(message) });
    }
    // A method no one serves is named in its error (the SDK's own says only the method), but for
    // the 2025-11-25 task wire, which a legacy request reaches beside the SDK (`front/legacy.rs`).
    if is_request && !KNOWN_REQUESTS.contains(&method) && (speaks_2026 || !LEGACY_TASK_METHODS.contains(&method)) {
        return Err(fault(METHOD_NOT_FOUND, format!("method not found: {method}")));
    }
    let shape = shape_problem(method, object.get("params"));
    if shape.is_none() && is_request && method == CallToolRequestMethod::VALUE && !object.contains_key("result") && !object.contains_key("error") {
        if let Some(message) = tool_call(text) {
            return Ok(message);
        }
    }
    let (code, problem) = match shape {
        Some(problem) => (INVALID_PARAMS, problem),
        None => match serde_json::from_str::<ClientJsonRpcMessage>(text) {
            // The SDK reads a known method whose params it cannot read as an unknown method.
            Ok(JsonRpcMessage::Request(request))
                if matches!(request.request, ClientRequest::CustomRequest(_)) && KNOWN_REQUESTS.contains(&method) =>
            {
                let why = params_problem(method, object.get("params")).unwrap_or_else(|| format!("invalid params: the params do not fit {method}"));
                (INVALID_PARAMS, why)
            }
            Ok(message) => return Ok(message),
            Err(e) => match params_problem(method, object.get("params")) {
                Some(why) => (INVALID_PARAMS, why),
                None => (INVALID_REQUEST, format!("invalid request: {e}")),
            },
        },
    };
    Err(if is_request { fault(code, problem) } else { Verdict::Drop(format!("a notification of {method} that cannot be read: {problem}")) })
}

/// A `tools/call` request read straight as the SDK's type for it, or None to read it as the SDK
/// reads any message. The SDK tries each kind of request in turn, and `tools/call` comes
/// fourteenth: the thirteen that do not fit each build an error message first, about a fifth of
/// the instructions a quick tool's call takes. The kinds before it each take one other method, so
/// when this reading succeeds the SDK's own settles on the same request; when it fails, the SDK's
/// own reading decides, and its error is the one sent.
fn tool_call(text: &str) -> Option<ClientJsonRpcMessage> {
    let request = match serde_json::from_str::<Objects<PlainToolCall>>(text) {
        Ok(Objects(plain)) => plain.into_sdk(),
        Err(_) => serde_json::from_str::<JsonRpcRequest<CallToolRequest>>(text).ok()?,
    };
    Some(JsonRpcMessage::Request(request_of(request)))
}

/// A plain `tools/call` ([`PlainToolCall`]) read straight from a message's bytes, with no JSON
/// value of the whole message on the way: the message [`check`] forwards for the same bytes, as
/// the SDK reads it. `None` for anything else, which [`check`] reads. A plain call passes every
/// check of the envelope by its types alone: a `jsonrpc` of `"2.0"`, an id the SDK reads, the
/// method, an object with each key once (and params that are one), and nothing else; and a
/// front routes it to the SDK whatever protocol it speaks, as it carries no 2025-11-25 task.
pub fn plain_tool_call(bytes: &[u8]) -> Option<ClientJsonRpcMessage> {
    let text = std::str::from_utf8(bytes).ok()?;
    // Any other message is passed over at the cost of a search, not of a reading that fails
    // (a method spelt with an escape goes to the check, which reads it all the same).
    if !text.contains("\"tools/call\"") {
        return None;
    }
    let Objects(plain) = serde_json::from_str::<Objects<PlainToolCall>>(text).ok()?;
    Some(JsonRpcMessage::Request(request_of(plain.into_sdk())))
}

fn request_of(request: JsonRpcRequest<CallToolRequest>) -> JsonRpcRequest<ClientRequest> {
    JsonRpcRequest { jsonrpc: request.jsonrpc, id: request.id, request: ClientRequest::CallToolRequest(request.request) }
}

/// A struct read only from a JSON object: serde's derived reading takes a struct from an array
/// too (its fields in order), which no JSON-RPC message or params may be.
struct Objects<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Objects<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Object(std::marker::PhantomData)).map(Objects)
    }
}

/// A `tools/call` of the plain shape nearly every client sends (a name, arguments and `_meta`, and
/// nothing else), read in one pass. The SDK's types read the same text through two flattened
/// layers (`JsonRpcRequest`'s request, then `_meta` beside the params), which buffer every value
/// on the way before building it; what this reading does not take (any other member, a key given
/// twice) goes the SDK's way, and the two readings build the same request (a unit test holds them
/// together).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainToolCall {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    method: CallToolRequestMethod,
    params: Objects<PlainToolParams>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainToolParams {
    #[serde(rename = "_meta")]
    meta: Option<JsonObject>,
    name: String,
    arguments: Option<JsonObject>,
}

impl PlainToolCall {
    /// The request as the SDK builds it: `_meta` in the request's extensions, not its params.
    fn into_sdk(self) -> JsonRpcRequest<CallToolRequest> {
        let Objects(PlainToolParams { meta, name, arguments }) = self.params;
        let mut params = CallToolRequestParams::new(name);
        params.arguments = arguments;
        let mut request = CallToolRequest::new(params);
        request.method = self.method;
        if let Some(meta) = meta {
            request.extensions.insert(RequestMetaObject::from(meta));
        }
        JsonRpcRequest { jsonrpc: self.jsonrpc, id: self.id, request }
    }
}

/// The request methods the SDK reads into their own types; any other method is served as unknown.
pub(in crate::mcp) const KNOWN_REQUESTS: &[&str] = &[
    PingRequestMethod::VALUE,
    InitializeResultMethod::VALUE,
    DiscoverRequestMethod::VALUE,
    CompleteRequestMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    GetPromptRequestMethod::VALUE,
    ListPromptsRequestMethod::VALUE,
    ListResourcesRequestMethod::VALUE,
    ListResourceTemplatesRequestMethod::VALUE,
    ReadResourceRequestMethod::VALUE,
    SubscriptionsListenRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
    CallToolRequestMethod::VALUE,
    ListToolsRequestMethod::VALUE,
    GetTaskMethod::VALUE,
    UpdateTaskMethod::VALUE,
    CancelTaskMethod::VALUE,
    ListSkillsRequestMethod::VALUE,
    GetSkillRequestMethod::VALUE,
    ReadResourceDirectoryRequestMethod::VALUE,
];

/// What is wrong with the shape of a message's params (they must be an object, its `_meta` too,
/// which the SDK takes out before it reads the rest); `None` when nothing is.
fn shape_problem(method: &str, params: Option<&Value>) -> Option<String> {
    match params {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => match params.get("_meta") {
            None | Some(Value::Object(_)) | Some(Value::Null) => None,
            Some(_) => Some(format!("invalid params: \"params._meta\" of {method} must be an object")),
        },
        Some(_) => Some(format!("invalid params: \"params\" of {method} must be an object")),
    }
}

/// What is wrong with a message's params, read as the SDK reads its method's, naming the field;
/// `None` when nothing is (or the method is not one this server reads field by field).
fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    let mut rest = params.and_then(Value::as_object).cloned().unwrap_or_default();
    rest.remove("_meta");
    let rest = Value::Object(rest);
    // The methods this server serves, read as the SDK reads them, so that the error names the field.
    let fits = match method {
        m if m == CallToolRequestMethod::VALUE => fits::<CallToolRequestParams>(rest),
        m if m == GetTaskMethod::VALUE => fits::<GetTaskParams>(rest),
        m if m == UpdateTaskMethod::VALUE => fits::<UpdateTaskParams>(rest),
        m if m == CancelTaskMethod::VALUE => fits::<CancelTaskParams>(rest),
        m if m == ListToolsRequestMethod::VALUE => fits::<PaginatedRequestParams>(rest),
        m if m == DiscoverRequestMethod::VALUE => fits::<DiscoverRequestParams>(rest),
        m if m == InitializeResultMethod::VALUE => fits::<InitializeRequestParams>(rest),
        _ => Ok(()),
    };
    fits.err().map(|e| format!("invalid params of {method}: {e}"))
}

/// Whether `params` reads as `T`; the error names the path to the field that does not.
fn fits<T: DeserializeOwned>(params: Value) -> Result<(), String> {
    match serde_path_to_error::deserialize::<_, T>(params) {
        Ok(_) => Ok(()),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            Err(if path == "." { format!("params: {inner}") } else { format!("params.{path}: {inner}") })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match check(line.as_bytes()) {
            Verdict::Answer(reply) => reply,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn methods_2026_removed_are_not_found_for_a_2026_request_and_served_to_legacy_clients() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        for method in REMOVED_IN_2026 {
            let reply = answer(&format!(r#"{{"jsonrpc":"2.0","id":3,"method":"{method}","params":{{{meta}}}}}"#));
            assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(3), json!(METHOD_NOT_FOUND)), "{method}");
        }
        let legacy = r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}"#;
        assert!(matches!(check(legacy.as_bytes()), Verdict::Forward(..)), "a legacy session still sets its level");
    }

    #[test]
    fn an_error_echoes_a_readable_id_and_nulls_an_unreadable_one() {
        let reply = answer(r#"{"jsonrpc":"2.0","id":"abc","method":"tools/list","params":[]}"#);
        assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!("abc"), json!(INVALID_PARAMS)));
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":[]}}"#)["id"], 7);
        for id in ["{}", "[1]", "true", "1.5", "1000000000000000000000000000000", "null"] {
            let reply = answer(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#));
            assert_eq!(reply["id"], Value::Null, "{id}");
            assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{id}");
        }
    }

    #[test]
    fn a_malformed_tools_call_names_the_field() {
        let reply = answer(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":5}}"#);
        assert_eq!(reply["error"]["code"], INVALID_PARAMS);
        assert!(reply["error"]["message"].as_str().unwrap().contains("params.name"), "{reply}");
        let reply = answer(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":[]}}"#);
        assert!(reply["error"]["message"].as_str().unwrap().contains("params.arguments"), "{reply}");
    }

    #[test]
    fn a_broken_notification_is_dropped_and_a_good_request_forwarded() {
        assert!(matches!(check(br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[]}"#), Verdict::Drop(_)));
        assert!(matches!(check(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}"#), Verdict::Forward(..)));
    }

    #[test]
    fn a_tool_call_is_read_as_the_sdk_reads_it() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"progressToken":7}"#;
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_rooms"}}"#.to_owned(),
            r#"{"id":"a-b","method":"tools/call","jsonrpc":"2.0","params":{"arguments":{"room":"a","n":[1,2.5,{"x":null}]},"name":"query_bookings"}}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{{"name":"reflow_month","arguments":{{}},{meta}}}}}"#),
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"reflow_month","arguments":{},"task":{"ttl":60000}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{},"inputResponses":{"a":{"action":"accept","content":{"ok":true}}},"requestState":"s"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"q","arguments":{"a":1,"a":[2]},"_meta":null}}"#.to_owned(),
            r#"{"params":{"arguments":null,"name":"q\u00e9"},"id":"7","jsonrpc":"2.0","method":"tools/call"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"q","_meta":{"progressToken":"p","x":{"y":[true]}}},"x":1}"#.to_owned(),
        ];
        // Most of these take the plain reading; the rest (a task, a retry's state, another member) the SDK's.
        let plain = lines.iter().filter(|line| serde_json::from_str::<Objects<PlainToolCall>>(line).is_ok()).count();
        assert_eq!(plain, 5, "the plain reading was not tried");
        for line in &lines {
            let sdk = serde_json::from_str::<ClientJsonRpcMessage>(line).unwrap();
            let read = tool_call(line).unwrap_or_else(|| panic!("not read: {line}"));
            assert_eq!(serde_json::to_value(&read).unwrap(), serde_json::to_value(&sdk).unwrap(), "{line}");
            let Verdict::Forward(_, forwarded) = check(line.as_bytes()) else { panic!("{line}") };
            assert_eq!(serde_json::to_value(&*forwarded).unwrap(), serde_json::to_value(&sdk).unwrap(), "{line}");
            // The stdio front's reading before the envelope's check: the same message, or none.
            if let Some(straight) = plain_tool_call(line.as_bytes()) {
                assert_eq!(serde_json::to_value(&straight).unwrap(), serde_json::to_value(&sdk).unwrap(), "{line}");
            }
        }
        assert_eq!(lines.iter().filter(|line| plain_tool_call(line.as_bytes()).is_some()).count(), 5);
        // What is not a plain call's object is not read straight, and the envelope's check refuses it.
        for not_plain in [
            r#"["2.0",1,"tools/call",{"name":"q"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[null,"q",null]}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"q"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"q"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"q"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q","_meta":3}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q"}} x"#,
        ] {
            assert!(plain_tool_call(not_plain.as_bytes()).is_none(), "{not_plain}");
            assert!(!matches!(check(not_plain.as_bytes()), Verdict::Forward(_, m) if matches!(*m, JsonRpcMessage::Request(JsonRpcRequest { request: ClientRequest::CallToolRequest(_), .. }))), "{not_plain}");
        }
        // What the typed reading refuses goes the SDK's way, with its errors.
        assert!(tool_call(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":5}}"#).is_none());
        for twice in [r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"a","name":"b"}}"#, r#"{"jsonrpc":"2.0","id":9,"id":8,"method":"tools/call","params":{"name":"a"}}"#] {
            assert!(serde_json::from_str::<Objects<PlainToolCall>>(twice).is_err(), "{twice}");
            assert!(plain_tool_call(twice.as_bytes()).is_none(), "{twice}");
            // Read as the SDK's typed reading reads them, as before the plain reading was tried.
            let typed = serde_json::from_str::<JsonRpcRequest<CallToolRequest>>(twice).ok().map(|r| serde_json::to_value(r).unwrap());
            let read = tool_call(twice).map(|m| match m {
                JsonRpcMessage::Request(JsonRpcRequest { jsonrpc, id, request: ClientRequest::CallToolRequest(request) }) => {
                    serde_json::to_value(JsonRpcRequest { jsonrpc, id, request }).unwrap()
                }
                other => panic!("{other:?}"),
            });
            assert_eq!(read, typed, "{twice}");
        }
        let reply = answer(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x"},"result":{}}"#);
        assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{reply}");
    }

    #[test]
    fn an_unknown_method_is_named_in_its_error() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        for method in ["tasks/result", "tasks/list", "rooms/teleport"] {
            let reply = answer(&format!(r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{{meta}}}}}"#));
            assert_eq!(reply["error"]["code"], METHOD_NOT_FOUND, "{reply}");
            assert_eq!(reply["error"]["message"], format!("method not found: {method}"), "{reply}");
        }
        let reply = answer(r#"{"jsonrpc":"2.0","id":1,"method":"rooms/teleport","params":{}}"#);
        assert_eq!(reply["error"]["message"], "method not found: rooms/teleport", "legacy requests too: {reply}");
        // The legacy task wire still reaches its own front.
        assert!(matches!(check(br#"{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":"t"}}"#), Verdict::Forward(..)));
    }

    #[test]
    fn a_key_given_twice_is_refused_with_the_id() {
        // Found by the stdio_line fuzz target: the SDK refuses what a JSON value silently merges.
        let reply = answer(r#"{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/list"}"#);
        assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(4), json!(INVALID_REQUEST)));
        assert!(matches!(check(br#"{"jsonrpc":"2.0","method":".0","method":"notifications/initialized"}"#), Verdict::Drop(_)));
    }
}
