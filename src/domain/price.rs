//! What a session costs: a room's hourly rate with its time-of-week overrides (`rates`), an
//! engineer's hourly rate, and the quote they make, in integer minor units of the studio's
//! currency (no floating point anywhere in money). Pure: the zone is passed in.

use super::time::StudioTz;
use chrono::{DateTime, Datelike, Duration, NaiveTime, Timelike, Utc, Weekday};

/// The highest hourly rate, in minor units (a million an hour: no studio charges more).
pub const MAX_RATE: i64 = 100_000_000;

/// The largest amount of money one payment or one booking's price may be, in minor units (ten
/// million in major units: far above any session, far below where `i64` arithmetic could overflow).
pub const MAX_AMOUNT: i64 = 1_000_000_000;

/// A booking's money, in minor units of the studio's currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Money {
    /// The quote's total when it was booked (or last re-priced by a person's change); `None` for
    /// a booking made before prices were kept. A reflow's move keeps it.
    pub price: Option<i64>,
    /// The deposit a booking made on hold owes: `deposit_percent` of its price (see [`deposit_of`]).
    pub deposit_due: i64,
    /// The sum of the payments recorded for it.
    pub paid: i64,
}

impl Money {
    /// What is still owed on the booking: its price less what was paid (never below zero).
    pub fn owed(&self) -> i64 {
        (self.price.unwrap_or(0) - self.paid).max(0)
    }

    /// Whether the deposit is covered by what was paid.
    pub fn deposit_covered(&self) -> bool {
        self.paid >= self.deposit_due
    }
}

/// The deposit of a price at `percent`, in whole minor units, rounded half up (50 % of 1.01 is
/// 0.51): `(price * percent + 50) / 100`.
pub fn deposit_of(price: i64, percent: i64) -> i64 {
    (price * percent + 50) / 100
}

/// Checks an amount of money from outside: a whole number of minor units, 1 to [`MAX_AMOUNT`].
pub fn check_amount(field: &str, amount: i64) -> Result<(), String> {
    if !(1..=MAX_AMOUNT).contains(&amount) {
        return Err(format!("{field} must be 1 to {MAX_AMOUNT} (a whole number of minor units of the studio's currency)"));
    }
    Ok(())
}

/// A time-of-week override of a room's hourly rate: on `days`, from `from` to `to` (minutes from
/// local midnight, `to` up to 1440), the hour costs `hourly_rate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rate {
    /// Days as written, e.g. "sat-sun" or "mon,wed".
    pub days: String,
    pub weekdays: Vec<Weekday>,
    pub from: i64,
    pub to: i64,
    pub hourly_rate: i64,
}

/// A room's prices: its hourly rate and the overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoomPrice {
    pub hourly_rate: i64,
    pub rates: Vec<Rate>,
}

/// One line of a quote: a period at one rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuoteLine {
    /// "room" or "engineer".
    pub what: &'static str,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub hourly_rate: i64,
    pub minutes: i64,
    /// `hourly_rate * minutes / 60`, rounded half up to a whole minor unit.
    pub amount: i64,
}

/// What a session costs, line by line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub total: i64,
    pub lines: Vec<QuoteLine>,
}

const DAYS: [(&str, Weekday); 7] =
    [("mon", Weekday::Mon), ("tue", Weekday::Tue), ("wed", Weekday::Wed), ("thu", Weekday::Thu), ("fri", Weekday::Fri), ("sat", Weekday::Sat), ("sun", Weekday::Sun)];

fn day(s: &str) -> Result<Weekday, String> {
    DAYS.iter().find(|(n, _)| *n == s).map(|(_, d)| *d).ok_or_else(|| format!("unknown day {s:?}: use mon, tue, wed, thu, fri, sat or sun"))
}

