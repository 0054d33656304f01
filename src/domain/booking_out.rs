//! A booking as it is written out for programs: times in the studio's zone (RFC 3339 with its
//! offset), ids as text. The tools' answers (through `crate::shapes`), the view and the webhooks'
//! payloads (`crate::store::outbox`) all use [`booking_out`], so none can differ from another; it
//! lives here, below the store, so that the store may use it. It knows no protocol.

use super::{Booking, DayWritten, Session, StudioTz};
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BookingOut {
    pub id: String,
    pub room: String,
    pub client: String,
    pub engineer: Option<String>,
    pub start: String,
    pub end: String,
    pub party_size: u32,
    pub requires: Vec<String>,
    /// Skills any engineer of the session must have.
    pub engineer_skills: Vec<String>,
    pub series: Option<String>,
    /// "confirmed", "tentative" or "cancelled".
    pub status: String,
    /// Locked by staff: a reflow never moves it.
    pub pinned: bool,
    /// Staff notes.
    pub notes: Option<String>,
    /// A tentative booking is released (cancelled) by the server after this time.
    pub hold_until: Option<String>,
    /// Put out of its room by a change to the room: it holds nothing until a reflow of its month
    /// or move_booking places it.
    pub displaced: bool,
    /// What it costs, in minor units of the studio's currency: the quote when it was booked, or
    /// when a person last changed its time, room or engineer (a reflow's move keeps it). Absent
    /// for a booking made before prices were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<i64>,
    /// The deposit it owes: deposit_percent of its price when booked on hold, rounded half up to
    /// a minor unit; paying it confirms the booking.
    pub deposit_due: i64,
    /// What was paid for it so far.
    pub paid: i64,
}

/// A booking as it is written out: the tools' answers and the webhooks' `data.booking`.
pub fn booking_out(tz: &StudioTz, b: &Booking) -> BookingOut {
    into_booking_out(tz, b.clone())
}

/// [`booking_out`] of a booking that is not needed after: its text moves instead of being copied.
fn into_booking_out(tz: &StudioTz, b: Booking) -> BookingOut {
    let Booking { id, series, session, notes, hold_until, displaced, money } = b;
    let Session { room, client, engineer, start, end, party_size, requires, engineer_skills, status, pinned } = session;
    BookingOut {
        id: id.0,
        room: room.0,
        client: client.0,
        engineer: engineer.map(|e| e.0),
        start: tz.format(start),
        end: tz.format(end),
        party_size,
        requires,
        engineer_skills,
        series: series.map(|s| s.0),
        status: status.as_str().to_owned(),
        pinned,
        notes,
        hold_until: hold_until.map(|t| tz.format(t)),
        displaced,
        price: money.price,
        deposit_due: money.deposit_due,
        paid: money.paid,
    }
}

/// Appends `b` as JSON text to `out`: the very text serde_json writes for [`booking_out`] of it
/// (the test below holds the two together), at a fraction of the cost, since nothing is built
/// first, the keys are written as they stand, text is escaped only where it needs it, and times
/// are written straight into `out`. A page of bookings is most of what `query_bookings` costs to
/// answer.
pub fn write_booking_json(tz: &StudioTz, b: &Booking, out: &mut String) {
    write_booking_json_on(tz, &mut DayWritten::default(), b, out);
}

