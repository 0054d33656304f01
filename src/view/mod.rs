//! The studio's view: one self-contained HTML document (`view.html`: a timeline of rooms and
//! bookings, and the review of a reflow) used in two places, as the MCP App that hosts render beside
//! a tool's result and as a page written by `studioflow report`. This module builds the page's data
//! from store reads and reflow records, and embeds it safely; it knows nothing of MCP, whose edge
//! serves the same document as a `ui://` resource and lets the host hand it a tool's result.

use crate::domain::{Booking, Status, StudioTz};
use crate::shapes;
use crate::reflow::{Month, ReflowError};
use crate::store::{Store, StoreError};
use serde::Serialize;
use std::collections::HashMap;

/// The view, with no data in it: what the MCP edge serves, and what [`page`] fills in.
pub const HTML: &str = include_str!("view.html");

/// The empty data block of [`HTML`]; a page replaces it with the data.
const DATA_SLOT: &str = r#"<script type="application/json" id="sf-data">null</script>"#;

/// Why a view could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Month(#[from] ReflowError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("there is no reflow {0:?}: reflow ids look like rf_0001 (a reflow's answer names its id)")]
    UnknownReflow(String),
    #[error("reflow {id} is of {its}, not of {asked}: leave out --month or give --month {its}")]
    OtherMonth { id: String, its: String, asked: String },
    #[error("the view's data could not be written: {0}")]
    Encode(String),
}

impl crate::error::Blame for ViewError {
    fn is_ours(&self) -> bool {
        match self {
            ViewError::Month(e) => e.is_ours(),
            ViewError::Store(e) => e.is_ours(),
            ViewError::UnknownReflow(_) | ViewError::OtherMonth { .. } => false,
            ViewError::Encode(_) => true,
        }
    }
}

/// Everything the view draws: the studio, a range of time, its rooms, offline windows and
/// bookings, and optionally one reflow. Field names follow the tools' answers, so the view reads
/// an embedded page and a host's tool result alike.
#[derive(Debug, Clone, Serialize)]
pub struct ViewData {
    pub studio: StudioOut,
    pub range: RangeOut,
    pub rooms: Vec<shapes::RoomOut>,
    pub windows: Vec<shapes::WindowOut>,
    pub bookings: Vec<BookingOut>,
    pub reflow: Option<shapes::ReflowOut>,
    /// The month in figures (as `studio_report` answers), shown above the timeline.
    pub figures: Option<crate::figures::MonthFigures>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StudioOut {
    pub name: String,
    pub tz: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RangeOut {
    pub month: String,
    pub from: String,
    pub to: String,
}

/// A booking as the tools write it out, with the names of its people: the view shows names.
#[derive(Debug, Clone, Serialize)]
pub struct BookingOut {
    #[serde(flatten)]
    pub booking: shapes::BookingOut,
    pub client_name: Option<String>,
    pub engineer_name: Option<String>,
}





/// The view of a month, and of one reflow if `reflow` names one. Without a month, the reflow's
/// month is shown; a reflow of another month than the one asked for is refused.
pub fn build(store: &Store, month: Option<&str>, reflow: Option<&str>) -> Result<ViewData, ViewError> {
    let record = match reflow {
        Some(id) => Some(store.reflow(id.trim())?.ok_or_else(|| ViewError::UnknownReflow(id.trim().to_owned()))?),
        None => None,
    };
    let month = match (month, &record) {
        (Some(text), Some(r)) => {
            let asked = Month::parse(text)?;
            if asked.to_string() != r.month {
                return Err(ViewError::OtherMonth { id: r.id.clone(), its: r.month.clone(), asked: asked.to_string() });
            }
            asked
        }
        (Some(text), None) => Month::parse(text)?,
        (None, Some(r)) => Month::parse(&r.month)?,
        (None, None) => return Err(ViewError::Month(ReflowError::invalid("month", "give a month (YYYY-MM) or a reflow id"))),
    };
    let studio = store.studio()?.clone();
    let tz = studio.tz;
    let (from, to) = month.bounds(&tz);
    let clients: HashMap<_, _> = store.clients()?.into_iter().map(|c| (c.id, c.name)).collect();
    let engineers: HashMap<_, _> = store.engineers()?.into_iter().map(|e| (e.id, e.name)).collect();
    let bookings = store
        .bookings_between(from, to)?
        .into_iter()
        .filter(|b| b.status != Status::Cancelled)
        .map(|b| booking(&tz, &b, &clients, &engineers))
        .collect();
    Ok(ViewData {
        studio: StudioOut { name: studio.name.clone(), tz: tz.to_string() },
        range: RangeOut { month: month.to_string(), from: tz.format(from), to: tz.format(to) },
        rooms: store.rooms()?.iter().map(|r| shapes::room(&tz, r.clone(), &[])).collect(),
        windows: store.offline_windows(None, from, to)?.iter().map(|w| shapes::window(&tz, w)).collect(),
        bookings,
        reflow: record.as_ref().map(|r| shapes::reflow(&tz, r)),
        figures: Some(crate::figures::month_figures(store, month)?),
    })
}

/// The view as a page with `data` embedded: one HTML document that needs nothing else.
pub fn page(data: &ViewData) -> Result<String, ViewError> {
    let json = serde_json::to_string(data).map_err(|e| ViewError::Encode(e.to_string()))?;
    Ok(embed(&json))
}

/// [`HTML`] with `json` in its data block. Inside a `<script>` element only `</script>` (or
/// `<!--`) could end it early; `<`, `>` and `&` only ever occur inside JSON strings, where
/// `\u003c` and friends mean the same, so they are escaped and the data can hold anything.
/// U+2028 and U+2029 are escaped too, for older script parsers.
pub fn embed(json: &str) -> String {
    let mut safe = String::with_capacity(json.len() + 64);
    for c in json.chars() {
        match c {
            '<' => safe.push_str("\\u003c"),
            '>' => safe.push_str("\\u003e"),
            '&' => safe.push_str("\\u0026"),
            '\u{2028}' => safe.push_str("\\u2028"),
            '\u{2029}' => safe.push_str("\\u2029"),
            c => safe.push(c),
        }
    }
    HTML.replacen(DATA_SLOT, &format!(r#"<script type="application/json" id="sf-data">{safe}</script>"#), 1)
}

fn booking(
    tz: &StudioTz,
    b: &Booking,
    clients: &HashMap<crate::domain::ClientId, String>,
    engineers: &HashMap<crate::domain::EngineerId, String>,
) -> BookingOut {
    BookingOut {
        booking: shapes::booking(tz, b),
        client_name: clients.get(&b.client).cloned(),
        engineer_name: b.engineer.as_ref().and_then(|e| engineers.get(e).cloned()),
    }
}



#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_that_holds_a_closing_script_tag_stays_inside_its_block() {
        let page = embed(r#"{"reason":"</script><script>alert(1)</script> & <!-- x"}"#);
        let block = page.split(r#"id="sf-data">"#).nth(1).unwrap();
        let (inside, _) = block.split_once("</script>").unwrap();
        assert!(inside.ends_with('}'), "the data block ends where the data ends: {inside}");
        assert!(!inside.contains('<') && !inside.contains('&'));
        let back: serde_json::Value = serde_json::from_str(inside).unwrap();
        assert_eq!(back["reason"], "</script><script>alert(1)</script> & <!-- x");
    }
}
