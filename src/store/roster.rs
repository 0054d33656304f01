//! The roster: clients, engineers and rooms as an agent manages them. People are created with a
//! readable id, edited, and deactivated (never deleted, so old bookings keep their names); a room
//! change that would break future bookings is refused listing them, or, forced, applied with
//! those bookings flagged displaced (they hold nothing until a reflow or a person moves them).

use super::db::{self, params, Connection, OptionalExtension};
use super::events::{self, Action, Entity};
use super::read::{self, booking_from_row, BOOKING_COLUMNS, HOLDS_ITS_PLACE};
use super::rules;
use super::{check_people, clean_list, clean_text, json_list, to_json_list, Result, Store, StoreError, Writer};
use crate::domain::{check_rate, is_slug, normalize_features, slug_from, Booking, BookingRulesEdit, Profile, Rate, Room, RoomId, TextKind, WeeklyHours};
use chrono::Duration;
use serde_json::json;

/// Clients or engineers: the two rosters share one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonKind {
    Client,
    Engineer,
}

impl PersonKind {
    fn table(self) -> &'static str {
        match self {
            PersonKind::Client => "clients",
            PersonKind::Engineer => "engineers",
        }
    }

    /// "client" or "engineer".
    pub fn word(self) -> &'static str {
        match self {
            PersonKind::Client => "client",
            PersonKind::Engineer => "engineer",
        }
    }

    fn entity(self) -> Entity {
        match self {
            PersonKind::Client => Entity::Client,
            PersonKind::Engineer => Entity::Engineer,
        }
    }

    fn column(self) -> &'static str {
        match self {
            PersonKind::Client => "client_id",
            PersonKind::Engineer => "engineer_id",
        }
    }
}

/// A client or engineer with their profile.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonRecord {
    pub id: String,
    pub name: String,
    pub profile: Profile,
}

/// Which people to list: every filter optional, paged by id.
#[derive(Debug, Clone, Default)]
pub struct PersonQuery {
    /// Part of the id or name, any case.
    pub text: Option<String>,
    pub active: Option<bool>,
    /// Resume after this id.
    pub after: Option<String>,
    pub limit: usize,
}

/// What to change of a person; `None` leaves a field as it is, an empty text clears it.
#[derive(Debug, Clone, Default)]
pub struct PersonEdit {
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub notes: Option<String>,
    pub skills: Option<Vec<String>>,
    pub active: Option<bool>,
    /// An engineer's working hours: `Some(None)` makes them always available.
    pub hours: Option<Option<WeeklyHours>>,
    /// An engineer's hourly rate.
    pub hourly_rate: Option<i64>,
    /// Whether they are e-mailed when their sessions change.
    pub notify: Option<bool>,
}

/// What to change of a room; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct RoomEdit {
    pub name: Option<String>,
    pub capacity: Option<u32>,
    pub features: Option<Vec<String>>,
    pub hours: Option<WeeklyHours>,
    pub buffer: Option<Duration>,
    pub active: Option<bool>,
    /// Its booking rules: they hold for sessions booked or moved from now on, never displacing
    /// one already booked.
    pub rules: BookingRulesEdit,
    /// Its hourly rate.
    pub hourly_rate: Option<i64>,
    /// Its time-of-week overrides (replace the old ones).
    pub rates: Option<Vec<Rate>>,
}

/// A room as changed, and the future bookings the change displaced.
#[derive(Debug, Clone)]
pub struct RoomChange {
    pub room: Room,
    pub displaced: Vec<Booking>,
}

/// A person's row: id, name, (email, phone, notes), skills as JSON, active, (working hours as
/// JSON, hourly rate, notify).
type PersonRow = (String, String, (Option<String>, Option<String>, Option<String>), String, bool, (Option<String>, i64, bool));

fn person_from_row(row: &db::Row<'_>) -> db::Result<PersonRow> {
    Ok((row.get(0)?, row.get(1)?, (row.get(2)?, row.get(3)?, row.get(4)?), row.get(5)?, row.get(6)?, (row.get(7)?, row.get(8)?, row.get(9)?)))
}

