//! The studio's time zone and the conversions at its edge: instants are UTC inside, and local
//! wall-clock times only where a person reads or writes them. Nonexistent and ambiguous local times
//! are errors here, never silent guesses; only opening hours resolve them leniently, and say so.

use chrono::{DateTime, Datelike, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::{Tz, TZ_VARIANTS};
use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

/// The years an instant may fall in, on the studio's wall clock and in UTC alike. It keeps every
/// instant the server reads (and so every one it stores and writes out) a valid RFC 3339 time with a
/// four-digit year, and every month of one a month that `reflow_month` reads.
pub const YEARS: RangeInclusive<i32> = 2000..=2199;

/// An IANA time zone (e.g. `Europe/London`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StudioTz(pub Tz);

/// Why a time could not be read or placed on the studio's clock.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("unknown time zone {0:?}: use an IANA name such as \"Europe/London\"")]
    UnknownZone(String),
    #[error(
        "cannot read {0:?} as a time: write RFC 3339 with an offset (2026-09-07T10:00:00+01:00) \
         or a local time in the studio's zone (2026-09-07T10:00)"
    )]
    Unreadable(String),
    #[error("{local} does not exist in {zone} (the clocks go forward then): choose another time")]
    Nonexistent { local: NaiveDateTime, zone: &'static str },
    #[error(
        "{local} happens twice in {zone} (the clocks go back then): give the offset, \
         {earlier} or {later}"
    )]
    Ambiguous { local: NaiveDateTime, zone: &'static str, earlier: String, later: String },
    #[error("{0} is outside the years 2000 to 2199 that studioflow reads: choose a time inside them")]
    OutOfRange(String),
}

/// Whether an instant falls inside [`YEARS`], in UTC and on a wall clock (`local`).
fn in_years(t: DateTime<Utc>, local: NaiveDateTime) -> bool {
    YEARS.contains(&t.year()) && YEARS.contains(&local.year())
}

impl FromStr for StudioTz {
    type Err = TimeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<Tz>().map(StudioTz).map_err(|_| TimeError::UnknownZone(s.to_owned()))
    }
}

impl fmt::Display for StudioTz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl StudioTz {
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// The instant of a local wall-clock time, refusing times the clock skips or repeats.
    pub fn resolve(&self, local: NaiveDateTime) -> Result<DateTime<Utc>, TimeError> {
        match self.0.from_local_datetime(&local) {
            LocalResult::Single(t) if !in_years(t.with_timezone(&Utc), local) => Err(TimeError::OutOfRange(local.to_string())),
            LocalResult::Single(t) => Ok(t.with_timezone(&Utc)),
            LocalResult::None => Err(TimeError::Nonexistent { local, zone: self.name() }),
            LocalResult::Ambiguous(a, b) => Err(TimeError::Ambiguous {
                local,
                zone: self.name(),
                earlier: a.to_rfc3339(),
                later: b.to_rfc3339(),
            }),
        }
    }

    /// The instant of a local time for a schedule boundary (an opening or closing hour), which must
    /// exist every day: a skipped time moves to the end of the gap, a repeated one takes `pick`.
    pub fn resolve_boundary(&self, local: NaiveDateTime, pick: Pick) -> DateTime<Utc> {
        let mut probe = local;
        // A gap is at most a few hours long; step forward until the clock shows a real time.
        for _ in 0..=16 {
            match self.0.from_local_datetime(&probe) {
                LocalResult::Single(t) => return t.with_timezone(&Utc),
                LocalResult::Ambiguous(a, b) => {
                    let t = if pick == Pick::Earlier { a } else { b };
                    return t.with_timezone(&Utc);
                }
                LocalResult::None => probe += chrono::Duration::minutes(15),
            }
        }
        // No zone in the IANA database skips four hours; treat the time as UTC rather than panic.
        Utc.from_utc_datetime(&local)
    }

