//! The studio's tools: one table with every fact about each tool (its name, title, description,
//! schemas and hints; the scope a call needs; whether the view draws its answer; whether it may
//! run as a durable task, and how its arguments become that task), and what the handlers share.
//! Everything else (the authorization check, the view's links, the 2025-11-25 task wire, the
//! dispatch) is derived from this table, so adding a tool is its handler and one row here. This is
//! also the only file that spells a tool's name: the rest use [`names`].
//! The handlers live beside this file, one area each (bookings, rooms, people, reflows,
//! history); they are plain blocking functions over the store pool, run by the server off the
//! async threads. A failure the caller can act on is a [`ToolError::Fix`], which the server
//! sends as `isError`.

mod bookings;
mod history;
mod outbox;
mod people;
mod reflows;
mod rooms;
mod studio;
mod waitlist;

pub use reflows::{finished_reflow, reflow_refusal, Follow};

use super::wire::{self, ScopeArg, StatusArg};
use crate::auth::Scope;
use crate::domain::{Actor, RoomId, Status, StudioTz};
use crate::error::Blame;
use crate::reflow::ReflowError;
use crate::store::{CancelScope, Pool, Remedy, Store, StoreError};
use crate::tasks::{ProgressHook, ReflowJob, TaskError, Tasks};
use chrono::{DateTime, Utc};
use super::written::WrittenAnswers;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, RequestId, Tool, ToolAnnotations};
use rmcp::ErrorData as McpError;
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};
use std::sync::Arc;

/// The tools' names, written once: every other mention of a tool (a message that says which tool
/// to call next, the client's calls) goes through these.
pub mod names {
    pub const LIST_ROOMS: &str = "list_rooms";
    pub const QUERY_BOOKINGS: &str = "query_bookings";
    pub const GET_BOOKING: &str = "get_booking";
    pub const FIND_FREE_SLOTS: &str = "find_free_slots";
    pub const CREATE_BOOKING: &str = "create_booking";
    pub const CANCEL_BOOKING: &str = "cancel_booking";
    pub const MOVE_BOOKING: &str = "move_booking";
    pub const SET_ROOM_OFFLINE: &str = "set_room_offline";
    pub const LIST_OFFLINE_WINDOWS: &str = "list_offline_windows";
    pub const REFLOW_MONTH: &str = "reflow_month";
    pub const GET_REFLOW: &str = "get_reflow";
    pub const UPDATE_BOOKING: &str = "update_booking";
    pub const APPLY_REFLOW: &str = "apply_reflow";
    pub const UNDO_REFLOW: &str = "undo_reflow";
    pub const LIST_CLIENTS: &str = "list_clients";
    pub const CREATE_CLIENT: &str = "create_client";
    pub const UPDATE_CLIENT: &str = "update_client";
    pub const LIST_ENGINEERS: &str = "list_engineers";
    pub const CREATE_ENGINEER: &str = "create_engineer";
    pub const UPDATE_ENGINEER: &str = "update_engineer";
    pub const CREATE_ROOM: &str = "create_room";
    pub const UPDATE_ROOM: &str = "update_room";
    pub const REMOVE_OFFLINE_WINDOW: &str = "remove_offline_window";
    pub const LIST_CHANGES: &str = "list_changes";
    pub const CREATE_WEBHOOK: &str = "create_webhook";
    pub const LIST_WEBHOOKS: &str = "list_webhooks";
    pub const DELETE_WEBHOOK: &str = "delete_webhook";
    pub const LIST_NOTIFICATIONS: &str = "list_notifications";
    pub const ADD_TIME_OFF: &str = "add_time_off";
    pub const LIST_TIME_OFF: &str = "list_time_off";
    pub const REMOVE_TIME_OFF: &str = "remove_time_off";
    pub const GET_STUDIO: &str = "get_studio";
    pub const UPDATE_STUDIO: &str = "update_studio";
    pub const QUOTE: &str = "quote";
    pub const RECORD_PAYMENT: &str = "record_payment";
    pub const JOIN_WAITLIST: &str = "join_waitlist";
    pub const LIST_WAITLIST: &str = "list_waitlist";
    pub const LEAVE_WAITLIST: &str = "leave_waitlist";
    pub const STUDIO_REPORT: &str = "studio_report";
}

