//! Writes. A [`Writer`] is one `BEGIN IMMEDIATE` transaction: it checks every rule of the calendar
//! (`rules.rs`) against what is committed plus what it has written so far, and only then writes.
//! Dropping it without [`Writer::commit`] rolls everything back, so a refused series leaves no
//! session behind. This file holds the writes that add to the calendar (the studio, rooms and
//! people, bookings and series, cancelling, moving, offline windows); `edits.rs` and `roster.rs`
//! hold the rest.

use super::db::{self, params, Connection, Transaction};
use super::events::{self, Action, Entity};
use super::read;
use super::rules::{self, CancelScope, RulesFor, ScopeFor};
use super::waitlist::Freed;
use super::{check_people, clean_list, clean_text, instant, to_json_list, Result, StoreError};
use crate::domain::{
    expand_series, is_slug, normalize_features, Actor, Booking, BookingId, Client, Engineer, EngineerId, Move, OfflineWindow, Refusal, Room,
    RoomId, Series, SeriesId, Session, Status, Studio, StudioTz, TextKind, MAX_HORIZON_DAYS, MAX_LIST,
};
use chrono::{DateTime, Duration, Utc};

/// The longest offline window, merged or not.
const MAX_WINDOW: Duration = Duration::days(366);
/// The longest reasons of a merged window together (one request's is a [`TextKind::Line`]).
const MAX_MERGED_REASON: usize = 1000;

/// One write transaction. See the module docs.
pub struct Writer<'c> {
    pub(super) tx: Transaction<'c>,
    studio: Option<Studio>,
    /// Whether sessions and windows before the studio's clock are accepted: only for loading a
    /// studio's own records (see [`Writer::load_history`]).
    history: bool,
    /// Who writes and through what: every event of this transaction names them.
    actor: Actor,
    /// The booking changes and the reflow this transaction tells people of by e-mail, written at
    /// the commit (`mail.rs`). A cell, because events are recorded through `&self`.
    told: std::cell::RefCell<super::mail::ChangeSet>,
}

impl<'c> Writer<'c> {
    pub(super) fn new(tx: Transaction<'c>, studio: Option<Studio>, actor: Actor) -> Self {
        Writer { tx, studio, history: false, actor, told: Default::default() }
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

    /// From here on, the history names `who` as the writer (the authorization server learns
    /// whose code or token it holds only once it has read it).
    pub(super) fn acting_as(&mut self, who: &str) {
        self.actor.who = who.to_owned();
    }

    /// Records one change in the history, in this transaction.
    pub(super) fn event(&self, entity: Entity, id: &str, action: Action, change: events::Change) -> Result<()> {
        let at = self.now();
        let seq = events::record(&self.tx, at, &self.actor, entity, id, action, change)?;
        self.recorded(seq, at, entity, id, action)
    }

    /// What follows an event written as number `seq`: the e-mail names it, and the outbox tells it.
    fn recorded(&self, seq: i64, at: DateTime<Utc>, entity: Entity, id: &str, action: Action) -> Result<()> {
        {
            let mut told = self.told.borrow_mut();
            told.last_seq = seq;
            if (entity, action) == (Entity::Reflow, Action::Applied) {
                told.reflow = Some(id.to_owned());
            }
        }
        // The outbox, in the same transaction: the change and what it tells commit together.
        let recorded = super::outbox::Recorded { seq, at, actor: &self.actor, entity, id, action };
        super::outbox::enqueue(&self.tx, self.studio.as_ref().map(|s| &s.tz), recorded)
    }

    /// Records a booking's change from `before` (None: it is new) to what it is now.
    pub(super) fn booking_event(&self, before: Option<&Booking>, id: &BookingId, action: Action) -> Result<Booking> {
        let after = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        self.booking_event_to(before, after, action)
    }

    /// [`Writer::booking_event`] for a booking already read as it now is, `after`.
    fn booking_event_to(&self, before: Option<&Booking>, after: Booking, action: Action) -> Result<Booking> {
        let id = &after.id;
        let tz = self.studio()?.tz;
        let change = events::diff(before.map(|b| events::booking_fields(&tz, b)), Some(events::booking_fields(&tz, &after)));
        if !change.is_empty() {
            self.event(Entity::Booking, id.as_str(), action, change)?;
            // An import of a studio's own records tells no one: it is a record, not news.
            if !self.history {
                self.told.borrow_mut().bookings.push((before.cloned(), after.clone(), action));
            }
        }
        Ok(after)
    }

    /// Writes this transaction's e-mail (`mail.rs`), then makes the writes durable and visible,
    /// and hands back the studio as it now stands.
    pub fn commit(self) -> Result<Option<Studio>> {
        if let Some(studio) = &self.studio {
            super::mail::enqueue(&self.tx, studio, &self.told.borrow())?;
        }
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
        if let Err((field, message)) = room.rules.check() {
            return Err(of_room(StoreError::invalid(field, message)));
        }
        if let Err(message) = room.price.check() {
            return Err(of_room(StoreError::invalid("rates", message)));
        }
        if read::exists(&self.tx, "rooms", room.id.as_str())? {
            return invalid("a room with this id already exists".into());
        }
        self.tx.execute(
            "INSERT INTO rooms (id, name, capacity, features, hours, buffer_minutes, active, \
             min_minutes, max_minutes, lead_minutes, max_advance_days, start_step_minutes, hourly_rate, rates) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                room.id.as_str(),
                name,
                room.capacity,
                to_json_list(&normalize_features(features)),
                to_json_list(&room.hours.to_lines()),
                room.buffer.num_minutes(),
                room.active,
                room.rules.min_minutes,
                room.rules.max_minutes,
                room.rules.lead_minutes,
                room.rules.max_advance_days,
                room.rules.start_step_minutes,
                room.price.hourly_rate,
                super::prices::rates_to_json(&room.price.rates)
            ],
        )?;
        self.event(Entity::Room, room.id.as_str(), Action::Created, events::diff(None, Some(events::room_fields(room))))?;
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
        self.event(entity, id, Action::Created, events::diff(None, Some(fields)))?;
        Ok(())
    }

