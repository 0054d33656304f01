//! Issue 27: studioflow as its own OAuth 2.1 authorization server, driven over raw HTTP against the
//! real binary (`serve --http --oauth-server`), as a browser and a client would: the metadata, the
//! whole flow (register, log in, consent, code, tokens, MCP with the access token, refresh rotation),
//! and each refusal the issue lists, with what the history and `token list` then show.

use crate::mcp_client::{http, Answer, HttpServer};
use crate::support::temp_db;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::{Command, Stdio};
use studioflow::auth::secret::pkce_s256;

pub const PASSWORD: &str = "correct horse battery";
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// `studioflow user create` with a password on standard input.
pub fn create_user(db: &std::path::Path, name: &str, role: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_studioflow"))
        .args(["user", "create", "--db"])
        .arg(db)
        .args(["--name", name, "--role", role, "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(format!("{PASSWORD}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "user create: {}", String::from_utf8_lossy(&out.stderr));
}

/// Runs `studioflow ARGS` and returns its stdout; panics on failure.
pub fn studioflow(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(args).output().unwrap();
    assert!(out.status.success(), "studioflow {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A browser and a public client in one: cookies, one registration, PKCE pairs.
struct Browser<'s> {
    server: &'s HttpServer,
    cookies: HashMap<String, String>,
    client_id: String,
}

fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
}

fn hidden(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    Some(html[start..].split('"').next()?.to_owned())
}

/// The query parameters of a Location.
fn query_of(location: &str) -> HashMap<String, String> {
    let query = location.split_once('?').map_or("", |(_, q)| q);
    form_urlencoded::parse(query.as_bytes()).into_owned().collect()
}

impl<'s> Browser<'s> {
    /// Registers a client with `REDIRECT`.
    fn new(server: &'s HttpServer) -> Browser<'s> {
        let answer = server.raw_at("POST", "/oauth/register", &[("Content-Type", "application/json")], &json!({"client_name": "Test Desk", "redirect_uris": [REDIRECT]}).to_string());
        assert_eq!(answer.status, 201, "{}", answer.body);
        let client: Value = serde_json::from_str(&answer.body).unwrap();
        Browser { server, cookies: HashMap::new(), client_id: client["client_id"].as_str().unwrap().to_owned() }
    }

    fn resource(&self) -> String {
        format!("http://{}/mcp", self.server.address)
    }

    /// A request with this browser's cookies; it keeps the cookies the answer sets.
    fn send(&mut self, method: &str, path: &str, body: &str) -> Answer {
        let cookie = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
        let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
        if !cookie.is_empty() {
            headers.push(("Cookie", cookie.as_str()));
        }
        let answer = self.server.raw_at(method, path, &headers, body);
        for line in answer.head.lines().filter(|l| l.to_ascii_lowercase().starts_with("set-cookie:")) {
            let pair = line.split_once(':').unwrap().1.trim().split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies.insert(name.to_owned(), value.to_owned());
        }
        answer
    }

    /// `GET /oauth/authorize` with the usual parameters, as changed by `edit`.
    fn authorize(&mut self, verifier: &str, edit: impl FnOnce(&mut Vec<(String, String)>)) -> Answer {
        let mut params: Vec<(String, String)> = [
            ("response_type", "code".to_owned()),
            ("client_id", self.client_id.clone()),
            ("redirect_uri", REDIRECT.to_owned()),
            ("code_challenge", pkce_s256(verifier)),
            ("code_challenge_method", "S256".to_owned()),
            ("state", "st-123".to_owned()),
            ("resource", self.resource()),
            ("scope", "studio:read bookings:write".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        edit(&mut params);
        let query = form_urlencoded::Serializer::new(String::new()).extend_pairs(params).finish();
        self.send("GET", &format!("/oauth/authorize?{query}"), "")
    }

    /// Submits the login form of `page` as `user` with `password`.
    fn login(&mut self, page: &Answer, user: &str, password: &str) -> Answer {
        let (req, csrf) = (hidden(&page.body, "req").expect("a login form"), hidden(&page.body, "csrf").unwrap());
        self.send("POST", "/oauth/login", &form(&[("req", &req), ("csrf", &csrf), ("username", user), ("password", password)]))
    }

    /// From a 303 to the consent page: shows it and answers `consent`; returns the redirect's parameters.
    fn consent(&mut self, to_consent: &Answer, consent: &str) -> HashMap<String, String> {
        assert_eq!(to_consent.status, 303, "{}", to_consent.body);
        let page = self.send("GET", to_consent.header("location").unwrap(), "");
        assert_eq!(page.status, 200, "{}", page.body);
        let (req, csrf) = (hidden(&page.body, "req").unwrap(), hidden(&page.body, "csrf").unwrap());
        let back = self.send("POST", "/oauth/consent", &form(&[("req", &req), ("csrf", &csrf), ("consent", consent)]));
        assert_eq!(back.status, 303, "{}", back.body);
        let location = back.header("location").unwrap();
        assert!(location.starts_with(REDIRECT), "{location}");
        query_of(location)
    }

    /// The whole front channel for `user`: a code. A browser signed in already goes straight to consent.
    fn code(&mut self, user: &str, verifier: &str) -> String {
        let page = self.authorize(verifier, |_| {});
        let to_consent = if page.status == 303 { page } else { self.login(&page, user, PASSWORD) };
        let back = self.consent(&to_consent, "allow");
        assert_eq!(back["state"], "st-123");
        assert_eq!(back["iss"], format!("http://{}/", self.server.address));
        back["code"].clone()
    }

    /// `POST /oauth/token`.
    fn token(&mut self, pairs: &[(&str, &str)]) -> (u16, Value) {
        let answer = self.server.raw_at("POST", "/oauth/token", &[("Content-Type", "application/x-www-form-urlencoded")], &form(pairs));
        (answer.status, serde_json::from_str(&answer.body).unwrap_or(Value::Null))
    }

    fn exchange(&mut self, code: &str, verifier: &str) -> (u16, Value) {
        let (client, resource) = (self.client_id.clone(), self.resource());
        self.token(&[("grant_type", "authorization_code"), ("code", code), ("redirect_uri", REDIRECT), ("client_id", &client), ("code_verifier", verifier), ("resource", &resource)])
    }

    fn refresh(&mut self, refresh_token: &str) -> (u16, Value) {
        let client = self.client_id.clone();
        self.token(&[("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", &client)])
    }
}

const VERIFIER: &str = "a-pkce-code-verifier-of-enough-length-0123456789";

/// A tool call with an access token: its HTTP status.
fn call(server: &HttpServer, token: &str, tool: &str, arguments: Value) -> Answer {
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": crate::mcp_client::meta(json!({}))}});
    server.post(&message, &[("Authorization", &format!("Bearer {token}"))])
}

fn oauth_server(db: &std::path::Path, extra: &[&str]) -> HttpServer {
    let mut args = vec!["--demo", "--oauth-server"];
    args.extend_from_slice(extra);
    http(db, &args)
}

fn events(db: &std::path::Path, entity: &str) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT who, action, COALESCE(after, '') FROM events WHERE entity = ?1 ORDER BY seq").unwrap();
    stmt.query_map([entity], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().collect::<Result<_, _>>().unwrap()
}

#[test]
fn the_metadata_names_every_endpoint_and_the_resource_names_this_issuer() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    let issuer = format!("http://{}/", server.address);
    let answer = server.raw_at("GET", "/.well-known/oauth-authorization-server", &[("Origin", "https://inspector.example")], "");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("access-control-allow-origin"), Some("*"), "public, for browser clients");
    let metadata: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(metadata["issuer"], json!(issuer));
    for (endpoint, path) in [("authorization_endpoint", "authorize"), ("token_endpoint", "token"), ("registration_endpoint", "register"), ("revocation_endpoint", "revoke")] {
        assert_eq!(metadata[endpoint], json!(format!("http://{}/oauth/{path}", server.address)), "{endpoint}");
    }
    assert_eq!(metadata["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(metadata["token_endpoint_auth_methods_supported"], json!(["none"]));
    assert_eq!(metadata["client_id_metadata_document_supported"], json!(true));
    assert_eq!(metadata["authorization_response_iss_parameter_supported"], json!(true));
    assert_eq!(metadata["scopes_supported"], json!(["studio:read", "bookings:write", "studio:manage", "reflow:apply"]));
    let resource: Value = serde_json::from_str(&server.raw_at("GET", "/.well-known/oauth-protected-resource/mcp", &[], "").body).unwrap();
    assert_eq!(resource["authorization_servers"], json!([issuer]));
    // The token, registration and revocation endpoints answer any origin's preflight and POST.
    for path in ["/oauth/token", "/oauth/register", "/oauth/revoke"] {
        let preflight = server.raw_at("OPTIONS", path, &[("Origin", "https://inspector.example"), ("Access-Control-Request-Method", "POST")], "");
        assert_eq!((preflight.status, preflight.header("access-control-allow-origin")), (204, Some("*")), "{path}");
        assert!(preflight.header("access-control-allow-methods").unwrap().contains("POST"), "{path}");
    }
    // An unknown client is refused as RFC 6749 §5.2 says (401 invalid_client), readable by the page.
    let refused = server.raw_at("POST", "/oauth/token", &[("Origin", "https://inspector.example"), ("Content-Type", "application/x-www-form-urlencoded")], "grant_type=refresh_token&client_id=x&refresh_token=y");
    assert_eq!((refused.status, refused.header("access-control-allow-origin")), (401, Some("*")));
    assert!(refused.body.contains("\"invalid_client\""), "{}", refused.body);
    // The login page itself is for the issuer's origin only: another origin gets 403.
    assert_eq!(server.raw_at("POST", "/oauth/login", &[("Origin", "https://evil.example")], "").status, 403);
}

/// RFC 7591 §2: a client keeps to the grant types it registered. One that names only
/// `authorization_code` gets an access token and no refresh token, and a refresh grant from it is
/// `unauthorized_client`; one that names none gets both, as the default says.
#[test]
fn a_client_registered_without_the_refresh_grant_gets_no_refresh_token() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let metadata = json!({"client_name": "Code Only", "redirect_uris": [REDIRECT], "grant_types": ["authorization_code"]});
    let answer = server.raw_at("POST", "/oauth/register", &[("Content-Type", "application/json")], &metadata.to_string());
    assert_eq!(answer.status, 201, "{}", answer.body);
    let registered: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(registered["grant_types"], json!(["authorization_code"]));
    let mut browser = Browser { server: &server, cookies: HashMap::new(), client_id: registered["client_id"].as_str().unwrap().to_owned() };
    let code = browser.code("alice", VERIFIER);
    let (status, tokens) = browser.exchange(&code, VERIFIER);
    assert_eq!(status, 200, "{tokens}");
    assert!(tokens.get("refresh_token").is_none(), "{tokens}");
    assert_eq!(call(&server, tokens["access_token"].as_str().unwrap(), "list_rooms", json!({})).status, 200);
    let kinds = || -> Vec<String> {
        let conn = rusqlite::Connection::open(&db.path).unwrap();
        let mut statement = conn.prepare("SELECT kind FROM oauth_tokens ORDER BY kind").unwrap();
        statement.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(kinds(), ["access"], "no refresh token is stored either");
    let (status, refused) = browser.refresh("sfr_anything");
    assert_eq!((status, refused["error"].as_str()), (400, Some("unauthorized_client")), "{refused}");
    // The default (no grant_types): both.
    let mut both = Browser::new(&server);
    let code = both.code("alice", VERIFIER);
    let (_, tokens) = both.exchange(&code, VERIFIER);
    assert!(tokens["refresh_token"].as_str().is_some_and(|t| t.starts_with("sfr_")), "{tokens}");
}

#[test]
fn a_user_signs_in_and_the_refresh_token_rotates_and_a_replay_revokes_the_grant() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    let code = browser.code("alice", VERIFIER);
    let (status, tokens) = browser.exchange(&code, VERIFIER);
    assert_eq!(status, 200, "{tokens}");
    assert_eq!((tokens["token_type"].as_str(), tokens["expires_in"].as_i64(), tokens["scope"].as_str()), (Some("Bearer"), Some(3600), Some("studio:read bookings:write")));
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    assert!(access.starts_with("sfo_") && refresh.starts_with("sfr_"));
    assert_eq!(call(&server, &access, "list_rooms", json!({})).status, 200);
    // Stored only as hashes.
    let raw = std::fs::read(&db.path).unwrap();
    assert!(!raw.windows(access.len()).any(|w| w == access.as_bytes()), "the access token is stored in clear");
    // The refresh token rotates: the new pair works, the old access token keeps working until it expires.
    let (status, rotated) = browser.refresh(&refresh);
    assert_eq!(status, 200, "{rotated}");
    let new_refresh = rotated["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(new_refresh, refresh);
    assert_eq!(call(&server, rotated["access_token"].as_str().unwrap(), "list_rooms", json!({})).status, 200);
    // The old refresh token again: the grant is revoked, and with it every token of it.
    let (status, replay) = browser.refresh(&refresh);
    assert_eq!((status, replay["error"].as_str()), (400, Some("invalid_grant")), "{replay}");
    assert_eq!(call(&server, rotated["access_token"].as_str().unwrap(), "list_rooms", json!({})).status, 401);
    assert_eq!(browser.refresh(&new_refresh).0, 400);
    let grants = events(&db.path, "grant");
    assert_eq!(grants.len(), 2, "{grants:?}");
    assert_eq!((grants[0].0.as_str(), grants[0].1.as_str()), ("alice", "granted"));
    assert!(grants[0].2.contains("\"client\":\"Test Desk\"") && grants[0].2.contains("\"user\":\"alice\""), "{grants:?}");
    assert_eq!(grants[1].1, "revoked");
    assert!(grants[1].2.contains("spent refresh token"), "{grants:?}");
    let listed: Value = serde_json::from_str(&studioflow(&["token", "list", "--db", db.path.to_str().unwrap(), "--json"])).unwrap();
    let grant = &listed[0];
    assert_eq!((grant["kind"].as_str(), grant["user"].as_str(), grant["client"].as_str(), grant["status"].as_str()), (Some("oauth_grant"), Some("alice"), Some("Test Desk"), Some("revoked")));
}

#[test]
fn pkce_missing_or_wrong_is_refused() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    // No challenge, or the plain method: the client is sent back with invalid_request (and iss, state).
    for edit in [&["code_challenge", "code_challenge_method"][..], &["code_challenge_method"][..]] {
        let answer = browser.authorize(VERIFIER, |params| params.retain(|(k, _)| !edit.contains(&k.as_str())));
        assert_eq!(answer.status, 303);
        let back = query_of(answer.header("location").unwrap());
        assert_eq!((back["error"].as_str(), back["state"].as_str()), ("invalid_request", "st-123"), "{back:?}");
        assert!(back["error_description"].contains("S256"));
    }
    let plain = browser.authorize(VERIFIER, |params| params.iter_mut().filter(|(k, _)| k == "code_challenge_method").for_each(|(_, v)| *v = "plain".into()));
    assert_eq!(query_of(plain.header("location").unwrap())["error"], "invalid_request");
    // A wrong verifier at the token endpoint: invalid_grant, and the code is spent.
    let code = browser.code("alice", VERIFIER);
    let (status, refused) = browser.exchange(&code, "another-verifier-of-enough-length-0123456789abc");
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")), "{refused}");
    assert!(refused["error_description"].as_str().unwrap().contains("PKCE"));
    assert_eq!(browser.exchange(&code, VERIFIER).0, 400, "a code that failed once is spent");
    // Without a verifier at all.
    let code = browser.code("alice", VERIFIER);
    let client = browser.client_id.clone();
    let (status, refused) = browser.token(&[("grant_type", "authorization_code"), ("code", &code), ("redirect_uri", REDIRECT), ("client_id", &client)]);
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_request")));
}

#[test]
fn a_redirect_uri_not_registered_is_shown_never_followed() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    let mut browser = Browser::new(&server);
    let answer = browser.authorize(VERIFIER, |params| params.iter_mut().filter(|(k, _)| k == "redirect_uri").for_each(|(_, v)| *v = "https://evil.example/steal".into()));
    assert_eq!(answer.status, 400);
    assert!(answer.header("location").is_none());
    assert!(answer.body.contains("not one of the redirect URIs"), "{}", answer.body);
    // A loopback redirect on another port is the same redirect (RFC 8252).
    let other_port = browser.authorize(VERIFIER, |params| params.iter_mut().filter(|(k, _)| k == "redirect_uri").for_each(|(_, v)| *v = "http://127.0.0.1:51234/callback".into()));
    assert_eq!(other_port.status, 200, "{}", other_port.body);
    // An unknown client: a page too.
    let unknown = browser.authorize(VERIFIER, |params| params.iter_mut().filter(|(k, _)| k == "client_id").for_each(|(_, v)| *v = "cl_nobody".into()));
    assert_eq!((unknown.status, unknown.header("location")), (400, None));
}

#[test]
fn a_reused_code_revokes_what_it_issued() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    let code = browser.code("alice", VERIFIER);
    let (_, tokens) = browser.exchange(&code, VERIFIER);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(call(&server, access, "list_rooms", json!({})).status, 200);
    let (status, again) = browser.exchange(&code, VERIFIER);
    assert_eq!((status, again["error"].as_str()), (400, Some("invalid_grant")));
    assert!(again["error_description"].as_str().unwrap().contains("used before"));
    assert_eq!(call(&server, access, "list_rooms", json!({})).status, 401, "the tokens of a reused code are revoked");
    assert_eq!(browser.refresh(tokens["refresh_token"].as_str().unwrap()).0, 400);
    assert!(events(&db.path, "grant").iter().any(|(_, action, after)| action == "revoked" && after.contains("second time")));
}

#[test]
fn a_wrong_resource_is_refused() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    for resource in [Some("https://other.example/mcp"), None] {
        let answer = browser.authorize(VERIFIER, |params| {
            params.retain(|(k, _)| k != "resource");
            if let Some(r) = resource {
                params.push(("resource".into(), r.into()));
            }
        });
        let back = query_of(answer.header("location").unwrap());
        assert_eq!(back["error"], "invalid_target", "{resource:?}");
    }
    let code = browser.code("alice", VERIFIER);
    let client = browser.client_id.clone();
    let (status, refused) = browser.token(&[("grant_type", "authorization_code"), ("code", &code), ("redirect_uri", REDIRECT), ("client_id", &client), ("code_verifier", VERIFIER), ("resource", "https://other.example/mcp")]);
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_target")));
}

