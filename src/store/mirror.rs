//! The bookings, kept in memory and shared by the connections of one pool, so that a query or a
//! free-slot search walks an ordered map (a search, each room's timeline: an array of the
//! bookings that hold the room) rather than reading hundreds of rows.
//!
//! Schema 22 numbers every change of a booking from one clock, kept by triggers in the change's
//! own transaction (an insert, an update, a deletion, by any process). Before it answers, a read
//! asks its connection for the clock and, when it is ahead of what is held, for the changes
//! numbered after the last one applied here, and applies them, one catch-up at a time (a change
//! older than what is held of its booking changes nothing). Numbers are handed out in commit order (one
//! writer at a time on SQLite; on PostgreSQL the clock's row is held to the commit), so a read
//! that sees a change also sees every change numbered before it: after a catch-up, what is here
//! is at least as new as what the connection's own read of the table would have been. On
//! PostgreSQL a read that is the first statement of its use takes the clock read with the cache's
//! version as the pool handed the connection out ([`Connection::held_clock`]), in the same
//! request and the same round trip: it answers at least what was committed before the request
//! reached the pool, and nothing the request read before it is newer. On SQLite the clock is
//! read in the same way, as the first read of the use's snapshot, and holds for every read of
//! the bookings in that snapshot, whatever else it read first (a search's offline windows).
//!
//! A connection inside a transaction reads the table itself ([`Mirror::usable_on`]): its own
//! writes are not committed, and must never reach what other connections read.

use super::db::{self, Connection};
use super::read::{booking_from_row, BookingQuery, BOOKING_COLUMNS, BOOKING_WIDTH, SEQ_AT};
use super::Result;
use crate::domain::{Booking, Status};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// The schema version from which bookings carry their change number.
pub(super) const SINCE: i64 = 22;

/// A booking's place in every order kept here: its start, then its sequence number.
type Place = (i64, i64);

/// The changes one catch-up makes in place to a room's timeline, past which it builds the
/// timeline again at its end ([`State::timeline_to_edit`]).
const IN_PLACE: usize = 8;

/// The bookings of one studio in memory. See the module docs.
#[derive(Default)]
pub struct Mirror {
    /// Held through a catch-up's read of the changes and their applying: catch-ups follow one
    /// another, each asking from where the last one ended.
    catching_up: Mutex<()>,
    state: RwLock<State>,
}

#[derive(Default)]
struct State {
    /// The last change number applied; `None` before the first read of the table.
    clock: Option<i64>,
    /// Every booking by sequence number.
    entries: HashMap<i64, Arc<Entry>>,
    /// Every booking in (start, sequence) order.
    by_start: BTreeMap<Place, Arc<Entry>>,
    /// The same, per room, client, engineer and series ([`Column`]).
    by: [HashMap<String, BTreeMap<Place, Arc<Entry>>>; 4],
    /// Per room, the bookings that hold it (not cancelled, not displaced) in (start, sequence)
    /// order, with their times inline: what a free-slot search walks, a few bookings in each of
    /// twenty rooms, from a start found through a small index instead of a tree's two descents,
    /// and with no visit to a booking's own memory unless it names a person. A catch-up changes
    /// it in place, booking by booking, or builds it again from `by` at its end.
    timelines: HashMap<String, Timeline>,
    /// The rooms whose timelines a catch-up builds again before it ends, rather than change them
    /// in place ([`State::timeline_to_edit`]); while there is one, the busy reads go to the table.
    stale: HashSet<String>,
    /// How many changes the current catch-up made in place to each room's timeline.
    edits: HashMap<String, usize>,
    /// The longest booking held, in seconds: an overlap read starts its walk that far back.
    longest: i64,
    /// Bookings whose row could not be read (its sequence number, and the change that left it
    /// so): while there is one, reads go to the table.
    unreadable: HashMap<i64, i64>,
}

