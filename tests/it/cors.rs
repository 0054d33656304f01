//! Browser clients across origins (issue 22): CORS preflights answered before authentication for
//! allowed origins, every answer to such an origin naming it (the 401's challenge readable), public
//! metadata open to any origin, and a page from another origin refused. First at the wire, then in
//! headless Chromium with pages served from other loopback origins, as a web-based agent would be
//! (that test is ignored unless asked for, `--include-ignored`, and fails without `chromium`).

use crate::auth::create_token;
use crate::mcp_client::{http, meta, HttpServer};
use crate::support::temp_db;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The value of header `name` in an answer's head, if there is one.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn preflight(server: &HttpServer, path: &str, origin: &str) -> crate::mcp_client::Answer {
    server.raw_at(
        "OPTIONS",
        path,
        &[
            ("Origin", origin),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-month"),
        ],
        "",
    )
}

#[test]
fn issue_22_preflights_and_answers_name_allowed_origins_and_only_them() {
    let db = temp_db();
    let server = http(&db.path, &["--demo", "--require-auth", "--allow-origin", "https://agent.example"]);
    let token = create_token(&db.path, "browser", "studio:read");

    // A preflight from an allowed origin is answered before authentication, with every MCP header.
    for origin in ["http://localhost:8090", "http://127.0.0.1:3000", "https://agent.example"] {
        let answer = preflight(&server, "/mcp", origin);
        assert_eq!(answer.status, 204, "{origin}: {}", answer.head);
        assert_eq!(header(&answer.head, "access-control-allow-origin"), Some(origin));
        assert_eq!(header(&answer.head, "vary"), Some("Origin"));
        assert_eq!(header(&answer.head, "access-control-allow-methods"), Some("GET, POST, DELETE, OPTIONS"));
        let allowed = header(&answer.head, "access-control-allow-headers").unwrap().to_ascii_lowercase();
        for name in ["authorization", "content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id", "last-event-id", "mcp-param-month"] {
            assert!(allowed.split(", ").any(|h| h == name), "{name} in {allowed}");
        }
        assert!(header(&answer.head, "access-control-max-age").is_some());
    }
    // Another origin gets 403 and no CORS header at all.
    let refused = preflight(&server, "/mcp", "https://evil.example");
    assert_eq!(refused.status, 403);
    assert!(header(&refused.head, "access-control-allow-origin").is_none(), "{}", refused.head);

    // Answers to an allowed origin name it and expose the challenge: a 401 and a 200 alike.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_rooms", "arguments": {}, "_meta": meta(json!({}))}});
    let unauthorized = server.post(&call, &[("Origin", "http://localhost:8090")]);
    assert_eq!(unauthorized.status, 401);
    assert_eq!(header(&unauthorized.head, "access-control-allow-origin"), Some("http://localhost:8090"));
    assert_eq!(header(&unauthorized.head, "access-control-expose-headers"), Some("WWW-Authenticate, MCP-Protocol-Version, Mcp-Session-Id"));
    assert!(header(&unauthorized.head, "www-authenticate").unwrap().contains("resource_metadata="));
    let bearer = format!("Bearer {token}");
    let ok = server.post(&call, &[("Origin", "https://agent.example"), ("Authorization", &bearer)]);
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(header(&ok.head, "access-control-allow-origin"), Some("https://agent.example"));
    // A 403 for a missing scope, too.
    let booking = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "create_booking", "arguments": {"room": "studio-c", "client": "client-001", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00"}, "_meta": meta(json!({}))}});
    let forbidden = server.post(&booking, &[("Origin", "https://agent.example"), ("Authorization", &bearer)]);
    assert_eq!(forbidden.status, 403);
    assert_eq!(header(&forbidden.head, "access-control-allow-origin"), Some("https://agent.example"));

    // The resource's metadata is anyone's, preflight and answer.
    let metadata = server.raw_at("GET", "/.well-known/oauth-protected-resource", &[("Origin", "https://evil.example")], "");
    assert_eq!(metadata.status, 200);
    assert_eq!(header(&metadata.head, "access-control-allow-origin"), Some("*"));
    let metadata_preflight = preflight(&server, "/.well-known/oauth-protected-resource", "https://evil.example");
    assert_eq!((metadata_preflight.status, header(&metadata_preflight.head, "access-control-allow-origin")), (204, Some("*")));

    // Without authentication the preflight is answered too (it was 405).
    let open_db = temp_db();
    let open = http(&open_db.path, &["--demo"]);
    assert_eq!(preflight(&open, "/mcp", "http://localhost:8090").status, 204);
    let plain_options = open.raw("OPTIONS", &[], "");
    assert_eq!(plain_options.status, 405, "an OPTIONS that is no preflight is not answered as one");
}

// ---- in a browser ---------------------------------------------------------------------------

/// A listener for a page at `host` (any port), and the origin it will serve from.
fn bind_page(host: &str) -> (TcpListener, String) {
    let listener = TcpListener::bind((host, 0)).unwrap();
    let address: SocketAddr = listener.local_addr().unwrap();
    (listener, format!("http://{address}"))
}

/// Serves `page` on `listener` for as long as the test runs; returns its origin.
fn serve_page(listener: TcpListener, page: String) -> String {
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut stream = stream;
            let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}", page.len());
        }
    });
    origin
}

