//! `studioflow webhook`: the studio's webhook endpoints (README: "Telling people"). `create`
//! checks the URL and the event types, prints the signing secret once (`whsec_…`); `rotate`
//! prints a new one (the old one signs beside it for a while); `list`, `delete` and `deliveries`
//! (the latest attempts: time, status, answer) read and change them.
//! Every change is recorded in the history as the operator's. The flags are declared here, and
//! `main` delegates to them.

use super::{open_existing, CommandError, CommandResult, OPERATOR};
use crate::domain::Actor;
use crate::notify::webhook;
use crate::store::{Target, Webhook, EVENT_TYPES};
use anyhow::anyhow;
use serde_json::json;

/// What a webhook command does.
#[derive(clap::Subcommand)]
pub enum WebhookCommand {
    /// Create an endpoint; its signing secret (whsec_…) is printed once, on standard output.
    Create {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// Where to POST: https, to a public address (a private one is delivered to only by
        /// `serve --webhooks-to-private`, which this flag acknowledges).
        #[arg(long)]
        url: String,
        /// The event types to send, comma-separated (default: all of them).
        #[arg(long, value_delimiter = ',')]
        events: Vec<String>,
        /// Accept a loopback, private or link-local address (or plain http): the server delivers
        /// to it only with `serve --webhooks-to-private`.
        #[arg(long)]
        private: bool,
    },
    /// List the endpoints (never their secrets).
    List {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// Print a JSON array, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Delete an endpoint: nothing more is sent to it, and what was waiting is marked failed.
    Delete {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        id: String,
    },
    /// Give an endpoint a new signing secret (printed once); the old one keeps signing beside it
    /// for --keep-old-hours, so the receiver can switch without refusing a delivery.
    Rotate {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        id: String,
        /// Hours the old secret still signs (0 to 168).
        #[arg(long, default_value_t = 24)]
        keep_old_hours: i64,
    },
    /// The latest delivery attempts to an endpoint: time, notification, status, answer.
    Deliveries {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        id: String,
        /// How many attempts, newest first.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Print a JSON array, for scripts.
        #[arg(long)]
        json: bool,
    },
}

/// An endpoint as `list --json` prints it.
pub fn webhook_json(hook: &Webhook) -> serde_json::Value {
    json!({
        "id": hook.id,
        "url": hook.url,
        "events": if hook.events.is_empty() { EVENT_TYPES.iter().map(|e| e.to_string()).collect() } else { hook.events.clone() },
        "created_at": hook.created_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "disabled": hook.disabled.as_ref().map(|(at, why)| json!({ "at": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), "why": why })),
    })
}

/// Event types from outside, checked: each must be one of [`EVENT_TYPES`].
pub fn check_events(events: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for e in events.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        if !EVENT_TYPES.contains(&e) {
            return Err(format!("{e:?} is not an event type; use one or more of {}", EVENT_TYPES.join(", ")));
        }
        out.push(e.to_owned());
    }
    Ok(out)
}

pub fn webhook(action: WebhookCommand) -> CommandResult {
    match action {
        WebhookCommand::Create { db, url, events, private } => {
            let parsed = webhook::check_url(&url, private, !private).map_err(|e| CommandError::Input(anyhow!(e)))?;
            let events = check_events(&events).map_err(|e| CommandError::Input(anyhow!("--events: {e}")))?;
            let secret = webhook::new_secret().map_err(|e| CommandError::Failed(anyhow!("no randomness for the secret: {e}")))?;
            let mut store = open_existing(&db)?;
            let hook = store.write_as(&Actor::new(OPERATOR, "webhook create"), |w| w.create_webhook(parsed.as_str(), &events, &secret))?;
            eprintln!("Created webhook endpoint {} for {}. Its signing secret, shown this once:", hook.id, hook.url);
            println!("{secret}");
            Ok(())
        }
        WebhookCommand::List { db, json } => {
            let hooks = open_existing(&db)?.webhooks()?;
            if json {
                println!("{}", serde_json::Value::Array(hooks.iter().map(webhook_json).collect()));
            } else if hooks.is_empty() {
                eprintln!("No webhook endpoints: `studioflow webhook create --db {db} --url https://…` makes one.");
            } else {
                for hook in &hooks {
                    let events = if hook.events.is_empty() { "all events".to_owned() } else { hook.events.join(",") };
                    let state = hook.disabled.as_ref().map_or("live".to_owned(), |(_, why)| format!("disabled: {why}"));
                    println!("{}\t{}\t{}\t{}", hook.id, hook.url, events, state);
                }
            }
            Ok(())
        }
        WebhookCommand::Delete { db, id } => {
            let hook = open_existing(&db)?.write_as(&Actor::new(OPERATOR, "webhook delete"), |w| w.delete_webhook(id.trim()))?;
            eprintln!("Deleted webhook endpoint {} ({}).", hook.id, hook.url);
            Ok(())
        }
        WebhookCommand::Rotate { db, id, keep_old_hours } => {
            if !(0..=168).contains(&keep_old_hours) {
                return Err(CommandError::Input(anyhow!("--keep-old-hours must be 0 to 168")));
            }
            let secret = webhook::new_secret().map_err(|e| CommandError::Failed(anyhow!("no randomness for the secret: {e}")))?;
            let until = chrono::Utc::now() + chrono::Duration::hours(keep_old_hours);
            open_existing(&db)?.write_as(&Actor::new(OPERATOR, "webhook rotate"), |w| w.rotate_webhook_secret(id.trim(), &secret, until))?;
            eprintln!("Rotated the signing secret of {}; the old one signs beside it for {keep_old_hours} h. The new one, shown this once:", id.trim());
            println!("{secret}");
            Ok(())
        }
        WebhookCommand::Deliveries { db, id, limit, json } => {
            if !(1..=1000).contains(&limit) {
                return Err(CommandError::Input(anyhow!("--limit must be 1 to 1000")));
            }
            let store = open_existing(&db)?;
            if store.webhook_endpoint(id.trim())?.is_none() {
                return Err(CommandError::Input(anyhow!("no webhook endpoint {id:?}: `studioflow webhook list --db {db}` shows them")));
            }
            let attempts = store.webhook_deliveries(id.trim(), limit)?;
            let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)).unwrap_or_default();
            if json {
                let list: Vec<_> = attempts
                    .iter()
                    .map(|a| json!({ "at": at(a.at_ms), "notification": a.notification, "attempt": a.attempt, "ok": a.ok, "status": a.http_status, "answer": a.answer, "duration_ms": a.duration_ms }))
                    .collect();
                println!("{}", serde_json::Value::Array(list));
            } else if attempts.is_empty() {
                eprintln!("No delivery attempts to {id} yet.");
            } else {
                for a in &attempts {
                    let status = a.http_status.map_or("-".to_owned(), |s| s.to_string());
                    let answer: String = a.answer.as_deref().unwrap_or("").chars().take(80).map(|c| if c.is_control() { ' ' } else { c }).collect();
                    println!("{}\t{}\t#{}\t{}\t{}\t{}", at(a.at_ms), a.notification, a.attempt, if a.ok { "ok" } else { "failed" }, status, answer);
                }
            }
            Ok(())
        }
    }
}