/// A booking as the memory holds it, shared rather than copied out: a page of `query_bookings`
/// is written from these ([`super::Store::query_bookings_shared`]).
#[derive(Clone)]
pub struct SharedBooking(Arc<Entry>);

impl SharedBooking {
    /// A booking read from the table, held by nothing else.
    pub fn new(booking: Booking, seq: i64) -> SharedBooking {
        SharedBooking(Arc::new(Entry::new(booking, seq, 0)))
    }

    /// The booking, copied only if the memory still holds it.
    pub fn into_booking(self) -> Booking {
        match Arc::try_unwrap(self.0) {
            Ok(entry) => entry.booking,
            Err(shared) => shared.booking.clone(),
        }
    }
}

impl std::ops::Deref for SharedBooking {
    type Target = Booking;

    fn deref(&self) -> &Booking {
        &self.0.booking
    }
}

struct Entry {
    booking: Booking,
    seq: i64,
    /// The number of the change that left the booking so.
    changed: i64,
}

/// A booking that holds its room, as the room's timeline keeps it ([`State::timelines`]): 24
/// bytes, so that a walk of a few reads two or three cache lines.
pub(super) struct Held {
    /// Its start and end, in seconds since the epoch.
    start: i64,
    end: i64,
    entry: Arc<Entry>,
}

/// One room's bookings that hold it, in (start, sequence) order, and every [`Timeline::STRIDE`]th
/// one's start. A binary search of a room's 2,000 bookings lands on a new cache line at each of
/// its dozen steps, and a free-slot search sends one to a random day in each of some twenty
/// rooms, so those lines are seldom cached. The starts' index is a twenty-fourth of the size
/// (2 KB a room of 2,000 bookings) and stays cached better: it takes the search to within a
/// stride, and the last steps read one or two lines of the bookings.
struct Timeline {
    held: Vec<Held>,
    /// `held[i * STRIDE].start` for every `i`.
    strides: Vec<i64>,
}

impl Timeline {
    const STRIDE: usize = 8;

    fn new(held: Vec<Held>) -> Timeline {
        let strides = held.iter().step_by(Self::STRIDE).map(|h| h.start).collect();
        Timeline { held, strides }
    }

    /// Where the booking at `place` is, or would be.
    fn position(&self, place: Place) -> usize {
        self.held.partition_point(|h| h.place() < place)
    }

    /// Holds `entry` at `place`, among the others.
    fn insert(&mut self, place: Place, entry: &Arc<Entry>) {
        let at = self.position(place);
        self.held.insert(at, Held::of(place, entry));
        self.restride(at);
    }

    /// Drops the booking at `place`, if it is held.
    fn remove(&mut self, place: Place) {
        let at = self.position(place);
        if self.held.get(at).is_some_and(|h| h.place() == place) {
            self.held.remove(at);
            self.restride(at);
        }
    }

    /// Writes the strides again from the one before `at`, whose bookings moved.
    fn restride(&mut self, at: usize) {
        let from = at / Self::STRIDE;
        self.strides.truncate(from);
        self.strides.extend(self.held[from * Self::STRIDE..].iter().step_by(Self::STRIDE).map(|h| h.start));
    }

    /// The bookings from the first that starts after `low`.
    fn after(&self, low: i64) -> &[Held] {
        &self.held[first_after(&self.held, &self.strides, |held| held.start, low)..]
    }
}

impl Held {
    /// Whether a booking holds its place by its own flags: what the busy reads keep.
    fn holds(b: &Booking) -> bool {
        b.status != Status::Cancelled && !b.displaced
    }

    /// Its place in its timeline's order.
    fn place(&self) -> Place {
        (self.start, self.entry.seq)
    }

    fn of(place: Place, entry: &Arc<Entry>) -> Held {
        let b = &entry.booking;
        Held { start: place.0, end: b.end.timestamp(), entry: entry.clone() }
    }

    pub fn booking(&self) -> &Booking {
        &self.entry.booking
    }

