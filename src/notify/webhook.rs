//! Webhooks to the Standard Webhooks specification: the signing secret (`whsec_` and base64), the
//! signature (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`), the check of an endpoint's
//! URL, and one attempt at sending (15 s, at most 64 KB of answer read, no redirects, addresses
//! resolved by a resolver that refuses loopback, private and link-local ones unless allowed).
//! It knows nothing of the outbox's rows: the worker (`mod.rs`) decides what an answer means.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use crate::net::PublicOnly;

/// How long one attempt may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(15);
/// How much of an answer is read.
pub const MAX_ANSWER: usize = 64 * 1024;
/// The prefix of a signing secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// A new signing secret: `whsec_` and 24 random bytes in base64.
pub fn new_secret() -> Result<String, getrandom::Error> {
    let mut key = [0u8; 24];
    getrandom::fill(&mut key)?;
    Ok(format!("{SECRET_PREFIX}{}", data_encoding::BASE64.encode(&key)))
}

/// The `webhook-signature` header's value for `id`, `timestamp` (unix seconds) and `body`, or why
/// the secret cannot sign.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, String> {
    let key = secret.strip_prefix(SECRET_PREFIX).ok_or("the secret does not start with whsec_")?;
    let key = data_encoding::BASE64.decode(key.as_bytes()).map_err(|_| "the secret is not base64 after whsec_")?;
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).map_err(|_| "the secret has no usable key")?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!("v1,{}", data_encoding::BASE64.encode(&mac.finalize().into_bytes())))
}

/// Checks an endpoint's URL as given: absolute, `https` (or `http` when private addresses are
/// allowed, for a receiver on the studio's own network), a host, no user or password, no
/// fragment. With `resolve`, its host's addresses are looked up too and a private one is refused
/// unless `allow_private`. The refusal says what to change.
pub fn check_url(url: &str, allow_private: bool, resolve: bool) -> Result<reqwest::Url, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("url {url:?} is not an absolute URL ({e}); give one such as https://example.com/hooks/studioflow"))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_private => {}
        "http" => return Err("url must use https (plain http is allowed only to private addresses, with `serve --webhooks-to-private`)".into()),
        other => return Err(format!("url must use https, not {other}")),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url must not hold a user name or password: the signature authenticates studioflow to the receiver".into());
    }
    if parsed.fragment().is_some() {
        return Err("url must not have a #fragment".into());
    }
    let Some(host) = parsed.host_str() else { return Err("url has no host".into()) };
    if allow_private {
        return Ok(parsed);
    }
    if crate::net::names_private(host) {
        return Err(private_refusal(host));
    }
    if host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok() {
        return Ok(parsed);
    }
    if resolve {
        use std::net::ToSocketAddrs;
        let port = parsed.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().map_err(|e| format!("url's host {host} cannot be resolved: {e}"))?.collect();
        if addrs.iter().any(|a| crate::net::is_private(a.ip())) {
            return Err(private_refusal(host));
        }
    }
    Ok(parsed)
}

/// The refusal of a private host for a webhook.
fn private_refusal(host: &str) -> String {
    crate::net::private_refusal(&format!("url's host {host}"), "webhooks", "--webhooks-to-private")
}

/// The resolver deliveries use unless private addresses are allowed.
const PUBLIC_ONLY: PublicOnly = PublicOnly { what: "webhooks", flag: "--webhooks-to-private" };

/// The HTTP client every delivery uses: `timeout` ([`TIMEOUT`] but in tests), no redirects, and
/// (unless `allow_private`) the resolver that refuses private addresses.
pub fn client(allow_private: bool, timeout: Duration) -> Result<reqwest::Client, String> {
    crate::tls::install();
    let mut builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("studioflow/", env!("CARGO_PKG_VERSION")));
    if !allow_private {
        builder = builder.dns_resolver(std::sync::Arc::new(PUBLIC_ONLY));
    }
    builder.build().map_err(|e| format!("cannot make the HTTP client that delivers webhooks: {e}"))
}