/// What a handler needs: the database, and the task runner every reflow goes through.
pub struct Ctx {
    pub pool: Arc<Pool>,
    pub tasks: Arc<Tasks>,
    /// `serve --webhooks-to-private`: webhook endpoints may be private addresses.
    pub webhooks_to_private: bool,
}

/// Who is calling. Over HTTP with authentication, the principal the front found: the history
/// names it, and it owns the tasks it starts. Otherwise (stdio, or HTTP without authentication)
/// the local user, named for the history by the name the client gives itself.
#[derive(Debug, Clone)]
pub struct Caller {
    pub who: String,
    /// The principal's id, for task ownership; `None` for the local user.
    pub owner: Option<String>,
}

impl Caller {
    /// The one rule of who is calling, for every way in (a tool call, a task request, the
    /// 2025-11-25 task wire): the authenticated principal, or else the local user under the name
    /// its client gave (`clientInfo.name`), or "unnamed client".
    pub fn of(principal: Option<&crate::auth::Principal>, client_name: Option<&str>) -> Caller {
        match principal {
            Some(principal) => Caller { who: principal.name.clone(), owner: Some(principal.id.clone()) },
            None => {
                let who = client_name.map(str::trim).filter(|name| !name.is_empty()).unwrap_or("unnamed client");
                Caller { who: who.to_owned(), owner: None }
            }
        }
    }
}

/// One call of a tool: the shared context, who is calling through which tool (for the history
/// and for the tasks it starts), and, for a tool that reports progress, whom to tell. Derefs to
/// the context.
pub struct Call<'a> {
    pub ctx: &'a Ctx,
    pub caller: &'a Caller,
    pub tool: &'static str,
    /// Told how a long call goes, when the client asked to hear it (a task-capable tool only).
    pub progress: Option<ProgressHook>,
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
    pub answer: Box<dyn Answer>,
    pub summary: String,
}

impl Reply {
    pub fn new(answer: impl Answer + 'static, summary: String) -> Reply {
        Reply { answer: Box::new(answer), summary }
    }
}

/// A tool's structured answer, kept in its own type until it is written: as the JSON value that
/// the SDK's `CallToolResult` holds, or as JSON text for a transport that writes it itself
/// (`super::written`), which skips building that value.
pub trait Answer: Send {
    fn value(&self) -> serde_json::Result<serde_json::Value>;
    fn text(&self) -> serde_json::Result<String>;
}

impl<T: Serialize + Send> Answer for T {
    fn value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }

    fn text(&self) -> serde_json::Result<String> {
        serde_json::to_string(self)
    }
}

/// An answer of type `O` whose JSON text is not left to serde each time: kept from an earlier
/// call while nothing it shows has changed (`list_rooms`, see [`Store::kept`]). Its value, for a
/// transport that wants one, is still `O`'s, and so is its schema.
pub struct Written<O> {
    answer: Arc<O>,
    text: Arc<str>,
}

impl<O: Serialize> Written<O> {
    /// `answer`, with its text written now to be sent again (as it is, by [`Written::clone`]).
    pub fn kept(answer: O) -> serde_json::Result<Self> {
        let text = Arc::from(serde_json::to_string(&answer)?);
        Ok(Written { answer: Arc::new(answer), text })
    }
}

impl<O> Clone for Written<O> {
    fn clone(&self) -> Self {
        Written { answer: self.answer.clone(), text: self.text.clone() }
    }
}

// Not `Serialize`, so that it is not an answer by the blanket impl above but by this one.
impl<O: Serialize + Send + Sync> Answer for Written<O> {
    fn value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(&*self.answer)
    }

    fn text(&self) -> serde_json::Result<String> {
        Ok(String::from(&*self.text))
    }
}

/// An answer that writes its own JSON text (`$page`, with `out()` and `to_json()`), and is `$out`
/// on the wire: its value and its schema are `$out`'s.
macro_rules! written_as {
    ($page:ty, $out:ty) => {
        impl Answer for $page {
            fn value(&self) -> serde_json::Result<serde_json::Value> {
                serde_json::to_value(self.out())
            }

            fn text(&self) -> serde_json::Result<String> {
                Ok(self.to_json())
            }
        }

        impl JsonSchema for $page {
            fn inline_schema() -> bool {
                <$out>::inline_schema()
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                <$out>::schema_name()
            }

            fn schema_id() -> std::borrow::Cow<'static, str> {
                <$out>::schema_id()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <$out>::json_schema(generator)
            }
        }
    };
}

