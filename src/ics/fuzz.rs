//! The entry point of the fuzz target `calendar` (`fuzz/fuzz_targets/calendar.rs`), compiled only
//! with the `fuzzing` feature. Arbitrary bytes become a studio's, rooms', clients' and engineers'
//! names, booking ids, needs, series and staff notes, and bookings; the real renderer writes their
//! calendar, and a strict reader written here, sharing no code with the writer, reads it back.
//! A broken rule is a panic, which libFuzzer reports as a crash with the input that caused it:
//! a line over 75 octets, a bare CR or LF, a line that does not parse, a TEXT value that does
//! not unescape, an event that is not a booking, a name that does not read back as written.

use super::{name, render, title, Names};
use crate::domain::{Booking, BookingId, CalendarOf, ClientId, EngineerId, RoomId, SeriesId, Session, Status};
use crate::store::CalendarEntry;
use chrono::{DateTime, NaiveDateTime, Utc};
use std::collections::HashMap;

/// Renders a calendar from `data` and checks it; panics when the calendar breaks a rule.
pub fn calendar(data: &[u8]) {
    let mut input = Input(data);
    let studio = input.text();
    let zone = input.text();
    // Two of each, their ids told apart by the last character; a name may be missing (the
    // calendar then shows the id), as when a booking names someone the roster no longer has.
    let mut ids = |kind: &str| [input.text() + kind + "0", input.text() + kind + "1"];
    let (rooms, clients, engineers) = (ids("r"), ids("c"), ids("e"));
    let mut names = |ids: &[String; 2]| {
        let mut names = HashMap::new();
        for id in ids {
            if input.byte() % 4 != 0 {
                names.insert(id.clone(), input.text());
            }
        }
        names
    };
    let names = Names { rooms: names(&rooms), clients: names(&clients), engineers: names(&engineers) };
    let pick = input.byte();
    let of = match pick % 3 {
        0 => CalendarOf::Room(RoomId::new(&rooms[usize::from(pick / 3 % 2)])),
        1 => CalendarOf::Client(ClientId::new(&clients[usize::from(pick / 3 % 2)])),
        _ => CalendarOf::Engineer(EngineerId::new(&engineers[usize::from(pick / 3 % 2)])),
    };
    let count = input.byte() % 5;
    let entries: Vec<CalendarEntry> = (0..count).map(|i| input.entry(i, &rooms, &clients, &engineers)).collect();

    let title = title(&studio, &of, &names);
    let text = render(&studio, &zone, &title, &entries, &names);

    let calendar = read(&text).unwrap_or_else(|e| panic!("the calendar does not read: {e}\n{text}"));
    let expected_title = format!("{studio}: {} {}", of.kind(), names_of(&names, &of).get(of.id()).map_or(of.id(), String::as_str));
    assert_eq!(calendar.properties["NAME"], readable(&expected_title));
    assert_eq!(calendar.properties["X-WR-CALNAME"], readable(&expected_title));
    assert_eq!(calendar.properties["X-WR-TIMEZONE"], readable(&zone));
    assert_eq!(calendar.properties["VERSION"], "2.0");
    assert_eq!(calendar.events.len(), entries.len(), "one event per booking");
    for (event, entry) in calendar.events.iter().zip(&entries) {
        for (property, expected) in expected_event(&studio, entry, &names) {
            assert_eq!(event.get(property), Some(&expected), "{property} of booking {}\n{text}", entry.booking.id);
        }
        assert_eq!(event.len(), 11, "an event holds 11 properties: {event:?}");
    }
}