/// [`write_booking_json`] for one of several bookings written together (a page): their instants
/// share `day`, the last day one was written on.
pub fn write_booking_json_on(tz: &StudioTz, day: &mut DayWritten, b: &Booking, out: &mut String) {
    let s = &b.session;
    let mut number = itoa::Buffer::new();
    // A string's closing quote goes out with the next key, and its opening quote with its own.
    out.push_str("{\"id\":\"");
    json_text_within(out, b.id.as_str());
    out.push_str("\",\"room\":\"");
    json_text_within(out, s.room.as_str());
    out.push_str("\",\"client\":\"");
    json_text_within(out, s.client.as_str());
    match &s.engineer {
        Some(engineer) => {
            out.push_str("\",\"engineer\":\"");
            json_text_within(out, engineer.as_str());
            out.push_str("\",\"start\":\"");
        }
        None => out.push_str("\",\"engineer\":null,\"start\":\""),
    }
    tz.write_on(day, s.start, out);
    out.push_str("\",\"end\":\"");
    tz.write_on(day, s.end, out);
    out.push_str("\",\"party_size\":");
    out.push_str(number.format(s.party_size));
    out.push_str(",\"requires\":");
    json_texts(out, &s.requires);
    out.push_str(",\"engineer_skills\":");
    json_texts(out, &s.engineer_skills);
    match &b.series {
        Some(series) => {
            out.push_str(",\"series\":\"");
            json_text_within(out, series.as_str());
            out.push_str("\",\"status\":\"");
        }
        None => out.push_str(",\"series\":null,\"status\":\""),
    }
    out.push_str(s.status.as_str());
    out.push_str(if s.pinned { "\",\"pinned\":true" } else { "\",\"pinned\":false" });
    match b.notes.as_deref() {
        Some(notes) => {
            out.push_str(",\"notes\":\"");
            json_text_within(out, notes);
            out.push('"');
        }
        None => out.push_str(",\"notes\":null"),
    }
    match b.hold_until {
        Some(t) => {
            out.push_str(",\"hold_until\":\"");
            tz.write_on(day, t, out);
            out.push('"');
        }
        None => out.push_str(",\"hold_until\":null"),
    }
    out.push_str(if b.displaced { ",\"displaced\":true" } else { ",\"displaced\":false" });
    if let Some(price) = b.money.price {
        out.push_str(",\"price\":");
        out.push_str(number.format(price));
    }
    out.push_str(",\"deposit_due\":");
    out.push_str(number.format(b.money.deposit_due));
    out.push_str(",\"paid\":");
    out.push_str(number.format(b.money.paid));
    out.push('}');
}

/// `text` as a JSON string, escaped as serde_json escapes it: `"` and `\`, and the control
/// characters (the five with a short escape, the rest as `\u00XX`); everything else as it is.
pub fn json_text(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    json_text_within(out, text);
    out.push('"');
}

/// [`json_text`] without its quotes.
fn json_text_within(out: &mut String, text: &str) {
    // Most text needs no escape: a pass over eight bytes at a time says so, and the text is
    // copied whole.
    if !needs_escape(text.as_bytes()) {
        out.push_str(text);
        return;
    }
    let mut plain = 0;
    for (at, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[plain..at]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 0xf)] as char);
        } else {
            out.push_str(escape);
        }
        plain = at + 1;
    }
    out.push_str(&text[plain..]);
}

