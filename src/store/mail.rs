//! The outbox's e-mail: what one transaction tells the people whose sessions it changed, written
//! at its commit, in it. The `Writer` gathers a [`ChangeSet`] as it records booking events; at
//! the commit [`enqueue`] writes one `email` notification per client and engineer with an address
//! (and `notify` on) listing every session of theirs that changed, so one reflow is one message
//! per person, and after a reflow one digest to the studio's staff address. A row holds the facts
//! as JSON (the studio, the person, each session before and after, its sequence); the delivery
//! worker renders them (`crate::notify::mail`), so the store knows no MIME and no iCalendar.

use super::db::{self, params, Connection, OptionalExtension};
use super::events::{Action, Entity};
use super::Result;
use crate::domain::{Booking, Status, Studio};
use chrono::{DateTime, Utc};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// What one transaction changed that people are told of by e-mail.
#[derive(Debug, Default)]
pub(super) struct ChangeSet {
    /// Each booking event: the booking before (None: new), after, and how it changed.
    pub bookings: Vec<(Option<Booking>, Booking, Action)>,
    /// A reflow applied in this transaction: its staff digest is written too.
    pub reflow: Option<String>,
    /// The last event recorded, which the messages name as theirs.
    pub last_seq: i64,
    /// Clients' contacts read by this transaction's rule checks, by client id, so that their
    /// messages need no read of their own; forgotten when the transaction edits a person.
    pub client_contacts: std::collections::HashMap<String, super::rules::Contact>,
}

/// Whether a booking's change is one its people see in their calendar: new, or its room, time,
/// status or people changed (a note or a pin is the staff's own business).
fn shows(before: Option<&Booking>, after: &Booking) -> bool {
    match before {
        None => true,
        Some(b) => b.room != after.room || b.start != after.start || b.end != after.end || b.status != after.status || b.client != after.client || b.engineer != after.engineer,
    }
}

/// Someone told: a client or an engineer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Person {
    role: &'static str,
    id: String,
}

fn utc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn name_of(conn: &Connection, table: &str, id: &str) -> Result<String> {
    let sql = format!("SELECT name FROM {table} WHERE id = ?");
    Ok(conn.prepare_cached(&sql)?.query_row([id], |row| row.get::<_, String>(0)).optional()?.unwrap_or_else(|| id.to_owned()))
}

fn room_json(conn: &Connection, id: &str) -> Result<Json> {
    Ok(json!({ "id": id, "name": name_of(conn, "rooms", id)? }))
}

/// A person's name and the address to write to: none without one, or with `notify` off. A
/// client's, as the transaction's rule check read it, when it did.
fn contact(conn: &Connection, set: &ChangeSet, person: &Person) -> Result<Option<(String, Option<String>)>> {
    if person.role == "client"
        && let Some(known) = set.client_contacts.get(&person.id)
    {
        return Ok(Some(known.clone()));
    }
    let table = if person.role == "client" { "clients" } else { "engineers" };
    let sql = format!("SELECT name, CASE WHEN notify = 1 THEN email END FROM {table} WHERE id = ?");
    Ok(conn.prepare_cached(&sql)?.query_row([person.id.as_str()], |row| Ok((row.get(0)?, row.get(1)?))).optional()?)
}

/// One person's sessions in a change set, by booking: the first `before`, the last `after`, how
/// it changed last, and whether it is off their calendar.
type Sessions = BTreeMap<String, (Option<Booking>, Booking, Action, bool)>;

/// One session as a person's message tells it: where and when it is now, where it was, and
/// whether it is off their calendar (`cancel`).
fn session_json(conn: &Connection, before: Option<&Booking>, after: &Booking, action: Action, cancel: bool) -> Result<Json> {
    let sequence: i64 = conn.query_row("SELECT revision FROM bookings WHERE id = ?", [after.id.as_str()], |row| row.get(0))?;
    let engineer_name = |e: Option<&crate::domain::EngineerId>| -> Result<Json> {
        Ok(match e {
            Some(e) => Json::from(name_of(conn, "engineers", e.as_str())?),
            None => Json::Null,
        })
    };
    let engineer = engineer_name(after.engineer.as_ref())?;
    // Re-staffed (by a person or a reflow): whom the session had, so the old and the new engineer
    // (and the client) read who hands it to whom.
    let engineer_before = match before {
        Some(b) if b.engineer != after.engineer => json!({ "name": engineer_name(b.engineer.as_ref())? }),
        _ => Json::Null,
    };
    let before = match before {
        Some(b) if b.room != after.room || b.start != after.start || b.end != after.end => {
            json!({ "room": room_json(conn, b.room.as_str())?, "start": utc(b.start), "end": utc(b.end) })
        }
        _ => Json::Null,
    };
    Ok(json!({
        "booking": after.id.as_str(),
        "change": action.as_str(),
        "cancel": cancel,
        "sequence": sequence,
        "status": after.status.as_str(),
        "room": room_json(conn, after.room.as_str())?,
        "start": utc(after.start),
        "end": utc(after.end),
        "client": name_of(conn, "clients", after.client.as_str())?,
        "engineer": engineer,
        "engineer_before": engineer_before,
        "before": before,
    }))
}

/// Writes one `email` notification, pending and due at once.
fn insert(conn: &Connection, event_seq: i64, kind: &str, subject: &str, to: &str, payload: &Json) -> Result<()> {
    let now = super::outbox::database_now_ms(conn.backend());
    let sql = format!(
        "INSERT INTO notifications (id, event_seq, type, subject, channel, target, payload, created_ms, status, attempts, next_attempt_ms) \
         VALUES (?, ?, ?, ?, 'email', ?, ?, {now}, 'pending', 0, {now})"
    );
    let id = format!("msg_{}", crate::auth::secret::random(10)?);
    conn.prepare_cached(&sql)?.execute(params![id, event_seq, kind, subject, to, payload.to_string()])?;
    Ok(())
}

