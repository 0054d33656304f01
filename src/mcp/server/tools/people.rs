//! The roster's tools: list, create and update clients and engineers, and engineers' time off
//! (add, list, remove). Both rosters share one shape and one set of rules (the store's); a
//! person is deactivated, never deleted.

use super::super::wire::{self, *};
use super::{names, plural, span_ahead, time, Call, ToolError};
use crate::domain::{EngineerId, Line, List, Profile, WeeklyHours};
use crate::store::{PersonEdit, PersonKind, PersonQuery, PersonRecord};

/// Working hours from outside: at least one line, read as a room's opening hours are.
fn working_hours(lines: &[Line]) -> Result<WeeklyHours, ToolError> {
    if lines.is_empty() {
        return Err(ToolError::Fix(format!(
            "working_hours: give at least one line, e.g. [\"mon-fri 10:00-19:00\"], or leave it out (null in {}) for always",
            names::UPDATE_ENGINEER
        )));
    }
    WeeklyHours::parse(lines).map_err(|e| ToolError::Fix(format!("working_hours: {e}")))
}

/// Person cursors are versioned and opaque: the last id of the page, in hex.
fn encode_cursor(id: &str) -> String {
    format!("p1.{}", data_encoding::HEXLOWER.encode(id.as_bytes()))
}

fn decode_cursor(text: &str) -> Result<String, ToolError> {
    let bad = || ToolError::Fix("cursor: not a cursor this server gave; pass next_cursor unchanged, or leave it out to start over".into());
    let hex = text.strip_prefix("p1.").ok_or_else(bad)?;
    let bytes = data_encoding::HEXLOWER.decode(hex.as_bytes()).map_err(|_| bad())?;
    String::from_utf8(bytes).map_err(|_| bad())
}

fn list(ctx: &Call<'_>, kind: PersonKind, a: ListPeopleArgs) -> Result<(Vec<PersonOut>, Option<String>, String), ToolError> {
    let limit = a.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ToolError::Fix("limit must be 1 to 500".into()));
    }
    let after = a.cursor.as_deref().map(decode_cursor).transpose()?;
    let text = a.query.as_deref().map(str::trim).filter(|q| !q.is_empty()).map(str::to_owned);
    ctx.with(|store| {
        let query = PersonQuery { text: text.clone(), active: a.active, after: after.clone(), limit: limit as usize + 1 };
        let mut people = store.people(kind, &query)?;
        let more = people.len() > limit as usize;
        people.truncate(limit as usize);
        let next = if more { people.last().map(|p| encode_cursor(&p.id)) } else { None };
        let (one, many) = match kind {
            PersonKind::Client => ("client", "clients"),
            PersonKind::Engineer => ("engineer", "engineers"),
        };
        let summary = format!("{}{}.", plural(people.len(), one, many), if more { "; more on the next page" } else { "" });
        let out = people.iter().map(|p| wire::person(p, kind == PersonKind::Engineer)).collect();
        Ok((out, next, summary))
    })
}

pub fn list_clients(ctx: &Call<'_>, a: ListPeopleArgs) -> Result<(ClientsOut, String), ToolError> {
    let (clients, next_cursor, summary) = list(ctx, PersonKind::Client, a)?;
    Ok((ClientsOut { clients, next_cursor }, summary))
}

pub fn list_engineers(ctx: &Call<'_>, a: ListPeopleArgs) -> Result<(EngineersOut, String), ToolError> {
    let (engineers, next_cursor, summary) = list(ctx, PersonKind::Engineer, a)?;
    Ok((EngineersOut { engineers, next_cursor }, summary))
}

fn create(ctx: &Call<'_>, kind: PersonKind, id: Option<&str>, name: &str, profile: Profile) -> Result<PersonRecord, ToolError> {
    ctx.with(|store| Ok(store.write_as(&ctx.actor(), |w| w.create_person(kind, id, name, profile.clone()))?))
}

