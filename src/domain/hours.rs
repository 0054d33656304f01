//! A room's weekly opening hours. A span opens on a weekday at a local time and lasts up to a day,
//! so a rehearsal room can open at 10:00 and close at 01:00 the next morning. Spans are written as
//! `mon-fri 10:00-01:00`; a close at or before the open means past midnight.

use super::text::MAX_LIST;
use super::time::{instant_of, wall_seconds, DayOffsets, Pick, StudioTz};
use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, Timelike, Utc, Weekday};
use std::fmt;

/// One opening: on `weekday`, from `opens` local time, for `length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaySpan {
    pub weekday: Weekday,
    pub opens: NaiveTime,
    /// More than zero and at most 24 hours.
    pub length: Duration,
}

/// The opening spans of a room in a week, sorted by weekday and time.
#[derive(Debug, Clone, Default)]
pub struct WeeklyHours {
    spans: Vec<DaySpan>,
    /// The spans as [`WeeklyHours::to_lines`] writes them, written once: a list of the rooms
    /// gives every room's hours on every call.
    lines: Vec<String>,
}

// Two rooms' hours are the same when their spans are: the lines are written from them. (A
// free-slot search compares each room's hours with those it has seen.)
impl PartialEq for WeeklyHours {
    fn eq(&self, other: &Self) -> bool {
        self.spans == other.spans
    }
}

impl Eq for WeeklyHours {}

const DAYS: [(&str, Weekday); 7] = [
    ("mon", Weekday::Mon),
    ("tue", Weekday::Tue),
    ("wed", Weekday::Wed),
    ("thu", Weekday::Thu),
    ("fri", Weekday::Fri),
    ("sat", Weekday::Sat),
    ("sun", Weekday::Sun),
];

fn day_name(day: Weekday) -> &'static str {
    DAYS[day.num_days_from_monday() as usize].0
}

fn parse_day(s: &str) -> Result<Weekday, String> {
    DAYS.iter()
        .find(|(name, _)| *name == s)
        .map(|(_, day)| *day)
        .ok_or_else(|| format!("unknown day {s:?}: use mon, tue, wed, thu, fri, sat or sun"))
}

fn parse_clock(s: &str) -> Result<NaiveTime, String> {
    if s == "24:00" {
        return Ok(NaiveTime::MIN);
    }
    NaiveTime::parse_from_str(s, "%H:%M").map_err(|_| format!("cannot read {s:?} as a time: use HH:MM"))
}

impl WeeklyHours {
    pub fn new(mut spans: Vec<DaySpan>) -> Result<Self, String> {
        spans.sort_by_key(|s| (s.weekday.num_days_from_monday(), s.opens));
        for s in &spans {
            if s.length <= Duration::zero() || s.length > Duration::days(1) {
                return Err(format!("an opening on {} lasts {} minutes: it must last 1 minute to 24 hours", day_name(s.weekday), s.length.num_minutes()));
            }
        }
        let lines = spans.iter().map(DaySpan::to_string).collect();
        let hours = WeeklyHours { spans, lines };
        // Two spans that overlap would make "inside one opening" ambiguous; refuse them.
        for (i, a) in hours.spans.iter().enumerate() {
            for b in &hours.spans[i + 1..] {
                let (a0, b0) = (a.week_minute(), b.week_minute());
                let (a1, b1) = (a0 + a.length.num_minutes(), b0 + b.length.num_minutes());
                let week = 7 * 1440;
                let clash = |x0: i64, x1: i64, y0: i64, y1: i64| x0 < y1 && y0 < x1;
                if clash(a0, a1, b0, b1) || clash(a0 + week, a1 + week, b0, b1) || clash(a0, a1, b0 + week, b1 + week) {
                    return Err(format!("openings {a} and {b} overlap: merge them into one"));
                }
            }
        }
        Ok(hours)
    }

