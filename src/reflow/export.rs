//! A month of the store as a REFLOW.md version 2 instance (`export_instance`, in named steps: the
//! month's frame of minutes, the request checked, each room's openings and offline windows, the
//! engineers' skills, working hours and time off, the bookings with why the immovable ones may not
//! move), and the solver's answer read back into real moves, engineers included, and the studio's
//! words (`Export::solve`, `Export::read_solution`).

use super::{Month, Move, ReflowError, ReflowPlan, ReflowRequest, SolveOptions, Unplaced};
use crate::domain::{Booking, BookingId, BookingRules, EngineerId, Lock, OfflineWindow, Room, RoomId, Status, StudioTz};
use crate::store::{PersonKind, Store, StoreError};
use chrono::{DateTime, Duration, NaiveDateTime, NaiveTime, Utc};
use std::collections::{HashMap, HashSet};
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
    /// Engineers who are deactivated: listed for their own sessions' sake, never given another's.
    inactive: HashSet<String>,
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
/// Engineers come with their skills, working hours (`available`) and time off (`away`) in the
/// month, so a session whose engineer cannot work it is affected as the contract says.
pub fn export_instance(store: &Store, request: &ReflowRequest) -> Result<Export, ReflowError> {
    let studio = store.studio()?;
    let rooms = store.rooms()?;
    let frame = Frame::of(request.month, studio.tz);
    check_request(request, &rooms)?;
    let windows = store.offline_windows(None, frame.start, frame.horizon_end)?;
    let mut instance_rooms: Vec<solver::Room> = rooms.iter().map(|room| instance_room(room, &windows, request, &frame)).collect();
    let mut staff = staff(store, &frame)?;
    let placed = instance_bookings(store, &frame, &instance_rooms, &staff, studio.now(Utc::now()), studio.notice)?;
    for id in &placed.pseudo_rooms {
        instance_rooms.push(solver::Room { id: id.clone(), capacity: 0, features: Vec::new(), open: Vec::new(), offline: vec![[0, frame.horizon]] });
    }
    keep_fixed_sessions(&mut staff, &placed);
    // An inactive engineer is listed only for their own sessions (their hours and time off);
    // one no session names is left out, so the solver never considers them.
    let named: HashSet<&str> = placed.instance.iter().filter_map(|b| b.engineer.as_deref()).collect();
    let inactive: HashSet<String> = staff.iter().filter(|s| !s.active).map(|s| s.engineer.id.clone()).collect();
    let engineers: Vec<solver::Engineer> =
        staff.into_iter().filter(|s| s.active || named.contains(s.engineer.id.as_str())).map(|s| s.engineer).collect();
    let instance = solver::Instance {
        version: solver::VERSION,
        month: frame.month.to_string(),
        grid_minutes: 15,
        max_shift_minutes: request.max_shift_minutes,
        buffer_minutes: rooms.iter().map(|r| r.buffer.num_minutes()).max().unwrap_or(0),
        weights: solver::Weights::default(),
        rooms: instance_rooms,
        bookings: placed.instance,
        engineers,
    };
    // With no room named, the month is worth a reflow only if something in it must move: a
    // session flagged displaced, or one whose engineer cannot work it.
    if request.offline_rooms.is_empty() && !instance.bookings.iter().any(|b| instance.is_affected(b)) {
        return Err(ReflowError::invalid(
            "offline_rooms",
            format!(
                "offline_rooms: name at least one room, e.g. [\"studio-b\"]: nothing else in {} needs a reflow \
                 (no session is displaced, and every engineer can work their sessions)",
                frame.month
            ),
        ));
    }
    let rules = rooms.iter().map(|r| (r.id.clone(), r.rules)).collect();
    Ok(Export {
        instance,
        clock: frame.clock,
        bookings: placed.bookings,
        locks: placed.locks,
        notice_hours: studio.notice.num_hours(),
        rules,
        inactive,
    })
}