pub fn create_client(ctx: &Call<'_>, a: CreateClientArgs) -> Result<(ClientOut, String), ToolError> {
    let profile = Profile {
        email: a.email.map(String::from),
        phone: a.phone.map(String::from),
        notes: a.notes.map(String::from),
        notify: a.notify.unwrap_or(true),
        ..Profile::default()
    };
    let p = create(ctx, PersonKind::Client, a.id.as_deref(), &a.name, profile)?;
    let summary = format!("Added client {} ({}): book them with {} {{\"client\": \"{}\"}}.", p.name, p.id, names::CREATE_BOOKING, p.id);
    Ok((ClientOut { client: wire::person(&p, false), future_bookings: Vec::new() }, summary))
}

pub fn create_engineer(ctx: &Call<'_>, a: CreateEngineerArgs) -> Result<(EngineerOut, String), ToolError> {
    let profile = Profile {
        email: a.email.map(String::from),
        phone: a.phone.map(String::from),
        notes: a.notes.map(String::from),
        skills: a.skills.strings(),
        hours: a.working_hours.as_deref().map(working_hours).transpose()?,
        hourly_rate: a.hourly_rate.unwrap_or(0),
        notify: a.notify.unwrap_or(true),
        ..Profile::default()
    };
    let p = create(ctx, PersonKind::Engineer, a.id.as_deref(), &a.name, profile)?;
    let summary = format!("Added engineer {} ({}).", p.name, p.id);
    Ok((EngineerOut { engineer: wire::person(&p, true), future_bookings: Vec::new(), displaced: Vec::new(), displaced_count: 0 }, summary))
}

/// A person as updated, their future bookings (when deactivated), the sessions displaced (when an
/// engineer's hours changed) and the summary.
type Updated = (PersonRecord, Vec<BookingOut>, (Vec<BookingOut>, u32), String);

fn update(ctx: &Call<'_>, kind: PersonKind, id: &str, edit: PersonEdit) -> Result<Updated, ToolError> {
    let PersonEdit { name, email, phone, notes, skills, active, hours, hourly_rate, notify } = &edit;
    if name.is_none()
        && email.is_none()
        && phone.is_none()
        && notes.is_none()
        && skills.is_none()
        && active.is_none()
        && hours.is_none()
        && hourly_rate.is_none()
        && notify.is_none()
    {
        let fields = if kind == PersonKind::Engineer {
            "name, email, phone, notes, skills, working_hours, hourly_rate, notify or active"
        } else {
            "name, email, phone, notes, notify or active"
        };
        return Err(ToolError::Fix(format!("give at least one field to change: {fields}")));
    }
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (p, future, displaced) = store.write_as(&ctx.actor(), |w| w.update_person(kind, id.trim(), &edit))?;
        let summary = if p.profile.active && !displaced.is_empty() {
            format!(
                "Updated {} {} ({}); {} outside the new working hours {} displaced: move them, give them another engineer, or run {} for their month.",
                kind.word(),
                p.name,
                p.id,
                plural(displaced.len(), "session", "sessions"),
                if displaced.len() == 1 { "is" } else { "are" },
                names::REFLOW_MONTH
            )
        } else if p.profile.active {
            format!("Updated {} {} ({}).", kind.word(), p.name, p.id)
        } else {
            format!(
                "{} {} ({}) is inactive and cannot be booked; {} stay as they are.",
                if kind == PersonKind::Client { "Client" } else { "Engineer" },
                p.name,
                p.id,
                plural(future.len(), "future booking", "future bookings")
            )
        };
        Ok((p, future.iter().map(|b| wire::booking(&tz, b)).collect(), wire::displaced(&tz, &displaced), summary))
    })
}

pub fn update_client(ctx: &Call<'_>, a: UpdateClientArgs) -> Result<(ClientOut, String), ToolError> {
    let edit = PersonEdit {
        name: a.name.map(String::from),
        email: a.email.map(String::from),
        phone: a.phone.map(String::from),
        notes: a.notes.map(String::from),
        skills: None,
        active: a.active,
        hours: None,
        hourly_rate: None,
        notify: a.notify,
    };
    let (p, future_bookings, _, summary) = update(ctx, PersonKind::Client, &a.id, edit)?;
    Ok((ClientOut { client: wire::person(&p, false), future_bookings }, summary))
}

