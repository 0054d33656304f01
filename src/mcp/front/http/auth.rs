//! Who may call, over HTTP (MCP 2026-07-28 authorization; studioflow is an OAuth 2.1 resource
//! server). With authentication on, every request to `/mcp` carries `Authorization: Bearer`: an
//! API token (`sft_…`, checked against its hash in the store), an opaque access token of
//! studioflow's own authorization server (`sfo_…`, the same: one indexed read, which also reads
//! the user's role and state now) or, with an issuer configured, a JWT access token
//! (`auth/jwt.rs`). The gate answers, before anything runs:
//!
//! - 401 with `WWW-Authenticate: Bearer resource_metadata="…"` for a missing or bad credential
//!   (with `error="invalid_token"` for a bad one), logged with its source, never with the token;
//! - 429 with `Retry-After` for a principal over its rate, and for the failing (or credential-less)
//!   requests of a source address past its failed authentications of the minute; a valid
//!   credential from that address is still served, so one misconfigured client behind a shared
//!   address (a studio's NAT) does not lock the others out;
//! - 403 with `error="insufficient_scope"` and the `scope` needed, from the tool table (`access.rs`), once the
//!   body is read.
//!
//! It also serves the Protected Resource Metadata (RFC 9728). A credential is never passed on.

use crate::auth::jwt::{Rejection, Verifier};
use crate::auth::{Principal, Scope, Scopes};
use crate::mcp::server::StudioServer;
use crate::store::{AccessCheck, Pool, Store, TokenCheck};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use reqwest::Url;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the Protected Resource Metadata is served; also with the resource's path appended.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How many requests a principal may make, and how many failed authentications a source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    /// Requests per minute per principal, in bursts of up to a quarter of that.
    pub per_principal: u32,
    /// Failed authentications per source address answered 401 in any minute; beyond them, the
    /// source's failing requests get 429 until the oldest of them is a minute old.
    pub failures_per_source: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits { per_principal: 600, failures_per_source: 20 }
    }
}

/// The gate's settings, checked by `serve` before anything starts.
pub struct AuthConfig {
    /// The canonical URL of `/mcp` as clients reach it (RFC 8707): what access tokens must be
    /// for, and where the metadata says the resource is.
    pub resource: String,
    pub verifier: Option<Verifier>,
    /// The issuers, for the metadata's `authorization_servers`: this server's own first (when
    /// `--oauth-server` is on), then `--oauth-issuer`.
    pub issuers: Vec<String>,
    pub limits: RateLimits,
}

/// The checks, shared by every request.
pub struct Gate {
    pool: Arc<Pool>,
    /// A connection of its own for API token checks, read inline where the store allows it
    /// ([`Pool::inline_reader`]): a point read by the secret's hash, while a hop to a blocking
    /// thread costs more than the whole check at the tail (BENCHMARKS.md). `None`: the check goes
    /// through the pool on a blocking thread.
    tokens: Option<Mutex<Store>>,
    resource: String,
    verifier: Option<Verifier>,
    metadata: Value,
    metadata_url: String,
    /// The path of the resource's own metadata (the path-suffixed form).
    suffixed_path: String,
    principals: Limiter,
    failures: Failures,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("resource", &self.resource).field("oauth", &self.verifier.is_some()).finish_non_exhaustive()
    }
}

/// Why a request was stopped at the gate.
pub enum Refusal {
    /// 401: no credential, or one that does not check out (the reason).
    Unauthenticated(Option<String>),
    /// 403: the principal lacks the scope `needed`; `held` are the scopes it has.
    Forbidden { needed: Scope, held: Scopes },
    /// 429: over a rate, come back after this long.
    TooMany(Duration),
    /// 503: the issuer's keys could not be had.
    Unavailable(String),
}

