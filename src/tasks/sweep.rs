//! The sweepers: what expires is removed while the server runs. Expired tasks are cancelled and
//! deleted with the plans no one applied ([`Tasks::sweep`], also run at start-up), and expired
//! holds are released (their tentative bookings cancelled); each, one server at a time per studio
//! (`Store::exclusively`). The loops run on the server's async runtime and do their work on
//! blocking threads.

use super::{now_ms, Tasks};
use crate::domain::Actor;
use crate::store::{Exclusive, Pool, Store, StoreError, TaskChange, TaskStatus};
use std::sync::Arc;
use std::time::Duration;

impl Tasks {
    /// Deletes expired tasks; their ids are unknown afterwards.
    /// A live task whose time ran out is cancelled first, so that no solve still running can
    /// apply its moves afterwards. One server at a time sweeps a studio; the others skip.
    pub fn sweep(&self) -> Result<usize, StoreError> {
        let now = now_ms();
        let swept = self.pool.with(|store| store.exclusively(Exclusive::TaskSweep, |store| self.sweep_with(store, now)))??;
        Ok(swept.unwrap_or(0))
    }

    fn sweep_with(&self, store: &mut Store, now: i64) -> Result<usize, StoreError> {
        for status in [TaskStatus::Working, TaskStatus::InputRequired] {
            for task in store.tasks_in(status)?.into_iter().filter(|t| t.expired(now)) {
                self.stop(&task.id);
                let change = TaskChange::Cancelled { message: "Expired: its time to live ran out; nothing was moved.".into() };
                store.write_with(|w| w.change_task(&task.id, &[status], &change, now))?;
            }
        }
        let deleted = store.delete_expired_tasks(now)?;
        // Unapplied plans (dry runs) expire like tasks, after the same time to live.
        let plans = store.delete_expired_plans(chrono::Utc::now(), self.config.ttl)?;
        if plans > 0 {
            tracing::info!(deleted = plans, "deleted expired unapplied reflow plans");
        }
        Ok(deleted)
    }
}

/// Deletes expired tasks a few times per time to live, at least once a minute, for as long as the
/// server runs.
pub async fn sweep_expired_tasks(tasks: Arc<Tasks>, ttl: Duration) {
    let every = (ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(60));
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let tasks = tasks.clone();
        match tokio::task::spawn_blocking(move || tasks.sweep()).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(deleted = n, "deleted expired tasks"),
            Ok(Err(e)) => tracing::warn!(error = %e, "sweeping expired tasks failed"),
            Err(_) => break,
        }
    }
}

/// How often expired holds are looked for: a released hold frees its slot within this long.
const HOLD_SWEEP: Duration = Duration::from_secs(1);

/// Releases (cancels) tentative bookings whose hold has ended, by the studio's clock, for as long
/// as the server runs; each release is recorded as done through "hold expiry".
pub async fn release_expired_holds(pool: Arc<Pool>) {
    let mut tick = tokio::time::interval(HOLD_SWEEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let pool = pool.clone();
        let released = tokio::task::spawn_blocking(move || {
            pool.with(|store| {
                let now = store.studio()?.now(chrono::Utc::now());
                if !store.has_expired_holds(now)? {
                    return Ok(Vec::new());
                }
                // One server at a time releases them; the others find none next time.
                let released = store.exclusively(Exclusive::HoldSweep, |store| {
                    store.write_as(&Actor::new("studioflow", "hold expiry"), |w| w.release_expired_holds(now))
                })?;
                Ok(released.unwrap_or_default())
            })?
        });
        match released.await {
            Ok(Ok(bookings)) if bookings.is_empty() => {}
            Ok(Ok(bookings)) => tracing::info!(released = bookings.len(), "released expired holds"),
            Ok(Err(StoreError::NoStudio)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "releasing expired holds failed"),
            Err(_) => break,
        }
    }
}
