//! `studioflow serve --http 127.0.0.1:0` for the benches: started on a database (a file or a
//! PostgreSQL URL) with extra flags, its address read from its first line, killed when dropped.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

pub struct Server {
    child: Child,
    pub address: SocketAddr,
}

impl Server {
    pub fn spawn(db: impl AsRef<OsStr>, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_studioflow"))
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
