//! Issue 12 below the wire: a booking's revision (an event's SEQUENCE) rises on every change,
//! from any write path; a calendar holds exactly the calendar's bookings in its window; a feed
//! secret opens its own calendar only, and nothing once revoked.
//! Both tests run on both backends.

use crate::support::{at, on_both, session, small_studio};
use chrono::Utc;
use studioflow::domain::{CalendarOf, ClientId, Move, RoomId};
use studioflow::store::CancelScope;
use studioflow::{feeds, ics};

on_both! {
    fn a_bookings_revision_rises_on_every_change_from_any_write_path(db) {
        let mut store = small_studio(db);
        let booked = store.write_with(|w| w.create_booking(&session("hall", "c1", "2026-09-10T10:00", 60))).unwrap();
        let revision = |store: &studioflow::store::Store| {
            let entries = store.calendar_entries(&CalendarOf::Client(ClientId::new("c1")), at("2026-09-01T00:00"), at("2026-10-01T00:00")).unwrap();
            assert_eq!(entries.len(), 1);
            entries[0].revision
        };
        assert_eq!(revision(&store), 0);
        store.write_with(|w| w.move_booking(&booked.id, &RoomId::new("hall"), at("2026-09-10T12:00"))).unwrap();
        assert_eq!(revision(&store), 1, "a move");
        // A reflow's moves go through another write path; the database counts them all the same.
        let moved = Move {
            booking: booked.id.clone(),
            from_room: RoomId::new("hall"),
            from_start: at("2026-09-10T12:00"),
            from_end: at("2026-09-10T13:00"),
            to_room: RoomId::new("live"),
            to_start: at("2026-09-10T12:00"),
            to_end: at("2026-09-10T13:00"),
        };
        store.write_with(|w| w.apply_moves(std::slice::from_ref(&moved))).unwrap();
        assert_eq!(revision(&store), 2, "a reflow's move");
        store.write_with(|w| w.cancel_booking(&booked.id, CancelScope::Occurrence)).unwrap();
        assert_eq!(revision(&store), 3, "a cancel");
        let text = ics::calendar(&store, &CalendarOf::Room(RoomId::new("live")), Some((at("2026-09-01T00:00"), at("2026-10-01T00:00")))).unwrap();
        assert_eq!(text.matches("BEGIN:VEVENT").count(), 1);
        assert!(text.contains("SEQUENCE:3") && text.contains("STATUS:CANCELLED") && text.contains(&format!("UID:{}@test-rooms.studioflow", booked.id)), "{text}");
        let hall = ics::calendar(&store, &CalendarOf::Room(RoomId::new("hall")), Some((at("2026-09-01T00:00"), at("2026-10-01T00:00")))).unwrap();
        assert_eq!(hall.matches("BEGIN:VEVENT").count(), 0, "the booking left the hall");
        assert!(matches!(ics::calendar(&store, &CalendarOf::Room(RoomId::new("nope")), None), Err(ics::IcsError::Unknown(_))));
    }

    fn a_feed_secret_opens_its_own_calendar_until_it_is_revoked(db) {
        let mut store = small_studio(db);
        let live = CalendarOf::Room(RoomId::new("live"));
        let hall = CalendarOf::Room(RoomId::new("hall"));
        let (feed, secret) = feeds::create(&mut store, &live, Some("desk"), Utc::now()).unwrap();
        let (_, other) = feeds::create(&mut store, &hall, None, Utc::now()).unwrap();
        assert!(feeds::opens(&store, &live, &secret).unwrap());
        assert!(!feeds::opens(&store, &live, &other).unwrap(), "another calendar's secret");
        assert!(!feeds::opens(&store, &hall, &secret).unwrap(), "the secret on another calendar");
        assert!(!feeds::opens(&store, &CalendarOf::Client(ClientId::new("live")), &secret).unwrap(), "same id, other kind");
        assert!(!feeds::opens(&store, &live, "").unwrap());
        // Only the hash is stored.
        let stored = db.text(&format!("SELECT secret_hash FROM feed_secrets WHERE id = '{}'", feed.id)).unwrap();
        assert_ne!(stored, secret);
        assert_eq!(stored, studioflow::auth::secret::hash(&secret));
        assert!(store.write_with(|w| w.revoke_feed(&feed.id, Utc::now())).unwrap());
        assert!(!feeds::opens(&store, &live, &secret).unwrap(), "revoked");
        assert!(!store.write_with(|w| w.revoke_feed(&feed.id, Utc::now())).unwrap(), "revoked twice");
        assert!(feeds::opens(&store, &hall, &other).unwrap(), "the other feed is untouched");
        assert!(feeds::create(&mut store, &CalendarOf::Engineer(studioflow::domain::EngineerId::new("nobody")), None, Utc::now()).is_err());
    }
}