    /// Its start and end, in seconds since the epoch.
    pub fn seconds(&self) -> (i64, i64) {
        (self.start, self.end)
    }
}

/// The columns a query may name one value of, in the order of [`State::by`].
#[derive(Clone, Copy)]
enum Column {
    Room,
    Client,
    Engineer,
    Series,
}

impl Entry {
    fn new(booking: Booking, seq: i64, changed: i64) -> Entry {
        Entry { booking, seq, changed }
    }

    fn place(&self) -> Place {
        (self.booking.start.timestamp(), self.seq)
    }

    fn key(&self, column: Column) -> Option<&str> {
        let b = &self.booking;
        match column {
            Column::Room => Some(b.room.as_str()),
            Column::Client => Some(b.client.as_str()),
            Column::Engineer => b.engineer.as_ref().map(|e| e.as_str()),
            Column::Series => b.series.as_ref().map(|s| s.as_str()),
        }
    }
}

const COLUMNS: [Column; 4] = [Column::Room, Column::Client, Column::Engineer, Column::Series];

/// The changes numbered after `?1` up to the clock `?2` read before them, with their numbers:
/// the bookings as they are, then the deleted ones (a row of NULLs but its sequence number and
/// change number). The upper bound also keeps PostgreSQL's plan on the index of change numbers:
/// a plan made for any values (a connection's statement, planned once and kept) takes a
/// one-sided range to hold a third of the table and scans all of it, a two-sided one a
/// two-hundredth.
fn changes_sql() -> String {
    let gone: Vec<&str> = (0..BOOKING_WIDTH).map(|i| if i == SEQ_AT { "seq" } else { "NULL" }).collect();
    format!(
        "SELECT {BOOKING_COLUMNS}, changed FROM bookings WHERE changed > ?1 AND changed <= ?2 \
         UNION ALL SELECT {}, changed FROM bookings_gone WHERE changed > ?1 AND changed <= ?2",
        gone.join(", ")
    )
}

impl Mirror {
    /// Whether reads on `conn` may be answered from here: not inside a transaction, whose
    /// writes are its own until it commits.
    pub(super) fn usable_on(conn: &Connection) -> bool {
        !conn.in_transaction()
    }

    /// Applies the changes `conn` sees after the last one applied here (every booking, the
    /// first time).
    pub(super) fn catch_up(&self, conn: &Connection) -> Result<()> {
        let held = || self.state.read().unwrap_or_else(PoisonError::into_inner).clock;
        // Most reads find nothing new: one row of the clock says so. A clock behind the one held
        // is that of a snapshot older than what another connection applied (SQLite's read
        // transaction of a request that began earlier, or on PostgreSQL the clock read as this
        // connection was handed out): what is held is newer, and answers it. Read with the
        // cache's version as the connection was handed out, when nothing newer was read since.
        let now: i64 = match conn.held_clock() {
            Some(now) => now,
            None => conn.prepare_cached("SELECT n FROM booking_clock WHERE id = 1")?.query_row((), |row| row.get(0))?,
        };
        if held().is_some_and(|clock| clock >= now) {
            return Ok(());
        }
        let _one = self.catching_up.lock().unwrap_or_else(PoisonError::into_inner);
        let after = held();
        if after.is_some_and(|clock| clock >= now) {
            return Ok(());
        }
        static CHANGES: std::sync::LazyLock<String> = std::sync::LazyLock::new(changes_sql);
        let mut stmt = conn.prepare_cached(&CHANGES)?;
        // The bookings are applied as they are read, rather than gathered first: the first
        // catch-up reads every one. Deletions come after, each undoing only an older change.
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let caught_up = Self::apply_changes(&mut state, &mut stmt, after, now);
        // What was applied is applied, whether or not the rest could be read.
        state.rebuild_stale_timelines();
        caught_up
    }