/// A page that calls the server's `/mcp` with a token and a wrong one, and reads the metadata,
/// then writes what it saw into `<pre id="out">`.
fn page(server: SocketAddr, token: &str) -> String {
    let meta = meta(json!({}));
    format!(
        r#"<!doctype html><meta charset="utf-8"><title>agent</title><pre id="out">pending</pre>
<script>
const server = "http://{server}";
async function call(token) {{
  try {{
    const r = await fetch(server + "/mcp", {{method: "POST", headers: {{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
      "Authorization": "Bearer " + token, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "list_rooms"}},
      body: JSON.stringify({{jsonrpc: "2.0", id: 1, method: "tools/call", params: {{name: "list_rooms", arguments: {{}}, _meta: {meta}}}}})}});
    return {{status: r.status, challenge: r.headers.get("WWW-Authenticate"), body: await r.text()}};
  }} catch (e) {{ return {{error: String(e)}}; }}
}}
(async () => {{
  const good = await call("{token}");
  const bad = await call("sft_not_a_token");
  let metadata;
  try {{ metadata = await (await fetch(server + "/.well-known/oauth-protected-resource")).json(); }} catch (e) {{ metadata = {{error: String(e)}}; }}
  document.getElementById("out").textContent = JSON.stringify({{good, bad, metadata}});
}})();
</script>"#
    )
}

/// What the page at `url` wrote, after its scripts and fetches ran in headless Chromium.
fn run_in_chromium(exe: &std::path::Path, url: &str) -> Value {
    let scratch = tempfile::tempdir().unwrap();
    let mut child = Command::new(exe)
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--mute-audio", "--disable-background-networking"])
        .arg(format!("--user-data-dir={}", scratch.path().join("profile").display()))
        .args(["--virtual-time-budget=20000", "--dump-dom", url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "chromium did not finish with {url}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dom = std::io::read_to_string(child.stdout.take().unwrap()).unwrap();
    let text = dom.split("<pre id=\"out\">").nth(1).and_then(|rest| rest.split("</pre>").next()).unwrap_or_else(|| panic!("no output in {dom}"));
    let text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
#[ignore = "needs chromium"]
fn issue_22_a_page_on_another_origin_calls_mcp_with_a_token_and_reads_the_challenge() {
    let exe = crate::view::chromium();
    let db = temp_db();
    let server = http(&db.path, &["--demo", "--require-auth"]);
    let token = create_token(&db.path, "browser", "studio:read");
    let page = page(server.address, &token);

    // A loopback origin is allowed by default: the page reads the rooms.
    let allowed = run_in_chromium(&exe, &serve_page(bind_page("127.0.0.1").0, page.clone()));
    assert_eq!(allowed["good"]["status"], 200, "{allowed}");
    let body: Value = serde_json::from_str(allowed["good"]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["result"]["structuredContent"]["rooms"].as_array().map(Vec::len), Some(7), "{body}");
    assert_eq!(allowed["bad"]["status"], 401, "{allowed}");
    let challenge = allowed["bad"]["challenge"].as_str().unwrap_or_else(|| panic!("the page cannot read WWW-Authenticate: {allowed}"));
    assert!(challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata="), "{challenge}");
    assert!(allowed["metadata"]["resource"].is_string(), "{allowed}");

    // Another origin (127.0.0.2 is loopback, but not on the list): the browser is refused every
    // call to /mcp, and may still read the public metadata.
    let refused = run_in_chromium(&exe, &serve_page(bind_page("127.0.0.2").0, page));
    assert!(refused["good"]["error"].as_str().is_some_and(|e| e.contains("Failed to fetch")), "{refused}");
    assert!(refused["bad"]["error"].is_string(), "{refused}");
    assert!(refused["metadata"]["resource"].is_string(), "{refused}");

    // `--allow-origin` adds one: the same host, served by a server that lists it.
    let (listener, origin) = bind_page("127.0.0.2");
    let listed_db = temp_db();
    let listed = http(&listed_db.path, &["--demo", "--require-auth", "--allow-origin", &origin]);
    let token = create_token(&listed_db.path, "browser", "studio:read");
    let seen = run_in_chromium(&exe, &serve_page(listener, self::page(listed.address, &token)));
    assert_eq!(seen["good"]["status"], 200, "{seen}");
}
