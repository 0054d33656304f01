//! The bookings' tools: query them a page at a time, read one with its history, find free slots,
//! book (one session or a series, with a hold), edit in place, move and cancel. Each write is one
//! store transaction, checked as a new booking is and recorded as the caller's.

use super::super::wire::{self, *};
use super::{cancel_scope, plural, room_id, status, time, Call, ToolError};
use crate::availability::{self, SlotQuery};
use crate::domain::{BookingId, ClientId, EngineerId, List, SeriesId, Session, Status, MAX_PEOPLE};
use crate::store::{BookingEdit, BookingQuery, StoreError};
use chrono::Duration;

/// Cursors are versioned so that a change of paging never misreads an old one.
fn encode_cursor((start, seq): (i64, i64)) -> String {
    format!("c1.{start:x}.{seq:x}")
}

fn decode_cursor(text: &str) -> Result<(i64, i64), ToolError> {
    let bad = || ToolError::Fix("cursor: not a cursor this server gave; pass next_cursor unchanged, or leave it out to start over".into());
    let rest = text.strip_prefix("c1.").ok_or_else(bad)?;
    let (start, seq) = rest.split_once('.').ok_or_else(bad)?;
    Ok((i64::from_str_radix(start, 16).map_err(|_| bad())?, i64::from_str_radix(seq, 16).map_err(|_| bad())?))
}

pub fn query_bookings(ctx: &Call<'_>, a: QueryBookingsArgs) -> Result<(BookingsPage, String), ToolError> {
    let limit = a.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ToolError::Fix("limit must be 1 to 500".into()));
    }
    let after = a.cursor.as_deref().map(decode_cursor).transpose()?;
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let from = a.from.as_deref().map(|t| time(&tz, "from", t)).transpose()?;
        let to = a.to.as_deref().map(|t| time(&tz, "to", t)).transpose()?;
        if let (Some(from), Some(to)) = (from, to)
            && to <= from {
                return Err(ToolError::Fix("to must be after from".into()));
            }
        let query = BookingQuery {
            from,
            to,
            room: a.room.as_deref().map(room_id),
            client: a.client.as_deref().map(|c| ClientId::new(c.trim())),
            engineer: a.engineer.as_deref().map(|e| EngineerId::new(e.trim())),
            series: a.series.as_deref().map(|s| SeriesId::new(s.trim())),
            statuses: Some(match a.status {
                Some(s) => vec![status(s)],
                None => vec![Status::Confirmed, Status::Tentative],
            }),
            after,
            // One more than asked tells whether another page follows.
            limit: limit as usize + 1,
        };
        store.require_known(query.room.as_ref(), query.client.as_ref(), query.engineer.as_ref())?;
        if let Some(series) = &query.series
            && store.series(series)?.is_none() {
                return Err(StoreError::UnknownSeries(series.clone()).into());
            }
        let mut rows = store.query_bookings_shared(&query)?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = if more { rows.last().map(|(_, position)| encode_cursor(*position)) } else { None };
        let bookings: Vec<_> = rows.into_iter().map(|(b, _)| b).collect();
        let summary = format!("{}{}.", plural(bookings.len(), "booking", "bookings"), if more { "; more on the next page" } else { "" });
        Ok((BookingsPage { tz, bookings, next_cursor }, summary))
    })
}

pub fn get_booking(ctx: &Call<'_>, a: IdArgs) -> Result<(BookingDetailOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let id = BookingId::new(a.id.trim());
        let b = store.booking(&id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        let series = match &b.series {
            Some(series_id) => {
                let s = store.series(series_id)?.ok_or_else(|| StoreError::UnknownSeries(series_id.clone()))?;
                let query = BookingQuery {
                    series: Some(series_id.clone()),
                    statuses: Some(vec![Status::Confirmed, Status::Tentative]),
                    limit: 10_000,
                    ..Default::default()
                };
                let active = store.query_bookings(&query)?.len() as u32;
                Some(SeriesOut { id: s.id.0, rrule: s.rrule, active_sessions: active })
            }
            None => None,
        };
        let history: Vec<_> = store.booking_history(&id)?.iter().map(|m| wire::history(&tz, m)).collect();
        let events = crate::store::EventQuery { entity: Some(crate::store::Entity::Booking), id: Some(id.0.clone()), limit: 10_000, ..Default::default() };
        let changes: Vec<_> = store.events(&events)?.iter().map(|e| wire::event(&tz, e)).collect();
        let summary = format!(
            "{} in {} from {} to {} ({}).",
            b.id, b.room, tz.format(b.start), tz.format(b.end), b.status
        );
        let payments = store.payments(&id)?.iter().map(|p| payment(&tz, p)).collect();
        Ok((BookingDetailOut { booking: wire::booking(&tz, &b), series, reflow_history: history, history: changes, payments }, summary))
    })
}

