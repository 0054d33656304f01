//! Round-trip latency of tool calls over stdio on a 100,000-booking studio: `cargo bench --bench latency`.
//! It builds the database through the library, spawns the real (release) `studioflow serve --db`,
//! sends thousands of varied `query_bookings` and `find_free_slots` calls one at a time, and prints
//! p50/p90/p99/max per tool beside the transport floor measured in the same run (`server/discover`),
//! with each tool's p50 and p99 as a multiple of the floor's (issue 28's target: at most 1.5 and 2),
//! so noise on a shared machine can be judged. It prints, never asserts.
//!
//! Options after `--`: `--bookings N` (default 100000), `--calls N` per tool (default 2000),
//! `--binary PATH` to serve with another build (an older commit's, for a before-and-after in
//! one sitting), `--keep PATH` to leave the database built at PATH. Run
//! without `--bench` (as `cargo test --benches` does) it makes a quick smoke run on a small studio.

use chrono::{Duration, NaiveDate};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;
use studioflow::domain::{ClientId, EngineerId, Session, Person, Room, RoomId, Status, Studio, StudioTz, WeeklyHours};
use studioflow::store::Store;

/// The p99 we aim for, per call, in milliseconds.
const TARGET_P99_MS: f64 = 5.0;
/// The most a quick call may cost, as a multiple of the floor's p50 and of its p99.
const FLOOR_P50: f64 = 1.5;
const FLOOR_P99: f64 = 2.0;
const ROOMS: usize = 45;
const CLIENTS: usize = 300;
const ENGINEERS: usize = 30;
/// Four session starts a day per room; sessions last at most 120 minutes, so with the 15-minute
/// turnaround no two sessions of a room ever touch, and the gaps leave room for free-slot answers.
const SLOT_STARTS: [(u32, u32); 4] = [(10, 0), (12, 30), (15, 0), (17, 30)];
/// The first booked day: the studio clock is 2026-08-31 09:00 with 48 hours' notice.
const FIRST_DAY: (i32, u32, u32) = (2026, 9, 3);
/// How many days a free-slot search covers.
const SEARCH_DAYS: [usize; 4] = [1, 2, 3, 7];
const FEATURE_SETS: [&[&str]; 3] = [&["drums", "pa-system"], &["control-room", "vocal-booth"], &["podcast-desk", "video"]];

/// What the server process has spent so far, from `/proc` (Linux): the CPU time of all its
/// threads, and how many times any of them was switched out (waiting or preempted). Beside the
/// round trips, these say how much work a call takes whatever the machine's load.
#[derive(Clone, Copy)]
struct ServerCost {
    cpu_seconds: f64,
    switches: u64,
}

impl ServerCost {
    fn of(pid: u32) -> Option<ServerCost> {
        // utime and stime, fields 14 and 15 of /proc/PID/stat, in clock ticks (100 a second on Linux).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        let mut switches = 0;
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            for line in status.lines().filter(|l| l.contains("ctxt_switches:")) {
                switches += line.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
            }
        }
        Some(ServerCost { cpu_seconds: ticks as f64 / 100.0, switches })
    }

    /// The CPU time of all the server's threads, in nanoseconds (the first field of each thread's
    /// `/proc/PID/task/TID/schedstat`): fine enough to price a few hundred calls of one kind.
    fn cpu_ns(pid: u32) -> Option<u64> {
        let mut total = 0;
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
            let schedstat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            total += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(total)
    }
}

/// SplitMix64: a deterministic generator, so two runs send the same calls.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn room_id(r: usize) -> String {
    format!("room-{r:02}")
}

