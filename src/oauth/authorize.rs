//! The authorization code flow's front half: `GET /oauth/authorize` checks the request (the client
//! and its redirect URI first, shown as a page when wrong, never redirected to; then PKCE S256,
//! the resource, the scopes, answered by a redirect with the error), keeps it for ten minutes
//! under a random id, and shows the login form (or, for a signed-in session, goes on to consent).
//! `POST /oauth/login` checks the password (argon2id, on a blocking thread) within the failure
//! limits per user and per address; `GET`/`POST /oauth/consent` shows the client's name, the
//! redirect's host and the scopes asked, and on `consent=allow` issues a single-use code within
//! the user's role, redirecting with `code`, `state` and `iss` (RFC 9207). Every form carries a
//! CSRF token that must equal its cookie. Refusals of a known user are events in the history.

use super::pages::{self, escape, hidden, problem, see_other, CSRF_COOKIE, SESSION_COOKIE};
use super::{blocking, source, AuthorizationServer, CONSENT_PATH, LOGIN_PATH};
use crate::auth::{secret, Role, Scope, Scopes};
use crate::domain::Actor;
use crate::store::{Credentials, NewCode};
use axum::extract::State;
use axum::http::{Extensions, HeaderMap, StatusCode, Uri};
use axum::response::Response;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an authorization request waits for its user.
const PENDING_FOR: Duration = Duration::from_secs(600);
/// How long a sign-in lasts in the browser (a step-up re-authorization within it asks only consent).
const SESSION_FOR: Duration = Duration::from_secs(8 * 3600);
/// Failed sign-ins allowed per user, and per address, within [`FAILURE_WINDOW`].
pub const USER_FAILURES: usize = 5;
pub const ADDRESS_FAILURES: usize = 20;
const FAILURE_WINDOW: Duration = Duration::from_secs(900);

/// What the flow keeps for minutes: requests being authorized, sessions, failed sign-ins. In
/// memory: a sign-in is one browser talking to one server (behind a balancer, route `/oauth/` to
/// one server; codes, grants and tokens are in the database and work on any).
#[derive(Default)]
pub struct Flows {
    pending: Mutex<HashMap<String, Pending>>,
    /// By the SHA-256 of the session cookie.
    sessions: Mutex<HashMap<String, Session>>,
    /// Instants of failed sign-ins, by `user:NAME` and `address:IP`.
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

/// A checked authorization request, waiting for its user.
#[derive(Debug, Clone)]
struct Pending {
    client_id: String,
    client_name: String,
    redirect_uri: String,
    state: Option<String>,
    challenge: String,
    scopes: Scopes,
    created: Instant,
}

#[derive(Debug, Clone)]
struct Session {
    user_name: String,
    expires: Instant,
}

/// A query string or form body as pairs; a parameter given twice is refused (RFC 6749 §3.1).
pub fn pairs(text: &str) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    for (key, value) in form_urlencoded::parse(text.as_bytes()) {
        if map.insert(key.to_string(), value.to_string()).is_some() {
            return Err(format!("the parameter {key:?} is given more than once"));
        }
    }
    Ok(map)
}

/// `uri` with `params` added to its query.
fn with_query(uri: &str, params: &[(&str, Option<&str>)]) -> String {
    let Ok(mut url) = reqwest::Url::parse(uri) else { return uri.to_owned() };
    {
        let mut query = url.query_pairs_mut();
        for (key, value) in params {
            if let Some(value) = value {
                query.append_pair(key, value);
            }
        }
    }
    url.to_string()
}