fn person_sql(kind: PersonKind) -> String {
    let (skills, hours, rate) =
        if kind == PersonKind::Engineer { ("skills", "working_hours", "hourly_rate") } else { ("'[]'", "CAST(NULL AS TEXT)", "CAST(0 AS BIGINT)") };
    format!("SELECT id, name, email, phone, notes, {skills}, active, {hours}, {rate}, notify FROM {}", kind.table())
}

fn to_record(row: PersonRow) -> Result<PersonRecord> {
    let (id, name, (email, phone, notes), skills, active, (hours, hourly_rate, notify)) = row;
    let hours = hours.as_deref().map(|h| rules::stored_hours(&id, h)).transpose()?;
    Ok(PersonRecord { id, name, profile: Profile { email, phone, notes, skills: json_list(&skills)?, active, hours, hourly_rate, notify } })
}

/// Working hours as the engineers' table stores them: JSON lines, or NULL for always.
fn hours_json(hours: &Option<WeeklyHours>) -> Option<String> {
    hours.as_ref().map(|h| to_json_list(&h.to_lines()))
}

fn person(conn: &Connection, kind: PersonKind, id: &str) -> Result<Option<PersonRecord>> {
    let sql = format!("{} WHERE id = ?", person_sql(kind));
    conn.prepare_cached(&sql)?.query_row([id], person_from_row).optional()?.map(to_record).transpose()
}

impl Store {
    /// People in id order, a page at a time.
    pub fn people(&self, kind: PersonKind, q: &PersonQuery) -> Result<Vec<PersonRecord>> {
        let sql = format!(
            "{} WHERE (CAST(?1 AS TEXT) IS NULL OR instr(lower(id), lower(?1)) > 0 OR instr(lower(name), lower(?1)) > 0) \
             AND (CAST(?2 AS BIGINT) IS NULL OR active = ?2) AND (CAST(?3 AS TEXT) IS NULL OR id > ?3) ORDER BY id LIMIT ?4",
            person_sql(kind)
        );
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let rows = stmt.query_map(params![q.text, q.active, q.after, q.limit.min(i64::MAX as usize) as i64], person_from_row)?;
        rows.map(|r| to_record(r?)).collect()
    }

    pub fn person(&self, kind: PersonKind, id: &str) -> Result<Option<PersonRecord>> {
        person(self.conn(), kind, id)
    }
}

/// A text of `kind` as the roster keeps it: by the rule, `None` when empty.
fn optional_text(field: &'static str, kind: TextKind, text: &str) -> Result<Option<String>> {
    let text = clean_text(field, kind, text)?;
    Ok((!text.is_empty()).then_some(text))
}

/// A profile from outside, by the rules of its fields.
fn clean_profile(p: &Profile) -> Result<Profile> {
    let optional = |field, kind, text: &Option<String>| text.as_deref().map(|t| optional_text(field, kind, t)).transpose().map(Option::flatten);
    Ok(Profile {
        email: optional("email", TextKind::Email, &p.email)?,
        phone: optional("phone", TextKind::Line, &p.phone)?,
        notes: optional("notes", TextKind::Notes, &p.notes)?,
        skills: clean_list("skills", TextKind::Tag, &p.skills)?,
        active: p.active,
        hours: p.hours.clone(),
        hourly_rate: p.hourly_rate,
        notify: p.notify,
    })
}

fn person_fields(p: &PersonRecord, kind: PersonKind) -> serde_json::Map<String, serde_json::Value> {
    let mut m = events::fields([
        ("name", json!(p.name)),
        ("email", json!(p.profile.email)),
        ("phone", json!(p.profile.phone)),
        ("notes", json!(p.profile.notes)),
        ("active", json!(p.profile.active)),
    ]);
    // Only when turned off, so that the history of people who never touched it reads as before.
    if !p.profile.notify {
        m.insert("notify".into(), json!(false));
    }
    if kind == PersonKind::Engineer {
        m.insert("skills".into(), json!(p.profile.skills));
        m.insert("working_hours".into(), json!(p.profile.hours.as_ref().map(WeeklyHours::to_lines)));
        if p.profile.hourly_rate != 0 {
            m.insert("hourly_rate".into(), json!(p.profile.hourly_rate));
        }
    }
    m
}

