//! Issue 10, running the studio from an agent, on the real binary over stdio: the roster, rooms,
//! booking edits, holds, history, applying a dry-run plan without tasks, and undoing a reflow.
//! The studio manager's scenario is one test; each new tool has its happy path and bad inputs.
//! Every test runs on both backends.

use crate::mcp_client::{http, stdio, Mcp, StdioServer};
use crate::support::{on_both, TestDb};
use chrono::{Duration, DurationRound, Utc};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use studioflow::domain::{Person, Profile, Room, RoomId, Studio, WeeklyHours};
use studioflow::store::{EventQuery, PersonKind, Store};

/// Every booking of every status, every page, as the tools show them: the studio's calendar, to
/// compare byte for byte.
pub(crate) fn dump(s: &mut StdioServer) -> String {
    let mut out = Vec::new();
    for status in ["confirmed", "tentative", "cancelled"] {
        let mut cursor = Value::Null;
        loop {
            let mut args = json!({"status": status, "limit": 500});
            if !cursor.is_null() {
                args["cursor"] = cursor.clone();
            }
            let page = s.ok("query_bookings", args);
            out.extend(page["bookings"].as_array().unwrap().iter().cloned());
            cursor = page["next_cursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
    }
    serde_json::to_string(&out).unwrap()
}

fn booking(s: &mut StdioServer, id: &str) -> Value {
    s.ok("get_booking", json!({"id": id}))["booking"].clone()
}

on_both! {
    fn the_studio_manager_runs_the_studio_from_an_agent(db) {
        let mut s = stdio(db, &["--demo"]);

        // A new client, booked at once.
        let client = s.ok("create_client", json!({"name": "Amara Osei", "email": "amara@example.com", "phone": "+44 20 7946 0000"}));
        assert_eq!(client["client"]["id"], "amara-osei");
        assert_eq!(client["client"]["active"], true);
        // A new room, as list_rooms describes rooms.
        let room = s.ok("create_room", json!({"id": "studio-d", "name": "Studio D", "capacity": 6, "features": ["Control-Room", "piano"], "opening_hours": ["mon-sun 09:00-23:00"], "buffer_minutes": 15}));
        assert_eq!(room["room"]["features"], json!(["control-room", "piano"]));
        let rooms = s.ok("list_rooms", json!({}))["rooms"].clone();
        let listed = rooms.as_array().unwrap().iter().find(|r| r["id"] == "studio-d").unwrap().clone();
        assert_eq!((listed["opening_hours"].clone(), listed["active"].clone()), (room["room"]["opening_hours"].clone(), json!(true)));
        assert_eq!(listed["opening_hours"][6], "sun 09:00-23:00");

        // A time when another room could take the party too, so that a reflow has somewhere to go.
        let free = s.ok("find_free_slots", json!({"from": "2026-10-14T10:00", "to": "2026-10-14T20:00", "duration_minutes": 120, "party_size": 4, "limit": 50}));
        let slot = free["slots"].as_array().unwrap().iter().find(|s| s["room"] != "studio-d").expect("a free room on the 14th").clone();
        let created = s.ok("create_booking", json!({"room": "studio-d", "client": "amara-osei", "start": slot["start"], "end": slot["end"], "party_size": 4}));
        let id = created["bookings"][0]["id"].as_str().unwrap().to_owned();

        // Shrinking the room under the booking is refused, naming it; forced, it displaces it.
        let refused = s.refused("update_room", json!({"id": "studio-d", "capacity": 2}));
        assert!(refused.contains(&id) && refused.contains("1 future booking") && refused.contains("force: true"), "{refused}");
        assert_eq!(booking(&mut s, &id)["displaced"], false, "a refused change changes nothing");
        let forced = s.ok("update_room", json!({"id": "studio-d", "capacity": 2, "force": true}));
        assert_eq!(forced["displaced_count"], 1);
        assert_eq!(forced["displaced"][0]["id"], id.as_str());
        assert!(forced["next_step"].as_str().unwrap().contains("reflow_month for 2026-10"), "{forced}");
        assert_eq!(booking(&mut s, &id)["displaced"], true);
        // Displaced, it holds nothing: its slot in studio-d can be booked by a party that fits.
        let taker = s.ok("create_booking", json!({"room": "studio-d", "client": "amara-osei", "start": slot["start"], "end": slot["end"], "party_size": 2}));
        let taker = taker["bookings"][0]["id"].as_str().unwrap().to_owned();
        s.ok("cancel_booking", json!({"id": taker}));

        // The month's reflow moves it, with no room offline.
        let before = dump(&mut s);
        let reflow = s.ok("reflow_month", json!({"month": "2026-10", "offline_rooms": []}));
        assert_eq!((reflow["applied"].clone(), reflow["moved"].clone(), reflow["affected"].clone()), (json!(true), json!(1), json!(1)), "{reflow}");
        assert_eq!(reflow["moves"][0]["booking"], id.as_str());
        assert_eq!(reflow["moves"][0]["from_room"], "studio-d");
        let moved = booking(&mut s, &id);
        assert_ne!(moved["room"], "studio-d");
        assert_eq!(moved["displaced"], false);
        assert_ne!(dump(&mut s), before);

        // Undone: every booking is back, byte for byte.
        let undone = s.ok("undo_reflow", json!({"reflow_id": reflow["reflow_id"]}));
        assert_eq!(undone["restored"][0]["id"], id.as_str());
        assert_eq!(dump(&mut s), before, "the calendar after the undo is the calendar before the reflow");
        assert!(s.refused("undo_reflow", json!({"reflow_id": reflow["reflow_id"]})).contains("undone already"));
        assert_eq!(s.ok("get_reflow", json!({"reflow_id": reflow["reflow_id"]}))["undone"], true);

        // Look, then approve, without the tasks extension.
        let plan = s.ok("reflow_month", json!({"month": "2026-10", "offline_rooms": [], "dry_run": true}));
        assert_eq!((plan["applied"].clone(), plan["moved"].clone()), (json!(false), json!(1)));
        assert_eq!(dump(&mut s), before, "a dry run moves nothing");
        let applied = s.ok("apply_reflow", json!({"reflow_id": plan["reflow_id"]}));
        assert_eq!((applied["applied"].clone(), applied["moves"].clone()), (json!(true), plan["moves"].clone()));
        let placed = booking(&mut s, &id);
        assert_eq!((placed["room"].clone(), placed["start"].clone()), (plan["moves"][0]["to_room"].clone(), plan["moves"][0]["to_start"].clone()));
        assert!(s.refused("apply_reflow", json!({"reflow_id": plan["reflow_id"]})).contains("applied already"));
        // A month with nothing displaced still needs a room named.
        assert!(s.refused("reflow_month", json!({"month": "2026-10", "offline_rooms": []})).contains("name at least one room"));

        // The booking's history tells the story, each step with who and through what.
        let history = s.ok("get_booking", json!({"id": id}))["history"].clone();
        let steps: Vec<(String, String)> = history
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["action"].as_str().unwrap().to_owned(), e["via"].as_str().unwrap().to_owned()))
            .collect();
        let undo_via = format!("undo {}", reflow["reflow_id"].as_str().unwrap());
        let expected = [
            ("created", "create_booking"),
            ("displaced", "update_room"),
            ("moved", &*format!("reflow {}", reflow["reflow_id"].as_str().unwrap())),
            ("moved back", &*undo_via),
            ("moved", &*format!("reflow {}", plan["reflow_id"].as_str().unwrap())),
        ];
        let expected: Vec<(String, String)> = expected.iter().map(|(a, v)| (a.to_string(), v.to_string())).collect();
        assert_eq!(steps, expected);
        assert!(history.as_array().unwrap().iter().all(|e| e["who"] == "studioflow-tests"), "{history}");
    }

    fn a_booking_created_moved_by_a_reflow_and_edited_has_three_events(db) {
        let mut s = stdio(db, &["--demo"]);
        s.ok("create_client", json!({"name": "Night Shift Podcast"}));
        let free = s.ok("find_free_slots", json!({"room": "podcast-1", "from": "2026-10-20T09:00", "to": "2026-10-20T20:00", "duration_minutes": 60}));
        let slot = free["slots"][0].clone();
        let created = s.ok("create_booking", json!({"room": "podcast-1", "client": "night-shift-podcast", "start": slot["start"], "end": slot["end"]}));
        let id = created["bookings"][0]["id"].as_str().unwrap().to_owned();
        s.ok("set_room_offline", json!({"room": "podcast-1", "from": "2026-10-20T00:00", "to": "2026-10-21T00:00", "reason": "new desk"}));
        let reflow = s.ok("reflow_month", json!({"month": "2026-10", "offline_rooms": ["podcast-1"]}));
        let reflow_id = reflow["reflow_id"].as_str().unwrap().to_owned();
        let moved = reflow["moves"].as_array().unwrap().iter().find(|m| m["booking"] == id.as_str()).expect("the booking moved").clone();
        s.ok("update_booking", json!({"id": id, "pinned": true, "notes": "bring the guest's mic"}));

        let events = s.ok("list_changes", json!({"entity": "booking", "id": id}))["events"].clone();
        let events = events.as_array().unwrap();
        assert_eq!(events.len(), 3, "{events:?}");
        let (first, second, third) = (&events[0], &events[1], &events[2]);
        for e in events {
            assert_eq!(e["who"], "studioflow-tests");
            assert_eq!(e["at"], "2026-08-31T09:00:00+01:00", "the demo's clock");
            assert_eq!(e["entity"], "booking");
        }
        assert!(first["seq"].as_i64() < second["seq"].as_i64() && second["seq"].as_i64() < third["seq"].as_i64());
        assert_eq!((first["action"].clone(), first["via"].clone()), (json!("created"), json!("create_booking")));
        assert!(first["before"].as_object().unwrap().is_empty());
        assert_eq!(first["after"]["room"], "podcast-1");
        assert_eq!(first["after"]["start"], slot["start"]);
        assert_eq!(first["after"]["client"], "night-shift-podcast");

        assert_eq!((second["action"].clone(), second["via"].clone()), (json!("moved"), json!(format!("reflow {reflow_id}"))));
        assert_eq!(second["before"]["room"], "podcast-1");
        assert_eq!(second["after"]["room"], moved["to_room"]);
        let keys: BTreeSet<&String> = second["after"].as_object().unwrap().keys().collect();
        assert!(keys.iter().all(|k| ["room", "start", "end"].contains(&k.as_str())), "only the changed fields: {keys:?}");

        assert_eq!((third["action"].clone(), third["via"].clone()), (json!("updated"), json!("update_booking")));
        assert_eq!(third["before"], json!({"pinned": false, "notes": null}));
        assert_eq!(third["after"], json!({"pinned": true, "notes": "bring the guest's mic"}));
    }

    fn list_changes_gives_every_event_once_across_pages_while_eight_writers_write(db) {
        let mut s = stdio(db, &["--demo"]);
        const WRITERS: usize = 8;
        const EACH: usize = 25;
        let writers: Vec<_> = (0..WRITERS)
            .map(|n| {
                let target = db.target();
                std::thread::spawn(move || {
                    let mut store = Store::open(target).unwrap();
                    let actor = studioflow::domain::Actor::new(format!("writer-{n}"), "test");
                    for i in 0..EACH {
                        store.write_as(&actor, |w| w.create_person(PersonKind::Client, None, &format!("Writer {n} Client {i}"), Profile::default())).unwrap();
                    }
                })
            })
            .collect();
        let mut seen: Vec<i64> = Vec::new();
        let mut cursor = Value::Null;
        let mut pages = 0;
        loop {
            let done = writers.iter().all(|w| w.is_finished());
            let mut args = json!({"limit": 7});
            if !cursor.is_null() {
                args["since"] = cursor.clone();
            }
            let page = s.ok("list_changes", args);
            pages += 1;
            seen.extend(page["events"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()));
            cursor = page["next_cursor"].clone();
            if done && page["more"] == false {
                break;
            }
        }
        for w in writers {
            w.join().unwrap();
        }
        let store = Store::open(db).unwrap();
        let all: Vec<i64> = store.events(&EventQuery { limit: usize::MAX >> 1, ..Default::default() }).unwrap().iter().map(|e| e.seq).collect();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in commit order, none repeated");
        assert_eq!(seen, all, "every event exactly once");
        let writes = store.events(&EventQuery { entity: Some(studioflow::store::Entity::Client), limit: 10_000, ..Default::default() }).unwrap();
        assert_eq!(writes.iter().filter(|e| e.who.starts_with("writer-")).count(), WRITERS * EACH);
        assert!(pages > (WRITERS * EACH) / 7, "{pages} pages");
    }

    fn who_is_the_clients_name_over_stdio_http_and_a_legacy_initialize(db) {
        let mut s = stdio(db, &["--demo"]);
        s.ok("create_client", json!({"name": "Over Stdio"}));
        // A legacy client names itself once, at initialize.
        let mut legacy = stdio(db, &[]);
        legacy.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy-agent", "version": "0.1"}}}));
        legacy.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let created = legacy.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "create_client", "arguments": {"name": "Over Legacy"}}}));
        assert_eq!(created["result"]["isError"], false, "{created}");
        let mut h = http(db, &[]);
        h.ok("create_client", json!({"name": "Over Http"}));

        let changes = s.ok("list_changes", json!({"entity": "client", "limit": 1000}))["events"].clone();
        let who = |id: &str| changes.as_array().unwrap().iter().find(|e| e["id"] == id).map(|e| (e["who"].clone(), e["via"].clone()));
        assert_eq!(who("over-stdio"), Some((json!("studioflow-tests"), json!("create_client"))));
        assert_eq!(who("over-legacy"), Some((json!("legacy-agent"), json!("create_client"))));
        assert_eq!(who("over-http"), Some((json!("studioflow-tests"), json!("create_client"))));
        assert_eq!(who("client-001"), Some((json!("studioflow"), json!("init"))), "a command writes as itself");
    }
}