    /// Books one session, or says why it cannot be booked.
    pub fn create_booking(&mut self, new: &Session) -> Result<Booking> {
        self.create_booking_with(new, None, None)
    }

    /// [`Writer::create_booking`] with staff notes and, for a tentative booking, a hold.
    pub fn create_booking_with(&mut self, new: &Session, notes: Option<&str>, hold_until: Option<DateTime<Utc>>) -> Result<Booking> {
        let (new, notes) = self.new_session(new, notes, hold_until)?;
        if self.tx.backend() == db::Backend::Postgres {
            return self.insert_recorded_if_clear(&new, notes.as_deref(), hold_until);
        }
        self.check(&new, None)?;
        let (price, deposit_due) = self.new_price(&new, hold_until.is_some())?;
        let extras = Extras { notes: notes.as_deref(), hold_until, price, deposit_due };
        let after = insert_whole(&self.tx, &new, &extras)?;
        self.booking_event_to(None, after, Action::Created)
    }

    /// [`Writer::create_booking_with`] as the last write of this transaction, which it may then
    /// commit. On PostgreSQL, when nothing is to be written after the booking (no webhook is told
    /// of it, no engineer is on it, the client is not told by e-mail, nothing this transaction
    /// wrote before is told by e-mail), the insert and the commit go out together, with the like
    /// bookings of the pool's other connections (group commit,
    /// `Transaction::query_row_then_commit_with_others`): the studio's lock is held from the
    /// answer to the transaction's `BEGIN` to the commit, for no round trip but that one. The
    /// statement then also checks, under the lock, that the cache's version is the one the rules
    /// checked in process were read at, and that the client is still not told by e-mail; if
    /// either fails it writes nothing. Otherwise, and on SQLite, the booking is made as by
    /// `create_booking_with`.
    pub fn create_booking_alone(&mut self, new: &Session, notes: Option<&str>, hold_until: Option<DateTime<Utc>>) -> Result<Alone> {
        let nothing_told = {
            let told = self.told.borrow();
            told.bookings.is_empty() && told.reflow.is_none()
        };
        let alone = self.tx.backend() == db::Backend::Postgres
            && nothing_told
            && !self.history
            && new.engineer.is_none()
            && !self.tx.told_by_mail(new.client.as_str());
        if !alone {
            return self.create_booking_with(new, notes, hold_until).map(Alone::Open);
        }
        let (new, notes) = self.new_session(new, notes, hold_until)?;
        let version = match self.tx.version_gone_on() {
            Some(version) if !super::outbox::any_listening(&self.tx, Entity::Booking, Action::Created)? => version,
            _ => return self.insert_recorded_if_clear(&new, notes.as_deref(), hold_until).map(Alone::Open),
        };
        let tz = self.studio()?.tz;
        let (room, price, deposit_due) = self.clear_in_process(&new, hold_until)?;
        let extras = Extras { notes: notes.as_deref(), hold_until, price, deposit_due };
        let (fields, event) = self.created_event(&new, &extras, &tz);
        let mut values = insert_whole_recorded_params(&new, &extras, event, &room);
        values.push(db::Value::Int(version));
        static MANY: std::sync::LazyLock<String> = std::sync::LazyLock::new(insert_whole_recorded_many_sql);
        let Some(inserted) = self.tx.query_row_then_commit_with_others(&insert_whole_recorded_sql(true), Some(&MANY), values, insert_whole_recorded_row)? else {
            // Sent with other connections' bookings, one of which failed: nothing was written.
            return Ok(Alone::Again);
        };
        match inserted {
            Inserted::Booked(after, seq, _) => {
                let stored = events::booking_fields(&tz, &after);
                if stored != fields {
                    // Committed already: the event is corrected by a statement of its own.
                    tracing::warn!(booking = %after.id, "a booking's event was written from fields other than those stored: corrected");
                    events::correct(&self.tx, seq, events::diff(None, Some(stored)))?;
                }
                Ok(Alone::Committed(after))
            }
            // Refused with the first rule it breaks, read now; if it breaks none any more (the
            // booking in the way was cancelled meanwhile), it is booked again.
            Inserted::NotClear => {
                self.check(&new, None)?;
                Ok(Alone::Again)
            }
            Inserted::Unfit { told_by_mail } => {
                self.tx.note_told_by_mail(new.client.as_str(), told_by_mail);
                Ok(Alone::Again)
            }
        }
    }