#[test]
fn an_expired_code_is_refused() {
    let db = temp_db();
    let server = oauth_server(&db.path, &["--test-oauth-code-ttl-ms", "300"]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    let code = browser.code("alice", VERIFIER);
    std::thread::sleep(std::time::Duration::from_millis(600));
    let (status, refused) = browser.exchange(&code, VERIFIER);
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")));
    assert!(refused["error_description"].as_str().unwrap().contains("expired"), "{refused}");
    assert!(events(&db.path, "user").iter().any(|(who, action, after)| who == "alice" && action == "refused" && after.contains("expired")));
}

#[test]
fn a_form_without_its_csrf_token_is_refused() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    let page = browser.authorize(VERIFIER, |_| {});
    let req = hidden(&page.body, "req").unwrap();
    for fields in [vec![("req", req.as_str()), ("username", "alice"), ("password", PASSWORD)], vec![("req", req.as_str()), ("csrf", "forged-forged-forged-forged"), ("username", "alice"), ("password", PASSWORD)]] {
        let answer = browser.send("POST", "/oauth/login", &form(&fields));
        assert_eq!(answer.status, 403, "{}", answer.body);
        assert!(answer.body.contains("CSRF"));
    }
    // With the token, the same login goes on; the consent form needs it too.
    let to_consent = browser.login(&page, "alice", PASSWORD);
    assert_eq!(to_consent.status, 303);
    let consent = browser.send("GET", to_consent.header("location").unwrap(), "");
    let no_csrf = browser.send("POST", "/oauth/consent", &form(&[("req", &hidden(&consent.body, "req").unwrap()), ("consent", "allow")]));
    assert_eq!(no_csrf.status, 403);
}

