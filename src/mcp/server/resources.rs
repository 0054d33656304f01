//! Every MCP resource the server has, listed and read in one place: the calendar of each room,
//! client and engineer as iCalendar (`text/calendar`), and each recorded reflow's plan as JSON.
//! Their URI templates are listed too, for clients and for completions. A resource another part
//! of the edge adds (a `ui://` view) belongs in [`list`] and [`read`] here, so there is one list.
//! Handlers are blocking: the server runs them off the async threads.

use super::tools::Ctx;
use super::wire;
use crate::domain::{CalendarOf, Id};
use crate::ics::{self, IcsError};
use rmcp::model::{
    CacheScope, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate,
};
use rmcp::ErrorData as McpError;

/// How many resources one `resources/list` page holds.
pub const PAGE: usize = 25;
/// How long a client may reuse a list or a read (the studio's lists change rarely; a calendar at
/// any booking, so reads are fresh for a short while only).
const LIST_TTL_MS: u64 = 60_000;
const READ_TTL_MS: u64 = 5_000;

pub const ROOM_CALENDAR: &str = "studioflow://calendars/rooms/{room}.ics";
pub const CLIENT_CALENDAR: &str = "studioflow://calendars/clients/{client}.ics";
pub const ENGINEER_CALENDAR: &str = "studioflow://calendars/engineers/{engineer}.ics";
pub const REFLOW_PLAN: &str = "studioflow://reflows/{reflow_id}.json";

const CALENDAR_PREFIX: &str = "studioflow://calendars/";
const REFLOW_PREFIX: &str = "studioflow://reflows/";

/// The URI of a calendar resource.
pub fn calendar_uri(of: &CalendarOf) -> String {
    format!("{CALENDAR_PREFIX}{}/{}.ics", of.plural(), of.id())
}

fn internal(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(e.to_string(), None)
}

fn store_error(e: crate::store::StoreError) -> McpError {
    if e.is_ours() { internal(e) } else { McpError::invalid_params(e.to_string(), None) }
}

/// The resource templates: one per kind of calendar, and the reflow plan.
pub fn templates() -> ListResourceTemplatesResult {
    let calendar = |template: &str, name: &str, title: &str, whose: &str| {
        ResourceTemplate::new(template, name)
            .with_title(title)
            .with_description(format!(
                "The bookings of one {whose} as iCalendar (RFC 5545), from {} days back to {} days ahead: one event per booking, \
                 its UID stable across moves, SEQUENCE raised on every change, cancelled sessions as STATUS:CANCELLED.",
                ics::DAYS_BACK,
                ics::DAYS_AHEAD
            ))
            .with_mime_type("text/calendar")
    };
    ListResourceTemplatesResult::with_all_items(vec![
        calendar(ROOM_CALENDAR, "room-calendar", "Room calendar", "room"),
        calendar(CLIENT_CALENDAR, "client-calendar", "Client calendar", "client"),
        calendar(ENGINEER_CALENDAR, "engineer-calendar", "Engineer calendar", "engineer"),
        ResourceTemplate::new(REFLOW_PLAN, "reflow-plan")
            .with_title("Reflow plan")
            .with_description(format!(
                "A recorded month reflow as JSON: its request, moves, unresolved bookings with reasons, and whether it was applied (the answer of {}).",
                super::tools::names::GET_REFLOW
            ))
            .with_mime_type("application/json"),
    ])
    .with_ttl_ms(LIST_TTL_MS)
    .with_cache_scope(CacheScope::Private)
}

