//! Issue 26, reflow around people, over MCP on the real binary with the demo studio: an engineer's
//! week off in September, and the month reflowed with no room offline. Their sessions that week go
//! to another engineer with the skills who was free, or move, or stay unresolved with a reason;
//! `undo_reflow` puts engineers and times back byte for byte. Both backends. (With eng-01 and eng-03
//! narrowed to one skill: 8 of the 9 sessions are re-staffed, and one, needing vocals, is left
//! unresolved because every other engineer with that skill is busy then, as its reason says.)

use crate::mcp_client::{stdio, Mcp, StdioServer};
use crate::running_the_studio::dump;
use crate::support::on_both;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The engineer who takes the week off, and the week (Monday to Monday, after studio-b's fortnight).
const AWAY: &str = "eng-04";
const FROM: &str = "2026-09-21T00:00";
const TO: &str = "2026-09-28T00:00";

/// Every active booking of `engineer` that overlaps `[from, to)`, by id.
fn sessions_of(s: &mut StdioServer, engineer: &str, from: &str, to: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for status in ["confirmed", "tentative"] {
        let page = s.ok("query_bookings", json!({"engineer": engineer, "from": from, "to": to, "status": status, "limit": 500}));
        assert!(page["next_cursor"].is_null(), "one page holds a week of one engineer");
        for b in page["bookings"].as_array().unwrap() {
            out.insert(b["id"].as_str().unwrap().to_owned(), b.clone());
        }
    }
    out
}

/// Each engineer's skills, as list_engineers shows them.
fn skills(s: &mut StdioServer) -> BTreeMap<String, BTreeSet<String>> {
    let listed = s.ok("list_engineers", json!({"limit": 100}));
    listed["engineers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let skills = e["skills"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_owned()).collect();
            (e["id"].as_str().unwrap().to_owned(), skills)
        })
        .collect()
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_owned()).collect()
}

