//! Staff accounts: the people who sign in to studioflow's own authorization server (the login
//! page), each with a role that caps the scopes of what they grant (`auth::Role`). A password is
//! kept only as its argon2id PHC string (`auth::password`, hashed by the caller, on a blocking
//! thread); an account made without one holds the SHA-256 of a one-time set-up secret instead,
//! which sets the password once and expires. Creating an account, a password set, a role changed,
//! an account disabled, and a refused sign-in of a known account are events in the history.

use super::events::{self, Action, Entity};
use super::{instant_at, instant_or_null_at, Result, Store, StoreError, Writer};
use super::db::{self, params, Connection, OptionalExtension};
use crate::auth::{secret, Role};
use crate::domain::TextKind;
use chrono::{DateTime, Duration, SubsecRound, Utc};
use serde_json::json;

/// How long a set-up link works.
pub const SETUP_LIFETIME: Duration = Duration::days(7);

/// A staff account. Never its password.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    /// `usr_` and 40 random bits: what grants and tasks refer to.
    pub id: String,
    /// What the login form takes and the history shows: one word.
    pub name: String,
    pub email: Option<String>,
    pub role: Role,
    /// Whether a password is set (an account made with a set-up link has none until it is used).
    pub has_password: bool,
    pub created: DateTime<Utc>,
    pub disabled: Option<DateTime<Utc>>,
}

/// An account as a sign-in reads it: with its stored password hash.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub user: User,
    pub password_hash: Option<String>,
}

const COLUMNS: &str = "id, name, email, role, password_hash, created_at, disabled_at";

fn credentials_from_row(row: &db::Row<'_>) -> db::Result<Credentials> {
    let role: String = row.get(3)?;
    let role = Role::parse(&role).map_err(|e| db::Error::column(3, e))?;
    let password_hash: Option<String> = row.get(4)?;
    Ok(Credentials {
        user: User {
            id: row.get(0)?,
            name: row.get(1)?,
            email: row.get(2)?,
            role,
            has_password: password_hash.is_some(),
            created: instant_at(row, 5)?,
            disabled: instant_or_null_at(row, 6)?,
        },
        password_hash,
    })
}

fn user_by(conn: &Connection, key: &str, value: &str) -> Result<Option<Credentials>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE {key} = ?");
    Ok(conn.prepare_cached(&sql)?.query_row([value], credentials_from_row).optional()?)
}

/// A user name as stored: one word (the rule of ids), at most 64 characters.
fn user_name(name: &str) -> Result<String> {
    let name = super::clean_text("name", TextKind::Id, name)?;
    if name.chars().count() > 64 {
        return Err(StoreError::invalid("name", "a user name is at most 64 characters"));
    }
    Ok(name)
}

impl Store {
    /// Every account, disabled ones included, oldest first.
    pub fn users(&self) -> Result<Vec<User>> {
        let mut stmt = self.conn().prepare_cached(&format!("SELECT {COLUMNS} FROM users ORDER BY created_at, id"))?;
        let rows = stmt.query_map((), credentials_from_row)?;
        Ok(rows.map(|r| r.map(|c| c.user)).collect::<db::Result<_>>()?)
    }

    /// The account named `name`, with its password hash, for a sign-in.
    pub fn credentials(&self, name: &str) -> Result<Option<Credentials>> {
        user_by(self.conn(), "name", name.trim())
    }

    /// The account a set-up secret belongs to, while the secret is unused and unexpired.
    pub fn user_by_setup(&self, secret: &str, now: DateTime<Utc>) -> Result<Option<User>> {
        let sql = format!("SELECT {COLUMNS} FROM users WHERE setup_hash = ? AND setup_expires_at > ? AND disabled_at IS NULL");
        let found = self.conn().prepare_cached(&sql)?.query_row(params![secret::hash(secret), now.timestamp()], credentials_from_row).optional()?;
        Ok(found.map(|c| c.user))
    }
}

