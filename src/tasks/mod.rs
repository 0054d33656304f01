//! Durable month reflows, and the one way a reflow runs: the [`Tasks`] runner and its public
//! API. A reflow is written to the store as a task before anyone hears of it, solved on its own
//! thread, and ends in one transaction that writes the moves and the task's final state together,
//! only while the task is still live. A caller that wants the answer at once waits for the same
//! task ([`Tasks::reflow`]). What the outcomes look like on a wire is the caller's business: this
//! module stores them typed, and names no protocol and no tool.
//!
//! The files, one concern each: this one creates, reads and cancels tasks; `runner.rs` runs one
//! (solve, apply, retries of a lost connection); `leases.rs` decides which server runs it, and
//! takes over the work of dead servers; `process.rs` names this process in leases and tells
//! whether a holder on this machine is gone; `approvals.rs` applies or undoes a recorded plan;
//! `sweep.rs` removes what expired (tasks, unapplied plans, holds); `error.rs` says why a request
//! was not taken.

mod approvals;
mod error;
mod leases;
pub mod process;
mod runner;
mod sweep;

pub use error::TaskError;
pub use leases::DEFAULT_LEASE;
pub use sweep::{release_expired_holds, sweep_expired_tasks};

use crate::domain::{Actor, StudioTz};
use crate::reflow::{self, Export, ReflowRequest};
use crate::store::{Lease, NewTask, Pool, ReflowRecord, StoreError, TaskChange, TaskRecord, TaskStatus};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest a task may be kept: a week.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// How long a caller waiting for a reflow goes on polling through lost database connections
/// before it gives up and is told to retry.
const WAIT_THROUGH_LOST: Duration = Duration::from_secs(60);

/// What a task does: the kind of work its request holds. Stored by name, so that the database
/// says what each task is whatever reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// A month reflowed: the request is a [`ReflowJob`].
    MonthReflow,
}

impl TaskKind {
    /// The kind as the store keeps it: the text every existing database holds, which never
    /// changes. (It happens to be the name of the MCP tool that starts such tasks; the edge may
    /// rename its tool, never this.)
    pub fn stored(self) -> &'static str {
        match self {
            TaskKind::MonthReflow => "reflow_month",
        }
    }

    /// A stored kind, if this studioflow knows it.
    pub fn from_stored(text: &str) -> Option<TaskKind> {
        [TaskKind::MonthReflow].into_iter().find(|kind| kind.stored() == text)
    }
}

/// A reflow as a task runs it: what to solve, and what to do with the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReflowJob {
    pub request: ReflowRequest,
    /// Record the plan without moving anything.
    pub dry_run: bool,
    /// Ask the client before moving anything.
    pub require_approval: bool,
    /// Who asked: the history names them for every move. (A task stored before there was a
    /// history reads as studioflow itself.)
    #[serde(default)]
    pub actor: Actor,
    /// The principal asking (`auth::Principal::id`), who alone may see the task; `None` for the
    /// local user. Stored as the task's owner, not in its request.
    #[serde(skip)]
    pub owner: Option<String>,
}

/// What the request that created a task hands its runner: the job, and the month as the
/// request was checked against it. A task resumed by a server has neither, and reads the job
/// from its row and exports the month again.
pub(crate) struct Handover {
    job: ReflowJob,
    export: Export,
}

/// The answer to a task's approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Apply the plan, if the month has not changed since it was made.
    Accept,
    /// End the task with nothing applied.
    Decline,
    /// Cancel the task.
    Cancel,
}

/// How tasks run.
#[derive(Debug, Clone)]
pub struct TaskConfig {
    pub ttl: Duration,
    pub solver_threads: usize,
    pub solver_time_limit: Duration,
    /// How long a task's lease lasts from each renewal: a dead server's task is taken over
    /// within this long. Renewed every third of it.
    pub lease: Duration,
    /// How often a server looks for tasks to take over.
    pub claim_every: Duration,
    /// Slows each solved part down, so that tests can stop a process in the middle of a solve.
    #[cfg(feature = "testing")]
    pub test_delay_per_part: Option<Duration>,
    /// Pauses inside the transaction that applies a plan, before it commits, so that tests can
    /// lose the database connection there.
    #[cfg(feature = "testing")]
    pub test_apply_delay: Option<Duration>,
}

