//! Strict `Host` and `Origin`, read before anything else of a request: the DNS-rebinding guard.
//! A `Host` is exactly one header naming `host[:port]` with a port of 1 to 65535 (else 400, as
//! RFC 9112 asks); an `Origin` is `scheme://host[:port]` and nothing more, no user, no path
//! (else 403). Either must then be on its allow-list (else 403). Names compare without case.

use axum::http::{header, HeaderMap, StatusCode};

/// A host and its port, as a `Host` header or an origin names them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    /// Lower case; an IPv6 address keeps its brackets.
    host: String,
    port: Option<u16>,
}

/// Reads `host[:port]`: a registered name or IPv4 address, or an IPv6 address in brackets.
fn authority(text: &str) -> Option<Authority> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return None;
        }
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        (format!("[{}]", inside.to_ascii_lowercase()), port)
    } else {
        let (host, port) = match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        };
        let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
        if host.is_empty() || !host.chars().all(name_char) {
            return None;
        }
        (host.to_ascii_lowercase(), port)
    };
    let port = match port {
        None => None,
        Some(digits) => {
            if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            match digits.parse::<u16>() {
                Ok(0) | Err(_) => return None,
                Ok(port) => Some(port),
            }
        }
    };
    Some(Authority { host, port })
}

/// An origin: `scheme://host[:port]`, with no user, path, query or fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    authority: Authority,
}

fn origin(text: &str) -> Option<Origin> {
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    Some(Origin { scheme, authority: authority(rest)? })
}

impl Origin {
    /// The port the origin means: RFC 6454 leaves out the scheme's default.
    fn port(&self) -> u16 {
        self.authority.port.unwrap_or(if self.scheme == "https" { 443 } else { 80 })
    }
}

/// An allowed origin: exact, or `scheme://host:*` for any port.
#[derive(Debug, Clone)]
struct AllowedOrigin {
    origin: Origin,
    any_port: bool,
}

/// The allow-lists, read once when the server starts.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: Vec<Authority>,
    origins: Vec<AllowedOrigin>,
}

/// Why a request was turned away: its status and a line saying why.
pub type Refusal = (StatusCode, String);

impl Guard {
    /// Reads the allow-lists; an entry that is not a host or an origin is an error naming it.
    pub fn new(hosts: &[String], origins: &[String]) -> Result<Guard, String> {
        let hosts = hosts
            .iter()
            .map(|h| {
                // A bare IPv6 address (`::1`) is how people write it; a Host header brackets it.
                let text = match h.trim().parse::<std::net::Ipv6Addr>() {
                    Ok(ip) => format!("[{ip}]"),
                    Err(_) => h.trim().to_owned(),
                };
                authority(&text).ok_or_else(|| format!("{h:?} is not a host name with an optional :port"))
            })
            .collect::<Result<_, _>>()?;
        let origins = origins
            .iter()
            .map(|o| {
                let o = o.trim();
                let (text, any_port) = match o.strip_suffix(":*") {
                    Some(base) => (base, true),
                    None => (o, false),
                };
                match origin(text) {
                    Some(origin) if !(any_port && origin.authority.port.is_some()) => Ok(AllowedOrigin { origin, any_port }),
                    _ => Err(format!("{o:?} is not an origin such as http://localhost:3000 or http://localhost:*")),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Guard { hosts, origins })
    }

    /// Checks a request's `Host` and `Origin` headers.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        self.check_host(headers)?;
        self.check_origin(headers)
    }

    /// Checks a request's `Host` header alone: public documents (the resource's metadata) may be
    /// read from any origin, but only at a host this server answers to.
    pub fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return Err((StatusCode::BAD_REQUEST, "a request needs exactly one Host header".into()));
        };
        let host = host
            .to_str()
            .ok()
            .and_then(authority)
            .ok_or_else(|| (StatusCode::BAD_REQUEST, "the Host header is not host[:port] with a port of 1 to 65535".to_owned()))?;
        let host_allowed = self.hosts.iter().any(|a| a.host == host.host && (a.port.is_none() || a.port == host.port));
        if !host_allowed {
            return Err((StatusCode::FORBIDDEN, format!("Host {:?} is not allowed (see serve --allow-host)", host.host)));
        }
        Ok(())
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let mut origins = headers.get_all(header::ORIGIN).iter();
        match (origins.next(), origins.next()) {
            (None, _) => Ok(()),
            (Some(_), Some(_)) => Err((StatusCode::FORBIDDEN, "a request may carry one Origin header".into())),
            (Some(value), None) => {
                let Some(origin) = value.to_str().ok().and_then(origin) else {
                    return Err((StatusCode::FORBIDDEN, "the Origin header is not scheme://host[:port]".into()));
                };
                let allowed = self.origins.iter().any(|a| {
                    a.origin.scheme == origin.scheme
                        && a.origin.authority.host == origin.authority.host
                        && (a.any_port || a.origin.port() == origin.port())
                });
                if allowed {
                    Ok(())
                } else {
                    Err((StatusCode::FORBIDDEN, "the Origin is not allowed (see serve --allow-origin)".into()))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            &["localhost".into(), "127.0.0.1".into(), "::1".into(), "example.com:8443".into()],
            &["http://localhost:*".into(), "https://app.example.com".into()],
        )
        .unwrap()
    }

    fn status(pairs: &[(&str, &str)]) -> u16 {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(header::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        guard().check(&headers).map_or_else(|(status, _)| status.as_u16(), |()| 200)
    }

    #[test]
    fn hosts_are_read_strictly() {
        assert_eq!(status(&[("host", "127.0.0.1:8080")]), 200);
        assert_eq!(status(&[("host", "LOCALHOST")]), 200);
        assert_eq!(status(&[("host", "[::1]:80")]), 200);
        assert_eq!(status(&[("host", "example.com:8443")]), 200);
        assert_eq!(status(&[("host", "example.com:8444")]), 403);
        assert_eq!(status(&[("host", "evil.com")]), 403);
        assert_eq!(status(&[]), 400);
        assert_eq!(status(&[("host", "127.0.0.1:8080"), ("host", "evil.com")]), 400);
        for bad in ["localhost:99999", "localhost:0", "localhost:", "user@localhost", "local host", "[::1", "localhost:80:80", ""] {
            assert_eq!(status(&[("host", bad)]), 400, "{bad}");
        }
    }

    #[test]
    fn origins_are_read_strictly() {
        let with = |origin| status(&[("host", "localhost"), ("origin", origin)]);
        assert_eq!(with("http://localhost:3000"), 200);
        assert_eq!(with("https://app.example.com"), 200);
        assert_eq!(with("https://app.example.com:443"), 200);
        for bad in ["http://evil.com@localhost:1", "http://localhost:1/path", "null", "file://localhost", "http://evil.com", "https://localhost:3000", "https://app.example.com:8443"] {
            assert_eq!(with(bad), 403, "{bad}");
        }
    }
}