impl Gate {
    /// Whether `url` can be the resource's URL: absolute http(s), without query or fragment.
    pub fn check_resource(url: &str) -> Result<(), String> {
        split_url(url.trim_end_matches('/'))
            .map(|_| ())
            .ok_or_else(|| format!("--resource {url:?} must be an absolute http(s) URL without query or fragment, such as https://studio.example.com/mcp"))
    }

    /// The host (with its port, if it names one) of the resource URL: where clients reach the
    /// server, so a `Host` to accept.
    pub fn resource_host(url: &str) -> Option<String> {
        let parsed = Url::parse(url).ok()?;
        let host = parsed.host_str()?;
        Some(parsed.port().map_or_else(|| host.to_owned(), |port| format!("{host}:{port}")))
    }

    /// The gate of `server` (whose tool table says which tool needs which scope).
    pub fn new(pool: Arc<Pool>, config: AuthConfig, server: &StudioServer) -> Result<Gate, String> {
        let tools = server.tools();
        Gate::check_resource(&config.resource)?;
        let url = config.resource.trim_end_matches('/');
        let (origin, path) = split_url(url).unwrap_or_else(|| (url.to_owned(), String::new()));
        let metadata_url = format!("{origin}{METADATA_PATH}{path}");
        let tool_scopes: serde_json::Map<String, Value> = tools.iter().map(|spec| (spec.name().to_owned(), json!(spec.access.most().name()))).collect();
        let mut metadata = json!({
            "resource": url,
            "scopes_supported": Scopes::all().iter().map(Scope::name).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
            "resource_name": "studioflow",
            // Beyond RFC 9728: which tool needs which scope, from the tool table (reflow_month
            // with dry_run: true needs only studio:read; tasks/update needs reflow:apply).
            "tool_scopes": tool_scopes,
        });
        if !config.issuers.is_empty() {
            metadata["authorization_servers"] = json!(config.issuers);
        }
        let tokens = pool.inline_reader().map_err(|e| format!("opening {} for token checks: {e}", pool.target()))?.map(Mutex::new);
        Ok(Gate {
            pool,
            tokens,
            resource: url.to_owned(),
            verifier: config.verifier,
            metadata,
            metadata_url,
            suffixed_path: format!("{METADATA_PATH}{path}"),
            principals: Limiter::new(config.limits.per_principal),
            failures: Failures::new(config.limits.failures_per_source),
        })
    }

    /// The metadata document, for `GET` at [`METADATA_PATH`] and its path-suffixed form.
    pub fn metadata(&self) -> &Value {
        &self.metadata
    }

    /// The path-suffixed form of the metadata path, for this resource.
    pub fn suffixed_metadata_path(&self) -> &str {
        &self.suffixed_path
    }

    /// Finds the principal a request's credential names, within the rates. Every credential is
    /// checked, even from a source past its failures: a valid one is served whatever others sent
    /// from its address (guessing gains nothing from this: see [`Failures`]).
    pub async fn authenticate(&self, headers: &HeaderMap, source: Option<IpAddr>) -> Result<Principal, Refusal> {
        let source_key = source.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
        let token = match bearer(headers) {
            Ok(Some(token)) => token,
            // Asking without a credential (discovery) is no failure, but a source past its
            // failures is told to wait rather than invited to try again at once.
            Ok(None) => return Err(self.failures.waiting(&source_key).map_or(Refusal::Unauthenticated(None), Refusal::TooMany)),
            Err(why) => return Err(self.failed(&source_key, why)),
        };
        let principal = if token.starts_with(crate::store::TOKEN_PREFIX) || token.starts_with(crate::store::ACCESS_PREFIX) {
            self.opaque(token).await.map_err(|why| self.failed(&source_key, why))?
        } else {
            match &self.verifier {
                Some(verifier) => match verifier.verify(token).await {
                    Ok(principal) => principal,
                    Err(Rejection::Invalid(why)) => return Err(self.failed(&source_key, why)),
                    Err(Rejection::Unavailable(why)) => {
                        tracing::error!(%why, "the issuer's keys cannot be fetched: access tokens cannot be checked");
                        return Err(Refusal::Unavailable(why));
                    }
                },
                None => return Err(self.failed(&source_key, "not a studioflow API token, and no OAuth issuer is configured".into())),
            }
        };
        match self.principals.take(&principal.id) {
            Ok(()) => Ok(principal),
            Err(wait) => {
                tracing::warn!(principal = %principal.name, "over the rate limit");
                Err(Refusal::TooMany(wait))
            }
        }
    }

