//! Streamable HTTP: one endpoint, `/mcp`, on axum and hyper: POST only and without sessions for
//! 2026-07-28, and rmcp's legacy session mode for a 2025-11-25 client's `initialize` and what names
//! the session it opens (its requests, its GET stream, its DELETE).
//! Before the SDK's service sees a request, a front checks, in this order: `Host` and `Origin`
//! (strictly, before any of the body is read: 400 or 403); a browser's CORS preflight is then
//! answered (`cors.rs`), and every answer to an allowed origin names it; with authentication on, the bearer
//! credential and the caller's rates (401, 429: `auth.rs`); the body's size (413) and the time it
//! takes to arrive (408); the body as a JSON-RPC message (its error, as on stdio); and the scope
//! the message needs (403). The principal travels on the request to the handlers. The SDK
//! answers GET and DELETE without a session with 405. With `--oauth-server`, the authorization server's routes
//! (`crate::oauth`) sit beside `/mcp`, behind the same Host and Origin checks; its metadata,
//! token, registration and revocation endpoints are public, as the resource metadata is.
//! Connections are served by our own accept loop, with header,
//! body and idle timeouts and a connection cap (`connections.rs`). The server stops gracefully
//! when `shutdown` resolves.

mod access;
mod auth;
mod authority;
mod connections;
mod cors;

pub use auth::{AuthConfig, Gate, RateLimits};

use super::jsonrpc::{self, Verdict};
use super::legacy::{Legacy, Route};
use crate::mcp::server::{Served, StudioServer};
use crate::auth::Principal;
use authority::Guard;
use cors::Cors;
use axum::body::{Body, Bytes};
use axum::http::{header, request::Parts, Request, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, session::never::NeverSessionManager, StreamableHttpServerConfig,
    StreamableHttpService,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the HTTP endpoint accepts.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Hosts (with or without port) a request's `Host` may name.
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call; a request with another `Origin` gets 403.
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    pub limits: HttpLimits,
    /// Authentication, when on: without it every caller is the local user.
    pub auth: Option<Arc<Gate>>,
    /// studioflow's own authorization server, when `--oauth-server` is on.
    pub oauth: Option<Arc<crate::oauth::AuthorizationServer>>,
}

/// How long a client may take, and how many may be connected at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HttpLimits {
    /// From a request's first byte to the end of its headers.
    pub header_timeout: Duration,
    /// From the end of a request's headers to the end of its body.
    pub body_timeout: Duration,
    /// How long a connection may stay open with no request under way.
    pub idle_timeout: Duration,
    /// Open connections at most; at the cap the longest-idle one is closed to make room.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 512,
        }
    }
}

impl HttpLimits {
    /// Limits from `serve`'s flags: timeouts in seconds (more than 0, at most an hour) and a cap
    /// of at least one connection; the error names the flag.
    pub fn from_flags(header: f64, body: f64, idle: f64, max_connections: usize) -> Result<HttpLimits, String> {
        let seconds = |flag: &str, value: f64| {
            if value > 0.0 && value <= 3600.0 {
                Ok(Duration::from_secs_f64(value))
            } else {
                Err(format!("--{flag} must be more than 0 and at most 3600 seconds"))
            }
        };
        if max_connections == 0 {
            return Err("--http-max-connections must be at least 1".into());
        }
        Ok(HttpLimits {
            header_timeout: seconds("http-header-timeout", header)?,
            body_timeout: seconds("http-body-timeout", body)?,
            idle_timeout: seconds("http-idle-timeout", idle)?,
            max_connections,
        })
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "[::1]".into()],
            allowed_origins: vec!["http://localhost:*".into(), "http://127.0.0.1:*".into(), "http://[::1]:*".into()],
            max_body_bytes: 1 << 20,
            limits: HttpLimits::default(),
            auth: None,
            oauth: None,
        }
    }
}

