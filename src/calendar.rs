//! Answers about the calendar that take more than one read: where a session of a given length
//! still fits, and what an offline window would displace. Built on the store's reads; no SQL here.

use crate::domain::{align_up, free_windows, Booking, ClientId, EngineerId, OfflineWindow, Room, RoomId, Status};
use crate::store::{BookingQuery, Store, StoreError};
use chrono::{DateTime, Duration, Utc};

/// The longest span one free-slot search may cover.
pub const MAX_SEARCH: Duration = Duration::days(31);

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
    let tz = store.studio()?.tz;
    let mut rooms = store.rooms()?;
    if let Some(only) = &q.room {
        rooms.retain(|r| &r.id == only);
        if rooms.is_empty() {
            return Err(StoreError::UnknownRoom(only.clone()));
        }
    }
    rooms.retain(|r| r.capacity >= q.party_size && r.missing_features(&q.requires).is_empty());

    // Bookings that reach into the search, padded by a day for sessions that began before it.
    let active = |query: BookingQuery| -> Result<Vec<Booking>, StoreError> {
        let query = BookingQuery {
            from: Some(q.from - Duration::days(1)),
            to: Some(q.to + Duration::days(1)),
            statuses: Some(vec![Status::Confirmed, Status::Tentative]),
            limit: 1_000_000,
            ..query
        };
        Ok(store.query_bookings(&query)?.into_iter().map(|(b, _)| b).collect())
    };
    let mut people = Vec::new();
    if let Some(client) = &q.client {
        people.extend(active(BookingQuery { client: Some(client.clone()), ..Default::default() })?);
    }
    if let Some(engineer) = &q.engineer {
        people.extend(active(BookingQuery { engineer: Some(engineer.clone()), ..Default::default() })?);
    }

    let mut slots = Vec::new();
    for room in &rooms {
        let first = tz.local(q.from).date() - Duration::days(1);
        let last = tz.local(q.to).date();
        let openings: Vec<_> = room
            .hours
            .openings(&tz, first, last)
            .into_iter()
            .map(|(o, c)| (o.max(q.from), c))
            .filter(|(o, c)| o < c)
            .collect();
        let mut blocked: Vec<_> = active(BookingQuery { room: Some(room.id.clone()), ..Default::default() })?
            .iter()
            .map(|b| (b.start - room.buffer, b.end + room.buffer))
            .collect();
        blocked.extend(store.offline_windows(Some(&room.id), q.from, q.to + Duration::days(1))?.iter().map(|w| (w.from, w.to)));
        blocked.extend(people.iter().map(|b| (b.start, b.end)));
        for (open, close) in free_windows(&openings, blocked, q.length) {
            let start = align_up(open, GRID);
            let latest = close - q.length;
            if start <= latest && start < q.to {
                slots.push(Slot { room: room.id.clone(), start, end: start + q.length, latest_start: latest });
            }
        }
    }
    slots.sort_by(|a, b| (a.start, &a.room).cmp(&(b.start, &b.room)));
    slots.truncate(q.limit);
    Ok(slots)
}

/// The windows of a room that have not ended at `now`: the current one and those to come.
pub fn current_and_upcoming(store: &Store, room: &Room, now: DateTime<Utc>) -> Result<Vec<OfflineWindow>, StoreError> {
    store.offline_windows(Some(&room.id), now, now + Duration::days(3660))
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