/// Every resource, in a stable order (rooms, clients, engineers, reflows), a page at a time.
/// The cursor is the position of the page's first resource.
/// `extra` (the conformance fixtures' resources, in test builds) come last.
pub fn list(ctx: &Ctx, cursor: Option<&str>, extra: Vec<Resource>) -> Result<ListResourcesResult, McpError> {
    let start = match cursor {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| McpError::invalid_params(format!("cursor {text:?} is not one this server gave: start again without a cursor"), None))?,
    };
    let mut all = ctx
        .pool
        .with(|store| -> Result<Vec<Resource>, crate::store::StoreError> {
            let mut all = Vec::new();
            for room in store.rooms()?.iter() {
                let of = CalendarOf::Room(room.id.clone());
                all.push(calendar_resource(&of, &room.name));
            }
            for client in store.clients()? {
                all.push(calendar_resource(&CalendarOf::Client(client.id), &client.name));
            }
            for engineer in store.engineers()? {
                all.push(calendar_resource(&CalendarOf::Engineer(engineer.id), &engineer.name));
            }
            for id in store.reflow_ids()? {
                all.push(
                    Resource::new(format!("{REFLOW_PREFIX}{id}.json"), format!("reflow-{id}"))
                        .with_title(format!("Reflow {id}"))
                        .with_description(format!("The plan of reflow {id}: moves, unresolved bookings with reasons, applied or not."))
                        .with_mime_type("application/json"),
                );
            }
            Ok(all)
        })
        .map_err(store_error)?
        .map_err(store_error)?;
    all.extend(extra);
    if start > all.len() {
        return Err(McpError::invalid_params(format!("cursor {start} is past the end: start again without a cursor"), None));
    }
    let end = (start + PAGE).min(all.len());
    let mut result = ListResourcesResult::with_all_items(all[start..end].to_vec())
        .with_ttl_ms(LIST_TTL_MS)
        .with_cache_scope(CacheScope::Private);
    if end < all.len() {
        result.next_cursor = Some(end.to_string());
    }
    Ok(result)
}

fn calendar_resource(of: &CalendarOf, name: &str) -> Resource {
    Resource::new(calendar_uri(of), format!("{}-{}-calendar", of.kind(), of.id()))
        .with_title(format!("{name}'s calendar"))
        .with_description(format!("The bookings of {of} ({name}) as iCalendar."))
        .with_mime_type("text/calendar")
}

/// What a resource URI names.
enum Named {
    Calendar(CalendarOf),
    Reflow(String),
}

fn parse(uri: &str) -> Option<Named> {
    if let Some(rest) = uri.strip_prefix(CALENDAR_PREFIX) {
        let (kind, file) = rest.split_once('/')?;
        let id = file.strip_suffix(".ics")?;
        if id.is_empty() || id.contains('/') {
            return None;
        }
        return CalendarOf::new(kind, id).filter(|_| kind.ends_with('s')).map(Named::Calendar);
    }
    let id = uri.strip_prefix(REFLOW_PREFIX)?.strip_suffix(".json")?;
    let id = Id::parse(id).ok().filter(|parsed| parsed.as_str() == id && !id.contains('/'))?;
    Some(Named::Reflow(id.into_string()))
}

/// The error for a URI that names nothing: -32002 with the URI in `data`, which rmcp sends as
/// -32602 to clients of 2026-07-28 (SEP-2164) and as -32002 to older ones.
fn not_found(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!("no resource {uri}: resources/list and resources/templates/list show what there is"),
        Some(serde_json::json!({"uri": uri})),
    )
}

/// Reads one resource.
pub fn read(ctx: &Ctx, uri: &str) -> Result<ReadResourceResult, McpError> {
    let Some(named) = parse(uri) else { return Err(not_found(uri)) };
    let contents = match named {
        Named::Calendar(of) => {
            let text = ctx.pool.with(|store| ics::calendar(store, &of, None)).map_err(store_error)?;
            match text {
                Ok(text) => ResourceContents::text(text, uri).with_mime_type("text/calendar"),
                Err(IcsError::Unknown(_)) => return Err(not_found(uri)),
                Err(e) => return Err(internal(e)),
            }
        }
        Named::Reflow(id) => {
            let plan = ctx
                .pool
                .with(|store| -> Result<_, crate::store::StoreError> {
                    let tz = store.studio()?.tz;
                    Ok(store.reflow(&id)?.map(|record| wire::stored_reflow(&tz, &record)))
                })
                .map_err(store_error)?
                .map_err(store_error)?;
            let Some(plan) = plan else { return Err(not_found(uri)) };
            let text = serde_json::to_string_pretty(&plan).map_err(internal)?;
            ResourceContents::text(text, uri).with_mime_type("application/json")
        }
    };
    Ok(ReadResourceResult::new(vec![contents]).with_ttl_ms(READ_TTL_MS).with_cache_scope(CacheScope::Private))
}
