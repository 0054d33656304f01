//! What studioflow's own authorization server issues, beside the API tokens and in the same form:
//! registered clients (RFC 7591), authorization codes, grants (one user's consent to one client)
//! and the grants' opaque access and refresh tokens, every secret stored only as its SHA-256
//! (`auth::secret`). A code is single-use and short-lived, and a second use revokes the grant it
//! made; a refresh token rotates on use, and a second use revokes its grant. The HTTP gate checks
//! an access token with one indexed read that also reads the user's role and state now
//! ([`Store::check_access`]), so a lowered role or a disabled account takes effect on the next
//! request. Grants and their revocations are events naming the user and the client.

use super::events::{self, Action, Entity};
use super::{instant_at, instant_or_null_at, Result, Store, StoreError, Writer};
use super::db::{self, params, OptionalExtension};
use crate::auth::{secret, Role, Scopes};
use chrono::{DateTime, Duration, SubsecRound, Utc};
use serde_json::json;

/// How an access token starts (told apart from an API token's `sft_` and from a JWT without a query).
pub const ACCESS_PREFIX: &str = "sfo_";
/// How a refresh token starts.
pub const REFRESH_PREFIX: &str = "sfr_";
/// How long a refresh token works unless it is used (each use gives a new one).
pub const REFRESH_LIFETIME: Duration = Duration::days(30);

/// A client that registered (RFC 7591). Clients that name themselves by a URL (CIMD) are not
/// stored: their document is fetched and cached by the server.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisteredClient {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// The registration as it was answered.
    pub metadata: serde_json::Value,
}

/// A code to issue, after a user's consent.
#[derive(Debug, Clone)]
pub struct NewCode<'a> {
    pub user_id: &'a str,
    pub client_id: &'a str,
    pub client_name: &'a str,
    pub redirect_uri: &'a str,
    /// The PKCE S256 `code_challenge`.
    pub challenge: &'a str,
    pub scopes: Scopes,
    /// Unix milliseconds after which the code is refused.
    pub expires_at_ms: i64,
}

/// What a token request presents with a code.
#[derive(Debug, Clone)]
pub struct CodeExchange<'a> {
    pub code: &'a str,
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub verifier: &'a str,
    pub now_ms: i64,
    pub access_ttl: Duration,
    /// Whether the client asked for refresh tokens (its metadata's grant types).
    pub refresh: bool,
}

/// Tokens issued for a grant: the secrets, shown once.
#[derive(Debug, Clone, PartialEq)]
pub struct Issued {
    pub grant_id: String,
    pub access_token: String,
    /// None for a client that did not ask for the `refresh_token` grant.
    pub refresh_token: Option<String>,
    pub expires_in: i64,
    /// What the access token may do now: the grant's scopes within the user's role.
    pub scopes: Scopes,
}

/// Why a token request got no tokens (the token endpoint's `invalid_grant`, but where the words differ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantRefusal {
    /// No such code or refresh token, or one of another client.
    Unknown,
    Expired,
    /// PKCE's verifier does not match the challenge.
    Verifier,
    /// The `redirect_uri` is not the one the code was issued for.
    RedirectUri,
    /// Used before: the grant it made is revoked now.
    Reused,
    /// The grant was revoked, or its user disabled.
    Revoked,
}

impl GrantRefusal {
    /// The `error_description` of the token endpoint's answer.
    pub fn describe(&self) -> &'static str {
        match self {
            GrantRefusal::Unknown => "the code or refresh token is unknown, or was issued to another client",
            GrantRefusal::Expired => "the code or refresh token has expired: sign in again",
            GrantRefusal::Verifier => "the code_verifier does not match the code_challenge (PKCE S256)",
            GrantRefusal::RedirectUri => "the redirect_uri is not the one the code was issued for",
            GrantRefusal::Reused => "the code or refresh token was used before: the tokens it gave are revoked; sign in again",
            GrantRefusal::Revoked => "the grant was revoked, or its user disabled: sign in again",
        }
    }
}

