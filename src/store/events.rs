//! The history: one event per change to a booking, room, client, engineer or offline window, per
//! reflow applied or undone, and per API token created or revoked and task cancelled by the
//! operator (or by a revocation), written by the [`Writer`](super::Writer) in the same
//! transaction as the change. Events are
//! numbered in commit order (writers are serialised by `BEGIN IMMEDIATE`), so a reader that
//! resumes after the last number it saw misses and repeats nothing. An event keeps only the
//! fields that changed, before and after, as JSON.

use super::{instant_at, Result, Store, StoreError};
use crate::domain::{Actor, Booking, OfflineWindow, Room, StudioTz, TimeOff};
use chrono::{DateTime, Utc};
use super::db::{self, Value, Connection};
use serde_json::{json, Map, Value as Json};

/// What a change is about: a booking, a room, a client, an engineer, an offline window, a reflow
/// (applied or undone), an API token (created or revoked; never its secret), a task (cancelled
/// from outside MCP, by the operator or by revoking its owner's token), a staff account, an
/// OAuth grant, a webhook endpoint (never its secret) or the studio's own settings.
// Its names (snake case) are what the history stores and what its readers filter by, so the MCP
// edge reads them as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Entity {
    Booking,
    Room,
    Client,
    Engineer,
    OfflineWindow,
    Reflow,
    Token,
    Task,
    /// A staff account: created, its password set, its role changed, disabled, a sign-in refused.
    User,
    /// A user's grant to an OAuth client: granted, revoked.
    Grant,
    /// A webhook endpoint: created, deleted, disabled (a 410).
    Webhook,
    /// The studio's own settings.
    Studio,
}

impl Entity {
    pub const ALL: [Entity; 12] = [
        Entity::Booking,
        Entity::Room,
        Entity::Client,
        Entity::Engineer,
        Entity::OfflineWindow,
        Entity::Reflow,
        Entity::Token,
        Entity::Task,
        Entity::User,
        Entity::Grant,
        Entity::Webhook,
        Entity::Studio,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Entity::Booking => "booking",
            Entity::Room => "room",
            Entity::Client => "client",
            Entity::Engineer => "engineer",
            Entity::OfflineWindow => "offline_window",
            Entity::Reflow => "reflow",
            Entity::Token => "token",
            Entity::Task => "task",
            Entity::User => "user",
            Entity::Grant => "grant",
            Entity::Webhook => "webhook",
            Entity::Studio => "studio",
        }
    }

    pub fn parse(text: &str) -> Option<Entity> {
        Entity::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

/// What happened to the thing an event is about, as the history stores it (the words below are
/// the stored text: a history already written keeps its meaning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Created,
    Updated,
    Moved,
    Cancelled,
    /// A tentative booking's hold ran out, and the booking was cancelled.
    HoldReleased,
    /// A booking put back where it was by a reflow's undo.
    MovedBack,
    /// A booking flagged displaced: its room changed under it, or a window that displaced it went.
    Displaced,
    /// An offline window merged into another that it met.
    Merged,
    Removed,
    Deactivated,
    Reactivated,
    /// A room retired.
    Retired,
    /// A reflow's moves applied.
    Applied,
    /// A reflow's moves undone.
    Undone,
    /// An API token or an OAuth grant revoked.
    Revoked,
    /// A user's consent to a client, exchanged for its first tokens.
    Granted,
    /// A sign-in or an authorization refused (a wrong password, consent denied, a disabled user).
    Refused,
    /// A user's password set.
    PasswordSet,
    /// A user disabled.
    Disabled,
    /// An engineer's time off added (the event is the engineer's; the time off's id is a field).
    TimeOffAdded,
    /// An engineer's time off removed.
    TimeOffRemoved,
    /// A booking flagged displaced before takes its place back (the time off that displaced it went).
    Restored,
    /// Money received for a booking (the payment's id, amount and reference are fields).
    PaymentRecorded,
    /// A booking on hold confirmed: its deposit was paid, and the hold cleared.
    Confirmed,
    /// A client joined the waitlist (the event is the client's; the entry's id is a field).
    WaitlistJoined,
    /// A client left the waitlist, or was taken off it.
    WaitlistLeft,
    /// A client on the waitlist was offered a freed slot: a booking on hold (a field names it).
    WaitlistOffered,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Moved => "moved",
            Action::Cancelled => "cancelled",
            Action::HoldReleased => "hold released",
            Action::MovedBack => "moved back",
            Action::Displaced => "displaced",
            Action::Merged => "merged",
            Action::Removed => "removed",
            Action::Deactivated => "deactivated",
            Action::Reactivated => "reactivated",
            Action::Retired => "retired",
            Action::Applied => "applied",
            Action::Undone => "undone",
            Action::Revoked => "revoked",
            Action::Granted => "granted",
            Action::Refused => "refused",
            Action::PasswordSet => "password set",
            Action::Disabled => "disabled",
            Action::TimeOffAdded => "time off added",
            Action::TimeOffRemoved => "time off removed",
            Action::Restored => "restored",
            Action::PaymentRecorded => "payment recorded",
            Action::Confirmed => "confirmed",
            Action::WaitlistJoined => "waitlist joined",
            Action::WaitlistLeft => "waitlist left",
            Action::WaitlistOffered => "waitlist offered",
        }
    }
}