#[test]
fn wrong_passwords_past_the_limit_pause_the_account() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    let page = browser.authorize(VERIFIER, |_| {});
    for _ in 0..5 {
        let answer = browser.login(&page, "alice", "not the password");
        assert_eq!(answer.status, 401, "{}", answer.body);
        assert!(answer.body.contains("wrong"));
    }
    let right = browser.login(&page, "alice", PASSWORD);
    assert_eq!(right.status, 429, "the right password past the limit: {}", right.body);
    assert!(right.body.contains("try again in"));
    let refused = events(&db.path, "user").into_iter().filter(|(who, action, _)| who == "alice" && action == "refused").count();
    assert_eq!(refused, 5, "each wrong password is in the history");
}

#[test]
fn a_disabled_user_cannot_sign_in_and_a_lowered_role_counts_at_the_next_request() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    create_user(&db.path, "bob", "staff");
    let path = db.path.to_str().unwrap();
    let mut browser = Browser::new(&server);
    let code = browser.code("alice", VERIFIER);
    let (_, tokens) = browser.exchange(&code, VERIFIER);
    let access = tokens["access_token"].as_str().unwrap();
    let booking = json!({"room": "podcast-1", "client": "client-002", "start": "2026-11-03T10:00", "end": "2026-11-03T12:00"});
    studioflow(&["user", "role", "--db", path, "alice", "viewer"]);
    let lowered = call(&server, access, "create_booking", booking.clone());
    assert_eq!(lowered.status, 403, "a viewer's token cannot book: {}", lowered.body);
    assert_eq!(call(&server, access, "list_rooms", json!({})).status, 200);
    studioflow(&["user", "disable", "--db", path, "alice"]);
    let disabled = call(&server, access, "list_rooms", json!({}));
    assert_eq!(disabled.status, 401);
    assert!(disabled.header("www-authenticate").unwrap().contains("disabled"), "{:?}", disabled.header("www-authenticate"));
    assert_eq!(browser.refresh(tokens["refresh_token"].as_str().unwrap()).0, 400);
    // And it cannot sign in again, even with the right password.
    let mut fresh = Browser { server: &server, cookies: HashMap::new(), client_id: browser.client_id.clone() };
    let page = fresh.authorize(VERIFIER, |_| {});
    let answer = fresh.login(&page, "alice", PASSWORD);
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(answer.body.contains("disabled"));
    assert!(events(&db.path, "user").iter().any(|(who, action, after)| who == "alice" && action == "refused" && after.contains("disabled")));
}

