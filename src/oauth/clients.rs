//! Who may ask for a grant: public clients that registered (RFC 7591; stored), and clients whose
//! id is the https URL of their own metadata document (Client ID Metadata Documents), fetched
//! with a timeout, a size cap and no redirects, cached for a while, and held to its own
//! `client_id` and `redirect_uris`. A redirect URI matches exactly, except that a loopback one
//! (`http://127.0.0.1`, `http://[::1]`, `http://localhost`) matches on any port (RFC 8252 §7.3).
//! Registrations are size-capped (the routes' body limit) and rate-limited per address.

use super::{blocking, source, token, AuthorizationServer};
use crate::domain::TextKind;
use axum::extract::State;
use axum::http::{Extensions, StatusCode};
use axum::response::Response;
use reqwest::Url;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A client as the flow needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// Whether its metadata lists the `refresh_token` grant (RFC 7591 §2: a client keeps to the
    /// grant types it names). Without it, a code gives an access token alone.
    pub refreshes: bool,
}

impl Client {
    /// Whether `uri` is one of the client's redirect URIs (a loopback one on any port).
    pub fn allows(&self, uri: &str) -> bool {
        self.redirect_uris.iter().any(|known| redirect_matches(known, uri))
    }
}

/// Whether a presented redirect URI matches a registered one: exactly, or, for a loopback http
/// URI, in everything but the port (a native app listens on whatever port is free).
pub fn redirect_matches(registered: &str, presented: &str) -> bool {
    if registered == presented {
        return true;
    }
    let (Ok(a), Ok(b)) = (Url::parse(registered), Url::parse(presented)) else { return false };
    a.scheme() == "http" && is_loopback(&a) && b.scheme() == "http" && a.host_str() == b.host_str() && a.path() == b.path() && a.query() == b.query() && b.fragment().is_none()
}

/// Whether a URL's host is this machine's loopback.
pub fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// Whether a redirect URI may be registered: https; http only to loopback; or an app's own
/// scheme (`vscode:`, `cursor:`, a reversed domain), never a scheme that runs or reads something
/// in the browser; no fragment (RFC 6749 §3.1.2).
pub fn redirect_allowed(uri: &str) -> Result<(), String> {
    let url = Url::parse(uri).map_err(|e| format!("{uri:?} is not an absolute URI ({e})"))?;
    if uri.len() > 2000 {
        return Err("a redirect URI is at most 2000 characters".into());
    }
    if url.fragment().is_some() {
        return Err(format!("{uri:?} has a fragment, which a redirect URI may not have"));
    }
    match url.scheme() {
        "https" if url.host_str().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(format!("{uri:?}: plain http is allowed only to loopback (127.0.0.1, [::1], localhost); use https")),
        "javascript" | "data" | "file" | "vbscript" | "about" | "blob" | "ftp" | "ws" | "wss" | "https" => Err(format!("{uri:?} cannot be a redirect URI")),
        _ => Ok(()),
    }
}

/// Where clients are looked up: the store for registered ones, the web (with a cache) for CIMD.
pub struct Directory {
    http: reqwest::Client,
    /// Whether metadata documents may be fetched from private addresses (`serve --oauth-private-client-documents`).
    allow_private: bool,
    /// Fetched documents by URL, with when they were fetched. A std mutex: never held across I/O.
    cache: Mutex<HashMap<String, (Instant, Client)>>,
    registrations: Mutex<HashMap<String, VecDeque<Instant>>>,
}

/// How long a fetched metadata document is used before it is fetched again.
const CACHE_FOR: Duration = Duration::from_secs(600);
/// How long a fetch may take, and how large a document may be.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_DOCUMENT: usize = 5 * 1024;
/// The flag that lets documents be fetched from private addresses, and the resolver used without it.
const PRIVATE_FLAG: &str = "--oauth-private-client-documents";
const PUBLIC_ONLY: crate::net::PublicOnly = crate::net::PublicOnly { what: "client metadata fetches", flag: PRIVATE_FLAG };
/// Registrations per address per hour.
const REGISTRATIONS_PER_HOUR: usize = 20;

