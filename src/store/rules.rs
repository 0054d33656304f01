//! The calendar's rules, each written once: what a session must keep to be booked (its shape, its
//! room's state, size, features, hours and offline windows, and no clash with the other bookings
//! of its room, client and engineer), who may be put on a session, which sessions a scope reaches,
//! and what a hold and notes may be. Every write that places or changes a booking asks here
//! (`write.rs`, `edits.rs`, `roster.rs`); this module only reads, and imports no other module of
//! the store but `db` and `read`.

use super::db::{self, params, Connection, OptionalExtension};
use super::read::{self, booking_from_row, BOOKING_COLUMNS, HOLDS_ITS_PLACE, MAX_BOOKING};
use super::{clean_text, instant_at, Result, StoreError};
use crate::domain::{
    overlaps, Booking, BookingId, BufferNote, ClientId, EngineerId, Refusal, Room, Session, Status, StudioTz, TextKind, TimeOff,
    WeeklyHours,
};
use chrono::{DateTime, Duration, Utc};

/// Which sessions a cancellation or an edit takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelScope {
    /// Only this booking.
    Occurrence,
    /// This session and every later one of its series.
    Following,
    /// Every session of its series that has not started yet.
    Series,
}

/// What a scope is taken for; a refusal is worded for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScopeFor {
    Cancel,
    Edit,
}

/// The bookings a scope reaches from `booking`: itself, or the sessions of its series from it on
/// (`Following`) or after `now` (`Series`) that are not cancelled, in start order.
pub(super) fn scope_ids(conn: &Connection, booking: &Booking, scope: CancelScope, now: DateTime<Utc>, purpose: ScopeFor) -> Result<Vec<BookingId>> {
    let id = &booking.id;
    match (scope, &booking.series) {
        (CancelScope::Occurrence, _) => {
            if booking.status == Status::Cancelled {
                let message = match purpose {
                    ScopeFor::Cancel => format!("{id} is already cancelled"),
                    ScopeFor::Edit => format!("{id} is cancelled: book a new session instead"),
                };
                return Err(StoreError::invalid("id", message));
            }
            Ok(vec![id.clone()])
        }
        (_, None) => {
            let how = match purpose {
                ScopeFor::Cancel => "cancel it with",
                ScopeFor::Edit => "use",
            };
            Err(StoreError::invalid("scope", format!("{id} is not part of a series: {how} scope \"occurrence\"")))
        }
        (scope, Some(series)) => {
            let from = if scope == CancelScope::Following { booking.start } else { now + Duration::seconds(1) };
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM bookings WHERE series_id = ? AND start_at >= ? AND status != 'cancelled' ORDER BY start_at",
            )?;
            let rows = stmt.query_map(params![series.as_str(), from.timestamp()], |row| row.get::<_, String>(0))?;
            Ok(rows.map(|r| r.map(BookingId)).collect::<db::Result<_>>()?)
        }
    }
}

/// Refuses a hold that cannot be: only a tentative booking is held, until a time after now.
pub(super) fn check_hold(now: DateTime<Utc>, status: Status, hold_until: Option<DateTime<Utc>>, start: DateTime<Utc>) -> Result<()> {
    let Some(until) = hold_until else { return Ok(()) };
    if status != Status::Tentative {
        return Err(StoreError::invalid(
            "hold_until",
            "hold_until: only a tentative booking is held; set status \"tentative\", or leave hold_until out",
        ));
    }
    if until <= now {
        return Err(StoreError::invalid("hold_until", "hold_until: a hold must end after now"));
    }
    if until > start {
        return Err(StoreError::invalid("hold_until", "hold_until: a hold must end by the session's start"));
    }
    Ok(())
}

/// Notes as stored: by the rule of notes, `None` when empty.
pub(super) fn clean_notes(notes: Option<&str>) -> Result<Option<String>> {
    let Some(notes) = notes else { return Ok(None) };
    let notes = clean_text("notes", TextKind::Notes, notes)?;
    Ok((!notes.is_empty()).then_some(notes))
}

/// A room that is retired takes no session.
fn check_room_active(room: &Room) -> Result<()> {
    if !room.active {
        return Err(StoreError::Inactive { kind: "room", id: room.id.0.clone() });
    }
    Ok(())
}

