//! Issue 12 below the wire: a booking's revision (an event's SEQUENCE) rises on every change,
//! from any write path; a calendar holds exactly the calendar's bookings in its window; a feed
//! secret opens its own calendar only, and nothing once revoked. Issue 21: names holding control
//! characters, left by older versions, cannot forge `studioflow calendar`'s output, which a strict
//! parser (Python's `icalendar`) reads back as the bookings with their names.
//! Every test runs on both backends.

use crate::support::{at, on_both, session, small_studio, TestDb};
use chrono::Utc;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use studioflow::domain::{Booking, CalendarOf, ClientId, EngineerId, Move, RoomId, Session};
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
            from_engineer: None,
            to_engineer: None,
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

/// Every C0 control character, DEL and every C1 control character; PostgreSQL cannot store
/// U+0000 in TEXT, so there it starts at U+0001.
fn controls(db: &TestDb) -> String {
    let first = if db.is_postgres() { 1 } else { 0 };
    (first..0x20).chain(0x7f..0xa0).filter_map(char::from_u32).collect()
}

/// The bidi controls: LRE RLE PDF LRO RLO, LRI RLI FSI PDI, LRM RLM, ALM.
const BIDI: &str = "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{61c}";

/// TEXT's special characters, a colon and quotes, and a backslash before an `n`, which a careless
/// unescaper turns into a line break.
const SPECIALS: &str = "back\\slash; semi, comma: \"quoted\" C:\\new";

/// `text` as an SQL expression of its code points, so that any character reaches the column as
/// it is (SQLite's `char()` takes 127 arguments at most; PostgreSQL's `U&''` takes escapes).
fn sql_text(db: &TestDb, text: &str) -> String {
    let points: Vec<u32> = text.chars().map(u32::from).collect();
    if db.is_postgres() {
        format!("U&'{}'", points.iter().map(|p| format!("\\+{p:06X}")).collect::<String>())
    } else {
        points.chunks(100).map(|chunk| format!("char({})", chunk.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))).collect::<Vec<_>>().join(" || ")
    }
}

/// How a name reads back from the calendar: CRLF, CR and LF each one line break (LF), HTAB kept,
/// and every other control character (C0, DEL, C1) dropped, since TEXT cannot hold them.
fn reads_as(name: &str) -> String {
    name.replace("\r\n", "\n").replace('\r', "\n").chars().filter(|&c| c == '\n' || c == '\t' || !c.is_control()).collect()
}