impl Writer<'_> {
    /// Creates an account with a password (its PHC string), or, without one, with a set-up secret
    /// that is returned once (the caller makes a link of it).
    pub fn create_user(&mut self, name: &str, email: Option<&str>, role: Role, password_hash: Option<String>, now: DateTime<Utc>) -> Result<(User, Option<String>)> {
        let name = user_name(name)?;
        let email = email.map(|e| super::clean_text("email", TextKind::Email, e)).transpose()?.filter(|e| !e.is_empty());
        if user_by(self.conn(), "name", &name)?.is_some() {
            return Err(StoreError::invalid("name", format!("there is already a user named {name:?}: `studioflow user list` shows them")));
        }
        let setup = match password_hash {
            Some(_) => None,
            None => Some(format!("sfs_{}", secret::random(20)?)),
        };
        let user = User { id: format!("usr_{}", secret::random(5)?), name, email, role, has_password: password_hash.is_some(), created: now.trunc_subsecs(0), disabled: None };
        self.conn().execute(
            "INSERT INTO users (id, name, email, role, password_hash, setup_hash, setup_expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                user.id,
                user.name,
                user.email,
                role.name(),
                password_hash,
                setup.as_deref().map(secret::hash),
                setup.as_ref().map(|_| (now + SETUP_LIFETIME).timestamp()),
                now.timestamp()
            ],
        )?;
        let fields = events::fields([("name", json!(user.name)), ("email", json!(user.email)), ("role", json!(role.name()))]);
        self.event(Entity::User, &user.id, Action::Created, events::diff(None, Some(fields)))?;
        Ok((user, setup))
    }

    /// The account named `name`, or bad input that says how to find the names.
    fn existing_user(&self, name: &str) -> Result<User> {
        user_by(self.conn(), "name", name.trim())?
            .map(|c| c.user)
            .ok_or_else(|| StoreError::invalid("name", format!("there is no user named {:?}: `studioflow user list` shows them", name.trim())))
    }

    /// Sets a password (its PHC string) and ends any set-up secret.
    pub fn set_password(&mut self, name: &str, password_hash: &str) -> Result<User> {
        let mut user = self.existing_user(name)?;
        self.conn().execute("UPDATE users SET password_hash = ?, setup_hash = NULL, setup_expires_at = NULL WHERE id = ?", params![password_hash, user.id])?;
        user.has_password = true;
        self.event(Entity::User, &user.id, Action::PasswordSet, events::Change::default())?;
        Ok(user)
    }

    /// Gives an account a new one-time set-up secret (returned once), which replaces the last.
    pub fn reset_setup(&mut self, name: &str, now: DateTime<Utc>) -> Result<(User, String)> {
        let user = self.existing_user(name)?;
        let setup = format!("sfs_{}", secret::random(20)?);
        self.conn().execute(
            "UPDATE users SET setup_hash = ?, setup_expires_at = ? WHERE id = ?",
            params![secret::hash(&setup), (now + SETUP_LIFETIME).timestamp(), user.id],
        )?;
        Ok((user, setup))
    }

    /// Changes an account's role; its grants carry no more than the new role from the next request.
    pub fn set_role(&mut self, name: &str, role: Role) -> Result<User> {
        let mut user = self.existing_user(name)?;
        self.conn().execute("UPDATE users SET role = ? WHERE id = ?", params![role.name(), user.id])?;
        let change = events::diff(Some(events::fields([("role", json!(user.role.name()))])), Some(events::fields([("role", json!(role.name()))])));
        user.role = role;
        self.event(Entity::User, &user.id, Action::Updated, change)?;
        Ok(user)
    }

    /// Disables an account: it cannot sign in, and its grants stop working at the next request.
    pub fn disable_user(&mut self, name: &str, now: DateTime<Utc>) -> Result<User> {
        let mut user = self.existing_user(name)?;
        if user.disabled.is_some() {
            return Err(StoreError::invalid("name", format!("user {:?} is already disabled", user.name)));
        }
        self.conn().execute("UPDATE users SET disabled_at = ?, setup_hash = NULL WHERE id = ?", params![now.timestamp(), user.id])?;
        user.disabled = Some(now.trunc_subsecs(0));
        self.event(Entity::User, &user.id, Action::Disabled, events::Change::default())?;
        Ok(user)
    }

    /// Records a refused sign-in or authorization of a known account, naming the client and why.
    pub fn record_refusal(&mut self, user_id: &str, client: &str, why: &str) -> Result<()> {
        let fields = events::fields([("client", json!(client)), ("why", json!(why))]);
        self.event(Entity::User, user_id, Action::Refused, events::diff(None, Some(fields)))
    }
}
