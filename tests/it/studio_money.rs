//! Issue 25, what a session costs and who waits for one, in the store on both backends: a
//! booking keeps its price, a person's change re-prices it, a reflow's move keeps it and records
//! the difference absorbed (undone, as it was); a hold owes a deposit, a payment that covers it
//! confirms the booking, and a payment above what is owed is refused. The waitlist: a freed place
//! goes to the first entry that fits, held; a lapsed offer goes to the next. Amounts are computed
//! by hand in the comments.

use crate::support::{at, on_both, session, small_studio};
use studioflow::domain::{BookingId, ClientId, EngineerId, Rate, RoomId, Session, Status};
use studioflow::reflow::{apply_plan, plan_reflow, summary, Month, ReflowRequest};
use studioflow::store::{BookingEdit, CancelScope, EventQuery, NewWaitlistEntry, PersonEdit, PersonKind, RoomEdit, SettingsEdit, Store, StoreError};

fn invalid(result: Result<impl std::fmt::Debug, StoreError>) -> String {
    match result {
        Err(e @ StoreError::Invalid { .. }) => e.to_string(),
        other => panic!("expected bad input, got {other:?}"),
    }
}

/// The hall at 60.00 an hour and 90.00 at weekends, the live room at 80.00, the booth at 40.00;
/// e1 at 25.00.
fn priced(store: &mut Store) {
    let rate = |_room: &str, hourly_rate: i64, rates: Vec<Rate>| RoomEdit { hourly_rate: Some(hourly_rate), rates: Some(rates), ..RoomEdit::default() };
    let weekend = Rate::new("sat-sun", "00:00", "24:00", 9000).unwrap();
    for (room, edit) in [("hall", rate("hall", 6000, vec![weekend])), ("live", rate("live", 8000, vec![])), ("booth", rate("booth", 4000, vec![]))] {
        store.write_with(|w| w.update_room(&RoomId::new(room), &edit, false)).unwrap();
    }
    let edit = PersonEdit { hourly_rate: Some(2500), ..PersonEdit::default() };
    store.write_with(|w| w.update_person(PersonKind::Engineer, "e1", &edit)).unwrap();
}

fn held(mut s: Session) -> Session {
    s.status = Status::Tentative;
    s
}

fn money(store: &Store, id: &BookingId) -> (Option<i64>, i64, i64) {
    let b = store.booking(id).unwrap().unwrap();
    (b.money.price, b.money.deposit_due, b.money.paid)
}

fn actions(store: &Store, id: &str) -> Vec<String> {
    store.events(&EventQuery { id: Some(id.to_owned()), limit: 1000, ..EventQuery::default() }).unwrap().into_iter().map(|e| e.action).collect()
}

fn entry(client: &str, from: &str, to: &str, minutes: i64, room: Option<&str>) -> NewWaitlistEntry {
    NewWaitlistEntry {
        client: ClientId::new(client),
        from: at(from),
        to: at(to),
        duration_minutes: minutes,
        room: room.map(RoomId::new),
        requires: Vec::new(),
        engineer: None,
    }
}