on_both! {
    /// Issue 21, item 1: a studio, a room, a client and an engineer whose names hold every C0 and
    /// C1 control character, bidi controls and TEXT's special characters (written straight into
    /// the database, as an older studioflow could leave them), and the forgeries of the issue.
    /// `studioflow calendar` prints each calendar in lines of at most 75 octets, each ending in
    /// CRLF, with no bare CR or LF; the strict parser reads exactly the calendar's bookings, and
    /// every name as written but for the control characters TEXT cannot hold: every C0 character
    /// but HTAB, CR and LF, DEL, and every C1 character (NEL included) are dropped; CR, LF and CRLF
    /// are each read back as one line break; HTAB, the bidi controls, backslash, semicolon, comma,
    /// colon and quotes are read back as they are.
    fn issue_21_names_with_control_characters_cannot_forge_a_calendar(db) {
        let mut store = small_studio(db);
        let with_e1 = |s: Session| Session { engineer: Some(EngineerId::new("e1")), ..s };
        let book = |store: &mut studioflow::store::Store, s: Session| store.write_with(|w| w.create_booking(&s)).unwrap();
        let b1 = book(&mut store, with_e1(session("live", "c1", "2026-09-10T10:00", 60)));
        let b2 = book(&mut store, session("hall", "c1", "2026-09-11T10:00", 90));
        let b3 = book(&mut store, with_e1(session("hall", "c2", "2026-09-12T10:00", 60)));
        let b4 = book(&mut store, with_e1(session("live", "c1", "2026-09-14T12:00", 120)));
        let b5 = book(&mut store, session("live", "c3", "2026-09-15T10:00", 60));
        store.write_with(|w| w.cancel_booking(&b4.id, CancelScope::Occurrence)).unwrap();
        drop(store);

        let controls = controls(db);
        let studio = format!("Nörth\r\nSide Sound{controls}{BIDI};,\\");
        let room = format!("Live\r\nX-INJECTED-ROOM:1\r{controls}{BIDI}{SPECIALS} Räum 🎸");
        let client = format!("Evil\r\nBEGIN:VEVENT\r\nUID:x@evil\r\nSUMMARY:INJECTED\r\nDTSTART:20261105T100000Z\r\nEND:VEVENT\n{controls}{BIDI}{SPECIALS} Cliént");
        let engineer = format!("\u{85}Eng\u{2028}{controls}{BIDI}{SPECIALS} Ëngineer");
        db.exec(&format!("UPDATE studio SET name = {}", sql_text(db, &studio)));
        db.exec(&format!("UPDATE rooms SET name = {} WHERE id = 'live'", sql_text(db, &room)));
        db.exec(&format!("UPDATE clients SET name = {} WHERE id = 'c1'", sql_text(db, &client)));
        db.exec(&format!("UPDATE engineers SET name = {} WHERE id = 'e1'", sql_text(db, &engineer)));
        // The database holds the names exactly as written.
        assert_eq!(db.text("SELECT name FROM studio").as_deref(), Some(studio.as_str()));
        assert_eq!(db.text("SELECT name FROM rooms WHERE id = 'live'").as_deref(), Some(room.as_str()));
        assert_eq!(db.text("SELECT name FROM clients WHERE id = 'c1'").as_deref(), Some(client.as_str()));
        assert_eq!(db.text("SELECT name FROM engineers WHERE id = 'e1'").as_deref(), Some(engineer.as_str()));

        // Worked by hand: the UID's domain keeps the studio name's ASCII letters and digits,
        // lowercased, and turns a space into `-`; everything else is left out.
        let uid = |b: &Booking| format!("{}@nrthside-sound.studioflow", b.id);
        let (live, c1, e1) = (reads_as(&room), reads_as(&client), reads_as(&engineer));
        assert!(c1.contains("Evil\nBEGIN:VEVENT\nUID:x@evil\n") && c1.contains(BIDI) && c1.contains(SPECIALS) && c1.contains('\t'));
        // Each booking: its event's SUMMARY, LOCATION and the lines its DESCRIPTION must hold.
        let event = |b: &Booking, summary: String, location: &str, lines: Vec<String>| (uid(b), (b.clone(), summary, location.to_owned(), lines));
        let e1_line = format!("Engineer: {e1} (e1)");
        let events = BTreeMap::from([
            event(&b1, format!("{c1} in {live} with {e1}"), &live, vec![format!("Room: {live} (live)"), format!("Client: {c1} (c1)"), e1_line.clone()]),
            event(&b2, format!("{c1} in HALL"), "HALL", vec![format!("Client: {c1} (c1)")]),
            event(&b3, format!("Client c2 in HALL with {e1}"), "HALL", vec![e1_line.clone()]),
            event(&b4, format!("{c1} in {live} with {e1}"), &live, vec![format!("Room: {live} (live)"), format!("Client: {c1} (c1)"), e1_line]),
            event(&b5, format!("Client c3 in {live}"), &live, vec![format!("Room: {live} (live)")]),
        ]);
        let calendars = [
            ("--room", "live", format!("room {live}"), [&b1, &b4, &b5]),
            ("--client", "c1", format!("client {c1}"), [&b1, &b2, &b4]),
            ("--engineer", "e1", format!("engineer {e1}"), [&b1, &b3, &b4]),
        ];

        let mut files = Vec::new();
        for (flag, id, _, _) in &calendars {
            let out = Command::new(env!("CARGO_BIN_EXE_studioflow")).args(["calendar", "--db", db.db_arg(), flag, id]).env("RUST_LOG", "warn").output().unwrap();
            assert!(out.status.success(), "{flag} {id}: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8(out.stdout).unwrap();
            let body = text.strip_suffix("\r\n").unwrap_or_else(|| panic!("{flag} {id}: the calendar does not end in CRLF"));
            for line in body.split("\r\n") {
                assert!(!line.contains(['\r', '\n']), "{flag} {id}: a bare CR or LF in {line:?}");
                assert!(line.len() <= 75, "{flag} {id}: {} octets in {line:?}", line.len());
            }
            assert_eq!(text.matches("\r\nBEGIN:VEVENT\r\n").count(), 3, "{flag} {id}: no forged event\n{text}");
            assert!(!text.contains("\r\nX-INJECTED-ROOM") && !text.contains("\r\nUID:x@evil"), "{flag} {id}:\n{text}");
            let file = db.file(&format!("{id}.ics"));
            std::fs::write(&file, &text).unwrap();
            files.push(file);
        }

        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/calendar_names.py");
        let out = Command::new(crate::sdk_python::python()).arg(&script).args(&files).output().unwrap();
        assert!(out.status.success(), "calendar_names.py: {}", String::from_utf8_lossy(&out.stderr));
        let read: Value = serde_json::from_slice(&out.stdout).unwrap();
        for ((flag, id, whose, bookings), file) in calendars.iter().zip(&files) {
            let calendar = &read[file.to_str().unwrap()];
            let title = format!("{}: {whose}", reads_as(&studio));
            assert_eq!(calendar["name"], title.as_str(), "{flag} {id}: NAME");
            assert_eq!(calendar["calname"], title.as_str(), "{flag} {id}: X-WR-CALNAME");
            let got: BTreeMap<&str, &Value> = calendar["events"].as_array().unwrap().iter().map(|e| (e["uid"].as_str().unwrap(), e)).collect();
            let mut expected: Vec<String> = bookings.iter().map(|b| uid(b)).collect();
            expected.sort();
            assert_eq!(got.keys().copied().collect::<Vec<_>>(), expected.iter().map(String::as_str).collect::<Vec<_>>(), "{flag} {id}: the events are the bookings");
            assert_eq!(calendar["events"].as_array().unwrap().len(), 3, "{flag} {id}: each booking once");
            for (uid, e) in got {
                let (b, summary, location, lines) = &events[uid];
                assert_eq!(e["start"], b.start.to_rfc3339().as_str(), "{uid}");
                assert_eq!(e["end"], b.end.to_rfc3339().as_str(), "{uid}");
                let (status, sequence) = if b.id == b4.id { ("CANCELLED", 1) } else { ("CONFIRMED", 0) };
                assert_eq!((e["status"].as_str(), e["sequence"].as_i64()), (Some(status), Some(sequence)), "{uid}");
                assert_eq!(e["summary"], summary.as_str(), "{uid}: SUMMARY");
                assert_eq!(e["location"], location.as_str(), "{uid}: LOCATION");
                let description = e["description"].as_str().unwrap();
                assert!(description.starts_with(&format!("Booking {}\nRoom: ", b.id)), "{uid}: {description:?}");
                for line in lines {
                    assert!(description.contains(line.as_str()), "{uid}: DESCRIPTION {description:?} without {line:?}");
                }
            }
        }
    }
}
