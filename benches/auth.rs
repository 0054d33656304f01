//! What the auth check adds to a query over HTTP: `cargo bench --bench auth`. One run starts the
//! real (release) `studioflow serve --http` three times on one copy of the demo studio: without
//! authentication, with `--require-auth` and an API token, and with an OAuth issuer (the tests' own,
//! `tests/it/support/issuer.rs`, on loopback) and its RS256 and ES256 access tokens. It sends
//! `list_rooms` over one keep-alive HTTP/1.1 connection per series, the series interleaved request by
//! request so that all see the same noise from the machine, and prints p50/p90/p99/p99.9 per series
//! and each one's difference from the server without authentication. It prints, never asserts.
//!
//! Options after `--`: `--requests N` per series (default 10000). Run without `--bench` (as
//! `cargo test --benches` does) it makes a quick smoke run.

// The bench mints tokens with the tests' issuer; the forgeries and key rotation it also offers are
// for the tests.
#[allow(dead_code)]
#[path = "../tests/it/support/issuer.rs"]
mod issuer;
#[path = "support/server.rs"]
mod server;

use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::process::Command;
use server::{quantile, Server};
use std::time::{Duration, Instant};

/// The budget the issue sets for what the check adds to a query's p99, in milliseconds.
const BUDGET_P99_MS: f64 = 0.2;
/// The public URL the OAuth server's tokens are for.
const RESOURCE: &str = "http://studio.test/mcp";

/// One series: a keep-alive connection to a server, with the credential it sends, and its samples.
struct Series {
    name: &'static str,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// The whole request, built once: only the round trip is timed.
    request: Vec<u8>,
    ms: Vec<f64>,
}

impl Series {
    fn new(name: &'static str, server: &Server, bearer: Option<&str>) -> Series {
        let stream = TcpStream::connect(server.address).unwrap();
        stream.set_nodelay(true).unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "list_rooms",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "studioflow-auth-bench", "version": "1.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }})
        .to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: list_rooms\r\nContent-Length: {}\r\n",
            server.address,
            body.len()
        );
        if let Some(token) = bearer {
            head += &format!("Authorization: Bearer {token}\r\n");
        }
        let request = format!("{head}\r\n{body}").into_bytes();
        Series { name, reader: BufReader::new(stream.try_clone().unwrap()), writer: stream, request, ms: Vec::new() }
    }

    /// One request and its whole answer; returns the body, and the round trip in ms if `record`.
    fn round_trip(&mut self, record: bool) -> String {
        let started = Instant::now();
        self.writer.write_all(&self.request).unwrap();
        let (status, body) = server::read_answer(&mut self.reader);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let body = String::from_utf8(body).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{}: {status}{body}", self.name);
        if record {
            self.ms.push(ms);
        }
        body
    }
}

fn option(args: &[String], name: &str) -> Option<usize> {
    let at = args.iter().position(|a| a == name)?;
    Some(args.get(at + 1).and_then(|v| v.replace('_', "").parse().ok()).unwrap_or_else(|| panic!("{name} needs a number")))
}

fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(args).output().unwrap();
    assert!(out.status.success(), "studioflow {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes --bench; without it (cargo test --benches) make a quick smoke run.
    let full = args.iter().any(|a| a == "--bench");
    let requests = option(&args, "--requests").unwrap_or(if full { 10_000 } else { 50 });
    let warm_up = if full { 1_000 } else { 10 };

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("studio.db");
    let db_arg = db.to_str().unwrap();
    cli(&["init", "--db", db_arg, "--demo"]);
    let printed = cli(&["token", "create", "--db", db_arg, "--name", "bench", "--scope", "studio:read"]);
    let api_token = printed.split_whitespace().find(|w| w.starts_with("sft_")).expect("token create printed no secret").to_owned();

    // The issuer serves its keys from a runtime of its own, for as long as the bench runs.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let issuer = runtime.block_on(issuer::TestIssuer::start());
    let mut claims = issuer.claims(RESOURCE, "bench@example.com", "studio:read");
    // Valid for the whole run, however long it takes.
    claims["exp"] = json!(issuer::now() + 24 * 3600);
    let rs256 = issuer.mint_rs256(&claims);
    let es256 = issuer.mint_es256(&claims);

    // Rate limits far above what the bench sends: it measures the check, not the limiter's refusals.
    let open = Server::spawn(&db, &[]);
    let tokens = Server::spawn(&db, &["--require-auth", "--rate-limit", "1000000"]);
    let oauth = Server::spawn(&db, &["--oauth-issuer", issuer.url(), "--resource", RESOURCE, "--rate-limit", "1000000"]);
    let mut series = [
        Series::new("no auth", &open, None),
        Series::new("API token", &tokens, Some(&api_token)),
        Series::new("OAuth JWT, RS256", &oauth, Some(&rs256)),
        Series::new("OAuth JWT, ES256", &oauth, Some(&es256)),
    ];
    // Warm-up, not measured: connections, prepared statements, the issuer's keys, the CPU's caches.
    for _ in 0..warm_up {
        for s in series.iter_mut() {
            let body: Value = serde_json::from_str(&s.round_trip(false)).unwrap();
            assert!(body["result"]["structuredContent"]["rooms"].as_array().is_some_and(|r| r.len() == 7), "{}: {body}", s.name);
        }
    }
    let started = Instant::now();
    for i in 0..requests {
        // Interleaved, and each series first in turn, so no series is always the one after another.
        for k in 0..series.len() {
            let at = (i + k) % series.len();
            series[at].round_trip(true);
        }
    }
    let measured = started.elapsed().as_secs_f64();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();

    println!(
        "\n`list_rooms` over keep-alive HTTP/1.1 on 127.0.0.1, one request at a time, ms ({} requests in {measured:.1} s; load average {}):\n",
        requests * series.len(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!("| {:<18} | {:>6} | {:>6} | {:>6} | {:>6} | {:>6} | {:>8} | {:>9} | {:>9} |", "server", "n", "p50", "p90", "p99", "p99.9", "max", "p50 diff", "p99 diff");
    println!("|{:-<20}|{:-<8}|{:-<8}|{:-<8}|{:-<8}|{:-<8}|{:-<10}|{:-<11}|{:-<11}|", "", "", "", "", "", "", "", "", "");
    let mut base = None;
    for s in &series {
        let mut sorted = s.ms.clone();
        sorted.sort_by(f64::total_cmp);
        let (p50, p99) = (quantile(&sorted, 0.50), quantile(&sorted, 0.99));
        let (d50, d99) = match base {
            None => {
                base = Some((p50, p99));
                ("-".to_owned(), "-".to_owned())
            }
            Some((b50, b99)) => (format!("{:+.3}", p50 - b50), format!("{:+.3}", p99 - b99)),
        };
        println!(
            "| {:<18} | {:>6} | {p50:>6.3} | {:>6.3} | {p99:>6.3} | {:>6.3} | {:>8.3} | {d50:>9} | {d99:>9} |",
            s.name,
            sorted.len(),
            quantile(&sorted, 0.90),
            quantile(&sorted, 0.999),
            sorted.last().copied().unwrap_or(0.0),
        );
    }
    println!("\nbudget: the check adds under {BUDGET_P99_MS} ms to p99; a \"p99 diff\" below it meets it.");
    drop(series);

    // The check on its own, in this process: what the gate spends per request (authentication, the
    // rate limiter and the scope decision), free of the HTTP round trip's noise.
    let pool = std::sync::Arc::new(studioflow::store::Pool::open(&db, 2).unwrap());
    let verifier = studioflow::auth::jwt::Verifier::new(studioflow::auth::jwt::IssuerConfig::new(issuer.url(), RESOURCE)).unwrap();
    let config = studioflow::mcp::AuthConfig {
        resource: RESOURCE.to_owned(),
        verifier: Some(verifier),
        issuers: vec![issuer.url().to_owned()],
        limits: studioflow::mcp::RateLimits { per_principal: u32::MAX, failures_per_source: u32::MAX },
    };
    let tasks = studioflow::tasks::Tasks::new(pool.clone(), studioflow::tasks::TaskConfig::new(Duration::from_secs(3600), 1, Duration::from_secs(10)));
    let server = studioflow::mcp::StudioServer::new(studioflow::mcp::Ctx { pool: pool.clone(), tasks, webhooks_to_private: false }).unwrap();
    let gate = studioflow::mcp::Gate::new(pool, config, &server).unwrap();
    let source = Some(std::net::IpAddr::from([127, 0, 0, 1]));
    println!("\nThe gate's check alone (authenticate, rate limit, scope), in process, µs ({} checks each):\n", requests * 2);
    println!("| {:<18} | {:>7} | {:>7} | {:>7} | {:>7} |", "credential", "p50", "p99", "p99.9", "max");
    println!("|{:-<20}|{:-<9}|{:-<9}|{:-<9}|{:-<9}|", "", "", "", "", "");
    for (name, token) in [("API token", &api_token), ("OAuth JWT, RS256", &rs256), ("OAuth JWT, ES256", &es256)] {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(axum::http::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        let mut us: Vec<f64> = runtime.block_on(async {
            let mut us = Vec::with_capacity(requests * 2);
            for i in 0..(warm_up + requests * 2) {
                let started = Instant::now();
                let principal = gate.authenticate(&headers, source).await.unwrap_or_else(|_| panic!("{name} refused"));
                assert!(gate.authorize(&principal, "tools/call", studioflow::auth::Scope::StudioRead).is_ok());
                if i >= warm_up {
                    us.push(started.elapsed().as_secs_f64() * 1e6);
                }
            }
            us
        });
        us.sort_by(f64::total_cmp);
        println!(
            "| {name:<18} | {:>7.1} | {:>7.1} | {:>7.1} | {:>7.1} |",
            quantile(&us, 0.50),
            quantile(&us, 0.99),
            quantile(&us, 0.999),
            us.last().copied().unwrap_or(0.0)
        );
    }
    drop((open, tokens, oauth));
    drop(issuer);
}