impl Flows {
    fn keep(&self, pending: Pending) -> Result<String, String> {
        let id = secret::random(16).map_err(|e| e.to_string())?;
        let mut all = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|_, p| p.created.elapsed() < PENDING_FOR);
        if all.len() >= 10_000 {
            return Err("too many sign-ins are under way: try again in a few minutes".into());
        }
        all.insert(id.clone(), pending);
        Ok(id)
    }

    fn pending(&self, id: &str) -> Option<Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).get(id).filter(|p| p.created.elapsed() < PENDING_FOR).cloned()
    }

    fn take(&self, id: &str) -> Option<Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(id).filter(|p| p.created.elapsed() < PENDING_FOR)
    }

    fn session(&self, headers: &HeaderMap) -> Option<Session> {
        let cookie = pages::cookie(headers, SESSION_COOKIE)?;
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).get(&secret::hash(&cookie)).filter(|s| s.expires > Instant::now()).cloned()
    }

    fn start_session(&self, user_name: &str) -> Result<String, String> {
        let cookie = secret::random(32).map_err(|e| e.to_string())?;
        let mut all = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        all.retain(|_, s| s.expires > now);
        all.insert(secret::hash(&cookie), Session { user_name: user_name.to_owned(), expires: now + SESSION_FOR });
        Ok(cookie)
    }

    /// How long `key` must wait, if it is at its limit of failures.
    fn blocked(&self, key: &str, limit: usize) -> Option<Duration> {
        let mut all = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let times = all.get_mut(key)?;
        while times.front().is_some_and(|at| at.elapsed() >= FAILURE_WINDOW) {
            times.pop_front();
        }
        (times.len() >= limit).then(|| FAILURE_WINDOW.saturating_sub(times.front().map_or(Duration::ZERO, Instant::elapsed)))
    }

    fn fail(&self, key: &str) {
        let mut all = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() > 10_000 {
            all.retain(|_, t| t.back().is_some_and(|at| at.elapsed() < FAILURE_WINDOW));
        }
        all.entry(key.to_owned()).or_default().push_back(Instant::now());
    }

    fn forgive(&self, key: &str) {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

/// The CSRF token of a browser: its cookie's, or a new one (to set).
fn csrf_of(headers: &HeaderMap) -> (String, bool) {
    match pages::cookie(headers, CSRF_COOKIE).filter(|c| c.len() >= 20 && c.chars().all(|ch| ch.is_ascii_alphanumeric())) {
        Some(token) => (token, false),
        None => (secret::random(20).unwrap_or_default(), true),
    }
}

/// Whether a form's `csrf` field equals the browser's CSRF cookie.
fn csrf_ok(headers: &HeaderMap, form: &HashMap<String, String>) -> bool {
    match (pages::cookie(headers, CSRF_COOKIE), form.get("csrf")) {
        (Some(cookie), Some(field)) => !cookie.is_empty() && pages::same_secret(&cookie, field),
        _ => false,
    }
}

fn csrf_refused() -> Response {
    problem(StatusCode::FORBIDDEN, "Sign-in refused", "The form's security token (CSRF) is missing or does not match this browser's: go back to the app and connect again.")
}

fn expired() -> Response {
    problem(StatusCode::BAD_REQUEST, "This sign-in has expired", "Go back to the app and connect again (a sign-in waits ten minutes).")
}

/// What a scope lets an app do, in a manager's words.
fn describe(scope: Scope) -> &'static str {
    match scope {
        Scope::StudioRead => "see rooms, bookings, clients, engineers and the history",
        Scope::BookingsWrite => "book, move, change and cancel sessions",
        Scope::StudioManage => "change rooms, clients and engineers, and take rooms offline",
        Scope::ReflowApply => "apply month reflows that move many bookings",
    }
}

