//! Interop with the official Python MCP SDK: runs `tests/interop/stdio_client.py` (PyPI `mcp==2.3.0`,
//! which speaks protocol 2026-07-28) against the real `studioflow` binary over stdio. The Python is
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

/// `target/interop-venv/bin/python`, creating the venv first if it is missing.
///
/// Two test processes may get here at once. Each builds its own venv in a private directory and
/// renames it into place; a rename onto a directory that already exists fails, so exactly one
/// wins, the loser throws its copy away, and nobody ever sees a half-installed venv.
fn venv_python() -> PathBuf {
    let target = repo().join("target");
    let venv = target.join("interop-venv");
    let python = venv.join("bin").join("python");
    if python.exists() {
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
        "installing mcp==2.3.0 into the interop venv",
    );
    // A venv runs from wherever it is moved to: `bin/python` finds `pyvenv.cfg` beside it.
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
    let python = python();
    let script = repo().join("tests/interop/stdio_client.py");
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
