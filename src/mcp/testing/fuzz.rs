//! Entry points for the fuzz targets in `fuzz/`, compiled only with the `fuzzing` feature so the
//! shipped binary carries none of it. Each takes untrusted bytes the way the server does and
//! panics when a rule of the front door breaks, which the fuzzer reports as a crash: a stdio line
//! (the JSON-RPC envelope check), an HTTP request with its headers (served end to end, on an
//! in-memory connection, by the real front, SDK and tools), and each tool's arguments.

use crate::mcp::front::jsonrpc::{self, Verdict};
use crate::mcp::server::{tools, Ctx, StudioServer};
use crate::mcp::{HttpConfig, HttpLimits};
use crate::store::Pool;
use crate::tasks::{TaskConfig, Tasks};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, NumberOrString};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The fuzzer's oracle: a broken rule, or a harness that cannot start, is a panic, which libFuzzer
/// reports as a crash with the input that caused it.
fn or_crash<T, E: std::fmt::Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// One stdio line: what the front decides must be what the SDK can take, and an error it sends
/// must be a well-formed answer with the request's id whenever that id is readable.
pub fn stdio_line(line: &[u8]) {
    let verdict = jsonrpc::check(line);
    // The stdio front reads a plain tool call straight, before the envelope's check: it must be
    // the very message the check forwards.
    if let Some(straight) = jsonrpc::plain_tool_call(line) {
        let Verdict::Forward(_, checked) = &verdict else { panic!("read straight a tool call the envelope's check refuses: {verdict:?}") };
        assert_eq!(serde_json::to_value(&straight).ok(), serde_json::to_value(checked.as_ref()).ok(), "read straight another message than the check forwards");
    }
    let value: Option<Value> = serde_json::from_slice(line).ok();
    match &verdict {
        Verdict::Forward(_, checked) => {
            let message: ClientJsonRpcMessage =
                serde_json::from_slice(line).unwrap_or_else(|e| panic!("forwarded a message the SDK cannot read: {e}"));
            // What the front hands on is what the SDK would have read from the bytes.
            let (read, handed) = (serde_json::to_value(&message), serde_json::to_value(checked.as_ref()));
            assert_eq!(read.ok(), handed.ok(), "forwarded a message other than the SDK reads");
            // The SDK serves a known method it could not read as unknown: that must not pass.
            if let JsonRpcMessage::Request(request) = &message
                && let ClientRequest::CustomRequest(custom) = &request.request
            {
                assert!(!jsonrpc::KNOWN_REQUESTS.contains(&custom.method.as_str()), "forwarded {} with params the SDK reads as unknown", custom.method);
            }
        }
        Verdict::Answer(reply) => {
            assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
            let code = reply["error"]["code"].as_i64().unwrap_or_default();
            assert!([jsonrpc::PARSE_ERROR, jsonrpc::INVALID_REQUEST, jsonrpc::INVALID_PARAMS].contains(&code), "{reply}");
            assert!(reply["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{reply}");
            // The id echoed is the one the SDK would read, or null when there is none to read.
            let readable = value
                .as_ref()
                .and_then(|v| v.get("id"))
                .and_then(|id| serde_json::from_value::<NumberOrString>(id.clone()).ok())
                .map(NumberOrString::into_json_value);
            match readable {
                Some(id) if value.as_ref().is_some_and(Value::is_object) => assert_eq!(reply["id"], id, "{reply}"),
                _ => assert_eq!(reply["id"], Value::Null, "{reply}"),
            }
            // The answer is one line: stdout stays whole protocol lines.
            assert!(!reply.to_string().contains('\n'));
        }
        Verdict::Drop(_) => {
            let value = value.unwrap_or_else(|| panic!("dropped bytes that are not JSON"));
            let id = value.get("id");
            assert!(id.is_none() || value.get("method").is_none(), "dropped a request: {value}");
        }
    }
}

/// A studio on a scratch database, shared by every run of a target in one process.
struct Scratch {
    server: StudioServer,
    ctx: Arc<Ctx>,
    runtime: tokio::runtime::Runtime,
    /// Held so the database lives as long as the process.
    _dir: tempfile_dir::Dir,
}

/// A directory removed when dropped; the fuzz process rarely gets that far, so it lives in /tmp.
mod tempfile_dir {
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn scratch() -> &'static Scratch {
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("studioflow-fuzz-{}", std::process::id()));
        or_crash(std::fs::create_dir_all(&dir), "a scratch directory");
        let pool = Arc::new(or_crash(Pool::open(&dir.join("studio.db"), 4), "a scratch database"));
        or_crash(or_crash(pool.with(|store| crate::demo::load_demo(store).map(|_| ())), "a pool connection"), "the demo studio");
        // Reflows get little time: the fuzzer is after the front door, not the solver.
        let config = TaskConfig::new(Duration::from_secs(60), 1, Duration::from_millis(20));
        let ctx = Arc::new(Ctx { pool: pool.clone(), tasks: Tasks::new(pool, config), webhooks_to_private: false });
        let server = or_crash(StudioServer::new(Ctx { pool: ctx.pool.clone(), tasks: ctx.tasks.clone(), webhooks_to_private: false }), "a server");
        let runtime = or_crash(tokio::runtime::Builder::new_current_thread().enable_all().build(), "a runtime");
        Scratch { server, ctx, runtime, _dir: tempfile_dir::Dir(dir) }
    })
}