/// A token request's outcome. A refusal may still have written (a reuse revokes a grant), so it
/// is a value the transaction commits, not an error that rolls it back.
#[derive(Debug, Clone, PartialEq)]
pub enum Exchanged {
    Issued(Issued),
    Refused(GrantRefusal),
}

/// What an access token stands for at the instant it is checked.
#[derive(Debug, Clone, PartialEq)]
pub enum AccessCheck {
    Valid(Access),
    Unknown,
    Expired,
    /// Its grant was revoked, or its user is disabled.
    Revoked(String),
}

/// A valid access token: whose it is and what it may do now.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    pub grant_id: String,
    pub user_id: String,
    pub user_name: String,
    pub client_name: String,
    /// The grant's scopes within the user's role now.
    pub scopes: Scopes,
    pub last_used: Option<DateTime<Utc>>,
}

/// A grant as `token list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRecord {
    pub id: String,
    pub user: String,
    pub client_id: String,
    pub client_name: String,
    pub scopes: Scopes,
    pub created: DateTime<Utc>,
    pub last_used: Option<DateTime<Utc>>,
    pub revoked: Option<DateTime<Utc>>,
}

fn scopes_at(row: &db::Row<'_>, column: usize) -> db::Result<Scopes> {
    let text: String = row.get(column)?;
    Ok(Scopes::from_claim(&text))
}

fn role_at(row: &db::Row<'_>, column: usize) -> db::Result<Role> {
    let text: String = row.get(column)?;
    Role::parse(&text).map_err(|e| db::Error::column(column, e))
}

impl Store {
    /// A registered client, by its id.
    pub fn registered_client(&self, id: &str) -> Result<Option<RegisteredClient>> {
        let sql = "SELECT id, name, redirect_uris, metadata FROM oauth_clients WHERE id = ?";
        let row = self.conn().prepare_cached(sql)?.query_row([id], |row| Ok((row.get(0)?, row.get(1)?, row.get::<_, String>(2)?, row.get::<_, String>(3)?))).optional()?;
        let Some((id, name, uris, metadata)) = row else { return Ok(None) };
        Ok(Some(RegisteredClient {
            id,
            name,
            redirect_uris: super::json_list(&uris)?,
            metadata: serde_json::from_str(&metadata).map_err(|e| StoreError::Corrupt(format!("a client's metadata: {e}")))?,
        }))
    }