pub fn find_free_slots(ctx: &Call<'_>, a: FindFreeSlotsArgs) -> Result<(SlotsPage, String), ToolError> {
    if !(15..=1440).contains(&a.duration_minutes) {
        return Err(ToolError::Fix("duration_minutes must be 15 to 1440".into()));
    }
    let limit = a.limit.unwrap_or(20);
    if !(1..=200).contains(&limit) {
        return Err(ToolError::Fix("limit must be 1 to 200".into()));
    }
    let party_size = a.party_size.unwrap_or(1);
    if !(1..=MAX_PEOPLE).contains(&party_size) {
        return Err(ToolError::Fix(format!("party_size must be 1 to {MAX_PEOPLE}")));
    }
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (from, to) = (time(&tz, "from", &a.from)?, time(&tz, "to", &a.to)?);
        let query = SlotQuery {
            from,
            to,
            length: Duration::minutes(a.duration_minutes.into()),
            party_size,
            requires: crate::domain::normalize_features(a.requires.strings()),
            room: a.room.as_deref().map(room_id),
            client: a.client.as_deref().map(|c| ClientId::new(c.trim())),
            engineer: a.engineer.as_deref().map(|e| EngineerId::new(e.trim())),
            limit: limit as usize,
        };
        let slots = availability::find_free_slots(store, &query)?;
        let summary = match slots.first() {
            Some(first) => format!("{}; the earliest is {} in {}.", plural(slots.len(), "free slot", "free slots"), tz.format(first.start), first.room),
            None => "No free slot fits: widen the time range, shorten the session or relax the requirements.".to_owned(),
        };
        Ok((SlotsPage { tz, slots }, summary))
    })
}

pub fn create_booking(ctx: &Call<'_>, a: CreateBookingArgs) -> Result<(CreatedOut, String), ToolError> {
    let request = serde_json::to_string(&a).map_err(|e| ToolError::Internal(e.to_string()))?;
    ctx.writing(|store| {
        let tz = store.studio()?.tz;
        let (start, end) = (time(&tz, "start", &a.start)?, time(&tz, "end", &a.end)?);
        let hold_until = a.hold_until.as_deref().map(|t| time(&tz, "hold_until", t)).transpose()?;
        let new = Session {
            room: room_id(&a.room),
            client: ClientId::new(a.client.trim()),
            engineer: a.engineer.as_deref().map(|e| EngineerId::new(e.trim())),
            start,
            end,
            party_size: a.party_size.unwrap_or(1),
            requires: a.requires.strings(),
            engineer_skills: a.engineer_skills.strings(),
            status: a.status.map_or(Status::Confirmed, status),
            pinned: false,
        };
        // A single session without a key is its transaction's one write, which may then commit
        // with it (`Store::create_booking_as`).
        let alone = a.recurrence.is_none() && a.idempotency_key.is_none();
        let (bookings, series, replayed) = if alone {
            (vec![store.create_booking_as(&ctx.actor(), &new, a.notes.as_deref(), hold_until)?], None, false)
        } else {
            store.write_as(&ctx.actor(), |w| {
                if let Some(key) = &a.idempotency_key
                    && let Some(earlier) = w.idempotent_replay(key, &request)? {
                        let series = earlier.first().and_then(|b| b.series.clone());
                        return Ok((earlier, series, true));
                    }
                let (bookings, series) = match &a.recurrence {
                    Some(rule) => {
                        let (series, sessions) = w.create_series_with(None, rule, &new, a.notes.as_deref(), hold_until)?;
                        (sessions, Some(series.id))
                    }
                    None => (vec![w.create_booking_with(&new, a.notes.as_deref(), hold_until)?], None),
                };
                if let Some(key) = &a.idempotency_key {
                    w.remember_idempotent(key, &request, &bookings)?;
                }
                Ok((bookings, series, false))
            })?
        };
        let first = &bookings[0];
        let summary = match &series {
            Some(s) => format!("Booked series {s}: {} in {}, first at {}.", plural(bookings.len(), "session", "sessions"), first.room, tz.format(first.start)),
            None => format!("Booked {} in {} from {} to {}.", first.id, first.room, tz.format(first.start), tz.format(first.end)),
        };
        let summary = if replayed { format!("Already done earlier with this idempotency_key. {summary}") } else { summary };
        Ok((CreatedOut { bookings: bookings.iter().map(|b| wire::booking(&tz, b)).collect(), series: series.map(|s| s.0), replayed }, summary))
    })
}

