//! Prices in the store: the studio's settings (currency, deposit, waitlist hold; one row, one
//! place, so that other settings join them), rooms' rates as they are stored (JSON), and a quote
//! read from the rates a room and an engineer have now. The arithmetic is `domain::price`'s.

use super::db::params;
use super::events::{self, Action, Entity};
use super::read;
use super::{Result, Store, StoreError, Writer};
use super::db::{Connection, OptionalExtension};
use crate::domain::{deposit_of, quote, BookingId, EngineerId, Quote, Rate, RoomId, Session, StudioSettings, StudioTz};
use chrono::{DateTime, Utc};
use serde_json::{json, Value as Json};

/// A change to the studio's settings; `None` leaves one as it is.
#[derive(Debug, Clone, Default)]
pub struct SettingsEdit {
    pub currency: Option<String>,
    pub deposit_percent: Option<i64>,
    pub waitlist_hold_hours: Option<i64>,
}

/// Rates as the rooms' table stores them.
pub(super) fn rates_json_value(rates: &[Rate]) -> Json {
    Json::Array(
        rates
            .iter()
            .map(|r| json!({"days": r.days, "from": Rate::clock_text(r.from), "to": Rate::clock_text(r.to), "hourly_rate": r.hourly_rate}))
            .collect(),
    )
}

pub(super) fn rates_to_json(rates: &[Rate]) -> String {
    rates_json_value(rates).to_string()
}

pub(super) fn rates_from_json(text: &str) -> std::result::Result<Vec<Rate>, String> {
    let items: Vec<Json> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    items
        .iter()
        .map(|r| {
            let s = |k: &str| r.get(k).and_then(Json::as_str).unwrap_or_default().to_owned();
            Rate::new(&s("days"), &s("from"), &s("to"), r.get("hourly_rate").and_then(Json::as_i64).unwrap_or(-1))
        })
        .collect()
}

fn settings_fields(s: &StudioSettings) -> serde_json::Map<String, Json> {
    events::fields([
        ("currency", json!(s.currency)),
        ("deposit_percent", json!(s.deposit_percent)),
        ("waitlist_hold_hours", json!(s.waitlist_hold_hours)),
    ])
}

/// What a session costs at the rates stored now, as this connection (or transaction) sees them:
/// the quote's total, the one price a booking keeps.
pub(super) fn session_price(conn: &Connection, tz: &StudioTz, s: &Session) -> Result<i64> {
    let room = read::room(conn, &s.room)?.ok_or_else(|| StoreError::UnknownRoom(s.room.clone()))?;
    let rate = match &s.engineer {
        Some(e) => Some(
            conn.prepare_cached("SELECT hourly_rate FROM engineers WHERE id = ?")?
                .query_row([e.as_str()], |row| row.get::<_, i64>(0))
                .optional()?
                .ok_or_else(|| StoreError::UnknownEngineer(e.clone()))?,
        ),
        None => None,
    };
    Ok(quote(tz, &room.price, rate, s.start, s.end).total)
}

/// Every room's and engineer's rates, read once, for pricing many sessions at a time (a reflow's
/// moves) with one read instead of two per session.
pub(super) struct PriceList {
    rooms: std::collections::HashMap<RoomId, crate::domain::RoomPrice>,
    engineers: std::collections::HashMap<String, i64>,
}

impl PriceList {
    pub(super) fn read(conn: &Connection) -> Result<PriceList> {
        let rooms = read::rooms(conn)?.iter().map(|r| (r.id.clone(), r.price.clone())).collect();
        let mut stmt = conn.prepare_cached("SELECT id, hourly_rate FROM engineers")?;
        let rows = stmt.query_map((), |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))?;
        let engineers = rows.collect::<super::db::Result<_>>()?;
        Ok(PriceList { rooms, engineers })
    }

    /// What `s` costs at these rates: [`session_price`]'s answer.
    pub(super) fn price(&self, tz: &StudioTz, s: &Session) -> Result<i64> {
        let room = self.rooms.get(&s.room).ok_or_else(|| StoreError::UnknownRoom(s.room.clone()))?;
        let rate = match &s.engineer {
            Some(e) => Some(*self.engineers.get(e.as_str()).ok_or_else(|| StoreError::UnknownEngineer(e.clone()))?),
            None => None,
        };
        Ok(quote(tz, room, rate, s.start, s.end).total)
    }
}