    /// A failed authentication: counted against its source and logged with it (never with the
    /// credential). Within the source's failures of the minute it is a 401; past them, a 429, and
    /// only the first of those is logged, so a client failing in a loop cannot flood the log.
    fn failed(&self, source: &str, why: String) -> Refusal {
        match self.failures.fail(source) {
            Failed::Counted => {
                tracing::warn!(%source, %why, "refused a credential");
                Refusal::Unauthenticated(Some(why))
            }
            Failed::OverLimit { wait, first } => {
                if first {
                    tracing::warn!(%source, %why, limit = self.failures.limit, "refused a credential; this source is past its failed authentications of the minute, so its failing requests get 429 (valid credentials from it are still served)");
                } else {
                    tracing::debug!(%source, %why, "refused a credential (past the failure limit)");
                }
                Refusal::TooMany(wait)
            }
        }
    }

    /// Checks an API token or an access token of studioflow's own authorization server (inline on
    /// SQLite: [`Gate::tokens`]); its use is recorded (at most once a minute) on a blocking thread,
    /// after the answer has gone on.
    async fn opaque(&self, secret: &str) -> Result<Principal, String> {
        let now = chrono::Utc::now();
        let check = move |store: &Store, secret: &str| -> Result<Opaque, crate::store::StoreError> {
            if secret.starts_with(crate::store::ACCESS_PREFIX) { store.check_access(secret, now).map(Opaque::Access) } else { store.check_token(secret, now).map(Opaque::Token) }
        };
        let checked = match &self.tokens {
            Some(tokens) => check(&tokens.lock().unwrap_or_else(|e| e.into_inner()), secret),
            None => {
                let (pool, secret) = (self.pool.clone(), secret.to_owned());
                tokio::task::spawn_blocking(move || pool.with_unsettled(|store| check(store, &secret)).and_then(|r| r))
                    .await
                    .unwrap_or_else(|e| Err(crate::store::StoreError::Pool(e.to_string())))
            }
        };
        let record = |id: String, grant: bool| {
            let pool = self.pool.clone();
            tokio::task::spawn_blocking(move || {
                let recorded = pool.with_unsettled(|store| if grant { store.record_grant_use(&id, now) } else { store.record_token_use(&id, now) });
                if let Err(e) = recorded.and_then(|r| r) {
                    tracing::warn!(token = %id, error = %e, "could not record the token's use; a later request will");
                }
            });
        };
        match checked {
            Ok(Opaque::Token(TokenCheck::Valid(token))) => {
                if token.use_unrecorded(now) {
                    record(token.id.clone(), false);
                }
                Ok(Principal::token(&token.id, &token.name, token.scopes))
            }
            Ok(Opaque::Token(TokenCheck::Unknown)) => Err("unknown API token".into()),
            Ok(Opaque::Token(TokenCheck::Revoked(token))) => Err(format!("API token {} ({}) was revoked", token.id, token.name)),
            Ok(Opaque::Token(TokenCheck::Expired(token))) => Err(format!("API token {} ({}) has expired", token.id, token.name)),
            Ok(Opaque::Access(AccessCheck::Valid(access))) => {
                if access.use_unrecorded(now) {
                    record(access.grant_id.clone(), true);
                }
                Ok(Principal::user(&access.user_id, &access.user_name, &access.client_name, access.scopes))
            }
            Ok(Opaque::Access(AccessCheck::Unknown)) => Err("unknown access token".into()),
            Ok(Opaque::Access(AccessCheck::Expired)) => Err("the access token has expired: refresh it".into()),
            Ok(Opaque::Access(AccessCheck::Revoked(why))) => Err(format!("the access token no longer works: {why}")),
            Err(e) => Err(format!("the token could not be checked: {e}")),
        }
    }

