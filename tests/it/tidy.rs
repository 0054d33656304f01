//! The tidy test: ARCHITECTURE.md's invariants, kept by reading the source. Each rule is cheap to
//! check and easy to break by accident (a `rusqlite` import in a tool handler, a clock read in the
//! domain), so a failure names the file and line and the rule it breaks.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// The lines of a file that are code (not comments, not the item after a `#[cfg(test)]`), with
/// line numbers.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines = Vec::new();
    // Inside a test item: the depth of its braces, once its first brace is seen.
    let mut skipping: Option<Option<i64>> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            skipping = Some(None);
            continue;
        }
        if let Some(depth) = skipping {
            let opened = line.matches('{').count() as i64 - line.matches('}').count() as i64;
            let depth = match depth {
                None if line.contains('{') => opened,
                // An item without a body (`mod tests;`, `use ...;`) ends at its semicolon.
                None if trimmed.ends_with(';') => 0,
                None => {
                    skipping = Some(None);
                    continue;
                }
                Some(d) => d + opened,
            };
            skipping = if depth <= 0 { None } else { Some(Some(depth)) };
            continue;
        }
        if !trimmed.starts_with("//") {
            lines.push((i + 1, line.to_owned()));
        }
    }
    lines
}

/// The places in `files` outside `allowed` (path prefixes) whose code matches any of `needles`.
fn offenders(files: &[PathBuf], allowed: &[&str], needles: &[&str]) -> Vec<String> {
    files
        .iter()
        .filter(|f| !allowed.iter().any(|a| relative(f).starts_with(a)))
        .flat_map(|f| {
            code_lines(f)
                .into_iter()
                .filter(|(_, line)| needles.iter().any(|n| line.contains(n)))
                .map(move |(n, line)| format!("{}:{n}: {}", relative(f), line.trim()))
        })
        .collect()
}

fn src_files() -> Vec<PathBuf> {
    rust_files(&root().join("src"))
}

#[test]
fn only_the_store_speaks_sql() {
    let found = offenders(&src_files(), &["src/store/"], &["rusqlite", "postgres::", "Connection::open"]);
    assert!(found.is_empty(), "SQL outside src/store (ARCHITECTURE.md: src/store is the only code that speaks SQL):\n{}", found.join("\n"));
}

#[test]
fn above_the_store_nothing_knows_which_backend_it_runs_on() {
    // Tasks, reflows, calendars and MCP work alike on SQLite and PostgreSQL; only the store (and the
    // commands, which read `--db`) may tell the backends apart.
    let found = offenders(&src_files(), &["src/store/", "src/commands/", "src/main.rs"], &["Backend::", "Target::Postgres", "Target::File", ".backend()"]);
    assert!(found.is_empty(), "the backend named above the store (ARCHITECTURE.md, the store):\n{}", found.join("\n"));
}

#[test]
fn each_database_crate_is_named_by_one_file() {
    // The store's SQL is one text for both backends: the crates are met only in the layer's halves.
    let sqlite = offenders(&src_files(), &["src/store/db/sqlite.rs"], &["rusqlite"]);
    assert!(sqlite.is_empty(), "rusqlite outside src/store/db/sqlite.rs (ARCHITECTURE.md, the store):\n{}", sqlite.join("\n"));
    let postgres = offenders(&src_files(), &["src/store/db/pg.rs"], &["postgres::", "use postgres"]);
    assert!(postgres.is_empty(), "the postgres crate outside src/store/db/pg.rs (ARCHITECTURE.md, the store):\n{}", postgres.join("\n"));
}

#[test]
fn only_the_mcp_edge_knows_the_protocol() {
    let found = offenders(&src_files(), &["src/mcp/"], &["rmcp", "\"jsonrpc\"", "JsonRpc", "McpError"]);
    assert!(found.is_empty(), "MCP or JSON-RPC outside src/mcp (ARCHITECTURE.md: only src/mcp knows JSON-RPC and MCP):\n{}", found.join("\n"));
}

