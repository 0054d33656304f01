//! Changes to what is already booked: editing a booking (or the rest of its series), holds and
//! their release, a reflow's moves with what they displaced, undoing a reflow, and ending an
//! offline window early. Each is one [`Writer`] step with its checks and its history events.

use super::db::{self, params, OptionalExtension};
use super::events::{self, Action, Entity};
use super::read::{self, booking_from_row, BOOKING_COLUMNS, HOLDS_ITS_PLACE};
use super::reflows::move_at;
use super::rules::{self, CancelScope, ScopeFor};
use super::waitlist::Freed;
use super::{check_people, clean_list, instant_at, to_json_list, Result, StoreError, UndoRefusal, Writer};
use crate::domain::{normalize_features, Booking, BookingId, EngineerId, Move, OfflineWindow, RoomId, Session, Status, TextKind};
use chrono::{DateTime, Utc};

/// What to change of a booking; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct BookingEdit {
    /// `Some(None)` takes the engineer off.
    pub engineer: Option<Option<EngineerId>>,
    pub party_size: Option<u32>,
    pub requires: Option<Vec<String>>,
    /// What any engineer of the session must be able to do (replaces the old list).
    pub engineer_skills: Option<Vec<String>>,
    /// `Some(None)` clears the notes.
    pub notes: Option<Option<String>>,
    /// Confirmed or tentative; cancelling is `cancel_booking`'s.
    pub status: Option<Status>,
    pub pinned: Option<bool>,
    /// `Some(None)` clears the hold.
    pub hold_until: Option<Option<DateTime<Utc>>>,
}

/// A reflow taken back: the bookings as they are again.
#[derive(Debug, Clone)]
pub struct Undone {
    pub reflow: String,
    pub restored: Vec<Booking>,
}

/// An offline window removed, and the bookings a reflow moved out of it that could go back.
#[derive(Debug, Clone)]
pub struct WindowRemoved {
    pub window: OfflineWindow,
    /// Each booking where it is now, and the move that took it from the place it could return to.
    pub could_return: Vec<(Booking, Move)>,
    /// Bookings the window displaced that cannot take their place back (while they held nothing,
    /// their room or people were booked): they stay displaced, flagged, until someone moves them.
    pub still_displaced: Vec<Booking>,
}

impl super::Store {
    /// Whether some hold has ended by `now`: a read, so that the server's sweeper takes the write
    /// lock only when there is something to release.
    pub fn has_expired_holds(&self, now: DateTime<Utc>) -> Result<bool> {
        Ok(self
            .conn()
            .prepare_cached("SELECT 1 FROM bookings WHERE hold_until IS NOT NULL AND hold_until <= ? AND status = 'tentative' LIMIT 1")?
            .query_row([now.timestamp()], |_| Ok(()))
            .optional()?
            .is_some())
    }
}

