//! `studioflow calendar` and `studioflow feed`: a calendar as iCalendar on stdout, and the secrets
//! of subscribable feed URLs (create shows the URL once; list; revoke).

use crate::store::Target;
use super::{open_existing, CommandError, CommandResult};
use crate::domain::CalendarOf;
use crate::store::Store;
use crate::{feeds, ics};
use anyhow::anyhow;
use chrono::{DateTime, NaiveDate, Utc};
use std::io::Write;

/// What a feed command does.
pub enum FeedAction {
    Create { of: CalendarOf, label: Option<String>, base_url: String },
    List,
    Revoke { id: String },
}

/// A `--from`/`--to` bound: a date (its local midnight) or a time, with an offset or local.
fn bound(store: &Store, flag: &str, text: &str) -> Result<DateTime<Utc>, CommandError> {
    let tz = store.studio()?.tz;
    if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(tz.start_of_day(day));
    }
    tz.parse(text).map_err(|e| CommandError::Input(anyhow!("{flag}: {e}")))
}

/// `calendar`: prints a calendar as iCalendar, over `[from, to)` or the default window.
pub fn calendar(db: &Target, of: &CalendarOf, from: Option<&str>, to: Option<&str>) -> CommandResult {
    let store = open_existing(db)?;
    let window = match (from, to) {
        (None, None) => None,
        (from, to) => {
            let now = store.studio()?.now(Utc::now());
            let (default_from, default_to) = ics::default_window(now);
            let from = from.map(|f| bound(&store, "--from", f)).transpose()?.unwrap_or(default_from);
            let to = to.map(|t| bound(&store, "--to", t)).transpose()?.unwrap_or(default_to);
            Some((from, to))
        }
    };
    let text = ics::calendar(&store, of, window)?;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// `feed`: creates, lists or revokes calendar feed secrets.
pub fn feed(db: &Target, action: FeedAction) -> CommandResult {
    let mut store = open_existing(db)?;
    let mut out = std::io::stdout().lock();
    match action {
        FeedAction::Create { of, label, base_url } => {
            let (record, secret) = feeds::create(&mut store, &of, label.as_deref(), Utc::now())?;
            eprintln!("Created feed {} for the {}. The URL is shown only this once; revoke it with `studioflow feed revoke --db {} {}`.", record.id, of, db, record.id);
            writeln!(out, "{}{}", base_url.trim_end_matches('/'), feeds::path(&of, &secret))?;
        }
        FeedAction::List => {
            for feed in store.feeds(None)? {
                let state = match feed.revoked {
                    Some(at) => format!("revoked {}", at.format("%Y-%m-%d %H:%M UTC")),
                    None => "active".to_owned(),
                };
                writeln!(out, "{}\t{}\t{}\t{}\t{}", feed.id, feed.calendar, feed.created.format("%Y-%m-%d %H:%M UTC"), state, feed.label.unwrap_or_default())?;
            }
        }
        FeedAction::Revoke { id } => {
            if !store.write_with(|w| w.revoke_feed(&id, Utc::now()))? {
                return Err(CommandError::Input(anyhow!("there is no active feed {id}: `studioflow feed list` shows them")));
            }
            writeln!(out, "Revoked {id}.")?;
        }
    }
    Ok(())
}