#[test]
fn the_pages_carry_no_script_cannot_be_framed_and_set_strict_cookies() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let mut browser = Browser::new(&server);
    let page = browser.authorize(VERIFIER, |_| {});
    assert!(!page.body.to_ascii_lowercase().contains("<script"));
    let policy = page.header("content-security-policy").unwrap();
    assert!(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"), "{policy}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let cookie = page.header("set-cookie").unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && !cookie.contains("Secure"), "loopback http: {cookie}");
    assert!(page.body.contains("name=\"username\"") && page.body.contains("name=\"password\"") && page.body.contains("Test Desk"));
    let to_consent = browser.login(&page, "alice", PASSWORD);
    let session = to_consent.header("set-cookie").unwrap();
    assert!(session.starts_with("sf_session=") && session.contains("HttpOnly") && session.contains("SameSite=Lax"), "{session}");
    let consent = browser.send("GET", to_consent.header("location").unwrap(), "");
    for shown in ["Test Desk", "127.0.0.1:9", "studio:read", "bookings:write", "value=\"allow\"", "value=\"deny\""] {
        assert!(consent.body.contains(shown), "the consent page shows {shown}: {}", consent.body);
    }
    // Deny: the client hears access_denied, and the history the refusal.
    let back = browser.send("POST", "/oauth/consent", &form(&[("req", &hidden(&consent.body, "req").unwrap()), ("csrf", &hidden(&consent.body, "csrf").unwrap()), ("consent", "deny")]));
    assert_eq!(query_of(back.header("location").unwrap())["error"], "access_denied");
    assert!(events(&db.path, "user").iter().any(|(_, action, after)| action == "refused" && after.contains("denied")));
    // An https issuer sets Secure cookies.
    let db2 = temp_db();
    let tls = http(&db2.path, &["--demo", "--oauth-server", "--resource", "https://studio.example.com/mcp"]);
    let page = Browser::new(&tls).authorize(VERIFIER, |params| params.iter_mut().filter(|(k, _)| k == "resource").for_each(|(_, v)| *v = "https://studio.example.com/mcp".into()));
    assert!(page.header("set-cookie").unwrap().contains("; Secure"), "{:?}", page.header("set-cookie"));
}