/// The login page for a pending request.
fn login_page(server: &AuthorizationServer, headers: &HeaderMap, req: &str, pending: &Pending, status: StatusCode, error: Option<&str>) -> Response {
    let (csrf, new) = csrf_of(headers);
    let error = error.map(|e| format!("<p class=\"problem\">{}</p>", escape(e))).unwrap_or_default();
    let body = format!(
        "<p><strong>{client}</strong> asks to use this studio's calendar. Sign in with your studioflow account.</p>{error}\
         <form method=\"post\" action=\"{LOGIN_PATH}\">{req}{csrf_field}\
         <label for=\"username\">User name</label><input type=\"text\" id=\"username\" name=\"username\" autocomplete=\"username\" required autofocus>\
         <label for=\"password\">Password</label><input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"current-password\" required>\
         <button class=\"primary\" type=\"submit\">Sign in</button></form>\
         <p class=\"muted\">You will be sent back to {host}.</p>",
        client = escape(&pending.client_name),
        req = hidden("req", req),
        csrf_field = hidden("csrf", &csrf),
        host = escape(&host_of(&pending.redirect_uri)),
    );
    let mut response = pages::page(status, "Sign in to studioflow", &body);
    if new {
        pages::set_cookie(&mut response, CSRF_COOKIE, &csrf, server.config.secure_cookies(), None);
    }
    response
}

/// The host (and port) a redirect URI sends the browser to, or its scheme for an app's own.
fn host_of(uri: &str) -> String {
    match reqwest::Url::parse(uri) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => format!("{}:", url.scheme()),
        },
        Err(_) => uri.to_owned(),
    }
}

