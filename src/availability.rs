//! Availability: what is free and what is in the way, in answers that take more than one read:
//! where a session of a given length still fits (free slots), the offline windows that have not
//! ended, and the bookings an offline window would displace. Built on the store's reads; no SQL
//! here.

use crate::domain::{align_up, free_windows, Booking, ClientId, EngineerId, OfflineWindow, RoomId, Span, Status, StudioTz};
use std::collections::HashMap;
use crate::store::{BookingQuery, PersonKind, Store, StoreError};
use chrono::{DateTime, Duration, Utc};

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
    let studio = store.studio()?;
    let tz = studio.tz;
    check_search_span(&tz, q.from, q.to)?;
    // Only starts a booking would accept: from the studio's clock to its horizon.
    let now = studio.now(Utc::now());
    let horizon = studio.horizon_end(now);
    let search_from = q.from.max(now);
    store.require_known(q.room.as_ref(), q.client.as_ref(), q.engineer.as_ref())?;
    let mut rooms = store.rooms()?;
    if let Some(only) = &q.room {
        rooms.retain(|r| &r.id == only);
    }
    // A retired room is never offered.
    rooms.retain(|r| r.active && r.capacity >= q.party_size && r.missing_features(&q.requires).is_empty());

    // One read of the bookings and one of the offline windows for the whole search, grouped by
    // room here: the reads, not the interval arithmetic, are what a search costs. The day of
    // padding catches sessions that began before the search and reach into it.
    let (from, to) = (q.from - Duration::days(1), q.to + Duration::days(1));
    let windows = store.offline_windows(None, from, to)?;
    let busy = store.busy_between(from, to)?;
    let mut by_room: HashMap<&RoomId, Vec<Span>> = HashMap::new();
    for b in &busy {
        by_room.entry(&b.room).or_default().push((b.start, b.end));
    }
    for w in &windows {
        by_room.entry(&w.room).or_default().push((w.from, w.to));
    }
    // The client's and engineer's other sessions block every room.
    let mut people: Vec<Span> = busy
        .iter()
        .filter(|b| q.client.as_ref() == Some(&b.client) || (q.engineer.is_some() && q.engineer == b.engineer))
        .map(|b| (b.start, b.end))
        .collect();
    // An engineer blocks every room outside their working hours and on their time off.
    if let Some(engineer) = &q.engineer {
        people.extend(store.time_off(Some(engineer), from, to)?.iter().map(|t| (t.from, t.to)));
        if let Some(hours) = store.person(PersonKind::Engineer, engineer.as_str())?.and_then(|p| p.profile.hours) {
            people.extend(outside(&hours.openings(&tz, tz.local(from).date(), tz.local(to).date()), from, to));
        }
    }

    let (first, last) = (tz.local(q.from).date() - Duration::days(1), tz.local(q.to).date());
    let mut slots = Vec::new();
    for room in &rooms {
        // The room's booking rules: a length it takes, its notice, how far ahead, its grid.
        let rules = room.rules;
        let minutes = q.length.num_minutes();
        if rules.min_minutes.is_some_and(|m| minutes < m) || rules.max_minutes.is_some_and(|m| minutes > m) {
            continue;
        }
        let room_from = rules.lead_minutes.map_or(search_from, |lead| search_from.max(now + Duration::minutes(lead)));
        let room_latest = rules.max_advance_days.map_or(horizon, |days| horizon.min(now + Duration::days(days)));
        let openings: Vec<_> = room
            .hours
            .openings(&tz, first, last)
            .into_iter()
            .map(|(o, c)| (o.max(room_from), c))
            .filter(|(o, c)| o < c)
            .collect();
        // A session needs the room's turnaround free on both sides of it; padding what is taken
        // by the turnaround says the same. (Padding a window too only trims what is closed anyway.)
        let mut blocked: Vec<_> = by_room
            .get(&room.id)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|&(start, end)| (start - room.buffer, end + room.buffer))
            .collect();
        blocked.extend(people.iter().copied());
        for (open, close) in free_windows(&openings, blocked, q.length) {
            let (start, latest) = match rules.start_step_minutes {
                None => (align_up(open, GRID), (close - q.length).min(room_latest)),
                Some(step) => {
                    // The last start on the grid that still fits.
                    let latest = (close - q.length).min(room_latest);
                    (rules.next_step(&tz, open), rules.next_step(&tz, latest - Duration::minutes(step) + Duration::seconds(1)))
                }
            };
            if start <= latest && start < q.to {
                slots.push(Slot { room: room.id.clone(), start, end: start + q.length, latest_start: latest });
            }
        }
    }
    slots.sort_by(|a, b| (a.start, &a.room).cmp(&(b.start, &b.room)));
    slots.truncate(q.limit);
    Ok(slots)
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