#[test]
fn registration_takes_the_hosts_redirects_and_refuses_the_rest_within_limits() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    let register = |body: &str| server.raw_at("POST", "/oauth/register", &[("Content-Type", "application/json")], body);
    for (host, uri) in [("Claude", "https://claude.ai/api/mcp/auth_callback"), ("ChatGPT", "https://chatgpt.com/connector_platform_oauth_redirect"), ("VS Code", "http://127.0.0.1:33418/"), ("VS Code web", "https://vscode.dev/redirect")] {
        let answer = register(&json!({"client_name": host, "redirect_uris": [uri], "token_endpoint_auth_method": "client_secret_post"}).to_string());
        assert_eq!(answer.status, 201, "{host}: {}", answer.body);
        let client: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(client["token_endpoint_auth_method"], "none", "public clients only");
        assert!(client.get("client_secret").is_none());
    }
    let refused = register(&json!({"redirect_uris": ["http://studio.example.com/cb"]}).to_string());
    assert_eq!(refused.status, 400);
    assert_eq!(serde_json::from_str::<Value>(&refused.body).unwrap()["error"], "invalid_redirect_uri");
    assert_eq!(register(&json!({"client_name": "x"}).to_string()).status, 400);
    let huge = json!({"client_name": "x".repeat(20_000), "redirect_uris": ["https://a.example/cb"]}).to_string();
    assert_eq!(register(&huge).status, 413, "size-capped");
    // 20 an hour from one address: 4 above, and the 400s did not count.
    for _ in 0..16 {
        assert_eq!(register(&json!({"redirect_uris": ["https://a.example/cb"]}).to_string()).status, 201);
    }
    assert_eq!(register(&json!({"redirect_uris": ["https://a.example/cb"]}).to_string()).status, 429);
}