    /// Reads a time given with an offset (RFC 3339) or as naive local time in the studio's zone.
    pub fn parse(&self, text: &str) -> Result<DateTime<Utc>, TimeError> {
        let text = text.trim();
        // The forms every client sends are read digit by digit; chrono reads the rest.
        if let Some(local) = plain_local(text) {
            return self.resolve(local);
        }
        if let Ok(t) = DateTime::parse_from_rfc3339(text) {
            // Both wall clocks count: the one the offset gives and the studio's, which names
            // the instant's month in every answer.
            let utc = t.with_timezone(&Utc);
            if !in_years(utc, t.naive_local()) || !in_years(utc, self.local(utc)) {
                return Err(TimeError::OutOfRange(text.to_owned()));
            }
            return Ok(utc);
        }
        let local = NAIVE_FORMATS
            .iter()
            .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
            .ok_or_else(|| TimeError::Unreadable(text.to_owned()))?;
        self.resolve(local)
    }

    /// The wall-clock time at an instant.
    pub fn local(&self, t: DateTime<Utc>) -> NaiveDateTime {
        t.with_timezone(&self.0).naive_local()
    }

    /// An instant as RFC 3339 with the studio's offset, e.g. `2026-09-07T10:00:00+01:00`.
    pub fn format(&self, t: DateTime<Utc>) -> String {
        let mut out = String::with_capacity(25);
        self.write(t, &mut out);
        out
    }

    /// Appends [`StudioTz::format`] of `t` to `out`. Every answer writes two or three of these a
    /// booking, so the text is put together digit by digit from the seconds since the epoch, with
    /// the calendar day worked out by arithmetic (days to civil date, as in Howard Hinnant's
    /// `civil_from_days`); chrono's general formatting writes the rare rest (an offset with
    /// seconds, as zones had before about 1940, or a year outside 0 to 9999), as it writes them
    /// all in the tests.
    pub fn write(&self, t: DateTime<Utc>, out: &mut String) {
        self.write_on(&mut DayWritten::default(), t, out);
    }

    /// [`StudioTz::write`] for one of several instants written together (an answer's): an
    /// instant on the steady day of the one `last` holds needs only its time of day written.
    pub fn write_on(&self, last: &mut DayWritten, t: DateTime<Utc>, out: &mut String) {
        /// 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z, in seconds from the epoch.
        const YEAR_0: i64 = -62_167_219_200;
        const YEAR_10000: i64 = 253_402_300_800;
        let seconds = t.timestamp();
        if let Some(second) = last.second_of(self, seconds) {
            let mut text = last.text;
            write_time_of_day(&mut text, second);
            push_ascii(out, &text, || self.format_by_chrono(t));
            return;
        }
        let (offset, steady_day) = self.offset_and_day(t);
        let local = seconds + i64::from(offset);
        if offset % 60 != 0 || !(YEAR_0..YEAR_10000).contains(&local) {
            out.push_str(&self.format_by_chrono(t));
            return;
        }
        // Less than 10,000 years of seconds: the days and the second of the day fit a u32.
        let since = local - YEAR_0;
        let (days, second) = ((since / 86_400) as u32, (since % 86_400) as u32);
        let (year, month, day) = civil_from_days(days);
        let minutes = offset.unsigned_abs() / 60;
        let mut text = *b"0000-00-00T00:00:00+00:00";
        for (at, n) in [(0, year / 100), (2, year), (5, month), (8, day), (20, minutes / 60), (23, minutes % 60)] {
            put_pair(&mut text, at, n);
        }
        if offset < 0 {
            text[19] = b'-';
        }
        // Every instant of a steady day is written at the day's offset: the next one on it
        // needs only its time of day.
        if let Some(local_day) = steady_day {
            *last = DayWritten { zone: Some(self.0), from: local_day * DAY - i64::from(offset), text };
        }
        write_time_of_day(&mut text, second);
        push_ascii(out, &text, || self.format_by_chrono(t));
    }

