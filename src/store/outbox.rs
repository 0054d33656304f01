//! The outbox: what the studio has to tell, written in the transaction of the change it tells of,
//! and webhook endpoints, the destinations it is told to. [`Writer::event`](super::Writer) calls
//! [`enqueue`] for every recorded event, so no write path can change a booking without its
//! notifications, and none can be written for a change that rolled back. A delivery worker
//! (`crate::notify`) claims due rows after commit with a lease on the database's clock
//! (PostgreSQL: `FOR UPDATE SKIP LOCKED`, as tasks are claimed), and records each attempt and the
//! next one's time in one transaction fenced on its claim (`webhooks.rs`, with the endpoints'
//! writes). It sends nothing itself, and imports no store module that writes.

use super::db::{self, params, Connection, OptionalExtension, Row, Value};
use super::events::{Action, Entity};
use super::{Result, Store};
use crate::domain::StudioTz;
use chrono::{DateTime, Utc};
use serde_json::{json, Value as Json};

/// Every event type an endpoint may subscribe to, as the payload's `type` names it.
pub const EVENT_TYPES: [&str; 11] = [
    "booking.created",
    "booking.updated",
    "booking.moved",
    "booking.cancelled",
    "booking.displaced",
    "hold.expired",
    "reflow.applied",
    "reflow.undone",
    "room.offline",
    "room.online",
    "waitlist.offered",
];

/// How many endpoints a studio may have: each change is written once per endpoint.
pub const MAX_WEBHOOKS: usize = 20;

/// The event type a recorded change is told as, if it is one anyone is told of.
pub fn event_type(entity: Entity, action: Action) -> Option<&'static str> {
    Some(match (entity, action) {
        (Entity::Booking, Action::Created) => "booking.created",
        (Entity::Booking, Action::Updated | Action::Confirmed) => "booking.updated",
        (Entity::Booking, Action::Moved | Action::MovedBack) => "booking.moved",
        (Entity::Booking, Action::Cancelled) => "booking.cancelled",
        (Entity::Booking, Action::Displaced) => "booking.displaced",
        (Entity::Booking, Action::HoldReleased) => "hold.expired",
        (Entity::Reflow, Action::Applied) => "reflow.applied",
        (Entity::Reflow, Action::Undone) => "reflow.undone",
        (Entity::OfflineWindow, Action::Created) => "room.offline",
        (Entity::OfflineWindow, Action::Removed) => "room.online",
        (Entity::Room, Action::Deactivated | Action::Retired) => "room.offline",
        (Entity::Room, Action::Reactivated) => "room.online",
        (Entity::Client, Action::WaitlistOffered) => "waitlist.offered",
        _ => return None,
    })
}

/// A webhook endpoint as listed (never its secret).
#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    pub id: String,
    pub url: String,
    /// The event types it receives; empty: every type.
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
    /// When a 410 (or the operator) disabled it, and why.
    pub disabled: Option<(DateTime<Utc>, String)>,
}

/// What a worker needs to send to an endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    /// `whsec_` and base64: the keys that sign, the current one first (and, during a rotation, the
    /// one before it, so that a receiver that has not switched yet still verifies).
    pub secrets: Vec<String>,
    /// Whether it still takes deliveries (not deleted, not disabled).
    pub live: bool,
}

/// A notification as `list_notifications` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub seq: i64,
    /// The webhook-id: the same on every attempt.
    pub id: String,
    pub event_seq: i64,
    pub kind: String,
    pub subject: String,
    pub channel: String,
    pub target: String,
    pub status: String,
    pub attempts: i64,
    pub created_ms: i64,
    pub next_attempt_ms: Option<i64>,
    pub last_error: Option<String>,
    pub done_ms: Option<i64>,
}

/// One claimed notification, due now.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub seq: i64,
    pub id: String,
    pub channel: String,
    pub target: String,
    pub payload: String,
    /// Attempts made before this one.
    pub attempts: i64,
    /// When it was written (unix ms, the database's clock).
    pub created_ms: i64,
    /// The claim's token: the fence of the write that records this attempt.
    pub claim: String,
}

/// One attempt at delivery, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub notification: String,
    pub attempt: i64,
    pub at_ms: i64,
    pub ok: bool,
    pub http_status: Option<i64>,
    /// The start of the receiver's answer, or what went wrong.
    pub answer: Option<String>,
    pub duration_ms: i64,
}

/// What happens after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Delivered: nothing more to do.
    Done,
    /// Try again this many milliseconds from now.
    RetryIn(i64),
    /// Give up: the notification failed for good, with why.
    GiveUp(String),
    /// Give up and disable the endpoint (it answered 410 Gone), with why.
    Disable(String),
}

