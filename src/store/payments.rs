//! Money received for a booking: a payment is a row of its own and an event of the booking, and
//! the booking keeps the sum paid beside its price and deposit. A payment that covers the deposit
//! of a booking on hold confirms it and clears the hold, in the same transaction. It prices
//! nothing: a booking's price is set when it is made or changed (`prices.rs`).

use super::db::{self, params};
use super::events::{self, Action, Entity};
use super::read;
use super::{clean_text, instant_at, Result, Store, StoreError, Writer};
use crate::domain::{check_amount, Booking, BookingId, Status, TextKind};
use chrono::{DateTime, Utc};
use serde_json::json;

/// One payment, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Payment {
    pub id: i64,
    pub booking: BookingId,
    /// In minor units of the studio's currency.
    pub amount: i64,
    /// The payer's or the bank's reference, as given.
    pub reference: Option<String>,
    /// When it was recorded, by the studio's clock.
    pub at: DateTime<Utc>,
}

/// A payment recorded, and the booking after it.
#[derive(Debug, Clone)]
pub struct PaymentRecorded {
    pub payment: Payment,
    pub booking: Booking,
    /// Whether this payment covered the deposit of a booking on hold, which is now confirmed.
    pub confirmed: bool,
}

impl Store {
    /// The payments of a booking, oldest first.
    pub fn payments(&self, booking: &BookingId) -> Result<Vec<Payment>> {
        let mut stmt = self.conn().prepare_cached("SELECT id, booking_id, amount, reference, at FROM payments WHERE booking_id = ? ORDER BY id")?;
        let rows = stmt.query_map([booking.as_str()], |row| {
            Ok(Payment { id: row.get(0)?, booking: BookingId(row.get(1)?), amount: row.get(2)?, reference: row.get(3)?, at: instant_at(row, 4)? })
        })?;
        Ok(rows.collect::<db::Result<_>>()?)
    }
}

impl Writer<'_> {
    /// Records `amount` received for booking `id`. Refused when the booking is unknown or
    /// cancelled, has no price kept, or the amount is more than is still owed on it (its price
    /// less what was paid). When what is paid covers the deposit of a booking on hold, the hold is
    /// cleared and the booking confirmed (an event of its own).
    pub fn record_payment(&mut self, id: &BookingId, amount: i64, reference: Option<&str>) -> Result<PaymentRecorded> {
        check_amount("amount", amount).map_err(|m| StoreError::invalid("amount", m))?;
        let reference = match reference {
            Some(r) => Some(clean_text("reference", TextKind::Line, r)?).filter(|r| !r.is_empty()),
            None => None,
        };
        let before = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        if before.status == Status::Cancelled {
            return Err(StoreError::invalid("booking", format!("booking: {id} is cancelled: nothing is owed on it")));
        }
        let Some(price) = before.money.price else {
            return Err(StoreError::invalid("booking", format!("booking: {id} was booked before prices were kept: it has no price to pay")));
        };
        let owed = before.money.owed();
        if amount > owed {
            return Err(StoreError::invalid(
                "amount",
                format!("amount: {amount} is more than the {owed} still owed on {id} (price {price}, paid {}): record at most {owed}", before.money.paid),
            ));
        }
        let at = self.now();
        let payment_id: i64 = self.tx.query_row(
            "INSERT INTO payments (booking_id, amount, reference, at, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
            params![id.as_str(), amount, reference.as_deref(), at.timestamp(), Utc::now().timestamp()],
            |row| row.get(0),
        )?;
        let paid = before.money.paid + amount;
        self.tx.execute("UPDATE bookings SET paid = ?, updated_at = ? WHERE id = ?", params![paid, Utc::now().timestamp(), id.as_str()])?;
        let change = events::diff(
            Some(events::fields([("paid", json!(before.money.paid))])),
            Some(events::fields([("paid", json!(paid)), ("payment", json!(payment_id)), ("amount", json!(amount)), ("reference", json!(reference))])),
        );
        self.event(Entity::Booking, id.as_str(), Action::PaymentRecorded, change)?;
        let paid_booking = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        let confirmed = paid_booking.status == Status::Tentative && paid_booking.hold_until.is_some() && paid_booking.money.deposit_covered();
        let booking = if confirmed {
            self.tx.execute(
                "UPDATE bookings SET status = 'confirmed', hold_until = NULL, updated_at = ? WHERE id = ?",
                params![Utc::now().timestamp(), id.as_str()],
            )?;
            self.booking_event(Some(&paid_booking), id, Action::Confirmed)?
        } else {
            paid_booking
        };
        let payment = Payment { id: payment_id, booking: id.clone(), amount, reference, at };
        Ok(PaymentRecorded { payment, booking, confirmed })
    }
}
