//! Issue 29, what is left: clients of the 2025-11-25 `initialize` handshake in a session (stdio, and
//! HTTP sessions from their `initialize`) are asked mid-call with a real `elicitation/create` and
//! subscribe to calendars with `resources/subscribe`; and the `Mcp-Param-*` headers of 2026-07-28
//! (`x-mcp-header`) are checked against the body over HTTP.

use crate::mcp_client::{http, meta, stdio, HttpServer, Mcp, StdioServer, VERSION};
use crate::support::temp_db;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const STUDIO_B: &str = "studioflow://calendars/rooms/studio-b.ics";

fn initialize(capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "legacy-tests", "version": "1"}}})
}

/// A legacy client on stdio, initialized with `capabilities`.
fn legacy_stdio(db: &std::path::Path, extra: &[&str], capabilities: Value) -> StdioServer {
    let mut s = stdio(db, extra);
    let init = s.send(&initialize(capabilities));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    s.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s
}

#[test]
fn over_stdio_a_legacy_client_is_asked_mid_call_with_a_real_elicitation() {
    let db = temp_db();
    let mut s = legacy_stdio(&db.path, &["--demo", "--conformance-fixtures"], json!({"elicitation": {}}));
    s.notify(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test_elicitation", "arguments": {"message": "Who are you?"}}}));
    // The server asks before it answers: a request of its own, on the session.
    let asked = s.raw_read();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Who are you?");
    assert_eq!(asked["params"]["requestedSchema"]["required"], json!(["username", "email"]));
    s.notify(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}}));
    let answer = s.raw_read();
    assert_eq!(answer["id"], 2, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("User response: action=accept") && text.contains("ada@example.com"), "{text}");
    assert!(answer["result"].get("resultType").is_none(), "a legacy answer has no resultType: {answer}");

    // Two rounds of questions are two requests, the second built from the first answer.
    s.notify(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "test_input_required_result_multi_round", "arguments": {}}}));
    let first = s.raw_read();
    assert_eq!(first["params"]["message"], "Step 1: What is your name?", "{first}");
    s.notify(&json!({"jsonrpc": "2.0", "id": first["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}));
    let second = s.raw_read();
    assert_eq!(second["params"]["message"], "Step 2: What is your favorite color?", "{second}");
    s.notify(&json!({"jsonrpc": "2.0", "id": second["id"], "result": {"action": "accept", "content": {"color": "teal"}}}));
    let answer = s.raw_read();
    assert_eq!(answer["result"]["content"][0]["text"], "Ada likes teal.", "{answer}");
}

/// A legacy call of `reflow_month {require_approval: true}` on stdio: the approval question, then
/// the answer to `action`; the call's final answer.
fn reflow_with_approval(s: &mut StdioServer, id: u64, action: &str) -> (Value, Value) {
    s.notify(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "reflow_month",
        "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"], "require_approval": true}}}));
    let asked = s.raw_read();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    s.notify(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": action, "content": {}}}));
    let answer = s.raw_read();
    assert_eq!(answer["id"], id, "{answer}");
    (asked, answer)
}

#[test]
fn issue_29_a_legacy_client_in_a_session_approves_a_reflow_through_a_real_elicitation() {
    let db = temp_db();
    let mut s = legacy_stdio(&db.path, &["--demo"], json!({"elicitation": {}}));
    let (asked, declined) = reflow_with_approval(&mut s, 2, "decline");
    assert!(asked["params"]["message"].as_str().unwrap().contains("124"), "the question names the plan: {asked}");
    assert_eq!(declined["result"]["structuredContent"]["applied"], false, "{declined}");
    assert!(declined["result"]["content"][0]["text"].as_str().unwrap().starts_with("Declined: nothing was moved"), "{declined}");
    let (_, applied) = reflow_with_approval(&mut s, 3, "accept");
    assert_eq!(applied["result"]["structuredContent"]["applied"], true, "{applied}");
    assert!(applied["result"]["content"][0]["text"].as_str().unwrap().starts_with("Moved 124 bookings"), "{applied}");
    // The moves are in the calendar: studio-b holds no booking in its offline fortnight any more.
    let mut other = stdio(&db.path, &[]);
    let left = other.ok("query_bookings", json!({"room": "studio-b", "from": "2026-09-08T00:00", "to": "2026-09-19T00:00", "limit": 500}));
    assert!(left["bookings"].as_array().unwrap().len() <= 17, "{left}");
}

