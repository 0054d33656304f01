//! Subscribable calendar feeds over HTTP: `GET /calendars/{rooms|clients|engineers}/{id}.ics?key=SECRET`.
//! Calendar programs (Google Calendar, Outlook, Apple Calendar) subscribe by URL and cannot send
//! headers, so the URL carries a read-only secret that opens that one calendar. A missing, revoked
//! or other calendar's secret answers 404, exactly like a calendar that does not exist, so a URL
//! says nothing about what else there is. Not MCP: it sits beside `/mcp` on the same listener.
//! Each answer carries an `ETag` (a hash of the calendar's text, so it changes exactly when the
//! calendar does), and a poll that sends it back in `If-None-Match` gets 304 with no body. No
//! `Last-Modified` is sent: the window of a calendar slides with the studio's clock, so its content
//! can change with no booking changed, and a date could not say so.

use crate::domain::CalendarOf;
use crate::store::Pool;
use crate::{feeds, ics};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The route's path, in axum's syntax.
pub const ROUTE: &str = "/calendars/{kind}/{file}";

/// The `key` of a query string, if any.
fn key(uri: &Uri) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| pair.strip_prefix("key=")).map(str::to_owned)
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "no such calendar\n").into_response()
}

/// Answers one feed request.
pub async fn feed(State(pool): State<Arc<Pool>>, Path((kind, file)): Path<(String, String)>, uri: Uri, headers: HeaderMap) -> Response {
    let (Some(id), Some(secret)) = (file.strip_suffix(".ics"), key(&uri)) else { return not_found() };
    let Some(of) = CalendarOf::new(&kind, id).filter(|_| kind.ends_with('s')) else { return not_found() };
    let answer = tokio::task::spawn_blocking(move || {
        pool.with(|store| -> Result<Option<String>, String> {
            if !feeds::opens(store, &of, &secret).map_err(|e| e.to_string())? {
                return Ok(None);
            }
            match ics::calendar(store, &of, None) {
                Ok(text) => Ok(Some(text)),
                Err(ics::IcsError::Unknown(_)) => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })
    })
    .await;
    match answer {
        Ok(Ok(Ok(Some(text)))) => {
            let tag = etag(&text);
            let cache = [(header::ETAG, tag.clone()), (header::CACHE_CONTROL, "private, max-age=300".to_owned())];
            if matches(&headers, &tag) {
                return (StatusCode::NOT_MODIFIED, cache).into_response();
            }
            (StatusCode::OK, [(header::CONTENT_TYPE, "text/calendar; charset=utf-8".to_owned())], cache, text).into_response()
        }
        Ok(Ok(Ok(None))) => not_found(),
        Ok(Ok(Err(e))) => internal(&e),
        Ok(Err(e)) => internal(&e.to_string()),
        Err(e) => internal(&e.to_string()),
    }
}

/// A strong validator of a calendar's text: 128 bits of its SHA-256, quoted.
fn etag(text: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("\"{}\"", data_encoding::HEXLOWER.encode(&Sha256::digest(text.as_bytes())[..16]))
}

/// Whether the request's `If-None-Match` names `tag` (or `*`): then the client's copy is current.
/// Comparison is weak, as RFC 9110 asks for `If-None-Match` on a GET.
fn matches(headers: &HeaderMap, tag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|list| list.split(','))
        .map(|candidate| candidate.trim())
        .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == tag)
}

fn internal(message: &str) -> Response {
    tracing::error!(error = %message, "calendar feed failed");
    (StatusCode::INTERNAL_SERVER_ERROR, "the calendar could not be read\n").into_response()
}
