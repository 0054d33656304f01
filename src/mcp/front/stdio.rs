//! stdio: newline-delimited JSON-RPC on stdin and stdout. Each line goes through the envelope
//! check of `jsonrpc.rs` (shared with HTTP; a plain tool call, which passes it by its shape, is
//! read straight into the SDK's type instead), which hands the SDK the message as it read it or
//! gives its JSON-RPC error (the SDK's own line transport drops what it cannot read); the SDK's
//! transport here ([`Lines`]) writes its messages, and a single writer keeps every line on stdout
//! whole. Nothing but protocol goes to stdout; the session ends at EOF.

use super::jsonrpc::{self, Verdict};
use super::legacy::{Legacy, Route};
use crate::mcp::server::written::{self, WrittenAnswers};
use crate::mcp::server::Served;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use rmcp::ServiceExt;
use serde_json::Value;
use std::future::Future;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

/// The longest line accepted; a longer one is refused without being buffered whole.
const MAX_LINE: usize = 4 << 20;

/// Serves MCP on stdin and stdout until stdin closes. Where they are pipes or sockets (as a host
/// that spawns the server makes them), they are read and written without blocking, woken by the
/// runtime's poller: tokio's `stdin` and `stdout` hand every read and write to a blocking thread
/// and back, two thread switches each way per message. A terminal or a file keeps those.
pub async fn serve_stdio(server: impl Served) -> anyhow::Result<()> {
    let input: Box<dyn AsyncRead + Unpin + Send> = match polled(std::io::stdin().as_fd())? {
        Some(Polled::Pipe(file)) => Box::new(pipe::Receiver::from_file(file)?),
        Some(Polled::Socket(socket)) => Box::new(tokio::net::UnixStream::from_std(socket)?),
        None => Box::new(tokio::io::stdin()),
    };
    let output: Box<dyn AsyncWrite + Unpin + Send> = match polled(std::io::stdout().as_fd())? {
        Some(Polled::Pipe(file)) => Box::new(pipe::Sender::from_file(file)?),
        Some(Polled::Socket(socket)) => Box::new(tokio::net::UnixStream::from_std(socket)?),
        None => Box::new(tokio::io::stdout()),
    };
    serve_lines(server, input, output).await
}

/// A standard stream that the runtime can poll: a pipe, or a Unix socket (set non-blocking).
enum Polled {
    Pipe(std::fs::File),
    Socket(std::os::unix::net::UnixStream),
}

/// A copy of `fd` to poll, if it is a pipe or a Unix socket; `None` for anything else (a
/// terminal, a file), which is read and written through tokio's blocking threads. Non-blocking
/// is a property of the open stream, so the process's own descriptor is non-blocking too.
fn polled(fd: BorrowedFd<'_>) -> std::io::Result<Option<Polled>> {
    let copy = std::fs::File::from(fd.try_clone_to_owned()?);
    let kind = copy.metadata()?.file_type();
    if kind.is_fifo() {
        Ok(Some(Polled::Pipe(copy)))
    } else if kind.is_socket() {
        let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(copy));
        // A socket of another family (TCP, from inetd) is not a Unix stream: leave it blocking.
        if socket.local_addr().is_err() {
            return Ok(None);
        }
        socket.set_nonblocking(true)?;
        Ok(Some(Polled::Socket(socket)))
    } else {
        Ok(None)
    }
}

/// Serves MCP on any pair of byte streams; `serve_stdio` with the process's own.
pub async fn serve_lines(
    server: impl Served,
    input: impl AsyncRead + Unpin + Send + 'static,
    mut output: impl AsyncWrite + Unpin + Send + 'static,
) -> anyhow::Result<()> {
    let (lines_out, mut lines) = mpsc::channel::<String>(256);
    let writer = tokio::spawn(async move {
        while let Some(mut line) = lines.recv().await {
            // One write a line: each write to tokio's stdout is a hop to a blocking thread.
            line.push('\n');
            output.write_all(line.as_bytes()).await?;
            output.flush().await?;
        }
        anyhow::Ok(())
    });
    // The 2025-11-25 task wire, which the SDK does not speak, for this session.
    let legacy = Legacy::session(server.studio().clone());
    let (to_sdk, from_front) = mpsc::channel(256);
    let transport = Lines { incoming: from_front, outgoing: lines_out.clone(), legacy: legacy.clone(), answers: WrittenAnswers::default() };
    // The SDK reads the first message before `serve` returns, so the input runs on its own task.
    let forwarded = Arc::new(AtomicUsize::new(0));
    let reader = tokio::spawn(forward_requests(input, to_sdk, lines_out, forwarded.clone(), legacy));

    match server.serve(transport).await {
        Ok(running) => {
            let reason = running.waiting().await?;
            tracing::info!(?reason, "stdio session ended");
        }
        // Input that ends before any request reached the SDK is a client that went away: a normal end.
        Err(e) if forwarded.load(Ordering::SeqCst) == 0 => tracing::info!(error = %e, "stdin closed before any request"),
        Err(e) => return Err(e.into()),
    }
    reader.await??;
    writer.await??;
    Ok(())
}

