//! A table of bad inputs over every tool and every argument, run against one real server on each
//! backend: each case says the kind of answer it must get (a JSON-RPC error code, or `isError`
//! with a message that names the argument and what is wrong with it), and no refused request may
//! change the database: the row counts of every table are compared after each case, and a full
//! dump of every table before and after the whole table. The same input gets the same answer on
//! SQLite and PostgreSQL (a NUL included: PostgreSQL cannot store one, and never gets one).
//!
//! Most cases are generated from each tool's arguments, by the kind of each (an id, a name, a
//! line, notes, an e-mail address, a time, a list, a number, a flag, a choice); the hand-written
//! ones after them are the values of the right shape that are still wrong.

use crate::mcp_client::{stdio, Mcp};
use crate::support::on_both;
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
    /// What the case tests, for the figures.
    kind: &'static str,
}

/// What an argument holds, which decides the bad values it is tried with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Arg {
    /// An id, a cursor or a key: one word, 1 to 200 characters.
    Id,
    /// A name: one line, 1 to 200 characters.
    Name,
    /// A line of free text, up to 200 characters (empty allowed).
    Line,
    /// Notes: line breaks allowed, up to 2,000 characters.
    Notes,
    /// An e-mail address.
    Email,
    /// A time: a line that must read as a time.
    Time,
    /// A month, YYYY-MM, read strictly.
    Month,
    /// A list of tags (features, skills, needs).
    Tags,
    /// A list of ids.
    Ids,
    /// A list of lines (opening hours).
    Lines,
    /// An unsigned 32-bit number.
    U32,
    /// A signed number.
    I64,
    /// A flag that may be left out (null is "left out").
    Flag,
    /// A flag that, given, must be a flag (null is refused).
    StrictFlag,
    /// One of a few words.
    Choice,
}

