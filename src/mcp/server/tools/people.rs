//! The roster's tools: list, create and update clients and engineers. Both rosters share one
//! shape and one set of rules (the store's); a person is deactivated, never deleted.

use super::super::wire::{self, *};
use super::{names, plural, Call, ToolError};
use crate::domain::{List, Profile};
use crate::store::{PersonEdit, PersonKind, PersonQuery, PersonRecord};

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
    let profile = Profile { email: a.email.map(String::from), phone: a.phone.map(String::from), notes: a.notes.map(String::from), ..Profile::default() };
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
        ..Profile::default()
    };
    let p = create(ctx, PersonKind::Engineer, a.id.as_deref(), &a.name, profile)?;
    let summary = format!("Added engineer {} ({}).", p.name, p.id);
    Ok((EngineerOut { engineer: wire::person(&p, true), future_bookings: Vec::new() }, summary))
}

fn update(ctx: &Call<'_>, kind: PersonKind, id: &str, edit: PersonEdit) -> Result<(PersonRecord, Vec<BookingOut>, String), ToolError> {
    let PersonEdit { name, email, phone, notes, skills, active } = &edit;
    if name.is_none() && email.is_none() && phone.is_none() && notes.is_none() && skills.is_none() && active.is_none() {
        let fields = if kind == PersonKind::Engineer { "name, email, phone, notes, skills or active" } else { "name, email, phone, notes or active" };
        return Err(ToolError::Fix(format!("give at least one field to change: {fields}")));
    }
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (p, future) = store.write_as(&ctx.actor(), |w| w.update_person(kind, id.trim(), &edit))?;
        let summary = if p.profile.active {
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
        Ok((p, future.iter().map(|b| wire::booking(&tz, b)).collect(), summary))
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
    };
    let (p, future_bookings, summary) = update(ctx, PersonKind::Client, &a.id, edit)?;
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
    };
    let (p, future_bookings, summary) = update(ctx, PersonKind::Engineer, &a.id, edit)?;
    Ok((EngineerOut { engineer: wire::person(&p, true), future_bookings }, summary))
}