    /// The offset from UTC at `t`, in seconds east, and the local day it falls on if that day is
    /// steady. An instant whose local time on a day's offset falls on that very day, a day that
    /// keeps that offset all day, is that local time: every local time of a steady day is one
    /// instant, at the day's offset. Other instants (on a day the clocks change, or outside the
    /// table's years) ask the zone.
    fn offset_and_day(&self, t: DateTime<Utc>) -> (i32, Option<i64>) {
        let seconds = t.timestamp();
        let day = seconds.div_euclid(DAY);
        for day in [day, day + 1, day - 1] {
            if let Some(offset) = steady(self, day)
                && (seconds + offset).div_euclid(DAY) == day
                && let Ok(offset) = i32::try_from(offset)
            {
                return (offset, Some(day));
            }
        }
        (chrono::Offset::fix(&self.0.offset_from_utc_datetime(&t.naive_utc())).local_minus_utc(), None)
    }

    /// [`StudioTz::format`] through chrono's RFC 3339 formatting.
    fn format_by_chrono(&self, t: DateTime<Utc>) -> String {
        let local = t.with_timezone(&self.0);
        let offset = FixedOffset::east_opt(chrono::Offset::fix(local.offset()).local_minus_utc())
            .unwrap_or(FixedOffset::east_opt(0).expect("zero is a valid offset"));
        local.with_timezone(&offset).to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
    }

    /// Midnight (local) at the start of `day`, leniently resolved.
    pub fn start_of_day(&self, day: NaiveDate) -> DateTime<Utc> {
        self.resolve_boundary(day.and_time(NaiveTime::MIN), Pick::Earlier)
    }
}

/// The local times [`StudioTz::parse`] reads, as chrono's formats.
const NAIVE_FORMATS: [&str; 3] = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"];

/// A local time written as `2026-09-07T10:00`, `2026-09-07T10:00:30` or `2026-09-07 10:00`, four
/// digits of year and two of everything else, as chrono reads it with the same formats; `None`
/// for any other text (chrono reads what else those formats take, such as a signed year, or a
/// leap second), or for a date or time that does not exist.
fn plain_local(text: &str) -> Option<NaiveDateTime> {
    let b = text.as_bytes();
    let seconds = match b.len() {
        16 => false,
        19 if b[10] == b'T' && b[16] == b':' => true,
        _ => return None,
    };
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b' ' && !seconds) || b[13] != b':' {
        return None;
    }
    let number = |at: usize, len: usize| {
        b[at..at + len].iter().try_fold(0u32, |n, &d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
    };
    let date = NaiveDate::from_ymd_opt(i32::try_from(number(0, 4)?).ok()?, number(5, 2)?, number(8, 2)?)?;
    let second = if seconds { number(17, 2)? } else { 0 };
    date.and_hms_opt(number(11, 2)?, number(14, 2)?, second)
}

/// "00" to "99", each number's two digits at twice its place.
const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// The last steady day [`StudioTz::write_on`] wrote an instant of: its zone, its first second in
/// UTC, and the text of an instant on it with the date and the offset in place.
#[derive(Debug, Clone, Copy, Default)]
pub struct DayWritten {
    zone: Option<Tz>,
    from: i64,
    text: [u8; 25],
}

impl DayWritten {
    /// The second of the kept day that `seconds` falls on, if it falls on it in `tz`.
    fn second_of(&self, tz: &StudioTz, seconds: i64) -> Option<u32> {
        (self.zone == Some(tz.0) && (self.from..self.from + DAY).contains(&seconds)).then(|| (seconds - self.from) as u32)
    }
}

/// Writes the last two digits of `n` at `at` in an instant's text, from a table: at places
/// known when compiled, no bounds to check.
fn put_pair(text: &mut [u8; 25], at: usize, n: u32) {
    let pair = (n % 100) as usize * 2;
    text[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
}

/// Writes the time of day `second` into an instant's text (`…THH:MM:SS…`).
fn write_time_of_day(text: &mut [u8; 25], second: u32) {
    for (at, n) in [(11, second / 3600), (14, second / 60 % 60), (17, second % 60)] {
        put_pair(text, at, n);
    }
}

/// Appends an instant's text, digits and separators only (so always text; `otherwise` is never
/// called in practice).
fn push_ascii(out: &mut String, text: &[u8], otherwise: impl FnOnce() -> String) {
    match std::str::from_utf8(text) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&otherwise()),
    }
}

