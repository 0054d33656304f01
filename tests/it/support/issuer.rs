//! A tiny OAuth authorization server for tests, on `127.0.0.1:0`: it serves its metadata
//! (RFC 8414, or OpenID discovery) and a JWKS made from the test keys in `tests/fixtures/auth`,
//! replaces that key set on [`TestIssuer::rotate`], and counts the JWKS fetches. It also mints
//! tokens: good ones with RS256 and ES256, and the forgeries a verifier must refuse (`alg: none`,
//! HS256 keyed with the RSA public key). It issues nothing over HTTP: tests mint tokens directly.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use data_encoding::BASE64URL_NOPAD;
use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// The test keys, each with its fixed `kid`. Public knowledge: never trust them outside tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestKey {
    Rsa1,
    Rsa2,
    Ec1,
    Ec2,
}

impl TestKey {
    pub fn kid(self) -> &'static str {
        match self {
            TestKey::Rsa1 => "rsa-1",
            TestKey::Rsa2 => "rsa-2",
            TestKey::Ec1 => "ec-1",
            TestKey::Ec2 => "ec-2",
        }
    }

    /// The algorithm its JWK names: RS256 for the RSA keys, ES256 for the P-256 ones.
    pub fn alg(self) -> Algorithm {
        match self {
            TestKey::Rsa1 | TestKey::Rsa2 => Algorithm::RS256,
            TestKey::Ec1 | TestKey::Ec2 => Algorithm::ES256,
        }
    }

    fn encoding(self) -> EncodingKey {
        match self {
            TestKey::Rsa1 => EncodingKey::from_rsa_pem(include_bytes!("../../fixtures/auth/rsa-1.pem")),
            TestKey::Rsa2 => EncodingKey::from_rsa_pem(include_bytes!("../../fixtures/auth/rsa-2.pem")),
            TestKey::Ec1 => EncodingKey::from_ec_pem(include_bytes!("../../fixtures/auth/ec-1.pem")),
            TestKey::Ec2 => EncodingKey::from_ec_pem(include_bytes!("../../fixtures/auth/ec-2.pem")),
        }
        .unwrap()
    }

    /// Its public half as the JWKS serves it: `kid`, `use: sig` and `alg`.
    pub fn jwk(self) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&self.encoding(), self.alg()).unwrap();
        jwk.common.key_id = Some(self.kid().into());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        jwk
    }
}

/// Where the issuer publishes its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WellKnown {
    /// RFC 8414: `/.well-known/oauth-authorization-server`, inserted before the issuer's path.
    OAuth,
    /// OpenID Connect Discovery: `/.well-known/openid-configuration`, appended to the issuer's path.
    OpenId,
}

struct Served {
    metadata: String,
    keys: Mutex<Vec<TestKey>>,
    jwks_fetches: AtomicUsize,
}

/// A running test issuer; it stops when dropped.
pub struct TestIssuer {
    url: String,
    served: Arc<Served>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl TestIssuer {
    /// An issuer at `http://127.0.0.1:<port>` with RFC 8414 metadata, serving `rsa-1` and `ec-1`.
    pub async fn start() -> TestIssuer {
        TestIssuer::start_at("", WellKnown::OAuth).await
    }

    /// An issuer whose identifier has `path` (empty, or like `/tenant`), with its metadata where
    /// `well_known` says.
    pub async fn start_at(path: &str, well_known: WellKnown) -> TestIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let url = format!("{origin}{path}");
        let metadata = json!({
            "issuer": url,
            "jwks_uri": format!("{url}/jwks"),
            "response_types_supported": ["code"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        });
        let served = Arc::new(Served {
            metadata: metadata.to_string(),
            keys: Mutex::new(vec![TestKey::Rsa1, TestKey::Ec1]),
            jwks_fetches: AtomicUsize::new(0),
        });
        let metadata_path = match well_known {
            WellKnown::OAuth => format!("/.well-known/oauth-authorization-server{path}"),
            WellKnown::OpenId => format!("{path}/.well-known/openid-configuration"),
        };
        let app = Router::new()
            .route(&metadata_path, get(|State(s): State<Arc<Served>>| async move { ([(CONTENT_TYPE, "application/json")], s.metadata.clone()) }))
            .route(&format!("{path}/jwks"), get(jwks))
            .with_state(served.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        TestIssuer { url, served, server }
    }

    /// The issuer identifier, as the metadata and the tokens' `iss` spell it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves `keys` from now on, in place of the set served so far.
    pub fn rotate(&self, keys: &[TestKey]) {
        *self.served.keys.lock().unwrap() = keys.to_vec();
    }

    /// How many times the JWKS has been fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.served.jwks_fetches.load(Ordering::SeqCst)
    }

    /// Good claims for `resource`: this issuer, `sub`, `scope`, issued now and valid for 5 minutes.
    pub fn claims(&self, resource: &str, sub: &str, scope: &str) -> Value {
        let now = now();
        json!({"iss": self.url, "aud": resource, "sub": sub, "scope": scope, "iat": now, "exp": now + 300})
    }

    /// `claims` signed with RS256 by `rsa-1`.
    pub fn mint_rs256(&self, claims: &Value) -> String {
        mint(TestKey::Rsa1, claims)
    }

    /// `claims` signed with ES256 by `ec-1`.
    pub fn mint_es256(&self, claims: &Value) -> String {
        mint(TestKey::Ec1, claims)
    }
}

/// Now, in seconds since the epoch (for `exp`, `nbf` and `iat`).
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// `claims` signed by `key` with its algorithm, naming its `kid`.
pub fn mint(key: TestKey, claims: &Value) -> String {
    mint_as(key.alg(), key, key.kid(), claims)
}

/// `claims` signed by `key` with `alg`, whatever `kid` the header should name.
pub fn mint_as(alg: Algorithm, key: TestKey, kid: &str, claims: &Value) -> String {
    let header = Header { kid: Some(kid.into()), ..Header::new(alg) };
    jsonwebtoken::encode(&header, claims, &key.encoding()).unwrap()
}

/// An unsigned token: `alg: none` and an empty signature.
pub fn mint_alg_none(claims: &Value) -> String {
    let header = json!({"alg": "none", "typ": "JWT", "kid": TestKey::Rsa1.kid()});
    format!("{}.{}.", encode_part(&header), encode_part(claims))
}

/// The key-confusion forgery: HS256 keyed with `rsa-1`'s public key PEM, which anyone can read,
/// naming `rsa-1`, for a verifier that would take the key's bytes as an HMAC secret.
pub fn mint_hs256_with_public_key(claims: &Value) -> String {
    let secret = include_bytes!("../../fixtures/auth/rsa-1.pub.pem");
    let header = Header { kid: Some(TestKey::Rsa1.kid().into()), ..Header::new(Algorithm::HS256) };
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret).unwrap()).unwrap()
}

fn encode_part(value: &Value) -> String {
    BASE64URL_NOPAD.encode(value.to_string().as_bytes())
}

async fn jwks(State(served): State<Arc<Served>>) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    served.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys = served.keys.lock().unwrap().iter().map(|k| k.jwk()).collect();
    ([(CONTENT_TYPE, "application/json")], serde_json::to_string(&JwkSet { keys }).unwrap())
}
