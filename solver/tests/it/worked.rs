//! Small problems whose optimum is computed by hand in the comments (default weights:
//! unresolved 1000, series split 20, shift step 2, room change 1; grid 15, max shift 120).

use crate::{instance, placements, solve};

#[test]
fn room_change_costs_one() {
    // A is offline all day; B is free. Moving to B unshifted costs 1 room change.
    let inst = instance(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"}]}"#,
    );
    let report = solve(&inst);
    assert_eq!(placements(&report.solution), [("x", "b", 600)]);
    assert_eq!(report.solution.cost, 1);
    assert!(report.proven_optimal);
}

#[test]
fn same_room_shifted_out_of_an_offline_window() {
    // A is offline [570, 660). Earlier the booking must end by 570: start 510, 6 steps, cost 12.
    // Later it may start at 660: 4 steps, cost 8, and no room change. Optimum 8.
    let inst = instance(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[480, 1200]], "offline": [[570, 660]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"}]}"#,
    );
    let report = solve(&inst);
    assert_eq!(placements(&report.solution), [("x", "a", 660)]);
    assert_eq!(report.solution.cost, 8);
}

#[test]
fn buffer_pushes_a_booking_one_step_earlier() {
    // B holds a fixed booking at [660, 720) and the buffer is 15: at 600 the moved booking would
    // end 0 minutes before it, so it starts at 585 (ends 645, 15 before). Cost 1 room + 1 step * 2 = 3.
    let inst = instance(
        r#"{"version": 1, "month": "2026-09", "buffer_minutes": 15,
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"},
                         {"id": "fixed", "room": "b", "start": 660, "end": 720, "client": "c2"}]}"#,
    );
    let report = solve(&inst);
    assert_eq!(placements(&report.solution), [("x", "b", 585)]);
    assert_eq!(report.solution.cost, 3);
}

/// Two weekly occurrences (days 0 and 7) of one series in A, offline both days; B and C free.
const SERIES: &str = r#"{"version": 1, "month": "2026-09",
    "rooms": [{"id": "a", "capacity": 4, "open": [[0, 14400]], "offline": [[0, 14400]]},
              {"id": "b", "capacity": 4, "open": [[0, 14400]]},
              {"id": "c", "capacity": 4, "open": [[0, 14400]]}],
    "bookings": [{"id": "x0", "room": "a", "start": 600, "end": 660, "client": "c1", "series": "s"},
                 {"id": "x7", "room": "a", "start": 10680, "end": 10740, "client": "c1", "series": "s"}
                 BLOCKERS]}"#;

#[test]
fn series_stays_in_one_room_when_it_can() {
    // Both go to B (the first room in order among equal optima): 2 room changes, no split. Cost 2.
    let report = solve(&instance(&SERIES.replace("BLOCKERS", "")));
    assert_eq!(report.solution.cost, 2);
    let rooms: Vec<&str> = placements(&report.solution).iter().map(|p| p.1).collect();
    assert_eq!(rooms[0], rooms[1]);
}

#[test]
fn series_split_when_no_room_is_free_both_weeks() {
    // B is busy all morning on day 7 and C all morning on day 0, beyond any 2-hour shift, so one
    // occurrence takes B, the other C: 2 room changes + 1 split * 20 = 22 (better than 1000 unresolved).
    let blockers = r#", {"id": "busy-b7", "room": "b", "start": 10440, "end": 10980, "client": "c2"},
                         {"id": "busy-c0", "room": "c", "start": 360, "end": 900, "client": "c3"}"#;
    let report = solve(&instance(&SERIES.replace("BLOCKERS", blockers)));
    assert_eq!(placements(&report.solution), [("x0", "b", 600), ("x7", "c", 10680)]);
    assert_eq!(report.solution.cost, 22);
    assert!(report.proven_optimal);
}

#[test]
fn a_series_without_a_common_room_is_bounded_by_its_split() {
    // Same instance, greedy only (no search): x0 can only use B and x7 only C, so any answer
    // that places both pays a split. The cheap bound knows: 1 + 1 for the room changes + 20.
    let blockers = r#", {"id": "busy-b7", "room": "b", "start": 10440, "end": 10980, "client": "c2"},
                         {"id": "busy-c0", "room": "c", "start": 360, "end": 900, "client": "c3"}"#;
    let inst = instance(&SERIES.replace("BLOCKERS", blockers));
    let options = studioflow_solver::Options { threads: 1, ..Default::default() };
    let greedy = studioflow_solver::Strategy { ilp: false, ..Default::default() };
    let report = studioflow_solver::solve_with_strategy(&inst, &options, greedy);
    assert_eq!((report.solution.cost, report.lower_bound), (22, 22));
    assert!(report.proven_optimal);
}

#[test]
fn series_prefers_a_shift_to_a_split() {
    // C is busy on day 0 only until 690: x0 can take C at 690 (+90 min, 6 steps, 12), so both stay
    // in C: 12 + 2 room changes = 14, which beats splitting B/C (22). B is busy all day 7 morning.
    let blockers = r#", {"id": "busy-b7", "room": "b", "start": 10440, "end": 10980, "client": "c2"},
                         {"id": "busy-c0", "room": "c", "start": 540, "end": 690, "client": "c3"}"#;
    let report = solve(&instance(&SERIES.replace("BLOCKERS", blockers)));
    assert_eq!(placements(&report.solution), [("x0", "c", 690), ("x7", "c", 10680)]);
    assert_eq!(report.solution.cost, 14);
}

#[test]
fn past_midnight_opening_hours() {
    // B opens 22:00 to 02:00 next day. The booking 23:00-01:00 fits there unshifted: cost 1.
    let inst = instance(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 2880]], "offline": [[0, 2880]]},
                      {"id": "b", "capacity": 4, "open": [[1320, 1560]]}],
            "bookings": [{"id": "x", "room": "a", "start": 1380, "end": 1500, "client": "c1"}]}"#,
    );
    let report = solve(&inst);
    assert_eq!(placements(&report.solution), [("x", "b", 1380)]);
    assert_eq!(report.solution.cost, 1);
}

#[test]
fn shift_never_crosses_midnight_of_the_start_day() {
    // B is free only after midnight. A start of 00:15 would be within 2 hours of 23:00 but on the
    // next day (rule 1), so the booking stays unresolved: cost 1000.
    let inst = instance(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 2880]], "offline": [[0, 2880]]},
                      {"id": "b", "capacity": 4, "open": [[1440, 2880]]}],
            "bookings": [{"id": "x", "room": "a", "start": 1380, "end": 1440, "client": "c1"}]}"#,
    );
    let report = solve(&inst);
    assert_eq!(report.solution.unresolved, 1);
    assert_eq!(report.solution.cost, 1000);
}

#[test]
fn contention_leaves_the_loser_with_names() {
    // Two bookings at the same time, one free room B with room for one (B's day is otherwise
    // full beyond the shift window). One moves (cost 1), one stays unresolved (1000): 1001.
    let inst = instance(
        r#"{"version": 1, "month": "2026-09", "max_shift_minutes": 0,
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"},
                         {"id": "y", "room": "a", "start": 600, "end": 660, "client": "c2"}]}"#,
    );
    let report = solve(&inst);
    assert_eq!(report.solution.cost, 1001);
    assert_eq!(placements(&report.solution), [("x", "b", 600)]);
    assert_eq!(
        report.solution.unresolved_bookings[0].reason,
        "the only place it could go (in b, within ±0 minutes on that day) went to another moved booking: x"
    );
}
