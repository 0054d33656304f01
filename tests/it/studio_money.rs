//! Issue 25, what a session costs and who waits for one, in the store on both backends: a
//! booking keeps its price, a person's change re-prices it, a reflow's move keeps it and records
//! the difference absorbed (undone, as it was); a hold owes a deposit, a payment that covers it
//! confirms the booking, and a payment above what is owed is refused. The waitlist: a freed place
//! goes to the first entry that fits, held; a lapsed offer goes to the next. Amounts are computed
//! by hand in the comments.

use crate::mcp_client::{stdio, Mcp};
use crate::support::{at, on_both, session, small_studio};
use serde_json::json;
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
        // A booking made before prices were kept (as a database upgraded to them holds it) has
        // no price to pay, and says so; its history reads as before, without money.
        db.exec(&format!("UPDATE bookings SET price = NULL WHERE id = '{}'", b2.id));
        let message = invalid(store.write_with(|w| w.record_payment(&b2.id, 1, None)));
        assert_eq!(message, format!("booking: {} was booked before prices were kept: it has no price to pay", b2.id));
        // The database itself keeps money whole and non-negative.
        assert!(db.try_exec(&format!("UPDATE bookings SET paid = -1 WHERE id = '{}'", b2.id)).is_err());
        assert!(db.try_exec(&format!("INSERT INTO payments (booking_id, amount, at, created_at) VALUES ('{}', 0, 0, 0)", b2.id)).is_err());
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
        let figures = studioflow::figures::month_figures(&store, Month::parse("2026-09").unwrap()).unwrap();
        assert_eq!(
            figures.reflows,
            [studioflow::figures::ReflowFigures { reflow_id: id.clone(), moved: 1, unresolved: 0, absorbed: -2000, undone: false }]
        );
        // The booking counts in the hall now, at the price it keeps.
        let hall = figures.rooms.iter().find(|r| r.room == "hall").unwrap();
        assert_eq!((hall.booked_hours, hall.revenue), (1.0, 8000));
        // The repair ends early and the reflow is undone: back in the live room, at its price.
        let window = store.offline_windows(Some(&RoomId::new("live")), at("2026-09-08T00:00"), at("2026-09-09T00:00")).unwrap()[0].id;
        store.write_with(|w| w.remove_offline_window(window)).unwrap();
        // c2 waits for the hall at b's new time: the undo frees it, and c2 is offered it.
        store.write_with(|w| w.join_waitlist(&entry("c2", "2026-09-08T12:00", "2026-09-08T13:00", 60, Some("hall")))).unwrap();
        store.write_with(|w| w.undo_reflow(&id)).unwrap();
        let got = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c2")), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(got.iter().map(|(b, _)| (b.room.as_str(), b.start, b.status)).collect::<Vec<_>>(), [("hall", at("2026-09-08T12:00"), Status::Tentative)]);
        let figures = studioflow::figures::month_figures(&store, Month::parse("2026-09").unwrap()).unwrap();
        assert!(figures.reflows[0].undone);
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
        // A place freed off the quarter hour is offered from the next quarter hour in it: c1's
        // 10:05-12:05 on the 24th goes, and c3's hour starts at 10:15.
        let odd = store.write_with(|w| w.create_booking(&session("hall", "c1", "2026-09-24T10:05", 120))).unwrap();
        store.write_with(|w| w.join_waitlist(&entry("c3", "2026-09-24T09:00", "2026-09-24T13:00", 60, Some("hall")))).unwrap();
        store.write_with(|w| w.cancel_booking(&odd.id, CancelScope::Occurrence)).unwrap();
        let got = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c3")), from: Some(at("2026-09-24T00:00")), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(got.iter().map(|(b, _)| (b.start, b.end)).collect::<Vec<_>>(), [(at("2026-09-24T10:15"), at("2026-09-24T11:15"))]);
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

    fn a_removed_offline_window_and_a_reflow_free_places_for_the_waitlist_and_the_offer_is_told(db) {
        let mut store = small_studio(db);
        store.write_with(|w| w.create_webhook("https://hooks.example.com/w", &["waitlist.offered".into()], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")).unwrap();
        // The live room is offline on the 8th; c2 waits for it 12:00-14:00 that day.
        let window = store.write_with(|w| w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-09T00:00"), "flood")).unwrap();
        store.write_with(|w| w.join_waitlist(&entry("c2", "2026-09-08T12:00", "2026-09-08T14:00", 120, Some("live")))).unwrap();
        // The repair ends early: the room's day is free, and c2 gets 12:00-14:00.
        store.write_with(|w| w.remove_offline_window(window.id)).unwrap();
        let got = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c2")), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(got.iter().map(|(b, _)| (b.room.as_str(), b.start, b.status)).collect::<Vec<_>>(), [("live", at("2026-09-08T12:00"), Status::Tentative)]);
        let told = store.notifications(&studioflow::store::NotificationQuery { limit: 10, ..Default::default() }).unwrap();
        assert_eq!(told.iter().map(|n| (n.kind.as_str(), n.subject.as_str())).collect::<Vec<_>>(), [("waitlist.offered", "c2")]);
        // A reflow's move frees the place it leaves: c1's session of two in the booth on the 9th
        // is displaced when the booth shrinks to one seat; c3 (alone) waits for the booth then.
        let mut pair = session("booth", "c1", "2026-09-09T11:00", 60);
        pair.party_size = 2;
        store.write_with(|w| w.create_booking(&pair)).unwrap();
        store.write_with(|w| w.join_waitlist(&entry("c3", "2026-09-09T11:00", "2026-09-09T13:00", 60, Some("booth")))).unwrap();
        let edit = RoomEdit { capacity: Some(1), ..RoomEdit::default() };
        assert_eq!(store.write_with(|w| w.update_room(&RoomId::new("booth"), &edit, true)).unwrap().displaced.len(), 1);
        assert_eq!(store.waitlist(None).unwrap().len(), 1, "a displacement frees nothing yet: the session still stands");
        let request = ReflowRequest { month: Month::parse("2026-09").unwrap(), offline_rooms: vec![], max_shift_minutes: 120 };
        let options = studioflow_solver::Options { threads: 2, ..studioflow_solver::Options::default() };
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert_eq!(plan.moves.len(), 1, "{plan:?}");
        assert_ne!(plan.moves[0].to_room, RoomId::new("booth"));
        apply_plan(&mut store, &plan, false).unwrap();
        let got = store.query_bookings(&studioflow::store::BookingQuery { client: Some(ClientId::new("c3")), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(got.iter().map(|(b, _)| (b.room.as_str(), b.start)).collect::<Vec<_>>(), [("booth", at("2026-09-09T11:00"))]);
        assert!(store.waitlist(None).unwrap().is_empty());
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

on_both! {
    /// Issue 25's "What it must show", first bullet, over MCP on a small studio (the hall open
    /// round the clock, the booth weekdays 09:00-18:00, the live room 10:00-02:00 every day; two
    /// engineers; September 2026, all of it at +01:00). Every amount is worked out by hand.
    fn the_managers_week_over_mcp(db) {
        drop(small_studio(db));
        let mut s = stdio(db, &[]);
        // Rates: the hall 60.00 an hour and 90.00 at weekends, the booth 40.00, the live room
        // 80.00; e1 25.00.
        s.ok("update_studio", json!({"currency": "GBP"}));
        s.ok("update_room", json!({"id": "hall", "hourly_rate": 6000, "rates": [{"days": "sat-sun", "from": "00:00", "to": "24:00", "hourly_rate": 9000}]}));
        s.ok("update_room", json!({"id": "booth", "hourly_rate": 4000}));
        s.ok("update_room", json!({"id": "live", "hourly_rate": 8000}));
        s.ok("update_engineer", json!({"id": "e1", "hourly_rate": 2500}));
        // A Saturday session, 10:00-13:00 in the hall with e1: 3 h at 90.00 = 270.00, and e1's
        // 3 h at 25.00 = 75.00; 345.00.
        let q = s.ok("quote", json!({"room": "hall", "start": "2026-09-12T10:00", "end": "2026-09-12T13:00", "engineer": "e1"}));
        assert_eq!((q["total"].clone(), q["currency"].clone()), (json!(34500), json!("GBP")));
        // Booked on hold: it keeps the quote, and owes half of it, 172.50.
        let b = s.ok("create_booking", json!({"room": "hall", "client": "c1", "engineer": "e1", "start": "2026-09-12T10:00", "end": "2026-09-12T13:00", "status": "tentative", "hold_until": "2026-09-05T09:00"}));
        let saturday = b["bookings"][0]["id"].as_str().unwrap().to_owned();
        assert_eq!((b["bookings"][0]["price"].clone(), b["bookings"][0]["deposit_due"].clone(), b["bookings"][0]["paid"].clone()), (json!(34500), json!(17250), json!(0)));
        // More than the 345.00 owed is refused; the deposit paid clears the hold.
        let refused = s.refused("record_payment", json!({"booking": saturday, "amount": 34501}));
        assert!(refused.contains("amount: 34501 is more than the 34500 still owed"), "{refused}");
        let paid = s.ok("record_payment", json!({"booking": saturday, "amount": 17250, "reference": "deposit"}));
        assert_eq!((paid["confirmed"].clone(), paid["booking"]["status"].clone(), paid["booking"]["hold_until"].clone()), (json!(true), json!("confirmed"), json!(null)));
        let got = s.ok("get_booking", json!({"id": saturday}));
        assert_eq!((got["booking"]["price"].clone(), got["booking"]["deposit_due"].clone(), got["booking"]["paid"].clone()), (json!(34500), json!(17250), json!(17250)));
        let actions: Vec<&str> = got["history"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
        assert_eq!(actions, ["created", "payment recorded", "confirmed"]);
        assert_eq!(got["payments"].as_array().unwrap().iter().map(|p| (p["amount"].clone(), p["reference"].clone())).collect::<Vec<_>>(), [(json!(17250), json!("deposit"))]);
        // Two more sessions of e1's, on Tuesday the 15th (hall, 2 h: 120.00 + 50.00 = 170.00)
        // and Thursday the 17th (booth, 2 h: 80.00 + 50.00 = 130.00).
        let mut e1s = Vec::new();
        for (room, client, start, end) in [("hall", "c2", "2026-09-15T11:00", "2026-09-15T13:00"), ("booth", "c3", "2026-09-17T14:00", "2026-09-17T16:00")] {
            let b = s.ok("create_booking", json!({"room": room, "client": client, "engineer": "e1", "start": start, "end": end}));
            e1s.push((b["bookings"][0]["id"].as_str().unwrap().to_owned(), b["bookings"][0]["price"].as_i64().unwrap()));
        }
        assert_eq!(e1s.iter().map(|(_, p)| *p).collect::<Vec<_>>(), [17000, 13000]);
        // A week off over both: flagged and listed.
        let off = s.ok("add_time_off", json!({"engineer": "e1", "from": "2026-09-14T00:00", "to": "2026-09-19T00:00", "reason": "holiday"}));
        assert_eq!(off["displaced_count"], 2);
        let listed: Vec<&str> = off["displaced"].as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
        assert_eq!(listed, e1s.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>());
        // Booking e1 that week is refused; find_free_slots skips the week.
        let refused = s.refused("create_booking", json!({"room": "hall", "client": "c3", "engineer": "e1", "start": "2026-09-16T12:00", "end": "2026-09-16T13:00"}));
        assert!(refused.contains("engineer e1 has time off from 2026-09-14T00:00:00+01:00 to 2026-09-19T00:00:00+01:00 (holiday)"), "{refused}");
        let free = s.ok("find_free_slots", json!({"from": "2026-09-14T00:00", "to": "2026-09-22T00:00", "duration_minutes": 60, "room": "hall", "engineer": "e1"}));
        assert_eq!(free["slots"][0]["start"], "2026-09-19T00:00:00+01:00", "{free}");
        // c3 waits for two hours in the hall on Monday the 21st, taken by c1 10:00-12:00 (120.00);
        // c1 cancels, and c3 gets the hold: until the studio's clock (2026-08-31 09:00) plus
        // 24 hours, owing half of 120.00.
        let taken = s.ok("create_booking", json!({"room": "hall", "client": "c1", "start": "2026-09-21T10:00", "end": "2026-09-21T12:00"}));
        let joined = s.ok("join_waitlist", json!({"client": "c3", "from": "2026-09-21T10:00", "to": "2026-09-21T14:00", "duration_minutes": 120, "room": "hall"}));
        assert_eq!(s.ok("list_waitlist", json!({}))["waitlist"][0]["id"], joined["entry"]["id"]);
        s.ok("cancel_booking", json!({"id": taken["bookings"][0]["id"]}));
        assert!(s.ok("list_waitlist", json!({}))["waitlist"].as_array().unwrap().is_empty());
        let c3 = s.ok("query_bookings", json!({"client": "c3", "status": "tentative"}));
        let offer = &c3["bookings"][0];
        assert_eq!(
            (offer["room"].clone(), offer["start"].clone(), offer["hold_until"].clone(), offer["price"].clone(), offer["deposit_due"].clone()),
            (json!("hall"), json!("2026-09-21T10:00:00+01:00"), json!("2026-09-01T09:00:00+01:00"), json!(12000), json!(6000))
        );
        let changes = s.ok("list_changes", json!({"entity": "client", "id": "c3"}));
        let actions: Vec<&str> = changes["events"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
        assert_eq!(actions, ["created", "waitlist joined", "waitlist offered"]);

        // The month in figures.
        // Open hours: the hall 24 h on 30 days = 720; the booth 9 h on September's 22 weekdays
        // = 198; the live room 16 h a day: 2 h of August 31st's opening, 29 whole ones, and 14 h
        // of September 30th's before midnight = 480.
        // Booked: the hall holds Saturday's 3 h and c3's 2 h on hold (the 15th is displaced, c1's
        // 21st cancelled) = 5 h of 720, 0.694 % = 0.7 %; the booth's one session is displaced.
        // Revenue: confirmed sessions' prices, displaced ones too (they stand until moved): the
        // hall 345.00 + 170.00 = 515.00, the booth 130.00; 645.00 in all (c3's hold is tentative).
        // e1: Saturday's 3 h (the other two are displaced). Deposits: 172.50 (paid) and c3's
        // 60.00 (not) = 232.50 due, 172.50 paid, 172.50 received.
        let r = s.ok("studio_report", json!({"month": "2026-09"}));
        let rooms: Vec<(String, f64, f64, f64, i64)> = r["rooms"].as_array().unwrap().iter()
            .map(|x| (x["room"].as_str().unwrap().to_owned(), x["open_hours"].as_f64().unwrap(), x["booked_hours"].as_f64().unwrap(), x["utilisation_percent"].as_f64().unwrap(), x["revenue"].as_i64().unwrap()))
            .collect();
        assert_eq!(rooms, [
            ("booth".to_owned(), 198.0, 0.0, 0.0, 13000),
            ("hall".to_owned(), 720.0, 5.0, 0.7, 51500),
            ("live".to_owned(), 480.0, 0.0, 0.0, 0),
        ]);
        assert_eq!((r["revenue"].clone(), r["currency"].clone()), (json!(64500), json!("GBP")));
        assert_eq!(r["engineers"], json!([{"engineer": "e1", "name": "Engineer e1", "booked_hours": 3.0}, {"engineer": "e2", "name": "Engineer e2", "booked_hours": 0.0}]));
        assert_eq!(r["deposits"], json!({"due": 23250, "paid": 17250, "received": 17250}));
        assert_eq!(r["reflows"], json!([]));
        // Joined and left: the list is empty again, and each is in the client's history.
        let joined = s.ok("join_waitlist", json!({"client": "c2", "from": "2026-09-22T10:00", "to": "2026-09-22T18:00", "duration_minutes": 60, "requires": ["drums"]}));
        assert_eq!(s.ok("list_waitlist", json!({"client": "c2"}))["waitlist"][0]["requires"], json!(["drums"]));
        assert!(s.ok("list_waitlist", json!({"client": "c1"}))["waitlist"].as_array().unwrap().is_empty());
        s.ok("leave_waitlist", json!({"id": joined["entry"]["id"]}));
        assert!(s.refused("leave_waitlist", json!({"id": joined["entry"]["id"]})).contains("there is no waitlist entry"));
        let refused = s.refused("studio_report", json!({"month": "2026-13"}));
        assert!(refused.contains("cannot read the month"), "{refused}");
    }
}
