//! Free time: given the openings of a room and what blocks it, the windows where a session of a
//! given length still fits. Pure interval arithmetic on instants; the caller gathers the data.

use super::time::instant_of;
use chrono::{DateTime, Duration, Utc};

/// A half-open time span `[start, end)`.
pub type Span = (DateTime<Utc>, DateTime<Utc>);

/// The parts of `openings` that no span of `blocked` touches, sorted, keeping only those at least
/// `length` long. Blocked spans may overlap each other and need not be sorted.
pub fn free_windows(openings: &[Span], blocked: Vec<Span>, length: Duration) -> Vec<Span> {
    let seconds = |spans: &[Span]| -> Vec<(i64, i64)> { spans.iter().map(|(a, b)| (a.timestamp(), b.timestamp())).collect() };
    let mut blocked = seconds(&blocked);
    blocked.sort_unstable();
    let mut free = Vec::new();
    free_windows_in_seconds(&seconds(openings), &blocked, length.num_seconds(), |open, close| free.push((instant_of(open), instant_of(close))));
    free.sort_unstable();
    free
}

/// [`free_windows`] in seconds since the epoch, called with each window as it is found, opening
/// by opening: what a free-slot search steps through. `blocked` must be sorted by start.
pub fn free_windows_in_seconds(openings: &[(i64, i64)], blocked: &[(i64, i64)], length: i64, mut each: impl FnMut(i64, i64)) {
    for &(open, close) in openings {
        let mut cursor = open;
        for &(from, to) in blocked.iter().take_while(|(from, _)| *from < close).filter(|(_, to)| *to > open) {
            if from > cursor && from - cursor >= length {
                each(cursor, from);
            }
            cursor = cursor.max(to);
        }
        if cursor < close && close - cursor >= length {
            each(cursor, close);
        }
    }
}

/// The first start at or after `t` on a `grid` of minutes counted from the hour.
pub fn align_up(t: DateTime<Utc>, grid: Duration) -> DateTime<Utc> {
    DateTime::from_timestamp(align_up_seconds(t.timestamp(), grid), 0).unwrap_or(t)
}

/// [`align_up`] in seconds since the epoch.
pub fn align_up_seconds(seconds: i64, grid: Duration) -> i64 {
    let step = grid.num_seconds().max(1);
    let aligned = seconds.div_euclid(step) * step;
    if aligned < seconds { aligned + step } else { aligned }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(minute: i64) -> DateTime<Utc> {
        DateTime::UNIX_EPOCH + Duration::minutes(minute)
    }

    #[test]
    fn windows_between_blocks() {
        let openings = [(t(600), t(1200)), (t(2040), t(2640))];
        let blocked = vec![(t(700), t(800)), (t(750), t(900)), (t(1100), t(1300)), (t(500), t(610))];
        let free = free_windows(&openings, blocked, Duration::minutes(60));
        assert_eq!(free, [(t(610), t(700)), (t(900), t(1100)), (t(2040), t(2640))]);
        // Only the second opening is free for two hours.
        let free = free_windows(&openings, vec![(t(700), t(1200))], Duration::minutes(120));
        assert_eq!(free, [(t(2040), t(2640))]);
    }

    #[test]
    fn aligning_to_the_grid() {
        assert_eq!(align_up(t(601), Duration::minutes(15)), t(615));
        assert_eq!(align_up(t(615), Duration::minutes(15)), t(615));
    }
}
