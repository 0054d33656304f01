//! `list_changes`: the studio's history in commit order, a page at a time, with a cursor that a
//! follower (a calendar, a billing tool) keeps to read on later without missing or repeating a change.

use super::super::wire::{self, *};
use super::{plural, Call, ToolError};
use crate::domain::{BookingId, RoomId};
use crate::store::{Entity, EventQuery, PersonKind, StoreError};

fn encode_cursor(seq: i64) -> String {
    format!("e1.{seq:x}")
}

fn decode_cursor(text: &str) -> Result<i64, ToolError> {
    let bad = || ToolError::Fix("since: not a cursor this server gave; pass next_cursor unchanged, or leave since out to start from the first change".into());
    let hex = text.strip_prefix("e1.").ok_or_else(bad)?;
    i64::from_str_radix(hex, 16).ok().filter(|n| *n >= 0).ok_or_else(bad)
}

pub fn list_changes(ctx: &Call<'_>, a: ListChangesArgs) -> Result<(ChangesOut, String), ToolError> {
    let limit = a.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ToolError::Fix("limit must be 1 to 1000".into()));
    }
    let after = a.since.as_deref().map(decode_cursor).transpose()?;
    let id = match a.id.as_deref().map(str::trim) {
        Some("") => return Err(ToolError::Fix("id: give the id of a booking, room, client, engineer or window, or leave id out".into())),
        other => other.map(str::to_owned),
    };
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        // An id of a kind that is never deleted is checked, as every other tool checks ids.
        if let (Some(kind), Some(id)) = (a.entity, id.as_deref()) {
            let missing = match kind {
                Entity::Booking => store.booking(&BookingId::new(id))?.is_none().then(|| StoreError::UnknownBooking(id.into())),
                Entity::Room => store.room(&RoomId::new(id))?.is_none().then(|| StoreError::UnknownRoom(id.into())),
                Entity::Client => store.person(PersonKind::Client, id)?.is_none().then(|| StoreError::UnknownClient(id.into())),
                Entity::Engineer => store.person(PersonKind::Engineer, id)?.is_none().then(|| StoreError::UnknownEngineer(id.into())),
                // A window may have been removed, a reflow's history is its own answer, and tokens,
                // tasks, users, grants and webhooks are the operator's; the studio is one ("studio").
                Entity::OfflineWindow | Entity::Reflow | Entity::Token | Entity::Task | Entity::User | Entity::Grant | Entity::Webhook | Entity::Studio => None,
            };
            if let Some(e) = missing {
                return Err(e.into());
            }
        }
        let query = EventQuery { after, entity: a.entity, id: id.clone(), limit: limit as usize + 1 };
        let mut events = store.events(&query)?;
        let more = events.len() > limit as usize;
        events.truncate(limit as usize);
        let last = events.last().map_or(after.unwrap_or(0), |e| e.seq);
        let summary = format!("{}{}.", plural(events.len(), "change", "changes"), if more { "; more on the next page" } else { "" });
        Ok((ChangesOut { events: events.iter().map(|e| wire::event(&tz, e)).collect(), next_cursor: encode_cursor(last), more }, summary))
    })
}
