//! studioflow as its own OAuth 2.1 authorization server (`serve --oauth-server`), so that hosts
//! that accept only dynamic registration or client metadata documents (Claude, ChatGPT, VS Code,
//! Cursor) can connect to a studio that has no identity provider. Its issuer is the origin of
//! `--resource`. The routes, which the HTTP front mounts beside `/mcp`:
//!
//! - `/.well-known/oauth-authorization-server`: the RFC 8414 metadata ([`AuthorizationServer::metadata`]);
//! - `/oauth/authorize`, `/oauth/login`, `/oauth/consent`: the authorization code flow with PKCE
//!   S256, a resource indicator (RFC 8707) equal to this server's, plain HTML forms that need no
//!   JavaScript, and `iss` in the redirect (RFC 9207) (`authorize.rs`, pages in `pages.rs`);
//! - `/oauth/token`, `/oauth/revoke`: codes and refresh tokens for opaque access tokens, refresh
//!   tokens rotating on use, revocation (RFC 7009) (`token.rs`);
//! - `/oauth/register`: public clients (RFC 7591), and clients whose id is the https URL of their
//!   metadata document (CIMD), fetched with limits and cached (`clients.rs`);
//! - `/oauth/setup`: a staff member sets a password from a one-time link (`setup.rs`).
//!
//! Users, codes, grants and tokens live in the store (hashed); this module holds only what one
//! sign-in needs for a few minutes (the request being authorized, the login session) and the
//! limits. Access tokens are checked by the HTTP gate, like API tokens, through the store.

mod authorize;
mod clients;
mod pages;
mod setup;
mod token;

use crate::auth::Scopes;
use crate::store::Pool;
use axum::routing::{get, post};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Where the metadata is served (RFC 8414 §3, for an issuer without a path).
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
pub const AUTHORIZE_PATH: &str = "/oauth/authorize";
pub const LOGIN_PATH: &str = "/oauth/login";
pub const CONSENT_PATH: &str = "/oauth/consent";
pub const TOKEN_PATH: &str = "/oauth/token";
pub const REGISTER_PATH: &str = "/oauth/register";
pub const REVOKE_PATH: &str = "/oauth/revoke";
pub const SETUP_PATH: &str = "/oauth/setup";

/// The routes any origin may call, without a credential (CORS `*`, as the SDKs' own servers
/// answer them): a browser-based client (the MCP Inspector) signs in through them.
pub const PUBLIC_PATHS: [&str; 4] = [METADATA_PATH, TOKEN_PATH, REGISTER_PATH, REVOKE_PATH];

/// The default life of an access token.
pub const DEFAULT_ACCESS_TTL: Duration = Duration::from_secs(3600);
/// How long a code may wait for its exchange.
pub const CODE_TTL: Duration = Duration::from_secs(60);

/// What the authorization server is told by `serve`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The issuer identifier: the origin of the resource, with the `/` of its root path
    /// (`https://studio.example.com/`), the form every SDK compares `iss` with.
    pub issuer: String,
    /// The resource (the canonical URL of `/mcp`): the one `resource` a request may name.
    pub resource: String,
    pub access_ttl: Duration,
    pub code_ttl: Duration,
    /// PEM roots trusted, besides the platform's, when fetching client metadata documents.
    pub client_ca: Option<std::path::PathBuf>,
    /// Whether client metadata documents may be fetched from loopback, private and link-local
    /// addresses (`serve --oauth-private-client-documents`): off, so that a client id cannot make
    /// the server call the studio's own network.
    pub private_client_documents: bool,
}

impl Config {
    /// The configuration for a resource URL (already checked by the gate's rules).
    pub fn new(resource: &str) -> Result<Config, String> {
        let url = reqwest::Url::parse(resource).map_err(|e| format!("--resource {resource:?}: {e}"))?;
        let issuer = format!("{}/", url.origin().ascii_serialization());
        if url.scheme() != "https" && !clients::is_loopback(&url) {
            return Err(format!(
                "--oauth-server needs an https:// --resource (sign-in pages carry passwords and cookies); plain http:// only on loopback, not {resource:?}"
            ));
        }
        Ok(Config { issuer, resource: resource.trim_end_matches('/').to_owned(), access_ttl: DEFAULT_ACCESS_TTL, code_ttl: CODE_TTL, client_ca: None, private_client_documents: false })
    }

