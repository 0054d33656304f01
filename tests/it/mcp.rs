//! The MCP server end to end, on the real binary over stdio and HTTP: discovery, the tools/list
//! contract, every tool's happy path and bad inputs, paging, idempotent retries, double bookings,
//! protocol errors, legacy `initialize` clients, and the HTTP guards.

use crate::mcp_client::{http, meta, stdio, Mcp, StdioServer};
use crate::support::temp_db;
use serde_json::{json, Value};

fn ids(bookings: &Value) -> Vec<String> {
    bookings.as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn discover_answers_on_both_transports() {
    let db = temp_db();
    let mut over_stdio = stdio(&db.path, &["--demo"]);
    let over_http = &mut http(&db.path, &[]);
    for server in [&mut over_stdio as &mut dyn Mcp, over_http as &mut dyn Mcp] {
        let answer = server.request("server/discover", json!({}));
        let result = &answer["result"];
        assert_eq!(result["resultType"], "complete", "{answer}");
        assert!(result["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));
        assert!(result["capabilities"]["tools"].is_object());
        assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string(), "{result}");
        assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "studioflow");
    }
}

#[test]
fn tools_list_matches_the_snapshot() {
    let db = temp_db();
    let mut server = stdio(&db.path, &[]);
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    for tool in tools.as_array().unwrap() {
        assert!(tool["inputSchema"]["type"] == "object" && tool["outputSchema"]["type"] == "object", "{tool}");
        assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
        assert!(tool["annotations"]["destructiveHint"].is_boolean(), "{tool}");
        assert!(tool["annotations"]["idempotentHint"].is_boolean(), "{tool}");
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots/tools_list.json");
    let current = serde_json::to_string_pretty(&tools).unwrap() + "\n";
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &current).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != current {
        std::fs::write(path.with_extension("json.new"), &current).unwrap();
        panic!(
            "tools/list changed: compare {} with its .new file, and if the change is meant, \
             run `UPDATE_SNAPSHOTS=1 cargo test --test it tools_list` and commit the snapshot",
            path.display()
        );
    }
}

#[test]
fn every_tool_works_on_its_happy_path() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);

    let rooms = s.ok("list_rooms", json!({}))["rooms"].clone();
    assert_eq!(rooms.as_array().unwrap().len(), 7);
    let studio_b = rooms.as_array().unwrap().iter().find(|r| r["id"] == "studio-b").unwrap();
    assert_eq!(studio_b["offline_windows"][0]["from"], "2026-09-07T00:00:00+01:00");
    assert_eq!(studio_b["opening_hours"][0], "mon 09:00-01:00");

    let fortnight = json!({"room": "studio-b", "from": "2026-09-07T00:00", "to": "2026-09-21T00:00", "limit": 500});
    let before = s.ok("query_bookings", fortnight.clone())["bookings"].as_array().unwrap().len();
    assert!(before >= 100, "{before}");

    let detail = s.ok("get_booking", json!({"id": "bk_00001"}));
    assert_eq!(detail["booking"]["id"], "bk_00001");
    assert_eq!(detail["series"]["id"], "series-001");

    let slots = s.ok("find_free_slots", json!({"from": "2026-10-06T09:00", "to": "2026-10-06T23:00", "duration_minutes": 120, "requires": ["drums"], "party_size": 4}));
    let slot = slots["slots"][0].clone();
    assert!(slot["room"].is_string(), "{slots}");

    let created = s.ok("create_booking", json!({"room": slot["room"], "client": "client-003", "start": slot["start"], "end": slot["end"], "party_size": 4, "requires": ["drums"]}));
    let new_id = created["bookings"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["bookings"][0]["start"], slot["start"]);
    assert_eq!(created["replayed"], false);

    let moved = s.ok("move_booking", json!({"id": new_id, "start": slot["latest_start"]}));
    assert_eq!(moved["booking"]["start"], slot["latest_start"]);

    let cancelled = s.ok("cancel_booking", json!({"id": new_id}));
    assert_eq!(cancelled["cancelled"][0]["status"], "cancelled");

    let offline = s.ok("set_room_offline", json!({"room": "studio-c", "from": "2026-10-05T00:00", "to": "2026-10-07T00:00", "reason": "new monitors"}));
    assert!(offline["affected"].as_u64().unwrap() > 0, "{offline}");
    assert!(offline["next_step"].as_str().unwrap().contains("reflow_month for 2026-10"), "{offline}");
    let windows = s.ok("list_offline_windows", json!({"room": "studio-c"}));
    assert_eq!(windows["windows"][0]["reason"], "new monitors");

    let reflow = s.ok("reflow_month", json!({"month": "2026-09", "offline_rooms": ["studio-b"]}));
    let (affected, moved, unresolved) = (reflow["affected"].as_u64().unwrap(), reflow["moved"].as_u64().unwrap(), reflow["unresolved"].as_u64().unwrap());
    assert_eq!(affected, moved + unresolved);
    assert!(moved > 100 && reflow["applied"] == true, "{reflow}");
    assert_eq!(reflow["moves"].as_array().unwrap().len() as u64, moved);
    let after = s.ok("query_bookings", fortnight)["bookings"].as_array().unwrap().len() as u64;
    assert_eq!(after, before as u64 - moved, "only the unresolved stay in studio-b");

    let stored = s.ok("get_reflow", json!({"reflow_id": reflow["reflow_id"]}));
    assert_eq!(stored["moved"], reflow["moved"]);
    assert_eq!(stored["request"]["offline_rooms"], json!(["studio-b"]));
    let first_move = &reflow["moves"][0];
    let history = s.ok("get_booking", json!({"id": first_move["booking"]}))["reflow_history"].clone();
    assert_eq!(history[0]["reflow_id"], reflow["reflow_id"]);
    assert_eq!(history[0]["to_room"], first_move["to_room"]);
}

