//! A minimal MCP client for tests: the real `studioflow serve` binary driven over stdio (lines on
//! its stdin and stdout) or over HTTP (raw HTTP/1.1 on a TCP socket), with the per-request `_meta`
//! of protocol 2026-07-28 added to every request.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub const VERSION: &str = "2026-07-28";

/// The `_meta` of a request, with the given client capabilities.
pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "studioflow-tests", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// Something that answers one JSON-RPC request with one response.
pub trait Mcp {
    /// Sends a complete message and returns the response to it.
    fn send(&mut self, message: &Value) -> Value;

    fn next_id(&mut self) -> u64;

    /// A request with `_meta` added to its params; returns the whole response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_as(json!({}), method, params)
    }

    /// A request from a client that declares the tasks extension.
    fn tasks_request(&mut self, method: &str, params: Value) -> Value {
        self.request_as(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}), method, params)
    }

    /// A request from a client with the given capabilities.
    fn request_as(&mut self, capabilities: Value, method: &str, mut params: Value) -> Value {
        let id = self.next_id();
        params["_meta"] = meta(capabilities);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    /// Calls a tool and returns its result (panics on a JSON-RPC error).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(response.get("error").is_none(), "{tool}: {response}");
        response["result"].clone()
    }

    /// Calls a tool that must succeed and returns its structured content.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone());
        assert_ne!(result["isError"], json!(true), "{tool} {arguments}: {result}");
        assert!(result["content"][0]["text"].as_str().is_some_and(|t| !t.is_empty()), "{tool}: no summary");
        result["structuredContent"].clone()
    }

    /// Calls a tool that must fail with `isError` and returns its message.
    fn refused(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments.clone());
        assert_eq!(result["isError"], json!(true), "{tool} {arguments} should fail: {result}");
        result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
    }
}

/// `studioflow serve` on stdio.
pub struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    id: u64,
}

/// `db` is what `--db` takes: a file's path, or a PostgreSQL URL.
pub fn stdio(db: impl AsRef<OsStr>, extra: &[&str]) -> StdioServer {
    stdio_with_env(db, extra, &[])
}

/// [`stdio`] with more environment variables (e.g. `SSL_CERT_FILE` for a test CA).
pub fn stdio_with_env(db: impl AsRef<OsStr>, extra: &[&str], env: &[(&str, &str)]) -> StdioServer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_studioflow"))
        .args(["serve".as_ref(), "--db".as_ref(), db.as_ref()])
        .args(extra)
        .env("RUST_LOG", "error")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    StdioServer { child, stdin, stdout, id: 0 }
}

impl StdioServer {
    /// Writes raw bytes as one line and returns the next line the server writes.
    pub fn raw(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        self.read_line()
    }

    fn read_line(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line:?}"))
    }

    /// The next line the server writes, whatever it is.
    pub fn raw_read(&mut self) -> Value {
        self.read_line()
    }

    /// Writes a notification (no answer expected).
    pub fn notify(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Closes stdin and waits for the server to exit; returns whether it exited cleanly.
    pub fn close(mut self) -> bool {
        drop(self.stdin.take());
        self.child.wait().unwrap().success()
    }

    /// Kills the process outright (SIGKILL), as a crash or `kill -9` would.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Mcp for StdioServer {
    fn send(&mut self, message: &Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        // Skip notifications and answers to anything else.
        loop {
            let answer = self.read_line();
            if answer.get("id") == message.get("id") {
                return answer;
            }
        }
    }

    fn next_id(&mut self) -> u64 {
        self.id += 1;
        self.id
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `studioflow serve --http 127.0.0.1:0`.
pub struct HttpServer {
    child: Child,
    pub address: SocketAddr,
    id: u64,
    /// Sent as `Authorization: Bearer` on every request of [`Mcp::send`] and [`HttpServer::post`].
    pub bearer: Option<String>,
}

pub fn http(db: impl AsRef<OsStr>, extra: &[&str]) -> HttpServer {
    let mut command = Command::new(env!("CARGO_BIN_EXE_studioflow"));
    command.args(["serve".as_ref(), "--db".as_ref(), db.as_ref(), "--http".as_ref(), "127.0.0.1:0".as_ref()]).args(extra);
    spawn_http(command)
}

/// `studioflow serve --http 127.0.0.1:0` with the process's open-file limit set to `nofile`.
pub fn http_with_fd_limit(db: &Path, extra: &[&str], nofile: u32) -> HttpServer {
    let mut command = Command::new("sh");
    command
        .args(["-c", &format!("ulimit -n {nofile} && exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_studioflow"))
        .args(["serve", "--db", db.to_str().unwrap(), "--http", "127.0.0.1:0"])
        .args(extra);
    spawn_http(command)
}

/// `studioflow serve --http 127.0.0.1:0` logging at debug level into `log`.
pub fn http_logged(db: impl AsRef<OsStr>, extra: &[&str], log: &Path) -> HttpServer {
    let mut command = Command::new(env!("CARGO_BIN_EXE_studioflow"));
    command.args(["serve".as_ref(), "--db".as_ref(), db.as_ref(), "--http".as_ref(), "127.0.0.1:0".as_ref()]).args(extra).env("RUST_LOG", "studioflow=debug,info");
    spawn_http_into(command, Some(log))
}

fn spawn_http(mut command: Command) -> HttpServer {
    command.env("RUST_LOG", "error");
    spawn_http_into(command, None)
}

/// Starts the server and reads its address; the rest of its stderr goes to `log`, or nowhere.
fn spawn_http_into(mut command: Command, log: Option<&Path>) -> HttpServer {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The server says where it listens on stderr: "studioflow: serving MCP at http://ADDR/mcp".
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut said = String::new();
    let address = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server exited before listening: {said}");
        said += &line;
        if let Some(rest) = line.trim().strip_prefix("studioflow: serving MCP at http://") {
            break rest.trim_end_matches("/mcp").parse().unwrap();
        }
    };
    let mut sink: Box<dyn Write + Send> = match log {
        Some(path) => Box::new(std::fs::File::create(path).unwrap()),
        None => Box::new(std::io::sink()),
    };
    sink.write_all(said.as_bytes()).unwrap();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut sink));
    HttpServer { child, address, id: 0, bearer: None }
}