pub fn cancel_booking(ctx: &Call<'_>, a: CancelBookingArgs) -> Result<(CancelledOut, String), ToolError> {
    let scope = cancel_scope(a.scope);
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let id = BookingId::new(a.id.trim());
        let cancelled = store.write_as(&ctx.actor(), |w| w.cancel_booking(&id, scope))?;
        let summary = format!("Cancelled {}.", plural(cancelled.len(), "booking", "bookings"));
        Ok((CancelledOut { cancelled: cancelled.iter().map(|b| wire::booking(&tz, b)).collect() }, summary))
    })
}

pub fn move_booking(ctx: &Call<'_>, a: MoveBookingArgs) -> Result<(MovedOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let id = BookingId::new(a.id.trim());
        let start = time(&tz, "start", &a.start)?;
        let moved = store.write_as(&ctx.actor(), |w| {
            // Read where it is inside the transaction: someone may move it meanwhile.
            let current = w.booking(&id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
            let room = a.room.as_deref().map_or_else(|| current.room.clone(), room_id);
            w.move_booking(&id, &room, start)
        })?;
        let summary = format!("Moved {} to {} from {} to {}.", moved.id, moved.room, tz.format(moved.start), tz.format(moved.end));
        Ok((MovedOut { booking: wire::booking(&tz, &moved) }, summary))
    })
}

pub fn update_booking(ctx: &Call<'_>, a: UpdateBookingArgs) -> Result<(UpdatedOut, String), ToolError> {
    let scope = cancel_scope(a.scope);
    let nothing = a.engineer.is_none()
        && a.party_size.is_none()
        && a.requires.is_none()
        && a.engineer_skills.is_none()
        && a.notes.is_none()
        && a.status.is_none()
        && a.pinned.is_none()
        && a.hold_until.is_none();
    if nothing {
        return Err(ToolError::Fix(
            "give at least one field to change: engineer, party_size, requires, engineer_skills, notes, status, pinned or hold_until".into(),
        ));
    }
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let blank = |t: &str| t.trim().is_empty();
        let edit = BookingEdit {
            engineer: a.engineer.as_ref().map(|e| e.as_deref().map(EngineerId::new)),
            party_size: a.party_size,
            requires: a.requires.as_ref().map(List::strings),
            engineer_skills: a.engineer_skills.as_ref().map(List::strings),
            notes: a.notes.as_deref().map(|n| (!n.is_empty()).then(|| n.to_owned())),
            status: a.status.map(status),
            pinned: a.pinned,
            hold_until: match a.hold_until.as_deref() {
                None => None,
                Some(t) if blank(t) => Some(None),
                Some(t) => Some(Some(time(&tz, "hold_until", t)?)),
            },
        };
        let id = BookingId::new(a.id.trim());
        let updated = store.write_as(&ctx.actor(), |w| w.update_booking(&id, &edit, scope))?;
        let summary = match updated.as_slice() {
            [one] => format!("Updated {} ({}, {} in {}).", one.id, one.status, tz.format(one.start), one.room),
            many => format!("Updated {} of the series.", plural(many.len(), "booking", "bookings")),
        };
        Ok((UpdatedOut { bookings: updated.iter().map(|b| wire::booking(&tz, b)).collect() }, summary))
    })
}

pub fn record_payment(ctx: &Call<'_>, a: RecordPaymentArgs) -> Result<(PaymentRecordedOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let id = BookingId::new(a.booking.trim());
        let recorded = store.write_as(&ctx.actor(), |w| w.record_payment(&id, a.amount, a.reference.as_deref()))?;
        let currency = store.settings()?.currency;
        let b = &recorded.booking;
        let then = if recorded.confirmed {
            " The deposit is covered: the hold is cleared and the booking confirmed.".to_owned()
        } else if b.hold_until.is_some() {
            format!(" The deposit of {} is not covered yet: the hold stays.", b.money.deposit_due)
        } else {
            String::new()
        };
        let summary = format!(
            "Recorded {} {currency} (minor units) for {}: paid {} of {}.{then}",
            recorded.payment.amount,
            b.id,
            b.money.paid,
            b.money.price.unwrap_or(0)
        );
        Ok((PaymentRecordedOut { payment: payment(&tz, &recorded.payment), booking: wire::booking(&tz, b), confirmed: recorded.confirmed }, summary))
    })
}

fn payment(tz: &crate::domain::StudioTz, p: &crate::store::Payment) -> PaymentOut {
    PaymentOut { id: p.id, booking: p.booking.0.clone(), amount: p.amount, reference: p.reference.clone(), at: tz.format(p.at) }
}
