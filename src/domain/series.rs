//! Recurring sessions: an RFC 5545 RRULE expanded in the studio's local time by the `rrule` crate.
//! The rule runs on wall-clock times, so a weekly 19:00 session stays at 19:00 across a clock change;
//! each occurrence is then placed on the real timeline, and one the clock skips or repeats is an error.

use super::time::{StudioTz, TimeError};
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use rrule::{RRule, Unvalidated};

/// The most occurrences one series may have: a year of daily sessions.
pub const MAX_OCCURRENCES: usize = 366;

/// Why a recurrence rule cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeriesError {
    #[error("cannot read the recurrence rule {rule:?}: {detail} (example: FREQ=WEEKLY;BYDAY=TU;COUNT=8)")]
    Unreadable { rule: String, detail: String },
    #[error("the recurrence rule {0:?} never ends: add COUNT=n or UNTIL=YYYYMMDDTHHMMSSZ")]
    Endless(String),
    #[error("the recurrence rule {rule:?} gives more than {max} sessions: lower COUNT or bring UNTIL closer")]
    TooMany { rule: String, max: usize },
    #[error("the recurrence rule {0:?} gives no session at all: check BYDAY and UNTIL against the start")]
    Empty(String),
    #[error("{} occurrence(s) fall on a time the clock skips or repeats: {}", .0.len(), list(.0))]
    BadLocalTimes(Vec<TimeError>),
}

fn list(errors: &[TimeError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// The start instants of a series whose first session starts at local time `first`.
pub fn expand_series(tz: &StudioTz, rule: &str, first: NaiveDateTime) -> Result<Vec<DateTime<Utc>>, SeriesError> {
    let text = rule.trim();
    let body = text.strip_prefix("RRULE:").unwrap_or(text);
    let unreadable = |detail: String| SeriesError::Unreadable { rule: text.to_owned(), detail };
    let mut parsed: RRule<Unvalidated> = body.parse().map_err(|e: rrule::RRuleError| unreadable(e.to_string()))?;

    // Expand on "floating" wall-clock time: the rule's times are naive local times written as UTC,
    // so the expander never shifts them for a clock change. UNTIL is a real instant and moves with it.
    let floating = |t: NaiveDateTime| rrule::Tz::UTC.from_utc_datetime(&t);
    if let Some(until) = parsed.get_until().copied() {
        let until_local = until.with_timezone(&tz.0).naive_local();
        parsed = parsed.until(floating(until_local));
    } else if parsed.get_count().is_none() {
        return Err(SeriesError::Endless(text.to_owned()));
    }
    let set = parsed.build(floating(first)).map_err(|e| unreadable(e.to_string()))?;
    let result = set.all(MAX_OCCURRENCES as u16 + 1);
    if result.dates.len() > MAX_OCCURRENCES {
        return Err(SeriesError::TooMany { rule: text.to_owned(), max: MAX_OCCURRENCES });
    }
    if result.dates.is_empty() {
        return Err(SeriesError::Empty(text.to_owned()));
    }

    let mut starts = Vec::with_capacity(result.dates.len());
    let mut errors = Vec::new();
    for date in result.dates {
        match tz.resolve(date.naive_utc()) {
            Ok(t) => starts.push(t),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(starts) } else { Err(SeriesError::BadLocalTimes(errors)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn london() -> StudioTz {
        "Europe/London".parse().unwrap()
    }

    fn local(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M").unwrap()
    }

    #[test]
    fn weekly_session_keeps_its_local_time_across_the_october_change() {
        let tz = london();
        let starts = expand_series(&tz, "FREQ=WEEKLY;COUNT=4", local("2026-10-13T19:00")).unwrap();
        let shown: Vec<String> = starts.iter().map(|t| tz.format(*t)).collect();
        assert_eq!(
            shown,
            [
                "2026-10-13T19:00:00+01:00",
                "2026-10-20T19:00:00+01:00",
                "2026-10-27T19:00:00+00:00",
                "2026-11-03T19:00:00+00:00",
            ]
        );
        // Seven days apart on the wall clock, but 169 real hours across the change.
        assert_eq!((starts[2] - starts[1]).num_hours(), 169);
    }

    #[test]
    fn until_is_a_real_instant() {
        let tz = london();
        // 18:00Z is 19:00 local in October: the session of the 20th is the last one.
        let starts = expand_series(&tz, "RRULE:FREQ=WEEKLY;UNTIL=20261020T180000Z", local("2026-10-06T19:00")).unwrap();
        assert_eq!(starts.len(), 3);
        let starts = expand_series(&tz, "FREQ=WEEKLY;UNTIL=20261020T175959Z", local("2026-10-06T19:00")).unwrap();
        assert_eq!(starts.len(), 2);
    }

    #[test]
    fn skipped_and_repeated_occurrences_are_errors() {
        let tz = london();
        let err = expand_series(&tz, "FREQ=WEEKLY;COUNT=3", local("2026-10-18T01:30")).unwrap_err();
        assert!(matches!(&err, SeriesError::BadLocalTimes(e) if e.len() == 1), "{err}");
        assert!(err.to_string().contains("2026-10-25 01:30:00"), "{err}");
        let err = expand_series(&tz, "FREQ=WEEKLY;COUNT=3", local("2027-03-21T01:15")).unwrap_err();
        assert!(err.to_string().contains("clocks go forward"), "{err}");
    }

    #[test]
    fn refuses_bad_rules() {
        let tz = london();
        let at = local("2026-09-01T19:00");
        assert!(matches!(expand_series(&tz, "FREQ=WEEKLY", at), Err(SeriesError::Endless(_))));
        assert!(matches!(expand_series(&tz, "FREQ=FORTNIGHTLY;COUNT=2", at), Err(SeriesError::Unreadable { .. })));
        assert!(matches!(expand_series(&tz, "FREQ=DAILY;COUNT=400", at), Err(SeriesError::TooMany { .. })));
        let err = expand_series(&tz, "FREQ=WEEKLY;UNTIL=20260801T000000Z", at).unwrap_err();
        assert!(err.to_string().to_lowercase().contains("until"), "{err}");
        let err = expand_series(&tz, "FREQ=WEEKLY;BYMONTH=2;UNTIL=20261201T000000Z", at).unwrap_err();
        assert!(matches!(err, SeriesError::Empty(_)), "{err}");
    }
}
