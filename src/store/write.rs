//! Writes. A [`Writer`] is one `BEGIN IMMEDIATE` transaction: it checks every rule of the calendar
//! against what is committed plus what it has written so far, and only then writes. Dropping it
//! without [`Writer::commit`] rolls everything back, so a refused series leaves no session behind.

use super::read::{self, booking_from_row, MAX_BOOKING, BOOKING_COLUMNS};
use super::{check_people, clean_list, clean_text, to_json_list, Result, StoreError};
use super::edits;
use super::events::{self, Entity};
use crate::domain::{
    expand_series, is_slug, normalize_features, overlaps, Actor, Booking, BookingId, BufferNote, Client,
    Engineer, Move, Session, OfflineWindow, Refusal, Room, RoomId, Series, SeriesId, Status, Studio, TextKind, MAX_HORIZON_DAYS, MAX_LIST,
};
use chrono::{DateTime, Duration, Utc};
use super::db::{self, params, Connection, OptionalExtension, Transaction};

/// The longest offline window, merged or not.
const MAX_WINDOW: Duration = Duration::days(366);
/// The longest reasons of a merged window together (one request's is a [`TextKind::Line`]).
const MAX_MERGED_REASON: usize = 1000;

/// Which sessions a cancellation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelScope {
    /// Only this booking.
    Occurrence,
    /// This session and every later one of its series.
    Following,
    /// Every session of its series that has not started yet.
    Series,
}

/// One write transaction. See the module docs.
pub struct Writer<'c> {
    pub(super) tx: Transaction<'c>,
    studio: Option<Studio>,
    /// Whether sessions and windows before the studio's clock are accepted: only for loading a
    /// studio's own records (see [`Writer::load_history`]).
    history: bool,
    /// Who writes and through what: every event of this transaction names them.
    actor: Actor,
}

impl<'c> Writer<'c> {
    pub(super) fn new(tx: Transaction<'c>, studio: Option<Studio>, actor: Actor) -> Self {
        Writer { tx, studio, history: false, actor }
    }

    /// Accepts sessions and offline windows before the studio's clock in this transaction. An
    /// import of a studio's own files carries its history: a session already held is a record,
    /// not a request, and refusing it would make a studio's past impossible to bring in. The
    /// horizon still holds, so that every stored instant stays inside the window the tools read.
    pub fn load_history(&mut self) {
        self.history = true;
    }

    /// Refuses a session start outside the booking window: before the studio's clock (unless
    /// loading history) or after its horizon. One rule for new, repeated and moved sessions.
    fn check_window(&self, start: DateTime<Utc>) -> Result<()> {
        let studio = self.studio()?;
        let now = studio.now(Utc::now());
        let horizon = studio.horizon_end(now);
        if start < now && !self.history {
            return Err(Refusal::Past { start: studio.tz.zoned(start), now: studio.tz.zoned(now) }.into());
        }
        if start > horizon {
            let days = studio.horizon.num_days();
            return Err(Refusal::BeyondHorizon { start: studio.tz.zoned(start), horizon: studio.tz.zoned(horizon), days }.into());
        }
        Ok(())
    }

    /// Who this transaction writes as.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// Writes the rest of this transaction through another way in (a reflow's id, for its moves),
    /// and returns the one it replaces.
    pub fn set_via(&mut self, via: impl Into<String>) -> String {
        std::mem::replace(&mut self.actor.via, via.into())
    }

    /// The studio's "now" (its scenario clock, or the real time).
    pub fn now(&self) -> DateTime<Utc> {
        self.studio.as_ref().map_or_else(Utc::now, |s| s.now(Utc::now()))
    }

    /// Records one change in the history, in this transaction.
    pub(super) fn event(&self, entity: Entity, id: &str, action: &str, change: events::Change) -> Result<()> {
        events::record(&self.tx, self.now(), &self.actor, entity, id, action, change)
    }

