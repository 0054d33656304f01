//! Availability: what is free and what is in the way, in answers that take more than one read:
//! where a session of a given length still fits (free slots), the offline windows that have not
//! ended, and the bookings an offline window would displace. Built on the store's reads; no SQL
//! here.

use crate::domain::{align_up_seconds, free_windows_in_seconds, instant_of, Booking, ClientId, DayOffsets, EngineerId, OfflineWindow, Room, RoomId, Span, Status, StudioTz, WeeklyHours};
use crate::store::{BookingQuery, BusyPeople, BusySpan, MAX_BOOKING, PersonKind, Store, StoreError};
use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use std::sync::Arc;

/// The longest span one free-slot search may cover, in calendar days of the studio's zone.
pub const MAX_SEARCH: Duration = Duration::days(31);

/// Refuses a search span that is empty or longer than [`MAX_SEARCH`]. The length is read on the
/// studio's wall clock, so that a calendar month is one search even when a clock change makes
/// it an hour longer in real time (October in London: 31 days and one hour).
pub fn check_search_span(tz: &StudioTz, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<(), StoreError> {
    if to <= from {
        return Err(StoreError::invalid("to", "to must be after from"));
    }
    if tz.local(to) - tz.local(from) > MAX_SEARCH {
        return Err(StoreError::invalid("to", format!(
            "search at most {} days at a time: bring to closer to from",
            MAX_SEARCH.num_days()
        )));
    }
    Ok(())
}

/// What a free-slot search looks for.
#[derive(Debug, Clone)]
pub struct SlotQuery {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub length: Duration,
    pub party_size: u32,
    pub requires: Vec<String>,
    pub room: Option<RoomId>,
    /// Leave out times when this client or engineer is already booked.
    pub client: Option<ClientId>,
    pub engineer: Option<EngineerId>,
    pub limit: usize,
}

/// A start where the session fits, and the free window around it.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub room: RoomId,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// The latest the session could start and still fit in this window.
    pub latest_start: DateTime<Utc>,
}

/// Starts are offered on a quarter-hour grid, as bookings are made.
const GRID: Duration = Duration::minutes(15);

/// The earliest start of each free window that fits the query, by start then room.
pub fn find_free_slots(store: &Store, q: &SlotQuery) -> Result<Vec<Slot>, StoreError> {
    search(store, q, Reads::Growing)
}

/// How a search reads the bookings it must step around.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reads {
    /// The first day, then twice as many days each time, until the first `limit` slots are
    /// certain (a search of a week usually fills its answer on the first day); only the rooms
    /// it may offer, and its client's or engineer's bookings wherever they are.
    Growing,
    /// Every booking of the span in every room, in one read: the plain search, which the
    /// growing reads must agree with.
    #[cfg_attr(not(test), allow(dead_code))]
    Whole,
}

/// A span in seconds since the epoch: a search's arithmetic is on these, not on chrono's
/// instants, whose every sum checks its calendar.
type Seconds = (i64, i64);

fn seconds((from, to): Span) -> Seconds {
    (from.timestamp(), to.timestamp())
}

/// One room a search may offer, with what is fixed for the whole search.
struct Candidate<'a> {
    room: &'a Room,
    /// Its turnaround, in seconds.
    buffer: i64,
    /// When the room is open: its hours laid out over the search's days, shared by the rooms
    /// with the same hours.
    openings: &'a [Seconds],
    /// The earliest start its rules allow: the time before it is blocked like a booking.
    earliest: i64,
    /// Its offline windows, padded by its turnaround.
    offline: Vec<Seconds>,
    /// The latest start its rules allow.
    latest: i64,
}

/// Every set of the rooms' opening hours laid out day by day, each day as a search over it alone
/// lays it out. The connection keeps one over the days a booking may take (from the day before
/// the studio's today to the day after its horizon) with the rooms it was laid out for, and a
/// search borrows its days' openings from it; a search outside those days, or where nothing is
/// kept, lays out its own days.
struct HoursLaidOut {
    /// The rooms, as the store shares them: a layout is for these very rooms.
    rooms: Arc<[Room]>,
    tz: StudioTz,
    first: NaiveDate,
    last: NaiveDate,
    /// Each room's hours (by its place in `rooms`): their place in `sets`.
    set_of: Vec<usize>,
    /// Each set of hours' openings over `first..=last`, and where each day's first opening
    /// stands among them (and where the last day's end).
    sets: Vec<(Vec<Seconds>, Vec<usize>)>,
}