impl Directory {
    /// A directory fetching documents over TLS trusting the platform's roots and `extra_roots`,
    /// from public addresses only unless `allow_private` (a caller's client id is a URL of its
    /// choosing: the server must not be made to call the studio's own network).
    pub fn new(extra_roots: Option<&std::path::Path>, allow_private: bool) -> Result<Directory, String> {
        crate::tls::install();
        let mut builder = reqwest::Client::builder().timeout(FETCH_TIMEOUT).connect_timeout(FETCH_TIMEOUT).redirect(reqwest::redirect::Policy::none());
        if !allow_private {
            builder = builder.dns_resolver(std::sync::Arc::new(PUBLIC_ONLY));
        }
        if let Some(path) = extra_roots {
            let pem = std::fs::read(path).map_err(|e| format!("--oauth-client-ca {}: {e}", path.display()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| format!("--oauth-client-ca {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!("--oauth-client-ca {} holds no PEM certificate", path.display()));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder.build().map_err(|e| format!("cannot make the HTTP client that fetches client metadata documents: {e}"))?;
        Ok(Directory { http, allow_private, cache: Mutex::new(HashMap::new()), registrations: Mutex::new(HashMap::new()) })
    }

    /// Counts a registration from `source`, or says it is one too many this hour.
    fn admit_registration(&self, source: &str) -> bool {
        let now = Instant::now();
        let mut all = self.registrations.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() > 10_000 {
            all.retain(|_, times| times.back().is_some_and(|at| now.duration_since(*at) < Duration::from_secs(3600)));
        }
        let times = all.entry(source.to_owned()).or_default();
        while times.front().is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(3600)) {
            times.pop_front();
        }
        if times.len() >= REGISTRATIONS_PER_HOUR {
            return false;
        }
        times.push_back(now);
        true
    }

    /// Fetches (or takes from the cache) the metadata document that `url` names.
    async fn document(&self, url: &str) -> Result<Client, String> {
        if let Some((at, client)) = self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(url)
            && at.elapsed() < CACHE_FOR
        {
            return Ok(client.clone());
        }
        if !self.allow_private && reqwest::Url::parse(url).ok().as_ref().and_then(reqwest::Url::host_str).is_none_or(crate::net::names_private) {
            return Err(format!("its metadata document cannot be fetched: {}", crate::net::private_refusal(&format!("its host ({})", host_of(url)), "client metadata fetches", PRIVATE_FLAG)));
        }
        let mut response = self.http.get(url).header(reqwest::header::ACCEPT, "application/json").send().await.map_err(|e| format!("its metadata document could not be fetched: {}", chain(&e)))?;
        if !response.status().is_success() {
            return Err(format!("fetching its metadata document answered HTTP {} (redirects are not followed)", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading its metadata document: {e}"))? {
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(format!("its metadata document is larger than {MAX_DOCUMENT} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let document: Value = serde_json::from_slice(&body).map_err(|e| format!("its metadata document is not JSON: {e}"))?;
        if document["client_id"].as_str() != Some(url) {
            return Err("its metadata document's client_id is not the URL it was fetched from".into());
        }
        if document.get("token_endpoint_auth_method").is_some_and(|m| m != "none") {
            return Err("its metadata document asks for a token_endpoint_auth_method other than \"none\": only public clients are served".into());
        }
        let (name, redirect_uris) = read_metadata(&document)?;
        let refreshes = grant_types(&document)?.iter().any(|g| g == "refresh_token");
        let client = Client { id: url.to_owned(), name: name.unwrap_or_else(|| host_of(url)), redirect_uris, refreshes };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() > 1000 {
            cache.retain(|_, (at, _)| at.elapsed() < CACHE_FOR);
        }
        cache.insert(url.to_owned(), (Instant::now(), client.clone()));
        Ok(client)
    }
}

/// A client's name and redirect URIs from its metadata (a registration or a document).
fn read_metadata(metadata: &Value) -> Result<(Option<String>, Vec<String>), String> {
    let uris = metadata["redirect_uris"].as_array().filter(|list| !list.is_empty()).ok_or("redirect_uris must be a list of at least one URI")?;
    if uris.len() > 10 {
        return Err("at most 10 redirect_uris".into());
    }
    let uris = uris.iter().map(|u| u.as_str().map(str::to_owned).ok_or("each redirect URI must be a string")).collect::<Result<Vec<_>, _>>()?;
    for uri in &uris {
        redirect_allowed(uri)?;
    }
    let name = match metadata.get("client_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(TextKind::Name.clean(name).map_err(|fault| format!("client_name: {fault}"))?),
        Some(_) => return Err("client_name must be a string".into()),
    };
    Ok((name, uris))
}

/// The grant types a client's metadata names (RFC 7591 §2; both when it names none): the
/// authorization code, and the refresh token if the client wants one.
fn grant_types(metadata: &Value) -> Result<Vec<String>, String> {
    match metadata.get("grant_types") {
        None | Some(Value::Null) => Ok(vec!["authorization_code".to_owned(), "refresh_token".to_owned()]),
        Some(Value::Array(list)) => {
            let names: Vec<String> = list.iter().filter_map(Value::as_str).map(str::to_owned).collect();
            if names.len() != list.len() || names.iter().any(|g| g != "authorization_code" && g != "refresh_token") || !names.iter().any(|g| g == "authorization_code") {
                return Err("grant_types may be authorization_code and refresh_token, with authorization_code".into());
            }
            Ok(names)
        }
        Some(_) => Err("grant_types must be a list".into()),
    }
}

/// The host of a URL, as a client's name when it gives none.
fn host_of(url: &str) -> String {
    Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| url.to_owned())
}

/// Whether a client id is a metadata document's URL: https, with a path, no fragment.
pub fn is_document_url(id: &str) -> bool {
    Url::parse(id).is_ok_and(|u| u.scheme() == "https" && u.host_str().is_some() && u.path() != "/" && u.fragment().is_none())
}

impl AuthorizationServer {
    /// The client a `client_id` names, or why there is none.
    pub(super) async fn client(&self, id: &str) -> Result<Client, String> {
        if is_document_url(id) {
            return self.clients.document(id).await;
        }
        let owned = id.to_owned();
        let found = blocking(&self.pool, move |store| store.registered_client(&owned)).await?;
        found
            .map(|c| {
                // The registration as answered: its grant types were checked when it was made.
                let refreshes = grant_types(&c.metadata).is_ok_and(|names| names.iter().any(|g| g == "refresh_token"));
                Client { id: c.id, name: c.name, redirect_uris: c.redirect_uris, refreshes }
            })
            .ok_or_else(|| "this client is not registered here: register it again (its app does this itself)".to_owned())
    }
}

/// `POST /oauth/register`: registers a public client (RFC 7591) and answers 201 with its id.
pub async fn register(State(server): State<Arc<AuthorizationServer>>, extensions: Extensions, body: axum::body::Bytes) -> Response {
    let invalid = |why: String| token::json(StatusCode::BAD_REQUEST, &json!({"error": "invalid_client_metadata", "error_description": why}));
    let Ok(metadata) = serde_json::from_slice::<Value>(&body) else { return invalid("the body must be a JSON object of client metadata".into()) };
    if !metadata.is_object() {
        return invalid("the body must be a JSON object of client metadata".into());
    }
    let (name, redirect_uris) = match read_metadata(&metadata) {
        Ok(read) => read,
        Err(why) if why.starts_with('"') || why.contains("redirect") => {
            return token::json(StatusCode::BAD_REQUEST, &json!({"error": "invalid_redirect_uri", "error_description": why}));
        }
        Err(why) => return invalid(why),
    };
    let grant_types = match grant_types(&metadata) {
        Ok(names) => names,
        Err(why) => return invalid(why),
    };
    if metadata.get("response_types").is_some_and(|r| r != &json!(["code"])) {
        return invalid("response_types must be [\"code\"]".into());
    }
    let source = source(&extensions);
    if !server.clients.admit_registration(&source) {
        tracing::warn!(%source, "refused a client registration: over the hourly limit");
        return token::json(StatusCode::TOO_MANY_REQUESTS, &json!({"error": "too_many_requests", "error_description": format!("at most {REGISTRATIONS_PER_HOUR} registrations an hour from one address")}));
    }
    let name = name.unwrap_or_else(|| "unnamed client".to_owned());
    // Public clients only: whatever authentication was asked for, the answer is "none" (RFC 7591
    // §3.2.1 lets the server replace a value), and no secret is issued.
    let mut answer = json!({
        "client_name": name,
        "redirect_uris": redirect_uris,
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(scope) = metadata.get("scope").and_then(Value::as_str) {
        answer["scope"] = json!(crate::auth::Scopes::from_claim(scope).joined(" "));
    }
    let now = chrono::Utc::now();
    let registered = blocking(&server.pool, move |store| {
        let (name, uris, answer) = (name.clone(), redirect_uris.clone(), answer.clone());
        store.write_as(&crate::domain::Actor::new("authorization server", "oauth register"), |w| w.register_client(&name, &uris, answer, now))
    })
    .await;
    match registered {
        Ok(client) => {
            tracing::info!(client = %client.id, name = %client.name, %source, "registered an OAuth client");
            token::json(StatusCode::CREATED, &client.metadata)
        }
        Err(e) => token::json(StatusCode::INTERNAL_SERVER_ERROR, &json!({"error": "server_error", "error_description": e})),
    }
}

/// An error with its sources, for a message.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_documented_redirects_can_be_registered() {
        for uri in [
            "https://claude.ai/api/mcp/auth_callback",
            "https://claude.com/api/mcp/auth_callback",
            "https://chatgpt.com/connector_platform_oauth_redirect",
            "http://127.0.0.1:33418/",
            "https://vscode.dev/redirect",
            "http://localhost:6274/oauth/callback",
            "cursor://anysphere.cursor-mcp/oauth/callback",
        ] {
            assert_eq!(redirect_allowed(uri), Ok(()), "{uri}");
        }
        for uri in ["http://studio.example.com/cb", "javascript:alert(1)", "https://x.example/cb#frag", "/relative", "data:text/html,hi"] {
            assert!(redirect_allowed(uri).is_err(), "{uri}");
        }
    }

    #[test]
    fn loopback_redirects_match_on_any_port_and_others_exactly() {
        assert!(redirect_matches("http://127.0.0.1:33418/", "http://127.0.0.1:50123/"));
        assert!(redirect_matches("http://localhost/callback", "http://localhost:8765/callback"));
        assert!(!redirect_matches("http://127.0.0.1/callback", "http://127.0.0.1:8765/other"));
        assert!(!redirect_matches("http://127.0.0.1/callback", "http://localhost:8765/callback"));
        assert!(redirect_matches("https://claude.ai/api/mcp/auth_callback", "https://claude.ai/api/mcp/auth_callback"));
        assert!(!redirect_matches("https://claude.ai/api/mcp/auth_callback", "https://claude.ai:8443/api/mcp/auth_callback"));
        assert!(!redirect_matches("https://claude.ai/api/mcp/auth_callback", "https://claude.ai/api/mcp/auth_callback/"));
    }

    #[test]
    fn document_urls_are_https_with_a_path() {
        assert!(is_document_url("https://app.example/oauth/client.json"));
        assert!(!is_document_url("https://app.example/"));
        assert!(!is_document_url("http://app.example/client.json"));
        assert!(!is_document_url("cl_abc"));
    }
}