/// One recorded change.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Its place in commit order.
    pub seq: i64,
    /// When, by the studio's clock (a scenario database has a fixed one).
    pub at: DateTime<Utc>,
    /// When, by the real clock.
    pub real_at: DateTime<Utc>,
    pub who: String,
    pub via: String,
    pub entity: Entity,
    pub id: String,
    /// The [`Action`]'s stored text (`Action::as_str`), as read back.
    pub action: String,
    /// The changed fields as they were (empty for something new).
    pub before: Map<String, Json>,
    /// The changed fields as they are (empty for something removed).
    pub after: Map<String, Json>,
}

/// The fields that changed: before and after, each holding only those fields.
#[derive(Debug, Clone, Default)]
pub struct Change {
    before: Option<Map<String, Json>>,
    after: Option<Map<String, Json>>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.before.as_ref().is_none_or(Map::is_empty) && self.after.as_ref().is_none_or(Map::is_empty)
    }
}

/// The fields that differ between two snapshots; a missing snapshot (created, removed) keeps the
/// other whole.
pub fn diff(before: Option<Map<String, Json>>, after: Option<Map<String, Json>>) -> Change {
    match (before, after) {
        (Some(b), Some(a)) => {
            let keys: Vec<&String> = b.keys().chain(a.keys().filter(|k| !b.contains_key(*k))).collect();
            let (mut old, mut new) = (Map::new(), Map::new());
            for k in keys {
                let (x, y) = (b.get(k).unwrap_or(&Json::Null), a.get(k).unwrap_or(&Json::Null));
                if x != y {
                    old.insert(k.clone(), x.clone());
                    new.insert(k.clone(), y.clone());
                }
            }
            Change { before: Some(old), after: Some(new) }
        }
        (before, after) => Change { before, after },
    }
}

/// A snapshot from name-value pairs.
pub fn fields<const N: usize>(pairs: [(&str, Json); N]) -> Map<String, Json> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// A booking's fields as the history shows them (times in the studio's zone).
pub fn booking_fields(tz: &StudioTz, b: &Booking) -> Map<String, Json> {
    let mut m = fields([
        ("room", json!(b.room.as_str())),
        ("client", json!(b.client.as_str())),
        ("engineer", json!(b.engineer.as_ref().map(|e| e.as_str()))),
        ("start", json!(tz.format(b.start))),
        ("end", json!(tz.format(b.end))),
        ("party_size", json!(b.party_size)),
        ("requires", json!(b.requires)),
        ("engineer_skills", json!(b.engineer_skills)),
        ("status", json!(b.status.as_str())),
        ("pinned", json!(b.pinned)),
        ("notes", json!(b.notes)),
        ("hold_until", json!(b.hold_until.map(|t| tz.format(t)))),
        ("displaced", json!(b.displaced)),
    ]);
    // Money once there is any: a booking made before prices were kept reads as it did.
    if let Some(price) = b.money.price {
        m.insert("price".into(), json!(price));
    }
    if b.money.deposit_due != 0 {
        m.insert("deposit_due".into(), json!(b.money.deposit_due));
    }
    if b.money.paid != 0 {
        m.insert("paid".into(), json!(b.money.paid));
    }
    m
}

/// A room's fields as the history shows them.
pub fn room_fields(r: &Room) -> Map<String, Json> {
    let mut m = fields([
        ("name", json!(r.name)),
        ("capacity", json!(r.capacity)),
        ("features", json!(r.features)),
        ("opening_hours", json!(r.hours.to_lines())),
        ("buffer_minutes", json!(r.buffer.num_minutes())),
        ("active", json!(r.active)),
    ]);
    // The booking rules and prices that are set: a room without them reads as it did before they existed.
    for (name, value) in r.rules.set() {
        m.insert(name.to_owned(), json!(value));
    }
    if r.price.hourly_rate != 0 {
        m.insert("hourly_rate".into(), json!(r.price.hourly_rate));
    }
    if !r.price.rates.is_empty() {
        m.insert("rates".into(), super::prices::rates_json_value(&r.price.rates));
    }
    m
}

/// An offline window's fields as the history shows them.
pub fn window_fields(tz: &StudioTz, w: &OfflineWindow) -> Map<String, Json> {
    fields([
        ("room", json!(w.room.as_str())),
        ("from", json!(tz.format(w.from))),
        ("to", json!(tz.format(w.to))),
        ("reason", json!(w.reason)),
    ])
}

/// A time off's fields as the history shows them.
pub fn time_off_fields(tz: &StudioTz, t: &TimeOff) -> Map<String, Json> {
    fields([
        ("time_off", json!(t.id)),
        ("from", json!(tz.format(t.from))),
        ("to", json!(tz.format(t.to))),
        ("reason", json!(t.reason)),
    ])
}

