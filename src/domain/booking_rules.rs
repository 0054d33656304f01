//! A room's booking rules: how short and how long a session may be, how much notice a new one
//! needs, how far ahead it may be booked, and the grid its starts keep (every 30 minutes from
//! midnight, say). Pure: "now" and the zone are passed in. Which rule holds on which write is
//! the store's to say (a reflow's move keeps only the grid).

use super::time::StudioTz;
use chrono::{DateTime, Duration, NaiveTime, Utc};

/// The longest notice and the longest grid step a room may ask for, in minutes.
pub const MAX_LEAD_MINUTES: i64 = 60 * 24 * 366;
/// The furthest ahead a room may take bookings, in days (the studio's horizon still holds).
pub const MAX_ADVANCE_DAYS: i64 = 3650;

/// A room's booking rules; each `None` is no rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BookingRules {
    /// The shortest session, in minutes.
    pub min_minutes: Option<i64>,
    /// The longest session, in minutes.
    pub max_minutes: Option<i64>,
    /// How long before its start a new session must be booked, in minutes.
    pub lead_minutes: Option<i64>,
    /// How many days ahead of now a new session may start at the latest.
    pub max_advance_days: Option<i64>,
    /// Sessions start on this grid of minutes, counted from local midnight (it divides a day).
    pub start_step_minutes: Option<i64>,
}

impl BookingRules {
    /// Refuses rules that cannot be, naming the field and what to change.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let range = |field: &'static str, value: Option<i64>, min: i64, max: i64| match value {
            Some(v) if !(min..=max).contains(&v) => Err((field, format!("{field} must be {min} to {max}"))),
            _ => Ok(()),
        };
        range("min_minutes", self.min_minutes, 1, 1440)?;
        range("max_minutes", self.max_minutes, 1, 1440)?;
        range("lead_minutes", self.lead_minutes, 0, MAX_LEAD_MINUTES)?;
        range("max_advance_days", self.max_advance_days, 1, MAX_ADVANCE_DAYS)?;
        range("start_step_minutes", self.start_step_minutes, 1, 1440)?;
        if let (Some(min), Some(max)) = (self.min_minutes, self.max_minutes)
            && min > max
        {
            return Err(("max_minutes", format!("max_minutes ({max}) is below min_minutes ({min}): raise it, or lower min_minutes")));
        }
        if let Some(step) = self.start_step_minutes
            && 1440 % step != 0
        {
            return Err((
                "start_step_minutes",
                format!("start_step_minutes {step} does not divide a day into equal steps: use e.g. 15, 30, 60 or 180"),
            ));
        }
        Ok(())
    }

    /// Whether `start` lies on the grid of starts (always, without one).
    pub fn on_step(&self, tz: &StudioTz, start: DateTime<Utc>) -> bool {
        let Some(step) = self.start_step_minutes else { return true };
        let local = tz.local(start);
        let minutes = (local.time() - NaiveTime::MIN).num_seconds();
        minutes % (step * 60) == 0
    }

    /// The first start at or after `t` on the grid of starts (`t` itself without one).
    pub fn next_step(&self, tz: &StudioTz, t: DateTime<Utc>) -> DateTime<Utc> {
        let Some(step) = self.start_step_minutes else { return t };
        let local = tz.local(t);
        let seconds = (local.time() - NaiveTime::MIN).num_seconds();
        let step = step * 60;
        let up = (step - seconds.rem_euclid(step)) % step;
        // Adding in real time is right but across a clock change, where the grid is read again.
        let mut next = t + Duration::seconds(up);
        for _ in 0..4 {
            if self.on_step(tz, next) {
                return next;
            }
            let s = (tz.local(next).time() - NaiveTime::MIN).num_seconds();
            next += Duration::seconds((step - s.rem_euclid(step)) % step).max(Duration::seconds(60));
        }
        next
    }

    /// Every rule as `(name, value)` for the ones set, in a fixed order.
    pub fn set(&self) -> Vec<(&'static str, i64)> {
        [
            ("min_minutes", self.min_minutes),
            ("max_minutes", self.max_minutes),
            ("lead_minutes", self.lead_minutes),
            ("max_advance_days", self.max_advance_days),
            ("start_step_minutes", self.start_step_minutes),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// A change to a room's rules: each `None` leaves a rule as it is, `Some(None)` takes it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BookingRulesEdit {
    pub min_minutes: Option<Option<i64>>,
    pub max_minutes: Option<Option<i64>>,
    pub lead_minutes: Option<Option<i64>>,
    pub max_advance_days: Option<Option<i64>>,
    pub start_step_minutes: Option<Option<i64>>,
}

impl BookingRulesEdit {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == BookingRulesEdit::default()
    }

    /// `rules` with this change made.
    pub fn applied(&self, rules: BookingRules) -> BookingRules {
        BookingRules {
            min_minutes: self.min_minutes.unwrap_or(rules.min_minutes),
            max_minutes: self.max_minutes.unwrap_or(rules.max_minutes),
            lead_minutes: self.lead_minutes.unwrap_or(rules.lead_minutes),
            max_advance_days: self.max_advance_days.unwrap_or(rules.max_advance_days),
            start_step_minutes: self.start_step_minutes.unwrap_or(rules.start_step_minutes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_counts_from_local_midnight() {
        let tz: StudioTz = "Europe/London".parse().unwrap();
        let rules = BookingRules { start_step_minutes: Some(30), ..BookingRules::default() };
        let t = |s: &str| tz.parse(s).unwrap();
        assert!(rules.on_step(&tz, t("2026-09-07T10:30")));
        assert!(!rules.on_step(&tz, t("2026-09-07T10:15")));
        assert_eq!(rules.next_step(&tz, t("2026-09-07T10:01")), t("2026-09-07T10:30"));
        assert_eq!(rules.next_step(&tz, t("2026-09-07T10:30")), t("2026-09-07T10:30"));
        let three = BookingRules { start_step_minutes: Some(180), ..BookingRules::default() };
        assert_eq!(three.next_step(&tz, t("2026-09-07T10:00")), t("2026-09-07T12:00"));
        assert!(BookingRules { start_step_minutes: Some(7), ..BookingRules::default() }.check().is_err());
        assert!(BookingRules { min_minutes: Some(180), max_minutes: Some(60), ..BookingRules::default() }.check().is_err());
        assert!(BookingRules { lead_minutes: Some(-1), ..BookingRules::default() }.check().is_err());
        assert!(three.check().is_ok());
    }
}