/// How one attempt went.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The HTTP status, when the receiver answered.
    pub status: Option<u16>,
    /// What it said (at most [`MAX_ANSWER`] bytes read), or what went wrong.
    pub text: String,
    /// Seconds the receiver asked to wait (`Retry-After` on a 429 or 503).
    pub retry_after: Option<u64>,
}

/// Sends `body` to `url`, signed for message `id` now with each of `secrets` (space-separated
/// signatures, as the specification has them during a rotation). Never fails: a failure is an
/// answer without a status, saying what went wrong (never the body or a secret).
pub async fn send(client: &reqwest::Client, url: &str, allow_private: bool, secrets: &[String], id: &str, body: &str) -> Answer {
    let failed = |text: String| Answer { status: None, text, retry_after: None };
    let parsed = match check_url(url, allow_private, false) {
        Ok(parsed) => parsed,
        Err(e) => return failed(e),
    };
    let timestamp = chrono::Utc::now().timestamp();
    let signature = match secrets.iter().map(|secret| sign(secret, id, timestamp, body.as_bytes())).collect::<Result<Vec<_>, _>>() {
        Ok(s) => s.join(" "),
        Err(e) => return failed(e),
    };
    let request = client
        .post(parsed)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body.to_owned());
    let mut response = match request.send().await {
        Ok(r) => r,
        Err(e) => return failed(describe(&e)),
    };
    let status = response.status().as_u16();
    let retry_after = if status == 429 || status == 503 {
        response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(retry_after_seconds)
    } else {
        None
    };
    let mut read = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_ANSWER - read.len();
                read.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if read.len() >= MAX_ANSWER {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                read.extend_from_slice(format!(" [reading the answer failed: {}]", describe(&e)).as_bytes());
                break;
            }
        }
    }
    Answer { status: Some(status), text: String::from_utf8_lossy(&read).into_owned(), retry_after }
}

/// `Retry-After` in seconds: a number, or an HTTP date from now.
fn retry_after_seconds(value: &str) -> Option<u64> {
    if let Ok(n) = value.trim().parse::<u64>() {
        return Some(n);
    }
    let at = chrono::DateTime::parse_from_rfc2822(value.trim()).ok()?;
    Some((at.timestamp() - chrono::Utc::now().timestamp()).max(0) as u64)
}

/// An error and its causes on one line (no URL's query, no body: reqwest's errors hold neither).
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_redirect() {
        "redirected (redirects are not followed)"
    } else {
        "failed"
    };
    let mut text = kind.to_owned();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_specifications_example() {
        // The Standard Webhooks specification's test vector (its reference libraries' tests).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn private_addresses_are_refused_without_the_flag() {
        for url in ["https://127.0.0.1/x", "https://10.1.2.3/x", "https://192.168.0.1/x", "https://169.254.169.254/latest", "https://[::1]/x", "https://[fd00::1]/x", "https://localhost/x"] {
            let refusal = check_url(url, false, false).unwrap_err();
            assert!(refusal.contains("--webhooks-to-private"), "{url}: {refusal}");
            assert!(check_url(url, true, false).is_ok(), "{url} with the flag");
        }
        assert!(check_url("https://93.184.215.14/hook", false, false).is_ok());
        assert!(check_url("http://93.184.215.14/hook", false, false).unwrap_err().contains("https"));
        assert!(check_url("ftp://example.com/", true, false).is_err());
        assert!(check_url("https://user:pw@example.com/", false, false).unwrap_err().contains("password"));
        assert!(check_url("not a url", false, false).unwrap_err().contains("absolute URL"));
    }

    #[test]
    fn retry_after_reads_seconds() {
        assert_eq!(retry_after_seconds("1"), Some(1));
        assert_eq!(retry_after_seconds(" 120 "), Some(120));
        assert_eq!(retry_after_seconds("soon"), None);
    }
}
