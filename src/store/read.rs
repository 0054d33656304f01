//! Reads: the studio's rooms and people, bookings by id or by query, series and offline windows.
//! Queries page by keyset on (start, sequence), so a page boundary stays put when others insert.

use super::{instant, instant_at, instant_or_null_at, json_list, Result, SharedBooking, Store, StoreError};
use crate::domain::{BookingRules, Money, RoomPrice,
    Booking, BookingId, Client, ClientId, Engineer, EngineerId, OfflineWindow, Person, Room, RoomId, Series,
    SeriesId, Session, Status, WeeklyHours,
};
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
use super::db::{self, Value, Connection, OptionalExtension, Row};
use super::mirror::Of;

/// The longest a booking may last.
pub const MAX_BOOKING: Duration = Duration::hours(24);

/// The longest booking written so far, in seconds (kept by triggers; never more than
/// [`MAX_BOOKING`]): a booking that overlaps an instant began less than this before it, which
/// bounds the index range an overlap read scans. Read in the statement that uses it, so it is
/// the bound of the very rows read.
const LONGEST: &str = "(SELECT longest FROM booking_bounds WHERE id = 1)";

/// The condition (over `bookings b`) of a booking that holds its room and its people: not
/// cancelled, not flagged displaced, and not in an offline window of its room. Every clash query
/// asks it, and `busy_between` checks the same (the windows in memory), so that a displaced
/// booking occupies nothing anywhere.
pub(super) const HOLDS_ITS_PLACE: &str = "b.status != 'cancelled' AND b.displaced = 0 \
     AND NOT EXISTS (SELECT 1 FROM offline_windows w WHERE w.room_id = b.room_id \
                     AND w.from_at < b.end_at AND w.to_at > b.start_at)";

/// [`HOLDS_ITS_PLACE`] but for the offline windows: the busy reads, which read hundreds of rows,
/// read the windows once and check them in memory rather than look them up for every row.
const ACTIVE_IN_PLACE: &str = "b.status != 'cancelled' AND b.displaced = 0";

pub(super) const BOOKING_COLUMNS: &str = "id, room_id, client_id, engineer_id, start_at, end_at, party_size, \
     requires, series_id, status, pinned, seq, notes, hold_until, displaced, price, deposit_due, paid, engineer_skills";

/// How many columns [`BOOKING_COLUMNS`] names, and where among them is the sequence number.
pub(super) const BOOKING_WIDTH: usize = 19;
pub(super) const SEQ_AT: usize = 11;

/// A booking row and its sequence number (the tie-breaker of the keyset order).
pub(super) fn booking_from_row(row: &Row<'_>) -> db::Result<(Booking, i64)> {
    fn bad(column: usize, what: String) -> db::Error {
        db::Error::column(column, what)
    }
    let requires: String = row.get(7)?;
    let engineer_skills: String = row.get(18)?;
    let status: String = row.get(9)?;
    let booking = Booking {
        id: BookingId(row.get(0)?),
        series: row.get::<_, Option<String>>(8)?.map(SeriesId),
        session: Session {
            room: RoomId(row.get(1)?),
            client: ClientId(row.get(2)?),
            engineer: row.get::<_, Option<String>>(3)?.map(EngineerId),
            start: instant_at(row, 4)?,
            end: instant_at(row, 5)?,
            party_size: row.get(6)?,
            requires: serde_json::from_str(&requires).map_err(|e| bad(7, format!("requires {requires:?}: {e}")))?,
            engineer_skills: serde_json::from_str(&engineer_skills)
                .map_err(|e| bad(18, format!("engineer_skills {engineer_skills:?}: {e}")))?,
            status: Status::parse(&status).ok_or_else(|| bad(9, format!("status {status:?}")))?,
            pinned: row.get(10)?,
        },
        notes: row.get(12)?,
        hold_until: instant_or_null_at(row, 13)?,
        displaced: row.get(14)?,
        money: Money { price: row.get(15)?, deposit_due: row.get(16)?, paid: row.get(17)? },
    };
    Ok((booking, row.get(SEQ_AT)?))
}

/// Which bookings to list. Every filter is optional; the time filter keeps bookings that overlap it.
#[derive(Debug, Clone, Default)]
pub struct BookingQuery {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub room: Option<RoomId>,
    pub client: Option<ClientId>,
    pub engineer: Option<EngineerId>,
    pub series: Option<SeriesId>,
    /// `None` lists every status, cancelled included.
    pub statuses: Option<Vec<Status>>,
    /// Resume after this (start, sequence) position.
    pub after: Option<(i64, i64)>,
    pub limit: usize,
}