/// The rules a session keeps with its room itself: big enough, with the features it needs, open
/// for the whole session. The same rules hold a new session and the bookings a room's change keeps.
fn check_room_fits(room: &Room, tz: &StudioTz, session: &Session) -> Result<()> {
    if session.party_size > room.capacity {
        return Err(Refusal::TooSmall { room: room.id.clone(), capacity: room.capacity, party_size: session.party_size }.into());
    }
    let missing = room.missing_features(&session.requires);
    if !missing.is_empty() {
        let missing = missing.into_iter().map(str::to_owned).collect();
        return Err(Refusal::MissingFeatures { room: room.id.clone(), missing }.into());
    }
    if !room.hours.contains(tz, session.start, session.end) {
        let hours = if room.hours.spans().is_empty() { "none (it never opens)".to_owned() } else { room.hours.to_lines().join(", ") };
        let (from, to) = (tz.zoned(session.start), tz.zoned(session.end));
        return Err(Refusal::Closed { room: room.id.clone(), from, to, hours }.into());
    }
    Ok(())
}

/// Whether a room as it is (or as a change would make it) still holds a booked session: active,
/// and every rule of [`check_room_fits`].
pub(super) fn room_holds(room: &Room, tz: &StudioTz, session: &Session) -> bool {
    check_room_active(room).and_then(|()| check_room_fits(room, tz, session)).is_ok()
}

/// Whether two sessions of one room clash under its turnaround `buffer`: each occupies its room
/// from its start to its end plus the buffer.
pub(super) fn turnaround_clash(a: &Session, b: &Session, buffer: Duration) -> bool {
    overlaps((a.start, a.end + buffer), (b.start, b.end + buffer))
}