    /// Records a booking's change from `before` (None: it is new) to what it is now.
    pub(super) fn booking_event(&self, before: Option<&Booking>, id: &BookingId, action: &str) -> Result<Booking> {
        let after = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        let tz = self.studio()?.tz;
        let change = events::diff(before.map(|b| events::booking_fields(&tz, b)), Some(events::booking_fields(&tz, &after)));
        if !change.is_empty() {
            self.event(Entity::Booking, id.as_str(), action, change)?;
        }
        Ok(after)
    }

    /// Makes the writes durable and visible, and hands back the studio as it now stands.
    pub fn commit(self) -> Result<Option<Studio>> {
        self.tx.commit()?;
        Ok(self.studio)
    }

    pub(super) fn studio(&self) -> Result<&Studio> {
        self.studio.as_ref().ok_or(StoreError::NoStudio)
    }

    /// The studio's time zone, for writes that format times.
    pub fn studio_tz(&self) -> Result<crate::domain::StudioTz> {
        Ok(self.studio()?.tz)
    }

    /// Reads inside the transaction see its own writes.
    pub fn conn(&self) -> &Connection {
        &self.tx
    }

    /// A booking as this transaction sees it.
    pub fn booking(&self, id: &BookingId) -> Result<Option<Booking>> {
        read::booking(&self.tx, id)
    }

    /// The bookings written earlier under an idempotency key, if the key was used before. A key
    /// reused for a different request is refused, so that a retry never books something else.
    pub fn idempotent_replay(&self, key: &str, request: &str) -> Result<Option<Vec<Booking>>> {
        let Some((earlier, ids)) = super::history::remembered(&self.tx, key)? else { return Ok(None) };
        if earlier != request {
            return Err(StoreError::invalid(
                "idempotency_key",
                format!("idempotency_key {key:?} was already used for a different booking: use a new key for a new request"),
            ));
        }
        let mut bookings = Vec::with_capacity(ids.len());
        for id in ids {
            bookings.push(read::booking(&self.tx, &id)?.ok_or(StoreError::UnknownBooking(id))?);
        }
        Ok(Some(bookings))
    }

    /// Remembers what a request under an idempotency key wrote, in the same transaction.
    pub fn remember_idempotent(&mut self, key: &str, request: &str, bookings: &[Booking]) -> Result<()> {
        let ids: Vec<BookingId> = bookings.iter().map(|b| b.id.clone()).collect();
        super::history::remember(&self.tx, key, request, &ids)
    }

    /// Creates or replaces the studio's settings.
    pub fn set_studio(&mut self, studio: &Studio) -> Result<()> {
        let name = clean_text("name", TextKind::Name, &studio.name)?;
        if !(1..=MAX_HORIZON_DAYS).contains(&studio.horizon.num_days()) {
            return Err(StoreError::invalid("horizon_days", format!("the booking horizon must be 1 to {MAX_HORIZON_DAYS} days")));
        }
        self.tx.execute(
            "INSERT INTO studio (id, name, timezone, notice_minutes, clock, horizon_days) VALUES (1, ?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (id) DO UPDATE SET name = ?1, timezone = ?2, notice_minutes = ?3, clock = ?4, horizon_days = ?5",
            params![
                name,
                studio.tz.name(),
                studio.notice.num_minutes(),
                studio.clock.map(|c| c.timestamp()),
                studio.horizon.num_days()
            ],
        )?;
        self.studio = Some(Studio { name, ..studio.clone() });
        Ok(())
    }