#[test]
fn bad_inputs_get_a_tool_error_that_says_what_to_change() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    // A rehearsal that would fit studio-b, were studio-b not offline.
    let rehearsal = s.ok("query_bookings", json!({"room": "rehearsal-1", "from": "2026-09-08T00:00", "to": "2026-09-09T00:00", "limit": 1}));
    let rehearsal = rehearsal["bookings"][0]["id"].clone();
    let cases: &[(&str, Value, &str)] = &[
        ("list_rooms", json!({"room": "studio-a"}), "unknown field `room`"),
        ("list_rooms", json!({"limit": 3}), "unknown field `limit`"),
        ("list_rooms", json!({"x": null}), "do not fit its input schema"),
        ("query_bookings", json!({"limit": 0}), "limit must be 1 to 500"),
        ("query_bookings", json!({"cursor": "page-2"}), "pass next_cursor unchanged"),
        ("query_bookings", json!({"from": "yesterday"}), "from: cannot read \"yesterday\""),
        ("query_bookings", json!({"status": "done"}), "unknown variant `done`"),
        ("query_bookings", json!({"room": "attic"}), "unknown room \"attic\""),
        ("get_booking", json!({}), "missing field `id`"),
        ("get_booking", json!({"id": "bk_99999"}), "unknown booking \"bk_99999\""),
        ("get_booking", json!({"id": 17}), "invalid type"),
        ("find_free_slots", json!({"from": "2026-10-06T09:00", "to": "2026-10-06T23:00", "duration_minutes": 5}), "duration_minutes must be 15 to 1440"),
        ("find_free_slots", json!({"from": "2026-10-06T09:00", "to": "2026-10-05T23:00", "duration_minutes": 60}), "to must be after from"),
        ("find_free_slots", json!({"from": "2026-10-01T09:00", "to": "2026-12-01T09:00", "duration_minutes": 60}), "at most 31 days"),
        ("find_free_slots", json!({"from": "2026-10-06T09:00", "to": "2026-10-06T23:00", "duration_minutes": 60, "room": "attic"}), "unknown room"),
        ("create_booking", json!({"room": "attic", "client": "client-001", "start": "2026-10-06T10:00", "end": "2026-10-06T11:00"}), "unknown room \"attic\""),
        ("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-10-06T10:00", "end": "2026-10-06T09:00"}), "must end after it starts"),
        ("create_booking", json!({"room": "rehearsal-2", "client": "client-001", "start": "2027-03-28T01:30", "end": "2027-03-28T02:30"}), "does not exist in Europe/London"),
        ("create_booking", json!({"room": "rehearsal-2", "client": "client-001", "start": "2026-10-25T01:30", "end": "2026-10-25T02:30"}), "happens twice"),
        ("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00", "recurrence": "FREQ=WEEKLY"}), "never ends"),
        ("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00", "requires": ["drums"]}), "studio-c has no drums"),
        ("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00", "party_size": 9}), "holds 4 people"),
        ("create_booking", json!({"room": "studio-c", "client": "nobody", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"}), "unknown client"),
        ("cancel_booking", json!({"id": "bk_99999"}), "unknown booking"),
        ("cancel_booking", json!({"id": "bk_00001", "scope": "everything"}), "unknown variant `everything`"),
        ("cancel_booking", json!({"scope": "series"}), "missing field `id`"),
        ("move_booking", json!({"id": "bk_99999", "start": "2026-10-06T10:00"}), "unknown booking"),
        ("move_booking", json!({"id": "bk_00001", "start": "soon"}), "start: cannot read"),
        ("move_booking", json!({"id": rehearsal, "room": "studio-b", "start": "2026-09-08T10:00"}), "studio-b is offline"),
        ("set_room_offline", json!({"room": "attic", "from": "2026-10-06T00:00", "to": "2026-10-07T00:00", "reason": "x"}), "unknown room"),
        ("set_room_offline", json!({"room": "studio-a", "from": "2026-10-07T00:00", "to": "2026-10-06T00:00", "reason": "x"}), "must end after it starts"),
        ("set_room_offline", json!({"room": "studio-a", "from": "now", "to": "2026-10-06T00:00", "reason": "x"}), "from: cannot read"),
        ("list_offline_windows", json!({"room": "attic"}), "unknown room"),
        ("list_offline_windows", json!({"from": "2026-10-07T00:00", "to": "2026-10-06T00:00"}), "to must be after from"),
        ("list_offline_windows", json!({"from": "later"}), "from: cannot read"),
        ("reflow_month", json!({"month": "2026-13", "offline_rooms": ["studio-b"]}), "YYYY-MM"),
        ("reflow_month", json!({"month": "2026-09", "offline_rooms": []}), "name at least one room"),
        ("reflow_month", json!({"month": "2026-09", "offline_rooms": ["attic"]}), "unknown room"),
        ("reflow_month", json!({"month": "2026-09", "offline_rooms": ["studio-b"], "max_shift_minutes": 9999}), "0 to 720"),
        ("reflow_month", json!({"month": "1999-01", "offline_rooms": ["studio-b"]}), "2000 to 2199"),
        ("reflow_month", json!({"month": "2026-10", "offline_rooms": ["studio-b"]}), "studio-b has no offline window in 2026-10"),
        ("get_reflow", json!({"reflow_id": "rf_9999"}), "unknown reflow"),
        ("get_reflow", json!({}), "missing field `reflow_id`"),
        ("get_reflow", json!({"reflow_id": 3}), "invalid type"),
    ];
    let mut per_tool = std::collections::BTreeMap::<&str, usize>::new();
    for (tool, args, expected) in cases {
        let message = s.refused(tool, args.clone());
        assert!(message.contains(expected), "{tool} {args}: {message:?} should contain {expected:?}");
        *per_tool.entry(tool).or_default() += 1;
    }
    assert_eq!(per_tool.len(), 11, "every tool is covered");
    assert!(per_tool.values().all(|n| *n >= 3), "{per_tool:?}");
    // Nothing was written by any of them.
    let created = s.ok("query_bookings", json!({"client": "client-001", "from": "2026-11-01T00:00"}));
    assert!(created["bookings"].as_array().unwrap().is_empty());
}

#[test]
fn pages_neither_repeat_nor_skip_while_others_book() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let all = s.ok("query_bookings", json!({"from": "2026-09-01T00:00", "to": "2026-09-08T00:00", "limit": 500}));
    let expected = ids(&all["bookings"]);
    assert!(expected.len() > 60, "{}", expected.len());

    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let mut args = json!({"from": "2026-09-01T00:00", "to": "2026-09-08T00:00", "limit": 25});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = s.ok("query_bookings", args);
        seen.extend(ids(&page["bookings"]));
        pages += 1;
        if pages == 1 {
            // A booking made meanwhile, earlier than the cursor, must not shift the pages.
            let last_start = page["bookings"][24]["start"].clone();
            let free = s.ok("find_free_slots", json!({"from": "2026-09-01T00:00", "to": last_start, "duration_minutes": 30}));
            let slot = &free["slots"][0];
            s.ok("create_booking", json!({"room": slot["room"], "client": "client-020", "start": slot["start"], "end": slot["end"]}));
        }
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(seen, expected, "every booking once, in order");
    assert_eq!(pages, expected.len().div_ceil(25));
}

