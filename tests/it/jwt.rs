//! The OAuth access-token verifier (`studioflow::auth::jwt`) against a test issuer on
//! `127.0.0.1:0`: good RS256 and ES256 tokens, every claim and header a token can get wrong, the
//! forgeries (`alg: none`, HS256 keyed with the public key), key rotation with its rate-limited
//! refresh, discovery under a path and through OpenID, an issuer that is down or misnamed, and an
//! https issuer whose certificate nobody trusts.

use crate::support::issuer::{mint, mint_alg_none, mint_as, mint_hs256_with_public_key, now, TestIssuer, TestKey, WellKnown};
use jsonwebtoken::Algorithm;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use studioflow::auth::jwt::{IssuerConfig, Rejection, Verifier};
use studioflow::auth::{Principal, Scope, Scopes};

/// This server's resource URL, as `aud` must name it.
const RESOURCE: &str = "http://127.0.0.1:8700/mcp";

fn verifier(issuer: &TestIssuer) -> Verifier {
    Verifier::new(IssuerConfig::new(issuer.url(), RESOURCE)).unwrap()
}

/// The reason a token was refused as invalid; fails on anything else.
fn invalid(result: Result<Principal, Rejection>) -> String {
    match result {
        Err(Rejection::Invalid(reason)) => reason,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// `claims` with `changes` merged in (a `null` removes the claim).
fn with(mut claims: Value, changes: Value) -> Value {
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(name);
        } else {
            claims[name] = value.clone();
        }
    }
    claims
}

fn scopes(names: &[Scope]) -> Scopes {
    names.iter().copied().collect()
}

#[tokio::test]
async fn good_rs256_and_es256_tokens_name_their_subject_and_scopes() {
    let issuer = TestIssuer::start().await;
    let verifier = verifier(&issuer);
    let claims = issuer.claims(RESOURCE, "alice", "openid studio:read bookings:write");
    let expected = Principal::oauth("alice", scopes(&[Scope::StudioRead, Scope::BookingsWrite]));
    assert_eq!(verifier.verify(&issuer.mint_rs256(&claims)).await, Ok(expected.clone()));
    assert_eq!(verifier.verify(&issuer.mint_es256(&claims)).await, Ok(expected));
    assert_eq!(verifier.verify(&issuer.mint_rs256(&claims)).await.unwrap().id, "oauth:alice");
    assert_eq!(issuer.jwks_fetches(), 1, "the keys are fetched once and cached");
}

/// Issue 21 item 6: `scope` is the claim (RFC 9068); `scp` counts only when there is no `scope`,
/// and the two are never united.
#[tokio::test]
async fn scopes_come_from_scope_or_else_an_scp_list_and_may_be_none() {
    let issuer = TestIssuer::start().await;
    let verifier = verifier(&issuer);
    let base = issuer.claims(RESOURCE, "bob", "");
    let no_scope = with(base.clone(), json!({"scope": null}));
    // No scope at all is a valid token with no scopes: the front answers 403, not 401.
    assert_eq!(verifier.verify(&issuer.mint_rs256(&no_scope)).await, Ok(Principal::oauth("bob", Scopes::NONE)));
    let scp = with(no_scope, json!({"scp": ["reflow:apply", "other:thing"]}));
    assert_eq!(verifier.verify(&issuer.mint_rs256(&scp)).await.unwrap().scopes, scopes(&[Scope::ReflowApply]));
    let scp_text = with(base.clone(), json!({"scope": null, "scp": "studio:manage studio:read"}));
    assert_eq!(verifier.verify(&issuer.mint_rs256(&scp_text)).await.unwrap().scopes, scopes(&[Scope::StudioRead, Scope::StudioManage]));
    let both = with(base.clone(), json!({"scope": "studio:read", "scp": "studio:manage"}));
    assert_eq!(verifier.verify(&issuer.mint_rs256(&both)).await.unwrap().scopes, scopes(&[Scope::StudioRead]), "scope wins; scp is not added");
    let both = with(base.clone(), json!({"scope": "studio:read", "scp": ["bookings:write"]}));
    assert_eq!(verifier.verify(&issuer.mint_rs256(&both)).await.unwrap().scopes, scopes(&[Scope::StudioRead]));
    // An empty `scope` is a scope claim that grants nothing: `scp` does not stand in for it.
    let empty = with(base, json!({"scope": "", "scp": ["bookings:write"]}));
    assert_eq!(verifier.verify(&issuer.mint_rs256(&empty)).await.unwrap().scopes, Scopes::NONE);
}

