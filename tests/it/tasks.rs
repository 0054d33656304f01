//! Durable reflow tasks on the real binary, on both backends (an SQLite file, a PostgreSQL schema):
//! kills at the worst moments and restarts, the approval gate, cancel, final states, time to live,
//! and the protocol's errors.

use crate::mcp_client::{stdio, Mcp, StdioServer};
use crate::support::{on_both, TestDb};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const REFLOW: &str = "reflow_month";

/// Every booking's place: id -> (room, start, end, status).
pub type Places = BTreeMap<String, (String, i64, i64, String)>;

fn september(extra: Value) -> Value {
    let mut args = json!({"month": "2026-09", "offline_rooms": ["studio-b"]});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    json!({"name": REFLOW, "arguments": args})
}

pub fn places(db: &TestDb) -> Places {
    let text = |cell: &Option<String>| cell.clone().unwrap();
    db.rows("SELECT id, room_id, start_at, end_at, status FROM bookings")
        .iter()
        .map(|r| (text(&r[0]), (text(&r[1]), text(&r[2]).parse().unwrap(), text(&r[3]).parse().unwrap(), text(&r[4]))))
        .collect()
}

/// Pairs of active bookings that clash: a room (with its turnaround), a client or an engineer.
pub fn clashes(db: &TestDb) -> i64 {
    db.scalar(
        "SELECT COUNT(*) FROM bookings a JOIN bookings b ON a.seq < b.seq
         JOIN rooms r ON r.id = a.room_id
         WHERE a.status != 'cancelled' AND b.status != 'cancelled'
           AND ((a.room_id = b.room_id AND a.start_at < b.end_at + 60 * r.buffer_minutes AND b.start_at < a.end_at + 60 * r.buffer_minutes)
             OR ((a.client_id = b.client_id OR a.engineer_id = b.engineer_id) AND a.start_at < b.end_at AND b.start_at < a.end_at))",
    )
}

/// The demo studio, written into `db` by the server; its bookings' places before any reflow.
pub fn demo(db: &TestDb) -> Places {
    assert!(stdio(db, &["--demo"]).close());
    places(db)
}

fn start_task(s: &mut StdioServer, extra: Value) -> String {
    let created = s.tasks_request("tools/call", september(extra));
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert!(result.get("task").is_none(), "the task result is flat: {created}");
    for field in ["createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs", "statusMessage"] {
        assert!(!result[field].is_null(), "{field} missing: {created}");
    }
    result["taskId"].as_str().unwrap().to_owned()
}

pub fn get(s: &mut impl Mcp, id: &str) -> Value {
    let answer = s.tasks_request("tasks/get", json!({"taskId": id}));
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"].clone()
}