#[test]
fn the_revocation_endpoint_ends_a_grant() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "manager");
    let mut browser = Browser::new(&server);
    let code = browser.code("alice", VERIFIER);
    let (_, tokens) = browser.exchange(&code, VERIFIER);
    let access = tokens["access_token"].as_str().unwrap();
    let client = browser.client_id.clone();
    let answer = server.raw_at("POST", "/oauth/revoke", &[("Content-Type", "application/x-www-form-urlencoded")], &form(&[("token", tokens["refresh_token"].as_str().unwrap()), ("client_id", &client)]));
    assert_eq!(answer.status, 200);
    assert_eq!(call(&server, access, "list_rooms", json!({})).status, 401);
    let unknown = server.raw_at("POST", "/oauth/revoke", &[("Content-Type", "application/x-www-form-urlencoded")], "token=sfr_nothing");
    assert_eq!(unknown.status, 200, "RFC 7009: an unknown token is no error");
    // `token revoke` ends a grant too.
    let code = browser.code("alice", VERIFIER);
    let (_, tokens) = browser.exchange(&code, VERIFIER);
    let listed: Value = serde_json::from_str(&studioflow(&["token", "list", "--db", db.path.to_str().unwrap(), "--json"])).unwrap();
    let live = listed.as_array().unwrap().iter().find(|g| g["status"] == "active").unwrap()["id"].as_str().unwrap().to_owned();
    studioflow(&["token", "revoke", "--db", db.path.to_str().unwrap(), &live]);
    assert_eq!(call(&server, tokens["access_token"].as_str().unwrap(), "list_rooms", json!({})).status, 401);
}