/// Which notifications to list, in the order they were written.
#[derive(Debug, Clone, Default)]
pub struct NotificationQuery {
    /// Only those after this `seq`.
    pub since: Option<i64>,
    pub status: Option<String>,
    pub limit: usize,
}

/// The statuses a notification can have.
pub const STATUSES: [&str; 3] = ["pending", "delivered", "failed"];

/// The database's clock in unix milliseconds: claims are timed by the one clock every server shares.
pub(super) fn database_now_ms(backend: db::Backend) -> &'static str {
    match backend {
        db::Backend::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        db::Backend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    }
}

/// One event just recorded, as the outbox reads it.
pub(super) struct Recorded<'a> {
    /// Its number in the history.
    pub seq: i64,
    /// The studio's time of the change.
    pub at: DateTime<Utc>,
    pub actor: &'a crate::domain::Actor,
    pub entity: Entity,
    pub id: &'a str,
    pub action: Action,
}

/// Whether any live webhook is told of `entity`'s `action`: if none is, [`enqueue`] writes
/// nothing for it.
pub(super) fn any_listening(conn: &Connection, entity: Entity, action: Action) -> Result<bool> {
    Ok(match event_type(entity, action) {
        Some(kind) => !listening(conn, kind)?.is_empty(),
        None => false,
    })
}

/// The live webhooks told of events of `kind`. Every change is told to them, and they change
/// rarely: the connection keeps them until the cache's version moves (a trigger bumps it on any
/// change of webhooks).
fn listening(conn: &Connection, kind: &str) -> Result<Vec<String>> {
    let live: Vec<(String, String)> = conn.cached("webhooks", || {
        let mut stmt = conn.prepare_cached("SELECT id, events FROM webhooks WHERE deleted_at IS NULL AND disabled_at IS NULL ORDER BY id")?;
        let rows = stmt.query_map((), |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))?;
        rows.collect::<db::Result<Vec<_>>>()
    })?;
    let mut targets = Vec::new();
    for (hook, events) in live {
        let events = super::json_list(&events)?;
        if events.is_empty() || events.iter().any(|e| e == kind) {
            targets.push(hook);
        }
    }
    Ok(targets)
}

