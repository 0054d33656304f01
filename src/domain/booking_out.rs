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
    out.push_str("{\"id\":");
    json_text(out, b.id.as_str());
    out.push_str(",\"room\":");
    json_text(out, s.room.as_str());
    out.push_str(",\"client\":");
    json_text(out, s.client.as_str());
    out.push_str(",\"engineer\":");
    json_optional_text(out, s.engineer.as_ref().map(|e| e.as_str()));
    out.push_str(",\"start\":\"");
    tz.write_on(day, s.start, out);
    out.push_str("\",\"end\":\"");
    tz.write_on(day, s.end, out);
    out.push_str("\",\"party_size\":");
    out.push_str(number.format(s.party_size));
    out.push_str(",\"requires\":");
    json_texts(out, &s.requires);
    out.push_str(",\"engineer_skills\":");
    json_texts(out, &s.engineer_skills);
    out.push_str(",\"series\":");
    json_optional_text(out, b.series.as_ref().map(|series| series.as_str()));
    out.push_str(",\"status\":\"");
    out.push_str(s.status.as_str());
    out.push_str(if s.pinned { "\",\"pinned\":true" } else { "\",\"pinned\":false" });
    out.push_str(",\"notes\":");
    json_optional_text(out, b.notes.as_deref());
    out.push_str(",\"hold_until\":");
    match b.hold_until {
        Some(t) => {
            out.push('"');
            tz.write_on(day, t, out);
            out.push('"');
        }
        None => out.push_str("null"),
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
    // Most text needs no escape: one pass that never stops early (so it runs over several
    // bytes at a time) says so, and the text is copied whole.
    let escaped = text.bytes().fold(false, |any, b| any | (b < 0x20) | (b == b'"') | (b == b'\\'));
    out.reserve(text.len() + 2);
    out.push('"');
    if !escaped {
        out.push_str(text);
        out.push('"');
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
    out.push('"');
}

/// [`json_text`], or `null`.
pub fn json_optional_text(out: &mut String, text: Option<&str>) {
    match text {
        Some(text) => json_text(out, text),
        None => out.push_str("null"),
    }
}

fn json_texts(out: &mut String, texts: &[String]) {
    out.push('[');
    for (at, text) in texts.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        json_text(out, text);
    }
    out.push(']');
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
        let mut every_control = String::new();
        json_text(&mut every_control, &(0u8..=0x7f).map(char::from).collect::<String>());
        assert_eq!(every_control, serde_json::to_string(&(0u8..=0x7f).map(char::from).collect::<String>()).unwrap());
    }
}