    pub fn add_room(&mut self, room: &Room) -> Result<()> {
        let invalid = |what: String| Err(StoreError::invalid("room", format!("room {:?}: {what}", room.id.as_str())));
        if !is_slug(room.id.as_str()) {
            return invalid("an id is 1 to 64 of a-z, 0-9, '-' and '_'".into());
        }
        if room.id.as_str().starts_with(crate::domain::DISPLACED_ROOM_PREFIX) {
            return invalid(format!("ids starting with {:?} are kept for displaced bookings in a reflow: choose another id", crate::domain::DISPLACED_ROOM_PREFIX));
        }
        // A studio file names many rooms: each refusal says which.
        let of_room = |e: StoreError| match e {
            StoreError::Invalid { field, message } => StoreError::invalid(field, format!("room {:?}: {message}", room.id.as_str())),
            other => other,
        };
        let name = clean_text("name", TextKind::Name, &room.name).map_err(of_room)?;
        check_people("capacity", room.capacity).map_err(of_room)?;
        let features = clean_list("features", TextKind::Tag, &room.features).map_err(of_room)?;
        if room.hours.spans().len() > 7 * MAX_LIST {
            return invalid(format!("give at most {} opening hours", 7 * MAX_LIST));
        }
        if room.buffer < Duration::zero() || room.buffer > Duration::hours(4) {
            return invalid("its turnaround buffer must be 0 to 240 minutes".into());
        }
        if let Some(bad) = features.iter().find(|f| !is_slug(f)) {
            return invalid(format!("feature {bad:?} is not a slug such as \"vocal-booth\""));
        }
        if read::exists(&self.tx, "rooms", room.id.as_str())? {
            return invalid("a room with this id already exists".into());
        }
        self.tx.execute(
            "INSERT INTO rooms (id, name, capacity, features, hours, buffer_minutes, active) VALUES (?, ?, ?, ?, ?, ?, ?)",
            params![
                room.id.as_str(),
                name,
                room.capacity,
                to_json_list(&normalize_features(features)),
                to_json_list(&room.hours.to_lines()),
                room.buffer.num_minutes(),
                room.active
            ],
        )?;
        self.event(Entity::Room, room.id.as_str(), "created", events::diff(None, Some(events::room_fields(room))))?;
        Ok(())
    }

    pub fn add_client(&mut self, client: &Client) -> Result<()> {
        self.add_person("clients", "client", client.id.as_str(), &client.name)
    }

    pub fn add_engineer(&mut self, engineer: &Engineer) -> Result<()> {
        self.add_person("engineers", "engineer", engineer.id.as_str(), &engineer.name)
    }

    fn add_person(&mut self, table: &str, what: &str, id: &str, name: &str) -> Result<()> {
        if !is_slug(id) {
            return Err(StoreError::invalid("id", format!("{what} {id:?}: give a slug id (a-z, 0-9, '-', '_')")));
        }
        let name = &clean_text("name", TextKind::Name, name)
            .map_err(|e| StoreError::invalid("name", format!("{what} {id:?}: {e}")))?;
        if read::exists(&self.tx, table, id)? {
            return Err(StoreError::invalid("id", format!("a {what} with id {id:?} already exists")));
        }
        self.tx.execute(&format!("INSERT INTO {table} (id, name) VALUES (?, ?)"), params![id, name])?;
        let entity = if table == "clients" { Entity::Client } else { Entity::Engineer };
        let fields = events::fields([("name", serde_json::json!(name)), ("active", serde_json::json!(true))]);
        self.event(entity, id, "created", events::diff(None, Some(fields)))?;
        Ok(())
    }

    /// Books one session, or says why it cannot be booked.
    pub fn create_booking(&mut self, new: &Session) -> Result<Booking> {
        self.create_booking_with(new, None, None)
    }

    /// [`Writer::create_booking`] with staff notes and, for a tentative booking, a hold.
    pub fn create_booking_with(&mut self, new: &Session, notes: Option<&str>, hold_until: Option<DateTime<Utc>>) -> Result<Booking> {
        let new = normalized(new)?;
        self.check_window(new.start)?;
        edits::check_hold(self.now(), new.status, hold_until, new.start)?;
        let notes = edits::clean_notes(notes)?;
        self.check(&new, None)?;
        let booked = self.insert(&new, None)?;
        self.set_extras(&booked.id, notes.as_deref(), hold_until)?;
        self.booking_event(None, &booked.id, "created")
    }

    /// Books every session of a recurring series, or none: a refusal lists every session in the way.
    pub fn create_series(&mut self, id: Option<SeriesId>, rrule: &str, template: &Session) -> Result<(Series, Vec<Booking>)> {
        self.create_series_with(id, rrule, template, None, None)
    }