/// The proleptic Gregorian (year, month, day) of `days` since 0000-01-01, for years 0 to 9999:
/// Howard Hinnant's `civil_from_days`, in eras of 400 years (146,097 days) that begin on 1 March,
/// so that a leap day ends a year. The days are counted from 1 March of year -400, a whole era
/// earlier, so that every number stays unsigned.
fn civil_from_days(days: u32) -> (u32, u32, u32) {
    // 0000-01-01 is day 60 of the era that begins on 0000-03-01 less one era (0000 is a leap year).
    let z = days + 146_097 - 60;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    (year_of_era + era * 400 + u32::from(month <= 2) - 400, month, day)
}

/// An instant on the studio's clock: kept as an instant, shown (when displayed) as RFC 3339 with
/// the studio's offset. Refusals carry these, so what is refused stays typed until it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zoned {
    pub at: DateTime<Utc>,
    pub tz: StudioTz,
}

impl fmt::Display for Zoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tz.format(self.at))
    }
}

impl StudioTz {
    /// `t` on this studio's clock.
    pub fn zoned(&self, t: DateTime<Utc>) -> Zoned {
        Zoned { at: t, tz: *self }
    }
}

/// The studio's local days `first..=last`, each with the offset from UTC its clock keeps from
/// midnight to midnight, or none on a day the clocks change: a schedule's boundary on a steady day
/// is its local time less the offset, and only on a changing day (or outside the days) is the
/// zone asked, as [`StudioTz::resolve_boundary`] does. A search lays every room's opening hours
/// over the same days, so it asks the zone five times a day instead of twice per room and day.
pub struct DayOffsets {
    tz: StudioTz,
    /// `first`, in days since 1970-01-01.
    first_day: i64,
    /// Seconds east of UTC, by day from `first`.
    offsets: Vec<Option<i64>>,
}

impl DayOffsets {
    pub fn new(tz: &StudioTz, first: NaiveDate, last: NaiveDate) -> DayOffsets {
        let first_day = wall_seconds(first.and_time(NaiveTime::MIN)).div_euclid(DAY);
        let days = (last - first).num_days() + 1;
        let offsets = (first_day..first_day + days).map(|day| steady(tz, day)).collect();
        DayOffsets { tz: *tz, first_day, offsets }
    }

    /// No days at all: every boundary asks the zone (for one set of hours, where a table would
    /// cost more than it saves).
    pub fn none(tz: &StudioTz) -> DayOffsets {
        DayOffsets { tz: *tz, first_day: i64::MIN, offsets: Vec::new() }
    }

    /// [`StudioTz::resolve_boundary`], by arithmetic on a steady day.
    pub fn boundary(&self, local: NaiveDateTime, pick: Pick) -> DateTime<Utc> {
        instant_of(self.boundary_seconds(wall_seconds(local), || local, pick))
    }

    /// [`DayOffsets::boundary`] in seconds since the epoch, of a local time given as its wall
    /// clock's seconds since 1970-01-01 00:00 ([`wall_seconds`]); `local` gives it as a date and
    /// time, which only a day the clocks change reads.
    pub fn boundary_seconds(&self, wall: i64, local: impl FnOnce() -> NaiveDateTime, pick: Pick) -> i64 {
        let day = wall.div_euclid(DAY).saturating_sub(self.first_day);
        match usize::try_from(day).ok().and_then(|day| self.offsets.get(day)) {
            Some(Some(offset)) => wall - offset,
            _ => self.tz.resolve_boundary(local(), pick).timestamp(),
        }
    }
}

const DAY: i64 = 86_400;

/// A local date and time as seconds of its wall clock since 1970-01-01 00:00.
pub fn wall_seconds(local: NaiveDateTime) -> i64 {
    local.and_utc().timestamp()
}

