//! Free time: given the openings of a room and what blocks it, the windows where a session of a
//! given length still fits. Pure interval arithmetic on instants; the caller gathers the data.

use chrono::{DateTime, Duration, Utc};

/// A half-open time span `[start, end)`.
pub type Span = (DateTime<Utc>, DateTime<Utc>);

/// The parts of `openings` that no span of `blocked` touches, sorted, keeping only those at least
/// `length` long. Blocked spans may overlap each other and need not be sorted.
pub fn free_windows(openings: &[Span], mut blocked: Vec<Span>, length: Duration) -> Vec<Span> {
    blocked.sort_unstable();
    let mut free = Vec::new();
    for &(open, close) in openings {
        let mut cursor = open;
        for &(b0, b1) in blocked.iter().filter(|(b0, b1)| *b0 < close && open < *b1) {
            if b0 > cursor {
                free.push((cursor, b0.min(close)));
            }
            cursor = cursor.max(b1);
        }
        if cursor < close {
            free.push((cursor, close));
        }
    }
    free.retain(|(a, b)| *b - *a >= length);
    free.sort_unstable();
    free
}

/// The first start at or after `t` on a `grid` of minutes counted from the hour.
pub fn align_up(t: DateTime<Utc>, grid: Duration) -> DateTime<Utc> {
    let step = grid.num_seconds().max(1);
    let seconds = t.timestamp();
    let aligned = seconds.div_euclid(step) * step;
    let aligned = if aligned < seconds { aligned + step } else { aligned };
    DateTime::from_timestamp(aligned, 0).unwrap_or(t)
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