on_both! {
    fn issue_26_an_engineers_week_off_is_reflowed_with_no_room_offline_and_undone_byte_for_byte(db) {
        let mut s = stdio(db, &["--demo"]);
        let theirs = sessions_of(&mut s, AWAY, FROM, TO);
        assert!(theirs.len() >= 3, "{AWAY} has sessions that week: {}", theirs.len());
        // Two engineers narrow to one skill each (their own sessions keep them), so that the
        // skills decide who may take over.
        s.ok("update_engineer", json!({"id": "eng-01", "skills": ["live-sound"]}));
        s.ok("update_engineer", json!({"id": "eng-03", "skills": ["podcast"]}));

        // The week off flags every one of them displaced.
        let off = s.ok("add_time_off", json!({"engineer": AWAY, "from": FROM, "to": TO, "reason": "holiday"}));
        assert_eq!(off["displaced_count"], theirs.len());
        let before = dump(&mut s);

        // The month reflowed with no room offline (offline_rooms left out).
        let reflow = s.ok("reflow_month", json!({"month": "2026-09"}));
        assert_eq!(reflow["applied"], true, "{reflow}");
        assert_eq!(reflow["affected"], theirs.len(), "exactly the week's sessions are affected: {reflow}");
        let moved: BTreeMap<String, Value> =
            reflow["moves"].as_array().unwrap().iter().map(|m| (m["booking"].as_str().unwrap().to_owned(), m.clone())).collect();
        let unresolved: BTreeMap<String, String> = reflow["unresolved_bookings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| (u["booking"].as_str().unwrap().to_owned(), u["reason"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(moved.len() + unresolved.len(), theirs.len());
        assert!(moved.keys().chain(unresolved.keys()).all(|id| theirs.contains_key(id)), "only their sessions move");
        assert!(!moved.is_empty(), "other engineers can take some of the week: {reflow}");

        // None of their sessions remains with them in that week, except the unresolved, each with a reason.
        let now = sessions_of(&mut s, AWAY, FROM, TO);
        assert_eq!(now.keys().collect::<BTreeSet<_>>(), unresolved.keys().collect::<BTreeSet<_>>(), "{now:?}");
        for (id, reason) in &unresolved {
            assert!(reason.contains(AWAY) || reason.contains("pinned") || reason.contains("notice"), "{id}: {reason}");
        }

        // Every replacement has the skills and was free: no other session of theirs overlaps it.
        let skills = skills(&mut s);
        let changed = moved.values().filter(|m| m["from_engineer"] != m["to_engineer"]).count();
        assert_eq!(reflow["engineer_changes"], changed);
        assert_eq!(changed, moved.len(), "a session that stays in the week needs another engineer");
        for (id, m) in &moved {
            let b = s.ok("get_booking", json!({"id": id}))["booking"].clone();
            assert_eq!(m["from_engineer"], AWAY);
            let to = m["to_engineer"].as_str().unwrap();
            assert_eq!(b["engineer"], to, "{id} is run by the engineer the plan names");
            assert_eq!((b["room"].clone(), b["start"].clone(), b["displaced"].clone()), (m["to_room"].clone(), m["to_start"].clone(), json!(false)));
            assert!(strings(&b["engineer_skills"]).is_subset(&skills[to]), "{to} has {id}'s skills {}", b["engineer_skills"]);
            let with_them = sessions_of(&mut s, to, b["start"].as_str().unwrap(), b["end"].as_str().unwrap());
            assert_eq!(with_them.keys().collect::<Vec<_>>(), [id], "{to} has nothing else then");
        }

        // Undone: engineers and times are back byte for byte, the week's sessions displaced again.
        s.ok("undo_reflow", json!({"reflow_id": reflow["reflow_id"]}));
        assert_eq!(dump(&mut s), before, "the calendar after the undo is the calendar before the reflow");
    }
}

on_both! {
    fn issue_26_engineer_skills_are_set_on_a_series_shown_edited_and_checked_against_the_engineer(db) {
        let mut s = stdio(db, &["--demo"]);
        // Only eng-02 does live sound in the demo; everyone mixes and tracks.
        let created = s.ok(
            "create_booking",
            json!({"room": "studio-c", "client": "client-001", "engineer": "eng-01", "start": "2026-11-03T10:00", "end": "2026-11-03T11:00",
                   "recurrence": "FREQ=WEEKLY;COUNT=3", "engineer_skills": ["tracking", "mixing", "mixing"]}),
        );
        let sessions = created["bookings"].as_array().unwrap().clone();
        assert_eq!(sessions.len(), 3);
        for b in &sessions {
            assert_eq!(b["engineer_skills"], json!(["mixing", "tracking"]), "sorted, once each, on every session");
        }
        let first = sessions[0]["id"].as_str().unwrap().to_owned();
        assert_eq!(s.ok("get_booking", json!({"id": first}))["booking"]["engineer_skills"], json!(["mixing", "tracking"]));
        // eng-01 does no live sound: asking for it is refused, naming the skill, and changes nothing.
        let refused = s.refused("update_booking", json!({"id": first, "engineer_skills": ["live-sound"], "scope": "series"}));
        assert!(refused.contains("engineer eng-01 lacks the skills live-sound"), "{refused}");
        assert_eq!(s.ok("get_booking", json!({"id": first}))["booking"]["engineer_skills"], json!(["mixing", "tracking"]));
        // With eng-02, who does, the whole series takes it.
        let updated = s.ok("update_booking", json!({"id": first, "engineer": "eng-02", "engineer_skills": ["live-sound"], "scope": "series"}));
        assert_eq!(updated["bookings"].as_array().unwrap().len(), 3);
        for b in updated["bookings"].as_array().unwrap() {
            assert_eq!((b["engineer"].clone(), b["engineer_skills"].clone()), (json!("eng-02"), json!(["live-sound"])));
        }
        // Giving one session back to eng-01 keeps its skills, so it is refused; clearing them is not.
        assert!(s.refused("update_booking", json!({"id": first, "engineer": "eng-01"})).contains("lacks the skills live-sound"));
        let cleared = s.ok("update_booking", json!({"id": first, "engineer": "eng-01", "engineer_skills": []}));
        assert_eq!(cleared["bookings"][0]["engineer_skills"], json!([]));
        // The history has the skills before and after.
        let history = s.ok("get_booking", json!({"id": first}))["history"].clone();
        let last = history.as_array().unwrap().last().unwrap().clone();
        assert_eq!((last["before"]["engineer_skills"].clone(), last["after"]["engineer_skills"].clone()), (json!(["live-sound"]), json!([])), "{last}");
    }
}
