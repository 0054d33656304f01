//! OAuth 2.1 access tokens (JWTs) from one issuer, checked as a resource server checks them.
//! The keys come from the issuer's metadata (RFC 8414, else OpenID discovery) and its JWKS; they
//! are cached, and fetched again when a token names a key the cache lacks, at most once per
//! `min_refresh`, one fetch shared by every verification that waits for it. A token passes when
//! an allowed asymmetric algorithm signed it with a key of the matching type, `iss` is the issuer,
//! `aud` names this server (RFC 8707), `exp` and `nbf` hold (with the leeway), and `sub` is there.
//! jsonwebtoken reads the keys and checks the claims; ring checks the signatures (RustCrypto's
//! P-256, jsonwebtoken's own backend, took 0.3 ms a signature here; ring takes 0.06 ms).
//! This module never logs or returns the token itself, and knows no HTTP status: the front maps a
//! [`Rejection`] to 401 or 503.

mod keys;
mod signature;

use super::{Principal, Scope, Scopes};
use keys::{Key, KeySet, Lookup};
use signature::install_ring;
use data_encoding::BASE64URL_NOPAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, Validation};
use reqwest::Url;
use serde::Deserialize;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// The algorithms a token may be signed with: asymmetric only. `none` and HMAC are absent, so a
/// token signed with the issuer's public key as an HMAC secret is refused before any key is read.
const ALLOWED: [(&str, Algorithm); 6] = [
    ("RS256", Algorithm::RS256),
    ("RS384", Algorithm::RS384),
    ("RS512", Algorithm::RS512),
    ("PS256", Algorithm::PS256),
    ("ES256", Algorithm::ES256),
    ("ES384", Algorithm::ES384),
];

/// How long one fetch of the metadata or the JWKS may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata document or JWKS read; an issuer's are a few kilobytes.
const MAX_DOCUMENT: usize = 256 * 1024;
/// The longest token looked at; anything longer is not one an issuer made for us.
const MAX_TOKEN: usize = 16 * 1024;

/// The issuer whose tokens are accepted, and this server as their audience.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerConfig {
    /// The issuer identifier, exactly as its metadata and its tokens' `iss` spell it.
    pub issuer: String,
    /// This server's resource URL (RFC 8707): a token's `aud` must name it.
    pub resource: String,
    /// How far `exp` and `nbf` may be off, for clocks that disagree.
    pub leeway: Duration,
    /// The least time between two fetches of the issuer's keys, so that tokens naming unknown
    /// keys cannot make us hammer the issuer.
    pub min_refresh: Duration,
    /// How long fetched keys are trusted without asking again: a key the issuer withdrew stops
    /// working within this long, even if no token names an unknown key meanwhile.
    pub max_age: Duration,
}

impl IssuerConfig {
    /// An issuer and resource with the default leeway (60 s), refresh interval (30 s) and key
    /// lifetime (10 minutes).
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> IssuerConfig {
        IssuerConfig {
            issuer: issuer.into(),
            resource: resource.into(),
            leeway: Duration::from_secs(60),
            min_refresh: Duration::from_secs(30),
            max_age: Duration::from_secs(600),
        }
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The token is not good (401 `invalid_token`): the reason, for logs and `error_description`.
    Invalid(String),
    /// The issuer's keys could not be fetched, so the token could not be checked (503).
    Unavailable(String),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Invalid(reason) => write!(f, "invalid token: {reason}"),
            Rejection::Unavailable(reason) => write!(f, "the issuer's keys are unavailable: {reason}"),
        }
    }
}

/// Checks access tokens from one issuer. Shared behind an `Arc` by the HTTP front.
pub struct Verifier {
    config: IssuerConfig,
    issuer_url: Url,
    /// One `Validation` per allowed algorithm: jsonwebtoken wants the key's family to match every
    /// algorithm a `Validation` lists, so each token is decoded with its own algorithm's.
    validations: Vec<(Algorithm, Validation)>,
    /// The cached keys. A std lock, held only to clone or replace the `Arc` (never across an
    /// `.await`), so the fast path is one uncontended read and a reference count.
    keys: RwLock<Arc<KeySet>>,
    /// Serialises fetches: a verification that needs fresh keys waits here, and finds the set
    /// another one just fetched instead of fetching again. A tokio lock: it is held across the fetch.
    fetching: tokio::sync::Mutex<FetchState>,
    client: reqwest::Client,
}

