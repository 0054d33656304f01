//! Remote access on the real binary over HTTP: start-up refuses a network address without
//! authentication; the protected resource metadata; 401, 403 and 429 with their headers; API
//! tokens created, used, revoked and expired; scopes decided before a tool runs; tasks owned by
//! the principal that created them, and cancelled when its token is revoked; the history naming
//! the principal. The tests that keep something in the database (tokens, their last use, task
//! owners, revocations, the history) run on both backends; the HTTP edge's own rules (start-up
//! flags, metadata, 401, rate limits, OAuth, logs) run once, on SQLite.

use crate::mcp_client::{http, meta, stdio, Answer, HttpServer, Mcp};
use crate::support::{on_both, temp_db, TestDb};
use std::ffi::OsStr;
use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};

/// `studioflow token create`; returns the secret it printed.
pub fn create_token(db: impl AsRef<OsStr>, name: &str, scopes: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_studioflow"))
        .args(["token", "create"])
        .arg("--db")
        .arg(db)
        .args(["--name", name, "--scope", scopes])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "token create: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    let secret = stdout.split_whitespace().find(|word| word.starts_with("sft_")).unwrap_or_else(|| panic!("no secret in {stdout}"));
    secret.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_').to_owned()
}

/// A demo studio in `db`, with authentication required on loopback.
fn demo_server(db: &TestDb, extra: &[&str]) -> HttpServer {
    let mut args = vec!["--demo", "--require-auth"];
    args.extend_from_slice(extra);
    http(db, &args)
}

/// A `tools/list` request, as raw JSON-RPC.
fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta(json!({}))}})
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": meta(json!({}))}})
}

fn with_bearer(server: &HttpServer, message: &Value, token: &str) -> Answer {
    server.post(message, &[("Authorization", &format!("Bearer {token}"))])
}

fn json_body(answer: &Answer) -> Value {
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("HTTP {}: not JSON ({e}): {}", answer.status, answer.body))
}

