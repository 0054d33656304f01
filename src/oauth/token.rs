//! The token endpoint (`authorization_code` with PKCE, `refresh_token` rotating on use) and the
//! revocation endpoint (RFC 7009). Public clients only: a request names its `client_id`, and the
//! code or refresh token must be that client's. A `resource` given must be this server's (RFC
//! 8707). Answers are JSON, never cached; errors are RFC 6749 §5.2's.

use super::authorize::pairs;
use super::{blocking, AuthorizationServer};
use crate::domain::Actor;
use crate::store::{CodeExchange, Exchanged, GrantRefusal};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

/// A JSON answer that no cache keeps.
pub fn json(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

fn error(status: StatusCode, code: &str, description: &str) -> Response {
    json(status, &json!({"error": code, "error_description": description}))
}

/// `POST /oauth/token`.
pub async fn token(State(server): State<Arc<AuthorizationServer>>, body: axum::body::Bytes) -> Response {
    let Ok(form) = std::str::from_utf8(&body).map_err(|e| e.to_string()).and_then(|text| pairs(text)) else {
        return error(StatusCode::BAD_REQUEST, "invalid_request", "the body must be application/x-www-form-urlencoded, each parameter once");
    };
    let get = |key: &str| form.get(key).map(String::as_str).filter(|v| !v.is_empty());
    let Some(client_id) = get("client_id").map(str::to_owned) else {
        return error(StatusCode::UNAUTHORIZED, "invalid_client", "client_id is required (public clients name themselves)");
    };
    if let Some(resource) = get("resource")
        && resource.trim_end_matches('/') != server.config.resource
    {
        return error(StatusCode::BAD_REQUEST, "invalid_target", &format!("resource must be {}", server.config.resource));
    }
    let access_ttl = chrono::Duration::from_std(server.config.access_ttl).unwrap_or(chrono::Duration::hours(1));
    let client = match server.client(&client_id).await {
        Ok(client) => client,
        Err(why) => return error(StatusCode::UNAUTHORIZED, "invalid_client", &why),
    };
    let exchanged = match get("grant_type") {
        Some("authorization_code") => {
            let (Some(code), Some(redirect_uri), Some(verifier)) = (get("code"), get("redirect_uri"), get("code_verifier")) else {
                return error(StatusCode::BAD_REQUEST, "invalid_request", "code, redirect_uri and code_verifier (PKCE) are required");
            };
            let (code, redirect_uri, verifier, client, refresh) = (code.to_owned(), redirect_uri.to_owned(), verifier.to_owned(), client_id.clone(), client.refreshes);
            blocking(&server.pool, move |store| {
                let now_ms = chrono::Utc::now().timestamp_millis();
                let ask = CodeExchange { code: &code, client_id: &client, redirect_uri: &redirect_uri, verifier: &verifier, now_ms, access_ttl, refresh };
                store.write_as(&Actor::new("authorization server", "oauth token"), |w| w.exchange_code(&ask))
            })
            .await
        }
        Some("refresh_token") if !client.refreshes => {
            return error(StatusCode::BAD_REQUEST, "unauthorized_client", "this client registered without the refresh_token grant: sign in again");
        }
        Some("refresh_token") => {
            let Some(refresh) = get("refresh_token").map(str::to_owned) else {
                return error(StatusCode::BAD_REQUEST, "invalid_request", "refresh_token is required");
            };
            let client = client_id.clone();
            blocking(&server.pool, move |store| store.write_as(&Actor::new("authorization server", "oauth refresh"), |w| w.refresh(&refresh, &client, chrono::Utc::now(), access_ttl))).await
        }
        Some(other) => return error(StatusCode::BAD_REQUEST, "unsupported_grant_type", &format!("{other:?}: the grant types are authorization_code and refresh_token")),
        None => return error(StatusCode::BAD_REQUEST, "invalid_request", "grant_type is required"),
    };
    match exchanged {
        Ok(Exchanged::Issued(issued)) => {
            let mut answer = json!({
                "access_token": issued.access_token,
                "token_type": "Bearer",
                "expires_in": issued.expires_in,
                "scope": issued.scopes.joined(" "),
            });
            if let Some(refresh) = issued.refresh_token {
                answer["refresh_token"] = json!(refresh);
            }
            json(StatusCode::OK, &answer)
        }
        Ok(Exchanged::Refused(refusal)) => {
            if matches!(refusal, GrantRefusal::Reused) {
                tracing::warn!(client = %client_id, "a spent code or refresh token was presented again: its grant is revoked");
            }
            error(StatusCode::BAD_REQUEST, "invalid_grant", refusal.describe())
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &e),
    }
}

/// `POST /oauth/revoke` (RFC 7009): revokes the grant of an access or refresh token, so every
/// token of it. Answers 200 whether or not the token was known, as the RFC asks.
pub async fn revoke(State(server): State<Arc<AuthorizationServer>>, body: axum::body::Bytes) -> Response {
    let Ok(form) = std::str::from_utf8(&body).map_err(|e| e.to_string()).and_then(|text| pairs(text)) else {
        return error(StatusCode::BAD_REQUEST, "invalid_request", "the body must be application/x-www-form-urlencoded, each parameter once");
    };
    let Some(token) = form.get("token").filter(|t| !t.is_empty()).cloned() else {
        return error(StatusCode::BAD_REQUEST, "invalid_request", "token is required");
    };
    let client = form.get("client_id").cloned();
    let revoked = blocking(&server.pool, move |store| {
        store.write_as(&Actor::new("authorization server", "oauth revoke"), |w| match w.grant_of_token(&token, client.as_deref())? {
            Some(grant) => w.revoke_grant(&grant, "revoked by its client (RFC 7009)"),
            None => Ok(false),
        })
    })
    .await;
    match revoked {
        Ok(_) => json(StatusCode::OK, &json!({})),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", &e),
    }
}
