//! `studioflow serve --http 127.0.0.1:0` for the benches: started on a database (a file or a
//! PostgreSQL URL) with extra flags, its address read from its first line, killed when dropped;
//! the reading of one HTTP/1.1 answer on a keep-alive connection; and the quantile every bench prints.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

pub struct Server {
    child: Child,
    pub address: SocketAddr,
}

/// The binary [`Server::spawn`] starts, if not this build's ([`use_binary`]).
static BINARY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Makes [`Server::spawn`] start `binary` (another commit's build, for a before and after)
/// instead of this build's `studioflow`.
#[allow(dead_code)]
pub fn use_binary(binary: std::path::PathBuf) {
    BINARY.set(binary).expect("the binary is chosen once, before any server starts");
}

impl Server {
    pub fn spawn(db: impl AsRef<OsStr>, extra: &[&str]) -> Server {
        let binary = BINARY.get().map_or(std::path::Path::new(env!("CARGO_BIN_EXE_studioflow")), |b| b.as_path());
        let mut child = Command::new(binary)
            .args(["serve".as_ref(), "--db".as_ref(), db.as_ref(), "--http".as_ref(), "127.0.0.1:0".as_ref()])
            .args(extra)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning studioflow serve");
        // It says where it listens on stderr: "studioflow: serving MCP at http://ADDR/mcp".
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        let address = loop {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "studioflow serve {extra:?} exited before listening: {said}");
            said += &line;
            if let Some(rest) = line.trim().strip_prefix("studioflow: serving MCP at http://") {
                break rest.trim_end_matches("/mcp").parse().unwrap();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Server { child, address }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads one HTTP/1.1 answer that has a Content-Length: its status line and its body.
pub fn read_answer(reader: &mut impl BufRead) -> (String, Vec<u8>) {
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let mut length = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length.unwrap_or_else(|| panic!("an answer without Content-Length: {status}"))];
    reader.read_exact(&mut body).unwrap();
    (status, body)
}

/// Nearest rank: the smallest sample with at least `q` of the samples at or below it (NaN when
/// there is none).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