/// A client or engineer may be put on a session: they exist, and they are active unless the
/// booking already has them (a booking keeps a person deactivated since, so that it can still be
/// moved or edited: a reflow must be able to place it).
fn check_bookable(conn: &Connection, (table, kind): (&str, &'static str), id: &str, already: bool, unknown: impl FnOnce() -> StoreError) -> Result<()> {
    match read::active(conn, table, id)? {
        None => Err(unknown()),
        Some(false) if !already => Err(StoreError::Inactive { kind, id: id.to_owned() }),
        Some(_) => Ok(()),
    }
}

/// [`check_bookable`] for the client of a session that `current` (the booking it changes, if any) has.
fn check_client(conn: &Connection, client: &ClientId, current: Option<&Booking>) -> Result<()> {
    let already = current.is_some_and(|b| &b.client == client);
    check_bookable(conn, ("clients", "client"), client.as_str(), already, || StoreError::UnknownClient(client.clone()))
}

/// [`check_bookable`] for the engineer of a session that `current` (the booking it changes, if any) has.
pub(super) fn check_engineer(conn: &Connection, engineer: &EngineerId, current: Option<&Booking>) -> Result<()> {
    let already = current.is_some_and(|b| b.engineer.as_ref() == Some(engineer));
    check_bookable(conn, ("engineers", "engineer"), engineer.as_str(), already, || StoreError::UnknownEngineer(engineer.clone()))
}

/// Every rule a session must keep, cheapest first: its own shape, the room's state, the people,
/// the room's size, features, hours and offline windows, then the other bookings of the room,
/// the client and the engineer. `ignore` is the booking being changed, which never clashes with
/// itself.
pub(super) fn check(conn: &Connection, tz: &StudioTz, new: &Session, ignore: Option<&BookingId>) -> Result<()> {
    check_noting_client(conn, tz, new, ignore).map(drop)
}

/// [`check`], which also hands back the client's contact ([`Contact`]) when the one query of the
/// common case read it (a bookable client and nothing in the way): the e-mail written at the
/// commit then needs no read of its own.
pub(super) fn check_noting_client(conn: &Connection, tz: &StudioTz, new: &Session, ignore: Option<&BookingId>) -> Result<Option<Contact>> {
    check_shape(new)?;
    let room = read::room(conn, &new.room)?.ok_or_else(|| StoreError::UnknownRoom(new.room.clone()))?;
    check_room_active(&room)?;
    let current = match ignore {
        Some(id) => read::booking(conn, id)?,
        None => None,
    };
    // The common case, a bookable client and nothing in the way, is told by one round trip; only
    // when it is not so are the checks below read one by one, to refuse with the first that fails.
    let (clear, contact) = all_clear(conn, &room, new, ignore)?;
    if !clear {
        check_client(conn, &new.client, current.as_ref())?;
    }
    if let Some(engineer) = &new.engineer {
        check_engineer(conn, engineer, current.as_ref())?;
        // Skills are checked when the engineer or the skills asked for are new to the booking: an
        // engineer whose skills were edited since keeps the sessions they already run.
        let same = current.as_ref().is_some_and(|b| b.engineer.as_ref() == Some(engineer) && b.engineer_skills == new.engineer_skills);
        if !same {
            check_engineer_skills(conn, engineer, &new.engineer_skills)?;
        }
    }
    check_room_fits(&room, tz, new)?;
    if let Some(engineer) = &new.engineer {
        check_engineer_works(conn, tz, engineer, new.start, new.end)?;
    }
    if clear {
        return Ok(contact);
    }
    if let Some(window) = read::offline_windows(conn, Some(&room.id), new.start, new.end)?.into_iter().next() {
        let (from, to) = (tz.zoned(window.from), tz.zoned(window.to));
        return Err(Refusal::Offline { room: room.id, from, to, reason: window.reason }.into());
    }
    check_clashes(conn, tz, &room, new, ignore).map(|()| None)
}

/// A person's name and the address their e-mail goes to (none without one, or with `notify`
/// off), as `mail.rs` reads them.
pub(super) type Contact = (String, Option<String>);

/// Whether the session's client is active and nothing is in its way: no offline window of its
/// room and no clash with a booking of its room, client or engineer, by the very conditions of
/// [`check_client`], [`read::offline_windows`] and [`check_clashes`] (an inactive client a
/// booking already has reads as not clear, and is then checked one rule at a time). One query,
/// so that a booking that keeps every rule costs one round trip for all of them. The same query
/// reads the client's contact, as [`Contact`] (when clear: the client exists), which the
/// booking's e-mail needs at the commit.
fn all_clear(conn: &Connection, room: &Room, new: &Session, ignore: Option<&BookingId>) -> Result<(bool, Option<Contact>)> {
    let (clear, name, email): (i64, Option<String>, Option<String>) =
        conn.prepare_cached(&clear_sql(1, conn.backend()))?.query_row(clear_params(room, new, ignore), |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
    Ok((clear == 1, name.map(|name| (name, email))))
}

/// The query of [`all_clear`]: one row of the verdict (1 clear, 0 not), the client's name and
/// address; its twelve parameters ([`clear_params`]) numbered from `first` on, so that a larger
/// statement can hold it.
pub(super) fn clear_sql(first: usize, backend: db::Backend) -> String {
    format!("SELECT {}", clear_columns(&|n| format!("?{}", first + n - 1), backend))
}

/// The three columns of [`clear_sql`], with its `n`th parameter (from 1) read as `param(n)`: a
/// placeholder, or a column of a row the query is made for, so that a statement can check many
/// sessions at once (`write::insert_whole_recorded_many_sql`). The client is read by queries of
/// one row each, which PostgreSQL never turns into a scan of every client (as it may an `EXISTS`
/// made for many rows).
pub(super) fn clear_columns(param: &dyn Fn(usize) -> String, backend: db::Backend) -> String {
    let (client, room, start, end, ignore) = (param(1), param(2), param(3), param(4), param(5));
    let (room_back, room_until, room_after, back, until, after, engineer) = (param(6), param(7), param(8), param(9), param(10), param(11), param(12));
    let room_starts = starts_between(backend, "room_id", &room, &room_back, &room_until);
    let client_starts = starts_between(backend, "client_id", &client, &back, &until);
    format!(
        "CASE WHEN (SELECT active FROM clients WHERE id = {client}) = 1 \
         AND NOT EXISTS (SELECT 1 FROM offline_windows WHERE room_id = {room} AND from_at < {end} AND to_at > {start}) \
         AND NOT EXISTS (SELECT 1 FROM bookings b WHERE room_id = {room} AND id != {ignore} AND {HOLDS_ITS_PLACE} AND {room_starts} AND end_at > {room_after}) \
         AND NOT EXISTS (SELECT 1 FROM bookings b WHERE client_id = {client} AND id != {ignore} AND {HOLDS_ITS_PLACE} AND {client_starts} AND end_at > {after}) \
         AND NOT EXISTS (SELECT 1 FROM bookings b WHERE engineer_id = {engineer} AND id != {ignore} AND {HOLDS_ITS_PLACE} AND start_at > {back} AND start_at < {until} AND end_at > {after}) \
         THEN 1 ELSE 0 END, \
         (SELECT name FROM clients WHERE id = {client}), (SELECT CASE WHEN notify = 1 THEN email END FROM clients WHERE id = {client})"
    )
}

/// The starts after `back` and before `until` of the bookings whose `column` is `key`, as a
/// clash query of [`clear_sql`] reads them on the index of (`column`, start_at).
///
/// On PostgreSQL the range is a row comparison, which only that index can take. The statement's
/// plan is made once per connection and kept; made while the bookings table is empty, as in a new
/// studio until its first statistics, it costs every index alike and takes the smallest, that of
/// the starts alone, which then reads every booking of the studio that starts in the window
/// (about a hundred per clash query in `cargo bench --bench servers`, against two). The plain
/// comparisons beside it tell the planner that the range is narrow (two bounds of one column):
/// without them, a plan made for values it does not know (a generic plan, or the rows of a
/// statement for many bookings) found a scan of the whole table cheaper once it held a few
/// thousand bookings (the demo studio's 1,570). SQLite ranges an index over plain comparisons
/// only, and chooses (`column`, start_at) for them.
fn starts_between(backend: db::Backend, column: &str, key: &str, back: &str, until: &str) -> String {
    match backend {
        db::Backend::Postgres => {
            format!("({column}, start_at) > ({key}, {back}) AND ({column}, start_at) < ({key}, {until}) AND start_at > {back} AND start_at < {until}")
        }
        db::Backend::Sqlite => format!("start_at > {back} AND start_at < {until}"),
    }
}

/// The arguments of [`clear_sql`], in its order.
pub(super) fn clear_params(room: &Room, new: &Session, ignore: Option<&BookingId>) -> Vec<db::Value> {
    let (room_back, room_until, room_after) = clash_window(new, room.buffer);
    let (back, until, after) = clash_window(new, Duration::zero());
    db::Params::into_values(params![
        new.client.as_str(),
        room.id.as_str(),
        new.start.timestamp(),
        new.end.timestamp(),
        ignore.map_or("", |id| id.as_str()),
        room_back,
        room_until,
        room_after,
        back,
        until,
        after,
        new.engineer.as_ref().map(|e| e.as_str())
    ])
}

/// The rules of [`check`] for a new session that do not depend on the other bookings, the
/// client or the room's offline windows, in the order `check` asks them when those are clear:
/// its shape, the room, the engineer, the room's size, features and hours, the engineer's
/// hours. The room, for [`clear_sql`]. A session that passes these and is clear by
/// [`clear_sql`] keeps every rule; one that fails either is refused by `check`, which then
/// says the first rule it breaks.
pub(super) fn check_unless_clear(conn: &Connection, tz: &StudioTz, new: &Session) -> Result<Room> {
    check_shape(new)?;
    let room = read::room(conn, &new.room)?.ok_or_else(|| StoreError::UnknownRoom(new.room.clone()))?;
    check_room_active(&room)?;
    if let Some(engineer) = &new.engineer {
        check_engineer(conn, engineer, None)?;
        check_engineer_skills(conn, engineer, &new.engineer_skills)?;
    }
    check_room_fits(&room, tz, new)?;
    if let Some(engineer) = &new.engineer {
        check_engineer_works(conn, tz, engineer, new.start, new.end)?;
    }
    Ok(room)
}

/// The bounds a clash query asks for with a buffer of `pad` around the session: a start after
/// the first and before the second, an end after the third (see [`check_clashes`]).
fn clash_window(new: &Session, pad: Duration) -> (i64, i64, i64) {
    ((new.start - MAX_BOOKING - pad).timestamp(), (new.end + pad).timestamp(), (new.start - pad).timestamp())
}

/// The engineer has every skill of `needed` (an unknown engineer is refused before this).
pub(super) fn check_engineer_skills(conn: &Connection, engineer: &EngineerId, needed: &[String]) -> Result<()> {
    if needed.is_empty() {
        return Ok(());
    }
    let json: Option<String> =
        conn.prepare_cached("SELECT skills FROM engineers WHERE id = ?")?.query_row([engineer.as_str()], |row| row.get(0)).optional()?;
    let has: Vec<String> = match json {
        Some(j) => serde_json::from_str(&j).map_err(|e| StoreError::Corrupt(format!("skills of {engineer}: {e}")))?,
        None => Vec::new(),
    };
    let missing: Vec<String> = needed.iter().filter(|s| !has.contains(s)).cloned().collect();
    if !missing.is_empty() {
        return Err(Refusal::EngineerLacksSkills { engineer: engineer.clone(), missing }.into());
    }
    Ok(())
}

/// Working hours as stored (JSON lines that [`WeeklyHours::to_lines`] wrote) of engineer `id`.
pub(super) fn stored_hours(id: &str, json: &str) -> Result<WeeklyHours> {
    let lines: Vec<String> = serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("working hours of {id}: {e}")))?;
    WeeklyHours::read(&lines).map_err(|e| StoreError::Corrupt(format!("working hours of {id}: {e}")))
}