/// Every tool: a request (valid, or refused for a reason of its own that no case relies on), and
/// its arguments with their kinds and whether they are required.
fn tools() -> Vec<(&'static str, Value, Vec<(&'static str, Arg, bool)>)> {
    use Arg::*;
    vec![
        ("list_rooms", json!({}), vec![]),
        (
            "query_bookings",
            json!({}),
            vec![("from", Time, false), ("to", Time, false), ("room", Id, false), ("client", Id, false), ("engineer", Id, false), ("series", Id, false), ("status", Choice, false), ("limit", U32, false), ("cursor", Id, false)],
        ),
        ("get_booking", json!({"id": "bk_00001"}), vec![("id", Id, true)]),
        (
            "find_free_slots",
            json!({"from": "2026-10-06T09:00", "to": "2026-10-06T23:00", "duration_minutes": 60}),
            vec![("from", Time, true), ("to", Time, true), ("duration_minutes", U32, true), ("party_size", U32, false), ("requires", Tags, false), ("room", Id, false), ("client", Id, false), ("engineer", Id, false), ("limit", U32, false)],
        ),
        (
            "create_booking",
            json!({"room": "studio-c", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"}),
            vec![
                ("room", Id, true),
                ("client", Id, true),
                ("start", Time, true),
                ("end", Time, true),
                ("engineer", Id, false),
                ("party_size", U32, false),
                ("requires", Tags, false),
                ("engineer_skills", Tags, false),
                ("recurrence", Line, false),
                ("status", Choice, false),
                ("hold_until", Time, false),
                ("notes", Notes, false),
                ("idempotency_key", Id, false),
            ],
        ),
        // cancel_booking, move_booking, get_reflow, apply_reflow, undo_reflow and
        // remove_offline_window have no valid request that changes nothing: their requests are
        // refused themselves (an unknown booking, reflow or window, a start before the clock); each
        // case changes another argument and expects that one's message.
        ("cancel_booking", json!({"id": "bk_99999"}), vec![("id", Id, true), ("scope", Choice, false)]),
        ("move_booking", json!({"id": "bk_00001", "start": "2026-08-01T10:00"}), vec![("id", Id, true), ("room", Id, false), ("start", Time, true)]),
        (
            "set_room_offline",
            json!({"room": "studio-a", "from": "2026-10-06T00:00", "to": "2026-10-07T00:00", "reason": "x"}),
            vec![("room", Id, true), ("from", Time, true), ("to", Time, true), ("reason", Line, true)],
        ),
        ("list_offline_windows", json!({}), vec![("room", Id, false), ("from", Time, false), ("to", Time, false)]),
        (
            "reflow_month",
            json!({"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true}),
            vec![("month", Month, true), ("offline_rooms", Ids, false), ("max_shift_minutes", I64, false), ("dry_run", StrictFlag, false), ("require_approval", StrictFlag, false)],
        ),
        ("get_reflow", json!({"reflow_id": "rf_9999"}), vec![("reflow_id", Id, true)]),
        (
            "update_booking",
            json!({"id": "bk_01000", "notes": "x"}),
            vec![
                ("id", Id, true),
                ("engineer", Id, false),
                ("party_size", U32, false),
                ("requires", Tags, false),
                ("engineer_skills", Tags, false),
                ("notes", Notes, false),
                ("status", Choice, false),
                ("pinned", Flag, false),
                ("hold_until", Time, false),
                ("scope", Choice, false),
            ],
        ),
        ("apply_reflow", json!({"reflow_id": "rf_9999"}), vec![("reflow_id", Id, true)]),
        ("undo_reflow", json!({"reflow_id": "rf_9999"}), vec![("reflow_id", Id, true)]),
        ("list_clients", json!({}), vec![("query", Line, false), ("active", Flag, false), ("limit", U32, false), ("cursor", Id, false)]),
        ("create_client", json!({"name": "Ana Lopez"}), vec![("name", Name, true), ("email", Email, false), ("phone", Line, false), ("notes", Notes, false), ("id", Id, false)]),
        (
            "update_client",
            json!({"id": "client-001", "name": "X"}),
            vec![("id", Id, true), ("name", Name, false), ("email", Email, false), ("phone", Line, false), ("notes", Notes, false), ("active", Flag, false)],
        ),
        ("list_engineers", json!({}), vec![("query", Line, false), ("active", Flag, false), ("limit", U32, false), ("cursor", Id, false)]),
        (
            "create_engineer",
            json!({"name": "Bo"}),
            vec![("name", Name, true), ("email", Email, false), ("phone", Line, false), ("notes", Notes, false), ("skills", Tags, false), ("working_hours", Lines, false), ("id", Id, false)],
        ),
        (
            "update_engineer",
            json!({"id": "eng-01", "name": "X"}),
            vec![("id", Id, true), ("name", Name, false), ("email", Email, false), ("phone", Line, false), ("notes", Notes, false), ("skills", Tags, false), ("working_hours", Lines, false), ("active", Flag, false)],
        ),
        (
            "create_room",
            json!({"id": "booth-9", "name": "Booth", "capacity": 2, "opening_hours": ["mon 10:00-12:00"]}),
            vec![
                ("id", Id, true),
                ("name", Name, true),
                ("capacity", U32, true),
                ("features", Tags, false),
                ("opening_hours", Lines, true),
                ("buffer_minutes", I64, false),
                ("min_minutes", I64, false),
                ("max_minutes", I64, false),
                ("lead_minutes", I64, false),
                ("max_advance_days", I64, false),
                ("start_step_minutes", I64, false),
            ],
        ),
        (
            "update_room",
            json!({"id": "studio-c", "name": "C"}),
            vec![
                ("id", Id, true),
                ("name", Name, false),
                ("capacity", U32, false),
                ("features", Tags, false),
                ("opening_hours", Lines, false),
                ("buffer_minutes", I64, false),
                ("min_minutes", I64, false),
                ("max_minutes", I64, false),
                ("lead_minutes", I64, false),
                ("max_advance_days", I64, false),
                ("start_step_minutes", I64, false),
                ("active", Flag, false),
                ("force", StrictFlag, false),
            ],
        ),
        ("remove_offline_window", json!({"id": 99999}), vec![("id", I64, true)]),
        ("list_changes", json!({}), vec![("since", Id, false), ("entity", Choice, false), ("id", Id, false), ("limit", U32, false)]),
        // Issue 24. create_webhook's request is refused itself (a private address, without
        // --webhooks-to-private), and delete_webhook's names no endpoint.
        ("create_webhook", json!({"url": "https://10.0.0.7/hook"}), vec![("url", Id, true), ("events", Ids, false)]),
        ("list_webhooks", json!({}), vec![]),
        ("delete_webhook", json!({"id": "wh_nothere"}), vec![("id", Id, true)]),
        ("list_notifications", json!({}), vec![("since", Id, false), ("status", Choice, false), ("limit", U32, false)]),
        (
            "add_time_off",
            json!({"engineer": "eng-01", "from": "2026-10-06T00:00", "to": "2026-10-07T00:00", "reason": "holiday"}),
            vec![("engineer", Id, true), ("from", Time, true), ("to", Time, true), ("reason", Line, false)],
        ),
        ("list_time_off", json!({}), vec![("engineer", Id, false), ("from", Time, false), ("to", Time, false)]),
        ("remove_time_off", json!({"id": 99999}), vec![("id", I64, true)]),
        ("get_studio", json!({}), vec![]),
        (
            "update_studio",
            json!({"deposit_percent": 50}),
            vec![("currency", Line, false), ("deposit_percent", I64, false), ("waitlist_hold_hours", I64, false), ("notify_email", Email, false)],
        ),
        (
            "quote",
            json!({"room": "studio-a", "start": "2026-10-06T10:00", "end": "2026-10-06T13:00"}),
            vec![("room", Id, true), ("start", Time, true), ("end", Time, true), ("engineer", Id, false)],
        ),
        // Issue 25: payments and the waitlist. record_payment's request names no booking;
        // join_waitlist's is valid (each case breaks one argument of it).
        ("record_payment", json!({"booking": "bk_99999", "amount": 100}), vec![("booking", Id, true), ("amount", I64, true), ("reference", Line, false)]),
        (
            "join_waitlist",
            json!({"client": "client-001", "from": "2026-10-06T09:00", "to": "2026-10-06T18:00", "duration_minutes": 60}),
            vec![
                ("client", Id, true),
                ("from", Time, true),
                ("to", Time, true),
                ("duration_minutes", I64, true),
                ("room", Id, false),
                ("requires", Tags, false),
                ("engineer", Id, false),
            ],
        ),
        ("list_waitlist", json!({}), vec![("client", Id, false)]),
        ("leave_waitlist", json!({"id": 99999}), vec![("id", I64, true)]),
        ("studio_report", json!({"month": "2026-09"}), vec![("month", Month, true)]),
    ]
}

/// Text that breaks the rule of every kind of text, with the words of the refusal. Line breaks
/// are allowed in notes, and a lone CR is not.
fn broken_texts(arg: Arg) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![
        ("a\u{0}b".into(), "holds a control character (U+0000".into()),
        ("a\u{1b}[31mred\u{1b}[0m".into(), "holds a control character (U+001B".into()),
        ("a\u{7}b".into(), "holds a control character (U+0007".into()),
        ("a\tb".into(), "holds a control character (U+0009".into()),
        ("a\rb".into(), "holds a line break (U+000D".into()),
        ("a\u{7f}b".into(), "holds a control character (U+007F".into()),
        ("a\u{85}b".into(), "holds a control character (U+0085".into()),
        ("a\u{9b}31m".into(), "holds a control character (U+009B".into()),
        ("abc\u{202e}fed".into(), "holds a bidirectional formatting character (U+202E".into()),
        ("a\u{2066}b".into(), "holds a bidirectional formatting character (U+2066".into()),
        ("a\u{2028}b".into(), "holds a line break (U+2028".into()),
    ];
    if arg != Arg::Notes {
        out.push(("Evil\r\nBEGIN:VEVENT".into(), "holds a line break (U+000D".into()));
        out.push(("a\nb".into(), "holds a line break (U+000A".into()));
    }
    let max = match arg {
        Arg::Notes => 2000,
        Arg::Email => 254,
        _ => 200,
    };
    out.push(("x".repeat(max + 1), format!("is {} characters long", max + 1)));
    out.push(("é".repeat(10_000), "is 10000 characters long".into()));
    if matches!(arg, Arg::Id | Arg::Name) {
        out.push((String::new(), "is empty".into()));
        out.push(("   ".into(), "is empty".into()));
    }
    if matches!(arg, Arg::Id | Arg::Email) {
        out.push(("a b".into(), "holds a space (U+0020".into()));
    }
    if arg == Arg::Name {
        out.push(("n".repeat(1 << 20), "is 1048576 characters long".into()));
    }
    // A month is read strictly, before any rule of text: its refusal names the month.
    if arg == Arg::Month {
        for (_, why) in &mut out {
            *why = "month".into();
        }
    }
    out
}

/// The whole table: generated cases first, then the hand-written ones.
fn cases() -> Vec<Case> {
    let tools = tools();
    let base = |tool: &str| tools.iter().find(|(t, _, _)| *t == tool).unwrap().1.clone();
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
    let mut cases = Vec::new();
    let mut add = |tool: &str, args: Value, expect: Expect, kind: &'static str| cases.push(Case { tool: tool.to_owned(), args, expect, kind });
    let refused = |text: &str| Expect::Refused(text.to_owned());

    for (tool, request, args) in &tools {
        // Unknown arguments, on every tool.
        for field in ["bogus", "Room", "_meta", "arguments"] {
            add(tool, with(request, field, json!("x")), refused(&format!("unknown field `{field}`")), "argument unknown");
        }
        for &(field, arg, required) in args {
            let wrong_type = |values: Vec<Value>, cases: &mut Vec<(Value, String)>| {
                for v in values {
                    cases.push((v, format!("{field}: invalid type")));
                }
            };
            let mut typed: Vec<(Value, String)> = Vec::new();
            match arg {
                Arg::Id | Arg::Name | Arg::Line | Arg::Notes | Arg::Email | Arg::Time | Arg::Month => {
                    wrong_type(vec![json!(17), json!(true), json!([]), json!({}), json!(1.5)], &mut typed);
                }
                Arg::Tags | Arg::Ids | Arg::Lines => {
                    wrong_type(vec![json!("drums"), json!(3), json!({}), json!(true)], &mut typed);
                    for v in [json!([1]), json!([null]), json!([["a"]])] {
                        typed.push((v, format!("{field}[0]: invalid type")));
                    }
                }
                Arg::U32 | Arg::I64 => {
                    wrong_type(vec![json!("3"), json!(true), json!([1]), json!(2.5)], &mut typed);
                    if arg == Arg::U32 {
                        typed.push((json!(-1), format!("{field}: invalid value")));
                        typed.push((json!(4_294_967_296u64), format!("{field}: invalid value")));
                    }
                }
                Arg::Flag | Arg::StrictFlag => {
                    wrong_type(vec![json!("yes"), json!(1), json!([]), json!({})], &mut typed);
                    if arg == Arg::StrictFlag {
                        typed.push((Value::Null, format!("{field}: invalid type: null")));
                    }
                }
                Arg::Choice => {
                    for v in ["done", "", "CONFIRMED", " occurrence", "all"] {
                        typed.push((json!(v), format!("{field}: unknown variant")));
                    }
                    typed.push((json!(1), format!("{field}: invalid type")));
                }
            }
            for (value, why) in typed {
                add(tool, with(request, field, value), Expect::Refused(why), "argument of the wrong JSON type");
            }
            if required {
                add(tool, with(request, field, Value::Null), refused(&format!("{field}: invalid type: null")), "argument of the wrong JSON type");
                add(tool, without(request, field), refused(&format!("missing field `{field}`")), "argument missing");
            }
            // The rule of text, for every text and every item of a list of texts.
            let (texts, item) = match arg {
                Arg::Id | Arg::Name | Arg::Line | Arg::Notes | Arg::Email | Arg::Time | Arg::Month => (broken_texts(arg), false),
                Arg::Tags | Arg::Ids | Arg::Lines => (broken_texts(Arg::Line), true),
                _ => (Vec::new(), false),
            };
            for (text, why) in texts {
                let (value, path) = if item { (json!(["ok", text]), format!("{field}[1]")) } else { (json!(text), field.to_owned()) };
                // Tags are shorter: the 201-character item already breaks their 64.
                let why = if item && arg == Arg::Tags && why.starts_with("is 201") { "is 201 characters long: a tag is at most 64".into() } else { why };
                let expect = if arg == Arg::Month { why } else { format!("{path}: {why}") };
                add(tool, with(request, field, value), Expect::Refused(expect), "text against its rule");
            }
            if item {
                let max = field;
                add(tool, with(request, field, json!(vec!["x"; 51])), refused(&format!("{max}: holds 51 items: give at most 50")), "list too long");
                add(tool, with(request, field, json!(vec!["x"; 10_000])), refused(&format!("{max}: holds 10000 items: give at most 50")), "list too long");
                if arg == Arg::Tags {
                    add(tool, with(request, field, json!(["t".repeat(65)])), refused(&format!("{field}[0]: is 65 characters long: a tag is at most 64")), "text against its rule");
                    add(tool, with(request, field, json!([" "])), refused(&format!("{field}[0]: is empty")), "text against its rule");
                }
            }
        }
    }

    // Times: unreadable, out of the years read, skipped or repeated by the clock.
    let times: Vec<(&str, &str)> = tools
        .iter()
        .flat_map(|(tool, _, args)| args.iter().filter(|(_, arg, _)| *arg == Arg::Time).map(move |(field, _, _)| (*tool, *field)))
        .collect();
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
    for &(tool, field) in &times {
        for (text, why) in bad_times {
            // hold_until's "" clears a hold: it is no bad time.
            if field == "hold_until" && text.is_empty() {
                continue;
            }
            // The field is named first; what is wrong with it, when that is certain, after the time.
            let expect = if why == "cannot read" { format!("{field}: cannot read") } else { format!("{field}: ") };
            add(tool, with(&base(tool), field, json!(text)), Expect::Refused(expect), "time unreadable or out of range");
            if !why.is_empty() && why != "cannot read" {
                add(tool, with(&base(tool), field, json!(text)), refused(why), "time unreadable or out of range");
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
        ("apply_reflow", "reflow_id", "unknown reflow"),
        ("undo_reflow", "reflow_id", "unknown reflow"),
        ("update_booking", "id", "unknown booking"),
        ("update_booking", "engineer", "unknown engineer"),
        ("update_client", "id", "unknown client"),
        ("update_engineer", "id", "unknown engineer"),
        ("update_room", "id", "unknown room"),
        ("add_time_off", "engineer", "unknown engineer"),
        ("quote", "room", "unknown room"),
        ("quote", "engineer", "unknown engineer"),
        ("list_time_off", "engineer", "unknown engineer"),
        ("record_payment", "booking", "unknown booking"),
        ("join_waitlist", "client", "unknown client"),
        ("join_waitlist", "room", "unknown room"),
        ("join_waitlist", "engineer", "unknown engineer"),
        ("list_waitlist", "client", "unknown client"),
    ];
    for &(tool, field, message) in ids {
        for unknown in ["nobody-999", "bk_00000", "STUDIO-A", "rf_0001;DROP-TABLE"] {
            add(tool, with(&base(tool), field, json!(unknown)), refused(message), "unknown id");
        }
    }
    add("move_booking", json!({"id": "bk_00001", "room": "attic", "start": "2026-10-06T10:00"}), refused("unknown room"), "unknown id");
    add("reflow_month", with(&base("reflow_month"), "offline_rooms", json!(["studio-b", "attic"])), refused("unknown room"), "unknown id");
    for window in [0, -1, i64::MAX, i64::MIN] {
        add("remove_offline_window", json!({"id": window}), refused("unknown offline window"), "unknown id");
    }
    for id in [0, -1, i64::MAX, i64::MIN] {
        add("remove_time_off", json!({"id": id}), refused("unknown time off"), "unknown id");
    }
    add("list_changes", json!({"entity": "booking", "id": "bk_99999"}), refused("unknown booking \"bk_99999\""), "unknown id");
    add("list_changes", json!({"entity": "room", "id": "attic"}), refused("unknown room \"attic\""), "unknown id");

    // Issue 24: webhook URLs and event types of the right shape that are still wrong.
    for (url, message) in [
        ("ftp://hooks.example.com/x", "must use https, not ftp"),
        ("http://93.184.215.14/hook", "must use https"),
        ("https://user:pw@93.184.215.14/hook", "user name or password"),
        ("hooks.example.com/x", "not an absolute URL"),
        ("https://93.184.215.14/hook#frag", "#fragment"),
        ("https://192.168.1.20/hook", "--webhooks-to-private"),
        ("https://[fe80::1]/hook", "--webhooks-to-private"),
        ("https://localhost:8080/hook", "--webhooks-to-private"),
    ] {
        add("create_webhook", json!({"url": url}), refused(message), "webhook URL");
    }
    for events in [json!(["booking.exploded"]), json!(["booking.created", "BOOKING.MOVED"]), json!(["*"])] {
        add("create_webhook", json!({"url": "https://93.184.215.14/hook", "events": events}), refused("is not an event type"), "webhook event type");
    }
    add("delete_webhook", json!({"id": "wh_nothere"}), refused("no webhook endpoint \"wh_nothere\""), "unknown id");
    add("list_webhooks", json!({"limit": 3}), refused("unknown field `limit`"), "argument unknown");
    add("get_studio", json!({"name": "x"}), refused("unknown field `name`"), "argument unknown");
    add("update_studio", json!({}), refused("give at least one field to change: currency, deposit_percent, waitlist_hold_hours or notify_email"), "argument missing");
    add("update_studio", json!({"timezone": "Europe/Paris"}), refused("unknown field `timezone`"), "argument unknown");
    for since in ["e1.5", "n1.zz", "n1.-3"] {
        add("list_notifications", json!({"since": since}), refused("since: not a cursor this server gave"), "cursor");
    }

    // Tools without arguments take none.
    for extra in [json!({"room": "studio-a"}), json!({"limit": 3}), json!({"x": null}), json!({"": 1}), json!({"cursor": "c1.0.0"})] {
        let field = extra.as_object().unwrap().keys().next().unwrap().clone();
        add("list_rooms", extra, refused(&format!("unknown field `{field}`")), "argument unknown");
    }

    // Numbers out of range.
    let q = base("query_bookings");
    add("query_bookings", with(&q, "limit", json!(0)), refused("limit must be 1 to 500"), "number out of range");
    add("query_bookings", with(&q, "limit", json!(501)), refused("limit must be 1 to 500"), "number out of range");
    let f = base("find_free_slots");
    for (field, value, message) in [
        ("duration_minutes", 0u64, "duration_minutes must be 15 to 1440"),
        ("duration_minutes", 14, "duration_minutes must be 15 to 1440"),
        ("duration_minutes", 1441, "duration_minutes must be 15 to 1440"),
        ("party_size", 0, "party_size must be 1 to 1000"),
        ("party_size", 1001, "party_size must be 1 to 1000"),
        ("party_size", 4_294_967_295, "party_size must be 1 to 1000"),
        ("limit", 0, "limit must be 1 to 200"),
        ("limit", 201, "limit must be 1 to 200"),
    ] {
        add("find_free_slots", with(&f, field, json!(value)), refused(message), "number out of range");
    }
    let c = base("create_booking");
    for party in [0u64, 1001, 4_294_967_295] {
        add("create_booking", with(&c, "party_size", json!(party)), refused("party_size must be 1 to 1000"), "number out of range");
    }
    add("create_booking", with(&c, "party_size", json!(5)), refused("holds 4 people"), "value inconsistent with the studio");
    // Issue 26: a session's engineer must have the skills it asks for (only eng-02 does live sound).
    let c_eng = with(&c, "engineer", json!("eng-01"));
    add("create_booking", with(&c_eng, "engineer_skills", json!(["live-sound"])), refused("engineer eng-01 lacks the skills live-sound"), "value inconsistent with the studio");
    add("create_booking", with(&c_eng, "engineer_skills", json!(["mixing", "stage-diving"])), refused("engineer eng-01 lacks the skills stage-diving"), "value inconsistent with the studio");
    let r = base("reflow_month");
    for shift in [-1, 721, 100_000, i64::MIN] {
        add("reflow_month", with(&r, "max_shift_minutes", json!(shift)), refused("0 to 720"), "number out of range");
    }
    for (tool, request) in [("create_room", base("create_room")), ("update_room", base("update_room"))] {
        for capacity in [0u64, 1001, 4_294_967_295] {
            add(tool, with(&request, "capacity", json!(capacity)), refused("capacity must be 1 to 1000"), "number out of range");
        }
        for buffer in [-1, 241, i64::MAX, i64::MIN] {
            add(tool, with(&request, "buffer_minutes", json!(buffer)), refused("buffer_minutes must be 0 to 240"), "number out of range");
        }
    }
    let u = base("update_booking");
    for party in [0u64, 1001, 4_294_967_295] {
        add("update_booking", with(&u, "party_size", json!(party)), refused("party_size must be 1 to 1000"), "number out of range");
    }
    for (tool, limit, message) in [
        ("list_clients", 0, "limit must be 1 to 500"),
        ("list_clients", 501, "limit must be 1 to 500"),
        ("list_engineers", 0, "limit must be 1 to 500"),
        ("list_engineers", 501, "limit must be 1 to 500"),
        ("list_changes", 0, "limit must be 1 to 1000"),
        ("list_changes", 1001, "limit must be 1 to 1000"),
        ("list_notifications", 0, "limit must be 1 to 1000"),
        ("list_notifications", 1001, "limit must be 1 to 1000"),
    ] {
        add(tool, with(&base(tool), "limit", json!(limit)), refused(message), "number out of range");
    }

    // Spans and the booking window.
    add("query_bookings", json!({"from": "2026-10-07T00:00", "to": "2026-10-06T00:00"}), refused("to must be after from"), "span or booking window");
    add("query_bookings", json!({"from": "2026-10-07T00:00", "to": "2026-10-07T00:00"}), refused("to must be after from"), "span or booking window");
    add("find_free_slots", with(&f, "to", json!("2026-10-06T09:00")), refused("to must be after from"), "span or booking window");
    add("find_free_slots", with(&f, "to", json!("2026-11-06T09:15")), refused("at most 31 days"), "span or booking window");
    add("list_offline_windows", json!({"from": "2026-10-07T00:00", "to": "2026-10-06T00:00"}), refused("to must be after from"), "span or booking window");
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
        add("create_booking", with(&with(&c, "start", json!(start)), "end", json!(end)), refused(message), "span or booking window");
    }
    add("move_booking", json!({"id": "bk_00001", "start": "2026-08-01T10:00"}), refused("before the studio's clock"), "span or booking window");
    add("move_booking", json!({"id": "bk_00001", "start": "2030-01-01T10:00"}), refused("beyond the booking horizon"), "span or booking window");
    let o = base("set_room_offline");
    for (from, to, message) in [
        ("2026-10-07T00:00", "2026-10-06T00:00", "must end after it starts"),
        ("2026-10-06T00:00", "2026-10-06T00:00", "must end after it starts"),
        ("2026-10-06T00:00", "2027-10-08T00:00", "at most a year"),
        ("2026-08-01T00:00", "2026-08-02T00:00", "not after the studio's clock"),
        ("2028-08-20T00:00", "2028-09-02T00:00", "beyond the booking horizon"),
    ] {
        add("set_room_offline", with(&with(&o, "from", json!(from)), "to", json!(to)), refused(message), "span or booking window");
    }

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
        add("create_booking", with(&c, "recurrence", json!(rule)), refused(message), "recurrence rule");
    }

    // Months, read strictly.
    for month in [
        "2026-+9", "2026-9", "2026-009", "+2026-09", " 2026-09", "2026-09 ", "2026-00", "2026-13", "26-09", "2026/09", "2026-0x",
        "2026-09-01", "2026--9", "", "1999-12", "2200-01", "９９９９-01", "2026-1e",
    ] {
        add("reflow_month", with(&r, "month", json!(month)), refused("month"), "month or reflow request");
    }
    add("reflow_month", with(&r, "offline_rooms", json!([])), refused("offline_rooms: name at least one room"), "month or reflow request");
    // Issue 26: with no room named, a month where no session is displaced and every engineer can
    // work their sessions says there is nothing to reflow.
    add("reflow_month", json!({"month": "2026-09", "dry_run": true}), refused("nothing else in 2026-09 needs a reflow"), "month or reflow request");
    add("reflow_month", json!({"month": "2026-10", "offline_rooms": ["studio-b"]}), refused("studio-b has no offline window in 2026-10"), "month or reflow request");
    // An approval without the Tasks extension is an input-required round trip (approval_rounds.rs);
    // its request is checked before anything is solved.
    add("reflow_month", with(&with(&r, "require_approval", json!(true)), "month", json!("2026-13")), refused("month"), "month or reflow request");
    add("reflow_month", with(&with(&r, "require_approval", json!(true)), "offline_rooms", json!([])), refused("offline_rooms: name at least one room"), "month or reflow request");

    // Cursors that this server never gave.
    for cursor in ["page-2", "c1.", "c1.zz.1", "c2.1.1", "c1.1", "c1.ffffffffffffffffff.1"] {
        add("query_bookings", with(&q, "cursor", json!(cursor)), refused("cursor: not a cursor this server gave"), "cursor this server never gave");
    }
    for tool in ["list_clients", "list_engineers"] {
        for cursor in ["page-2", "p1.zz", "x"] {
            add(tool, with(&base(tool), "cursor", json!(cursor)), refused("pass next_cursor unchanged"), "cursor this server never gave");
        }
    }
    for since in ["yesterday", "c1.", "-1"] {
        add("list_changes", json!({"since": since}), refused("since: not a cursor this server gave"), "cursor this server never gave");
    }

    // The management tools' values of the right shape that are still wrong.
    let management: Vec<(&str, Value, &str)> = vec![
        ("create_client", json!({"name": "!!!"}), "id: the name \"!!!\" has no letter a-z or digit to make an id from"),
        ("create_client", json!({"name": "李雷"}), "give the client an id"),
        ("create_client", json!({"name": "Ana", "email": "ana-at-example"}), "does not look like an e-mail address"),
        ("create_client", json!({"name": "Ana", "email": "a@localhost"}), "does not look like an e-mail address"),
        ("create_client", json!({"name": "Ana", "id": "client-001"}), "already exists"),
        ("create_client", json!({"name": "Ana", "id": "Ana_Lopez"}), "use 1 to 64 of a-z"),
        ("create_client", json!({"name": "Ana", "id": "-ana"}), "use 1 to 64 of a-z"),
        ("create_engineer", json!({"name": "Bo", "id": "eng-01"}), "already exists"),
        ("create_engineer", json!({"name": "???"}), "give the engineer an id"),
        ("update_client", json!({"id": "client-001"}), "give at least one field to change: name, email"),
        ("update_engineer", json!({"id": "eng-01"}), "give at least one field to change: name, email, phone, notes, skills"),
        ("update_room", json!({"id": "studio-c"}), "give at least one field to change: name, capacity"),
        ("update_room", json!({"id": "studio-c", "force": true}), "give at least one field to change"),
        ("update_client", json!({"id": "client-001", "skills": ["x"]}), "unknown field `skills`"),
        // The notify flag (issue 24's e-mail) is a boolean, nothing else.
        ("create_client", json!({"name": "Ana", "notify": "yes"}), "notify: invalid type: string \"yes\", expected a boolean"),
        ("create_engineer", json!({"name": "Bo", "notify": 1}), "notify: invalid type: integer `1`, expected a boolean"),
        ("update_client", json!({"id": "client-001", "notify": "off"}), "notify: invalid type"),
        ("update_engineer", json!({"id": "eng-01", "notify": null}), "give at least one field to change: name, email, phone, notes, skills, working_hours, hourly_rate, notify"),
        ("update_client", json!({"id": "nobody", "notify": false}), "unknown client"),
        ("update_engineer", json!({"id": "eng-01", "email": "bo@@example.com"}), "does not look like an e-mail address"),
        ("create_room", json!({"id": "studio-a", "name": "A", "capacity": 2, "opening_hours": ["mon 10:00-12:00"]}), "already exists"),
        ("create_room", json!({"id": "displaced-from-x", "name": "X", "capacity": 2, "opening_hours": ["mon 10:00-12:00"]}), "kept for displaced bookings"),
        ("create_room", json!({"id": "Booth 9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"]}), "id: holds a space"),
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": []}), "opening_hours: give at least one line"),
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "features": ["Bad Feature!"], "opening_hours": ["mon 10:00-12:00"]}), "is not a slug"),
        ("update_room", json!({"id": "studio-c", "capacity": 2}), "pass force: true"),
        ("update_room", json!({"id": "studio-c", "features": ["Bad Feature!"]}), "features:"),
        ("update_booking", json!({"id": "bk_01000"}), "give at least one field to change"),
        ("update_booking", json!({"id": "bk_01000", "engineer": " "}), "engineer: is empty"),
        ("update_booking", json!({"id": "bk_01000", "engineer": ""}), "engineer: is empty"),
        ("update_booking", json!({"id": "bk_01000", "status": "cancelled"}), "cancel a booking with cancel_booking"),
        ("update_booking", json!({"id": "bk_01000", "scope": "series", "notes": "x", "hold_until": "soon"}), "hold_until: cannot read"),
        ("apply_reflow", json!({"reflow_id": ""}), "reflow_id: is empty"),
        ("list_changes", json!({"id": " "}), "id: is empty"),
        // Issue 25: prices.
        ("get_studio", json!({"currency": "GBP"}), "unknown field `currency`"),
        ("update_studio", json!({"currency": "gbp"}), "currency \"gbp\": give an ISO 4217 code"),
        ("update_studio", json!({"currency": "EURO"}), "give an ISO 4217 code"),
        ("update_studio", json!({"deposit_percent": 101}), "deposit_percent must be 0 to 100"),
        ("update_studio", json!({"deposit_percent": -1}), "deposit_percent must be 0 to 100"),
        ("update_studio", json!({"waitlist_hold_hours": 0}), "waitlist_hold_hours must be 1 to 168"),
        ("quote", json!({"room": "studio-a", "start": "2026-10-06T10:00", "end": "2026-10-06T09:00"}), "end: a session must end after it starts"),
        ("quote", json!({"room": "studio-a", "start": "2026-10-06T10:00", "end": "2026-10-06T10:00"}), "end: a session must end after it starts"),
        ("quote", json!({"room": "studio-a", "start": "2026-10-06T10:00", "end": "2026-10-08T10:00"}), "end: a session lasts at most 24 hours"),
        ("quote", json!({"room": " ", "start": "2026-10-06T10:00", "end": "2026-10-06T11:00"}), "room: is empty"),
        ("update_room", json!({"id": "studio-c", "hourly_rate": -1}), "hourly_rate must be 0 to"),
        ("update_room", json!({"id": "studio-c", "hourly_rate": 100_000_001}), "hourly_rate must be 0 to"),
        ("update_room", json!({"id": "studio-c", "rates": [{"days": "caturday", "from": "10:00", "to": "12:00", "hourly_rate": 1}]}), "rates[0]: unknown day"),
        ("update_room", json!({"id": "studio-c", "rates": [{"days": "sat", "from": "12:00", "to": "10:00", "hourly_rate": 1}]}), "rates[0]: a rate from 12:00 to 10:00 must end after it starts"),
        ("update_room", json!({"id": "studio-c", "rates": [{"days": "sat", "from": "10:00", "to": "12:00", "hourly_rate": -5}]}), "rates[0]: hourly_rate must be 0 to"),
        ("update_room", json!({"id": "studio-c", "rates": [{"days": "sat", "from": "10:00", "to": "12:00", "hourly_rate": 1, "x": 1}]}), "unknown field `x`"),
        ("update_room", json!({"id": "studio-c", "rates": [{"days": "sat", "from": "10:00", "to": "12:00", "hourly_rate": 1}, {"days": "sat", "from": "11:00", "to": "13:00", "hourly_rate": 2}]}), "overlap"),
        ("update_engineer", json!({"id": "eng-01", "hourly_rate": -1}), "hourly_rate must be 0 to"),
        ("create_engineer", json!({"name": "Bo", "hourly_rate": 100_000_001}), "hourly_rate must be 0 to"),
        ("update_client", json!({"id": "client-001", "hourly_rate": 5}), "unknown field `hourly_rate`"),
        // Issue 25: a room's booking rules.
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"], "min_minutes": 0}), "min_minutes must be 1 to 1440"),
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"], "max_minutes": 1441}), "max_minutes must be 1 to 1440"),
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"], "min_minutes": 180, "max_minutes": 60}), "max_minutes (60) is below min_minutes (180)"),
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"], "lead_minutes": -5}), "lead_minutes must be 0 to"),
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"], "max_advance_days": 0}), "max_advance_days must be 1 to 3650"),
        ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"], "start_step_minutes": 7}), "start_step_minutes 7 does not divide a day"),
        ("update_room", json!({"id": "studio-c", "start_step_minutes": 0}), "start_step_minutes must be 1 to 1440"),
        ("update_room", json!({"id": "studio-c", "max_advance_days": 99999}), "max_advance_days must be 1 to 3650"),
        ("update_room", json!({"id": "studio-c", "lead_minutes": i64::MAX}), "lead_minutes must be 0 to"),
        // Issue 25: engineers' hours and time off.
        ("create_engineer", json!({"name": "Bo", "working_hours": []}), "working_hours: give at least one line"),
        ("update_engineer", json!({"id": "eng-01", "working_hours": []}), "working_hours: give at least one line"),
        ("update_engineer", json!({"id": "eng-01", "working_hours": ["mon 10:00-10:00"]}), "working_hours: the opening \"mon 10:00-10:00\" closes when it opens"),
        ("update_engineer", json!({"id": "eng-01", "working_hours": ["mon 10:00-18:00", "mon 17:00-20:00"]}), "working_hours: openings"),
        ("create_engineer", json!({"name": "Bo", "working_hours": ["weekdays 10:00-18:00"]}), "working_hours: unknown day"),
        ("add_time_off", json!({"engineer": "eng-01", "from": "2026-10-07T00:00", "to": "2026-10-06T00:00"}), "to: time off must end after it starts"),
        ("add_time_off", json!({"engineer": "eng-01", "from": "2026-10-06T00:00", "to": "2026-10-06T00:00"}), "to: time off must end after it starts"),
        ("add_time_off", json!({"engineer": "eng-01", "from": "2026-08-01T00:00", "to": "2026-08-02T00:00"}), "to: time off must end after the studio's clock"),
        ("add_time_off", json!({"engineer": "eng-01", "from": "2026-10-06T00:00", "to": "2029-10-06T00:00"}), "to: one entry of time off lasts at most 366 days"),
        ("add_time_off", json!({"engineer": "eng-01", "from": "2028-10-06T00:00", "to": "2028-10-07T00:00"}), "to: time off must end within the booking horizon"),
        ("add_time_off", json!({"engineer": "eng-01", "from": "2026-10-06T00:00", "to": "2026-10-07T00:00", "reason": "x".repeat(201)}), "reason: is 201 characters long"),
        ("add_time_off", json!({"engineer": " ", "from": "2026-10-06T00:00", "to": "2026-10-07T00:00"}), "engineer: is empty"),
        ("list_time_off", json!({"from": "2026-10-07T00:00", "to": "2026-10-06T00:00"}), "to must be after from"),
        ("list_time_off", json!({"engineer": "eng-01", "from": "2026-10-07T00:00", "to": "2026-10-07T00:00"}), "to must be after from"),
        ("remove_time_off", json!({"id": "1"}), "id: invalid type"),
        // Issue 25: payments (the demo's bookings have no rates: nothing is owed on them) and the waitlist.
        ("record_payment", json!({"booking": "bk_00001", "amount": 0}), "amount must be 1 to 1000000000"),
        ("record_payment", json!({"booking": "bk_00001", "amount": -100}), "amount must be 1 to 1000000000"),
        ("record_payment", json!({"booking": "bk_00001", "amount": 1_000_000_001i64}), "amount must be 1 to 1000000000"),
        ("record_payment", json!({"booking": "bk_00001", "amount": 100}), "amount: 100 is more than the 0 still owed on bk_00001"),
        ("record_payment", json!({"booking": "bk_00001", "amount": i64::MAX}), "amount must be 1 to"),
        ("join_waitlist", json!({"client": "client-001", "from": "2026-10-06T18:00", "to": "2026-10-06T09:00", "duration_minutes": 60}), "to: the span waited for must end after it starts"),
        ("join_waitlist", json!({"client": "client-001", "from": "2026-10-06T09:00", "to": "2026-10-06T09:30", "duration_minutes": 60}), "duration_minutes: the session is longer than the span"),
        ("join_waitlist", json!({"client": "client-001", "from": "2026-10-06T09:00", "to": "2026-10-06T18:00", "duration_minutes": 5}), "duration_minutes must be 15 to 1440"),
        ("join_waitlist", json!({"client": "client-001", "from": "2026-10-06T09:00", "to": "2026-10-06T18:00", "duration_minutes": i64::MIN}), "duration_minutes must be 15 to 1440"),
        ("join_waitlist", json!({"client": "client-001", "from": "2026-08-01T09:00", "to": "2026-08-02T18:00", "duration_minutes": 60}), "to: the span waited for must end after the studio's clock"),
        ("join_waitlist", json!({"client": "client-001", "from": "2028-10-06T09:00", "to": "2028-10-06T18:00", "duration_minutes": 60}), "to: the span waited for must end within the booking horizon"),
        ("join_waitlist", json!({"client": "client-001", "from": "2026-10-06T09:00", "to": "2027-10-08T18:00", "duration_minutes": 60}), "to: a client may wait for a span of at most 366 days"),
        ("join_waitlist", json!({"client": "client-001", "from": "2026-10-06T09:00", "to": "2026-10-06T18:00", "duration_minutes": 60, "room": "studio-a", "requires": ["drums"]}), "requires: give a room or what the session requires, not both"),
        ("leave_waitlist", json!({"id": 0}), "id: there is no waitlist entry 0"),
        ("leave_waitlist", json!({"id": -1}), "id: there is no waitlist entry -1"),
        ("leave_waitlist", json!({"id": i64::MAX}), "there is no waitlist entry"),
        ("leave_waitlist", json!({"id": "1"}), "id: invalid type"),
        ("leave_waitlist", json!({"id": null}), "id: invalid type: null"),
        ("list_waitlist", json!({"client": " "}), "client: is empty"),
        ("studio_report", json!({"month": "2026-13"}), "cannot read the month \"2026-13\""),
        ("studio_report", json!({"month": "2026-9"}), "write it as YYYY-MM"),
        ("studio_report", json!({"month": "1999-12"}), "use a year from 2000 to 2199"),
        ("studio_report", json!({"month": "2026-09-01"}), "write it as YYYY-MM"),
        ("studio_report", json!({"month": " 2026-09"}), "write it as YYYY-MM"),
    ];
    for (tool, args, message) in management {
        add(tool, args, refused(message), "value inconsistent with the studio");
    }
    // Opening hours: ambiguous, overlapping, unreadable.
    for (tool, request) in [("create_room", base("create_room")), ("update_room", json!({"id": "rehearsal-3"}))] {
        for (hours, message) in [
            (json!(["mon 10:00-10:00"]), "closes when it opens"),
            (json!(["mon 00:00-00:00"]), "closes when it opens"),
            (json!(["someday 10:00-12:00"]), "unknown day"),
            (json!(["mon 10-12"]), "cannot read"),
            (json!(["mon 10:00-02:00", "tue 01:00-03:00"]), "overlap"),
            (json!(["mon 25:00-26:00"]), "cannot read"),
        ] {
            add(tool, with(&request, "opening_hours", hours), refused(message), "opening hours");
        }
    }

    // JSON-RPC errors: a tool that does not exist.
    for name in ["nope", "", "LIST_ROOMS", "list_rooms ", "tools/list", "greet", "list_rooms\u{0}"] {
        add(name, json!({}), Expect::Rpc(-32602), "JSON-RPC -32602 (unknown tool)");
    }
    cases
}