#[test]
fn start_up_refuses_a_network_address_without_authentication() {
    let db = temp_db();
    let serve = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_studioflow")).args(["serve", "--db", db.path.to_str().unwrap()]).args(args).output().unwrap()
    };
    let out = serve(&["--http", "0.0.0.0:0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("studioflow token create") && stderr.contains("--require-auth") && stderr.contains("--oauth-issuer"), "{stderr}");
    // Authentication is for HTTP: stdio runs as the local user.
    let out = serve(&["--require-auth"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    // An issuer needs the resource it issues tokens for; a resource must be a URL.
    let out = serve(&["--http", "127.0.0.1:0", "--oauth-issuer", "https://issuer.example.com"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let out = serve(&["--http", "127.0.0.1:0", "--require-auth", "--resource", "studio.example.com/mcp"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("absolute http(s) URL"), "{stderr}");
    // An OAuth issuer must be https, except on loopback.
    let out = serve(&["--http", "127.0.0.1:0", "--oauth-issuer", "http://issuer.example.com", "--resource", "http://127.0.0.1:1/mcp"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_protected_resource_metadata_is_served_at_both_places() {
    let db = TestDb::sqlite();
    let server = demo_server(&db, &[]);
    let token = create_token(&db, "reader", "studio:read");
    let resource = format!("http://{}/mcp", server.address);
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let answer = server.raw_at("GET", path, &[], "");
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        assert!(answer.header("content-type").is_some_and(|t| t.starts_with("application/json")));
        let metadata = json_body(&answer);
        assert_eq!(metadata["resource"], json!(resource));
        assert_eq!(metadata["scopes_supported"], json!(["studio:read", "bookings:write", "studio:manage", "reflow:apply"]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
        assert!(metadata.get("authorization_servers").is_none(), "no issuer is configured: {metadata}");
        // Every tool is in the scope table.
        let tools = json_body(&with_bearer(&server, &tools_list(), &token));
        for tool in tools["result"]["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            assert!(metadata["tool_scopes"][name].is_string(), "{name} has no scope in {metadata}");
        }
    }
    // Without authentication there is nothing to describe.
    let open = http(&temp_db().path, &[]);
    assert_eq!(open.raw_at("GET", "/.well-known/oauth-protected-resource", &[], "").status, 404);
}

#[test]
fn without_a_good_token_the_answer_is_401_with_the_metadata_url() {
    let db = TestDb::sqlite();
    let server = demo_server(&db, &[]);
    let metadata = format!("http://{}/.well-known/oauth-protected-resource/mcp", server.address);
    let answer = server.post(&tools_list(), &[]);
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(answer.header("www-authenticate"), Some(format!("Bearer resource_metadata=\"{metadata}\"").as_str()));
    for bad in ["Bearer sft_not_a_token", "Bearer eyJhbGciOiJSUzI1NiJ9.e30.x", "Basic dXNlcjpwYXNz", "Bearer"] {
        let answer = server.post(&tools_list(), &[("Authorization", bad)]);
        assert_eq!(answer.status, 401, "{bad}: {}", answer.body);
        let challenge = answer.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer error=\"invalid_token\"") && challenge.contains(&metadata), "{bad}: {challenge}");
        assert!(!answer.body.contains("dXNlcjpwYXNz") && !answer.body.contains("sft_not_a_token"), "the token is echoed: {}", answer.body);
    }
    // GET is refused the same way before the transport's 405.
    assert_eq!(server.raw("GET", &[], "").status, 401);
}

/// Issue 21 item 5: the README's number holds (20 failed authentications a minute per address,
/// by default), and only failing requests are refused past it: a valid token from the same
/// address (a studio's NAT) is served.
#[test]
fn failed_authentications_from_one_source_are_limited_without_locking_out_valid_tokens() {
    let db = TestDb::sqlite();
    let server = demo_server(&db, &[]);
    let token = create_token(&db, "agent", "studio:read");
    let answers: Vec<Answer> = (0..25).map(|_| server.post(&tools_list(), &[("Authorization", "Bearer sft_wrong")])).collect();
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses[..20], [401; 20], "{statuses:?}");
    assert_eq!(statuses[20..], [429; 5], "the 21st failure of the minute and after: {statuses:?}");
    let wait: u64 = answers[20].header("retry-after").unwrap().parse().unwrap();
    eprintln!("25 wrong tokens: {statuses:?}; Retry-After {wait} s");
    assert!((50..=60).contains(&wait), "Retry-After {wait}: until the first failure is a minute old");
    // A valid token from the same address is served, at once and again.
    for _ in 0..3 {
        assert_eq!(with_bearer(&server, &tools_list(), &token).status, 200);
    }
    // Failing requests of that address still wait: a bad token, a malformed header, none at all.
    assert_eq!(server.post(&tools_list(), &[("Authorization", "Bearer sft_wrong")]).status, 429);
    assert_eq!(server.post(&tools_list(), &[("Authorization", "Basic dXNlcjpwYXNz")]).status, 429);
    let none = server.post(&tools_list(), &[]);
    assert_eq!(none.status, 429, "{}", none.body);
    assert!(none.header("retry-after").is_some());
}

#[test]
fn a_principal_over_its_rate_gets_429_with_retry_after() {
    // 8 a minute, in bursts of 2.
    let db = TestDb::sqlite();
    let server = demo_server(&db, &["--rate-limit", "8"]);
    let token = create_token(&db, "busy-agent", "studio:read");
    let statuses: Vec<u16> = (0..3).map(|_| with_bearer(&server, &tools_list(), &token).status).collect();
    assert_eq!(statuses, [200, 200, 429]);
    // Another principal has a rate of its own.
    let other = create_token(&db, "calm-agent", "studio:read");
    assert_eq!(with_bearer(&server, &tools_list(), &other).status, 200);
}

on_both! {
    fn api_tokens_are_used_revoked_and_expire_and_the_secret_is_stored_nowhere(db) {
        let server = demo_server(db, &[]);
        let token = create_token(db, "front-desk", "studio:read,bookings:write");
        let answer = with_bearer(&server, &call("list_rooms", json!({})), &token);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_ne!(json_body(&answer)["result"]["isError"], json!(true));
        // Last used is recorded (just after the answer).
        let deadline = Instant::now() + Duration::from_secs(10);
        let used = loop {
            let used: Option<i64> = db.text("SELECT last_used_at FROM api_tokens WHERE name = 'front-desk'").map(|at| at.parse().unwrap());
            if used.is_some() || Instant::now() > deadline {
                break used;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(used.is_some_and(|at| (chrono::Utc::now().timestamp() - at).abs() < 60), "last_used_at {used:?}");
        // Revoked: 401 from the next request on.
        let id = db.text("SELECT id FROM api_tokens WHERE name = 'front-desk'").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(["token", "revoke", "--db", db.db_arg(), &id]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let answer = with_bearer(&server, &tools_list(), &token);
        assert_eq!(answer.status, 401);
        assert!(answer.header("www-authenticate").unwrap_or_default().contains("invalid_token"));
        // Expired: 401.
        let late = create_token(db, "temp", "studio:read");
        assert_eq!(with_bearer(&server, &tools_list(), &late).status, 200);
        db.exec(&format!("UPDATE api_tokens SET expires_at = {} WHERE name = 'temp'", chrono::Utc::now().timestamp() - 1));
        let answer = with_bearer(&server, &tools_list(), &late);
        assert_eq!(answer.status, 401, "{}", answer.body);
        assert!(answer.body.contains("expired"), "{}", answer.body);
        // The secrets are nowhere in the database.
        drop(server);
        for secret in [&token, &late] {
            assert!(!db.holds(secret.as_bytes()), "the database holds a secret");
        }
    }

    fn a_missing_scope_is_403_naming_it_and_changes_nothing(db) {
        let server = demo_server(db, &[]);
        let reader = create_token(db, "reader", "studio:read");
        let count = || db.scalar("SELECT COUNT(*) FROM bookings");
        let before = count();
        let booking = json!({"room": "studio-a", "client": "client-001", "start": "2026-09-21T10:00", "end": "2026-09-21T11:00"});
        let cases = [
            (call("create_booking", booking), "bookings:write"),
            (call("set_room_offline", json!({"room": "studio-a", "from": "2026-10-01T00:00", "to": "2026-10-02T00:00", "reason": "x"})), "studio:manage"),
            (call("reflow_month", json!({"month": "2026-09", "offline_rooms": ["studio-b"]})), "reflow:apply"),
            (call("undo_reflow", json!({"reflow_id": "r1"})), "reflow:apply"),
        ];
        for (message, scope) in cases {
            let answer = with_bearer(&server, &message, &reader);
            assert_eq!(answer.status, 403, "{message}: {}", answer.body);
            let challenge = answer.header("www-authenticate").unwrap_or_default();
            assert!(challenge.contains("error=\"insufficient_scope\"") && challenge.contains(&format!("scope=\"studio:read {scope}\"")), "{challenge}");
            assert!(challenge.contains("resource_metadata="), "{challenge}");
        }
        assert_eq!(count(), before, "a forbidden call changed the bookings");
        // A dry run is a read.
        let answer = with_bearer(&server, &call("reflow_month", json!({"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": true})), &reader);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(count(), before);
        // The synchronous reflow's task is the principal's too.
        let owner = db.text("SELECT owner FROM tasks ORDER BY created_ms DESC LIMIT 1");
        assert!(owner.as_deref().is_some_and(|o| o.starts_with("token:tok_")), "{owner:?}");
    }
}

/// Starts a reflow task as `token`; returns its id.
fn start_task(server: &HttpServer, token: &str) -> String {
    let message = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "reflow_month",
        "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"], "require_approval": true},
        "_meta": meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})),
    }});
    let answer = with_bearer(server, &message, token);
    let body = json_body(&answer);
    body["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {body}")).to_owned()
}

fn task_request(server: &HttpServer, token: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    json_body(&with_bearer(server, &json!({"jsonrpc": "2.0", "id": 4, "method": method, "params": params}), token))
}

on_both! {
    fn a_task_is_seen_only_by_the_principal_that_created_it(db) {
        let args = ["--demo", "--require-auth", "--test-solve-delay-ms", "50"];
        let server = http(db, &args);
        let a = create_token(db, "agent-a", "studio:read,reflow:apply");
        let b = create_token(db, "agent-b", "studio:read,reflow:apply");
        let task = start_task(&server, &a);
        let unknown = "tsk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        // B gets exactly what an id never issued gets, on get, update and cancel.
        let answer = json!({"action": "accept", "content": {}});
        for (method, params) in [
            ("tasks/get", json!({"taskId": task})),
            ("tasks/update", json!({"taskId": task, "inputResponses": {"approve": answer}})),
            ("tasks/cancel", json!({"taskId": task})),
        ] {
            let as_b = task_request(&server, &b, method, params.clone());
            let mut for_unknown = params.clone();
            for_unknown["taskId"] = json!(unknown);
            let never = task_request(&server, &b, method, for_unknown);
            assert_eq!(as_b["error"]["code"], -32602, "{method}: {as_b}");
            assert_eq!(as_b["error"]["message"].as_str().map(|m| m.replace(&task, "ID")), never["error"]["message"].as_str().map(|m| m.replace(unknown, "ID")), "{method}");
        }
        // B cannot start a second reflow of the month, and is not told the id of A's task.
        let message = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "reflow_month",
            "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"]},
            "_meta": meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})),
        }});
        let refused = json_body(&with_bearer(&server, &message, &b)).to_string();
        assert!(refused.contains("already under way") && !refused.contains(&task), "{refused}");
        // A's task is untouched: it reaches its question, and A answers it.
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            let got = task_request(&server, &a, "tasks/get", json!({"taskId": task}));
            let status = got["result"]["status"].as_str().unwrap_or_default().to_owned();
            if status != "working" || Instant::now() > deadline {
                break status;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(status, "input_required");
        // The owner survives a restart.
        drop(server);
        let server = http(db, &["--require-auth"]);
        assert_eq!(task_request(&server, &b, "tasks/get", json!({"taskId": task}))["error"]["code"], -32602);
        let got = task_request(&server, &a, "tasks/get", json!({"taskId": task}));
        assert_eq!(got["result"]["status"], "input_required", "{got}");
        let owner = db.text(&format!("SELECT owner FROM tasks WHERE id = '{task}'")).unwrap();
        assert!(owner.starts_with("token:tok_"), "{owner}");
    }

    fn the_history_names_the_principal(db) {
        let server = demo_server(db, &[]);
        let writer = create_token(db, "front-desk", "studio:read,bookings:write");
        let free = json_body(&with_bearer(&server, &call("find_free_slots", json!({"from": "2026-10-14T10:00", "to": "2026-10-14T20:00", "duration_minutes": 60})), &writer));
        let slot = free["result"]["structuredContent"]["slots"][0].clone();
        let booking = json!({"room": slot["room"], "client": "client-001", "start": slot["start"], "end": slot["end"]});
        let answer = with_bearer(&server, &call("create_booking", booking), &writer);
        let body = json_body(&answer);
        assert_ne!(body["result"]["isError"], json!(true), "{body}");
        assert_eq!(db.text("SELECT who FROM events ORDER BY seq DESC LIMIT 1").unwrap(), "front-desk");
    }
}

