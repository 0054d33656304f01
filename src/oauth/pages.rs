//! The sign-in pages as HTML: plain forms that work without JavaScript (the page has none, and
//! its policy allows none), every text escaped, never framed (`frame-ancestors 'none'`), never
//! cached, and the cookies they set (`HttpOnly; SameSite=Lax`, and `Secure` unless the issuer is
//! plain http on loopback). Each form carries a CSRF token that must equal its cookie.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The cookie of the CSRF token (double submit: the form's field must equal it).
pub const CSRF_COOKIE: &str = "sf_csrf";
/// The cookie of a signed-in session.
pub const SESSION_COOKIE: &str = "sf_session";

pub use crate::html::escape;

/// A whole page: `title`, then `body` (already HTML).
pub fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · studioflow</title><style>{STYLE}</style></head>\
         <body><main><h1>{title}</h1>{body}</main></body></html>\n",
        title = escape(title)
    );
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    // No script at all, no framing (clickjacking), nothing loaded from elsewhere. No form-action:
    // a consent's answer is a redirect to the client, which that directive would block.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// A page that only says what went wrong and what to do.
pub fn problem(status: StatusCode, title: &str, why: &str) -> Response {
    page(status, title, &format!("<p class=\"problem\">{}</p>", escape(why)))
}

/// A hidden form field.
pub fn hidden(name: &str, value: &str) -> String {
    format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", escape(name), escape(value))
}

/// Sets a cookie on an answer: `HttpOnly; SameSite=Lax; Path=/oauth`, `Secure` when asked,
/// and `Max-Age` when given (0 removes it).
pub fn set_cookie(response: &mut Response, name: &str, value: &str, secure: bool, max_age: Option<u64>) {
    let mut cookie = format!("{name}={value}; Path=/oauth; HttpOnly; SameSite=Lax");
    if secure {
        cookie.push_str("; Secure");
    }
    if let Some(seconds) = max_age {
        cookie.push_str(&format!("; Max-Age={seconds}"));
    }
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// A cookie's value from a request.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A 303 to `location` (after a form: the browser follows it with a GET).
pub fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;background:#f4f4f2;color:#1d1d1b;margin:0}\
main{max-width:26rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 3px #0002}\
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .2rem;font-weight:600}\
input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;border:1px solid #888;border-radius:4px}\
button{font:inherit;padding:.5rem 1.2rem;margin:1rem .5rem 0 0;border-radius:4px;border:1px solid #333;background:#fff;cursor:pointer}\
button.primary{background:#1d4ed8;border-color:#1d4ed8;color:#fff}.problem{color:#a40000}ul{padding-left:1.2rem}\
.muted{color:#555;font-size:.9rem}code{font-size:.95em}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_content_and_attributes() {
        assert_eq!(escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        assert_eq!(hidden("state", "\"><script>"), "<input type=\"hidden\" name=\"state\" value=\"&quot;&gt;&lt;script&gt;\">");
    }

    #[test]
    fn cookies_are_read_by_name() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; sf_csrf=abc; b=2"));
        assert_eq!(cookie(&headers, CSRF_COOKIE).as_deref(), Some("abc"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), None);
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("abc", "ab"));
    }
}
