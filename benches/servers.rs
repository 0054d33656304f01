//! Bookings per second and query latency with 1, 2 and 3 `studioflow serve --http` processes on one
//! PostgreSQL schema, beside one server on an SQLite file, in one run: `cargo bench --bench servers`.
//! Each setup starts from the same fresh studio. M clients, spread over the servers, each book their
//! own room's slots one after another (so every booking succeeds) while one more client queries;
//! then M clients only query. It prints a table, never asserts on a figure. It needs
//! `STUDIOFLOW_TEST_PG` (a URL such as `postgres://postgres@127.0.0.1/test`) and says it was skipped
//! without it.
//!
//! Before the timed setups it counts the round trips to PostgreSQL of one booking and of one query: one server
//! connects through a relay of the bench's own that passes the bytes on and counts the turns
//! of each conversation (the server sends after PostgreSQL has answered), less the turns its
//! background work (task and notification sweeps) takes in as long a time with no booking.
//!
//! Options after `--`: `--bookings N` per setup (default 1200), `--clients M` (default 8), `--queries N`
//! per setup in the read phase (default 4000), `--binary PATH` to serve with another build (an older
//! commit's, for a before and after; the studio is built by this build's store, so the two must
//! share a schema version), `--skip-servers 2,3` to leave out setups of PostgreSQL servers. Run without `--bench` (as `cargo test --benches` does)
//! it makes a quick smoke run.

#[path = "support/server.rs"]
mod server;

use chrono::Duration;
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use server::{quantile, Server};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use studioflow::domain::{ClientId, Person, Room, RoomId, Studio, StudioTz, WeeklyHours};
use studioflow::store::{Store, Target};

/// Rooms of the studio: at least as many as clients, since each booking client has a room of its own.
const ROOMS: usize = 32;
/// The first booked day; the studio clock is 2026-08-31 09:00 with 48 hours' notice.
const FIRST_DAY: &str = "2026-09-03";

/// SplitMix64: a deterministic generator, so two runs send the same queries.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

fn tz() -> StudioTz {
    "Europe/London".parse().unwrap()
}

/// The studio every setup starts from: rooms open round the clock with a 15-minute turnaround,
/// one client per room, no bookings.
fn build_studio(target: &Target) {
    let mut store = Store::open(target).unwrap();
    store
        .write_with(|w| {
            w.set_studio(&Studio {
                name: "Servers Bench".into(),
                tz: tz(),
                notice: Duration::hours(48),
                clock: Some(tz().parse("2026-08-31T09:00").unwrap()),
                horizon: Duration::days(730),
            })?;
            for r in 0..ROOMS {
                w.add_room(&Room {
                    id: RoomId::new(format!("room-{r:02}")),
                    name: format!("Room {r}"),
                    capacity: 8,
                    features: Vec::new(),
                    hours: WeeklyHours::parse(&["mon-sun 00:00-24:00"]).unwrap(),
                    buffer: Duration::minutes(15),
                    active: true,
                    rules: Default::default(),
                    price: Default::default(),
                })?;
                w.add_client(&Person { id: ClientId::new(format!("client-{r:02}")), name: format!("Client {r}") })?;
            }
            Ok(())
        })
        .unwrap();
}

/// The `n`th slot of a room: one-hour sessions two hours apart from the first day on, as an
/// instant in UTC. A local time would meet the nights the clocks change (01:00 happens twice in
/// London in October, and the server asks for an offset), which a run of 5,000 bookings reaches.
fn slot(n: usize, hours_after: usize) -> String {
    let day = chrono::NaiveDate::parse_from_str(FIRST_DAY, "%Y-%m-%d").unwrap() + chrono::Days::new(((2 * n + hours_after) / 24) as u64);
    format!("{day}T{:02}:00:00Z", (2 * n + hours_after) % 24)
}

/// A schema of the bench's own in the `STUDIOFLOW_TEST_PG` database, dropped at the end.
struct PgSchema {
    base: String,
    name: String,
}

