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
    /// Some sessions fall after the booking horizon. `last` is the last session's local date when
    /// the rule could be followed that far, and else the latest one it reached.
    #[error(
        "the recurrence rule {rule:?} gives {count} sessions, the last {}{last}, and {beyond} of them fall after \
         the booking horizon ({horizon}): end it by then (COUNT={within}, or an UNTIL before it)",
        if *.last_known { "on " } else { "after " }
    )]
    BeyondHorizon { rule: String, count: usize, last: String, last_known: bool, beyond: usize, within: usize, horizon: String },
    /// COUNT asks for more sessions than the rule gives before the calendar runs out: the rule
    /// would be cut short, so it is refused rather than booked in part.
    #[error(
        "the recurrence rule {rule:?} asks for COUNT={count} sessions but gives only {got} (the last on {last}) \
         before the calendar runs out: lower COUNT to {got} or change the rule"
    )]
    Short { rule: String, count: usize, got: usize, last: String },
}

fn list(errors: &[TimeError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// The start instants of a series whose first session starts at local time `first`, every one of
/// them no later than `horizon` (the booking horizon). A COUNT is honoured exactly or refused.
pub fn expand_series(
    tz: &StudioTz,
    rule: &str,
    first: NaiveDateTime,
    horizon: DateTime<Utc>,
) -> Result<Vec<DateTime<Utc>>, SeriesError> {
    let text = rule.trim();
    let body = text.strip_prefix("RRULE:").unwrap_or(text);
    let unreadable = |detail: String| SeriesError::Unreadable { rule: text.to_owned(), detail };
    let mut parsed: RRule<Unvalidated> = body.parse().map_err(|e: rrule::RRuleError| unreadable(e.to_string()))?;

    // Expand on "floating" wall-clock time: the rule's times are naive local times written as UTC,
    // so the expander never shifts them for a clock change. UNTIL is a real instant and moves with it.
    let floating = |t: NaiveDateTime| rrule::Tz::UTC.from_utc_datetime(&t);
    let count = parsed.get_count().map(|c| c as usize);
    if count.is_some() && parsed.get_until().is_some() {
        // RFC 5545: "COUNT and UNTIL MUST NOT occur in the same recur"; the crate would take both.
        return Err(unreadable("COUNT and UNTIL cannot both be given: keep one".into()));
    }
    if let Some(until) = parsed.get_until().copied() {
        let until_local = until.with_timezone(&tz.0).naive_local();
        parsed = parsed.until(floating(until_local));
    } else if count.is_none() {
        return Err(SeriesError::Endless(text.to_owned()));
    }
    if count.is_some_and(|c| c > MAX_OCCURRENCES) {
        return Err(SeriesError::TooMany { rule: text.to_owned(), max: MAX_OCCURRENCES });
    }
    let set = parsed.build(floating(first)).map_err(|e| unreadable(e.to_string()))?;
    // `all` keeps the crate's loop limit, and stops by itself at the crate's last year (9999): a
    // rule can end early for either reason, which is why a COUNT is checked against what came back.
    let result = set.all(MAX_OCCURRENCES as u16 + 1);
    let dates: Vec<NaiveDateTime> = result.dates.iter().map(|d| d.naive_utc()).collect();
    if dates.len() > MAX_OCCURRENCES {
        return Err(SeriesError::TooMany { rule: text.to_owned(), max: MAX_OCCURRENCES });
    }
    let Some(&last) = dates.last() else { return Err(SeriesError::Empty(text.to_owned())) };
    let shown = |t: NaiveDateTime| t.format("%Y-%m-%d %H:%M").to_string();

    // Compared on the wall clock, as the rule runs: at worst an hour off at a clock change.
    let horizon_local = tz.local(horizon);
    let within = dates.iter().take_while(|d| **d <= horizon_local).count();
    if within < dates.len() {
        let known = count.is_none_or(|c| c == dates.len());
        return Err(SeriesError::BeyondHorizon {
            rule: text.to_owned(),
            count: count.unwrap_or(dates.len()),
            last: shown(last),
            last_known: known,
            beyond: count.unwrap_or(dates.len()) - within,
            within,
            horizon: tz.format(horizon),
        });
    }
    if let Some(count) = count
        && dates.len() < count {
            return Err(SeriesError::Short { rule: text.to_owned(), count, got: dates.len(), last: shown(last) });
        }

    let mut starts = Vec::with_capacity(dates.len());
    let mut errors = Vec::new();
    for date in dates {
        match tz.resolve(date) {
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

    /// Two years after the test studio's clock (2026-08-31 09:00 London).
    fn horizon() -> DateTime<Utc> {
        london().parse("2028-08-30T09:00").unwrap()
    }

    fn expand(tz: &StudioTz, rule: &str, first: NaiveDateTime) -> Result<Vec<DateTime<Utc>>, SeriesError> {
        expand_series(tz, rule, first, horizon())
    }

    #[test]
    fn weekly_session_keeps_its_local_time_across_the_october_change() {
        let tz = london();
        let starts = expand(&tz, "FREQ=WEEKLY;COUNT=4", local("2026-10-13T19:00")).unwrap();
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
        let starts = expand(&tz, "RRULE:FREQ=WEEKLY;UNTIL=20261020T180000Z", local("2026-10-06T19:00")).unwrap();
        assert_eq!(starts.len(), 3);
        let starts = expand(&tz, "FREQ=WEEKLY;UNTIL=20261020T175959Z", local("2026-10-06T19:00")).unwrap();
        assert_eq!(starts.len(), 2);
    }

    #[test]
    fn skipped_and_repeated_occurrences_are_errors() {
        let tz = london();
        let err = expand(&tz, "FREQ=WEEKLY;COUNT=3", local("2026-10-18T01:30")).unwrap_err();
        assert!(matches!(&err, SeriesError::BadLocalTimes(e) if e.len() == 1), "{err}");
        assert!(err.to_string().contains("2026-10-25 01:30:00"), "{err}");
        let err = expand(&tz, "FREQ=WEEKLY;COUNT=3", local("2027-03-21T01:15")).unwrap_err();
        assert!(err.to_string().contains("clocks go forward"), "{err}");
    }

    #[test]
    fn refuses_bad_rules() {
        let tz = london();
        let at = local("2026-09-01T19:00");
        assert!(matches!(expand(&tz, "FREQ=WEEKLY", at), Err(SeriesError::Endless(_))));
        assert!(matches!(expand(&tz, "FREQ=FORTNIGHTLY;COUNT=2", at), Err(SeriesError::Unreadable { .. })));
        assert!(matches!(expand(&tz, "FREQ=DAILY;COUNT=400", at), Err(SeriesError::TooMany { .. })));
        let err = expand(&tz, "FREQ=WEEKLY;UNTIL=20260801T000000Z", at).unwrap_err();
        assert!(err.to_string().to_lowercase().contains("until"), "{err}");
        let err = expand(&tz, "FREQ=WEEKLY;COUNT=3;UNTIL=20270101T000000Z", at).unwrap_err();
        assert!(err.to_string().contains("COUNT and UNTIL cannot both be given"), "{err}");
        let err = expand(&tz, "FREQ=WEEKLY;BYMONTH=2;UNTIL=20261201T000000Z", at).unwrap_err();
        assert!(matches!(err, SeriesError::Empty(_)), "{err}");
    }

    #[test]
    fn a_series_beyond_the_horizon_is_refused_with_its_count_and_last_date() {
        let tz = london();
        let at = local("2026-09-03T19:00");
        // The crate stops at its year 9999 after 20 sessions: the 30th is unknown, and said so.
        let err = expand(&tz, "FREQ=YEARLY;INTERVAL=400;COUNT=30", at).unwrap_err();
        assert!(matches!(&err, SeriesError::BeyondHorizon { count: 30, within: 1, beyond: 29, last_known: false, .. }), "{err}");
        assert!(err.to_string().contains("gives 30 sessions, the last after 9626-09-03"), "{err}");
        let err = expand(&tz, "FREQ=YEARLY;BYWEEKNO=53;BYDAY=TH;COUNT=366", at).unwrap_err();
        assert!(matches!(&err, SeriesError::BeyondHorizon { count: 366, last_known: true, .. }), "{err}");
        assert!(err.to_string().contains("the booking horizon (2028-08-30T09:00:00+01:00)"), "{err}");
        let err = expand(&tz, "FREQ=WEEKLY;UNTIL=20300101T000000Z", at).unwrap_err();
        assert!(matches!(&err, SeriesError::BeyondHorizon { within: 104, .. }), "{err}");
        // Up to the horizon is fine.
        assert_eq!(expand(&tz, "FREQ=WEEKLY;COUNT=104", at).unwrap().len(), 104);
    }

    #[test]
    fn a_count_is_honoured_exactly_or_refused() {
        let tz = london();
        let at = local("2026-09-03T19:00");
        // February 30th never comes: the crate gives up at its loop limit with nothing.
        let err = expand(&tz, "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;COUNT=3", at).unwrap_err();
        assert!(matches!(err, SeriesError::Empty(_)), "{err}");
        let err = expand_series(&tz, "FREQ=YEARLY;INTERVAL=400;COUNT=30", at, london().parse("2199-12-31T00:00").unwrap()).unwrap_err();
        assert!(matches!(&err, SeriesError::BeyondHorizon { .. }), "{err}");
        for n in [1, 2, 52, 104] {
            assert_eq!(expand(&tz, &format!("FREQ=WEEKLY;COUNT={n}"), at).unwrap().len(), n);
        }
    }
}