/// The tools that may change the studio: after each of their cases, the row counts are checked.
fn writes(tool: &str) -> bool {
    ![
        "list_rooms",
        "query_bookings",
        "get_booking",
        "find_free_slots",
        "list_offline_windows",
        "get_reflow",
        "list_clients",
        "list_engineers",
        "list_changes",
        "list_webhooks",
        "list_notifications",
        "list_time_off",
        "get_studio",
        "quote",
        "list_waitlist",
        "studio_report",
    ]
        .contains(&tool)
}

on_both! {
    /// Issue 8's table, grown by issue 21 to every tool: each bad input gets the answer its kind
    /// needs, the same on both backends, and changes nothing.
    fn issue_21_bad_inputs_get_the_answer_their_kind_needs_and_change_nothing(db) {
        let mut s = stdio(db, &["--demo"]);
        s.ok("list_rooms", json!({}));
        let before = db.dump();
        assert!(before["bookings"].len() > 1000, "the demo is loaded");
        let counts = db.counts();

        let cases = cases();
        let mut per_tool: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let mut failures = Vec::new();
        for case in &cases {
            let response = s.request("tools/call", json!({"name": case.tool, "arguments": case.args}));
            let tally = per_tool.entry(case.tool.clone()).or_default();
            let outcome = match &case.expect {
                Expect::Refused(text) => {
                    tally.0 += 1;
                    let result = &response["result"];
                    let message = result["content"][0]["text"].as_str().unwrap_or_default();
                    (result["isError"] == json!(true) && message.contains(text.as_str()))
                        .then_some(())
                        .ok_or_else(|| format!("{} {:.300}: expected isError with {text:?}, got {:.600}", case.tool, case.args.to_string(), response.to_string()))
                }
                Expect::Rpc(code) => {
                    tally.1 += 1;
                    (response["error"]["code"] == json!(code))
                        .then_some(())
                        .ok_or_else(|| format!("{:?} {}: expected JSON-RPC error {code}, got {:.600}", case.tool, case.args, response.to_string()))
                }
            };
            if let Err(e) = outcome {
                failures.push(e);
            } else if writes(&case.tool) && db.counts() != counts {
                failures.push(format!("{} {:.300}: the refused call changed the row counts", case.tool, case.args.to_string()));
            }
        }
        // The figures, for the record (`cargo test --test it bad_inputs -- --nocapture`).
        eprintln!("bad-input table: {} cases", cases.len());
        for (tool, (refused, rpc)) in &per_tool {
            eprintln!("  {:<24} {refused:>4} isError  {rpc:>2} JSON-RPC error", format!("{tool:?}"));
        }
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        for case in &cases {
            *kinds.entry(case.kind).or_default() += 1;
        }
        for (kind, n) in &kinds {
            eprintln!("  {kind:<40} {n:>4}");
        }
        assert!(failures.is_empty(), "{} of {} cases got the wrong answer:\n{}", failures.len(), cases.len(), failures.join("\n"));
        assert!(cases.len() >= 1200, "{}", cases.len());
        for (tool, _, _) in tools() {
            assert!(per_tool.get(tool).is_some_and(|c| c.0 >= 5), "{tool} is covered: {per_tool:?}");
        }

        // The server still works, and nothing any refused request did reached the database.
        s.ok("list_rooms", json!({}));
        assert_eq!(db.dump(), before, "a refused request changed the database");
    }
}