impl PgSchema {
    fn new(base: &str) -> PgSchema {
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).unwrap();
        let name = format!("bench_{}", data_encoding::HEXLOWER.encode(&random));
        let mut client = postgres::Client::connect(base, postgres::NoTls).unwrap_or_else(|e| panic!("STUDIOFLOW_TEST_PG={base}: {e}"));
        client.batch_execute(&format!("CREATE SCHEMA {name}")).unwrap();
        PgSchema { base: base.to_owned(), name }
    }

    fn url(&self) -> String {
        let join = if self.base.contains('?') { '&' } else { '?' };
        format!("{}{join}options=-csearch_path%3D{}", self.base, self.name)
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

/// A keep-alive HTTP/1.1 connection to one server, one tool call at a time.
struct Connection {
    address: SocketAddr,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    id: u64,
}

impl Connection {
    fn open(server: &Server) -> Connection {
        let stream = TcpStream::connect(server.address).unwrap();
        stream.set_nodelay(true).unwrap();
        Connection { address: server.address, reader: BufReader::new(stream.try_clone().unwrap()), writer: stream, id: 0 }
    }

    /// Calls a tool that must succeed; returns its structured content and the round trip in ms.
    /// Building the request is outside the timed span, reading the whole answer inside it.
    fn call(&mut self, tool: &str, arguments: Value) -> (Value, f64) {
        self.id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.id, "method": "tools/call", "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "studioflow-servers-bench", "version": "1.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }})
        .to_string();
        // `create_booking` mirrors its room into a routing header (x-mcp-header), as a conforming
        // client sends it; the rooms here are plain ASCII ids.
        let routing = match (tool, body_room(&body)) {
            ("create_booking", Some(room)) => format!("Mcp-Param-Room: {room}\r\n"),
            _ => String::new(),
        };
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n{routing}Content-Length: {}\r\n\r\n{body}",
            self.address,
            body.len()
        );
        let started = Instant::now();
        self.writer.write_all(request.as_bytes()).unwrap();
        let (status, answer) = server::read_answer(&mut self.reader);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert!(status.starts_with("HTTP/1.1 200") && answer.get("error").is_none(), "{tool}: {status}{answer}");
        assert_ne!(answer["result"]["isError"], json!(true), "{tool}: {answer}");
        (answer["result"]["structuredContent"].clone(), ms)
    }
}

/// Varied `query_bookings` arguments over the days the bookings span: a day or three, one room or
/// all, up to 50 bookings.
fn query_args(rng: &mut Rng, days: usize) -> Value {
    let from = rng.below(days.max(1)) * 12;
    let span = [12, 36][rng.below(2)];
    let mut args = json!({"from": slot(from, 0), "to": slot(from + span, 0), "limit": 50});
    if rng.below(2) == 0 {
        args["room"] = json!(format!("room-{:02}", rng.below(ROOMS)));
    }
    args
}

fn sorted(mut ms: Vec<f64>) -> Vec<f64> {
    ms.sort_by(f64::total_cmp);
    ms
}

/// One setup's figures.
struct Figures {
    bookings_per_s: f64,
    booking_ms: Vec<f64>,
    /// `query_bookings` while the bookings were being written.
    busy_query_ms: Vec<f64>,
    queries_per_s: f64,
    query_ms: Vec<f64>,
}