/// An engineer's working hours; `None`: always (or no such engineer).
pub(super) fn engineer_hours(conn: &Connection, engineer: &EngineerId) -> Result<Option<WeeklyHours>> {
    let json: Option<Option<String>> = conn
        .prepare_cached("SELECT working_hours FROM engineers WHERE id = ?")?
        .query_row([engineer.as_str()], |row| row.get(0))
        .optional()?;
    json.flatten().map(|j| stored_hours(engineer.as_str(), &j)).transpose()
}

/// The engineer's time off that overlaps `[from, to)`, in start order (`engineer` `None`: everyone's).
pub(super) fn time_off_between(conn: &Connection, engineer: Option<&EngineerId>, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<TimeOff>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, engineer_id, from_at, to_at, reason FROM time_off \
         WHERE (CAST(?1 AS TEXT) IS NULL OR engineer_id = ?1) AND from_at < ?2 AND to_at > ?3 ORDER BY from_at, id",
    )?;
    let rows = stmt.query_map(params![engineer.map(|e| e.as_str()), to.timestamp(), from.timestamp()], time_off_from_row)?;
    Ok(rows.collect::<db::Result<Vec<_>>>()?)
}

/// A row of `SELECT id, engineer_id, from_at, to_at, reason FROM time_off`.
pub(super) fn time_off_from_row(row: &db::Row<'_>) -> db::Result<TimeOff> {
    Ok(TimeOff { id: row.get(0)?, engineer: EngineerId(row.get(1)?), from: instant_at(row, 2)?, to: instant_at(row, 3)?, reason: row.get(4)? })
}