/// The bytes not read yet; past the end, every byte is 0 and every text empty, so any input
/// makes a calendar.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (&first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        first
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.byte())
    }

    /// A length byte, then that many bytes as UTF-8 (invalid sequences become U+FFFD).
    fn text(&mut self) -> String {
        let length = usize::from(self.byte()).min(self.0.len());
        let (text, rest) = self.0.split_at(length);
        self.0 = rest;
        String::from_utf8_lossy(text).into_owned()
    }

    /// An instant of the years 2000 to 2199, the only ones the studio reads or writes.
    fn instant(&mut self) -> DateTime<Utc> {
        const FIRST: i64 = 946_684_800; // 2000-01-01T00:00:00Z
        const SPAN: u64 = 6_311_347_200; // seconds to 2200-01-01T00:00:00Z
        let seconds = u64::from_le_bytes(self.bytes()) % SPAN;
        DateTime::from_timestamp(FIRST + i64::try_from(seconds).unwrap_or_default(), 0).unwrap_or_else(|| panic!("{seconds} s after 2000"))
    }

    fn entry(&mut self, i: u8, rooms: &[String; 2], clients: &[String; 2], engineers: &[String; 2]) -> CalendarEntry {
        let id = BookingId::new(self.text() + &i.to_string());
        let [people, extra] = self.bytes();
        let start = self.instant();
        let minutes = i64::from(u16::from_le_bytes(self.bytes())) + 1;
        let requires = (0..extra & 3).map(|_| self.text()).collect();
        let series = (extra & 4 != 0).then(|| SeriesId::new(self.text()));
        let notes = (extra & 8 != 0).then(|| self.text());
        let status = match extra >> 4 & 3 {
            0 => Status::Tentative,
            1 => Status::Cancelled,
            _ => Status::Confirmed,
        };
        let session = Session {
            room: RoomId::new(&rooms[usize::from(people & 1)]),
            client: ClientId::new(&clients[usize::from(people >> 1 & 1)]),
            engineer: match people >> 2 & 3 {
                0 => None,
                e => Some(EngineerId::new(&engineers[usize::from(e & 1)])),
            },
            start,
            end: start + chrono::Duration::minutes(minutes),
            party_size: u32::from(people >> 4) + 1,
            requires,
            engineer_skills: Vec::new(),
            status,
            pinned: false,
        };
        let revision = i64::from(u32::from_le_bytes(self.bytes()));
        let created = self.instant();
        let updated = self.instant();
        let booking = Booking { id, series, session, notes, hold_until: None, displaced: false, money: Default::default() };
        CalendarEntry { booking, revision, created, updated }
    }
}

fn names_of<'a>(names: &'a Names, of: &CalendarOf) -> &'a HashMap<String, String> {
    match of {
        CalendarOf::Room(_) => &names.rooms,
        CalendarOf::Client(_) => &names.clients,
        CalendarOf::Engineer(_) => &names.engineers,
    }
}

/// How a text reads back from TEXT: a line break (CRLF, CR or LF) is one LF, HTAB stays, and
/// every other control character is gone.
fn readable(text: &str) -> String {
    let breaks = text.replace("\r\n", "\n").replace('\r', "\n");
    breaks.chars().filter(|&c| c == '\n' || c == '\t' || !c.is_control()).collect()
}

/// What each property of a booking's event must read as, unescaped. Staff notes are in none.
fn expected_event(studio: &str, entry: &CalendarEntry, names: &Names) -> Vec<(&'static str, String)> {
    let b = &entry.booking;
    let room = name(&names.rooms, b.room.as_str());
    let client = name(&names.clients, b.client.as_str());
    let engineer = b.engineer.as_ref().map(|e| (name(&names.engineers, e.as_str()), e));
    let mut description = vec![format!("Booking {}", b.id), format!("Room: {room} ({})", b.room), format!("Client: {client} ({})", b.client)];
    description.extend(engineer.map(|(name, id)| format!("Engineer: {name} ({id})")));
    description.push(format!("Party of {}", b.party_size));
    if !b.requires.is_empty() {
        description.push(format!("Needs: {}", b.requires.join(", ")));
    }
    description.extend(b.series.as_ref().map(|s| format!("Series: {s}")));
    let summary = match engineer {
        Some((engineer, _)) => format!("{client} in {room} with {engineer}"),
        None => format!("{client} in {room}"),
    };
    let domain: String =
        studio.chars().filter(|c| c.is_ascii_alphanumeric() || *c == ' ' || *c == '-').map(|c| if c == ' ' { '-' } else { c.to_ascii_lowercase() }).collect();
    let uid = format!("{}@{}.studioflow", b.id, if domain.is_empty() { "studio" } else { &domain });
    let utc = |at: DateTime<Utc>| at.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let status = match b.status {
        Status::Confirmed => "CONFIRMED",
        Status::Tentative => "TENTATIVE",
        Status::Cancelled => "CANCELLED",
    };
    vec![
        ("UID", readable(&uid)),
        ("SUMMARY", readable(&summary)),
        ("LOCATION", readable(room)),
        ("DESCRIPTION", readable(&description.join("\n"))),
        ("DTSTART", utc(b.start)),
        ("DTEND", utc(b.end)),
        ("CREATED", utc(entry.created)),
        ("DTSTAMP", utc(entry.updated)),
        ("LAST-MODIFIED", utc(entry.updated)),
        ("STATUS", status.to_owned()),
        ("SEQUENCE", entry.revision.min(i64::from(i32::MAX)).to_string()),
    ]
}