impl HoursLaidOut {
    /// The layout the connection keeps for `rooms` in the studio's zone, laid out again when
    /// the rooms, the zone, the studio's today or its horizon moved; `None` where the store
    /// keeps nothing.
    fn kept(store: &Store, rooms: &Arc<[Room]>, tz: &StudioTz, now: DateTime<Utc>, horizon: DateTime<Utc>) -> Result<Option<Arc<HoursLaidOut>>, StoreError> {
        if !store.keeping() {
            return Ok(None);
        }
        let (first, last) = (tz.local(now).date() - Duration::days(1), tz.local(horizon).date() + Duration::days(1));
        store
            .kept(
                "hours_laid_out",
                |laid: &Arc<HoursLaidOut>| Arc::ptr_eq(&laid.rooms, rooms) && laid.tz == *tz && (laid.first, laid.last) == (first, last),
                || Ok::<_, StoreError>(Arc::new(HoursLaidOut::new(rooms.clone(), *tz, first, last))),
            )
            .map(Some)
    }

    fn new(rooms: Arc<[Room]>, tz: StudioTz, first: NaiveDate, last: NaiveDate) -> HoursLaidOut {
        let days = DayOffsets::new(&tz, first, last + Duration::days(1));
        let mut seen: Vec<&WeeklyHours> = Vec::new();
        let mut sets = Vec::new();
        let mut set_of = Vec::with_capacity(rooms.len());
        for room in rooms.iter() {
            let at = match seen.iter().position(|hours| *hours == &room.hours) {
                Some(at) => at,
                None => {
                    let (mut openings, mut day_starts) = (Vec::new(), Vec::new());
                    for day in first.iter_days().take_while(|day| *day <= last) {
                        day_starts.push(openings.len());
                        openings.extend(room.hours.opening_seconds(&days, day, day));
                    }
                    day_starts.push(openings.len());
                    seen.push(&room.hours);
                    sets.push((openings, day_starts));
                    sets.len() - 1
                }
            };
            set_of.push(at);
        }
        HoursLaidOut { rooms, tz, first, last, set_of, sets }
    }

    fn covers(&self, first: NaiveDate, last: NaiveDate) -> bool {
        self.first <= first && last <= self.last
    }

    /// The days `first..=last`, which the layout [`covers`](HoursLaidOut::covers), as places
    /// among its days, for [`HoursLaidOut::openings`].
    fn days(&self, first: NaiveDate, last: NaiveDate) -> (usize, usize) {
        let day = |date: NaiveDate| usize::try_from(date.num_days_from_ce() - self.first.num_days_from_ce()).unwrap_or(0);
        (day(first), day(last) + 1)
    }

    /// The openings of the room at `room` (among the rooms laid out) over the layout's `days`.
    fn openings(&self, room: usize, (from, to): (usize, usize)) -> &[Seconds] {
        let (openings, day_starts) = &self.sets[self.set_of[room]];
        &openings[day_starts[from]..day_starts[to]]
    }
}

/// What the reads found in the candidates' rooms, each span padded by its room's turnaround:
/// each read's spans grouped by candidate, so that a search keeps one list rather than one a
/// room.
#[derive(Default)]
struct Taken {
    spans: Vec<Seconds>,
    /// For each read, where each candidate's spans begin in `spans`, and where the read's end.
    reads: Vec<Vec<usize>>,
}

impl Taken {
    /// Adds a read's spans, each with its candidate, grouped by candidate (a counting sort:
    /// the reads come room by room from memory, or in any order from the table).
    fn add(&mut self, candidates: usize, found: impl Iterator<Item = (usize, Seconds)> + Clone) {
        let base = self.spans.len();
        let mut starts = vec![0; candidates + 1];
        for (c, _) in found.clone() {
            starts[c + 1] += 1;
        }
        starts[0] = base;
        for c in 0..candidates {
            starts[c + 1] += starts[c];
        }
        self.spans.resize(starts[candidates], (0, 0));
        let mut next = starts.clone();
        for (c, span) in found {
            self.spans[next[c]] = span;
            next[c] += 1;
        }
        self.reads.push(starts);
    }

