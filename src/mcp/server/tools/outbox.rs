//! The outbox's tools: webhook endpoints (`create_webhook`, `list_webhooks`, `delete_webhook`,
//! for `studio:manage`), `list_notifications` (what was sent to whom and how it went, paged
//! like `list_changes`). (The studio's staff address is one of its settings, in `studio.rs`.) An endpoint's URL is checked here, with its host resolved, so that an
//! agent cannot point the server at the studio's own network without `--webhooks-to-private`.

use super::super::wire::*;
use super::{plural, Call, ToolError};
use crate::notify::webhook;
use crate::store::{NotificationQuery, Webhook, EVENT_TYPES};

fn millis(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)).unwrap_or_default()
}

fn webhook_out(hook: &Webhook) -> WebhookOut {
    WebhookOut {
        id: hook.id.clone(),
        url: hook.url.clone(),
        events: if hook.events.is_empty() { EVENT_TYPES.iter().map(|e| (*e).to_owned()).collect() } else { hook.events.clone() },
        created_at: hook.created_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        disabled: hook.disabled.as_ref().map(|(_, why)| why.clone()),
    }
}

pub fn create_webhook(ctx: &Call<'_>, a: CreateWebhookArgs) -> Result<(CreatedWebhookOut, String), ToolError> {
    let url = webhook::check_url(a.url.as_str(), ctx.webhooks_to_private, !ctx.webhooks_to_private).map_err(ToolError::Fix)?;
    let events: Vec<String> = a.events.into_vec().into_iter().map(|e| e.as_str().to_owned()).collect();
    for e in &events {
        if !EVENT_TYPES.contains(&e.as_str()) {
            return Err(ToolError::Fix(format!("events: {e:?} is not an event type; use one or more of {}", EVENT_TYPES.join(", "))));
        }
    }
    let secret = webhook::new_secret().map_err(|e| ToolError::Internal(format!("no randomness for a secret: {e}")))?;
    let actor = ctx.actor();
    let hook = ctx.with(|store| Ok(store.write_as(&actor, |w| w.create_webhook(url.as_str(), &events, &secret))?))?;
    let summary = format!("Created webhook endpoint {} for {}; its signing secret is shown this once.", hook.id, hook.url);
    Ok((CreatedWebhookOut { webhook: webhook_out(&hook), secret }, summary))
}

pub fn list_webhooks(ctx: &Call<'_>, _: NoArgs) -> Result<(WebhooksOut, String), ToolError> {
    let hooks = ctx.with(|store| Ok(store.webhooks()?))?;
    let summary = format!("{}.", plural(hooks.len(), "webhook endpoint", "webhook endpoints"));
    Ok((WebhooksOut { webhooks: hooks.iter().map(webhook_out).collect() }, summary))
}

pub fn delete_webhook(ctx: &Call<'_>, a: DeleteWebhookArgs) -> Result<(DeletedWebhookOut, String), ToolError> {
    let actor = ctx.actor();
    let hook = ctx.with(|store| Ok(store.write_as(&actor, |w| w.delete_webhook(a.id.as_str()))?))?;
    let summary = format!("Deleted webhook endpoint {} ({}); what was waiting for it is marked failed.", hook.id, hook.url);
    Ok((DeletedWebhookOut { deleted: webhook_out(&hook) }, summary))
}

fn encode_cursor(seq: i64) -> String {
    format!("n1.{seq:x}")
}

fn decode_cursor(text: &str) -> Result<i64, ToolError> {
    let bad = || ToolError::Fix("since: not a cursor this server gave; pass next_cursor unchanged, or leave since out to start from the first notification".into());
    let hex = text.strip_prefix("n1.").ok_or_else(bad)?;
    i64::from_str_radix(hex, 16).ok().filter(|n| *n >= 0).ok_or_else(bad)
}

pub fn list_notifications(ctx: &Call<'_>, a: ListNotificationsArgs) -> Result<(NotificationsOut, String), ToolError> {
    let limit = a.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ToolError::Fix("limit must be 1 to 1000".into()));
    }
    let since = a.since.as_deref().map(decode_cursor).transpose()?;
    let status = a.status.map(|s| match s {
        NotificationStatusArg::Pending => "pending",
        NotificationStatusArg::Delivered => "delivered",
        NotificationStatusArg::Failed => "failed",
    });
    let query = NotificationQuery { since, status: status.map(str::to_owned), limit: limit as usize + 1 };
    let mut found = ctx.with(|store| Ok(store.notifications(&query)?))?;
    let more = found.len() > limit as usize;
    found.truncate(limit as usize);
    let last = found.last().map_or(since.unwrap_or(0), |n| n.seq);
    let notifications = found
        .iter()
        .map(|n| NotificationOut {
            id: n.id.clone(),
            kind: n.kind.clone(),
            subject: n.subject.clone(),
            change: n.event_seq,
            channel: n.channel.clone(),
            to: n.target.clone(),
            status: n.status.clone(),
            attempts: n.attempts,
            created_at: millis(n.created_ms),
            next_attempt_at: n.next_attempt_ms.map(millis),
            last_error: n.last_error.clone(),
            done_at: n.done_ms.map(millis),
        })
        .collect();
    let summary = format!("{}{}.", plural(found.len(), "notification", "notifications"), if more { "; more on the next page" } else { "" });
    Ok((NotificationsOut { notifications, next_cursor: encode_cursor(last), more }, summary))
}