written_as!(wire::BookingsPage, wire::BookingsOut);
written_as!(wire::SlotsPage, wire::SlotsOut);

impl<O: JsonSchema> JsonSchema for Written<O> {
    fn inline_schema() -> bool {
        O::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        O::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        O::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        O::json_schema(generator)
    }
}

/// A tool's outcome as the `CallToolResult` a client receives: the answer with its summary, a
/// refusal or a passing failure as `isError`, and a failure of ours as a JSON-RPC error.
pub fn call_tool_result(outcome: Result<Reply, ToolError>) -> Result<CallToolResult, McpError> {
    match outcome {
        Ok(reply) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(reply.summary)]);
            result.structured_content = Some(reply.answer.value().map_err(|e| McpError::internal_error(e.to_string(), None))?);
            Ok(result)
        }
        Err(ToolError::Fix(message) | ToolError::Transient(message)) => Ok(CallToolResult::error(vec![ContentBlock::text(message)])),
        Err(ToolError::Internal(message)) => Err(McpError::internal_error(message, None)),
    }
}

/// [`call_tool_result`] for the request `id` of a transport that writes answers itself: the
/// answer is written to JSON text and left in `answers`, and the result goes without it.
pub fn call_tool_result_written(outcome: Result<Reply, ToolError>, answers: &WrittenAnswers, id: RequestId) -> Result<CallToolResult, McpError> {
    match outcome {
        Ok(reply) => {
            answers.put(id, reply.answer.text().map_err(|e| McpError::internal_error(e.to_string(), None))?);
            Ok(CallToolResult::success(vec![ContentBlock::text(reply.summary)]))
        }
        failed => call_tool_result(failed),
    }
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
        Remedy::Reactivate(kind) => {
            let tool = match kind {
                "client" => names::UPDATE_CLIENT,
                "engineer" => names::UPDATE_ENGINEER,
                _ => names::UPDATE_ROOM,
            };
            format!("reactivate it with {tool} {{\"active\": true}}")
        }
        Remedy::Force => "pass force: true to apply it and mark them displaced".into(),
        Remedy::CancelInstead => format!("cancel a booking with {}", names::CANCEL_BOOKING),
        Remedy::ListWindows => format!("{} shows their ids", names::LIST_OFFLINE_WINDOWS),
        Remedy::EndWindowEarly => format!("{} ends a window early", names::REMOVE_OFFLINE_WINDOW),
        Remedy::NewPlan => format!("make a new plan with {}", names::REFLOW_MONTH),
        Remedy::DryRunPlan => format!("{} with dry_run: true makes a plan", names::REFLOW_MONTH),
    }
}

type Handler = dyn Fn(&Call<'_>, JsonObject) -> Result<Reply, ToolError> + Send + Sync;

/// What a tool that may run as a durable task makes of its arguments: the job the task runner
/// runs, owned by the caller. One decoder for every way a task is asked for.
pub type JobOf = fn(&Caller, JsonObject) -> Result<ReflowJob, ToolError>;

/// One tool, with every fact about it: what `tools/list` shows, the scope a call needs, whether
/// the view draws its answer, whether it may run as a task, and what runs on `tools/call`.
pub struct ToolSpec {
    pub name: &'static str,
    pub tool: Tool,
    pub access: Access,
    /// The view (the MCP App) draws this tool's answers.
    pub drawn: bool,
    /// `Some` for a tool that may run as a durable task (and report its progress when called
    /// synchronously): how its arguments become the job.
    pub job: Option<JobOf>,
    pub run: Box<Handler>,
}

impl ToolSpec {
    /// The tool's name, as `tools/list` shows it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Marks the tool as one whose answers the view draws.
    fn drawn_by_the_view(mut self) -> ToolSpec {
        self.drawn = true;
        self
    }

    /// Lets the tool run as a durable task, its arguments read by `job`.
    fn runs_as_task(mut self, job: JobOf) -> ToolSpec {
        self.job = Some(job);
        self
    }
}

/// The scope a call of a tool needs. Every tool names one: a tool cannot be built without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Always this scope.
    Needs(Scope),
    /// `studio:read` for a dry run (`"dry_run": true`, which changes nothing), else this scope.
    ReadsWhenDry(Scope),
}

