//! `subscriptions/listen` (protocol 2026-07-28) for calendar resources: a client that asks for
//! `resourceSubscriptions` of `studioflow://calendars/…` URIs is acknowledged (by rmcp) with the
//! ones accepted here, and then gets `notifications/resources/updated` for each of them whenever a
//! booking in that calendar changes, tagged by rmcp with the subscription's id. Changes are read
//! from the history (every server's commits, in commit order), so a change made through another
//! server on the same PostgreSQL database is seen too; nothing is kept in memory between polls
//! but the last event read.

use super::tools::Ctx;
use crate::store::{Entity, EventQuery};
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;
use rmcp::ErrorData as McpError;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// How often the history is read for new changes.
const POLL: Duration = Duration::from_millis(300);
/// How many changes one read takes at most.
const BATCH: usize = 1000;
/// How many calendars one subscription may name.
const MAX_URIS: usize = 200;

const PREFIX: &str = "studioflow://calendars/";

/// Whether `uri` is a calendar's URI: `studioflow://calendars/(rooms|clients|engineers)/ID.ics`.
fn is_calendar(uri: &str) -> bool {
    let Some(rest) = uri.strip_prefix(PREFIX) else { return false };
    let Some((kind, file)) = rest.split_once('/') else { return false };
    let Some(id) = file.strip_suffix(".ics") else { return false };
    ["rooms", "clients", "engineers"].contains(&kind) && !id.is_empty() && !id.contains(['/', '?', '#']) && id.len() <= 200
}

/// What this server accepts of a requested filter: the calendar URIs (up to [`MAX_URIS`]); no
/// list-changed notifications (the lists of tools and prompts never change while it runs).
pub fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let uris: Vec<String> = requested.resource_subscriptions.iter().flatten().filter(|u| is_calendar(u)).take(MAX_URIS).cloned().collect();
    SubscriptionFilter::builder().resource_subscriptions(uris).build()
}

/// The calendars a booking event touches: the booking's room, client and engineer now, and any
/// that the change took it away from.
fn touched(event: &crate::store::Event, now: Option<&crate::domain::Booking>) -> Vec<String> {
    let mut out = Vec::new();
    for (field, kind) in [("room", "rooms"), ("client", "clients"), ("engineer", "engineers")] {
        for side in [&event.before, &event.after] {
            if let Some(id) = side.get(field).and_then(|v| v.as_str()) {
                out.push(format!("{PREFIX}{kind}/{id}.ics"));
            }
        }
    }
    if let Some(b) = now {
        out.push(format!("{PREFIX}rooms/{}.ics", b.room.as_str()));
        out.push(format!("{PREFIX}clients/{}.ics", b.client.as_str()));
        if let Some(e) = &b.engineer {
            out.push(format!("{PREFIX}engineers/{}.ics", e.as_str()));
        }
    }
    out
}

/// Runs one subscription until the client cancels it or the connection goes.
pub async fn listen(ctx: Arc<Ctx>, subscription: SubscriptionContext) -> Result<(), McpError> {
    let wanted: HashSet<String> = subscription.accepted().resource_subscriptions.iter().flatten().cloned().collect();
    if wanted.is_empty() {
        subscription.cancelled().await;
        return Ok(());
    }
    let internal = |e: String| McpError::internal_error(e, None);
    let pool = ctx.pool.clone();
    let mut after = tokio::task::spawn_blocking(move || pool.with(|store| store.last_event_seq()))
        .await
        .map_err(|e| internal(e.to_string()))?
        .and_then(|r| r)
        .map_err(|e| internal(e.to_string()))?;
    loop {
        tokio::select! {
            () = subscription.cancelled() => return Ok(()),
            () = tokio::time::sleep(POLL) => {}
        }
        let pool = ctx.pool.clone();
        let read = tokio::task::spawn_blocking(move || {
            pool.with(|store| -> Result<(i64, BTreeSet<String>), crate::store::StoreError> {
                let events = store.events(&EventQuery { after: Some(after), entity: Some(Entity::Booking), id: None, limit: BATCH })?;
                let mut uris = BTreeSet::new();
                let mut last = after;
                for e in &events {
                    let now = store.booking(&crate::domain::BookingId::new(e.id.as_str()))?;
                    uris.extend(touched(e, now.as_ref()));
                    last = e.seq;
                }
                // Events of other kinds after the last booking event are passed over too.
                Ok((if events.len() < BATCH { store.last_event_seq()?.max(last) } else { last }, uris))
            })
        })
        .await;
        let (last, uris) = match read {
            Ok(Ok(Ok(read))) => read,
            Ok(Ok(Err(e))) | Ok(Err(e)) => {
                tracing::warn!(error = %e, "reading changes for a subscription failed; trying again");
                continue;
            }
            Err(_) => return Ok(()),
        };
        after = last;
        for uri in uris.into_iter().filter(|u| wanted.contains(u)) {
            if subscription.sink().notify_resource_updated(uri).await.is_err() {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_calendar_uris_are_accepted() {
        let requested = SubscriptionFilter::builder()
            .resource_subscriptions([
                "studioflow://calendars/rooms/studio-b.ics",
                "studioflow://calendars/clients/client-001.ics",
                "studioflow://reflows/rf_0001.json",
                "studioflow://calendars/rooms/.ics",
                "studioflow://calendars/desks/a.ics",
                "ui://studioflow/view.html",
            ])
            .build();
        let accepted = accepted(&requested);
        assert_eq!(
            accepted.resource_subscriptions.unwrap(),
            ["studioflow://calendars/rooms/studio-b.ics", "studioflow://calendars/clients/client-001.ics"]
        );
    }
}
