//! The waitlist: clients waiting for a time (a span, a length, a room or what it must have, an
//! engineer), in the order they joined. When a place frees, [`Writer::offer_freed`] (the one place
//! the matching lives, called by every path that frees one, in its own transaction) gives the first
//! entry that fits a hold on it: a tentative booking held for the studio's `waitlist_hold_hours`,
//! checked as any new booking is, and the entry leaves the list. Its events are the client's.

use super::db::{self, params, OptionalExtension};
use super::events::{self, Action, Entity};
use super::read;
use super::{clean_list, instant_at, json_list, to_json_list, Result, Store, StoreError, Writer};
use crate::domain::{align_up, normalize_features, Booking, ClientId, EngineerId, RoomId, Session, Status, StudioTz, TextKind};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Map, Value as Json};

/// The longest span a client may wait for.
const MAX_SPAN: Duration = Duration::days(366);
/// How many starts are tried in one room for one entry and one freed place: a freed place may be
/// long (an offline window removed), and each try is a full check. 192 quarter hours are two days.
const MAX_TRIES: usize = 192;

/// A client's wish, as asked for.
#[derive(Debug, Clone)]
pub struct NewWaitlistEntry {
    pub client: ClientId,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub duration_minutes: i64,
    /// A room, or (with `requires`) any room that has what the session needs; not both.
    pub room: Option<RoomId>,
    pub requires: Vec<String>,
    pub engineer: Option<EngineerId>,
}

/// A client waiting, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitlistEntry {
    pub id: i64,
    pub client: ClientId,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub duration_minutes: i64,
    pub room: Option<RoomId>,
    pub requires: Vec<String>,
    pub engineer: Option<EngineerId>,
    /// When they joined, by the studio's clock: the order of the list.
    pub joined_at: DateTime<Utc>,
}

/// A place that became free: in one room (or any, for an engineer's time given back), for
/// anyone (or for one engineer's sessions), over a span.
#[derive(Debug, Clone)]
pub(super) struct Freed {
    pub room: Option<RoomId>,
    pub engineer: Option<EngineerId>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

impl Freed {
    /// The place a booking held.
    pub fn place_of(b: &Booking) -> Freed {
        Freed { room: Some(b.room.clone()), engineer: None, from: b.start, to: b.end }
    }
}

const ENTRY_COLUMNS: &str = "id, client_id, from_at, to_at, duration_minutes, room_id, requires, engineer_id, joined_at";

fn entry_from_row(row: &db::Row<'_>) -> db::Result<(WaitlistEntry, String)> {
    Ok((
        WaitlistEntry {
            id: row.get(0)?,
            client: ClientId(row.get(1)?),
            from: instant_at(row, 2)?,
            to: instant_at(row, 3)?,
            duration_minutes: row.get(4)?,
            room: row.get::<_, Option<String>>(5)?.map(RoomId),
            requires: Vec::new(),
            engineer: row.get::<_, Option<String>>(7)?.map(EngineerId),
            joined_at: instant_at(row, 8)?,
        },
        row.get(6)?,
    ))
}

fn entries(conn: &db::Connection, client: Option<&ClientId>) -> Result<Vec<WaitlistEntry>> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM waitlist WHERE CAST(?1 AS TEXT) IS NULL OR client_id = ?1 ORDER BY joined_at, id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([client.map(|c| c.as_str())], entry_from_row)?;
    let mut out = Vec::new();
    for row in rows {
        let (mut entry, requires) = row?;
        entry.requires = json_list(&requires)?;
        out.push(entry);
    }
    Ok(out)
}

/// An entry's fields as the history shows them.
fn entry_fields(tz: &StudioTz, e: &WaitlistEntry) -> Map<String, Json> {
    events::fields([
        ("waitlist", json!(e.id)),
        ("from", json!(tz.format(e.from))),
        ("to", json!(tz.format(e.to))),
        ("duration_minutes", json!(e.duration_minutes)),
        ("room", json!(e.room.as_ref().map(RoomId::as_str))),
        ("requires", json!(e.requires)),
        ("engineer", json!(e.engineer.as_ref().map(EngineerId::as_str))),
    ])
}

impl Store {
    /// The waitlist (of one client, or everyone's), in the order it is served: by join time.
    pub fn waitlist(&self, client: Option<&ClientId>) -> Result<Vec<WaitlistEntry>> {
        entries(self.conn(), client)
    }
}