/// Serves `/mcp` on `listener` until `shutdown` resolves, then lets requests in flight finish.
pub async fn serve_http(
    server: impl Served,
    listener: TcpListener,
    config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    // Legacy sessions and the streams that last (`subscriptions/listen`) end as soon as the stop
    // begins: they stay open as long as their client likes (or, gone unnoticed, for ever), and
    // would otherwise hold the graceful stop.
    let sessions = CancellationToken::new();
    let streams = server.studio().stopping();
    let app = app(server, &config, cancel.child_token(), sessions.clone())?;
    tracing::info!(address = %listener.local_addr()?, "serving MCP over HTTP at /mcp");
    let stopping = CancellationToken::new();
    let stopped = stopping.clone();
    tokio::spawn(async move {
        shutdown.await;
        sessions.cancel();
        streams.cancel();
        stopping.cancel();
    });
    connections::serve(listener, app, config.limits, stopped).await;
    cancel.cancel();
    Ok(())
}

/// `/mcp`: the SDK's service behind the front's checks. `cancel` stops the SDK's work;
/// `sessions` ends the legacy sessions and their streams.
pub(in crate::mcp) fn app(server: impl Served, config: &HttpConfig, cancel: CancellationToken, sessions: CancellationToken) -> anyhow::Result<axum::Router> {
    let guard = Guard::new(&config.allowed_hosts, &config.allowed_origins)
        .map_err(|e| anyhow::anyhow!("--allow-host or --allow-origin: {e}"))?;
    let mut sdk_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(config.allowed_hosts.clone())
        .with_allowed_origins(config.allowed_origins.clone())
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(cancel);
    sdk_config.sse_keep_alive = None;
    let studio = server.studio().clone();
    let ctx = studio.ctx();
    // Legacy sessions (2025-11-25 clients, from their `initialize`): the same checks, with rmcp's
    // session mode, so that a mid-call question and a subscription's updates can reach the client.
    let mut session_config = sdk_config.clone().with_legacy_session_mode(true).with_cancellation_token(sessions);
    session_config.sse_keep_alive = Some(SESSION_KEEP_ALIVE);
    let session_server = server.clone();
    let sessions = StreamableHttpService::new(move || Ok(session_server.for_one_request()), Arc::new(LocalSessionManager::default()), session_config);
    let sessions: SessionDoor = Arc::new(move |request| {
        let sessions = sessions.clone();
        Box::pin(async move { sessions.handle(request).await.map(Body::new) })
    });
    let service = StreamableHttpService::new(move || Ok(server.for_one_request()), Arc::new(NeverSessionManager::default()), sdk_config);
    let gate = config.auth.clone();
    let oauth = config.oauth.is_some();
    let front = Arc::new(Front {
        guard,
        max_body_bytes: config.max_body_bytes,
        body_timeout: config.limits.body_timeout,
        server: studio,
        gate: gate.clone(),
        oauth,
        sessions,
    });
    let mut router = axum::Router::new()
        .route_service(ENDPOINT, service)
        // The calendar feeds (not MCP), behind the same Host and Origin checks; their URLs hold their own secrets.
        .route(crate::feeds::http::ROUTE, axum::routing::get(crate::feeds::http::feed).with_state(ctx.pool.clone()));
    if let Some(gate) = gate {
        // The Protected Resource Metadata, open to all (RFC 9728), at both of its places.
        let metadata = gate.metadata().clone();
        let get = axum::routing::get(move || std::future::ready(auth::json_response(StatusCode::OK, &metadata)));
        router = router.route(auth::METADATA_PATH, get.clone());
        if gate.suffixed_metadata_path() != auth::METADATA_PATH {
            router = router.route(gate.suffixed_metadata_path(), get);
        }
    }
    if let Some(authorization_server) = &config.oauth {
        router = router.merge(authorization_server.routes());
    }
    Ok(router.layer(axum::middleware::from_fn(move |request, next| front.clone().check(request, next))))
}

/// Serves one connection of any byte stream (the fuzz targets use an in-memory one).
#[cfg(feature = "fuzzing")]
pub(in crate::mcp) async fn serve_one<S>(stream: S, app: axum::Router, limits: HttpLimits)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    connections::serve_one(stream, app, limits).await
}

/// The MCP endpoint's path.
const ENDPOINT: &str = "/mcp";

/// How often a legacy session's open streams get an SSE comment, so that idle ones stay open.
const SESSION_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long the front waits for the whole of a legacy session's answer that it rewrites
/// (`initialize`, `tools/list`: their streams end with the answer).
const REWRITE_WAIT: Duration = Duration::from_secs(30);

/// The header that names a legacy session.
const SESSION_ID: &str = "mcp-session-id";