    /// Applies the changes numbered after `after` up to `now`, read by `stmt`, then moves the
    /// clock to `now`.
    fn apply_changes(state: &mut State, stmt: &mut db::Statement<'_>, after: Option<i64>, now: i64) -> Result<()> {
        let mut gone = Vec::new();
        let applied = stmt.query_map([after.unwrap_or(-1), now], |row| {
            let changed: i64 = row.get(BOOKING_WIDTH)?;
            match row.get::<_, Option<String>>(0)? {
                Some(_) => match booking_from_row(row) {
                    Ok((booking, seq)) => state.apply(Entry::new(booking, seq, changed)),
                    Err(e) => {
                        let seq: i64 = row.get(SEQ_AT)?;
                        tracing::warn!(seq, error = %e, "a booking cannot be read into memory: bookings are read from the table until it is mended");
                        state.unreadable(seq, changed);
                    }
                },
                None => gone.push((row.get::<_, i64>(SEQ_AT)?, changed)),
            }
            Ok(())
        })?;
        applied.collect::<db::Result<()>>()?;
        for (seq, changed) in gone {
            state.forget(seq, changed);
        }
        // Every change numbered up to the clock read first is committed and was read (in the
        // same snapshot on SQLite; on PostgreSQL committed before the clock showed it); later
        // ones are read by the next catch-up.
        state.clock = Some(now);
        Ok(())
    }

    /// How many bookings are held.
    pub(super) fn len(&self) -> usize {
        self.state.read().unwrap_or_else(PoisonError::into_inner).entries.len()
    }

    /// The bookings `query` asks for, in (start, sequence) order, each with its place for the
    /// next page: what [`super::Store::query_bookings`] reads from the table. `None` while a
    /// booking cannot be read into memory: the table answers then, with its error where the
    /// booking is asked for.
    pub(super) fn query(&self, conn: &Connection, query: &BookingQuery) -> Result<Option<Vec<(SharedBooking, Place)>>> {
        self.catch_up(conn)?;
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        if !state.unreadable.is_empty() {
            return Ok(None);
        }
        let named = [
            query.room.as_ref().map(|r| r.as_str()),
            query.client.as_ref().map(|c| c.as_str()),
            query.engineer.as_ref().map(|e| e.as_str()),
            query.series.as_ref().map(|s| s.as_str()),
        ];
        // The narrowest order to walk: that of the first column named, or every booking's.
        let walked = match COLUMNS.iter().zip(named).find_map(|(&column, value)| Some((column, value?))) {
            Some((column, value)) => match state.by[column as usize].get(value) {
                Some(map) => map,
                None => return Ok(Some(Vec::new())),
            },
            None => &state.by_start,
        };
        let from = query.from.map(|t| t.timestamp());
        let mut low = match from {
            // A booking that ends after `from` began less than the longest booking before it.
            Some(from) => Bound::Excluded((from.saturating_sub(state.longest), i64::MAX)),
            None => Bound::Unbounded,
        };
        if let Some(after) = query.after {
            low = match low {
                Bound::Excluded(place) if place >= after => low,
                _ => Bound::Excluded(after),
            };
        }
        let high = query.to.map_or(Bound::Unbounded, |to| Bound::Excluded((to.timestamp(), i64::MIN)));
        if matches!((low, high), (Bound::Excluded(l), Bound::Excluded(h)) if l >= h) {
            return Ok(Some(Vec::new()));
        }
        let mut out = Vec::new();
        for (place, entry) in walked.range((low, high)) {
            if out.len() >= query.limit {
                break;
            }
            let b = &entry.booking;
            let kept = from.is_none_or(|from| b.end.timestamp() > from)
                && COLUMNS.iter().zip(named).all(|(&column, value)| value.is_none_or(|v| entry.key(column) == Some(v)))
                && query.statuses.as_ref().is_none_or(|statuses| statuses.contains(&b.status));
            if kept {
                out.push((SharedBooking(entry.clone()), *place));
            }
        }
        Ok(Some(out))
    }

