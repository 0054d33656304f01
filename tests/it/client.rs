//! `studioflow client` against the real server binary: clients killed with `kill -9` at random
//! instants and resumed, the server's own log of `tasks/get` checked against each task's poll
//! interval, an expired task forgotten without a second reflow, the approval gate answered by flag
//! and by a person at a pseudo-terminal, Ctrl-C and cancel, stdio, a server that restarts under
//! its client, and a busy one that asks for a `Retry-After`. The tests where the server's database
//! matters (an expired task, the approval gate, Ctrl-C and cancel, a server restarted over stdio)
//! run on both backends; the others are about the client and run once, on SQLite.

use crate::support::{on_both, TestDb};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_studioflow");

/// A demo database made once per test run; each test works on its own copy.
fn template() -> &'static Path {
    static TEMPLATE: OnceLock<(TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.db");
        let out = Command::new(BIN).args(["init", "--db", path.to_str().unwrap(), "--demo"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (dir, path)
    });
    path
}

/// The demo studio in a test database (on SQLite a copy of the template, on PostgreSQL written
/// by `init`), and room for a state file.
struct Scene<'a> {
    db: &'a TestDb,
}

impl Scene<'_> {
    fn on(db: &TestDb) -> Scene<'_> {
        match db.path() {
            Some(path) => drop(std::fs::copy(template(), path).unwrap()),
            None => {
                let out = Command::new(BIN).args(["init", "--db", db.db_arg(), "--demo"]).output().unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            }
        }
        Scene { db }
    }

    /// What the server's `--db` takes.
    fn db(&self) -> &str {
        self.db.db_arg()
    }

    fn state(&self) -> PathBuf {
        self.db.file("state/tasks.json")
    }

    fn sql(&self, query: &str) -> i64 {
        self.db.scalar(query)
    }

    /// The saved tasks' ids (none when there is no file yet).
    fn saved(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(self.state()) else { return Vec::new() };
        let state: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("a torn state file ({e}): {text:?}"));
        state["tasks"].as_array().unwrap().iter().map(|t| t["task_id"].as_str().unwrap().to_owned()).collect()
    }

    /// Waits until the state file holds a task, and returns its id.
    fn wait_saved(&self, child: &mut Child) -> String {
        let started = Instant::now();
        loop {
            if let Some(id) = self.saved().pop() {
                return id;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the client ended ({status}) before saving a task");
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no task was saved");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A client command with the state file of this scene.
    fn client(&self, server: &[&str], args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command.arg("client").args(server).args(args).arg("--state").arg(self.state());
        command.env_remove("STUDIOFLOW_TOKEN").env("RUST_LOG", "error");
        command
    }

    /// How many reflows were applied to the database.
    fn applied_reflows(&self) -> i64 {
        self.sql("SELECT COUNT(*) FROM reflows WHERE applied = 1")
    }
}

/// `studioflow serve --http` whose log (RUST_LOG=studioflow=debug) is kept, for the `tasks/get` lines.
struct Server {
    child: Child,
    url: String,
    log: Arc<Mutex<Vec<String>>>,
}

fn serve(scene: &Scene, extra: &[&str]) -> Server {
    serve_at(scene, "127.0.0.1:0", extra)
}

fn serve_at(scene: &Scene, address: &str, extra: &[&str]) -> Server {
    let mut child = Command::new(BIN)
        .args(["serve", "--db", scene.db(), "--http", address])
        .args(extra)
        .env("RUST_LOG", "studioflow=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server exited before listening");
        if let Some(rest) = line.trim().strip_prefix("studioflow: serving MCP at ") {
            break rest.to_owned();
        }
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let lines = log.clone();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            lines.lock().unwrap().push(line);
        }
    });
    Server { child, url, log }
}

impl Server {
    fn flags(&self) -> [&str; 2] {
        ["--server", self.url.as_str()]
    }