#[test]
fn a_legacy_client_that_did_not_declare_elicitation_is_not_asked() {
    let db = temp_db();
    let mut s = legacy_stdio(&db.path, &["--demo", "--conformance-fixtures"], json!({}));
    let answer = s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_elicitation", "arguments": {"message": "?"}}}));
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("elicitation/create") && message.contains("did not declare"), "{answer}");
}

/// Reads the stdio session until a `notifications/resources/updated` for `uri` arrives (true) or
/// `within` passes (false), pinging so that every read has a line to come.
fn hears_update(s: &mut StdioServer, uri: &str, within: Duration) -> bool {
    let started = Instant::now();
    let mut id = 1000;
    while started.elapsed() < within {
        id += 1;
        s.notify(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        loop {
            let line = s.raw_read();
            if line["method"] == "notifications/resources/updated" && line["params"]["uri"] == uri {
                return true;
            }
            if line["id"] == id {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn over_stdio_resources_subscribe_tells_a_legacy_client_of_its_calendars_changes_until_it_unsubscribes() {
    let db = temp_db();
    let mut s = legacy_stdio(&db.path, &["--demo"], json!({}));
    let subscribed = s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": STUDIO_B}}));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    // Not a calendar: refused, naming what can be subscribed to.
    let refused = s.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "studioflow://reflows/rf_0001.json"}}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("studioflow://calendars/"), "{refused}");

    // A booking in studio-b, made by another process on the same database, is heard of.
    let mut other = stdio(&db.path, &[]);
    let booking = json!({"room": "studio-b", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"});
    other.ok("create_booking", booking.clone());
    assert!(hears_update(&mut s, STUDIO_B, Duration::from_secs(10)), "no update for {STUDIO_B}");

    // After unsubscribing, the next change is not.
    let unsubscribed = s.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "resources/unsubscribe", "params": {"uri": STUDIO_B}}));
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed}");
    let mut next_day = booking.clone();
    next_day["start"] = json!("2026-11-04T10:00");
    next_day["end"] = json!("2026-11-04T11:00");
    other.ok("create_booking", next_day);
    assert!(!hears_update(&mut s, STUDIO_B, Duration::from_secs(2)), "an update after unsubscribing");
}

// ---- HTTP: legacy sessions --------------------------------------------------------------------

/// A legacy POST with the session's id: the answer's head and the first lines of its body.
fn legacy_post(h: &HttpServer, session: Option<&str>, message: &Value) -> (String, BufReader<TcpStream>) {
    let mut stream = TcpStream::connect(h.address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = message.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\nContent-Length: {}\r\n",
        h.address,
        body.len()
    );
    if let Some(session) = session {
        request += &format!("Mcp-Session-Id: {session}\r\n");
    }
    request += "\r\n";
    request += &body;
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head += &line;
    }
    (head, reader)
}