    /// Runs `read` over the bookings held, under the memory's read lock, after a catch-up: what
    /// the busy reads of a free-slot search walk ([`Active::between`]). `None`, with `read` not
    /// run, while a booking cannot be read into memory.
    pub(super) fn active<T>(&self, conn: &Connection, read: impl FnOnce(Active<'_>) -> T) -> Result<Option<T>> {
        self.catch_up(conn)?;
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        // A timeline behind its room's bookings (never, once a catch-up has ended) would miss some.
        if !state.unreadable.is_empty() || !state.stale.is_empty() {
            return Ok(None);
        }
        Ok(Some(read(Active(&state))))
    }
}

/// The bookings held, as a busy read walks them ([`Mirror::active`]).
pub(super) struct Active<'a>(&'a State);

/// Whose bookings a busy read walks, besides a room's: one client's or engineer's.
#[derive(Debug, Clone, Copy)]
pub(super) enum Of<'k> {
    Client(&'k str),
    Engineer(&'k str),
}

impl<'a> Active<'a> {
    /// The bookings that hold `room` and overlap `[from, to)`, in start order, from its timeline.
    pub(super) fn holding(&self, room: &str, from: i64, to: i64) -> impl Iterator<Item = &'a Held> + use<'a> {
        let state = self.0;
        // A booking that ends after `from` began less than the longest booking before it.
        let low = from.saturating_sub(state.longest);
        let after: &'a [Held] = state.timelines.get(room).map_or(&[], |timeline| timeline.after(low));
        after.iter().take_while(move |held| held.start < to).filter(move |held| held.end > from)
    }

    /// The bookings of `of` that hold their place by their own flags (not cancelled, not
    /// displaced) and overlap `[from, to)`, in start order: what the busy reads of a free-slot
    /// search read from the table, before they drop those in an offline window of their room.
    pub(super) fn between(&self, of: Of<'_>, from: i64, to: i64) -> impl Iterator<Item = &'a Booking> + use<'a> {
        let state = self.0;
        let walked = match of {
            Of::Client(key) => state.by[Column::Client as usize].get(key),
            Of::Engineer(key) => state.by[Column::Engineer as usize].get(key),
        };
        // A booking that ends after `from` began less than the longest booking before it.
        let low = from.saturating_sub(state.longest);
        walked
            .filter(|_| low < to)
            .into_iter()
            .flat_map(move |map| map.range((Bound::Excluded((low, i64::MAX)), Bound::Excluded((to, i64::MIN)))))
            .map(|(_, entry)| &entry.booking)
            .filter(move |b| b.end.timestamp() > from && Held::holds(b))
    }
}

/// The position of the first of `items` (in ascending order of `start`) that starts after `low`,
/// found through `strides`, every [`Timeline::STRIDE`]th item's start.
fn first_after<T>(items: &[T], strides: &[i64], start: impl Fn(&T) -> i64, low: i64) -> usize {
    const STRIDE: usize = Timeline::STRIDE;
    // `strides[..k]` start at or before `low`, so the first item after it lies past
    // `items[(k - 1) * STRIDE]` and at or before `items[k * STRIDE]`.
    let k = strides.partition_point(|&s| s <= low);
    let lo = (k * STRIDE).saturating_sub(STRIDE - 1).min(items.len());
    let hi = (k * STRIDE).min(items.len());
    lo + items[lo..hi].partition_point(|item| start(item) <= low)
}

impl State {
    /// Holds `entry` in place of what was held of its booking, unless that is newer.
    fn apply(&mut self, entry: Entry) {
        if self.entries.get(&entry.seq).is_some_and(|held| held.changed > entry.changed) {
            return;
        }
        self.remove(entry.seq);
        self.unreadable.remove(&entry.seq);
        let entry = Arc::new(entry);
        let place = entry.place();
        self.longest = self.longest.max((entry.booking.end - entry.booking.start).num_seconds());
        self.by_start.insert(place, entry.clone());
        for column in COLUMNS {
            if let Some(key) = entry.key(column) {
                self.by[column as usize].entry(key.to_owned()).or_default().insert(place, entry.clone());
            }
        }
        if Held::holds(&entry.booking) {
            if let Some(timeline) = self.timeline_to_edit(entry.booking.room.as_str()) {
                timeline.insert(place, &entry);
            }
        }
        self.entries.insert(entry.seq, entry);
    }

    /// The timeline of `room`, to change in place by one booking; `None` when the room is built
    /// again at the catch-up's end instead, after [`IN_PLACE`] changes in one catch-up: each
    /// change shifts the bookings after it, a rebuild walks them all once (the first read of the
    /// table brings thousands a room).
    fn timeline_to_edit(&mut self, room: &str) -> Option<&mut Timeline> {
        if self.stale.contains(room) {
            return None;
        }
        let edits = match self.edits.get_mut(room) {
            Some(edits) => edits,
            None => self.edits.entry(room.to_owned()).or_default(),
        };
        *edits += 1;
        if *edits > IN_PLACE {
            self.stale.insert(room.to_owned());
            return None;
        }
        if !self.timelines.contains_key(room) {
            self.timelines.insert(room.to_owned(), Timeline::new(Vec::new()));
        }
        self.timelines.get_mut(room)
    }

    /// Builds again the timelines of the rooms changed too often to change in place since they
    /// were last built, and drops those left empty: what a catch-up does before it ends.
    fn rebuild_stale_timelines(&mut self) {
        for (room, _) in self.edits.drain() {
            if self.timelines.get(&room).is_some_and(|timeline| timeline.held.is_empty()) {
                self.timelines.remove(&room);
            }
        }
        for room in std::mem::take(&mut self.stale) {
            let held: Vec<Held> = self.by[Column::Room as usize]
                .get(&room)
                .into_iter()
                .flatten()
                .filter(|(_, entry)| Held::holds(&entry.booking))
                .map(|(place, entry)| Held::of(*place, entry))
                .collect();
            if held.is_empty() {
                self.timelines.remove(&room);
            } else {
                self.timelines.insert(room, Timeline::new(held));
            }
        }
    }

    /// Drops booking `seq`, deleted by change `changed`, unless what is held of it is newer
    /// (its number was taken again by a booking inserted since).
    fn forget(&mut self, seq: i64, changed: i64) {
        if self.entries.get(&seq).is_some_and(|held| held.changed < changed) {
            self.remove(seq);
        }
        if self.unreadable.get(&seq).is_some_and(|&at| at < changed) {
            self.unreadable.remove(&seq);
        }
    }

    /// Notes that change `changed` left booking `seq` in a row that cannot be read.
    fn unreadable(&mut self, seq: i64, changed: i64) {
        self.remove(seq);
        self.unreadable.insert(seq, changed);
    }

    fn remove(&mut self, seq: i64) {
        let Some(old) = self.entries.remove(&seq) else { return };
        self.by_start.remove(&old.place());
        if Held::holds(&old.booking) {
            if let Some(timeline) = self.timeline_to_edit(old.booking.room.as_str()) {
                timeline.remove(old.place());
            }
        }
        for column in COLUMNS {
            if let Some(key) = old.key(column) {
                let map = &mut self.by[column as usize];
                if let Some(places) = map.get_mut(key) {
                    places.remove(&old.place());
                    if places.is_empty() {
                        map.remove(key);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{BookingId, ClientId, Money, RoomId, Session};
    use chrono::{DateTime, Utc};

    fn booking(seq: i64, room: usize, start: i64, hours: i64, status: Status, displaced: bool) -> Booking {
        let at = |s: i64| DateTime::<Utc>::from_timestamp(s, 0).unwrap();
        Booking {
            id: BookingId::new(format!("bk_{seq}")),
            series: None,
            session: Session {
                room: RoomId::new(format!("room-{room}")),
                client: ClientId::new("client"),
                engineer: None,
                start: at(start),
                end: at(start + hours * 3600),
                party_size: 1,
                requires: vec![],
                engineer_skills: vec![],
                status,
                pinned: false,
            },
            notes: None,
            hold_until: None,
            displaced,
            money: Money { price: None, deposit_due: 0, paid: 0 },
        }
    }

    /// Each room's timeline as (start, end, sequence number).
    fn timelines(state: &State) -> BTreeMap<String, Vec<(i64, i64, i64)>> {
        state.timelines.iter().map(|(room, t)| (room.clone(), t.held.iter().map(|h| (h.start, h.end, h.entry.seq)).collect())).collect()
    }

    /// Catch-ups of one to thirty changes (new bookings, moves between rooms and times, starts
    /// shared by several bookings, cancellations, displacements, deletions, changes older than
    /// what is held) leave every timeline and its strides as a build from scratch makes them,
    /// whether the catch-up changed a room in place or built it again.
    #[test]
    fn timelines_changed_in_place_are_those_built_again() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |below: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % below
        };
        let mut state = State::default();
        let (mut changed, mut seqs, mut in_place) = (0, 0, 0);
        for _ in 0..400 {
            for _ in 0..1 + next(30) {
                changed += 1;
                match next(10) {
                    0..=4 => {
                        seqs += 1;
                        let b = booking(seqs, next(3) as usize, 3600 * next(40) as i64, 1 + next(3) as i64, Status::Confirmed, false);
                        state.apply(Entry::new(b, seqs, changed));
                    }
                    5..=7 if seqs > 0 => {
                        let seq = 1 + next(seqs as u64) as i64;
                        let status = [Status::Confirmed, Status::Tentative, Status::Cancelled][next(3) as usize];
                        let b = booking(seq, next(3) as usize, 3600 * next(40) as i64, 1 + next(3) as i64, status, next(6) == 0);
                        // Now and then a change older than the one held, which changes nothing.
                        let number = if next(8) == 0 { changed - 20 } else { changed };
                        state.apply(Entry::new(b, seq, number));
                    }
                    _ if seqs > 0 => state.forget(1 + next(seqs as u64) as i64, changed),
                    _ => {}
                }
            }
            in_place += state.edits.values().filter(|&&n| n <= IN_PLACE).count();
            state.rebuild_stale_timelines();
            let kept = timelines(&state);
            let strides: Vec<(String, Vec<i64>)> = state.timelines.iter().map(|(room, t)| (room.clone(), t.strides.clone())).collect();
            state.stale = state.by[Column::Room as usize].keys().cloned().collect();
            state.rebuild_stale_timelines();
            assert_eq!(kept, timelines(&state), "after change {changed}");
            for (room, kept) in strides {
                assert_eq!(kept, state.timelines[&room].strides, "the strides of {room} after change {changed}");
            }
        }
        assert!(in_place > 100, "only {in_place} rooms were changed in place");
    }

    #[test]
    fn the_strides_find_what_a_search_of_the_whole_timeline_finds() {
        // Timelines of every length around the stride, with starts repeated: the rules keep a
        // room's holding bookings apart, but the index must not depend on it.
        for len in 0..=3 * Timeline::STRIDE + 2 {
            let starts: Vec<i64> = (0..len as i64).map(|i| i / 3 * 10).collect();
            let strides: Vec<i64> = starts.iter().step_by(Timeline::STRIDE).copied().collect();
            for low in -5..=starts.last().map_or(0, |last| last + 5) {
                let expected = starts.partition_point(|&s| s <= low);
                assert_eq!(first_after(&starts, &strides, |&s| s, low), expected, "{len} starts, after {low}");
            }
        }
    }
}
