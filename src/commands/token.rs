//! `studioflow token`: the API tokens remote clients send as `Authorization: Bearer <secret>`.
//! Create prints the secret once (stdout, alone, so a script can capture it); list shows
//! everything but secrets, which are not stored, and then the grants that staff gave apps through
//! `serve --oauth-server` (user, client, scopes, last use); revoke ends a token (and cancels the
//! tasks it started that are still live) or a grant (and every token of it). Both are recorded in
//! the history as the operator's. How the server checks tokens is the HTTP front's business.

use crate::store::Target;
use super::{open_existing, CommandResult};
use crate::auth::Scopes;
use crate::domain::Actor;
use crate::store::{ApiToken, GrantRecord};
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::json;
use std::io::Write;

/// What a token command does.
pub enum TokenAction {
    /// `expires_days`: how many days it works (`main` keeps it to 1..=3650); `None`, until revoked.
    Create { name: String, scopes: Scopes, expires_days: Option<u32> },
    List { json: bool },
    Revoke { id: String },
}

/// An instant as the list shows it to people.
fn when(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(|| "never".to_owned(), |at| at.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// An instant as the JSON list gives it.
fn rfc3339(at: Option<DateTime<Utc>>) -> Option<String> {
    at.map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true))
}

fn token_json(token: &ApiToken, now: DateTime<Utc>) -> serde_json::Value {
    json!({
        "id": token.id,
        "name": token.name,
        "scopes": token.scopes.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "created": rfc3339(Some(token.created)),
        "last_used": rfc3339(token.last_used),
        "expires": rfc3339(token.expires),
        "revoked": rfc3339(token.revoked),
        "status": token.status(now).to_string(),
    })
}

fn grant_json(grant: &GrantRecord) -> serde_json::Value {
    json!({
        "kind": "oauth_grant",
        "id": grant.id,
        "user": grant.user,
        "client": grant.client_name,
        "client_id": grant.client_id,
        "scopes": grant.scopes.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "created": rfc3339(Some(grant.created)),
        "last_used": rfc3339(grant.last_used),
        "revoked": rfc3339(grant.revoked),
        "status": if grant.revoked.is_some() { "revoked" } else { "active" },
    })
}

/// `token`: creates, lists or revokes API tokens.
pub fn token(db: &Target, action: TokenAction) -> CommandResult {
    let mut store = open_existing(db)?;
    let mut out = std::io::stdout().lock();
    let now = Utc::now();
    match action {
        TokenAction::Create { name, scopes, expires_days } => {
            let expires = expires_days.map(|days| now + Duration::days(days.into()));
            let (token, secret) = store.write_as(&Actor::new(super::OPERATOR, "token create"), |w| w.create_token(&name, scopes, expires, now))?;
            let until = token.expires.map_or_else(|| "it works until revoked".to_owned(), |at| format!("it expires {}", when(Some(at))));
            eprintln!("Created token {} ({:?}) with scopes {}; {until}.", token.id, token.name, token.scopes.joined(", "));
            eprintln!("Its secret is printed once, now, and cannot be shown again: a client sends it as the header `Authorization: Bearer <secret>`.");
            eprintln!("Revoke it with `studioflow token revoke --db {} {}`.", db, token.id);
            writeln!(out, "{secret}")?;
        }
        TokenAction::List { json: true } => {
            let mut tokens: Vec<_> = store.tokens()?.iter().map(|t| token_json(t, now)).collect();
            tokens.extend(store.grants()?.iter().map(grant_json));
            writeln!(out, "{}", serde_json::Value::Array(tokens))?;
        }
        TokenAction::List { json: false } => {
            let tokens = store.tokens()?;
            if tokens.is_empty() {
                eprintln!("No tokens yet: `studioflow token create --db {} --name NAME --scope studio:read` makes one.", db);
            } else {
                writeln!(out, "ID\tNAME\tSCOPES\tCREATED\tLAST USED\tEXPIRES\tSTATUS")?;
            }
            for t in tokens {
                let (created, last_used, expires) = (when(Some(t.created)), when(t.last_used), when(t.expires));
                writeln!(out, "{}\t{}\t{}\t{created}\t{last_used}\t{expires}\t{}", t.id, t.name, t.scopes.joined(","), t.status(now))?;
            }
            let grants = store.grants()?;
            if !grants.is_empty() {
                writeln!(out, "\nGRANT\tUSER\tCLIENT\tSCOPES\tCREATED\tLAST USED\tSTATUS")?;
            }
            for g in grants {
                let status = g.revoked.map_or_else(|| "active".to_owned(), |at| format!("revoked {}", when(Some(at))));
                writeln!(out, "{}\t{}\t{}\t{}\t{}\t{}\t{status}", g.id, g.user, g.client_name, g.scopes.joined(","), when(Some(g.created)), when(g.last_used))?;
            }
        }
        TokenAction::Revoke { id } if id.trim().starts_with("gr_") => {
            let id = id.trim().to_owned();
            let revoked = store.write_as(&Actor::new(super::OPERATOR, "token revoke"), |w| {
                if !w.grant_exists(&id)? {
                    return Err(crate::store::StoreError::invalid("id", format!("there is no grant {id:?}: `studioflow token list` shows the grants' ids")));
                }
                w.revoke_grant(&id, "revoked by the operator")
            })?;
            if revoked {
                writeln!(out, "Revoked grant {id}: its access and refresh tokens no longer work.")?;
            } else {
                writeln!(out, "Grant {id} was revoked already.")?;
            }
        }
        TokenAction::Revoke { id } => {
            let (token, cancelled) = store.write_as(&Actor::new(super::OPERATOR, "token revoke"), |w| w.revoke_token(&id, now))?;
            writeln!(out, "Revoked {} ({:?}): it no longer works.", token.id, token.name)?;
            for task in &cancelled {
                let month = task.month.as_deref().unwrap_or("-");
                writeln!(out, "Cancelled its task {} ({}, reflow of {month}): the month is free again.", task.id, task.status.as_str())?;
            }
        }
    }
    Ok(())
}
