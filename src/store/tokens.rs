//! API tokens: the bearer secrets of remote clients, each with a name, its scopes, an optional
//! expiry, and revoked by time. As for calendar feeds, only a secret's SHA-256 is stored
//! (`auth::secret`): [`Writer::create_token`] returns the secret once, and nothing reads it back.
//! The HTTP front calls [`Store::authenticate_token`] on every request; which scope a request
//! needs is `auth`'s business, not this file's. Creating and revoking a token are recorded in the
//! history; a revocation also cancels the token's live tasks, in the same transaction, so that no
//! month stays locked by a task whose owner can no longer reach it.

use super::events::{self, Action, Entity};
use super::{instant_at, instant_or_null_at, Result, Store, StoreError, TaskRecord, Writer};
use crate::auth::{secret, Principal, Scopes};
use chrono::{DateTime, Duration, SecondsFormat, SubsecRound, Utc};
use super::db::{self, params, Connection, OptionalExtension};
use serde_json::json;
use std::fmt;

/// How every secret starts: a leaked one is recognisable (to secret scanners, in logs), and told
/// apart from an OAuth access token without a query.
pub const TOKEN_PREFIX: &str = "sft_";

/// The longest name, in characters.
const MAX_NAME: usize = 64;

/// A token's last use is recorded at most this often, so a busy client does not write on every
/// request.
const LAST_USED_STEP: Duration = Duration::seconds(60);

/// How long recording a token's use waits for another writer's lock: a reflow being applied may
/// hold it for seconds, and a request must not wait that long for bookkeeping.
const RECORD_USE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// A stored API token. Never its secret.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiToken {
    /// `tok_` and 40 random bits: names the token when it is listed or revoked.
    pub id: String,
    /// Unique among live tokens: the history records it as who wrote.
    pub name: String,
    pub scopes: Scopes,
    /// Real time, to the second, as every timestamp here: tokens age in real time, even in a demo
    /// studio whose clock stands still.
    pub created: DateTime<Utc>,
    /// Recorded at most once a minute (see [`Store::authenticate_token`]).
    pub last_used: Option<DateTime<Utc>>,
    pub expires: Option<DateTime<Utc>>,
    pub revoked: Option<DateTime<Utc>>,
}

/// Whether a token works at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus {
    Active,
    Revoked,
    Expired,
}

impl fmt::Display for TokenStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenStatus::Active => "active",
            TokenStatus::Revoked => "revoked",
            TokenStatus::Expired => "expired",
        })
    }
}

impl ApiToken {
    /// Revoked wins over expired: a token revoked before it expired is still shown as revoked.
    pub fn status(&self, now: DateTime<Utc>) -> TokenStatus {
        if self.revoked.is_some() {
            TokenStatus::Revoked
        } else if self.expires.is_some_and(|at| at <= now) {
            TokenStatus::Expired
        } else {
            TokenStatus::Active
        }
    }
}

/// What a presented secret turned out to be. The edge may tell a client that its token expired
/// or was revoked; an unknown secret says nothing more.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenCheck {
    Valid(ApiToken),
    Unknown,
    Revoked(ApiToken),
    Expired(ApiToken),
}

const COLUMNS: &str = "id, name, scopes, created_at, last_used_at, expires_at, revoked_at";

fn token_from_row(row: &db::Row<'_>) -> db::Result<ApiToken> {
    let scopes: String = row.get(2)?;
    let scopes = Scopes::parse_list(&scopes)
        .map_err(|e| db::Error::column(2, e.to_string()))?;
    Ok(ApiToken {
        id: row.get(0)?,
        name: row.get(1)?,
        scopes,
        created: instant_at(row, 3)?,
        last_used: instant_or_null_at(row, 4)?,
        expires: instant_or_null_at(row, 5)?,
        revoked: instant_or_null_at(row, 6)?,
    })
}