fn clock(s: &str) -> Result<i64, String> {
    if s == "24:00" {
        return Ok(1440);
    }
    let t = NaiveTime::parse_from_str(s, "%H:%M").map_err(|_| format!("cannot read {s:?} as a time: use HH:MM"))?;
    Ok(i64::from(t.hour()) * 60 + i64::from(t.minute()))
}

/// Checks an hourly rate from outside.
pub fn check_rate(field: &str, rate: i64) -> Result<(), String> {
    if !(0..=MAX_RATE).contains(&rate) {
        return Err(format!("{field} must be 0 to {MAX_RATE} (minor units of the studio's currency an hour)"));
    }
    Ok(())
}

impl Rate {
    /// Reads an override: days (`sat-sun`, `mon,wed`), from and to (`HH:MM`, `to` up to `24:00`
    /// and after `from`), and its hourly rate.
    pub fn new(days: &str, from: &str, to: &str, hourly_rate: i64) -> Result<Rate, String> {
        let mut weekdays = Vec::new();
        for part in days.split(',') {
            let part = part.trim().to_ascii_lowercase();
            match part.split_once('-') {
                Some((a, b)) => {
                    let (mut d, end) = (day(a.trim())?, day(b.trim())?);
                    loop {
                        weekdays.push(d);
                        if d == end {
                            break;
                        }
                        d = d.succ();
                    }
                }
                None => weekdays.push(day(&part)?),
            }
        }
        weekdays.sort_by_key(|d| d.num_days_from_monday());
        weekdays.dedup();
        let (from_m, to_m) = (clock(from.trim())?, clock(to.trim())?);
        if to_m <= from_m {
            return Err(format!("a rate from {from} to {to} must end after it starts, within the day (24:00 at the latest)"));
        }
        check_rate("hourly_rate", hourly_rate)?;
        Ok(Rate { days: days.trim().to_owned(), weekdays, from: from_m, to: to_m, hourly_rate })
    }

    /// `HH:MM` of a minute of the day.
    pub fn clock_text(minute: i64) -> String {
        format!("{:02}:{:02}", minute / 60, minute % 60)
    }
}