impl Writer<'_> {
    /// Puts a client on the waitlist, each field checked: the client, room and engineer exist and
    /// may be booked, the span ends after it starts and after now, within the booking horizon, and
    /// holds the session's length (15 to 1440 minutes).
    pub fn join_waitlist(&mut self, new: &NewWaitlistEntry) -> Result<WaitlistEntry> {
        if !(15..=1440).contains(&new.duration_minutes) {
            return Err(StoreError::invalid("duration_minutes", "duration_minutes must be 15 to 1440"));
        }
        if new.room.is_some() && !new.requires.is_empty() {
            return Err(StoreError::invalid("requires", "requires: give a room or what the session requires, not both"));
        }
        let requires = normalize_features(clean_list("requires", TextKind::Tag, &new.requires)?);
        match read::active(&self.tx, "clients", new.client.as_str())? {
            None => return Err(StoreError::UnknownClient(new.client.clone())),
            Some(false) => return Err(StoreError::Inactive { kind: "client", id: new.client.0.clone() }),
            Some(true) => {}
        }
        if let Some(engineer) = &new.engineer {
            match read::active(&self.tx, "engineers", engineer.as_str())? {
                None => return Err(StoreError::UnknownEngineer(engineer.clone())),
                Some(false) => return Err(StoreError::Inactive { kind: "engineer", id: engineer.0.clone() }),
                Some(true) => {}
            }
        }
        if let Some(room) = &new.room {
            match read::room(&self.tx, room)? {
                None => return Err(StoreError::UnknownRoom(room.clone())),
                Some(r) if !r.active => return Err(StoreError::Inactive { kind: "room", id: room.0.clone() }),
                Some(_) => {}
            }
        }
        let studio = self.studio()?.clone();
        let now = self.now();
        if new.to <= new.from {
            return Err(StoreError::invalid("to", "to: the span waited for must end after it starts"));
        }
        if new.to - new.from > MAX_SPAN {
            return Err(StoreError::invalid("to", "to: a client may wait for a span of at most 366 days: narrow it"));
        }
        if new.to - new.from < Duration::minutes(new.duration_minutes) {
            return Err(StoreError::invalid("duration_minutes", "duration_minutes: the session is longer than the span from..to: widen the span or shorten it"));
        }
        if new.to <= now {
            return Err(StoreError::invalid("to", format!("to: the span waited for must end after the studio's clock ({})", studio.tz.format(now))));
        }
        let horizon = studio.horizon_end(now);
        if new.to > horizon {
            return Err(StoreError::invalid("to", format!("to: the span waited for must end within the booking horizon ({})", studio.tz.format(horizon))));
        }
        let id: i64 = self.tx.query_row(
            "INSERT INTO waitlist (client_id, from_at, to_at, duration_minutes, room_id, requires, engineer_id, joined_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            params![
                new.client.as_str(),
                new.from.timestamp(),
                new.to.timestamp(),
                new.duration_minutes,
                new.room.as_ref().map(RoomId::as_str),
                to_json_list(&requires),
                new.engineer.as_ref().map(EngineerId::as_str),
                now.timestamp()
            ],
            |row| row.get(0),
        )?;
        let entry = WaitlistEntry { id, requires, joined_at: now, ..new_entry(new) };
        let fields = entry_fields(&studio.tz, &entry);
        self.event(Entity::Client, entry.client.as_str(), Action::WaitlistJoined, events::diff(None, Some(fields)))?;
        Ok(entry)
    }

    /// Takes entry `id` off the waitlist.
    pub fn leave_waitlist(&mut self, id: i64) -> Result<WaitlistEntry> {
        let entry = self.entry(id)?.ok_or_else(|| StoreError::invalid("id", format!("id: there is no waitlist entry {id} (it was offered a slot, or taken off)")))?;
        self.tx.execute("DELETE FROM waitlist WHERE id = ?", [id])?;
        let tz = self.studio()?.tz;
        self.event(Entity::Client, entry.client.as_str(), Action::WaitlistLeft, events::diff(Some(entry_fields(&tz, &entry)), None))?;
        Ok(entry)
    }

    fn entry(&self, id: i64) -> Result<Option<WaitlistEntry>> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM waitlist WHERE id = ?");
        let row = self.tx.prepare_cached(&sql)?.query_row([id], entry_from_row).optional()?;
        row.map(|(mut e, requires)| {
            e.requires = json_list(&requires)?;
            Ok(e)
        })
        .transpose()
    }

    /// Offers each freed place to the first waiting entry, by join time, that fits in it: a hold
    /// on a tentative booking for the studio's `waitlist_hold_hours` (ending by the session's
    /// start at the latest), checked as a new booking is (every rule of the room, the people and
    /// the calendar). The entry leaves the list, and the offer is an event of the client's. An
    /// offer that lapses is a hold that expires: that frees its place again, for the next entry.
    /// Returns the bookings offered.
    pub(super) fn offer_freed(&mut self, freed: &[Freed]) -> Result<Vec<Booking>> {
        if freed.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now();
        let mut waiting: Vec<WaitlistEntry> = entries(&self.tx, None)?.into_iter().filter(|e| e.to > now).collect();
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let hold = Duration::hours(super::prices::settings(&self.tx)?.waitlist_hold_hours);
        let tz = self.studio()?.tz;
        let rooms = read::rooms(&self.tx)?;
        let via = self.set_via("waitlist");
        let mut offered = Vec::new();
        let outcome = (|| {
            for place in freed {
                let mut taken = None;
                for (i, entry) in waiting.iter().enumerate() {
                    if let Some(booking) = self.try_entry(&tz, &rooms, place, entry, now, hold)? {
                        taken = Some((i, booking));
                        break;
                    }
                }
                if let Some((i, booking)) = taken {
                    let entry = waiting.remove(i);
                    self.tx.execute("DELETE FROM waitlist WHERE id = ?", [entry.id])?;
                    let mut fields = entry_fields(&tz, &entry);
                    fields.insert("booking".into(), json!(booking.id.as_str()));
                    fields.insert("hold_until".into(), json!(booking.hold_until.map(|t| tz.format(t))));
                    self.event(Entity::Client, entry.client.as_str(), Action::WaitlistOffered, events::diff(None, Some(fields)))?;
                    offered.push(booking);
                }
            }
            Ok(())
        })();
        self.set_via(via);
        outcome.map(|()| offered)
    }

    /// The first start in `place` where `entry`'s session fits, booked on hold; `None` when none does.
    fn try_entry(
        &mut self,
        tz: &StudioTz,
        rooms: &[crate::domain::Room],
        place: &Freed,
        entry: &WaitlistEntry,
        now: DateTime<Utc>,
        hold: Duration,
    ) -> Result<Option<Booking>> {
        if place.engineer.is_some() && entry.engineer != place.engineer {
            return Ok(None);
        }
        let length = Duration::minutes(entry.duration_minutes);
        let low = place.from.max(entry.from).max(now);
        let high = place.to.min(entry.to);
        if high - low < length {
            return Ok(None);
        }
        let candidates: Vec<&crate::domain::Room> = rooms
            .iter()
            .filter(|r| r.active)
            .filter(|r| place.room.as_ref().is_none_or(|p| *p == r.id) && entry.room.as_ref().is_none_or(|e| *e == r.id))
            .collect();
        for room in candidates {
            // On the room's grid of starts, or on the quarter hour as bookings are offered.
            let step = Duration::minutes(room.rules.start_step_minutes.unwrap_or(15));
            let mut start = match room.rules.start_step_minutes {
                Some(_) => room.rules.next_step(tz, whole_minute(low)),
                None => align_up(low, step),
            };
            for _ in 0..MAX_TRIES {
                if start + length > high {
                    break;
                }
                let hold_until = (now + hold).min(start);
                if hold_until > now {
                    let session = Session {
                        room: room.id.clone(),
                        client: entry.client.clone(),
                        engineer: entry.engineer.clone(),
                        start,
                        end: start + length,
                        party_size: 1,
                        requires: entry.requires.clone(),
                        // A waiting client asks for a time and a room, not for skills.
                        engineer_skills: Vec::new(),
                        status: Status::Tentative,
                        pinned: false,
                    };
                    match self.create_booking_with(&session, None, Some(hold_until)) {
                        Ok(booking) => return Ok(Some(booking)),
                        Err(StoreError::Refused(_) | StoreError::Inactive { .. } | StoreError::Invalid { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                start = room.rules.next_step(tz, start + step);
            }
        }
        Ok(None)
    }
}

/// `t`, or the next whole minute after it.
fn whole_minute(t: DateTime<Utc>) -> DateTime<Utc> {
    let seconds = t.timestamp().rem_euclid(60);
    if seconds == 0 { t } else { t + Duration::seconds(60 - seconds) }
}

fn new_entry(new: &NewWaitlistEntry) -> WaitlistEntry {
    WaitlistEntry {
        id: 0,
        client: new.client.clone(),
        from: new.from,
        to: new.to,
        duration_minutes: new.duration_minutes,
        room: new.room.clone(),
        requires: new.requires.clone(),
        engineer: new.engineer.clone(),
        joined_at: new.from,
    }
}
