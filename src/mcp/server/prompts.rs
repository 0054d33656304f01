//! Prompts that walk an agent through the studio's common jobs with the real tools (a room
//! outage, finding and booking a slot for a client, a month's report), and `completion/complete`
//! for their arguments and for the resource templates' (room, client and engineer ids matched by
//! id or name prefix; months that have bookings). Arguments are checked against the studio before
//! a prompt is written; a bad one is -32602 with what to change. Handlers are blocking.

use super::resources::{calendar_uri, CLIENT_CALENDAR, ENGINEER_CALENDAR, REFLOW_PLAN, ROOM_CALENDAR};
use super::tools::{names, Ctx};
use crate::domain::{CalendarOf, ClientId, RoomId, TextKind};
use crate::reflow::Month;
use crate::store::{Store, StoreError};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage, Reference, Role,
};
use rmcp::ErrorData as McpError;
use std::collections::HashMap;

fn argument(name: &str, description: &str, required: bool) -> PromptArgument {
    PromptArgument::new(name).with_description(description).with_required(required)
}

/// Every prompt, as `prompts/list` shows them.
pub fn list() -> ListPromptsResult {
    ListPromptsResult::with_all_items(vec![
        Prompt::new(
            "room_outage",
            Some("A room is out of use: take it offline, dry-run the reflow of each month it touches, show the plan, then apply it or ask."),
            Some(vec![
                argument("room", "The room's id (completions offer ids and names).", true),
                argument("from", "When the outage starts: a local time such as 2026-09-07T00:00, or RFC 3339.", true),
                argument("to", "When it ends (after from).", true),
                argument("reason", "Why, for the record (e.g. \"desk replacement\").", false),
            ]),
        )
        .with_title("Room outage"),
        Prompt::new(
            "book_client",
            Some("Find a free slot for a client and book it, checking capacity, features and everyone's calendars."),
            Some(vec![
                argument("client", "The client's id (completions offer ids and names).", true),
                argument("duration_minutes", "How long the session lasts, in minutes (15 to 1440).", true),
                argument("from", "The earliest start to consider (a local time or RFC 3339); default: now.", false),
                argument("to", "The latest end to consider; default: two weeks after from.", false),
                argument("room", "A room to prefer (its id).", false),
                argument("requires", "Features the room needs, comma-separated (e.g. drums,vocal-booth).", false),
            ]),
        )
        .with_title("Book a client"),
        Prompt::new(
            "month_report",
            Some("A month's report: bookings per room, cancellations, offline windows and the reflows that moved sessions."),
            Some(vec![argument("month", "The month, YYYY-MM (completions offer months that have bookings).", true)]),
        )
        .with_title("Month report"),
    ])
}

fn bad(message: String) -> McpError {
    McpError::invalid_params(message, None)
}

fn store_error(e: StoreError) -> McpError {
    if e.is_ours() { McpError::internal_error(e.to_string(), None) } else { bad(e.to_string()) }
}

/// The arguments a prompt was given, with the checks each needs.
struct Args<'a>(&'a HashMap<String, String>);

impl Args<'_> {
    fn optional(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    fn required(&self, prompt: &str, name: &str) -> Result<&str, McpError> {
        self.optional(name).ok_or_else(|| bad(format!("the prompt {prompt} needs the argument {name:?}")))
    }

    fn time(&self, store: &Store, prompt: &str, name: &str, required: bool) -> Result<Option<String>, McpError> {
        let text = if required { Some(self.required(prompt, name)?) } else { self.optional(name) };
        let Some(text) = text else { return Ok(None) };
        let tz = store.studio().map_err(store_error)?.tz;
        let at = tz.parse(text).map_err(|e| bad(format!("{name}: {e}")))?;
        Ok(Some(tz.format(at)))
    }
}

fn unknown_names(names: &HashMap<String, String>) -> Vec<&str> {
    let known = ["room", "from", "to", "reason", "client", "duration_minutes", "requires", "month"];
    names.keys().map(String::as_str).filter(|k| !known.contains(k)).collect()
}

