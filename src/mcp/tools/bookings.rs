//! Editing a booking in place: its engineer, party, needs, notes, status, pin and hold, for one
//! session or the rest of its series, each checked exactly as a new booking is.

use super::super::wire::{self, *};
use super::{plural, status, time, Call, ToolError};
use crate::domain::{BookingId, EngineerId};
use crate::store::{BookingEdit, CancelScope};

pub fn update_booking(ctx: &Call<'_>, a: UpdateBookingArgs) -> Result<(UpdatedOut, String), ToolError> {
    let scope = match a.scope.unwrap_or(ScopeArg::Occurrence) {
        ScopeArg::Occurrence => CancelScope::Occurrence,
        ScopeArg::Following => CancelScope::Following,
        ScopeArg::Series => CancelScope::Series,
    };
    let nothing = a.engineer.is_none()
        && a.party_size.is_none()
        && a.requires.is_none()
        && a.notes.is_none()
        && a.status.is_none()
        && a.pinned.is_none()
        && a.hold_until.is_none();
    if nothing {
        return Err(ToolError::Fix(
            "give at least one field to change: engineer, party_size, requires, notes, status, pinned or hold_until".into(),
        ));
    }
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let blank = |t: &str| t.trim().is_empty();
        let edit = BookingEdit {
            engineer: a.engineer.as_deref().map(|e| (!blank(e)).then(|| EngineerId::new(e.trim()))),
            party_size: a.party_size,
            requires: a.requires.clone(),
            notes: a.notes.as_deref().map(|n| (!blank(n)).then(|| n.to_owned())),
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