    /// Every span read of candidate `c`.
    fn of(&self, c: usize) -> impl Iterator<Item = &[Seconds]> {
        self.reads.iter().map(move |starts| &self.spans[starts[c]..starts[c + 1]])
    }
}

/// A start where the session fits, before it becomes a [`Slot`]: its candidate (whose order is
/// that of the rooms' ids), its start and its latest start.
#[derive(Clone, Copy)]
struct Found {
    start: i64,
    candidate: usize,
    latest: i64,
}

fn search(store: &Store, q: &SlotQuery, reads: Reads) -> Result<Vec<Slot>, StoreError> {
    let studio = store.studio()?;
    let tz = studio.tz;
    check_search_span(&tz, q.from, q.to)?;
    // Only starts a booking would accept: from the studio's clock to its horizon.
    let now = studio.now(Utc::now());
    let horizon = studio.horizon_end(now);
    let search_from = q.from.max(now);
    store.require_known(q.room.as_ref(), q.client.as_ref(), q.engineer.as_ref())?;
    let all = store.rooms()?;
    let rooms = all
        .iter()
        .enumerate()
        .filter(|(_, r)| q.room.as_ref().is_none_or(|only| &r.id == only))
        // A retired room is never offered.
        .filter(|(_, r)| r.active && r.capacity >= q.party_size && r.has_features(&q.requires));

    // The day of padding catches sessions that began before the search and reach into it.
    let (from, to) = (q.from - Duration::days(1), q.to + Duration::days(1));
    // The engineer blocks every room outside their working hours and on their time off.
    let mut away: Vec<Seconds> = Vec::new();
    if let Some(engineer) = &q.engineer {
        away.extend(store.time_off(Some(engineer), from, to)?.iter().map(|t| seconds((t.from, t.to))));
        if let Some(hours) = store.person(PersonKind::Engineer, engineer.as_str())?.and_then(|p| p.profile.hours) {
            away.extend(outside(&hours.openings(&tz, tz.local(from).date(), tz.local(to).date()), from, to).into_iter().map(seconds));
        }
    }
    let (first, last) = (tz.local(q.from).date() - Duration::days(1), tz.local(q.to).date());
    let minutes = q.length.num_minutes();
    // The rooms' hours as the connection keeps them laid out, over the days from the studio's
    // today to its horizon, if the search's days are among those; otherwise laid out over the
    // search's days alone. Rooms of a studio mostly share their hours: each set is laid out once.
    let laid = match HoursLaidOut::kept(store, &all, &tz, now, horizon)?.filter(|laid| laid.covers(first, last)) {
        Some(kept) => kept,
        None => Arc::new(HoursLaidOut::new(all.clone(), tz, first, last)),
    };
    let days = laid.days(first, last);
    // The rooms that take a session of this length, by their booking rules.
    let taking: Vec<(usize, &Room)> = rooms
        .filter(|(_, room)| !(room.rules.min_minutes.is_some_and(|m| minutes < m) || room.rules.max_minutes.is_some_and(|m| minutes > m)))
        .collect();
    // Where each room stands among the candidates, if it is one.
    let mut candidate_at: Vec<Option<usize>> = vec![None; all.len()];
    let mut wanted = Vec::with_capacity(taking.len());
    let mut candidates: Vec<Candidate> = taking
        .into_iter()
        .map(|(at, room)| {
            // Its notice, how far ahead it may be booked.
            let rules = room.rules;
            let earliest = rules.lead_minutes.map_or(search_from, |lead| search_from.max(now + Duration::minutes(lead))).timestamp();
            let latest = rules.max_advance_days.map_or(horizon, |days| horizon.min(now + Duration::days(days))).timestamp();
            candidate_at[at] = Some(wanted.len());
            wanted.push(at);
            Candidate { room, buffer: room.buffer.num_seconds(), openings: laid.openings(at, days), earliest, offline: Vec::new(), latest }
        })
        .collect();
    // A booking blocks its room's turnaround before it: bookings that start this long after
    // what has been read can still block a moment before it.
    let turnaround = candidates.iter().map(|c| c.room.buffer).max().unwrap_or_default();
    let read_from = q.from - turnaround;
    // The offline windows, read once: those in the candidates' openings, and those the busy reads
    // check their bookings against.
    let windows = store.offline_windows(None, read_from - MAX_BOOKING, to + MAX_BOOKING)?;
    for candidate in &mut candidates {
        let (room, buffer) = (&candidate.room.id, candidate.buffer);
        candidate.offline = windows.iter().filter(|w| &w.room == room).map(|w| (w.from.timestamp() - buffer, w.to.timestamp() + buffer)).collect();
    }

    // The reads, not the interval arithmetic, are what a search costs; a search of a week reads
    // the first day's bookings, and more only while the first `limit` slots are not certain.
    // A session that ends a turnaround before the search is in no one's way.
    let people = BusyPeople { client: q.client.as_ref(), engineer: q.engineer.as_ref() };
    // What is read, as each candidate's taken spans padded by its turnaround, and the people's.
    let mut taken = Taken::default();
    let mut busy_people = away;
    let mut read_to = read_from;
    let mut days = 1;
    loop {
        let next = match reads {
            Reads::Growing => (q.from + Duration::days(days) + turnaround).min(to),
            Reads::Whole => to,
        };
        let fresh = match reads {
            Reads::Growing => store.busy_in_rooms(&all, &wanted, &windows, people, read_to, next)?,
            Reads::Whole => store
                .busy_between(&all, people, read_to, next)?
                .into_iter()
                .map(|b| BusySpan { room: b.room, person: b.person, start: b.start.timestamp(), end: b.end.timestamp() })
                .collect(),
        };
        // Sessions that began before `read_to` were in the earlier reads.
        let earlier = read_to.timestamp();
        let new = fresh.iter().filter(|b| read_to == read_from || b.start >= earlier);
        let in_candidates = new.clone().filter_map(|b| {
            let c = b.room.and_then(|at| candidate_at[at])?;
            let buffer = candidates[c].buffer;
            Some((c, (b.start - buffer, b.end + buffer)))
        });
        taken.add(candidates.len(), in_candidates);
        busy_people.extend(new.filter(|b| b.person).map(|b| (b.start, b.end)));
        read_to = next;
        // Past this moment a booking not read yet may block; before it, everything is known.
        let known = (next < to).then(|| (next - turnaround).timestamp());
        let (mut found, unsettled) = slots_in(q, &tz, &candidates, &taken, &busy_people, known);
        // The answer is the first `limit` by start, then room, once that many start before
        // `unsettled`: only those are put in order (no two have the same start and room).
        if known.is_none() || found.iter().filter(|f| f.start < unsettled).count() >= q.limit {
            let order = |f: &Found| (f.start, f.candidate);
            if found.len() > q.limit {
                found.select_nth_unstable_by_key(q.limit, order);
                found.truncate(q.limit);
            }
            found.sort_unstable_by_key(order);
            let length = q.length.num_seconds();
            let slot = |f: &Found| Slot {
                room: candidates[f.candidate].room.id.clone(),
                start: instant_of(f.start),
                end: instant_of(f.start + length),
                latest_start: instant_of(f.latest),
            };
            return Ok(found.iter().map(slot).collect());
        }
        days *= 2;
    }
}