    /// [`Writer::create_series`] with staff notes and, for tentative sessions, a hold on them all.
    pub fn create_series_with(
        &mut self,
        id: Option<SeriesId>,
        rrule: &str,
        template: &Session,
        notes: Option<&str>,
        hold_until: Option<DateTime<Utc>>,
    ) -> Result<(Series, Vec<Booking>)> {
        let template = normalized(template)?;
        let rrule = &clean_text("recurrence", TextKind::Line, rrule)?;
        edits::check_hold(self.now(), template.status, hold_until, template.start)?;
        let notes = edits::clean_notes(notes)?;
        let tz = self.studio()?.tz;
        let id = match id {
            Some(id) if !is_slug(id.as_str()) => {
                return Err(StoreError::invalid("series", format!("series id {:?}: use a slug such as \"series-007\"", id.as_str())));
            }
            Some(id) if read::exists(&self.tx, "series", id.as_str())? => {
                return Err(StoreError::invalid("series", format!("a series with id {:?} already exists", id.as_str())));
            }
            Some(id) => id,
            None => self.next_series_id()?,
        };
        self.check_window(template.start)?;
        let horizon = self.studio()?.horizon_end(self.studio()?.now(Utc::now()));
        let starts = expand_series(&tz, rrule, tz.local(template.start), horizon)?;
        let length = template.end - template.start;
        // A savepoint keeps a refused series from leaving anything behind, even if the caller goes
        // on with this transaction.
        let savepoint = self.tx.savepoint()?;
        savepoint.execute(
            "INSERT INTO series (id, rrule, first_start) VALUES (?, ?, ?)",
            params![id.as_str(), rrule.trim(), starts[0].timestamp()],
        )?;
        let mut booked = Vec::with_capacity(starts.len());
        let mut conflicts = Vec::new();
        for start in &starts {
            let session = Session { start: *start, end: *start + length, ..template.clone() };
            match check(&savepoint, &tz, &session, None) {
                Ok(()) => booked.push(insert(&savepoint, &session, Some(&id))?),
                Err(StoreError::Refused(why)) => conflicts.push((tz.zoned(*start), why)),
                Err(other) => return Err(other),
            }
        }
        if !conflicts.is_empty() {
            return Err(Refusal::Series { total: starts.len(), conflicts }.into());
        }
        savepoint.commit()?;
        let mut created = Vec::with_capacity(booked.len());
        for b in &booked {
            self.set_extras(&b.id, notes.as_deref(), hold_until)?;
            created.push(self.booking_event(None, &b.id, "created")?);
        }
        let booked = created;
        let series = Series { id, rrule: rrule.trim().to_owned(), template: Session { start: starts[0], end: starts[0] + length, ..template } };
        Ok((series, booked))
    }

    /// Cancels a booking, or more of its series; returns what it cancelled.
    pub fn cancel_booking(&mut self, id: &BookingId, scope: CancelScope) -> Result<Vec<Booking>> {
        let booking = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        let now = self.studio()?.now(Utc::now());
        let ids: Vec<String> = match (scope, &booking.series) {
            (CancelScope::Occurrence, _) => {
                if booking.status == Status::Cancelled {
                    return Err(StoreError::invalid("id", format!("{id} is already cancelled")));
                }
                vec![id.0.clone()]
            }
            (_, None) => {
                return Err(StoreError::invalid("scope", format!("{id} is not part of a series: cancel it with scope \"occurrence\"")));
            }
            (CancelScope::Following | CancelScope::Series, Some(series)) => {
                let from = if scope == CancelScope::Following { booking.start } else { now + Duration::seconds(1) };
                let mut stmt = self.tx.prepare_cached(
                    "SELECT id FROM bookings WHERE series_id = ? AND start_at >= ? AND status != 'cancelled' ORDER BY start_at",
                )?;
                let rows = stmt.query_map(params![series.as_str(), from.timestamp()], |row| row.get(0))?;
                rows.collect::<db::Result<_>>()?
            }
        };
        let mut cancelled = Vec::with_capacity(ids.len());
        for id in ids {
            let id = BookingId(id);
            let before = read::booking(&self.tx, &id)?;
            self.tx.execute(
                "UPDATE bookings SET status = 'cancelled', hold_until = NULL, updated_at = ? WHERE id = ?",
                params![Utc::now().timestamp(), id.as_str()],
            )?;
            cancelled.push(self.booking_event(before.as_ref(), &id, "cancelled")?);
        }
        Ok(cancelled)
    }

