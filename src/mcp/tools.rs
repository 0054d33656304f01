//! The studio's tools: each one's name, description, schemas and hints, and its handler. Handlers
//! are plain blocking functions over the store pool; the server runs them off the async threads.
//! A failure the caller can act on is a [`ToolError::Fix`], which the server sends as `isError`.

mod bookings;
mod history;
mod people;
mod reflows;
mod rooms;

use super::wire::{self, *};
use crate::calendar::{self, SlotQuery};
use crate::domain::{Actor, BookingId, ClientId, EngineerId, Session, RoomId, SeriesId, Status, StudioTz};
use crate::error::Blame;
use crate::reflow::{self, Month, ReflowError, ReflowRequest, DEFAULT_MAX_SHIFT};
use crate::store::{BookingQuery, CancelScope, Pool, Store, StoreError, TaskOutcome};
use crate::tasks::{ReflowJob, TaskError, TaskView, Tasks};
use chrono::{DateTime, Duration, Utc};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};
use std::sync::Arc;

/// What a handler needs: the database, and the task runner every reflow goes through.
pub struct Ctx {
    pub pool: Arc<Pool>,
    pub tasks: Arc<Tasks>,
}

/// One call of a tool: the shared context, and who is calling (the MCP client's name) through
/// which tool, for the history. Derefs to the context.
pub struct Call<'a> {
    pub ctx: &'a Ctx,
    /// The caller: over stdio and HTTP, the client's `clientInfo.name` (an authenticated principal
    /// will take its place once there is one).
    pub who: &'a str,
    pub tool: &'static str,
}

impl std::ops::Deref for Call<'_> {
    type Target = Ctx;

    fn deref(&self) -> &Ctx {
        self.ctx
    }
}

impl Call<'_> {
    /// Who writes, through this tool.
    pub fn actor(&self) -> Actor {
        Actor::new(self.who, self.tool)
    }
}

/// A tool's answer: the structured content, and a short summary for people.
pub struct Reply {
    pub structured: serde_json::Value,
    pub summary: String,
}

/// Why a tool call failed.
#[derive(Debug)]
pub enum ToolError {
    /// The caller can fix it: the message says what to change.
    Fix(String),
    /// Our fault (the database failed): a JSON-RPC internal error.
    Internal(String),
}

impl<E: Blame> From<E> for ToolError {
    fn from(e: E) -> Self {
        if e.is_ours() { ToolError::Internal(e.to_string()) } else { ToolError::Fix(e.to_string()) }
    }
}

type Handler = dyn Fn(&Ctx, &str, JsonObject) -> Result<Reply, ToolError> + Send + Sync;

/// One tool: what `tools/list` shows, and what runs on `tools/call`.
pub struct ToolSpec {
    pub tool: Tool,
    pub run: Box<Handler>,
}

/// How a tool touches the studio, for its annotations.
#[derive(Clone, Copy)]
pub(crate) enum Effect {
    /// Reads only.
    Read,
    /// Adds to the calendar, changing nothing already there.
    Add,
    /// Changes or removes what is there; `idempotent` when repeating it changes nothing more.
    Change { idempotent: bool },
}