impl TaskConfig {
    /// Tasks kept for `ttl`, solved on `solver_threads` within `solver_time_limit`.
    pub fn new(ttl: Duration, solver_threads: usize, solver_time_limit: Duration) -> TaskConfig {
        TaskConfig {
            ttl,
            solver_threads,
            solver_time_limit,
            lease: DEFAULT_LEASE,
            claim_every: leases::CLAIM_EVERY,
            #[cfg(feature = "testing")]
            test_delay_per_part: None,
            #[cfg(feature = "testing")]
            test_apply_delay: None,
        }
    }
}

/// A task with what a reader needs to show it: the reflow it is about, and the studio's zone.
#[derive(Debug, Clone)]
pub struct TaskView {
    pub task: TaskRecord,
    /// The plan awaiting approval, or the reflow the task ended with.
    pub reflow: Option<ReflowRecord>,
    pub tz: StudioTz,
}

/// The task runner, shared by every request of a server (and by the demo).
pub struct Tasks {
    pool: Arc<Pool>,
    config: TaskConfig,
    /// This server, as leases name it: `host/pid/random`.
    server: String,
    /// The solves running in this process: each one's stop flag and lease. A std mutex: held
    /// only to insert, remove or look up, never across I/O.
    live: Mutex<HashMap<String, Running>>,
    /// The progress hooks of waiting callers, by task id: the solve of that task reports to it.
    watchers: Mutex<HashMap<String, ProgressHook>>,
    /// Whether [`Tasks::start_leases`] runs here, claiming tasks whose lease ran out (this
    /// server's own included).
    leasing: AtomicBool,
}

/// A solve running here.
struct Running {
    stop: Arc<AtomicBool>,
    lease: Lease,
}

/// How far a reflow has got, for a caller that waits and wants to be told.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflowProgress {
    /// Parts of the month solved so far, of `total`.
    pub done: u64,
    pub total: u64,
    /// The same words as the task's status message.
    pub message: String,
}

/// A callback the edge supplies to hear a reflow's progress; called on the solver's threads.
pub type ProgressHook = Arc<dyn Fn(&ReflowProgress) + Send + Sync>;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `tsk_` and 160 random bits in lower-case base32: unguessable, and safe in URLs and headers.
fn new_task_id() -> Result<String, TaskError> {
    let random = crate::auth::secret::random(20).map_err(|e| TaskError::NoRandomness(e.to_string()))?;
    Ok(format!("tsk_{random}"))
}

impl Tasks {
    /// The runner of a server, or of a command, on `pool`. Leases are kept and lapsed tasks
    /// claimed only once [`Tasks::start_leases`] is called.
    pub fn new(pool: Arc<Pool>, config: TaskConfig) -> Arc<Tasks> {
        let server = process::server_name();
        Arc::new(Tasks {
            pool,
            config,
            server,
            live: Mutex::new(HashMap::new()),
            watchers: Mutex::new(HashMap::new()),
            leasing: AtomicBool::new(false),
        })
    }

    /// Writes a new reflow task and starts it; the task is durable when this returns.
    /// Blocking: call it from a blocking thread.
    pub fn start_reflow(self: &Arc<Self>, job: &ReflowJob) -> Result<TaskRecord, TaskError> {
        let (record, export, lease) = self.create(job)?;
        self.spawn(record.id.clone(), lease, Some(Handover { job: job.clone(), export }))?;
        Ok(record)
    }

    /// Runs a reflow to its end and returns the finished task: the same task, runner and rules
    /// as [`Tasks::start_reflow`], for a caller that waits for the answer.
    pub fn reflow(self: &Arc<Self>, job: &ReflowJob) -> Result<TaskView, TaskError> {
        self.reflow_watched(job, None)
    }