    /// A new session as it is kept, and its notes, once the rules that need nothing but the
    /// studio's settings and its rooms hold: its window, its hold, its room's booking rules.
    fn new_session(&self, new: &Session, notes: Option<&str>, hold_until: Option<DateTime<Utc>>) -> Result<(Session, Option<String>)> {
        let new = normalized(new)?;
        self.check_window(new.start)?;
        rules::check_hold(self.now(), new.status, hold_until, new.start)?;
        let notes = rules::clean_notes(notes)?;
        self.check_room_rules(&new, RulesFor::New)?;
        Ok((new, notes))
    }

    /// The rules of [`rules::check_unless_clear`] and the price of a new session: its room, its
    /// price and its deposit. A session that breaks one is checked by [`Writer::check`], which
    /// refuses it with the first rule it breaks.
    fn clear_in_process(&self, new: &Session, hold_until: Option<DateTime<Utc>>) -> Result<(Room, i64, i64)> {
        let tz = self.studio()?.tz;
        let checked = rules::check_unless_clear(&self.tx, &tz, new)
            .and_then(|room| Ok((room, self.new_price(new, hold_until.is_some())?)));
        match checked {
            Ok((room, (price, deposit_due))) => Ok((room, price, deposit_due)),
            Err(e) => {
                self.check(new, None)?;
                Err(e)
            }
        }
    }

    /// A new booking's event, from the booking as it will be stored but for its id: its fields,
    /// to check against the row stored, and the event to write.
    fn created_event(&self, new: &Session, extras: &Extras<'_>, tz: &crate::domain::StudioTz) -> (serde_json::Map<String, serde_json::Value>, events::Pending<'_>) {
        let expected = Booking {
            id: BookingId(String::new()),
            series: None,
            session: new.clone(),
            notes: extras.notes.map(str::to_owned),
            hold_until: extras.hold_until,
            displaced: false,
            money: crate::domain::Money { price: Some(extras.price), deposit_due: extras.deposit_due, paid: 0 },
        };
        let fields = events::booking_fields(tz, &expected);
        let change = events::diff(None, Some(fields.clone()));
        (fields, events::Pending { at: self.now(), actor: &self.actor, entity: Entity::Booking, action: Action::Created, change })
    }

    /// On PostgreSQL, [`Writer::check`] and [`Writer::insert_recorded`] with the query of the
    /// other bookings, the client and the offline windows in the insert's statement: a booking
    /// that keeps every rule costs one round trip under the studio's lock rather than two. The
    /// rules checked in process come first; a session that breaks any rule, there or in the
    /// statement, is checked again by `check`, which refuses it with the first rule it breaks,
    /// as on SQLite.
    fn insert_recorded_if_clear(&mut self, new: &Session, notes: Option<&str>, hold_until: Option<DateTime<Utc>>) -> Result<Booking> {
        let (room, price, deposit_due) = self.clear_in_process(new, hold_until)?;
        let extras = Extras { notes, hold_until, price, deposit_due };
        let Some(after) = self.insert_recorded(new, &extras, &room)? else {
            self.check(new, None)?;
            return Err(StoreError::Corrupt(format!(
                "booking {} in {} from {} was not clear to insert, yet breaks no rule when checked again",
                new.client, new.room, new.start
            )));
        };
        Ok(after)
    }

    /// [`insert_whole`] and the booking's event in one statement, one round trip to PostgreSQL
    /// (a data-modifying WITH, which SQLite has not; there the two are in process anyway). The
    /// event's fields are the booking's as it will be stored, known before the insert but for
    /// its id, which no field holds; they are checked against the row the insert returns, and the
    /// event is corrected if they differ (which would take a change of the insert, not of data).
    ///
    /// The statement inserts only if the query of [`rules::clear_sql`] finds the session clear in
    /// `room`, and the client's contact is noted as [`Writer::check`] notes it; None if it was
    /// not clear, and nothing was written.
    fn insert_recorded(&self, new: &Session, extras: &Extras<'_>, room: &Room) -> Result<Option<Booking>> {
        let tz = self.studio()?.tz;
        let (fields, event) = self.created_event(new, extras, &tz);
        let at = event.at;
        let Some((after, seq, contact)) = insert_whole_recorded(&self.tx, new, extras, event, room)? else { return Ok(None) };
        if let Some(contact) = contact {
            self.tx.note_told_by_mail(new.client.as_str(), contact.1.is_some());
            self.told.borrow_mut().client_contacts.insert(new.client.as_str().to_owned(), contact);
        }
        let stored = events::booking_fields(&tz, &after);
        if stored != fields {
            tracing::warn!(booking = %after.id, "a booking's event was written from fields other than those stored: corrected");
            events::correct(&self.tx, seq, events::diff(None, Some(stored)))?;
        }
        self.recorded(seq, at, Entity::Booking, after.id.as_str(), Action::Created)?;
        if !self.history {
            self.told.borrow_mut().bookings.push((None, after.clone(), Action::Created));
        }
        Ok(Some(after))
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
        rules::check_hold(self.now(), template.status, hold_until, template.start)?;
        let notes = rules::clean_notes(notes)?;
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
        let now = self.now();
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
            let room_rules = if self.history { Ok(()) } else { rules::check_room_rules(&savepoint, &tz, &session, now, RulesFor::New) };
            match room_rules.and_then(|()| rules::check(&savepoint, &tz, &session, None)) {
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
            self.set_extras(b, notes.as_deref(), hold_until)?;
            created.push(self.booking_event(None, &b.id, Action::Created)?);
        }
        let booked = created;
        let series = Series { id, rrule: rrule.trim().to_owned(), template: Session { start: starts[0], end: starts[0] + length, ..template } };
        Ok((series, booked))
    }

