//! The real `studioflow` binary on real files: init, export-instance, solve, demo, calendar, token
//! and task, with the exit codes and messages a person sees. The commands that read or write a
//! studio run on both backends (`--db` a file, then a PostgreSQL URL); reading a studio file,
//! solving an instance file and a database file the user cannot write run once.

use crate::support::{on_both, small_studio, temp_db, TestDb};
use studioflow::store::TokenCheck;
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

on_both! {
    fn init_demo_then_export_gives_a_valid_month_with_over_a_hundred_affected(db) {
        let path = db.db_arg();
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
        let file = db.file("instance.json");
        std::fs::write(&file, &out.stdout).unwrap();
        let out = studioflow(&["solve", file.to_str().unwrap(), "--threads", "2"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let solution: solver::Solution = serde_json::from_slice(&out.stdout).unwrap();
        solver::validate(&instance, &solution).unwrap();
        assert_eq!(solution.moved + solution.unresolved, affected);
        assert!(stderr(&out).contains(&format!("moved {}", solution.moved)), "{}", stderr(&out));
    }

    fn bad_input_gets_exit_code_2_and_a_message_that_says_what_to_change(db) {
        let path = db.db_arg();
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

        let file = db.file("instance.json");
        std::fs::write(&file, r#"{"version": 3, "month": "2026-09", "rooms": [], "bookings": []}"#).unwrap();
        let out = studioflow(&["solve", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        std::fs::write(&file, "{not json").unwrap();
        let out = studioflow(&["solve", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("is not a REFLOW.md instance"), "{}", stderr(&out));
    }
}

/// SQLite only: what is checked is that no file is left behind.
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

/// SQLite only: `studioflow demo` takes a file (it starts from a fresh one and writes its page
/// beside it).
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

on_both! {
    /// Issue 12: `studioflow calendar` prints a calendar; a window, an unknown room and a window that
    /// ends before it starts behave as documented.
    fn calendar_prints_icalendar_and_refuses_what_it_cannot_print(db) {
        let path = db.db_arg();
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
}

/// The secret, and every encoding of its random bytes, is absent from the database; its hash is there.
fn assert_only_the_hash_is_stored(db: &TestDb, secret: &str) {
    let body = secret.strip_prefix("sft_").unwrap();
    let random = data_encoding::BASE32_NOPAD.decode(body.to_ascii_uppercase().as_bytes()).unwrap();
    assert_eq!(random.len(), 32);
    for (what, needle) in [
        ("the secret", secret.as_bytes().to_vec()),
        ("the secret without its prefix", body.as_bytes().to_vec()),
        ("its random bytes", random.clone()),
        ("its random bytes in hex", data_encoding::HEXLOWER.encode(&random).into_bytes()),
    ] {
        assert!(!db.holds(&needle), "the database holds {what}");
    }
    assert!(db.holds(studioflow::auth::secret::hash(secret).as_bytes()), "the hash is stored");
}

on_both! {
    /// Issue 11: `token create` prints the secret once (alone on stdout) and says how to send it;
    /// `token list` and `token revoke` never show it, and neither does the database file.
    fn token_create_shows_the_secret_once_and_nothing_else_ever_does(db) {
        drop(small_studio(db));
        let path = db.db_arg();
        let created = studioflow(&["token", "create", "--db", path, "--name", "mixing agent", "--scope", "reflow:apply,studio:read", "--expires", "30"]);
        assert!(created.status.success(), "{}", stderr(&created));
        let secret = stdout(&created).trim().to_owned();
        assert!(secret.starts_with("sft_") && !secret.contains(char::is_whitespace), "{secret:?}");
        let told = stderr(&created);
        assert!(told.contains("Authorization: Bearer <secret>") && told.contains("cannot be shown again"), "{told}");
        assert_only_the_hash_is_stored(db, &secret);

        let store = studioflow::store::Store::open(db).unwrap();
        let TokenCheck::Valid(token) = store.authenticate_token(&secret, chrono::Utc::now()).unwrap() else { panic!("the new secret is not valid") };
        assert!(told.contains(&token.id) && told.contains("token revoke"), "{told}");
        assert_eq!(token.scopes.joined(","), "studio:read,reflow:apply");
        assert!(token.expires.is_some_and(|at| at - chrono::Utc::now() > chrono::Duration::days(29)));
        // With the store still open, its WAL holds the last write (the recorded use).
        assert_only_the_hash_is_stored(db, &secret);
        drop(store);

        let list = studioflow(&["token", "list", "--db", path]);
        assert!(list.status.success(), "{}", stderr(&list));
        let lines: Vec<String> = stdout(&list).lines().map(str::to_owned).collect();
        assert_eq!(lines.len(), 2, "a header and the token: {lines:?}");
        let fields: Vec<&str> = lines[1].split('\t').collect();
        assert_eq!((fields[0], fields[1], fields[2], fields[6]), (token.id.as_str(), "mixing agent", "studio:read,reflow:apply", "active"), "{lines:?}");
        assert!(fields[4].ends_with("UTC") && fields[5].ends_with("UTC"), "last used and expires: {lines:?}");
        let json = studioflow(&["token", "list", "--db", path, "--json"]);
        let listed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(listed[0]["id"], token.id.as_str());
        assert_eq!(listed[0]["scopes"], serde_json::json!(["studio:read", "reflow:apply"]));
        assert_eq!((listed[0]["status"].as_str(), listed[0]["revoked"].is_null()), (Some("active"), true));

        let revoked = studioflow(&["token", "revoke", "--db", path, &token.id]);
        assert!(revoked.status.success(), "{}", stderr(&revoked));
        assert!(stdout(&studioflow(&["token", "list", "--db", path])).contains("\trevoked"));
        let again = studioflow(&["token", "revoke", "--db", path, &token.id]);
        assert_eq!(again.status.code(), Some(2));
        assert!(stderr(&again).contains("already revoked"), "{}", stderr(&again));
        for out in [&list, &json, &revoked, &again] {
            assert!(!stdout(out).contains(&secret) && !stderr(out).contains(&secret), "the secret was shown again");
        }
        assert_only_the_hash_is_stored(db, &secret);
    }

    /// Issue 11: bad flags for `token` exit 2 with what to change, and write nothing.
    fn token_bad_input_exits_2_says_what_to_change_and_writes_nothing(db) {
        drop(small_studio(db));
        let path = db.db_arg();
        let create = |name: &str, scope: &str, extra: &[&str]| {
            let mut args = vec!["token", "create", "--db", path, "--name", name, "--scope", scope];
            args.extend(extra);
            studioflow(&args)
        };
        for (out, says) in [
            (create("agent", "studio:write", &[]), "unknown scope \"studio:write\": the scopes are studio:read"),
            (create("agent", " , ", &[]), "name at least one scope"),
            (create("agent", "studio:read", &["--expires", "0"]), "0 is not in 1..=3650"),
            (create("agent", "studio:read", &["--expires", "3651"]), "3651 is not in 1..=3650"),
            (create("agent", "studio:read", &["--expires", "soon"]), "invalid value 'soon' for '--expires <DAYS>'"),
            (create("", "studio:read", &[]), "a token's name is 1 to 64 characters"),
            (create("   ", "studio:read", &[]), "a token's name is 1 to 64 characters"),
            (create(&"n".repeat(65), "studio:read", &[]), "a token's name is 1 to 64 characters"),
            (create("two\nlines", "studio:read", &[]), "name: holds a line break (U+000A, character 4)"),
            (create("agent\u{202e}", "studio:read", &[]), "name: holds a bidirectional formatting character"),
            (studioflow(&["token", "revoke", "--db", path, "tok_nothere"]), "`studioflow token list` shows"),
        ] {
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            assert!(stderr(&out).contains(says), "expected {says:?} in {}", stderr(&out));
        }
        let list = studioflow(&["token", "list", "--db", path]);
        assert!(list.status.success() && stdout(&list).is_empty(), "nothing written: {}", stdout(&list));
        assert!(stderr(&list).contains("No tokens yet"), "{}", stderr(&list));

        assert!(create("agent", "studio:read", &[]).status.success());
        let twice = create("agent", "bookings:write", &[]);
        assert_eq!(twice.status.code(), Some(2));
        assert!(stderr(&twice).contains("already named \"agent\"") && stderr(&twice).contains("revoke"), "{}", stderr(&twice));
        assert_eq!(stdout(&studioflow(&["token", "list", "--db", path])).lines().count(), 2, "one token");

        // A database that is not there is not made. (A file: a PostgreSQL URL names a database
        // that exists or cannot be connected to.)
        let missing = db.file("missing.db");
        let missing_path = missing.to_str().unwrap();
        for args in [
            vec!["token", "create", "--db", missing_path, "--name", "agent", "--scope", "studio:read"],
            vec!["token", "list", "--db", missing_path],
            vec!["token", "revoke", "--db", missing_path, "tok_x"],
        ] {
            let out = studioflow(&args);
            assert_eq!(out.status.code(), Some(2));
            assert!(stderr(&out).contains("does not exist") && stderr(&out).contains("studioflow init"), "{}", stderr(&out));
            assert!(!missing.exists(), "{args:?} made a database");
        }
    }
}

/// A task lease outside 0.5 s to 10 min is refused before anything is opened.
#[test]
fn serve_refuses_a_task_lease_out_of_range() {
    for lease in ["0.1", "601", "nan"] {
        let out = studioflow(&["serve", "--db", "/nonexistent/dir/studio.db", "--task-lease", lease]);
        assert_eq!(out.status.code(), Some(2), "--task-lease {lease}: {}", stderr(&out));
        assert!(stderr(&out).contains("--task-lease must be 0.5 to 600 seconds"), "{}", stderr(&out));
    }
}

/// Issue 21: a studio file keeps the rule of text like the tools: a control character in a room's
/// or a client's name is refused naming the room or the client, and nothing is loaded.
#[test]
fn issue_21_a_studio_file_with_control_characters_in_a_name_is_refused_naming_it() {
    for (from, to, expected) in [
        ("name = \"Studio A (live room)\"", "name = \"Studio\\u001b[2JA\"", "room \"studio-a\": name: holds a control character (U+001B, character 7)"),
        ("name = \"The Velvet Static\"", "name = \"Evil\\r\\nBEGIN:VEVENT\"", "client \"client-001\": name: holds a line break (U+000D, character 5)"),
    ] {
        let db = temp_db();
        let studio = db.path.with_extension("toml");
        assert!(studioflow::demo::STUDIO_TOML.contains(from), "{from}");
        std::fs::write(&studio, studioflow::demo::STUDIO_TOML.replacen(from, to, 1)).unwrap();
        let out = studioflow(&["init", "--db", db.path.to_str().unwrap(), "--studio", studio.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{}", stderr(&out));
        assert!(!db.path.exists(), "nothing is loaded");
    }
}

/// The `task` tests' studio: the demo, with the local user's finished dry run of October (on
/// stdio) and an agent's reflow of September waiting for approval (over HTTP, as a token);
/// returns the HTTP server (the agent's bearer set), the local task's id and the agent's.
fn studio_with_two_tasks(db: &TestDb) -> (crate::mcp_client::HttpServer, String, String) {
    use crate::mcp_client::{http, stdio, Mcp};
    use crate::tasks::settle;
    use serde_json::json;
    assert!(studioflow(&["init", "--db", db.db_arg(), "--demo"]).status.success());
    let mut local = stdio(db, &["--solver-time-limit", "1"]);
    let created = local.tasks_request("tools/call", json!({"name": "reflow_month", "arguments": {"month": "2026-10", "offline_rooms": ["studio-b"], "dry_run": true}}));
    let local_task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    assert_eq!(settle(&mut local, &local_task)["status"], "completed");
    drop(local);
    let mut server = http(db, &["--require-auth"]);
    server.bearer = Some(crate::auth::create_token(db, "agent", "studio:read,reflow:apply"));
    let agent_task = start_september_with_approval(&mut server);
    assert_eq!(settle(&mut server, &agent_task)["status"], "input_required");
    (server, local_task, agent_task)
}

/// `reflow_month` of September as a task that asks before applying; its id.
fn start_september_with_approval(server: &mut impl crate::mcp_client::Mcp) -> String {
    let arguments = serde_json::json!({"month": "2026-09", "offline_rooms": ["studio-b"], "require_approval": true});
    let created = server.tasks_request("tools/call", serde_json::json!({"name": "reflow_month", "arguments": arguments}));
    created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned()
}

on_both! {
    /// Issue 21 item 4: `task list` shows every task of the studio, whoever owns it (MCP shows a
    /// task to its owner alone); `task cancel` cancels any live one, recorded in the history as
    /// the operator's, and its month is free again.
    fn task_list_and_cancel_see_every_task_whoever_owns_it(db) {
        let path = db.db_arg();
        let none = db.another();
        assert!(studioflow(&["init", "--db", none.db_arg(), "--demo"]).status.success());
        let empty = studioflow(&["task", "list", "--db", none.db_arg()]);
        assert!(empty.status.success() && stdout(&empty).is_empty(), "{}", stdout(&empty));
        assert!(stderr(&empty).contains("No tasks"), "{}", stderr(&empty));

        let (mut server, local_task, agent_task) = studio_with_two_tasks(db);
        let token = db.text("SELECT id FROM api_tokens").unwrap();
        let list = studioflow(&["task", "list", "--db", path]);
        assert!(list.status.success(), "{}", stderr(&list));
        let lines: Vec<Vec<String>> = stdout(&list).lines().map(|l| l.split('\t').map(str::to_owned).collect()).collect();
        assert_eq!(lines.len(), 3, "a header and two tasks, oldest first: {lines:?}");
        assert_eq!(lines[0], ["ID", "STATUS", "MONTH", "OWNER", "CREATED", "MESSAGE"]);
        assert_eq!(lines[1][..4], [local_task.clone(), "completed".into(), "2026-10".into(), "local".into()]);
        assert_eq!(lines[2][..4], [agent_task.clone(), "input_required".into(), "2026-09".into(), format!("token:{token} (agent)")]);
        assert!(lines[1][4].ends_with(" UTC") && lines[2][5].starts_with("Waiting for approval"), "{lines:?}");
        let json = studioflow(&["task", "list", "--db", path, "--json"]);
        let listed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(listed[1]["id"], agent_task.as_str());
        assert_eq!((listed[1]["owner"].as_str(), listed[1]["owner_name"].as_str()), (Some(format!("token:{token}").as_str()), Some("agent")));
        assert_eq!((listed[0]["owner"].is_null(), listed[0]["status"].as_str()), (true, Some("completed")));
        assert!(listed[1]["created"].as_str().is_some_and(|t| t.ends_with('Z')) && listed[1]["expires"].is_string(), "{listed}");

        // The operator cancels the agent's task, which MCP would not show them.
        let cancelled = studioflow(&["task", "cancel", "--db", path, &agent_task]);
        assert!(cancelled.status.success(), "{}", stderr(&cancelled));
        assert!(stdout(&cancelled).contains(&format!("Cancelled {agent_task} (input_required, owned by token:{token} (agent), reflow of 2026-09)")), "{}", stdout(&cancelled));
        assert_eq!(crate::tasks::get(&mut server, &agent_task)["status"], "cancelled", "its owner sees it cancelled");
        let event = db.rows(&format!("SELECT who, via, action, after FROM events WHERE entity = 'task' AND entity_id = '{agent_task}'"));
        assert_eq!(event.len(), 1);
        assert_eq!(event[0][..3], [Some("operator".to_owned()), Some("task cancel".to_owned()), Some("cancelled".to_owned())]);
        assert!(event[0][3].as_deref().unwrap().contains("Cancelled by the operator"), "{event:?}");
        // Its month is free again.
        let again = start_september_with_approval(&mut server);
        assert_ne!(again, agent_task);

        // A task that has ended is refused, saying so.
        for (id, status) in [(&agent_task, "cancelled"), (&local_task, "completed")] {
            let out = studioflow(&["task", "cancel", "--db", path, id]);
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            assert!(stderr(&out).contains(&format!("task {id} has already ended ({status})")), "{}", stderr(&out));
        }
    }

    /// Issue 21 item 4: bad input to `task` exits 2 with what to change, and changes nothing.
    fn task_bad_input_exits_2_and_says_what_to_change(db) {
        let path = db.db_arg();
        assert!(studioflow(&["init", "--db", path, "--demo"]).status.success());
        let without_db = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(["task", "list"]).env_remove("STUDIOFLOW_DB").output().unwrap();
        for (out, says) in [
            (studioflow(&["task", "cancel", "--db", path, "tsk_nothere"]), "there is no task \"tsk_nothere\": `studioflow task list` shows the tasks' ids"),
            (studioflow(&["task", "cancel", "--db", path, "  "]), "there is no task \"\""),
            (studioflow(&["task", "cancel", "--db", path]), "the following required arguments were not provided"),
            (studioflow(&["task", "cancel", "--db", path, "tsk_a", "tsk_b"]), "unexpected argument 'tsk_b'"),
            (studioflow(&["task", "list", "--db", path, "--jsn"]), "unexpected argument '--jsn'"),
            (studioflow(&["task", "stop", "--db", path]), "unrecognized subcommand 'stop'"),
            (without_db, "--db <DB>"),
        ] {
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            assert!(stderr(&out).contains(says), "expected {says:?} in {}", stderr(&out));
            assert!(out.stdout.is_empty(), "{}", stdout(&out));
        }
        assert_eq!(db.scalar("SELECT COUNT(*) FROM events WHERE entity = 'task'"), 0, "nothing recorded");

        // A database that is not there is not made.
        let missing = db.file("missing.db");
        let missing_path = missing.to_str().unwrap();
        for args in [vec!["task", "list", "--db", missing_path], vec!["task", "cancel", "--db", missing_path, "tsk_x"]] {
            let out = studioflow(&args);
            assert_eq!(out.status.code(), Some(2));
            assert!(stderr(&out).contains("does not exist") && stderr(&out).contains("studioflow init"), "{}", stderr(&out));
            assert!(!missing.exists(), "{args:?} made a database");
        }
    }
}

/// Issue 21 item 6: a database the user cannot write gets a message that says so and what to do,
/// not SQLite's "attempt to write a readonly database" or "unable to open database file". SQLite
/// only (a file's permissions); chmod does not stop root, so as root the binary runs as `nobody`
/// (setpriv), and as anyone else as itself.
#[test]
fn a_database_the_user_cannot_write_is_refused_saying_why_and_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid takes nothing and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // Without setpriv as root, chmod could not stop this user from writing: the test would check
    // nothing, so it fails instead (setpriv is util-linux's, on every Debian).
    assert!(
        !root || Command::new("setpriv").arg("--version").output().is_ok(),
        "as root this test needs setpriv (util-linux) to run the binary as an unprivileged user"
    );
    let as_user = |args: &[&str]| -> Output {
        let mut command = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_studioflow")]);
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_studioflow"))
        };
        command.args(args).env("RUST_LOG", "warn").stdin(std::process::Stdio::null()).output().unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("studio.db");
    let path = db.to_str().unwrap();
    assert!(studioflow(&["init", "--db", path, "--demo"]).status.success());
    let chmod = |p: &std::path::Path, mode: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();

    // The file is read-only; its directory is not: reads work, a write says what to change.
    chmod(dir.path(), 0o777);
    chmod(&db, 0o444);
    assert!(as_user(&["token", "list", "--db", path]).status.success(), "reading a read-only database works");
    for args in [vec!["token", "create", "--db", path, "--name", "agent", "--scope", "studio:read"], vec!["serve", "--db", path]] {
        let out = as_user(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let said = stderr(&out);
        assert!(said.contains(&format!("the database {path} is read-only for the user running studioflow (uid ")) && said.contains(&format!("chmod u+w {path}")), "{said}");
        assert!(!said.contains("attempt to write a readonly database"), "{said}");
    }

    // Reading it left SQLite's shared-memory file, read-only like the database: it is named.
    chmod(&db, 0o666);
    let shm = format!("{path}-shm");
    assert!(std::path::Path::new(&shm).exists(), "SQLite left no {shm}");
    let out = as_user(&["token", "create", "--db", path, "--name", "agent", "--scope", "studio:read"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("{shm} (SQLite's write-ahead log beside the database) cannot be written")) && stderr(&out).contains("remove it"), "{}", stderr(&out));
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }

    // The file may be written, its directory not: SQLite cannot make its write-ahead log there.
    chmod(dir.path(), 0o555);
    let out = as_user(&["token", "create", "--db", path, "--name", "agent", "--scope", "studio:read"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains(&format!("the directory {} cannot be written", dir.path().display())) && said.contains(&format!("{path}-wal")), "{said}");
    // A new database in that directory, and one in a directory that is not there.
    let new = dir.path().join("new.db");
    let out = as_user(&["serve", "--db", new.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot be written") && stderr(&out).contains("SQLite must create the database"), "{}", stderr(&out));
    let nowhere = dir.path().join("not-there/studio.db");
    let out = as_user(&["serve", "--db", nowhere.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("not-there, does not exist: create it"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("unable to open database file"), "{}", stderr(&out));
    chmod(dir.path(), 0o755);
}

on_both! {
    /// Issue 22: `studioflow list` gives the ids an error asks for, as text and as JSON.
    fn list_shows_the_rooms_clients_and_engineers_with_their_ids(db) {
        assert!(studioflow(&["init", "--db", db.db_arg(), "--demo"]).status.success());
        let rooms = studioflow(&["list", "rooms", "--db", db.db_arg()]);
        assert!(rooms.status.success(), "{}", stderr(&rooms));
        let text = stdout(&rooms);
        assert_eq!(text.lines().count(), 7, "{text}");
        assert!(text.lines().any(|l| l.starts_with("studio-b\tStudio B (production suite)\t10 people\t")), "{text}");
        let json: serde_json::Value = serde_json::from_str(&stdout(&studioflow(&["list", "engineers", "--db", db.db_arg(), "--json"]))).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 6);
        assert_eq!(json[0]["id"], "eng-01");
        assert!(json[0]["skills"].is_array());
        let clients: serde_json::Value = serde_json::from_str(&stdout(&studioflow(&["list", "clients", "--db", db.db_arg(), "--json"]))).unwrap();
        assert_eq!(clients.as_array().unwrap().len(), 25);
        let bad = studioflow(&["list", "bookings", "--db", db.db_arg()]);
        assert_eq!(bad.status.code(), Some(2));
        assert!(stderr(&bad).contains("possible values: rooms, clients, engineers"), "{}", stderr(&bad));
    }
}

/// Issue 22: `init --example` writes a commented starter studio that loads as it is (contact
/// details and skills included), and never replaces a file.
#[test]
fn init_example_writes_a_starter_studio_that_loads() {
    let db = temp_db();
    let file = db.path.with_extension("toml");
    let written = studioflow(&["init", "--example", file.to_str().unwrap()]);
    assert!(written.status.success(), "{}", stderr(&written));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.lines().filter(|l| l.trim_start().starts_with('#')).count() >= 20, "commented: {text}");
    let again = studioflow(&["init", "--example", file.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("exists already"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "nothing was written over it");
    let loaded = studioflow(&["init", "--db", db.path.to_str().unwrap(), "--studio", file.to_str().unwrap()]);
    assert!(loaded.status.success(), "{}", stderr(&loaded));
    assert!(stdout(&loaded).contains("2 rooms, 2 clients, 1 engineers"), "{}", stdout(&loaded));
    let engineers: serde_json::Value = serde_json::from_str(&stdout(&studioflow(&["list", "engineers", "--db", db.path.to_str().unwrap(), "--json"]))).unwrap();
    assert_eq!(engineers[0]["skills"], serde_json::json!(["mixing", "tracking"]));
    assert_eq!(engineers[0]["email"], "priya@example.com");
}

/// Issue 22: `serve` without `--db` says at start-up that it made an empty `studioflow.db`, where,
/// and how to load a studio.
#[test]
fn serve_on_an_empty_database_says_so_and_how_to_load_a_studio() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_studioflow"))
        .arg("serve")
        .current_dir(dir.path())
        .env_remove("STUDIOFLOW_DB")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = stderr(&out);
    let path = std::fs::canonicalize(dir.path().join("studioflow.db")).unwrap();
    assert!(text.contains(&format!("studioflow.db holds no studio yet, a new file created just now at {}", path.display())), "{text}");
    assert!(text.contains("studioflow init --db studioflow.db --demo") && text.contains("studioflow serve --demo"), "{text}");
    // The second time the file exists: it is still empty, and still said.
    let again = Command::new(env!("CARGO_BIN_EXE_studioflow")).arg("serve").current_dir(dir.path()).env_remove("STUDIOFLOW_DB").stdin(std::process::Stdio::null()).output().unwrap();
    assert!(stderr(&again).contains("holds no studio yet:"), "{}", stderr(&again));
}

/// The history's readers can follow tokens and tasks too (issue 21 made them events; issue 23
/// made the tool's filter the store's own list of what a change can be about).
#[test]
fn list_changes_filters_token_events() {
    use crate::mcp_client::{stdio, Mcp};
    let db = temp_db();
    assert!(studioflow(&["init", "--db", db.path.to_str().unwrap(), "--demo"]).status.success());
    assert!(studioflow(&["token", "create", "--db", db.path.to_str().unwrap(), "--name", "agent", "--scope", "studio:read"]).status.success());
    let mut s = stdio(&db.path, &[]);
    let changes = s.ok("list_changes", serde_json::json!({"entity": "token"}));
    let events = changes["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{changes}");
    assert_eq!((events[0]["entity"].as_str(), events[0]["action"].as_str()), (Some("token"), Some("created")));
}