/// An HTTP answer: status, headers and body.
pub struct Answer {
    pub status: u16,
    /// The status line and headers, as sent.
    pub head: String,
    pub body: String,
}

impl Answer {
    /// The value of the first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

impl HttpServer {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one HTTP/1.1 request with the given method, extra headers and body.
    pub fn raw(&self, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        self.raw_at(method, "/mcp", headers, body)
    }

    /// [`HttpServer::raw`] to another path.
    pub fn raw_at(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut stream = TcpStream::connect(self.address).unwrap();
        let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
            request += &format!("Host: {}\r\n", self.address);
        }
        for (name, value) in headers {
            request += &format!("{name}: {value}\r\n");
        }
        request += "\r\n";
        request += body;
        stream.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.lines().next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        Answer { status, head: head.to_owned(), body: body.to_owned() }
    }

    /// Sends SIGTERM and waits for the process; returns whether it exited cleanly within `limit`.
    pub fn terminate(mut self, limit: std::time::Duration) -> bool {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let started = std::time::Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }

    /// POSTs a JSON-RPC message with the transport's headers.
    pub fn post(&self, message: &Value, extra: &[(&str, &str)]) -> Answer {
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        // Mcp-Name is the tool's name, or the task's id for tasks/*.
        let params = &message["params"];
        let name = params["name"].as_str().or(params["taskId"].as_str()).unwrap_or_default().to_owned();
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", VERSION),
            ("Mcp-Method", method.as_str()),
        ];
        if !name.is_empty() {
            headers.push(("Mcp-Name", name.as_str()));
        }
        let mirrored = if method == "tools/call" { param_headers(&name, &params["arguments"]) } else { Vec::new() };
        for (header, value) in &mirrored {
            if !extra.iter().any(|(name, _)| name.eq_ignore_ascii_case(header)) {
                headers.push((header.as_str(), value.as_str()));
            }
        }
        let authorization = self.bearer.as_ref().map(|token| format!("Bearer {token}"));
        if let Some(authorization) = &authorization
            && !extra.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        {
            headers.push(("Authorization", authorization.as_str()));
        }
        headers.extend_from_slice(extra);
        self.raw("POST", &headers, &message.to_string())
    }
}

/// The `Mcp-Param-*` headers a conforming client sends with a `tools/call` over HTTP (2026-07-28):
/// each argument whose property the tool marks with `x-mcp-header` in the public contract (the
/// tools/list snapshot), as text, Base64-wrapped when it cannot travel as a plain header value.
pub fn param_headers(tool: &str, arguments: &Value) -> Vec<(String, String)> {
    static MARKED: std::sync::OnceLock<std::collections::HashMap<String, Vec<(String, String)>>> = std::sync::OnceLock::new();
    let marked = MARKED.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots/tools_list.json");
        let listed: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let tools = listed.get("tools").unwrap_or(&listed).as_array().cloned().unwrap_or_default();
        tools
            .iter()
            .map(|tool| {
                let properties = tool["inputSchema"]["properties"].as_object().cloned().unwrap_or_default();
                let pairs = properties
                    .iter()
                    .filter_map(|(name, schema)| Some((name.clone(), schema.get("x-mcp-header")?.as_str()?.to_owned())))
                    .collect();
                (tool["name"].as_str().unwrap_or_default().to_owned(), pairs)
            })
            .collect()
    });
    let Some(pairs) = marked.get(tool) else { return Vec::new() };
    pairs
        .iter()
        .filter_map(|(property, header)| {
            let text = match arguments.get(property)? {
                Value::String(text) => text.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some((format!("Mcp-Param-{header}"), header_value(&text)))
        })
        .collect()
}

/// A value as a header carries it: as it is, or `=?base64?…?=` when it has characters outside
/// visible ASCII and space, spaces at an end, or looks like the wrapper itself.
pub fn header_value(text: &str) -> String {
    let plain = text.chars().all(|c| (' '..='~').contains(&c))
        && !text.starts_with([' ', '\t'])
        && !text.ends_with([' ', '\t'])
        && !(text.starts_with("=?base64?") && text.ends_with("?="));
    if plain { text.to_owned() } else { format!("=?base64?{}?=", base64(text.as_bytes())) }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Mcp for HttpServer {
    fn send(&mut self, message: &Value) -> Value {
        let answer = self.post(message, &[]);
        serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("HTTP {}: not JSON ({e}): {}", answer.status, answer.body))
    }

    fn next_id(&mut self) -> u64 {
        self.id += 1;
        self.id
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
