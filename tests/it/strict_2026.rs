//! Issue 29: the strictness rules of MCP 2026-07-28, one test each, on the real binary: no
//! `notifications/message` unless the request's `_meta` asks for a log level; no task unless that
//! very request declared the Tasks extension (and -32021 where one is required); an unknown method
//! named in its -32601; `resultType` on every result.

use crate::mcp_client::{meta, stdio, Mcp, StdioServer};
use crate::support::TestDb;
use crate::tasks::{demo, settle};
use serde_json::{json, Value};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn dry_run() -> Value {
    json!({"name": "reflow_month", "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true}})
}

/// Sends a request with `_meta` extended by `extra`, and reads every line up to its answer:
/// (the notifications before it, the answer).
fn exchange(s: &mut StdioServer, id: u64, method: &str, mut params: Value, extra: Value) -> (Vec<Value>, Value) {
    let mut m = meta(json!({}));
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    params["_meta"] = m;
    s.notify(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    let mut notes = Vec::new();
    loop {
        let line = s.raw_read();
        if line["id"] == id {
            return (notes, line);
        }
        notes.push(line);
    }
}

fn count(notes: &[Value], method: &str) -> usize {
    notes.iter().filter(|n| n["method"] == method).count()
}

#[test]
fn no_log_message_unless_the_request_asks_for_a_level() {
    let db = TestDb::sqlite();
    demo(&db);
    let mut s = stdio(&db, &[]);
    // A progress token alone: progress, and no log message.
    let (notes, answer) = exchange(&mut s, 1, "tools/call", dry_run(), json!({"progressToken": "p"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(count(&notes, "notifications/progress") >= 1, "{notes:?}");
    assert_eq!(count(&notes, "notifications/message"), 0, "no level was asked for: {notes:?}");
    // Nothing at all: no notification of any kind.
    let (notes, _) = exchange(&mut s, 2, "tools/call", dry_run(), json!({}));
    assert!(notes.is_empty(), "{notes:?}");
    // The level asked for on this request, and only on it.
    let (notes, _) = exchange(&mut s, 3, "tools/call", dry_run(), json!({"io.modelcontextprotocol/logLevel": "info"}));
    assert!(count(&notes, "notifications/message") >= 1, "{notes:?}");
    let (notes, _) = exchange(&mut s, 4, "tools/call", dry_run(), json!({}));
    assert!(notes.is_empty(), "a level is not remembered from one request to the next: {notes:?}");
}

#[test]
fn no_task_unless_that_very_request_declared_the_extension() {
    let db = TestDb::sqlite();
    demo(&db);
    let mut s = stdio(&db, &["--conformance-fixtures"]);
    let with = s.tasks_request("tools/call", dry_run());
    assert_eq!(with["result"]["resultType"], "task", "{with}");
    let id = with["result"]["taskId"].as_str().unwrap().to_owned();
    // The same client, the next request without the declaration: no task, a complete answer.
    let without = s.request("tools/call", json!({"name": "reflow_month", "arguments": {"month": "2026-10", "offline_rooms": ["studio-a"], "dry_run": true}}));
    assert_eq!(without["result"]["resultType"], "complete", "{without}");
    assert!(without["result"].get("taskId").is_none(), "{without}");
    // tasks/* without the declaration on the request: -32021, naming the extension.
    let get = s.request("tasks/get", json!({"taskId": id}));
    assert_eq!(get["error"]["code"], -32021, "{get}");
    assert!(get["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(), "{get}");
    // A tool that can only run as a task: -32021 for a request without the extension.
    let required = s.request("tools/call", json!({"name": "failing_job", "arguments": {}}));
    assert_eq!(required["error"]["code"], -32021, "{required}");
    assert!(required["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(), "{required}");
    // Capabilities of another kind do not count as the extension.
    let other = s.request_as(json!({"elicitation": {}}), "tools/call", json!({"name": "failing_job", "arguments": {}}));
    assert_eq!(other["error"]["code"], -32021, "{other}");
}

#[test]
fn an_unknown_method_is_named_in_its_error() {
    let db = TestDb::sqlite();
    let mut s = stdio(&db, &["--demo"]);
    for method in ["tasks/result", "tasks/list", "rooms/teleport"] {
        for answer in [s.request(method, json!({"taskId": "tsk_x"})), s.tasks_request(method, json!({"taskId": "tsk_x"}))] {
            assert_eq!(answer["error"]["code"], -32601, "{answer}");
            assert_eq!(answer["error"]["message"], format!("method not found: {method}"), "{answer}");
        }
    }
}

#[test]
fn every_result_carries_its_result_type() {
    let db = TestDb::sqlite();
    demo(&db);
    let mut s = stdio(&db, &[]);
    let task = s.tasks_request("tools/call", dry_run());
    let id = task["result"]["taskId"].as_str().unwrap().to_owned();
    // The month is free again once the dry run has ended.
    assert_eq!(settle(&mut s, &id)["status"], "completed");
    let approval = s.request("tools/call", json!({"name": "reflow_month", "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"], "require_approval": true}}));
    let answers = [
        ("task", task),
        ("input_required", approval),
        ("complete", s.request("server/discover", json!({}))),
        ("complete", s.request("tools/list", json!({}))),
        ("complete", s.request("tools/call", json!({"name": "list_rooms", "arguments": {}}))),
        ("complete", s.request("tools/call", json!({"name": "get_booking", "arguments": {"id": "bk_99999"}}))),
        ("complete", s.request("resources/list", json!({}))),
        ("complete", s.request("resources/templates/list", json!({}))),
        ("complete", s.request("prompts/list", json!({}))),
        ("complete", s.tasks_request("tasks/get", json!({"taskId": id}))),
        ("complete", s.tasks_request("tasks/cancel", json!({"taskId": id}))),
    ];
    for (expected, answer) in answers {
        assert_eq!(answer["result"]["resultType"], expected, "{answer}");
    }
    // `ping` belongs to the initialize handshake: a 2026-07-28 request gets no result, and is told so.
    let ping = s.request("ping", json!({}));
    assert_eq!(ping["error"]["code"], -32601, "{ping}");
    assert!(ping["error"]["message"].as_str().unwrap().starts_with("method not found: ping"), "{ping}");
}