    /// Reads lines such as `mon-fri 10:00-01:00`, `sat,sun 12:00-22:00` or `mon-sun 00:00-24:00`.
    /// An opening that closes at the time it opens (`mon 10:00-10:00`) is refused as ambiguous:
    /// a whole day is written `00:00-24:00`.
    pub fn parse(lines: &[impl AsRef<str>]) -> Result<Self, String> {
        if lines.len() > MAX_LIST {
            return Err(format!("{} lines of opening hours: give at most {MAX_LIST}", lines.len()));
        }
        for line in lines {
            let line = line.as_ref().trim();
            if let Some((opens, closes)) = line.split_once(' ').and_then(|(_, times)| times.trim().split_once('-'))
                && opens.trim() == closes.trim()
            {
                return Err(format!(
                    "the opening {line:?} closes when it opens: for a whole day write 00:00-24:00, else give the closing time"
                ));
            }
        }
        WeeklyHours::read(lines)
    }

    /// [`WeeklyHours::parse`] without its rules for new input, for hours already stored (which
    /// [`WeeklyHours::to_lines`] wrote, a 24-hour opening from 10:00 as `10:00-10:00`).
    pub fn read(lines: &[impl AsRef<str>]) -> Result<Self, String> {
        let mut spans = Vec::new();
        for line in lines {
            let line = line.as_ref().trim();
            let (days, times) = line
                .split_once(' ')
                .ok_or_else(|| format!("cannot read opening hours {line:?}: write e.g. \"mon-fri 10:00-22:00\""))?;
            let (opens, closes) = times
                .trim()
                .split_once('-')
                .ok_or_else(|| format!("cannot read the times in {line:?}: write e.g. 10:00-22:00"))?;
            let (opens_at, closes_at) = (parse_clock(opens.trim())?, parse_clock(closes.trim())?);
            let mut length = closes_at - opens_at;
            if length <= Duration::zero() {
                length += Duration::days(1);
            }
            for day in parse_days(days)? {
                spans.push(DaySpan { weekday: day, opens: opens_at, length });
            }
        }
        WeeklyHours::new(spans)
    }

    pub fn spans(&self) -> &[DaySpan] {
        &self.spans
    }

    /// The openings that begin on local dates `first..=last`, as instants. Opening and closing
    /// times that the clock skips or repeats resolve to the shorter opening.
    pub fn openings(&self, tz: &StudioTz, first: NaiveDate, last: NaiveDate) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        // One set of hours asks the zone twice a day; a table of the days' offsets pays only
        // when several share it.
        self.openings_over(&DayOffsets::none(tz), first, last)
    }

    /// [`WeeklyHours::openings`] over days whose offsets are known: what every room of one search,
    /// or of one month's figures, shares.
    pub fn openings_over(&self, days: &DayOffsets, first: NaiveDate, last: NaiveDate) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        self.opening_seconds(days, first, last).into_iter().map(|(open, close)| (instant_of(open), instant_of(close))).collect()
    }

    /// [`WeeklyHours::openings_over`] in seconds since the epoch, by arithmetic on a steady day.
    pub fn opening_seconds(&self, days: &DayOffsets, first: NaiveDate, last: NaiveDate) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        for day in first.iter_days().take_while(|d| *d <= last) {
            let midnight = wall_seconds(day.and_time(NaiveTime::MIN));
            for span in self.spans.iter().filter(|s| s.weekday == day.weekday()) {
                let opens = midnight + i64::from(span.opens.num_seconds_from_midnight());
                let closes = opens + span.length.num_seconds();
                out.push((
                    days.boundary_seconds(opens, || day.and_time(span.opens), Pick::Later),
                    days.boundary_seconds(closes, || day.and_time(span.opens) + span.length, Pick::Earlier),
                ));
            }
        }
        out
    }

    /// Whether `[start, end)` lies inside one opening.
    pub fn contains(&self, tz: &StudioTz, start: DateTime<Utc>, end: DateTime<Utc>) -> bool {
        let day = tz.local(start).date();
        let first = day.pred_opt().unwrap_or(day);
        self.openings(tz, first, day).iter().any(|&(o, c)| o <= start && end <= c)
    }

    /// The lines that [`WeeklyHours::parse`] reads back, one per span.
    pub fn to_lines(&self) -> Vec<String> {
        self.lines.clone()
    }

    /// [`WeeklyHours::to_lines`], taking the hours.
    pub fn into_lines(self) -> Vec<String> {
        self.lines
    }
}

