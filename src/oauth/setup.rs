//! `/oauth/setup?token=…`: a staff member whose account was made without a password (`studioflow
//! user create` without `--password-stdin`, or `user password`) sets one from the one-time link
//! the command printed. The link works once and for a week; the form is plain HTML with a CSRF
//! token, as the sign-in pages are.

use super::authorize::pairs;
use super::pages::{self, escape, hidden, problem, CSRF_COOKIE};
use super::{blocking, AuthorizationServer, SETUP_PATH};
use crate::domain::Actor;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use std::sync::Arc;

fn unknown_link() -> Response {
    problem(StatusCode::NOT_FOUND, "This link does not work", "It was used already, it expired, or it was replaced: ask the studio's manager for a new one (studioflow user password NAME).")
}

fn form_page(server: &AuthorizationServer, headers: &HeaderMap, token: &str, name: &str, error: Option<&str>) -> Response {
    let csrf = pages::cookie(headers, CSRF_COOKIE).filter(|c| c.len() >= 20).unwrap_or_else(|| crate::auth::secret::random(20).unwrap_or_default());
    let error = error.map(|e| format!("<p class=\"problem\">{}</p>", escape(e))).unwrap_or_default();
    let body = format!(
        "<p>Choose a password for <strong>{name}</strong> (at least {min} characters).</p>{error}\
         <form method=\"post\" action=\"{SETUP_PATH}\">{token}{csrf_field}\
         <label for=\"password\">New password</label><input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"new-password\" required>\
         <label for=\"again\">The same again</label><input type=\"password\" id=\"again\" name=\"again\" autocomplete=\"new-password\" required>\
         <button class=\"primary\" type=\"submit\">Set password</button></form>",
        name = escape(name),
        min = crate::auth::password::MIN_LENGTH,
        token = hidden("token", token),
        csrf_field = hidden("csrf", &csrf),
    );
    let mut response = pages::page(if error.is_empty() { StatusCode::OK } else { StatusCode::BAD_REQUEST }, "Set your password", &body);
    pages::set_cookie(&mut response, CSRF_COOKIE, &csrf, server.config.secure_cookies(), None);
    response
}

/// `GET /oauth/setup?token=…`.
pub async fn page(State(server): State<Arc<AuthorizationServer>>, uri: Uri, headers: HeaderMap) -> Response {
    let token = pairs(uri.query().unwrap_or_default()).ok().and_then(|p| p.get("token").cloned()).unwrap_or_default();
    let lookup = token.clone();
    match blocking(&server.pool, move |store| store.user_by_setup(&lookup, chrono::Utc::now())).await {
        Ok(Some(user)) => form_page(&server, &headers, &token, &user.name, None),
        Ok(None) => unknown_link(),
        Err(e) => problem(StatusCode::INTERNAL_SERVER_ERROR, "Something failed", &e),
    }
}

/// `POST /oauth/setup`.
pub async fn set(State(server): State<Arc<AuthorizationServer>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let Ok(form) = std::str::from_utf8(&body).map_err(|e| e.to_string()).and_then(|text| pairs(text)) else {
        return problem(StatusCode::BAD_REQUEST, "Refused", "The form could not be read.");
    };
    let csrf_ok = matches!((pages::cookie(&headers, CSRF_COOKIE), form.get("csrf")), (Some(c), Some(f)) if !c.is_empty() && pages::same_secret(&c, f));
    if !csrf_ok {
        return problem(StatusCode::FORBIDDEN, "Refused", "The form's security token (CSRF) is missing or does not match: open the link again.");
    }
    let token = form.get("token").cloned().unwrap_or_default();
    let lookup = token.clone();
    let user = match blocking(&server.pool, move |store| store.user_by_setup(&lookup, chrono::Utc::now())).await {
        Ok(Some(user)) => user,
        Ok(None) => return unknown_link(),
        Err(e) => return problem(StatusCode::INTERNAL_SERVER_ERROR, "Something failed", &e),
    };
    let (password, again) = (form.get("password").cloned().unwrap_or_default(), form.get("again").cloned().unwrap_or_default());
    if password != again {
        return form_page(&server, &headers, &token, &user.name, Some("The two passwords differ."));
    }
    let hashed = match tokio::task::spawn_blocking(move || crate::auth::password::hash(&password)).await {
        Ok(Ok(hash)) => hash,
        Ok(Err(why)) => return form_page(&server, &headers, &token, &user.name, Some(&why.to_string())),
        Err(e) => return problem(StatusCode::INTERNAL_SERVER_ERROR, "Something failed", &e.to_string()),
    };
    let name = user.name.clone();
    match blocking(&server.pool, move |store| store.write_as(&Actor::new(name.clone(), "oauth setup"), |w| w.set_password(&name, &hashed))).await {
        Ok(_) => pages::page(StatusCode::OK, "Password set", &format!("<p>{} can now sign in from any app connected to this studio. You may close this page.</p>", escape(&user.name))),
        Err(e) => problem(StatusCode::INTERNAL_SERVER_ERROR, "Something failed", &e),
    }
}