    /// What an access token stands for at `now`: one indexed read of its hash, with its grant and
    /// its user's role and state as they are now.
    pub fn check_access(&self, token: &str, now: DateTime<Utc>) -> Result<AccessCheck> {
        if !token.starts_with(ACCESS_PREFIX) {
            return Ok(AccessCheck::Unknown);
        }
        let sql = "SELECT t.expires_at, g.id, g.scopes, g.client_name, g.revoked_at, g.last_used_at, u.id, u.name, u.role, u.disabled_at \
                   FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id \
                   WHERE t.token_hash = ? AND t.kind = 'access'";
        let row = self
            .conn()
            .prepare_cached(sql)?
            .query_row([secret::hash(token)], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    Access {
                        grant_id: row.get(1)?,
                        scopes: scopes_at(row, 2)?.and(role_at(row, 8)?.scopes()),
                        client_name: row.get(3)?,
                        last_used: instant_or_null_at(row, 5)?,
                        user_id: row.get(6)?,
                        user_name: row.get(7)?,
                    },
                    row.get::<_, Option<i64>>(4)?.is_some(),
                    row.get::<_, Option<i64>>(9)?.is_some(),
                ))
            })
            .optional()?;
        Ok(match row {
            None => AccessCheck::Unknown,
            Some((_, access, true, _)) => AccessCheck::Revoked(format!("grant {} was revoked", access.grant_id)),
            Some((_, access, _, true)) => AccessCheck::Revoked(format!("user {} is disabled", access.user_name)),
            Some((expires, _, _, _)) if expires <= now.timestamp() => AccessCheck::Expired,
            Some((_, access, _, _)) => AccessCheck::Valid(access),
        })
    }

    /// Sets a grant's last use (at most once a minute: the caller asks [`Access::use_unrecorded`]).
    pub fn record_grant_use(&self, grant_id: &str, now: DateTime<Utc>) -> Result<()> {
        self.conn().execute_waiting(
            "UPDATE oauth_grants SET last_used_at = ?1 WHERE id = ?2 AND (last_used_at IS NULL OR last_used_at < ?1)",
            params![now.timestamp(), grant_id],
            std::time::Duration::from_millis(50),
        )?;
        Ok(())
    }

    /// Every grant, revoked ones included, oldest first, with its user's name.
    pub fn grants(&self) -> Result<Vec<GrantRecord>> {
        let sql = "SELECT g.id, u.name, g.client_id, g.client_name, g.scopes, g.created_at, g.last_used_at, g.revoked_at \
                   FROM oauth_grants g JOIN users u ON u.id = g.user_id ORDER BY g.created_at, g.id";
        let mut stmt = self.conn().prepare_cached(sql)?;
        let rows = stmt.query_map((), |row| {
            Ok(GrantRecord {
                id: row.get(0)?,
                user: row.get(1)?,
                client_id: row.get(2)?,
                client_name: row.get(3)?,
                scopes: scopes_at(row, 4)?,
                created: instant_at(row, 5)?,
                last_used: instant_or_null_at(row, 6)?,
                revoked: instant_or_null_at(row, 7)?,
            })
        })?;
        Ok(rows.collect::<db::Result<_>>()?)
    }
}

impl Access {
    /// Whether a use at `now` is worth recording: its last use is unknown or a minute old.
    pub fn use_unrecorded(&self, now: DateTime<Utc>) -> bool {
        self.last_used.is_none_or(|at| now - at >= Duration::seconds(60))
    }
}