impl DaySpan {
    fn week_minute(&self) -> i64 {
        i64::from(self.weekday.num_days_from_monday()) * 1440
            + (self.opens - NaiveTime::MIN).num_minutes()
    }
}

impl fmt::Display for DaySpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Hours and minutes written directly: a list of rooms writes every room's hours.
        let opens = (self.opens - NaiveTime::MIN).num_minutes();
        let closes = opens + self.length.num_minutes();
        let closes = if closes % 1440 == 0 { 1440 } else { closes % 1440 };
        write!(f, "{} {:02}:{:02}-{:02}:{:02}", day_name(self.weekday), opens / 60, opens % 60, closes / 60, closes % 60)
    }
}

fn parse_days(s: &str) -> Result<Vec<Weekday>, String> {
    let mut days = Vec::new();
    for part in s.split(',') {
        let part = part.trim().to_ascii_lowercase();
        match part.split_once('-') {
            Some((from, to)) => {
                let (mut day, to) = (parse_day(from)?, parse_day(to)?);
                loop {
                    days.push(day);
                    if day == to {
                        break;
                    }
                    day = day.succ();
                }
            }
            None => days.push(parse_day(&part)?),
        }
    }
    Ok(days)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn london() -> StudioTz {
        "Europe/London".parse().unwrap()
    }

    #[test]
    fn past_midnight_counts_on_the_opening_day() {
        let tz = london();
        let hours = WeeklyHours::parse(&["mon-thu 10:00-00:00", "fri-sat 10:00-02:00"]).unwrap();
        let t = |s: &str| tz.parse(s).unwrap();
        // Friday night into Saturday morning is inside Friday's opening.
        assert!(hours.contains(&tz, t("2026-09-11T23:30"), t("2026-09-12T01:45")));
        assert!(!hours.contains(&tz, t("2026-09-11T23:30"), t("2026-09-12T02:15")));
        // Thursday closes at midnight: no spill into Friday.
        assert!(!hours.contains(&tz, t("2026-09-10T23:30"), t("2026-09-11T00:30")));
        // Sunday has no opening at all.
        assert!(!hours.contains(&tz, t("2026-09-13T12:00"), t("2026-09-13T13:00")));
        // Saturday's late opening, then the spill into Sunday morning.
        assert!(hours.contains(&tz, t("2026-09-13T00:15"), t("2026-09-13T01:00")));
        assert_eq!(hours.to_lines()[0], "mon 10:00-24:00");
    }

    #[test]
    fn refuses_bad_hours() {
        assert!(WeeklyHours::parse(&["funday 10:00-12:00"]).is_err());
        assert!(WeeklyHours::parse(&["mon 10-12"]).is_err());
        assert!(WeeklyHours::parse(&["mon 10:00-02:00", "tue 01:00-03:00"]).is_err());
        assert!(WeeklyHours::parse(&["sun 20:00-02:00", "mon 01:00-03:00"]).is_err());
        assert!(WeeklyHours::parse(&["mon-sun 00:00-24:00"]).is_ok());
        let same = WeeklyHours::parse(&["mon 10:00-10:00"]).unwrap_err();
        assert!(same.contains("closes when it opens: for a whole day write 00:00-24:00"), "{same}");
        assert!(WeeklyHours::parse(&["mon 00:00-00:00"]).is_err());
        assert!(WeeklyHours::parse(&vec!["mon 10:00-12:00"; 51]).is_err());
        // A 24-hour opening from 10:00, stored before the rule, still reads back.
        let stored = WeeklyHours::read(&["mon 10:00-10:00"]).unwrap();
        assert_eq!(stored.spans()[0].length, Duration::days(1));
    }
}
