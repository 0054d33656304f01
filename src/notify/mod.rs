//! Telling people: the delivery worker that `serve` starts. It claims due notifications from the
//! store's outbox after they commit (a lease on the database's clock; on PostgreSQL each row goes
//! to one server's worker), sends each to its destination (a webhook, `webhook.rs`, or an e-mail,
//! `mail.rs`, only when `serve --smtp` gave a server), and records the attempt with what follows
//! it (done, a retry on the schedule below or after `Retry-After`, given up, the endpoint disabled
//! on a 410, or an e-mail refused for good by a 5xx) in one transaction fenced on the claim. A
//! crash between commit and delivery loses nothing: the rows stay pending and are claimed again.
//! It knows no MCP.

pub mod mail;
pub mod webhook;

use crate::domain::Actor;
use crate::store::{Attempt, Claimed, Next, Pool, StoreError};
use std::sync::Arc;
use std::time::Duration;

/// Seconds to wait after the 1st, 2nd, ... 7th failed attempt before the next (the Standard
/// Webhooks schedule: at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); the 8th failure
/// gives up.
pub const SCHEDULE: [u64; 7] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
/// Attempts before giving up.
pub const MAX_ATTEMPTS: i64 = SCHEDULE.len() as i64 + 1;
/// The longest `Retry-After` honoured as it is; a longer one waits this long.
const MAX_RETRY_AFTER: u64 = 36_000;
/// How often due notifications are looked for.
const POLL: Duration = Duration::from_millis(250);
/// How long a claim lasts: longer than an attempt's timeout, so a live worker never loses one.
const CLAIM_MS: i64 = 60_000;
/// Deliveries in flight at once per server.
const IN_FLIGHT: usize = 32;
/// How long an e-mail may wait for its first attempt (for a server with `--smtp`): past this its
/// news is stale (the session may have moved again since), so it is failed, never sent late.
pub const MAIL_STALE_MS: i64 = 24 * 3_600_000;
/// How long one e-mail's whole SMTP exchange may take (each command has the attempt's timeout as
/// well): well inside a claim, so that no other worker claims a message while it is being sent.
const MAIL_EXCHANGE: Duration = Duration::from_secs(45);

/// How the worker delivers.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `serve --webhooks-to-private`: endpoints may be loopback, private or link-local addresses.
    pub allow_private: bool,
    /// This server's name in claims (`host/pid/random`, `crate::tasks::process::server_name`), so
    /// that a server starting later can tell whether the holder of a claim is gone.
    pub server: String,
    /// How long an attempt may take: [`webhook::TIMEOUT`], shorter only in tests.
    pub timeout: Duration,
    /// `serve --smtp`: where e-mail goes. Without it no e-mail is attempted: this server leaves
    /// e-mail notifications pending for one that has it.
    pub mailer: Option<mail::Mailer>,
}

/// What follows an attempt that got `status` (None: no answer) after `made` attempts in all, with
/// the receiver's `Retry-After` and what went wrong; `jitter` in [-1, 1] spreads retries by 10 %.
pub fn next_after(made: i64, status: Option<u16>, retry_after: Option<u64>, error: &str, jitter: f64) -> Next {
    match status {
        Some(200..=299) => return Next::Done,
        Some(410) => return Next::Disable("the endpoint answered 410 Gone: it is disabled".into()),
        _ => {}
    }
    if made >= MAX_ATTEMPTS {
        return Next::GiveUp(format!("gave up after {made} attempts; the last: {error}"));
    }
    let seconds = match retry_after {
        Some(s) => s.min(MAX_RETRY_AFTER) as f64,
        None => {
            let base = SCHEDULE[(made.max(1) - 1) as usize] as f64;
            base * (1.0 + 0.1 * jitter.clamp(-1.0, 1.0))
        }
    };
    Next::RetryIn((seconds * 1000.0).round() as i64)
}

/// A number in [-1, 1] from the OS's randomness (0 if it has none to give).
fn jitter() -> f64 {
    let mut byte = [0u8; 2];
    if getrandom::fill(&mut byte).is_err() {
        return 0.0;
    }
    f64::from(u16::from_le_bytes(byte)) / f64::from(u16::MAX) * 2.0 - 1.0
}

/// The holder a claim names: its first three parts, `host/pid/random` (the fourth is per claim).
fn holder(claim: &str) -> String {
    claim.splitn(4, '/').take(3).collect::<Vec<_>>().join("/")
}