    /// Moves a booking to another room or start, keeping its length, under the rules of a new booking.
    pub fn move_booking(&mut self, id: &BookingId, room: &RoomId, start: DateTime<Utc>) -> Result<Booking> {
        let booking = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        if booking.status == Status::Cancelled {
            return Err(StoreError::invalid("id", format!("{id} is cancelled: book a new session instead")));
        }
        self.check_window(start)?;
        let end = start + booking.duration();
        self.check(&Session { room: room.clone(), start, end, ..booking.session.clone() }, Some(id))?;
        self.set_place(id, room, start, end)?;
        self.booking_event(Some(&booking), id, "moved")
    }

    /// Moves many bookings at once (a reflow), then checks each in its new place against everything
    /// else, so that two bookings may trade places. The first broken rule refuses the whole set.
    /// Returns the bookings as they were before the moves, in the order of `moves`.
    pub fn apply_moves(&mut self, moves: &[Move]) -> Result<Vec<Booking>> {
        let mut before = Vec::with_capacity(moves.len());
        for m in moves {
            match read::booking(&self.tx, &m.booking)? {
                Some(b) if b.status != Status::Cancelled => before.push(b),
                _ => return Err(StoreError::UnknownBooking(m.booking.clone())),
            }
            self.set_place(&m.booking, &m.to_room, m.to_start, m.to_end)?;
        }
        for m in moves {
            let booking = read::booking(&self.tx, &m.booking)?.ok_or_else(|| StoreError::UnknownBooking(m.booking.clone()))?;
            self.check(&booking.session, Some(&m.booking))?;
        }
        for (m, b) in moves.iter().zip(&before) {
            self.booking_event(Some(b), &m.booking, "moved")?;
        }
        Ok(before)
    }

    /// Puts a booking in a place; a booking that is put somewhere is no longer displaced.
    pub(super) fn set_place(&mut self, id: &BookingId, room: &RoomId, start: DateTime<Utc>, end: DateTime<Utc>) -> Result<()> {
        self.tx.execute(
            "UPDATE bookings SET room_id = ?, start_at = ?, end_at = ?, displaced = 0, updated_at = ? WHERE id = ?",
            params![room.as_str(), start.timestamp(), end.timestamp(), Utc::now().timestamp(), id.as_str()],
        )?;
        Ok(())
    }