#[test]
fn the_domain_reads_no_clock_and_does_no_io() {
    let domain = rust_files(&root().join("src/domain"));
    let found = offenders(
        &domain,
        &[],
        &["Utc::now", "Local::now", "SystemTime", "Instant::now", "std::fs", "std::net", "std::env", "rusqlite", "tokio"],
    );
    assert!(found.is_empty(), "a clock read or I/O in src/domain (ARCHITECTURE.md: the domain does no I/O):\n{}", found.join("\n"));
}

#[test]
fn the_solver_depends_on_no_sql_async_runtime_or_mcp() {
    let manifest = std::fs::read_to_string(root().join("solver/Cargo.toml")).expect("solver/Cargo.toml");
    let value: toml::Value = toml::from_str(&manifest).expect("solver/Cargo.toml is TOML");
    let forbidden = ["rusqlite", "sqlx", "postgres", "tokio-postgres", "diesel", "tokio", "async-std", "smol", "futures", "rmcp", "axum", "hyper", "chrono-tz"];
    let mut found = Vec::new();
    for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(deps) = value.get(table).and_then(|d| d.as_table()) {
            found.extend(deps.keys().filter(|k| forbidden.contains(&k.as_str())).map(|k| format!("[{table}] {k}")));
        }
    }
    assert!(found.is_empty(), "the solver must know nothing of SQL, async runtimes, MCP or time zones (ARCHITECTURE.md):\n{}", found.join("\n"));
}

#[test]
fn every_source_file_opens_with_a_module_comment() {
    let mut files = src_files();
    for dir in ["solver/src", "solver/tests", "solver/examples", "tests", "benches"] {
        files.extend(rust_files(&root().join(dir)));
    }
    let missing: Vec<String> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap_or_default().trim_start().starts_with("//!"))
        .map(|f| relative(f))
        .collect();
    assert!(missing.is_empty(), "files that do not open with a `//!` comment saying what they are for:\n{}", missing.join("\n"));
}

/// `unwrap()` and `expect()` outside tests, each with why it cannot fail on any input.
const UNWRAP_ALLOWED: &[(&str, &str, &str)] = &[
    ("src/reflow/mod.rs", "expect(\"years stop at 2199\")", "Month::parse keeps years below 2200, so the next month exists"),
    ("src/reflow/mod.rs", "expect(\"a request always serialises\")", "a ReflowRequest is strings and integers"),
    ("src/store/idempotency.rs", "expect(\"strings always serialise\")", "a tuple of strings always serialises"),
    ("src/store/write.rs", "expect(\"an unbounded range always finds a free id\")", "the range of series numbers is unbounded"),
    ("src/store/mod.rs", "expect(\"a list of strings always serialises\")", "a list of strings always serialises"),
    ("src/domain/time.rs", "expect(\"zero is a valid offset\")", "a zero offset is always valid"),
];

