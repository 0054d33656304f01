//! MCP beyond tool answers, on the real binary: a synchronous reflow's progress and log messages
//! (stdio lines before the result; HTTP as an event stream only when the client accepts one),
//! `logging/setLevel`, resources and their not-found codes on both protocol versions, the
//! 2025-11-25 task wire over stateless HTTP (issue 12), prompt arguments and resource ids that keep
//! the rule of text (issue 21), and calendar feeds that answer conditional requests (issue 22). The
//! official SDKs' views of the same are in `sdk_python.rs` and `sdk_ts.rs`.

use crate::mcp_client::{http, meta, stdio, Mcp};
use crate::support::temp_db;
use serde_json::{json, Value};

const REFLOW: &str = r#"{"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true}"#;

fn reflow_args() -> Value {
    serde_json::from_str(REFLOW).unwrap()
}

/// The JSON-RPC messages of an HTTP answer: one JSON body, or the `data:` lines of an event stream.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(one) = serde_json::from_str::<Value>(body) {
        return vec![one];
    }
    body.lines().filter_map(|l| l.strip_prefix("data:")).filter_map(|d| serde_json::from_str(d.trim()).ok()).collect()
}

#[test]
fn a_synchronous_reflow_streams_its_progress_over_http_when_the_client_accepts_it() {
    let db = temp_db();
    assert!(stdio(&db.path, &["--demo"]).close());
    let h = http(&db.path, &[]);
    let call = |id: u64, extra: Value| {
        let mut m = meta(json!({}));
        for (k, v) in extra.as_object().unwrap() {
            m[k] = v.clone();
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "reflow_month", "arguments": reflow_args(), "_meta": m}})
    };
    let streamed = h.post(&call(1, json!({"progressToken": "p1", "io.modelcontextprotocol/logLevel": "info"})), &[]);
    assert_eq!(streamed.status, 200);
    let all = messages(&streamed.body);
    let last = all.last().unwrap();
    assert_eq!(last["id"], 1, "the result comes last: {}", streamed.body);
    assert!(last["result"]["structuredContent"]["affected"].as_u64().unwrap() > 100);
    let progress: Vec<&Value> = all.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(progress.len() >= 2, "progress notifications: {}", streamed.body);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p1"));
    let values: Vec<f64> = progress.iter().map(|p| p["params"]["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress must grow: {values:?}");
    assert!(all.iter().any(|m| m["method"] == "notifications/message" && m["params"]["level"] == "info"), "log messages: {}", streamed.body);

    // Without a token or a level, the same call is one plain JSON answer.
    let plain = h.post(&call(2, json!({})), &[]);
    assert_eq!(messages(&plain.body).len(), 1, "{}", plain.body);
    assert!(serde_json::from_str::<Value>(&plain.body).is_ok(), "not plain JSON: {}", plain.body);
}

#[test]
fn a_legacy_stdio_client_sets_its_log_level_and_gets_messages_before_the_result() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let init = s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"tasks": {"requests": {}}}, "clientInfo": {"name": "legacy", "version": "0.1"}}}));
    assert!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(), "{init}");
    assert!(init["result"]["capabilities"]["resources"].is_object() && init["result"]["capabilities"]["prompts"].is_object());
    s.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let set = s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}}));
    assert!(set.get("error").is_none(), "{set}");
    s.notify(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "reflow_month", "arguments": reflow_args()}}));
    let mut logs = 0;
    let result = loop {
        let line = s.raw_read();
        if line["method"] == "notifications/message" {
            logs += 1;
            continue;
        }
        break line;
    };
    assert_eq!(result["id"], 3, "{result}");
    assert!(logs >= 2, "{logs} log messages before the result");

    // tools/list marks reflow_month as a task for this client; an unknown resource is -32002 here.
    let tools = s.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}));
    let reflow = tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "reflow_month").unwrap().clone();
    assert_eq!(reflow["execution"]["taskSupport"], "optional");
    let missing = s.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "studioflow://calendars/rooms/nope.ics"}}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
}