/// Runs one setup: `servers` processes on `db`, `clients` booking clients, then `clients` querying ones.
fn run(db: &str, servers: usize, clients: usize, bookings: usize, queries: usize) -> Figures {
    let servers: Vec<Server> = (0..servers).map(|_| Server::spawn(db, &[])).collect();
    let each = bookings / clients;
    let days = (2 * each).div_ceil(24);
    // Warm-up, not measured: every server's pool opens connections and prepares its statements.
    for server in &servers {
        let mut c = Connection::open(server);
        for i in 0..20 {
            c.call("list_rooms", json!({}));
            c.call("query_bookings", query_args(&mut Rng(i), 1));
        }
    }

    // The write phase: client k books slot after slot of room k, through server k mod n; one more
    // client queries through each server in turn until the bookings are done.
    let writing = AtomicBool::new(true);
    let started = Instant::now();
    let (booking_ms, busy_query_ms, written_in) = std::thread::scope(|s| {
        let writers: Vec<_> = (0..clients)
            .map(|k| {
                let server = &servers[k % servers.len()];
                s.spawn(move || {
                    let mut c = Connection::open(server);
                    (0..each)
                        .map(|n| {
                            let args = json!({"room": format!("room-{k:02}"), "client": format!("client-{k:02}"), "start": slot(n, 0), "end": slot(n, 1)});
                            c.call("create_booking", args).1
                        })
                        .collect::<Vec<f64>>()
                })
            })
            .collect();
        let reader = s.spawn(|| {
            let mut connections: Vec<Connection> = servers.iter().map(Connection::open).collect();
            let (mut rng, mut ms, mut i) = (Rng(7), Vec::new(), 0);
            while writing.load(Ordering::Relaxed) {
                let at = i % connections.len();
                ms.push(connections[at].call("query_bookings", query_args(&mut rng, days)).1);
                i += 1;
            }
            ms
        });
        let booking_ms: Vec<f64> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
        let written_in = started.elapsed().as_secs_f64();
        writing.store(false, Ordering::Relaxed);
        (booking_ms, reader.join().unwrap(), written_in)
    });

    // The read phase: `clients` clients query, spread over the servers like the writers.
    let started = Instant::now();
    let query_ms: Vec<f64> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..clients)
            .map(|k| {
                let server = &servers[k % servers.len()];
                s.spawn(move || {
                    let (mut c, mut rng) = (Connection::open(server), Rng(1000 + k as u64));
                    (0..queries / clients).map(|_| c.call("query_bookings", query_args(&mut rng, days)).1).collect::<Vec<f64>>()
                })
            })
            .collect();
        readers.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    let read_in = started.elapsed().as_secs_f64();

    Figures {
        bookings_per_s: booking_ms.len() as f64 / written_in,
        booking_ms: sorted(booking_ms),
        busy_query_ms: sorted(busy_query_ms),
        queries_per_s: query_ms.len() as f64 / read_in,
        query_ms: sorted(query_ms),
    }
}

/// A TCP relay to PostgreSQL that counts round trips: a turn is the client sending after the
/// server has answered it (a request written in pieces, or several sent before any answer, as a
/// pipeline sends them, count once).
struct Relay {
    address: SocketAddr,
    turns: Arc<AtomicU64>,
}

impl Relay {
    fn start(upstream: String) -> Relay {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let turns = Arc::new(AtomicU64::new(0));
        let counted = turns.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect(&upstream).unwrap_or_else(|e| panic!("relay to {upstream}: {e}"));
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                // Whether the server has spoken since the client last did: the next send is a new turn.
                let answered = Arc::new(AtomicBool::new(true));
                let (mut from_client, mut to_server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut from_server, mut to_client) = (server, client);
                let (answered_up, turns) = (answered.clone(), counted.clone());
                std::thread::spawn(move || pass(&mut from_client, &mut to_server, |_| {
                    if answered_up.swap(false, Ordering::SeqCst) {
                        turns.fetch_add(1, Ordering::SeqCst);
                    }
                }));
                std::thread::spawn(move || pass(&mut from_server, &mut to_client, |_| answered.store(true, Ordering::SeqCst)));
            }
        });
        Relay { address, turns }
    }

    fn turns(&self) -> u64 {
        self.turns.load(Ordering::SeqCst)
    }
}

/// Copies `from` to `to` until either end closes, calling `seen` on each read before passing it on.
fn pass(from: &mut TcpStream, to: &mut TcpStream, mut seen: impl FnMut(usize)) {
    use std::io::Read;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen(n);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
    let _ = from.shutdown(std::net::Shutdown::Both);
}

/// `url` (postgres://USER@HOST[:PORT]/DB?...) with its host and port replaced by `address`, and
/// the host and port it named.
fn through(url: &str, address: SocketAddr) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (user, rest) = match rest.split_once('@') {
        Some((user, rest)) => (format!("{user}@"), rest),
        None => (String::new(), rest),
    };
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    let host = &rest[..at];
    let upstream = if host.contains(':') { host.to_owned() } else { format!("{}:5432", if host.is_empty() { "127.0.0.1" } else { host }) };
    (format!("{scheme}://{user}{address}{}", &rest[at..]), upstream)
}

