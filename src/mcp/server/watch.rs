//! `subscriptions/listen` (protocol 2026-07-28) for calendar resources: a client that asks for
//! `resourceSubscriptions` of `studioflow://calendars/…` URIs is acknowledged (by rmcp) with the
//! ones accepted here, and then gets `notifications/resources/updated` for each of them whenever a
//! booking in that calendar changes, tagged by rmcp with the subscription's id. Changes are read
//! from the history (every server's commits, in commit order), so a change made through another
//! server on the same PostgreSQL database is seen too; nothing is kept in memory between polls
//! but the last event read. A legacy session's `resources/subscribe` (2025-11-25) is served from
//! the same reading of the history ([`SessionSubscriptions`]).

use super::tools::Ctx;
use crate::store::{Entity, EventQuery};
use rmcp::model::{ResourceUpdatedNotificationParam, SubscriptionFilter};
use rmcp::service::{Peer, RoleServer, SubscriptionContext};
use rmcp::ErrorData as McpError;
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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

/// The history read forward from where a watcher started: each read gives the calendars that the
/// booking changes since the last read touched.
struct Changes {
    after: i64,
}

impl Changes {
    /// Starts after the last change committed now.
    async fn start(ctx: &Ctx) -> Result<Changes, McpError> {
        let internal = |e: String| McpError::internal_error(e, None);
        let pool = ctx.pool.clone();
        let after = tokio::task::spawn_blocking(move || pool.with(|store| store.last_event_seq()))
            .await
            .map_err(|e| internal(e.to_string()))?
            .and_then(|r| r)
            .map_err(|e| internal(e.to_string()))?;
        Ok(Changes { after })
    }

    /// The calendars touched since the last read; a failed read is logged and tried again at the
    /// next one (nothing is skipped). `None` when the runtime is stopping.
    async fn read(&mut self, ctx: &Ctx) -> Option<BTreeSet<String>> {
        let pool = ctx.pool.clone();
        let after = self.after;
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
        match read {
            Ok(Ok(Ok((last, uris)))) => {
                self.after = last;
                Some(uris)
            }
            Ok(Ok(Err(e))) | Ok(Err(e)) => {
                tracing::warn!(error = %e, "reading changes for a subscription failed; trying again");
                Some(BTreeSet::new())
            }
            Err(_) => None,
        }
    }
}

/// Runs one subscription until the client cancels it, the connection goes, or the server begins
/// to stop (`stopping`).
pub async fn listen(ctx: Arc<Ctx>, subscription: SubscriptionContext, stopping: CancellationToken) -> Result<(), McpError> {
    let wanted: HashSet<String> = subscription.accepted().resource_subscriptions.iter().flatten().cloned().collect();
    if wanted.is_empty() {
        tokio::select! {
            () = subscription.cancelled() => {}
            () = stopping.cancelled() => {}
        }
        return Ok(());
    }
    let mut changes = Changes::start(&ctx).await?;
    loop {
        tokio::select! {
            () = subscription.cancelled() => return Ok(()),
            () = stopping.cancelled() => return Ok(()),
            () = tokio::time::sleep(POLL) => {}
        }
        let Some(uris) = changes.read(&ctx).await else { return Ok(()) };
        for uri in uris.into_iter().filter(|u| wanted.contains(u)) {
            if subscription.sink().notify_resource_updated(uri).await.is_err() {
                return Ok(());
            }
        }
    }
}

/// The calendars a legacy session subscribed to with `resources/subscribe` (2025-11-25), and
/// whether its watcher runs. One per session: stdio's one client, or an HTTP session of rmcp's
/// legacy session mode. The watcher starts at the first subscription and sends
/// `notifications/resources/updated` on the session (over HTTP, on the stream the client opened
/// with GET) until the session ends.
#[derive(Clone, Default)]
pub struct SessionSubscriptions(Arc<Mutex<Subscribed>>);

#[derive(Default)]
struct Subscribed {
    uris: HashSet<String>,
    watching: bool,
}

impl SessionSubscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Subscribed> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Subscribes the session to a calendar's URI; the error says what to change.
    pub fn subscribe(&self, ctx: Arc<Ctx>, uri: &str, peer: Peer<RoleServer>, stopping: CancellationToken) -> Result<(), McpError> {
        if !is_calendar(uri) {
            return Err(McpError::invalid_params(
                format!("uri {uri:?} cannot be subscribed to: only calendars change, studioflow://calendars/(rooms|clients|engineers)/ID.ics (resources/templates/list)"),
                Some(serde_json::json!({"uri": uri})),
            ));
        }
        let mut subscribed = self.lock();
        if subscribed.uris.len() >= MAX_URIS && !subscribed.uris.contains(uri) {
            return Err(McpError::invalid_params(format!("a session may subscribe to {MAX_URIS} calendars at most: unsubscribe from one first"), None));
        }
        subscribed.uris.insert(uri.to_owned());
        if !subscribed.watching {
            subscribed.watching = true;
            tokio::spawn(watch_session(ctx, self.clone(), peer, stopping));
        }
        Ok(())
    }

    /// Ends the session's subscription to `uri` (nothing to do if it had none).
    pub fn unsubscribe(&self, uri: &str) {
        self.lock().uris.remove(uri);
    }
}

/// A legacy session's watcher: reads the history as `listen` does, and tells the session of each
/// change to a calendar it is subscribed to, until the session ends.
async fn watch_session(ctx: Arc<Ctx>, subscriptions: SessionSubscriptions, peer: Peer<RoleServer>, stopping: CancellationToken) {
    if let Ok(mut changes) = Changes::start(&ctx).await {
        'session: loop {
            tokio::time::sleep(POLL).await;
            if peer.is_transport_closed() || stopping.is_cancelled() {
                break;
            }
            let Some(uris) = changes.read(&ctx).await else { break };
            let wanted: Vec<String> = {
                let subscribed = subscriptions.lock();
                uris.into_iter().filter(|u| subscribed.uris.contains(u)).collect()
            };
            for uri in wanted {
                if peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await.is_err() {
                    break 'session;
                }
            }
        }
    }
    subscriptions.lock().watching = false;
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