/// `studioflow ARGS` on the test's database; exits 0 or the test fails with what it said.
fn studioflow_ok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(args).env("RUST_LOG", "warn").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The id of the token named `name`.
fn token_id(db: &TestDb, name: &str) -> String {
    db.text(&format!("SELECT id FROM api_tokens WHERE name = '{name}'")).unwrap()
}

/// Polls a task as its owner until it leaves `working` (or 60 s pass); its status.
fn settled(server: &HttpServer, token: &str, task: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = task_request(server, token, "tasks/get", json!({"taskId": task}));
        let status = got["result"]["status"].as_str().unwrap_or_default().to_owned();
        if status != "working" || Instant::now() > deadline {
            return status;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

on_both! {
    /// Issue 21 item 4, as reported: a revoked token's task waiting for approval locked its month
    /// until it expired, and nobody else could cancel it. Revoking the token cancels it, in the
    /// same transaction, recorded in the history; the month is free at once.
    fn revoking_a_token_cancels_its_tasks_and_frees_their_month(db) {
        let server = http(db, &["--demo", "--require-auth", "--test-solve-delay-ms", "20"]);
        let x = create_token(db, "x", "studio:read,reflow:apply");
        let other = create_token(db, "other", "studio:read,reflow:apply");
        let task = start_task(&server, &x);
        assert_eq!(settled(&server, &x, &task), "input_required");
        let before = crate::tasks::places(db);

        let id = token_id(db, "x");
        let said = studioflow_ok(&["token", "revoke", "--db", db.db_arg(), &id]);
        assert!(said.contains(&format!("Cancelled its task {task} (input_required, reflow of 2026-09)")), "{said}");
        assert_eq!(with_bearer(&server, &tools_list(), &x).status, 401, "the token no longer works");

        // The task is cancelled, naming the revocation, and nothing was moved.
        let row = db.rows(&format!("SELECT status, status_message, lease_token FROM tasks WHERE id = '{task}'"));
        assert_eq!((row[0][0].as_deref(), row[0][2].as_deref()), (Some("cancelled"), None), "cancelled, its lease ended");
        let message = row[0][1].clone().unwrap();
        assert!(message.contains(&id) && message.contains("\"x\"") && message.contains("revoked"), "{message}");
        assert_eq!(crate::tasks::places(db), before);
        assert_eq!(db.scalar("SELECT COUNT(*) FROM reflows WHERE applied = 1"), 0);

        // The history records the revocation and the task it cancelled, as the operator's.
        let events = db.rows("SELECT who, via, entity, entity_id, action, after FROM events WHERE entity IN ('token', 'task') ORDER BY seq");
        let kinds: Vec<(String, String, String)> = events.iter().map(|e| (e[2].clone().unwrap(), e[3].clone().unwrap(), e[4].clone().unwrap())).collect();
        let other_id = token_id(db, "other");
        assert_eq!(kinds, [
            ("token".to_owned(), id.clone(), "created".to_owned()),
            ("token".to_owned(), other_id, "created".to_owned()),
            ("task".to_owned(), task.clone(), "cancelled".to_owned()),
            ("token".to_owned(), id.clone(), "revoked".to_owned()),
        ]);
        for event in &events {
            assert_eq!(event[0].as_deref(), Some("operator"), "{event:?}");
        }
        assert_eq!(events[2][1].as_deref(), Some("token revoke"));
        let task_after: Value = serde_json::from_str(events[2][5].as_deref().unwrap()).unwrap();
        assert_eq!(task_after["status"], "cancelled");
        assert!(task_after["status_message"].as_str().unwrap().contains("revoked"), "{task_after}");
        let token_after: Value = serde_json::from_str(events[3][5].as_deref().unwrap()).unwrap();
        assert_eq!(token_after, json!({"status": "revoked", "tasks_cancelled": [task]}));

        // Other principals, and the local user on stdio, still cannot see the task...
        assert_eq!(task_request(&server, &other, "tasks/cancel", json!({"taskId": task}))["error"]["code"], -32602);
        let mut local = stdio(db, &[]);
        assert_eq!(local.tasks_request("tasks/cancel", json!({"taskId": task}))["error"]["code"], -32602);
        drop(local);
        // ...and need not: the month is free for anyone.
        let again = start_task(&server, &other);
        assert_ne!(again, task);
        assert_eq!(settled(&server, &other, &again), "input_required");
    }

    /// Issue 21 item 4: a solve under way when its token is revoked stops (the runner finds the
    /// task cancelled when it next reports or renews its lease), and applies nothing.
    fn revoking_a_token_stops_its_running_solve_and_applies_nothing(db) {
        let log = db.file("server.log");
        let server = crate::mcp_client::http_logged(db, &["--demo", "--require-auth", "--test-solve-delay-ms", "150", "--task-lease", "3"], &log);
        let x = create_token(db, "x", "studio:read,reflow:apply");
        let before = crate::tasks::places(db);
        let message = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "reflow_month",
            "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"]},
            "_meta": meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})),
        }});
        let task = json_body(&with_bearer(&server, &message, &x))["result"]["taskId"].as_str().unwrap().to_owned();
        // Wait until the solve is surely under way.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = task_request(&server, &x, "tasks/get", json!({"taskId": task}));
            assert_eq!(got["result"]["status"], "working", "{got}");
            if got["result"]["statusMessage"].as_str().unwrap_or_default().contains("parts solved") {
                break;
            }
            assert!(Instant::now() < deadline, "the solve never started: {got}");
            std::thread::sleep(Duration::from_millis(50));
        }

        let revoked_at = Instant::now();
        studioflow_ok(&["token", "revoke", "--db", db.db_arg(), &token_id(db, "x")]);
        let stopped = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("stopping its solve") {
                break revoked_at.elapsed();
            }
            assert!(revoked_at.elapsed() < Duration::from_secs(10), "the solve did not stop:\n{text}");
            std::thread::sleep(Duration::from_millis(20));
        };
        eprintln!("the solve stopped {} ms after the revocation", stopped.as_millis());
        assert!(stopped < Duration::from_secs(3), "{stopped:?}: within the lease's renewal (1 s) and a report");
        // Whatever the runner had planned, nothing of it is applied, now or later.
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(db.text(&format!("SELECT status FROM tasks WHERE id = '{task}'")).as_deref(), Some("cancelled"));
        assert_eq!(crate::tasks::places(db), before);
        assert_eq!(db.scalar("SELECT COUNT(*) FROM reflows"), 0, "no plan recorded either");
        drop(server);
    }
}