#[test]
fn a_retry_with_the_same_idempotency_key_books_nothing_twice() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let args = json!({"room": "studio-c", "client": "client-002", "start": "2026-11-03T10:00", "end": "2026-11-03T12:00", "recurrence": "FREQ=WEEKLY;COUNT=3", "idempotency_key": "agent-7f3a"});
    let first = s.ok("create_booking", args.clone());
    let again = s.ok("create_booking", args.clone());
    assert_eq!(ids(&first["bookings"]), ids(&again["bookings"]));
    assert_eq!((first["replayed"].clone(), again["replayed"].clone()), (json!(false), json!(true)));
    assert_eq!(again["series"], first["series"]);
    let listed = s.ok("query_bookings", json!({"client": "client-002", "from": "2026-11-01T00:00"}));
    assert_eq!(listed["bookings"].as_array().unwrap().len(), 3);
    // The same key for something else is refused rather than silently answered.
    let mut other = args.clone();
    other["start"] = json!("2026-11-04T10:00");
    other["end"] = json!("2026-11-04T12:00");
    assert!(s.refused("create_booking", other).contains("already used for a different booking"));
}

#[test]
fn a_double_booking_is_refused_naming_the_booking_in_the_way() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let first = s.ok("create_booking", json!({"room": "studio-c", "client": "client-002", "start": "2026-11-03T10:00", "end": "2026-11-03T12:00"}));
    let id = first["bookings"][0]["id"].as_str().unwrap().to_owned();
    let message = s.refused("create_booking", json!({"room": "studio-c", "client": "client-009", "start": "2026-11-03T11:00", "end": "2026-11-03T13:00"}));
    assert_eq!(message, format!("studio-c is taken from 2026-11-03T10:00:00+00:00 to 2026-11-03T12:00:00+00:00 by {id}: choose another time or room"));
    let message = s.refused("create_booking", json!({"room": "podcast-1", "client": "client-002", "start": "2026-11-03T11:00", "end": "2026-11-03T12:00"}));
    assert!(message.starts_with(&format!("client client-002 is already booked from 2026-11-03T10:00:00+00:00 to 2026-11-03T12:00:00+00:00 ({id})")), "{message}");
}

