//! The outbox's writes: webhook endpoints created and deleted (recorded in the history, never
//! their secrets), and each delivery attempt recorded with what follows it, fenced on the claim
//! that sent it; a 410 disables the endpoint and fails what waited for it. The outbox itself
//! (what is written with every change, the claims, the reads) is `outbox.rs`.

use super::db::{params, OptionalExtension};
use super::events::{self, Action, Entity};
use super::outbox::{database_now_ms, webhook_from_row, Attempt, Claimed, Next, Webhook, EVENT_TYPES, MAX_WEBHOOKS};
use super::{Result, StoreError, Writer};
use chrono::{DateTime, Utc};
use serde_json::json;

impl Writer<'_> {
    /// Creates a webhook endpoint with its signing secret (`whsec_…`, made by the caller) and
    /// records it (never the secret) in the history.
    pub fn create_webhook(&mut self, url: &str, events: &[String], secret: &str) -> Result<Webhook> {
        if url.len() > 2000 {
            return Err(StoreError::invalid("url", "url: at most 2000 characters"));
        }
        for e in events {
            if !EVENT_TYPES.contains(&e.as_str()) {
                return Err(StoreError::invalid("events", format!("events: {e:?} is not an event type; use one of {}", EVENT_TYPES.join(", "))));
            }
        }
        let live: i64 = self.tx.query_row("SELECT count(*) FROM webhooks WHERE deleted_at IS NULL", (), |row| row.get(0))?;
        if live as usize >= MAX_WEBHOOKS {
            return Err(StoreError::invalid("url", format!("url: a studio has at most {MAX_WEBHOOKS} webhook endpoints; delete one first")));
        }
        let mut events = events.to_vec();
        events.sort();
        events.dedup();
        let id = format!("wh_{}", crate::auth::secret::random(5)?);
        let now = Utc::now();
        self.tx.execute(
            "INSERT INTO webhooks (id, url, secret, events, created_at) VALUES (?, ?, ?, ?, ?)",
            params![id, url, secret, super::to_json_list(&events), now.timestamp()],
        )?;
        let fields = events::fields([("url", json!(url)), ("events", json!(events))]);
        self.event(Entity::Webhook, &id, Action::Created, events::diff(None, Some(fields)))?;
        Ok(Webhook { id, url: url.to_owned(), events, created_at: DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now), disabled: None })
    }

    /// Deletes a webhook endpoint: its pending notifications fail as "endpoint deleted". Recorded.
    pub fn delete_webhook(&mut self, id: &str) -> Result<Webhook> {
        let found = self
            .tx
            .query_row(
                "SELECT id, url, events, created_at, disabled_at, disabled_why FROM webhooks WHERE id = ? AND deleted_at IS NULL",
                [id],
                webhook_from_row,
            )
            .optional()?;
        let Some((mut hook, events)) = found else {
            return Err(StoreError::invalid("id", format!("id: no webhook endpoint {id:?}; the list of endpoints shows their ids")));
        };
        hook.events = super::json_list(&events)?;
        self.tx.execute("UPDATE webhooks SET deleted_at = ? WHERE id = ?", params![Utc::now().timestamp(), id])?;
        self.fail_pending(id, "endpoint deleted")?;
        let fields = events::fields([("url", json!(hook.url))]);
        self.event(Entity::Webhook, id, Action::Removed, events::diff(Some(fields), None))?;
        Ok(hook)
    }

    /// Gives the endpoint `id` a new signing secret; the old one still signs (beside the new)
    /// until `keep_old_until`, so its receiver can switch without refusing a delivery. Recorded
    /// (never a secret).
    pub fn rotate_webhook_secret(&mut self, id: &str, secret: &str, keep_old_until: DateTime<Utc>) -> Result<()> {
        let changed = self.tx.execute(
            "UPDATE webhooks SET previous_secret = secret, previous_until = ?, secret = ? WHERE id = ? AND deleted_at IS NULL",
            params![keep_old_until.timestamp(), secret, id],
        )?;
        if changed == 0 {
            return Err(StoreError::invalid("id", format!("id: no webhook endpoint {id:?}; the list of endpoints shows their ids")));
        }
        let after = events::fields([("secret", json!("rotated")), ("previous_secret_until", json!(keep_old_until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)))]);
        self.event(Entity::Webhook, id, Action::Updated, events::diff(None, Some(after)))
    }

    fn fail_pending(&self, target: &str, why: &str) -> Result<()> {
        let now = database_now_ms(self.tx.backend());
        self.tx.execute(
            &format!("UPDATE notifications SET status = 'failed', last_error = ?, done_ms = {now}, lease_expires_ms = NULL, claimed_by = NULL WHERE channel = 'webhook' AND target = ? AND status = 'pending'"),
            params![why, target],
        )?;
        Ok(())
    }

    /// Records one attempt at the claimed notification and what follows it, if the claim still
    /// holds (else nothing, and `false`): another worker's claim or a deleted endpoint won.
    pub fn record_attempt(&mut self, claimed: &Claimed, attempt: &Attempt, next: &Next) -> Result<bool> {
        let now = database_now_ms(self.tx.backend());
        let (status, next_ms, error): (&str, i64, Option<String>) = match next {
            Next::Done => ("delivered", 0, None),
            Next::RetryIn(ms) => {
                let said: String = attempt.answer.as_deref().unwrap_or("").chars().take(200).collect();
                let why = match attempt.http_status {
                    Some(status) if said.trim().is_empty() => format!("HTTP {status}"),
                    Some(status) => format!("HTTP {status}: {said}"),
                    None => said,
                };
                ("pending", *ms, Some(why))
            }
            Next::GiveUp(why) | Next::Disable(why) => ("failed", 0, Some(why.clone())),
        };
        let done = if status == "pending" { "NULL".to_owned() } else { now.to_owned() };
        let changed = self.tx.execute(
            &format!(
                "UPDATE notifications SET status = ?, attempts = attempts + 1, next_attempt_ms = {now} + ?, last_error = ?, done_ms = {done}, \
                 lease_expires_ms = NULL, claimed_by = NULL WHERE seq = ? AND claimed_by = ? AND status = 'pending'"
            ),
            params![status, next_ms, error, claimed.seq, claimed.claim],
        )?;
        if changed == 0 {
            return Ok(false);
        }
        let answer = attempt.answer.as_ref().map(|a| a.chars().take(500).collect::<String>());
        self.tx.execute(
            "INSERT INTO notification_attempts (notification_seq, attempt, at_ms, ok, http_status, answer, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
            params![claimed.seq, claimed.attempts + 1, attempt.at_ms, attempt.ok, attempt.http_status, answer, attempt.duration_ms],
        )?;
        if let Next::Disable(why) = next {
            let disabled = self.tx.execute(
                "UPDATE webhooks SET disabled_at = ?, disabled_why = ? WHERE id = ? AND disabled_at IS NULL",
                params![Utc::now().timestamp(), why, claimed.target],
            )?;
            self.fail_pending(&claimed.target, "endpoint disabled")?;
            if disabled == 1 {
                let after = events::fields([("disabled", json!(why))]);
                self.event(Entity::Webhook, &claimed.target, Action::Disabled, events::diff(None, Some(after)))?;
            }
        }
        Ok(true)
    }
}

