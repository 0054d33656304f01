//! Interop with the official Python MCP SDK: runs `tests/interop/stdio_client.py` (PyPI `mcp==2.3.0`,
//! which speaks protocol 2026-07-28) against the real `studioflow` binary over stdio, and
//! `tests/interop/calendar_client.py` (the same SDK and the strict iCalendar parser `icalendar`) for
//! calendar resources, prompts, completions, progress and the HTTP calendar feeds, and
//! `tests/interop/http_client.py` (the same SDK over Streamable HTTP with a bearer token, and
//! without one) against `studioflow serve --http --require-auth`. The Python is
//! `STUDIOFLOW_PYTHON`, else `target/interop-venv/bin/python`, which this test creates (and fills
//! from `tests/interop/requirements.txt`) when it is missing, so a fresh checkout needs no setup.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root: the venv and the script live at fixed places under it.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a command to completion; on failure, panics with its output so the log says what broke.
fn run(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: could not start {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}): {command:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `target/interop-venv/bin/python`, creating the venv first if it is missing or was filled from
/// other requirements (a copy of `tests/interop/requirements.txt` inside it says which).
///
/// The tests of this binary that need it take a lock, so one builds it and the others wait. The
/// new venv is built in a private directory and renamed into place, so nobody ever sees a
/// half-installed venv; a rename onto a directory that another process just made fails, and the
/// loser throws its copy away.
fn venv_python() -> PathBuf {
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let target = repo().join("target");
    let venv = target.join("interop-venv");
    let python = venv.join("bin").join("python");
    let requirements = std::fs::read_to_string(repo().join("tests/interop/requirements.txt")).unwrap();
    let stamp = venv.join("requirements.txt");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(requirements.as_str()) {
        return python;
    }
    std::fs::create_dir_all(&target).unwrap();
    let staging = target.join(format!("interop-venv.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    run(Command::new("python3").args(["-m", "venv"]).arg(&staging), "creating the interop venv (is python3 installed?)");
    run(
        Command::new(staging.join("bin").join("python"))
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(repo().join("tests/interop/requirements.txt")),
        "installing tests/interop/requirements.txt (mcp, icalendar, standardwebhooks, aiosmtpd) into the interop venv",
    );
    std::fs::write(staging.join("requirements.txt"), &requirements).unwrap();
    // A stale venv is moved aside first; a venv runs from wherever it is moved to.
    if venv.exists() {
        let old = target.join(format!("interop-venv.old-{}", std::process::id()));
        if std::fs::rename(&venv, &old).is_ok() {
            let _ = std::fs::remove_dir_all(&old);
        }
    }
    if std::fs::rename(&staging, &venv).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
        assert!(python.exists(), "could not move {} into {}", staging.display(), venv.display());
    }
    python
}

/// The Python with the SDK and `icalendar`: also for the calendar tests (`calendars.rs`).
pub(crate) fn python() -> PathBuf {
    match std::env::var_os("STUDIOFLOW_PYTHON") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => venv_python(),
    }
}

#[test]
fn the_python_sdk_drives_the_server_over_stdio() {
    run_script("stdio_client.py");
}

/// Issue 12: calendars as resources and feeds, prompts, completions and progress, read by the
/// official Python SDK and a strict iCalendar parser.
/// Issue 29: the SDK's own input-required support answers the reflow's approval question (its
/// `elicitation_callback`), declining and then accepting, without the Tasks extension.
#[test]
fn the_python_sdk_approves_a_reflow_through_an_input_required_result() {
    run_script("approval_client.py");
}

#[test]
fn the_python_sdk_and_an_icalendar_parser_read_the_calendars() {
    run_script("calendar_client.py");
}

/// Remote access: the SDK lists the tools and books with an API token, the history names the
/// token; without the token the SDK gets 401 and the challenge's `resource_metadata` URL. What the
/// SDK makes of a 401 (it hides the status and header behind a generic error; its OAuth client
/// fetches the metadata itself) is asserted here as it is in `mcp` 2.3.0.
#[test]
fn the_python_sdk_books_over_http_with_a_bearer_token() {
    use crate::auth::create_token;
    use crate::mcp_client::http;
    use crate::support::temp_db;
    use serde_json::{json, Value};

    let db = temp_db();
    // The script's unauthenticated connections fail 3 times from one address: allow more than
    // the default burst, so a slow retry in the SDK cannot turn a 401 into a 429.
    let server = http(&db.path, &["--demo", "--require-auth", "--auth-failure-limit", "600"]);
    let token = create_token(&db, "sdk-front-desk", "studio:read,bookings:write");
    let url = format!("http://{}/mcp", server.address);
    let script = repo().join("tests/interop/http_client.py");
    let stdout = script_output(Command::new(python()).arg(&script).arg(&url).env("STUDIOFLOW_TOKEN", &token), &script);
    let results: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("http_client.py printed no JSON ({e}): {stdout}"));

    // With the token: the booking is in the database, and its history names the token.
    let booked = &results["with_token"];
    assert_eq!(booked["tools"], crate::support::tool_count(), "{results}");
    let id = booked["booking"].as_str().unwrap_or_else(|| panic!("no booking: {results}"));
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let (room, client, status): (String, String, String) =
        conn.query_row("SELECT room_id, client_id, status FROM bookings WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    assert_eq!((json!(room), client.as_str(), status.as_str()), (booked["room"].clone(), "client-001", "confirmed"));
    let who: Vec<String> = conn
        .prepare("SELECT who FROM events WHERE entity = 'booking' AND entity_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([id], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(who, ["sdk-front-desk"], "the history of {id}");

    // Without it, the plain transport: server/discover, then its fallback `initialize`, each 401
    // with the challenge; the SDK surfaces neither, only a JSON-RPC internal error.
    let metadata = format!("http://{}/.well-known/oauth-protected-resource/mcp", server.address);
    let plain = &results["without_token"];
    assert_eq!(plain["statuses"], json!([401, 401]), "{plain}");
    assert_eq!(plain["www_authenticate"], json!(format!("Bearer resource_metadata=\"{metadata}\"")));
    assert_eq!(plain["resource_metadata"], json!(metadata));
    assert_eq!(plain["error"], json!({"type": "MCPError", "code": -32603, "message": "Server returned an error response"}));

    // The OAuth client reads the header and fetches that URL first. Our metadata names no
    // authorization server (RFC 9728 makes `authorization_servers` optional; the SDK's model
    // requires one), so the SDK does not take it, tries the other well-known places, falls back
    // to the 2025-03-26 path and fails registering a client: without an issuer there is no
    // OAuth to do, and tokens come from `studioflow token create`.
    let oauth = &results["oauth_without_token"];
    let requests: Vec<&str> = oauth["requests"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(requests.first().copied(), Some(format!("POST {url} 401").as_str()), "{oauth}");
    assert_eq!(requests.get(1).copied(), Some(format!("GET {metadata} 200").as_str()), "{oauth}");
    assert_eq!(oauth["parsed_metadata"], false, "{oauth}");
    assert_eq!(oauth["error"]["type"], "OAuthRegistrationError", "{oauth}");
}

fn run_script(name: &str) {
    let script = repo().join("tests/interop").join(name);
    script_output(Command::new(python()).arg(&script).arg(env!("CARGO_BIN_EXE_studioflow")), &script);
}

/// Runs a Python script to success and returns its stdout (also printed). The command is not
/// printed: its environment may hold a token.
pub(crate) fn script_output(command: &mut Command, script: &Path) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("could not run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} failed ({}); a stale venv can be removed with `rm -rf target/interop-venv`\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        script.display(),
        output.status
    );
    println!("{}", stdout.trim_end());
    stdout.into_owned()
}