#[test]
fn an_unknown_resource_is_invalid_params_on_2026_07_28() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let missing = s.request("resources/read", json!({"uri": "studioflow://calendars/rooms/nope.ics"}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], "studioflow://calendars/rooms/nope.ics");
    let read = s.request("resources/read", json!({"uri": "studioflow://calendars/engineers/eng-01.ics"}));
    assert!(read["result"]["contents"][0]["text"].as_str().unwrap().starts_with("BEGIN:VCALENDAR"), "{read}");
    assert!(read["result"]["ttlMs"].is_u64() && read["result"]["cacheScope"] == "private", "{read}");
    let listed = s.request("resources/list", json!({}));
    assert_eq!(listed["result"]["resources"].as_array().unwrap().len(), 25);
    assert_eq!(listed["result"]["nextCursor"], "25");
    assert!(listed["result"]["ttlMs"].is_u64() && listed["result"]["cacheScope"] == "private");
    let bad = s.request("prompts/get", json!({"name": "month_report", "arguments": {"month": "2026-13"}}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[test]
fn a_2025_11_25_client_gets_a_reflow_task_over_stateless_http() {
    let db = temp_db();
    assert!(stdio(&db.path, &["--demo"]).close());
    let h = http(&db.path, &[]);
    let legacy = |id: u64, method: &str, params: Value| {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = h.raw(
            "POST",
            &[("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"), ("MCP-Protocol-Version", "2025-11-25")],
            &message.to_string(),
        );
        serde_json::from_str::<Value>(&answer.body).unwrap_or_else(|e| panic!("{method}: HTTP {} {e}: {}", answer.status, answer.body))
    };
    let created = legacy(1, "tools/call", json!({"name": "reflow_month", "arguments": reflow_args(), "task": {"ttl": 60000}}));
    let task = &created["result"]["task"];
    let id = task["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    assert!(["working", "completed"].contains(&task["status"].as_str().unwrap()));
    assert!(task["ttl"].is_u64() && task["pollInterval"].is_u64() && task["createdAt"].is_string() && task["lastUpdatedAt"].is_string());
    let result = legacy(2, "tasks/result", json!({"taskId": id}));
    assert!(result["result"]["structuredContent"]["affected"].as_u64().unwrap() > 100, "{result}");
    assert!(result["result"].get("resultType").is_none());
    assert_eq!(result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    let got = legacy(3, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "completed", "{got}");
    // No session over stateless HTTP, so no task is anyone's to list.
    assert_eq!(legacy(4, "tasks/list", json!({}))["result"]["tasks"], json!([]));
    let cancelled = legacy(5, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["result"]["status"], "completed", "cancelling a finished task changes nothing: {cancelled}");
    assert_eq!(legacy(6, "tasks/get", json!({"taskId": "tsk_nope"}))["error"]["code"], -32602);
    let gated = legacy(7, "tools/call", json!({"name": "reflow_month", "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"], "require_approval": true}, "task": {}}));
    let message = gated["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("dry_run") && message.contains("apply_reflow"), "{gated}");
    let quick = legacy(8, "tools/call", json!({"name": "list_rooms", "arguments": {}, "task": {}}));
    assert_eq!(quick["error"]["code"], -32602, "{quick}");
}

/// Issue 21: a prompt's arguments keep the rule of text (the `room_outage` prompt took a 100 KB
/// reason), and a resource URI whose id breaks the rule of ids names nothing.
#[test]
fn issue_21_prompt_arguments_and_resource_ids_keep_the_rule_of_text() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let outage = |reason: String, room: &str| json!({"name": "room_outage", "arguments": {"room": room, "from": "2026-10-06T00:00", "to": "2026-10-07T00:00", "reason": reason}});
    let long = s.request("prompts/get", outage("r".repeat(100 * 1024), "studio-a"));
    assert_eq!(long["error"]["code"], -32602, "{long}");
    assert!(long["error"]["message"].as_str().unwrap().contains("reason: is 102400 characters long: a line of text is at most 200"), "{long}");
    let escape = s.request("prompts/get", outage("new \u{1b}[2Jfloor".into(), "studio-a"));
    assert!(escape["error"]["message"].as_str().unwrap().contains("reason: holds a control character (U+001B, character 5)"), "{escape}");
    let nul = s.request("prompts/get", outage("x".into(), "studio-a\u{0}"));
    assert!(nul["error"]["message"].as_str().unwrap().contains("room: holds a control character (U+0000"), "{nul}");
    let fine = s.request("prompts/get", outage("new floor".into(), "studio-a"));
    assert!(fine["result"]["messages"][0]["content"]["text"].as_str().unwrap().contains("(new floor)"), "{fine}");
    for uri in ["studioflow://calendars/rooms/studio-a%00.ics", "studioflow://calendars/rooms/studio a.ics", "studioflow://calendars/rooms/studio-a\u{0}.ics", "studioflow://reflows/rf\u{1b}.json"] {
        let missing = s.request("resources/read", json!({"uri": uri}));
        assert_eq!(missing["error"]["code"], -32602, "{uri}: {missing}");
    }
}

/// Issue 22: a feed answers with an ETag that changes exactly when the calendar does, and a poll
/// that sends it back gets 304 with no body; `feed create` needs the public URL.
#[test]
fn issue_22_feeds_answer_conditional_requests_with_304() {
    let db = temp_db();
    let server = http(&db.path, &["--demo"]);
    // Changes come from another process on the same file, as from another agent.
    let mut writer = stdio(&db.path, &[]);
    let cli = |args: &[&str]| std::process::Command::new(env!("CARGO_BIN_EXE_studioflow")).args(args).env_remove("STUDIOFLOW_PUBLIC_URL").output().unwrap();
    let path = db.path.to_str().unwrap();
    let missing = cli(&["feed", "create", "--db", path, "--room", "studio-b"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--base-url"), "{}", String::from_utf8_lossy(&missing.stderr));
    let bad = cli(&["feed", "create", "--db", path, "--room", "studio-b", "--base-url", "studio.example.com"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a base URL such as https://studio.example.com"), "{}", String::from_utf8_lossy(&bad.stderr));
    let base = format!("http://{}", server.address);
    let created = cli(&["feed", "create", "--db", path, "--room", "studio-b", "--base-url", &base]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let url = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    let target = url.strip_prefix(&base).unwrap().to_owned();

    let get = |headers: &[(&str, &str)]| server.raw_at("GET", &target, headers, "");
    let first = get(&[]);
    assert_eq!(first.status, 200);
    let etag = first.header("etag").unwrap_or_else(|| panic!("no ETag: {}", first.head)).to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34, "{etag}");
    assert!(first.body.len() > 10_000, "the room's calendar");
    assert_eq!(get(&[]).header("etag"), Some(etag.as_str()), "the same calendar, the same validator");
    let not_modified = get(&[("If-None-Match", &etag)]);
    assert_eq!((not_modified.status, not_modified.body.as_str()), (304, ""), "{}", not_modified.head);
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    assert_eq!(get(&[("If-None-Match", &format!("\"x\", W/{etag}"))]).status, 304, "a list, and the weak form");
    assert_eq!(get(&[("If-None-Match", "\"something-else\"")]).status, 200);

    // A booking in studio-b moves: the calendar changed, so the old validator gets it all.
    let booking = writer.ok("query_bookings", json!({"room": "studio-b", "from": "2026-10-05T00:00", "limit": 1}))["bookings"][0].clone();
    let start = booking["start"].as_str().unwrap();
    let later = chrono::DateTime::parse_from_rfc3339(start).unwrap() + chrono::Duration::minutes(15);
    let moved = writer.call("move_booking", json!({"id": booking["id"], "start": later.to_rfc3339()}));
    let changed = get(&[("If-None-Match", &etag)]);
    assert_eq!(changed.status, 200, "{moved}");
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
}
