//! The studio's tools: the table of every tool (name, description, schemas and hints, handler)
//! and what the handlers share. The handlers live beside this file, one area each (bookings,
//! rooms, people, reflows, history); they are plain blocking functions over the store pool, run
//! by the server off the async threads. A failure the caller can act on is a [`ToolError::Fix`],
//! which the server sends as `isError`.

mod bookings;
mod history;
mod people;
mod reflows;
mod rooms;

pub use reflows::{finished_reflow, reflow_job, reflow_month_reply, reflow_refusal, Follow};

use super::wire::StatusArg;
use crate::domain::{Actor, RoomId, Status, StudioTz};
use crate::error::Blame;
use crate::reflow::ReflowError;
use crate::store::{Pool, Remedy, Store, StoreError};
use crate::tasks::{TaskError, Tasks};
use chrono::{DateTime, Utc};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};
use std::sync::Arc;

/// What a handler needs: the database, and the task runner every reflow goes through.
pub struct Ctx {
    pub pool: Arc<Pool>,
    pub tasks: Arc<Tasks>,
}

/// Who is calling. Over HTTP with authentication, the principal the front found: the history
/// names it, and it owns the tasks it starts. Otherwise (stdio, or HTTP without authentication)
/// the local user, named for the history by the client's `clientInfo.name`.
pub struct Caller {
    pub who: String,
    /// The principal's id, for task ownership; `None` for the local user.
    pub owner: Option<String>,
}

/// One call of a tool: the shared context, and who is calling through which tool, for the
/// history and for the tasks it starts. Derefs to the context.
pub struct Call<'a> {
    pub ctx: &'a Ctx,
    pub caller: &'a Caller,
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
        Actor::new(self.caller.who.as_str(), self.tool)
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
    /// Ours, and passing: the database connection was lost. Sent as `isError`, never as an
    /// internal error, with a message that says whether anything changed and to retry.
    Transient(String),
}

impl<E: Blame> From<E> for ToolError {
    fn from(e: E) -> Self {
        if e.is_transient() {
            ToolError::Transient(e.to_string())
        } else if e.is_ours() {
            ToolError::Internal(e.to_string())
        } else {
            ToolError::Fix(store_error_in(&e).map_or_else(|| e.to_string(), |store| store.worded(&tool_remedy)))
        }
    }
}

/// The store's failure that `e` is or carries (a reflow's or a task's), whose remedies the tools
/// word: the store names no tool, since the command line shows its words too.
fn store_error_in(e: &dyn std::any::Any) -> Option<&StoreError> {
    if let Some(store) = e.downcast_ref::<StoreError>() {
        return Some(store);
    }
    if let Some(ReflowError::Store(store)) = e.downcast_ref::<ReflowError>() {
        return Some(store);
    }
    match e.downcast_ref::<TaskError>()? {
        TaskError::Store(store) | TaskError::Reflow(ReflowError::Store(store)) => Some(store),
        _ => None,
    }
}

/// A store remedy in the words of the tool that does it.
fn tool_remedy(remedy: Remedy) -> String {
    match remedy {
        Remedy::Reactivate(kind) => format!("reactivate it with update_{kind} {{\"active\": true}}"),
        Remedy::Force => "pass force: true to apply it and mark them displaced".into(),
        Remedy::CancelInstead => "cancel a booking with cancel_booking".into(),
        Remedy::ListWindows => "list_offline_windows shows their ids".into(),
        Remedy::EndWindowEarly => "remove_offline_window ends a window early".into(),
        Remedy::NewPlan => "make a new plan with reflow_month".into(),
        Remedy::DryRunPlan => "reflow_month with dry_run: true makes a plan".into(),
    }
}

type Handler = dyn Fn(&Ctx, &Caller, JsonObject) -> Result<Reply, ToolError> + Send + Sync;

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
    let input = known_vocabulary(rmcp::handler::server::common::schema_for_type::<A>());
    let output = known_vocabulary(rmcp::handler::server::common::schema_for_output::<O>());
    let tool = Tool::new(name, description.to_owned(), input)
        .with_title(title)
        .with_raw_output_schema(output)
        .with_annotations(annotations.open_world(false));
    let run = Box::new(move |ctx: &Ctx, caller: &Caller, args: JsonObject| {
        // The path names the argument that does not fit (`start`, `requires[1]`), so that the
        // caller knows which to change; an error about the whole object (a missing or unknown
        // field) names the field itself.
        let args: A = serde_path_to_error::deserialize(serde_json::Value::Object(args)).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { format!("{path}: ") };
            ToolError::Fix(format!("the arguments of {name} do not fit its input schema: {field}{}", e.into_inner()))
        })?;
        let (out, summary) = run(&Call { ctx, caller, tool: name }, args)?;
        let structured = serde_json::to_value(out).map_err(|e| ToolError::Internal(e.to_string()))?;
        Ok(Reply { structured, summary })
    });
    ToolSpec { tool, run }
}

