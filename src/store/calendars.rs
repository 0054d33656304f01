//! Calendars: the bookings of one room, client or engineer in a window, with the revision and
//! times an iCalendar event needs; the months that have bookings (for completions); and the
//! stored hashes of calendar feed secrets. A secret itself is never stored or seen here.

use super::read::{booking_from_row, BOOKING_COLUMNS};
use super::{instant, Result, Store, StoreError, Writer};
use crate::domain::{Booking, CalendarOf};
use chrono::{DateTime, Utc};
use super::db::{self, params, OptionalExtension};

/// A booking as a calendar shows it: with its revision (raised by the database on every change)
/// and when it was created and last changed.
#[derive(Debug, Clone, PartialEq)]
pub struct CalendarEntry {
    pub booking: Booking,
    pub revision: i64,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
}

/// A calendar feed's stored record: which calendar its secret opens, never the secret.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedRecord {
    pub id: String,
    pub calendar: CalendarOf,
    pub label: Option<String>,
    pub created: DateTime<Utc>,
    pub revoked: Option<DateTime<Utc>>,
}

const FEED_COLUMNS: &str = "id, kind, target, label, created_at, revoked_at";

/// A `feed_secrets` row as read: id, kind, target, label, created, revoked.
type FeedRow = (String, String, String, Option<String>, i64, Option<i64>);

fn feed_from_row(row: &db::Row<'_>) -> db::Result<FeedRow> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
}

fn feed(raw: FeedRow) -> Result<FeedRecord> {
    let (id, kind, target, label, created, revoked) = raw;
    let calendar = CalendarOf::new(&kind, &target).ok_or_else(|| StoreError::Corrupt(format!("feed {id}: kind {kind:?}")))?;
    Ok(FeedRecord { id, calendar, label, created: instant(created)?, revoked: revoked.map(instant).transpose()? })
}

/// The column a calendar filters bookings on.
fn column(of: &CalendarOf) -> &'static str {
    match of {
        CalendarOf::Room(_) => "room_id",
        CalendarOf::Client(_) => "client_id",
        CalendarOf::Engineer(_) => "engineer_id",
    }
}

impl Store {
    /// Whether the room, client or engineer exists.
    pub fn calendar_exists(&self, of: &CalendarOf) -> Result<bool> {
        super::read::exists(self.conn(), of.plural(), of.id())
    }

    /// Every booking of the calendar that overlaps `[from, to)`, cancelled ones included (a
    /// calendar program must see that they are cancelled), in start order.
    pub fn calendar_entries(&self, of: &CalendarOf, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<CalendarEntry>> {
        let sql = format!(
            "SELECT {BOOKING_COLUMNS}, revision, created_at, updated_at FROM bookings \
             WHERE {} = ?1 AND end_at > ?2 AND start_at < ?3 ORDER BY start_at, seq",
            column(of)
        );
        let mut stmt = self.conn().prepare_cached(&sql)?;
        // The three columns after the booking's own.
        let n = BOOKING_COLUMNS.split(',').count();
        let rows = stmt.query_map(params![of.id(), from.timestamp(), to.timestamp()], |row| {
            let (booking, _) = booking_from_row(row)?;
            Ok((booking, row.get::<_, i64>(n)?, row.get::<_, i64>(n + 1)?, row.get::<_, i64>(n + 2)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (booking, revision, created, updated) = row?;
            out.push(CalendarEntry { booking, revision, created: instant(created)?, updated: instant(updated)? });
        }
        Ok(out)
    }

    /// The months (`YYYY-MM`, in the studio's zone) that have at least one booking that is not
    /// cancelled, in order.
    pub fn booked_months(&self) -> Result<Vec<String>> {
        let tz = self.studio()?.tz;
        // Distinct UTC hours are few (one per hour that has a start) and cheap to group by.
        let mut stmt = self.conn().prepare_cached("SELECT DISTINCT start_at / 3600 FROM bookings WHERE status != 'cancelled'")?;
        let hours = stmt.query_map((), |row| row.get::<_, i64>(0))?;
        let mut months = std::collections::BTreeSet::new();
        for hour in hours {
            let at = instant(hour? * 3600)?;
            months.insert(tz.local(at).format("%Y-%m").to_string());
        }
        Ok(months.into_iter().collect())
    }

    /// The ids of every recorded reflow, oldest first: the plans that are resources.
    pub fn reflow_ids(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn().prepare_cached("SELECT id FROM reflows ORDER BY created_at, id")?;
        let rows = stmt.query_map((), |row| row.get(0))?;
        Ok(rows.collect::<db::Result<_>>()?)
    }

    /// The feed whose secret hashes to `hash`, revoked or not.
    pub fn feed_by_hash(&self, hash: &str) -> Result<Option<FeedRecord>> {
        let sql = format!("SELECT {FEED_COLUMNS} FROM feed_secrets WHERE secret_hash = ?");
        let raw = self.conn().prepare_cached(&sql)?.query_row([hash], feed_from_row).optional()?;
        raw.map(feed).transpose()
    }

    /// Every feed, or the feeds of one calendar, oldest first.
    pub fn feeds(&self, of: Option<&CalendarOf>) -> Result<Vec<FeedRecord>> {
        let sql = format!("SELECT {FEED_COLUMNS} FROM feed_secrets WHERE CAST(?1 AS TEXT) IS NULL OR (kind = ?1 AND target = ?2) ORDER BY created_at, id");
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let rows = stmt.query_map(params![of.map(CalendarOf::kind), of.map(CalendarOf::id)], feed_from_row)?;
        rows.map(|raw| feed(raw?)).collect()
    }
}

impl Writer<'_> {
    /// Stores a feed's secret hash, scoped to one calendar that must exist.
    pub fn add_feed(&mut self, id: &str, hash: &str, of: &CalendarOf, label: Option<&str>, now: DateTime<Utc>) -> Result<FeedRecord> {
        if !super::read::exists(self.conn(), of.plural(), of.id())? {
            return Err(match of {
                CalendarOf::Room(id) => StoreError::UnknownRoom(id.clone()),
                CalendarOf::Client(id) => StoreError::UnknownClient(id.clone()),
                CalendarOf::Engineer(id) => StoreError::UnknownEngineer(id.clone()),
            });
        }
        let label = label.map(|l| super::clean_text("label", crate::domain::TextKind::Line, l)).transpose()?.filter(|l| !l.is_empty());
        let label = label.as_deref();
        self.conn().execute(
            "INSERT INTO feed_secrets (id, secret_hash, kind, target, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            params![id, hash, of.kind(), of.id(), label, now.timestamp()],
        )?;
        Ok(FeedRecord { id: id.to_owned(), calendar: of.clone(), label: label.map(str::to_owned), created: instant(now.timestamp())?, revoked: None })
    }

    /// Revokes a feed; `false` when there is no such feed or it was already revoked.
    pub fn revoke_feed(&mut self, id: &str, now: DateTime<Utc>) -> Result<bool> {
        let changed = self
            .conn()
            .execute("UPDATE feed_secrets SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", params![now.timestamp(), id])?;
        Ok(changed == 1)
    }
}