impl Access {
    /// The scope a call with `arguments` needs.
    pub fn needed(self, arguments: Option<&serde_json::Value>) -> Scope {
        match self {
            Access::Needs(scope) => scope,
            Access::ReadsWhenDry(scope) => {
                let dry = arguments.and_then(|a| a.get("dry_run")).and_then(serde_json::Value::as_bool) == Some(true);
                if dry { Scope::StudioRead } else { scope }
            }
        }
    }

    /// The scope that a call may need at most: what a token must hold to use the tool fully.
    pub fn most(self) -> Scope {
        match self {
            Access::Needs(scope) | Access::ReadsWhenDry(scope) => scope,
        }
    }
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

/// Reads a tool's arguments. The path names the argument that does not fit (`start`,
/// `requires[1]`), so that the caller knows which to change; an error about the whole object (a
/// missing or unknown field) names the field itself.
pub fn decode<A: DeserializeOwned>(tool: &str, arguments: JsonObject) -> Result<A, ToolError> {
    let arguments = serde_json::Value::Object(arguments);
    // Read as they are first; only arguments that do not fit are read again to find the path,
    // which costs a string for every key on the way.
    if let Ok(read) = A::deserialize(&arguments) {
        return Ok(read);
    }
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { format!("{path}: ") };
        ToolError::Fix(format!("the arguments of {tool} do not fit its input schema: {field}{}", e.into_inner()))
    })
}

pub(crate) fn spec<A, O>(name: &'static str, title: &str, description: &str, effect: Effect, access: Access, run: Run<A, O>) -> ToolSpec
where
    A: DeserializeOwned + JsonSchema + 'static,
    O: Answer + JsonSchema + 'static,
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
    let run = Box::new(move |call: &Call<'_>, args: JsonObject| {
        let (out, summary) = run(call, decode(name, args)?)?;
        Ok(Reply::new(out, summary))
    });
    ToolSpec { name, tool, access, drawn: false, job: None, run }
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