    /// When the server saw each `tasks/get`, by task.
    fn polls(&self) -> BTreeMap<String, Vec<chrono::DateTime<chrono::Utc>>> {
        let mut polls: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for line in self.log.lock().unwrap().iter() {
            let Some((_, rest)) = line.split_once("tasks/get task_id=") else { continue };
            let id = rest.split_whitespace().next().unwrap().to_owned();
            let at = line.split_whitespace().next().unwrap();
            let at = chrono::DateTime::parse_from_rfc3339(at).unwrap_or_else(|e| panic!("{e}: {line}"));
            polls.entry(id).or_default().push(at.to_utc());
        }
        polls
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shortest time between two `tasks/get` of one task, against the task's poll interval.
fn closest_polls(server: &Server, scene: &Scene, task_id: &str) -> (Duration, Duration, usize) {
    let polls = server.polls();
    let times = polls.get(task_id).unwrap_or_else(|| panic!("the server saw no tasks/get for {task_id}"));
    let closest = times.windows(2).map(|w| (w[1] - w[0]).to_std().unwrap()).min().unwrap_or(Duration::MAX);
    let interval = scene.sql(&format!("SELECT poll_interval_ms FROM tasks WHERE id = '{task_id}'"));
    (closest, Duration::from_millis(interval as u64), times.len())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(mut command: Command) -> Output {
    command.output().unwrap()
}

/// A small random number generator, seeded from the clock; the seed is printed to replay a run.
struct Random(u64);

impl Random {
    fn new() -> Random {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
        println!("kill instants seeded with {seed}");
        Random(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        // xorshift64
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One repetition: a client killed `kill_after` after its task was saved, then `client resume`.
/// Returns the closest two polls of the task, its interval, how many polls the server saw, and
/// whether `resume` found the task still saved.
fn kill_and_resume(kill_after: Duration) -> (Duration, Duration, usize, bool) {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let server = serve(&scene, &["--test-solve-delay-ms", "60"]);
    let mut client = scene
        .client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let task_id = scene.wait_saved(&mut client);
    std::thread::sleep(kill_after);
    client.kill().unwrap(); // SIGKILL
    client.wait().unwrap();

    let resumed = run(scene.client(&[], &["resume"]));
    let said = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "resume: {said}");
    // The task may have ended (and been forgotten) before the kill; then there was nothing to resume.
    let resumed_it = said.contains("Resuming");
    if resumed_it {
        assert!(said.contains(&task_id), "{said}");
        assert!(text(&resumed.stdout).contains("moved 124, unresolved 17"), "{}", text(&resumed.stdout));
    }
    assert!(scene.saved().is_empty(), "the state file is empty at the end");
    assert_eq!(scene.applied_reflows(), 1, "exactly one reflow of the month was applied");
    assert_eq!(scene.sql("SELECT COUNT(*) FROM tasks"), 1, "no second reflow was started");
    assert_eq!(scene.sql("SELECT COUNT(*) FROM tasks WHERE status = 'completed'"), 1);
    let (closest, interval, polls) = closest_polls(&server, &scene, &task_id);
    assert!(closest >= interval, "two tasks/get {closest:?} apart, under the poll interval {interval:?}");
    (closest, interval, polls, resumed_it)
}

#[test]
fn clients_killed_at_random_instants_are_resumed_and_each_month_is_reflowed_once() {
    let mut random = Random::new();
    // Instants from the moment the id is saved to past the end of the solve (about 1 s here).
    let delays: Vec<Duration> = (0..20).map(|_| Duration::from_millis(random.below(1500))).collect();
    println!("kill after {:?}", delays.iter().map(Duration::as_millis).collect::<Vec<_>>());
    // Four at a time: each repetition has its own database, server and state file.
    let results: Vec<(Duration, Duration, usize, bool)> = std::thread::scope(|s| {
        let lanes: Vec<_> = delays.chunks(5).map(|lane| s.spawn(move || lane.iter().map(|d| kill_and_resume(*d)).collect::<Vec<_>>())).collect();
        lanes.into_iter().flat_map(|lane| lane.join().unwrap()).collect()
    });
    assert_eq!(results.len(), 20);
    let (closest, interval, _, _) = results.iter().min_by_key(|(closest, interval, _, _)| closest.as_micros() as i128 - interval.as_micros() as i128).unwrap();
    let resumed = results.iter().filter(|r| r.3).count();
    let polls: usize = results.iter().map(|r| r.2).sum();
    println!(
        "{resumed} of 20 tasks were still saved when their client died and were finished by resume; the server saw {polls} tasks/get; \
         the closest two of one task were {closest:?} apart, against a poll interval of {interval:?}"
    );
}

on_both! {
    fn an_expired_task_is_reported_and_forgotten_and_no_reflow_is_started(db) {
        let scene = Scene::on(db);
        let server = serve(&scene, &["--task-ttl", "1", "--test-solve-delay-ms", "60"]);
        let mut client = scene
            .client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b", "--dry-run"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let task_id = scene.wait_saved(&mut client);
        client.kill().unwrap();
        client.wait().unwrap();
        // The server's sweeper deletes the task once its second has passed.
        let started = Instant::now();
        while scene.sql("SELECT COUNT(*) FROM tasks") > 0 {
            assert!(started.elapsed() < Duration::from_secs(30), "the task never expired");
            std::thread::sleep(Duration::from_millis(100));
        }
        let reflows = scene.sql("SELECT COUNT(*) FROM reflows");

        let resumed = run(scene.client(&[], &["resume"]));
        let said = text(&resumed.stderr);
        assert_eq!(resumed.status.code(), Some(1), "a lost task is a failure: {said}");
        assert!(said.contains(&task_id) && said.contains("unknown") && said.contains("no new reflow"), "{said}");
        assert!(scene.saved().is_empty(), "the task is forgotten");
        assert_eq!(scene.sql("SELECT COUNT(*) FROM tasks"), 0, "no task was started");
        // The server may drop the expired task's unapplied plan meanwhile; it never gains one.
        assert!(scene.sql("SELECT COUNT(*) FROM reflows") <= reflows, "no reflow was started");
        let again = run(scene.client(&[], &["resume"]));
        assert_eq!(again.status.code(), Some(0), "nothing left to resume: {}", text(&again.stderr));
    }

    fn the_approval_gate_answered_by_flag_declines_then_accepts(db) {
        let scene = Scene::on(db);
        let server = serve(&scene, &[]);
        let declined = run(scene.client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b", "--require-approval", "--answer", "decline"]));
        let said = text(&declined.stderr);
        assert_eq!(declined.status.code(), Some(0), "{said}");
        assert!(said.contains("Apply 124 moves, 17 unresolved?") && said.contains("-> "), "the question and the moves are shown: {said}");
        assert!(said.contains("\n  [input_required] ") && !said.contains('\u{1b}'), "in a log, progress is plain lines: {said:?}");
        assert!(text(&declined.stdout).contains("Not applied"), "{}", text(&declined.stdout));
        assert_eq!(scene.applied_reflows(), 0, "nothing was applied");

        let accepted = run(scene.client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b", "--require-approval", "--answer", "accept"]));
        assert_eq!(accepted.status.code(), Some(0), "{}", text(&accepted.stderr));
        let out = text(&accepted.stdout);
        assert!(out.contains("moved 124, unresolved 17") && out.contains("Unresolved, left where they are:"), "{out}");
        assert!(
            out.contains("bk_00705  Tue 8 Sep 2026 11:00-12:30  studio-b  Amara Osei (party of 1)\n      pinned by staff"),
            "unresolved bookings come with when, where, whose (by name, as the demo says it), and why: {out}"
        );
        assert_eq!(scene.applied_reflows(), 1);
        assert!(scene.saved().is_empty());
        assert_eq!(server.polls().len(), 2, "the server logged the polls of both tasks");
        for (task_id, _) in server.polls() {
            let (closest, interval, _) = closest_polls(&server, &scene, &task_id);
            assert!(closest >= interval, "{closest:?} < {interval:?}");
        }
    }
}

/// Runs `command` under a pseudo-terminal (`script`), answers `reply` when the question appears,
/// and returns the exit code and everything the terminal showed.
fn at_a_terminal(command: &Command, reply: &str) -> (Option<i32>, String) {
    let line = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| a.to_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("STUDIOFLOW_TOKEN")
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs the client under a pseudo-terminal");
    let mut stdin = script.stdin.take().unwrap();
    let mut stdout = script.stdout.take().unwrap();
    let mut shown = Vec::new();
    let mut buffer = [0u8; 4096];
    let mut replied = false;
    loop {
        let n = stdout.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        shown.extend_from_slice(&buffer[..n]);
        if !replied && text(&shown).contains("Apply these moves?") {
            stdin.write_all(reply.as_bytes()).unwrap();
            stdin.flush().unwrap();
            replied = true;
        }
    }
    let status = script.wait().unwrap();
    drop(stdin);
    (status.code(), text(&shown))
}

#[test]
fn a_person_at_a_terminal_is_asked_and_answers() {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let server = serve(&scene, &[]);
    // Cancel at the question: nothing applied, exit 3.
    let ask = scene.client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b", "--require-approval"]);
    let (code, shown) = at_a_terminal(&ask, "c\n");
    assert_eq!(code, Some(3), "{shown}");
    assert!(shown.contains("Apply 124 moves, 17 unresolved?") && shown.contains("cancelled"), "{shown}");
    assert_eq!(scene.applied_reflows(), 0);

    // A word it does not know, then yes.
    let (code, shown) = at_a_terminal(&ask, "perhaps\ny\n");
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("Please answer y, n or c."), "{shown}");
    assert!(shown.contains("\r\u{1b}[2K  [completed]"), "on a terminal the progress line is rewritten in place: {shown:?}");
    assert!(shown.contains("moved 124, unresolved 17"), "{shown}");
    assert_eq!(scene.applied_reflows(), 1);
    assert!(scene.saved().is_empty());
}

on_both! {
    fn ctrl_c_leaves_the_task_running_and_saved_and_cancel_ends_it(db) {
        let scene = Scene::on(db);
        let server = serve(&scene, &["--test-solve-delay-ms", "300"]);
        let mut client = scene
            .client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let task_id = scene.wait_saved(&mut client);
        std::thread::sleep(Duration::from_millis(300));
        assert!(Command::new("kill").args(["-INT", &client.id().to_string()]).status().unwrap().success());
        let out = client.wait_with_output().unwrap();
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{said}");
        assert!(said.contains("studioflow client resume") && said.contains(&format!("studioflow client cancel {task_id}")), "{said}");
        assert_eq!(scene.saved(), std::slice::from_ref(&task_id), "the task stays saved");
        assert_eq!(scene.sql("SELECT COUNT(*) FROM tasks WHERE status = 'working'"), 1, "and keeps running on the server");

        let status = run(scene.client(&[], &["status"]));
        let listed = text(&status.stdout);
        assert!(listed.contains(&task_id) && listed.contains("reflow 2026-09 with studio-b offline") && listed.contains("last seen working"), "{listed}");

        // Cancel finds the server in the state file.
        let cancelled = run(scene.client(&[], &["cancel", &task_id]));
        assert_eq!(cancelled.status.code(), Some(0), "{}", text(&cancelled.stderr));
        assert!(text(&cancelled.stderr).contains("cancelled"), "{}", text(&cancelled.stderr));
        assert!(scene.saved().is_empty());
        assert_eq!(scene.applied_reflows(), 0, "nothing of a cancelled reflow is applied");
    }

    fn over_stdio_a_killed_client_and_its_server_are_resumed_by_a_new_server(db) {
        let scene = Scene::on(db);
        let command = format!("{BIN} serve --db {} --test-solve-delay-ms 60", scene.db());
        let stdio = ["--stdio", command.as_str()];
        let mut client = scene
            .client(&stdio, &["reflow", "--month", "2026-09", "--offline", "studio-b"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let task_id = scene.wait_saved(&mut client);
        std::thread::sleep(Duration::from_millis(200));
        client.kill().unwrap();
        client.wait().unwrap();

        // The server it started sees its stdin close and exits; the one resume starts redoes the work.
        let resumed = run(scene.client(&[], &["resume"]));
        let said = text(&resumed.stderr);
        assert_eq!(resumed.status.code(), Some(0), "{said}");
        assert!(said.contains(&task_id), "{said}");
        assert!(text(&resumed.stdout).contains("moved 124, unresolved 17"), "{}", text(&resumed.stdout));
        assert!(scene.saved().is_empty());
        assert_eq!(scene.applied_reflows(), 1);
        assert_eq!(scene.sql("SELECT COUNT(*) FROM tasks"), 1);
    }
}

#[test]
fn bad_flags_exit_2_before_any_server_is_asked() {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let out = run(scene.client(&["--server", "http://127.0.0.1:9/mcp"], &["reflow", "--month", "2026-9", "--offline", "studio-b"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("YYYY-MM"));
    let out = run(scene.client(&[], &["reflow", "--month", "2026-09", "--offline", "studio-b"]));
    assert_eq!(out.status.code(), Some(2), "no server named: {}", text(&out.stderr));
    let out = run(scene.client(&["--server", "http://127.0.0.1:9/mcp"], &["reflow", "--month", "2026-09", "--offline", "studio-b", "--answer", "maybe"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(scene.saved().is_empty());
}

/// A stand-in server on a raw socket: it answers `server/discover`, answers the first two
/// `tasks/get` with 503 and `Retry-After: 1`, and then says it does not know the task. Returns
/// its URL, when each `tasks/get` arrived, and the `Authorization` header of every request.
#[allow(clippy::type_complexity)]
fn busy_server() -> (String, Arc<Mutex<Vec<Instant>>>, Arc<Mutex<Vec<Option<String>>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let polls = Arc::new(Mutex::new(Vec::new()));
    let seen = polls.clone();
    let authorizations = Arc::new(Mutex::new(Vec::new()));
    let authorized = authorizations.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            let mut authorization = None;
            let mut line = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap_or(0);
                    } else if name.eq_ignore_ascii_case("authorization") {
                        authorization = Some(value.trim().to_owned());
                    }
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            authorized.lock().unwrap().push(authorization);
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            let id = request["id"].clone();
            let answer = match request["method"].as_str() {
                Some("server/discover") => Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                    "resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}, "tools": {}},
                    "ttlMs": 0, "cacheScope": "private"}})),
                Some("tasks/get") => {
                    let mut polls = seen.lock().unwrap();
                    polls.push(Instant::now());
                    (polls.len() > 2).then(|| serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown task"}}))
                }
                _ => None,
            };
            let response = match answer {
                Some(answer) => {
                    let body = answer.to_string();
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                }
                None if request["id"].is_null() => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
                None => "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy".to_owned(),
            };
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (url, polls, authorizations)
}

#[test]
fn a_busy_server_is_asked_again_no_sooner_than_its_retry_after_with_the_token_every_time() {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let (url, polls, authorizations) = busy_server();
    // A task saved by an earlier client, as the state file keeps it.
    std::fs::create_dir_all(scene.state().parent().unwrap()).unwrap();
    let saved = serde_json::json!({"version": 1, "tasks": [{
        "task_id": "tsk_busy", "server": {"http": url}, "started_at": "2026-09-01T10:00:00.000Z",
        "request": {"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": false, "require_approval": false},
        "last_status": "working", "last_message": null, "last_seen_at": "2026-09-01T10:00:00.000Z", "poll_interval_ms": 100}]});
    std::fs::write(scene.state(), saved.to_string()).unwrap();

    let mut resume = scene.client(&[], &["resume"]);
    resume.env("STUDIOFLOW_TOKEN", "s3cret");
    let resumed = run(resume);
    let said = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(1), "the task turned out unknown: {said}");
    let authorizations = authorizations.lock().unwrap();
    assert!(!authorizations.is_empty() && authorizations.iter().all(|a| a.as_deref() == Some("Bearer s3cret")), "{authorizations:?}");
    assert!(!std::fs::read_to_string(scene.state()).unwrap().contains("s3cret"), "the token is never saved");
    assert!(said.contains("asking again in"), "{said}");
    let polls = polls.lock().unwrap();
    assert_eq!(polls.len(), 3, "two refused polls and the last one: {said}");
    for pair in polls.windows(2) {
        assert!(pair[1] - pair[0] >= Duration::from_secs(1), "asked again after {:?}, before Retry-After's second", pair[1] - pair[0]);
    }
    assert!(scene.saved().is_empty(), "the unknown task is forgotten");
}

#[test]
fn a_client_waits_for_its_server_to_come_back() {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let server = serve(&scene, &["--test-solve-delay-ms", "100"]);
    let address = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let client = scene
        .client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut client = client;
    scene.wait_saved(&mut client);
    std::thread::sleep(Duration::from_millis(300));
    drop(server); // kill -9, in the middle of the solve
    std::thread::sleep(Duration::from_millis(1500));
    // A new server on the same address redoes the task it finds working, and the client gets its answer.
    let _server = serve_at(&scene, &address, &[]);
    let out = client.wait_with_output().unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("asking again in"), "{said}");
    assert!(text(&out.stdout).contains("moved 124, unresolved 17"), "{}", text(&out.stdout));
    assert_eq!(scene.applied_reflows(), 1);
    assert!(scene.saved().is_empty());
}

#[test]
fn a_question_no_one_can_answer_waits_saved_until_resume_answers_it() {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let server = serve(&scene, &[]);
    // No terminal (stdin is not one here) and no --answer: the task waits, saved, and the client says how to go on.
    let asked = run(scene.client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-b", "--require-approval"]));
    let said = text(&asked.stderr);
    assert_eq!(asked.status.code(), Some(4), "{said}");
    assert!(said.contains("Apply 124 moves") && said.contains("--answer accept"), "{said}");
    let task_id = scene.saved().pop().expect("the waiting task stays saved");
    assert_eq!(scene.applied_reflows(), 0);

    let status = run(scene.client(&[], &["status"]));
    assert!(text(&status.stdout).contains("last seen input_required"), "{}", text(&status.stdout));

    let resumed = run(scene.client(&[], &["resume", "--answer", "accept"]));
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert!(text(&resumed.stderr).contains(&task_id));
    assert!(text(&resumed.stdout).contains("moved 124, unresolved 17"), "{}", text(&resumed.stdout));
    assert_eq!(scene.applied_reflows(), 1);
    assert!(scene.saved().is_empty());
}

#[test]
fn a_request_the_server_refuses_at_once_exits_2_and_saves_nothing() {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let server = serve(&scene, &[]);
    // October has no offline window for studio-b: applying it is refused (a preview would be fine).
    let refused = run(scene.client(&server.flags(), &["reflow", "--month", "2026-10", "--offline", "studio-b"]));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("no offline window in 2026-10"), "{}", text(&refused.stderr));
    let unknown = run(scene.client(&server.flags(), &["reflow", "--month", "2026-09", "--offline", "studio-z"]));
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown.stderr));
    assert!(text(&unknown.stderr).contains("unknown room \"studio-z\""), "{}", text(&unknown.stderr));
    assert!(scene.saved().is_empty());
    assert_eq!(scene.sql("SELECT COUNT(*) FROM tasks"), 0);
}

/// Issue 22: the hint after exit 4 names every flag the resume needs (a token given with --token
/// is named, never shown); `resume` with another server's tasks saved says whose they are and
/// exits 2; a server that is not there is told in words, with no type name.
#[test]
fn the_client_never_leaves_its_user_guessing() {
    let db = TestDb::sqlite();
    let scene = Scene::on(&db);
    let server = serve(&scene, &["--require-auth"]);
    let out = Command::new(BIN).args(["token", "create", "--db", scene.db(), "--name", "ops", "--scope", "studio:read,reflow:apply"]).output().unwrap();
    let token = text(&out.stdout).split_whitespace().find(|w| w.starts_with("sft_")).unwrap().to_owned();
    let mut with_token = server.flags().to_vec();
    with_token.extend(["--token", token.as_str()]);

    let asked = run(scene.client(&with_token, &["reflow", "--month", "2026-09", "--offline", "studio-b", "--require-approval"]));
    let said = text(&asked.stderr);
    assert_eq!(asked.status.code(), Some(4), "{said}");
    let hint = said.lines().find(|l| l.contains("client resume")).unwrap_or_else(|| panic!("{said}"));
    assert!(hint.contains("--token TOKEN") && hint.contains("--answer accept"), "{hint}");
    assert!(!said.contains(&token), "the secret is never printed");
    // Following the hint as printed (TOKEN stands for the same secret) resumes it.
    let command = hint.split('`').nth(1).unwrap().replace("TOKEN", &token);
    // (The scene gives --state itself.)
    let mut words: Vec<&str> = command.split_whitespace().skip(2).collect();
    if let Some(at) = words.iter().position(|w| *w == "--state") {
        words.drain(at..at + 2);
    }
    let resumed = run(scene.client(&[], &words));
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(scene.applied_reflows(), 1);

    // A task saved for this server, and a resume aimed at another: exit 2, naming both.
    let waiting = run(scene.client(&with_token, &["reflow", "--month", "2026-09", "--offline", "studio-b", "--require-approval"]));
    assert_eq!(waiting.status.code(), Some(4), "{}", text(&waiting.stderr));
    let elsewhere = run(scene.client(&["--server", "http://127.0.0.1:9/mcp"], &["resume"]));
    let said = text(&elsewhere.stderr);
    assert_eq!(elsewhere.status.code(), Some(2), "{said}");
    assert!(said.contains("no saved task is on http://127.0.0.1:9/mcp") && said.contains(&server.url), "{said}");

    // Nothing listening: words, not types (with the logging a user has, no RUST_LOG).
    let mut down = scene.client(&["--server", "http://127.0.0.1:9/mcp"], &["reflow", "--month", "2026-09", "--offline", "studio-b"]);
    down.env_remove("RUST_LOG");
    let down = run(down);
    let said = text(&down.stderr);
    assert_eq!(down.status.code(), Some(1), "{said}");
    assert!(said.contains("cannot reach the server at http://127.0.0.1:9/mcp") && said.contains("is running there"), "{said}");
    assert!(!said.contains("rmcp::") && !said.contains("Transport ["), "{said}");
}
