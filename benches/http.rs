//! HTTP throughput: `cargo bench --bench http`. One run serves one copy of the demo studio with the
//! real (release) `studioflow serve --http`, without authentication and with `--require-auth` and an
//! API token, and beside them a reference: a minimal hyper server (this bench's own binary, in a
//! process of its own like the studio's) that answers every request with the very bytes studioflow
//! answered, after reading the request's body. The reference is this machine's ceiling for the same
//! exchange; the ratio to it is what the serving path costs.
//!
//! The load: `--connections` keep-alive HTTP/1.1 connections (default 16), each on a thread of its
//! own sending `tools/call query_bookings` of one room's week one after another, for `--seconds` each
//! series (default 5) after a second of warm-up. The series run one after another (a saturated
//! server cannot share the machine with another), in `--rounds` rounds (default 2) so that the
//! machine's noise shows. It prints requests/s, p50 and p99 per series and the ratio to the
//! reference of its round; it never asserts on a figure.
//!
//! `--against HOST:PORT` loads a server started by hand instead (a demo studio, without
//! authentication), for profiling. Run without `--bench` (as `cargo test --benches` does) it makes
//! a quick smoke run.

#[path = "support/server.rs"]
mod server;

use serde_json::json;
use server::{quantile, Server};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The week of one room that every request asks for: 26 bookings of the demo studio.
const ARGUMENTS: &str = r#"{"room":"studio-a","from":"2026-09-07T00:00","to":"2026-09-14T00:00"}"#;

fn request_bytes(address: SocketAddr, bearer: Option<&str>) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "query_bookings",
        "arguments": serde_json::from_str::<serde_json::Value>(ARGUMENTS).unwrap(),
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "studioflow-http-bench", "version": "1.0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
    .to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: query_bookings\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(token) = bearer {
        head += &format!("Authorization: Bearer {token}\r\n");
    }
    format!("{head}\r\n{body}").into_bytes()
}

/// One exchange on a fresh connection: the answer's status line and body.
fn exchange(address: SocketAddr, request: &[u8]) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_nodelay(true).unwrap();
    stream.write_all(request).unwrap();
    server::read_answer(&mut BufReader::new(stream))
}

/// What one series measured.
struct Measured {
    requests: usize,
    seconds: f64,
    /// Every round trip, ms, sorted.
    ms: Vec<f64>,
}

/// `connections` threads, each on its own keep-alive connection, for `warm_up` and then `seconds`.
fn load(address: SocketAddr, request: &[u8], connections: usize, warm_up: Duration, seconds: Duration) -> Measured {
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..connections)
        .map(|_| {
            let (request, measuring, stop) = (request.to_vec(), measuring.clone(), stop.clone());
            std::thread::spawn(move || {
                let stream = TcpStream::connect(address).unwrap();
                stream.set_nodelay(true).unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                let mut ms = Vec::with_capacity(1 << 16);
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    writer.write_all(&request).unwrap();
                    let (status, body) = server::read_answer(&mut reader);
                    assert!(status.starts_with("HTTP/1.1 200"), "{status}{}", String::from_utf8_lossy(&body));
                    if measuring.load(Ordering::Relaxed) {
                        ms.push(started.elapsed().as_secs_f64() * 1000.0);
                    }
                }
                ms
            })
        })
        .collect();
    std::thread::sleep(warm_up);
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    std::thread::sleep(seconds);
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut ms: Vec<f64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    ms.sort_by(f64::total_cmp);
    Measured { requests: ms.len(), seconds: elapsed, ms }
}

fn option(args: &[String], name: &str) -> Option<f64> {
    let at = args.iter().position(|a| a == name)?;
    Some(args.get(at + 1).and_then(|v| v.replace('_', "").parse().ok()).unwrap_or_else(|| panic!("{name} needs a number")))
}

fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(args).output().unwrap();
    assert!(out.status.success(), "studioflow {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The reference server, in a process of its own: this binary started with `--reference BODY`.
struct Reference {
    child: Child,
    address: SocketAddr,
}

impl Reference {
    fn spawn(body: &std::path::Path) -> Reference {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .arg("--reference")
            .arg(body)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("spawning the reference server");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        Reference { child, address: line.trim().parse().expect("the reference server's address") }
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The reference: hyper's HTTP/1.1 server on a multi-threaded tokio runtime (as studioflow's),
/// reading each request's body whole and answering the stored bytes as `application/json`.
fn serve_reference(body: &std::path::Path) -> ! {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    let answer = Bytes::from(std::fs::read(body).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let answer = answer.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let answer = answer.clone();
                    async move {
                        let _ = request.into_body().collect().await?.to_bytes();
                        let mut response = hyper::Response::new(Full::new(answer));
                        response.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
                        Ok::<_, hyper::Error>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--reference") {
        serve_reference(std::path::Path::new(&args[at + 1]));
    }
    // `cargo bench` passes --bench; without it (cargo test --benches) make a quick smoke run.
    let full = args.iter().any(|a| a == "--bench");
    let connections = option(&args, "--connections").unwrap_or(if full { 16.0 } else { 2.0 }) as usize;
    let seconds = Duration::from_secs_f64(option(&args, "--seconds").unwrap_or(if full { 5.0 } else { 0.2 }));
    let warm_up = Duration::from_secs_f64(if full { 1.0 } else { 0.1 });
    let rounds = option(&args, "--rounds").unwrap_or(if full { 2.0 } else { 1.0 }) as usize;
    // `--against ADDR`: load a server started by hand (under a profiler, say) without a token, and
    // print its figures alone.
    if let Some(at) = args.iter().position(|a| a == "--against") {
        let address: SocketAddr = args.get(at + 1).and_then(|a| a.parse().ok()).expect("--against needs HOST:PORT");
        let m = load(address, &request_bytes(address, None), connections, warm_up, seconds);
        println!("{address}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms", m.requests as f64 / m.seconds, quantile(&m.ms, 0.5), quantile(&m.ms, 0.99));
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("studio.db");
    let db_arg = db.to_str().unwrap();
    cli(&["init", "--db", db_arg, "--demo"]);
    let printed = cli(&["token", "create", "--db", db_arg, "--name", "bench", "--scope", "studio:read"]);
    let token = printed.split_whitespace().find(|w| w.starts_with("sft_")).expect("token create printed no secret").to_owned();

    let open = Server::spawn(&db, &[]);
    // A rate limit far above what the bench sends: it measures the serving path, not refusals.
    let gated = Server::spawn(&db, &["--require-auth", "--rate-limit", "1000000"]);
    let plain = request_bytes(open.address, None);
    let with_token = request_bytes(gated.address, Some(&token));

    // The reference answers exactly what studioflow answers.
    let (status, answer) = exchange(open.address, &plain);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let parsed: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    let found = parsed["result"]["structuredContent"]["bookings"].as_array().map_or(0, Vec::len);
    assert!(found > 0, "the week has no bookings: {parsed}");
    let (_, gated_answer) = exchange(gated.address, &with_token);
    assert_eq!(gated_answer, answer, "with a token, the same answer");
    let answer_file = dir.path().join("answer.json");
    std::fs::write(&answer_file, &answer).unwrap();
    let reference = Reference::spawn(&answer_file);
    let reference_request = request_bytes(reference.address, None);

    println!(
        "\n`tools/call query_bookings` of one room's week ({found} bookings, {} bytes answered), {connections} keep-alive HTTP/1.1 connections, {:.1} s per series:\n",
        answer.len(),
        seconds.as_secs_f64()
    );
    println!("| {:>5} | {:<29} | {:>9} | {:>7} | {:>7} | {:>8} | {:<14} |", "round", "server", "req/s", "p50 ms", "p99 ms", "of ref.", "load average");
    println!("|{:-<7}|{:-<31}|{:-<11}|{:-<9}|{:-<9}|{:-<10}|{:-<16}|", "", "", "", "", "", "", "");
    for round in 1..=rounds {
        let mut reference_rate = None;
        let series: [(&str, SocketAddr, &[u8]); 3] = [
            ("reference (hyper, same bytes)", reference.address, &reference_request),
            ("studioflow, no auth", open.address, &plain),
            ("studioflow, API token", gated.address, &with_token),
        ];
        for (name, address, request) in series {
            let m = load(address, request, connections, warm_up, seconds);
            let rate = m.requests as f64 / m.seconds;
            let ratio = match reference_rate {
                None => {
                    reference_rate = Some(rate);
                    "1.00".to_owned()
                }
                Some(r) => format!("{:.2}", rate / r),
            };
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            println!(
                "| {round:>5} | {name:<29} | {rate:>9.0} | {:>7.2} | {:>7.2} | {ratio:>8} | {:<14} |",
                quantile(&m.ms, 0.50),
                quantile(&m.ms, 0.99),
                load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
            );
        }
    }
    drop((open, gated, reference));
}