impl Writer<'_> {
    /// Registers a public client; its id is made here (`cl_` and 80 random bits).
    pub fn register_client(&mut self, name: &str, redirect_uris: &[String], mut metadata: serde_json::Value, now: DateTime<Utc>) -> Result<RegisteredClient> {
        let id = format!("cl_{}", secret::random(10)?);
        metadata["client_id"] = json!(id);
        metadata["client_id_issued_at"] = json!(now.timestamp());
        self.conn().execute(
            "INSERT INTO oauth_clients (id, name, redirect_uris, metadata, created_at) VALUES (?, ?, ?, ?, ?)",
            params![id, name, super::to_json_list(redirect_uris), metadata.to_string(), now.timestamp()],
        )?;
        Ok(RegisteredClient { id, name: name.to_owned(), redirect_uris: redirect_uris.to_vec(), metadata })
    }

    /// Issues a single-use code (`sfc_` and 160 random bits), returned once. Codes a day past
    /// their expiry are forgotten here (until then a reuse is still recognised).
    pub fn issue_code(&mut self, code: &NewCode<'_>) -> Result<String> {
        let secret = format!("sfc_{}", secret::random(20)?);
        self.conn().execute("DELETE FROM oauth_codes WHERE expires_at_ms < ?", params![code.expires_at_ms - 86_400_000])?;
        self.conn().execute(
            "INSERT INTO oauth_codes (code_hash, user_id, client_id, client_name, redirect_uri, challenge, scopes, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            params![secret::hash(&secret), code.user_id, code.client_id, code.client_name, code.redirect_uri, code.challenge, code.scopes.joined(" "), code.expires_at_ms],
        )?;
        Ok(secret)
    }

    /// Exchanges a code for a grant and its first tokens. A code is used once: presented again,
    /// it revokes the grant it made (RFC 9700 §4.5.3.2). Any other failure spends it too.
    pub fn exchange_code(&mut self, ask: &CodeExchange<'_>) -> Result<Exchanged> {
        let hash = secret::hash(ask.code);
        let sql = "SELECT user_id, client_id, client_name, redirect_uri, challenge, scopes, expires_at_ms, grant_id FROM oauth_codes WHERE code_hash = ?";
        let row: Option<(String, String, String, String, String, String, i64, Option<String>)> = self
            .conn()
            .query_row(sql, [hash.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)))
            .optional()?;
        let Some((user_id, client_id, client_name, redirect_uri, challenge, scopes, expires_at_ms, grant_id)) = row else {
            return Ok(Exchanged::Refused(GrantRefusal::Unknown));
        };
        if client_id != ask.client_id {
            return Ok(Exchanged::Refused(GrantRefusal::Unknown));
        }
        let user: Option<(String, Option<i64>, String)> =
            self.conn().query_row("SELECT role, disabled_at, name FROM users WHERE id = ?", [user_id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional()?;
        let Some((role, disabled, user_name)) = user else {
            return Ok(Exchanged::Refused(GrantRefusal::Revoked));
        };
        self.acting_as(&user_name);
        if let Some(grant_id) = grant_id {
            self.revoke_grant(&grant_id, "its authorization code was used a second time")?;
            return Ok(Exchanged::Refused(GrantRefusal::Reused));
        }
        let refusal = if expires_at_ms <= ask.now_ms {
            Some(GrantRefusal::Expired)
        } else if redirect_uri != ask.redirect_uri {
            Some(GrantRefusal::RedirectUri)
        } else if secret::pkce_s256(ask.verifier) != challenge {
            Some(GrantRefusal::Verifier)
        } else if disabled.is_some() {
            Some(GrantRefusal::Revoked)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            self.conn().execute("DELETE FROM oauth_codes WHERE code_hash = ?", [hash.as_str()])?;
            self.record_refusal(&user_id, &client_name, refusal.describe())?;
            return Ok(Exchanged::Refused(refusal));
        }
        let role = Role::parse(&role).map_err(StoreError::Corrupt)?;
        let now = DateTime::from_timestamp_millis(ask.now_ms).unwrap_or_else(Utc::now);
        let scopes = Scopes::from_claim(&scopes).and(role.scopes());
        let grant_id = format!("gr_{}", secret::random(5)?);
        self.conn().execute(
            "INSERT INTO oauth_grants (id, user_id, client_id, client_name, scopes, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            params![grant_id, user_id, client_id, client_name, scopes.joined(" "), now.timestamp()],
        )?;
        self.conn().execute("UPDATE oauth_codes SET grant_id = ? WHERE code_hash = ?", params![grant_id, hash])?;
        let fields = events::fields([
            ("user", json!(user_name)),
            ("client", json!(client_name)),
            ("client_id", json!(client_id)),
            ("scopes", json!(scopes.iter().map(|s| s.name()).collect::<Vec<_>>())),
        ]);
        self.event(Entity::Grant, &grant_id, Action::Granted, events::diff(None, Some(fields)))?;
        let issued = self.issue_tokens(&grant_id, scopes, now, ask.access_ttl, ask.refresh)?;
        Ok(Exchanged::Issued(issued))
    }

    /// Rotates a refresh token: the old one is spent and a new pair issued. A spent one presented
    /// again revokes the grant (someone holds a copy).
    pub fn refresh(&mut self, token: &str, client_id: &str, now: DateTime<Utc>, access_ttl: Duration) -> Result<Exchanged> {
        let hash = secret::hash(token);
        let sql = "SELECT t.expires_at, t.used_at, g.id, g.client_id, g.scopes, g.revoked_at, u.role, u.disabled_at, u.name \
                   FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id \
                   WHERE t.token_hash = ? AND t.kind = 'refresh'";
        type Row = (i64, Option<i64>, String, String, String, Option<i64>, String, Option<i64>, String);
        let row: Option<Row> = self
            .conn()
            .query_row(sql, [hash.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?)))
            .optional()?;
        let Some((expires, used, grant_id, grant_client, scopes, revoked, role, disabled, user_name)) = row else {
            return Ok(Exchanged::Refused(GrantRefusal::Unknown));
        };
        self.acting_as(&user_name);
        if grant_client != client_id {
            return Ok(Exchanged::Refused(GrantRefusal::Unknown));
        }
        if revoked.is_some() || disabled.is_some() {
            return Ok(Exchanged::Refused(GrantRefusal::Revoked));
        }
        if used.is_some() {
            self.revoke_grant(&grant_id, "a spent refresh token was presented again")?;
            return Ok(Exchanged::Refused(GrantRefusal::Reused));
        }
        if expires <= now.timestamp() {
            return Ok(Exchanged::Refused(GrantRefusal::Expired));
        }
        self.conn().execute("UPDATE oauth_tokens SET used_at = ? WHERE token_hash = ?", params![now.timestamp(), hash])?;
        let role = Role::parse(&role).map_err(StoreError::Corrupt)?;
        let issued = self.issue_tokens(&grant_id, Scopes::from_claim(&scopes).and(role.scopes()), now, access_ttl, true)?;
        Ok(Exchanged::Issued(issued))
    }

    /// A new access token for a grant, and a refresh token if `refresh`. Access tokens a day past
    /// their expiry are forgotten here.
    fn issue_tokens(&mut self, grant_id: &str, scopes: Scopes, now: DateTime<Utc>, access_ttl: Duration, refresh: bool) -> Result<Issued> {
        let access = format!("{ACCESS_PREFIX}{}", secret::random(32)?);
        let insert = "INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at) VALUES (?, ?, ?, ?)";
        self.conn().execute("DELETE FROM oauth_tokens WHERE kind = 'access' AND expires_at < ?", params![now.timestamp() - 86_400])?;
        self.conn().execute(insert, params![secret::hash(&access), grant_id, "access", (now + access_ttl).timestamp()])?;
        let refresh_token = if refresh {
            let token = format!("{REFRESH_PREFIX}{}", secret::random(32)?);
            self.conn().execute(insert, params![secret::hash(&token), grant_id, "refresh", (now + REFRESH_LIFETIME).timestamp()])?;
            Some(token)
        } else {
            None
        };
        Ok(Issued { grant_id: grant_id.to_owned(), access_token: access, refresh_token, expires_in: access_ttl.num_seconds(), scopes })
    }

    /// Revokes a grant and so every token of it (RFC 7009 for either kind of token; a reuse).
    /// A grant revoked already stays as it was. Returns whether it was live.
    pub fn revoke_grant(&mut self, grant_id: &str, why: &str) -> Result<bool> {
        let now = Utc::now().trunc_subsecs(0);
        let changed = self.conn().execute(
            "UPDATE oauth_grants SET revoked_at = ?, revoked_why = ? WHERE id = ? AND revoked_at IS NULL",
            params![now.timestamp(), why, grant_id],
        )?;
        if changed > 0 {
            let fields = events::fields([("why", json!(why))]);
            self.event(Entity::Grant, grant_id, Action::Revoked, events::diff(None, Some(fields)))?;
        }
        Ok(changed > 0)
    }

    /// The grant an access or refresh token belongs to, if `client_id` (when given) is its client.
    pub fn grant_of_token(&self, token: &str, client_id: Option<&str>) -> Result<Option<String>> {
        let sql = "SELECT g.id, g.client_id FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = ?";
        let row: Option<(String, String)> = self.conn().query_row(sql, [secret::hash(token)], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        Ok(row.filter(|(_, client)| client_id.is_none_or(|c| c == client)).map(|(id, _)| id))
    }

    /// Whether `id` names a grant (for `token revoke`, which takes API tokens' and grants' ids).
    pub fn grant_exists(&self, id: &str) -> Result<bool> {
        Ok(self.conn().query_row("SELECT EXISTS (SELECT 1 FROM oauth_grants WHERE id = ?)", [id], |r| r.get(0))?)
    }
}
