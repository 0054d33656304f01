//! Issue 25, running the studio's week, in the store on both backends: engineers' working hours
//! and time off, kept on every path that writes (create, move, edit, a reflow's apply and undo),
//! honoured by free-slot searches, and time off over existing sessions flagging them displaced.

use crate::mcp_client::{stdio, Mcp};
use crate::support::{at, on_both, session, small_studio};
use serde_json::json;
use chrono::Duration;
use studioflow::availability::{find_free_slots, SlotQuery};
use studioflow::domain::{BookingId, BookingRulesEdit, EngineerId, Refusal, RoomId, Session, WeeklyHours};
use studioflow::reflow::{apply_plan, plan_reflow, Month, ReflowRequest};
use studioflow::store::{BookingEdit, CancelScope, EventQuery, PersonEdit, PersonKind, RoomEdit, Store, StoreError};

fn refusal(result: Result<impl std::fmt::Debug, StoreError>) -> Refusal {
    match result {
        Err(StoreError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn invalid(result: Result<impl std::fmt::Debug, StoreError>) -> String {
    match result {
        Err(e @ StoreError::Invalid { .. }) => e.to_string(),
        other => panic!("expected bad input, got {other:?}"),
    }
}

fn with_engineer(mut s: Session, engineer: &str) -> Session {
    s.engineer = Some(EngineerId::new(engineer));
    s
}

fn e1() -> EngineerId {
    EngineerId::new("e1")
}

/// e1 works weekdays 10:00-18:00.
fn weekday_hours(store: &mut Store) {
    let edit = PersonEdit { hours: Some(Some(WeeklyHours::parse(&["mon-fri 10:00-18:00"]).unwrap())), ..PersonEdit::default() };
    let (person, _, displaced) = store.write_with(|w| w.update_person(PersonKind::Engineer, "e1", &edit)).unwrap();
    assert_eq!(person.profile.hours.unwrap().to_lines(), ["mon 10:00-18:00", "tue 10:00-18:00", "wed 10:00-18:00", "thu 10:00-18:00", "fri 10:00-18:00"]);
    assert!(displaced.is_empty());
}

fn slots(store: &Store, engineer: Option<&str>, from: &str, to: &str, minutes: i64) -> Vec<(String, String)> {
    let tz = store.studio().unwrap().tz;
    let q = SlotQuery {
        from: at(from),
        to: at(to),
        length: Duration::minutes(minutes),
        party_size: 1,
        requires: Vec::new(),
        room: Some(RoomId::new("hall")),
        client: None,
        engineer: engineer.map(EngineerId::new),
        limit: 100,
    };
    find_free_slots(store, &q).unwrap().into_iter().map(|s| (tz.format(s.start), tz.format(s.latest_start))).collect()
}

/// Sets the room's booking rules.
fn room_rules(store: &mut Store, room: &str, rules: BookingRulesEdit) {
    let edit = RoomEdit { rules, ..RoomEdit::default() };
    let change = store.write_with(|w| w.update_room(&RoomId::new(room), &edit, false)).unwrap();
    assert!(change.displaced.is_empty(), "a rule never displaces a session already booked");
}

fn hall_slots(store: &Store, from: &str, to: &str, minutes: i64) -> Vec<(String, String)> {
    slots(store, None, from, to, minutes)
}

on_both! {
    fn an_engineer_outside_their_hours_is_refused_on_create_move_and_edit(db) {
        let mut store = small_studio(db);
        weekday_hours(&mut store);
        // Saturday: refused, naming the hours and what to change.
        let why = refusal(store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-12T12:00", 60), "e1"))));
        assert_eq!(
            why.to_string(),
            "engineer e1 does not work for part of 2026-09-12T12:00:00+01:00 to 2026-09-12T13:00:00+01:00; their working hours are \
             mon 10:00-18:00, tue 10:00-18:00, wed 10:00-18:00, thu 10:00-18:00, fri 10:00-18:00: choose a time inside them, or another engineer"
        );
        // Running past 18:00 on a weekday: refused too; inside: booked.
        refusal(store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-14T17:30", 60), "e1"))));
        let ok = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-14T16:00", 60), "e1"))).unwrap();
        // Moving it out of the hours: refused; and it stays where it was.
        let why = refusal(store.write_with(|w| w.move_booking(&ok.id, &RoomId::new("hall"), at("2026-09-14T19:00"))));
        assert!(matches!(&why, Refusal::EngineerOffHours { engineer, .. } if *engineer == e1()), "{why}");
        assert_eq!(store.booking(&ok.id).unwrap().unwrap().start, at("2026-09-14T16:00"));
        // Putting e1 on a Sunday session: refused; e2 (always available) is fine.
        let sunday = store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-13T12:00", 60))).unwrap();
        let edit = BookingEdit { engineer: Some(Some(e1())), ..BookingEdit::default() };
        let why = refusal(store.write_with(|w| w.update_booking(&sunday.id, &edit, CancelScope::Occurrence)));
        assert!(matches!(why, Refusal::EngineerOffHours { .. }), "{why}");
        let edit = BookingEdit { engineer: Some(Some(EngineerId::new("e2"))), ..BookingEdit::default() };
        store.write_with(|w| w.update_booking(&sunday.id, &edit, CancelScope::Occurrence)).unwrap();
    }

    fn new_hours_flag_the_sessions_outside_them_displaced(db) {
        let mut store = small_studio(db);
        let saturday = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-12T12:00", 60), "e1"))).unwrap();
        let monday = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c2", "2026-09-14T12:00", 60), "e1"))).unwrap();
        let edit = PersonEdit { hours: Some(Some(WeeklyHours::parse(&["mon-fri 10:00-18:00"]).unwrap())), ..PersonEdit::default() };
        let (_, _, displaced) = store.write_with(|w| w.update_person(PersonKind::Engineer, "e1", &edit)).unwrap();
        assert_eq!(displaced.iter().map(|b| b.id.clone()).collect::<Vec<_>>(), [saturday.id.clone()]);
        assert!(store.booking(&saturday.id).unwrap().unwrap().displaced);
        assert!(!store.booking(&monday.id).unwrap().unwrap().displaced);
        // Back to always: the person reads as such, and the history has both changes.
        let edit = PersonEdit { hours: Some(None), ..PersonEdit::default() };
        let (person, _, _) = store.write_with(|w| w.update_person(PersonKind::Engineer, "e1", &edit)).unwrap();
        assert_eq!(person.profile.hours, None);
        let events = store.events(&EventQuery { entity: Some(studioflow::store::Entity::Engineer), id: Some("e1".into()), limit: 10, ..EventQuery::default() }).unwrap();
        let hours: Vec<_> = events.iter().filter(|e| e.action == "updated").map(|e| e.after.get("working_hours").cloned()).collect();
        assert_eq!(hours, [Some(serde_json::json!(["mon 10:00-18:00", "tue 10:00-18:00", "wed 10:00-18:00", "thu 10:00-18:00", "fri 10:00-18:00"])), Some(serde_json::Value::Null)]);
        // A client has no working hours.
        let edit = PersonEdit { hours: Some(None), ..PersonEdit::default() };
        let message = invalid(store.write_with(|w| w.update_person(PersonKind::Client, "c1", &edit)));
        assert_eq!(message, "working_hours: only engineers have working hours");
    }

    fn time_off_refuses_bookings_and_displaces_the_sessions_it_covers(db) {
        let mut store = small_studio(db);
        let a = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-15T12:00", 120), "e1"))).unwrap();
        let b = store.write_with(|w| w.create_booking(&with_engineer(session("live", "c2", "2026-09-17T20:00", 120), "e1"))).unwrap();
        let other = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c3", "2026-09-15T15:00", 60), "e2"))).unwrap();
        let after = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-21T12:00", 60), "e1"))).unwrap();
        let added = store.write_with(|w| w.add_time_off(&e1(), at("2026-09-14T00:00"), at("2026-09-21T00:00"), "holiday")).unwrap();
        assert_eq!(added.displaced.iter().map(|b| b.id.clone()).collect::<Vec<_>>(), [a.id.clone(), b.id.clone()]);
        for id in [&a.id, &b.id] {
            assert!(store.booking(id).unwrap().unwrap().displaced, "{id}");
        }
        for id in [&other.id, &after.id] {
            assert!(!store.booking(id).unwrap().unwrap().displaced, "{id}");
        }
        // Booking e1 that week is refused, naming the time off; e2 is fine.
        let why = refusal(store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c3", "2026-09-16T12:00", 60), "e1"))));
        assert_eq!(
            why.to_string(),
            "engineer e1 has time off from 2026-09-14T00:00:00+01:00 to 2026-09-21T00:00:00+01:00 (holiday): choose another time or engineer"
        );
        store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c3", "2026-09-16T12:00", 60), "e2"))).unwrap();
        // A session across its end is refused too; moving one into it as well.
        refusal(store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c3", "2026-09-20T23:30", 60), "e1"))));
        let why = refusal(store.write_with(|w| w.move_booking(&after.id, &RoomId::new("hall"), at("2026-09-18T12:00"))));
        assert!(matches!(why, Refusal::EngineerAway { .. }), "{why}");
        // A displaced session holds nothing: its slot may be taken.
        let taker = store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-15T12:00", 60))).unwrap();
        // Listed, by engineer and span.
        let listed = store.time_off(Some(&e1()), at("2026-09-01T00:00"), at("2026-10-01T00:00")).unwrap();
        assert_eq!(listed, [added.time_off.clone()]);
        assert!(store.time_off(Some(&EngineerId::new("e2")), at("2026-09-01T00:00"), at("2026-10-01T00:00")).unwrap().is_empty());
        assert!(store.time_off(None, at("2026-09-21T00:00"), at("2026-10-01T00:00")).unwrap().is_empty(), "ends when it says");
        // Removed: the session whose slot is free takes it back; the other stays displaced.
        let removed = store.write_with(|w| w.remove_time_off(added.time_off.id)).unwrap();
        assert_eq!(removed.restored.iter().map(|b| b.id.clone()).collect::<Vec<_>>(), [b.id.clone()]);
        assert_eq!(removed.still_displaced.iter().map(|b| b.id.clone()).collect::<Vec<_>>(), [a.id.clone()]);
        assert!(!store.booking(&b.id).unwrap().unwrap().displaced);
        assert!(store.booking(&a.id).unwrap().unwrap().displaced);
        assert!(store.booking(&taker.id).unwrap().is_some());
        assert!(matches!(store.write_with(|w| w.remove_time_off(added.time_off.id)), Err(StoreError::UnknownTimeOff(_))));
        // Every change is in the history: added, removed, each displaced and restored booking.
        let events = store.events(&EventQuery { limit: 1000, ..EventQuery::default() }).unwrap();
        let actions: Vec<(String, String)> = events.iter().filter(|e| e.action != "created").map(|e| (e.id.clone(), e.action.clone())).collect();
        assert_eq!(
            actions,
            [
                ("e1".to_owned(), "time off added".to_owned()),
                (a.id.0.clone(), "displaced".to_owned()),
                (b.id.0.clone(), "displaced".to_owned()),
                ("e1".to_owned(), "time off removed".to_owned()),
                (b.id.0.clone(), "restored".to_owned()),
            ]
        );
    }

    fn time_off_is_refused_when_it_cannot_be(db) {
        let mut store = small_studio(db);
        let message = invalid(store.write_with(|w| w.add_time_off(&e1(), at("2026-09-15T00:00"), at("2026-09-14T00:00"), "x")));
        assert_eq!(message, "to: time off must end after it starts");
        let message = invalid(store.write_with(|w| w.add_time_off(&e1(), at("2026-08-01T00:00"), at("2026-08-31T08:00"), "x")));
        assert!(message.starts_with("to: time off must end after the studio's clock (2026-08-31T09:00:00+01:00)"), "{message}");
        let message = invalid(store.write_with(|w| w.add_time_off(&e1(), at("2028-08-01T00:00"), at("2028-09-01T00:00"), "x")));
        assert!(message.starts_with("to: time off must end within the booking horizon"), "{message}");
        let message = invalid(store.write_with(|w| w.add_time_off(&e1(), at("2026-09-01T00:00"), at("2027-09-03T00:00"), "x")));
        assert!(message.contains("at most 366 days"), "{message}");
        let message = invalid(store.write_with(|w| w.add_time_off(&e1(), at("2026-09-01T00:00"), at("2026-09-03T00:00"), "a\u{7}b")));
        assert!(message.contains("reason"), "{message}");
        assert!(matches!(store.write_with(|w| w.add_time_off(&EngineerId::new("e9"), at("2026-09-01T00:00"), at("2026-09-03T00:00"), "x")), Err(StoreError::UnknownEngineer(_))));
        assert!(store.time_off(None, at("2026-08-01T00:00"), at("2028-10-01T00:00")).unwrap().is_empty(), "nothing half-written");
        // Time off that began before the clock and ends after it is fine; an empty reason reads "time off".
        let t = store.write_with(|w| w.add_time_off(&e1(), at("2026-08-30T00:00"), at("2026-09-01T00:00"), " ")).unwrap();
        assert_eq!(t.time_off.reason, "time off");
    }

    fn free_slots_with_an_engineer_skip_their_time_off_and_hours(db) {
        let mut store = small_studio(db);
        // The hall is open round the clock: without an engineer, one free window all day.
        assert_eq!(slots(&store, None, "2026-09-14T00:00", "2026-09-15T00:00", 60).len(), 1);
        weekday_hours(&mut store);
        // With e1: only inside 10:00-18:00 on weekdays.
        assert_eq!(
            slots(&store, Some("e1"), "2026-09-11T00:00", "2026-09-15T00:00", 60),
            [
                ("2026-09-11T10:00:00+01:00".to_owned(), "2026-09-11T17:00:00+01:00".to_owned()),
                ("2026-09-14T10:00:00+01:00".to_owned(), "2026-09-14T17:00:00+01:00".to_owned()),
            ]
        );
        // A week off: nothing offered that week, and Monday after it is.
        store.write_with(|w| w.add_time_off(&e1(), at("2026-09-14T00:00"), at("2026-09-19T00:00"), "holiday")).unwrap();
        assert!(slots(&store, Some("e1"), "2026-09-14T00:00", "2026-09-21T00:00", 60).is_empty());
        assert_eq!(slots(&store, Some("e1"), "2026-09-14T00:00", "2026-09-22T00:00", 60)[0].0, "2026-09-21T10:00:00+01:00");
        // Every slot offered can be booked.
        for (start, _) in slots(&store, Some("e1"), "2026-09-07T00:00", "2026-09-28T00:00", 120) {
            let s = with_engineer(session("hall", "c1", &start[..16], 120), "e1");
            store.write_with(|w| w.check(&s, None)).unwrap();
        }
    }

    /// Issue 26: a reflow re-staffs a session whose engineer is out only with an engineer who has
    /// its skills and is free; with nobody, the session stays unresolved, and the reason names the
    /// engineer and the skill. Applied, the engineers change with the places; undone, they go back.
    fn a_reflow_never_places_a_session_where_its_engineer_is_away(db) {
        let mut store = small_studio(db);
        // e1 mixes and works until 14:00 on weekdays; a mixing session at 12:00 in live, which goes offline.
        let edit = PersonEdit {
            hours: Some(Some(WeeklyHours::parse(&["mon-fri 10:00-14:00"]).unwrap())),
            skills: Some(vec!["mixing".into()]),
            ..PersonEdit::default()
        };
        store.write_with(|w| w.update_person(PersonKind::Engineer, "e1", &edit)).unwrap();
        let mixing = |s: Session| Session { engineer_skills: vec!["mixing".into()], ..with_engineer(s, "e1") };
        let moved = store.write_with(|w| w.create_booking(&mixing(session("live", "c1", "2026-09-08T12:00", 120)))).unwrap();
        // The hall is taken 10:00-14:00 and the booth 09:00-15:00, so what is left that day is outside e1's hours.
        store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-08T10:00", 240))).unwrap();
        store.write_with(|w| w.create_booking(&session("booth", "c3", "2026-09-08T09:00", 360))).unwrap();
        let away = store.write_with(|w| w.create_booking(&mixing(session("hall", "c3", "2026-09-22T12:00", 60)))).unwrap();
        store.write_with(|w| w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-09T00:00"), "flood")).unwrap();
        store.write_with(|w| w.add_time_off(&e1(), at("2026-09-22T00:00"), at("2026-09-23T00:00"), "ill")).unwrap();
        let request = ReflowRequest { month: Month::parse("2026-09").unwrap(), offline_rooms: vec![RoomId::new("live")], max_shift_minutes: 360 };
        let options = studioflow_solver::Options { threads: 2, ..studioflow_solver::Options::default() };
        // e2 cannot mix: nobody can take either session.
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert!(plan.moves.is_empty(), "{:?}", plan.moves);
        let unresolved: std::collections::BTreeSet<&BookingId> = plan.unresolved.iter().map(|u| &u.booking).collect();
        assert_eq!(unresolved, [&moved.id, &away.id].into_iter().collect());
        let why = &plan.unresolved.iter().find(|u| u.booking == away.id).unwrap().reason;
        assert!(why.contains("engineer e1 is away") && why.contains("no other engineer has the skills [mixing]"), "{why}");
        // The plan applies (nothing in it breaks a rule), and the unresolved stay where they were.
        apply_plan(&mut store, &plan, false).unwrap();
        assert_eq!(store.booking(&moved.id).unwrap().unwrap().start, at("2026-09-08T12:00"));

        // e2 learns to mix: both sessions go to e2, the offline one to the hall after 14:00.
        let edit = PersonEdit { skills: Some(vec!["mixing".into()]), ..PersonEdit::default() };
        store.write_with(|w| w.update_person(PersonKind::Engineer, "e2", &edit)).unwrap();
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert!(plan.unresolved.is_empty(), "{:?}", plan.unresolved);
        assert_eq!(plan.moves.len(), 2);
        for m in &plan.moves {
            assert_eq!((m.from_engineer.clone(), m.to_engineer.clone()), (Some(e1()), Some(EngineerId::new("e2"))), "{m:?}");
        }
        let before: Vec<_> = [&moved.id, &away.id].iter().map(|id| store.booking(id).unwrap().unwrap()).collect();
        let id = apply_plan(&mut store, &plan, false).unwrap();
        for b in &before {
            let now = store.booking(&b.id).unwrap().unwrap();
            assert_eq!(now.engineer, Some(EngineerId::new("e2")));
            assert!(!now.displaced);
        }
        assert_eq!(store.booking(&away.id).unwrap().unwrap().start, at("2026-09-22T12:00"), "same room, same time, another engineer");
        // The flood is over; undone, every session is back with e1, where and as it was (the one
        // e1's time off displaced is flagged again).
        let window = store.offline_windows(Some(&RoomId::new("live")), at("2026-09-08T00:00"), at("2026-09-09T00:00")).unwrap()[0].id;
        store.write_with(|w| w.remove_offline_window(window)).unwrap();
        store.write_with(|w| w.undo_reflow(&id)).unwrap();
        for b in &before {
            assert_eq!(&store.booking(&b.id).unwrap().unwrap(), b);
        }
    }

    /// Issue 26: a session whose engineer is away but that may not move (inside the notice
    /// period) says both; a deactivated engineer is given nobody's session, and a month with
    /// nothing to move and no room named is refused, saying so.
    fn issue_26_reasons_name_the_absent_engineer_and_nobody_takes_a_deactivated_ones_place(db) {
        let mut store = small_studio(db);
        let request = ReflowRequest { month: Month::parse("2026-09").unwrap(), offline_rooms: vec![], max_shift_minutes: 120 };
        let options = studioflow_solver::Options { threads: 1, ..studioflow_solver::Options::default() };
        let soon = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-01T12:00", 60), "e1"))).unwrap();
        let later = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c2", "2026-09-10T12:00", 60), "e1"))).unwrap();
        let refused = plan_reflow(&store, &request, &options).unwrap_err().to_string();
        assert!(refused.contains("offline_rooms: name at least one room") && refused.contains("nothing else in 2026-09 needs a reflow"), "{refused}");
        let edit = PersonEdit { active: Some(false), ..PersonEdit::default() };
        store.write_with(|w| w.update_person(PersonKind::Engineer, "e2", &edit)).unwrap();
        store.write_with(|w| w.add_time_off(&e1(), at("2026-09-01T00:00"), at("2026-09-11T00:00"), "ill")).unwrap();
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert!(plan.moves.is_empty(), "{:?}", plan.moves);
        let reason = |id: &BookingId| plan.unresolved.iter().find(|u| &u.booking == id).unwrap().reason.clone();
        let why = reason(&soon.id);
        assert!(why.starts_with("it starts within the 48-hour notice period") && why.ends_with("; engineer e1 is away then"), "{why}");
        let why = reason(&later.id);
        assert_eq!(why, "engineer e1 is away and there is no other engineer");
        // e2 back at work: the later session is theirs; the one in the notice period still stays.
        let edit = PersonEdit { active: Some(true), ..PersonEdit::default() };
        store.write_with(|w| w.update_person(PersonKind::Engineer, "e2", &edit)).unwrap();
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert_eq!(plan.moves.len(), 1);
        assert_eq!((plan.moves[0].booking.clone(), plan.moves[0].to_engineer.clone()), (later.id.clone(), Some(EngineerId::new("e2"))));
        assert_eq!(plan.cost, 1000 + 10, "one unresolved, one engineer change");
        // The session's engineer changed since the plan: the plan is stale, and nothing moves.
        let edit = BookingEdit { engineer: Some(None), ..BookingEdit::default() };
        store.write_with(|w| w.update_booking(&later.id, &edit, CancelScope::Occurrence)).unwrap();
        let stale = apply_plan(&mut store, &plan, false).unwrap_err().to_string();
        assert!(stale.contains("the month changed since this plan was made") && stale.contains(later.id.as_str()), "{stale}");
        assert_eq!(store.booking(&later.id).unwrap().unwrap().engineer, None);
    }

    /// Issue 26: a session under way when its engineer's time off began keeps its place and its
    /// engineer (the store still holds it): the reflow neither reports it nor gives its minutes
    /// of theirs to anyone, and re-staffs only the session that time off displaced.
    fn issue_26_a_session_under_way_keeps_its_engineer_through_their_time_off(db) {
        let mut store = small_studio(db);
        let under_way = store.write_with(|w| w.create_booking(&with_engineer(session("hall", "c1", "2026-09-10T11:00", 120), "e1"))).unwrap();
        let later = store.write_with(|w| w.create_booking(&with_engineer(session("live", "c2", "2026-09-10T16:00", 60), "e1"))).unwrap();
        // The studio's clock moves to noon that day; e1 goes home ill from 12:00 to the next day.
        let mut studio = store.studio().unwrap().clone();
        studio.clock = Some(at("2026-09-10T12:00"));
        studio.notice = Duration::hours(1);
        store.write_with(|w| w.set_studio(&studio)).unwrap();
        let off = store.write_with(|w| w.add_time_off(&e1(), at("2026-09-10T12:00"), at("2026-09-11T00:00"), "ill")).unwrap();
        assert_eq!(off.displaced.iter().map(|b| &b.id).collect::<Vec<_>>(), [&later.id], "a session under way is not displaced");
        let request = ReflowRequest { month: Month::parse("2026-09").unwrap(), offline_rooms: vec![], max_shift_minutes: 120 };
        let options = studioflow_solver::Options { threads: 1, ..studioflow_solver::Options::default() };
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert_eq!(plan.affected, 1, "only the displaced session: {plan:?}");
        assert!(plan.unresolved.is_empty(), "{:?}", plan.unresolved);
        assert_eq!((plan.moves[0].booking.clone(), plan.moves[0].to_engineer.clone()), (later.id.clone(), Some(EngineerId::new("e2"))));
        apply_plan(&mut store, &plan, false).unwrap();
        assert_eq!(store.booking(&under_way.id).unwrap().unwrap(), under_way, "the session under way is as it was");
        // Nothing else is left to reflow.
        let refused = plan_reflow(&store, &request, &options).unwrap_err().to_string();
        assert!(refused.contains("nothing else in 2026-09 needs a reflow"), "{refused}");
    }

    /// The manager's week over MCP (the part issue 25 has so far): an engineer's hours, a week off
    /// over two of their sessions (both flagged and listed), a booking with them refused,
    /// `find_free_slots` skipping the week, the time off listed and removed, all in the history.
    fn the_manager_gives_an_engineer_a_week_off_over_mcp(db) {
        drop(small_studio(db));
        let mut s = stdio(db, &[]);
        let e = s.ok("create_engineer", json!({"name": "Sam Reed", "working_hours": ["mon-fri 10:00-18:00"]}));
        assert_eq!(e["engineer"]["working_hours"][4], "fri 10:00-18:00");
        let listed = s.ok("list_engineers", json!({"query": "sam"}));
        assert_eq!(listed["engineers"][0]["working_hours"], e["engineer"]["working_hours"]);
        let refused = s.refused("create_booking", json!({"room": "hall", "client": "c1", "engineer": "sam-reed", "start": "2026-09-12T12:00", "end": "2026-09-12T13:00"}));
        assert!(refused.contains("engineer sam-reed does not work for part of") && refused.contains("choose a time inside them"), "{refused}");
        let mut ids = Vec::new();
        for (client, start, end) in [("c1", "2026-09-15T11:00", "2026-09-15T13:00"), ("c2", "2026-09-17T14:00", "2026-09-17T16:00")] {
            let b = s.ok("create_booking", json!({"room": "hall", "client": client, "engineer": "sam-reed", "start": start, "end": end}));
            ids.push(b["bookings"][0]["id"].as_str().unwrap().to_owned());
        }
        let off = s.ok("add_time_off", json!({"engineer": "sam-reed", "from": "2026-09-14T00:00", "to": "2026-09-19T00:00", "reason": "holiday"}));
        assert_eq!(off["displaced_count"], 2);
        let displaced: Vec<&str> = off["displaced"].as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
        assert_eq!(displaced, ids);
        assert!(off["next_step"].as_str().unwrap().contains("reflow_month for 2026-09"), "{off}");
        for id in &ids {
            assert_eq!(s.ok("get_booking", json!({"id": id}))["booking"]["displaced"], true);
        }
        let refused = s.refused("create_booking", json!({"room": "hall", "client": "c3", "engineer": "sam-reed", "start": "2026-09-16T12:00", "end": "2026-09-16T13:00"}));
        assert!(refused.contains("engineer sam-reed has time off from 2026-09-14T00:00:00+01:00 to 2026-09-19T00:00:00+01:00 (holiday)"), "{refused}");
        let free = s.ok("find_free_slots", json!({"from": "2026-09-14T00:00", "to": "2026-09-22T00:00", "duration_minutes": 60, "room": "hall", "engineer": "sam-reed"}));
        assert_eq!(free["slots"][0]["start"], "2026-09-21T10:00:00+01:00", "{free}");
        let list = s.ok("list_time_off", json!({"engineer": "sam-reed"}));
        assert_eq!(list["time_off"].as_array().unwrap().len(), 1);
        let id = list["time_off"][0]["id"].clone();
        assert_eq!((list["time_off"][0]["from"].clone(), list["time_off"][0]["reason"].clone()), (json!("2026-09-14T00:00:00+01:00"), json!("holiday")));
        let removed = s.ok("remove_time_off", json!({"id": id}));
        assert_eq!(removed["restored"].as_array().unwrap().len(), 2);
        assert!(s.refused("remove_time_off", json!({"id": id})).contains("unknown time off"));
        let changes = s.ok("list_changes", json!({"entity": "engineer", "id": "sam-reed"}));
        let actions: Vec<&str> = changes["events"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
        assert_eq!(actions, ["created", "time off added", "time off removed"]);
    }

    fn a_rooms_booking_rules_refuse_new_sessions_naming_the_rule(db) {
        let mut store = small_studio(db);
        // Booked before the rules: stays, and may still be moved by a reflow or edited.
        let early = store.write_with(|w| w.create_booking(&session("hall", "c1", "2026-09-01T12:00", 45))).unwrap();
        room_rules(&mut store, "hall", BookingRulesEdit {
            min_minutes: Some(Some(120)),
            max_minutes: Some(Some(240)),
            lead_minutes: Some(Some(24 * 60)),
            max_advance_days: Some(Some(60)),
            start_step_minutes: Some(Some(30)),
        });
        let room = store.room(&RoomId::new("hall")).unwrap().unwrap();
        assert_eq!(room.rules.set(), [("min_minutes", 120), ("max_minutes", 240), ("lead_minutes", 1440), ("max_advance_days", 60), ("start_step_minutes", 30)]);
        let why = |store: &mut Store, start: &str, minutes: i64| refusal(store.write_with(|w| w.create_booking(&session("hall", "c2", start, minutes)))).to_string();
        assert_eq!(why(&mut store, "2026-09-07T12:00", 60), "hall takes sessions of at least 120 minutes and this one is 60: make it longer or choose another room");
        assert_eq!(why(&mut store, "2026-09-07T12:00", 300), "hall takes sessions of at most 240 minutes and this one is 300: make it shorter, split it, or choose another room");
        assert_eq!(
            why(&mut store, "2026-08-31T20:00", 120),
            "hall needs 1440 minutes' notice for a new session: it may start at 2026-09-01T09:00:00+01:00 at the earliest, not 2026-08-31T20:00:00+01:00; choose a later time"
        );
        assert_eq!(
            why(&mut store, "2026-11-02T12:00", 120),
            "hall takes bookings at most 60 days ahead (until 2026-10-30T08:00:00+00:00); 2026-11-02T12:00:00+00:00 is later: choose an earlier time"
        );
        assert_eq!(
            why(&mut store, "2026-09-07T12:15", 120),
            "hall starts sessions every 30 minutes from midnight; 2026-09-07T12:15:00+01:00 is not on that grid: start at 2026-09-07T12:30:00+01:00 instead, or choose another room"
        );
        let ok = store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-07T12:30", 120))).unwrap();
        // A series: every session keeps them, or none is booked.
        let series = store.write_with(|w| w.create_series(None, "FREQ=WEEKLY;COUNT=12", &session("hall", "c3", "2026-09-08T12:00", 120)));
        assert!(refusal(series).to_string().contains("at most 60 days ahead"));
        // A person's move keeps notice, reach and grid; the length is as it was booked.
        let why = refusal(store.write_with(|w| w.move_booking(&early.id, &RoomId::new("hall"), at("2026-09-07T16:10"))));
        assert!(matches!(why, Refusal::OffStep { step: 30, .. }), "{why}");
        store.write_with(|w| w.move_booking(&early.id, &RoomId::new("hall"), at("2026-09-07T16:00"))).unwrap();
        refusal(store.write_with(|w| w.move_booking(&ok.id, &RoomId::new("hall"), at("2026-08-31T18:00"))));
        // Rules are validated, naming the field.
        let edit = RoomEdit { rules: BookingRulesEdit { start_step_minutes: Some(Some(7)), ..BookingRulesEdit::default() }, ..RoomEdit::default() };
        let message = invalid(store.write_with(|w| w.update_room(&RoomId::new("hall"), &edit, false)));
        assert!(message.starts_with("start_step_minutes 7 does not divide a day"), "{message}");
        let edit = RoomEdit { rules: BookingRulesEdit { max_minutes: Some(Some(60)), ..BookingRulesEdit::default() }, ..RoomEdit::default() };
        let message = invalid(store.write_with(|w| w.update_room(&RoomId::new("hall"), &edit, false)));
        assert_eq!(message, "max_minutes (60) is below min_minutes (120): raise it, or lower min_minutes");
        // Taken off with null, each rule is gone.
        room_rules(&mut store, "hall", BookingRulesEdit { min_minutes: Some(None), lead_minutes: Some(None), ..BookingRulesEdit::default() });
        store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-08-31T20:00", 60))).unwrap();
    }

    fn free_slots_keep_a_rooms_booking_rules(db) {
        let mut store = small_studio(db);
        room_rules(&mut store, "hall", BookingRulesEdit {
            min_minutes: Some(Some(120)),
            lead_minutes: Some(Some(24 * 60)),
            max_advance_days: Some(Some(10)),
            start_step_minutes: Some(Some(180)),
            ..BookingRulesEdit::default()
        });
        // Too short for the room: nothing offered there.
        assert!(hall_slots(&store, "2026-09-02T00:00", "2026-09-03T00:00", 60).is_empty());
        // The notice: the first start is a day after the clock, on the 3-hour grid (09:00 is on it).
        store.write_with(|w| w.create_booking(&session("hall", "c1", "2026-09-01T09:00", 120))).unwrap();
        assert_eq!(
            hall_slots(&store, "2026-08-31T00:00", "2026-09-02T00:00", 120),
            [("2026-09-01T12:00:00+01:00".to_owned(), "2026-09-01T21:00:00+01:00".to_owned())]
        );
        // Ten days ahead at most: the 11th of September is beyond.
        assert!(hall_slots(&store, "2026-09-11T00:00", "2026-09-12T00:00", 120).is_empty());
        // Every slot offered can be booked, at its earliest and its latest start.
        for (start, latest) in hall_slots(&store, "2026-09-01T00:00", "2026-09-10T00:00", 120) {
            for t in [start, latest] {
                store.write_with(|w| w.check(&session("hall", "c2", &t[..16], 120), None)).unwrap();
            }
        }
    }

    fn a_reflow_keeps_a_rooms_grid_and_ignores_rules_added_later(db) {
        let mut store = small_studio(db);
        let a = store.write_with(|w| w.create_booking(&session("live", "c1", "2026-09-08T12:00", 60))).unwrap();
        let b = store.write_with(|w| w.create_booking(&session("live", "c2", "2026-09-09T12:00", 60))).unwrap();
        // The booth is full both days; the hall is taken until 12:30 on the 8th.
        store.write_with(|w| w.create_booking(&session("booth", "c3", "2026-09-08T09:00", 540))).unwrap();
        store.write_with(|w| w.create_booking(&session("booth", "c3", "2026-09-09T09:00", 540))).unwrap();
        store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-08T11:00", 90))).unwrap();
        // The hall starts on the hour, and takes two hours at least (added after both were booked).
        room_rules(&mut store, "hall", BookingRulesEdit { start_step_minutes: Some(Some(60)), min_minutes: Some(Some(120)), ..BookingRulesEdit::default() });
        store.write_with(|w| w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-10T00:00"), "flood")).unwrap();
        let request = ReflowRequest { month: Month::parse("2026-09").unwrap(), offline_rooms: vec![RoomId::new("live")], max_shift_minutes: 120 };
        let options = studioflow_solver::Options { threads: 2, ..studioflow_solver::Options::default() };
        let plan = plan_reflow(&store, &request, &options).unwrap();
        // b goes to the hall at 12:00 (on the hour, though shorter than the new minimum); a's
        // cheapest place, 12:30, is off the grid: unresolved, saying why.
        assert_eq!(plan.moves.iter().map(|m| (m.booking.clone(), m.to_room.clone(), m.to_start)).collect::<Vec<_>>(), [(b.id.clone(), RoomId::new("hall"), at("2026-09-09T12:00"))]);
        assert_eq!(plan.unresolved.len(), 1);
        assert_eq!(plan.unresolved[0].booking, a.id);
        assert!(plan.unresolved[0].reason.contains("grid of starts (every 60 minutes)"), "{}", plan.unresolved[0].reason);
        apply_plan(&mut store, &plan, false).unwrap();
        assert_eq!(store.booking(&b.id).unwrap().unwrap().room, RoomId::new("hall"));
    }

    /// The manager's prices over MCP: the studio's currency and deposit, a room's rate and a
    /// weekend rate, an engineer's rate, and a quote of a Saturday session computed by hand.
    fn the_manager_sets_rates_and_quotes_a_saturday_session_over_mcp(db) {
        drop(small_studio(db));
        let mut s = stdio(db, &[]);
        let studio = s.ok("get_studio", json!({}));
        assert_eq!((studio["currency"].clone(), studio["deposit_percent"].clone(), studio["waitlist_hold_hours"].clone()), (json!("EUR"), json!(50), json!(24)));
        let studio = s.ok("update_studio", json!({"currency": "GBP", "deposit_percent": 40}));
        assert_eq!((studio["currency"].clone(), studio["deposit_percent"].clone()), (json!("GBP"), json!(40)));
        let refused = s.refused("update_studio", json!({"currency": "pounds"}));
        assert!(refused.contains("ISO 4217"), "{refused}");
        // The hall: 60.00 an hour, 90.00 at weekends, 75.00 on weekday evenings.
        let room = s.ok("update_room", json!({"id": "hall", "hourly_rate": 6000, "rates": [
            {"days": "sat-sun", "from": "00:00", "to": "24:00", "hourly_rate": 9000},
            {"days": "mon-fri", "from": "18:00", "to": "24:00", "hourly_rate": 7500},
        ]}));
        assert_eq!(room["room"]["rates"][0]["days"], "sat-sun");
        assert_eq!(room["room"]["hourly_rate"], 6000);
        let refused = s.refused("update_room", json!({"id": "hall", "rates": [
            {"days": "sat", "from": "10:00", "to": "14:00", "hourly_rate": 1},
            {"days": "fri-sun", "from": "13:00", "to": "15:00", "hourly_rate": 2},
        ]}));
        assert!(refused.contains("overlap"), "{refused}");
        s.ok("update_engineer", json!({"id": "e1", "hourly_rate": 2500}));
        // Friday 17:00 to Saturday 01:30 with e1, by hand: Friday 17:00-18:00 at 60.00 = 60.00;
        // 18:00-24:00 at 75.00 = 450.00; Saturday 00:00-01:30 at 90.00 = 135.00; e1 8.5 h at 25.00
        // = 212.50. Total 857.50.
        let q = s.ok("quote", json!({"room": "hall", "start": "2026-09-11T17:00", "end": "2026-09-12T01:30", "engineer": "e1"}));
        let lines: Vec<(String, i64, i64, i64)> = q["lines"].as_array().unwrap().iter()
            .map(|l| (l["what"].as_str().unwrap().to_owned(), l["hourly_rate"].as_i64().unwrap(), l["minutes"].as_i64().unwrap(), l["amount"].as_i64().unwrap()))
            .collect();
        assert_eq!(lines, [("room".to_owned(), 6000, 60, 6000), ("room".to_owned(), 7500, 360, 45000), ("room".to_owned(), 9000, 90, 13500), ("engineer".to_owned(), 2500, 510, 21250)]);
        assert_eq!((q["total"].clone(), q["currency"].clone()), (json!(85750), json!("GBP")));
        assert_eq!(q["lines"][2]["from"], "2026-09-12T00:00:00+01:00");
        // A Saturday session without an engineer: 3 h at 90.00.
        assert_eq!(s.ok("quote", json!({"room": "hall", "start": "2026-09-12T10:00", "end": "2026-09-12T13:00"}))["total"], 27000);
        let refused = s.refused("quote", json!({"room": "hall", "start": "2026-09-12T10:00", "end": "2026-09-12T09:00"}));
        assert!(refused.contains("end: a session must end after it starts"), "{refused}");
        // Each change is in the history.
        let changes = s.ok("list_changes", json!({"entity": "studio"}));
        assert_eq!(changes["events"][0]["after"], json!({"currency": "GBP", "deposit_percent": 40}));
        let changes = s.ok("list_changes", json!({"entity": "room", "id": "hall"}));
        assert_eq!(changes["events"].as_array().unwrap().last().unwrap()["after"]["hourly_rate"], 6000);
    }

    /// An undo puts sessions back only where their engineer can still work.
    fn an_undo_is_refused_when_the_engineer_is_now_away_at_the_old_place(db) {
        let mut store = small_studio(db);
        let b = store.write_with(|w| w.create_booking(&with_engineer(session("live", "c1", "2026-09-08T12:00", 60), "e1"))).unwrap();
        // The hall is taken 11:00-13:00 and the booth all day: the reflow moves b to the hall at
        // 13:15 (the instance keeps the largest turnaround of the rooms, live's 15 minutes).
        store.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-08T11:00", 120))).unwrap();
        store.write_with(|w| w.create_booking(&session("booth", "c3", "2026-09-08T09:00", 540))).unwrap();
        let window = store.write_with(|w| w.add_offline_window(&RoomId::new("live"), at("2026-09-08T00:00"), at("2026-09-09T00:00"), "flood")).unwrap();
        let request = ReflowRequest { month: Month::parse("2026-09").unwrap(), offline_rooms: vec![RoomId::new("live")], max_shift_minutes: 120 };
        let options = studioflow_solver::Options { threads: 2, ..studioflow_solver::Options::default() };
        let plan = plan_reflow(&store, &request, &options).unwrap();
        assert_eq!(plan.moves.iter().map(|m| (m.to_room.clone(), m.to_start)).collect::<Vec<_>>(), [(RoomId::new("hall"), at("2026-09-08T13:15"))]);
        let reflow = apply_plan(&mut store, &plan, false).unwrap();
        // The repair ends early, and e1 takes 12:00-12:30 off: b's old place is no longer theirs.
        store.write_with(|w| w.remove_offline_window(window.id)).unwrap();
        let off = store.write_with(|w| w.add_time_off(&e1(), at("2026-09-08T12:00"), at("2026-09-08T12:30"), "dentist")).unwrap();
        assert!(off.displaced.is_empty(), "b at 13:15 is not touched");
        let err = store.write_with(|w| w.undo_reflow(&reflow)).unwrap_err();
        assert!(err.to_string().contains("engineer e1 has time off from 2026-09-08T12:00:00+01:00"), "{err}");
        assert_eq!(store.booking(&b.id).unwrap().unwrap().start, at("2026-09-08T13:15"), "nothing half-written");
    }
}