/// A tool's handler: its arguments in, its answer and summary out.
type Run<A, O> = fn(&Call<'_>, A) -> Result<(O, String), ToolError>;

pub(crate) fn spec<A, O>(name: &'static str, title: &str, description: &str, effect: Effect, run: Run<A, O>) -> ToolSpec
where
    A: DeserializeOwned + JsonSchema + 'static,
    O: Serialize + JsonSchema + 'static,
{
    let annotations = match effect {
        Effect::Read => ToolAnnotations::new().read_only(true).destructive(false).idempotent(true),
        Effect::Add => ToolAnnotations::new().read_only(false).destructive(false).idempotent(false),
        Effect::Change { idempotent } => ToolAnnotations::new().read_only(false).destructive(true).idempotent(idempotent),
    };
    let tool = Tool::new(name, description.to_owned(), rmcp::handler::server::common::schema_for_type::<A>())
        .with_title(title)
        .with_raw_output_schema(rmcp::handler::server::common::schema_for_output::<O>())
        .with_annotations(annotations.open_world(false));
    let run = Box::new(move |ctx: &Ctx, who: &str, args: JsonObject| {
        // The path names the argument that does not fit (`start`, `requires[1]`), so that the
        // caller knows which to change; an error about the whole object (a missing or unknown
        // field) names the field itself.
        let args: A = serde_path_to_error::deserialize(serde_json::Value::Object(args)).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { format!("{path}: ") };
            ToolError::Fix(format!("the arguments of {name} do not fit its input schema: {field}{}", e.into_inner()))
        })?;
        let (out, summary) = run(&Call { ctx, who, tool: name }, args)?;
        let structured = serde_json::to_value(out).map_err(|e| ToolError::Internal(e.to_string()))?;
        Ok(Reply { structured, summary })
    });
    ToolSpec { tool, run }
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<ToolSpec> {
    vec![
        spec("list_rooms", "List rooms", "List the studio's rooms: capacity, features, weekly opening hours, turnaround, and offline windows that have not ended.", Effect::Read, list_rooms),
        spec("query_bookings", "Query bookings", "List bookings in start order, filtered by time, room, client, engineer, series or status, a page at a time (pass next_cursor back as cursor).", Effect::Read, query_bookings),
        spec("get_booking", "Get a booking", "One booking, with its recurring series and the reflows that moved it.", Effect::Read, get_booking),
        spec("find_free_slots", "Find free slots", "Find where a session of a given length fits: opening hours, offline windows, turnaround buffers, capacity and features are respected. Gives the earliest start of each free window and the latest start that still fits.", Effect::Read, find_free_slots),
        spec("create_booking", "Create a booking", "Book a session, or a recurring series with an RRULE (all sessions or none). Refused with the conflicting booking named when the room, client or engineer is taken, or the room is closed or offline. Use idempotency_key to retry safely.", Effect::Add, create_booking),
        spec("cancel_booking", "Cancel a booking", "Cancel a booking, or the following sessions of its series, or every session of its series that has not started.", Effect::Change { idempotent: false }, cancel_booking),
        spec("move_booking", "Move a booking", "Move a booking to a new start and optionally a new room, keeping its length, under the same checks as a new booking.", Effect::Change { idempotent: true }, move_booking),
        spec("set_room_offline", "Take a room offline", "Mark a room out of use for a time (repairs, maintenance). It moves nothing: it says how many bookings are affected; run reflow_month to move them.", Effect::Add, set_room_offline),
        spec("list_offline_windows", "List offline windows", "List the windows when rooms are out of use.", Effect::Read, list_offline_windows),
        spec("reflow_month", "Reflow a month", "Move every booking of a month that sits in an offline room to a compatible room or a nearby time on the same day, with no double-booking of rooms, clients or engineers; solved as an optimisation. Gives the moves and, for each booking it could not place, why. dry_run plans without moving.", Effect::Change { idempotent: false }, reflow_month),
        spec("get_reflow", "Get a reflow", "A stored reflow: its request, its moves, its unresolved bookings with their reasons, and whether it was applied or undone.", Effect::Read, get_reflow),
        spec("update_booking", "Update a booking", "Change a booking's engineer, party size, needs, notes, status (confirm a hold), pin or hold, for one session or the rest of its series; checked exactly like a new booking.", Effect::Change { idempotent: true }, bookings::update_booking),
        spec("apply_reflow", "Apply a reflow plan", "Apply a plan that reflow_month made with dry_run: true, if every booking is still where the plan found it and no reflow of its month is under way. The look-then-approve flow for clients without the tasks extension.", Effect::Change { idempotent: false }, reflows::apply_reflow),
        spec("undo_reflow", "Undo a reflow", "Put every booking an applied reflow moved back where it was, in one step, if none changed since and every old place is free (a room still offline refuses it). At most once.", Effect::Change { idempotent: false }, reflows::undo_reflow),
        spec("list_clients", "List clients", "List the studio's clients, by id, filtered by part of an id or name and by active, a page at a time (pass next_cursor back as cursor).", Effect::Read, people::list_clients),
        spec("create_client", "Add a client", "Add a client (name, email, phone, notes); the id is made from the name unless given. The client can be booked at once.", Effect::Add, people::create_client),
        spec("update_client", "Update a client", "Change a client's name, email, phone or notes, or deactivate them (active: false: they cannot be booked; their future bookings stay and are listed).", Effect::Change { idempotent: true }, people::update_client),
        spec("list_engineers", "List engineers", "List the studio's engineers, by id, filtered by part of an id or name and by active, a page at a time (pass next_cursor back as cursor).", Effect::Read, people::list_engineers),
        spec("create_engineer", "Add an engineer", "Add an engineer (name, email, phone, notes, skills); the id is made from the name unless given.", Effect::Add, people::create_engineer),
        spec("update_engineer", "Update an engineer", "Change an engineer's name, contact details, notes or skills, or deactivate them (active: false: they cannot be booked; their future bookings stay and are listed).", Effect::Change { idempotent: true }, people::update_engineer),
        spec("create_room", "Add a room", "Add a room: id, name, capacity, features, weekly opening hours (as list_rooms shows them) and turnaround.", Effect::Add, rooms::create_room),
        spec("update_room", "Update a room", "Change a room's name, capacity, features, opening hours or turnaround, or retire it (active: false). A change that would put future bookings out of the room is refused listing them; with force: true it is applied and they are displaced, ready for reflow_month.", Effect::Change { idempotent: true }, rooms::update_room),
        spec("remove_offline_window", "Remove an offline window", "End a room's offline window early (the repair is done); says which bookings a reflow moved out of it could now go back.", Effect::Change { idempotent: false }, rooms::remove_offline_window),
        spec("list_changes", "List changes", "The studio's history in commit order: every change to a booking, room, client, engineer or offline window, with who, when, through what, and the fields before and after. Pass next_cursor back as since to follow it without missing or repeating a change.", Effect::Read, history::list_changes),
    ]
}

// ---- helpers --------------------------------------------------------------------------------

impl Ctx {
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Store) -> Result<T, ToolError>) -> Result<T, ToolError> {
        self.pool.with(f)?
    }
}