    /// [`Tasks::reflow`], telling `hook` how the solve goes (first when it starts, then as parts
    /// are solved); every call to the hook happens before this returns.
    pub fn reflow_watched(self: &Arc<Self>, job: &ReflowJob, hook: Option<ProgressHook>) -> Result<TaskView, TaskError> {
        let (record, export, lease) = self.create(job)?;
        if let Some(hook) = &hook {
            let message = record.status_message.clone().unwrap_or_default();
            hook(&ReflowProgress { done: 0, total: 0, message });
            self.watchers.lock().unwrap_or_else(|e| e.into_inner()).insert(record.id.clone(), hook.clone());
        }
        let runner = self.spawn(record.id.clone(), lease, Some(Handover { job: job.clone(), export }));
        // The runner ends the task whatever happens (its own failure included), so joining it is
        // waiting for the final state...
        let joined = runner.map(|runner| runner.join());
        self.watchers.lock().unwrap_or_else(|e| e.into_inner()).remove(&record.id);
        joined?.ok();
        // ...unless it lost the lease (this server stalled past it), or left the task to its
        // lease (the database stayed out of reach): then a server, another or this one, runs the
        // task, and the answer is its ending. Without a lease keeper here (a command, not a
        // server) a task still held by this process has nobody else to wait for.
        let mut unreachable: Option<Instant> = None;
        loop {
            let view = match self.read(&record.id, job.owner.as_deref(), true).and_then(|task| self.view_with(task)) {
                Ok(view) => view,
                Err(e) if e.is_transient() && unreachable.get_or_insert_with(Instant::now).elapsed() < WAIT_THROUGH_LOST => {
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
                Err(e) => return Err(e),
            };
            unreachable = None;
            let ours = view.task.holder.as_deref() == Some(self.server.as_str());
            if view.task.status != TaskStatus::Working || (ours && !self.leasing.load(Ordering::Relaxed)) {
                return Ok(view);
            }
            std::thread::sleep(Duration::from_millis(view.task.poll_interval_ms.clamp(50, 1000) as u64));
        }
    }

    /// Checks the request against the month (exporting it once: the runner solves this export),
    /// then commits a `working` task. One live reflow per month: the store refuses a second.
    fn create(&self, job: &ReflowJob) -> Result<(TaskRecord, Export, Lease), TaskError> {
        let ttl = self.config.ttl.min(MAX_TTL);
        let lease = self.new_lease()?;
        self.pool.with(|store| -> Result<(TaskRecord, Export, Lease), TaskError> {
            let export = reflow::export_instance(store, &job.request)?;
            if !job.dry_run {
                reflow::require_windows(store, &job.request)?;
            }
            let affected = export.affected_bookings().len();
            let id = new_task_id()?;
            let task = NewTask {
                id: id.clone(),
                kind: TaskKind::MonthReflow.stored().into(),
                request: serde_json::to_value(job).map_err(|e| StoreError::Corrupt(format!("a reflow job: {e}")))?,
                month: Some(job.request.month.to_string()),
                status_message: format!("Queued: reflowing {} ({affected} bookings to move)", job.request.month),
                now_ms: now_ms(),
                ttl_ms: Some(ttl.as_millis() as i64),
                poll_interval_ms: poll_interval(affected).as_millis() as i64,
                owner: job.owner.clone(),
                lease: Some(lease.clone()),
            };
            // The row is read back inside the transaction that writes it: a connection lost after
            // the commit must not leave a created task unannounced.
            let record = store.write_with(|w| {
                w.create_task(&task)?;
                w.task(&id)
            })?;
            let record = record.ok_or_else(|| TaskError::Unknown(id.clone()))?;
            Ok((record, export, lease.clone()))
        })?
    }

    /// A task, unless it is unknown or expired, or belongs to another principal than `owner`
    /// (`None`: the local user): to anyone else a task is exactly as unknown as an id never
    /// issued, so ids leak nothing.
    pub fn get(&self, id: &str, owner: Option<&str>) -> Result<TaskRecord, TaskError> {
        self.read(id, owner, false)
    }

    /// [`Tasks::get`]; `expired` also reads a task whose time to live ran out but which is still
    /// stored: the synchronous caller waiting for its own task gets its answer however long the
    /// solve took.
    fn read(&self, id: &str, owner: Option<&str>, expired: bool) -> Result<TaskRecord, TaskError> {
        let task = self.pool.with(|store| store.task(id))??;
        match task {
            Some(task) if (expired || !task.expired(now_ms())) && task.owner.as_deref() == owner => Ok(task),
            _ => Err(TaskError::Unknown(id.to_owned())),
        }
    }

    /// The live and kept tasks `owner` created, oldest first.
    pub fn owned_by(&self, owner: &str) -> Result<Vec<TaskRecord>, TaskError> {
        let now = now_ms();
        let tasks = self.pool.with(|store| store.tasks_owned_by(owner))??;
        Ok(tasks.into_iter().filter(|task| !task.expired(now)).collect())
    }

    /// A task with its reflow record, read together; [`Tasks::get`]'s rule on who sees it.
    pub fn view(&self, id: &str, owner: Option<&str>) -> Result<TaskView, TaskError> {
        self.view_with(self.get(id, owner)?)
    }

    fn view_with(&self, task: TaskRecord) -> Result<TaskView, TaskError> {
        let id = task.id.clone();
        self.pool.with(|store| -> Result<TaskView, TaskError> {
            let tz = store.studio()?.tz;
            let reflow = match &task.reflow_id {
                Some(reflow_id) => Some(
                    store.reflow(reflow_id)?.ok_or_else(|| StoreError::Corrupt(format!("task {id} names reflow {reflow_id}, which is missing")))?,
                ),
                None => None,
            };
            Ok(TaskView { task: task.clone(), reflow, tz })
        })?
    }

    /// Asks a task to stop. A finished task is left as it is; a running solve stops at its next
    /// check, and nothing of a cancelled reflow is applied.
    pub fn cancel(&self, id: &str, owner: Option<&str>) -> Result<TaskRecord, TaskError> {
        let task = self.get(id, owner)?;
        if !task.status.is_final() {
            self.stop(id);
            let change = TaskChange::Cancelled { message: "Cancelled: nothing was moved.".into() };
            self.change(id, &[TaskStatus::Working, TaskStatus::InputRequired], &change)?;
        }
        self.get(id, owner)
    }

    /// Moves a task from one of `from` to a new state, if it is still in one of them.
    fn change(&self, id: &str, from: &[TaskStatus], change: &TaskChange) -> Result<bool, StoreError> {
        self.pool.with(|store| store.write_with(|w| w.change_task(id, from, change, now_ms())))?
    }

    /// Moves a working task on, as the runner holding `lease`; false if it holds it no more.
    fn change_leased(&self, id: &str, lease: &Lease, change: &TaskChange) -> Result<bool, StoreError> {
        self.pool.with(|store| store.write_with(|w| w.change_task_leased(id, lease, change, now_ms())))?
    }

    /// Raises the stop flag of a solve running in this process, if there is one. (A solve on
    /// another server stops when it next renews its lease.)
    fn stop(&self, id: &str) {
        if let Some(run) = self.live.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            run.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Poll about five times over the expected solve: ~2 ms per affected booking, from 250 ms to 5 s.
fn poll_interval(affected: usize) -> Duration {
    Duration::from_millis((affected as u64 * 2 / 5).clamp(250, 5000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_long_random_and_url_safe() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 4 + 32, "160 bits in base32");
        assert!(a[4..].bytes().all(|c| c.is_ascii_lowercase() || (b'2'..=b'7').contains(&c)));
    }

    #[test]
    fn a_month_reflow_is_stored_as_existing_databases_hold_it() {
        assert_eq!(TaskKind::MonthReflow.stored(), "reflow_month");
        assert_eq!(TaskKind::from_stored("reflow_month"), Some(TaskKind::MonthReflow));
        assert_eq!(TaskKind::from_stored("reflow"), None);
    }

    #[test]
    fn poll_interval_grows_with_the_work() {
        assert_eq!(poll_interval(10), Duration::from_millis(250));
        assert_eq!(poll_interval(2000), Duration::from_millis(800));
        assert_eq!(poll_interval(100_000), Duration::from_secs(5));
    }
}