/// A booking in a free-slot search's way: the part of it the search needs, read without the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Busy {
    /// Its room, as a position in the rooms the read was given; `None` for a room not among them
    /// (a search offers none of those, so such a booking is read only for its person).
    pub room: Option<usize>,
    /// It is the given client's or engineer's: it blocks every room for the search.
    pub person: bool,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

/// A [`Busy`] with its start and end in seconds since the epoch, as a free-slot search does its
/// arithmetic: read so from memory, where a booking's times are kept in seconds for the walk,
/// with no instant made and read back for each of the hundreds a search steps around.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BusySpan {
    pub room: Option<usize>,
    pub person: bool,
    pub start: i64,
    pub end: i64,
}

impl BusySpan {
    fn instants(self) -> Result<Busy> {
        Ok(Busy { room: self.room, person: self.person, start: instant(self.start)?, end: instant(self.end)? })
    }
}

/// Whose bookings a free-slot search must also step around, wherever they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct BusyPeople<'a> {
    pub client: Option<&'a ClientId>,
    pub engineer: Option<&'a EngineerId>,
}

impl Store {
    /// The active bookings that overlap `[from, to)` and hold their places, in `rooms` (sorted by
    /// id, as [`Store::rooms`] gives them) or of `people`: displaced ones (in their room while it
    /// is offline, or flagged when their room changed) hold nothing and are left out.
    pub fn busy_between(&self, rooms: &[Room], people: BusyPeople<'_>, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Busy>> {
        let every: Vec<usize> = (0..rooms.len()).collect();
        self.busy_in_rooms(rooms, &every, &self.windows_around(from, to)?, people, from, to)?.into_iter().map(BusySpan::instants).collect()
    }

    /// [`Store::busy_between`] of one room and of `people` wherever they are booked: what a search
    /// of that room alone steps around.
    pub fn busy_in_room(&self, rooms: &[Room], room: &RoomId, people: BusyPeople<'_>, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Busy>> {
        let at: Vec<usize> = rooms.iter().position(|r| &r.id == room).into_iter().collect();
        self.busy_in_rooms(rooms, &at, &self.windows_around(from, to)?, people, from, to)?.into_iter().map(BusySpan::instants).collect()
    }

