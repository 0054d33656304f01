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
    assert_eq!(
        reason,
        "every room with capacity >= 1 is unavailable at every start within ±120 minutes on that day \
         (offline: a; closed: b)"
    );
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
    assert_eq!(
        reason,
        "every room with capacity >= 1 is unavailable at every start within ±120 minutes on that day \
         (offline: a; taken by other bookings: b)"
    );
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
    assert_eq!(reason, "client c1 has another booking whenever a suitable room is free within ±120 minutes on that day");
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
    assert_eq!(reason, "engineer e1 has another booking whenever a suitable room is free within ±120 minutes on that day");
}

#[test]
fn only_compatible_room_is_the_offline_one() {
    // Only A has the organ, and A is the room going offline: nothing to try elsewhere.
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 6, "features": ["hammond-organ"], "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 8, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1",
                          "party_size": 5, "requires": ["hammond-organ"]}]}"#,
    );
    assert_eq!(reason, "the only room with capacity >= 5 and features [hammond-organ] is a, which is offline then");
}

#[test]
fn every_compatible_room_taken_the_same_way() {
    // X has outgrown A (offline anyway); B and C hold fixed bookings all day; D is too small.
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 2, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 6, "open": [[0, 1440]]},
                      {"id": "c", "capacity": 6, "open": [[0, 1440]]},
                      {"id": "d", "capacity": 2, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1", "party_size": 4},
                         {"id": "fb", "room": "b", "start": 300, "end": 1000, "client": "c2"},
                         {"id": "fc", "room": "c", "start": 300, "end": 1000, "client": "c3"}]}"#,
    );
    assert_eq!(
        reason,
        "the only rooms with capacity >= 4 are b, c, which are all taken by other bookings at every start \
         within ±120 minutes on that day"
    );
}

#[test]
fn client_and_engineer_never_free_together() {
    // B is free all day. The client is busy until 600 and the engineer from 660, so at every
    // start one of them is away, though neither is away at all of them. No shift allowed.
    let reason = only_reason(
        r#"{"version": 1, "month": "2026-09", "max_shift_minutes": 60,
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]},
                      {"id": "c", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1", "engineer": "e1"},
                         {"id": "f1", "room": "c", "start": 480, "end": 630, "client": "c1"},
                         {"id": "f2", "room": "c", "start": 630, "end": 800, "client": "c2", "engineer": "e1"}]}"#,
    );
    assert_eq!(
        reason,
        "client c1 or engineer e1 has another booking whenever a suitable room is free within ±60 minutes on that day"
    );
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