    /// Cancels a booking, or more of its series; returns what it cancelled.
    pub fn cancel_booking(&mut self, id: &BookingId, scope: CancelScope) -> Result<Vec<Booking>> {
        let booking = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        let now = self.studio()?.now(Utc::now());
        let ids = rules::scope_ids(&self.tx, &booking, scope, now, ScopeFor::Cancel)?;
        let mut cancelled = Vec::with_capacity(ids.len());
        for id in ids {
            let before = read::booking(&self.tx, &id)?;
            self.tx.execute(
                "UPDATE bookings SET status = 'cancelled', hold_until = NULL, updated_at = ? WHERE id = ?",
                params![Utc::now().timestamp(), id.as_str()],
            )?;
            cancelled.push(self.booking_event(before.as_ref(), &id, Action::Cancelled)?);
        }
        let freed: Vec<Freed> = cancelled.iter().map(Freed::place_of).collect();
        self.offer_freed(&freed)?;
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
        let moved = Session { room: room.clone(), start, end, ..booking.session.clone() };
        self.check_room_rules(&moved, RulesFor::Move)?;
        self.check(&moved, Some(id))?;
        self.set_place(id, room, start, end)?;
        self.price_booking(id, super::prices::Pricing::Changed)?;
        let moved = self.booking_event(Some(&booking), id, Action::Moved)?;
        self.offer_freed(&[Freed::place_of(&booking)])?;
        Ok(moved)
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
            if m.changes_engineer() {
                self.set_engineer(&m.booking, m.to_engineer.as_ref())?;
            }
        }
        for (m, b) in moves.iter().zip(&before) {
            let booking = read::booking(&self.tx, &m.booking)?.ok_or_else(|| StoreError::UnknownBooking(m.booking.clone()))?;
            // A new engineer is checked against the booking as it was: they must be bookable
            // (active) and have the session's skills, as if a person had put them on it.
            if m.changes_engineer()
                && let Some(engineer) = &booking.engineer
            {
                rules::check_engineer(&self.tx, engineer, Some(b))?;
                rules::check_engineer_skills(&self.tx, engineer, &booking.engineer_skills)?;
            }
            self.check_room_rules(&booking.session, RulesFor::Reflow)?;
            self.check(&booking.session, Some(&m.booking))?;
        }
        for (m, b) in moves.iter().zip(&before) {
            self.booking_event(Some(b), &m.booking, Action::Moved)?;
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

    /// Gives a booking another engineer (a reflow's move, or its undo); the caller checks the rules.
    pub(super) fn set_engineer(&mut self, id: &BookingId, engineer: Option<&EngineerId>) -> Result<()> {
        self.tx.execute(
            "UPDATE bookings SET engineer_id = ?, updated_at = ? WHERE id = ?",
            params![engineer.map(|e| e.as_str()), Utc::now().timestamp(), id.as_str()],
        )?;
        Ok(())
    }

    /// Sets notes, a hold and the price (with the deposit a hold owes) on bookings just created
    /// in this transaction, before their creation is recorded; see [`Writer::create_booking_with`].
    fn set_extras(&mut self, booked: &Booking, notes: Option<&str>, hold_until: Option<DateTime<Utc>>) -> Result<()> {
        let (price, deposit_due) = self.new_price(&booked.session, hold_until.is_some())?;
        self.tx.execute(
            "UPDATE bookings SET notes = ?, hold_until = ?, price = ?, deposit_due = ? WHERE id = ?",
            params![notes, hold_until.map(|t| t.timestamp()), price, deposit_due, booked.id.as_str()],
        )?;
        Ok(())
    }

    /// Takes a room out of use over `[from, to)`. It moves nothing: that is a reflow's job.
    /// A window that overlaps or touches another of the same room is merged with it into one
    /// window over both (the earliest id stays, the reasons are kept), so that repeating a request
    /// adds nothing and a room's windows never pile up.
    pub fn add_offline_window(&mut self, room: &RoomId, from: DateTime<Utc>, to: DateTime<Utc>, reason: &str) -> Result<OfflineWindow> {
        self.check_window_span(room, from, to)?;
        let reason = clean_text("reason", TextKind::Line, reason)?;
        let reason = if reason.is_empty() { "offline" } else { reason.as_str() };
        let touching = self.windows_touching(room, from, to)?;
        if touching.is_empty() {
            return self.insert_window(room, from, to, reason);
        }
        let merged = merged_window(&self.studio()?.tz, &touching, from, to, reason)?;
        self.replace_windows(&touching, merged)
    }

    /// Refuses a window that cannot be: of an unknown room, empty, longer than a year, ended
    /// before the studio's clock (unless loading history), or ending past the horizon.
    fn check_window_span(&self, room: &RoomId, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<()> {
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
        Ok(())
    }

    /// The room's windows that overlap or touch `[from, to)`, oldest id first.
    fn windows_touching(&self, room: &RoomId, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<OfflineWindow>> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT id, from_at, to_at, reason FROM offline_windows WHERE room_id = ? AND from_at <= ? AND to_at >= ? \
             ORDER BY id",
        )?;
        let rows = stmt.query_map(params![room.as_str(), to.timestamp(), from.timestamp()], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, i64>(2)?, row.get::<_, String>(3)?))
        })?;
        let rows = rows.collect::<db::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|(id, f, t, reason)| Ok(OfflineWindow { id, room: room.clone(), from: instant(f)?, to: instant(t)?, reason }))
            .collect()
    }

    /// Writes a window that meets no other, and records it.
    fn insert_window(&mut self, room: &RoomId, from: DateTime<Utc>, to: DateTime<Utc>, reason: &str) -> Result<OfflineWindow> {
        let id: i64 = self.tx.query_row(
            "INSERT INTO offline_windows (room_id, from_at, to_at, reason, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
            params![room.as_str(), from.timestamp(), to.timestamp(), reason, Utc::now().timestamp()],
            |row| row.get(0),
        )?;
        let window = OfflineWindow { id, room: room.clone(), from, to, reason: reason.to_owned() };
        let fields = events::window_fields(&self.studio()?.tz, &window);
        self.event(Entity::OfflineWindow, &window.id.to_string(), Action::Created, events::diff(None, Some(fields)))?;
        Ok(window)
    }

    /// Puts `merged` in place of the `touching` windows: the first keeps its id and takes the
    /// merged span and reasons, the others go; each change is recorded.
    fn replace_windows(&mut self, touching: &[OfflineWindow], merged: OfflineWindow) -> Result<OfflineWindow> {
        for gone in &touching[1..] {
            self.tx.execute("DELETE FROM offline_windows WHERE id = ?", [gone.id])?;
        }
        self.tx.execute(
            "UPDATE offline_windows SET from_at = ?, to_at = ?, reason = ? WHERE id = ?",
            params![merged.from.timestamp(), merged.to.timestamp(), merged.reason, merged.id],
        )?;
        let tz = self.studio()?.tz;
        for gone in &touching[1..] {
            let change = events::diff(Some(events::window_fields(&tz, gone)), None);
            self.event(Entity::OfflineWindow, &gone.id.to_string(), Action::Merged, change)?;
        }
        let change = events::diff(Some(events::window_fields(&tz, &touching[0])), Some(events::window_fields(&tz, &merged)));
        self.event(Entity::OfflineWindow, &merged.id.to_string(), Action::Updated, change)?;
        Ok(merged)
    }

    /// Checks a session against every rule, ignoring the booking `ignore` (the one being moved).
    pub fn check(&self, new: &Session, ignore: Option<&BookingId>) -> Result<()> {
        let contact = rules::check_noting_client(&self.tx, &self.studio()?.tz, new, ignore)?;
        if let Some(contact) = contact {
            self.told.borrow_mut().client_contacts.insert(new.client.as_str().to_owned(), contact);
        }
        Ok(())
    }

    /// Forgets the clients' contacts read so far: the transaction is changing a person.
    pub(super) fn forget_contacts(&self) {
        self.told.borrow_mut().client_contacts.clear();
    }

    /// Checks a session against its room's booking rules, those that hold for `what` (none while
    /// loading a studio's own history).
    fn check_room_rules(&self, new: &Session, what: RulesFor) -> Result<()> {
        if self.history {
            return Ok(());
        }
        rules::check_room_rules(&self.tx, &self.studio()?.tz, new, self.now(), what)
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
    let engineer_skills = clean_list("engineer_skills", TextKind::Tag, &new.engineer_skills)?;
    Ok(Session { requires: normalize_features(requires), engineer_skills: normalize_features(engineer_skills), ..new.clone() })
}