/// Writes the notifications of a recorded event (one per endpoint that takes its type), in the
/// writer's transaction.
pub(super) fn enqueue(conn: &Connection, tz: Option<&StudioTz>, event: Recorded<'_>) -> Result<()> {
    let Recorded { seq: event_seq, at, actor, entity, id, action } = event;
    let Some(kind) = event_type(entity, action) else { return Ok(()) };
    let targets = listening(conn, kind)?;
    if targets.is_empty() {
        return Ok(());
    }
    let mut data = match (entity, tz) {
        (Entity::Reflow, Some(tz)) => reflow_data(conn, tz, id)?,
        (Entity::Booking, Some(tz)) => match super::read::booking(conn, &crate::domain::BookingId::new(id))? {
            Some(b) => json!({ "booking": booking_data(conn, tz, &b)? }),
            None => json!({ "booking": { "id": id } }),
        },
        (Entity::OfflineWindow, _) => json!({ "window": id }),
        _ => json!({ "id": id }),
    };
    data["by"] = json!(actor.who);
    data["via"] = json!(actor.via);
    let payload = json!({ "type": kind, "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), "data": data }).to_string();
    let now = database_now_ms(conn.backend());
    let sql = format!(
        "INSERT INTO notifications (id, event_seq, type, subject, channel, target, payload, created_ms, status, attempts, next_attempt_ms) \
         VALUES (?, ?, ?, ?, 'webhook', ?, ?, {now}, 'pending', 0, {now})"
    );
    for target in targets {
        let message = format!("msg_{}", crate::auth::secret::random(10)?);
        conn.prepare_cached(&sql)?.execute(params![message, event_seq, kind, id, target, payload.clone()])?;
    }
    Ok(())
}

/// A booking as a webhook tells it: exactly the tools' booking (`get_booking`'s `booking`, through
/// the one [`crate::domain::booking_out`]), plus `sequence`, its revision (the iMIP SEQUENCE its
/// e-mail carries), so a receiver can drop a stale delivery.
pub(super) fn booking_data(conn: &Connection, tz: &StudioTz, b: &crate::domain::Booking) -> Result<Json> {
    let mut data = serde_json::to_value(crate::domain::booking_out(tz, b)).map_err(|e| super::StoreError::Corrupt(format!("booking {}: {e}", b.id)))?;
    let revision: i64 = conn.query_row("SELECT revision FROM bookings WHERE id = ?", [b.id.as_str()], |row| row.get(0))?;
    data["sequence"] = json!(revision);
    Ok(data)
}

/// A reflow's moves and unresolved bookings, as `reflow.applied` and `reflow.undone` tell them.
fn reflow_data(conn: &Connection, tz: &StudioTz, reflow: &str) -> Result<Json> {
    let mut stmt = conn.prepare_cached(
        "SELECT booking_id, from_room, from_start, from_end, to_room, to_start, to_end, from_engineer, to_engineer \
         FROM reflow_moves WHERE reflow_id = ? ORDER BY booking_id",
    )?;
    let rows = stmt.query_map([reflow], |row| {
        let at = |i| super::instant_at(row, i);
        Ok(json!({
            "booking": row.get::<_, String>(0)?,
            "from": { "room": row.get::<_, String>(1)?, "start": tz.format(at(2)?), "end": tz.format(at(3)?), "engineer": row.get::<_, Option<String>>(7)? },
            "to": { "room": row.get::<_, String>(4)?, "start": tz.format(at(5)?), "end": tz.format(at(6)?), "engineer": row.get::<_, Option<String>>(8)? },
        }))
    })?;
    let moved = rows.collect::<db::Result<Vec<_>>>()?;
    let mut stmt = conn.prepare_cached(
        "SELECT u.booking_id, u.reason, b.client_id FROM reflow_unresolved u LEFT JOIN bookings b ON b.id = u.booking_id WHERE u.reflow_id = ? ORDER BY u.booking_id",
    )?;
    let rows = stmt.query_map([reflow], |row| {
        Ok(json!({ "booking": row.get::<_, String>(0)?, "reason": row.get::<_, String>(1)?, "client": row.get::<_, Option<String>>(2)? }))
    })?;
    let unresolved = rows.collect::<db::Result<Vec<_>>>()?;
    Ok(json!({ "reflow": reflow, "moved": moved, "unresolved": unresolved }))
}

pub(super) fn webhook_from_row(row: &Row<'_>) -> db::Result<(Webhook, String)> {
    let events: String = row.get(2)?;
    let disabled = match super::instant_or_null_at(row, 4)? {
        Some(at) => Some((at, row.get::<_, Option<String>>(5)?.unwrap_or_default())),
        None => None,
    };
    Ok((
        Webhook { id: row.get(0)?, url: row.get(1)?, events: Vec::new(), created_at: super::instant_at(row, 3)?, disabled },
        events,
    ))
}

fn notification_from_row(row: &Row<'_>) -> db::Result<Notification> {
    let status: String = row.get(7)?;
    let pending = status == "pending";
    Ok(Notification {
        seq: row.get(0)?,
        id: row.get(1)?,
        event_seq: row.get(2)?,
        kind: row.get(3)?,
        subject: row.get(4)?,
        channel: row.get(5)?,
        target: row.get(6)?,
        status,
        attempts: row.get(8)?,
        created_ms: row.get(9)?,
        next_attempt_ms: if pending { Some(row.get(10)?) } else { None },
        last_error: row.get(11)?,
        done_ms: row.get(12)?,
    })
}

const NOTIFICATION_COLUMNS: &str =
    "seq, id, event_seq, type, subject, channel, target, status, attempts, created_ms, next_attempt_ms, last_error, done_ms";

impl Store {
    /// The webhook endpoints not deleted, oldest first.
    pub fn webhooks(&self) -> Result<Vec<Webhook>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT id, url, events, created_at, disabled_at, disabled_why FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id",
        )?;
        let rows = stmt.query_map((), webhook_from_row)?.collect::<db::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|(mut hook, events)| {
                hook.events = super::json_list(&events)?;
                Ok(hook)
            })
            .collect()
    }

    /// Where and how to send to the endpoint `id`, deleted or not (`None`: never existed).
    pub fn webhook_endpoint(&self, id: &str) -> Result<Option<Endpoint>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT url, secret, deleted_at IS NULL AND disabled_at IS NULL, previous_secret, previous_until FROM webhooks WHERE id = ?",
                [id],
                |row| {
                    let mut secrets = vec![row.get::<_, String>(1)?];
                    let until: Option<i64> = row.get(4)?;
                    if let (Some(previous), Some(until)) = (row.get::<_, Option<String>>(3)?, until)
                        && until > chrono::Utc::now().timestamp()
                    {
                        secrets.push(previous);
                    }
                    Ok(Endpoint { url: row.get(0)?, secrets, live: row.get::<_, i64>(2)? == 1 })
                },
            )
            .optional()?)
    }

    /// The latest attempts at deliveries to the endpoint `id`, newest first.
    pub fn webhook_deliveries(&self, id: &str, limit: usize) -> Result<Vec<Attempt>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT n.id, a.attempt, a.at_ms, a.ok, a.http_status, a.answer, a.duration_ms FROM notification_attempts a \
             JOIN notifications n ON n.seq = a.notification_seq WHERE n.channel = 'webhook' AND n.target = ? \
             ORDER BY a.at_ms DESC, a.notification_seq DESC, a.attempt DESC LIMIT ?",
        )?;
        let rows = stmt.query_map(params![id, limit.min(10_000) as i64], |row| {
            Ok(Attempt {
                notification: row.get(0)?,
                attempt: row.get(1)?,
                at_ms: row.get(2)?,
                ok: row.get::<_, i64>(3)? == 1,
                http_status: row.get(4)?,
                answer: row.get(5)?,
                duration_ms: row.get(6)?,
            })
        })?;
        Ok(rows.collect::<db::Result<Vec<_>>>()?)
    }

    /// Notifications in the order they were written, after `since`, of one status if asked.
    pub fn notifications(&self, query: &NotificationQuery) -> Result<Vec<Notification>> {
        let sql = format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM notifications WHERE seq > ? AND (CAST(? AS TEXT) IS NULL OR status = ?) ORDER BY seq LIMIT ?"
        );
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let status = query.status.clone().map_or(Value::Null, Value::from);
        let rows = stmt.query_map(
            vec![Value::from(query.since.unwrap_or(0)), status.clone(), status, Value::from(query.limit.min(i64::MAX as usize) as i64)],
            notification_from_row,
        )?;
        Ok(rows.collect::<db::Result<Vec<_>>>()?)
    }

    /// Claims up to `limit` notifications that are due and not held by a live claim, for
    /// `lease_ms`, under the token `claim` (which `server` makes random per claim); e-mail only
    /// with `email` (a server without SMTP leaves it to one with). Concurrent claimers on other
    /// servers skip the rows this one has locked, so each goes to one of them.
    pub fn claim_notifications(&self, claim: &str, lease_ms: i64, limit: usize, email: bool) -> Result<Vec<Claimed>> {
        let backend = self.backend();
        let now = database_now_ms(backend);
        let skip_locked = if backend == db::Backend::Postgres { "FOR UPDATE SKIP LOCKED" } else { "" };
        let channels = if email { "" } else { " AND channel = 'webhook'" };
        let due = format!("status = 'pending'{channels} AND next_attempt_ms <= {now} AND (lease_expires_ms IS NULL OR lease_expires_ms <= {now})");
        let sql = format!(
            "UPDATE notifications SET lease_expires_ms = {now} + ?1, claimed_by = ?2 \
             WHERE seq IN (SELECT seq FROM notifications WHERE {due} ORDER BY seq LIMIT ?3 {skip_locked}) AND {due} \
             RETURNING seq, id, channel, target, payload, attempts, created_ms"
        );
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let rows = stmt.query_map(params![lease_ms, claim, limit as i64], |row| {
            Ok(Claimed {
                seq: row.get(0)?,
                id: row.get(1)?,
                channel: row.get(2)?,
                target: row.get(3)?,
                payload: row.get(4)?,
                attempts: row.get(5)?,
                created_ms: row.get(6)?,
                claim: claim.to_owned(),
            })
        })?;
        let mut claimed = rows.collect::<db::Result<Vec<_>>>()?;
        claimed.sort_by_key(|c| c.seq);
        Ok(claimed)
    }

    /// The claims held on pending notifications (each names its holder, `host/pid/random/...`),
    /// for a starting worker to judge which holders are gone.
    pub fn notification_claims(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn().prepare_cached("SELECT DISTINCT claimed_by FROM notifications WHERE status = 'pending' AND claimed_by IS NOT NULL ORDER BY claimed_by")?;
        let rows = stmt.query_map((), |row| row.get::<_, String>(0))?;
        Ok(rows.collect::<db::Result<Vec<_>>>()?)
    }

    /// Lets go of the claims named, whose holders are gone, so that their rows go out now rather
    /// than when their leases lapse. A claim held by a live process is never named here (two
    /// servers on one SQLite file would otherwise both send it).
    pub fn release_notification_claims(&self, claims: &[String]) -> Result<usize> {
        let mut released = 0;
        for claim in claims {
            released += self.conn().execute(
                "UPDATE notifications SET lease_expires_ms = NULL, claimed_by = NULL WHERE status = 'pending' AND claimed_by = ?",
                [claim.as_str()],
            )?;
        }
        Ok(released)
    }
}