/// Delivers notifications for as long as the server runs. At start, the claims of holders that
/// ran on this machine and are gone (a server killed mid-delivery) are let go at once; a live
/// holder's (another server on the same SQLite file or PostgreSQL database) and another
/// machine's are left to their leases, so nothing is sent twice.
pub async fn run(pool: Arc<Pool>, delivery: Delivery) {
    let client = match webhook::client(delivery.allow_private, delivery.timeout) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "no webhooks will be delivered");
            return;
        }
    };
    let released = {
        let pool = pool.clone();
        let me = delivery.server.clone();
        tokio::task::spawn_blocking(move || {
            pool.with_unsettled(|store| {
                let gone: Vec<String> = store.notification_claims()?.into_iter().filter(|c| crate::tasks::process::is_dead_here(&holder(c), &me)).collect();
                store.release_notification_claims(&gone)
            })
        })
        .await
    };
    if let Ok(Ok(Ok(n))) = released
        && n > 0
    {
        tracing::info!(released = n, "took back deliveries a stopped server had claimed");
    }
    let email = delivery.mailer.is_some();
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let free = slots.available_permits();
        if free == 0 {
            continue;
        }
        let claim = format!("{}/{}", delivery.server, crate::auth::secret::random(5).unwrap_or_default());
        let claimed = {
            let pool = pool.clone();
            tokio::task::spawn_blocking(move || pool.with_unsettled(|store| store.claim_notifications(&claim, CLAIM_MS, free, email)))
        };
        let claimed = match claimed.await {
            Ok(Ok(Ok(c))) => c,
            Ok(Ok(Err(StoreError::NoStudio))) | Ok(Err(StoreError::NoStudio)) => continue,
            Ok(Ok(Err(e))) | Ok(Err(e)) => {
                tracing::warn!(error = %e, "claiming notifications failed");
                continue;
            }
            Err(_) => break,
        };
        for one in claimed {
            let Ok(permit) = slots.clone().acquire_owned().await else { return };
            let (pool, client, delivery) = (pool.clone(), client.clone(), delivery.clone());
            tokio::spawn(async move {
                deliver(&pool, &client, &delivery, one).await;
                drop(permit);
            });
        }
    }
}

/// One attempt at one claimed notification, and its record.
async fn deliver(pool: &Arc<Pool>, client: &reqwest::Client, delivery: &Delivery, claimed: Claimed) {
    if claimed.channel == "email" {
        return deliver_email(pool, delivery, claimed).await;
    }
    let target = claimed.target.clone();
    let endpoint = {
        let pool = pool.clone();
        tokio::task::spawn_blocking(move || pool.with_unsettled(|store| store.webhook_endpoint(&target))).await
    };
    let endpoint = match endpoint {
        Ok(Ok(Ok(e))) => e,
        Ok(Ok(Err(e))) | Ok(Err(e)) => {
            tracing::warn!(error = %e, notification = %claimed.id, "reading a webhook endpoint failed; the claim lapses and it is tried again");
            return;
        }
        Err(_) => return,
    };
    let started = std::time::Instant::now();
    let at_ms = chrono::Utc::now().timestamp_millis();
    let (attempt, next) = match endpoint {
        Some(endpoint) if endpoint.live => {
            let answer = webhook::send(client, &endpoint.url, delivery.allow_private, &endpoint.secrets, &claimed.id, &claimed.payload).await;
            let ok = answer.status.is_some_and(|s| (200..300).contains(&s));
            let error = match answer.status {
                Some(s) => format!("HTTP {s}"),
                None => answer.text.clone(),
            };
            let next = next_after(claimed.attempts + 1, answer.status, answer.retry_after, &error, jitter());
            let attempt = Attempt {
                notification: claimed.id.clone(),
                attempt: claimed.attempts + 1,
                at_ms,
                ok,
                http_status: answer.status.map(i64::from),
                answer: Some(if answer.status.is_some() { answer.text } else { error }),
                duration_ms: started.elapsed().as_millis() as i64,
            };
            (attempt, next)
        }
        _ => {
            let why = "the endpoint was deleted or disabled before delivery".to_owned();
            let attempt = Attempt { notification: claimed.id.clone(), attempt: claimed.attempts + 1, at_ms, ok: false, http_status: None, answer: Some(why.clone()), duration_ms: 0 };
            (attempt, Next::GiveUp(why))
        }
    };
    tracing::info!(notification = %claimed.id, endpoint = %claimed.target, attempt = attempt.attempt, status = ?attempt.http_status, next = ?next, "webhook attempt");
    record(pool, claimed, attempt, next).await;
}

