//! The bridge between the store and the solver: a month of the store becomes a REFLOW.md instance
//! (wall-clock minutes from the first of the month), and the solver's answer becomes a plan of real
//! moves, which is applied in one transaction after every booking is checked once more.
//! It owns the conversions; the solver never sees a timestamp and the store never sees a minute.

pub use crate::domain::Move;
use crate::domain::{Actor, BookingId, RoomId, StudioTz};
use crate::store::{NewReflow, ReflowRecord, Store, StoreError, Writer};
use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use studioflow_solver as solver;

mod export;

pub use export::{export_instance, Export};

/// A calendar month, `YYYY-MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Month {
    first: NaiveDate,
}

impl Month {
    /// Reads `YYYY-MM` exactly (four digits, a dash, two digits: no sign, space or other form),
    /// for years 2000 to 2199. The one reader of a month, for the tools and the command line.
    pub fn parse(text: &str) -> Result<Month, ReflowError> {
        let bad = || ReflowError::invalid("month", format!("cannot read the month {text:?}: write it as YYYY-MM, e.g. 2026-09"));
        let bytes = text.as_bytes();
        let shape = bytes.len() == 7
            && bytes[4] == b'-'
            && bytes.iter().enumerate().all(|(i, b)| i == 4 || b.is_ascii_digit());
        if !shape {
            return Err(bad());
        }
        let (year, month): (i32, u32) = (text[..4].parse().map_err(|_| bad())?, text[5..].parse().map_err(|_| bad())?);
        if !(1..=12).contains(&month) {
            return Err(bad());
        }
        if !crate::domain::YEARS.contains(&year) {
            return Err(ReflowError::invalid("month", format!("the month {text} is out of range: use a year from 2000 to 2199")));
        }
        let first = NaiveDate::from_ymd_opt(year, month, 1).ok_or_else(bad)?;
        Ok(Month { first })
    }

    pub fn first_day(&self) -> NaiveDate {
        self.first
    }

    /// The first day of the next month.
    pub fn next_first_day(&self) -> NaiveDate {
        self.first.checked_add_months(chrono::Months::new(1)).expect("years stop at 2199")
    }

    pub fn days(&self) -> i64 {
        (self.next_first_day() - self.first).num_days()
    }

    /// The month as instants: from midnight on its first day to midnight on the next month's.
    pub fn bounds(&self, tz: &StudioTz) -> (DateTime<Utc>, DateTime<Utc>) {
        (tz.start_of_day(self.first), tz.start_of_day(self.next_first_day()))
    }
}

impl fmt::Display for Month {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.first.year(), self.first.month())
    }
}

/// What to reflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReflowRequest {
    #[serde(serialize_with = "as_text", deserialize_with = "from_text")]
    pub month: Month,
    pub offline_rooms: Vec<RoomId>,
    pub max_shift_minutes: i64,
}

fn as_text<S: serde::Serializer>(month: &Month, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(month)
}

fn from_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Month, D::Error> {
    let text = String::deserialize(d)?;
    Month::parse(&text).map_err(serde::de::Error::custom)
}

/// The default largest shift of a booking's start, in minutes.
pub const DEFAULT_MAX_SHIFT: i64 = 120;

/// Why a reflow could not be planned or applied.
#[derive(Debug, thiserror::Error)]
pub enum ReflowError {
    /// The request is wrong in `field`; the message says what to change.
    #[error("{message}")]
    Invalid { field: &'static str, message: String },
    /// Applying needs a stored offline window for every listed room in the month.
    #[error(
        "{room} has no offline window in {month}: take it offline for the days it is out first, or preview the \
         month's reflow without applying it"
    )]
    NoWindow { room: RoomId, month: Month },
    /// The month as exported breaks the reflow contract (a studio whose data the solver cannot take).
    #[error("the month cannot be reflowed: {0}")]
    Unsolvable(String),
    /// The month changed since the plan was made.
    #[error("the month changed since this plan was made ({0}): run the reflow again on the current bookings")]
    Stale(Stale),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ReflowError {
    /// The error of a transaction that applied a plan ([`record_plan`], [`apply_recorded`]): a
    /// booking that moved, went or met a new neighbour since the plan was made means the month
    /// changed, and the plan is stale.
    pub fn applying(e: StoreError) -> ReflowError {
        match e {
            StoreError::Stale(ids) => ReflowError::Stale(Stale::Changed(ids)),
            StoreError::UnknownBooking(id) => ReflowError::Stale(Stale::Changed(vec![id])),
            StoreError::Refused(why) => ReflowError::Stale(Stale::Clash(why)),
            other => ReflowError::Store(other),
        }
    }

    /// A request wrong in `field`.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> ReflowError {
        ReflowError::Invalid { field, message: message.into() }
    }

    /// Whether the failure is ours rather than the caller's.
    pub fn is_ours(&self) -> bool {
        matches!(self, ReflowError::Store(e) if e.is_ours())
    }

    /// Whether the failure is a lost database connection ([`StoreError::is_transient`]).
    pub fn is_transient(&self) -> bool {
        matches!(self, ReflowError::Store(e) if e.is_transient())
    }
}

/// What changed under a plan.
#[derive(Debug, thiserror::Error)]
pub enum Stale {
    /// These bookings moved, changed or were cancelled.
    #[error("{} moved or changed", .0.iter().map(BookingId::as_str).collect::<Vec<_>>().join(", "))]
    Changed(Vec<BookingId>),
    /// A moved booking would now clash with what was booked since.
    #[error("{0}")]
    Clash(crate::domain::Refusal),
}