/// The next JSON-RPC message of a server-sent event stream (chunk sizes and other lines skipped).
fn next_event(reader: &mut BufReader<TcpStream>) -> Value {
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(data) = line.trim().strip_prefix("data:")
            && let Ok(message) = serde_json::from_str::<Value>(data.trim())
        {
            return message;
        }
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[test]
fn over_http_a_legacy_initialize_opens_a_session_whose_calls_can_ask_mid_way() {
    let db = temp_db();
    let h = http(&db.path, &["--demo", "--conformance-fixtures"]);
    let (head, mut body) = legacy_post(&h, None, &initialize(json!({"elicitation": {}})));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let session = header(&head, "mcp-session-id").expect("a session id").to_owned();
    let init = next_event(&mut body);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let (head, _) = legacy_post(&h, Some(&session), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");

    // The call's stream carries the server's question first, then (once answered) the result.
    let (head, mut call) = legacy_post(&h, Some(&session), &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test_elicitation_sep1034_defaults", "arguments": {}}}));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let asked = next_event(&mut call);
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["requestedSchema"]["properties"]["age"]["default"], 30);
    let (head, _) = legacy_post(&h, Some(&session), &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}));
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let answer = next_event(&mut call);
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "Elicitation completed: action=decline, content={}", "{answer}");

    // A session this server never gave (or ended: DELETE) is 404, as 2025-11-25 asks.
    let ended = h.raw("DELETE", &[("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")], "");
    assert!(ended.status < 300, "{}: {}", ended.status, ended.body);
    let (head, _) = legacy_post(&h, Some(&session), &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_rooms", "arguments": {}}}));
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let unknown = h.raw("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", "not-a-session"), ("MCP-Protocol-Version", "2025-11-25")], "");
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    // Without a session there is no one to ask: the call is refused, not hung.
    let (_, mut stateless) = legacy_post(&h, None, &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "test_elicitation", "arguments": {"message": "?"}}}));
    let mut text = String::new();
    stateless.read_to_string(&mut text).ok();
    assert!(text.contains("\"error\""), "{text}");
    // Without a session id, GET and DELETE are still 405.
    assert_eq!(h.raw("GET", &[("Accept", "text/event-stream")], "").status, 405);
    assert_eq!(h.raw("DELETE", &[], "").status, 405);
}