/// The slots of the free windows that end before `known` (all of them when it is `None`), and the
/// earliest start any other slot can have: a window still open at `known` may yet be cut short by
/// a booking not read, so it waits for the next read, and so does everything after it.
fn slots_in(q: &SlotQuery, tz: &StudioTz, candidates: &[Candidate], taken: &Taken, people: &[Seconds], known: Option<i64>) -> (Vec<Found>, i64) {
    let (length, until) = (q.length.num_seconds(), q.to.timestamp());
    let mut unsettled = known.unwrap_or(i64::MAX);
    let mut found = Vec::new();
    let mut blocked = Vec::new();
    for (at, candidate) in candidates.iter().enumerate() {
        let rules = candidate.room.rules;
        // An opening from `known` on has no window that ends by then, nor any that starts
        // before it: it settles nothing yet, and `unsettled` is at `known` already.
        // (An opening that begins before the room's earliest start but ends after it has its
        // windows from that start, which the block below sets, so it is in `known`'s part when
        // it would be if trimmed: a window from `known` on settles nothing either way.)
        let openings = match known {
            Some(known) => &candidate.openings[..candidate.openings.partition_point(|&(open, _)| open < known)],
            None => candidate.openings,
        };
        if openings.is_empty() || openings.last().is_some_and(|&(_, close)| close <= candidate.earliest) {
            continue;
        }
        // A session needs the room's turnaround free on both sides of it; padding what is taken
        // by the turnaround says the same. (Padding a window too only trims what is closed anyway.)
        // Nothing starts before the room's earliest start, and the client's and engineer's other
        // sessions block every room.
        blocked.clear();
        blocked.push((i64::MIN, candidate.earliest));
        for spans in taken.of(at) {
            blocked.extend_from_slice(spans);
        }
        blocked.extend_from_slice(&candidate.offline);
        blocked.extend_from_slice(people);
        blocked.sort_unstable();
        free_windows_in_seconds(openings, &blocked, length, |open, close| {
            if let Some(known) = known
                && close > known
            {
                unsettled = unsettled.min(open);
                return;
            }
            let latest = (close - length).min(candidate.latest);
            let (start, latest) = match rules.start_step_minutes {
                None => (align_up_seconds(open, GRID), latest),
                // The last start on the grid that still fits.
                Some(step) => (
                    rules.next_step(tz, instant_of(open)).timestamp(),
                    rules.next_step(tz, instant_of(latest - step * 60 + 1)).timestamp(),
                ),
            };
            if start <= latest && start < until {
                found.push(Found { start, candidate: at, latest });
            }
        });
    }
    (found, unsettled)
}

