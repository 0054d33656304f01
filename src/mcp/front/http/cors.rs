//! Cross-origin requests from browser clients (the MCP Inspector, web-based agents), served the
//! way the MCP SDKs' own servers serve them. A preflight `OPTIONS` from an allowed origin is
//! answered before authentication, naming the methods and the headers MCP uses; every answer to
//! an allowed origin (401, 403 and 429 included, so that a page can read the challenge) names that
//! origin and exposes the headers a client reads. Public metadata, and the authorization server's
//! token, registration and revocation endpoints, answer any origin (`*`). A
//! request from an origin not on the allow-list gets no CORS header at all: the authority check
//! refuses it with 403 before this module is asked.

use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

/// The request headers an MCP client sends, besides the `Mcp-Param-*` family.
const ALLOWED_HEADERS: &str =
    "Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id, Last-Event-ID";
/// The answer headers a client reads: the challenge, the protocol version, the session.
const EXPOSED_HEADERS: &str = "WWW-Authenticate, MCP-Protocol-Version, Mcp-Session-Id";
/// How long a browser may keep a preflight's answer (Chromium keeps at most two hours).
const MAX_AGE_SECONDS: u32 = 7200;

/// Which cross-origin answer a request gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cors {
    /// No `Origin`: not a browser's cross-origin request.
    None,
    /// An allowed origin: answers name it.
    Origin(HeaderValue),
    /// Public metadata: any origin may read it.
    Anyone,
}

impl Cors {
    /// The CORS side of a request whose `Origin`, if any, passed the authority check (or, for
    /// public metadata, was not asked about).
    pub fn of(headers: &HeaderMap, public: bool) -> Cors {
        match headers.get(header::ORIGIN) {
            None => Cors::None,
            Some(_) if public => Cors::Anyone,
            Some(origin) => Cors::Origin(origin.clone()),
        }
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`), or `None`
    /// when the request is not one: then it goes on as any request does.
    pub fn preflight(&self, method: &Method, headers: &HeaderMap) -> Option<Response> {
        if *method != Method::OPTIONS || !headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) || *self == Cors::None {
            return None;
        }
        let mut response = StatusCode::NO_CONTENT.into_response();
        let out = response.headers_mut();
        // Public documents are read with GET; the authorization server's public endpoints take POST.
        let methods = if *self == Cors::Anyone { "GET, POST, OPTIONS" } else { "GET, POST, DELETE, OPTIONS" };
        out.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(methods));
        out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allowed_headers(headers));
        out.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from(MAX_AGE_SECONDS));
        self.apply(&mut response);
        Some(response)
    }

    /// Names the origin (and what a page may read) on an answer.
    pub fn apply(&self, response: &mut Response) {
        let out = response.headers_mut();
        match self {
            Cors::None => return,
            Cors::Anyone => {
                out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
            }
            Cors::Origin(origin) => {
                out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
                out.append(header::VARY, HeaderValue::from_static("Origin"));
            }
        }
        out.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED_HEADERS));
    }
}

/// The headers a preflight may ask for: the fixed list, and each `Mcp-Param-*` header the
/// request names (a header name cannot be a pattern, so the family is granted by name).
fn allowed_headers(headers: &HeaderMap) -> HeaderValue {
    let mut allowed = ALLOWED_HEADERS.to_owned();
    let asked = headers.get_all(header::ACCESS_CONTROL_REQUEST_HEADERS).iter().filter_map(|v| v.to_str().ok());
    for name in asked.flat_map(|list| list.split(',')).map(str::trim) {
        if name.len() > "mcp-param-".len()
            && name[.."mcp-param-".len()].eq_ignore_ascii_case("mcp-param-")
            && HeaderName::from_bytes(name.as_bytes()).is_ok()
        {
            allowed.push_str(", ");
            allowed.push_str(name);
        }
    }
    HeaderValue::from_str(&allowed).unwrap_or_else(|_| HeaderValue::from_static(ALLOWED_HEADERS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap())).collect()
    }

    #[test]
    fn a_preflight_names_the_origin_methods_and_every_mcp_header() {
        let request = headers(&[
            ("origin", "http://localhost:8090"),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "authorization, content-type, mcp-param-month, mcp-param-, mcp-param-a b, x-evil"),
        ]);
        let response = Cors::of(&request, false).preflight(&Method::OPTIONS, &request).unwrap();
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        let h = response.headers();
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], "http://localhost:8090");
        assert_eq!(h[header::VARY], "Origin");
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_METHODS], "GET, POST, DELETE, OPTIONS");
        assert_eq!(
            h[header::ACCESS_CONTROL_ALLOW_HEADERS],
            "Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id, Last-Event-ID, mcp-param-month"
        );
        assert_eq!(h[header::ACCESS_CONTROL_MAX_AGE], "7200");
        assert_eq!(h[header::ACCESS_CONTROL_EXPOSE_HEADERS], "WWW-Authenticate, MCP-Protocol-Version, Mcp-Session-Id");
    }

    #[test]
    fn only_preflights_are_answered_here_and_metadata_is_anyones() {
        let plain = headers(&[("origin", "http://localhost:8090")]);
        assert!(Cors::of(&plain, false).preflight(&Method::OPTIONS, &plain).is_none(), "no Access-Control-Request-Method");
        let no_origin = headers(&[("access-control-request-method", "POST")]);
        assert!(Cors::of(&no_origin, false).preflight(&Method::OPTIONS, &no_origin).is_none());
        let preflight = headers(&[("origin", "https://anywhere.example"), ("access-control-request-method", "GET")]);
        let response = Cors::of(&preflight, true).preflight(&Method::OPTIONS, &preflight).unwrap();
        assert_eq!(response.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(response.headers().get(header::VARY).is_none());
    }
}