/// The instant `seconds` after the epoch, for seconds that came from an instant by arithmetic
/// that keeps them well inside chrono's years (a session's length, a turnaround, a day's hours).
pub fn instant_of(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(seconds, 0).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// [`steady_offset`] of the day `day` days after 1970-01-01, from a table of the zone's days
/// kept for the process (see [`SteadyDays`]).
fn steady(tz: &StudioTz, day: i64) -> Option<i64> {
    SteadyDays::of(tz.0).offset(tz, day)
}

/// The steady offsets of one zone's days over [`YEARS`] (and a week either side), learnt as they
/// are first asked for and kept for the process: every instant an answer writes, and every
/// opening a search lays out, asks for one. 0 is a day not asked about yet, 1 one the clocks
/// change on, and anything else the offset plus [`SteadyDays::BIAS`].
struct SteadyDays {
    first_day: i64,
    days: Box<[AtomicI32]>,
}

impl SteadyDays {
    const BIAS: i32 = 1 << 20;

    /// The zone's table, made the first time it is asked for. The tables stand in the order of
    /// chrono-tz's zones, whose numbers are their places in `TZ_VARIANTS`: finding one takes no lock.
    fn of(zone: Tz) -> &'static SteadyDays {
        static TABLES: OnceLock<Box<[OnceLock<SteadyDays>]>> = OnceLock::new();
        let tables = TABLES.get_or_init(|| TZ_VARIANTS.iter().map(|_| OnceLock::new()).collect());
        // A few hundred kilobytes a zone, and a studio has one zone: kept until the process ends.
        tables[zone as usize].get_or_init(|| {
            let day = |year: i32| NaiveDate::from_ymd_opt(year, 1, 1).map_or(0, |d| wall_seconds(d.and_time(NaiveTime::MIN)).div_euclid(DAY));
            let (first_day, end_day) = (day(*YEARS.start()) - 7, day(*YEARS.end() + 1) + 7);
            SteadyDays { first_day, days: (first_day..end_day).map(|_| AtomicI32::new(0)).collect() }
        })
    }

    fn offset(&self, tz: &StudioTz, day: i64) -> Option<i64> {
        let date = || NaiveDate::from_num_days_from_ce_opt(i32::try_from(day + 719_163).ok()?);
        let Some(slot) = usize::try_from(day - self.first_day).ok().and_then(|at| self.days.get(at)) else {
            return date().and_then(|date| steady_offset(tz, date));
        };
        match slot.load(Ordering::Relaxed) {
            0 => {
                let offset = date().and_then(|date| steady_offset(tz, date));
                slot.store(offset.map_or(1, |offset| offset as i32 + Self::BIAS), Ordering::Relaxed);
                offset
            }
            1 => None,
            biased => Some(i64::from(biased - Self::BIAS)),
        }
    }
}

/// The offset `day` keeps all day on the studio's clock, if it keeps one: the same at its local
/// noon and 13 and 37 hours either side. Thirteen bracket the day itself; a clock put back by
/// more than an hour on a neighbouring day repeats times of this one too (Antarctica/Casey went
/// from +11 to +08 at 02:00 on 5 March 2010, so 23:00 on the 4th came twice), and thirty-seven
/// reach past the largest such step.
fn steady_offset(tz: &StudioTz, day: NaiveDate) -> Option<i64> {
    use chrono::Offset;
    let noon = match tz.0.from_local_datetime(&day.and_time(NaiveTime::from_hms_opt(12, 0, 0)?)) {
        LocalResult::Single(t) => t,
        _ => return None,
    };
    let offset = noon.offset().fix().local_minus_utc();
    let utc = noon.naive_utc();
    let around = [-37, -13, 13, 37].map(|hours| utc + chrono::Duration::hours(hours));
    around.iter().all(|t| tz.0.offset_from_utc_datetime(t).fix().local_minus_utc() == offset).then_some(i64::from(offset))
}