/// Writes the studio and `bookings` sessions spread over the rooms and about two years; returns the
/// number of days the bookings span.
fn build_database(path: &Path, bookings: usize) -> usize {
    let tz: StudioTz = "Europe/London".parse().unwrap();
    let mut store = Store::open(path).unwrap();
    store
        .write_with(|w| {
            w.set_studio(&Studio {
                name: "Latency Rooms".into(),
                tz,
                notice: Duration::hours(48),
                clock: Some(tz.parse("2026-08-31T09:00").unwrap()),
                // The bookings span about two years: a horizon of three keeps them all bookable.
                horizon: Duration::days(3 * 365),
            })?;
            for r in 0..ROOMS {
                w.add_room(&Room {
                    id: RoomId::new(room_id(r)),
                    name: format!("Room {r}"),
                    capacity: [4, 6, 8, 10, 12][r % 5],
                    features: FEATURE_SETS[r % 3].iter().map(|f| f.to_string()).collect(),
                    hours: WeeklyHours::parse(&["mon-sun 08:00-24:00"]).unwrap(),
                    buffer: Duration::minutes(15),
                    active: true,
                    rules: Default::default(),
                    price: Default::default(),
                })?;
            }
            for c in 0..CLIENTS {
                w.add_client(&Person { id: ClientId::new(format!("client-{c:03}")), name: format!("Client {c}") })?;
            }
            for e in 0..ENGINEERS {
                w.add_engineer(&Person { id: EngineerId::new(format!("eng-{e:02}")), name: format!("Engineer {e}") })?;
            }
            Ok(())
        })
        .unwrap();

    let first = NaiveDate::from_ymd_opt(FIRST_DAY.0, FIRST_DAY.1, FIRST_DAY.2).unwrap();
    // Every (day, slot, room) in turn; `position` carries on from one transaction to the next.
    let mut position = 0usize;
    let mut written = 0;
    let mut last_day = 0;
    // About 20,000 bookings per transaction: one commit each, instead of 100,000 fsyncs.
    while written < bookings {
        let chunk_end = (written + 20_000).min(bookings);
        store
            .write_with(|w| {
                while written < chunk_end {
                    let (day, s, r) = (position / ROOMS / SLOT_STARTS.len(), position / ROOMS % SLOT_STARTS.len(), position % ROOMS);
                    position += 1;
                    // About one session in five is left out, so every room has free gaps.
                    if (day * 7 + r * 3 + s) % 5 == 0 {
                        continue;
                    }
                    let (hour, minute) = SLOT_STARTS[s];
                    let date = first + chrono::Days::new(day as u64);
                    let start = tz.parse(&format!("{date}T{hour:02}:{minute:02}")).unwrap();
                    let t = day * SLOT_STARTS.len() + s;
                    // At one slot every room has its own client and (for the first rooms) its own
                    // engineer, so no insert is refused for a busy person.
                    let client = (r + ROOMS * (t % 6)) % CLIENTS;
                    let engineer = (r < ENGINEERS && s % 2 == 0).then(|| EngineerId::new(format!("eng-{r:02}")));
                    let minutes = [60, 90, 120][(day + r + s) % 3];
                    let features = FEATURE_SETS[r % 3];
                    w.create_booking(&Session {
                        room: RoomId::new(room_id(r)),
                        client: ClientId::new(format!("client-{client:03}")),
                        engineer,
                        start,
                        end: start + Duration::minutes(minutes),
                        party_size: 1 + (t % 4) as u32,
                        requires: features[..(day + s) % 2 + 1].iter().map(|f| f.to_string()).collect(),
                        engineer_skills: Vec::new(),
                        status: if (day + r) % 11 == 0 { Status::Tentative } else { Status::Confirmed },
                        pinned: false,
                    })?;
                    written += 1;
                    last_day = day;
                }
                Ok(())
            })
            .unwrap();
    }
    last_day + 1
}

/// `studioflow serve` on stdio, one request at a time.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    id: u64,
    /// The line each reply is read into, kept from one request to the next. Read into a new
    /// string, a reply of more than a kilobyte had the client's allocator inside the timed span:
    /// glibc sorts the small blocks freed by the last reply's parse (`malloc_consolidate`) on the
    /// first large request after them, and that cost up to 17 µs of a 45 µs round trip.
    reply: String,
}

impl Server {
    fn spawn(binary: &Path, db: &Path) -> Server {
        let mut child = Command::new(binary)
            .args(["serve", "--db", db.to_str().unwrap()])
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning studioflow serve");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server { child, stdin, stdout, id: 0, reply: String::with_capacity(1 << 20) }
    }

    /// Sends one request and waits for its response; returns the result and the round trip in ms.
    /// Serialising the request is outside the timed span, reading the whole response line inside it.
    fn request(&mut self, method: &str, mut params: Value) -> (Value, f64) {
        self.id += 1;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "studioflow-latency", "version": "1.0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})).unwrap();
        line.push(b'\n');
        let mut reply = std::mem::take(&mut self.reply);
        reply.clear();
        let started = Instant::now();
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(&line).unwrap();
        stdin.flush().unwrap();
        self.stdout.read_line(&mut reply).unwrap();
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let response: Value = serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{method}: unreadable reply {reply:?}: {e}"));
        assert_eq!(response["id"], json!(self.id), "{method}: a reply to another request: {reply}");
        assert!(response.get("error").is_none(), "{method} {params}: {reply}");
        self.reply = reply;
        (response["result"].clone(), elapsed)
    }