/// Refuses to move bookings out of a room that has no offline window in the month. The contract
/// reads such a room as offline the whole month, which is right for a preview (`dry_run`) but
/// too easy to apply by mistake (a wrong month would move every session of the room).
pub fn require_windows(store: &Store, request: &ReflowRequest) -> Result<(), ReflowError> {
    let (from, to) = request.month.bounds(&store.studio()?.tz);
    for room in &request.offline_rooms {
        if store.offline_windows(Some(room), from, to)?.is_empty() {
            return Err(ReflowError::NoWindow { room: room.clone(), month: request.month });
        }
    }
    Ok(())
}

/// A booking the reflow could not place, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unplaced {
    pub booking: BookingId,
    pub reason: String,
}

/// A solved reflow, before or after it is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflowPlan {
    pub request: ReflowRequest,
    pub affected: usize,
    pub moves: Vec<Move>,
    pub unresolved: Vec<Unplaced>,
    pub cost: i64,
    /// The solver's lower bound on the cost; equal to `cost` when the plan is proven optimal.
    pub lower_bound: i64,
    pub proven_optimal: bool,
}

/// How the solver should run.
pub type SolveOptions = solver::Options;

/// Exports the month, solves it, and reads the answer back as real moves.
pub fn plan_reflow(store: &Store, request: &ReflowRequest, options: &SolveOptions) -> Result<ReflowPlan, ReflowError> {
    export_instance(store, request)?.solve(request, options)
}

/// Records a plan and, unless `dry_run`, applies its moves, all in one transaction. A plan whose
/// bookings have changed since it was made is refused whole. Returns the reflow's id.
pub fn apply_plan(store: &mut Store, plan: &ReflowPlan, dry_run: bool) -> Result<String, ReflowError> {
    store.write_as(&Actor::default(), |w| record_plan(w, plan, dry_run)).map_err(ReflowError::applying)
}

/// Records a plan and, unless `record_only`, applies its moves, in the caller's transaction (a
/// task ends itself in the same one, so that moves and state commit together or not at all).
/// Returns the reflow's id. Its error, read by [`ReflowError::applying`], says whether the month
/// changed since the plan was made.
pub fn record_plan(w: &mut Writer<'_>, plan: &ReflowPlan, record_only: bool) -> Result<String, StoreError> {
    let id = w.record_reflow(&plan.to_record(!record_only))?;
    if !record_only {
        apply_moves_checked(w, &id, &plan.moves)?;
    }
    Ok(id)
}

/// Applies a recorded, not yet applied plan in the caller's transaction, after the same check.
pub fn apply_recorded(w: &mut Writer<'_>, reflow_id: &str) -> Result<(), StoreError> {
    let moves: Vec<Move> = w.reflow_moves(reflow_id)?.into_iter().map(|m| m.moved).collect();
    apply_moves_checked(w, reflow_id, &moves)?;
    w.mark_reflow_applied(reflow_id)
}

/// Checks that every booking is still where, and with whom, the plan found it, then moves them all.
fn apply_moves_checked(w: &mut Writer<'_>, reflow_id: &str, moves: &[Move]) -> Result<(), StoreError> {
    let mut changed = Vec::new();
    for m in moves {
        let now = w.booking(&m.booking)?;
        // A move recorded before moves named engineers (both NULL) says nothing of the engineer.
        let knows_engineer = m.from_engineer.is_some() || m.changes_engineer();
        let unchanged = now.as_ref().is_some_and(|b| {
            b.is_active()
                && b.room == m.from_room
                && b.start == m.from_start
                && b.end == m.from_end
                && (!knows_engineer || b.engineer == m.from_engineer)
        });
        if !unchanged {
            changed.push(m.booking.clone());
        }
    }
    if !changed.is_empty() {
        return Err(StoreError::Stale(changed));
    }
    w.apply_reflow_moves(reflow_id, moves)
}


/// One line on what a reflow did or would do: "Moved 138 bookings; 4 unresolved. Cost 4310
/// (within 0.80 % of optimal)."; the task's final status message and the tool's text say the same.
pub fn summary(record: &ReflowRecord) -> String {
    if record.affected == 0 {
        return format!("No booking sits in an offline room in {}, and no engineer is away from one: nothing to move.", record.month);
    }
    let verb = if record.applied { "Moved" } else { "Would move" };
    let moved = record.moves.len();
    let quality = match record.lower_bound {
        Some(bound) => format!(" Cost {} ({}).", record.cost, solver::quality(record.cost, bound)),
        None => String::new(),
    };
    // Said only when some session changes engineer, so a reflow of rooms alone reads as before.
    let staffed = match record.moves.iter().filter(|m| m.moved.changes_engineer()).count() {
        0 => String::new(),
        1 => ", 1 with another engineer".to_owned(),
        n => format!(", {n} with another engineer"),
    };
    // Said only when there is one: a studio without prices reads as before.
    let absorbed = match record.absorbed {
        0 => String::new(),
        n => format!(" Price difference absorbed: {n} (minor units; each moved booking keeps its price)."),
    };
    format!("{verb} {moved} {}{staffed}; {} unresolved.{quality}{absorbed}", if moved == 1 { "booking" } else { "bookings" }, record.unresolved.len())
}

impl ReflowPlan {
    fn to_record(&self, applied: bool) -> NewReflow<'_> {
        NewReflow {
            month: self.request.month.to_string(),
            request: serde_json::to_value(&self.request).expect("a request always serialises"),
            applied,
            affected: self.affected,
            cost: self.cost,
            lower_bound: self.lower_bound,
            moves: &self.moves,
            unresolved: self.unresolved.iter().map(|u| (&u.booking, u.reason.as_str())).collect(),
        }
    }
}

impl crate::error::Blame for ReflowError {
    fn is_ours(&self) -> bool {
        ReflowError::is_ours(self)
    }

    fn is_transient(&self) -> bool {
        ReflowError::is_transient(self)
    }
}