pub(super) fn settings(conn: &super::db::Connection) -> Result<StudioSettings> {
    conn.query_row("SELECT currency, deposit_percent, waitlist_hold_hours FROM studio WHERE id = 1", (), |row| {
        Ok(StudioSettings { currency: row.get(0)?, deposit_percent: row.get(1)?, waitlist_hold_hours: row.get(2)? })
    })
    .map_err(|e| match StoreError::from(e) {
        StoreError::Database(_) => StoreError::NoStudio,
        other => other,
    })
}

impl Store {
    /// The studio's settings.
    pub fn settings(&self) -> Result<StudioSettings> {
        settings(self.conn())
    }

    /// What a session in `room` over `[start, end)` costs at today's rates, with `engineer`'s time.
    pub fn quote(&self, room: &RoomId, start: DateTime<Utc>, end: DateTime<Utc>, engineer: Option<&EngineerId>) -> Result<Quote> {
        let tz = self.studio()?.tz;
        let room = self.room(room)?.ok_or_else(|| StoreError::UnknownRoom(room.clone()))?;
        let rate = match engineer {
            Some(e) => {
                let person = self.person(super::PersonKind::Engineer, e.as_str())?.ok_or_else(|| StoreError::UnknownEngineer(e.clone()))?;
                Some(person.profile.hourly_rate)
            }
            None => None,
        };
        if end <= start {
            return Err(StoreError::invalid("end", "end: a session must end after it starts"));
        }
        if end - start > read::MAX_BOOKING {
            return Err(StoreError::invalid("end", "end: a session lasts at most 24 hours"));
        }
        Ok(quote(&tz, &room.price, rate, start, end))
    }
}

/// When a booking's price is set again (a new one's is [`Writer::new_price`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pricing {
    /// Changed by a person (its time, room or engineer): re-priced; a deposit it still owes on
    /// its hold follows the new price.
    Changed,
}

impl Writer<'_> {
    /// Prices booking `id` (as this transaction sees it) at today's rates. A reflow's move never
    /// comes here: the client keeps the price they booked at, and the reflow records the
    /// difference it absorbed.
    pub(super) fn price_booking(&mut self, id: &BookingId, pricing: Pricing) -> Result<()> {
        let b = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        let tz = self.studio()?.tz;
        let price = session_price(&self.tx, &tz, &b.session)?;
        let deposit_due = match pricing {
            Pricing::Changed if b.hold_until.is_some() && b.money.deposit_due > 0 => deposit_of(price, settings(&self.tx)?.deposit_percent),
            Pricing::Changed => b.money.deposit_due,
        };
        self.tx.execute("UPDATE bookings SET price = ?, deposit_due = ? WHERE id = ?", params![price, deposit_due, id.as_str()])?;
        Ok(())
    }

    /// The price a session booked now keeps, and the deposit it owes if it is made on hold.
    pub(super) fn new_price(&self, session: &Session, on_hold: bool) -> Result<(i64, i64)> {
        let price = session_price(&self.tx, &self.studio()?.tz, session)?;
        let deposit_due = if on_hold { deposit_of(price, settings(&self.tx)?.deposit_percent) } else { 0 };
        Ok((price, deposit_due))
    }

    /// Changes the studio's settings, each checked; an event of the studio when anything changed.
    pub fn update_settings(&mut self, edit: &SettingsEdit) -> Result<StudioSettings> {
        let before = settings(&self.tx)?;
        let after = StudioSettings {
            currency: edit.currency.as_deref().map(str::trim).map_or_else(|| before.currency.clone(), str::to_owned),
            deposit_percent: edit.deposit_percent.unwrap_or(before.deposit_percent),
            waitlist_hold_hours: edit.waitlist_hold_hours.unwrap_or(before.waitlist_hold_hours),
        };
        after.check().map_err(|(field, message)| StoreError::invalid(field, message))?;
        self.tx.execute(
            "UPDATE studio SET currency = ?, deposit_percent = ?, waitlist_hold_hours = ? WHERE id = 1",
            params![after.currency, after.deposit_percent, after.waitlist_hold_hours],
        )?;
        let change = events::diff(Some(settings_fields(&before)), Some(settings_fields(&after)));
        if !change.is_empty() {
            self.event(Entity::Studio, "studio", Action::Updated, change)?;
        }
        Ok(after)
    }
}