    /// The issuer without its final `/`: where the endpoints' paths are joined.
    fn origin(&self) -> &str {
        self.issuer.trim_end_matches('/')
    }

    /// Cookies are `Secure` unless the issuer is plain http on loopback (a test, a laptop).
    fn secure_cookies(&self) -> bool {
        self.issuer.starts_with("https://")
    }
}

/// The authorization server: its settings, the store, and what one sign-in needs for minutes.
pub struct AuthorizationServer {
    config: Config,
    pool: Arc<Pool>,
    clients: clients::Directory,
    flows: authorize::Flows,
}

impl std::fmt::Debug for AuthorizationServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationServer").field("issuer", &self.config.issuer).finish_non_exhaustive()
    }
}

impl AuthorizationServer {
    pub fn new(config: Config, pool: Arc<Pool>) -> Result<AuthorizationServer, String> {
        let clients = clients::Directory::new(config.client_ca.as_deref(), config.private_client_documents)?;
        Ok(AuthorizationServer { config, pool, clients, flows: authorize::Flows::default() })
    }

    pub fn issuer(&self) -> &str {
        &self.config.issuer
    }

    /// The RFC 8414 metadata document.
    pub fn metadata(&self) -> Value {
        let origin = self.config.origin();
        json!({
            "issuer": self.config.issuer,
            "authorization_endpoint": format!("{origin}{AUTHORIZE_PATH}"),
            "token_endpoint": format!("{origin}{TOKEN_PATH}"),
            "registration_endpoint": format!("{origin}{REGISTER_PATH}"),
            "revocation_endpoint": format!("{origin}{REVOKE_PATH}"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": Scopes::all().iter().map(|s| s.name()).collect::<Vec<_>>(),
            "client_id_metadata_document_supported": true,
            "authorization_response_iss_parameter_supported": true,
            "resource_indicators_supported": true,
        })
    }

    /// The routes, to mount beside `/mcp`. Bodies are small: a form or a registration.
    pub fn routes(self: &Arc<Self>) -> axum::Router {
        let metadata = self.metadata();
        let document = move || std::future::ready(token::json(axum::http::StatusCode::OK, &metadata));
        axum::Router::new()
            .route(METADATA_PATH, get(document.clone()))
            // Some clients keep the issuer's final `/` when they build the well-known URL.
            .route(&format!("{METADATA_PATH}/"), get(document))
            .route(AUTHORIZE_PATH, get(authorize::authorize))
            .route(LOGIN_PATH, post(authorize::login))
            .route(CONSENT_PATH, get(authorize::consent_page).post(authorize::consent))
            .route(TOKEN_PATH, post(token::token))
            .route(REVOKE_PATH, post(token::revoke))
            .route(REGISTER_PATH, post(clients::register))
            .route(SETUP_PATH, get(setup::page).post(setup::set))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
            .with_state(self.clone())
    }
}

/// The largest body any of the routes reads.
const MAX_BODY: usize = 16 * 1024;

/// Runs store work on a blocking thread, as every handler does; a failure is a string for a page.
async fn blocking<T: Send + 'static>(pool: &Arc<Pool>, f: impl FnMut(&mut crate::store::Store) -> Result<T, crate::store::StoreError> + Send + 'static) -> Result<T, String> {
    let pool = pool.clone();
    match tokio::task::spawn_blocking(move || pool.with(f)).await {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(e))) | Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The source address of a request, as the front's connection loop recorded it.
fn source(extensions: &axum::http::Extensions) -> String {
    extensions.get::<Source>().map_or_else(|| "unknown".to_owned(), |s| s.0.to_string())
}

/// The peer address, put on each request by the HTTP front (which owns the connections).
#[derive(Debug, Clone, Copy)]
pub struct Source(pub std::net::IpAddr);
