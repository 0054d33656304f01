//! The arguments and answers of the outbox's tools (webhook endpoints and `list_notifications`),
//! kept beside the other wire types and in the same form: `deny_unknown_fields`, validated text
//! types, doc comments as the schema's text.

use crate::domain::{Id, List};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookArgs {
    /// Where studioflow POSTs each event: an https URL of a public address (loopback, private and
    /// link-local addresses are refused unless the server runs with --webhooks-to-private).
    pub url: Id,
    /// The event types to send (default: all): booking.created, booking.updated, booking.moved,
    /// booking.cancelled, booking.displaced, hold.expired, reflow.applied, reflow.undone,
    /// room.offline, room.online, waitlist.offered.
    #[serde(default)]
    pub events: List<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteWebhookArgs {
    /// The endpoint's id (wh_…), as list_webhooks shows it.
    pub id: Id,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListNotificationsArgs {
    /// The `next_cursor` of an earlier answer: only notifications written after it. Without it,
    /// from the first.
    pub since: Option<Id>,
    /// Only notifications in this state: pending (waiting for its next attempt), delivered or failed.
    pub status: Option<NotificationStatusArg>,
    /// Notifications per page, 1 to 1000 (default 100).
    pub limit: Option<u32>,
}

/// Where a notification stands.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotificationStatusArg {
    Pending,
    Delivered,
    Failed,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookOut {
    pub id: String,
    pub url: String,
    /// The event types it receives.
    pub events: Vec<String>,
    /// When it was created (UTC, RFC 3339).
    pub created_at: String,
    /// Why it no longer receives anything (it answered 410 Gone), if so.
    pub disabled: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CreatedWebhookOut {
    pub webhook: WebhookOut,
    /// The signing secret (whsec_…), shown this once: the receiver verifies each delivery's
    /// webhook-signature with it (Standard Webhooks).
    pub secret: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhooksOut {
    pub webhooks: Vec<WebhookOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeletedWebhookOut {
    pub deleted: WebhookOut,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NotificationOut {
    /// The message id: the webhook-id header, the same on every attempt.
    pub id: String,
    /// The event type: booking.moved, reflow.applied, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The booking, reflow, room or window it tells of.
    pub subject: String,
    /// The change it tells of (list_changes' seq).
    pub change: i64,
    /// "webhook" or "email".
    pub channel: String,
    /// Whom it goes to: the webhook endpoint's id, or the e-mail address.
    pub to: String,
    /// pending, delivered or failed.
    pub status: String,
    pub attempts: i64,
    /// When it was written (UTC, RFC 3339).
    pub created_at: String,
    /// When the next attempt is due, while pending.
    pub next_attempt_at: Option<String>,
    /// What went wrong last (a refusal, a status, a timeout), if anything.
    pub last_error: Option<String>,
    /// When it was delivered or given up.
    pub done_at: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NotificationsOut {
    pub notifications: Vec<NotificationOut>,
    /// Pass as `since` to read what comes next.
    pub next_cursor: String,
    /// Whether more are already there to read.
    pub more: bool,
}