    /// Whether `principal` holds `scope`, which `method` needs (the front knows which).
    pub fn authorize(&self, principal: &Principal, method: &str, scope: Scope) -> Result<(), Refusal> {
        if principal.scopes.contains(scope) {
            return Ok(());
        }
        tracing::info!(principal = %principal.name, %method, scope = scope.name(), "refused: a scope is missing");
        Err(Refusal::Forbidden { needed: scope, held: principal.scopes })
    }

    /// The HTTP answer to a refusal.
    pub fn refuse(&self, refusal: Refusal) -> Response {
        let metadata = &self.metadata_url;
        let (status, challenge, body) = match refusal {
            Refusal::Unauthenticated(None) => (
                StatusCode::UNAUTHORIZED,
                Some(format!("Bearer resource_metadata=\"{metadata}\"")),
                json!({"error": "invalid_request", "error_description": format!("this server needs a bearer token for {}: see {metadata}", self.resource)}),
            ),
            Refusal::Unauthenticated(Some(why)) => (
                StatusCode::UNAUTHORIZED,
                Some(format!("Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata}\"", quoted(&why))),
                json!({"error": "invalid_token", "error_description": why}),
            ),
            Refusal::Forbidden { needed, held } => {
                // The scope to ask for is the whole set the request needs with what the token
                // already has (RFC 6750 allows it): a client that re-authorizes with exactly the
                // named scopes (the TypeScript SDK 1.x) then keeps the ones it had, and converges.
                let scope = held.with(needed).joined(" ");
                let why = format!("this request needs the scope {needed}");
                (
                    StatusCode::FORBIDDEN,
                    Some(format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\", error_description=\"{why}\", resource_metadata=\"{metadata}\"")),
                    json!({"error": "insufficient_scope", "scope": scope, "error_description": why}),
                )
            }
            Refusal::TooMany(wait) => {
                let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
                let body = json!({"error": "too_many_requests", "error_description": format!("too many requests: try again in {seconds} s")});
                let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, &body);
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
                return response;
            }
            Refusal::Unavailable(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                json!({"error": "temporarily_unavailable", "error_description": format!("access tokens cannot be checked now: {why}")}),
            ),
        };
        let mut response = json_response(status, &body);
        if let Some(challenge) = challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// What an opaque secret turned out to be, by its prefix.
enum Opaque {
    Token(TokenCheck),
    Access(AccessCheck),
}

/// A JSON document as an HTTP answer.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The bearer token of `Authorization`, if there is one; a malformed header is an error.
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, String> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err("more than one Authorization header".into());
    }
    let value = value.to_str().map_err(|_| "the Authorization header is not ASCII".to_owned())?;
    let (scheme, token) = value.split_once(' ').ok_or_else(|| "the Authorization header must be \"Bearer <token>\"".to_owned())?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(format!("the Authorization scheme must be Bearer, not {scheme:?}"));
    }
    let token = token.trim();
    if token.is_empty() || token.contains(' ') {
        return Err("the Authorization header must be \"Bearer <token>\"".into());
    }
    Ok(Some(token))
}

/// `text` inside a quoted string of a header (RFC 9110): quotes and backslashes escaped,
/// anything outside visible ASCII dropped.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii() && !c.is_ascii_control())
        .flat_map(|c| if c == '"' || c == '\\' { vec!['\\', c] } else { vec![c] })
        .collect()
}