#[test]
fn no_unwrap_or_expect_outside_tests_but_the_allowed() {
    let mut files = src_files();
    files.extend(rust_files(&root().join("solver/src")));
    let found: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let path = relative(f);
            code_lines(f)
                .into_iter()
                .filter(|(_, line)| line.contains(".unwrap()") || line.contains(".expect(") || line.contains("unreachable!("))
                .filter(move |(_, line)| !UNWRAP_ALLOWED.iter().any(|(file, snippet, _)| path == *file && line.contains(snippet)))
                .map(move |(n, line)| format!("{}:{n}: {}", relative(f), line.trim()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "unwrap()/expect()/unreachable!() outside tests: return an error instead, or add the line to UNWRAP_ALLOWED with the reason it cannot fail:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_allowed_unwrap_is_still_there() {
    let stale: Vec<String> = UNWRAP_ALLOWED
        .iter()
        .filter(|(file, snippet, _)| !std::fs::read_to_string(root().join(file)).unwrap_or_default().contains(snippet))
        .map(|(file, snippet, _)| format!("{file}: {snippet}"))
        .collect();
    assert!(stale.is_empty(), "allowed unwraps that are gone: remove them from UNWRAP_ALLOWED:\n{}", stale.join("\n"));
}

#[test]
fn the_module_map_names_every_module() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let unnamed: Vec<&str> = lib
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod ").and_then(|m| m.strip_suffix(';')))
        .filter(|module| !lib.contains(&format!("[`{module}`]")))
        .collect();
    assert!(unnamed.is_empty(), "modules missing from the map in src/lib.rs: {unnamed:?}");
}

/// The layers of the library, bottom first, as ARCHITECTURE.md draws them: a module uses
/// (`crate::...`) only modules of a lower layer, so imports run one way and no circle can form.
const LAYERS: &[&[&str]] = &[
    &["domain", "error", "tls", "net", "html"],
    &["auth"],
    &["store"],
    &["reflow", "availability", "ics", "feeds", "oauth", "shapes", "demo", "reflow_text"],
    &["tasks", "figures"],
    &["view", "notify"],
    &["mcp"],
    &["client", "commands"],
];

/// The layer of a top-level module, by its name.
fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `crate::module` the code `lines` of the file at `path` (under `src/`) names that is not
/// below the file's own module, as `path:line: crate::module`.
fn climbs(path: &str, lines: &[(usize, String)]) -> Vec<String> {
    let Some(own) = path.strip_prefix("src/").map(|rest| rest.split('/').next().unwrap_or(rest).trim_end_matches(".rs").to_owned()) else {
        return Vec::new();
    };
    if own == "lib" || own == "main" {
        return Vec::new();
    }
    let own_layer = layer(&own).unwrap_or_else(|| panic!("{path}: module {own} is in no layer of tests/it/tidy.rs: give it one"));
    let mut found = Vec::new();
    for (n, line) in lines {
        for used in line.split("crate::").skip(1) {
            let name: String = used.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if name.is_empty() || name == own {
                continue;
            }
            match layer(&name) {
                Some(l) if l < own_layer => {}
                other => found.push(format!("{path}:{n}: crate::{name} (layer {other:?}, not below {own}'s {own_layer})")),
            }
        }
    }
    found
}

#[test]
fn imports_run_down_the_layers() {
    let found: Vec<String> = src_files().iter().flat_map(|file| climbs(&relative(file), &code_lines(file))).collect();
    assert!(found.is_empty(), "a module uses one beside or above it (ARCHITECTURE.md, the layers; tests/it/tidy.rs, LAYERS):\n{}", found.join("\n"));
}

#[test]
fn a_layer_violation_is_caught() {
    // The rule itself, on lines written for it: the store using the MCP edge climbs; the domain
    // below it does not, nor does a test's code, which `code_lines` leaves out.
    let lines = [(2, "use crate::mcp::StudioServer;".to_owned()), (3, "use crate::domain::Room;".to_owned())];
    assert_eq!(climbs("src/store/probe.rs", &lines), ["src/store/probe.rs:2: crate::mcp (layer Some(6), not below store's 2)"]);
    assert_eq!(climbs("src/mcp/probe.rs", &lines), Vec::<String>::new());
    assert_eq!(climbs("src/store/probe.rs", &lines[1..]), Vec::<String>::new());
}

#[test]
fn a_tool_is_named_by_one_file() {
    // Every mention of a tool outside the table goes through `tools::names`, so a tool is renamed
    // in one place. Tests (which name the public contract on purpose) are not judged.
    let table = std::fs::read_to_string(root().join("src/mcp/server/tools/mod.rs")).unwrap();
    let names: Vec<String> = table
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub const ").and_then(|rest| rest.split_once("&str = \"")).map(|(_, name)| name.trim_end_matches("\";").to_owned()))
        .collect();
    assert!(names.len() >= 24, "the table's names: {names:?}");
    let mut found = Vec::new();
    // The one other place: the kind a task is stored under, which databases already hold.
    let stored_kind = ("src/tasks/mod.rs", "reflow_month");
    for file in src_files().into_iter().filter(|f| relative(f) != "src/mcp/server/tools/mod.rs") {
        for (n, line) in code_lines(&file) {
            for literal in line.split('"').skip(1).step_by(2).filter(|literal| (relative(&file).as_str(), *literal) != stored_kind) {
                if let Some(name) = names.iter().find(|name| literal.split(|c: char| !(c.is_ascii_lowercase() || c == '_')).any(|word| word == name.as_str())) {
                    found.push(format!("{}:{n}: {name} in \"{literal}\"", relative(&file)));
                }
            }
        }
    }
    assert!(found.is_empty(), "a tool named outside its table (use tools::names):\n{}", found.join("\n"));
}