#[test]
fn user_accounts_keep_argon2id_hashes_and_set_up_links_set_a_password_once() {
    let db = temp_db();
    let server = oauth_server(&db.path, &[]);
    create_user(&db.path, "alice", "staff");
    let path = db.path.to_str().unwrap();
    let base = format!("http://{}", server.address);
    let link = studioflow(&["user", "create", "--db", path, "--name", "bob", "--role", "viewer", "--email", "bob@example.com", "--base-url", &base]);
    let link = link.trim();
    assert!(link.starts_with(&format!("{base}/oauth/setup?token=sfs_")), "{link}");
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let hash: String = conn.query_row("SELECT password_hash FROM users WHERE name = 'alice'", [], |r| r.get(0)).unwrap();
    assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
    let listed: Value = serde_json::from_str(&studioflow(&["user", "list", "--db", path, "--json"])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let bob = listed.as_array().unwrap().iter().find(|u| u["name"] == "bob").unwrap();
    assert_eq!((bob["role"].as_str(), bob["password_set"].as_bool(), bob["scopes"].clone()), (Some("viewer"), Some(false), json!(["studio:read"])));
    // The link's page, then its form: the password is set, and the link is spent.
    let mut browser = Browser::new(&server);
    let setup_path = link.trim_start_matches(&base).to_owned();
    let page = browser.send("GET", &setup_path, "");
    assert_eq!(page.status, 200, "{}", page.body);
    let token = hidden(&page.body, "token").unwrap();
    let csrf = hidden(&page.body, "csrf").unwrap();
    let short = browser.send("POST", "/oauth/setup", &form(&[("token", &token), ("csrf", &csrf), ("password", "short"), ("again", "short")]));
    assert_eq!(short.status, 400);
    let set = browser.send("POST", "/oauth/setup", &form(&[("token", &token), ("csrf", &csrf), ("password", PASSWORD), ("again", PASSWORD)]));
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(browser.send("GET", &setup_path, "").status, 404, "a link works once");
    let code = browser.code("bob", VERIFIER);
    let (_, tokens) = browser.exchange(&code, VERIFIER);
    assert_eq!(tokens["scope"], "studio:read", "a viewer grants only studio:read, whatever was asked");
    // A password never goes on the command line, nor is it stored in clear.
    let raw = std::fs::read(&db.path).unwrap();
    assert!(!raw.windows(PASSWORD.len()).any(|w| w == PASSWORD.as_bytes()));
    let refused = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(["user", "create", "--db", path, "--name", "carol", "--role", "staff"]).env_remove("STUDIOFLOW_PUBLIC_URL").output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "neither --password-stdin nor a base URL");
}