/// What a single booking gets beside its session, written with it: see [`insert_whole`].
struct Extras<'a> {
    notes: Option<&'a str>,
    hold_until: Option<DateTime<Utc>>,
    price: i64,
    deposit_due: i64,
}

/// What [`Writer::create_booking_alone`] did.
pub enum Alone {
    /// Booked, and committed with its insert: the transaction is over.
    Committed(Booking),
    /// Booked as by `create_booking_with`: the transaction is open, for the caller to commit.
    Open(Booking),
    /// Nothing was written, and the transaction is over (committed empty): the booking is to be
    /// made again, by `create_booking_with` in a new transaction.
    Again,
}

/// Inserts a single booking with its extras and the next sequence number, and reads it back as
/// stored, in one statement (one round trip): what [`insert`], an update of the extras and a
/// read of the booking did in four.
fn insert_whole(conn: &Connection, new: &Session, extras: &Extras<'_>) -> Result<Booking> {
    let sql = insert_whole_sql();
    let (after, _) = conn.prepare_cached(&sql)?.query_row(insert_whole_params(new, extras), read::booking_from_row)?;
    Ok(after)
}

/// [`insert_whole`] and `event`, the booking's, in one statement (PostgreSQL only), if the
/// session is clear in `room` by [`rules::clear_sql`], whose query the statement also holds: the
/// booking as stored, the event's number and the client's contact; None if it was not clear.
fn insert_whole_recorded(
    conn: &Connection,
    new: &Session,
    extras: &Extras<'_>,
    event: events::Pending<'_>,
    room: &Room,
) -> Result<Option<(Booking, i64, Option<rules::Contact>)>> {
    let sql = insert_whole_recorded_sql(false);
    let values = insert_whole_recorded_params(new, extras, event, room);
    match conn.prepare_cached(&sql)?.query_row(values, insert_whole_recorded_row)? {
        Inserted::Booked(booking, seq, contact) => Ok(Some((booking, seq, contact))),
        Inserted::NotClear | Inserted::Unfit { .. } => Ok(None),
    }
}