/// A studio on the real clock (holds expire by the studio's clock; the demo's stands still).
fn real_clock_studio(db: &TestDb) {
    let mut store = Store::open(db).unwrap();
    store
        .write_with(|w| {
            w.set_studio(&Studio { name: "Now".into(), tz: crate::support::london(), notice: Duration::hours(1), clock: None, horizon: Duration::days(730) })?;
            w.add_room(&Room {
                id: RoomId::new("hall"),
                name: "Hall".into(),
                capacity: 4,
                features: vec![],
                hours: WeeklyHours::parse(&["mon-sun 00:00-24:00"]).unwrap(),
                buffer: Duration::zero(),
                active: true,
                rules: Default::default(),
                price: Default::default(),
            })?;
            w.add_client(&Person { id: "c1".into(), name: "One".into() })?;
            w.add_client(&Person { id: "c2".into(), name: "Two".into() })
        })
        .unwrap();
}

on_both! {
    fn an_expired_hold_is_released_while_the_server_runs_and_the_slot_is_free_again(db) {
        real_clock_studio(db);
        let mut s = stdio(db, &[]);
        // Noon (UTC) two days ahead: inside the horizon, and never across midnight, whenever it runs.
        let start = (Utc::now() + Duration::days(2)).duration_trunc(Duration::days(1)).unwrap() + Duration::hours(12);
        let slot = json!({"room": "hall", "start": start.to_rfc3339(), "end": (start + Duration::hours(2)).to_rfc3339()});
        let mut held = slot.clone();
        held["client"] = json!("c1");
        held["status"] = json!("tentative");
        held["hold_until"] = json!((Utc::now() + Duration::seconds(2)).to_rfc3339());
        let id = s.ok("create_booking", held)["bookings"][0]["id"].as_str().unwrap().to_owned();
        let mut other = slot.clone();
        other["client"] = json!("c2");
        assert!(s.refused("create_booking", other.clone()).contains(&id), "the hold holds its slot");

        // A hold that is confirmed is no longer released.
        let mut kept = slot.clone();
        kept["start"] = json!((start + Duration::hours(3)).to_rfc3339());
        kept["end"] = json!((start + Duration::hours(4)).to_rfc3339());
        kept["client"] = json!("c1");
        kept["status"] = json!("tentative");
        kept["hold_until"] = json!((Utc::now() + Duration::seconds(2)).to_rfc3339());
        let confirmed = s.ok("create_booking", kept)["bookings"][0]["id"].as_str().unwrap().to_owned();
        let after = s.ok("update_booking", json!({"id": confirmed, "status": "confirmed"}));
        assert_eq!((after["bookings"][0]["status"].clone(), after["bookings"][0]["hold_until"].clone()), (json!("confirmed"), Value::Null));

        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while booking(&mut s, &id)["status"] != "cancelled" {
            assert!(std::time::Instant::now() < deadline, "the hold was not released");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let released = s.ok("get_booking", json!({"id": id}))["history"].clone();
        let last = released.as_array().unwrap().last().unwrap().clone();
        assert_eq!((last["action"].clone(), last["via"].clone(), last["who"].clone()), (json!("hold released"), json!("hold expiry"), json!("studioflow")));
        assert_eq!(last["after"]["status"], "cancelled");
        s.ok("create_booking", other);
        assert_eq!(booking(&mut s, &confirmed)["status"], "confirmed");
    }

    fn every_new_tool_works_on_its_happy_path(db) {
        let mut s = stdio(db, &["--demo"]);

        let clients = s.ok("list_clients", json!({"limit": 10}));
        assert_eq!(clients["clients"].as_array().unwrap().len(), 10);
        let next = s.ok("list_clients", json!({"limit": 10, "cursor": clients["next_cursor"]}));
        assert!(next["clients"][0]["id"].as_str() > clients["clients"][9]["id"].as_str());
        let found = s.ok("list_clients", json!({"query": "CLIENT-01"}));
        assert!(found["clients"].as_array().unwrap().iter().all(|c| c["id"].as_str().unwrap().starts_with("client-01")), "{found}");
        let engineers = s.ok("list_engineers", json!({}));
        assert_eq!(engineers["engineers"].as_array().unwrap().len(), 6);
        assert!(engineers["engineers"][0]["skills"].is_array());

        let twin = s.ok("create_client", json!({"name": "Client 1"}));
        assert_eq!(twin["client"]["id"], "client-1", "an id made from the name");
        let again = s.ok("create_client", json!({"name": "Client 1"}));
        assert_eq!(again["client"]["id"], "client-1-2", "unique");
        let given = s.ok("create_client", json!({"name": "The Lumens", "id": "lumens", "notes": "four-piece"}));
        assert_eq!(given["client"]["notes"], "four-piece");

        let engineer = s.ok("create_engineer", json!({"name": "Kai Tanaka", "skills": ["mixing", "drums"], "email": "kai@example.com"}));
        assert_eq!(engineer["engineer"]["id"], "kai-tanaka");
        let engineer = s.ok("update_engineer", json!({"id": "kai-tanaka", "skills": ["mastering"], "phone": "0700"}));
        assert_eq!((engineer["engineer"]["skills"].clone(), engineer["engineer"]["phone"].clone()), (json!(["mastering"]), json!("0700")));

        let booked = s.ok("create_booking", json!({"room": "studio-c", "client": "lumens", "engineer": "kai-tanaka", "start": "2026-11-03T10:00", "end": "2026-11-03T12:00", "recurrence": "FREQ=WEEKLY;COUNT=3"}));
        let first = booked["bookings"][0]["id"].as_str().unwrap().to_owned();
        let edited = s.ok("update_booking", json!({"id": first, "pinned": true, "party_size": 3, "scope": "series"}));
        assert_eq!(edited["bookings"].as_array().unwrap().len(), 3);
        assert!(edited["bookings"].as_array().unwrap().iter().all(|b| b["pinned"] == true && b["party_size"] == 3));
        let off = s.ok("update_booking", json!({"id": first, "engineer": null}));
        assert_eq!(off["bookings"][0]["engineer"], Value::Null);

        // Deactivating a client keeps their bookings, lists them, and refuses new ones.
        let inactive = s.ok("update_client", json!({"id": "lumens", "active": false}));
        assert_eq!(inactive["client"]["active"], false);
        assert_eq!(inactive["future_bookings"].as_array().unwrap().len(), 3);
        let refused = s.refused("create_booking", json!({"room": "studio-c", "client": "lumens", "start": "2026-11-05T10:00", "end": "2026-11-05T11:00"}));
        assert!(refused.contains("client \"lumens\" is inactive"), "{refused}");
        assert_eq!(s.ok("list_clients", json!({"active": false}))["clients"][0]["id"], "lumens");
        // Their bookings stay theirs, and can still be edited or moved.
        s.ok("update_booking", json!({"id": first, "notes": "client on hold"}));
        let inactive = s.ok("update_engineer", json!({"id": "kai-tanaka", "active": false}));
        assert_eq!(inactive["future_bookings"].as_array().unwrap().len(), 2, "the first session has no engineer now");
        let second = booked["bookings"][1]["id"].as_str().unwrap().to_owned();
        s.ok("update_booking", json!({"id": second, "notes": "Kai's last sessions"}));
        assert!(s.refused("update_booking", json!({"id": first, "engineer": "kai-tanaka"})).contains("engineer \"kai-tanaka\" is inactive"));

        // An offline window ended early says which bookings could go back.
        let window = s.ok("set_room_offline", json!({"room": "rehearsal-1", "from": "2026-10-20T00:00", "to": "2026-10-21T00:00", "reason": "new desk"}));
        let reflow = s.ok("reflow_month", json!({"month": "2026-10", "offline_rooms": ["rehearsal-1"]}));
        let moved = reflow["moves"].as_array().unwrap().len();
        assert!(moved > 0, "{reflow}");
        let removed = s.ok("remove_offline_window", json!({"id": window["window"]["id"]}));
        assert_eq!(removed["removed"]["reason"], "new desk");
        assert_eq!(removed["could_return"].as_array().unwrap().len(), moved, "{removed}");
        assert_eq!(removed["could_return"][0]["original_room"], "rehearsal-1");
        assert!(s.ok("list_offline_windows", json!({"room": "rehearsal-1", "from": "2026-10-01T00:00"}))["windows"].as_array().unwrap().is_empty());
        // With the window gone, the reflow can be undone.
        s.ok("undo_reflow", json!({"reflow_id": reflow["reflow_id"]}));

        // Retiring a room displaces its future bookings; it stays listed, inactive, and unbookable.
        let refused = s.refused("update_room", json!({"id": "studio-c", "active": false}));
        assert!(refused.contains("future bookings") && refused.contains(" more;"), "the first 20 and the count: {refused}");
        let retired = s.ok("update_room", json!({"id": "studio-c", "active": false, "force": true}));
        assert!(retired["displaced_count"].as_u64().unwrap() >= 3, "{retired}");
        assert_eq!(retired["room"]["active"], false);
        assert!(s.refused("create_booking", json!({"room": "studio-c", "client": "client-001", "start": "2026-11-10T10:00", "end": "2026-11-10T11:00"})).contains("room \"studio-c\" is inactive"));
        assert_eq!(booking(&mut s, &first)["displaced"], true);
        let moved = s.ok("move_booking", json!({"id": first, "room": "studio-a", "start": "2026-11-03T10:00"}));
        assert_eq!((moved["booking"]["room"].clone(), moved["booking"]["displaced"].clone()), (json!("studio-a"), json!(false)), "placed, it holds its place again");
        assert!(s.ok("list_rooms", json!({}))["rooms"].as_array().unwrap().iter().any(|r| r["id"] == "studio-c" && r["active"] == false));
        let slots = s.ok("find_free_slots", json!({"from": "2026-11-10T09:00", "to": "2026-11-10T20:00", "duration_minutes": 60, "limit": 200}));
        assert!(slots["slots"].as_array().unwrap().iter().all(|x| x["room"] != "studio-c"), "a retired room is never offered");

        let changes = s.ok("list_changes", json!({"entity": "client", "limit": 2}));
        assert_eq!(changes["events"].as_array().unwrap().len(), 2);
        assert_eq!(changes["more"], true);
        let rest = s.ok("list_changes", json!({"entity": "client", "since": changes["next_cursor"], "limit": 1000}));
        assert!(rest["events"][0]["seq"].as_i64() > changes["events"][1]["seq"].as_i64());
        let room_events = s.ok("list_changes", json!({"entity": "room", "id": "studio-c"}));
        let room_events = room_events["events"].as_array().unwrap();
        assert_eq!((room_events[0]["action"].clone(), room_events[0]["who"].clone(), room_events[0]["via"].clone()), (json!("created"), json!("studioflow"), json!("init")));
        let last = room_events.last().unwrap();
        assert_eq!((last["action"].clone(), last["after"].clone()), (json!("retired"), json!({"active": false})));
    }

    fn the_new_tools_refuse_bad_input_saying_what_to_change(db) {
        let mut s = stdio(db, &["--demo"]);
        let booked = s.ok("create_booking", json!({"room": "studio-c", "client": "client-002", "start": "2026-11-03T10:00", "end": "2026-11-03T12:00", "party_size": 3}));
        let id = booked["bookings"][0]["id"].clone();
        let applied = s.ok("reflow_month", json!({"month": "2026-09", "offline_rooms": ["studio-b"]}))["reflow_id"].clone();
        let cases: &[(&str, Value, &str)] = &[
            ("list_clients", json!({"limit": 0}), "limit must be 1 to 500"),
            ("list_clients", json!({"cursor": "page-2"}), "pass next_cursor unchanged"),
            ("list_clients", json!({"active": "yes"}), "invalid type"),
            ("list_engineers", json!({"limit": 501}), "limit must be 1 to 500"),
            ("list_engineers", json!({"cursor": "p1.zz"}), "pass next_cursor unchanged"),
            ("list_engineers", json!({"name": "x"}), "unknown field `name`"),
            ("create_client", json!({"name": "  "}), "name: is empty: give a name of 1 to 200 characters"),
            ("create_client", json!({"name": "Ana", "email": "ana-at-example"}), "email: \"ana-at-example\" does not look like an e-mail address"),
            ("create_client", json!({"name": "Ana", "id": "client-001"}), "already exists"),
            ("create_client", json!({"name": "Ana", "id": "Ana Lopez"}), "id: holds a space (U+0020, character 4)"),
            ("create_client", json!({"name": "Ana", "id": "Ana_Lopez"}), "id \"Ana_Lopez\": use 1 to 64 of a-z"),
            ("update_client", json!({"id": "nobody", "active": true}), "unknown client \"nobody\""),
            ("update_client", json!({"id": "client-001", "email": "x@y"}), "does not look like an e-mail address"),
            ("update_client", json!({"id": "client-001", "name": ""}), "name: is empty"),
            ("update_client", json!({"id": "client-001", "skills": ["x"]}), "unknown field `skills`"),
            ("create_engineer", json!({"name": ""}), "name: is empty"),
            ("create_engineer", json!({"name": "Bo", "skills": [" "]}), "skills[0]: is empty: give a tag of 1 to 64 characters"),
            ("create_engineer", json!({"name": "Bo", "id": "eng-01"}), "already exists"),
            ("update_engineer", json!({"id": "nobody", "active": false}), "unknown engineer \"nobody\""),
            ("update_engineer", json!({"id": "eng-01", "email": "bo@@example.com"}), "does not look like an e-mail address"),
            ("update_engineer", json!({"active": false}), "missing field `id`"),
            ("create_room", json!({"id": "studio-a", "name": "A", "capacity": 2, "opening_hours": ["mon 10:00-12:00"]}), "already exists"),
            ("create_room", json!({"id": "displaced-from-x", "name": "X", "capacity": 2, "opening_hours": ["mon 10:00-12:00"]}), "kept for displaced bookings"),
            ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 0, "opening_hours": ["mon 10:00-12:00"]}), "capacity must be 1 to 1000"),
            ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["someday 10-12"]}), "opening_hours:"),
            ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": []}), "opening_hours: give at least one line"),
            ("create_room", json!({"id": "booth-9", "name": "B", "capacity": 2, "opening_hours": ["mon 10:00-12:00"], "buffer_minutes": 999}), "buffer_minutes must be 0 to 240"),
            ("update_room", json!({"id": "attic", "capacity": 3}), "unknown room \"attic\""),
            ("update_room", json!({"id": "studio-c", "capacity": 0}), "capacity must be 1 to 1000"),
            ("update_room", json!({"id": "studio-c", "capacity": 2}), "pass force: true"),
            ("update_room", json!({"id": "studio-c", "features": ["Bad Feature!"]}), "features:"),
            ("remove_offline_window", json!({"id": 9999}), "unknown offline window 9999"),
            ("remove_offline_window", json!({"id": "one"}), "invalid type"),
            ("remove_offline_window", json!({}), "missing field `id`"),
            ("update_booking", json!({"id": "bk_99999", "notes": "x"}), "unknown booking \"bk_99999\""),
            ("update_booking", json!({"id": id}), "give at least one field to change"),
            ("update_booking", json!({"id": id, "party_size": 9}), "holds 4 people"),
            ("update_booking", json!({"id": id, "engineer": "nobody"}), "unknown engineer \"nobody\""),
            ("update_booking", json!({"id": id, "status": "cancelled"}), "cancel a booking with cancel_booking"),
            ("update_booking", json!({"id": id, "hold_until": "2026-11-01T10:00"}), "only a tentative booking is held"),
            ("update_booking", json!({"id": id, "status": "tentative", "hold_until": "2026-11-04T10:00"}), "by the session's start"),
            ("update_booking", json!({"id": id, "scope": "series", "notes": "x"}), "not part of a series"),
            ("update_booking", json!({"id": id, "requires": ["drums"]}), "studio-c has no drums"),
            ("apply_reflow", json!({"reflow_id": "rf_9999"}), "unknown reflow \"rf_9999\""),
            ("apply_reflow", json!({"reflow_id": applied}), "applied already"),
            ("apply_reflow", json!({}), "missing field `reflow_id`"),
            ("undo_reflow", json!({"reflow_id": "rf_9999"}), "unknown reflow \"rf_9999\""),
            ("undo_reflow", json!({"reflow_id": applied}), "studio-b is offline"),
            ("undo_reflow", json!({"reflow_id": 1}), "invalid type"),
            ("list_changes", json!({"since": "yesterday"}), "since: not a cursor this server gave"),
            ("list_changes", json!({"limit": 0}), "limit must be 1 to 1000"),
            ("list_changes", json!({"entity": "invoice"}), "unknown variant `invoice`"),
            ("list_changes", json!({"id": " "}), "id: is empty: give an id"),
            ("list_changes", json!({"entity": "booking", "id": "bk_99999"}), "unknown booking \"bk_99999\""),
            ("list_changes", json!({"entity": "room", "id": "attic"}), "unknown room \"attic\""),
            ("create_booking", json!({"room": "studio-c", "client": "client-002", "start": "2026-11-10T10:00", "end": "2026-11-10T12:00", "hold_until": "2026-11-09T10:00"}), "only a tentative booking is held"),
            ("create_booking", json!({"room": "studio-c", "client": "client-002", "start": "2026-11-10T10:00", "end": "2026-11-10T12:00", "status": "tentative", "hold_until": "2026-08-01T10:00"}), "a hold must end after now"),
            ("create_booking", json!({"room": "studio-c", "client": "client-002", "start": "2026-11-10T10:00", "end": "2026-11-10T12:00", "status": "tentative", "hold_until": "soon"}), "hold_until: cannot read"),
        ];
        let before = crate::running_the_studio::events_count(db);
        let mut per_tool = std::collections::BTreeMap::<&str, usize>::new();
        for (tool, args, expected) in cases {
            let message = s.refused(tool, args.clone());
            assert!(message.contains(expected), "{tool} {args}: {message:?} should contain {expected:?}");
            *per_tool.entry(tool).or_default() += 1;
        }
        assert_eq!(per_tool.len(), 14, "every new tool, and create_booking's hold, is covered: {per_tool:?}");
        assert!(per_tool.values().all(|n| *n >= 3), "{per_tool:?}");
        assert_eq!(crate::running_the_studio::events_count(db), before, "a refused call writes nothing");
    }
}