    /// [`Store::busy_between`] of the rooms at `wanted` among `rooms` (ascending positions) and
    /// of `people` wherever they are booked: what a search that may offer only those rooms steps
    /// around. A booking of `people` in another of `rooms` is read with its room's position.
    /// `windows` holds at least the offline windows that meet a longest booking of the span
    /// ([`Store::offline_windows`] from [`MAX_BOOKING`] before `from` to as long after `to`): a
    /// search reads them once for all its reads. Its times are in seconds ([`BusySpan`]).
    pub fn busy_in_rooms(
        &self,
        rooms: &[Room],
        wanted: &[usize],
        windows: &[OfflineWindow],
        people: BusyPeople<'_>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<BusySpan>> {
        // A booking in an offline window of its room holds nothing, which is what
        // [`HOLDS_ITS_PLACE`] keeps: the windows are checked here rather than for every row.
        let position = |id: &str| rooms.binary_search_by(|room| room.id.as_str().cmp(id)).ok();
        let mut is_wanted = vec![false; rooms.len()];
        for &at in wanted {
            is_wanted[at] = true;
        }
        let windows: Vec<_> = windows.iter().map(|w| (position(w.room.as_str()), w.room.as_str(), w.from.timestamp(), w.to.timestamp())).collect();
        // Whether a window of its room takes out a booking of room `id` (at `room` among `rooms`) over [start, end).
        let offline = |room: Option<usize>, id: &str, start: i64, end: i64| {
            let of_room = |&&(at, of, _, _): &&(Option<usize>, &str, i64, i64)| if room.is_some() { at == room } else { of == id };
            windows.iter().filter(of_room).any(|&(_, _, from, to)| from < end && to > start)
        };
        let is_person = |client: Option<&str>, engineer: Option<&str>| {
            (client.is_some() && client == people.client.map(ClientId::as_str))
                || (engineer.is_some() && engineer == people.engineer.map(EngineerId::as_str))
        };
        // About what a day's read finds in a busy room, so that the list seldom grows.
        let mut out = Vec::with_capacity(8 * wanted.len());
        if let Some(mirror) = self.mirror() {
            let (from, to) = (from.timestamp(), to.timestamp());
            let answered = mirror.active(self.conn(), |active| {
                let person = |b: &Booking| is_person(Some(b.client.as_str()), b.engineer.as_ref().map(EngineerId::as_str));
                // Each wanted room's bookings by its own timeline, the room known without looking it up.
                let people_named = people.client.is_some() || people.engineer.is_some();
                for &at in wanted {
                    let id = rooms[at].id.as_str();
                    for held in active.holding(id, from, to) {
                        let (start, end) = held.seconds();
                        if !offline(Some(at), id, start, end) {
                            let person = people_named && person(held.booking());
                            out.push(BusySpan { room: Some(at), person, start, end });
                        }
                    }
                }
                // Then the people's elsewhere: a booking in a wanted room was read with it, and
                // one of both the client and the engineer with the client.
                let walks = [people.client.map(|c| Of::Client(c.as_str())), people.engineer.map(|e| Of::Engineer(e.as_str()))];
                for (walk, of) in walks.into_iter().enumerate() {
                    let Some(of) = of else { continue };
                    for b in active.between(of, from, to) {
                        let room = position(b.room.as_str());
                        let read_already = room.is_some_and(|at| is_wanted[at]) || (walk == 1 && Some(&b.client) == people.client);
                        if !read_already && !offline(room, b.room.as_str(), b.start.timestamp(), b.end.timestamp()) {
                            out.push(BusySpan { room, person: true, start: b.start.timestamp(), end: b.end.timestamp() });
                        }
                    }
                }
            })?;
            // `None` while a booking cannot be read into memory: the table answers then.
            if answered.is_some() {
                return Ok(out);
            }
        }
        let (sql, params) = match wanted {
            // One room's bookings and the people's, by their own indexes. (Its start bound is the
            // longest a booking may be, not [`LONGEST`]: SQLite scans each branch of the `OR` by
            // its own index and bounds those scans only by a value it knows before it starts.)
            [one] => {
                let sql = format!(
                    "SELECT room_id, client_id, engineer_id, start_at, end_at FROM bookings b \
                     WHERE {ACTIVE_IN_PLACE} AND end_at > ?1 AND start_at > ?2 AND start_at < ?3 \
                     AND (room_id = ?4 OR client_id = ?5 OR engineer_id = ?6)"
                );
                let params = db::params![
                    from.timestamp(),
                    (from - MAX_BOOKING).timestamp(),
                    to.timestamp(),
                    rooms[*one].id.as_str(),
                    people.client.map(ClientId::as_str),
                    people.engineer.map(EngineerId::as_str)
                ];
                (sql, db::Params::into_values(params))
            }
            _ => (busy_between_sql(), db::Params::into_values(db::params![from.timestamp(), from.timestamp(), to.timestamp()])),
        };
        // A search reads hundreds of rows: their ids are compared where they lie in the row, not copied.
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let rows = stmt.query_map(params, |row| {
            let (start, end) = (row.get::<_, i64>(3)?, row.get::<_, i64>(4)?);
            let (room, offline) = row.with_text(0, |id| {
                let id = id.unwrap_or_default();
                let room = position(id);
                (room, offline(room, id, start, end))
            })?;
            // Most searches name no person: their columns are then not read at all.
            let client = people.client.is_some() && row.with_text(1, |id| is_person(id, None))?;
            let engineer = people.engineer.is_some() && row.with_text(2, |id| is_person(None, id))?;
            Ok((room, offline, client || engineer, start, end))
        })?;
        for row in rows {
            let (room, offline, person, start, end) = row?;
            if offline || !(room.is_some_and(|at| is_wanted[at]) || person) {
                continue;
            }
            // A value that is no instant (a table written by hand) is refused here as everywhere.
            instant(start)?;
            instant(end)?;
            out.push(BusySpan { room, person, start, end });
        }
        Ok(out)
    }

