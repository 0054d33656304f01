//! The README's examples, run (issue 22): what a newcomer pastes must work as written. The agent
//! sessions (`→ tool {arguments}` then `← summary`) are played against a fresh demo studio and
//! each answer is checked against the line under it; the `curl` exchange of a reflow task with
//! its approval runs in bash against a real server (ignored unless asked for, `--include-ignored`:
//! it needs bash and curl, and fails without them); the JSON configuration parses.

use crate::mcp_client::{http, stdio, Mcp};
use crate::support::temp_db;
use serde_json::Value;
use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The fenced blocks of the README, each with the language named after its opening fence.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => open = Some((language.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => out.push(open.take().unwrap()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// One step of a session: the tool, its arguments, and the answer's summary as the README says it.
struct Step {
    tool: String,
    arguments: Value,
    answer: String,
}

fn sessions(text: &str) -> Vec<Vec<Step>> {
    blocks(text)
        .into_iter()
        .filter(|(_, body)| body.starts_with("→ "))
        .map(|(_, body)| {
            let lines: Vec<&str> = body.lines().collect();
            lines
                .chunks(2)
                .map(|pair| {
                    let call = pair[0].strip_prefix("→ ").unwrap_or_else(|| panic!("not a call: {}", pair[0]));
                    let (tool, arguments) = call.split_once(' ').unwrap();
                    let arguments = serde_json::from_str(arguments).unwrap_or_else(|e| panic!("{call}: {e}"));
                    let answer = pair.get(1).and_then(|a| a.strip_prefix("← ")).unwrap_or_else(|| panic!("no answer after {call}"));
                    Step { tool: tool.to_owned(), arguments, answer: answer.to_owned() }
                })
                .collect()
        })
        .collect()
}

/// Plays `steps` and returns what went differently from the README, if anything.
fn play(server: &mut impl Mcp, steps: &[Step]) -> Vec<String> {
    let mut differences = Vec::new();
    for step in steps {
        let result = server.call(&step.tool, step.arguments.clone());
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        // An answer the README abridges ends with "...": what it shows must be how the real one starts.
        let (error, shown) = match step.answer.strip_prefix("isError: ") {
            Some(rest) => (true, rest),
            None => (false, step.answer.as_str()),
        };
        let shown = shown.trim_end_matches("...").trim_end_matches("; ").trim_end();
        let shown = shown.strip_suffix('.').unwrap_or(shown);
        if (result["isError"] == true) != error || !text.starts_with(shown) {
            differences.push(format!("{} {}:\n  README: {}\n  server: {}{text}", step.tool, step.arguments, step.answer, if result["isError"] == true { "isError: " } else { "" }));
        }
    }
    differences
}

#[test]
fn issue_22_the_readme_sessions_answer_as_written() {
    let text = readme();
    let sessions = sessions(&text);
    assert_eq!(sessions.len(), 3, "the README's three agent sessions");
    // The first and third are one story on one studio (the third applies the first's dry run);
    // the second starts from a fresh demo studio.
    let db = temp_db();
    let mut server = stdio(&db.path, &["--demo"]);
    let mut differences = play(&mut server, &sessions[0]);
    differences.extend(play(&mut server, &sessions[2]));
    let fresh = temp_db();
    differences.extend(play(&mut stdio(&fresh.path, &["--demo"]), &sessions[1]));
    assert!(differences.is_empty(), "the README says otherwise:\n{}", differences.join("\n"));
}

#[test]
#[ignore = "needs bash and curl"]
fn issue_22_the_readme_curl_exchange_of_a_task_with_approval_runs_as_pasted() {
    let found = |program: &str| Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(found("bash") && found("curl"), "this test needs bash and curl on PATH to run the README's curl example");
    let text = readme();
    let script = blocks(&text).into_iter().find(|(language, body)| language == "sh" && body.contains("mcp()")).map(|(_, body)| body).unwrap();
    let db = temp_db();
    let server = http(&db.path, &["--demo"]);
    let script = script.replace("http://127.0.0.1:8080/mcp", &format!("http://{}/mcp", server.address));
    let out = Command::new("timeout").args(["120", "bash", "-c", &script]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    let last: Value = serde_json::from_str(said.lines().rfind(|l| !l.trim().is_empty()).unwrap()).unwrap_or_else(|e| panic!("{e}: {said}"));
    assert_eq!(last["result"]["status"], "completed", "{said}");
    assert!(last["result"]["result"]["content"][0]["text"].as_str().unwrap().starts_with("Moved 124 bookings; 17 unresolved"), "{last}");
    assert_eq!(server_reflows_applied(&db.path), 1);
}

fn server_reflows_applied(db: &std::path::Path) -> i64 {
    rusqlite::Connection::open(db).unwrap().query_row("SELECT COUNT(*) FROM reflows WHERE applied = 1", [], |r| r.get(0)).unwrap()
}

#[test]
fn issue_22_the_readme_json_configuration_parses_and_names_a_real_command() {
    let text = readme();
    let json: Vec<Value> = blocks(&text).into_iter().filter(|(language, _)| language == "json").map(|(_, body)| serde_json::from_str(&body).unwrap()).collect();
    assert!(!json.is_empty());
    let server = &json[0]["mcpServers"]["studioflow"];
    assert_eq!(server["args"][0], "serve", "{server}");
    assert_eq!(server["args"][1], "--db", "{server}");
}
