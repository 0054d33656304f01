//! The rooms' tools: list them, add a room, change or retire one (refused while it would put
//! future bookings out of it, unless forced: then they are displaced, ready for a reflow), take a
//! room offline, list offline windows, and end one early.

use super::super::wire::{self, *};
use super::{names, plural, room_id, span_ahead, time, Call, ToolError, Written};
use crate::availability;
use crate::domain::{check_rate, BookingRules, BookingRulesEdit, Line, List, OfflineWindow, Rate, Room, RoomPrice, WeeklyHours};
use crate::store::{RoomEdit, StoreError};
use chrono::{Duration, Utc};
use std::sync::Arc;

/// `list_rooms`' answer as last written by this connection, with the offline windows it shows:
/// written again only once the studio or a room changes (the cache's version moves) or the
/// windows that have not ended do (one was added, edited or removed, or one ended).
struct KeptRooms {
    windows: Vec<OfflineWindow>,
    answer: Written<RoomsOut>,
    summary: String,
}

pub fn list_rooms(ctx: &Call<'_>, _: NoArgs) -> Result<(Written<RoomsOut>, String), ToolError> {
    ctx.with(|store| {
        let studio = store.studio()?;
        let now = studio.now(Utc::now());
        let windows = availability::current_and_upcoming(store, now)?;
        let kept = store.kept(
            names::LIST_ROOMS,
            |kept: &Arc<KeptRooms>| kept.windows == windows,
            || {
                let rooms: Vec<_> = store
                    .rooms()?
                    .iter()
                    .map(|r| {
                        let own: Vec<_> = windows.iter().filter(|w| w.room == r.id).cloned().collect();
                        wire::room(&studio.tz, r.clone(), &own)
                    })
                    .collect();
                let offline = rooms.iter().filter(|r| !r.offline_windows.is_empty()).count();
                let summary = format!("{} at {}; {} with offline windows.", plural(rooms.len(), "room", "rooms"), studio.name, offline);
                let answer = Written::kept(RoomsOut { rooms }).map_err(|e| ToolError::Internal(format!("writing the rooms: {e}")))?;
                Ok::<_, ToolError>(Arc::new(KeptRooms { windows: windows.clone(), answer, summary }))
            },
        )?;
        Ok((kept.answer.clone(), kept.summary.clone()))
    })
}

pub fn set_room_offline(ctx: &Call<'_>, a: SetRoomOfflineArgs) -> Result<(OfflineOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (from, to) = (time(&tz, "from", &a.from)?, time(&tz, "to", &a.to)?);
        let room = room_id(&a.room);
        let window = store.write_as(&ctx.actor(), |w| w.add_offline_window(&room, from, to, &a.reason))?;
        // A window that met another of the room's is merged with it: report the merged one.
        let merged = window.from != from || window.to != to;
        let (from, to) = (window.from, window.to);
        let affected = availability::affected_by(store, &room, from, to)?;
        let months: std::collections::BTreeSet<String> =
            affected.iter().map(|b| tz.local(b.start).format("%Y-%m").to_string()).collect();
        let next_step = if affected.is_empty() {
            "Nothing to move.".to_owned()
        } else {
            let months: Vec<String> = months.into_iter().collect();
            format!("Run {} for {} with offline_rooms [\"{room}\"] to move them.", names::REFLOW_MONTH, months.join(" and "))
        };
        let summary = format!(
            "{room} is offline from {} to {}{}; {} affected. {next_step}",
            tz.format(from),
            tz.format(to),
            if merged { " (merged with the room's window that met this one)" } else { "" },
            plural(affected.len(), "booking is", "bookings are")
        );
        Ok((
            OfflineOut {
                window: wire::window(&tz, &window),
                affected: affected.len() as u32,
                affected_bookings: affected.iter().map(|b| b.id.0.clone()).collect(),
                next_step,
            },
            summary,
        ))
    })
}

