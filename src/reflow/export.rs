//! A month of the store as a REFLOW.md instance (`export_instance`, in named steps: the month's
//! frame of minutes, the request checked, each room's openings and offline windows, the bookings
//! with why the immovable ones may not move), and the solver's answer read back into real moves
//! and the studio's words (`Export::solve`, `Export::read_solution`).

use super::{Month, Move, ReflowError, ReflowPlan, ReflowRequest, SolveOptions, Unplaced};
use crate::domain::{Booking, BookingId, BookingRules, Lock, OfflineWindow, Room, RoomId, Status, StudioTz};
use crate::store::{Store, StoreError};
use chrono::{DateTime, Duration, NaiveDateTime, NaiveTime, Utc};
use std::collections::HashMap;
use studioflow_solver as solver;

/// A month of the store as a solver instance, with what is needed to read the answer back.
pub struct Export {
    pub instance: solver::Instance,
    clock: MonthClock,
    /// Bookings of the instance, by id.
    bookings: HashMap<BookingId, Booking>,
    /// Why each immovable booking may not move.
    locks: HashMap<BookingId, Pin>,
    notice_hours: i64,
    /// Each room's booking rules: a move keeps the room's grid of starts.
    rules: HashMap<RoomId, BookingRules>,
}

/// Why a booking of the instance is not movable.
#[derive(Debug, Clone, Copy)]
enum Pin {
    Lock(Lock),
    /// It starts before the month: the reflow of this month does not move it.
    EarlierMonth,
    /// It starts after the month, and is in the instance only to keep late sessions off it.
    LaterMonth,
}

/// Converts between instants and the instance's wall-clock minutes.
#[derive(Clone, Copy)]
struct MonthClock {
    tz: StudioTz,
    origin: NaiveDateTime,
}

impl MonthClock {
    fn minute(&self, t: DateTime<Utc>) -> i64 {
        (self.tz.local(t) - self.origin).num_minutes()
    }

    /// The instant of a minute; a wall-clock time the clock repeats takes its first instant, and
    /// one it skips the end of the gap. (The store checks every move again before applying it.)
    fn instant(&self, minute: i64) -> DateTime<Utc> {
        self.tz.resolve_boundary(self.origin + Duration::minutes(minute), crate::domain::Pick::Earlier)
    }
}

/// The month as the export sees it: its instants, and the minutes of the instance.
struct Frame {
    month: Month,
    clock: MonthClock,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    /// Openings and windows may run past the month's end for the last day's late sessions: up to
    /// the end of the next month's first day.
    horizon_end: DateTime<Utc>,
    /// `horizon_end` in the instance's minutes.
    horizon: i64,
}

impl Frame {
    fn of(month: Month, tz: StudioTz) -> Frame {
        let (start, end) = month.bounds(&tz);
        let clock = MonthClock { tz, origin: month.first_day().and_time(NaiveTime::MIN) };
        let horizon_end = tz.start_of_day(month.next_first_day() + Duration::days(1));
        Frame { month, clock, start, end, horizon_end, horizon: clock.minute(horizon_end) }
    }