/// rmcp's service in legacy session mode, behind the front's checks: a request in, its answer out.
type SessionDoor = Arc<dyn Fn(Request<Body>) -> Pin<Box<dyn Future<Output = Response> + Send>> + Send + Sync>;

/// Whether a message goes to a legacy session: a legacy `initialize` (which opens one), or a
/// legacy message that names one (a session this server does not hold is answered 404, as
/// 2025-11-25 asks, and the client starts a new one). A 2026-07-28 message has no session, and
/// ignores the header.
fn to_session(message: &serde_json::Value, headers: &axum::http::HeaderMap) -> bool {
    if message.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion").is_some() {
        return false;
    }
    message.get("method").and_then(serde_json::Value::as_str) == Some("initialize") || headers.contains_key(SESSION_ID)
}

/// The checks a request passes before the SDK sees it.
struct Front {
    guard: Guard,
    max_body_bytes: usize,
    body_timeout: Duration,
    /// For the 2025-11-25 task wire, which the SDK does not speak (`legacy.rs`).
    server: StudioServer,
    gate: Option<Arc<Gate>>,
    /// Whether the authorization server's routes are mounted (some of them are public).
    oauth: bool,
    /// Legacy sessions: `initialize`, and what names an `Mcp-Session-Id` (a GET stream, a DELETE).
    sessions: SessionDoor,
}

impl Front {
    /// Whether `path` is a public document, readable from any origin without a credential.
    fn is_public(&self, path: &str) -> bool {
        let authorization_server = self.oauth && (crate::oauth::PUBLIC_PATHS.contains(&path) || path.strip_suffix('/') == Some(crate::oauth::METADATA_PATH));
        authorization_server || self.gate.as_ref().is_some_and(|gate| path == auth::METADATA_PATH || path == gate.suffixed_metadata_path())
    }

    async fn check(self: Arc<Self>, mut request: Request<Body>, next: Next) -> Response {
        // The authorization server counts failed sign-ins and registrations by address.
        if let Some(peer) = request.extensions().get::<connections::Peer>().map(|peer| peer.0.ip()) {
            request.extensions_mut().insert(crate::oauth::Source(peer));
        }
        // Host and Origin first: a request from the wrong place is refused before its body is read,
        // and gets no CORS header. Public metadata is anyone's, at an allowed host.
        let public = self.is_public(request.uri().path());
        let checked = if public { self.guard.check_host(request.headers()) } else { self.guard.check(request.headers()) };
        if let Err((status, why)) = checked {
            tracing::warn!(%status, %why, "refused an HTTP request");
            return (status, why).into_response();
        }
        // A browser's preflight is answered before authentication; every other answer to an
        // allowed origin names it, refusals included, so that a page can read the challenge.
        let cors = Cors::of(request.headers(), public);
        if let Some(answer) = cors.preflight(request.method(), request.headers()) {
            return answer;
        }
        let mut response = self.admit(request, next).await;
        cors.apply(&mut response);
        response
    }

    /// Everything after Host, Origin and CORS: who is calling, the body, the message.
    async fn admit(&self, mut request: Request<Body>, next: Next) -> Response {
        // Then who is calling, for the MCP endpoint (the metadata is open; a feed's URL is its secret).
        let principal = match (&self.gate, request.uri().path() == ENDPOINT) {
            (Some(gate), true) => {
                let source = request.extensions().get::<connections::Peer>().map(|peer| peer.0.ip());
                match gate.authenticate(request.headers(), source).await {
                    Ok(principal) => Some(principal),
                    Err(refusal) => return gate.refuse(refusal),
                }
            }
            _ => None,
        };
        // Only a POST to the endpoint carries a message; anything else is the router's (405, 404, a
        // feed), but a GET or DELETE that names a legacy session, which is the session's (its
        // stream of server messages, its end).
        if request.method() != axum::http::Method::POST || request.uri().path() != ENDPOINT {
            if request.uri().path() == ENDPOINT && request.headers().contains_key(SESSION_ID) {
                if let Some(principal) = principal {
                    request.extensions_mut().insert(principal);
                }
                return (self.sessions)(request).await;
            }
            return next.run(request).await;
        }
        let (parts, body) = request.into_parts();
        let limit = self.max_body_bytes;
        let bytes: Bytes = match tokio::time::timeout(self.body_timeout, axum::body::to_bytes(body, limit)).await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(_)) => return close((StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is over {limit} bytes"))),
            Err(_) => {
                let seconds = self.body_timeout.as_secs_f64();
                return close((StatusCode::REQUEST_TIMEOUT, format!("the request body did not arrive within {seconds} s")));
            }
        };
        match jsonrpc::check(&bytes) {
            Verdict::Forward(message, _) => self.forward(parts, bytes, message, principal, next).await,
            Verdict::Answer(reply) => {
                // A method that does not exist is 404, as the transport answers it; any other fault 400.
                let status = if reply["error"]["code"] == jsonrpc::METHOD_NOT_FOUND { StatusCode::NOT_FOUND } else { StatusCode::BAD_REQUEST };
                (status, [(header::CONTENT_TYPE, "application/json")], reply.to_string()).into_response()
            }
            // A notification or reply is acknowledged without a body, as the transport asks.
            Verdict::Drop(why) => {
                tracing::debug!(%why, "dropped a message that gets no answer");
                StatusCode::ACCEPTED.into_response()
            }
        }
    }
}