/// Writes a prompt with its arguments checked.
pub fn get(ctx: &Ctx, name: &str, arguments: &HashMap<String, String>) -> Result<GetPromptResult, McpError> {
    let unknown = unknown_names(arguments);
    if !unknown.is_empty() {
        return Err(bad(format!("the prompt {name} has no argument {}: prompts/list shows its arguments", unknown.join(", "))));
    }
    // Every argument keeps the rule of its kind of text before anything reads it: ids are ids,
    // the rest (times, a reason, a list of features, a month) one line each.
    for (argument, value) in arguments {
        let kind = if ["room", "client"].contains(&argument.as_str()) { TextKind::Id } else { TextKind::Line };
        if !value.trim().is_empty() {
            kind.clean(value).map_err(|fault| bad(format!("{argument}: {fault}")))?;
        }
    }
    let args = Args(arguments);
    ctx.pool.with(|store| match name {
        "room_outage" => room_outage(store, &args),
        "book_client" => book_client(store, &args),
        "month_report" => month_report(store, &args),
        other => Err(bad(format!("unknown prompt {other:?}: prompts/list shows the prompts"))),
    })
    .map_err(store_error)?
}

fn user(text: String) -> Vec<PromptMessage> {
    vec![PromptMessage::new_text(Role::User, text)]
}

fn room_outage(store: &Store, args: &Args<'_>) -> Result<GetPromptResult, McpError> {
    let room = RoomId::new(args.required("room_outage", "room")?);
    let found = store.room(&room).map_err(store_error)?.ok_or_else(|| bad(format!("room: there is no room {room}: {} shows the rooms", names::LIST_ROOMS)))?;
    let from = args.time(store, "room_outage", "from", true)?.unwrap_or_default();
    let to = args.time(store, "room_outage", "to", true)?.unwrap_or_default();
    let tz = store.studio().map_err(store_error)?.tz;
    let (start, end) = (tz.parse(&from).map_err(|e| bad(e.to_string()))?, tz.parse(&to).map_err(|e| bad(e.to_string()))?);
    if end <= start {
        return Err(bad(format!("to ({to}) must be after from ({from})")));
    }
    let reason = args.optional("reason").unwrap_or("out of use");
    let first = tz.local(start).format("%Y-%m").to_string();
    let last = tz.local(end - chrono::Duration::seconds(1)).format("%Y-%m").to_string();
    let months = if first == last { format!("the month {first}") } else { format!("each month from {first} to {last}") };
    let text = format!(
        "{name} ({room}) is out of use from {from} to {to} ({reason}). Please handle the outage with the studioflow tools:\n\
         1. Call {take_offline} with room \"{room}\", from \"{from}\", to \"{to}\" and reason \"{reason}\". It moves nothing and says how many bookings are affected.\n\
         2. For {months}, call {reflow} with offline_rooms [\"{room}\"] and dry_run: true.\n\
         3. Show me the plan: how many bookings move and where, and for each unresolved booking the reason, so someone can call the client. \
            The plan is also the resource {REFLOW_PLAN} (the reflow_id of the answer).\n\
         4. If nothing is unresolved and no booking moves to another day, apply it: call {reflow} again without dry_run \
            (a client with the tasks extension may use require_approval: true instead). Otherwise, ask me before applying.\n\
         The room's calendar is the resource {uri}.",
        name = found.name,
        uri = calendar_uri(&CalendarOf::Room(room.clone())),
        take_offline = names::SET_ROOM_OFFLINE,
        reflow = names::REFLOW_MONTH,
    );
    Ok(GetPromptResult::new(user(text)).with_description(format!("Take {room} offline and reflow its bookings")))
}

