//! The bounds of what tools take (issue 8's tool-input items), on the real binary: instants within
//! the years read and the booking window, months read strictly, unknown ids refused alike, a series
//! never cut short, a free-slot search of a calendar month, repeated offline windows merged, and
//! unapplied plans that expire. Each test starts from the request the issue shows. The demo studio's clock is Monday 31 August 2026, 09:00 London, so its booking horizon
//! (two years by default) ends on 30 August 2028 at 09:00. The tests run on both backends, but
//! for the import's, which checks that a refused import leaves no file behind.

use crate::mcp_client::{stdio, Mcp};
use crate::support::{on_both, temp_db};
use serde_json::{json, Value};
use std::process::Command;

/// Every string in an answer that reads as a date and time is RFC 3339 with a four-digit year.
fn assert_instants_are_rfc3339(value: &Value) {
    match value {
        Value::String(s) => {
            let looks_like_time = s.len() >= 16 && s.contains(':') && s.contains('T') && s.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '+' || c == '-');
            if looks_like_time && s.split('T').next().is_some_and(|d| d.matches('-').count() >= 2) {
                assert!(chrono::DateTime::parse_from_rfc3339(s).is_ok(), "not RFC 3339: {s:?}");
                assert!(s.as_bytes()[..4].iter().all(u8::is_ascii_digit) && s.as_bytes()[4] == b'-', "not a four-digit year: {s:?}");
            }
        }
        Value::Array(items) => items.iter().for_each(assert_instants_are_rfc3339),
        Value::Object(map) => map.values().for_each(assert_instants_are_rfc3339),
        _ => {}
    }
}

on_both! {
    fn issue_8_item_3_instants_have_a_sane_range(db) {
        let mut s = stdio(db, &["--demo"]);
        let far = "9999-12-31T23:00:00-14:00";

        // The request of the issue: refused, never echoed as +10000-01-01.
        let message = s.refused("create_booking", json!({"room": "studio-c", "client": "client-001", "start": far, "end": "9999-12-31T23:30:00-14:00"}));
        assert!(message.contains("start: ") && message.contains("outside the years 2000 to 2199"), "{message}");
        let message = s.refused("move_booking", json!({"id": "bk_00001", "start": far}));
        assert!(message.contains("start: ") && message.contains("outside the years 2000 to 2199"), "{message}");
        let message = s.refused("set_room_offline", json!({"room": "studio-a", "from": "9999-12-30T00:00", "to": "9999-12-31T00:00", "reason": "x"}));
        assert!(message.contains("from: ") && message.contains("outside the years"), "{message}");
        assert!(!message.contains("reflow_month"), "no advice for a month reflow_month refuses: {message}");

        // Inside the years read, but outside the booking window: the refusal names the clock or the horizon.
        let message = s.refused("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-08-31T08:00", "end": "2026-08-31T10:00"}));
        assert!(message.contains("before the studio's clock (2026-08-31T09:00:00+01:00)"), "{message}");
        let message = s.refused("move_booking", json!({"id": "bk_00001", "start": "2026-08-29T10:00"}));
        assert!(message.contains("before the studio's clock"), "{message}");
        let message = s.refused("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2028-09-05T10:00", "end": "2028-09-05T11:00"}));
        assert!(message.contains("beyond the booking horizon (2028-08-30T09:00:00+01:00, 730 days"), "{message}");
        let message = s.refused("move_booking", json!({"id": "bk_00001", "start": "2199-06-06T10:00"}));
        assert!(message.contains("beyond the booking horizon"), "{message}");

        // Offline windows: they must end after the clock and by the horizon.
        let message = s.refused("set_room_offline", json!({"room": "studio-a", "from": "2026-08-01T00:00", "to": "2026-08-02T00:00", "reason": "x"}));
        assert!(message.contains("not after the studio's clock"), "{message}");
        let message = s.refused("set_room_offline", json!({"room": "studio-a", "from": "2028-08-29T00:00", "to": "2028-09-02T00:00", "reason": "x"}));
        assert!(message.contains("beyond the booking horizon"), "{message}");

        // A free-slot search offers only starts a booking would take: none before the clock or past the horizon.
        let around_clock = s.ok("find_free_slots", json!({"from": "2026-08-30T00:00", "to": "2026-08-31T23:00", "duration_minutes": 60, "room": "studio-a"}));
        assert_eq!(around_clock["slots"][0]["start"], "2026-08-31T09:00:00+01:00", "{around_clock}");
        let around_horizon = s.ok("find_free_slots", json!({"from": "2028-08-29T00:00", "to": "2028-09-02T00:00", "duration_minutes": 60, "room": "studio-a"}));
        let last = around_horizon["slots"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["latest_start"], "2028-08-30T09:00:00+01:00", "{around_horizon}");
        assert!(s.ok("find_free_slots", json!({"from": "2030-01-01T00:00", "to": "2030-01-08T00:00", "duration_minutes": 60}))["slots"] == json!([]));

        // Just inside the window is fine, and everything written out reads as RFC 3339.
        let booked = s.ok("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2028-08-28T10:00", "end": "2028-08-28T11:00"}));
        assert_eq!(booked["bookings"][0]["start"], "2028-08-28T10:00:00+01:00");
        let offline = s.ok("set_room_offline", json!({"room": "studio-a", "from": "2026-08-30T00:00", "to": "2026-09-01T00:00", "reason": "dust"}));
        assert!(offline["next_step"].as_str().unwrap().contains("2026-08") || offline["affected"] == 0, "{offline}");
        for (tool, args) in [
            ("list_rooms", json!({})),
            ("query_bookings", json!({"limit": 500})),
            ("list_offline_windows", json!({"from": "2026-01-01T00:00", "to": "2199-12-31T00:00"})),
            ("find_free_slots", json!({"from": "2028-08-01T00:00", "to": "2028-08-31T23:59", "duration_minutes": 60})),
        ] {
            assert_instants_are_rfc3339(&s.ok(tool, args));
        }
        assert_instants_are_rfc3339(&booked);
        assert_instants_are_rfc3339(&offline);
    }
}

