//! Subscribable calendar feeds over HTTP: `GET /calendars/{rooms|clients|engineers}/{id}.ics?key=SECRET`.
//! Calendar programs (Google Calendar, Outlook, Apple Calendar) subscribe by URL and cannot send
//! headers, so the URL carries a read-only secret that opens that one calendar. A missing, revoked
//! or other calendar's secret answers 404, exactly like a calendar that does not exist, so a URL
//! says nothing about what else there is. Not MCP: it sits beside `/mcp` on the same listener.

use super::tools::Ctx;
use crate::domain::CalendarOf;
use crate::{feeds, ics};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode, Uri};
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
pub async fn feed(State(ctx): State<Arc<Ctx>>, Path((kind, file)): Path<(String, String)>, uri: Uri) -> Response {
    let (Some(id), Some(secret)) = (file.strip_suffix(".ics"), key(&uri)) else { return not_found() };
    let Some(of) = CalendarOf::new(&kind, id).filter(|_| kind.ends_with('s')) else { return not_found() };
    let answer = tokio::task::spawn_blocking(move || {
        ctx.pool.with(|store| -> Result<Option<String>, String> {
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
        Ok(Ok(Ok(Some(text)))) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/calendar; charset=utf-8"), (header::CACHE_CONTROL, "private, max-age=300")],
            text,
        )
            .into_response(),
        Ok(Ok(Ok(None))) => not_found(),
        Ok(Ok(Err(e))) => internal(&e),
        Ok(Err(e)) => internal(&e.to_string()),
        Err(e) => internal(&e.to_string()),
    }
}

fn internal(message: &str) -> Response {
    tracing::error!(error = %message, "calendar feed failed");
    (StatusCode::INTERNAL_SERVER_ERROR, "the calendar could not be read\n").into_response()
}