    /// The offline windows a busy read of `[from, to)` checks its bookings against: every booking
    /// read lies within a longest booking of the span, and so does any window it meets.
    fn windows_around(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<OfflineWindow>> {
        offline_windows(self.conn(), None, from - MAX_BOOKING, to + MAX_BOOKING)
    }

    /// Every room, in id order, shared with the connection's cache.
    pub fn rooms(&self) -> Result<Arc<[Room]>> {
        rooms(self.conn())
    }

    pub fn room(&self, id: &RoomId) -> Result<Option<Room>> {
        room(self.conn(), id)
    }

    pub fn clients(&self) -> Result<Vec<Client>> {
        people(self.conn(), "clients", ClientId)
    }

    pub fn engineers(&self) -> Result<Vec<Engineer>> {
        people(self.conn(), "engineers", EngineerId)
    }

    pub fn booking(&self, id: &BookingId) -> Result<Option<Booking>> {
        booking(self.conn(), id)
    }

    /// Bookings in (start, sequence) order, with each one's position for the next page.
    pub fn query_bookings(&self, query: &BookingQuery) -> Result<Vec<(Booking, (i64, i64))>> {
        Ok(self.query_bookings_shared(query)?.into_iter().map(|(b, position)| (b.into_booking(), position)).collect())
    }

    /// [`Store::query_bookings`], each booking shared with the memory that holds it rather than
    /// copied out (`mirror.rs`): for an answer that only writes them.
    pub fn query_bookings_shared(&self, query: &BookingQuery) -> Result<Vec<(SharedBooking, (i64, i64))>> {
        if let Some(mirror) = self.mirror()
            && let Some(rows) = mirror.query(self.conn(), query)?
        {
            return Ok(rows);
        }
        let mut sql = format!("SELECT {BOOKING_COLUMNS} FROM bookings WHERE 1 = 1");
        let mut args: Vec<Value> = Vec::new();
        if let Some(from) = query.from {
            // end > from, and the start bound lets the index on start_at do the work.
            sql += &format!(" AND end_at > ? AND start_at > ? - {LONGEST}");
            args.push(from.timestamp().into());
            args.push(from.timestamp().into());
        }
        if let Some(to) = query.to {
            sql += " AND start_at < ?";
            args.push(to.timestamp().into());
        }
        for (column, value) in [
            ("room_id", query.room.as_ref().map(|r| r.0.clone())),
            ("client_id", query.client.as_ref().map(|c| c.0.clone())),
            ("engineer_id", query.engineer.as_ref().map(|e| e.0.clone())),
            ("series_id", query.series.as_ref().map(|s| s.0.clone())),
        ] {
            if let Some(value) = value {
                sql += &format!(" AND {column} = ?");
                args.push(value.into());
            }
        }
        if let Some(statuses) = &query.statuses {
            let marks = vec!["?"; statuses.len()].join(", ");
            sql += &format!(" AND status IN ({marks})");
            args.extend(statuses.iter().map(|s| Value::from(s.as_str().to_owned())));
        }
        if let Some((start, seq)) = query.after {
            sql += " AND (start_at > ? OR (start_at = ? AND seq > ?))";
            args.extend([Value::from(start), Value::from(start), Value::from(seq)]);
        }
        sql += " ORDER BY start_at, seq LIMIT ?";
        args.push(Value::from(query.limit as i64));

        let mut stmt = self.conn().prepare_cached(&sql)?;
        let rows = stmt.query_map(args, booking_from_row)?;
        let mut out = Vec::new();
        for row in rows {
            let (booking, seq) = row?;
            let position = (booking.start.timestamp(), seq);
            out.push((SharedBooking::new(booking, seq), position));
        }
        Ok(out)
    }

    /// Every booking that overlaps `[from, to)`, cancelled ones included, in start order.
    pub fn bookings_between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Booking>> {
        let query = BookingQuery { from: Some(from), to: Some(to), limit: usize::MAX >> 1, ..Default::default() };
        Ok(self.query_bookings(&query)?.into_iter().map(|(b, _)| b).collect())
    }

    pub fn series(&self, id: &SeriesId) -> Result<Option<Series>> {
        series(self.conn(), id)
    }

    /// Offline windows that overlap `[from, to)`, of one room or of all, in start order.
    pub fn offline_windows(&self, room: Option<&RoomId>, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<OfflineWindow>> {
        offline_windows(self.conn(), room, from, to)
    }

    /// Refuses the first id of a room, client or engineer that the studio does not have, with the
    /// one message each kind of id gets wherever it is read (a search, a filter, a booking).
    pub fn require_known(&self, room: Option<&RoomId>, client: Option<&ClientId>, engineer: Option<&EngineerId>) -> Result<()> {
        // The rooms are kept by the connection: no round trip of their own. While one of them
        // cannot be read, whether a room exists is its own row's question, so that the broken
        // room fails only the reads that need every room.
        if let Some(room) = room {
            let known = match rooms(self.conn()) {
                Ok(rooms) => rooms.iter().any(|r| &r.id == room),
                Err(StoreError::Corrupt(_)) => exists(self.conn(), "rooms", room.as_str())?,
                Err(e) => return Err(e),
            };
            if !known {
                return Err(StoreError::UnknownRoom(room.clone()));
            }
        }
        if let Some(client) = client
            && !exists(self.conn(), "clients", client.as_str())? {
                return Err(StoreError::UnknownClient(client.clone()));
            }
        if let Some(engineer) = engineer
            && !exists(self.conn(), "engineers", engineer.as_str())? {
                return Err(StoreError::UnknownEngineer(engineer.clone()));
            }
        Ok(())
    }

    pub fn booking_count(&self) -> Result<u64> {
        Ok(self.conn().query_row("SELECT COUNT(*) FROM bookings", (), |row| row.get(0))?)
    }
}

/// The statement of [`Store::busy_between`]: on SQLite every column it reads is in the index
/// `bookings_busy` (schema 21), of the bookings that hold their place.
fn busy_between_sql() -> String {
    format!(
        "SELECT room_id, client_id, engineer_id, start_at, end_at FROM bookings b \
         WHERE {ACTIVE_IN_PLACE} AND end_at > ?1 AND start_at > ?2 - {LONGEST} AND start_at < ?3"
    )
}

/// Every room, in id order: kept by the connection until the cache's version moves (a trigger
/// bumps it on any change of rooms), and shared rather than copied, since every booking and
/// search reads them.
pub(super) fn rooms(conn: &Connection) -> Result<Arc<[Room]>> {
    conn.cached("rooms", || all_rooms(conn).map(Arc::from))
}

/// One room, by id.
pub(super) fn room(conn: &Connection, id: &RoomId) -> Result<Option<Room>> {
    Ok(rooms(conn)?.iter().find(|room| &room.id == id).cloned())
}

fn all_rooms(conn: &Connection) -> Result<Vec<Room>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, name, capacity, features, hours, buffer_minutes, active, \
         min_minutes, max_minutes, lead_minutes, max_advance_days, start_step_minutes, hourly_rate, rates FROM rooms ORDER BY id",
    )?;
    let rows = stmt.query_map((), |row| {
        Ok((
            (row.get::<_, String>(0)?, row.get(1)?, row.get(2)?),
            (row.get::<_, String>(3)?, row.get::<_, String>(4)?, row.get::<_, i64>(5)?, row.get::<_, bool>(6)?),
            BookingRules {
                min_minutes: row.get(7)?,
                max_minutes: row.get(8)?,
                lead_minutes: row.get(9)?,
                max_advance_days: row.get(10)?,
                start_step_minutes: row.get(11)?,
            },
            (row.get::<_, i64>(12)?, row.get::<_, String>(13)?),
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let ((id, name, capacity), (features, hours, buffer, active), rules, (hourly_rate, rates)) = row?;
        let hours = WeeklyHours::read(&json_list(&hours)?).map_err(|e| StoreError::Corrupt(format!("hours of {id}: {e}")))?;
        let price = RoomPrice { hourly_rate, rates: super::prices::rates_from_json(&rates).map_err(|e| StoreError::Corrupt(format!("rates of {id}: {e}")))? };
        out.push(Room { id: RoomId(id), name, capacity, features: json_list(&features)?, hours, buffer: Duration::minutes(buffer), active, rules, price });
    }
    Ok(out)
}

fn people<Id>(conn: &Connection, table: &str, id: fn(String) -> Id) -> Result<Vec<Person<Id>>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT id, name FROM {table} ORDER BY id"))?;
    let rows = stmt.query_map((), |row| Ok(Person { id: id(row.get(0)?), name: row.get(1)? }))?;
    Ok(rows.collect::<db::Result<_>>()?)
}

/// Whether the client or engineer `id` of `table` may be booked; `None` when there is no such id.
pub(super) fn active(conn: &Connection, table: &str, id: &str) -> Result<Option<bool>> {
    let sql = format!("SELECT active FROM {table} WHERE id = ?");
    Ok(conn.prepare_cached(&sql)?.query_row([id], |row| row.get(0)).optional()?)
}

pub(super) fn exists(conn: &Connection, table: &str, id: &str) -> Result<bool> {
    let sql = format!("SELECT 1 FROM {table} WHERE id = ?");
    Ok(conn.prepare_cached(&sql)?.query_row([id], |_| Ok(())).optional()?.is_some())
}

pub(super) fn booking(conn: &Connection, id: &BookingId) -> Result<Option<Booking>> {
    let sql = format!("SELECT {BOOKING_COLUMNS} FROM bookings WHERE id = ?");
    let row = conn.prepare_cached(&sql)?.query_row([id.as_str()], booking_from_row).optional()?;
    Ok(row.map(|(b, _)| b))
}

fn series(conn: &Connection, id: &SeriesId) -> Result<Option<Series>> {
    let row = conn
        .prepare_cached("SELECT rrule, first_start FROM series WHERE id = ?")?
        .query_row([id.as_str()], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
        .optional()?;
    let Some((rrule, first_start)) = row else { return Ok(None) };
    // The template is the series' first session, cancelled or not: it carries the room, people and length.
    let sql = format!("SELECT {BOOKING_COLUMNS} FROM bookings WHERE series_id = ? ORDER BY start_at, seq LIMIT 1");
    let first = conn.prepare_cached(&sql)?.query_row([id.as_str()], booking_from_row).optional()?;
    let Some((b, _)) = first else { return Err(StoreError::Corrupt(format!("series {id} has no sessions"))) };
    let start = instant(first_start)?;
    let template = Session { start, end: start + b.duration(), ..b.session };
    Ok(Some(Series { id: id.clone(), rrule, template }))
}

/// Offline windows that overlap `[from, to)` (to the second), of one room or of all, in start
/// order: from every window kept by the connection while the cache's version covers them (schema
/// 24), or else read.
pub(super) fn offline_windows(conn: &Connection, room: Option<&RoomId>, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<OfflineWindow>> {
    let (from, to) = (from.timestamp(), to.timestamp());
    if !conn.caches("offline_windows") {
        return windows_read(conn, room, from, to);
    }
    let all: Arc<[OfflineWindow]> = conn.cached("offline_windows", || windows_read(conn, None, i64::MIN, i64::MAX).map(Arc::from))?;
    let starting_before = all.partition_point(|w| w.from.timestamp() < to);
    Ok(all[..starting_before]
        .iter()
        .filter(|w| w.to.timestamp() > from && room.is_none_or(|room| &w.room == room))
        .cloned()
        .collect())
}

fn windows_read(conn: &Connection, room: Option<&RoomId>, from: i64, to: i64) -> Result<Vec<OfflineWindow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, room_id, from_at, to_at, reason FROM offline_windows \
         WHERE (CAST(?1 AS TEXT) IS NULL OR room_id = ?1) AND from_at < ?3 AND to_at > ?2 ORDER BY from_at, id",
    )?;
    let rows = stmt.query_map(db::params![room.map(|r| r.as_str()), from, to], |row| {
        Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, row.get::<_, i64>(2)?, row.get::<_, i64>(3)?, row.get::<_, String>(4)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, room, from, to, reason) = row?;
        out.push(OfflineWindow { id, room: RoomId(room), from: instant(from)?, to: instant(to)?, reason });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search's busy reads step through the covering index alone, never the table: SQLite
    /// chooses it only while the statement's conditions imply the index's own.
    #[test]
    fn the_width_and_the_sequence_number_s_place_are_those_of_the_booking_columns() {
        let columns: Vec<&str> = BOOKING_COLUMNS.split(',').map(str::trim).collect();
        assert_eq!(columns.len(), BOOKING_WIDTH);
        assert_eq!(columns[SEQ_AT], "seq");
    }

    #[test]
    fn the_busy_reads_use_only_the_covering_index() {
        let store = Store::open_in_memory().unwrap();
        let plan: Vec<String> = store
            .conn()
            .prepare_cached(&format!("EXPLAIN QUERY PLAN {}", busy_between_sql()))
            .unwrap()
            .query_map(db::params![0i64, 0i64, 0i64], |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<db::Result<_>>()
            .unwrap();
        assert!(plan.iter().any(|step| step.contains("USING COVERING INDEX bookings_busy")), "{plan:?}");
    }
}