#[test]
fn issue_8_item_3_an_import_loads_sessions_before_its_clock_but_not_beyond_its_horizon() {
    let db = temp_db();
    let dir = db.path.parent().unwrap();
    let bookings = dir.join("bookings.toml");
    std::fs::write(&bookings, studioflow::demo::BOOKINGS_TOML).unwrap();
    let run = |studio_text: String, db: &std::path::Path| {
        let studio = dir.join("studio.toml");
        std::fs::write(&studio, studio_text).unwrap();
        Command::new(env!("CARGO_BIN_EXE_studioflow"))
            .args(["init", "--db", db.to_str().unwrap(), "--studio", studio.to_str().unwrap(), "--bookings", bookings.to_str().unwrap()])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };

    // The clock in mid-October: September's sessions and the fortnight offline are history, and load.
    let later = studioflow::demo::STUDIO_TOML.replace("clock = \"2026-08-31T09:00\"", "clock = \"2026-10-15T09:00\"");
    let out = run(later, &db.path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The server then refuses a new session before that clock.
    let mut s = stdio(&db.path, &[]);
    let message = s.refused("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-10-01T10:00", "end": "2026-10-01T11:00"}));
    assert!(message.contains("before the studio's clock (2026-10-15T09:00:00+01:00)"), "{message}");
    drop(s);

    // A horizon of 30 days from 31 August: October's sessions lie beyond it, so the import is refused.
    let other = dir.join("short.db");
    let short = studioflow::demo::STUDIO_TOML.replace("notice_hours = 48", "notice_hours = 48\nhorizon_days = 30");
    let out = run(short, &other);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("after the booking horizon (2026-09-30T09:00:00+01:00)"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!other.exists(), "a refused import leaves no database");
}

