//! The waitlist's tools: join it, list it, leave it. The offers themselves are the store's: every
//! write that frees a place offers it to the first entry that fits, in its own transaction.

use super::super::wire::{self, *};
use super::{plural, room_id, time, Call, ToolError};
use crate::domain::{ClientId, EngineerId};
use crate::store::NewWaitlistEntry;

pub fn join_waitlist(ctx: &Call<'_>, a: JoinWaitlistArgs) -> Result<(WaitlistJoinedOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let new = NewWaitlistEntry {
            client: ClientId::new(a.client.trim()),
            from: time(&tz, "from", &a.from)?,
            to: time(&tz, "to", &a.to)?,
            duration_minutes: a.duration_minutes,
            room: a.room.as_deref().map(room_id),
            requires: a.requires.strings(),
            engineer: a.engineer.as_deref().map(|e| EngineerId::new(e.trim())),
        };
        let entry = store.write_as(&ctx.actor(), |w| w.join_waitlist(&new))?;
        let place = store.waitlist(None)?.iter().position(|e| e.id == entry.id).map_or(0, |i| i + 1);
        let summary = format!(
            "{} is on the waitlist (entry {}, number {place} in line) for {} minutes between {} and {}; the first freed slot that fits is held for them.",
            entry.client,
            entry.id,
            entry.duration_minutes,
            tz.format(entry.from),
            tz.format(entry.to)
        );
        Ok((WaitlistJoinedOut { entry: wire::waitlist_entry(&tz, &entry) }, summary))
    })
}

pub fn list_waitlist(ctx: &Call<'_>, a: ListWaitlistArgs) -> Result<(WaitlistOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let client = a.client.as_deref().map(|c| ClientId::new(c.trim()));
        store.require_known(None, client.as_ref(), None)?;
        let list: Vec<_> = store.waitlist(client.as_ref())?.iter().map(|e| wire::waitlist_entry(&tz, e)).collect();
        let summary = format!("{} waiting.", plural(list.len(), "entry", "entries"));
        Ok((WaitlistOut { waitlist: list }, summary))
    })
}

pub fn leave_waitlist(ctx: &Call<'_>, a: LeaveWaitlistArgs) -> Result<(WaitlistLeftOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let entry = store.write_as(&ctx.actor(), |w| w.leave_waitlist(a.id))?;
        let summary = format!("Took entry {} of {} off the waitlist.", entry.id, entry.client);
        Ok((WaitlistLeftOut { removed: wire::waitlist_entry(&tz, &entry) }, summary))
    })
}
