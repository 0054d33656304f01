//! Engineers' time off: added (flagging the engineer's sessions it covers displaced, as a forced
//! room change does), listed, and removed (the sessions it displaced take their places back where
//! they still fit). Working hours live on the engineer's row (`roster.rs`); the rule that a
//! session keeps to both is `rules::check_engineer_works`. Each change is an event of the engineer.

use super::db::{self, params, OptionalExtension};
use super::events::{self, Action, Entity};
use super::read::{self, booking_from_row, BOOKING_COLUMNS, HOLDS_ITS_PLACE};
use super::rules::{self, time_off_from_row};
use super::{clean_text, Result, Store, StoreError, Writer};
use crate::domain::{Booking, EngineerId, TextKind, TimeOff};
use chrono::{DateTime, Duration, Utc};

/// The longest time off in one entry: a year (a longer absence is a deactivation).
pub const MAX_TIME_OFF: Duration = Duration::days(366);

/// Time off as added, and the engineer's sessions it displaced (every one, in start order).
#[derive(Debug, Clone)]
pub struct TimeOffAdded {
    pub time_off: TimeOff,
    pub displaced: Vec<Booking>,
}

/// Time off as removed: the sessions it had displaced that took their places back, and those
/// still displaced (their place was taken meanwhile, or another rule now holds them out).
#[derive(Debug, Clone)]
pub struct TimeOffRemoved {
    pub time_off: TimeOff,
    pub restored: Vec<Booking>,
    pub still_displaced: Vec<Booking>,
}