#[test]
fn oauth_access_tokens_are_checked_over_http() {
    use crate::support::issuer::{mint, mint_alg_none, mint_hs256_with_public_key, now, TestIssuer, TestKey};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let issuer = runtime.block_on(TestIssuer::start());
    // The resource is the public URL tokens are for; any host of it is accepted.
    let resource = "http://studio.test/mcp";
    let db = TestDb::sqlite();
    let server = http(&db, &["--demo", "--oauth-issuer", issuer.url(), "--resource", resource, "--oauth-key-refresh", "0", "--auth-failure-limit", "1000"]);
    // The metadata names the issuer.
    let metadata = json_body(&server.raw_at("GET", "/.well-known/oauth-protected-resource/mcp", &[], ""));
    assert_eq!(metadata["resource"], resource);
    assert_eq!(metadata["authorization_servers"], json!([issuer.url()]));
    let challenge = "resource_metadata=\"http://studio.test/.well-known/oauth-protected-resource/mcp\"";

    let good = issuer.claims(resource, "agent@example.com", "studio:read bookings:write");
    let status = |token: &str| with_bearer(&server, &tools_list(), token).status;
    assert_eq!(status(&issuer.mint_rs256(&good)), 200);
    assert_eq!(status(&issuer.mint_es256(&good)), 200);
    let changed = |changes: Value| {
        let mut claims = good.clone();
        for (name, value) in changes.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let refused = [
        ("expired", issuer.mint_rs256(&changed(json!({"exp": now() - 600})))),
        ("not yet valid", issuer.mint_rs256(&changed(json!({"nbf": now() + 600})))),
        ("wrong issuer", issuer.mint_rs256(&changed(json!({"iss": "https://other.example.com"})))),
        ("wrong audience", issuer.mint_rs256(&changed(json!({"aud": "http://elsewhere.test/mcp"})))),
        ("alg none", mint_alg_none(&good)),
        ("HS256 keyed with the public key", mint_hs256_with_public_key(&good)),
        ("unknown kid", mint(TestKey::Rsa2, &good)),
    ];
    for (case, token) in &refused {
        let answer = with_bearer(&server, &tools_list(), token);
        assert_eq!(answer.status, 401, "{case}: {}", answer.body);
        let header = answer.header("www-authenticate").unwrap_or_default();
        assert!(header.contains("error=\"invalid_token\"") && header.contains(challenge), "{case}: {header}");
    }
    // After the issuer rotates to rsa-2, its tokens are known (the unknown kid fetches the keys again).
    issuer.rotate(&[TestKey::Rsa2, TestKey::Ec1]);
    assert_eq!(status(&mint(TestKey::Rsa2, &good)), 200);
    // A scope the token lacks: 403 naming it.
    let answer = with_bearer(&server, &call("set_room_offline", json!({})), &issuer.mint_es256(&good));
    assert_eq!(answer.status, 403);
    // The scope to ask for: what the token has, and what the call needs.
    assert!(answer.header("www-authenticate").unwrap_or_default().contains("scope=\"studio:read bookings:write studio:manage\""));
    // The history names the token's subject.
    let free = json_body(&with_bearer(&server, &call("find_free_slots", json!({"from": "2026-10-14T10:00", "to": "2026-10-14T20:00", "duration_minutes": 60})), &issuer.mint_es256(&good)));
    let slot = free["result"]["structuredContent"]["slots"][0].clone();
    let booking = json!({"room": slot["room"], "client": "client-001", "start": slot["start"], "end": slot["end"]});
    let body = json_body(&with_bearer(&server, &call("create_booking", booking), &issuer.mint_es256(&good)));
    assert_ne!(body["result"]["isError"], json!(true), "{body}");
    assert_eq!(db.text("SELECT who FROM events ORDER BY seq DESC LIMIT 1").unwrap(), "agent@example.com");
    drop(server);
    drop(issuer);
}

/// Issue 21 item 6: an access token's `scope` is what it grants (RFC 9068); `scp` counts only
/// when there is no `scope`. `scope: "studio:read"` with `scp: ["bookings:write"]` cannot write.
#[test]
fn an_access_tokens_scope_claim_is_not_widened_by_scp() {
    use crate::support::issuer::TestIssuer;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let issuer = runtime.block_on(TestIssuer::start());
    let resource = "http://studio.test/mcp";
    let db = TestDb::sqlite();
    let server = http(&db, &["--demo", "--oauth-issuer", issuer.url(), "--resource", resource]);
    let token = |changes: Value| {
        let mut claims = issuer.claims(resource, "agent@example.com", "studio:read");
        for (name, value) in changes.as_object().unwrap() {
            if value.is_null() {
                claims.as_object_mut().unwrap().remove(name);
            } else {
                claims[name] = value.clone();
            }
        }
        issuer.mint_rs256(&claims)
    };

    let read_only = token(json!({"scp": ["bookings:write"]}));
    let free = json_body(&with_bearer(&server, &call("find_free_slots", json!({"from": "2026-10-14T10:00", "to": "2026-10-14T20:00", "duration_minutes": 60})), &read_only));
    let slot = free["result"]["structuredContent"]["slots"][0].clone();
    let booking = json!({"room": slot["room"], "client": "client-001", "start": slot["start"], "end": slot["end"]});
    let answer = with_bearer(&server, &call("create_booking", booking.clone()), &read_only);
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(answer.header("www-authenticate").unwrap_or_default().contains("scope=\"studio:read bookings:write\""));
    assert_eq!(with_bearer(&server, &call("list_rooms", json!({})), &read_only).status, 200, "it still reads");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM events WHERE who = 'agent@example.com'"), 0, "nothing was written");

    // Without `scope`, `scp` is read: the same booking goes through the scope check.
    let by_scp = token(json!({"scope": null, "scp": ["studio:read", "bookings:write"]}));
    let answer = with_bearer(&server, &call("create_booking", booking), &by_scp);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_ne!(json_body(&answer)["result"]["isError"], json!(true), "{}", answer.body);
    assert_eq!(db.text("SELECT who FROM events ORDER BY seq DESC LIMIT 1").unwrap(), "agent@example.com");
    drop(server);
    drop(issuer);
}

#[test]
fn studioflow_client_says_what_to_do_about_a_missing_token_or_scope() {
    let db = TestDb::sqlite();
    let server = demo_server(&db, &[]);
    let reader = create_token(&db, "reader", "studio:read");
    let state = db.file("client-state.json");
    let client = |token: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_studioflow"));
        command.args(["client", "--server", &format!("http://{}", server.address), "--state", state.to_str().unwrap()]);
        command.args(["reflow", "--month", "2026-09", "--offline", "studio-b"]).env_remove("STUDIOFLOW_TOKEN");
        if let Some(token) = token {
            command.args(["--token", token]);
        }
        let out = command.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stderr) = client(None);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--token") && stderr.contains("401"), "{stderr}");
    let (code, stderr) = client(Some(&reader));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("reflow:apply") && stderr.contains("403"), "{stderr}");
}