/// The token whose `key` column (`id` or `secret_hash`, both unique and indexed) holds `value`.
fn token_by(conn: &Connection, key: &str, value: &str) -> Result<Option<ApiToken>> {
    let sql = format!("SELECT {COLUMNS} FROM api_tokens WHERE {key} = ?");
    Ok(conn.prepare_cached(&sql)?.query_row([value], token_from_row).optional()?)
}

/// A name as it is stored: trimmed, 1 to [`MAX_NAME`] characters, printable.
fn token_name(name: &str) -> Result<String> {
    let count = name.trim().chars().count();
    if count == 0 || count > MAX_NAME {
        return Err(StoreError::invalid(
            "name",
            format!("a token's name is 1 to {MAX_NAME} characters (this one has {count}): name who or what will use it, e.g. \"mixing-agent\""),
        ));
    }
    // The rule of names: one line, no control or bidirectional characters.
    super::clean_text("name", crate::domain::TextKind::Name, name)
}

impl Store {
    /// Every token, revoked and expired ones included, oldest first.
    pub fn tokens(&self) -> Result<Vec<ApiToken>> {
        let mut stmt = self.conn().prepare_cached(&format!("SELECT {COLUMNS} FROM api_tokens ORDER BY created_at, rowid"))?;
        let rows = stmt.query_map((), token_from_row)?;
        Ok(rows.collect::<db::Result<_>>()?)
    }

    /// What `secret` is at `now`: one indexed read of its hash. For a valid token whose last use
    /// is unknown or a minute old, the use is then recorded; that write waits only a moment for
    /// the lock and never fails the check (a busy database is logged, and a later request records it).
    pub fn authenticate_token(&self, secret: &str, now: DateTime<Utc>) -> Result<TokenCheck> {
        let mut checked = self.check_token(secret, now)?;
        if let TokenCheck::Valid(token) = &mut checked
            && token.use_unrecorded(now)
        {
            match self.record_token_use(&token.id, now) {
                Ok(()) => token.last_used = Some(now.trunc_subsecs(0)),
                Err(e) => tracing::warn!(token = %token.id, error = %e, "could not record the token's use; a later request will"),
            }
        }
        Ok(checked)
    }

    /// [`Store::authenticate_token`] without recording the use: one indexed read, which in WAL
    /// mode never waits for a writer (the HTTP gate runs it inline, and records uses apart).
    pub fn check_token(&self, secret: &str, now: DateTime<Utc>) -> Result<TokenCheck> {
        if !secret.starts_with(TOKEN_PREFIX) {
            return Ok(TokenCheck::Unknown);
        }
        let Some(token) = token_by(self.conn(), "secret_hash", &secret::hash(secret))? else {
            return Ok(TokenCheck::Unknown);
        };
        Ok(match token.status(now) {
            TokenStatus::Revoked => TokenCheck::Revoked(token),
            TokenStatus::Expired => TokenCheck::Expired(token),
            TokenStatus::Active => TokenCheck::Valid(token),
        })
    }

    /// Sets a token's last use. Not through a [`Writer`]: there is nothing to check and no event
    /// to record, and a `BEGIN IMMEDIATE` would wait out the full busy timeout.
    pub fn record_token_use(&self, id: &str, now: DateTime<Utc>) -> Result<()> {
        // Never backwards, when two connections record uses at once.
        self.conn().execute_waiting(
            "UPDATE api_tokens SET last_used_at = ?1 WHERE id = ?2 AND (last_used_at IS NULL OR last_used_at < ?1)",
            params![now.timestamp(), id],
            RECORD_USE_WAIT,
        )?;
        Ok(())
    }
}

impl ApiToken {
    /// Whether a use at `now` is worth recording: its last use is unknown or a minute old.
    pub fn use_unrecorded(&self, now: DateTime<Utc>) -> bool {
        self.last_used.is_none_or(|at| now - at >= LAST_USED_STEP)
    }
}