    /// `[from, to)` in the instance's minutes, cut to the instance; `None` when nothing is left.
    fn clip(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Option<[i64; 2]> {
        let (a, b) = (self.clock.minute(from).max(0), self.clock.minute(to).min(self.horizon));
        (a < b).then_some([a, b])
    }

    /// Whether a booking is flagged displaced (its room changed under it) in this month: one the
    /// reflow moves even with no room offline.
    fn flagged(&self, b: &Booking) -> bool {
        b.displaced && b.is_active() && b.start >= self.start && b.start < self.end
    }
}

/// Writes the month as a REFLOW.md instance. The listed rooms' offline windows in the month are the
/// instance's `offline` intervals (a listed room with none is offline all month); other rooms'
/// windows are cut out of their opening hours, so nothing is placed there and nothing there moves.
/// The instance has one turnaround buffer, so it takes the largest of the rooms': never too little.
pub fn export_instance(store: &Store, request: &ReflowRequest) -> Result<Export, ReflowError> {
    let studio = store.studio()?;
    let rooms = store.rooms()?;
    let frame = Frame::of(request.month, studio.tz);
    check_request(store, request, &rooms, &frame)?;
    let windows = store.offline_windows(None, frame.start, frame.horizon_end)?;
    let mut instance_rooms: Vec<solver::Room> = rooms.iter().map(|room| instance_room(room, &windows, request, &frame)).collect();
    let mut placed = instance_bookings(store, &frame, &instance_rooms, studio.now(Utc::now()), studio.notice)?;
    let away = engineers_away(store, &frame, &placed.instance)?;
    if !away.is_empty() {
        placed.instance.extend(away);
        instance_rooms.push(solver::Room { id: ENGINEER_AWAY_ROOM.to_owned(), capacity: 0, features: Vec::new(), open: Vec::new(), offline: Vec::new() });
    }
    for id in placed.pseudo_rooms {
        instance_rooms.push(solver::Room { id, capacity: 0, features: Vec::new(), open: Vec::new(), offline: vec![[0, frame.horizon]] });
    }
    let instance = solver::Instance {
        version: solver::VERSION,
        month: frame.month.to_string(),
        grid_minutes: 15,
        max_shift_minutes: request.max_shift_minutes,
        buffer_minutes: rooms.iter().map(|r| r.buffer.num_minutes()).max().unwrap_or(0),
        weights: solver::Weights::default(),
        rooms: instance_rooms,
        bookings: placed.instance,
        engineers: Vec::new(),
    };
    let rules = rooms.iter().map(|r| (r.id.clone(), r.rules)).collect();
    Ok(Export { instance, clock: frame.clock, bookings: placed.bookings, locks: placed.locks, notice_hours: studio.notice.num_hours(), rules })
}

/// Refuses a request the export cannot take: no room to empty (and no flagged booking to move),
/// an unknown room, or a shift out of range.
fn check_request(store: &Store, request: &ReflowRequest, rooms: &[Room], frame: &Frame) -> Result<(), ReflowError> {
    // A month with bookings flagged displaced (their room changed under them) is worth a reflow
    // with no room offline: those bookings are what it moves.
    if request.offline_rooms.is_empty() && !store.bookings_between(frame.start, frame.end)?.iter().any(|b| frame.flagged(b)) {
        return Err(ReflowError::invalid("offline_rooms", "offline_rooms: name at least one room, e.g. [\"studio-b\"]"));
    }
    for id in &request.offline_rooms {
        if !rooms.iter().any(|r| &r.id == id) {
            return Err(StoreError::UnknownRoom(id.clone()).into());
        }
    }
    if !(0..=720).contains(&request.max_shift_minutes) {
        return Err(ReflowError::invalid("max_shift_minutes", "max_shift_minutes must be 0 to 720"));
    }
    Ok(())
}

/// A room of the instance: its openings in the month, and its offline minutes if it is listed
/// (its windows, or the whole month); an unlisted room's windows are cut out of its openings,
/// and a retired room has none.
fn instance_room(room: &Room, windows: &[OfflineWindow], request: &ReflowRequest, frame: &Frame) -> solver::Room {
    let tz = frame.clock.tz;
    let first = frame.month.first_day();
    let listed = request.offline_rooms.contains(&room.id);
    let own: Vec<[i64; 2]> = windows.iter().filter(|w| w.room == room.id).filter_map(|w| frame.clip(w.from, w.to)).collect();
    let mut open: Vec<[i64; 2]> = room
        .hours
        .openings(&tz, first - Duration::days(1), frame.month.next_first_day() - Duration::days(1))
        .into_iter()
        .filter_map(|(o, c)| frame.clip(o, c))
        .collect();
    let offline = match (listed, own.is_empty()) {
        (true, true) => vec![[0, frame.horizon]],
        (true, false) => own,
        (false, _) => {
            open = subtract(&open, &own);
            Vec::new()
        }
    };
    // A retired room is never a placement.
    if !room.active {
        open.clear();
    }
    solver::Room { id: room.id.0.clone(), capacity: room.capacity, features: room.features.clone(), open, offline }
}

/// The bookings of the instance, with what reading its answer back needs.
struct Placed {
    instance: Vec<solver::Booking>,
    bookings: HashMap<BookingId, Booking>,
    locks: HashMap<BookingId, Pin>,
    /// The rooms of bookings flagged displaced ([`displaced_room`]), to add to the instance.
    pseudo_rooms: Vec<String>,
}

/// Every active booking of the month as the instance takes it, with those of the next month's
/// first hours fixed, so that a late session moved past midnight cannot land on them.
fn instance_bookings(store: &Store, frame: &Frame, rooms: &[solver::Room], now: DateTime<Utc>, notice: Duration) -> Result<Placed, ReflowError> {
    let offline_minutes: HashMap<&str, &Vec<[i64; 2]>> = rooms.iter().map(|r| (r.id.as_str(), &r.offline)).collect();
    let mut placed = Placed { instance: Vec::new(), bookings: HashMap::new(), locks: HashMap::new(), pseudo_rooms: Vec::new() };
    for b in store.bookings_between(frame.start, frame.horizon_end)? {
        if b.status == Status::Cancelled {
            continue;
        }
        // A booking flagged displaced holds nothing. One of this month is affected: the instance
        // puts it in a room offline all month (REFLOW.md's "affected" stays as it is), and the
        // plan reads it back to its real room. One of another month is left out.
        let room = if b.displaced {
            if !frame.flagged(&b) {
                continue;
            }
            let pseudo = displaced_room(&b.room);
            if !placed.pseudo_rooms.contains(&pseudo) {
                placed.pseudo_rooms.push(pseudo.clone());
            }
            pseudo
        } else {
            b.room.0.clone()
        };
        let start = frame.clock.minute(b.start).max(0);
        // Wall-clock minutes, but never shorter than the real session: across a clock change the
        // two differ, and the longer keeps every rule on the safe side.
        let end = frame.clock.minute(b.end).max(start + (b.end - b.start.max(frame.start)).num_minutes());
        let lock = if b.start < frame.start {
            // A session that begins in the month before belongs to that month's plan: it stays put.
            Some(Pin::EarlierMonth)
        } else if b.start >= frame.end {
            // One that begins in the next month stays put, and if its room is offline then it is
            // displaced and holds nothing: leave it out.
            let displaced = offline_minutes.get(b.room.as_str()).is_some_and(|w| w.iter().any(|&[s, e]| start < e && s < end));
            if displaced {
                continue;
            }
            Some(Pin::LaterMonth)
        } else {
            b.lock(now, notice).map(Pin::Lock)
        };
        if let Some(lock) = lock {
            placed.locks.insert(b.id.clone(), lock);
        }
        placed.instance.push(solver::Booking {
            id: b.id.0.clone(),
            room,
            start,
            end,
            client: b.client.0.clone(),
            engineer: b.engineer.as_ref().map(|e| e.0.clone()),
            party_size: b.party_size,
            requires: b.requires.clone(),
            engineer_skills: Vec::new(),
            series: b.series.as_ref().map(|s| s.0.clone()),
            movable: lock.is_none(),
        });
        placed.bookings.insert(b.id.clone(), b);
    }
    Ok(placed)
}

/// The instance's room of the fixed bookings that stand for engineers' time away: never open,
/// never offline, so nothing is placed there and nothing there moves.
const ENGINEER_AWAY_ROOM: &str = "engineer-away";

/// An engineer's time off and the time outside their working hours, as fixed bookings of
/// [`ENGINEER_AWAY_ROOM`] with that engineer (each with a client of its own, so that it blocks no
/// one else): the version 1 contract's rule 5 then keeps every placement inside the engineer's
/// time at work, so that the store, which checks each move again, never refuses a plan for it.
/// Only engineers of movable bookings are read.
fn engineers_away(store: &Store, frame: &Frame, bookings: &[solver::Booking]) -> Result<Vec<solver::Booking>, ReflowError> {
    let mut engineers: Vec<&str> = bookings.iter().filter(|b| b.movable).filter_map(|b| b.engineer.as_deref()).collect();
    engineers.sort_unstable();
    engineers.dedup();
    let tz = frame.clock.tz;
    let mut away = Vec::new();
    for engineer in engineers {
        let id = crate::domain::EngineerId::new(engineer);
        let mut spans: Vec<[i64; 2]> =
            store.time_off(Some(&id), frame.start, frame.horizon_end)?.iter().filter_map(|t| frame.clip(t.from, t.to)).collect();
        if let Some(hours) = store.person(crate::store::PersonKind::Engineer, engineer)?.and_then(|p| p.profile.hours) {
            let first = frame.month.first_day();
            let mut open: Vec<[i64; 2]> = hours
                .openings(&tz, first - Duration::days(1), frame.month.next_first_day())
                .into_iter()
                .filter_map(|(o, c)| frame.clip(o, c))
                .collect();
            open.sort_unstable();
            spans.extend(subtract(&[[0, frame.horizon]], &open));
        }
        for (n, [start, end]) in spans.into_iter().enumerate() {
            let key = format!("away:{engineer}:{n}");
            away.push(solver::Booking {
                id: key.clone(),
                room: ENGINEER_AWAY_ROOM.to_owned(),
                start,
                end,
                client: key,
                engineer: Some(engineer.to_owned()),
                party_size: 1,
                requires: Vec::new(),
                engineer_skills: Vec::new(),
                series: None,
                movable: false,
            });
        }
    }
    Ok(away)
}

/// The instance's room for bookings flagged displaced out of `room`: never open, offline all month.
fn displaced_room(room: &RoomId) -> String {
    format!("{}{room}", crate::domain::DISPLACED_ROOM_PREFIX)
}

/// `intervals` with `holes` cut out; both sorted or not, the result is sorted.
fn subtract(intervals: &[[i64; 2]], holes: &[[i64; 2]]) -> Vec<[i64; 2]> {
    let mut out = Vec::new();
    for &[start, end] in intervals {
        let mut pieces = vec![[start, end]];
        for &[h0, h1] in holes {
            pieces = pieces
                .into_iter()
                .flat_map(|[a, b]| {
                    if h1 <= a || b <= h0 {
                        vec![[a, b]]
                    } else {
                        [[a, h0], [h1, b]].into_iter().filter(|[x, y]| x < y).collect()
                    }
                })
                .collect();
        }
        out.extend(pieces);
    }
    out.sort_unstable();
    out
}

impl Export {
    /// Solves the exported month and reads the answer back as real moves.
    pub fn solve(&self, request: &ReflowRequest, options: &SolveOptions) -> Result<ReflowPlan, ReflowError> {
        self.instance.check().map_err(|e| ReflowError::Unsolvable(e.to_string()))?;
        let report = solver::solve_with_report(&self.instance, options);
        Ok(self.read_solution(request, &report.solution, report.lower_bound, report.proven_optimal))
    }

