//! Durable month reflows, and the one way a reflow runs. A reflow is written to the store as a task
//! before anyone hears of it, solved on its own thread (the solver on rayon, never on an async
//! worker), and ends in one transaction that writes the moves and the task's final state together,
//! only while the task is still live. A caller that wants the answer at once waits for the same
//! task ([`Tasks::reflow`]).
//!
//! Any server on the database may run any task: the runner holds the task's lease
//! ([`crate::store::Lease`]) and renews it while it solves ([`Tasks::start_leases`]); every write
//! it makes is fenced on the lease, so exactly one server's moves are ever applied. Work left
//! `working` by a dead server is claimed by another once its lease runs out, or at once by a
//! server restarted on the same machine.
//! What the outcomes look like on a wire is the caller's business: this module stores them typed.

use crate::domain::{Actor, StudioTz};
use crate::reflow::{self, Export, ReflowError, ReflowPlan, ReflowRequest};
use crate::store::{Exclusive, Lease, NewTask, PlanRefusal, Pool, ReflowRecord, StoreError, TaskChange, TaskRecord, TaskStatus};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use studioflow_solver as solver;

/// The kind of the only long-running work there is.
pub const REFLOW_KIND: &str = "reflow_month";

/// The longest a task may be kept: a week.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// A stale plan is solved again this many times before the task gives up.
const ATTEMPTS: usize = 3;

/// How long a lease lasts, and how often servers look for tasks to take over.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);
const CLAIM_EVERY: Duration = Duration::from_secs(2);

/// The pauses before a runner tries a database step again after a lost connection: about 8 s
/// in all, enough for PostgreSQL to restart; past them the task is left to its lease.
const RECONNECT_PAUSES: [Duration; 5] =
    [Duration::from_millis(250), Duration::from_millis(500), Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(4)];

/// How long a caller waiting for a reflow goes on polling through lost database connections
/// before it gives up and is told to retry.
const WAIT_THROUGH_LOST: Duration = Duration::from_secs(60);

/// Solves this server runs at most before it stops claiming others' tasks (the solver already
/// uses every core; tasks created here always run here).
const CLAIMED_SOLVES: usize = 2;

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
            claim_every: CLAIM_EVERY,
            #[cfg(feature = "testing")]
            test_delay_per_part: None,
            #[cfg(feature = "testing")]
            test_apply_delay: None,
        }
    }
}

