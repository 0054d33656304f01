//! The studio's vocabulary: rooms, people, bookings, series and offline windows, and the rules that
//! say when two bookings clash. Pure: nothing here reads a clock, a file or a database.

mod booking_out;
mod booking_rules;
mod calendars;
mod hours;
mod ids;
mod price;
mod refusal;
mod series;
mod slots;
mod text;
mod time;

pub use booking_out::{booking_out, json_optional_text, json_text, write_booking_json, write_booking_json_on, BookingOut};
pub use booking_rules::{BookingRules, BookingRulesEdit, MAX_ADVANCE_DAYS, MAX_LEAD_MINUTES};
pub use calendars::CalendarOf;
pub use hours::{DaySpan, WeeklyHours};
pub use price::{check_amount, check_rate, deposit_of, quote, Money, Quote, QuoteLine, Rate, RoomPrice, MAX_AMOUNT, MAX_RATE};
pub use ids::{is_slug, BookingId, ClientId, EngineerId, RoomId, SeriesId};
pub use refusal::{BufferNote, Refusal};
pub use series::{expand_series, SeriesError};
pub use slots::{align_up, align_up_seconds, free_windows, free_windows_in_seconds, Span};
pub use text::{check_list, plausible_email, Email, Id, Line, List, Name, Notes, Tag, TextFault, TextKind, MAX_LIST};
pub use time::{instant_of, DayOffsets, DayWritten, Pick, StudioTz, TimeError, Zoned, YEARS};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The studio: its name, the zone its wall clocks follow, and the rules of its calendar.
#[derive(Debug, Clone, PartialEq)]
pub struct Studio {
    pub name: String,
    pub tz: StudioTz,
    /// A reflow never moves a booking that starts within this long of "now".
    pub notice: Duration,
    /// A fixed "now" for a scenario database (the demo); `None` means real time.
    pub clock: Option<DateTime<Utc>>,
    /// How far ahead of "now" a session may be booked or moved, and an offline window may reach.
    pub horizon: Duration,
}

/// The booking horizon when a studio sets none: two years.
pub const DEFAULT_HORIZON_DAYS: i64 = 730;
/// The longest horizon a studio may set: ten years, so that with [`YEARS`] ending in 2199 every
/// instant inside it stays readable for generations of clocks.
pub const MAX_HORIZON_DAYS: i64 = 3650;

impl Studio {
    /// The studio's "now": its stored scenario clock, or else `real`, the real time the caller
    /// read (the domain reads no clock itself).
    pub fn now(&self, real: DateTime<Utc>) -> DateTime<Utc> {
        self.clock.unwrap_or(real)
    }

    /// The latest instant a session may start or an offline window may end, at `now`.
    pub fn horizon_end(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now + self.horizon
    }
}

/// The most people a room may hold or a session may bring: a studio's rooms are not stadiums.
pub const MAX_PEOPLE: u32 = 1000;

/// A bookable room.
#[derive(Debug, Clone, PartialEq)]
pub struct Room {
    pub id: RoomId,
    pub name: String,
    pub capacity: u32,
    /// Sorted and without duplicates, so that "has every feature" is a plain subset test.
    pub features: Vec<String>,
    pub hours: WeeklyHours,
    /// Turnaround between two sessions in this room (set-up, clean-up).
    pub buffer: Duration,
    /// A retired room (`false`) is never booked nor a reflow's target; it stays listed.
    pub active: bool,
    /// What a new session in it must keep (length, notice, how far ahead, the grid of starts).
    pub rules: BookingRules,
    /// Its hourly rate and time-of-week overrides.
    pub price: RoomPrice,
}

impl Room {
    /// The features of `requires` that this room lacks, in order.
    pub fn missing_features<'a>(&self, requires: &'a [String]) -> Vec<&'a str> {
        requires
            .iter()
            .filter(|f| self.features.binary_search(f).is_err())
            .map(String::as_str)
            .collect()
    }

    /// Whether this room has every feature of `requires`.
    pub fn has_features(&self, requires: &[String]) -> bool {
        requires.iter().all(|f| self.features.binary_search(f).is_ok())
    }
}

/// The start of the id a reflow gives the room of bookings displaced out of a room
/// (`displaced-from-studio-d`): no real room may have such an id.
pub const DISPLACED_ROOM_PREFIX: &str = "displaced-from-";

/// A client (a band, an artist, a podcast) or an engineer: someone who can be double-booked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person<Id> {
    pub id: Id,
    pub name: String,
}

