//! The runner: one task's reflow, run on a thread of its own. It solves the month (the solver on
//! rayon, its progress written as the task's status), then ends the task in one transaction with
//! the moves, fenced on the task's lease so that only its holder's moves are ever applied; a stale
//! plan is solved again, and a database step that loses its connection is tried again
//! ([`Tasks::step`]) or left to the lease, never counted as the task's failure.

use super::{now_ms, Handover, ReflowJob, ReflowProgress, Running, TaskError, Tasks};
use crate::reflow::{self, Export, ReflowError, ReflowPlan};
use crate::store::{Lease, StoreError, TaskChange, TaskStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use studioflow_solver as solver;

/// A stale plan is solved again this many times before the task gives up.
const ATTEMPTS: usize = 3;

/// The pauses before a runner tries a database step again after a lost connection: about 8 s
/// in all, enough for PostgreSQL to restart; past them the task is left to its lease.
const RECONNECT_PAUSES: [Duration; 5] =
    [Duration::from_millis(250), Duration::from_millis(500), Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(4)];

impl Tasks {
    /// Runs a task on its own thread; `handover` is what the request that created it knows (a
    /// resumed task has none).
    pub(super) fn spawn(self: &Arc<Self>, id: String, lease: Lease, handover: Option<Handover>) -> Result<JoinHandle<()>, TaskError> {
        let flag = Arc::new(AtomicBool::new(false));
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Running { stop: flag.clone(), lease: lease.clone() });
        let (tasks, key) = (self.clone(), id.clone());
        let run = move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tasks.run(&id, &lease, &flag, handover)));
            let failure = match outcome {
                Ok(Ok(())) => None,
                // A lost database connection is no failure of the task: it stays working, and
                // its lease (given up here if the database answers, else left to run out) lets a
                // server, this one or another, resume it.
                Ok(Err(e)) if e.is_transient() => {
                    tracing::warn!(task_id = %id, error = %e, "the database stayed out of reach; leaving the task to its lease for a server to resume");
                    let _ = tasks.pool.with_unsettled(|store| store.release_lease(&id, &lease));
                    None
                }
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("the reflow stopped unexpectedly".to_owned()),
            };
            if let Some(message) = failure {
                tracing::error!(task_id = %id, error = %message, "task failed");
                let _ = tasks.change_leased(&id, &lease, &TaskChange::Failed { message: format!("Failed: {message}") });
            }
            // This run's entry only: the task may have been claimed again here meanwhile.
            let mut live = tasks.live.lock().unwrap_or_else(|e| e.into_inner());
            if live.get(&id).is_some_and(|run| run.lease.token == lease.token) {
                live.remove(&id);
            }
        };
        // Without a thread the work cannot start; the task stays `working` for a server to claim.
        std::thread::Builder::new().name("task-runner".to_owned()).spawn(run).map_err(|e| {
            self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            TaskError::NoThread(e)
        })
    }

    /// Solves a task's reflow and ends it, unless it was cancelled meanwhile. Each database step
    /// goes through [`Tasks::step`], so a lost connection is retried, never the task's failure.
    fn run(&self, id: &str, lease: &Lease, cancel: &Arc<AtomicBool>, handover: Option<Handover>) -> Result<(), StoreError> {
        let read = self.step(id, lease, "reading the task", || Ok(self.pool.with(|store| store.task(id))??)).map_err(into_store)?;
        let Some(Some(task)) = read else { return Ok(()) };
        if task.status != TaskStatus::Working {
            return Ok(());
        }
        let (job, mut export) = match handover {
            Some(Handover { job, export }) => (job, Some(export)),
            None => {
                let job: ReflowJob = serde_json::from_value(task.request.clone())
                    .map_err(|e| StoreError::Corrupt(format!("the request of task {id}: {e}")))?;
                (job, None)
            }
        };
        // A plan can go stale between solving and applying only if someone books meanwhile; then
        // solve again rather than give up at once.
        for attempt in 1..=ATTEMPTS {
            let export = match export.take() {
                Some(export) => export,
                None => match self.step(id, lease, "exporting the month", || self.pool.with(|store| reflow::export_instance(store, &job.request))?) {
                    Ok(Some(export)) => export,
                    Ok(None) => return Ok(()),
                    Err(e) if e.is_ours() => return Err(into_store(e)),
                    Err(e) => return self.end_refused(id, lease, &e.to_string()),
                },
            };
            let plan = match self.solve(id, lease, &job, &export, cancel) {
                Ok(plan) => plan,
                Err(e) if e.is_ours() => return Err(into_store(e)),
                Err(e) => return self.end_refused(id, lease, &e.to_string()),
            };
            if cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            let ask = job.require_approval && !job.dry_run;
            // The moves, the record and the task's end in one transaction, fenced on the lease: if
            // the connection is lost at its COMMIT, the step's check of the lease afterwards sees
            // whether that commit took effect (the task is then no longer working), so a plan is
            // never applied twice.
            let applied = self.step(id, lease, "applying the plan", || {
                self.pool.with(|store| {
                    store
                        .write_as(&job.actor, |w| {
                            let reflow_id = reflow::record_plan(w, &plan, job.dry_run || ask)?;
                            #[cfg(feature = "testing")]
                            if let Some(pause) = self.config.test_apply_delay {
                                std::thread::sleep(pause);
                            }
                            let record = w.reflow_record(&reflow_id)?;
                            let change = if ask {
                                let message = format!("Waiting for approval: apply {} moves, {} unresolved?", record.moves.len(), record.unresolved.len());
                                TaskChange::AwaitApproval { message, reflow_id }
                            } else {
                                TaskChange::Completed { message: reflow::summary(&record), reflow_id }
                            };
                            // Only a live task, still this server's, may end this way; a task
                            // cancelled or taken over meanwhile rolls the moves back.
                            if w.change_task_leased(id, lease, &change, now_ms())? { Ok(()) } else { Err(StoreError::TaskGone) }
                        })
                        .map_err(ReflowError::applying)
                })?
            });
            match applied {
                Ok(_) | Err(ReflowError::Store(StoreError::TaskGone)) => return Ok(()),
                Err(ReflowError::Stale(why)) if attempt < ATTEMPTS => {
                    tracing::info!(task_id = %id, %why, "plan went stale; solving again");
                }
                Err(e) if e.is_ours() => return Err(into_store(e)),
                Err(e) => return self.end_refused(id, lease, &e.to_string()),
            }
        }
        Ok(())
    }

    /// One database step of a run: tried again after a lost connection (the pool has already
    /// tried once more at once, when nothing was committed), after each of a few growing pauses,
    /// for as long as this server still holds the task's lease. `Ok(None)`: it holds it no more
    /// (the task ended, perhaps by this very step's commit whose answer was lost, or another
    /// server took it), so the run stops. Any other error, or a lost connection after the last
    /// pause, is returned as it is; [`Tasks::spawn`] leaves a task whose run ended on a lost
    /// connection to its lease.
    fn step<T>(&self, id: &str, lease: &Lease, what: &str, mut f: impl FnMut() -> Result<T, ReflowError>) -> Result<Option<T>, ReflowError> {
        let mut pauses = RECONNECT_PAUSES.iter();
        loop {
            let e = match f() {
                Ok(value) => return Ok(Some(value)),
                Err(e) if e.is_transient() => e,
                Err(e) => return Err(e),
            };
            let Some(pause) = pauses.next() else { return Err(e) };
            tracing::warn!(task_id = %id, step = what, error = %e, "lost the database connection; trying again in {} ms", pause.as_millis());
            std::thread::sleep(*pause);
            match self.pool.with_unsettled(|store| store.holds_lease(id, lease)).and_then(|held| held) {
                Ok(true) => {}
                Ok(false) => {
                    tracing::info!(task_id = %id, step = what, "the task is no longer this server's to run (it ended, or another server holds it): stopping");
                    return Ok(None);
                }
                // Still out of reach: the next try says so again, or ends the pauses.
                Err(e) if e.is_transient() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Solves an exported month, writing the solver's progress as the task's status message.
    fn solve(&self, id: &str, lease: &Lease, job: &ReflowJob, export: &Export, cancel: &Arc<AtomicBool>) -> Result<ReflowPlan, ReflowError> {
        let affected = export.affected_bookings().len();
        let pool = self.pool.clone();
        let task_id = id.to_owned();
        let last_write = Mutex::new((Instant::now() - Duration::from_secs(1), false));
        let watcher = self.watchers.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
        let (lease, stop) = (lease.clone(), cancel.clone());
        #[cfg(feature = "testing")]
        let delay = self.config.test_delay_per_part;
        let progress: Arc<dyn Fn(solver::Progress) + Send + Sync> = Arc::new(move |p: solver::Progress| {
            #[cfg(feature = "testing")]
            if let Some(delay) = delay {
                std::thread::sleep(delay);
            }
            // A status write is a commit: a few a second is plenty for someone polling. The first
            // report with every part's first search done is always written.
            let mut last = last_write.lock().unwrap_or_else(|e| e.into_inner());
            let (at, all_done) = &mut *last;
            let first_all_done = p.parts_done == p.parts_total && !*all_done;
            if at.elapsed() >= Duration::from_millis(200) || first_all_done {
                *at = Instant::now();
                *all_done |= p.parts_done == p.parts_total;
                let stage = if p.improving { ", improving" } else { "" };
                let message = format!(
                    "Reflowing {affected} bookings: {} of {} parts solved{stage}; cost {} ({})",
                    p.parts_done,
                    p.parts_total,
                    p.cost,
                    p.quality()
                );
                if let Some(watcher) = &watcher {
                    watcher(&ReflowProgress { done: p.parts_done as u64, total: p.parts_total as u64, message: message.clone() });
                }
                let written = pool.with(|s| s.write_with(|w| w.change_task_leased(&task_id, &lease, &TaskChange::Progress(message.clone()), now_ms())));
                if let Ok(Ok(false)) = written {
                    stop_lost(&task_id, &stop);
                }
            }
        });
        let options = solver::Options {
            threads: self.config.solver_threads,
            time_limit: self.config.solver_time_limit,
            cancel: Some(cancel.clone()),
            progress: Some(progress),
            work_limit: None,
        };
        export.solve(&job.request, &options)
    }

    /// Ends the task refused, saying what the caller can change.
    fn end_refused(&self, id: &str, lease: &Lease, message: &str) -> Result<(), StoreError> {
        let change = TaskChange::Refused { message: message.to_owned() };
        self.step(id, lease, "ending the task refused", || Ok(self.change_leased(id, lease, &change)?)).map_err(into_store)?;
        Ok(())
    }
}

/// Stops a solve whose task is no longer this server's to run: cancelled, or taken over.
pub(super) fn stop_lost(id: &str, stop: &AtomicBool) {
    if !stop.swap(true, Ordering::Relaxed) {
        tracing::info!(task_id = %id, "the task was cancelled or taken over elsewhere: stopping its solve");
    }
}

/// A failure of ours met while running a task, as the store error it comes down to.
fn into_store(e: ReflowError) -> StoreError {
    match e {
        ReflowError::Store(e) => e,
        other => StoreError::Corrupt(other.to_string()),
    }
}