#[test]
fn protocol_errors_carry_their_codes() {
    let db = temp_db();
    let mut s = stdio(&db.path, &[]);
    assert_eq!(s.raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"")["error"]["code"], -32700);
    assert_eq!(s.raw("[{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/list\"}]")["error"]["code"], -32600);
    assert_eq!(s.raw("{\"jsonrpc\": \"2.0\", \"id\": 3}")["error"]["code"], -32600);
    let unknown_method = s.request("rooms/teleport", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    let unknown_tool = s.request("tools/call", json!({"name": "book_everything", "arguments": {}}));
    assert_eq!(unknown_tool["error"]["code"], -32602, "{unknown_tool}");
    let no_meta = s.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "list_rooms", "arguments": {}}}));
    assert_eq!(no_meta["error"]["code"], -32602, "{no_meta}");
    let huge = format!("{{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"tools/list\", \"params\": {{\"pad\": \"{}\"}}}}", "x".repeat(5 << 20));
    assert_eq!(s.raw(&huge)["error"]["code"], -32600, "a line over 4 MiB is refused without being held");
    // The server is still there after all of that, and exits cleanly at end of input.
    assert!(s.request("tools/list", json!({}))["result"]["tools"].is_array());
    assert!(s.close());
}

#[test]
fn a_legacy_initialize_client_can_call_the_tools() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let init = s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "0.1"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    s.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let rooms = s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_rooms", "arguments": {}}}));
    assert_eq!(rooms["result"]["structuredContent"]["rooms"].as_array().unwrap().len(), 7, "{rooms}");
}