/// Writes the e-mail of one transaction's changes: a message per person concerned, and a reflow's
/// staff digest. Called by the `Writer` just before it commits.
pub(super) fn enqueue(conn: &Connection, studio: &Studio, set: &ChangeSet) -> Result<()> {
    if set.bookings.is_empty() && set.reflow.is_none() {
        return Ok(());
    }
    // The studio's row changes rarely: kept with the studio's other cached values.
    let staff: Option<String> = conn.cached("notify_email", || conn.query_row("SELECT notify_email FROM studio WHERE id = 1", (), |row| row.get(0)))?;
    let studio_json = json!({ "name": studio.name, "zone": studio.tz.name() });
    // Each person's sessions, by booking: the first `before` and the last `after` of the set.
    let mut told: BTreeMap<Person, Sessions> = BTreeMap::new();
    let mut first_kind: Option<&'static str> = None;
    let mut first_subject: Option<String> = None;
    for (before, after, action) in &set.bookings {
        if !shows(before.as_ref(), after) {
            continue;
        }
        first_kind = first_kind.or(super::outbox::event_type(Entity::Booking, *action));
        first_subject.get_or_insert_with(|| after.id.as_str().to_owned());
        let cancelled = after.status == Status::Cancelled;
        let mut now_on = vec![Person { role: "client", id: after.client.as_str().to_owned() }];
        if let Some(e) = &after.engineer {
            now_on.push(Person { role: "engineer", id: e.as_str().to_owned() });
        }
        let mut was_on = Vec::new();
        if let Some(b) = before {
            was_on.push(Person { role: "client", id: b.client.as_str().to_owned() });
            if let Some(e) = &b.engineer {
                was_on.push(Person { role: "engineer", id: e.as_str().to_owned() });
            }
        }
        // Someone taken off a session (an engineer swapped) has it cancelled on their calendar.
        let off: Vec<Person> = was_on.into_iter().filter(|p| !now_on.contains(p)).collect();
        for (person, cancel) in now_on.into_iter().map(|p| (p, cancelled)).chain(off.into_iter().map(|p| (p, true))) {
            let sessions = told.entry(person).or_default();
            match sessions.get_mut(after.id.as_str()) {
                Some(entry) => {
                    entry.1 = after.clone();
                    entry.2 = *action;
                    entry.3 = cancel;
                }
                None => {
                    sessions.insert(after.id.as_str().to_owned(), (before.clone(), after.clone(), *action, cancel));
                }
            }
        }
    }
    let kind = if set.reflow.is_some() { "reflow.applied" } else { first_kind.unwrap_or("booking.updated") };
    let subject = set.reflow.clone().or(first_subject).unwrap_or_default();
    let mut messages = 0;
    for (person, sessions) in &told {
        let Some((name, Some(email))) = contact(conn, set, person)? else { continue };
        let mut list = Vec::with_capacity(sessions.len());
        for (before, after, action, cancel) in sessions.values() {
            list.push(session_json(conn, before.as_ref(), after, *action, *cancel)?);
        }
        list.sort_by(|a, b| a["start"].as_str().cmp(&b["start"].as_str()));
        let payload = json!({
            "mail": "person",
            "to": { "email": email, "name": name, "role": person.role, "id": person.id },
            "studio": studio_json,
            "contact": staff,
            "reflow": set.reflow,
            "sessions": list,
        });
        insert(conn, set.last_seq, kind, &subject, &email, &payload)?;
        messages += 1;
    }
    if let (Some(reflow), Some(staff)) = (&set.reflow, &staff) {
        let payload = digest(conn, &studio_json, reflow, staff, messages)?;
        insert(conn, set.last_seq, "reflow.applied", reflow, staff, &payload)?;
    }
    Ok(())
}

/// The staff digest of a reflow: how many sessions moved and how many people were told, and
/// every unresolved session with its reason and its client's contact.
fn digest(conn: &Connection, studio: &Json, reflow: &str, staff: &str, told: usize) -> Result<Json> {
    let moved: i64 = conn.query_row("SELECT count(*) FROM reflow_moves WHERE reflow_id = ?", [reflow], |row| row.get(0))?;
    let mut stmt = conn.prepare_cached(
        "SELECT u.booking_id, u.reason, b.room_id, b.start_at, b.end_at, c.id, c.name, c.email, c.phone FROM reflow_unresolved u \
         JOIN bookings b ON b.id = u.booking_id JOIN clients c ON c.id = b.client_id WHERE u.reflow_id = ? ORDER BY b.start_at, u.booking_id",
    )?;
    let rows = stmt.query_map([reflow], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            super::instant_at(row, 3)?,
            super::instant_at(row, 4)?,
            (row.get::<_, String>(5)?, row.get::<_, String>(6)?, row.get::<_, Option<String>>(7)?, row.get::<_, Option<String>>(8)?),
        ))
    })?;
    let rows = rows.collect::<db::Result<Vec<_>>>()?;
    let mut unresolved = Vec::with_capacity(rows.len());
    for (booking, reason, room, start, end, (client, name, email, phone)) in rows {
        unresolved.push(json!({
            "booking": booking,
            "reason": reason,
            "room": room_json(conn, &room)?,
            "start": utc(start),
            "end": utc(end),
            "client": { "id": client, "name": name, "email": email, "phone": phone },
        }));
    }
    Ok(json!({
        "mail": "digest",
        "to": { "email": staff },
        "studio": studio,
        "reflow": reflow,
        "moved": moved,
        "people_told": told,
        "unresolved": unresolved,
    }))
}