/// A derived schema in the JSON Schema 2020-12 vocabulary that every validator knows: schemars
/// writes Rust's integer types as `format: "uint32"`, `"int64"` and so on, which are no format of
/// the specification (the TypeScript SDK's validator warns about each), so the format goes and
/// the range it meant becomes `minimum`/`maximum`.
fn known_vocabulary(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    fn walk(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                let range: Option<(i64, Option<i64>)> = match map.get("format").and_then(|f| f.as_str()) {
                    Some("uint8") => Some((0, Some(u8::MAX.into()))),
                    Some("uint16") => Some((0, Some(u16::MAX.into()))),
                    Some("uint32") => Some((0, Some(u32::MAX.into()))),
                    Some("uint64" | "uint") => Some((0, None)),
                    Some("int8") => Some((i8::MIN.into(), Some(i8::MAX.into()))),
                    Some("int16") => Some((i16::MIN.into(), Some(i16::MAX.into()))),
                    Some("int32") => Some((i32::MIN.into(), Some(i32::MAX.into()))),
                    Some("int64" | "int" | "float" | "double") => Some((i64::MIN, None)),
                    _ => None,
                };
                if let Some((min, max)) = range {
                    map.remove("format");
                    if min != i64::MIN && !map.contains_key("minimum") {
                        map.insert("minimum".into(), min.into());
                    }
                    if let Some(max) = max
                        && !map.contains_key("maximum")
                    {
                        map.insert("maximum".into(), max.into());
                    }
                }
                map.values_mut().for_each(walk);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut value = serde_json::Value::Object((*schema).clone());
    walk(&mut value);
    match value {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => schema,
    }
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<ToolSpec> {
    vec![
        spec("list_rooms", "List rooms", "List the studio's rooms: capacity, features, weekly opening hours, turnaround, and offline windows that have not ended.", Effect::Read, rooms::list_rooms),
        spec("query_bookings", "Query bookings", "List bookings in start order, filtered by time, room, client, engineer, series or status, a page at a time (pass next_cursor back as cursor).", Effect::Read, bookings::query_bookings),
        spec("get_booking", "Get a booking", "One booking, with its recurring series and the reflows that moved it.", Effect::Read, bookings::get_booking),
        spec("find_free_slots", "Find free slots", "Find where a session of a given length fits: opening hours, offline windows, turnaround buffers, capacity and features are respected. Gives the earliest start of each free window and the latest start that still fits.", Effect::Read, bookings::find_free_slots),
        spec("create_booking", "Create a booking", "Book a session, or a recurring series with an RRULE (all sessions or none). Refused with the conflicting booking named when the room, client or engineer is taken, or the room is closed or offline. Use idempotency_key to retry safely.", Effect::Add, bookings::create_booking),
        spec("cancel_booking", "Cancel a booking", "Cancel a booking, or the following sessions of its series, or every session of its series that has not started.", Effect::Change { idempotent: false }, bookings::cancel_booking),
        spec("move_booking", "Move a booking", "Move a booking to a new start and optionally a new room, keeping its length, under the same checks as a new booking.", Effect::Change { idempotent: true }, bookings::move_booking),
        spec("set_room_offline", "Take a room offline", "Mark a room out of use for a time (repairs, maintenance). It moves nothing: it says how many bookings are affected; run reflow_month to move them.", Effect::Add, rooms::set_room_offline),
        spec("list_offline_windows", "List offline windows", "List the windows when rooms are out of use.", Effect::Read, rooms::list_offline_windows),
        spec("reflow_month", "Reflow a month", "Move every booking of a month that sits in an offline room to a compatible room or a nearby time on the same day, with no double-booking of rooms, clients or engineers; solved as an optimisation. Gives the moves and, for each booking it could not place, why. dry_run plans without moving.", Effect::Change { idempotent: false }, reflows::reflow_month),
        spec("get_reflow", "Get a reflow", "A stored reflow: its request, its moves, its unresolved bookings with their reasons, and whether it was applied or undone.", Effect::Read, reflows::get_reflow),
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
    pub(crate) fn with<T>(&self, f: impl FnMut(&mut Store) -> Result<T, ToolError>) -> Result<T, ToolError> {
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

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