/// Every tool, in the order `tools/list` shows them: the table.
pub fn all() -> Vec<ToolSpec> {
    vec![
        spec(names::LIST_ROOMS, "List rooms", "List the studio's rooms: capacity, features, weekly opening hours, turnaround, and offline windows that have not ended.", Effect::Read, Access::Needs(Scope::StudioRead), rooms::list_rooms),
        spec(names::QUERY_BOOKINGS, "Query bookings", "List bookings in start order, filtered by time, room, client, engineer, series or status, a page at a time (pass next_cursor back as cursor).", Effect::Read, Access::Needs(Scope::StudioRead), bookings::query_bookings).drawn_by_the_view(),
        spec(names::GET_BOOKING, "Get a booking", "One booking, with its recurring series and the reflows that moved it.", Effect::Read, Access::Needs(Scope::StudioRead), bookings::get_booking),
        spec(names::FIND_FREE_SLOTS, "Find free slots", "Find where a session of a given length fits: opening hours, offline windows, turnaround buffers, capacity and features are respected. Gives the earliest start of each free window and the latest start that still fits.", Effect::Read, Access::Needs(Scope::StudioRead), bookings::find_free_slots),
        spec(names::CREATE_BOOKING, "Create a booking", "Book a session, or a recurring series with an RRULE (all sessions or none). Refused with the conflicting booking named when the room, client or engineer is taken, or the room is closed or offline. Use idempotency_key to retry safely.", Effect::Add, Access::Needs(Scope::BookingsWrite), bookings::create_booking),
        spec(names::CANCEL_BOOKING, "Cancel a booking", "Cancel a booking, or the following sessions of its series, or every session of its series that has not started.", Effect::Change { idempotent: false }, Access::Needs(Scope::BookingsWrite), bookings::cancel_booking),
        spec(names::MOVE_BOOKING, "Move a booking", "Move a booking to a new start and optionally a new room, keeping its length, under the same checks as a new booking.", Effect::Change { idempotent: true }, Access::Needs(Scope::BookingsWrite), bookings::move_booking),
        spec(names::SET_ROOM_OFFLINE, "Take a room offline", "Mark a room out of use for a time (repairs, maintenance). It moves nothing: it says how many bookings are affected; run reflow_month to move them.", Effect::Add, Access::Needs(Scope::StudioManage), rooms::set_room_offline),
        spec(names::LIST_OFFLINE_WINDOWS, "List offline windows", "List the windows when rooms are out of use.", Effect::Read, Access::Needs(Scope::StudioRead), rooms::list_offline_windows),
        spec(names::REFLOW_MONTH, "Reflow a month", "Move every booking of a month that sits in an offline room to a compatible room or a nearby time on the same day, with no double-booking of rooms, clients or engineers; solved as an optimisation. Gives the moves and, for each booking it could not place, why. dry_run plans without moving.", Effect::Change { idempotent: false }, Access::ReadsWhenDry(Scope::ReflowApply), reflows::reflow_month).drawn_by_the_view().runs_as_task(reflows::job),
        spec(names::GET_REFLOW, "Get a reflow", "A stored reflow: its request, its moves, its unresolved bookings with their reasons, and whether it was applied or undone.", Effect::Read, Access::Needs(Scope::StudioRead), reflows::get_reflow).drawn_by_the_view(),
        spec(names::UPDATE_BOOKING, "Update a booking", "Change a booking's engineer, party size, needs, notes, status (confirm a hold), pin or hold, for one session or the rest of its series; checked exactly like a new booking.", Effect::Change { idempotent: true }, Access::Needs(Scope::BookingsWrite), bookings::update_booking),
        spec(names::APPLY_REFLOW, "Apply a reflow plan", "Apply a plan that reflow_month made with dry_run: true, if every booking is still where the plan found it and no reflow of its month is under way. The look-then-approve flow for clients without the tasks extension.", Effect::Change { idempotent: false }, Access::Needs(Scope::ReflowApply), reflows::apply_reflow),
        spec(names::UNDO_REFLOW, "Undo a reflow", "Put every booking an applied reflow moved back where it was, in one step, if none changed since and every old place is free (a room still offline refuses it). At most once.", Effect::Change { idempotent: false }, Access::Needs(Scope::ReflowApply), reflows::undo_reflow),
        spec(names::LIST_CLIENTS, "List clients", "List the studio's clients, by id, filtered by part of an id or name and by active, a page at a time (pass next_cursor back as cursor).", Effect::Read, Access::Needs(Scope::StudioRead), people::list_clients),
        spec(names::CREATE_CLIENT, "Add a client", "Add a client (name, email, phone, notes; notify: false keeps them from being e-mailed about their sessions); the id is made from the name unless given. The client can be booked at once.", Effect::Add, Access::Needs(Scope::StudioManage), people::create_client),
        spec(names::UPDATE_CLIENT, "Update a client", "Change a client's name, email, phone, notes or notify (e-mail about their sessions), or deactivate them (active: false: they cannot be booked; their future bookings stay and are listed).", Effect::Change { idempotent: true }, Access::Needs(Scope::StudioManage), people::update_client),
        spec(names::LIST_ENGINEERS, "List engineers", "List the studio's engineers, by id, filtered by part of an id or name and by active, a page at a time (pass next_cursor back as cursor).", Effect::Read, Access::Needs(Scope::StudioRead), people::list_engineers),
        spec(names::CREATE_ENGINEER, "Add an engineer", "Add an engineer (name, email, phone, notes, skills, working hours, notify); the id is made from the name unless given.", Effect::Add, Access::Needs(Scope::StudioManage), people::create_engineer),
        spec(names::UPDATE_ENGINEER, "Update an engineer", "Change an engineer's name, contact details, notify, notes, skills or working hours (their future sessions outside new hours are flagged displaced and listed), or deactivate them (active: false: they cannot be booked; their future bookings stay and are listed).", Effect::Change { idempotent: true }, Access::Needs(Scope::StudioManage), people::update_engineer),
        spec(names::CREATE_ROOM, "Add a room", "Add a room: id, name, capacity, features, weekly opening hours (as list_rooms shows them) and turnaround.", Effect::Add, Access::Needs(Scope::StudioManage), rooms::create_room),
        spec(names::UPDATE_ROOM, "Update a room", "Change a room's name, capacity, features, opening hours or turnaround, or retire it (active: false). A change that would put future bookings out of the room is refused listing them; with force: true it is applied and they are displaced, ready for reflow_month.", Effect::Change { idempotent: true }, Access::Needs(Scope::StudioManage), rooms::update_room),
        spec(names::REMOVE_OFFLINE_WINDOW, "Remove an offline window", "End a room's offline window early (the repair is done); says which bookings a reflow moved out of it could now go back.", Effect::Change { idempotent: false }, Access::Needs(Scope::StudioManage), rooms::remove_offline_window),
        spec(names::ADD_TIME_OFF, "Give an engineer time off", "Give an engineer time off (a holiday, illness): no session can be booked with them then. Their sessions it covers are flagged displaced and listed (the first 20 and the count), ready to be given another engineer, moved, or reflowed.", Effect::Add, Access::Needs(Scope::StudioManage), people::add_time_off),
        spec(names::LIST_TIME_OFF, "List time off", "List engineers' time off, of one engineer or all, that overlaps a span (default: from now, a year ahead).", Effect::Read, Access::Needs(Scope::StudioRead), people::list_time_off),
        spec(names::REMOVE_TIME_OFF, "Remove time off", "Remove an engineer's time off (they are back early); the sessions it displaced take their places back where every rule still holds them.", Effect::Change { idempotent: false }, Access::Needs(Scope::StudioManage), people::remove_time_off),
        spec(names::GET_STUDIO, "Get the studio", "The studio's name, time zone and settings: currency (ISO 4217; prices are integers in its minor unit), deposit_percent, waitlist_hold_hours, the notice and booking horizon, and the staff address (notify_email) that gets each reflow's digest.", Effect::Read, Access::Needs(Scope::StudioRead), studio::get_studio),
        spec(names::UPDATE_STUDIO, "Update the studio", "Change the studio's currency, deposit_percent (0 to 100), waitlist_hold_hours (1 to 168) or notify_email, the staff address that gets each reflow's digest: counts, and every session that could not be moved with its reason and the client's contact (\"\" clears it). Recorded in the history.", Effect::Change { idempotent: true }, Access::Needs(Scope::StudioManage), studio::update_studio),
        spec(names::QUOTE, "Quote a session", "What a session in a room costs at today's rates, with an engineer's time if given: the total and each period at its rate (weekend or evening overrides split it), in integer minor units of the studio's currency.", Effect::Read, Access::Needs(Scope::StudioRead), studio::quote),
        spec(names::RECORD_PAYMENT, "Record a payment", "Record money received for a booking (amount in minor units of the studio's currency, with an optional reference). A payment above what is still owed (price less paid) is refused. When what is paid covers the deposit of a booking on hold, the hold is cleared and the booking confirmed.", Effect::Add, Access::Needs(Scope::BookingsWrite), bookings::record_payment),
        spec(names::JOIN_WAITLIST, "Join the waitlist", "Put a client on the waitlist for a session of a given length between two times, in a room or any room with the features it requires, optionally with an engineer. When a slot that fits frees (a cancellation, a move, a reflow, an expired hold, a removed offline window or time off), the first entry by join time gets a tentative booking held for the studio's waitlist_hold_hours, and leaves the list.", Effect::Add, Access::Needs(Scope::BookingsWrite), waitlist::join_waitlist),
        spec(names::LIST_WAITLIST, "List the waitlist", "The clients waiting, of one client or all, in the order they are served (join time).", Effect::Read, Access::Needs(Scope::StudioRead), waitlist::list_waitlist),
        spec(names::LEAVE_WAITLIST, "Leave the waitlist", "Take an entry off the waitlist.", Effect::Change { idempotent: false }, Access::Needs(Scope::BookingsWrite), waitlist::leave_waitlist),
        spec(names::STUDIO_REPORT, "The month in figures", "A month in figures: per room, its open hours (opening hours less offline windows), booked hours, utilisation and revenue (its confirmed sessions' prices); per engineer, the hours booked; the deposits due and paid; and the month's applied reflows with what they moved, left unresolved and the price difference they absorbed. Money in minor units of the studio's currency.", Effect::Read, Access::Needs(Scope::StudioRead), studio::studio_report).drawn_by_the_view(),
        spec(names::LIST_CHANGES, "List changes", "The studio's history in commit order: every change to a booking, room, client, engineer or offline window, with who, when, through what, and the fields before and after. Pass next_cursor back as since to follow it without missing or repeating a change.", Effect::Read, Access::Needs(Scope::StudioRead), history::list_changes),
        spec(names::CREATE_WEBHOOK, "Create a webhook endpoint", "Have every change of the chosen event types POSTed to an https URL, signed to the Standard Webhooks specification; the signing secret is in the answer, once. Private addresses are refused unless the server allows them.", Effect::Add, Access::Needs(Scope::StudioManage), outbox::create_webhook),
        spec(names::LIST_WEBHOOKS, "List webhook endpoints", "The webhook endpoints: URL, event types, and whether one was disabled (it answered 410 Gone). Never their secrets.", Effect::Read, Access::Needs(Scope::StudioManage), outbox::list_webhooks),
        spec(names::DELETE_WEBHOOK, "Delete a webhook endpoint", "Stop sending to a webhook endpoint; what was waiting for it is marked failed.", Effect::Change { idempotent: false }, Access::Needs(Scope::StudioManage), outbox::delete_webhook),
        spec(names::LIST_NOTIFICATIONS, "List notifications", "What the studio told whom about each change (webhook deliveries and e-mail) and how it went: pending with the next attempt's time, delivered, or failed with why. Pass next_cursor back as since to read on.", Effect::Read, Access::Needs(Scope::StudioRead), outbox::list_notifications),
    ]
}