on_both! {
    fn issue_8_item_4_months_are_read_strictly(db) {
        let mut s = stdio(db, &["--demo"]);
        for month in ["2026-+9", "2026-9", "2026-009", "+2026-09", " 2026-09", "2026-09 ", "2026-00", "2026-13", "26-09", "2026/09", "2026-0x", "２０２６-09", "2026-09-01", "2026--9"] {
            let message = s.refused("reflow_month", json!({"month": month, "offline_rooms": ["studio-b"], "dry_run": true}));
            assert!(message.contains("YYYY-MM"), "{month:?}: {message}");
        }
        // The command line reads months with the same reader.
        let path = db.db_arg();
        drop(s);
        let out = Command::new(env!("CARGO_BIN_EXE_studioflow"))
            .args(["export-instance", "--db", path, "--month", "2026-+9", "--offline", "studio-b"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("YYYY-MM"), "{}", String::from_utf8_lossy(&out.stderr));
    }

    fn issue_8_item_5_unknown_ids_are_refused_everywhere_with_the_same_message(db) {
        let mut s = stdio(db, &["--demo"]);
        let slots = json!({"from": "2026-10-06T09:00", "to": "2026-10-06T23:00", "duration_minutes": 60});
        let booking = json!({"room": "studio-c", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"});
        let with = |base: &Value, field: &str, value: &str| {
            let mut args = base.clone();
            args[field] = json!(value);
            args
        };
        for (field, value, expected) in [
            ("client", "client-999", "unknown client \"client-999\""),
            ("engineer", "nobody", "unknown engineer \"nobody\""),
            ("room", "attic", "unknown room \"attic\""),
        ] {
            let from_search = s.refused("find_free_slots", with(&slots, field, value));
            let from_booking = s.refused("create_booking", with(&booking, field, value));
            let from_query = s.refused("query_bookings", with(&json!({}), field, value));
            assert!(from_search.contains(expected), "{from_search}");
            assert_eq!(from_search, from_booking, "one message for one unknown id");
            assert_eq!(from_search, from_query, "one message for one unknown id");
        }
        let room = "unknown room \"attic\"";
        assert!(s.refused("move_booking", json!({"id": "bk_00001", "room": "attic", "start": "2026-10-06T10:00"})).contains(room));
        assert!(s.refused("set_room_offline", json!({"room": "attic", "from": "2026-10-06T00:00", "to": "2026-10-07T00:00", "reason": "x"})).contains(room));
        assert!(s.refused("list_offline_windows", json!({"room": "attic"})).contains(room));
        assert!(s.refused("reflow_month", json!({"month": "2026-09", "offline_rooms": ["attic"], "dry_run": true})).contains(room));
        assert!(s.refused("query_bookings", json!({"series": "series-999"})).contains("unknown series \"series-999\""));
    }

    fn issue_8_item_6_a_series_is_never_cut_short_silently(db) {
        let mut s = stdio(db, &["--demo"]);
        let series = |rule: &str| json!({"room": "studio-c", "client": "client-001", "start": "2026-11-05T10:00", "end": "2026-11-05T11:00", "recurrence": rule});
        let message = s.refused("create_booking", series("FREQ=YEARLY;INTERVAL=400;COUNT=30"));
        assert!(message.contains("gives 30 sessions, the last after"), "{message}");
        assert!(message.contains("29 of them fall after the booking horizon (2028-08-30T09:00:00+01:00)"), "{message}");
        let message = s.refused("create_booking", series("FREQ=YEARLY;BYWEEKNO=53;BYDAY=TH;COUNT=366"));
        assert!(message.contains("gives 366 sessions, the last on 4"), "{message}");
        assert!(message.contains("after the booking horizon"), "{message}");
        let message = s.refused("create_booking", series("FREQ=WEEKLY;UNTIL=21000101T000000Z"));
        assert!(message.contains("more than 366 sessions"), "{message}");
        let message = s.refused("create_booking", series("FREQ=MONTHLY;UNTIL=20300101T000000Z"));
        assert!(message.contains("fall after the booking horizon"), "{message}");
        // Nothing of any of them was booked; a series inside the horizon books every session it asks for.
        let none = s.ok("query_bookings", json!({"client": "client-001", "from": "2026-11-05T00:00"}));
        assert_eq!(none["bookings"], json!([]));
        let booked = s.ok("create_booking", series("FREQ=WEEKLY;COUNT=20"));
        assert_eq!(booked["bookings"].as_array().unwrap().len(), 20);
    }

    fn issue_8_item_7_a_free_slot_search_may_cover_a_calendar_month(db) {
        let mut s = stdio(db, &["--demo"]);
        // October in London is 31 days and one hour long: one calendar month, one search.
        let october = s.ok("find_free_slots", json!({"from": "2026-10-01T00:00", "to": "2026-11-01T00:00", "duration_minutes": 60}));
        assert!(!october["slots"].as_array().unwrap().is_empty(), "{october}");
        let message = s.refused("find_free_slots", json!({"from": "2026-10-01T00:00", "to": "2026-11-01T00:15", "duration_minutes": 60}));
        assert!(message.contains("at most 31 days"), "{message}");
        // March loses an hour: 31 calendar days are still the limit, not 31 x 24 real hours.
        s.ok("find_free_slots", json!({"from": "2027-03-01T00:00", "to": "2027-04-01T00:00", "duration_minutes": 60}));
        let message = s.refused("find_free_slots", json!({"from": "2027-03-01T00:00", "to": "2027-04-01T00:30", "duration_minutes": 60}));
        assert!(message.contains("at most 31 days"), "{message}");
    }

    fn issue_8_item_9_repeated_offline_windows_merge(db) {
        let mut s = stdio(db, &["--demo"]);
        let window = json!({"room": "rehearsal-2", "from": "2026-10-12T00:00", "to": "2026-10-15T00:00", "reason": "new floor"});
        let first = s.ok("set_room_offline", window.clone());
        for _ in 0..299 {
            let again = s.ok("set_room_offline", window.clone());
            assert_eq!(again["window"], first["window"], "an identical window is the same window");
        }
        let windows = s.ok("list_offline_windows", json!({"room": "rehearsal-2"}));
        assert_eq!(windows["windows"].as_array().unwrap().len(), 1, "{windows}");

        // An overlapping window and a touching one widen it; the reasons are kept.
        s.ok("set_room_offline", json!({"room": "rehearsal-2", "from": "2026-10-14T00:00", "to": "2026-10-16T00:00", "reason": "varnish"}));
        let merged = s.call("set_room_offline", json!({"room": "rehearsal-2", "from": "2026-10-10T00:00", "to": "2026-10-12T00:00", "reason": "new floor"}));
        assert!(merged["content"][0]["text"].as_str().unwrap().contains("merged"), "{merged}");
        let windows = s.ok("list_offline_windows", json!({"room": "rehearsal-2"}))["windows"].clone();
        assert_eq!(windows.as_array().unwrap().len(), 1, "{windows}");
        assert_eq!(windows[0]["id"], first["window"]["id"]);
        assert_eq!(windows[0]["from"], "2026-10-10T00:00:00+01:00");
        assert_eq!(windows[0]["to"], "2026-10-16T00:00:00+01:00");
        assert_eq!(windows[0]["reason"], "new floor; varnish");
        // Another room's windows are its own; a window with a gap is a second window.
        s.ok("set_room_offline", json!({"room": "rehearsal-1", "from": "2026-10-12T00:00", "to": "2026-10-15T00:00", "reason": "new floor"}));
        s.ok("set_room_offline", json!({"room": "rehearsal-2", "from": "2026-10-20T00:00", "to": "2026-10-21T00:00", "reason": "tuning"}));
        assert_eq!(s.ok("list_offline_windows", json!({"room": "rehearsal-2"}))["windows"].as_array().unwrap().len(), 2);
        // New reasons on repeats cannot grow a window's text without end.
        let mut refused_reason = None;
        for n in 0..100 {
            let result = s.call("set_room_offline", json!({"room": "rehearsal-2", "from": "2026-10-20T00:00", "to": "2026-10-21T00:00", "reason": format!("tuning pass number {n}")}));
            if result["isError"] == json!(true) {
                refused_reason = result["content"][0]["text"].as_str().map(str::to_owned);
                break;
            }
        }
        let message = refused_reason.expect("a bound on merged reasons");
        assert!(message.contains("give one of the reasons it already has (\"tuning\")"), "{message}");
        s.ok("set_room_offline", json!({"room": "rehearsal-2", "from": "2026-10-20T00:00", "to": "2026-10-21T00:00", "reason": "tuning"}));
        // A merge that would last more than a year is refused.
        s.ok("set_room_offline", json!({"room": "studio-a", "from": "2026-10-01T00:00", "to": "2027-06-01T00:00", "reason": "rebuild"}));
        let message = s.refused("set_room_offline", json!({"room": "studio-a", "from": "2027-05-01T00:00", "to": "2027-12-01T00:00", "reason": "rebuild"}));
        assert!(message.contains("more than a year"), "{message}");
    }

    fn issue_8_item_9_unapplied_plans_expire_like_tasks(db) {
        let mut s = stdio(db, &["--demo", "--task-ttl", "1"]);
        let applied = s.ok("reflow_month", json!({"month": "2026-09", "offline_rooms": ["studio-b"]}));
        let mut dry = Vec::new();
        for _ in 0..3 {
            let plan = s.ok("reflow_month", json!({"month": "2026-10", "offline_rooms": ["studio-c"], "dry_run": true}));
            assert_eq!(plan["applied"], false);
            dry.push(plan["reflow_id"].as_str().unwrap().to_owned());
        }
        assert!(s.ok("get_reflow", json!({"reflow_id": dry[0]}))["moves"].as_array().is_some());
        let moves = || db.scalar("SELECT COUNT(*) FROM reflow_moves m JOIN reflows r ON r.id = m.reflow_id WHERE r.applied = 0");
        assert!(moves() > 0);

        // The sweeper runs every quarter of the time to live; wait for it, with a generous deadline.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while moves() > 0 {
            assert!(std::time::Instant::now() < deadline, "unapplied plans were never swept");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        for id in &dry {
            let message = s.refused("get_reflow", json!({"reflow_id": id}));
            assert!(message.contains("unknown reflow"), "{message}");
        }
        // The applied reflow stays, and a new plan never takes an id that was given before.
        assert_eq!(s.ok("get_reflow", json!({"reflow_id": applied["reflow_id"]}))["applied"], true);
        let next = s.ok("reflow_month", json!({"month": "2026-10", "offline_rooms": ["studio-c"], "dry_run": true}));
        assert_eq!(next["reflow_id"], "rf_0005", "{next}");
    }
}
