//! The bridge between the store and the solver: what a month looks like as an instance, that the
//! affected set is the store's own view, and that plans apply once, whole, and only while fresh.
//! Every test runs on both backends.

use crate::support::{at, london, on_both, session, small_studio};
use std::collections::BTreeSet;
use studioflow::domain::{EngineerId, RoomId, Status};
use studioflow::reflow::{apply_plan, export_instance, plan_reflow, Month, ReflowError, ReflowRequest};
use studioflow::store::{BookingQuery, Store};
use studioflow_solver as solver;

fn request(month: &str, rooms: &[&str]) -> ReflowRequest {
    ReflowRequest {
        month: Month::parse(month).unwrap(),
        offline_rooms: rooms.iter().map(|r| RoomId::new(*r)).collect(),
        max_shift_minutes: 120,
    }
}

fn options() -> solver::Options {
    solver::Options { threads: 2, ..solver::Options::default() }
}

/// The store's view of the affected bookings: active bookings of the room inside its windows.
fn store_affected(store: &Store, room: &str, month: Month) -> BTreeSet<String> {
    let tz = store.studio().unwrap().tz;
    let (from, to) = (tz.start_of_day(month.first_day()), tz.start_of_day(month.next_first_day()));
    let room = RoomId::new(room);
    let mut ids = BTreeSet::new();
    for w in store.offline_windows(Some(&room), from, to).unwrap() {
        let query = BookingQuery {
            from: Some(w.from.max(from)),
            to: Some(w.to.min(to)),
            room: Some(room.clone()),
            statuses: Some(vec![Status::Confirmed, Status::Tentative]),
            limit: 100_000,
            ..Default::default()
        };
        ids.extend(store.query_bookings(&query).unwrap().into_iter().map(|(b, _)| b.id.0));
    }
    ids
}

fn instance_affected(instance: &solver::Instance) -> BTreeSet<String> {
    instance
        .bookings
        .iter()
        .filter(|b| {
            let room = instance.rooms.iter().find(|r| r.id == b.room).unwrap();
            room.offline.iter().any(|&[s, e]| b.start < e && s < b.end)
        })
        .map(|b| b.id.clone())
        .collect()
}