/// Round trips to PostgreSQL per `create_booking`, then per `query_bookings` (the same mix as the
/// querying clients'), counted on the wire (see [`Relay`]), with the background work's turns in
/// as long a time taken out; and that background rate per second.
fn round_trips(base: &str, bookings: usize) -> (f64, f64, f64) {
    let schema = PgSchema::new(base);
    let url = schema.url();
    build_studio(&Target::parse(&url));
    let (_, upstream) = through(&url, SocketAddr::from(([127, 0, 0, 1], 0)));
    let relay = Relay::start(upstream);
    let (relayed, _) = through(&url, relay.address);
    let server = Server::spawn(&relayed, &[]);
    let mut c = Connection::open(&server);
    // Warm-up: the pool's connections are made and their statements prepared.
    for n in 0..20 {
        c.call("list_rooms", json!({}));
        c.call("create_booking", json!({"room": "room-00", "client": "client-00", "start": slot(n, 0), "end": slot(n, 1)}));
    }
    let (before, started) = (relay.turns(), Instant::now());
    for n in 20..20 + bookings {
        c.call("create_booking", json!({"room": "room-00", "client": "client-00", "start": slot(n, 0), "end": slot(n, 1)}));
    }
    let (booked, took) = (relay.turns() - before, started.elapsed());
    let (before, idle_from) = (relay.turns(), Instant::now());
    std::thread::sleep(took.max(std::time::Duration::from_millis(500)));
    let background_per_s = (relay.turns() - before) as f64 / idle_from.elapsed().as_secs_f64();
    let per_booking = (booked as f64 - background_per_s * took.as_secs_f64()).max(0.0) / bookings as f64;
    let (mut rng, days) = (Rng(3), (2 * (20 + bookings)).div_ceil(24));
    let (before, started) = (relay.turns(), Instant::now());
    for _ in 0..bookings {
        c.call("query_bookings", query_args(&mut rng, days));
    }
    let (queried, took) = (relay.turns() - before, started.elapsed());
    let per_query = (queried as f64 - background_per_s * took.as_secs_f64()).max(0.0) / bookings as f64;
    (per_booking, per_query, background_per_s)
}

fn option(args: &[String], name: &str) -> Option<usize> {
    let at = args.iter().position(|a| a == name)?;
    Some(args.get(at + 1).and_then(|v| v.replace('_', "").parse().ok()).unwrap_or_else(|| panic!("{name} needs a number")))
}