/// The resource URL's origin and path (without a trailing slash), when it can be the resource:
/// absolute http(s), with a host, and no query or fragment.
fn split_url(url: &str) -> Option<(String, String)> {
    let parsed = Url::parse(url).ok()?;
    let fits = matches!(parsed.scheme(), "http" | "https") && parsed.host_str().is_some() && parsed.query().is_none() && parsed.fragment().is_none();
    fits.then(|| (parsed.origin().ascii_serialization(), parsed.path().trim_end_matches('/').to_owned()))
}

/// Failed authentications by source address, in a sliding minute: the first `limit` of any
/// minute are answered 401; past them a source's failing requests get 429 with the time until
/// its oldest counted failure is a minute old. Only failures are counted and only failing (or
/// credential-less) requests are refused: a valid credential is never held up by what others
/// sent from its address.
///
/// This limit spares the log and the checks, not the secrets: a guess is checked like any
/// credential, and guessing stays futile because an API token is 256 random bits (stored only as
/// its SHA-256) and an access token must carry the issuer's signature.
struct Failures {
    limit: usize,
    /// The instants of each source's counted failures within the last minute, oldest first, and
    /// whether its being past the limit was logged. A std mutex: held only to update, never across I/O.
    sources: Mutex<HashMap<String, Source>>,
}

#[derive(Default)]
struct Source {
    failures: VecDeque<Instant>,
    /// Whether the 429 that follows the limit was logged, since the source last had room.
    told: bool,
}

/// How a failure was taken.
#[derive(Debug, PartialEq)]
enum Failed {
    /// Within the source's failures of the minute: answered 401.
    Counted,
    /// Past them: answered 429, to retry after `wait`; `first` for the first since it had room.
    OverLimit { wait: Duration, first: bool },
}

/// The window failures are counted in.
const FAILURE_WINDOW: Duration = Duration::from_secs(60);

impl Failures {
    fn new(per_minute: u32) -> Failures {
        Failures { limit: per_minute.max(1) as usize, sources: Mutex::new(HashMap::new()) }
    }

    /// Counts a failure of `source`, unless it is past its limit (then it says how long to wait,
    /// and the failure is not counted: the wait runs from the failures that were answered).
    fn fail(&self, source: &str) -> Failed {
        let now = Instant::now();
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        if sources.len() > 10_000 {
            // Forget sources with no failure in the window: they are the same as new ones.
            sources.retain(|_, s| s.failures.back().is_some_and(|at| now.duration_since(*at) < FAILURE_WINDOW));
        }
        let entry = sources.entry(source.to_owned()).or_default();
        forget_old(&mut entry.failures, now);
        if entry.failures.len() < self.limit {
            entry.failures.push_back(now);
            entry.told = false;
            return Failed::Counted;
        }
        let first = !std::mem::replace(&mut entry.told, true);
        Failed::OverLimit { wait: wait_for(&entry.failures, now), first }
    }

    /// How long `source` must wait, when it is past its failures of the minute; counts nothing.
    fn waiting(&self, source: &str) -> Option<Duration> {
        let now = Instant::now();
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let entry = sources.get_mut(source)?;
        forget_old(&mut entry.failures, now);
        (entry.failures.len() >= self.limit).then(|| wait_for(&entry.failures, now))
    }
}

/// Drops the failures older than the window.
fn forget_old(failures: &mut VecDeque<Instant>, now: Instant) {
    while failures.front().is_some_and(|at| now.duration_since(*at) >= FAILURE_WINDOW) {
        failures.pop_front();
    }
}

/// How long until the oldest counted failure leaves the window.
fn wait_for(failures: &VecDeque<Instant>, now: Instant) -> Duration {
    failures.front().map_or(Duration::ZERO, |at| FAILURE_WINDOW.saturating_sub(now.duration_since(*at)))
}