/// Refuses a request the export cannot take: an unknown room, or a shift out of range. (A request
/// with no room is checked once the month is read: it needs something else to move.)
fn check_request(request: &ReflowRequest, rooms: &[Room]) -> Result<(), ReflowError> {
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

/// An engineer of the instance, and whether they may still be booked.
struct Staff {
    engineer: solver::Engineer,
    active: bool,
}

/// Every engineer as the instance takes them: their skills, their working hours expanded over the
/// month (`None`: always), and their time off in it.
fn staff(store: &Store, frame: &Frame) -> Result<Vec<Staff>, ReflowError> {
    let tz = frame.clock.tz;
    let first = frame.month.first_day();
    let mut away: HashMap<String, Vec<[i64; 2]>> = HashMap::new();
    for t in store.time_off(None, frame.start, frame.horizon_end)? {
        if let Some(span) = frame.clip(t.from, t.to) {
            away.entry(t.engineer.0).or_default().push(span);
        }
    }
    let mut staff = Vec::new();
    for e in store.engineers()? {
        let Some(person) = store.person(PersonKind::Engineer, e.id.as_str())? else { continue };
        let available = person.profile.hours.map(|hours| {
            let mut open: Vec<[i64; 2]> = hours
                .openings(&tz, first - Duration::days(1), frame.month.next_first_day())
                .into_iter()
                .filter_map(|(o, c)| frame.clip(o, c))
                .collect();
            open.sort_unstable();
            open
        });
        let mut skills = person.profile.skills;
        skills.sort();
        skills.dedup();
        let engineer = solver::Engineer { away: away.remove(e.id.as_str()).unwrap_or_default(), id: e.id.0, skills, available };
        staff.push(Staff { engineer, active: person.profile.active });
    }
    Ok(staff)
}

/// A session that stays where it is (it may not move, and holds its place in the store) keeps its
/// engineer for its whole length, even where their hours or time off would now exclude it (hours
/// changed, or time off given, after it started): the instance lets them work it, so it stays
/// fixed and keeps blocking them, as it does in the store. No other session can use those minutes
/// of theirs anyway, since this one holds them.
fn keep_fixed_sessions(staff: &mut [Staff], placed: &Placed) {
    for b in placed.instance.iter().filter(|b| !b.movable && !placed.flagged.contains(&b.id)) {
        let Some(id) = b.engineer.as_deref() else { continue };
        let Some(g) = staff.iter_mut().map(|s| &mut s.engineer).find(|g| g.id == id) else { continue };
        if g.works_all_of(b.start, b.end) {
            continue;
        }
        g.away = subtract(&g.away, &[[b.start, b.end]]);
        if let Some(open) = &mut g.available {
            open.push([b.start, b.end]);
            open.sort_unstable();
        }
    }
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
    /// The bookings flagged displaced (they hold nothing in the store), by instance id.
    flagged: HashSet<String>,
}

/// Every active booking of the month as the instance takes it, with those of the next month's
/// first hours fixed, so that a late session moved past midnight cannot land on them.
fn instance_bookings(
    store: &Store,
    frame: &Frame,
    rooms: &[solver::Room],
    staff: &[Staff],
    now: DateTime<Utc>,
    notice: Duration,
) -> Result<Placed, ReflowError> {
    let offline_minutes: HashMap<&str, &Vec<[i64; 2]>> = rooms.iter().map(|r| (r.id.as_str(), &r.offline)).collect();
    let engineers: HashMap<&str, &solver::Engineer> = staff.iter().map(|s| (s.engineer.id.as_str(), &s.engineer)).collect();
    let mut placed =
        Placed { instance: Vec::new(), bookings: HashMap::new(), locks: HashMap::new(), pseudo_rooms: Vec::new(), flagged: HashSet::new() };
    for b in store.bookings_between(frame.start, frame.horizon_end)? {
        if b.status == Status::Cancelled {
            continue;
        }
        let start = frame.clock.minute(b.start).max(0);
        // Wall-clock minutes, but never shorter than the real session: across a clock change the
        // two differ, and the longer keeps every rule on the safe side.
        let end = frame.clock.minute(b.end).max(start + (b.end - b.start.max(frame.start)).num_minutes());
        // A booking flagged displaced holds nothing. One of this month is affected: when its
        // engineer cannot work it (time off, hours) it stays in its own room, affected through
        // its engineer as version 2 says; otherwise (its room changed under it) the instance puts
        // it in a room offline all month, and the plan reads it back to its real room. One of
        // another month is left out.
        let room = if b.displaced {
            if !frame.flagged(&b) {
                continue;
            }
            placed.flagged.insert(b.id.0.clone());
            let engineer_out = b
                .engineer
                .as_ref()
                .and_then(|e| engineers.get(e.as_str()))
                .is_some_and(|g| !g.works_all_of(start, end));
            if engineer_out {
                b.room.0.clone()
            } else {
                let pseudo = displaced_room(&b.room);
                if !placed.pseudo_rooms.contains(&pseudo) {
                    placed.pseudo_rooms.push(pseudo.clone());
                }
                pseudo
            }
        } else {
            b.room.0.clone()
        };
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
            engineer_skills: b.engineer_skills.clone(),
            series: b.series.as_ref().map(|s| s.0.clone()),
            movable: lock.is_none(),
        });
        placed.bookings.insert(b.id.clone(), b);
    }
    Ok(placed)
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
            // Version 2 names the engineer; a version 1 answer (none named) keeps the booking's own.
            let to_engineer = match &a.engineer {
                Some(g) => Some(EngineerId(g.clone())),
                None => b.engineer.clone(),
            };
            // A deactivated engineer keeps the sessions they have, and is given no other.
            if let Some(g) = &to_engineer
                && to_engineer != b.engineer
                && self.inactive.contains(g.as_str())
            {
                let reason = format!("the only places found give it to engineer {g}, who is deactivated: move it or re-staff it by hand");
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
                from_engineer: b.engineer.clone(),
                to_engineer,
            });
        }
        for u in &solution.unresolved_bookings {
            let id = BookingId(u.booking.clone());
            // A session that may not move says why, and whose absence affected it, if anyone's.
            let absent = self.absent_engineer(&u.booking).map(|why| format!("; {why}")).unwrap_or_default();
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
            let reason = if self.locks.contains_key(&id) { format!("{reason}{absent}") } else { reason };
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

    /// Why a booking's engineer cannot work it, in the instance's terms ("engineer eng-03 is away
    /// then"), or `None` when they can (or it has none).
    fn absent_engineer(&self, booking: &str) -> Option<String> {
        let b = self.instance.bookings.iter().find(|b| b.id == booking)?;
        let id = b.engineer.as_deref()?;
        let g = self.instance.engineers.iter().find(|g| g.id == id)?;
        if g.is_away_during(b.start, b.end) {
            Some(format!("engineer {id} is away then"))
        } else if !g.works_all_of(b.start, b.end) {
            Some(format!("engineer {id} does not work then"))
        } else {
            None
        }
    }

    /// The bookings the reflow moves, as the instance sees them: in an offline room at an offline
    /// minute, or with an engineer who cannot work them.
    pub fn affected_bookings(&self) -> Vec<&Booking> {
        self.instance
            .bookings
            .iter()
            .filter(|b| self.instance.is_affected(b))
            .filter_map(|b| self.bookings.get(&BookingId(b.id.clone())))
            .collect()
    }
}