    /// Takes a room out of use over `[from, to)`. It moves nothing: that is a reflow's job.
    /// A window that overlaps or touches another of the same room is merged with it into one
    /// window over both (the earliest id stays, the reasons are kept), so that repeating a request
    /// adds nothing and a room's windows never pile up.
    pub fn add_offline_window(&mut self, room: &RoomId, from: DateTime<Utc>, to: DateTime<Utc>, reason: &str) -> Result<OfflineWindow> {
        if !read::exists(&self.tx, "rooms", room.as_str())? {
            return Err(StoreError::UnknownRoom(room.clone()));
        }
        if to <= from {
            return Err(StoreError::invalid("to", "an offline window must end after it starts"));
        }
        if to - from > MAX_WINDOW {
            return Err(StoreError::invalid("to", "an offline window may last at most a year: split it"));
        }
        let studio = self.studio()?;
        let now = studio.now(Utc::now());
        let horizon = studio.horizon_end(now);
        if to <= now && !self.history {
            return Err(Refusal::WindowEnded { to: studio.tz.zoned(to), now: studio.tz.zoned(now) }.into());
        }
        if to > horizon {
            return Err(Refusal::WindowBeyondHorizon { to: studio.tz.zoned(to), horizon: studio.tz.zoned(horizon) }.into());
        }
        let reason = clean_text("reason", TextKind::Line, reason)?;
        let reason = if reason.is_empty() { "offline" } else { reason.as_str() };

        let touching = {
            let mut stmt = self.tx.prepare_cached(
                "SELECT id, from_at, to_at, reason FROM offline_windows WHERE room_id = ? AND from_at <= ? AND to_at >= ? \
                 ORDER BY id",
            )?;
            let rows = stmt.query_map(params![room.as_str(), to.timestamp(), from.timestamp()], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, i64>(2)?, row.get::<_, String>(3)?))
            })?;
            rows.collect::<db::Result<Vec<_>>>()?
        };
        let Some(&(keep, ..)) = touching.first() else {
            let id: i64 = self.tx.query_row(
                "INSERT INTO offline_windows (room_id, from_at, to_at, reason, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
                params![room.as_str(), from.timestamp(), to.timestamp(), reason, Utc::now().timestamp()],
                |row| row.get(0),
            )?;
            let window = OfflineWindow { id, room: room.clone(), from, to, reason: reason.to_owned() };
            let fields = events::window_fields(&studio.tz, &window);
            self.event(Entity::OfflineWindow, &window.id.to_string(), "created", events::diff(None, Some(fields)))?;
            return Ok(window);
        };
        let (mut start, mut end) = (from.timestamp(), to.timestamp());
        let mut reasons: Vec<String> = Vec::new();
        for (_, f, t, r) in &touching {
            (start, end) = (start.min(*f), end.max(*t));
            for part in r.split("; ") {
                if !reasons.iter().any(|x| x == part) {
                    reasons.push(part.to_owned());
                }
            }
        }
        if !reasons.iter().any(|x| x == reason) {
            reasons.push(reason.to_owned());
        }
        let merged = (super::instant(start)?, super::instant(end)?);
        if merged.1 - merged.0 > MAX_WINDOW {
            let (f, t) = (studio.tz.format(merged.0), studio.tz.format(merged.1));
            return Err(StoreError::invalid("to", format!(
                "this window overlaps or touches {} of {room}'s windows, and together they would run from {f} to {t}, \
                 more than a year: choose a shorter window",
                touching.len()
            )));
        }
        let reason = reasons.join("; ");
        // Merging keeps every distinct reason, so repeats with new reasons could grow one row
        // without end: past a bound, the caller has to reuse a reason already given.
        if reason.chars().count() > MAX_MERGED_REASON {
            return Err(StoreError::invalid("reason", format!(
                "this window meets window {keep} of {room}, and their reasons together would pass {MAX_MERGED_REASON} \
                 characters: give one of the reasons it already has ({:?})",
                reasons[0]
            )));
        }
        for (id, ..) in &touching[1..] {
            self.tx.execute("DELETE FROM offline_windows WHERE id = ?", [id])?;
        }
        self.tx.execute(
            "UPDATE offline_windows SET from_at = ?, to_at = ?, reason = ? WHERE id = ?",
            params![start, end, reason, keep],
        )?;
        let before = OfflineWindow {
            id: keep,
            room: room.clone(),
            from: super::instant(touching[0].1)?,
            to: super::instant(touching[0].2)?,
            reason: touching[0].3.clone(),
        };
        let window = OfflineWindow { id: keep, room: room.clone(), from: merged.0, to: merged.1, reason };
        let tz = studio.tz;
        for (id, f, t, r) in &touching[1..] {
            let gone = OfflineWindow { id: *id, room: room.clone(), from: super::instant(*f)?, to: super::instant(*t)?, reason: r.clone() };
            self.event(Entity::OfflineWindow, &id.to_string(), "merged", events::diff(Some(events::window_fields(&tz, &gone)), None))?;
        }
        let change = events::diff(Some(events::window_fields(&tz, &before)), Some(events::window_fields(&tz, &window)));
        self.event(Entity::OfflineWindow, &keep.to_string(), "updated", change)?;
        Ok(window)
    }

    /// Checks a session against every rule, ignoring the booking `ignore` (the one being moved).
    pub fn check(&self, new: &Session, ignore: Option<&BookingId>) -> Result<()> {
        check(&self.tx, &self.studio()?.tz, new, ignore)
    }

    fn insert(&mut self, new: &Session, series: Option<&SeriesId>) -> Result<Booking> {
        insert(&self.tx, new, series)
    }

    fn next_series_id(&self) -> Result<SeriesId> {
        let count: i64 = self.tx.query_row("SELECT COUNT(*) FROM series", (), |row| row.get(0))?;
        (count + 1..)
            .map(|n| SeriesId(format!("series-{n:03}")))
            .find_map(|id| match read::exists(&self.tx, "series", id.as_str()) {
                Ok(true) => None,
                Ok(false) => Some(Ok(id)),
                Err(e) => Some(Err(e)),
            })
            .expect("an unbounded range always finds a free id")
    }
}