/// What the statement of [`insert_whole_recorded_sql`] did.
enum Inserted {
    /// It inserted the booking: as stored, its event's number and the client's contact.
    Booked(Booking, i64, Option<rules::Contact>),
    /// Nothing: the session was not clear.
    NotClear,
    /// Nothing: the session was clear, but the statement was to be its transaction's last and
    /// is not (`told_by_mail`: the client is told by e-mail, which the same transaction writes),
    /// or the cache's version is no longer the one the rules checked in process were read at.
    Unfit { told_by_mail: bool },
}

/// The statement of [`insert_whole_recorded`] (PostgreSQL): `c`, the query of
/// [`rules::clear_sql`]; `g`, whether the insert may be the last statement of its transaction
/// (checked only if `last`: the cache's version is the one given, and the client is not told by
/// e-mail); `b`, the insert if both hold; `e`, its event. Its arguments are
/// [`insert_whole_recorded_params`], and then, if `last`, the version.
fn insert_whole_recorded_sql(last: bool) -> String {
    let fits = if last {
        "CASE WHEN (SELECT version FROM cache_version WHERE id = 1) = CAST(?37 AS BIGINT) AND (SELECT email FROM c) IS NULL THEN 1 ELSE 0 END"
    } else {
        "1"
    };
    format!(
        "WITH c (clear, name, email) AS ({clear}), g (fits) AS (SELECT {fits}), \
         k (n) AS (UPDATE booking_clock SET n = n + 1 WHERE id = 1 AND (SELECT clear FROM c) = 1 AND (SELECT fits FROM g) = 1 RETURNING n), \
         b AS ({insert}), l AS ({LONGEST}), e AS ({event}) \
         SELECT b.*, e.seq, c.clear, c.name, c.email, g.fits FROM c CROSS JOIN g LEFT JOIN b ON TRUE LEFT JOIN e ON TRUE",
        // The insert's 16 and the event's 8 parameters come first, in their order; then the query's.
        clear = rules::clear_sql(25, db::Backend::Postgres),
        insert = format_args!("{INSERT_IF_CLEAR} AND (SELECT fits FROM g) = 1 RETURNING {}", read::BOOKING_COLUMNS),
        event = events::INSERT_FOR_BOOKING_B
    )
}

/// The types of the arguments of [`insert_whole_recorded_sql`] with `last`, in their order: the
/// insert's 16, the event's 8, the query's 12 ([`rules::clear_params`]) and the version.
const RECORDED_ARGUMENTS: [&str; 37] = [
    "TEXT", "TEXT", "TEXT", "BIGINT", "BIGINT", "BIGINT", "TEXT", "TEXT", "BIGINT", "BIGINT", "BIGINT", "TEXT", "TEXT", "BIGINT", "BIGINT", "BIGINT",
    "BIGINT", "BIGINT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT",
    "TEXT", "TEXT", "BIGINT", "BIGINT", "TEXT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "TEXT",
    "BIGINT",
];

