//! The HTTP front's accept loop: HTTP/1.1 connections served by hyper, each watched so that slow
//! and idle clients cannot hold the server. A connection that has begun a request's headers must
//! finish them within the header timeout; one with no request in flight is closed after the idle
//! timeout; and at the connection cap (or when the process runs out of file descriptors) the
//! connection idle the longest is closed to make room, so a real request always gets in. A
//! connection with a request in flight is never closed by any of these: its body has its own
//! timeout (in `http.rs`). This file knows nothing of MCP.

use super::HttpLimits;
use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The address a request's connection came from, put on every request (the authentication
/// gate counts failures by it). Behind a reverse proxy it is the proxy's.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// Serves `router` on `listener` until `shutdown` is cancelled, then lets requests in flight finish.
pub async fn serve(listener: TcpListener, router: axum::Router, limits: HttpLimits, shutdown: CancellationToken) {
    let open = Arc::new(Open::default());
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors: an idle connection gives one back. Other accept errors
                    // are the peer's (reset before accept); a short pause keeps a burst from spinning.
                    let freed = out_of_descriptors(&e) && open.close_longest_idle();
                    tracing::warn!(error = %e, freed, "accepting a connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(if freed { 1 } else { 50 })).await;
                    continue;
                }
            },
        };
        // At the cap, the longest-idle connection makes room; if every one is busy, wait for one.
        let state = loop {
            let freed = open.freed.notified();
            if let Some(state) = open.admit(limits.max_connections) {
                break Some(state);
            }
            tokio::select! {
                _ = shutdown.cancelled() => break None,
                _ = freed => {}
            }
        };
        let Some(state) = state else { break };
        let (router, open, shutdown) = (router.clone(), open.clone(), shutdown.clone());
        tokio::spawn(async move {
            let id = state.id;
            serve_connection(stream, Some(Peer(peer)), router, limits, state, shutdown).await;
            open.remove(id);
        });
    }
    drop(listener);
    // Idle connections close at once; busy ones finish their request first.
    loop {
        let freed = open.freed.notified();
        if open.is_empty() {
            break;
        }
        freed.await;
    }
}

fn out_of_descriptors(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Serves one connection on its own, outside any accept loop.
#[cfg(feature = "fuzzing")]
pub async fn serve_one<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(stream: S, router: axum::Router, limits: HttpLimits) {
    let open = Open::default();
    if let Some(state) = open.admit(1) {
        serve_connection(stream, None, router, limits, state, CancellationToken::new()).await;
    }
}

/// Serves one connection until it ends, is evicted, times out, or the server shuts down.
async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    peer: Option<Peer>,
    router: axum::Router,
    limits: HttpLimits,
    state: Arc<ConnState>,
    shutdown: CancellationToken,
) {
    let inner = TowerToHyperService::new(router);
    let busy_state = state.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (mut parts, body) = request.into_parts();
        if let Some(peer) = peer {
            parts.extensions.insert(peer);
        }
        let unread = Arc::new(AtomicBool::new(!body.is_end_stream()));
        let request = Request::from_parts(parts, Body::new(Tracked { body, unread: unread.clone() }));
        let busy = Busy::begin(&busy_state);
        let call = hyper::service::Service::call(&inner, request);
        async move {
            match busy {
                // The request stays in flight until its answer's body has been handed to the socket.
                Some(busy) => call.await.map(|mut response| {
                    // An answer given before the request's body was read (a refusal at the gate)
                    // ends the connection: hyper will not read a body no one wants, so it closes
                    // the connection after the answer. Said in the answer, a client opens a new
                    // one for its next request instead of sending it into the closing one.
                    if unread.load(Ordering::Acquire) {
                        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                    }
                    response.map(|body| Body::new(Held { body, _busy: busy }))
                }),
                // The connection is being closed: no handler may start on it.
                None => Ok(Response::builder().status(StatusCode::SERVICE_UNAVAILABLE).body(Body::empty()).unwrap_or_default()),
            }
        }
    });
    let io = TokioIo::new(Watched { inner: stream, state: state.clone() });
    // Header and idle timeouts are kept below, on one clock; hyper's own header timer would also
    // run between requests, making the two one.
    // A client that shuts its side after sending a request still gets the answer (half_close).
    let connection = http1::Builder::new()
        .half_close(true)
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .serve_connection(io, service);
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        let deadline = state.deadline(&limits);
        tokio::select! {
            outcome = connection.as_mut() => {
                if let Err(e) = outcome {
                    tracing::debug!(error = %e, "HTTP connection ended with an error");
                }
                return;
            }
            _ = state.evicted.cancelled() => return,
            _ = shutdown.cancelled(), if !draining => {
                if state.close_if_idle() {
                    return;
                }
                connection.as_mut().graceful_shutdown();
                draining = true;
            }
            _ = state.woken.notified() => {}
            _ = tokio::time::sleep_until(deadline) => {
                if state.deadline(&limits) <= Instant::now() && state.close_if_idle() {
                    tracing::debug!("closed a slow or idle HTTP connection");
                    return;
                }
            }
        }
    }
}

/// The open connections.
#[derive(Default)]
struct Open {
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    next_id: Mutex<u64>,
    /// Signalled whenever a connection closes or finishes a request.
    freed: Arc<Notify>,
}