pub fn update_engineer(ctx: &Call<'_>, a: UpdateEngineerArgs) -> Result<(EngineerOut, String), ToolError> {
    let edit = PersonEdit {
        name: a.name.map(String::from),
        email: a.email.map(String::from),
        phone: a.phone.map(String::from),
        notes: a.notes.map(String::from),
        skills: a.skills.as_ref().map(List::strings),
        active: a.active,
        hours: a.working_hours.as_ref().map(|h| h.as_deref().map(working_hours).transpose()).transpose()?,
        hourly_rate: a.hourly_rate,
        notify: a.notify,
    };
    let (p, future_bookings, (displaced, displaced_count), summary) = update(ctx, PersonKind::Engineer, &a.id, edit)?;
    Ok((EngineerOut { engineer: wire::person(&p, true), future_bookings, displaced, displaced_count }, summary))
}

pub fn add_time_off(ctx: &Call<'_>, a: AddTimeOffArgs) -> Result<(TimeOffAddedOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (from, to) = (time(&tz, "from", &a.from)?, time(&tz, "to", &a.to)?);
        let engineer = EngineerId::new(a.engineer.trim());
        let reason = a.reason.as_deref().unwrap_or("");
        let added = store.write_as(&ctx.actor(), |w| w.add_time_off(&engineer, from, to, reason))?;
        let t = &added.time_off;
        let months: std::collections::BTreeSet<String> = added.displaced.iter().map(|b| tz.local(b.start).format("%Y-%m").to_string()).collect();
        let next_step = if added.displaced.is_empty() {
            "Nothing to move.".to_owned()
        } else {
            format!(
                "Give them another engineer with {}, move them with {}, or run {} for {} (offline_rooms may be empty).",
                names::UPDATE_BOOKING,
                names::MOVE_BOOKING,
                names::REFLOW_MONTH,
                months.into_iter().collect::<Vec<_>>().join(" and ")
            )
        };
        let summary = format!(
            "Engineer {engineer} is off from {} to {} ({}); {} displaced. {next_step}",
            tz.format(t.from),
            tz.format(t.to),
            t.reason,
            plural(added.displaced.len(), "session", "sessions")
        );
        let (displaced, displaced_count) = wire::displaced(&tz, &added.displaced);
        let out = TimeOffAddedOut { time_off: wire::time_off(&tz, t), displaced, displaced_count, next_step };
        Ok((out, summary))
    })
}

pub fn list_time_off(ctx: &Call<'_>, a: ListTimeOffArgs) -> Result<(TimeOffListOut, String), ToolError> {
    ctx.with(|store| {
        let studio = store.studio()?.clone();
        let tz = studio.tz;
        let (from, to) = span_ahead(&studio, a.from.as_deref(), a.to.as_deref())?;
        let engineer = a.engineer.as_deref().map(|e| EngineerId::new(e.trim()));
        let list: Vec<_> = store.time_off(engineer.as_ref(), from, to)?.iter().map(|t| wire::time_off(&tz, t)).collect();
        let summary = format!("{}.", plural(list.len(), "entry of time off", "entries of time off"));
        Ok((TimeOffListOut { time_off: list }, summary))
    })
}

pub fn remove_time_off(ctx: &Call<'_>, a: RemoveTimeOffArgs) -> Result<(TimeOffRemovedOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let removed = store.write_as(&ctx.actor(), |w| w.remove_time_off(a.id))?;
        let t = &removed.time_off;
        let stuck = match removed.still_displaced.len() {
            0 => String::new(),
            n => format!(" {} stay displaced (their places are taken, or another rule holds them out): move them, or run {} for their month.", plural(n, "session", "sessions"), names::REFLOW_MONTH),
        };
        let summary = format!(
            "Removed time off {} of {} ({} to {}); {} took their places back.{stuck}",
            t.id,
            t.engineer,
            tz.format(t.from),
            tz.format(t.to),
            plural(removed.restored.len(), "session", "sessions")
        );
        let out = TimeOffRemovedOut {
            removed: wire::time_off(&tz, t),
            restored: removed.restored.iter().map(|b| wire::booking(&tz, b)).collect(),
            still_displaced: removed.still_displaced.iter().map(|b| wire::booking(&tz, b)).collect(),
        };
        Ok((out, summary))
    })
}