pub type Client = Person<ClientId>;
pub type Engineer = Person<EngineerId>;

/// What the roster keeps of a person beyond their name: how to reach them, and whether they can
/// be booked. A person is deactivated, never deleted, so that old bookings keep their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub email: Option<String>,
    pub phone: Option<String>,
    pub notes: Option<String>,
    /// Free-text tags (engineers only): "mixing", "drums", ...
    pub skills: Vec<String>,
    /// An inactive person cannot be booked; their bookings stay.
    pub active: bool,
    /// When an engineer works, in the form of a room's opening hours (engineers only); `None`:
    /// always. A session with them must lie inside one span.
    pub hours: Option<WeeklyHours>,
    /// An engineer's hourly rate, in minor units of the studio's currency (engineers only).
    pub hourly_rate: i64,
    /// Whether they are e-mailed when their sessions change (when they have an address); off
    /// keeps the address for staff without telling them.
    pub notify: bool,
}

impl Default for Profile {
    fn default() -> Self {
        Profile { email: None, phone: None, notes: None, skills: Vec::new(), active: true, hours: None, hourly_rate: 0, notify: true }
    }
}

/// The studio's settings beyond its calendar, in one place: its money and its waitlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudioSettings {
    /// ISO 4217, e.g. "GBP": prices are integers in its minor unit.
    pub currency: String,
    /// The share of a held booking's price owed as a deposit, 0 to 100.
    pub deposit_percent: i64,
    /// How long a freed slot is held for the first matching waitlist entry, in hours.
    pub waitlist_hold_hours: i64,
}

impl Default for StudioSettings {
    fn default() -> Self {
        StudioSettings { currency: "EUR".into(), deposit_percent: 50, waitlist_hold_hours: 24 }
    }
}

impl StudioSettings {
    /// Refuses settings that cannot be, naming the field and what to change.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.currency.len() != 3 || !self.currency.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(("currency", format!("currency {:?}: give an ISO 4217 code of three capital letters, e.g. \"GBP\"", self.currency)));
        }
        if !(0..=100).contains(&self.deposit_percent) {
            return Err(("deposit_percent", "deposit_percent must be 0 to 100".into()));
        }
        if !(1..=168).contains(&self.waitlist_hold_hours) {
            return Err(("waitlist_hold_hours", "waitlist_hold_hours must be 1 to 168 (a week)".into()));
        }
        Ok(())
    }
}

/// An engineer away over `[from, to)` (a holiday, illness, training): no session with them then.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeOff {
    pub id: i64,
    pub engineer: EngineerId,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub reason: String,
}

/// A readable id made from a name: "Amara Osei" becomes "amara-osei", "Zoë Björk" "zoe-bjork"
/// (accents go; a few letters that do not decompose are spelt out). Empty when the name has no
/// letter or digit of the Latin alphabet to keep: the caller then asks for an id.
pub fn slug_from(name: &str) -> String {
    use unicode_normalization::{char::is_combining_mark, UnicodeNormalization};
    let mut out = String::new();
    let mut push = |c: char| {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    };
    for c in name.trim().nfkd().filter(|c| !is_combining_mark(*c)).flat_map(char::to_lowercase) {
        match c {
            'ø' => push('o'),
            'æ' => "ae".chars().for_each(&mut push),
            'œ' => "oe".chars().for_each(&mut push),
            'ß' => "ss".chars().for_each(&mut push),
            'þ' => "th".chars().for_each(&mut push),
            'đ' | 'ð' => push('d'),
            'ł' => push('l'),
            'ı' => push('i'),
            c => push(c),
        }
    }
    let mut out: String = out.trim_end_matches('-').chars().take(56).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// Who changed the studio and through what: the history records it with every change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// The person or client program: an MCP client's `clientInfo.name`, a command's name.
    pub who: String,
    /// The way in: a tool's name, a command, a reflow id, "hold expiry".
    pub via: String,
}

impl Actor {
    pub fn new(who: impl Into<String>, via: impl Into<String>) -> Actor {
        Actor { who: who.into(), via: via.into() }
    }

    /// The same person, through another way in.
    pub fn via(&self, via: impl Into<String>) -> Actor {
        Actor { who: self.who.clone(), via: via.into() }
    }
}

impl Default for Actor {
    /// studioflow itself, for writes no person asked for by name.
    fn default() -> Self {
        Actor::new("studioflow", "studioflow")
    }
}