/// `GET /oauth/authorize`.
pub async fn authorize(State(server): State<Arc<AuthorizationServer>>, uri: Uri, headers: HeaderMap) -> Response {
    let params = match pairs(uri.query().unwrap_or_default()) {
        Ok(params) => params,
        Err(why) => return problem(StatusCode::BAD_REQUEST, "This sign-in request is malformed", &why),
    };
    let get = |key: &str| params.get(key).map(String::as_str).filter(|v| !v.is_empty());
    let Some(client_id) = get("client_id") else {
        return problem(StatusCode::BAD_REQUEST, "This sign-in request is malformed", "It names no client_id.");
    };
    let client = match server.client(client_id).await {
        Ok(client) => client,
        Err(why) => return problem(StatusCode::BAD_REQUEST, "Unknown app", &format!("The app {client_id:?} cannot sign in here: {why}")),
    };
    let redirect_uri = match get("redirect_uri") {
        Some(uri) => uri.to_owned(),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return problem(StatusCode::BAD_REQUEST, "This sign-in request is malformed", "It names no redirect_uri, and the app has several."),
    };
    if !client.allows(&redirect_uri) {
        tracing::warn!(client = %client.id, redirect_uri = %redirect_uri, "refused an authorization request: the redirect URI is not the client's");
        return problem(
            StatusCode::BAD_REQUEST,
            "This app's return address is not registered",
            &format!("{redirect_uri:?} is not one of the redirect URIs {} registered, so this sign-in cannot send you back there.", client.name),
        );
    }
    let state = get("state").map(str::to_owned);
    let issuer = server.config.issuer.clone();
    let fail = |error: &str, description: &str| {
        see_other(&with_query(&redirect_uri, &[("error", Some(error)), ("error_description", Some(description)), ("state", state.as_deref()), ("iss", Some(&issuer))]))
    };
    if get("response_type") != Some("code") {
        return fail("unsupported_response_type", "only response_type=code is served");
    }
    let challenge = match (get("code_challenge"), get("code_challenge_method")) {
        (Some(challenge), Some("S256")) if challenge.len() == 43 && challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') => challenge.to_owned(),
        (Some(_), Some("S256")) => return fail("invalid_request", "code_challenge must be a PKCE S256 challenge: 43 base64url characters"),
        _ => return fail("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256"),
    };
    match get("resource") {
        Some(resource) if resource.trim_end_matches('/') == server.config.resource => {}
        Some(_) => return fail("invalid_target", &format!("resource must be {}", server.config.resource)),
        None => return fail("invalid_target", &format!("resource is required (RFC 8707): {}", server.config.resource)),
    }
    let scopes = match get("scope") {
        None => Scopes::all(),
        Some(asked) => Scopes::from_claim(asked),
    };
    if scopes.is_empty() {
        return fail("invalid_scope", &format!("ask for some of {}", Scopes::all().joined(" ")));
    }
    let pending = Pending { client_id: client.id, client_name: client.name, redirect_uri: redirect_uri.clone(), state: state.clone(), challenge, scopes, created: Instant::now() };
    let req = match server.flows.keep(pending.clone()) {
        Ok(req) => req,
        Err(why) => return problem(StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", &why),
    };
    if server.flows.session(&headers).is_some() {
        return see_other(&format!("{CONSENT_PATH}?req={req}"));
    }
    login_page(&server, &headers, &req, &pending, StatusCode::OK, None)
}

/// Reads a form body, or the page that says why not.
fn form(body: &[u8]) -> Result<HashMap<String, String>, Response> {
    let text = std::str::from_utf8(body).map_err(|_| problem(StatusCode::BAD_REQUEST, "Sign-in refused", "The form is not UTF-8."))?;
    pairs(text).map_err(|why| problem(StatusCode::BAD_REQUEST, "Sign-in refused", &why))
}

/// What the login and consent forms share: the form read, its CSRF token checked, and the
/// pending authorization request it names (`req`), still there.
fn posted(server: &AuthorizationServer, headers: &HeaderMap, body: &[u8]) -> Result<(HashMap<String, String>, String, Pending), Response> {
    let form = form(body)?;
    if !csrf_ok(headers, &form) {
        return Err(csrf_refused());
    }
    let req = form.get("req").cloned().unwrap_or_default();
    let pending = server.flows.pending(&req).ok_or_else(expired)?;
    Ok((form, req, pending))
}

/// Records a refusal of a known user in the history, naming the client; a failure to record is logged.
async fn record_refusal(server: &AuthorizationServer, user: &Credentials, client: &str, why: &str) {
    let (id, name, client, why) = (user.user.id.clone(), user.user.name.clone(), client.to_owned(), why.to_owned());
    let recorded = blocking(&server.pool, move |store| store.write_as(&Actor::new(name.clone(), format!("oauth sign-in ({client})")), |w| w.record_refusal(&id, &client, &why))).await;
    if let Err(e) = recorded {
        tracing::warn!(error = %e, "could not record a refused sign-in");
    }
}

/// `POST /oauth/login`.
pub async fn login(State(server): State<Arc<AuthorizationServer>>, headers: HeaderMap, extensions: Extensions, body: axum::body::Bytes) -> Response {
    let (form, req, pending) = match posted(&server, &headers, &body) {
        Ok(posted) => posted,
        Err(page) => return page,
    };
    let name = form.get("username").map(|n| n.trim().to_owned()).unwrap_or_default();
    let password = form.get("password").cloned().unwrap_or_default();
    let (user_key, address_key) = (format!("user:{name}"), format!("address:{}", source(&extensions)));
    let waits = [server.flows.blocked(&user_key, USER_FAILURES), server.flows.blocked(&address_key, ADDRESS_FAILURES)];
    if let Some(wait) = waits.into_iter().flatten().max() {
        tracing::warn!(user = %name, address = %address_key, "refused a sign-in: past the failure limit");
        let minutes = wait.as_secs().div_ceil(60).max(1);
        return problem(StatusCode::TOO_MANY_REQUESTS, "Too many failed sign-ins", &format!("Sign-in is paused for this account or this address: try again in {minutes} minutes."));
    }
    let lookup = name.clone();
    let found = match blocking(&server.pool, move |store| store.credentials(&lookup)).await {
        Ok(found) => found,
        Err(e) => return problem(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", &format!("The account could not be read: {e}")),
    };
    let stored = found.as_ref().and_then(|c| c.password_hash.clone());
    let matches = tokio::task::spawn_blocking(move || match stored {
        Some(hash) => crate::auth::password::verify(&password, &hash),
        None => {
            crate::auth::password::waste_time();
            false
        }
    })
    .await
    .unwrap_or(false);
    let refuse = |why: &str| login_page(&server, &headers, &req, &pending, StatusCode::UNAUTHORIZED, Some(why));
    match found {
        Some(user) if matches && user.user.disabled.is_none() => {
            server.flows.forgive(&user_key);
            let cookie = match server.flows.start_session(&user.user.name) {
                Ok(cookie) => cookie,
                Err(e) => return problem(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", &e),
            };
            tracing::info!(user = %user.user.name, client = %pending.client_name, "signed in");
            let mut response = see_other(&format!("{CONSENT_PATH}?req={req}"));
            pages::set_cookie(&mut response, SESSION_COOKIE, &cookie, server.config.secure_cookies(), Some(SESSION_FOR.as_secs()));
            response
        }
        Some(user) if matches => {
            record_refusal(&server, &user, &pending.client_name, "the account is disabled").await;
            problem(StatusCode::FORBIDDEN, "This account is disabled", "Ask the studio's manager to enable it, or to make you another.")
        }
        Some(user) => {
            server.flows.fail(&user_key);
            server.flows.fail(&address_key);
            let why = if user.password_hash.is_some() { "a wrong password" } else { "no password is set yet (the account's set-up link sets one)" };
            record_refusal(&server, &user, &pending.client_name, why).await;
            refuse("The user name or password is wrong.")
        }
        None => {
            server.flows.fail(&user_key);
            server.flows.fail(&address_key);
            tracing::info!(address = %address_key, "refused a sign-in for an unknown user name");
            refuse("The user name or password is wrong.")
        }
    }
}

/// The signed-in user of a consent step, read again from the store (a role changed or an
/// account disabled since the login counts), or the page to show instead.
async fn signed_in(server: &AuthorizationServer, headers: &HeaderMap, req: &str, pending: &Pending) -> Result<Credentials, Response> {
    let Some(session) = server.flows.session(headers) else {
        return Err(login_page(server, headers, req, pending, StatusCode::OK, None));
    };
    let name = session.user_name.clone();
    match blocking(&server.pool, move |store| store.credentials(&name)).await {
        Ok(Some(user)) if user.user.disabled.is_none() => Ok(user),
        Ok(Some(user)) => {
            record_refusal(server, &user, &pending.client_name, "the account is disabled").await;
            Err(problem(StatusCode::FORBIDDEN, "This account is disabled", "Ask the studio's manager to enable it."))
        }
        Ok(None) => Err(login_page(server, headers, req, pending, StatusCode::OK, None)),
        Err(e) => Err(problem(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", &e)),
    }
}

/// `GET /oauth/consent?req=…`: what the app asks, and Allow or Deny.
pub async fn consent_page(State(server): State<Arc<AuthorizationServer>>, uri: Uri, headers: HeaderMap) -> Response {
    let req = pairs(uri.query().unwrap_or_default()).ok().and_then(|p| p.get("req").cloned()).unwrap_or_default();
    let Some(pending) = server.flows.pending(&req) else { return expired() };
    let user = match signed_in(&server, &headers, &req, &pending).await {
        Ok(user) => user,
        Err(page) => return page,
    };
    let role = user.user.role;
    let granted = pending.scopes.and(role.scopes());
    let withheld = pending.scopes.without(role.scopes());
    let list = |scopes: Scopes| scopes.iter().map(|s| format!("<li><code>{}</code>: {}</li>", s.name(), describe(s))).collect::<String>();
    let (csrf, new) = csrf_of(&headers);
    let mut body = format!(
        "<p>Signed in as <strong>{user}</strong> ({role}).</p><p><strong>{client}</strong> asks to use this studio's calendar, and will send you back to <strong>{host}</strong>.</p>",
        user = escape(&user.user.name),
        role = role.name(),
        client = escape(&pending.client_name),
        host = escape(&host_of(&pending.redirect_uri)),
    );
    if !granted.is_empty() {
        body.push_str(&format!("<p>If you allow it, it may:</p><ul>{}</ul>", list(granted)));
    }
    if !withheld.is_empty() {
        body.push_str(&format!("<p>It also asked for what your role ({}) does not give, which it will not get:</p><ul>{}</ul>", role.name(), list(withheld)));
    }
    let allow = if granted.is_empty() { String::new() } else { "<button class=\"primary\" type=\"submit\" name=\"consent\" value=\"allow\">Allow</button>".to_owned() };
    body.push_str(&format!(
        "<form method=\"post\" action=\"{CONSENT_PATH}\">{}{}{allow}<button type=\"submit\" name=\"consent\" value=\"deny\">Deny</button></form>",
        hidden("req", &req),
        hidden("csrf", &csrf)
    ));
    let mut response = pages::page(StatusCode::OK, "Allow access?", &body);
    if new {
        pages::set_cookie(&mut response, CSRF_COOKIE, &csrf, server.config.secure_cookies(), None);
    }
    response
}

/// `POST /oauth/consent`: `consent=allow` issues a code within the user's role; anything else denies.
pub async fn consent(State(server): State<Arc<AuthorizationServer>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let (form, req, pending) = match posted(&server, &headers, &body) {
        Ok(posted) => posted,
        Err(page) => return page,
    };
    let user = match signed_in(&server, &headers, &req, &pending).await {
        Ok(user) => user,
        Err(page) => return page,
    };
    // The request is used once, whatever the answer.
    if server.flows.take(&req).is_none() {
        return expired();
    }
    let issuer = server.config.issuer.clone();
    let back = |params: &[(&str, Option<&str>)]| {
        let mut all = params.to_vec();
        all.extend([("state", pending.state.as_deref()), ("iss", Some(issuer.as_str()))]);
        see_other(&with_query(&pending.redirect_uri, &all))
    };
    let role: Role = user.user.role;
    let scopes = pending.scopes.and(role.scopes());
    if form.get("consent").map(String::as_str) != Some("allow") || scopes.is_empty() {
        let why = if scopes.is_empty() { "the role gives none of the scopes asked" } else { "the user denied consent" };
        record_refusal(&server, &user, &pending.client_name, why).await;
        tracing::info!(user = %user.user.name, client = %pending.client_name, why, "refused an authorization");
        return back(&[("error", Some("access_denied")), ("error_description", Some(why))]);
    }
    let expires_at_ms = chrono::Utc::now().timestamp_millis() + server.config.code_ttl.as_millis() as i64;
    let (user_id, user_name, p) = (user.user.id.clone(), user.user.name.clone(), pending.clone());
    let issued = blocking(&server.pool, move |store| {
        let code = NewCode {
            user_id: &user_id,
            client_id: &p.client_id,
            client_name: &p.client_name,
            redirect_uri: &p.redirect_uri,
            challenge: &p.challenge,
            scopes,
            expires_at_ms,
        };
        store.write_as(&Actor::new(user_name.clone(), "oauth consent"), |w| w.issue_code(&code))
    })
    .await;
    match issued {
        Ok(code) => back(&[("code", Some(&code))]),
        Err(e) => problem(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", &format!("The code could not be issued: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_read_once_each() {
        let read = pairs("a=1&b=x%20y&c=").unwrap();
        assert_eq!(read["b"], "x y");
        assert_eq!(read["c"], "");
        assert!(pairs("a=1&a=2").unwrap_err().contains("\"a\""));
    }

    #[test]
    fn redirects_carry_their_parameters() {
        let to = with_query("https://claude.ai/api/mcp/auth_callback?x=1", &[("code", Some("c d")), ("state", None), ("iss", Some("https://s.example/"))]);
        assert_eq!(to, "https://claude.ai/api/mcp/auth_callback?x=1&code=c+d&iss=https%3A%2F%2Fs.example%2F");
        assert_eq!(host_of("http://127.0.0.1:33418/"), "127.0.0.1:33418");
        assert_eq!(host_of("cursor://anysphere.cursor-mcp/oauth/callback"), "anysphere.cursor-mcp");
    }
}