#[test]
fn credentials_never_reach_the_logs_and_failures_name_their_source() {
    let db = TestDb::sqlite();
    let log = db.file("server.log");
    let server = crate::mcp_client::http_logged(db.path().unwrap(), &["--demo", "--require-auth"], &log);
    let token = create_token(&db, "logged-agent", "studio:read");
    assert_eq!(with_bearer(&server, &call("list_rooms", json!({})), &token).status, 200);
    let wrong = "sft_thisisnotatokenbutlookslikeone";
    assert_eq!(with_bearer(&server, &tools_list(), wrong).status, 401);
    let id = db.text("SELECT id FROM api_tokens").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(["token", "revoke", "--db", db.db_arg(), &id]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(with_bearer(&server, &tools_list(), &token).status, 401);
    // Let the logger catch up, then stop the server.
    std::thread::sleep(Duration::from_millis(300));
    assert!(server.terminate(Duration::from_secs(10)));
    let text = std::fs::read_to_string(&log).unwrap();
    for secret in [token.as_str(), wrong, &token[4..]] {
        assert!(!text.contains(secret), "a credential is in the log:\n{text}");
    }
    let refusals: Vec<&str> = text.lines().filter(|line| line.contains("refused a credential")).collect();
    assert_eq!(refusals.len(), 2, "{text}");
    assert!(refusals.iter().all(|line| line.contains("source=127.0.0.1")), "{refusals:?}");
    assert!(refusals[1].contains("revoked"), "{refusals:?}");
}

on_both! {
    fn a_2025_11_25_client_sees_and_lists_only_its_principals_tasks(db) {
        let server = demo_server(db, &[]);
        let a = create_token(db, "legacy-a", "studio:read,reflow:apply");
        let b = create_token(db, "legacy-b", "studio:read,reflow:apply");
        let legacy = |token: &str, method: &str, params: Value| {
            let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let bearer = format!("Bearer {token}");
            let headers = [
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", bearer.as_str()),
            ];
            json_body(&server.raw("POST", &headers, &message.to_string()))
        };
        let created = legacy(&a, "tools/call", json!({"name": "reflow_month", "arguments": {"month": "2026-09", "offline_rooms": ["studio-b"]}, "task": {}}));
        let id = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
        // A lists it (stateless HTTP, but the principal is known); B neither lists nor reads it.
        let listed = legacy(&a, "tasks/list", json!({}));
        assert_eq!(listed["result"]["tasks"].as_array().map(|t| t.iter().map(|t| t["taskId"].clone()).collect::<Vec<_>>()), Some(vec![json!(id)]));
        assert_eq!(legacy(&b, "tasks/list", json!({}))["result"]["tasks"], json!([]));
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            assert_eq!(legacy(&b, method, json!({"taskId": id}))["error"]["code"], -32602, "{method}");
        }
        let result = legacy(&a, "tasks/result", json!({"taskId": id}));
        assert!(result["result"]["structuredContent"]["affected"].as_u64().is_some_and(|n| n > 100), "{result}");
    }
}