/// [`insert_whole_recorded_sql`] with `last` for several new bookings at once, in one statement:
/// what a group commit sends for a batch of them (`Transaction::query_row_then_commit_with_others`).
/// Its one argument is a JSON array of the single statement's arguments for each booking, in
/// the batch's order (`p`); it returns the single statement's row for each, in that order, then
/// its position (from 1) and whether it is to be made again.
///
/// Each booking is checked as the single statement checks it, against the bookings written
/// before the statement. A booking that clashes with one before it in the batch (same room
/// within its turnaround, same client, or same engineer) is not inserted and is to be made again:
/// on its own, it is then checked against the other one as written. Those inserted take the next
/// sequence numbers and change numbers in the batch's order, and their events follow in it.
fn insert_whole_recorded_many_sql() -> String {
    let columns: Vec<String> = RECORDED_ARGUMENTS.iter().enumerate().map(|(n, kind)| format!("CAST(j.x->>{n} AS {kind}) AS v{}", n + 1)).collect();
    let clear = rules::clear_columns(&|n| format!("p.v{}", 24 + n), db::Backend::Postgres);
    let inserted = "p.v1, p.v2, p.v3, p.v4, p.v5, p.v6, p.v7, NULL, p.v8, p.v9, p.v10, p.v11, p.v12, p.v13, p.v14, p.v15, p.v16";
    let seq = "s.n + ok.r";
    format!(
        "WITH p AS (SELECT j.i, {columns} FROM jsonb_array_elements(CAST(CAST(?1 AS TEXT) AS jsonb)) WITH ORDINALITY AS j(x, i)), \
         c (i, clear, name, email) AS (SELECT p.i, {clear} FROM p), \
         a (i, clear, name, email, fits, again) AS (SELECT c.i, c.clear, c.name, c.email, \
             CASE WHEN (SELECT version FROM cache_version WHERE id = 1) = p.v37 AND c.email IS NULL THEN 1 ELSE 0 END, \
             EXISTS (SELECT 1 FROM p q WHERE q.i < p.i \
                     AND ((q.v1 = p.v1 AND q.v4 < p.v31 AND q.v5 > p.v32) \
                          OR ((q.v2 = p.v2 OR q.v3 = p.v3) AND q.v4 < p.v34 AND q.v5 > p.v35))) \
             FROM c JOIN p ON p.i = c.i), \
         ok (i, r) AS (SELECT i, row_number() OVER (ORDER BY i) FROM a WHERE clear = 1 AND fits = 1 AND NOT again), \
         k (n) AS (UPDATE booking_clock SET n = n + (SELECT count(*) FROM ok) WHERE id = 1 AND EXISTS (SELECT 1 FROM ok) RETURNING n), \
         s (n) AS (SELECT COALESCE(MAX(seq), 0) FROM bookings), \
         b AS (INSERT INTO bookings (seq, id, room_id, client_id, engineer_id, start_at, end_at, party_size, requires, \
                 series_id, status, pinned, created_at, updated_at, engineer_skills, notes, hold_until, price, deposit_due, \
                 changed, occupies, in_offline) \
               SELECT {seq}, 'bk_' || lpad(CAST({seq} AS TEXT), GREATEST(5, length(CAST({seq} AS TEXT))), '0'), {inserted}, \
                 k.n - (SELECT count(*) FROM ok) + ok.r, \
                 int8range(p.v4, p.v5 + 60 * COALESCE((SELECT buffer_minutes FROM rooms WHERE id = p.v1), 0)), 0 \
               FROM ok JOIN p ON p.i = ok.i CROSS JOIN s CROSS JOIN k ORDER BY ok.r \
               RETURNING {booking}), \
         l AS (UPDATE booking_bounds SET longest = m.longest FROM (SELECT MAX(p.v5 - p.v4) AS longest FROM ok JOIN p ON p.i = ok.i) AS m \
               WHERE id = 1 AND booking_bounds.longest < m.longest AND EXISTS (SELECT 1 FROM k)), \
         e AS (INSERT INTO events (at, real_at, who, via, entity, entity_id, action, before, after) \
               SELECT p.v17, p.v18, p.v19, p.v20, p.v21, b.id, p.v22, p.v23, p.v24 \
               FROM b CROSS JOIN s JOIN ok ON b.seq = {seq} JOIN p ON p.i = ok.i ORDER BY ok.r \
               RETURNING seq, entity_id) \
         SELECT b.*, e.seq, a.clear, a.name, a.email, a.fits, a.i, CASE WHEN a.again THEN 1 ELSE 0 END \
         FROM a LEFT JOIN ok ON ok.i = a.i CROSS JOIN s LEFT JOIN b ON b.seq = {seq} LEFT JOIN e ON e.entity_id = b.id ORDER BY a.i",
        columns = columns.join(", "),
        booking = read::BOOKING_COLUMNS,
    )
}

/// The statement's raise of the longest booking written (`booking_bounds`), which a new
/// booking's row trigger makes for any insert that does not bring its own change number
/// (PostgreSQL's migration 23): only if the clock was taken (`k`), that is if `b` inserts. Its
/// parameters are the insert's start (`?4`) and end (`?5`).
const LONGEST: &str = "UPDATE booking_bounds SET longest = CAST(?5 AS BIGINT) - CAST(?4 AS BIGINT) \
     WHERE id = 1 AND longest < CAST(?5 AS BIGINT) - CAST(?4 AS BIGINT) AND EXISTS (SELECT 1 FROM k)";

/// The arguments of [`insert_whole_recorded_sql`] but the version.
fn insert_whole_recorded_params(new: &Session, extras: &Extras<'_>, event: events::Pending<'_>, room: &Room) -> Vec<db::Value> {
    let mut values = insert_whole_params(new, extras);
    values.extend(event.values());
    values.extend(rules::clear_params(room, new, None));
    values
}

/// The row of [`insert_whole_recorded_sql`]: the booking's columns, then the event's number,
/// the verdict, the client's name and address, and whether the insert fitted.
fn insert_whole_recorded_row(row: &db::Row<'_>) -> db::Result<Inserted> {
    let seq_at = read::BOOKING_COLUMNS.split(',').count();
    let (clear_at, name_at, email_at, fits_at) = (seq_at + 1, seq_at + 2, seq_at + 3, seq_at + 4);
    if row.get::<_, i64>(clear_at)? != 1 {
        return Ok(Inserted::NotClear);
    }
    if row.get::<_, i64>(fits_at)? != 1 {
        return Ok(Inserted::Unfit { told_by_mail: row.get::<_, Option<String>>(email_at)?.is_some() });
    }
    let contact = row.get::<_, Option<String>>(name_at)?.map(|name| Ok::<_, db::Error>((name, row.get(email_at)?))).transpose()?;
    Ok(Inserted::Booked(read::booking_from_row(row)?.0, row.get::<_, i64>(seq_at)?, contact))
}

