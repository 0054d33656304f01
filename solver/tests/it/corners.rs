//! Affected bookings that cannot move, each for a different rule, with the reason they get.

use crate::{instance, solve};

fn only_reason(json: &str) -> String {
    let report = solve(&instance(json));
    assert_eq!(report.solution.unresolved, 1);
    assert_eq!(report.solution.cost, 1000);
    assert!(report.proven_optimal, "nothing to search: the bound is the cost");
    report.solution.unresolved_bookings[0].reason.clone()
}

#[test]
fn pinned_affected_booking() {
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1", "movable": false}]}"#,
    );
    assert_eq!(reason, "pinned: it cannot be moved (locked by staff, already started or inside the notice period)");
}

#[test]
fn room_closed_all_day() {
    // B opens only on day 1; the booking is on day 0.
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[1440, 2880]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"}]}"#,
    );
    assert_eq!(reason, "every compatible room (a, b) is closed or offline at every start within ±120 minutes on that day");
}

#[test]
fn feature_nobody_has() {
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "features": ["drums"], "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "features": ["drums"], "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1",
                          "party_size": 3, "requires": ["drums", "theremin"]}]}"#,
    );
    assert_eq!(reason, "no room with capacity >= 3 and features [drums, theremin]");
}

#[test]
fn compatible_room_busy() {
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"},
                         {"id": "f", "room": "b", "start": 300, "end": 1000, "client": "c2"}]}"#,
    );
    assert_eq!(reason, "every compatible room (a, b) is busy or closed within ±120 minutes on that day");
}

#[test]
fn client_busy_elsewhere() {
    // The client is at a fixed booking in C all morning; B is free.
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]},
                      {"id": "c", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1", "engineer": "e1"},
                         {"id": "f", "room": "c", "start": 300, "end": 1000, "client": "c1"}]}"#,
    );
    assert_eq!(reason, "client c1 is busy at every free time");
}

#[test]
fn engineer_busy_elsewhere() {
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]},
                      {"id": "c", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1", "engineer": "e1"},
                         {"id": "f", "room": "c", "start": 300, "end": 1000, "client": "c2", "engineer": "e1"}]}"#,
    );
    assert_eq!(reason, "engineer e1 is busy at every free time");
}

#[test]
fn no_affected_bookings_is_an_empty_solution() {
    let report = solve(&instance(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"}]}"#,
    ));
    assert_eq!((report.solution.moved, report.solution.unresolved, report.solution.cost), (0, 0, 0));
    assert_eq!(report.parts, 0);
}