/// Which instant to take when a boundary's local time happens twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    Earlier,
    Later,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn london() -> StudioTz {
        "Europe/London".parse().unwrap()
    }

    /// The forms read digit by digit are read as chrono reads them, and what they refuse chrono
    /// still reads or refuses.
    #[test]
    fn plain_local_times_are_read_as_chrono_reads_them() {
        let chrono = |text: &str| NAIVE_FORMATS.iter().find_map(|format| NaiveDateTime::parse_from_str(text, format).ok());
        let texts = [
            "2026-09-07T10:00", "2026-09-07T10:00:30", "2026-09-07 10:00", "2026-09-07 10:00:30", "0000-01-01T00:00",
            "9999-12-31T23:59:59", "2024-02-29T12:00", "2026-02-29T12:00", "2026-13-01T10:00", "2026-00-10T10:00",
            "2026-09-31T10:00", "2026-09-07T24:00", "2026-09-07T10:60", "2026-09-07T10:00:60", "2026-09-07T10:00:61",
            "2026-09-07t10:00", "2026-9-07T10:00", "+2026-09-07T10:00", "2026-09-07T1a:00", "2026/09/07T10:00",
            "2026-09-07T10-00", "2026-09-07T10:00:3", "2026-09-07T10:00Z", "2026-09-07T10:00:00Z", "２026-09-07T10:00",
        ];
        for text in texts {
            if let Some(read) = plain_local(text) {
                assert_eq!(Some(read), chrono(text), "{text}");
            }
        }
        for text in ["2026-09-07T10:00", "2026-09-07T10:00:30", "2026-09-07 10:00", "2024-02-29T12:00", "9999-12-31T23:59:59"] {
            assert!(plain_local(text).is_some(), "{text}");
        }
        for text in ["2026-02-29T12:00", "2026-09-07T10:00:60", "2026-09-07 10:00:30", "+2026-09-07T10:00", "2026-09-07T10:00Z"] {
            assert_eq!(plain_local(text), None, "{text}");
        }
        let tz = london();
        for text in texts {
            let chrono_read = chrono(text).map(|local| tz.resolve(local));
            if let Some(read) = chrono_read {
                assert_eq!(tz.parse(text).ok(), read.ok(), "{text}");
            }
        }
    }

    /// The steady days' tables are found by a zone's number: its place among chrono-tz's zones.
    #[test]
    fn every_zone_is_numbered_by_its_place() {
        assert!(TZ_VARIANTS.iter().enumerate().all(|(at, zone)| *zone as usize == at));
        let (london, paris) = (SteadyDays::of(Tz::Europe__London), SteadyDays::of(Tz::Europe__Paris));
        assert!(std::ptr::eq(london, SteadyDays::of(Tz::Europe__London)) && !std::ptr::eq(london, paris));
    }

    #[test]
    fn reads_offsets_and_local_times() {
        let tz = london();
        let a = tz.parse("2026-09-07T10:00:00+01:00").unwrap();
        let b = tz.parse("2026-09-07T10:00").unwrap();
        assert_eq!(a, b);
        assert_eq!(tz.format(a), "2026-09-07T10:00:00+01:00");
        assert_eq!(tz.format(tz.parse("2026-11-02T10:00").unwrap()), "2026-11-02T10:00:00+00:00");
    }

    #[test]
    fn refuses_skipped_and_repeated_times() {
        let tz = london();
        let err = tz.parse("2027-03-28T01:30").unwrap_err();
        assert!(matches!(err, TimeError::Nonexistent { .. }), "{err}");
        let err = tz.parse("2026-10-25T01:30").unwrap_err();
        assert!(err.to_string().contains("2026-10-25T01:30:00+01:00"), "{err}");
        assert!(err.to_string().contains("2026-10-25T01:30:00+00:00"), "{err}");
        assert!(tz.parse("2026-10-25T01:30:00+00:00").is_ok());
        assert!(matches!(tz.parse("next tuesday"), Err(TimeError::Unreadable(_))));
        assert!("Mars/Olympus".parse::<StudioTz>().is_err());
    }

    #[test]
    fn refuses_instants_outside_the_years_it_reads() {
        let tz = london();
        for text in ["9999-12-31T23:00:00-14:00", "2199-12-31T23:30:00-01:00", "1999-12-31T23:59:59Z", "0001-01-01T00:00", "2200-01-01T00:00", "+10000-01-01T00:00"] {
            let err = tz.parse(text).unwrap_err();
            assert!(matches!(err, TimeError::OutOfRange(_) | TimeError::Unreadable(_)), "{text}: {err}");
        }
        assert!(matches!(tz.parse("9999-12-31T23:00:00-14:00"), Err(TimeError::OutOfRange(_))));
        // 23:30 UTC is already 2200 on a wall clock an hour ahead of UTC.
        let paris: StudioTz = "Europe/Paris".parse().unwrap();
        assert!(matches!(paris.parse("2199-12-31T23:30:00Z"), Err(TimeError::OutOfRange(_))));
        assert!(tz.parse("2199-12-31T23:30:00Z").is_ok());
        assert_eq!(tz.format(tz.parse("2199-12-31T23:59").unwrap()), "2199-12-31T23:59:00+00:00");
        assert_eq!(tz.format(tz.parse("2000-01-01T00:00:00Z").unwrap()), "2000-01-01T00:00:00+00:00");
    }

    /// The table's arithmetic gives what asking the zone gives, for every quarter hour of every
    /// day over years of each zone's changes: an hour each way (London), half an hour (Lord
    /// Howe), at midnight (Havana, and São Paulo before 2019), a whole day skipped (Apia, 30
    /// December 2011), three hours back that repeat the evening before (Casey, March 2010), none
    /// at all (Kolkata); and outside the table's days.
    /// The text of an instant is chrono's, digit for digit: every hour of two years and a few
    /// around 1900 (offsets with seconds), in zones west and east, on the half and three
    /// quarters of an hour, across their clock changes.
    #[test]
    fn instants_are_written_as_chrono_writes_them() {
        let zones = ["Europe/London", "America/St_Johns", "Asia/Kolkata", "Asia/Kathmandu", "Pacific/Chatham", "America/Havana", "Europe/Amsterdam", "UTC"];
        for zone in zones {
            let tz: StudioTz = zone.parse().unwrap();
            let hours = (0..2 * 366 * 24).map(|h| Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap() + chrono::Duration::hours(h));
            let early = (0..200).map(|d| Utc.with_ymd_and_hms(1890, 1, 1, 0, 17, 59).unwrap() + chrono::Duration::days(d * 173));
            for t in hours.chain(early) {
                assert_eq!(tz.format(t), tz.format_by_chrono(t), "{zone} {t}");
            }
        }
        // The early instants meet an offset with seconds (Kolkata's +05:53:20 until 1941).
        let kolkata: StudioTz = "Asia/Kolkata".parse().unwrap();
        let t = Utc.with_ymd_and_hms(1900, 1, 1, 0, 0, 0).unwrap();
        assert_ne!(chrono::Offset::fix(&kolkata.0.offset_from_utc_datetime(&t.naive_utc())).local_minus_utc() % 60, 0);
        assert_eq!(kolkata.format(t), kolkata.format_by_chrono(t));
    }

    /// Instants written one after another with the last day kept ([`StudioTz::write_on`]) are
    /// written as each is alone: every quarter hour and a second either side over two years of
    /// zones whose clocks change by an hour, half an hour, or across midnight, walked forward,
    /// back and by jumps, with one kept day passed from zone to zone.
    #[test]
    fn instants_written_with_the_last_day_kept_are_written_as_alone() {
        let mut last = DayWritten::default();
        let mut kept = 0;
        for (zone, year) in CHANGING_ZONES.iter().chain(&[("Asia/Kathmandu", 2026), ("Pacific/Chatham", 2026)]) {
            let tz: StudioTz = zone.parse().unwrap();
            let start = Utc.with_ymd_and_hms(*year, 1, 1, 0, 0, 0).unwrap();
            let quarters: Vec<DateTime<Utc>> = (0..2 * 366 * 96)
                .flat_map(|q| {
                    let t = start + chrono::Duration::minutes(15 * q);
                    [t - chrono::Duration::seconds(1), t, t + chrono::Duration::seconds(1)]
                })
                .collect();
            let jumps = quarters.iter().step_by(7919).chain(quarters.iter().rev().step_by(5003));
            for &t in quarters.iter().chain(quarters.iter().rev()).chain(jumps) {
                let mut written = String::new();
                let was_kept = last.second_of(&tz, t.timestamp()).is_some();
                tz.write_on(&mut last, t, &mut written);
                assert_eq!(written, tz.format_by_chrono(t), "{zone} {t}");
                kept += usize::from(was_kept);
            }
        }
        // Most instants took the kept day: the test exercised it.
        assert!(kept > 1_000_000, "{kept}");
    }

    /// The days-to-date arithmetic of [`StudioTz::write`] is chrono's calendar, leap years and
    /// centuries included: every day of years 0 to 9999.
    #[test]
    fn days_become_the_calendars_dates() {
        let mut date = NaiveDate::from_ymd_opt(0, 1, 1).unwrap();
        for days in 0..3_652_425 {
            assert_eq!(civil_from_days(days), (date.year() as u32, date.month(), date.day()), "{days}");
            date = date.succ_opt().unwrap();
        }
        assert_eq!(date, NaiveDate::from_ymd_opt(10000, 1, 1).unwrap());
    }

    /// Zones, each with a year of its clock changes, as [`day_offsets_give_the_zones_own_boundaries`]
    /// describes them.
    const CHANGING_ZONES: [(&str, i32); 7] = [
        ("Europe/London", 2025),
        ("Australia/Lord_Howe", 2026),
        ("America/Havana", 2026),
        ("America/Sao_Paulo", 2017),
        ("Pacific/Apia", 2011),
        ("Asia/Kolkata", 2026),
        ("Antarctica/Casey", 2009),
    ];

    /// The offsets read off the table of steady days are the zone's: a second either side of
    /// every quarter hour, over the years of each zone's changes that the boundaries' test
    /// walks, written as chrono writes them.
    #[test]
    fn instants_on_steady_days_are_written_with_the_zones_offsets() {
        for (zone, year) in CHANGING_ZONES {
            let tz: StudioTz = zone.parse().unwrap();
            let start = Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0).unwrap().timestamp();
            for quarter in 0..2 * 366 * 96 {
                for second in [-1, 0, 1] {
                    let t = DateTime::from_timestamp(start + 900 * quarter + second, 0).unwrap();
                    assert_eq!(tz.format(t), tz.format_by_chrono(t), "{zone} {t}");
                }
            }
        }
    }

    #[test]
    fn day_offsets_give_the_zones_own_boundaries() {
        for (zone, year) in CHANGING_ZONES {
            let tz: StudioTz = zone.parse().unwrap();
            let first = NaiveDate::from_ymd_opt(year, 1, 1).unwrap();
            let last = NaiveDate::from_ymd_opt(year + 1, 12, 31).unwrap();
            let days = DayOffsets::new(&tz, first, last);
            let steady = days.offsets.iter().filter(|o| o.is_some()).count();
            assert!(steady > 700, "{zone}: {steady} steady days of {}", days.offsets.len());
            let around = (first - chrono::Duration::days(3)).iter_days().take_while(|d| *d <= last + chrono::Duration::days(3));
            for day in around {
                for quarter in 0..96 {
                    let local = day.and_time(NaiveTime::MIN) + chrono::Duration::minutes(15 * quarter);
                    for pick in [Pick::Earlier, Pick::Later] {
                        assert_eq!(days.boundary(local, pick), tz.resolve_boundary(local, pick), "{zone} {local} {pick:?}");
                    }
                }
            }
        }
    }
}