/// The SDK's transport for a session on lines: it takes the messages the front checked (already
/// read into the SDK's types, so never read twice) and writes the SDK's messages as lines, a tool's
/// answer straight from the text its call left (`server::written`), and a reply that a 2025-11-25
/// task request awaits rewritten for it.
struct Lines {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: mpsc::Sender<String>,
    legacy: Arc<Legacy>,
    answers: WrittenAnswers,
}

impl Lines {
    fn line(&self, message: &ServerJsonRpcMessage) -> serde_json::Result<String> {
        let line = written::line(message, &self.answers)?;
        let is_reply = matches!(message, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_));
        if is_reply && self.legacy.has_pending() {
            let mut reply = serde_json::from_str::<Value>(&line)?;
            self.legacy.rewrite_answer(&mut reply);
            return Ok(reply.to_string());
        }
        Ok(line)
    }
}

impl Transport<RoleServer> for Lines {
    type Error = std::io::Error;

    fn send(&mut self, message: ServerJsonRpcMessage) -> impl Future<Output = Result<(), std::io::Error>> + Send + 'static {
        let line = self.line(&message).map_err(std::io::Error::other);
        let outgoing = self.outgoing.clone();
        async move {
            outgoing.send(line?).await.map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed"))
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let mut message = self.incoming.recv().await?;
        // The tool calls leave their answers to be written here.
        if let JsonRpcMessage::Request(request) = &mut message {
            request.request.extensions_mut().insert(self.answers.clone());
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), std::io::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Hands stdin's lines to the SDK, answering the ones it could not read; ends its input at EOF.
async fn forward_requests(
    input: impl AsyncRead + Unpin,
    to_sdk: mpsc::Sender<ClientJsonRpcMessage>,
    lines_out: mpsc::Sender<String>,
    forwarded: Arc<AtomicUsize>,
    legacy: Arc<Legacy>,
) -> anyhow::Result<()> {
    let mut input = BufReader::new(input);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = tokio::io::AsyncReadExt::take(&mut input, MAX_LINE as u64 + 1).read_until(b'\n', &mut buffer).await?;
        if read == 0 {
            break;
        }
        if buffer.len() > MAX_LINE && buffer.last() != Some(&b'\n') {
            let reply = jsonrpc::error(Value::Null, jsonrpc::INVALID_REQUEST, "the message is longer than 4 MiB");
            lines_out.send(reply.to_string()).await.ok();
            skip_line(&mut input).await?;
            continue;
        }
        let line = buffer.trim_ascii();
        if line.is_empty() {
            continue;
        }
        // Nearly every request is a plain tool call: read once, straight into the SDK's type,
        // with no JSON value of the whole message for the envelope's check, which such a call
        // passes by its shape (and, carrying no 2025-11-25 task, goes to the SDK).
        let message = match jsonrpc::plain_tool_call(line) {
            Some(message) => message,
            None => match jsonrpc::check(line) {
                // A 2025-11-25 task request is answered here, on its own task: tasks/result waits.
                Verdict::Forward(message, _) if matches!(legacy.route(&message), Route::Answer) => {
                    let (legacy, lines_out) = (legacy.clone(), lines_out.clone());
                    tokio::spawn(async move {
                        let answer = legacy.answer(message).await;
                        lines_out.send(answer.to_string()).await.ok();
                    });
                    continue;
                }
                Verdict::Forward(_, message) => *message,
                Verdict::Answer(reply) => {
                    lines_out.send(reply.to_string()).await.ok();
                    continue;
                }
                Verdict::Drop(why) => {
                    tracing::debug!(%why, "dropped a message that gets no answer");
                    continue;
                }
            },
        };
        forwarded.fetch_add(1, Ordering::SeqCst);
        if to_sdk.send(message).await.is_err() {
            // The session has ended: nothing more will be read.
            break;
        }
    }
    // End of input (`to_sdk` dropped): the SDK finishes what it started and ends the session.
    Ok(())
}

/// Throws away the rest of a line without holding it: a line may be longer than memory.
async fn skip_line(input: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> std::io::Result<()> {
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(end) => {
                input.consume(end + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                input.consume(n);
            }
        }
    }
}