#[test]
fn http_serves_tools_and_guards_its_endpoint() {
    let db = temp_db();
    assert!(stdio(&db.path, &["--demo"]).close(), "loading the demo and closing stdin at once is a clean exit");
    let mut h = http(&db.path, &[]);
    let rooms = h.ok("list_rooms", json!({}));
    assert_eq!(rooms["rooms"].as_array().unwrap().len(), 7);
    let refused = h.refused("get_booking", json!({"id": "bk_99999"}));
    assert!(refused.contains("unknown booking"));

    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta(json!({}))}});
    assert_eq!(h.post(&discover, &[]).status, 200);
    assert_eq!(h.post(&discover, &[("Origin", "http://evil.example")]).status, 403);
    assert_eq!(h.post(&discover, &[("Origin", "http://localhost:3000")]).status, 200);
    assert_eq!(h.post(&discover, &[("Host", "evil.example")]).status, 403);
    let get = h.raw("GET", &[("Accept", "text/event-stream")], "");
    assert_eq!(get.status, 405);
    assert_eq!(h.raw("DELETE", &[], "").status, 405);

    let not_json = h.raw("POST", &[("Content-Type", "application/json"), ("MCP-Protocol-Version", "2026-07-28")], "{oops");
    assert_eq!(not_json.status, 400);
    assert_eq!(serde_json::from_str::<Value>(&not_json.body).unwrap()["error"]["code"], -32700);
    let huge = format!("{{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\", \"params\": {{\"pad\": \"{}\"}}}}", "x".repeat(2 << 20));
    assert_eq!(h.raw("POST", &[("Content-Type", "application/json")], &huge).status, 413);
    let unknown_tool = h.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown_tool["error"]["code"], -32602);

    // Two bookings of one slot over HTTP: one wins, the other is told who has it.
    let slot = json!({"room": "studio-c", "client": "client-002", "start": "2026-11-03T10:00", "end": "2026-11-03T12:00"});
    let won = h.ok("create_booking", slot.clone());
    let mut other = slot.clone();
    other["client"] = json!("client-005");
    assert!(h.refused("create_booking", other).contains(won["bookings"][0]["id"].as_str().unwrap()));

    assert!(h.terminate(std::time::Duration::from_secs(10)), "SIGTERM stops the server cleanly");
}

/// `list_rooms` keeps its written answer while nothing it shows changes (issue 28): what this
/// server writes, what another process writes to the same file, and the offline windows it shows
/// each make it write the answer again.
#[test]
fn list_rooms_answers_anew_once_a_room_the_studio_or_a_window_changes() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    let room = |rooms: &Value, id: &str| rooms["rooms"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
    let summary = |s: &mut StdioServer| s.call("list_rooms", json!({}))["content"][0]["text"].as_str().unwrap().to_owned();

    let first = s.ok("list_rooms", json!({}));
    assert_eq!(s.ok("list_rooms", json!({})), first, "the same answer while nothing changed");
    assert_eq!(room(&first, "studio-a")["capacity"], 10);
    assert!(summary(&mut s).contains("1 with offline windows"), "{}", summary(&mut s));

    // Through this server.
    s.ok("update_room", json!({"id": "studio-a", "capacity": 12}));
    assert_eq!(room(&s.ok("list_rooms", json!({})), "studio-a")["capacity"], 12);

    // Through another process: a room, then the studio's name.
    let other = rusqlite::Connection::open(&db.path).unwrap();
    other.execute("UPDATE rooms SET name = 'Studio A (new desk)' WHERE id = 'studio-a'", []).unwrap();
    assert_eq!(room(&s.ok("list_rooms", json!({})), "studio-a")["name"], "Studio A (new desk)");
    other.execute("UPDATE studio SET name = 'Renamed Rooms'", []).unwrap();
    assert!(summary(&mut s).contains("at Renamed Rooms;"), "{}", summary(&mut s));

    // Offline windows, which the cache's version does not follow: one added by another process,
    // one through this server, then the first removed.
    other
        .execute(
            "INSERT INTO offline_windows (room_id, from_at, to_at, reason, created_at) VALUES ('studio-a', ?1, ?2, 'desk swap', 0)",
            [crate::support::at("2026-10-01T09:00").timestamp(), crate::support::at("2026-10-02T09:00").timestamp()],
        )
        .unwrap();
    let rooms = s.ok("list_rooms", json!({}));
    let windows = room(&rooms, "studio-a")["offline_windows"].clone();
    assert_eq!(windows.as_array().unwrap().len(), 1, "{windows}");
    assert_eq!(windows[0]["reason"], "desk swap");
    assert!(summary(&mut s).contains("2 with offline windows"), "{}", summary(&mut s));
    s.ok("set_room_offline", json!({"room": "studio-c", "from": "2026-10-05T09:00", "to": "2026-10-05T18:00", "reason": "survey"}));
    assert_eq!(room(&s.ok("list_rooms", json!({})), "studio-c")["offline_windows"][0]["reason"], "survey");
    s.ok("remove_offline_window", json!({"id": windows[0]["id"]}));
    let rooms = s.ok("list_rooms", json!({}));
    assert_eq!(room(&rooms, "studio-a")["offline_windows"], json!([]));
    assert_eq!(room(&rooms, "studio-c")["offline_windows"].as_array().unwrap().len(), 1);
}