    /// Calls a tool that must succeed; returns its structured content and the round trip.
    fn call(&mut self, tool: &str, arguments: Value) -> (Value, f64) {
        let (result, ms) = self.request("tools/call", json!({"name": tool, "arguments": arguments.clone()}));
        assert_ne!(result["isError"], json!(true), "{tool} {arguments}: {result}");
        (result["structuredContent"].clone(), ms)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Closing stdin is the server's signal to finish; it exits on EOF.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// A local date-time `days` after the first booked day, at `hour`.
fn local(days: usize, hour: usize) -> String {
    // 01:00 happens twice in London on the night the clocks go back, and the server asks for an
    // offset then: the bench asks for 02:00 instead.
    let hour = if hour == 1 { 2 } else { hour };
    let first = NaiveDate::from_ymd_opt(FIRST_DAY.0, FIRST_DAY.1, FIRST_DAY.2).unwrap();
    format!("{}T{hour:02}:00", first + chrono::Days::new(days as u64))
}

/// Varied `query_bookings` arguments: a window of an hour to two weeks somewhere in the two years,
/// in one room or all, for one client now and then, with different page sizes.
fn query_args(rng: &mut Rng, days: usize) -> Value {
    let start = rng.below(days.saturating_sub(14).max(1));
    let hour = 8 + rng.below(12);
    let span_hours = *rng.pick(&[1, 6, 24, 72, 168, 336]);
    let mut args = json!({
        "from": local(start, hour),
        "to": local(start + (hour + span_hours) / 24, (hour + span_hours) % 24),
        "limit": *rng.pick(&[10, 20, 50, 100, 200]),
    });
    match rng.below(10) {
        0..=4 => args["room"] = json!(room_id(rng.below(ROOMS))),
        5 => args["client"] = json!(format!("client-{:03}", rng.below(CLIENTS))),
        6 => args["status"] = json!("tentative"),
        _ => {}
    }
    args
}

/// Varied `find_free_slots` arguments: a search of a day to a week for a session of one to four
/// hours, with a party size, sometimes required features, one room, or a busy client. Also gives
/// the number of days searched.
fn slot_args(rng: &mut Rng, days: usize) -> (Value, usize) {
    let start = rng.below(days.saturating_sub(7).max(1));
    let span = *rng.pick(&SEARCH_DAYS);
    let mut args = json!({
        "from": local(start, 8),
        "to": local(start + span, 8),
        "duration_minutes": *rng.pick(&[60, 90, 120, 180, 240]),
        "party_size": 1 + rng.below(8),
        "limit": *rng.pick(&[5, 10, 20, 50]),
    });
    match rng.below(10) {
        0..=2 => args["requires"] = json!(FEATURE_SETS[rng.below(3)][..1]),
        3..=4 => args["room"] = json!(room_id(rng.below(ROOMS))),
        5 => args["client"] = json!(format!("client-{:03}", rng.below(CLIENTS))),
        _ => {}
    }
    (args, span)
}

/// Latencies of one kind of call, in ms.
#[derive(Default)]
struct Samples {
    ms: Vec<f64>,
    /// Items in the answers (bookings or slots), to show how much work the calls did.
    items: usize,
}

impl Samples {
    fn quantile(sorted: &[f64], q: f64) -> f64 {
        // Nearest rank: the smallest sample with at least q of the samples at or below it.
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    /// The p50 and p99, in ms.
    fn p50_p99(&self) -> (f64, f64) {
        let mut sorted = self.ms.clone();
        sorted.sort_by(f64::total_cmp);
        (Self::quantile(&sorted, 0.50), Self::quantile(&sorted, 0.99))
    }

    /// One row of the table; `floor` is the floor's (p50, p99), beside which a tool's are given.
    fn row(&self, name: &str, target: bool, floor: (f64, f64)) {
        // A kind no call fell into (a page read again, with a handful of calls) has no quantiles.
        if self.ms.is_empty() {
            println!("| {name:<24} | {:>5} | {:>7} | {:>7} | {:>7} | {:>7} | {:>9} | {:>10} | {:>9} | {:>9} |", 0, "-", "-", "-", "-", "-", "-", "-", "-");
            return;
        }
        let mut sorted = self.ms.clone();
        sorted.sort_by(f64::total_cmp);
        let (p50, p99) = self.p50_p99();
        let ratio = if target { format!("{:.2}", p99 / TARGET_P99_MS) } else { "-".into() };
        println!(
            "| {name:<24} | {:>5} | {p50:>7.3} | {:>7.3} | {p99:>7.3} | {:>7.3} | {:>9.1} | {ratio:>10} | {:>9.2} | {:>9.2} |",
            sorted.len(),
            Self::quantile(&sorted, 0.90),
            sorted.last().copied().unwrap_or(0.0),
            self.items as f64 / sorted.len().max(1) as f64,
            p50 / floor.0,
            p99 / floor.1,
        );
    }
}

fn option(args: &[String], name: &str) -> Option<usize> {
    let at = args.iter().position(|a| a == name)?;
    Some(args.get(at + 1).and_then(|v| v.replace('_', "").parse().ok()).unwrap_or_else(|| panic!("{name} needs a number")))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes --bench; without it (cargo test --benches) make a quick smoke run.
    let full = args.iter().any(|a| a == "--bench");
    let bookings = option(&args, "--bookings").unwrap_or(if full { 100_000 } else { 2_000 });
    let calls = option(&args, "--calls").unwrap_or(if full { 2_000 } else { 50 }).max(1);
    // Another build of the server (an older commit's, say) to measure in the same sitting.
    let binary = match args.iter().position(|a| a == "--binary") {
        Some(at) => PathBuf::from(args.get(at + 1).expect("--binary needs the path of a studioflow binary")),
        None => PathBuf::from(env!("CARGO_BIN_EXE_studioflow")),
    };

    let dir = tempfile::tempdir().unwrap();
    // `--keep PATH` leaves the database at PATH, to look into (query plans, a profile of one kind).
    let db = match args.iter().position(|a| a == "--keep") {
        Some(at) => PathBuf::from(args.get(at + 1).expect("--keep needs a path for the database")),
        None => dir.path().join("latency.db"),
    };
    assert!(!db.exists(), "{} exists: --keep makes a new database", db.display());
    let started = Instant::now();
    let days = build_database(&db, bookings);
    println!("built {bookings} bookings in {ROOMS} rooms over {days} days in {:.1} s", started.elapsed().as_secs_f64());

    println!("server: {}", binary.display());
    let mut server = Server::spawn(&binary, &db);
    let mut rng = Rng(0x5EED_2026);
    // Warm-up, not measured: the first calls open connections and prepare statements.
    for _ in 0..50 {
        server.request("server/discover", json!({}));
        server.call("list_rooms", json!({}));
        server.call("query_bookings", query_args(&mut rng, days));
        server.call("find_free_slots", slot_args(&mut rng, days).0);
    }

    let (mut discover, mut rooms, mut query, mut paged, mut slots) =
        (Samples::default(), Samples::default(), Samples::default(), Samples::default(), Samples::default());
    let mut by_span: Vec<Samples> = SEARCH_DAYS.iter().map(|_| Samples::default()).collect();
    let mut last_query: Option<(Value, String)> = None;
    let cost_before = ServerCost::of(server.child.id());
    let measure_started = Instant::now();
    // The kinds of call are interleaved, so a burst of noise from other work on the machine falls
    // on all of them alike rather than on whichever ran at that moment.
    for i in 0..calls {
        let (_, ms) = server.request("server/discover", json!({}));
        discover.ms.push(ms);

        let (out, ms) = server.call("list_rooms", json!({}));
        rooms.ms.push(ms);
        rooms.items += out["rooms"].as_array().map_or(0, Vec::len);

        // One query in ten reads the next page of an earlier query instead of a fresh one.
        let (arguments, page) = match last_query.take() {
            Some((mut arguments, cursor)) if i % 10 == 9 => {
                arguments["cursor"] = json!(cursor);
                (arguments, true)
            }
            _ => (query_args(&mut rng, days), false),
        };
        let (out, ms) = server.call("query_bookings", arguments.clone());
        let samples = if page { &mut paged } else { &mut query };
        samples.ms.push(ms);
        samples.items += out["bookings"].as_array().map_or(0, Vec::len);
        if let Some(cursor) = out["next_cursor"].as_str() {
            let mut arguments = arguments;
            arguments.as_object_mut().unwrap().remove("cursor");
            last_query = Some((arguments, cursor.to_owned()));
        }

        let (arguments, span) = slot_args(&mut rng, days);
        let (out, ms) = server.call("find_free_slots", arguments.clone());
        let found = out["slots"].as_array().map_or(0, Vec::len);
        slots.ms.push(ms);
        slots.items += found;
        // Also by how many days the call searched, which is what its cost grows with.
        let bucket = SEARCH_DAYS.iter().position(|d| *d == span).unwrap();
        by_span[bucket].ms.push(ms);
        by_span[bucket].items += found;
    }
    let measured = measure_started.elapsed().as_secs_f64();
    let cost_after = ServerCost::of(server.child.id());

    // Then each kind alone, to price its work on the server's CPU: unlike a round trip, this
    // hardly moves with the machine's load, so the ratio to the floor's is the steadier figure.
    let pid = server.child.id();
    let alone = (calls / 4).max(10);
    let mut priced: Vec<(&str, f64)> = Vec::new();
    for kind in ["server/discover", "list_rooms", "query_bookings", "find_free_slots"] {
        let before = ServerCost::cpu_ns(pid);
        for _ in 0..alone {
            match kind {
                "server/discover" => drop(server.request(kind, json!({}))),
                "list_rooms" => drop(server.call(kind, json!({}))),
                "query_bookings" => drop(server.call(kind, query_args(&mut rng, days))),
                _ => drop(server.call(kind, slot_args(&mut rng, days).0)),
            }
        }
        if let (Some(before), Some(after)) = (before, ServerCost::cpu_ns(pid)) {
            priced.push((kind, (after - before) as f64 / 1e3 / alone as f64));
        }
    }
    drop(server);

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\nround trips over stdio, one call at a time, ms ({} calls in {measured:.1} s; load average {}):\n",
        discover.ms.len() + rooms.ms.len() + query.ms.len() + paged.ms.len() + slots.ms.len(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!(
        "| {:<24} | {:>5} | {:>7} | {:>7} | {:>7} | {:>7} | {:>9} | {:>10} | {:>9} | {:>9} |",
        "call", "calls", "p50", "p90", "p99", "max", "items", "p99/target", "p50/floor", "p99/floor"
    );
    println!("|{:-<26}|{:-<7}|{:-<9}|{:-<9}|{:-<9}|{:-<9}|{:-<11}|{:-<12}|{:-<11}|{:-<11}|", "", "", "", "", "", "", "", "", "", "");
    let floor = discover.p50_p99();
    discover.row("server/discover (floor)", false, floor);
    rooms.row("list_rooms", true, floor);
    query.row("query_bookings", true, floor);
    paged.row("query_bookings + cursor", true, floor);
    let mut all_queries = Samples { ms: query.ms.clone(), items: query.items + paged.items };
    all_queries.ms.extend(&paged.ms);
    all_queries.row("query_bookings (all)", true, floor);
    slots.row("find_free_slots", true, floor);
    for (days, samples) in SEARCH_DAYS.iter().zip(&by_span) {
        samples.row(&format!("  searching {days} day{}", if *days == 1 { "" } else { "s" }), true, floor);
    }
    if let (Some(before), Some(after)) = (cost_before, cost_after) {
        let n = (discover.ms.len() + rooms.ms.len() + query.ms.len() + paged.ms.len() + slots.ms.len()) as f64;
        println!(
            "\nthe server, per call (all kinds): {:.0} µs of CPU, {:.1} thread switches",
            (after.cpu_seconds - before.cpu_seconds) * 1e6 / n,
            (after.switches - before.switches) as f64 / n
        );
    }
    if let Some(&(_, floor_us)) = priced.first() {
        println!("\nthe server's CPU per call, each kind alone ({alone} calls each), µs and as a multiple of the floor's:");
        for (kind, us) in &priced {
            println!("  {kind:<16} {us:>7.1} µs  {:>5.2}x", us / floor_us);
        }
    }
    println!("\ntarget: p99 < {TARGET_P99_MS} ms per call; p99/target below 1.00 meets it.");
    println!("target (issue 28): p50/floor at most {FLOOR_P50} and p99/floor at most {FLOOR_P99} for list_rooms, query_bookings and find_free_slots.");
}