/// Why a task request was not taken.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The reflow asked for cannot be done as asked.
    #[error(transparent)]
    Reflow(#[from] ReflowError),
    /// No such task (or it expired).
    #[error("unknown task {0:?}: it never existed or its time to live ran out")]
    Unknown(String),
    /// The system gave no randomness for a task id.
    #[error("no randomness for a task id: {0}")]
    NoRandomness(String),
    /// The system gave no thread to run the task on; the task stays `working` for the next start.
    #[error("no thread to run the reflow on: {0}")]
    NoThread(std::io::Error),
    /// The store refused or failed; one live reflow per month is its rule too
    /// ([`StoreError::Busy`]).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl TaskError {
    /// Whether the failure is ours rather than the caller's.
    pub fn is_ours(&self) -> bool {
        match self {
            TaskError::Reflow(e) => e.is_ours(),
            TaskError::Store(e) => e.is_ours(),
            TaskError::NoRandomness(_) | TaskError::NoThread(_) => true,
            TaskError::Unknown(_) => false,
        }
    }

    /// Whether the failure is a lost database connection ([`StoreError::is_transient`]).
    pub fn is_transient(&self) -> bool {
        match self {
            TaskError::Reflow(e) => e.is_transient(),
            TaskError::Store(e) => e.is_transient(),
            _ => false,
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
    pub fn new(pool: Arc<Pool>, config: TaskConfig) -> Arc<Tasks> {
        let server = server_name();
        Arc::new(Tasks {
            pool,
            config,
            server,
            live: Mutex::new(HashMap::new()),
            watchers: Mutex::new(HashMap::new()),
            leasing: AtomicBool::new(false),
        })
    }

    /// A new lease of this server's.
    fn new_lease(&self) -> Result<Lease, StoreError> {
        let token = crate::auth::secret::random(16)?;
        Ok(Lease { token, server: self.server.clone(), ms: self.config.lease.as_millis() as i64 })
    }

    /// Writes a new reflow task and starts it; the task is durable when this returns.
    /// Blocking: call it from a blocking thread.
    pub fn start_reflow(self: &Arc<Self>, job: &ReflowJob) -> Result<TaskRecord, TaskError> {
        let (record, export, lease) = self.create(job)?;
        self.spawn(record.id.clone(), lease, Some(export))?;
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
        let runner = self.spawn(record.id.clone(), lease, Some(export));
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
                kind: REFLOW_KIND.into(),
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
    /// every [`TaskConfig::claim_every`] while fewer than a couple of solves run here.
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

    /// Answers the approval question of a task waiting for input: accept applies the plan (if
    /// the month has not changed since), decline ends it with nothing applied, cancel cancels it.
    /// An answer to a question that is not outstanding (a task that is not waiting) is ignored,
    /// as the Tasks extension asks.
    pub fn answer(&self, id: &str, owner: Option<&str>, approval: Approval, actor: &Actor) -> Result<TaskRecord, TaskError> {
        let task = self.get(id, owner)?;
        if task.status != TaskStatus::InputRequired {
            return Ok(task);
        }
        let reflow_id = task.reflow_id.clone().ok_or_else(|| StoreError::Corrupt(format!("task {id} waits with no plan")))?;
        let waiting = [TaskStatus::InputRequired];
        match approval {
            Approval::Accept => {
                let outcome = self.pool.with(|store| {
                    reflow::apply_recorded_with(store, actor, &reflow_id, |_| Ok(()), |w| {
                        let record = w.reflow_record(&reflow_id)?;
                        let change = TaskChange::Completed { message: reflow::summary(&record), reflow_id: reflow_id.clone() };
                        if w.change_task(id, &waiting, &change, now_ms())? { Ok(()) } else { Err(StoreError::TaskGone) }
                    })
                })?;
                match outcome {
                    Ok(()) | Err(ReflowError::Store(StoreError::TaskGone)) => {}
                    // Our failure (a busy or broken database): the question keeps waiting for a retry.
                    Err(e) if e.is_ours() => return Err(e.into()),
                    // The month changed since the plan was made (or the plan cannot be applied):
                    // refuse, never apply blindly.
                    Err(e) => {
                        self.change(id, &waiting, &TaskChange::Refused { message: e.to_string() })?;
                    }
                }
            }
            Approval::Decline => {
                let moves = self.pool.with(|store| store.reflow(&reflow_id))??.map_or(0, |r| r.moves.len());
                let message = format!("Declined: nothing was moved ({moves} moves were proposed).");
                self.change(id, &waiting, &TaskChange::Completed { message, reflow_id })?;
            }
            Approval::Cancel => return self.cancel(id, owner),
        }
        self.get(id, owner)
    }

    /// Applies a stored plan that was not applied (a dry run), after the same check the approval
    /// gate makes (every booking still where the plan found it). One live reflow per month holds
    /// here too: while a task of the plan's month is live, the plan is refused; the check runs in
    /// the transaction that applies it.
    pub fn apply_plan(&self, reflow_id: &str, actor: &Actor) -> Result<ReflowRecord, TaskError> {
        self.pool.with(|store| -> Result<ReflowRecord, TaskError> {
            let record = store.reflow(reflow_id)?.ok_or_else(|| unknown_plan(reflow_id))?;
            let request: ReflowRequest = serde_json::from_value(record.request.clone())
                .map_err(|e| StoreError::Corrupt(format!("the request of reflow {reflow_id}: {e}")))?;
            // Applying needs the offline windows a preview could do without.
            reflow::require_windows(store, &request)?;
            let applied = reflow::apply_recorded_with(
                store,
                actor,
                reflow_id,
                |w| {
                    let record = w.reflow_record(reflow_id)?;
                    if record.applied {
                        return Err(StoreError::Plan(PlanRefusal::Applied { reflow: reflow_id.to_owned(), undone: record.undone }));
                    }
                    match w.live_task(&record.month)? {
                        Some(live) => Err(live.busy(&record.month)),
                        None => Ok(()),
                    }
                },
                |w| w.reflow_record(reflow_id),
            );
            match applied {
                Ok(record) => Ok(record),
                Err(ReflowError::Store(e)) => Err(e.into()),
                Err(e) => Err(e.into()),
            }
        })?
    }

    /// Puts back what an applied reflow moved (see [`crate::store::Writer::undo_reflow`]); refused
    /// while a reflow of its month is live, whose plan would otherwise meet a changed month.
    pub fn undo(&self, reflow_id: &str, actor: &Actor) -> Result<crate::store::Undone, TaskError> {
        self.pool.with(|store| -> Result<crate::store::Undone, TaskError> {
            let undone = store.write_as(actor, |w| {
                if let Some(record) = w.find_reflow(reflow_id)?
                    && let Some(live) = w.live_task(&record.month)? {
                        return Err(live.busy(&record.month));
                    }
                w.undo_reflow(reflow_id)
            })?;
            Ok(undone)
        })?
    }

    /// Deletes expired tasks; their ids are unknown afterwards.
    /// A live task whose time ran out is cancelled first, so that no solve still running can
    /// apply its moves afterwards. One server at a time sweeps a studio; the others skip.
    pub fn sweep(&self) -> Result<usize, StoreError> {
        let now = now_ms();
        let swept = self.pool.with(|store| store.exclusively(Exclusive::TaskSweep, |store| self.sweep_with(store, now)))??;
        Ok(swept.unwrap_or(0))
    }

    fn sweep_with(&self, store: &mut crate::store::Store, now: i64) -> Result<usize, StoreError> {
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

    /// Runs a task on its own thread; `export` is the month as the request was checked against,
    /// solved first (a resumed task has none and exports again).
    fn spawn(self: &Arc<Self>, id: String, lease: Lease, export: Option<Export>) -> Result<JoinHandle<()>, TaskError> {
        let flag = Arc::new(AtomicBool::new(false));
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Running { stop: flag.clone(), lease: lease.clone() });
        let (tasks, key) = (self.clone(), id.clone());
        let run = move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tasks.run(&id, &lease, &flag, export)));
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
    fn run(&self, id: &str, lease: &Lease, cancel: &Arc<AtomicBool>, mut export: Option<Export>) -> Result<(), StoreError> {
        let read = self.step(id, lease, "reading the task", || Ok(self.pool.with(|store| store.task(id))??)).map_err(into_store)?;
        let Some(Some(task)) = read else { return Ok(()) };
        if task.status != TaskStatus::Working {
            return Ok(());
        }
        let job: ReflowJob = serde_json::from_value(task.request.clone())
            .map_err(|e| StoreError::Corrupt(format!("the request of task {id}: {e}")))?;
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
                    reflow::apply_plan_with(store, &job.actor, &plan, job.dry_run || ask, |w, reflow_id| {
                        #[cfg(feature = "testing")]
                        if let Some(pause) = self.config.test_apply_delay {
                            std::thread::sleep(pause);
                        }
                        let record = w.reflow_record(reflow_id)?;
                        let change = if ask {
                            let message = format!("Waiting for approval: apply {} moves, {} unresolved?", record.moves.len(), record.unresolved.len());
                            TaskChange::AwaitApproval { message, reflow_id: reflow_id.to_owned() }
                        } else {
                            TaskChange::Completed { message: reflow::summary(&record), reflow_id: reflow_id.to_owned() }
                        };
                        // Only a live task, still this server's, may end this way; a task cancelled or
                        // taken over meanwhile rolls the moves back.
                        if w.change_task_leased(id, lease, &change, now_ms())? { Ok(()) } else { Err(StoreError::TaskGone) }
                    })
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

    fn end_refused(&self, id: &str, lease: &Lease, message: &str) -> Result<(), StoreError> {
        let change = TaskChange::Refused { message: message.to_owned() };
        self.step(id, lease, "ending the task refused", || Ok(self.change_leased(id, lease, &change)?)).map_err(into_store)?;
        Ok(())
    }
}

/// Stops a solve whose task is no longer this server's to run: cancelled, or taken over.
fn stop_lost(id: &str, stop: &AtomicBool) {
    if !stop.swap(true, Ordering::Relaxed) {
        tracing::info!(task_id = %id, "the task was cancelled or taken over elsewhere: stopping its solve");
    }
}

/// This server as leases name it: the machine, the process and a random part (a process id
/// alone may be reused): `host/pid/random`.
fn server_name() -> String {
    let random = crate::auth::secret::random(4).unwrap_or_default();
    format!("{}/{}/{random}", host_name(), std::process::id())
}

fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is what gethostname is given.
    let done = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    match (done, std::str::from_utf8(&buffer[..end])) {
        (0, Ok(name)) if !name.is_empty() => name.replace('/', "_"),
        _ => "localhost".to_owned(),
    }
}

/// Whether a lease holder (`host/pid/random`) other than `me` was a process on this machine that
/// is gone. (A holder with this process's id but not its name was an earlier process: a server
/// restarted as the same pid, as in a container.)
fn is_dead_here(holder: &str, me: &str) -> bool {
    let mut parts = holder.split('/');
    let (Some(host), Some(pid)) = (parts.next(), parts.next().and_then(|pid| pid.parse::<libc::pid_t>().ok())) else { return false };
    if holder == me || host != host_name() || pid <= 0 {
        return false;
    }
    if pid as u32 == std::process::id() {
        return true;
    }
    // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    !alive && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// A plan id nobody made.
fn unknown_plan(id: &str) -> TaskError {
    TaskError::Store(StoreError::Plan(PlanRefusal::Unknown { reflow: id.to_owned() }))
}

/// A failure of ours met while running a task, as the store error it comes down to.
fn into_store(e: ReflowError) -> StoreError {
    match e {
        ReflowError::Store(e) => e,
        other => StoreError::Corrupt(other.to_string()),
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
    fn a_lease_holder_is_dead_only_if_it_was_here_and_its_process_is_gone() {
        let me = server_name();
        let host = host_name();
        assert!(!is_dead_here(&me, &me), "this server");
        assert!(is_dead_here(&format!("{host}/{}/older", std::process::id()), &me), "this pid, another name: an earlier process");
        // A child that has exited and been waited for is gone.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(is_dead_here(&format!("{host}/{pid}/x"), &me));
        assert!(!is_dead_here(&format!("another-host/{pid}/x"), &me), "another machine: wait for the lease");
        assert!(!is_dead_here(&format!("{host}/1/x"), &me), "a live process");
        assert!(!is_dead_here("garbage", &me));
    }

    #[test]
    fn poll_interval_grows_with_the_work() {
        assert_eq!(poll_interval(10), Duration::from_millis(250));
        assert_eq!(poll_interval(2000), Duration::from_millis(800));
        assert_eq!(poll_interval(100_000), Duration::from_secs(5));
    }
}