// ---- helpers --------------------------------------------------------------------------------

impl Ctx {
    pub(crate) fn with<T>(&self, f: impl FnMut(&mut Store) -> Result<T, ToolError>) -> Result<T, ToolError> {
        self.pool.with(f)?
    }

    /// [`Ctx::with`] for a tool that writes: see [`crate::store::Pool::with_writing`].
    pub(crate) fn writing<T>(&self, f: impl FnMut(&mut Store) -> Result<T, ToolError>) -> Result<T, ToolError> {
        self.pool.with_writing(f)?
    }
}

pub(crate) fn time(tz: &StudioTz, field: &str, text: &str) -> Result<DateTime<Utc>, ToolError> {
    tz.parse(text).map_err(|e| ToolError::Fix(format!("{field}: {e}")))
}

/// A listing's span: `from` (default: the studio's now) to `to` (default: a year and a day on),
/// `to` after `from`.
pub(crate) fn span_ahead(studio: &crate::domain::Studio, from: Option<&str>, to: Option<&str>) -> Result<(DateTime<Utc>, DateTime<Utc>), ToolError> {
    let from = match from {
        Some(t) => time(&studio.tz, "from", t)?,
        None => studio.now(chrono::Utc::now()),
    };
    let to = match to {
        Some(t) => time(&studio.tz, "to", t)?,
        None => from + chrono::Duration::days(366),
    };
    if to <= from {
        return Err(ToolError::Fix("to must be after from".into()));
    }
    Ok((from, to))
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

/// Which sessions a change reaches: this one (the default), the following ones, or the series.
pub(crate) fn cancel_scope(arg: Option<ScopeArg>) -> CancelScope {
    match arg.unwrap_or(ScopeArg::Occurrence) {
        ScopeArg::Occurrence => CancelScope::Occurrence,
        ScopeArg::Following => CancelScope::Following,
        ScopeArg::Series => CancelScope::Series,
    }
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remedy_names_the_tool_for_its_kind() {
        assert_eq!(tool_remedy(Remedy::Reactivate("client")), r#"reactivate it with update_client {"active": true}"#);
        assert_eq!(tool_remedy(Remedy::Reactivate("engineer")), r#"reactivate it with update_engineer {"active": true}"#);
        assert_eq!(tool_remedy(Remedy::Reactivate("room")), r#"reactivate it with update_room {"active": true}"#);
    }
}