impl Open {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        // A panic elsewhere while holding the lock leaves the map usable: recover it.
        self.conns.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a new connection, closing the longest-idle one at the cap; `None` if all are busy.
    fn admit(&self, cap: usize) -> Option<Arc<ConnState>> {
        let mut conns = self.lock();
        while conns.len() >= cap.max(1) {
            let id = Self::longest_idle(&conns)?;
            if let Some(state) = conns.remove(&id) {
                state.evicted.cancel();
            }
        }
        let id = {
            let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
            *next += 1;
            *next
        };
        let state = Arc::new(ConnState::new(id, self.freed.clone()));
        conns.insert(id, state.clone());
        Some(state)
    }

    /// Closes the connection idle the longest, marking it closed first; whether there was one.
    fn close_longest_idle(&self) -> bool {
        let mut conns = self.lock();
        match Self::longest_idle(&conns).and_then(|id| conns.remove(&id)) {
            Some(state) => {
                state.evicted.cancel();
                true
            }
            None => false,
        }
    }

    /// The idle connection waiting the longest, now marked closing so no request starts on it.
    fn longest_idle(conns: &HashMap<u64, Arc<ConnState>>) -> Option<u64> {
        let mut idle: Vec<(Instant, u64, &Arc<ConnState>)> =
            conns.values().filter_map(|s| s.idle_since().map(|since| (since, s.id, s))).collect();
        idle.sort_by_key(|(since, id, _)| (*since, *id));
        idle.into_iter().find(|(_, _, s)| s.close_if_idle()).map(|(_, id, _)| id)
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
        self.freed.notify_waiters();
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// What one connection is doing, shared by its reader, its requests and its watchdog.
struct ConnState {
    id: u64,
    inner: Mutex<Activity>,
    /// Cancelled when the connection is closed to make room.
    evicted: CancellationToken,
    /// Wakes the watchdog when its deadline moves earlier (the first byte of a request arrived).
    woken: Notify,
    /// The server's signal that a connection may be evictable now.
    freed: Arc<Notify>,
}

struct Activity {
    /// Requests whose handler is running.
    in_flight: usize,
    /// Set once the connection is being closed: no request may start after that.
    closing: bool,
    /// When the connection last had no request in flight (opened, or last answer given).
    idle_since: Instant,
    /// When the first byte of the next request's headers arrived.
    request_began: Option<Instant>,
}

impl ConnState {
    fn new(id: u64, freed: Arc<Notify>) -> Self {
        ConnState {
            id,
            inner: Mutex::new(Activity { in_flight: 0, closing: false, idle_since: Instant::now(), request_began: None }),
            evicted: CancellationToken::new(),
            woken: Notify::new(),
            freed,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Activity> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Since when the connection has had no request in flight; `None` while one is.
    fn idle_since(&self) -> Option<Instant> {
        let a = self.lock();
        (a.in_flight == 0 && !a.closing).then_some(a.idle_since)
    }

    /// When the watchdog should look again: the header deadline of a request begun, else the
    /// idle deadline; a connection with a request in flight is looked at after an idle period.
    fn deadline(&self, limits: &HttpLimits) -> Instant {
        let a = self.lock();
        match (a.in_flight, a.request_began) {
            (0, Some(began)) => began + limits.header_timeout,
            (0, None) => a.idle_since + limits.idle_timeout,
            _ => Instant::now() + limits.idle_timeout,
        }
    }

    /// Marks the connection closing if no request is in flight; whether it did.
    fn close_if_idle(&self) -> bool {
        let mut a = self.lock();
        if a.in_flight == 0 {
            a.closing = true;
        }
        a.closing && a.in_flight == 0
    }

    /// Bytes arrived: if no request is in flight, they begin one, and its header clock starts.
    fn saw_bytes(&self) {
        let mut a = self.lock();
        if a.in_flight == 0 && a.request_began.is_none() {
            a.request_began = Some(Instant::now());
            drop(a);
            self.woken.notify_one();
        }
    }
}

/// A request in flight on a connection, from its parsed headers until its answer is ready.
struct Busy(Arc<ConnState>);

impl Busy {
    fn begin(state: &Arc<ConnState>) -> Option<Busy> {
        let mut a = state.lock();
        if a.closing {
            return None;
        }
        a.in_flight += 1;
        a.request_began = None;
        Some(Busy(state.clone()))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut a = self.0.lock();
        a.in_flight -= 1;
        a.idle_since = Instant::now();
        drop(a);
        self.0.woken.notify_one();
        self.0.freed.notify_waiters();
    }
}

/// An answer's body that keeps its request in flight until hyper has sent it and dropped it.
/// Size and end are passed through, so a body of known length keeps its Content-Length.
struct Held {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Held {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A request's body that says when it has been read to its end.
struct Tracked {
    body: Incoming,
    /// Set while some of the body has not been read.
    unread: Arc<AtomicBool>,
}

impl hyper::body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.body.is_end_stream() {
            self.unread.store(false, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The connection's socket, telling its state when bytes arrive.
struct Watched<S> {
    inner: S,
    state: Arc<ConnState>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.saw_bytes();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