impl Store {
    /// Time off that overlaps `[from, to)`, of one engineer or of all, in start order.
    pub fn time_off(&self, engineer: Option<&EngineerId>, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<TimeOff>> {
        if let Some(engineer) = engineer
            && !read::exists(self.conn(), "engineers", engineer.as_str())?
        {
            return Err(StoreError::UnknownEngineer(engineer.clone()));
        }
        rules::time_off_between(self.conn(), engineer, from, to)
    }
}

impl Writer<'_> {
    /// Gives an engineer time off over `[from, to)`. It must end after it starts, last at most a
    /// year, end after the studio's clock and no later than its horizon. Their sessions that it
    /// covers and that have not started are flagged displaced (they hold nothing until a reflow or
    /// a person moves them) and returned.
    pub fn add_time_off(&mut self, engineer: &EngineerId, from: DateTime<Utc>, to: DateTime<Utc>, reason: &str) -> Result<TimeOffAdded> {
        if !read::exists(&self.tx, "engineers", engineer.as_str())? {
            return Err(StoreError::UnknownEngineer(engineer.clone()));
        }
        if to <= from {
            return Err(StoreError::invalid("to", "to: time off must end after it starts"));
        }
        if to - from > MAX_TIME_OFF {
            return Err(StoreError::invalid("to", "to: one entry of time off lasts at most 366 days: split it, or deactivate the engineer"));
        }
        let studio = self.studio()?.clone();
        let now = studio.now(Utc::now());
        let horizon = studio.horizon_end(now);
        if to <= now {
            return Err(StoreError::invalid(
                "to",
                format!("to: time off must end after the studio's clock ({}); it ends at {}", studio.tz.format(now), studio.tz.format(to)),
            ));
        }
        if to > horizon {
            return Err(StoreError::invalid(
                "to",
                format!(
                    "to: time off must end within the booking horizon ({}, {} days ahead): end it by then",
                    studio.tz.format(horizon),
                    studio.horizon.num_days()
                ),
            ));
        }
        let reason = clean_text("reason", TextKind::Line, reason)?;
        let reason = if reason.is_empty() { "time off".to_owned() } else { reason };
        let id: i64 = self.tx.query_row(
            "INSERT INTO time_off (engineer_id, from_at, to_at, reason, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
            params![engineer.as_str(), from.timestamp(), to.timestamp(), reason, Utc::now().timestamp()],
            |row| row.get(0),
        )?;
        let time_off = TimeOff { id, engineer: engineer.clone(), from, to, reason };
        let fields = events::time_off_fields(&studio.tz, &time_off);
        self.event(Entity::Engineer, engineer.as_str(), Action::TimeOffAdded, events::diff(None, Some(fields)))?;
        // The sessions it covers that have not started: a session under way stays as it is.
        let covered: Vec<Booking> = {
            let sql = format!(
                "SELECT {BOOKING_COLUMNS} FROM bookings b WHERE engineer_id = ? AND {HOLDS_ITS_PLACE} \
                 AND start_at < ? AND end_at > ? AND start_at >= ? ORDER BY start_at, seq"
            );
            let mut stmt = self.tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![engineer.as_str(), to.timestamp(), from.timestamp(), now.timestamp()], booking_from_row)?;
            rows.map(|r| r.map(|(b, _)| b)).collect::<db::Result<_>>()?
        };
        let displaced = self.displace(&covered)?;
        Ok(TimeOffAdded { time_off, displaced })
    }

    /// Removes time off (the engineer is back early, or it was a mistake). The engineer's
    /// sessions flagged displaced inside it that have not started take their places back where
    /// every rule holds them again; the others stay displaced.
    pub fn remove_time_off(&mut self, id: i64) -> Result<TimeOffRemoved> {
        let time_off = self
            .tx
            .query_row("SELECT id, engineer_id, from_at, to_at, reason FROM time_off WHERE id = ?", [id], time_off_from_row)
            .optional()?
            .ok_or(StoreError::UnknownTimeOff(id))?;
        self.tx.execute("DELETE FROM time_off WHERE id = ?", [id])?;
        let tz = self.studio()?.tz;
        let now = self.now();
        let fields = events::time_off_fields(&tz, &time_off);
        self.event(Entity::Engineer, time_off.engineer.as_str(), Action::TimeOffRemoved, events::diff(Some(fields), None))?;
        let flagged: Vec<Booking> = {
            let sql = format!(
                "SELECT {BOOKING_COLUMNS} FROM bookings WHERE engineer_id = ? AND displaced = 1 AND status != 'cancelled' \
                 AND start_at < ? AND end_at > ? AND start_at >= ? ORDER BY start_at, seq"
            );
            let mut stmt = self.tx.prepare_cached(&sql)?;
            let args = params![time_off.engineer.as_str(), time_off.to.timestamp(), time_off.from.timestamp(), now.timestamp()];
            let rows = stmt.query_map(args, booking_from_row)?;
            rows.map(|r| r.map(|(b, _)| b)).collect::<db::Result<_>>()?
        };
        let (mut restored, mut still_displaced) = (Vec::new(), Vec::new());
        for b in flagged {
            // Checked as if it held its place: every rule, against everything that holds one.
            match rules::check(&self.tx, &tz, &b.session, Some(&b.id)) {
                Ok(()) => {
                    self.tx.execute("UPDATE bookings SET displaced = 0, updated_at = ? WHERE id = ?", params![Utc::now().timestamp(), b.id.as_str()])?;
                    restored.push(self.booking_event(Some(&b), &b.id, Action::Restored)?);
                }
                Err(StoreError::Refused(_) | StoreError::Inactive { .. }) => still_displaced.push(b),
                Err(e) => return Err(e),
            }
        }
        // The engineer's time is theirs again: a client waiting for them may get it.
        let freed = super::waitlist::Freed { room: None, engineer: Some(time_off.engineer.clone()), from: time_off.from, to: time_off.to };
        self.offer_freed(&[freed])?;
        Ok(TimeOffRemoved { time_off, restored, still_displaced })
    }

    /// Flags `bookings` displaced, each an event; returns them as they are now.
    pub(super) fn displace(&mut self, bookings: &[Booking]) -> Result<Vec<Booking>> {
        let mut displaced = Vec::with_capacity(bookings.len());
        for b in bookings {
            self.tx.execute("UPDATE bookings SET displaced = 1, updated_at = ? WHERE id = ?", params![Utc::now().timestamp(), b.id.as_str()])?;
            displaced.push(self.booking_event(Some(b), &b.id, Action::Displaced)?);
        }
        Ok(displaced)
    }
}