pub(crate) fn time(tz: &StudioTz, field: &str, text: &str) -> Result<DateTime<Utc>, ToolError> {
    tz.parse(text).map_err(|e| ToolError::Fix(format!("{field}: {e}")))
}

pub(crate) fn room_id(text: &str) -> RoomId {
    RoomId::new(text.trim())
}

pub(crate) fn status(s: StatusArg) -> Status {
    match s {
        StatusArg::Confirmed => Status::Confirmed,
        StatusArg::Tentative => Status::Tentative,
        StatusArg::Cancelled => Status::Cancelled,
    }
}

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

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

// ---- handlers -------------------------------------------------------------------------------

fn list_rooms(ctx: &Call<'_>, _: NoArgs) -> Result<(RoomsOut, String), ToolError> {
    ctx.with(|store| {
        let studio = store.studio()?.clone();
        let now = studio.now(Utc::now());
        let windows = calendar::current_and_upcoming(store, now)?;
        let rooms: Vec<_> = store
            .rooms()?
            .iter()
            .map(|r| {
                let own: Vec<_> = windows.iter().filter(|w| w.room == r.id).cloned().collect();
                wire::room(&studio.tz, r, &own)
            })
            .collect();
        let offline = rooms.iter().filter(|r| !r.offline_windows.is_empty()).count();
        let summary = format!("{} at {}; {} with offline windows.", plural(rooms.len(), "room", "rooms"), studio.name, offline);
        Ok((RoomsOut { rooms }, summary))
    })
}

fn query_bookings(ctx: &Call<'_>, a: QueryBookingsArgs) -> Result<(BookingsOut, String), ToolError> {
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
        let mut rows = store.query_bookings(&query)?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = if more { rows.last().map(|(_, position)| encode_cursor(*position)) } else { None };
        let bookings: Vec<_> = rows.iter().map(|(b, _)| wire::booking(&tz, b)).collect();
        let summary = format!("{}{}.", plural(bookings.len(), "booking", "bookings"), if more { "; more on the next page" } else { "" });
        Ok((BookingsOut { bookings, next_cursor }, summary))
    })
}

fn get_booking(ctx: &Call<'_>, a: IdArgs) -> Result<(BookingDetailOut, String), ToolError> {
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
        Ok((BookingDetailOut { booking: wire::booking(&tz, &b), series, reflow_history: history, history: changes }, summary))
    })
}

fn find_free_slots(ctx: &Call<'_>, a: FindFreeSlotsArgs) -> Result<(SlotsOut, String), ToolError> {
    if !(15..=1440).contains(&a.duration_minutes) {
        return Err(ToolError::Fix("duration_minutes must be 15 to 1440".into()));
    }
    let limit = a.limit.unwrap_or(20);
    if !(1..=200).contains(&limit) {
        return Err(ToolError::Fix("limit must be 1 to 200".into()));
    }
    let party_size = a.party_size.unwrap_or(1);
    if party_size == 0 {
        return Err(ToolError::Fix("party_size must be at least 1".into()));
    }
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (from, to) = (time(&tz, "from", &a.from)?, time(&tz, "to", &a.to)?);
        let query = SlotQuery {
            from,
            to,
            length: Duration::minutes(a.duration_minutes.into()),
            party_size,
            requires: crate::domain::normalize_features(a.requires.clone()),
            room: a.room.as_deref().map(room_id),
            client: a.client.as_deref().map(|c| ClientId::new(c.trim())),
            engineer: a.engineer.as_deref().map(|e| EngineerId::new(e.trim())),
            limit: limit as usize,
        };
        let slots: Vec<_> = calendar::find_free_slots(store, &query)?
            .into_iter()
            .map(|s| SlotOut { room: s.room.0, start: tz.format(s.start), end: tz.format(s.end), latest_start: tz.format(s.latest_start) })
            .collect();
        let summary = match slots.first() {
            Some(first) => format!("{}; the earliest is {} in {}.", plural(slots.len(), "free slot", "free slots"), first.start, first.room),
            None => "No free slot fits: widen the time range, shorten the session or relax the requirements.".to_owned(),
        };
        Ok((SlotsOut { slots }, summary))
    })
}