impl Writer<'_> {
    /// Edits a booking, or the following sessions or the whole rest of its series, each checked
    /// exactly as a new booking is. A displaced booking holds nothing, so only its people are
    /// checked; it stays displaced until it is moved.
    pub fn update_booking(&mut self, id: &BookingId, edit: &BookingEdit, scope: CancelScope) -> Result<Vec<Booking>> {
        let booking = read::booking(&self.tx, id)?.ok_or_else(|| StoreError::UnknownBooking(id.clone()))?;
        if edit.status == Some(Status::Cancelled) {
            return Err(StoreError::EditCancels);
        }
        if let Some(party) = edit.party_size {
            check_people("party_size", party)?;
        }
        let requires = edit.requires.as_deref().map(|r| clean_list("requires", TextKind::Tag, r)).transpose()?;
        let engineer_skills = edit.engineer_skills.as_deref().map(|r| clean_list("engineer_skills", TextKind::Tag, r)).transpose()?;
        let notes = match &edit.notes {
            Some(n) => Some(rules::clean_notes(n.as_deref())?),
            None => None,
        };
        let now = self.now();
        let tz = self.studio()?.tz;
        let mut updated = Vec::new();
        for target in rules::scope_ids(&self.tx, &booking, scope, now, ScopeFor::Edit)? {
            let before = read::booking(&self.tx, &target)?.ok_or_else(|| StoreError::UnknownBooking(target.clone()))?;
            let session = Session {
                engineer: edit.engineer.clone().unwrap_or_else(|| before.engineer.clone()),
                party_size: edit.party_size.unwrap_or(before.party_size),
                requires: normalize_features(requires.clone().unwrap_or_else(|| before.requires.clone())),
                engineer_skills: normalize_features(engineer_skills.clone().unwrap_or_else(|| before.engineer_skills.clone())),
                status: edit.status.unwrap_or(before.status),
                pinned: edit.pinned.unwrap_or(before.pinned),
                ..before.session.clone()
            };
            // Confirming a hold ends it; any other change keeps it unless asked.
            let hold_until = match (&edit.hold_until, session.status) {
                (Some(hold), _) => *hold,
                (None, Status::Confirmed) => None,
                (None, _) => before.hold_until,
            };
            rules::check_hold(now, session.status, hold_until, session.start)
                .map_err(|e| if edit.hold_until.is_some() { e } else { StoreError::invalid("hold_until", "hold_until: the booking's hold has passed; give a new one or confirm it") })?;
            if !before.displaced {
                rules::check(&self.tx, &tz, &session, Some(&target))?;
            } else if let Some(engineer) = &session.engineer {
                rules::check_engineer(&self.tx, engineer, Some(&before))?;
                if before.engineer.as_ref() != Some(engineer) || before.engineer_skills != session.engineer_skills {
                    rules::check_engineer_skills(&self.tx, engineer, &session.engineer_skills)?;
                }
            }
            self.tx.execute(
                "UPDATE bookings SET engineer_id = ?, party_size = ?, requires = ?, status = ?, pinned = ?, notes = ?, hold_until = ?, \
                 updated_at = ?, engineer_skills = ? WHERE id = ?",
                params![
                    session.engineer.as_ref().map(|e| e.as_str()),
                    session.party_size,
                    to_json_list(&session.requires),
                    session.status.as_str(),
                    session.pinned,
                    notes.clone().unwrap_or_else(|| before.notes.clone()),
                    hold_until.map(|t| t.timestamp()),
                    Utc::now().timestamp(),
                    to_json_list(&session.engineer_skills),
                    target.as_str()
                ],
            )?;
            if session.engineer != before.engineer {
                self.price_booking(&target, super::prices::Pricing::Changed)?;
            }
            updated.push(self.booking_event(Some(&before), &target, Action::Updated)?);
        }
        Ok(updated)
    }

    /// Cancels every tentative booking whose hold ended by `now`: the slot is free again.
    pub fn release_expired_holds(&mut self, now: DateTime<Utc>) -> Result<Vec<Booking>> {
        let sql = format!(
            "SELECT {BOOKING_COLUMNS} FROM bookings WHERE hold_until IS NOT NULL AND hold_until <= ? AND status = 'tentative' ORDER BY hold_until, seq"
        );
        let expired: Vec<Booking> = {
            let mut stmt = self.tx.prepare_cached(&sql)?;
            let rows = stmt.query_map([now.timestamp()], booking_from_row)?;
            rows.map(|r| r.map(|(b, _)| b)).collect::<db::Result<_>>()?
        };
        let mut released = Vec::with_capacity(expired.len());
        for b in &expired {
            self.tx.execute(
                "UPDATE bookings SET status = 'cancelled', hold_until = NULL, updated_at = ? WHERE id = ?",
                params![Utc::now().timestamp(), b.id.as_str()],
            )?;
            released.push(self.booking_event(Some(b), &b.id, Action::HoldReleased)?);
        }
        // A lapsed hold (a waitlist offer too) frees its place for the next in line.
        let freed: Vec<Freed> = released.iter().map(Freed::place_of).collect();
        self.offer_freed(&freed)?;
        Ok(released)
    }

    /// Applies a recorded reflow's moves: notes which bookings were flagged displaced before (an
    /// undo flags them again), moves them all (which clears the flag), and records each move as
    /// done through the reflow.
    pub fn apply_reflow_moves(&mut self, reflow_id: &str, moves: &[Move]) -> Result<()> {
        for m in moves {
            let was = read::booking(&self.tx, &m.booking)?.is_some_and(|b| b.displaced);
            self.tx.execute(
                "UPDATE reflow_moves SET was_displaced = ? WHERE reflow_id = ? AND booking_id = ?",
                params![was, reflow_id, m.booking.as_str()],
            )?;
        }
        let via = self.set_via(format!("reflow {reflow_id}"));
        let applied = self.apply_moves(moves);
        self.set_via(via);
        let before = applied?;
        let freed: Vec<Freed> = before.iter().map(Freed::place_of).collect();
        let change = events::diff(None, Some(events::fields([("moves", serde_json::json!(moves.len()))])));
        self.event(Entity::Reflow, reflow_id, Action::Applied, change)?;
        // The places the moves left (those not offline) may be someone's on the waitlist.
        self.offer_freed(&freed)?;
        Ok(())
    }

    /// Puts back every booking a reflow moved, if none changed since and each old place is free
    /// again (set all, then check all, so that swaps go back too). A booking that was displaced
    /// before the reflow goes back displaced. At most once; the undo is recorded.
    pub fn undo_reflow(&mut self, reflow_id: &str) -> Result<Undone> {
        self.check_undoable(reflow_id)?;
        let moves = self.undo_moves(reflow_id)?;
        let before = self.bookings_as_moved(reflow_id, &moves)?;
        self.put_back(reflow_id, &moves)?;
        let via = self.set_via(format!("undo {reflow_id}"));
        let mut restored = Vec::with_capacity(moves.len());
        for ((m, _), b) in moves.iter().zip(&before) {
            restored.push(self.booking_event(Some(b), &m.booking, Action::MovedBack)?);
        }
        self.set_via(via);
        self.tx.execute(
            "UPDATE reflows SET undone_at = ?, undone_by = ? WHERE id = ?",
            params![self.now().timestamp(), self.actor().who, reflow_id],
        )?;
        let change = events::diff(None, Some(events::fields([("moves_undone", serde_json::json!(moves.len()))])));
        self.event(Entity::Reflow, reflow_id, Action::Undone, change)?;
        let freed: Vec<Freed> = before.iter().map(Freed::place_of).collect();
        self.offer_freed(&freed)?;
        Ok(Undone { reflow: reflow_id.to_owned(), restored })
    }

    /// Refuses to undo a reflow that is unknown, was never applied, or was undone already.
    fn check_undoable(&self, reflow_id: &str) -> Result<()> {
        let head: Option<(bool, Option<i64>)> = self
            .tx
            .query_row("SELECT applied, undone_at FROM reflows WHERE id = ?", [reflow_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        let reflow = reflow_id.to_owned();
        match head {
            None => Err(StoreError::Undo(UndoRefusal::Unknown { reflow })),
            Some((false, _)) => Err(StoreError::Undo(UndoRefusal::NeverApplied { reflow })),
            Some((true, Some(_))) => Err(StoreError::Undo(UndoRefusal::AlreadyUndone { reflow })),
            Some((true, None)) => Ok(()),
        }
    }

    /// A reflow's moves, each with whether its booking was flagged displaced before it.
    fn undo_moves(&self, reflow_id: &str) -> Result<Vec<(Move, bool)>> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT booking_id, from_room, from_start, from_end, to_room, to_start, to_end, from_engineer, to_engineer, was_displaced \
             FROM reflow_moves WHERE reflow_id = ? ORDER BY booking_id",
        )?;
        let rows = stmt.query_map([reflow_id], |row| Ok((move_at(row, 0)?, row.get(9)?)))?;
        Ok(rows.collect::<db::Result<_>>()?)
    }

    /// The bookings of `moves` as they are, each still where the reflow put it; refused, naming
    /// them, when any changed since.
    fn bookings_as_moved(&self, reflow_id: &str, moves: &[(Move, bool)]) -> Result<Vec<Booking>> {
        let mut before = Vec::with_capacity(moves.len());
        let mut changed = Vec::new();
        for (m, _) in moves {
            match read::booking(&self.tx, &m.booking)? {
                Some(b)
                    if b.is_active()
                        && b.room == m.to_room
                        && b.start == m.to_start
                        && b.end == m.to_end
                        && !b.displaced
                        && (!m.changes_engineer() || b.engineer == m.to_engineer) =>
                {
                    before.push(b)
                }
                _ => changed.push(m.booking.clone()),
            }
        }
        if !changed.is_empty() {
            return Err(StoreError::Undo(UndoRefusal::Changed { reflow: reflow_id.to_owned(), bookings: changed }));
        }
        Ok(before)
    }

    /// Sets every booking of `moves` back in its old place (flagged displaced again where it was),
    /// then checks each that was not displaced there; refused, naming them, when any cannot go back.
    fn put_back(&mut self, reflow_id: &str, moves: &[(Move, bool)]) -> Result<()> {
        for (m, was_displaced) in moves {
            self.set_place(&m.booking, &m.from_room, m.from_start, m.from_end)?;
            if m.changes_engineer() {
                self.set_engineer(&m.booking, m.from_engineer.as_ref())?;
            }
            if *was_displaced {
                self.tx.execute("UPDATE bookings SET displaced = 1 WHERE id = ?", [m.booking.as_str()])?;
            }
        }
        let tz = self.studio()?.tz;
        let mut blocked = Vec::new();
        for (m, was_displaced) in moves {
            if *was_displaced {
                continue;
            }
            let b = read::booking(&self.tx, &m.booking)?.ok_or_else(|| StoreError::UnknownBooking(m.booking.clone()))?;
            if let Err(e) = rules::check(&self.tx, &tz, &b.session, Some(&m.booking)) {
                if e.is_ours() {
                    return Err(e);
                }
                blocked.push((m.booking.clone(), e));
            }
        }
        if !blocked.is_empty() {
            return Err(StoreError::Undo(UndoRefusal::Blocked { reflow: reflow_id.to_owned(), blocked }));
        }
        Ok(())
    }

    /// Removes an offline window (a repair that ended early) and says which bookings an applied
    /// reflow moved out of it could now go back: each still where the reflow put it, with its old
    /// place free.
    pub fn remove_offline_window(&mut self, id: i64) -> Result<WindowRemoved> {
        let window = self
            .tx
            .query_row("SELECT room_id, from_at, to_at, reason FROM offline_windows WHERE id = ?", [id], |row| {
                Ok(OfflineWindow { id, room: RoomId(row.get(0)?), from: instant_at(row, 1)?, to: instant_at(row, 2)?, reason: row.get(3)? })
            })
            .optional()?
            .ok_or(StoreError::UnknownWindow(id))?;
        self.tx.execute("DELETE FROM offline_windows WHERE id = ?", [id])?;
        let tz = self.studio()?.tz;
        self.event(Entity::OfflineWindow, &id.to_string(), Action::Removed, events::diff(Some(events::window_fields(&tz, &window)), None))?;
        let still_displaced = self.keep_displaced(&window)?;
        let candidates: Vec<Move> = {
            let mut stmt = self.tx.prepare_cached(
                "SELECT m.booking_id, m.from_room, m.from_start, m.from_end, m.to_room, m.to_start, m.to_end, m.from_engineer, m.to_engineer \
                 FROM reflow_moves m JOIN reflows r ON r.id = m.reflow_id \
                 WHERE r.applied = 1 AND r.undone_at IS NULL AND m.from_room = ? AND m.from_start < ? AND m.from_end > ? \
                 ORDER BY m.from_start, m.booking_id",
            )?;
            let rows = stmt.query_map(params![window.room.as_str(), window.to.timestamp(), window.from.timestamp()], |row| move_at(row, 0))?;
            rows.collect::<db::Result<_>>()?
        };
        let mut could_return = Vec::new();
        for m in candidates {
            let Some(b) = read::booking(&self.tx, &m.booking)? else { continue };
            let still_there = b.is_active() && !b.displaced && b.room == m.to_room && b.start == m.to_start && b.end == m.to_end;
            if !still_there || could_return.iter().any(|(c, _): &(Booking, Move)| c.id == b.id) {
                continue;
            }
            let back = Session { room: m.from_room.clone(), start: m.from_start, end: m.from_end, ..b.session.clone() };
            if rules::check(&self.tx, &tz, &back, Some(&b.id)).is_ok() {
                could_return.push((b, m));
            }
        }
        // The room's time is free again: the waitlist may take it, and then what could go back
        // is only what still fits.
        let freed = Freed { room: Some(window.room.clone()), engineer: None, from: window.from, to: window.to };
        if !self.offer_freed(&[freed])?.is_empty() {
            could_return.retain(|(b, m)| {
                let back = Session { room: m.from_room.clone(), start: m.from_start, end: m.from_end, ..b.session.clone() };
                rules::check(&self.tx, &tz, &back, Some(&b.id)).is_ok()
            });
        }
        Ok(WindowRemoved { window, could_return, still_displaced })
    }

    /// The bookings of the room that the removed `window` displaced and no other window still
    /// does: each takes its place back if it still fits, or is flagged displaced, so that removing
    /// a window never puts two bookings in one room, or one person in two places. Bookings that
    /// started before now are left as they are.
    fn keep_displaced(&mut self, window: &OfflineWindow) -> Result<Vec<Booking>> {
        let now = self.studio()?.now(Utc::now());
        let revived: Vec<Booking> = {
            let sql = format!(
                "SELECT {BOOKING_COLUMNS} FROM bookings b WHERE room_id = ? AND {HOLDS_ITS_PLACE} \
                 AND start_at < ? AND end_at > ? AND start_at >= ? ORDER BY start_at, seq"
            );
            let mut stmt = self.tx.prepare_cached(&sql)?;
            let args = params![window.room.as_str(), window.to.timestamp(), window.from.timestamp(), now.timestamp()];
            let rows = stmt.query_map(args, booking_from_row)?;
            rows.map(|row| row.map(|(b, _)| b)).collect::<db::Result<_>>()?
        };
        let tz = self.studio()?.tz;
        let mut displaced = Vec::new();
        for b in revived {
            match rules::check(&self.tx, &tz, &b.session, Some(&b.id)) {
                Ok(()) => {}
                // Its room, people or rules no longer have it (a room retired meanwhile counts too).
                Err(StoreError::Refused(_) | StoreError::Inactive { .. }) => {
                    self.tx.execute("UPDATE bookings SET displaced = 1, updated_at = ? WHERE id = ?", params![Utc::now().timestamp(), b.id.as_str()])?;
                    displaced.push(self.booking_event(Some(&b), &b.id, Action::Displaced)?);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(displaced)
    }
}