fn book_client(store: &Store, args: &Args<'_>) -> Result<GetPromptResult, McpError> {
    let client = ClientId::new(args.required("book_client", "client")?);
    let name = store
        .clients()
        .map_err(store_error)?
        .into_iter()
        .find(|c| c.id == client)
        .map(|c| c.name)
        .ok_or_else(|| bad(format!("client: there is no client {client}: {} or completions show the ids", names::LIST_CLIENTS)))?;
    let duration = args.required("book_client", "duration_minutes")?;
    let minutes: u32 = duration
        .parse()
        .ok()
        .filter(|m| (15..=1440).contains(m))
        .ok_or_else(|| bad(format!("duration_minutes: {duration:?} is not a whole number of minutes from 15 to 1440")))?;
    let from = args.time(store, "book_client", "from", false)?;
    let to = args.time(store, "book_client", "to", false)?;
    let room = match args.optional("room") {
        Some(id) => {
            let room = RoomId::new(id);
            store.room(&room).map_err(store_error)?.ok_or_else(|| bad(format!("room: there is no room {room}: {} shows the rooms", names::LIST_ROOMS)))?;
            Some(room)
        }
        None => None,
    };
    let requires: Vec<&str> = args.optional("requires").map(|r| r.split(',').map(str::trim).filter(|f| !f.is_empty()).collect()).unwrap_or_default();
    let mut search = format!("duration_minutes {minutes}, client \"{client}\"");
    if let Some(from) = &from {
        search += &format!(", from \"{from}\"");
    }
    if let Some(to) = &to {
        search += &format!(", to \"{to}\"");
    }
    if let Some(room) = &room {
        search += &format!(", room \"{room}\"");
    }
    if !requires.is_empty() {
        search += &format!(", requires {requires:?}");
    }
    let text = format!(
        "Book a {minutes}-minute session for {name} ({client}) with the studioflow tools:\n\
         1. Call {find} with {search} (add party_size if you know how many come). It respects opening hours, offline rooms, \
            turnaround, capacity, features, and the client's other sessions.\n\
         2. Offer me the first few slots (room, start, end) and ask which to take, unless I already said.\n\
         3. Call {book} with room, client \"{client}\", start and end of the chosen slot, the same requires, and an idempotency_key, \
            so a retry cannot book twice. If it is refused, the answer names what is in the way: pick the next slot.\n\
         4. Tell me the booking id. {name}'s calendar is the resource {uri}.",
        uri = calendar_uri(&CalendarOf::Client(client.clone())),
        find = names::FIND_FREE_SLOTS,
        book = names::CREATE_BOOKING,
    );
    Ok(GetPromptResult::new(user(text)).with_description(format!("Find and book a slot for {client}")))
}

fn month_report(store: &Store, args: &Args<'_>) -> Result<GetPromptResult, McpError> {
    let text = args.required("month_report", "month")?;
    let month = Month::parse(text).map_err(|e| bad(e.to_string()))?;
    let tz = store.studio().map_err(store_error)?.tz;
    let (first, next) = month.bounds(&tz);
    let (from, to) = (tz.format(first), tz.format(next));
    let text = format!(
        "Write a report of {month} at the studio with the studioflow tools:\n\
         1. Call {rooms} for the rooms.\n\
         2. Call {query} with from \"{from}\" and to \"{to}\" (limit 500, following next_cursor to the end) and count, per room, \
            the confirmed, tentative and cancelled sessions and the booked hours.\n\
         3. Call {outages} with the same from and to for the outages.\n\
         4. For each reflow of {month} (the resources {REFLOW_PLAN}, or {plan}), say how many bookings it moved and which stayed unresolved.\n\
         Give a short table per room, then the outages and reflows, then anything that needs a person (unresolved bookings, rooms over 90 % booked).",
        rooms = names::LIST_ROOMS,
        query = names::QUERY_BOOKINGS,
        outages = names::LIST_OFFLINE_WINDOWS,
        plan = names::GET_REFLOW,
    );
    Ok(GetPromptResult::new(user(text)).with_description(format!("A report of {month}")))
}

