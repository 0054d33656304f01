//! Issue 29: a reflow approved by a client without the Tasks extension, through an input-required
//! result (MCP 2026-07-28 multi round-trip requests), on the real binary over stdio and HTTP:
//! approve, decline, a plan gone stale between the two calls, and a `requestState` that is
//! altered, bound to other arguments, replayed or expired. Each checks the calendar itself.

use crate::mcp_client::{http, stdio, Mcp};
use crate::support::{on_both, TestDb};
use crate::tasks::{assert_applied_once, clashes, demo, places};
use serde_json::{json, Value};

fn arguments(extra: Value) -> Value {
    let mut args = json!({"month": "2026-09", "offline_rooms": ["studio-b"], "require_approval": true});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

/// The first round: an input-required result with the approval question and a state.
fn ask(s: &mut impl Mcp, args: &Value) -> (Value, String) {
    let answer = s.request("tools/call", json!({"name": "reflow_month", "arguments": args}));
    let result = answer["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let question = &result["inputRequests"]["approve"];
    assert_eq!(question["method"], "elicitation/create", "{answer}");
    assert!(question["params"]["message"].as_str().unwrap().starts_with("Apply "), "{answer}");
    let state = result["requestState"].as_str().expect("a requestState").to_owned();
    (result, state)
}

/// The second round, answering `action` with `state`; the whole response.
fn answer(s: &mut impl Mcp, args: &Value, action: &str, state: &str) -> Value {
    s.request(
        "tools/call",
        json!({"name": "reflow_month", "arguments": args, "inputResponses": {"approve": {"action": action, "content": {}}}, "requestState": state}),
    )
}

fn refused_state(response: &Value, words: &str) {
    assert_eq!(response["error"]["code"], -32602, "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.contains(words), "{message}");
    assert!(message.contains("nothing"), "says nothing was applied: {message}");
}

/// Approve: nothing moves at the question, the moves are applied once at the answer, and the
/// same state sent again is refused as already answered.
fn approve_then_replay(db: &TestDb, s: &mut impl Mcp) {
    let before = places(db);
    let args = arguments(json!({}));
    let (_, state) = ask(s, &args);
    assert_eq!(places(db), before, "asking moves nothing");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM reflows WHERE applied = 1"), 0);
    let done = answer(s, &args, "accept", &state);
    let result = &done["result"];
    assert_eq!(result["resultType"], "complete", "{done}");
    assert_eq!(result["isError"], false, "{done}");
    assert_eq!(result["structuredContent"]["applied"], true, "{done}");
    assert_applied_once(db, &before, result);
    let after = places(db);
    refused_state(&answer(s, &args, "accept", &state), "already answered");
    assert_eq!(places(db), after, "a replayed approval applies nothing more");
}

on_both! {
    fn approved_over_stdio_applies_once_and_a_replay_is_refused(db) {
        demo(db);
        let mut s = stdio(db, &[]);
        approve_then_replay(db, &mut s);
    }

    fn declined_moves_nothing_and_the_state_cannot_then_accept(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let args = arguments(json!({}));
        let (_, state) = ask(&mut s, &args);
        let declined = answer(&mut s, &args, "decline", &state);
        let result = &declined["result"];
        assert_eq!(result["isError"], false, "{declined}");
        assert_eq!(result["structuredContent"]["applied"], false, "{declined}");
        assert!(result["content"][0]["text"].as_str().unwrap().starts_with("Declined: nothing was moved"), "{declined}");
        assert_eq!(places(db), before);
        refused_state(&answer(&mut s, &args, "accept", &state), "already answered");
        assert_eq!(places(db), before, "a declined plan is never applied by its state");
        // The month is free again: a new round can start.
        ask(&mut s, &args);
    }

    fn a_booking_changed_between_the_rounds_makes_the_approval_stale(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let args = arguments(json!({}));
        let (question, state) = ask(&mut s, &args);
        let message = question["inputRequests"]["approve"]["params"]["message"].as_str().unwrap();
        // The question names the plan's reflow; someone cancels a booking it moves meanwhile.
        let reflow_id = message.split("(reflow ").nth(1).unwrap().split(' ').next().unwrap();
        let plan = s.ok("get_reflow", json!({"reflow_id": reflow_id}));
        let first_moved = plan["moves"][0]["booking"].as_str().unwrap().to_owned();
        s.ok("cancel_booking", json!({"id": first_moved}));
        let done = answer(&mut s, &args, "accept", &state);
        assert_eq!(done["result"]["isError"], true, "{done}");
        assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("run the reflow again"), "{done}");
        let after = places(db);
        let changed: Vec<_> = after.keys().filter(|k| after[*k] != before[*k]).collect();
        assert_eq!(changed, [first_moved.as_str()], "only the cancellation changed anything");
        assert_eq!(clashes(db), 0);
    }

    fn an_altered_or_misplaced_state_is_refused_and_applies_nothing(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let args = arguments(json!({}));
        let (_, state) = ask(&mut s, &args);
        // One character changed in the middle (the sealed payload), and one at the end (the tag).
        for at in [state.len() / 2, state.len() - 1] {
            let mut bytes = state.clone().into_bytes();
            bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
            let tampered = String::from_utf8(bytes).unwrap();
            refused_state(&answer(&mut s, &args, "accept", &tampered), "not issued by this server");
        }
        refused_state(&answer(&mut s, &args, "accept", "not-a-state"), "not issued by this server");
        // The right state with other arguments (another shift) is not the call it was issued for.
        refused_state(&answer(&mut s, &arguments(json!({"max_shift_minutes": 60})), "accept", &state), "not issued by this server");
        // Nor is it another server's (another key) state: a second server on the same database.
        drop(s);
        let mut other = stdio(db, &[]);
        refused_state(&answer(&mut other, &args, "accept", &state), "not issued by this server");
        assert_eq!(places(db), before, "nothing was applied");
        assert_eq!(db.scalar("SELECT COUNT(*) FROM reflows WHERE applied = 1"), 0);
    }

    fn servers_sharing_their_keys_accept_each_others_states(db) {
        let before = demo(db);
        let keys = "k1=0123456789abcdef0123456789abcdef";
        let mut first = stdio(db, &["--request-state-keys", keys]);
        let args = arguments(json!({}));
        let (_, state) = ask(&mut first, &args);
        drop(first);
        let mut second = stdio(db, &["--request-state-keys", &format!("k2=abcdefabcdefabcdefabcdefabcdefab,{keys}")]);
        let done = answer(&mut second, &args, "accept", &state);
        assert_eq!(done["result"]["structuredContent"]["applied"], true, "{done}");
        assert_applied_once(db, &before, &done["result"]);
    }

    fn an_expired_state_is_refused(db) {
        let before = demo(db);
        let mut s = stdio(db, &["--task-ttl", "1"]);
        let args = arguments(json!({}));
        let (_, state) = ask(&mut s, &args);
        std::thread::sleep(std::time::Duration::from_millis(1600));
        refused_state(&answer(&mut s, &args, "accept", &state), "expired");
        assert_eq!(places(db), before);
    }

    fn a_response_that_does_not_answer_asks_again_and_a_bad_action_is_refused(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let args = arguments(json!({}));
        let (_, state) = ask(&mut s, &args);
        let again = s.request("tools/call", json!({"name": "reflow_month", "arguments": args, "inputResponses": {"other": {"action": "accept"}}, "requestState": state}));
        assert_eq!(again["result"]["resultType"], "input_required", "{again}");
        let fresh = again["result"]["requestState"].as_str().unwrap().to_owned();
        let bad = answer(&mut s, &args, "maybe", &fresh);
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        assert!(bad["error"]["message"].as_str().unwrap().contains("accept, decline or cancel"), "{bad}");
        assert_eq!(places(db), before);
        let done = answer(&mut s, &args, "accept", &fresh);
        assert_eq!(done["result"]["structuredContent"]["applied"], true, "{done}");
    }
}

#[test]
fn declined_approved_and_tampered_over_http() {
    let db = TestDb::sqlite();
    let before = demo(&db);
    let mut s = http(&db, &[]);
    let args = arguments(json!({}));
    let (_, state) = ask(&mut s, &args);
    let declined = answer(&mut s, &args, "decline", &state);
    assert_eq!(declined["result"]["structuredContent"]["applied"], false, "{declined}");
    assert_eq!(places(&db), before);
    // Stateless HTTP: each request is its own, and the state carries the round across them.
    let (_, state) = ask(&mut s, &args);
    let tampered = format!("{state}x");
    refused_state(&answer(&mut s, &args, "accept", &tampered), "not issued by this server");
    let done = answer(&mut s, &args, "accept", &state);
    assert_eq!(done["result"]["structuredContent"]["applied"], true, "{done}");
    assert_applied_once(&db, &before, &done["result"]);
    refused_state(&answer(&mut s, &args, "accept", &state), "already answered");
}

#[test]
fn a_legacy_client_is_told_to_preview_and_apply() {
    let db = TestDb::sqlite();
    let before = demo(&db);
    let mut s = stdio(&db, &[]);
    let init = s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "0.1"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    s.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "reflow_month", "arguments": arguments(json!({}))}}));
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert!(call["result"]["content"][0]["text"].as_str().unwrap().contains("dry_run"), "{call}");
    assert_eq!(places(&db), before);
}