    /// Turns the solver's minutes back into instants, and its reasons into the studio's words.
    pub fn read_solution(&self, request: &ReflowRequest, solution: &solver::Solution, lower_bound: i64, proven_optimal: bool) -> ReflowPlan {
        let mut moves = Vec::with_capacity(solution.assignments.len());
        let mut unresolved = Vec::new();
        for a in &solution.assignments {
            let id = BookingId(a.booking.clone());
            let Some(b) = self.bookings.get(&id) else { continue };
            let start = self.clock.instant(a.start);
            // The instance has one grid for every room; a room with its own grid of starts keeps
            // it: a placement off that grid is left unresolved (an unresolved booking holds
            // nothing, so every other move stays valid).
            let room = RoomId(a.room.clone());
            if let Some(rules) = self.rules.get(&room)
                && let Some(step) = rules.start_step_minutes
                && !rules.on_step(&self.clock.tz, start)
            {
                let reason = format!("the only places found start off {room}'s grid of starts (every {step} minutes): move it by hand");
                unresolved.push(Unplaced { booking: id, reason });
                continue;
            }
            moves.push(Move {
                booking: id,
                from_room: b.room.clone(),
                from_start: b.start,
                from_end: b.end,
                to_room: RoomId(a.room.clone()),
                to_start: start,
                // The real length is kept, even where the wall clock jumps.
                to_end: start + b.duration(),
            });
        }
        for u in &solution.unresolved_bookings {
            let id = BookingId(u.booking.clone());
            let reason = match self.locks.get(&id) {
                Some(Pin::Lock(Lock::Pinned)) => "pinned by staff: unpin it or move it by hand".to_owned(),
                Some(Pin::Lock(Lock::Started)) => "it has already started".to_owned(),
                Some(Pin::Lock(Lock::Notice)) => {
                    format!("it starts within the {}-hour notice period: move it by hand with the client", self.notice_hours)
                }
                Some(Pin::EarlierMonth) => "it starts in the month before: reflow that month".to_owned(),
                Some(Pin::LaterMonth) => "it starts in the month after: reflow that month".to_owned(),
                None => u.reason.clone(),
            };
            unresolved.push(Unplaced { booking: id, reason });
        }
        ReflowPlan {
            request: request.clone(),
            affected: moves.len() + unresolved.len(),
            moves,
            unresolved,
            cost: solution.cost,
            lower_bound,
            proven_optimal,
        }
    }

    /// The bookings that sit in an offline room at an offline minute, as the instance sees them.
    pub fn affected_bookings(&self) -> Vec<&Booking> {
        let offline: HashMap<&str, &Vec<[i64; 2]>> =
            self.instance.rooms.iter().map(|r| (r.id.as_str(), &r.offline)).collect();
        self.instance
            .bookings
            .iter()
            .filter(|b| offline.get(b.room.as_str()).is_some_and(|w| w.iter().any(|&[s, e]| b.start < e && s < b.end)))
            .filter_map(|b| self.bookings.get(&BookingId(b.id.clone())))
            .collect()
    }
}