impl Writer<'_> {
    /// Adds a client or engineer. Without an id, one is made from the name (`amara-osei`, then
    /// `amara-osei-2`, ...).
    pub fn create_person(&mut self, kind: PersonKind, id: Option<&str>, name: &str, profile: Profile) -> Result<PersonRecord> {
        let word = kind.word();
        let name = clean_text("name", TextKind::Name, name)?;
        let name = name.as_str();
        let profile = clean_profile(&Profile { active: true, ..profile })?;
        if kind == PersonKind::Client && profile.hours.is_some() {
            return Err(StoreError::invalid("working_hours", "working_hours: only engineers have working hours"));
        }
        if kind == PersonKind::Client && profile.hourly_rate != 0 {
            return Err(StoreError::invalid("hourly_rate", "hourly_rate: only engineers and rooms have hourly rates"));
        }
        check_rate("hourly_rate", profile.hourly_rate).map_err(|m| StoreError::invalid("hourly_rate", m))?;
        let id = match id.map(str::trim) {
            Some(id) if !is_slug(id) => {
                return Err(StoreError::invalid("id", format!("id {id:?}: use 1 to 64 of a-z, 0-9, '-' and '_', e.g. \"amara-osei\"")));
            }
            Some(id) if read::exists(self.conn(), kind.table(), id)? => {
                return Err(StoreError::invalid("id", format!("a {word} with id {id:?} already exists: choose another id, or leave it out")));
            }
            Some(id) => id.to_owned(),
            None => {
                let base = slug_from(name);
                if base.is_empty() {
                    return Err(StoreError::invalid(
                        "id",
                        format!("id: the name {name:?} has no letter a-z or digit to make an id from: give the {word} an id, e.g. \"id\": \"{word}-1\""),
                    ));
                }
                let mut candidate = base.clone();
                let mut n = 1;
                while read::exists(self.conn(), kind.table(), &candidate)? {
                    n += 1;
                    candidate = format!("{base}-{n}");
                }
                candidate
            }
        };
        let skills = if kind == PersonKind::Engineer { ", skills, working_hours, hourly_rate" } else { "" };
        let skills_value = if kind == PersonKind::Engineer { ", ?7, ?8, ?9" } else { "" };
        let sql = format!("INSERT INTO {} (id, name, email, phone, notes, notify{skills}) VALUES (?1, ?2, ?3, ?4, ?5, ?6{skills_value})", kind.table());
        if kind == PersonKind::Engineer {
            let hours = hours_json(&profile.hours);
            self.tx.execute(
                &sql,
                params![id, name, profile.email, profile.phone, profile.notes, profile.notify, to_json_list(&profile.skills), hours, profile.hourly_rate],
            )?;
        } else {
            self.tx.execute(&sql, params![id, name, profile.email, profile.phone, profile.notes, profile.notify])?;
        }
        let record = PersonRecord { id: id.clone(), name: name.to_owned(), profile };
        self.event(kind.entity(), &id, Action::Created, events::diff(None, Some(person_fields(&record, kind))))?;
        Ok(record)
    }

    /// Changes a client or engineer; returns them as they are now, when this deactivated them
    /// their future bookings (which stay), and when it changed an engineer's working hours the
    /// future sessions outside the new hours, which are flagged displaced (as a forced room change
    /// does: a reflow or a person then moves them).
    pub fn update_person(&mut self, kind: PersonKind, id: &str, edit: &PersonEdit) -> Result<(PersonRecord, Vec<Booking>, Vec<Booking>)> {
        let unknown = || match kind {
            PersonKind::Client => StoreError::UnknownClient(id.into()),
            PersonKind::Engineer => StoreError::UnknownEngineer(id.into()),
        };
        let before = person(self.conn(), kind, id)?.ok_or_else(unknown)?;
        let mut after = before.clone();
        if let Some(name) = &edit.name {
            after.name = clean_text("name", TextKind::Name, name)?;
        }
        if let Some(email) = &edit.email {
            after.profile.email = optional_text("email", TextKind::Email, email)?;
        }
        if let Some(phone) = &edit.phone {
            after.profile.phone = optional_text("phone", TextKind::Line, phone)?;
        }
        if let Some(notes) = &edit.notes {
            after.profile.notes = optional_text("notes", TextKind::Notes, notes)?;
        }
        if let Some(skills) = &edit.skills {
            if kind == PersonKind::Client {
                return Err(StoreError::invalid("skills", "skills: only engineers have skills"));
            }
            after.profile.skills = clean_list("skills", TextKind::Tag, skills)?;
        }
        if let Some(hours) = &edit.hours {
            if kind == PersonKind::Client {
                return Err(StoreError::invalid("working_hours", "working_hours: only engineers have working hours"));
            }
            after.profile.hours = hours.clone();
        }
        if let Some(rate) = edit.hourly_rate {
            if kind == PersonKind::Client {
                return Err(StoreError::invalid("hourly_rate", "hourly_rate: only engineers and rooms have hourly rates"));
            }
            check_rate("hourly_rate", rate).map_err(|m| StoreError::invalid("hourly_rate", m))?;
            after.profile.hourly_rate = rate;
        }
        if let Some(active) = edit.active {
            after.profile.active = active;
        }
        if let Some(notify) = edit.notify {
            after.profile.notify = notify;
        }
        let p = &after.profile;
        self.forget_contacts();
        self.tx.execute(
            &format!("UPDATE {} SET name = ?, email = ?, phone = ?, notes = ?, active = ?, notify = ? WHERE id = ?", kind.table()),
            params![after.name, p.email, p.phone, p.notes, p.active, p.notify, id],
        )?;
        if kind == PersonKind::Engineer {
            self.tx.execute(
                "UPDATE engineers SET skills = ?, working_hours = ?, hourly_rate = ? WHERE id = ?",
                params![to_json_list(&p.skills), hours_json(&p.hours), p.hourly_rate, id],
            )?;
        }
        let change = events::diff(Some(person_fields(&before, kind)), Some(person_fields(&after, kind)));
        if !change.is_empty() {
            let action = match (before.profile.active, after.profile.active) {
                (true, false) => Action::Deactivated,
                (false, true) => Action::Reactivated,
                _ => Action::Updated,
            };
            self.event(kind.entity(), id, action, change)?;
        }
        let future = if !after.profile.active {
            let sql = format!(
                "SELECT {BOOKING_COLUMNS} FROM bookings WHERE {} = ? AND status != 'cancelled' AND start_at > ? ORDER BY start_at, seq",
                kind.column()
            );
            let mut stmt = self.tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![id, self.now().timestamp()], booking_from_row)?;
            rows.map(|r| r.map(|(b, _)| b)).collect::<db::Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let displaced = match &after.profile.hours {
            Some(hours) if edit.hours.is_some() && before.profile.hours != after.profile.hours => {
                let tz = self.studio()?.tz;
                let sql = format!("SELECT {BOOKING_COLUMNS} FROM bookings b WHERE engineer_id = ? AND {HOLDS_ITS_PLACE} AND start_at > ? ORDER BY start_at, seq");
                let outside: Vec<Booking> = {
                    let mut stmt = self.tx.prepare_cached(&sql)?;
                    let rows = stmt.query_map(params![id, self.now().timestamp()], booking_from_row)?;
                    let all = rows.map(|r| r.map(|(b, _)| b)).collect::<db::Result<Vec<_>>>()?;
                    all.into_iter().filter(|b| !hours.contains(&tz, b.start, b.end)).collect()
                };
                self.displace(&outside)?
            }
            _ => Vec::new(),
        };
        Ok((after, future, displaced))
    }

    /// Changes a room. A change that would break future bookings (too small, a feature they need
    /// gone, hours that no longer hold them, a turnaround that makes two clash, the room retired)
    /// is refused naming them, unless `force`: then it is applied and they are flagged displaced.
    pub fn update_room(&mut self, id: &RoomId, edit: &RoomEdit, force: bool) -> Result<RoomChange> {
        let before = read::room(self.conn(), id)?.ok_or_else(|| StoreError::UnknownRoom(id.clone()))?;
        let mut room = before.clone();
        let invalid = |field: &'static str, what: &str| Err(StoreError::invalid(field, format!("{field}: {what}")));
        if let Some(name) = &edit.name {
            room.name = clean_text("name", TextKind::Name, name)?;
        }
        if let Some(capacity) = edit.capacity {
            check_people("capacity", capacity)?;
            room.capacity = capacity;
        }
        if let Some(features) = &edit.features {
            let features = normalize_features(clean_list("features", TextKind::Tag, features)?);
            if let Some(bad) = features.iter().find(|f| !is_slug(f)) {
                return invalid("features", &format!("{bad:?} is not a slug such as \"vocal-booth\""));
            }
            room.features = features;
        }
        if let Some(hours) = &edit.hours {
            room.hours = hours.clone();
        }
        if let Some(buffer) = edit.buffer {
            if buffer < Duration::zero() || buffer > Duration::hours(4) {
                return invalid("buffer_minutes", "a turnaround is 0 to 240 minutes");
            }
            room.buffer = buffer;
        }
        if let Some(active) = edit.active {
            room.active = active;
        }
        room.rules = edit.rules.applied(room.rules);
        if let Err((field, message)) = room.rules.check() {
            return Err(StoreError::invalid(field, message));
        }
        if let Some(rate) = edit.hourly_rate {
            room.price.hourly_rate = rate;
        }
        if let Some(rates) = &edit.rates {
            room.price.rates = rates.clone();
        }
        room.price.check().map_err(|message| StoreError::invalid("rates", message))?;
        let tz = self.studio()?.tz;
        let now = self.now();
        // The future bookings that hold the room now (one in an offline window holds nothing).
        let sql = format!("SELECT {BOOKING_COLUMNS} FROM bookings b WHERE room_id = ? AND {HOLDS_ITS_PLACE} AND start_at > ? ORDER BY start_at, seq");
        let future: Vec<Booking> = {
            let mut stmt = self.tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![id.as_str(), now.timestamp()], booking_from_row)?;
            rows.map(|r| r.map(|(b, _)| b)).collect::<db::Result<_>>()?
        };
        let mut broken: Vec<Booking> = Vec::new();
        let mut kept: Vec<&Booking> = Vec::new();
        for b in &future {
            // With a longer turnaround, the later of two sessions that now clash goes.
            let clashes = kept.iter().any(|k| rules::turnaround_clash(k, b, room.buffer));
            if rules::room_holds(&room, &tz, b) && !clashes {
                kept.push(b);
            } else {
                broken.push(b.clone());
            }
        }
        if !broken.is_empty() && !force {
            return Err(StoreError::RoomChangeDisplaces {
                room: id.clone(),
                bookings: broken.iter().take(20).map(|b| b.id.clone()).collect(),
                total: broken.len(),
            });
        }
        self.tx.execute(
            "UPDATE rooms SET name = ?, capacity = ?, features = ?, hours = ?, buffer_minutes = ?, active = ?, \
             min_minutes = ?, max_minutes = ?, lead_minutes = ?, max_advance_days = ?, start_step_minutes = ?, hourly_rate = ?, rates = ? WHERE id = ?",
            params![
                room.name,
                room.capacity,
                to_json_list(&room.features),
                to_json_list(&room.hours.to_lines()),
                room.buffer.num_minutes(),
                room.active,
                room.rules.min_minutes,
                room.rules.max_minutes,
                room.rules.lead_minutes,
                room.rules.max_advance_days,
                room.rules.start_step_minutes,
                room.price.hourly_rate,
                super::prices::rates_to_json(&room.price.rates),
                id.as_str()
            ],
        )?;
        let change = events::diff(Some(events::room_fields(&before)), Some(events::room_fields(&room)));
        if !change.is_empty() {
            let action = if before.active && !room.active { Action::Retired } else { Action::Updated };
            self.event(Entity::Room, id.as_str(), action, change)?;
        }
        let displaced = self.displace(&broken)?;
        Ok(RoomChange { room, displaced })
    }
}
