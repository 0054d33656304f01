//! Idempotency keys: the answer remembered for a write sent with a key, stored in the write's own
//! transaction, so that a retried request (after a lost answer or connection) returns the bookings
//! it made instead of booking again, and a key reused for another request is refused.

use super::db::{params, Connection, OptionalExtension};
use super::{read, Result, StoreError, Writer};
use crate::domain::{Booking, BookingId};
use chrono::Utc;

/// The answer remembered for an idempotency key: the request it answered and the bookings it wrote.
fn remembered(conn: &Connection, key: &str) -> Result<Option<(String, Vec<BookingId>)>> {
    let row: Option<String> = conn
        .prepare_cached("SELECT response FROM idempotency_keys WHERE key = ?")?
        .query_row([key], |row| row.get(0))
        .optional()?;
    let Some(text) = row else { return Ok(None) };
    let value: (String, Vec<String>) = serde_json::from_str(&text)
        .map_err(|e| StoreError::Corrupt(format!("idempotency key {key}: {e}")))?;
    Ok(Some((value.0, value.1.into_iter().map(BookingId).collect())))
}

fn remember(conn: &Connection, key: &str, request: &str, ids: &[BookingId]) -> Result<()> {
    let ids: Vec<&str> = ids.iter().map(BookingId::as_str).collect();
    let text = serde_json::to_string(&(request, ids)).expect("strings always serialise");
    conn.execute(
        "INSERT INTO idempotency_keys (key, response, created_at) VALUES (?, ?, ?)",
        params![key, text, Utc::now().timestamp()],
    )?;
    Ok(())
}

impl Writer<'_> {
    /// The bookings written earlier under an idempotency key, if the key was used before. A key
    /// reused for a different request is refused, so that a retry never books something else.
    pub fn idempotent_replay(&self, key: &str, request: &str) -> Result<Option<Vec<Booking>>> {
        let Some((earlier, ids)) = remembered(self.conn(), key)? else { return Ok(None) };
        if earlier != request {
            return Err(StoreError::invalid(
                "idempotency_key",
                format!("idempotency_key {key:?} was already used for a different booking: use a new key for a new request"),
            ));
        }
        let mut bookings = Vec::with_capacity(ids.len());
        for id in ids {
            bookings.push(read::booking(self.conn(), &id)?.ok_or(StoreError::UnknownBooking(id))?);
        }
        Ok(Some(bookings))
    }

    /// Remembers what a request under an idempotency key wrote, in the same transaction.
    pub fn remember_idempotent(&mut self, key: &str, request: &str, bookings: &[Booking]) -> Result<()> {
        let ids: Vec<BookingId> = bookings.iter().map(|b| b.id.clone()).collect();
        remember(self.conn(), key, request, &ids)
    }
}