on_both! {
    fn a_booking_keeps_its_price_a_change_reprices_it_and_a_paid_deposit_confirms_it(db) {
        let mut store = small_studio(db);
        priced(&mut store);
        // Saturday 10:00-13:00 in the hall with e1, on hold: 3 h at 90.00 = 270.00, and e1's
        // 3 h at 25.00 = 75.00; 345.00. The deposit is 50 %: 172.50.
        let mut s = held(session("hall", "c1", "2026-09-12T10:00", 180));
        s.engineer = Some(EngineerId::new("e1"));
        let b1 = store.write_with(|w| w.create_booking_with(&s, None, Some(at("2026-09-05T09:00")))).unwrap();
        assert_eq!(money(&store, &b1.id), (Some(34500), 17250, 0));
        // Confirmed, Monday 12:00-14:00: 2 h at 60.00 = 120.00, no deposit.
        let b2 = store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-14T12:00", 120))).unwrap();
        assert_eq!(money(&store, &b2.id), (Some(12000), 0, 0));
        // Moved to a Saturday: 2 h at 90.00 = 180.00. With e1 put on it: + 2 h at 25.00 = 230.00.
        store.write_with(|w| w.move_booking(&b2.id, &RoomId::new("hall"), at("2026-09-19T12:00"))).unwrap();
        assert_eq!(money(&store, &b2.id), (Some(18000), 0, 0));
        let edit = BookingEdit { engineer: Some(Some(EngineerId::new("e1"))), ..BookingEdit::default() };
        store.write_with(|w| w.update_booking(&b2.id, &edit, CancelScope::Occurrence)).unwrap();
        assert_eq!(money(&store, &b2.id), (Some(23000), 0, 0));
        // A change of rates later changes no booking's price.
        let edit = RoomEdit { hourly_rate: Some(1), rates: Some(vec![]), ..RoomEdit::default() };
        store.write_with(|w| w.update_room(&RoomId::new("hall"), &edit, false)).unwrap();
        assert_eq!(money(&store, &b1.id), (Some(34500), 17250, 0));

        // 100.00 paid: the deposit (172.50) is not covered, the hold stays.
        let paid = store.write_with(|w| w.record_payment(&b1.id, 10000, Some("bank 001"))).unwrap();
        assert!(!paid.confirmed);
        assert_eq!((paid.booking.status, paid.booking.hold_until), (Status::Tentative, Some(at("2026-09-05T09:00"))));
        // 400.00 is more than the 245.00 still owed: refused, naming what is owed, nothing written.
        let message = invalid(store.write_with(|w| w.record_payment(&b1.id, 40000, None)));
        assert_eq!(message, format!("amount: 40000 is more than the 24500 still owed on {} (price 34500, paid 10000): record at most 24500", b1.id));
        assert_eq!(money(&store, &b1.id), (Some(34500), 17250, 10000));
        // 72.50 more covers the deposit: confirmed, the hold cleared.
        let paid = store.write_with(|w| w.record_payment(&b1.id, 7250, None)).unwrap();
        assert!(paid.confirmed);
        assert_eq!((paid.booking.status, paid.booking.hold_until, paid.booking.money.paid), (Status::Confirmed, None, 17250));
        assert_eq!(store.payments(&b1.id).unwrap().iter().map(|p| (p.amount, p.reference.clone())).collect::<Vec<_>>(), [(10000, Some("bank 001".to_owned())), (7250, None)]);
        assert_eq!(actions(&store, b1.id.as_str()), ["created", "payment recorded", "payment recorded", "confirmed"]);
        // Paid in full, nothing more is taken; a confirmed booking's payment confirms nothing.
        let paid = store.write_with(|w| w.record_payment(&b2.id, 23000, None)).unwrap();
        assert!(!paid.confirmed);
        assert!(invalid(store.write_with(|w| w.record_payment(&b2.id, 1, None))).contains("more than the 0 still owed"));
        // Amounts are whole minor units within the cap; a cancelled booking owes nothing.
        assert!(invalid(store.write_with(|w| w.record_payment(&b1.id, 0, None))).starts_with("amount must be 1 to 1000000000"));
        assert!(invalid(store.write_with(|w| w.record_payment(&b1.id, -5, None))).starts_with("amount must be 1 to"));
        assert!(invalid(store.write_with(|w| w.record_payment(&b1.id, 100, Some("a\u{7}b")))).contains("reference"));
        store.write_with(|w| w.cancel_booking(&b1.id, CancelScope::Occurrence)).unwrap();
        assert!(invalid(store.write_with(|w| w.record_payment(&b1.id, 100, None))).contains("is cancelled: nothing is owed"));
        assert!(matches!(store.write_with(|w| w.record_payment(&BookingId::new("bk_99999"), 100, None)), Err(StoreError::UnknownBooking(_))));
    }

    fn a_deposit_is_rounded_half_up_and_every_session_of_a_held_series_owes_one(db) {
        let mut store = small_studio(db);
        // 4.04 an hour for 15 minutes is 1.01; half of it, 0.505, rounds up to 0.51.
        let edit = RoomEdit { hourly_rate: Some(404), ..RoomEdit::default() };
        store.write_with(|w| w.update_room(&RoomId::new("hall"), &edit, false)).unwrap();
        let b = store.write_with(|w| w.create_booking_with(&held(session("hall", "c1", "2026-09-08T12:00", 15)), None, Some(at("2026-09-02T12:00")))).unwrap();
        assert_eq!(money(&store, &b.id), (Some(101), 51, 0));
        // At 40 %, each of three weekly sessions of an hour (4.04) owes 1.616, so 1.62.
        store.write_with(|w| w.update_settings(&SettingsEdit { deposit_percent: Some(40), ..SettingsEdit::default() })).unwrap();
        let (_, sessions) = store
            .write_with(|w| w.create_series_with(None, "FREQ=WEEKLY;COUNT=3", &held(session("hall", "c2", "2026-09-09T12:00", 60)), None, Some(at("2026-09-03T12:00"))))
            .unwrap();
        assert_eq!(sessions.iter().map(|s| (s.money.price, s.money.deposit_due)).collect::<Vec<_>>(), [(Some(404), 162); 3]);
        // A move of a held booking re-prices it, and its deposit at today's percent: 40 % of 1.01
        // is 0.404, so 0.40.
        let moved = store.write_with(|w| w.move_booking(&b.id, &RoomId::new("hall"), at("2026-09-08T13:00"))).unwrap();
        assert_eq!(moved.money, studioflow::domain::Money { price: Some(101), deposit_due: 40, paid: 0 });
    }

    fn a_reflow_keeps_the_booked_price_reports_what_it_absorbed_and_an_undo_restores_it(db) {
        let mut store = small_studio(db);
        priced(&mut store);
        // Tuesday 12:00-13:00 in the live room: 80.00. The booth is full that day, so the
        // reflow moves it to the hall at 12:00, where it would cost 60.00: -20.00 absorbed.
        let b = store.write_with(|w| w.create_booking(&session("live", "c1", "2026-09-08T12:00", 60))).unwrap();
        store.write_with(|w| w.create_booking(&session("booth", "c3", "2026-09-08T09:00", 540))).unwrap();
        assert_eq!(money(&store, &b.id), (Some(8000), 0, 0));
        store.write_with(|w| w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-09T00:00"), "flood")).unwrap();
        let request = ReflowRequest { month: Month::parse("2026-09").unwrap(), offline_rooms: vec![RoomId::new("live")], max_shift_minutes: 120 };
        let options = studioflow_solver::Options { threads: 2, ..studioflow_solver::Options::default() };
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert_eq!(plan.moves.iter().map(|m| (m.to_room.clone(), m.to_start)).collect::<Vec<_>>(), [(RoomId::new("hall"), at("2026-09-08T12:00"))]);
        let id = apply_plan(&mut store, &plan, false).unwrap();
        let record = store.reflow(&id).unwrap().unwrap();
        assert_eq!((record.absorbed, record.moves[0].price_difference), (-2000, -2000));
        assert!(summary(&record).ends_with("Price difference absorbed: -2000 (minor units; each moved booking keeps its price)."), "{}", summary(&record));
        assert_eq!(store.booking(&b.id).unwrap().unwrap().room, RoomId::new("hall"));
        assert_eq!(money(&store, &b.id), (Some(8000), 0, 0), "the client keeps the price they booked");
        // The repair ends early and the reflow is undone: back in the live room, at its price.
        let window = store.offline_windows(Some(&RoomId::new("live")), at("2026-09-08T00:00"), at("2026-09-09T00:00")).unwrap()[0].id;
        store.write_with(|w| w.remove_offline_window(window)).unwrap();
        store.write_with(|w| w.undo_reflow(&id)).unwrap();
        let back = store.booking(&b.id).unwrap().unwrap();
        assert_eq!((back.room.clone(), back.money), (RoomId::new("live"), studioflow::domain::Money { price: Some(8000), deposit_due: 0, paid: 0 }));
        // A dry run records what it would absorb too, and the studio without prices absorbs nothing.
        let edit = RoomEdit { hourly_rate: Some(0), ..RoomEdit::default() };
        store.write_with(|w| w.update_room(&RoomId::new("hall"), &edit, false)).unwrap();
        store.write_with(|w| w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-09T00:00"), "flood again")).unwrap();
        let plan = plan_reflow(&store, &request, &options).unwrap();
        let dry = apply_plan(&mut store, &plan, true).unwrap();
        assert_eq!(store.reflow(&dry).unwrap().unwrap().absorbed, -8000);
    }

    fn a_freed_place_goes_to_the_first_waiting_client_and_a_lapsed_offer_to_the_next(db) {
        let mut store = small_studio(db);
        priced(&mut store);
        // The hall is booked 10:00-14:00 on Thursday the 10th in two sessions.
        let first = store.write_with(|w| w.create_booking(&session("hall", "c1", "2026-09-10T10:00", 120))).unwrap();
        store.write_with(|w| w.create_booking(&session("hall", "c1", "2026-09-10T12:00", 120))).unwrap();
        // c3 waits for two hours in the hall that morning; then c2 does; then c2 for the booth.
        let c3 = store.write_with(|w| w.join_waitlist(&entry("c3", "2026-09-10T09:00", "2026-09-10T14:00", 120, Some("hall")))).unwrap();
        let c2 = store.write_with(|w| w.join_waitlist(&entry("c2", "2026-09-10T09:00", "2026-09-10T14:00", 120, None))).unwrap();
        let booth = store.write_with(|w| w.join_waitlist(&entry("c2", "2026-09-11T09:00", "2026-09-11T18:00", 60, Some("booth")))).unwrap();
        assert_eq!(store.waitlist(None).unwrap().iter().map(|e| e.id).collect::<Vec<_>>(), [c3.id, c2.id, booth.id]);
        // A cancellation frees 10:00-12:00: c3, first in line, gets it on hold for 24 hours
        // (from the studio's clock, 2026-08-31 09:00), owing half of 120.00.
        store.write_with(|w| w.cancel_booking(&first.id, CancelScope::Occurrence)).unwrap();
        let offered = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c3")), limit: 10, ..Default::default() }).unwrap();
        let offer = &offered[0].0;
        assert_eq!((offer.room.as_str(), offer.start, offer.end, offer.status), ("hall", at("2026-09-10T10:00"), at("2026-09-10T12:00"), Status::Tentative));
        assert_eq!((offer.hold_until, offer.money.deposit_due), (Some(at("2026-09-01T09:00")), 6000));
        assert_eq!(store.waitlist(None).unwrap().iter().map(|e| e.id).collect::<Vec<_>>(), [c2.id, booth.id]);
        let events = store.events(&EventQuery { id: Some("c3".into()), limit: 10, ..EventQuery::default() }).unwrap();
        let offered_event = events.iter().find(|e| e.action == "waitlist offered").unwrap();
        assert_eq!((offered_event.after["booking"].as_str(), offered_event.via.as_str()), (Some(offer.id.as_str()), "waitlist"));
        assert_eq!(actions(&store, offer.id.as_str()), ["created"]);
        let by = store.events(&EventQuery { id: Some(offer.id.0.clone()), limit: 1, ..EventQuery::default() }).unwrap();
        assert_eq!(by[0].via, "waitlist");
        // The offer lapses: the place goes to c2, next in line.
        let released = store.write_with(|w| w.release_expired_holds(at("2026-09-01T09:00"))).unwrap();
        assert_eq!(released.iter().map(|b| b.id.clone()).collect::<Vec<_>>(), [offer.id.clone()]);
        let c2s = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c2")), statuses: Some(vec![Status::Tentative]), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(c2s.iter().map(|(b, _)| (b.room.as_str(), b.start)).collect::<Vec<_>>(), [("hall", at("2026-09-10T10:00"))]);
        assert_eq!(store.waitlist(None).unwrap().iter().map(|e| e.id).collect::<Vec<_>>(), [booth.id]);
        // Leaving: the entry goes, once.
        store.write_with(|w| w.leave_waitlist(booth.id)).unwrap();
        assert!(invalid(store.write_with(|w| w.leave_waitlist(booth.id))).contains("there is no waitlist entry"));
        assert_eq!(actions(&store, "c2"), ["created", "waitlist joined", "waitlist joined", "waitlist offered", "waitlist left"]);
    }

    fn an_engineers_time_given_back_and_a_move_free_places_for_the_waitlist(db) {
        let mut store = small_studio(db);
        // c2 waits for e1 on Tuesday the 15th, an hour in any room; e1 is off that week.
        let off = store.write_with(|w| w.add_time_off(&EngineerId::new("e1"), at("2026-09-14T00:00"), at("2026-09-19T00:00"), "holiday")).unwrap();
        let mut wish = entry("c2", "2026-09-15T11:00", "2026-09-15T13:00", 60, None);
        wish.engineer = Some(EngineerId::new("e1"));
        store.write_with(|w| w.join_waitlist(&wish)).unwrap();
        // Time off removed: the first room (by id) that takes the session at 11:00 is offered.
        store.write_with(|w| w.remove_time_off(off.time_off.id)).unwrap();
        let got = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c2")), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(got.iter().map(|(b, _)| (b.room.as_str(), b.start, b.engineer.clone())).collect::<Vec<_>>(), [("booth", at("2026-09-15T11:00"), Some(EngineerId::new("e1")))]);
        // A move frees its old place: c3 waits for the live room on the 16th, taken by c1.
        let taken = store.write_with(|w| w.create_booking(&session("live", "c1", "2026-09-16T12:00", 120))).unwrap();
        store.write_with(|w| w.join_waitlist(&entry("c3", "2026-09-16T12:00", "2026-09-16T14:00", 120, Some("live")))).unwrap();
        assert!(store.waitlist(None).unwrap().len() == 1, "nothing fits yet");
        store.write_with(|w| w.move_booking(&taken.id, &RoomId::new("live"), at("2026-09-16T15:00"))).unwrap();
        assert!(store.waitlist(None).unwrap().is_empty());
        let got = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c3")), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(got.iter().map(|(b, _)| (b.room.as_str(), b.start)).collect::<Vec<_>>(), [("live", at("2026-09-16T12:00"))]);
    }

    fn joining_the_waitlist_is_refused_when_it_cannot_be(db) {
        let mut store = small_studio(db);
        let join = |store: &mut Store, e: NewWaitlistEntry| store.write_with(|w| w.join_waitlist(&e));
        assert_eq!(invalid(join(&mut store, entry("c1", "2026-09-10T14:00", "2026-09-10T10:00", 60, None))), "to: the span waited for must end after it starts");
        assert!(invalid(join(&mut store, entry("c1", "2026-09-10T10:00", "2026-09-10T10:30", 60, None))).starts_with("duration_minutes: the session is longer than the span"));
        assert_eq!(invalid(join(&mut store, entry("c1", "2026-09-10T10:00", "2026-09-10T14:00", 10, None))), "duration_minutes must be 15 to 1440");
        assert!(invalid(join(&mut store, entry("c1", "2026-08-01T10:00", "2026-08-02T14:00", 60, None))).starts_with("to: the span waited for must end after the studio's clock"));
        assert!(invalid(join(&mut store, entry("c1", "2028-09-01T10:00", "2028-09-02T14:00", 60, None))).starts_with("to: the span waited for must end within the booking horizon"));
        let mut both = entry("c1", "2026-09-10T10:00", "2026-09-10T14:00", 60, Some("hall"));
        both.requires = vec!["drums".into()];
        assert_eq!(invalid(join(&mut store, both)), "requires: give a room or what the session requires, not both");
        assert!(matches!(join(&mut store, entry("c9", "2026-09-10T10:00", "2026-09-10T14:00", 60, None)), Err(StoreError::UnknownClient(_))));
        assert!(matches!(join(&mut store, entry("c1", "2026-09-10T10:00", "2026-09-10T14:00", 60, Some("attic"))), Err(StoreError::UnknownRoom(_))));
        assert!(store.waitlist(None).unwrap().is_empty(), "nothing half-written");
    }
}