/// Where a booking stands. Cancelled bookings are kept for history and occupy nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Confirmed,
    Tentative,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 3] = [Status::Confirmed, Status::Tentative, Status::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Confirmed => "confirmed",
            Status::Tentative => "tentative",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|status| status.as_str() == s)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A booked session: a [`Session`] with the id it was given and the series it belongs to.
///
/// It derefs to its session, so `booking.room` reads as it says; the session is the one place the
/// fields of a booking are declared, whether it is asked for, stored, moved or checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Booking {
    pub id: BookingId,
    pub series: Option<SeriesId>,
    pub session: Session,
    /// Staff notes, free text.
    pub notes: Option<String>,
    /// A tentative booking held until then: past it, the server releases (cancels) it.
    pub hold_until: Option<DateTime<Utc>>,
    /// Put out of its room by a change to the room (smaller, retired...): it holds nothing until
    /// a reflow or a person moves it.
    pub displaced: bool,
    /// What it costs, what it owes as a deposit, and what was paid.
    pub money: Money,
}

impl std::ops::Deref for Booking {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Session {
    /// Whether it still holds its room and its people.
    pub fn is_active(&self) -> bool {
        self.status != Status::Cancelled
    }

    pub fn duration(&self) -> Duration {
        self.end - self.start
    }

    /// Why a reflow may not move it at `now`, if it may not.
    pub fn lock(&self, now: DateTime<Utc>, notice: Duration) -> Option<Lock> {
        if self.pinned {
            Some(Lock::Pinned)
        } else if self.start <= now {
            Some(Lock::Started)
        } else if self.start < now + notice {
            Some(Lock::Notice)
        } else {
            None
        }
    }
}

/// Why a booking is immovable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// Staff locked it.
    Pinned,
    /// It has already started (or ended).
    Started,
    /// It starts within the studio's notice period: the client has been told where to be.
    Notice,
}

impl fmt::Display for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Lock::Pinned => "pinned by staff",
            Lock::Started => "already started",
            Lock::Notice => "inside the notice period",
        })
    }
}

/// A session in a room, `[start, end)`, with who comes and what it needs: what a booking asks
/// for before it has an id, and what it holds once it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub room: RoomId,
    pub client: ClientId,
    pub engineer: Option<EngineerId>,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub party_size: u32,
    pub requires: Vec<String>,
    /// What any engineer of the session must be able to do ("mixing", "podcast"): skill tags,
    /// sorted and without duplicates, like an engineer's `skills`. A reflow that gives the session
    /// to another engineer gives it only to one who has them all.
    pub engineer_skills: Vec<String>,
    pub status: Status,
    /// Locked by staff: a reflow never moves it.
    pub pinned: bool,
}

/// A weekly (or any RFC 5545) recurring session: its rule and the first occurrence.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub id: SeriesId,
    /// The RRULE body, e.g. `FREQ=WEEKLY;BYDAY=TU;COUNT=8`.
    pub rrule: String,
    /// The first occurrence; the others keep its local wall-clock time and its duration.
    pub template: Session,
}

/// One booking's move: from where it was to where a reflow puts it, and from whom to whom.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub booking: BookingId,
    pub from_room: RoomId,
    pub from_start: DateTime<Utc>,
    pub from_end: DateTime<Utc>,
    pub to_room: RoomId,
    pub to_start: DateTime<Utc>,
    pub to_end: DateTime<Utc>,
    /// The session's engineer before the move.
    pub from_engineer: Option<EngineerId>,
    /// Its engineer after the move: another one when the reflow re-staffed it.
    pub to_engineer: Option<EngineerId>,
}

impl Move {
    /// Whether the move gives the session to another engineer.
    pub fn changes_engineer(&self) -> bool {
        self.from_engineer != self.to_engineer
    }
}

/// A room out of use over `[from, to)`.
#[derive(Debug, Clone, PartialEq)]
pub struct OfflineWindow {
    pub id: i64,
    pub room: RoomId,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub reason: String,
}

/// Whether two half-open intervals share a moment.
pub fn overlaps(a: (DateTime<Utc>, DateTime<Utc>), b: (DateTime<Utc>, DateTime<Utc>)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Sorts and de-duplicates a feature list, the one form the rest of the code compares.
pub fn normalize_features(mut features: Vec<String>) -> Vec<String> {
    for f in &mut features {
        *f = f.trim().to_ascii_lowercase();
    }
    features.sort();
    features.dedup();
    features
}