impl RoomPrice {
    /// Refuses overrides that overlap (two rates for one minute would be ambiguous).
    pub fn check(&self) -> Result<(), String> {
        check_rate("hourly_rate", self.hourly_rate)?;
        for (i, a) in self.rates.iter().enumerate() {
            for b in &self.rates[i + 1..] {
                let same_day = a.weekdays.iter().any(|d| b.weekdays.contains(d));
                if same_day && a.from < b.to && b.from < a.to {
                    return Err(format!(
                        "rates {} {}-{} and {} {}-{} overlap: give each minute of the week one rate",
                        a.days,
                        Rate::clock_text(a.from),
                        Rate::clock_text(a.to),
                        b.days,
                        Rate::clock_text(b.from),
                        Rate::clock_text(b.to)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The hourly rate at a local weekday and minute of the day.
    fn rate_at(&self, weekday: Weekday, minute: i64) -> i64 {
        self.rates.iter().find(|r| r.weekdays.contains(&weekday) && r.from <= minute && minute < r.to).map_or(self.hourly_rate, |r| r.hourly_rate)
    }
}

/// Half up, in integers: `rate * minutes / 60`.
fn amount(rate: i64, minutes: i64) -> i64 {
    (rate * minutes + 30) / 60
}

/// The quote of a session `[start, end)`: the room's time cut where its rate changes (read on the
/// studio's wall clock, minute by minute of real time), and the engineer's time at their rate.
pub fn quote(tz: &StudioTz, room: &RoomPrice, engineer: Option<i64>, start: DateTime<Utc>, end: DateTime<Utc>) -> Quote {
    let mut lines: Vec<QuoteLine> = Vec::new();
    // Without overrides the room's time is one line; with them, it is read minute by minute.
    if room.rates.is_empty() && start < end {
        let minutes = (end - start).num_minutes();
        lines.push(QuoteLine { what: "room", from: start, to: end, hourly_rate: room.hourly_rate, minutes, amount: 0 });
    }
    let mut t = if room.rates.is_empty() { end } else { start };
    while t < end {
        let local = tz.local(t);
        let minute = i64::from(local.hour()) * 60 + i64::from(local.minute());
        let rate = room.rate_at(local.weekday(), minute);
        match lines.last_mut() {
            Some(line) if line.hourly_rate == rate && line.to == t => {
                line.to = t + Duration::minutes(1);
                line.minutes += 1;
            }
            _ => lines.push(QuoteLine { what: "room", from: t, to: t + Duration::minutes(1), hourly_rate: rate, minutes: 1, amount: 0 }),
        }
        t += Duration::minutes(1);
    }
    if let Some(rate) = engineer {
        let minutes = (end - start).num_minutes();
        lines.push(QuoteLine { what: "engineer", from: start, to: end, hourly_rate: rate, minutes, amount: 0 });
    }
    for line in &mut lines {
        line.amount = amount(line.hourly_rate, line.minutes);
    }
    Quote { total: lines.iter().map(|l| l.amount).sum(), lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_weekend_rate_splits_a_friday_night_session() {
        let tz: StudioTz = "Europe/London".parse().unwrap();
        let t = |s: &str| tz.parse(s).unwrap();
        let room = RoomPrice { hourly_rate: 6000, rates: vec![Rate::new("sat-sun", "00:00", "24:00", 9000).unwrap()] };
        // Friday 22:00 to Saturday 01:30: 2 h at 60.00, 1.5 h at 90.00; an engineer at 25.00 for 3.5 h.
        let q = quote(&tz, &room, Some(2500), t("2026-09-11T22:00"), t("2026-09-12T01:30"));
        assert_eq!(q.lines.iter().map(|l| (l.hourly_rate, l.minutes, l.amount)).collect::<Vec<_>>(), [(6000, 120, 12000), (9000, 90, 13500), (2500, 210, 8750)]);
        assert_eq!(q.total, 34250);
        // A room without overrides is one line, whatever the day.
        let plain = RoomPrice { hourly_rate: 6000, rates: vec![] };
        let q = quote(&tz, &plain, None, t("2026-09-11T22:00"), t("2026-09-12T01:30"));
        assert_eq!(q.lines.iter().map(|l| (l.hourly_rate, l.minutes, l.amount)).collect::<Vec<_>>(), [(6000, 210, 21000)]);
        // Rounded half up: 20 minutes at 1.00 an hour is 0.33.
        assert_eq!(amount(100, 20), 33);
        assert!(RoomPrice { hourly_rate: 1, rates: vec![Rate::new("fri-sat", "20:00", "24:00", 1).unwrap(), Rate::new("sat", "00:00", "21:00", 1).unwrap()] }.check().is_err());
        assert!(Rate::new("sat", "10:00", "10:00", 1).is_err());
        assert!(Rate::new("caturday", "10:00", "12:00", 1).is_err());
        assert!(Rate::new("sat", "10:00", "12:00", -1).is_err());
    }

    #[test]
    fn a_deposit_is_rounded_half_up_to_a_minor_unit() {
        // 50 % of 1.01 is 0.505: 0.51. 40 % of 270.00 is 108.00. 33 % of 0.01 is 0.0033: 0.00.
        assert_eq!(deposit_of(101, 50), 51);
        assert_eq!(deposit_of(27000, 40), 10800);
        assert_eq!(deposit_of(1, 33), 0);
        assert_eq!(deposit_of(MAX_AMOUNT, 100), MAX_AMOUNT);
        let m = Money { price: Some(27000), deposit_due: 10800, paid: 10000 };
        assert_eq!((m.owed(), m.deposit_covered()), (17000, false));
        assert!(check_amount("amount", 0).is_err() && check_amount("amount", MAX_AMOUNT + 1).is_err() && check_amount("amount", 1).is_ok());
    }
}