on_both! {
    fn the_demo_month_exports_a_valid_instance_whose_affected_set_is_the_stores(db) {
        let mut store = Store::open(db).unwrap();
        studioflow::demo::load_demo(&mut store).unwrap();
        let export = export_instance(&store, &request("2026-09", &["studio-b"])).unwrap();
        export.instance.check().unwrap();
        let affected = instance_affected(&export.instance);
        assert!(affected.len() >= 100, "only {} affected", affected.len());
        assert_eq!(affected, store_affected(&store, "studio-b", Month::parse("2026-09").unwrap()));
        let from_export: BTreeSet<String> = export.affected_bookings().iter().map(|b| b.id.0.clone()).collect();
        assert_eq!(affected, from_export);
    }

    fn export_writes_minutes_hours_windows_and_locks(db) {
        let mut store = small_studio(db);
        store.write_with(|w| {
            // Inside the 48-hour notice of the clock (2026-08-31 09:00): locked.
            w.create_booking(&session("live", "c1", "2026-09-01T20:00", 60))?;
            let mut pinned = session("live", "c2", "2026-09-08T12:00", 60);
            pinned.pinned = true;
            w.create_booking(&pinned)?;
            let mut with_engineer = session("live", "c3", "2026-09-08T23:00", 120);
            with_engineer.engineer = Some(EngineerId::new("e2"));
            with_engineer.requires = vec!["drums".into()];
            w.create_booking(&with_engineer)?;
            let gone = w.create_booking(&session("hall", "c1", "2026-09-09T12:00", 60))?;
            w.cancel_booking(&gone.id, studioflow::store::CancelScope::Occurrence)?;
            w.add_offline_window(&RoomId::new("hall"), at("2026-09-10T00:00"), at("2026-09-11T00:00"), "painting")?;
            Ok(())
        })
        .unwrap();
        let export = export_instance(&store, &request("2026-09", &["live"])).unwrap();
        let instance = &export.instance;
        instance.check().unwrap();
        assert_eq!((instance.month.as_str(), instance.grid_minutes, instance.buffer_minutes), ("2026-09", 15, 15));

        let room = |id: &str| instance.rooms.iter().find(|r| r.id == id).unwrap();
        // live has no window: offline the whole month (and the spill into the next morning).
        assert_eq!(room("live").offline, vec![[0, 31 * 1440]]);
        // Opening 10:00-02:00: the last night of August spills into the first morning of September.
        assert_eq!(&room("live").open[..2], &[[0, 120], [600, 1440 + 120]]);
        // hall's own window is cut out of its hours, not made an offline interval.
        assert!(room("hall").offline.is_empty());
        assert!(room("hall").open.iter().all(|&[s, e]| e <= 9 * 1440 || s >= 10 * 1440));
        // booth opens on weekdays only: 1 September 2026 is a Tuesday.
        assert_eq!(room("booth").open[0], [9 * 60, 18 * 60]);

        let booking = |start: i64| instance.bookings.iter().find(|b| b.start == start).unwrap();
        assert!(!booking(20 * 60).movable, "inside the notice period");
        assert!(!booking(7 * 1440 + 12 * 60).movable, "pinned");
        let late = booking(7 * 1440 + 23 * 60);
        assert!(late.movable);
        assert_eq!((late.end, late.engineer.as_deref(), late.requires.clone()), (8 * 1440 + 60, Some("e2"), vec!["drums".to_owned()]));
        assert_eq!(instance.bookings.len(), 3, "cancelled bookings are left out");

        assert!(matches!(export_instance(&store, &request("2026-09", &["attic"])), Err(ReflowError::Store(_))));
        assert!(matches!(export_instance(&store, &request("2026-09", &[])), Err(ReflowError::Invalid { .. })));
        assert!(Month::parse("2026-13").is_err());
        assert!(Month::parse("26-09").is_err());
        assert!(Month::parse("1999-12").is_err());
    }

    fn a_plan_moves_bookings_out_of_the_offline_room_once(db) {
        let mut store = small_studio(db);
        store.write_with(|w| {
            w.create_booking(&session("live", "c1", "2026-09-08T12:00", 60))?;
            w.create_booking(&session("live", "c2", "2026-09-08T14:00", 90))?;
            w.create_booking(&session("hall", "c3", "2026-09-08T12:00", 60))?;
            w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-09T00:00"), "flood")?;
            Ok(())
        })
        .unwrap();
        let count = store.booking_count().unwrap();
        let plan = plan_reflow(&store, &request("2026-09", &["live"]), &options()).unwrap();
        assert_eq!((plan.affected, plan.moves.len(), plan.unresolved.len()), (2, 2, 0));
        // The booth is free at 12:00 and fits a party of one: a room change and no shift, cost 1.
        let first = &plan.moves[0];
        assert_eq!((first.to_room.as_str(), first.to_start), ("booth", at("2026-09-08T12:00")));
        assert!(plan.proven_optimal);

        let stale_plan = plan.clone();
        let id = apply_plan(&mut store, &plan, false).unwrap();
        assert_eq!(id, "rf_0001");
        assert_eq!(store.booking_count().unwrap(), count);
        for m in &plan.moves {
            let b = store.booking(&m.booking).unwrap().unwrap();
            assert_eq!((&b.room, b.start, b.end), (&m.to_room, m.to_start, m.to_end));
        }
        // Applying the same plan again finds the bookings moved already: refused, nothing changes.
        assert!(matches!(apply_plan(&mut store, &stale_plan, false), Err(ReflowError::Stale(_))));
        // A dry run records the plan and moves nothing.
        let again = plan_reflow(&store, &request("2026-09", &["live"]), &options()).unwrap();
        assert_eq!(again.affected, 0);
        assert_eq!(apply_plan(&mut store, &again, true).unwrap(), "rf_0002");
    }

    fn a_plan_made_before_the_month_changed_is_refused_whole(db) {
        let mut store = small_studio(db);
        store.write_with(|w| {
            w.create_booking(&session("live", "c1", "2026-09-08T12:00", 60))?;
            w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-09T00:00"), "flood")?;
            Ok(())
        })
        .unwrap();
        let plan = plan_reflow(&store, &request("2026-09", &["live"]), &options()).unwrap();
        let target = &plan.moves[0];
        // Someone books the target slot in the meantime.
        let mut taker = session(target.to_room.as_str(), "c2", "2026-09-08T12:00", 60);
        taker.start = target.to_start;
        taker.end = target.to_end;
        store.write_with(|w| w.create_booking(&taker)).unwrap();
        let err = apply_plan(&mut store, &plan, false).unwrap_err();
        assert!(matches!(err, ReflowError::Stale(_)), "{err}");
        assert!(err.to_string().contains("run the reflow again"), "{err}");
        assert_eq!(store.booking(&target.booking).unwrap().unwrap().room, RoomId::new("live"));
    }

    fn a_whole_month_offline_applies_with_unresolved_bookings_holding_nothing(db) {
        let mut store = Store::open(db).unwrap();
        studioflow::demo::load_demo(&mut store).unwrap();
        let october = request("2026-10", &["studio-b"]);
        // Without a window in October the room's bookings are moved only in a preview.
        assert!(matches!(studioflow::reflow::require_windows(&store, &october), Err(ReflowError::NoWindow { .. })));
        store
            .write_with(|w| w.add_offline_window(&RoomId::new("studio-b"), at("2026-10-01T00:00"), at("2026-11-01T00:00"), "rebuild"))
            .unwrap();
        studioflow::reflow::require_windows(&store, &october).unwrap();
        let plan = plan_reflow(&store, &october, &options()).unwrap();
        assert!(plan.moves.len() > 100 && !plan.unresolved.is_empty(), "{} moved, {} unresolved", plan.moves.len(), plan.unresolved.len());
        // A move may overlap an unresolved booking of the same client (a displaced booking occupies
        // nothing): the store agrees with the contract and applies the whole plan.
        let count = store.booking_count().unwrap();
        apply_plan(&mut store, &plan, false).unwrap();
        assert_eq!(store.booking_count().unwrap(), count);
        for m in &plan.moves {
            assert_eq!(store.booking(&m.booking).unwrap().unwrap().room, m.to_room);
        }
    }

    fn a_session_across_the_october_clock_change_keeps_its_real_length(db) {
        let mut store = small_studio(db);
        store
            .write_with(|w| {
                // 01:20 BST to 01:10 GMT: fifty real minutes that end "before" they start on the wall clock.
                let mut across = session("live", "c1", "2026-10-24T12:00", 50);
                across.start = london().parse("2026-10-25T01:20:00+01:00").unwrap();
                across.end = london().parse("2026-10-25T01:10:00+00:00").unwrap();
                w.create_booking(&across)?;
                w.create_booking(&session("live", "c2", "2026-10-24T12:00", 60))?;
                w.add_offline_window(&RoomId::new("live"), at("2026-10-24T00:00"), at("2026-10-26T00:00"), "wiring")
            })
            .unwrap();
        let export = export_instance(&store, &request("2026-10", &["live"])).unwrap();
        export.instance.check().unwrap();
        let across = export.instance.bookings.iter().find(|b| b.start == 24 * 1440 + 80).unwrap();
        assert_eq!(across.end - across.start, 50, "the longer of wall-clock and real length");
        let plan = plan_reflow(&store, &request("2026-10", &["live"]), &options()).unwrap();
        assert_eq!(plan.affected, 2);
        for m in &plan.moves {
            let b = store.booking(&m.booking).unwrap().unwrap();
            assert_eq!(m.to_end - m.to_start, b.end - b.start, "a move keeps the real length");
        }
        apply_plan(&mut store, &plan, false).unwrap();
    }

    fn the_first_hours_of_the_next_month_are_not_double_booked(db) {
        let mut store = small_studio(db);
        store
            .write_with(|w| {
                // A late session in live, which goes offline; hall is taken from midnight.
                w.create_booking(&session("live", "c1", "2026-09-30T23:00", 105))?;
                w.create_booking(&session("hall", "c2", "2026-10-01T00:00", 45))?;
                w.add_offline_window(&RoomId::new("live"), at("2026-09-30T00:00"), at("2026-10-02T00:00"), "leak")
            })
            .unwrap();
        let export = export_instance(&store, &request("2026-09", &["live"])).unwrap();
        let next = export.instance.bookings.iter().find(|b| b.room == "hall").expect("October's first session is in September's instance");
        assert!(!next.movable);
        let plan = plan_reflow(&store, &request("2026-09", &["live"]), &options()).unwrap();
        assert_eq!((plan.affected, plan.moves.len()), (1, 1), "only September's session is reflowed");
        let m = &plan.moves[0];
        assert!(m.to_room.as_str() != "hall" || m.to_end <= at("2026-10-01T00:00"), "{m:?}");
        apply_plan(&mut store, &plan, false).unwrap();
    }
}