pub fn list_offline_windows(ctx: &Call<'_>, a: ListOfflineWindowsArgs) -> Result<(WindowsOut, String), ToolError> {
    ctx.with(|store| {
        let studio = store.studio()?.clone();
        let tz = studio.tz;
        let (from, to) = span_ahead(&studio, a.from.as_deref(), a.to.as_deref())?;
        let room = a.room.as_deref().map(room_id);
        if let Some(room) = &room {
            store.room(room)?.ok_or_else(|| StoreError::UnknownRoom(room.clone()))?;
        }
        let windows: Vec<_> = store.offline_windows(room.as_ref(), from, to)?.iter().map(|w| wire::window(&tz, w)).collect();
        let summary = format!("{}.", plural(windows.len(), "offline window", "offline windows"));
        Ok((WindowsOut { windows }, summary))
    })
}

fn hours(lines: &[Line]) -> Result<WeeklyHours, ToolError> {
    if lines.is_empty() {
        return Err(ToolError::Fix("opening_hours: give at least one line, e.g. [\"mon-fri 10:00-22:00\"]".into()));
    }
    WeeklyHours::parse(lines).map_err(|e| ToolError::Fix(format!("opening_hours: {e}")))
}

/// A room's rates from outside, each read and checked (their overlap is the store's to refuse).
fn rates(args: &[RateArg]) -> Result<Vec<Rate>, ToolError> {
    args.iter()
        .enumerate()
        .map(|(i, r)| Rate::new(&r.days, &r.from, &r.to, r.hourly_rate).map_err(|e| ToolError::Fix(format!("rates[{i}]: {e}"))))
        .collect()
}

fn rate(hourly_rate: i64) -> Result<i64, ToolError> {
    check_rate("hourly_rate", hourly_rate).map_err(ToolError::Fix)?;
    Ok(hourly_rate)
}

fn buffer(minutes: i64) -> Result<Duration, ToolError> {
    if !(0..=240).contains(&minutes) {
        return Err(ToolError::Fix("buffer_minutes must be 0 to 240".into()));
    }
    Ok(Duration::minutes(minutes))
}

pub fn create_room(ctx: &Call<'_>, a: CreateRoomArgs) -> Result<(RoomChangedOut, String), ToolError> {
    let room = Room {
        id: room_id(&a.id),
        name: a.name.into_string(),
        capacity: a.capacity,
        features: crate::domain::normalize_features(a.features.strings()),
        hours: hours(&a.opening_hours)?,
        buffer: buffer(a.buffer_minutes.unwrap_or(0))?,
        active: true,
        rules: BookingRules {
            min_minutes: a.min_minutes,
            max_minutes: a.max_minutes,
            lead_minutes: a.lead_minutes,
            max_advance_days: a.max_advance_days,
            start_step_minutes: a.start_step_minutes,
        },
        price: RoomPrice { hourly_rate: rate(a.hourly_rate.unwrap_or(0))?, rates: a.rates.as_deref().map(rates).transpose()?.unwrap_or_default() },
    };
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        store.write_as(&ctx.actor(), |w| w.add_room(&room))?;
        let summary = format!("Added {} ({}, {} people): it can be booked now.", room.id, room.name, room.capacity);
        let out = RoomChangedOut { room: wire::room(&tz, room.clone(), &[]), displaced: Vec::new(), displaced_count: 0, next_step: "Nothing to move.".into() };
        Ok((out, summary))
    })
}