/// A side of a change as its column holds it: a JSON object, or NULL.
fn stored(side: Option<Map<String, Json>>) -> Option<String> {
    side.map(|m| Json::Object(m).to_string())
}

/// Writes one event and returns its number. `at` is the studio's "now".
pub(super) fn record(conn: &Connection, at: DateTime<Utc>, actor: &Actor, entity: Entity, id: &str, action: Action, change: Change) -> Result<i64> {
    let seq = conn.prepare_cached(
        "INSERT INTO events (at, real_at, who, via, entity, entity_id, action, before, after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
    )?
    .query_row(db::params![
        at.timestamp(),
        Utc::now().timestamp_millis(),
        actor.who,
        actor.via,
        entity.as_str(),
        id,
        action.as_str(),
        stored(change.before),
        stored(change.after)
    ], |row| row.get(0))?;
    Ok(seq)
}

/// An event to be written with the change it records, in the same statement (see
/// [`INSERT_FOR_BOOKING_B`]).
pub(super) struct Pending<'a> {
    pub at: DateTime<Utc>,
    pub actor: &'a Actor,
    pub entity: Entity,
    pub action: Action,
    pub change: Change,
}

impl Pending<'_> {
    /// The arguments of [`INSERT_FOR_BOOKING_B`], in its order.
    pub fn values(self) -> Vec<Value> {
        db::Params::into_values(db::params![
            self.at.timestamp(),
            Utc::now().timestamp_millis(),
            self.actor.who,
            self.actor.via,
            self.entity.as_str(),
            self.action.as_str(),
            stored(self.change.before),
            stored(self.change.after)
        ])
    }
}

/// The insert of an event about the row of `b`, a WITH query's name for the booking just
/// inserted: its id is the event's `entity_id`. Its arguments are [`Pending::values`]; the casts
/// give the server the parameters' types, which an `INSERT ... SELECT` does not infer.
pub(super) const INSERT_FOR_BOOKING_B: &str = "INSERT INTO events (at, real_at, who, via, entity, entity_id, action, before, after) \
     SELECT CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), b.id, CAST(? AS TEXT), \
     CAST(? AS TEXT), CAST(? AS TEXT) FROM b RETURNING seq";

/// Puts `change` in place of what event `seq` recorded.
pub(super) fn correct(conn: &Connection, seq: i64, change: Change) -> Result<()> {
    conn.execute("UPDATE events SET before = ?, after = ? WHERE seq = ?", db::params![stored(change.before), stored(change.after), seq])?;
    Ok(())
}

/// Which events to list, in commit order.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    /// Only events after this one.
    pub after: Option<i64>,
    pub entity: Option<Entity>,
    pub id: Option<String>,
    pub limit: usize,
}

impl Store {
    /// The number of the last event committed (0 before any).
    pub fn last_event_seq(&self) -> Result<i64> {
        Ok(self.conn().query_row("SELECT COALESCE(MAX(seq), 0) FROM events", (), |row| row.get(0))?)
    }

    /// Events in commit order.
    pub fn events(&self, query: &EventQuery) -> Result<Vec<Event>> {
        let mut sql = "SELECT seq, at, real_at, who, via, entity, entity_id, action, before, after FROM events WHERE seq > ?".to_owned();
        let mut args: Vec<Value> = vec![Value::from(query.after.unwrap_or(0))];
        if let Some(entity) = query.entity {
            sql += " AND entity = ?";
            args.push(Value::from(entity.as_str().to_owned()));
        }
        if let Some(id) = &query.id {
            sql += " AND entity_id = ?";
            args.push(Value::from(id.clone()));
        }
        sql += " ORDER BY seq LIMIT ?";
        args.push(Value::from(query.limit.min(i64::MAX as usize) as i64));
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let rows = stmt.query_map(args, |row| {
            let real_ms: i64 = row.get(2)?;
            Ok((
                (row.get::<_, i64>(0)?, instant_at(row, 1)?, real_ms, row.get::<_, String>(3)?, row.get::<_, String>(4)?),
                (row.get::<_, String>(5)?, row.get::<_, String>(6)?, row.get::<_, String>(7)?),
                (row.get::<_, Option<String>>(8)?, row.get::<_, Option<String>>(9)?),
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let ((seq, at, real_ms, who, via), (entity, id, action), (before, after)) = row?;
            let object = |text: Option<String>| -> Result<Map<String, Json>> {
                match text {
                    None => Ok(Map::new()),
                    Some(t) => match serde_json::from_str(&t) {
                        Ok(Json::Object(m)) => Ok(m),
                        _ => Err(StoreError::Corrupt(format!("event {seq}: {t}"))),
                    },
                }
            };
            out.push(Event {
                seq,
                at,
                real_at: DateTime::from_timestamp_millis(real_ms).ok_or_else(|| StoreError::Corrupt(format!("event {seq}: time {real_ms}")))?,
                who,
                via,
                entity: Entity::parse(&entity).ok_or_else(|| StoreError::Corrupt(format!("event {seq}: entity {entity}")))?,
                id,
                action,
                before: object(before)?,
                after: object(after)?,
            });
        }
        Ok(out)
    }
}