/// The engineer works for the whole of `[start, end)`: inside one span of their working hours,
/// and on no time off.
pub(super) fn check_engineer_works(conn: &Connection, tz: &StudioTz, engineer: &EngineerId, start: DateTime<Utc>, end: DateTime<Utc>) -> Result<()> {
    if let Some(hours) = engineer_hours(conn, engineer)?
        && !hours.contains(tz, start, end)
    {
        let lines = if hours.spans().is_empty() { "none (they never work)".to_owned() } else { hours.to_lines().join(", ") };
        return Err(Refusal::EngineerOffHours { engineer: engineer.clone(), from: tz.zoned(start), to: tz.zoned(end), hours: lines }.into());
    }
    if let Some(away) = time_off_between(conn, Some(engineer), start, end)?.into_iter().next() {
        return Err(Refusal::EngineerAway { engineer: engineer.clone(), from: tz.zoned(away.from), to: tz.zoned(away.to), reason: away.reason }.into());
    }
    Ok(())
}

/// Which of a room's booking rules a write keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RulesFor {
    /// A new session: every rule.
    New,
    /// A person moving a session: notice, how far ahead and the grid (its length is as booked).
    Move,
    /// A reflow's move: the grid only. A reflow never refuses to move a session because of a
    /// rule added after it was booked.
    Reflow,
}

