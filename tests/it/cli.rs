//! The real `studioflow` binary on real files: init, export-instance, solve, demo and calendar, with the
//! exit codes and messages a person sees.

use crate::support::temp_db;
use std::process::{Command, Output};
use studioflow_solver as solver;

fn studioflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_studioflow")).args(args).env("RUST_LOG", "warn").output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn init_demo_then_export_gives_a_valid_month_with_over_a_hundred_affected() {
    let db = temp_db();
    let path = db.path.to_str().unwrap();
    let out = studioflow(&["init", "--db", path, "--demo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("7 rooms"), "{}", stdout(&out));

    let out = studioflow(&["export-instance", "--db", path, "--month", "2026-09", "--offline", "studio-b"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let instance: solver::Instance = serde_json::from_slice(&out.stdout).unwrap();
    instance.check().unwrap();
    let studio_b = instance.rooms.iter().find(|r| r.id == "studio-b").unwrap();
    let affected = instance
        .bookings
        .iter()
        .filter(|b| b.room == "studio-b" && studio_b.offline.iter().any(|&[s, e]| b.start < e && s < b.end))
        .count();
    assert!(affected >= 100, "only {affected} affected");

    // The exported instance solves, and the solution is valid.
    let file = db.path.with_extension("json");
    std::fs::write(&file, &out.stdout).unwrap();
    let out = studioflow(&["solve", file.to_str().unwrap(), "--threads", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let solution: solver::Solution = serde_json::from_slice(&out.stdout).unwrap();
    solver::validate(&instance, &solution).unwrap();
    assert_eq!(solution.moved + solution.unresolved, affected);
    assert!(stderr(&out).contains(&format!("moved {}", solution.moved)), "{}", stderr(&out));
}

#[test]
fn bad_input_gets_exit_code_2_and_a_message_that_says_what_to_change() {
    let db = temp_db();
    let path = db.path.to_str().unwrap();
    let missing = studioflow(&["export-instance", "--db", path, "--month", "2026-09", "--offline", "studio-b"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("init --db"), "{}", stderr(&missing));

    assert!(studioflow(&["init", "--db", path, "--demo"]).status.success());
    let again = studioflow(&["init", "--db", path, "--demo"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("already holds a studio"), "{}", stderr(&again));

    let cases: [(&[&str], &str); 4] = [
        (&["--month", "2026-9", "--offline", "studio-b"], "YYYY-MM"),
        (&["--month", "2026-09", "--offline", "studio-z"], "unknown room \"studio-z\""),
        (&["--month", "2026-09", "--offline", "studio-b", "--max-shift-minutes", "9999"], "0 to 720"),
        (&["--month", "2250-01", "--offline", "studio-b"], "2000 to 2199"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["export-instance", "--db", path];
        all.extend_from_slice(args);
        let out = studioflow(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(expected), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
    }

    let file = db.path.with_extension("json");
    std::fs::write(&file, r#"{"version": 2, "month": "2026-09", "rooms": [], "bookings": []}"#).unwrap();
    let out = studioflow(&["solve", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::write(&file, "{not json").unwrap();
    let out = studioflow(&["solve", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not a REFLOW.md instance"), "{}", stderr(&out));
}

#[test]
fn a_failed_init_from_files_leaves_no_database_behind() {
    let db = temp_db();
    let studio = db.path.with_extension("toml");
    std::fs::write(&studio, "[studio]\nname = \"X\"\ntimezone = \"Mars/Olympus\"\nnotice_hours = 1\n").unwrap();
    let out = studioflow(&["init", "--db", db.path.to_str().unwrap(), "--studio", studio.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!db.path.exists());
}

#[test]
fn numbers_out_of_range_in_a_studio_file_are_refused_not_crashed_on() {
    let db = temp_db();
    let studio = db.path.with_extension("toml");
    let text = demo_studio_with_notice_hours("99999999999999");
    std::fs::write(&studio, text).unwrap();
    let out = studioflow(&["init", "--db", db.path.to_str().unwrap(), "--studio", studio.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("notice_hours must be 0 to 8760"), "{}", stderr(&out));
}

/// The demo studio file with another notice period.
fn demo_studio_with_notice_hours(hours: &str) -> String {
    studioflow::demo::STUDIO_TOML.replace("notice_hours = 48", &format!("notice_hours = {hours}"))
}

#[test]
fn the_demo_reflows_the_fortnight_and_prints_the_same_summary_every_time() {
    let db = temp_db();
    let path = db.path.to_str().unwrap();
    let first = studioflow(&["demo", "--db", path]);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = stdout(&first);
    assert!(text.contains("studio-b is offline from Mon 7 Sep 2026 00:00 to Mon 21 Sep 2026 00:00"), "{text}");
    assert!(text.contains("affected bookings; moved"), "{text}");
    assert!(text.contains("Unresolved, left where they are:"), "{text}");
    assert!(text.contains("pinned by staff"), "{text}");
    let second = studioflow(&["demo", "--db", path]);
    assert_eq!(text, stdout(&second), "the demo runs at a fixed clock: same output every run");
}

#[test]
fn solve_with_a_work_limit_answers_the_same_on_one_and_two_threads_and_states_the_gap() {
    // A loose month (six-hour window) is not proven optimal in its first search, so the
    // improvement rounds run; the work limit, not the (generous) time limit, ends them.
    let db = temp_db();
    let file = db.path.with_extension("json");
    std::fs::write(&file, serde_json::to_string(&solver::generate::loose(2)).unwrap()).unwrap();
    let run = |threads: &str| {
        let args = ["solve", file.to_str().unwrap(), "--threads", threads, "--work-limit", "2", "--time-limit", "600"];
        let out = studioflow(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let (one, two) = (run("1"), run("2"));
    assert_eq!(stdout(&one), stdout(&two));
    let summary = stderr(&two);
    assert!(summary.contains("of optimal, lower bound") || summary.contains("proven optimal"), "{summary}");
    assert!(summary.contains("round(s) of improvement"), "{summary}");
}

/// Issue 12: `studioflow calendar` prints a calendar; a window, an unknown room and a window that
/// ends before it starts behave as documented.
#[test]
fn calendar_prints_icalendar_and_refuses_what_it_cannot_print() {
    let db = temp_db();
    let path = db.path.to_str().unwrap();
    assert!(studioflow(&["init", "--db", path, "--demo"]).status.success());
    let whole = studioflow(&["calendar", "--db", path, "--room", "studio-b"]);
    assert!(whole.status.success(), "{}", stderr(&whole));
    let text = stdout(&whole);
    assert!(text.starts_with("BEGIN:VCALENDAR\r\n") && text.ends_with("END:VCALENDAR\r\n"));
    let day = studioflow(&["calendar", "--db", path, "--room", "studio-b", "--from", "2026-09-01", "--to", "2026-09-02"]);
    let events = stdout(&day).matches("BEGIN:VEVENT").count();
    assert!(events > 0 && events < text.matches("BEGIN:VEVENT").count(), "{events} events on one day");
    assert!(stdout(&day).contains("UID:bk_") && stdout(&day).contains("SEQUENCE:0"));

    let unknown = studioflow(&["calendar", "--db", path, "--room", "nope"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(stderr(&unknown).contains("there is no room nope"));
    let backwards = studioflow(&["calendar", "--db", path, "--client", "client-001", "--from", "2026-10-01", "--to", "2026-09-01"]);
    assert_eq!(backwards.status.code(), Some(2), "{}", stderr(&backwards));
    let two = studioflow(&["calendar", "--db", path, "--room", "studio-b", "--client", "client-001"]);
    assert_eq!(two.status.code(), Some(2), "one calendar at a time");
}
