//! A table of bad inputs over every tool and every argument, run against one real server: each
//! case says the kind of answer it must get (a JSON-RPC error code, or `isError` with a message
//! that names the argument or what is wrong with it), and no refused request may change the
//! database, compared as a full dump of its tables before and after.

use crate::mcp_client::{stdio, Mcp};
use crate::support::temp_db;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The answer a bad input must get.
#[derive(Debug, Clone)]
enum Expect {
    /// `isError: true`, with a message that contains this text.
    Refused(String),
    /// A JSON-RPC error with this code.
    Rpc(i64),
}

struct Case {
    tool: String,
    args: Value,
    expect: Expect,
}

/// The table, built from each tool's arguments: wrong JSON types for every argument, then the
/// values of the right type that are still wrong.
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut add = |tool: &str, args: Value, expect: Expect| cases.push(Case { tool: tool.to_owned(), args, expect });
    let refused = |text: &str| Expect::Refused(text.to_owned());
    let with = |base: &Value, field: &str, value: Value| {
        let mut args = base.clone();
        args[field] = value;
        args
    };
    let without = |base: &Value, field: &str| {
        let mut args = base.clone();
        args.as_object_mut().unwrap().remove(field);
        args
    };

    // A valid request per tool; each case changes one argument of it.
    let bases: Vec<(&str, Value)> = vec![
        ("list_rooms", json!({})),
        ("query_bookings", json!({})),
        ("get_booking", json!({"id": "bk_00001"})),
        ("find_free_slots", json!({"from": "2026-10-06T09:00", "to": "2026-10-06T23:00", "duration_minutes": 60})),
        ("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"})),
        ("cancel_booking", json!({"id": "bk_99999"})),
        ("move_booking", json!({"id": "bk_00001", "start": "2026-08-01T10:00"})),
        ("set_room_offline", json!({"room": "studio-a", "from": "2026-10-06T00:00", "to": "2026-10-07T00:00", "reason": "x"})),
        ("list_offline_windows", json!({})),
        ("reflow_month", json!({"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true})),
        ("get_reflow", json!({"reflow_id": "rf_0001"})),
    ];
    // cancel_booking, move_booking and get_reflow have no valid request that changes nothing, so
    // their bases are themselves refused (an unknown booking, a start before the clock, an
    // unknown reflow); the cases below change another argument and expect that one's message.
    let base = |tool: &str| bases.iter().find(|(t, _)| *t == tool).unwrap().1.clone();

    // Arguments by kind: (tool, field, required).
    let strings: &[(&str, &str, bool)] = &[
        ("query_bookings", "from", false),
        ("query_bookings", "to", false),
        ("query_bookings", "room", false),
        ("query_bookings", "client", false),
        ("query_bookings", "engineer", false),
        ("query_bookings", "series", false),
        ("query_bookings", "cursor", false),
        ("get_booking", "id", true),
        ("find_free_slots", "from", true),
        ("find_free_slots", "to", true),
        ("find_free_slots", "room", false),
        ("find_free_slots", "client", false),
        ("find_free_slots", "engineer", false),
        ("create_booking", "room", true),
        ("create_booking", "client", true),
        ("create_booking", "start", true),
        ("create_booking", "end", true),
        ("create_booking", "engineer", false),
        ("create_booking", "recurrence", false),
        ("create_booking", "idempotency_key", false),
        ("cancel_booking", "id", true),
        ("move_booking", "id", true),
        ("move_booking", "room", false),
        ("move_booking", "start", true),
        ("set_room_offline", "room", true),
        ("set_room_offline", "from", true),
        ("set_room_offline", "to", true),
        ("set_room_offline", "reason", true),
        ("list_offline_windows", "room", false),
        ("list_offline_windows", "from", false),
        ("list_offline_windows", "to", false),
        ("reflow_month", "month", true),
        ("get_reflow", "reflow_id", true),
    ];
    for &(tool, field, required) in strings {
        for wrong in [json!(17), json!(true), json!([]), json!({}), json!(1.5)] {
            add(tool, with(&base(tool), field, wrong), refused(&format!("{field}: invalid type")));
        }
        if required {
            add(tool, with(&base(tool), field, Value::Null), refused(&format!("{field}: invalid type: null")));
            add(tool, without(&base(tool), field), refused(&format!("missing field `{field}`")));
        }
    }

    let numbers: &[(&str, &str)] = &[
        ("query_bookings", "limit"),
        ("find_free_slots", "duration_minutes"),
        ("find_free_slots", "party_size"),
        ("find_free_slots", "limit"),
        ("create_booking", "party_size"),
        ("reflow_month", "max_shift_minutes"),
    ];
    for &(tool, field) in numbers {
        for wrong in [json!("3"), json!(true), json!([1]), json!(2.5)] {
            add(tool, with(&base(tool), field, wrong), refused(&format!("{field}: invalid type")));
        }
        // Only the u32 fields: a negative number or one past u32 is no such number.
        if field != "max_shift_minutes" {
            add(tool, with(&base(tool), field, json!(-1)), refused(&format!("{field}: invalid value")));
            add(tool, with(&base(tool), field, json!(4_294_967_296u64)), refused(&format!("{field}: invalid value")));
        }
    }
    add("find_free_slots", without(&base("find_free_slots"), "duration_minutes"), refused("missing field `duration_minutes`"));

    // Lists, enums and flags.
    for (tool, field) in [("find_free_slots", "requires"), ("create_booking", "requires"), ("reflow_month", "offline_rooms")] {
        for wrong in [json!("drums"), json!(3), json!({}), json!(true)] {
            add(tool, with(&base(tool), field, wrong), refused(&format!("{field}: invalid type")));
        }
        for wrong in [json!([1]), json!([null]), json!([["a"]])] {
            add(tool, with(&base(tool), field, wrong), refused(&format!("{field}[0]: invalid type")));
        }
    }
    add("reflow_month", without(&base("reflow_month"), "offline_rooms"), refused("missing field `offline_rooms`"));
    for (tool, field) in [("query_bookings", "status"), ("create_booking", "status"), ("cancel_booking", "scope")] {
        for wrong in ["done", "", "CONFIRMED", " occurrence", "all"] {
            add(tool, with(&base(tool), field, json!(wrong)), refused(&format!("{field}: unknown variant")));
        }
        add(tool, with(&base(tool), field, json!(1)), refused(&format!("{field}: invalid type")));
    }
    for field in ["dry_run", "require_approval"] {
        for wrong in [json!("yes"), json!(1), json!(null), json!([])] {
            add("reflow_month", with(&base("reflow_month"), field, wrong), refused(&format!("{field}: invalid type")));
        }
    }

    // Unknown arguments, on every tool.
    for (tool, args) in &bases {
        for field in ["bogus", "Room", "_meta", "arguments"] {
            add(tool, with(args, field, json!("x")), refused(&format!("unknown field `{field}`")));
        }
    }

    // Times: unreadable, out of the years read, skipped or repeated by the clock.
    let times: &[(&str, &str)] = &[
        ("query_bookings", "from"),
        ("query_bookings", "to"),
        ("find_free_slots", "from"),
        ("find_free_slots", "to"),
        ("create_booking", "start"),
        ("create_booking", "end"),
        ("move_booking", "start"),
        ("set_room_offline", "from"),
        ("set_room_offline", "to"),
        ("list_offline_windows", "from"),
        ("list_offline_windows", "to"),
    ];
    // Each bad time gets its field named, and what is wrong with it when that is certain.
    let bad_times = [
        ("yesterday", "cannot read"),
        ("", "cannot read"),
        ("2026-13-01T10:00", "cannot read"),
        ("2026-09-31T10:00", "cannot read"),
        ("2026-09-07", "cannot read"),
        ("9999-12-31T23:00:00-14:00", "is outside the years 2000 to 2199"),
        ("+10000-01-01T00:00", ""),
        ("1999-12-31T23:00", "is outside the years 2000 to 2199"),
        ("2200-01-01T00:00:00Z", "is outside the years 2000 to 2199"),
        ("2027-03-28T01:30", "does not exist in Europe/London"),
        ("2026-10-25T01:30", "happens twice in Europe/London"),
    ];
    for &(tool, field) in times {
        for (text, why) in bad_times {
            let expect = if why == "cannot read" { format!("{field}: cannot read") } else { format!("{field}: ") };
            add(tool, with(&base(tool), field, json!(text)), Expect::Refused(expect));
            if !why.is_empty() && why != "cannot read" {
                // The same case again, checked for the reason too (the field is checked above).
                add(tool, with(&base(tool), field, json!(text)), refused(why));
            }
        }
    }

    // Unknown ids: one message per kind of id, wherever it is read.
    let ids: &[(&str, &str, &str)] = &[
        ("query_bookings", "room", "unknown room"),
        ("query_bookings", "client", "unknown client"),
        ("query_bookings", "engineer", "unknown engineer"),
        ("query_bookings", "series", "unknown series"),
        ("get_booking", "id", "unknown booking"),
        ("find_free_slots", "room", "unknown room"),
        ("find_free_slots", "client", "unknown client"),
        ("find_free_slots", "engineer", "unknown engineer"),
        ("create_booking", "room", "unknown room"),
        ("create_booking", "client", "unknown client"),
        ("create_booking", "engineer", "unknown engineer"),
        ("cancel_booking", "id", "unknown booking"),
        ("move_booking", "id", "unknown booking"),
        ("set_room_offline", "room", "unknown room"),
        ("list_offline_windows", "room", "unknown room"),
        ("get_reflow", "reflow_id", "unknown reflow"),
    ];
    for &(tool, field, message) in ids {
        for unknown in ["nobody-999", "bk_00000", "STUDIO-A"] {
            add(tool, with(&base(tool), field, json!(unknown)), refused(message));
        }
    }
    add("move_booking", json!({"id": "bk_00001", "room": "attic", "start": "2026-10-06T10:00"}), refused("unknown room"));
    add("reflow_month", with(&base("reflow_month"), "offline_rooms", json!(["studio-b", "attic"])), refused("unknown room"));

    // Tools without arguments take none, and ids that are empty or huge are unknown ids.
    for extra in [json!({"room": "studio-a"}), json!({"limit": 3}), json!({"x": null}), json!({"": 1}), json!({"cursor": "c1.0.0"})] {
        let field = extra.as_object().unwrap().keys().next().unwrap().clone();
        add("list_rooms", extra, refused(&format!("unknown field `{field}`")));
    }
    for (tool, field, message) in [("get_booking", "id", "unknown booking"), ("cancel_booking", "id", "unknown booking"), ("get_reflow", "reflow_id", "unknown reflow")] {
        for id in [String::new(), " ".into(), "x".repeat(10_000), "bk_00001; DROP TABLE bookings".into(), "rf_0001\u{0}".into()] {
            add(tool, with(&base(tool), field, json!(id)), refused(message));
        }
    }

    // Numbers out of range.
    let q = base("query_bookings");
    add("query_bookings", with(&q, "limit", json!(0)), refused("limit must be 1 to 500"));
    add("query_bookings", with(&q, "limit", json!(501)), refused("limit must be 1 to 500"));
    let f = base("find_free_slots");
    for (field, value, message) in [
        ("duration_minutes", 0, "duration_minutes must be 15 to 1440"),
        ("duration_minutes", 14, "duration_minutes must be 15 to 1440"),
        ("duration_minutes", 1441, "duration_minutes must be 15 to 1440"),
        ("party_size", 0, "party_size must be at least 1"),
        ("limit", 0, "limit must be 1 to 200"),
        ("limit", 201, "limit must be 1 to 200"),
    ] {
        add("find_free_slots", with(&f, field, json!(value)), refused(message));
    }
    let c = base("create_booking");
    add("create_booking", with(&c, "party_size", json!(0)), refused("party_size must be at least 1"));
    add("create_booking", with(&c, "party_size", json!(5)), refused("holds 4 people"));
    add("create_booking", with(&c, "idempotency_key", json!("")), refused("idempotency_key must be 1 to 200"));
    add("create_booking", with(&c, "idempotency_key", json!("k".repeat(201))), refused("idempotency_key must be 1 to 200"));
    let r = base("reflow_month");
    for shift in [-1, 721, 100_000, i64::MIN] {
        add("reflow_month", with(&r, "max_shift_minutes", json!(shift)), refused("0 to 720"));
    }

    // Spans and the booking window.
    add("query_bookings", json!({"from": "2026-10-07T00:00", "to": "2026-10-06T00:00"}), refused("to must be after from"));
    add("query_bookings", json!({"from": "2026-10-07T00:00", "to": "2026-10-07T00:00"}), refused("to must be after from"));
    add("find_free_slots", with(&f, "to", json!("2026-10-06T09:00")), refused("to must be after from"));
    add("find_free_slots", with(&f, "to", json!("2026-11-06T09:15")), refused("at most 31 days"));
    add("list_offline_windows", json!({"from": "2026-10-07T00:00", "to": "2026-10-06T00:00"}), refused("to must be after from"));
    for (start, end, message) in [
        ("2026-11-03T10:00", "2026-11-03T10:00", "must end after it starts"),
        ("2026-11-03T10:00", "2026-11-03T09:00", "must end after it starts"),
        ("2026-11-03T10:00", "2026-11-04T10:15", "at most 24 hours"),
        ("2026-08-31T08:00", "2026-08-31T10:00", "before the studio's clock"),
        ("2025-01-07T10:00", "2025-01-07T11:00", "before the studio's clock"),
        ("2028-08-31T10:00", "2028-08-31T11:00", "beyond the booking horizon"),
        ("2199-01-07T10:00", "2199-01-07T11:00", "beyond the booking horizon"),
        ("2026-11-03T07:00", "2026-11-03T08:00", "closed"),
    ] {
        add("create_booking", with(&with(&c, "start", json!(start)), "end", json!(end)), refused(message));
    }
    add("move_booking", json!({"id": "bk_00001", "start": "2026-08-01T10:00"}), refused("before the studio's clock"));
    add("move_booking", json!({"id": "bk_00001", "start": "2030-01-01T10:00"}), refused("beyond the booking horizon"));
    let o = base("set_room_offline");
    for (from, to, message) in [
        ("2026-10-07T00:00", "2026-10-06T00:00", "must end after it starts"),
        ("2026-10-06T00:00", "2026-10-06T00:00", "must end after it starts"),
        ("2026-10-06T00:00", "2027-10-08T00:00", "at most a year"),
        ("2026-08-01T00:00", "2026-08-02T00:00", "not after the studio's clock"),
        ("2028-08-20T00:00", "2028-09-02T00:00", "beyond the booking horizon"),
    ] {
        add("set_room_offline", with(&with(&o, "from", json!(from)), "to", json!(to)), refused(message));
    }

    add("set_room_offline", with(&o, "reason", json!("r".repeat(201))), refused("reason: say why in at most 200 characters"));

    // Recurrence rules.
    for (rule, message) in [
        ("FREQ=WEEKLY", "never ends"),
        ("FREQ=FORTNIGHTLY;COUNT=2", "cannot read the recurrence rule"),
        ("", "cannot read the recurrence rule"),
        ("COUNT=3", "cannot read the recurrence rule"),
        ("FREQ=DAILY;COUNT=400", "more than 366 sessions"),
        ("FREQ=DAILY;COUNT=4294967295", "more than 366 sessions"),
        ("FREQ=DAILY;UNTIL=20300101T000000Z", "more than 366 sessions"),
        ("FREQ=YEARLY;INTERVAL=400;COUNT=30", "after the booking horizon"),
        ("FREQ=YEARLY;BYWEEKNO=53;BYDAY=TH;COUNT=366", "after the booking horizon"),
        ("FREQ=MONTHLY;COUNT=30", "after the booking horizon"),
        ("FREQ=WEEKLY;UNTIL=20260101T000000Z", "UNTIL"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;COUNT=3", "no session at all"),
        ("FREQ=WEEKLY;COUNT=0", "recurrence rule"),
        ("FREQ=WEEKLY;INTERVAL=0;COUNT=3", "recurrence rule"),
        ("FREQ=WEEKLY;BYDAY=XX;COUNT=3", "cannot read the recurrence rule"),
        ("FREQ=WEEKLY;COUNT=3;COUNT=4", "recurrence rule"),
        ("FREQ=WEEKLY;UNTIL=notadate", "cannot read the recurrence rule"),
        ("FREQ=WEEKLY;COUNT=3;UNTIL=20270101T000000Z", "recurrence rule"),
    ] {
        add("create_booking", with(&c, "recurrence", json!(rule)), refused(message));
    }

    // Months, read strictly.
    for month in [
        "2026-+9", "2026-9", "2026-009", "+2026-09", " 2026-09", "2026-09 ", "2026-00", "2026-13", "26-09", "2026/09", "2026-0x",
        "2026-09-01", "2026--9", "", "1999-12", "2200-01", "９９９９-01", "2026-1e",
    ] {
        add("reflow_month", with(&r, "month", json!(month)), refused("month"));
    }
    add("reflow_month", with(&r, "offline_rooms", json!([])), refused("offline_rooms: name at least one room"));
    add("reflow_month", json!({"month": "2026-10", "offline_rooms": ["studio-b"]}), refused("studio-b has no offline window in 2026-10"));
    add("reflow_month", with(&r, "require_approval", json!(true)), refused("require_approval needs a client that declares"));

    // Other values of the right type that are still wrong.
    for cursor in ["page-2", "c1.", "c1.zz.1", "c2.1.1", "c1.1", "c1.ffffffffffffffffff.1"] {
        add("query_bookings", with(&q, "cursor", json!(cursor)), refused("cursor: not a cursor this server gave"));
    }

    // JSON-RPC errors: a tool that does not exist.
    for name in ["nope", "", "LIST_ROOMS", "list_rooms ", "tools/list", "greet"] {
        add(name, json!({}), Expect::Rpc(-32602));
    }
    cases
}

/// A rough name for what a case tests, read from the answer it expects; only for the figures.
fn kind(expect: &Expect) -> &'static str {
    let Expect::Refused(text) = expect else { return "JSON-RPC -32602 (unknown tool)" };
    let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    if has(&["invalid type", "invalid value", "unknown variant", "missing field", "unknown field"]) {
        "isError: argument does not fit the schema"
    } else if has(&["unknown room", "unknown client", "unknown engineer", "unknown booking", "unknown series", "unknown reflow"]) {
        "isError: unknown id"
    } else if has(&["cannot read", "outside the years", "does not exist", "happens twice"]) || text.ends_with(": ") {
        "isError: unreadable or out-of-range time"
    } else if has(&["studio's clock", "booking horizon"]) {
        "isError: outside the booking window"
    } else if has(&["recurrence rule", "sessions", "UNTIL"]) {
        "isError: recurrence rule"
    } else if text == "month" || has(&["offline window in", "offline_rooms"]) {
        "isError: month or reflow request"
    } else {
        "isError: value out of range or inconsistent"
    }
}

/// Every row of every table, as text, in a fixed order: what "the database did not change" means.
fn dump(path: &std::path::Path) -> BTreeMap<String, Vec<String>> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = BTreeMap::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows: Vec<String> = stmt
            .query_map([], |row| {
                let values: Vec<String> = (0..columns).map(|i| format!("{:?}", row.get_ref(i).unwrap())).collect();
                Ok(values.join("|"))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort();
        out.insert(table, rows);
    }
    out
}

#[test]
fn issue_8_bad_inputs_get_the_answer_their_kind_needs_and_change_nothing() {
    let db = temp_db();
    let mut s = stdio(&db.path, &["--demo"]);
    s.ok("list_rooms", json!({}));
    let before = dump(&db.path);
    assert!(before["bookings"].len() > 1000, "the demo is loaded");

    let cases = cases();
    let mut per_tool: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in &cases {
        let response = s.request("tools/call", json!({"name": case.tool, "arguments": case.args}));
        let counts = per_tool.entry(case.tool.clone()).or_default();
        let outcome = match &case.expect {
            Expect::Refused(text) => {
                counts.0 += 1;
                let result = &response["result"];
                let message = result["content"][0]["text"].as_str().unwrap_or_default();
                (result["isError"] == json!(true) && message.contains(text.as_str()))
                    .then_some(())
                    .ok_or_else(|| format!("{} {}: expected isError with {text:?}, got {response}", case.tool, case.args))
            }
            Expect::Rpc(code) => {
                counts.1 += 1;
                (response["error"]["code"] == json!(code))
                    .then_some(())
                    .ok_or_else(|| format!("{:?} {}: expected JSON-RPC error {code}, got {response}", case.tool, case.args))
            }
        };
        if let Err(e) = outcome {
            failures.push(e);
        }
    }
    // The figures, for the record (`cargo test --test it bad_inputs -- --nocapture`).
    eprintln!("bad-input table: {} cases", cases.len());
    for (tool, (refused, rpc)) in &per_tool {
        eprintln!("  {:<24} {refused:>4} isError  {rpc:>2} JSON-RPC error", format!("{tool:?}"));
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for case in &cases {
        *kinds.entry(kind(&case.expect)).or_default() += 1;
    }
    for (kind, n) in &kinds {
        eprintln!("  {kind:<40} {n:>4}");
    }
    assert!(failures.is_empty(), "{} of {} cases got the wrong answer:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert!(cases.len() >= 300, "{}", cases.len());
    for tool in ["list_rooms", "query_bookings", "get_booking", "find_free_slots", "create_booking", "cancel_booking", "move_booking", "set_room_offline", "list_offline_windows", "reflow_month", "get_reflow"] {
        assert!(per_tool.get(tool).is_some_and(|c| c.0 >= 4), "{tool} is covered: {per_tool:?}");
    }

    // The server still works, and nothing any refused request did reached the database.
    s.ok("list_rooms", json!({}));
    assert_eq!(dump(&db.path), before, "a refused request changed the database");
}