/// How many events the history holds.
pub fn events_count(db: &TestDb) -> usize {
    Store::open(db).unwrap().events(&EventQuery { limit: usize::MAX >> 1, ..Default::default() }).unwrap().len()
}

on_both! {
    fn merged_offline_windows_and_a_removed_one_are_in_the_history(db) {
        let mut s = stdio(db, &["--demo"]);
        let first = s.ok("set_room_offline", json!({"room": "rehearsal-1", "from": "2026-11-02T00:00", "to": "2026-11-04T00:00", "reason": "new floor"}));
        let id = first["window"]["id"].as_i64().unwrap().to_string();
        s.ok("set_room_offline", json!({"room": "rehearsal-1", "from": "2026-11-03T00:00", "to": "2026-11-05T00:00", "reason": "paint"}));
        s.ok("remove_offline_window", json!({"id": first["window"]["id"]}));
        let events = s.ok("list_changes", json!({"entity": "offline_window", "id": id}))["events"].clone();
        let actions: Vec<&str> = events.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
        assert_eq!(actions, ["created", "updated", "removed"]);
        assert_eq!(events[1]["before"], json!({"to": "2026-11-04T00:00:00+00:00", "reason": "new floor"}));
        assert_eq!(events[1]["after"], json!({"to": "2026-11-05T00:00:00+00:00", "reason": "new floor; paint"}));
        assert_eq!(events[2]["after"], json!({}));
    }
}