fn create_booking(ctx: &Call<'_>, a: CreateBookingArgs) -> Result<(CreatedOut, String), ToolError> {
    if let Some(key) = &a.idempotency_key
        && (key.is_empty() || key.len() > 200) {
            return Err(ToolError::Fix("idempotency_key must be 1 to 200 characters".into()));
        }
    let request = serde_json::to_string(&a).map_err(|e| ToolError::Internal(e.to_string()))?;
    ctx.with(|store| {
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
            requires: a.requires.clone(),
            status: a.status.map_or(Status::Confirmed, status),
            pinned: false,
        };
        let (bookings, series, replayed) = store.write_as(&ctx.actor(), |w| {
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
        })?;
        let first = &bookings[0];
        let summary = match &series {
            Some(s) => format!("Booked series {s}: {} in {}, first at {}.", plural(bookings.len(), "session", "sessions"), first.room, tz.format(first.start)),
            None => format!("Booked {} in {} from {} to {}.", first.id, first.room, tz.format(first.start), tz.format(first.end)),
        };
        let summary = if replayed { format!("Already done earlier with this idempotency_key. {summary}") } else { summary };
        Ok((CreatedOut { bookings: bookings.iter().map(|b| wire::booking(&tz, b)).collect(), series: series.map(|s| s.0), replayed }, summary))
    })
}

fn cancel_booking(ctx: &Call<'_>, a: CancelBookingArgs) -> Result<(CancelledOut, String), ToolError> {
    let scope = match a.scope.unwrap_or(ScopeArg::Occurrence) {
        ScopeArg::Occurrence => CancelScope::Occurrence,
        ScopeArg::Following => CancelScope::Following,
        ScopeArg::Series => CancelScope::Series,
    };
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let id = BookingId::new(a.id.trim());
        let cancelled = store.write_as(&ctx.actor(), |w| w.cancel_booking(&id, scope))?;
        let summary = format!("Cancelled {}.", plural(cancelled.len(), "booking", "bookings"));
        Ok((CancelledOut { cancelled: cancelled.iter().map(|b| wire::booking(&tz, b)).collect() }, summary))
    })
}