pub fn update_room(ctx: &Call<'_>, a: UpdateRoomArgs) -> Result<(RoomChangedOut, String), ToolError> {
    let edit = RoomEdit {
        name: a.name.map(String::from),
        capacity: a.capacity,
        features: a.features.as_ref().map(List::strings),
        hours: a.opening_hours.as_deref().map(hours).transpose()?,
        buffer: a.buffer_minutes.map(buffer).transpose()?,
        active: a.active,
        rules: BookingRulesEdit {
            min_minutes: a.min_minutes,
            max_minutes: a.max_minutes,
            lead_minutes: a.lead_minutes,
            max_advance_days: a.max_advance_days,
            start_step_minutes: a.start_step_minutes,
        },
        hourly_rate: a.hourly_rate.map(rate).transpose()?,
        rates: a.rates.as_deref().map(rates).transpose()?,
    };
    let RoomEdit { name, capacity, features, hours, buffer, active, rules, hourly_rate, rates } = &edit;
    if name.is_none() && capacity.is_none() && features.is_none() && hours.is_none() && buffer.is_none() && active.is_none() && rules.is_empty()
        && hourly_rate.is_none() && rates.is_none()
    {
        return Err(ToolError::Fix(
            "give at least one field to change: name, capacity, features, opening_hours, buffer_minutes, min_minutes, max_minutes, lead_minutes, max_advance_days, start_step_minutes, hourly_rate, rates or active".into(),
        ));
    }
    let id = room_id(&a.id);
    ctx.with(|store| {
        let studio = store.studio()?.clone();
        let tz = studio.tz;
        let change = store.write_as(&ctx.actor(), |w| w.update_room(&id, &edit, a.force))?;
        let windows: Vec<_> = availability::current_and_upcoming(store, studio.now(Utc::now()))?.into_iter().filter(|w| w.room == id).collect();
        let months: std::collections::BTreeSet<String> =
            change.displaced.iter().map(|b| tz.local(b.start).format("%Y-%m").to_string()).collect();
        let next_step = if change.displaced.is_empty() {
            "Nothing to move.".to_owned()
        } else {
            let months: Vec<String> = months.into_iter().collect();
            format!(
                "Run {} for {} (offline_rooms may be empty) to move the displaced bookings, or move them with {}.",
                names::REFLOW_MONTH,
                months.join(" and "),
                names::MOVE_BOOKING
            )
        };
        let state = if change.room.active { "Updated" } else { "Retired" };
        let summary = format!("{state} {id}; {} displaced. {next_step}", plural(change.displaced.len(), "booking", "bookings"));
        let (displaced, displaced_count) = wire::displaced(&tz, &change.displaced);
        let out = RoomChangedOut { room: wire::room(&tz, change.room.clone(), &windows), displaced, displaced_count, next_step };
        Ok((out, summary))
    })
}

pub fn remove_offline_window(ctx: &Call<'_>, a: RemoveOfflineWindowArgs) -> Result<(WindowRemovedOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let removed = store.write_as(&ctx.actor(), |w| w.remove_offline_window(a.id))?;
        let could_return: Vec<ReturnOut> = removed
            .could_return
            .iter()
            .map(|(b, m)| ReturnOut {
                booking: b.id.0.clone(),
                room: b.room.0.clone(),
                start: tz.format(b.start),
                original_room: m.from_room.0.clone(),
                original_start: tz.format(m.from_start),
            })
            .collect();
        let w = &removed.window;
        let next = if could_return.is_empty() {
            String::new()
        } else {
            format!(" Put them back with {}, or {} for a whole reflow.", names::MOVE_BOOKING, names::UNDO_REFLOW)
        };
        let stuck = match removed.still_displaced.len() {
            0 => String::new(),
            n => format!(
                " {} the window displaced cannot take their place back (it was booked meanwhile) and stay displaced: move them, or run {} for their month with no offline room.",
                plural(n, "booking", "bookings"),
                names::REFLOW_MONTH
            ),
        };
        let summary = format!(
            "Removed window {} ({} from {} to {}); {} could go back.{next}{stuck}",
            w.id,
            w.room,
            tz.format(w.from),
            tz.format(w.to),
            plural(could_return.len(), "booking", "bookings")
        );
        let still_displaced = removed.still_displaced.iter().map(|b| wire::booking(&tz, b)).collect();
        Ok((WindowRemovedOut { removed: wire::window(&tz, w), could_return, still_displaced }, summary))
    })
}