/// What follows an e-mail's attempt: done; failed for good on a permanent refusal (5xx), which
/// no retry can change; otherwise the webhooks' schedule.
pub fn next_after_mail(made: i64, sent: &mail::Sent, jitter: f64) -> Next {
    if sent.ok {
        Next::Done
    } else if sent.permanent {
        Next::GiveUp(format!("refused for good: {}", sent.text))
    } else {
        next_after(made, None, None, &sent.text, jitter)
    }
}

/// One attempt at one claimed e-mail, and its record.
async fn deliver_email(pool: &Arc<Pool>, delivery: &Delivery, claimed: Claimed) {
    let Some(mailer) = &delivery.mailer else { return };
    let started = std::time::Instant::now();
    let at_ms = chrono::Utc::now().timestamp_millis();
    let (sent, next) = if claimed.attempts == 0 && at_ms - claimed.created_ms > MAIL_STALE_MS {
        let why = "not sent: it waited more than 24 hours for a server with --smtp, and its news may be stale".to_owned();
        (mail::Sent { ok: false, permanent: true, text: why.clone() }, Next::GiveUp(why))
    } else {
        let sent = match tokio::time::timeout(MAIL_EXCHANGE, mailer.send(&claimed.id, &claimed.payload)).await {
            Ok(sent) => sent,
            Err(_) => mail::Sent { ok: false, permanent: false, text: format!("timed out: the SMTP exchange took more than {} s", MAIL_EXCHANGE.as_secs()) },
        };
        let next = next_after_mail(claimed.attempts + 1, &sent, jitter());
        (sent, next)
    };
    let attempt = Attempt {
        notification: claimed.id.clone(),
        attempt: claimed.attempts + 1,
        at_ms,
        ok: sent.ok,
        http_status: None,
        answer: Some(sent.text),
        duration_ms: started.elapsed().as_millis() as i64,
    };
    // The address is personal data: the log names the notification, not whom it went to.
    tracing::info!(notification = %claimed.id, attempt = attempt.attempt, next = ?next, "e-mail attempt");
    record(pool, claimed, attempt, next).await;
}

/// Records an attempt and what follows it, fenced on the claim.
async fn record(pool: &Arc<Pool>, claimed: Claimed, attempt: Attempt, next: Next) {
    let pool = pool.clone();
    let recorded = tokio::task::spawn_blocking(move || {
        pool.with_unsettled(|store| store.write_as(&Actor::new("studioflow", "delivery"), |w| w.record_attempt(&claimed, &attempt, &next)))
    })
    .await;
    match recorded {
        Ok(Ok(Ok(true))) => {}
        Ok(Ok(Ok(false))) => tracing::warn!("a delivery's claim was lost before its attempt was recorded"),
        Ok(Ok(Err(e))) | Ok(Err(e)) => tracing::warn!(error = %e, "recording a delivery attempt failed; it will be tried again"),
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_then_giving_up() {
        assert_eq!(next_after(1, Some(204), None, "", 0.0), Next::Done);
        assert_eq!(next_after(1, Some(500), None, "HTTP 500", 0.0), Next::RetryIn(5_000));
        assert_eq!(next_after(2, None, None, "timed out", 0.0), Next::RetryIn(300_000));
        assert_eq!(next_after(7, Some(500), None, "HTTP 500", 0.0), Next::RetryIn(36_000_000));
        assert_eq!(next_after(1, Some(500), None, "HTTP 500", 1.0), Next::RetryIn(5_500));
        assert!(matches!(next_after(8, Some(500), None, "HTTP 500", 0.0), Next::GiveUp(why) if why.contains("8 attempts")));
        assert_eq!(next_after(1, Some(503), Some(1), "HTTP 503", 0.0), Next::RetryIn(1_000));
        assert!(matches!(next_after(1, Some(410), None, "", 0.0), Next::Disable(_)));
    }

    #[test]
    fn a_claim_names_its_holder() {
        assert_eq!(holder("host/123/ab12cd34/0011223344"), "host/123/ab12cd34");
        assert_eq!(holder("host/123"), "host/123");
    }

    #[test]
    fn an_email_refused_for_good_is_not_retried() {
        let sent = |ok, permanent| mail::Sent { ok, permanent, text: "SMTP 550: no such user".into() };
        assert_eq!(next_after_mail(1, &sent(true, false), 0.0), Next::Done);
        assert!(matches!(next_after_mail(1, &sent(false, true), 0.0), Next::GiveUp(why) if why.contains("550")));
        assert_eq!(next_after_mail(1, &sent(false, false), 0.0), Next::RetryIn(5_000));
        assert!(matches!(next_after_mail(8, &sent(false, false), 0.0), Next::GiveUp(_)));
    }
}