/// Token buckets by key: `per_minute` tokens a minute, holding up to a quarter of that.
struct Limiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Limiter {
    fn new(per_minute: u32) -> Limiter {
        let per_minute = f64::from(per_minute.max(1));
        Limiter { per_second: per_minute / 60.0, burst: (per_minute / 4.0).max(1.0), buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one token for `key`, or says how long until there is one.
    fn take(&self, key: &str) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > 10_000 {
            // Forget the full buckets: they are the same as new ones.
            let (per_second, burst) = (self.per_second, self.burst);
            buckets.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * per_second < burst);
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket { tokens: self.burst, at: now });
        bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * self.per_second).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / self.per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_strictly() {
        let headers = |values: &[&str]| {
            let mut map = HeaderMap::new();
            for v in values {
                map.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            }
            map
        };
        assert_eq!(bearer(&headers(&[])), Ok(None));
        assert_eq!(bearer(&headers(&["Bearer abc"])), Ok(Some("abc")));
        assert_eq!(bearer(&headers(&["bearer abc"])), Ok(Some("abc")));
        assert!(bearer(&headers(&["Basic abc"])).is_err());
        assert!(bearer(&headers(&["Bearer"])).is_err());
        assert!(bearer(&headers(&["Bearer a b"])).is_err());
        assert!(bearer(&headers(&["Bearer a", "Bearer b"])).is_err());
    }

    #[test]
    fn urls_split_into_origin_and_path() {
        let split = |url| split_url(url).map(|(origin, path)| format!("{origin} {path}"));
        assert_eq!(split("https://studio.example.com/mcp").as_deref(), Some("https://studio.example.com /mcp"));
        assert_eq!(split("https://studio.example.com:443/studio/mcp/").as_deref(), Some("https://studio.example.com /studio/mcp"));
        assert_eq!(split("http://127.0.0.1:8080").as_deref(), Some("http://127.0.0.1:8080 "));
        assert_eq!(split("ftp://x/mcp"), None);
        assert_eq!(split("studio.example.com/mcp"), None);
        assert_eq!(split("https://x/mcp#frag"), None);
        assert_eq!(split("https://x/mcp?a=1"), None);
        assert_eq!(Gate::resource_host("https://studio.example.com/mcp").as_deref(), Some("studio.example.com"));
        assert_eq!(Gate::resource_host("http://studio.test:8080/mcp").as_deref(), Some("studio.test:8080"));
    }

    #[test]
    fn a_bucket_refills_at_its_rate() {
        let limiter = Limiter::new(240); // 4 a second, bursts of 60
        for _ in 0..60 {
            assert!(limiter.take("a").is_ok());
        }
        let wait = limiter.take("a").unwrap_err();
        assert!(wait > Duration::from_millis(200) && wait <= Duration::from_millis(250), "{wait:?}");
        assert!(limiter.take("b").is_ok(), "keys have buckets of their own");
    }

    #[test]
    fn failures_are_counted_in_a_sliding_minute_per_source() {
        let failures = Failures::new(3);
        assert_eq!(failures.waiting("a"), None);
        for _ in 0..3 {
            assert_eq!(failures.fail("a"), Failed::Counted);
        }
        let Failed::OverLimit { wait, first: true } = failures.fail("a") else { panic!("the 4th failure is over the limit") };
        assert!(wait > Duration::from_secs(59) && wait <= FAILURE_WINDOW, "{wait:?}");
        assert!(matches!(failures.fail("a"), Failed::OverLimit { first: false, .. }), "told once");
        assert!(failures.waiting("a").is_some());
        assert_eq!(failures.fail("b"), Failed::Counted, "sources are counted apart");
        // A minute on, the old failures are forgotten.
        {
            let mut sources = failures.sources.lock().unwrap();
            let a = sources.get_mut("a").unwrap();
            for at in a.failures.iter_mut() {
                *at -= FAILURE_WINDOW;
            }
        }
        assert_eq!(failures.waiting("a"), None);
        assert_eq!(failures.fail("a"), Failed::Counted);
    }

    #[test]
    fn header_text_is_quoted() {
        assert_eq!(quoted("a \"b\" \\ é\n"), "a \\\"b\\\" \\\\ ");
    }
}