/// Whether `text` holds a byte that JSON escapes: a control character, `"` or `\`. Eight bytes
/// at a time, as a word: a byte below 0x20 borrows in the word less 0x20 in every byte, and a
/// byte equal to `"` or `\` is a zero byte of the word with it in every byte taken out, which
/// borrows in the word less 1 in every byte (the tests of "Bit Twiddling Hacks", exact for
/// whether any byte is one, whatever bytes they report).
fn needs_escape(text: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(n * ONES) & !x & HIGH;
    let mut words = text.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        let x = u64::from_le_bytes(bytes);
        if below(x, 0x20) | below(x ^ (u64::from(b'"') * ONES), 1) | below(x ^ (u64::from(b'\\') * ONES), 1) != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// [`json_text`], or `null`.
pub fn json_optional_text(out: &mut String, text: Option<&str>) {
    match text {
        Some(text) => json_text(out, text),
        None => out.push_str("null"),
    }
}

fn json_texts(out: &mut String, texts: &[String]) {
    let Some((first, rest)) = texts.split_first() else {
        out.push_str("[]");
        return;
    };
    out.push_str("[\"");
    json_text_within(out, first);
    for text in rest {
        out.push_str("\",\"");
        json_text_within(out, text);
    }
    out.push_str("\"]");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{BookingId, ClientId, EngineerId, Money, RoomId, SeriesId, Status};
    use chrono::{DateTime, Utc};

    fn booking(variant: usize) -> Booking {
        let odd = ["plain", "", "a \"quoted\" \\ path", "tab\there\nnew line\r\u{8}\u{c}", "\u{1}\u{1f}\u{7f} café ✓ 🎸", "</script>"];
        let text = |n: usize| odd[(variant + n) % odd.len()].to_owned();
        let some = |n: usize| (variant + n) % 3 != 0;
        // Instants across the years, either side of a change of the clocks, and before 1900
        // (local mean time, an offset with seconds) and past 9999.
        let instants = [1_788_771_600, 1_792_976_400, 1_792_980_000, 1_774_746_000, -2_500_000_000, 0, 253_402_300_800, 4_102_444_799];
        let at = |n: usize| DateTime::<Utc>::from_timestamp(instants[(variant + n) % instants.len()] + (variant as i64) * 61, 0).unwrap();
        let status = [Status::Confirmed, Status::Tentative, Status::Cancelled][variant % 3];
        Booking {
            id: BookingId::new(format!("bk_{variant:05}")),
            series: some(2).then(|| SeriesId::new(text(5))),
            session: Session {
                room: RoomId::new(text(1)),
                client: ClientId::new(text(2)),
                engineer: some(1).then(|| EngineerId::new(text(3))),
                start: at(0),
                end: at(1),
                party_size: (variant * 37 % 1000) as u32,
                requires: (0..variant % 4).map(text).collect(),
                engineer_skills: (0..(variant + 1) % 3).map(|n| text(n + 2)).collect(),
                status,
                pinned: variant % 2 == 0,
            },
            notes: some(0).then(|| text(3)),
            hold_until: some(4).then(|| at(2)),
            displaced: variant % 5 == 0,
            money: Money { price: some(5).then_some(-(variant as i64) * 1_000_003 + 17), deposit_due: i64::MAX - variant as i64, paid: i64::MIN + variant as i64 },
        }
    }

    /// The hand-written JSON is serde_json's of [`booking_out`], byte for byte, whatever the text
    /// holds, whichever fields are absent, in zones east and west: a field added to `BookingOut`
    /// and not to `write_booking_json` fails here.
    #[test]
    fn write_booking_json_writes_what_serde_json_writes() {
        for zone in ["Europe/London", "America/St_Johns", "Asia/Kathmandu", "Pacific/Chatham", "UTC"] {
            let tz: StudioTz = zone.parse().unwrap();
            for variant in 0..60 {
                let b = booking(variant);
                let mut written = String::new();
                write_booking_json(&tz, &b, &mut written);
                assert_eq!(written, serde_json::to_string(&booking_out(&tz, &b)).unwrap(), "{zone}, variant {variant}");
            }
        }
        // Each byte that needs an escape, at each place of a word and of the remainder, among
        // bytes that do not (those just above each: 0x20, '#', ']', and the high bytes of UTF-8).
        for len in 1..=20 {
            for at in 0..len {
                for (needs, byte) in [(true, 0x00), (true, 0x1f), (true, b'"'), (true, b'\\'), (false, 0x20), (false, b'#'), (false, b']'), (false, 0x7f), (false, 0x80), (false, 0xff)] {
                    for fill in [b'a', 0x21, b'[', 0xc3] {
                        let mut text = vec![fill; len];
                        text[at] = byte;
                        assert_eq!(needs_escape(&text), needs, "{byte:#x} at {at} of {len} among {fill:#x}");
                    }
                }
            }
        }
        let mut every_control = String::new();
        json_text(&mut every_control, &(0u8..=0x7f).map(char::from).collect::<String>());
        assert_eq!(every_control, serde_json::to_string(&(0u8..=0x7f).map(char::from).collect::<String>()).unwrap());
    }
}
