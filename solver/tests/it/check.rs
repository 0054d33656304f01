//! The instance check and the solution checker, on hand-broken inputs.

use studioflow_solver::{Assignment, InstanceError, Violation, generate, validate};

use crate::{instance, solve};

/// A way to break an instance, and the start of the message that says so.
type Case = (Box<dyn Fn(&mut studioflow_solver::Instance)>, &'static str);

#[test]
fn malformed_instances_are_rejected_with_their_reason() {
    let base = generate::small(1);
    let cases: Vec<Case> = vec![
        (Box::new(|i| i.version = 3), "unsupported instance version 3 (this solver reads versions 1 to 2)"),
        (Box::new(|i| i.max_shift_minutes = -1), "max_shift_minutes must not be negative, got -1"),
        (Box::new(|i| i.buffer_minutes = -5), "buffer_minutes must not be negative, got -5"),
        (Box::new(|i| i.weights.series_split = -1), "weight series_split must not be negative, got -1"),
        (Box::new(|i| i.rooms[1].id = i.rooms[0].id.clone()), "duplicate room id \"rehearsal-01\""),
        (Box::new(|i| i.bookings[1].id = i.bookings[0].id.clone()), "duplicate booking id \"bk_00001\""),
        (Box::new(|i| i.bookings[0].room = "nowhere".into()), "booking \"bk_00001\" is in unknown room \"nowhere\""),
        (Box::new(|i| i.bookings[0].end = i.bookings[0].start), "booking \"bk_00001\" ends at"),
        (Box::new(|i| i.bookings[0].party_size = 0), "booking \"bk_00001\" has party_size 0"),
        (Box::new(|i| i.rooms[0].open[0] = [10, 10]), "room \"rehearsal-01\" has an empty open interval [10, 10]"),
    ];
    for (breaks, message) in cases {
        let mut inst = base.clone();
        breaks(&mut inst);
        let error: InstanceError = inst.check().expect_err(message);
        assert!(error.to_string().starts_with(message), "{error} should start with {message}");
    }
}

#[test]
fn validator_catches_a_clash_and_bad_bookkeeping() {
    let inst = instance(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                      {"id": "b", "capacity": 4, "open": [[0, 1440]]}],
            "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1"},
                         {"id": "f", "room": "b", "start": 630, "end": 700, "client": "c2"}]}"#,
    );
    let mut solution = solve(&inst).solution;
    solution.assignments[0] = Assignment { booking: "x".into(), room: "b".into(), start: 600, end: 660, engineer: None };
    solution.assignments.push(Assignment { booking: "f".into(), room: "b".into(), start: 0, end: 70, engineer: None });
    let violations = validate(&inst, &solution).expect_err("broken on purpose");
    assert!(violations.contains(&Violation::NotAffected("f".into())));
    assert!(violations.iter().any(|v| v.to_string() == "x: rule 4: b is taken by fixed booking f (buffer 0)"));
    assert!(violations.iter().any(|v| matches!(v, Violation::Counts { .. })));
}

#[test]
fn cost_counts_a_series_with_nothing_placed_as_zero() {
    // Both occurrences unresolved: 2 * 1000, and no "-1" for the series.
    let inst = instance(
        r#"{"version": 1, "month": "2026-09",
            "rooms": [{"id": "a", "capacity": 4, "open": [[0, 14400]], "offline": [[0, 14400]]}],
            "bookings": [{"id": "x0", "room": "a", "start": 600, "end": 660, "client": "c1", "series": "s"},
                         {"id": "x7", "room": "a", "start": 10680, "end": 10740, "client": "c1", "series": "s"}]}"#,
    );
    assert_eq!(solve(&inst).solution.cost, 2000);
}
