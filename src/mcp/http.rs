//! Streamable HTTP: one endpoint, `/mcp`, POST only and without sessions, on axum. The SDK's
//! service checks `Host` and `Origin` against allow-lists (403 otherwise) and answers GET and
//! DELETE with 405; a front layer limits the body and answers a body that is not a JSON-RPC
//! request with its JSON-RPC error (-32700, -32600), as stdio does. The server stops gracefully
//! when `shutdown` resolves.

use super::StudioServer;
use axum::body::{Body, Bytes};
use axum::http::{Method, Request, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{
    session::never::NeverSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use std::future::Future;
use std::sync::Arc;
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
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "[::1]".into()],
            allowed_origins: vec!["http://localhost:*".into(), "http://127.0.0.1:*".into(), "http://[::1]:*".into()],
            max_body_bytes: 1 << 20,
        }
    }
}

/// Serves `/mcp` on `listener` until `shutdown` resolves, then lets requests in flight finish.
pub async fn serve_http(
    server: StudioServer,
    listener: TcpListener,
    config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    let mut sdk_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(config.allowed_hosts)
        .with_allowed_origins(config.allowed_origins)
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(cancel.child_token());
    sdk_config.sse_keep_alive = None;
    let service = StreamableHttpService::new(move || Ok(server.clone()), Arc::new(NeverSessionManager::default()), sdk_config);
    let limit = config.max_body_bytes;
    let app = axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |request, next| check_body(request, next, limit)));
    tracing::info!(address = %listener.local_addr()?, "serving MCP over HTTP at /mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            cancel.cancel();
        })
        .await?;
    Ok(())
}

/// Reads a POST body once: refuses it if too large or not a JSON-RPC message, else passes it on.
async fn check_body(request: Request<Body>, next: Next, limit: usize) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes: Bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is over {limit} bytes")).into_response(),
    };
    let checked = match std::str::from_utf8(&bytes) {
        Ok(text) => super::stdio::check(text),
        Err(_) => Err(serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error: the message is not UTF-8"}})),
    };
    if let Err(reply) = checked {
        return (StatusCode::BAD_REQUEST, [(axum::http::header::CONTENT_TYPE, "application/json")], reply.to_string()).into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