#[derive(Default)]
struct FetchState {
    /// When keys were last fetched (or tried), for the rate limit.
    attempted: Option<Instant>,
    /// Why the last try failed, given again to those the rate limit turns away.
    failure: Option<String>,
    /// From the metadata, once read; forgotten when a JWKS fetch fails, so the next try rediscovers.
    jwks_uri: Option<Url>,
}

/// The claims read beyond those jsonwebtoken checks.
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    /// The scopes granted (RFC 9068 section 2.2.3): space-separated.
    #[serde(default)]
    scope: Option<String>,
    /// Some issuers give scopes as `scp`, a list (or a string like `scope`): read only when the
    /// token has no `scope`.
    #[serde(default)]
    scp: Option<ScopeList>,
}

/// The scopes a token grants: its `scope` (RFC 9068), or, only when it has none, its `scp`.
/// Never the two together: a token whose `scope` says `studio:read` is read-only whatever else
/// it carries.
fn granted(claims: &Claims) -> Scopes {
    match (&claims.scope, &claims.scp) {
        (Some(scope), _) => Scopes::from_claim(scope),
        (None, Some(ScopeList::Text(text))) => Scopes::from_claim(text),
        (None, Some(ScopeList::List(names))) => names.iter().filter_map(|n| Scope::parse(n)).collect(),
        (None, None) => Scopes::NONE,
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeList {
    Text(String),
    List(Vec<String>),
}

/// The part of a JOSE header read before a key is chosen.
#[derive(Deserialize)]
struct JoseHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

/// The part of the issuer's metadata used (RFC 8414 section 2; OpenID discovery has the same).
#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    #[serde(default)]
    jwks_uri: Option<String>,
}

/// A JWKS whose keys are read one by one, so that one key we cannot use (an encryption key, an
/// unknown type) does not hide the others.
#[derive(Deserialize)]
struct JwksDocument {
    keys: Vec<serde_json::Value>,
}

impl Verifier {
    /// A verifier for `config`, after checking its URLs: the issuer must be https (http only on
    /// a loopback host), the resource http or https. Nothing is fetched until the first token.
    pub fn new(config: IssuerConfig) -> Result<Verifier, String> {
        let issuer_url = secure_url(&config.issuer, "--oauth-issuer")?;
        if issuer_url.query().is_some() || issuer_url.fragment().is_some() {
            return Err(format!("--oauth-issuer {:?} has a query or fragment, which an issuer identifier never has (RFC 8414): drop it", config.issuer));
        }
        let resource = Url::parse(&config.resource)
            .map_err(|e| format!("--resource {:?} is not a URL ({e}): give this server's URL, e.g. https://studio.example/mcp", config.resource))?;
        if !matches!(resource.scheme(), "https" | "http") || resource.host_str().is_none() {
            return Err(format!("--resource {:?} must be this server's http(s) URL, e.g. https://studio.example/mcp", config.resource));
        }
        if resource.fragment().is_some() {
            return Err(format!("--resource {:?} has a fragment, which a resource URL never has (RFC 8707): drop it", config.resource));
        }
        crate::tls::install();
        install_ring();
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot make an HTTP client to fetch the issuer's keys: {}", chain(&e)))?;
        let validations = ALLOWED.iter().map(|(_, alg)| (*alg, validation(&config, *alg))).collect();
        Ok(Verifier {
            config,
            issuer_url,
            validations,
            keys: RwLock::new(Arc::new(KeySet::default())),
            fetching: tokio::sync::Mutex::new(FetchState::default()),
            client,
        })
    }

    /// The principal a token names, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Principal, Rejection> {
        let (alg, kid) = read_header(token)?;
        let mut keys = self.snapshot();
        if keys.fetched.is_some_and(|at| at.elapsed() >= self.config.max_age) {
            // Old keys are asked for again; if the issuer cannot answer, they serve a while longer.
            if let Ok(fresh) = self.refresh(&keys).await {
                keys = fresh;
            }
        }
        let mut found = keys.find(kid.as_deref(), alg)?;
        if let Lookup::Missing = found {
            keys = self.refresh(&keys).await?;
            found = keys.find(kid.as_deref(), alg)?;
        }
        let Lookup::Found(index) = found else {
            return Err(Rejection::Invalid(match kid {
                Some(kid) => format!("the issuer has no key {}", quoted(&kid)),
                None => format!("the token names no key (kid), and the issuer has none for {}", allowed_name(alg).unwrap_or("?")),
            }));
        };
        let key = &keys.keys[index];
        if let Some(reason) = key.mismatch(alg) {
            return Err(Rejection::Invalid(reason));
        }
        let validation = self.validations.iter().find(|(a, _)| *a == alg).map(|(_, v)| v);
        let Some(validation) = validation else {
            return Err(Rejection::Invalid("the token's algorithm is not accepted".into()));
        };
        let data = jsonwebtoken::decode::<Claims>(token, &key.decoding, validation).map_err(|e| self.reason(e))?;
        let claims = data.claims;
        let scopes = granted(&claims);
        let subject = claims.sub.filter(|s| !s.is_empty()).ok_or_else(|| Rejection::Invalid("the token has no sub claim".into()))?;
        Ok(Principal::oauth(&subject, scopes))
    }

    fn snapshot(&self) -> Arc<KeySet> {
        self.keys.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Fetches the keys again, unless another verification did while this one waited, or the
    /// last fetch was less than `min_refresh` ago (then the keys as they are, or that fetch's
    /// failure). `seen` is the set the caller looked in.
    async fn refresh(&self, seen: &Arc<KeySet>) -> Result<Arc<KeySet>, Rejection> {
        let mut state = self.fetching.lock().await;
        let current = self.snapshot();
        if !Arc::ptr_eq(&current, seen) {
            return Ok(current);
        }
        if state.attempted.is_some_and(|at| at.elapsed() < self.config.min_refresh) {
            return match &state.failure {
                Some(failure) => Err(Rejection::Unavailable(failure.clone())),
                None => Ok(current),
            };
        }
        state.attempted = Some(Instant::now());
        match self.fetch_keys(&mut state.jwks_uri).await {
            Ok(keys) => {
                tracing::debug!(issuer = %self.config.issuer, keys = keys.len(), "fetched the issuer's keys");
                state.failure = None;
                let set = Arc::new(KeySet { keys, fetched: Some(Instant::now()) });
                *self.keys.write().unwrap_or_else(PoisonError::into_inner) = set.clone();
                Ok(set)
            }
            Err(failure) => {
                tracing::warn!(issuer = %self.config.issuer, error = %failure, "could not fetch the issuer's keys");
                state.failure = Some(failure.clone());
                Err(Rejection::Unavailable(failure))
            }
        }
    }

    async fn fetch_keys(&self, jwks_uri: &mut Option<Url>) -> Result<Vec<Key>, String> {
        let uri = match jwks_uri {
            Some(uri) => uri.clone(),
            None => jwks_uri.insert(self.discover().await?).clone(),
        };
        let body = match self.get(&uri).await {
            Ok(Some(body)) => body,
            Ok(None) => {
                *jwks_uri = None;
                return Err(format!("the issuer's jwks_uri {uri} answers with no key set"));
            }
            Err(e) => {
                *jwks_uri = None;
                return Err(e);
            }
        };
        let document: JwksDocument =
            serde_json::from_slice(&body).map_err(|e| format!("the JWKS at {uri} is not a JSON key set: {e}"))?;
        Ok(document
            .keys
            .into_iter()
            .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
            .filter_map(|jwk| Key::from_jwk(&jwk))
            .collect())
    }

    /// The `jwks_uri` from the first metadata document found (RFC 8414, then OpenID), after
    /// checking that it names our issuer.
    async fn discover(&self) -> Result<Url, String> {
        let candidates = metadata_urls(&self.issuer_url);
        for url in &candidates {
            let Some(body) = self.get(url).await? else { continue };
            let metadata: Metadata =
                serde_json::from_slice(&body).map_err(|e| format!("the issuer's metadata at {url} is not valid: {e}"))?;
            if metadata.issuer != self.config.issuer {
                return Err(format!(
                    "the metadata at {url} is for issuer {:?}, not {:?}: set --oauth-issuer to the issuer's exact identifier",
                    metadata.issuer, self.config.issuer
                ));
            }
            let jwks_uri = metadata.jwks_uri.ok_or_else(|| format!("the issuer's metadata at {url} has no jwks_uri"))?;
            return secure_url(&jwks_uri, "the issuer's jwks_uri");
        }
        let tried: Vec<String> = candidates.iter().map(Url::to_string).collect();
        Err(format!("the issuer publishes no metadata: tried {}", tried.join(", ")))
    }

    /// The body of a GET, `None` for a 4xx answer (a document that is not there), an error for
    /// anything else that is not a success, or a body over [`MAX_DOCUMENT`].
    async fn get(&self, url: &Url) -> Result<Option<Vec<u8>>, String> {
        let mut response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("fetching {url}: {}", chain(&e)))?;
        let status = response.status();
        if status.is_client_error() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("fetching {url}: HTTP {status}"));
        }
        if response.content_length().is_some_and(|n| n > MAX_DOCUMENT as u64) {
            return Err(format!("fetching {url}: the answer is larger than {MAX_DOCUMENT} bytes"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading {url}: {}", chain(&e)))? {
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(format!("fetching {url}: the answer is larger than {MAX_DOCUMENT} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Some(body))
    }

    /// A decoding failure in words, naming the claim and what was expected, never the token.
    fn reason(&self, error: jsonwebtoken::errors::Error) -> Rejection {
        let leeway = self.config.leeway.as_secs();
        Rejection::Invalid(match error.kind() {
            ErrorKind::InvalidSignature => "the signature does not verify with the issuer's key".into(),
            ErrorKind::ExpiredSignature => format!("the token has expired (exp is past, beyond a leeway of {leeway} s)"),
            ErrorKind::ImmatureSignature => format!("the token is not valid yet (nbf is ahead, beyond a leeway of {leeway} s)"),
            ErrorKind::InvalidIssuer => format!("the token's iss is not {}", self.config.issuer),
            ErrorKind::InvalidAudience => format!("the token is for another audience: its aud does not name {}", self.config.resource),
            ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
            ErrorKind::InvalidClaimFormat(claim) => format!("the token's {claim} claim is malformed"),
            ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit the key".into(),
            ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) | ErrorKind::InvalidToken => {
                "the token is not a well-formed JWT".into()
            }
            _ => format!("the token does not verify: {error}"),
        })
    }
}

/// What jsonwebtoken checks for one algorithm: `exp` (required), `nbf`, `iss`, `aud`, `sub`.
fn validation(config: &IssuerConfig, alg: Algorithm) -> Validation {
    let mut validation = Validation::new(alg);
    validation.leeway = config.leeway.as_secs();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_issuer(&[&config.issuer]);
    validation.set_audience(&[&config.resource]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation
}

/// The algorithm and key id of a compact JWS, checked against [`ALLOWED`].
fn read_header(token: &str) -> Result<(Algorithm, Option<String>), Rejection> {
    let malformed = || Rejection::Invalid("the token is not a well-formed JWT".into());
    if token.len() > MAX_TOKEN {
        return Err(Rejection::Invalid(format!("the token is longer than {MAX_TOKEN} bytes")));
    }
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(malformed());
    };
    let bytes = BASE64URL_NOPAD.decode(header.as_bytes()).map_err(|_| malformed())?;
    let header: JoseHeader = serde_json::from_slice(&bytes).map_err(|_| malformed())?;
    match ALLOWED.iter().find(|(name, _)| *name == header.alg) {
        Some((_, alg)) => Ok((*alg, header.kid)),
        None => Err(Rejection::Invalid(format!(
            "alg {} is not accepted: the issuer must sign with one of {}",
            quoted(&header.alg),
            ALLOWED.map(|(name, _)| name).join(", ")
        ))),
    }
}

fn allowed_name(alg: Algorithm) -> Option<&'static str> {
    ALLOWED.iter().find(|(_, a)| *a == alg).map(|(name, _)| *name)
}

/// A value from a token, quoted and cut short for a message.
fn quoted(text: &str) -> String {
    let cut: String = text.chars().take(64).collect();
    if cut.len() < text.len() { format!("{cut:?}…") } else { format!("{cut:?}") }
}

/// `text` as a URL that is https, or http on a loopback host; the error names `what`.
fn secure_url(text: &str, what: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{what} {text:?} is not a URL: {e}"))?;
    match url.scheme() {
        "https" if url.host_str().is_some() => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        _ => Err(format!(
            "{what} {text:?} must be an https URL (http only on a loopback host: 127.0.0.1, ::1 or localhost)"
        )),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some("localhost") | Some("[::1]") => true,
        Some(host) => host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// Where an issuer's metadata may be, in the order tried. RFC 8414 puts the well-known path
/// before the issuer's path; OpenID discovery is tried next, inserted the same way, then appended
/// to the path as OpenID Connect Discovery 1.0 says (the order the MCP authorization spec gives).
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |p: String| {
        let mut url = issuer.clone();
        url.set_path(&p);
        url
    };
    if path.is_empty() {
        vec![at("/.well-known/oauth-authorization-server".into()), at("/.well-known/openid-configuration".into())]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// An error and its sources, one after another (reqwest's own text leaves out the cause).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(issuer: &str, resource: &str) -> Result<Verifier, String> {
        Verifier::new(IssuerConfig::new(issuer, resource))
    }

    #[test]
    fn the_issuer_is_https_or_http_on_loopback() {
        let resource = "https://studio.example/mcp";
        for ok in ["https://auth.example", "https://auth.example/tenant/1", "http://127.0.0.1:8080", "http://localhost:9000/x", "http://[::1]:8080"] {
            assert!(new(ok, resource).is_ok(), "{ok} should be accepted");
        }
        let error = new("http://auth.example", resource).err().unwrap();
        assert!(error.contains("--oauth-issuer") && error.contains("https"), "{error}");
        assert!(new("http://10.0.0.1", resource).is_err());
        assert!(new("http://localhost.evil.example", resource).is_err());
        assert!(new("ftp://auth.example", resource).is_err());
        assert!(new("auth.example", resource).err().unwrap().contains("not a URL"));
        assert!(new("https://auth.example/?tenant=1", resource).err().unwrap().contains("query"));
    }

    #[test]
    fn the_resource_is_an_http_url_without_fragment() {
        let issuer = "https://auth.example";
        assert!(new(issuer, "http://127.0.0.1:3000/mcp").is_ok());
        assert!(new(issuer, "https://studio.example/mcp").is_ok());
        assert!(new(issuer, "studio").err().unwrap().contains("--resource"));
        assert!(new(issuer, "https://studio.example/mcp#x").err().unwrap().contains("fragment"));
        assert!(new(issuer, "mailto:a@b.example").is_err());
    }

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_openid_say() {
        let urls = |issuer: &str| metadata_urls(&Url::parse(issuer).unwrap()).iter().map(Url::to_string).collect::<Vec<_>>();
        assert_eq!(
            urls("https://auth.example"),
            ["https://auth.example/.well-known/oauth-authorization-server", "https://auth.example/.well-known/openid-configuration"]
        );
        assert_eq!(
            urls("https://auth.example/tenant/1/"),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant/1",
                "https://auth.example/.well-known/openid-configuration/tenant/1",
                "https://auth.example/tenant/1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_header_names_an_allowed_algorithm() {
        let token = |header: &str| format!("{}.e30.c2ln", BASE64URL_NOPAD.encode(header.as_bytes()));
        assert_eq!(read_header(&token(r#"{"alg":"ES256","kid":"k"}"#)), Ok((Algorithm::ES256, Some("k".into()))));
        for alg in ["none", "HS256", "EdDSA", "PS512"] {
            let Err(Rejection::Invalid(reason)) = read_header(&token(&format!(r#"{{"alg":"{alg}"}}"#))) else { panic!("{alg} accepted") };
            assert!(reason.contains(alg) && reason.contains("RS256"), "{reason}");
        }
        assert!(read_header("a.b").is_err());
        assert!(read_header(&format!("{}.e30.x.y", BASE64URL_NOPAD.encode(b"{\"alg\":\"RS256\"}"))).is_err());
    }
}