impl Writer<'_> {
    /// Creates a token and returns it with its secret (`sft_` and 256 random bits), which is
    /// stored only as its hash and cannot be shown again. The name must not be a live token's.
    pub fn create_token(&mut self, name: &str, scopes: Scopes, expires: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Result<(ApiToken, String)> {
        let name = token_name(name)?;
        if scopes.is_empty() {
            return Err(StoreError::invalid("scopes", format!("a token needs at least one scope of {}", Scopes::all().joined(", "))));
        }
        if expires.is_some_and(|at| at <= now) {
            return Err(StoreError::invalid("expires", "a new token's expiry must be in the future"));
        }
        let secret = format!("{TOKEN_PREFIX}{}", secret::random(32)?);
        let token = ApiToken {
            id: format!("tok_{}", secret::random(5)?),
            name,
            scopes,
            created: now.trunc_subsecs(0),
            last_used: None,
            expires: expires.map(|at| at.trunc_subsecs(0)),
            revoked: None,
        };
        // The partial unique index keeps one live token per name; the name is checked first, under
        // the writer lock, because on PostgreSQL a refused INSERT aborts the whole transaction
        // (nothing more could be read in it to tell the caller why).
        if self.live_name(&token.name)? {
            return Err(StoreError::invalid(
                "name",
                format!("a live token is already named {:?}: pick another name, or revoke that token first", token.name),
            ));
        }
        self.conn().execute(
            "INSERT INTO api_tokens (id, name, secret_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
            params![token.id, token.name, secret::hash(&secret), scopes.joined(" "), now.timestamp(), expires.map(|at| at.timestamp())],
        )?;
        let fields = events::fields([
            ("name", json!(token.name)),
            ("scopes", json!(token.scopes.iter().map(|s| s.name()).collect::<Vec<_>>())),
            ("expires", json!(token.expires.map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true)))),
        ]);
        self.event(Entity::Token, &token.id, Action::Created, events::diff(None, Some(fields)))?;
        Ok((token, secret))
    }

    /// Whether a live (unrevoked) token has this name.
    fn live_name(&self, name: &str) -> Result<bool> {
        let sql = "SELECT EXISTS (SELECT 1 FROM api_tokens WHERE name = ? AND revoked_at IS NULL)";
        Ok(self.conn().query_row(sql, [name], |row| row.get(0))?)
    }

    /// Revokes a live token, from `now` on, and cancels its live tasks (their months are free at
    /// once, and a solve under way stops at its runner's next lease renewal or report); returns
    /// the token as revoked and the tasks it cancelled. The history records the revocation and
    /// each cancelled task.
    pub fn revoke_token(&mut self, id: &str, now: DateTime<Utc>) -> Result<(ApiToken, Vec<TaskRecord>)> {
        let id = id.trim();
        let Some(mut token) = token_by(self.conn(), "id", id)? else {
            return Err(StoreError::invalid("id", format!("there is no token {id:?}: `studioflow token list` shows the tokens' ids")));
        };
        if let Some(at) = token.revoked {
            return Err(StoreError::invalid(
                "id",
                format!("token {id} ({:?}) was already revoked at {}: `studioflow token list` shows which are active", token.name, at.format("%Y-%m-%d %H:%M UTC")),
            ));
        }
        let was = token.status(now);
        self.conn().execute("UPDATE api_tokens SET revoked_at = ? WHERE id = ?", params![now.timestamp(), id])?;
        token.revoked = Some(now.trunc_subsecs(0));
        let message = format!("Cancelled: the API token that started it, {id} ({:?}), was revoked; nothing was moved.", token.name);
        let cancelled = self.cancel_tasks_owned_by(&Principal::token_id(id), &message, now.timestamp_millis())?;
        // A cancelled task's id opens nothing any more (a finished task never changes, and only
        // its owner may read it), so the history may name it.
        let before = events::fields([("status", json!(was.to_string()))]);
        let after = events::fields([
            ("status", json!(TokenStatus::Revoked.to_string())),
            ("tasks_cancelled", json!(cancelled.iter().map(|t| t.id.as_str()).collect::<Vec<_>>())),
        ]);
        self.event(Entity::Token, id, Action::Revoked, events::diff(Some(before), Some(after)))?;
        Ok((token, cancelled))
    }
}