fn main() {
    let Ok(base) = std::env::var("STUDIOFLOW_TEST_PG") else {
        println!("skipped: STUDIOFLOW_TEST_PG is not set (a PostgreSQL URL such as postgres://postgres@127.0.0.1/test)");
        return;
    };
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes --bench; without it (cargo test --benches) make a quick smoke run.
    let full = args.iter().any(|a| a == "--bench");
    let clients = option(&args, "--clients").unwrap_or(if full { 8 } else { 4 }).clamp(1, ROOMS);
    let bookings = option(&args, "--bookings").unwrap_or(if full { 1200 } else { 40 }).max(clients);
    let queries = option(&args, "--queries").unwrap_or(if full { 4000 } else { 40 }).max(clients);
    if let Some(at) = args.iter().position(|a| a == "--binary") {
        let binary = std::path::PathBuf::from(args.get(at + 1).expect("--binary needs the path of a studioflow binary"));
        println!("server: {}", binary.display());
        server::use_binary(binary);
    }
    let skipped: Vec<usize> = match args.iter().position(|a| a == "--skip-servers") {
        Some(at) => args.get(at + 1).expect("--skip-servers needs a list such as 2,3").split(',').map(|n| n.trim().parse().expect("--skip-servers: numbers")).collect(),
        None => Vec::new(),
    };

    // Concurrent CREATE EXTENSION races on the catalog; a no-op once it is there.
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap_or_else(|e| panic!("STUDIOFLOW_TEST_PG={base}: {e}"));
    admin.batch_execute("CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public").unwrap();
    drop(admin);

    let counted = if full { 200 } else { 20 };
    let (trips, query_trips, background) = round_trips(&base, counted);
    eprintln!("PostgreSQL: {trips:.2} round trips per booking, {query_trips:.2} per query");

    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    let started = Instant::now();
    for (backend, servers) in [("SQLite", 1), ("PostgreSQL", 1), ("PostgreSQL", 2), ("PostgreSQL", 3)] {
        if backend == "PostgreSQL" && skipped.contains(&servers) {
            continue;
        }
        // A fresh studio for each setup, so each starts from the same state.
        let schema;
        let db = if backend == "SQLite" {
            dir.path().join(format!("servers-{}.db", rows.len())).to_str().unwrap().to_owned()
        } else {
            schema = PgSchema::new(&base);
            schema.url()
        };
        build_studio(&Target::parse(&db));
        let figures = run(&db, servers, clients, bookings, queries);
        // Rows written by one transaction share its id (xmin): the group commit's batches.
        let per_commit = (backend == "PostgreSQL").then(|| {
            let mut client = postgres::Client::connect(&db, postgres::NoTls).unwrap();
            client.query_one("SELECT COUNT(*)::float8 / GREATEST(COUNT(DISTINCT xmin::text), 1) FROM bookings", &[]).unwrap().get::<_, f64>(0)
        });
        eprintln!(
            "{backend} x {servers}: {:.0} bookings/s ({} queries meanwhile), {:.0} queries/s",
            figures.bookings_per_s,
            figures.busy_query_ms.len(),
            figures.queries_per_s
        );
        rows.push((backend, servers, figures, per_commit));
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());

    println!(
        "\n{clients} booking clients ({} bookings each) and 1 querying client, then {clients} querying clients ({} queries each), \
         spread over the servers; keep-alive HTTP/1.1 on 127.0.0.1; ms ({cores} cores; {:.0} s; load average {}):\n",
        bookings / clients,
        queries / clients,
        started.elapsed().as_secs_f64(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!(
        "| {:<10} | {:>7} | {:>10} | {:>16} | {:>8} | {:>8} | {:>17} | {:>9} | {:>9} | {:>9} |",
        "store", "servers", "bookings/s", "bookings/commit", "book p50", "book p99", "query p99 writing", "queries/s", "query p50", "query p99"
    );
    println!("|{:-<12}|{:-<9}|{:-<12}|{:-<18}|{:-<10}|{:-<10}|{:-<19}|{:-<11}|{:-<11}|{:-<11}|", "", "", "", "", "", "", "", "", "", "");
    for (backend, servers, f, per_commit) in &rows {
        println!(
            "| {backend:<10} | {servers:>7} | {:>10.0} | {:>16} | {:>8.2} | {:>8.2} | {:>17.2} | {:>9.0} | {:>9.2} | {:>9.2} |",
            f.bookings_per_s,
            per_commit.map_or("1".to_owned(), |n| format!("{n:.2}")),
            quantile(&f.booking_ms, 0.50),
            quantile(&f.booking_ms, 0.99),
            quantile(&f.busy_query_ms, 0.99),
            f.queries_per_s,
            quantile(&f.query_ms, 0.50),
            quantile(&f.query_ms, 0.99),
        );
    }
    println!(
        "\nRound trips to PostgreSQL per create_booking (one server, one client, {counted} bookings, counted on the wire): {trips:.2}; \
         per query_bookings (then {counted} queries): {query_trips:.2} (the server's background work, {background:.1} round trips/s, taken out)."
    );
    println!(
        "\nOne writer per studio at a time (SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock): bookings/s is bound by one transaction at a time (its statements and its commit), whatever the number of servers. \
         On PostgreSQL the bookings one server has ready together share a transaction (group commit): bookings/commit is the bookings of the write phase over the transactions that wrote them (rows of one transaction share its id, xmin)."
    );
}

/// The `room` argument of a `tools/call` body, if it has one.
fn body_room(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    value["params"]["arguments"]["room"].as_str().map(str::to_owned)
}