impl Front {
    /// Passes a checked message to the SDK, unless it is of the 2025-11-25 task wire, which is
    /// answered here; an SDK answer that a 2025-11-25 client must see more of is rewritten.
    /// A principal's request goes on only with the scope it needs, and carries the principal.
    async fn forward(&self, mut parts: Parts, bytes: Bytes, message: serde_json::Value, principal: Option<Principal>, next: Next) -> Response {
        if let (Some(gate), Some(principal)) = (&self.gate, &principal) {
            let method = message.get("method").and_then(serde_json::Value::as_str).unwrap_or_default();
            if let Some(scope) = access::needed(self.server.tools(), method, message.get("params"))
                && let Err(refusal) = gate.authorize(principal, method, scope)
            {
                return gate.refuse(refusal);
            }
            parts.extensions.insert(principal.clone());
        }
        let legacy = Legacy::stateless(self.server.clone(), principal);
        if let Route::Answer = legacy.route(&message) {
            let answer = legacy.answer(message).await;
            return ([(header::CONTENT_TYPE, "application/json")], answer.to_string()).into_response();
        }
        let session = to_session(&message, &parts.headers);
        if !session {
            // Served statelessly: the handlers must not take it for a session's request.
            parts.headers.remove(SESSION_ID);
        }
        let request = Request::from_parts(parts, Body::from(bytes));
        let response = if session { (self.sessions)(request).await } else { next.run(request).await };
        let content_type = response.headers().get(header::CONTENT_TYPE).map(|v| v.as_bytes().to_vec()).unwrap_or_default();
        let is_json = content_type.starts_with(b"application/json");
        let is_stream = content_type.starts_with(b"text/event-stream");
        if !(is_json || is_stream) || !legacy.has_pending() {
            return response;
        }
        let (mut parts, body) = response.into_parts();
        let Ok(Ok(bytes)) = tokio::time::timeout(REWRITE_WAIT, axum::body::to_bytes(body, usize::MAX)).await else {
            return (StatusCode::INTERNAL_SERVER_ERROR, "the answer could not be read").into_response();
        };
        let body = if is_stream {
            Bytes::from(rewrite_events(&bytes, &legacy))
        } else {
            match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(mut answer) => {
                    legacy.rewrite_answer(&mut answer);
                    Bytes::from(answer.to_string())
                }
                Err(_) => bytes,
            }
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        Response::from_parts(parts, Body::from(body))
    }
}

/// A legacy session's answer, as server-sent events, with each JSON-RPC answer in it rewritten
/// for a 2025-11-25 client (see [`Legacy::rewrite_answer`]); other lines are kept as they are.
fn rewrite_events(bytes: &[u8], legacy: &Legacy) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            let Some(data) = line.strip_prefix("data:") else { return line.to_owned() };
            match serde_json::from_str::<serde_json::Value>(data.trim()) {
                Ok(mut answer) if answer.get("id").is_some() => {
                    legacy.rewrite_answer(&mut answer);
                    format!("data: {answer}")
                }
                _ => line.to_owned(),
            }
        })
        .collect();
    lines.join("\n")
}

/// An answer after which the connection closes: the rest of its body is not worth reading.
fn close(answer: (StatusCode, String)) -> Response {
    let mut response = answer.into_response();
    response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
}