#[tokio::test]
async fn exp_is_required_and_nbf_honoured_with_the_leeway() {
    let issuer = TestIssuer::start().await;
    let verifier = verifier(&issuer);
    let claims = issuer.claims(RESOURCE, "alice", "studio:read");
    let token = |changes: Value| issuer.mint_rs256(&with(claims.clone(), changes));
    let now = now();
    assert!(invalid(verifier.verify(&token(json!({"exp": now - 120}))).await).contains("expired"));
    assert!(verifier.verify(&token(json!({"exp": now - 30}))).await.is_ok(), "within the 60 s leeway");
    assert!(invalid(verifier.verify(&token(json!({"exp": null}))).await).contains("no exp claim"));
    assert!(invalid(verifier.verify(&token(json!({"exp": "tomorrow"}))).await).contains("exp"));
    assert!(invalid(verifier.verify(&token(json!({"nbf": now + 300}))).await).contains("not valid yet"));
    assert!(verifier.verify(&token(json!({"nbf": now + 30}))).await.is_ok(), "within the 60 s leeway");
}

#[tokio::test]
async fn the_issuer_audience_and_subject_must_be_right() {
    let issuer = TestIssuer::start().await;
    let verifier = verifier(&issuer);
    let claims = issuer.claims(RESOURCE, "alice", "studio:read");
    let token = |changes: Value| issuer.mint_rs256(&with(claims.clone(), changes));
    assert!(invalid(verifier.verify(&token(json!({"iss": "https://other.example"}))).await).contains("iss"));
    assert!(invalid(verifier.verify(&token(json!({"iss": null}))).await).contains("no iss claim"));
    let other = invalid(verifier.verify(&token(json!({"aud": "https://other.example/mcp"}))).await);
    assert!(other.contains("another audience") && other.contains(RESOURCE), "{other}");
    assert!(invalid(verifier.verify(&token(json!({"aud": ["https://other.example/mcp"]}))).await).contains("another audience"));
    assert!(invalid(verifier.verify(&token(json!({"aud": null}))).await).contains("no aud claim"));
    assert!(verifier.verify(&token(json!({"aud": ["https://other.example/mcp", RESOURCE]}))).await.is_ok());
    assert!(invalid(verifier.verify(&token(json!({"sub": null}))).await).contains("sub"));
    assert!(invalid(verifier.verify(&token(json!({"sub": ""}))).await).contains("sub"));
}

