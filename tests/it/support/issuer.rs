//! A tiny OAuth authorization server for tests, on `127.0.0.1:0`: it serves its metadata
//! (RFC 8414, or OpenID discovery) and a JWKS made from the test keys in `tests/fixtures/auth`,
//! replaces that key set on [`TestIssuer::rotate`], and counts the JWKS fetches. It also mints
//! tokens: good ones with RS256 and ES256, and the forgeries a verifier must refuse (`alg: none`,
//! HS256 keyed with the RSA public key). It issues nothing over HTTP: tests mint tokens directly.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use data_encoding::{BASE64, BASE64URL_NOPAD};
use jsonwebtoken::Algorithm;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents};
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

/// A test key's private half, as ring signs with it.
enum Signer {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
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

    fn signer(self) -> Signer {
        let pem = match self {
            TestKey::Rsa1 => include_str!("../../fixtures/auth/rsa-1.pem"),
            TestKey::Rsa2 => include_str!("../../fixtures/auth/rsa-2.pem"),
            TestKey::Ec1 => include_str!("../../fixtures/auth/ec-1.pem"),
            TestKey::Ec2 => include_str!("../../fixtures/auth/ec-2.pem"),
        };
        let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
        let pkcs8 = BASE64.decode(body.as_bytes()).unwrap();
        match self {
            TestKey::Rsa1 | TestKey::Rsa2 => Signer::Rsa(RsaKeyPair::from_pkcs8(&pkcs8).unwrap()),
            TestKey::Ec1 | TestKey::Ec2 => Signer::Ec(
                EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &SystemRandom::new()).unwrap(),
            ),
        }
    }

    /// Its public half as the JWKS serves it, with `kid`, `use: sig` and `alg`.
    pub fn jwk(self) -> Value {
        let common = json!({"kid": self.kid(), "use": "sig", "alg": format!("{:?}", self.alg())});
        let specific = match self.signer() {
            Signer::Rsa(pair) => {
                let public: RsaPublicKeyComponents<Vec<u8>> = pair.public().into();
                json!({"kty": "RSA", "n": BASE64URL_NOPAD.encode(&public.n), "e": BASE64URL_NOPAD.encode(&public.e)})
            }
            Signer::Ec(pair) => {
                // An uncompressed point: 0x04, then x and y, 32 bytes each.
                let point = pair.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "x": BASE64URL_NOPAD.encode(&point[1..33]), "y": BASE64URL_NOPAD.encode(&point[33..])})
            }
        };
        let mut jwk = common;
        jwk.as_object_mut().unwrap().extend(specific.as_object().unwrap().clone());
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

/// `claims` signed by `key` with `alg` (RS256 or PS256 for an RSA key, ES256 for an EC one),
/// whatever `kid` the header should name.
pub fn mint_as(alg: Algorithm, key: TestKey, kid: &str, claims: &Value) -> String {
    let input = signing_input(&json!({"alg": format!("{alg:?}"), "typ": "JWT", "kid": kid}), claims);
    let rng = SystemRandom::new();
    let signature = match (alg, key.signer()) {
        (Algorithm::RS256 | Algorithm::PS256, Signer::Rsa(pair)) => {
            let padding: &dyn signature::RsaEncoding =
                if alg == Algorithm::RS256 { &signature::RSA_PKCS1_SHA256 } else { &signature::RSA_PSS_SHA256 };
            let mut signature = vec![0; pair.public().modulus_len()];
            pair.sign(padding, &rng, input.as_bytes(), &mut signature).unwrap();
            signature
        }
        (Algorithm::ES256, Signer::Ec(pair)) => pair.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
        _ => panic!("the test issuer cannot sign {alg:?} with {key:?}"),
    };
    format!("{input}.{}", BASE64URL_NOPAD.encode(&signature))
}

/// An unsigned token: `alg: none` and an empty signature.
pub fn mint_alg_none(claims: &Value) -> String {
    let input = signing_input(&json!({"alg": "none", "typ": "JWT", "kid": TestKey::Rsa1.kid()}), claims);
    format!("{input}.")
}

/// The key-confusion forgery: HS256 keyed with `rsa-1`'s public key PEM, which anyone can read,
/// naming `rsa-1`, for a verifier that would take the key's bytes as an HMAC secret.
pub fn mint_hs256_with_public_key(claims: &Value) -> String {
    let secret = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, include_bytes!("../../fixtures/auth/rsa-1.pub.pem"));
    let input = signing_input(&json!({"alg": "HS256", "typ": "JWT", "kid": TestKey::Rsa1.kid()}), claims);
    let tag = ring::hmac::sign(&secret, input.as_bytes());
    format!("{input}.{}", BASE64URL_NOPAD.encode(tag.as_ref()))
}

/// `header.claims`, each part base64url JSON: what a JWS signs.
fn signing_input(header: &Value, claims: &Value) -> String {
    format!("{}.{}", BASE64URL_NOPAD.encode(header.to_string().as_bytes()), BASE64URL_NOPAD.encode(claims.to_string().as_bytes()))
}

async fn jwks(State(served): State<Arc<Served>>) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    served.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys: Vec<Value> = served.keys.lock().unwrap().iter().map(|k| k.jwk()).collect();
    ([(CONTENT_TYPE, "application/json")], json!({"keys": keys}).to_string())
}