/// A calendar as the strict reader sees it: its own properties and its events', each property
/// once, TEXT unescaped and DATE-TIMEs as RFC 3339.
#[derive(Debug)]
struct Calendar {
    properties: HashMap<String, String>,
    events: Vec<HashMap<String, String>>,
}

/// The properties whose value type is DATE-TIME; every other one this calendar writes is TEXT,
/// but SEQUENCE, an INTEGER.
const DATE_TIMES: [&str; 5] = ["DTSTART", "DTEND", "DTSTAMP", "CREATED", "LAST-MODIFIED"];

/// Reads a calendar strictly: every physical line ends in CRLF and holds at most 75 octets, no
/// CR or LF anywhere else; each content line is `name *(";" param) ":" value`; values hold no
/// control character but HTAB; TEXT escapes are the four of RFC 5545 §3.3.11 and nothing else,
/// with no bare `;` or `,`; the components are one VCALENDAR holding VEVENTs.
fn read(text: &str) -> Result<Calendar, String> {
    let body = text.strip_suffix("\r\n").ok_or("the text does not end in CRLF")?;
    let mut logical: Vec<String> = Vec::new();
    for physical in body.split("\r\n") {
        if physical.contains(['\r', '\n']) {
            return Err(format!("a bare CR or LF in {physical:?}"));
        }
        if physical.len() > 75 {
            return Err(format!("{} octets in {physical:?}", physical.len()));
        }
        match (physical.strip_prefix([' ', '\t']), logical.last_mut()) {
            (Some(rest), Some(last)) => last.push_str(rest),
            (Some(_), None) => return Err("the text opens with a continuation line".into()),
            (None, _) => logical.push(physical.to_owned()),
        }
    }
    let mut lines = logical.iter().map(|line| split(line)).collect::<Result<Vec<_>, _>>()?.into_iter();
    if lines.next() != Some(("BEGIN".into(), "VCALENDAR".into())) || lines.next_back() != Some(("END".into(), "VCALENDAR".into())) {
        return Err("the text is not one VCALENDAR".into());
    }
    let mut calendar = Calendar { properties: HashMap::new(), events: Vec::new() };
    let mut event: Option<HashMap<String, String>> = None;
    for (name, value) in lines {
        match (name.as_str(), value.as_str(), event.as_mut()) {
            ("BEGIN", "VEVENT", None) => event = Some(HashMap::new()),
            ("END", "VEVENT", Some(_)) => calendar.events.extend(event.take()),
            ("BEGIN" | "END", _, _) => return Err(format!("{name}:{value} out of place")),
            (_, _, properties) => {
                let value = if DATE_TIMES.contains(&name.as_str()) {
                    let at = NaiveDateTime::parse_from_str(&value, "%Y%m%dT%H%M%SZ").map_err(|e| format!("{name}:{value}: {e}"))?;
                    at.and_utc().format("%Y-%m-%dT%H:%M:%SZ").to_string()
                } else if name == "SEQUENCE" {
                    value.parse::<u32>().map_err(|e| format!("SEQUENCE:{value}: {e}"))?.to_string()
                } else {
                    unescape(&value)?
                };
                let properties = properties.unwrap_or(&mut calendar.properties);
                if properties.insert(name.clone(), value).is_some() {
                    return Err(format!("{name} twice"));
                }
            }
        }
    }
    if event.is_some() {
        return Err("a VEVENT without its END".into());
    }
    Ok(calendar)
}