/// A new session as it comes from outside, by the rules of outside values: a party a studio can
/// mean, and a list of needs of tags, as the store keeps them (sorted, without duplicates).
fn normalized(new: &Session) -> Result<Session> {
    check_people("party_size", new.party_size)?;
    let requires = clean_list("requires", TextKind::Tag, &new.requires)?;
    Ok(Session { requires: normalize_features(requires), ..new.clone() })
}

fn insert(conn: &Connection, new: &Session, series: Option<&SeriesId>) -> Result<Booking> {
    let seq: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM bookings", (), |row| row.get(0))?;
    let id = BookingId(format!("bk_{seq:05}"));
    let now = Utc::now().timestamp();
    conn.prepare_cached(
        "INSERT INTO bookings (seq, id, room_id, client_id, engineer_id, start_at, end_at, party_size, requires, \
         series_id, status, pinned, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )?
    .execute(params![
        seq,
        id.as_str(),
        new.room.as_str(),
        new.client.as_str(),
        new.engineer.as_ref().map(|e| e.as_str()),
        new.start.timestamp(),
        new.end.timestamp(),
        new.party_size,
        to_json_list(&new.requires),
        series.map(|s| s.as_str()),
        new.status.as_str(),
        new.pinned,
        now,
        now
    ])?;
    Ok(Booking { id, series: series.cloned(), session: new.clone(), notes: None, hold_until: None, displaced: false })
}

/// Every rule a session must keep, cheapest first: its own shape, the room's size, features, hours
/// and offline windows, then the other bookings of the room, the client and the engineer.
pub(super) fn check(conn: &Connection, tz: &crate::domain::StudioTz, new: &Session, ignore: Option<&BookingId>) -> Result<()> {
    if new.end <= new.start {
        return Err(StoreError::invalid("end", "a booking must end after it starts"));
    }
    if new.end - new.start > MAX_BOOKING {
        return Err(StoreError::invalid("end", "a booking may last at most 24 hours: split it"));
    }
    if new.status == Status::Cancelled {
        return Err(StoreError::invalid("status", "a new booking is confirmed or tentative, not cancelled"));
    }
    let room = read::rooms(conn, Some(&new.room))?.pop().ok_or_else(|| StoreError::UnknownRoom(new.room.clone()))?;
    if !room.active {
        return Err(StoreError::Inactive { kind: "room", id: room.id.0.clone() });
    }
    // A deactivated person cannot be booked anew; a booking they already have may still be moved
    // or edited (a reflow must be able to place it), so only a person it does not have yet counts.
    let current = match ignore {
        Some(id) => read::booking(conn, id)?,
        None => None,
    };
    match read::active(conn, "clients", new.client.as_str())? {
        None => return Err(StoreError::UnknownClient(new.client.clone())),
        Some(false) if current.as_ref().is_none_or(|b| b.client != new.client) => {
            return Err(StoreError::Inactive { kind: "client", id: new.client.0.clone() });
        }
        Some(_) => {}
    }
    if let Some(engineer) = &new.engineer {
        match read::active(conn, "engineers", engineer.as_str())? {
            None => return Err(StoreError::UnknownEngineer(engineer.clone())),
            Some(false) if current.as_ref().is_none_or(|b| b.engineer.as_ref() != Some(engineer)) => {
                return Err(StoreError::Inactive { kind: "engineer", id: engineer.0.clone() });
            }
            Some(_) => {}
        }
    }
    let (from, to) = (tz.zoned(new.start), tz.zoned(new.end));
    if new.party_size > room.capacity {
        return Err(Refusal::TooSmall { room: room.id, capacity: room.capacity, party_size: new.party_size }.into());
    }
    let missing = room.missing_features(&new.requires);
    if !missing.is_empty() {
        let missing = missing.into_iter().map(str::to_owned).collect();
        return Err(Refusal::MissingFeatures { room: room.id, missing }.into());
    }
    if !room.hours.contains(tz, new.start, new.end) {
        let hours = if room.hours.spans().is_empty() { "none (it never opens)".to_owned() } else { room.hours.to_lines().join(", ") };
        return Err(Refusal::Closed { room: room.id, from, to, hours }.into());
    }
    if let Some(window) = read::offline_windows(conn, Some(&room.id), new.start, new.end)?.into_iter().next() {
        let (from, to) = (tz.zoned(window.from), tz.zoned(window.to));
        return Err(Refusal::Offline { room: room.id, from, to, reason: window.reason }.into());
    }

    // Each query asks for the first clash directly; the bound on start_at lets the
    // (resource, start_at) index do the work, since no booking lasts more than a day.
    // A displaced booking (one that sits in its room while the room is offline) holds neither
    // its room nor its people until someone moves it: the reflow contract's "unresolved
    // occupies nothing", kept by the store too. A booking flagged displaced (its room changed
    // under it) holds nothing either.
    let ignore = ignore.map_or("", |id| id.as_str());
    let span = (new.start, new.end);
    let buffer = room.buffer;
    let clash_sql = |column: &str| {
        format!(
            "SELECT {BOOKING_COLUMNS} FROM bookings b WHERE {column} = ?1 AND id != ?2 AND status != 'cancelled' AND displaced = 0 \
             AND start_at > ?3 AND start_at < ?4 AND end_at > ?5 \
             AND NOT EXISTS (SELECT 1 FROM offline_windows w WHERE w.room_id = b.room_id \
                             AND w.from_at < b.end_at AND w.to_at > b.start_at) \
             ORDER BY start_at LIMIT 1"
        )
    };
    let window = |pad: Duration| {
        ((new.start - MAX_BOOKING - pad).timestamp(), (new.end + pad).timestamp(), (new.start - pad).timestamp())
    };

    let (back, until, after) = window(buffer);
    if let Some(other) = first(conn, &clash_sql("room_id"), params![room.id.as_str(), ignore, back, until, after])? {
        let note = BufferNote((!overlaps(span, (other.start, other.end))).then(|| buffer.num_minutes()));
        let (from, to) = (tz.zoned(other.start), tz.zoned(other.end));
        return Err(Refusal::RoomTaken { room: room.id, other: other.id, from, to, buffer: note }.into());
    }
    let (back, until, after) = window(Duration::zero());
    if let Some(other) = first(conn, &clash_sql("client_id"), params![new.client.as_str(), ignore, back, until, after])? {
        let (from, to) = (tz.zoned(other.start), tz.zoned(other.end));
        return Err(Refusal::ClientBusy { client: new.client.clone(), other: other.id, from, to }.into());
    }
    if let Some(engineer) = &new.engineer
        && let Some(other) = first(conn, &clash_sql("engineer_id"), params![engineer.as_str(), ignore, back, until, after])? {
            let (from, to) = (tz.zoned(other.start), tz.zoned(other.end));
            return Err(Refusal::EngineerBusy { engineer: engineer.clone(), other: other.id, from, to }.into());
        }
    Ok(())
}

fn first(conn: &Connection, sql: &str, args: impl db::Params) -> Result<Option<Booking>> {
    Ok(conn.prepare_cached(sql)?.query_row(args, booking_from_row).optional()?.map(|(b, _)| b))
}