// ---- completions ----------------------------------------------------------------------------

/// What an argument completes to.
enum Completes {
    Room,
    Client,
    Engineer,
    Month,
    Reflow,
    Nothing,
}

fn completes(reference: &Reference, argument: &str) -> Completes {
    match (reference, argument) {
        (Reference::Prompt(p), "room") if p.name == "room_outage" || p.name == "book_client" => Completes::Room,
        (Reference::Prompt(p), "client") if p.name == "book_client" => Completes::Client,
        (Reference::Prompt(p), "month") if p.name == "month_report" => Completes::Month,
        (Reference::Resource(r), "room") if r.uri == ROOM_CALENDAR => Completes::Room,
        (Reference::Resource(r), "client") if r.uri == CLIENT_CALENDAR => Completes::Client,
        (Reference::Resource(r), "engineer") if r.uri == ENGINEER_CALENDAR => Completes::Engineer,
        (Reference::Resource(r), "reflow_id") if r.uri == REFLOW_PLAN => Completes::Reflow,
        _ => Completes::Nothing,
    }
}

/// The ids whose id or name starts with `prefix` (ignoring case), ids first matched first.
fn matching(people: Vec<(String, String)>, prefix: &str) -> Vec<String> {
    let prefix = prefix.to_lowercase();
    let mut by_id: Vec<String> = Vec::new();
    let mut by_name: Vec<String> = Vec::new();
    for (id, name) in people {
        if id.to_lowercase().starts_with(&prefix) {
            by_id.push(id);
        } else if name.to_lowercase().starts_with(&prefix) || name.to_lowercase().split_whitespace().any(|w| w.starts_with(&prefix)) {
            by_name.push(id);
        }
    }
    by_id.extend(by_name);
    by_id
}

/// Answers `completion/complete`: up to 100 values, with the total and whether there are more.
pub fn complete(ctx: &Ctx, request: &CompleteRequestParams) -> Result<CompleteResult, McpError> {
    if let Reference::Prompt(p) = &request.r#ref
        && !["room_outage", "book_client", "month_report"].contains(&p.name.as_str())
    {
        return Err(bad(format!("unknown prompt {:?}: prompts/list shows the prompts", p.name)));
    }
    if let Reference::Resource(r) = &request.r#ref
        && ![ROOM_CALENDAR, CLIENT_CALENDAR, ENGINEER_CALENDAR, REFLOW_PLAN].contains(&r.uri.as_str())
    {
        return Err(bad(format!("unknown resource template {:?}: resources/templates/list shows them", r.uri)));
    }
    let prefix = request.argument.value.as_str();
    let kind = completes(&request.r#ref, &request.argument.name);
    let values = ctx
        .pool
        .with(|store| -> Result<Vec<String>, StoreError> {
            Ok(match kind {
                Completes::Room => matching(store.rooms()?.iter().map(|r| (r.id.0.clone(), r.name.clone())).collect(), prefix),
                Completes::Client => matching(store.clients()?.into_iter().map(|c| (c.id.0, c.name)).collect(), prefix),
                Completes::Engineer => matching(store.engineers()?.into_iter().map(|e| (e.id.0, e.name)).collect(), prefix),
                Completes::Month => store.booked_months()?.into_iter().filter(|m| m.starts_with(prefix)).collect(),
                Completes::Reflow => store.reflow_ids()?.into_iter().filter(|id| id.starts_with(prefix)).collect(),
                Completes::Nothing => Vec::new(),
            })
        })
        .map_err(store_error)?
        .map_err(store_error)?;
    let total = values.len();
    let shown: Vec<String> = values.into_iter().take(CompletionInfo::MAX_VALUES).collect();
    let info = CompletionInfo::with_pagination(shown, Some(u32::try_from(total).unwrap_or(u32::MAX)), total > CompletionInfo::MAX_VALUES)
        .map_err(|e| McpError::internal_error(e, None))?;
    Ok(CompleteResult::new(info))
}