/// A content line's name and raw value; parameters are read and checked, then set aside (the
/// calendar writes none yet).
fn split(line: &str) -> Result<(String, String), String> {
    if line.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!("a control character in {line:?}"));
    }
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '-';
    let end = line.find(|c| !is_name(c)).unwrap_or(line.len());
    let (name, mut rest) = line.split_at(end);
    if name.is_empty() {
        return Err(format!("no name in {line:?}"));
    }
    while let Some(param) = rest.strip_prefix(';') {
        let end = param.find(|c| !is_name(c)).unwrap_or(param.len());
        let after = param[end..].strip_prefix('=').filter(|_| end > 0).ok_or_else(|| format!("a bad parameter in {line:?}"))?;
        rest = match after.strip_prefix('"') {
            Some(quoted) => {
                let close = quoted.find('"').ok_or_else(|| format!("an unclosed quote in {line:?}"))?;
                &quoted[close + 1..]
            }
            None => {
                let end = after.find([';', ':']).unwrap_or(after.len());
                if after[..end].contains('"') {
                    return Err(format!("a DQUOTE in a parameter of {line:?}"));
                }
                &after[end..]
            }
        };
    }
    let value = rest.strip_prefix(':').ok_or_else(|| format!("no ':' after the name in {line:?}"))?;
    Ok((name.to_owned(), value.to_owned()))
}

/// A TEXT value, unescaped: `\\`, `\;`, `\,`, `\n` and `\N` only, and no bare `;` or `,`.
fn unescape(value: &str) -> Result<String, String> {
    let mut text = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\\') => text.push('\\'),
                Some(';') => text.push(';'),
                Some(',') => text.push(','),
                Some('n' | 'N') => text.push('\n'),
                other => return Err(format!("\\{other:?} in {value:?}")),
            },
            ';' | ',' => return Err(format!("an unescaped {c:?} in {value:?}")),
            c => text.push(c),
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader refuses what the writer must never write.
    #[test]
    fn the_strict_reader_refuses_broken_calendars() {
        let ok = "BEGIN:VCALENDAR\r\nNAME:a\\, b\r\n  c\r\nEND:VCALENDAR\r\n";
        assert_eq!(read(ok).unwrap().properties["NAME"], "a, b c");
        for broken in [
            "BEGIN:VCALENDAR\r\nNAME:a\r\nEND:VCALENDAR",
            "BEGIN:VCALENDAR\r\nNAME:a\rb\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nNAME:a\nb\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nNAME:a, b\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nNAME:a\\tb\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nNAME:a\u{85}b\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nNAME;CN=\"x:a\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nNAME:a\r\nNAME:b\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VCALENDAR\r\n",
            &format!("BEGIN:VCALENDAR\r\nNAME:{}\r\nEND:VCALENDAR\r\n", "a".repeat(71)),
        ] {
            assert!(read(broken).is_err(), "{broken:?}");
        }
        assert!(read(&format!("BEGIN:VCALENDAR\r\nNAME:{}\r\nEND:VCALENDAR\r\n", "a".repeat(70))).is_ok());
        let quoted = "BEGIN:VCALENDAR\r\nATTENDEE;ROLE=CHAIR;CN=\"Doe, Jane: boss\":mailto:j@x\r\nEND:VCALENDAR\r\n";
        assert_eq!(read(quoted).unwrap().properties["ATTENDEE"], "mailto:j@x");
    }

    /// Every seed of the fuzz target passes, and so does an input with every control character.
    #[test]
    fn the_seeds_pass() {
        let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/calendar");
        let mut count = 0;
        for seed in std::fs::read_dir(&seeds).unwrap() {
            calendar(&std::fs::read(seed.unwrap().path()).unwrap());
            count += 1;
        }
        assert!(count > 0, "no seeds in {}", seeds.display());
        let controls: String = (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32).collect();
        let mut input = Vec::new();
        for _ in 0..40 {
            input.push(u8::try_from(controls.len()).unwrap());
            input.extend(controls.as_bytes());
        }
        calendar(&input);
    }
}