/// The room's booking rules that hold for `what`, each refusal naming the rule and what to change.
pub(super) fn check_room_rules(conn: &Connection, tz: &StudioTz, new: &Session, now: DateTime<Utc>, what: RulesFor) -> Result<()> {
    let Some(room) = read::room(conn, &new.room)? else { return Ok(()) };
    let rules = room.rules;
    let minutes = (new.end - new.start).num_minutes();
    if what == RulesFor::New {
        if let Some(min) = rules.min_minutes
            && minutes < min
        {
            return Err(Refusal::TooShort { room: room.id, minutes, min }.into());
        }
        if let Some(max) = rules.max_minutes
            && minutes > max
        {
            return Err(Refusal::TooLong { room: room.id, minutes, max }.into());
        }
    }
    if what != RulesFor::Reflow {
        if let Some(lead) = rules.lead_minutes
            && new.start < now + Duration::minutes(lead)
        {
            let earliest = now + Duration::minutes(lead);
            return Err(Refusal::TooSoon { room: room.id, start: tz.zoned(new.start), earliest: tz.zoned(earliest), lead }.into());
        }
        if let Some(days) = rules.max_advance_days
            && new.start > now + Duration::days(days)
        {
            let latest = now + Duration::days(days);
            return Err(Refusal::TooFarAhead { room: room.id, start: tz.zoned(new.start), latest: tz.zoned(latest), days }.into());
        }
    }
    if let Some(step) = rules.start_step_minutes
        && !rules.on_step(tz, new.start)
    {
        let next = rules.next_step(tz, new.start);
        return Err(Refusal::OffStep { room: room.id, start: tz.zoned(new.start), next: tz.zoned(next), step }.into());
    }
    Ok(())
}

/// A session's own shape: it ends after it starts, within a day, and is not cancelled.
fn check_shape(new: &Session) -> Result<()> {
    if new.end <= new.start {
        return Err(StoreError::invalid("end", "a booking must end after it starts"));
    }
    if new.end - new.start > MAX_BOOKING {
        return Err(StoreError::invalid("end", "a booking may last at most 24 hours: split it"));
    }
    if new.status == Status::Cancelled {
        return Err(StoreError::invalid("status", "a new booking is confirmed or tentative, not cancelled"));
    }
    Ok(())
}

/// No other booking that holds its place takes the room (with its turnaround), the client or the
/// engineer during the session.
fn check_clashes(conn: &Connection, tz: &StudioTz, room: &Room, new: &Session, ignore: Option<&BookingId>) -> Result<()> {
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
            "SELECT {BOOKING_COLUMNS} FROM bookings b WHERE {column} = ?1 AND id != ?2 AND {HOLDS_ITS_PLACE} \
             AND start_at > ?3 AND start_at < ?4 AND end_at > ?5 ORDER BY start_at LIMIT 1"
        )
    };
    let window = |pad: Duration| clash_window(new, pad);

    let (back, until, after) = window(buffer);
    if let Some(other) = first(conn, &clash_sql("room_id"), params![room.id.as_str(), ignore, back, until, after])? {
        let note = BufferNote((!overlaps(span, (other.start, other.end))).then(|| buffer.num_minutes()));
        let (from, to) = (tz.zoned(other.start), tz.zoned(other.end));
        return Err(Refusal::RoomTaken { room: room.id.clone(), other: other.id, from, to, buffer: note }.into());
    }
    let (back, until, after) = window(Duration::zero());
    if let Some(other) = first(conn, &clash_sql("client_id"), params![new.client.as_str(), ignore, back, until, after])? {
        let (from, to) = (tz.zoned(other.start), tz.zoned(other.end));
        return Err(Refusal::ClientBusy { client: new.client.clone(), other: other.id, from, to }.into());
    }
    if let Some(engineer) = &new.engineer
        && let Some(other) = first(conn, &clash_sql("engineer_id"), params![engineer.as_str(), ignore, back, until, after])?
    {
        let (from, to) = (tz.zoned(other.start), tz.zoned(other.end));
        return Err(Refusal::EngineerBusy { engineer: engineer.clone(), other: other.id, from, to }.into());
    }
    Ok(())
}

fn first(conn: &Connection, sql: &str, args: impl db::Params) -> Result<Option<Booking>> {
    Ok(conn.prepare_cached(sql)?.query_row(args, booking_from_row).optional()?.map(|(b, _)| b))
}