/// Polls until the task leaves `working` (or 60 s pass).
pub fn settle(s: &mut impl Mcp, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let task = get(s, id);
        if task["status"] != "working" || started.elapsed() > Duration::from_secs(60) {
            return task;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The moves were applied exactly once: same bookings, no clash, and exactly the moved ones changed.
pub fn assert_applied_once(db: &TestDb, before: &Places, result: &Value) {
    let after = places(db);
    assert_eq!(after.len(), before.len(), "no booking appeared or vanished");
    let changed: Vec<&String> = after.keys().filter(|id| after[*id] != before[*id]).collect();
    let moved: Vec<String> = result["structuredContent"]["moves"].as_array().unwrap().iter().map(|m| m["booking"].as_str().unwrap().to_owned()).collect();
    assert!(!moved.is_empty());
    let mut moved_sorted = moved.clone();
    moved_sorted.sort();
    assert_eq!(changed.into_iter().cloned().collect::<Vec<_>>(), moved_sorted, "changed bookings = moved bookings");
    assert_eq!(clashes(db), 0, "no double booking anywhere");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM reflows WHERE applied = 1"), 1, "one reflow applied");
}

on_both! {
    fn killed_right_after_the_task_id_is_returned_the_task_still_completes_once(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let id = start_task(&mut s, json!({}));
        s.kill();

        let mut s = stdio(db, &[]);
        let task = settle(&mut s, &id);
        assert_eq!(task["status"], "completed", "{task}");
        assert_eq!(task["result"]["structuredContent"]["applied"], true);
        assert_applied_once(db, &before, &task["result"]);
        // A second restart finds nothing more to do.
        drop(s);
        let mut s = stdio(db, &[]);
        assert_eq!(get(&mut s, &id)["status"], "completed");
        assert_applied_once(db, &before, &task["result"]);
    }

    fn killed_in_the_middle_of_solving_the_task_is_redone_once_on_restart(db) {
        let before = demo(db);
        // Each solved part pauses, so the solve is surely under way when the process dies.
        let mut s = stdio(db, &["--test-solve-delay-ms", "150"]);
        let id = start_task(&mut s, json!({}));
        let started = Instant::now();
        loop {
            let task = get(&mut s, &id);
            assert_eq!(task["status"], "working", "{task}");
            if task["statusMessage"].as_str().unwrap().contains("parts solved") {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the solve never reported progress");
            std::thread::sleep(Duration::from_millis(20));
        }
        s.kill();
        assert_eq!(places(db), before, "nothing was applied by the killed process");

        let mut s = stdio(db, &[]);
        let task = settle(&mut s, &id);
        assert_eq!(task["status"], "completed", "{task}");
        assert_applied_once(db, &before, &task["result"]);
    }

    fn accepting_at_the_approval_gate_applies_once_and_a_later_cancel_changes_nothing(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let id = start_task(&mut s, json!({"require_approval": true}));
        let task = settle(&mut s, &id);
        assert_eq!(task["status"], "input_required", "{task}");
        // An answer to a question nobody asked is acknowledged and ignored.
        let stray = s.tasks_request("tasks/update", json!({"taskId": id, "inputResponses": {"colour": {"action": "accept"}}}));
        assert_eq!(stray["result"]["resultType"], "complete", "{stray}");
        assert_eq!(get(&mut s, &id)["status"], "input_required");
        let ask = &task["inputRequests"]["approve"];
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(ask["params"]["mode"], "form");
        let message = ask["params"]["message"].as_str().unwrap();
        assert!(message.starts_with("Apply ") && message.contains(" moves, ") && message.contains("unresolved?"), "{message}");
        assert!(message.contains("-> "), "the moves are listed: {message}");
        assert_eq!(places(db), before, "nothing moves before the answer");

        let ack = s.tasks_request("tasks/update", json!({"taskId": id, "inputResponses": {"approve": {"action": "accept", "content": {}}}}));
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        let done = get(&mut s, &id);
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["result"]["structuredContent"]["applied"], true);
        assert_applied_once(db, &before, &done["result"]);

        // A finished task is left as it is: cancel is acknowledged, and changes nothing.
        let ack = s.tasks_request("tasks/cancel", json!({"taskId": id}));
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        let still = get(&mut s, &id);
        assert_eq!((still["status"].clone(), still["lastUpdatedAt"].clone()), (json!("completed"), done["lastUpdatedAt"].clone()));
        // Answering again is acknowledged and ignored: nothing is outstanding any more.
        let again = s.tasks_request("tasks/update", json!({"taskId": id, "inputResponses": {"approve": {"action": "accept"}}}));
        assert_eq!(again["result"]["resultType"], "complete", "{again}");
        assert_eq!(get(&mut s, &id)["lastUpdatedAt"], done["lastUpdatedAt"]);
        assert_applied_once(db, &before, &done["result"]);
    }

    fn cancelling_or_declining_at_the_gate_changes_no_booking(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let cancelled = start_task(&mut s, json!({"require_approval": true}));
        assert_eq!(settle(&mut s, &cancelled)["status"], "input_required");
        s.tasks_request("tasks/cancel", json!({"taskId": cancelled}));
        assert_eq!(get(&mut s, &cancelled)["status"], "cancelled");
        assert_eq!(places(db), before);

        let declined = start_task(&mut s, json!({"require_approval": true}));
        assert_eq!(settle(&mut s, &declined)["status"], "input_required");
        s.tasks_request("tasks/update", json!({"taskId": declined, "inputResponses": {"approve": {"action": "decline"}}}));
        let task = get(&mut s, &declined);
        assert_eq!(task["status"], "completed", "{task}");
        assert_eq!(task["result"]["structuredContent"]["applied"], false);
        assert_eq!(places(db), before);
    }

    fn a_plan_gone_stale_at_the_gate_is_refused_not_applied(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let id = start_task(&mut s, json!({"require_approval": true}));
        let task = settle(&mut s, &id);
        // Someone cancels a booking that the plan moves, while the question waits.
        let reflow_id = db.text(&format!("SELECT reflow_id FROM tasks WHERE id = '{id}'")).unwrap();
        let plan = s.ok("get_reflow", json!({"reflow_id": reflow_id}));
        let first_moved = plan["moves"][0]["booking"].clone();
        s.ok("cancel_booking", json!({"id": first_moved}));
        assert_eq!(task["status"], "input_required");
        s.tasks_request("tasks/update", json!({"taskId": id, "inputResponses": {"approve": {"action": "accept"}}}));
        let done = get(&mut s, &id);
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["result"]["isError"], true);
        assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("run the reflow again"), "{done}");
        let after = places(db);
        let changed: Vec<_> = after.keys().filter(|k| after[*k] != before[*k]).collect();
        assert_eq!(changed, [first_moved.as_str().unwrap()], "only the cancellation changed anything");
    }

    fn one_reflow_per_month_at_a_time(db) {
        demo(db);
        let mut s = stdio(db, &["--test-solve-delay-ms", "100"]);
        let first = start_task(&mut s, json!({}));
        let second = s.tasks_request("tools/call", september(json!({"dry_run": true})));
        let result = &second["result"];
        assert_eq!(result["isError"], true, "{second}");
        assert!(result["content"][0]["text"].as_str().unwrap().contains(&first), "names the running task: {second}");
        // Another month is fine meanwhile.
        let october = s.tasks_request("tools/call", json!({"name": REFLOW, "arguments": {"month": "2026-10", "offline_rooms": ["studio-b"], "dry_run": true}}));
        assert_eq!(october["result"]["resultType"], "task", "{october}");
        s.tasks_request("tasks/cancel", json!({"taskId": first}));
        assert_eq!(get(&mut s, &first)["status"], "cancelled");
    }

    fn a_client_without_the_extension_gets_the_same_result_synchronously(db) {
        let (sync_db, task_db) = (db, db.another());
        demo(sync_db);
        demo(&task_db);
        let mut plain = stdio(sync_db, &[]);
        let answer = plain.request("tools/call", september(json!({})));
        let sync_result = answer["result"].clone();
        assert_eq!(sync_result["resultType"], "complete", "{answer}");

        let mut s = stdio(&task_db, &[]);
        let id = start_task(&mut s, json!({}));
        let task = settle(&mut s, &id);
        assert_eq!(task["status"], "completed");
        assert_eq!(task["result"], sync_result, "tasks/get's result is exactly the synchronous CallToolResult");
    }

    fn task_methods_need_the_extension_and_a_known_id(db) {
        demo(db);
        let mut s = stdio(db, &[]);
        let id = start_task(&mut s, json!({"dry_run": true}));
        let without = s.request("tasks/get", json!({"taskId": id}));
        assert_eq!(without["error"]["code"], -32021, "{without}");
        let unknown = s.tasks_request("tasks/get", json!({"taskId": "tsk_doesnotexist"}));
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        let unknown = s.tasks_request("tasks/cancel", json!({"taskId": "tsk_doesnotexist"}));
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        assert_eq!(s.tasks_request("tasks/result", json!({"taskId": id}))["error"]["code"], -32601);
        assert_eq!(s.tasks_request("tasks/list", json!({}))["error"]["code"], -32601);
        // A task that asked nothing (working, or already done) ignores answers; an unknown one is refused.
        let unasked = start_task(&mut s, json!({"month": "2026-10", "dry_run": true}));
        let update = s.tasks_request("tasks/update", json!({"taskId": unasked, "inputResponses": {"approve": {"action": "accept"}}}));
        assert_eq!(update["result"]["resultType"], "complete", "{update}");
        assert_ne!(get(&mut s, &unasked)["status"], "input_required");
        let update = s.tasks_request("tasks/update", json!({"taskId": "tsk_doesnotexist", "inputResponses": {}}));
        assert_eq!(update["error"]["code"], -32602, "{update}");
        // Quick tools never become tasks, whatever the client declares.
        let rooms = s.tasks_request("tools/call", json!({"name": "list_rooms", "arguments": {}}));
        assert_eq!(rooms["result"]["resultType"], "complete");
        // The server says it speaks the extension.
        let discover = s.request("server/discover", json!({}));
        assert!(discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{discover}");
    }

    fn expired_tasks_are_deleted_and_then_unknown(db) {
        demo(db);
        let mut s = stdio(db, &["--task-ttl", "1"]);
        let id = start_task(&mut s, json!({"dry_run": true}));
        assert_eq!(get(&mut s, &id)["ttlMs"], 1000);
        std::thread::sleep(Duration::from_millis(1600));
        let gone = s.tasks_request("tasks/get", json!({"taskId": id}));
        assert_eq!(gone["error"]["code"], -32602, "{gone}");
        assert_eq!(db.scalar("SELECT COUNT(*) FROM tasks"), 0, "the sweeper deleted the row");
    }

    fn a_final_state_cannot_change_even_by_hand(db) {
        demo(db);
        let mut s = stdio(db, &[]);
        let id = start_task(&mut s, json!({"dry_run": true}));
        assert_eq!(settle(&mut s, &id)["status"], "completed");
        let err = db.try_exec(&format!("UPDATE tasks SET status = 'working' WHERE id = '{id}'")).unwrap_err();
        assert!(err.to_string().contains("never changes"), "{err}");
    }

    fn tasks_work_over_http_too(db) {
        let before = demo(db);
        let mut h = crate::mcp_client::http(db, &[]);
        let created = h.tasks_request("tools/call", september(json!({})));
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        let task = settle(&mut h, &id);
        assert_eq!(task["status"], "completed", "{task}");
        assert_applied_once(db, &before, &task["result"]);
        let without = h.request("tasks/get", json!({"taskId": id}));
        assert_eq!(without["error"]["code"], -32021, "{without}");
    }

    /// Issue 8, item 8: one live reflow per month holds on the synchronous path too. With an approval
    /// task for 2026-09 waiting, a client without the extension asks for the same month.
    fn a_synchronous_reflow_waits_its_turn_behind_a_waiting_approval(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let id = start_task(&mut s, json!({"require_approval": true}));
        assert_eq!(settle(&mut s, &id)["status"], "input_required");

        let answer = s.request("tools/call", september(json!({})));
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "{answer}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(&id), "names the live task: {text}");
        assert_eq!(places(db), before, "nothing was applied");
        assert_eq!(get(&mut s, &id)["status"], "input_required", "the waiting task still waits");

        // Once the gate is answered, the month is free again.
        s.tasks_request("tasks/update", json!({"taskId": id, "inputResponses": {"approve": {"action": "decline"}}}));
        let again = s.request("tools/call", september(json!({"dry_run": true})));
        assert_eq!(again["result"]["isError"], false, "{again}");
    }

    /// Issue 10: `apply_reflow` and `undo_reflow` keep "one live reflow per month" too. A dry run's
    /// plan waits while an approval task of the same month is live, and applies once it is answered.
    fn applying_or_undoing_a_plan_waits_for_the_months_live_task(db) {
        let before = demo(db);
        let mut s = stdio(db, &[]);
        let plan = s.ok(REFLOW, json!({"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true}));
        let id = start_task(&mut s, json!({"require_approval": true}));
        assert_eq!(settle(&mut s, &id)["status"], "input_required");

        let refused = s.refused("apply_reflow", json!({"reflow_id": plan["reflow_id"]}));
        assert!(refused.contains(&id) && refused.contains("under way"), "names the live task: {refused}");
        assert_eq!(places(db), before, "nothing was applied");

        s.tasks_request("tasks/update", json!({"taskId": id, "inputResponses": {"approve": {"action": "decline"}}}));
        let applied = s.ok("apply_reflow", json!({"reflow_id": plan["reflow_id"]}));
        assert_eq!(applied["moves"], plan["moves"]);
        assert_applied_once(db, &before, &json!({"structuredContent": applied}));

        // The same rule for an undo: while a new approval task of the month waits, it is refused.
        let again = start_task(&mut s, json!({"require_approval": true}));
        assert_eq!(settle(&mut s, &again)["status"], "input_required");
        assert!(s.refused("undo_reflow", json!({"reflow_id": plan["reflow_id"]})).contains(&again));
    }
}