#[tokio::test]
async fn forged_and_mismatched_tokens_are_refused() {
    let issuer = TestIssuer::start().await;
    let verifier = verifier(&issuer);
    let claims = issuer.claims(RESOURCE, "mallory", "studio:read reflow:apply");
    let none = invalid(verifier.verify(&mint_alg_none(&claims)).await);
    assert!(none.contains("\"none\" is not accepted"), "{none}");
    let hmac = invalid(verifier.verify(&mint_hs256_with_public_key(&claims)).await);
    assert!(hmac.contains("\"HS256\" is not accepted"), "{hmac}");
    // An RSA signature naming the EC key, and an EC one naming the RSA key.
    let mismatch = invalid(verifier.verify(&mint_as(Algorithm::RS256, TestKey::Rsa1, "ec-1", &claims)).await);
    assert!(mismatch.contains("RS256") && mismatch.contains("ec-1"), "{mismatch}");
    let mismatch = invalid(verifier.verify(&mint_as(Algorithm::ES256, TestKey::Ec1, "rsa-1", &claims)).await);
    assert!(mismatch.contains("ES256") && mismatch.contains("rsa-1"), "{mismatch}");
    // The key's JWK says RS256: a PS256 token under it is refused even though the key is RSA.
    assert!(invalid(verifier.verify(&mint_as(Algorithm::PS256, TestKey::Rsa1, "rsa-1", &claims)).await).contains("rsa-1"));
    // Signed by another key that claims the kid of a served one.
    let forged = invalid(verifier.verify(&mint_as(Algorithm::RS256, TestKey::Rsa2, "rsa-1", &claims)).await);
    assert!(forged.contains("signature"), "{forged}");
    let token = issuer.mint_rs256(&claims);
    let (head, _) = token.rsplit_once('.').unwrap();
    assert!(invalid(verifier.verify(&format!("{head}.AAAA")).await).contains("signature"));
    assert!(invalid(verifier.verify("not a token").await).contains("well-formed"));
    assert!(invalid(verifier.verify("").await).contains("well-formed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kid_refreshes_the_keys_at_most_once_per_min_refresh() {
    let issuer = TestIssuer::start().await;
    let min_refresh = Duration::from_millis(700);
    let verifier = Arc::new(Verifier::new(IssuerConfig { min_refresh, ..IssuerConfig::new(issuer.url(), RESOURCE) }).unwrap());
    let claims = issuer.claims(RESOURCE, "alice", "studio:read");
    let old = issuer.mint_rs256(&claims);
    let new = mint(TestKey::Rsa2, &claims);
    assert!(verifier.verify(&old).await.is_ok());
    assert_eq!(issuer.jwks_fetches(), 1);

    // Too soon after the first fetch to fetch again: refused as unknown, nothing fetched.
    assert!(invalid(verifier.verify(&new).await).contains("no key \"rsa-2\""));
    assert_eq!(issuer.jwks_fetches(), 1);
    // Once min_refresh has passed, an unknown kid fetches again (the issuer has not rotated yet).
    tokio::time::sleep(min_refresh).await;
    assert!(invalid(verifier.verify(&new).await).contains("no key \"rsa-2\""));
    assert_eq!(issuer.jwks_fetches(), 2);

    // The issuer rotates; a flood of unknown kids right after fetches nothing.
    issuer.rotate(&[TestKey::Rsa2, TestKey::Ec2]);
    let flood = concurrently(&verifier, (0..40).map(|i| mint_as(Algorithm::ES256, TestKey::Ec1, &format!("guess-{i}"), &claims)).collect()).await;
    assert!(flood.iter().all(|r| matches!(r, Err(Rejection::Invalid(_)))), "{flood:?}");
    assert_eq!(issuer.jwks_fetches(), 2, "rate-limited: no fetch within min_refresh");

    // After min_refresh, many verifications of the new key at once share one fetch.
    tokio::time::sleep(min_refresh).await;
    let results = concurrently(&verifier, vec![new.clone(); 20]).await;
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    assert_eq!(issuer.jwks_fetches(), 3, "one fetch for all the concurrent verifications");
    // The new set also has ec-2, without a fetch; the old key is gone.
    assert!(verifier.verify(&mint(TestKey::Ec2, &claims)).await.is_ok());
    assert!(invalid(verifier.verify(&old).await).contains("no key \"rsa-1\""));
    assert_eq!(issuer.jwks_fetches(), 3);
}

/// Verifies every token at once, on the runtime's threads.
async fn concurrently(verifier: &Arc<Verifier>, tokens: Vec<String>) -> Vec<Result<Principal, Rejection>> {
    let mut tasks = tokio::task::JoinSet::new();
    for token in tokens {
        let verifier = verifier.clone();
        tasks.spawn(async move { verifier.verify(&token).await });
    }
    tasks.join_all().await
}

#[tokio::test]
async fn metadata_is_found_under_a_path_and_through_openid() {
    for well_known in [WellKnown::OAuth, WellKnown::OpenId] {
        let issuer = TestIssuer::start_at("/tenant/7", well_known).await;
        let verifier = verifier(&issuer);
        let token = issuer.mint_es256(&issuer.claims(RESOURCE, "carol", "studio:manage"));
        assert_eq!(verifier.verify(&token).await.map(|p| p.scopes), Ok(scopes(&[Scope::StudioManage])), "{well_known:?}");
    }
}

#[tokio::test]
async fn an_issuer_that_is_down_or_misnamed_makes_tokens_unverifiable() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = Verifier::new(IssuerConfig::new(format!("http://127.0.0.1:{port}"), RESOURCE)).unwrap();
    let issuer = TestIssuer::start().await;
    let token = issuer.mint_rs256(&issuer.claims(RESOURCE, "alice", "studio:read"));
    for _ in 0..2 {
        // The second try is within min_refresh: the same failure, without a fetch.
        match down.verify(&token).await {
            Err(Rejection::Unavailable(reason)) => assert!(reason.contains(&port.to_string()), "{reason}"),
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }

    // The same issuer under another name: its metadata names the issuer it really is.
    let misnamed_url = issuer.url().replace("127.0.0.1", "localhost");
    let misnamed = Verifier::new(IssuerConfig::new(misnamed_url, RESOURCE)).unwrap();
    match misnamed.verify(&token).await {
        Err(Rejection::Unavailable(reason)) => assert!(reason.contains("--oauth-issuer"), "{reason}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert_eq!(issuer.jwks_fetches(), 0, "a misnamed issuer's keys are never fetched");

    // The issuer stops after its keys were cached: cached keys still verify.
    let verifier = verifier(&issuer);
    assert!(verifier.verify(&token).await.is_ok());
    drop(issuer);
    assert!(verifier.verify(&token).await.is_ok());
}

#[tokio::test]
async fn an_https_issuer_is_reached_over_tls_and_its_certificate_checked() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    // A TLS server on 127.0.0.1 whose certificate is self-signed, so no root trusts it.
    let cert = CertificateDer::from_pem_slice(include_bytes!("../fixtures/auth/tls-cert.pem")).unwrap();
    let key = PrivateKeyDer::from_pem_slice(include_bytes!("../fixtures/auth/tls-key.pem")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handshakes = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut tls = rustls::ServerConnection::new(Arc::new(config)).unwrap();
        // The client gives up once it has read the certificate.
        tls.complete_io(&mut socket).is_err()
    });
    let verifier = Verifier::new(IssuerConfig::new(format!("https://127.0.0.1:{port}"), RESOURCE)).unwrap();
    match verifier.verify(&mint(TestKey::Rsa1, &json!({}))).await {
        Err(Rejection::Unavailable(reason)) => assert!(reason.contains("certificate"), "{reason}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(handshakes.join().unwrap(), "the handshake was refused by the client");
}

#[tokio::test]
async fn a_key_the_issuer_withdrew_stops_working_within_max_age() {
    let issuer = TestIssuer::start().await;
    let max_age = Duration::from_millis(400);
    let config = IssuerConfig { min_refresh: Duration::ZERO, max_age, ..IssuerConfig::new(issuer.url(), RESOURCE) };
    let verifier = Verifier::new(config).unwrap();
    let claims = issuer.claims(RESOURCE, "alice", "studio:read");
    let withdrawn = issuer.mint_rs256(&claims);
    assert!(verifier.verify(&withdrawn).await.is_ok());
    // The issuer withdraws rsa-1; within max_age the cached key still serves, without a fetch.
    issuer.rotate(&[TestKey::Rsa2, TestKey::Ec1]);
    assert!(verifier.verify(&withdrawn).await.is_ok());
    assert_eq!(issuer.jwks_fetches(), 1);
    // After it, the keys are asked for again and the withdrawn key is refused.
    tokio::time::sleep(max_age).await;
    assert!(invalid(verifier.verify(&withdrawn).await).contains("no key \"rsa-1\""));
    assert!(verifier.verify(&mint(TestKey::Rsa2, &claims)).await.is_ok());
    // An issuer that is down leaves the cached keys serving a while longer.
    let ec = issuer.mint_es256(&claims);
    tokio::time::sleep(max_age).await;
    drop(issuer);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(verifier.verify(&ec).await.is_ok());
}