#[test]
fn over_http_a_legacy_session_subscribes_and_hears_updates_on_its_get_stream() {
    let db = temp_db();
    let h = http(&db.path, &["--demo"]);
    let (head, _) = legacy_post(&h, None, &initialize(json!({})));
    let session = header(&head, "mcp-session-id").expect("a session id").to_owned();
    legacy_post(&h, Some(&session), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Without a session, a subscription has nowhere to go.
    let (_, mut stateless) = legacy_post(&h, None, &json!({"jsonrpc": "2.0", "id": 9, "method": "resources/subscribe", "params": {"uri": STUDIO_B}}));
    let mut text = String::new();
    stateless.read_to_string(&mut text).ok();
    assert!(text.contains("needs a session"), "{text}");

    let (_, mut subscribed) = legacy_post(&h, Some(&session), &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": STUDIO_B}}));
    assert_eq!(next_event(&mut subscribed)["result"], json!({}));
    // The session's own stream (GET), where notifications outside any request go.
    let mut stream = TcpStream::connect(h.address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(stream, "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n\r\n", h.address).unwrap();
    let mut events = BufReader::new(stream);
    let mut status = String::new();
    events.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    std::thread::sleep(Duration::from_millis(300));
    let mut other = stdio(&db.path, &[]);
    other.ok("create_booking", json!({"room": "studio-b", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"}));
    let heard = next_event(&mut events);
    assert_eq!(heard["method"], "notifications/resources/updated", "{heard}");
    assert_eq!(heard["params"]["uri"], STUDIO_B);
    // The session's stream is still open: SIGTERM ends it, and the server stops all the same.
    assert!(h.terminate(Duration::from_secs(10)), "an open session stream held the graceful stop");
    drop(events);
}

// ---- HTTP: Mcp-Param-* headers ----------------------------------------------------------------

/// A 2026-07-28 `tools/call` with the standard headers and exactly the `Mcp-Param-*` headers given.
fn call_with(h: &HttpServer, tool: &str, arguments: Value, params: &[(&str, &str)]) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": meta(json!({}))}});
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    headers.extend_from_slice(params);
    let answer = h.raw("POST", &headers, &body.to_string());
    (answer.status, serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body)))
}

#[test]
fn issue_29_the_routing_headers_must_match_the_body() {
    let db = temp_db();
    let h = http(&db.path, &["--demo"]);
    let reflow = json!({"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true});
    let mismatch = |(status, answer): (u16, Value), what: &str| {
        assert_eq!(status, 400, "{what}: {answer}");
        assert_eq!(answer["error"]["code"], -32020, "{what}: {answer}");
        answer["error"]["message"].as_str().unwrap_or_default().to_owned()
    };
    let missing = mismatch(call_with(&h, "reflow_month", reflow.clone(), &[]), "no Mcp-Param-Month");
    assert!(missing.contains("Mcp-Param-Month"), "{missing}");
    mismatch(call_with(&h, "reflow_month", reflow.clone(), &[("Mcp-Param-Month", "2026-10")]), "another month");
    mismatch(call_with(&h, "reflow_month", reflow.clone(), &[("Mcp-Param-Month", "=?base64?MjAyNi0wOQ?=")]), "bad Base64 padding");
    // "2026-09" as Base64 is the same month; the header's name is read in any case.
    let (status, answer) = call_with(&h, "reflow_month", reflow.clone(), &[("Mcp-Param-Month", "=?base64?MjAyNi0wOQ==?=")]);
    assert_eq!((status, answer["result"]["isError"].clone()), (200, json!(false)), "{answer}");
    let (status, answer) = call_with(&h, "reflow_month", reflow, &[("mcp-param-month", "2026-09")]);
    assert_eq!((status, answer["result"]["isError"].clone()), (200, json!(false)), "{answer}");

    // The room of a call about one room.
    let booking = json!({"room": "studio-a", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"});
    mismatch(call_with(&h, "create_booking", booking.clone(), &[]), "no Mcp-Param-Room");
    mismatch(call_with(&h, "create_booking", booking.clone(), &[("Mcp-Param-Room", "studio-b")]), "another room");
    let (status, answer) = call_with(&h, "create_booking", booking, &[("Mcp-Param-Room", "studio-a")]);
    assert_eq!((status, answer["result"]["isError"].clone()), (200, json!(false)), "{answer}");
    mismatch(call_with(&h, "update_room", json!({"id": "studio-a", "name": "Studio A"}), &[("Mcp-Param-Room", "studio-c")]), "update_room's id");
    mismatch(call_with(&h, "quote", json!({"room": "studio-a", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"}), &[]), "quote's room");
    // A header for an argument that is absent is refused too; a tool without marked arguments takes none.
    mismatch(call_with(&h, "reflow_month", json!({"offline_rooms": ["studio-b"]}), &[("Mcp-Param-Month", "2026-09")]), "a header without its argument");
    let (status, _) = call_with(&h, "list_rooms", json!({}), &[]);
    assert_eq!(status, 200);

    // A legacy request (no 2026-07-28 headers) is not held to them.
    let legacy = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "reflow_month", "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true}}});
    let answer = h.raw("POST", &[("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"), ("MCP-Protocol-Version", "2025-11-25")], &legacy.to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("\"isError\":false"), "{}", answer.body);
}

/// A `subscriptions/listen` stream (2026-07-28) stays open as long as its client likes; SIGTERM
/// ends it and the server stops, as it does with a legacy session's stream. (Before, the stop
/// waited for the stream, for ever when its client had gone without the server noticing.)
#[test]
fn issue_29_sigterm_ends_an_open_listen_stream_and_the_server_stops() {
    let db = temp_db();
    let h = http(&db.path, &["--demo"]);
    let listen = json!({"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": [STUDIO_B]}, "_meta": meta(json!({}))}});
    let body = listen.to_string();
    let mut stream = TcpStream::connect(h.address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        h.address,
        body.len()
    )
    .unwrap();
    let mut events = BufReader::new(stream);
    let ack = next_event(&mut events);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert!(h.terminate(Duration::from_secs(10)), "an open listen stream held the graceful stop");
    drop(events);
}
