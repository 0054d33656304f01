//! Interop with the official TypeScript MCP SDK 1.32 (npm `@modelcontextprotocol/sdk`, protocol
//! 2025-11-25, the client of editors such as VS Code): runs `tests/sdk-ts/tasks_client.mjs`
//! against the real binary over stdio and over stateless HTTP. It gets a month reflow as a 2025-11-25 task with
//! `client.experimental.tasks.callToolStream`, sees its status updates and its result, and lists
//! the tools without a schema warning. The SDK is installed with `npm ci` into the gitignored
//! `tests/sdk-ts/node_modules` on first run. It needs node and npm, so it is ignored unless asked
//! for (`--include-ignored`), and fails without them (`.ci/run` installs them and asks for it).

use std::path::Path;
use std::process::Command;

fn dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk-ts"))
}

fn found(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Issue 12: a 2025-11-25 client gets `reflow_month` as a task.
#[test]
#[ignore = "needs node and npm"]
fn the_typescript_sdk_gets_a_reflow_task() {
    assert!(found("node") && found("npm"), "this test needs node and npm on PATH (.ci/run installs them)");
    let installed = dir().join("node_modules/@modelcontextprotocol/sdk/package.json");
    let version = std::fs::read_to_string(&installed).unwrap_or_default();
    if !version.contains("\"version\": \"1.32.2\"") {
        let output = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(dir())
            .output()
            .expect("running npm ci");
        assert!(
            output.status.success(),
            "npm ci in tests/sdk-ts failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // Over stdio, then over stateless HTTP (where the front answers the task wire per request).
    for transport in [None, Some("--http")] {
        let output = Command::new("node")
            .arg(dir().join("tasks_client.mjs"))
            .arg(env!("CARGO_BIN_EXE_studioflow"))
            .args(transport)
            .output()
            .expect("running node");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "tests/sdk-ts/tasks_client.mjs {transport:?} failed ({})\n--- stdout\n{stdout}\n--- stderr\n{stderr}", output.status);
        assert!(stdout.contains("no schema warning"), "unexpected output: {stdout}");
        println!("{}", stdout.trim_end());
    }
}
