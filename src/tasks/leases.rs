//! Leases: which server runs a task. This server's lease of each solve it runs is renewed on a
//! thread of its own ([`Tasks::start_leases`]), and a task whose lease ran out (its server died
//! or stalled) is claimed and run here; at start-up ([`Tasks::resume`]) the tasks of a dead
//! process on this machine are taken over at once. What a lease fences is the runner's business.

use super::process::is_dead_here;
use super::runner::stop_lost;
use super::Tasks;
use crate::store::{Lease, StoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How long a lease lasts, and how often servers look for tasks to take over.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);
pub(super) const CLAIM_EVERY: Duration = Duration::from_secs(2);

/// Solves this server runs at most before it stops claiming others' tasks (the solver already
/// uses every core; tasks created here always run here).
const CLAIMED_SOLVES: usize = 2;

impl Tasks {
    /// A new lease of this server's.
    pub(super) fn new_lease(&self) -> Result<Lease, StoreError> {
        let token = crate::auth::secret::random(16)?;
        Ok(Lease { token, server: self.server.clone(), ms: self.config.lease.as_millis() as i64 })
    }

    /// Takes up work that dead servers left `working`: at once for a server that ran on this
    /// machine (its process is gone), and every task whose lease has run out; returns how many
    /// were taken. Tasks waiting for input keep waiting: any server answers them.
    pub fn resume(self: &Arc<Self>) -> Result<usize, StoreError> {
        // Work whose time to live ran out while no server was up is not redone.
        self.sweep()?;
        let dead: Vec<String> = self.pool.with_unsettled(|store| store.task_holders())??.into_iter().filter(|holder| is_dead_here(holder, &self.server)).collect();
        let taken = self.pool.with_unsettled(|store| store.take_over_tasks(&dead, || self.new_lease()))??;
        let mut resumed = taken.len();
        for (id, lease) in taken {
            tracing::info!(task_id = %id, "resuming a task a stopped process on this machine left working");
            self.start_claimed(id, lease);
        }
        while let Some((id, lease)) = self.claim()? {
            tracing::info!(task_id = %id, "resuming a task whose server stopped renewing its lease");
            self.start_claimed(id, lease);
            resumed += 1;
        }
        Ok(resumed)
    }

    /// Claims one task whose lease ran out, with a new lease of this server's.
    fn claim(&self) -> Result<Option<(String, Lease)>, StoreError> {
        let lease = self.new_lease()?;
        let id = self.pool.with_unsettled(|store| store.claim_task(&lease))??;
        Ok(id.map(|id| (id, lease)))
    }

    /// Runs a claimed task; without a thread, gives the lease up so that another server may.
    fn start_claimed(self: &Arc<Self>, id: String, lease: Lease) {
        if let Err(e) = self.spawn(id.clone(), lease.clone(), None) {
            tracing::error!(task_id = %id, error = %e, "cannot run the task now; releasing it for another server");
            let _ = self.pool.with_unsettled(|store| store.release_lease(&id, &lease));
        }
    }

    /// Keeps this server's leases and takes over others' lapsed ones, on a thread of its own, for
    /// as long as the runner exists: renews every running solve's lease each third of the lease
    /// (stopping a solve whose task was cancelled or taken elsewhere), and claims a lapsed task
    /// every [`TaskConfig::claim_every`](super::TaskConfig::claim_every) while fewer than a couple of solves run here.
    pub fn start_leases(self: &Arc<Self>) -> std::io::Result<()> {
        self.leasing.store(true, Ordering::Relaxed);
        let tasks: Weak<Tasks> = Arc::downgrade(self);
        let renew_every = self.config.lease / 3;
        let claim_every = self.config.claim_every;
        std::thread::Builder::new().name("task-leases".to_owned()).spawn(move || {
            let (mut renewed, mut claimed) = (Instant::now(), Instant::now());
            loop {
                std::thread::sleep(renew_every.min(claim_every).min(Duration::from_millis(500)));
                let Some(tasks) = tasks.upgrade() else { return };
                if renewed.elapsed() >= renew_every {
                    renewed = Instant::now();
                    tasks.renew_leases();
                }
                if claimed.elapsed() >= claim_every {
                    claimed = Instant::now();
                    if tasks.live.lock().unwrap_or_else(|e| e.into_inner()).len() < CLAIMED_SOLVES {
                        match tasks.claim() {
                            Ok(Some((id, lease))) => {
                                tracing::info!(task_id = %id, "taking over a task whose server stopped renewing its lease");
                                tasks.start_claimed(id, lease);
                            }
                            Ok(None) => {}
                            Err(e) => tracing::warn!(error = %e, "looking for tasks to take over failed"),
                        }
                    }
                }
            }
        })?;
        Ok(())
    }

    /// Renews the lease of every solve running here; a solve whose lease is gone is stopped.
    fn renew_leases(&self) {
        let running: Vec<(String, Lease, Arc<AtomicBool>)> = {
            let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            live.iter().map(|(id, run)| (id.clone(), run.lease.clone(), run.stop.clone())).collect()
        };
        for (id, lease, stop) in running {
            match self.pool.with_unsettled(|store| store.renew_lease(&id, &lease)) {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => stop_lost(&id, &stop),
                Ok(Err(e)) | Err(e) => tracing::warn!(task_id = %id, error = %e, "renewing a task's lease failed; trying again"),
            }
        }
    }
}
