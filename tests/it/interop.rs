//! Interop with the official Python MCP SDK: runs `tests/interop/stdio_client.py` (PyPI `mcp==2.3.0`,
//! which speaks protocol 2026-07-28) against the real `studioflow` binary over stdio, and
//! `tests/interop/calendar_client.py` (the same SDK and the strict iCalendar parser `icalendar`) for
//! calendar resources, prompts, completions, progress and the HTTP calendar feeds. The Python is
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
        "installing tests/interop/requirements.txt (mcp, icalendar) into the interop venv",
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

fn python() -> PathBuf {
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
#[test]
fn the_python_sdk_and_an_icalendar_parser_read_the_calendars() {
    run_script("calendar_client.py");
}

fn run_script(name: &str) {
    let python = python();
    let script = repo().join("tests/interop").join(name);
    let output = Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_studioflow"))
        .output()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} {} failed ({}); a stale venv can be removed with `rm -rf target/interop-venv`\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        python.display(),
        script.display(),
        output.status
    );
    println!("{}", stdout.trim_end());
}
