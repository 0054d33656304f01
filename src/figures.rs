//! The month in figures: per room, the hours it is open and booked, its utilisation and revenue;
//! per engineer, the hours booked; the deposits due and paid; and the month's applied reflows
//! with what they moved, left unresolved and absorbed. Read from the store, computed here, and
//! written out in one shape that the `studio_report` tool answers and the view shows alike. No
//! SQL here, and no protocol.

use crate::domain::{free_windows, Booking, DayOffsets, Span, Status, StudioTz};
use crate::reflow::Month;
use crate::store::{Store, StoreError};
use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::Serialize;

/// The month in figures. Money is in minor units of `currency`; hours are decimal hours.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MonthFigures {
    /// YYYY-MM.
    pub month: String,
    /// ISO 4217; every amount is an integer in its minor unit.
    pub currency: String,
    /// Every room, by id.
    pub rooms: Vec<RoomFigures>,
    /// Every engineer, by id.
    pub engineers: Vec<EngineerFigures>,
    pub deposits: DepositFigures,
    /// The month's applied reflows (undone ones too), oldest first.
    pub reflows: Vec<ReflowFigures>,
    /// The rooms' revenue together.
    pub revenue: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RoomFigures {
    pub room: String,
    /// Its opening hours in the month, less its offline windows (none for a retired room).
    pub open_hours: f64,
    /// The hours of the month its sessions hold (confirmed and tentative; not cancelled, not
    /// displaced), within its open hours or not.
    pub booked_hours: f64,
    /// booked_hours / open_hours, in per cent to one decimal (0 when it is never open).
    pub utilisation_percent: f64,
    /// The prices of its confirmed sessions that start in the month (a tentative hold counts
    /// once it is confirmed).
    pub revenue: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EngineerFigures {
    pub engineer: String,
    pub name: String,
    /// The hours of the month of the sessions they are on (as rooms' booked hours count them).
    pub booked_hours: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct DepositFigures {
    /// The deposits owed by the month's sessions (not cancelled) that were booked on hold.
    pub due: i64,
    /// What of those deposits is paid: each session's paid, up to its deposit.
    pub paid: i64,
    /// Everything paid for the month's sessions, deposits and the rest.
    pub received: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReflowFigures {
    pub reflow_id: String,
    pub moved: u32,
    pub unresolved: u32,
    /// The price difference its moves absorbed (each moved booking keeps its price).
    pub absorbed: i64,
    /// Whether it was undone since.
    pub undone: bool,
}

/// Minutes as decimal hours (exact for whole minutes to two decimals of an hour's fractions).
fn hours(minutes: i64) -> f64 {
    minutes as f64 / 60.0
}

/// `part / whole` in per cent, to one decimal.
fn percent(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        return 0.0;
    }
    // Integers to the last step, half up: per mille first, then one division by ten.
    let per_mille = (part * 1000 * 2 + whole) / (whole * 2);
    per_mille as f64 / 10.0
}

fn minutes_within(span: Span, (from, to): (DateTime<Utc>, DateTime<Utc>)) -> i64 {
    let (a, b) = (span.0.max(from), span.1.min(to));
    if b > a { (b - a).num_minutes() } else { 0 }
}

/// Whether a booking holds its place: not cancelled, not flagged displaced, and not in an offline
/// window of its room (the store's rule, read from the windows).
fn holds_its_place(b: &Booking, windows: &[crate::domain::OfflineWindow]) -> bool {
    b.is_active() && !b.displaced && !windows.iter().any(|w| w.room == b.room && w.from < b.end && b.start < w.to)
}

/// The figures of `month`, as the store holds it now.
pub fn month_figures(store: &Store, month: Month) -> Result<MonthFigures, StoreError> {
    let tz: StudioTz = store.studio()?.tz;
    let bounds = month.bounds(&tz);
    let (from, to) = bounds;
    let windows = store.offline_windows(None, from, to)?;
    // Sessions that begin in the month before may run into it: read a day earlier.
    let bookings = store.bookings_between(from - Duration::days(1), to)?;
    let holding: Vec<&Booking> = bookings.iter().filter(|b| holds_its_place(b, &windows)).collect();
    let in_month: Vec<&Booking> = bookings.iter().filter(|b| b.is_active() && b.start >= from && b.start < to).collect();

    let mut rooms = Vec::new();
    let mut revenue = 0;
    let first = month.first_day().pred_opt().unwrap_or(month.first_day());
    let last = month.next_first_day().pred_opt().unwrap_or(month.first_day());
    // Every room's hours over the same days (an opening closes on its day or the next).
    let days = DayOffsets::new(&tz, first, month.next_first_day());
    for room in store.rooms()?.iter() {
        let openings: Vec<Span> = if room.active {
            room.hours.openings_over(&days, first, last).into_iter().map(|(a, b)| (a.max(from), b.min(to))).filter(|(a, b)| b > a).collect()
        } else {
            Vec::new()
        };
        let blocked: Vec<Span> = windows.iter().filter(|w| w.room == room.id).map(|w| (w.from, w.to)).collect();
        let open: i64 = free_windows(&openings, blocked, Duration::zero()).iter().map(|&(a, b)| (b - a).num_minutes()).sum();
        let booked: i64 = holding.iter().filter(|b| b.room == room.id).map(|b| minutes_within((b.start, b.end), bounds)).sum();
        let room_revenue: i64 = in_month
            .iter()
            .filter(|b| b.room == room.id && b.status == Status::Confirmed)
            .filter_map(|b| b.money.price)
            .sum();
        revenue += room_revenue;
        rooms.push(RoomFigures {
            room: room.id.0.clone(),
            open_hours: hours(open),
            booked_hours: hours(booked),
            utilisation_percent: percent(booked, open),
            revenue: room_revenue,
        });
    }
    let engineers = store
        .engineers()?
        .into_iter()
        .map(|e| {
            let booked: i64 = holding.iter().filter(|b| b.engineer.as_ref() == Some(&e.id)).map(|b| minutes_within((b.start, b.end), bounds)).sum();
            EngineerFigures { engineer: e.id.0.clone(), name: e.name.clone(), booked_hours: hours(booked) }
        })
        .collect();
    let mut deposits = DepositFigures::default();
    for b in &in_month {
        deposits.due += b.money.deposit_due;
        deposits.paid += b.money.paid.min(b.money.deposit_due);
        deposits.received += b.money.paid;
    }
    let reflows = store
        .applied_reflows(&month.to_string())?
        .into_iter()
        .map(|r| ReflowFigures { reflow_id: r.id, moved: r.moves.len() as u32, unresolved: r.unresolved.len() as u32, absorbed: r.absorbed, undone: r.undone })
        .collect();
    Ok(MonthFigures { month: month.to_string(), currency: store.settings()?.currency, rooms, engineers, deposits, reflows, revenue })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_is_rounded_half_up_to_one_decimal_in_integers() {
        assert_eq!(percent(1, 3), 33.3);
        assert_eq!(percent(2, 3), 66.7);
        assert_eq!(percent(1, 8), 12.5);
        assert_eq!(percent(0, 0), 0.0);
        assert_eq!(percent(5, 5), 100.0);
    }
}