/// The parts of `[from, to)` outside `openings` (sorted, never overlapping), with an empty span
/// where one opening ends as the next begins: a session must lie inside one opening, so it may
/// not run across that instant.
fn outside(openings: &[Span], from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Span> {
    let mut gaps = Vec::new();
    let mut cursor = from;
    for &(open, close) in openings {
        if open >= cursor {
            gaps.push((cursor, open));
        }
        cursor = cursor.max(close);
    }
    if cursor < to {
        gaps.push((cursor, to));
    }
    gaps
}

/// The offline windows that have not ended at `now`, of every room: the current ones and those to come.
pub fn current_and_upcoming(store: &Store, now: DateTime<Utc>) -> Result<Vec<OfflineWindow>, StoreError> {
    store.offline_windows(None, now, now + Duration::days(3660))
}

/// The active bookings that an offline window over `[from, to)` in `room` touches.
pub fn affected_by(store: &Store, room: &RoomId, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Booking>, StoreError> {
    let query = BookingQuery {
        from: Some(from),
        to: Some(to),
        room: Some(room.clone()),
        statuses: Some(vec![Status::Confirmed, Status::Tentative]),
        limit: 1_000_000,
        ..Default::default()
    };
    Ok(store.query_bookings(&query)?.into_iter().map(|(b, _)| b).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The openings a kept layout lends a search are those the search lays out over its own
    /// days: every span of one to 32 days inside the layout, for hours that close after
    /// midnight, open round the clock or close on some days, in zones whose clocks change by an
    /// hour, by half an hour, and twice a year at midnight.
    #[test]
    fn the_kept_layout_lends_the_openings_a_search_lays_out() {
        let hours = [
            WeeklyHours::parse(&["mon-sun 10:00-02:00"]).unwrap(),
            WeeklyHours::parse(&["mon-sun 00:00-24:00"]).unwrap(),
            WeeklyHours::parse(&["mon-fri 09:00-18:00", "sat 00:30-03:15", "sun 23:00-24:00"]).unwrap(),
        ];
        let rooms: Arc<[Room]> = (0..5)
            .map(|r| Room {
                id: RoomId::new(format!("room-{r}")),
                name: format!("Room {r}"),
                capacity: 4,
                features: Vec::new(),
                hours: hours[r % hours.len()].clone(),
                buffer: Duration::zero(),
                active: true,
                rules: Default::default(),
                price: Default::default(),
            })
            .collect();
        let mut seed = 0x1a1d_u64;
        let mut below = |n: i64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as i64 % n
        };
        for zone in ["Europe/London", "Australia/Lord_Howe", "America/Santiago", "Asia/Tokyo"] {
            let tz: StudioTz = zone.parse().unwrap();
            let first = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
            let last = first + Duration::days(730);
            let laid = HoursLaidOut::new(rooms.clone(), tz, first, last);
            assert_eq!(laid.sets.len(), hours.len(), "rooms that share their hours share their layout");
            for _ in 0..400 {
                let from = first + Duration::days(below(700));
                let to = (from + Duration::days(below(32))).min(last);
                assert!(laid.covers(from, to));
                let days = DayOffsets::new(&tz, from, to + Duration::days(1));
                for (at, room) in rooms.iter().enumerate() {
                    assert_eq!(laid.openings(at, laid.days(from, to)), room.hours.opening_seconds(&days, from, to), "{zone}: {} over {from}..={to}", room.id);
                }
            }
            assert!(!laid.covers(first - Duration::days(1), first) && !laid.covers(last, last + Duration::days(1)));
        }
    }

    /// Reading the bookings a day, then two, four… at a time must give exactly the answer of one
    /// read of the whole span: searches of every length, limit and filter on the demo studio, whose
    /// September is busy enough that small limits stop early and large ones read it all.
    #[test]
    fn growing_reads_agree_with_one_read() {
        let mut store = Store::open_in_memory().unwrap();
        crate::demo::load_demo(&mut store).unwrap();
        let tz = store.studio().unwrap().tz;
        let rooms = store.rooms().unwrap();
        let clients = store.clients().unwrap();
        let engineers = store.engineers().unwrap();
        let start = tz.resolve(chrono::NaiveDate::from_ymd_opt(2026, 8, 30).unwrap().and_hms_opt(0, 0, 0).unwrap()).unwrap();
        let mut seed = 0x5eed_u64;
        let mut below = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        // Short sessions at odd times fill September more densely, so that free windows end at
        // bookings (not only at closing time), on either side of where a read stops.
        let mut writer = store.write().unwrap();
        let mut added = 0;
        for _ in 0..1500 {
            let from = start + Duration::days(2) + Duration::minutes(15 * below(4 * 24 * 30) as i64);
            let session = crate::domain::Session {
                room: rooms[below(rooms.len())].id.clone(),
                client: clients[below(clients.len())].id.clone(),
                engineer: None,
                start: from,
                end: from + Duration::minutes(15 * (1 + below(12)) as i64),
                party_size: 1,
                requires: Vec::new(),
                engineer_skills: Vec::new(),
                status: Status::Confirmed,
                pinned: false,
            };
            // Sessions that break a rule (a clash, closed hours) are refused and left out.
            added += usize::from(writer.create_booking_with(&session, None, None).is_ok());
        }
        writer.commit().unwrap();
        assert!(added > 50, "only {added} sessions were added");
        let (mut early, mut compared) = (0, 0);
        for _ in 0..400 {
            let from = start + Duration::minutes(15 * below(4 * 24 * 35) as i64);
            let to = from + Duration::hours([3, 24, 72, 168, 24 * 31][below(5)]);
            let mut q = SlotQuery {
                from,
                to,
                length: Duration::minutes([15, 60, 90, 180, 240, 600][below(6)]),
                party_size: 1 + below(6) as u32,
                requires: Vec::new(),
                room: None,
                client: None,
                engineer: None,
                limit: [1, 5, 20, 50, 200][below(5)],
            };
            match below(5) {
                0 => q.room = Some(rooms[below(rooms.len())].id.clone()),
                1 => q.client = Some(clients[below(clients.len())].id.clone()),
                2 => q.engineer = Some(engineers[below(engineers.len())].id.clone()),
                _ => {}
            }
            let whole = search(&store, &q, Reads::Whole).unwrap();
            let growing = search(&store, &q, Reads::Growing).unwrap();
            assert_eq!(growing, whole, "{q:?}");
            compared += 1;
            early += usize::from(whole.len() == q.limit);
        }
        // Both kinds were compared: answers cut at the limit (where growing reads stop early)
        // and answers that hold every slot of the span.
        assert!(early > 50 && compared - early > 50, "{early} of {compared} answers were cut at the limit");
    }
}