/// The insert of [`insert_whole_sql`] on PostgreSQL, as a SELECT that writes nothing unless the
/// verdict of the statement's `c` is clear, and without its RETURNING; its arguments are
/// [`insert_whole_params`]. A SELECT's parameters take no type from the columns they fill, so
/// each is cast.
///
/// It writes what the row trigger of any other insert writes (PostgreSQL's migration 23), in the
/// statement rather than in a call of PL/pgSQL: the change number, from the clock the statement
/// takes (`k`); what the booking occupies of its room, under the room's turnaround as stored
/// now; and `in_offline` 0, since a session clear by `c` overlaps no offline window of its room.
const INSERT_IF_CLEAR: &str = "INSERT INTO bookings (seq, id, room_id, client_id, engineer_id, start_at, end_at, party_size, requires, \
     series_id, status, pinned, created_at, updated_at, engineer_skills, notes, hold_until, price, deposit_due, \
     changed, occupies, in_offline) \
     SELECT next.n, 'bk_' || lpad(CAST(next.n AS TEXT), GREATEST(5, length(CAST(next.n AS TEXT))), '0'), \
     CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), \
     NULL, CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), \
     CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), \
     k.n, int8range(CAST(?4 AS BIGINT), CAST(?5 AS BIGINT) + 60 * COALESCE((SELECT buffer_minutes FROM rooms WHERE id = CAST(?1 AS TEXT)), 0)), 0 \
     FROM (SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM bookings) AS next CROSS JOIN k \
     WHERE (SELECT clear FROM c) = 1";

/// The statement of [`insert_whole`] (SQLite; PostgreSQL inserts with [`INSERT_IF_CLEAR`]),
/// which returns `read::BOOKING_COLUMNS`. The id is "bk_" and the sequence number, at least
/// five digits (`insert`'s format).
fn insert_whole_sql() -> String {
    format!(
        "INSERT INTO bookings (seq, id, room_id, client_id, engineer_id, start_at, end_at, party_size, requires, \
         series_id, status, pinned, created_at, updated_at, engineer_skills, notes, hold_until, price, deposit_due) \
         VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM bookings), (SELECT printf('bk_%05d', COALESCE(MAX(seq), 0) + 1) FROM bookings), \
         ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         RETURNING {}",
        read::BOOKING_COLUMNS
    )
}

/// The arguments of [`insert_whole_sql`].
fn insert_whole_params(new: &Session, extras: &Extras<'_>) -> Vec<db::Value> {
    let now = Utc::now().timestamp();
    db::Params::into_values(params![
            new.room.as_str(),
            new.client.as_str(),
            new.engineer.as_ref().map(|e| e.as_str()),
            new.start.timestamp(),
            new.end.timestamp(),
            new.party_size,
            to_json_list(&new.requires),
            new.status.as_str(),
            new.pinned,
            now,
            now,
            to_json_list(&new.engineer_skills),
            extras.notes,
            extras.hold_until.map(|t| t.timestamp()),
            extras.price,
            extras.deposit_due
    ])
}

fn insert(conn: &Connection, new: &Session, series: Option<&SeriesId>) -> Result<Booking> {
    let seq: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM bookings", (), |row| row.get(0))?;
    let id = BookingId(format!("bk_{seq:05}"));
    let now = Utc::now().timestamp();
    conn.prepare_cached(
        "INSERT INTO bookings (seq, id, room_id, client_id, engineer_id, start_at, end_at, party_size, requires, \
         series_id, status, pinned, created_at, updated_at, engineer_skills) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        now,
        to_json_list(&new.engineer_skills)
    ])?;
    Ok(Booking { id, series: series.cloned(), session: new.clone(), notes: None, hold_until: None, displaced: false, money: Default::default() })
}

/// One window over `[from, to)` and every window it `touching` (not empty), with the id of the
/// first and every distinct reason, in order; refused when it would last more than a year, or
/// its reasons together grow past [`MAX_MERGED_REASON`].
fn merged_window(tz: &StudioTz, touching: &[OfflineWindow], from: DateTime<Utc>, to: DateTime<Utc>, reason: &str) -> Result<OfflineWindow> {
    let keep = &touching[0];
    let (mut start, mut end) = (from, to);
    let mut reasons: Vec<String> = Vec::new();
    for w in touching {
        (start, end) = (start.min(w.from), end.max(w.to));
        for part in w.reason.split("; ") {
            if !reasons.iter().any(|x| x == part) {
                reasons.push(part.to_owned());
            }
        }
    }
    if !reasons.iter().any(|x| x == reason) {
        reasons.push(reason.to_owned());
    }
    let room = &keep.room;
    if end - start > MAX_WINDOW {
        let (f, t) = (tz.format(start), tz.format(end));
        return Err(StoreError::invalid("to", format!(
            "this window overlaps or touches {} of {room}'s windows, and together they would run from {f} to {t}, \
             more than a year: choose a shorter window",
            touching.len()
        )));
    }
    let merged = reasons.join("; ");
    // Merging keeps every distinct reason, so repeats with new reasons could grow one row
    // without end: past a bound, the caller has to reuse a reason already given.
    if merged.chars().count() > MAX_MERGED_REASON {
        return Err(StoreError::invalid("reason", format!(
            "this window meets window {} of {room}, and their reasons together would pass {MAX_MERGED_REASON} \
             characters: give one of the reasons it already has ({:?})",
            keep.id, reasons[0]
        )));
    }
    Ok(OfflineWindow { id: keep.id, room: room.clone(), from: start, to: end, reason: merged })
}