/// Raw bytes on an HTTP connection, served by the real front, SDK and tools. The server must
/// answer with HTTP (or close), never panic, and finish once the client has sent all it will.
pub fn http_request(bytes: &[u8]) {
    let scratch = scratch();
    let config = HttpConfig {
        limits: HttpLimits {
            header_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(5),
            max_connections: 4,
        },
        ..HttpConfig::default()
    };
    let app = or_crash(crate::mcp::front::http::app(scratch.server.clone(), &config, tokio_util::sync::CancellationToken::new(), tokio_util::sync::CancellationToken::new()), "the default config");
    scratch.runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(crate::mcp::front::http::serve_one(server, app, config.limits));
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let reading = tokio::spawn(async move {
            let mut answer = Vec::new();
            let _ = from_server.read_to_end(&mut answer).await;
            answer
        });
        let _ = to_server.write_all(bytes).await;
        let _ = to_server.shutdown().await;
        let answer = or_crash(
            or_crash(tokio::time::timeout(Duration::from_secs(30), reading).await, "the answer within 30 s of the last byte"),
            "the reader",
        );
        let http = answer.starts_with(b"HTTP/1.1 ") || answer.starts_with(b"HTTP/1.0 ");
        assert!(answer.is_empty() || http, "not HTTP: {:?}", String::from_utf8_lossy(&answer));
        or_crash(or_crash(tokio::time::timeout(Duration::from_secs(30), serving).await, "the connection's end"), "the connection");
    });
}

/// The number of tools; a tool target picks one by `index % tool_count()`.
pub fn tool_count() -> usize {
    tools::all().len()
}

/// One tool's arguments, decoded into its argument type and run on the demo studio the way
/// `tools/call` runs them. A refusal is fine; a panic, or an internal error, is not.
pub fn tool_arguments(index: usize, arguments: &[u8]) {
    let Ok(Value::Object(arguments)) = serde_json::from_slice::<Value>(arguments) else {
        return;
    };
    let scratch = scratch();
    let all = tools::all();
    let spec = &all[index % all.len()];
    let name = spec.name();
    let caller = tools::Caller { who: "fuzz".into(), owner: None };
    if let Some(job) = spec.job {
        // A task-capable tool's solve is the solver's business (and slow): decode and check the
        // request only, as a task request would.
        let _ = job(&caller, arguments);
        return;
    }
    let call = tools::Call { ctx: &scratch.ctx, caller: &caller, tool: name, progress: None };
    if let Err(tools::ToolError::Internal(message)) = (spec.run)(&call, arguments) {
        panic!("{name}: our own failure on input: {message}");
    }
}