fn move_booking(ctx: &Call<'_>, a: MoveBookingArgs) -> Result<(MovedOut, String), ToolError> {
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

fn set_room_offline(ctx: &Call<'_>, a: SetRoomOfflineArgs) -> Result<(OfflineOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (from, to) = (time(&tz, "from", &a.from)?, time(&tz, "to", &a.to)?);
        let room = room_id(&a.room);
        let window = store.write_as(&ctx.actor(), |w| w.add_offline_window(&room, from, to, &a.reason))?;
        // A window that met another of the room's is merged with it: report the merged one.
        let merged = window.from != from || window.to != to;
        let (from, to) = (window.from, window.to);
        let affected = calendar::affected_by(store, &room, from, to)?;
        let months: std::collections::BTreeSet<String> =
            affected.iter().map(|b| tz.local(b.start).format("%Y-%m").to_string()).collect();
        let next_step = if affected.is_empty() {
            "Nothing to move.".to_owned()
        } else {
            let months: Vec<String> = months.into_iter().collect();
            format!("Run reflow_month for {} with offline_rooms [\"{room}\"] to move them.", months.join(" and "))
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

fn list_offline_windows(ctx: &Call<'_>, a: ListOfflineWindowsArgs) -> Result<(WindowsOut, String), ToolError> {
    ctx.with(|store| {
        let studio = store.studio()?.clone();
        let tz = studio.tz;
        let from = match &a.from {
            Some(t) => time(&tz, "from", t)?,
            None => studio.now(Utc::now()),
        };
        let to = match &a.to {
            Some(t) => time(&tz, "to", t)?,
            None => from + Duration::days(366),
        };
        if to <= from {
            return Err(ToolError::Fix("to must be after from".into()));
        }
        let room = a.room.as_deref().map(room_id);
        if let Some(room) = &room {
            store.room(room)?.ok_or_else(|| StoreError::UnknownRoom(room.clone()))?;
        }
        let windows: Vec<_> = store.offline_windows(room.as_ref(), from, to)?.iter().map(|w| wire::window(&tz, w)).collect();
        let summary = format!("{}.", plural(windows.len(), "offline window", "offline windows"));
        Ok((WindowsOut { windows }, summary))
    })
}

/// Reads a reflow request; shared with the task path. The request's own checks (rooms, shift)
/// are the reflow's, made once when its month is exported.
pub fn reflow_job(a: &ReflowMonthArgs, actor: Actor) -> Result<ReflowJob, ToolError> {
    let request = ReflowRequest {
        month: Month::parse(&a.month)?,
        offline_rooms: a.offline_rooms.iter().map(|r| room_id(r)).collect(),
        max_shift_minutes: a.max_shift_minutes.unwrap_or(DEFAULT_MAX_SHIFT),
    };
    Ok(ReflowJob { request, dry_run: a.dry_run, require_approval: a.require_approval, actor })
}

/// How the caller follows a reflow: as a task it polls, or by waiting for the answer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Task,
    Wait,
}

/// A reflow that was not started, in words that name the tools to use instead.
pub fn reflow_refusal(e: TaskError, follow: Follow) -> ToolError {
    match e {
        TaskError::Reflow(ReflowError::NoWindow { room, month }) => ToolError::Fix(format!(
            "{room} has no offline window in {month}: take it offline first with set_room_offline (from, to, reason), \
             or preview the whole month with dry_run"
        )),
        TaskError::Busy { month, task } if follow == Follow::Task => ToolError::Fix(format!(
            "a reflow of {month} is already under way as task {task}: poll it with tasks/get, or cancel it with \
             tasks/cancel before starting another"
        )),
        TaskError::Busy { month, task } => ToolError::Fix(format!(
            "a reflow of {month} is already under way as task {task}: wait for it to finish (get_reflow shows its \
             plan once it is recorded), then run reflow_month again"
        )),
        other => other.into(),
    }
}

fn reflow_month(ctx: &Call<'_>, a: ReflowMonthArgs) -> Result<(ReflowOut, String), ToolError> {
    let job = reflow_job(&a, ctx.actor())?;
    if job.require_approval {
        return Err(ToolError::Fix(
            "require_approval needs a client that declares the io.modelcontextprotocol/tasks extension; \
             without it, run with dry_run: true, review the moves, then run again without dry_run"
                .into(),
        ));
    }
    // The same runner as a task, waited for: the per-month lock, retries of a stale plan and the
    // final summary hold on this path by construction.
    let view = ctx.tasks.reflow(&job).map_err(|e| reflow_refusal(e, Follow::Wait))?;
    finished_reflow(&view)
}

/// What a finished reflow task answers: exactly what the synchronous call returns.
pub fn finished_reflow(view: &TaskView) -> Result<(ReflowOut, String), ToolError> {
    match view.task.outcome()? {
        Some(TaskOutcome::Reflow(id)) => {
            let record = view.reflow.as_ref().ok_or_else(|| ToolError::Internal(format!("reflow {id} was not recorded")))?;
            Ok((wire::reflow(&view.tz, record), reflow::summary(record)))
        }
        Some(TaskOutcome::Refused(message)) => Err(ToolError::Fix(message)),
        Some(TaskOutcome::Failed(message)) => Err(ToolError::Internal(message)),
        Some(TaskOutcome::Cancelled) => Err(ToolError::Fix(
            view.task.status_message.clone().unwrap_or_else(|| "the reflow was cancelled: nothing was moved".into()),
        )),
        None => Err(ToolError::Internal(format!("task {} has not finished", view.task.id))),
    }
}

fn get_reflow(ctx: &Call<'_>, a: GetReflowArgs) -> Result<(StoredReflowOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let record = store
            .reflow(a.reflow_id.trim())?
            .ok_or_else(|| ToolError::Fix(format!("unknown reflow \"{}\": reflow ids look like rf_0001", a.reflow_id)))?;
        let summary = format!(
            "Reflow {} of {}: {} moves, {} unresolved, {}.",
            record.id, record.month, record.moves.len(), record.unresolved.len(), if record.applied { "applied" } else { "not applied" }
        );
        let summary = if record.undone { summary.replace(", applied.", ", applied and then undone.") } else { summary };
        Ok((wire::stored_reflow(&tz, &record), summary))
    })
}
