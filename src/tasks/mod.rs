//! Durable month reflows. A reflow asked for as a task is written to the store before anyone hears
//! of it, solved on its own thread (the solver on rayon, never on an async worker), and ends in one
//! transaction that writes the moves and the task's final state together, only while the task is
//! still live. Work left `working` by a dead process is redone at start-up. What the answers look
//! like on the wire is the caller's business: a [`Render`] turns outcomes into documents.

use crate::domain::StudioTz;
use crate::reflow::{self, ReflowError, ReflowPlan, ReflowRequest};
use crate::store::{NewTask, Pool, ReflowRecord, Store, StoreError, TaskChange, TaskRecord, TaskStatus};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use studioflow_solver as solver;

/// The kind of the only long-running work there is.
pub const REFLOW_KIND: &str = "reflow_month";

/// The longest a task may be kept: a week.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// A reflow as a task runs it: what to solve, and what to do with the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReflowJob {
    pub request: ReflowRequest,
    /// Record the plan without moving anything.
    pub dry_run: bool,
    /// Ask the client before moving anything.
    pub require_approval: bool,
}

/// Turns a task's outcomes into the documents clients read.
pub trait Render: Send + Sync + 'static {
    /// The answer to a finished reflow (applied or not), from its stored record.
    fn finished(&self, tz: &StudioTz, reflow: &ReflowRecord) -> serde_json::Value;
    /// The answer to a reflow that could not be done, for a reason the caller can act on.
    fn refused(&self, message: &str) -> serde_json::Value;
    /// The question asked before a plan is applied.
    fn approval(&self, tz: &StudioTz, reflow: &ReflowRecord) -> serde_json::Value;
    /// The error of a task that failed on our side.
    fn failure(&self, message: &str) -> serde_json::Value;
}

/// How tasks run.
#[derive(Debug, Clone)]
pub struct TaskConfig {
    pub ttl: Duration,
    pub solver_threads: usize,
    pub solver_time_limit: Duration,
    /// Slows each solved part down, so that tests can stop a process in the middle of a solve.
    pub test_delay_per_part: Option<Duration>,
}

/// Why a task request was not taken.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The caller can fix it; the message says how.
    #[error("{0}")]
    Refused(String),
    /// No such task (or it expired).
    #[error("unknown task {0:?}: it never existed or its time to live ran out")]
    Unknown(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The task runner, shared by every request of a server (and by the demo).
pub struct Tasks {
    pool: Arc<Pool>,
    config: TaskConfig,
    render: Arc<dyn Render>,
    /// The stop flags of the solves running in this process.
    live: Mutex<HashMap<String, Arc<AtomicBool>>>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `tsk_` and 160 random bits in lower-case base32: unguessable, and safe in URLs and headers.
fn new_task_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 20];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Invalid(format!("no randomness for a task id: {e}")))?;
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut id = String::from("tsk_");
    let mut bits = 0u32;
    let mut value = 0u32;
    for byte in bytes {
        value = (value << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            id.push(ALPHABET[((value >> bits) & 31) as usize] as char);
        }
    }
    Ok(id)
}

impl Tasks {
    pub fn new(pool: Arc<Pool>, config: TaskConfig, render: Arc<dyn Render>) -> Arc<Tasks> {
        Arc::new(Tasks { pool, config, render, live: Mutex::new(HashMap::new()) })
    }

    /// Writes a new reflow task and starts it; the task is durable when this returns.
    /// Blocking: call it from a blocking thread.
    pub fn start_reflow(self: &Arc<Self>, job: &ReflowJob) -> Result<TaskRecord, TaskError> {
        let ttl = self.config.ttl.min(MAX_TTL);
        let record = self.pool.with(|store| -> Result<TaskRecord, TaskError> {
            // Check the request now, so a bad one is refused at once rather than as a task.
            let refuse = |e: ReflowError| match e {
                ReflowError::Store(e) => TaskError::Store(e),
                other => TaskError::Refused(other.to_string()),
            };
            let affected = reflow::export_instance(store, &job.request).map_err(refuse)?.affected_bookings().len();
            if !job.dry_run {
                reflow::require_windows(store, &job.request).map_err(refuse)?;
            }
            let id = new_task_id()?;
            let task = NewTask {
                id: id.clone(),
                kind: REFLOW_KIND.into(),
                request: serde_json::to_value(job).expect("a job always serialises"),
                month: Some(job.request.month.to_string()),
                status_message: format!("Queued: reflowing {} ({affected} bookings to move)", job.request.month),
                now_ms: now_ms(),
                ttl_ms: Some(ttl.as_millis() as i64),
                poll_interval_ms: poll_interval(affected).as_millis() as i64,
            };
            store.write_with(|w| w.create_task(&task)).map_err(|e| match e {
                StoreError::Invalid(why) => TaskError::Refused(why),
                other => TaskError::Store(other),
            })?;
            store.task(&id)?.ok_or(TaskError::Unknown(id))
        })??;
        self.spawn(record.id.clone());
        Ok(record)
    }

    /// Redoes the work of tasks that a previous process left `working`. Tasks waiting for input
    /// keep waiting.
    pub fn resume(self: &Arc<Self>) -> Result<usize, StoreError> {
        // Work whose time to live ran out while no server was up is not redone.
        self.sweep()?;
        let working = self.pool.with(|store| store.tasks_in(TaskStatus::Working))??;
        for task in &working {
            tracing::info!(task_id = %task.id, "resuming a task left working");
            self.spawn(task.id.clone());
        }
        Ok(working.len())
    }

    /// A task, unless it is unknown or expired.
    pub fn get(&self, id: &str) -> Result<TaskRecord, TaskError> {
        let task = self.pool.with(|store| store.task(id))??;
        match task {
            Some(task) if !task.expired(now_ms()) => Ok(task),
            _ => Err(TaskError::Unknown(id.to_owned())),
        }
    }

    /// Asks a task to stop. A finished task is left as it is; a running solve stops at its next
    /// check, and nothing of a cancelled reflow is applied.
    pub fn cancel(&self, id: &str) -> Result<TaskRecord, TaskError> {
        let task = self.get(id)?;
        if !task.status.is_final() {
            if let Some(flag) = self.live.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
                flag.store(true, Ordering::Relaxed);
            }
            let change = TaskChange::Cancelled { message: "Cancelled: nothing was moved.".into() };
            self.pool.with(|store| {
                store.write_with(|w| w.change_task(id, &[TaskStatus::Working, TaskStatus::InputRequired], &change, now_ms()))
            })??;
        }
        self.get(id)
    }

    /// Answers the approval question of a task waiting for input: accept applies the plan (if
    /// the month has not changed since), decline ends it with nothing applied, cancel cancels it.
    /// Answers to questions that are not outstanding (an unknown key, a task that is not
    /// waiting) are ignored, as the Tasks extension asks.
    pub fn answer(&self, id: &str, responses: &serde_json::Value) -> Result<TaskRecord, TaskError> {
        let task = self.get(id)?;
        let Some(approve) = responses.get("approve").filter(|_| task.status == TaskStatus::InputRequired) else {
            return Ok(task);
        };
        let reflow_id = task.reflow_id.clone().ok_or_else(|| StoreError::Corrupt(format!("task {id} waits with no plan")))?;
        let action = approve
            .get("action")
            .and_then(|a| a.as_str())
            .ok_or_else(|| TaskError::Refused("the answer to \"approve\" needs an action: accept, decline or cancel".into()))?;
        let waiting = [TaskStatus::InputRequired];
        match action {
            "accept" => {
                let render = self.render.clone();
                let outcome = self.pool.with(|store| {
                    reflow::apply_recorded_with(store, &reflow_id, |w| {
                        let record = w.reflow_record(&reflow_id)?;
                        let tz = w.studio_tz()?;
                        let change = TaskChange::Completed { message: done_message(&record), result: render.finished(&tz, &record), reflow_id: None };
                        if w.change_task(id, &waiting, &change, now_ms())? { Ok(()) } else { Err(StoreError::TaskGone) }
                    })
                })?;
                match outcome {
                    Ok(()) | Err(ReflowError::Store(StoreError::TaskGone)) => {}
                    // The month changed since the plan was made: refuse, never apply blindly.
                    Err(e @ (ReflowError::Stale(_) | ReflowError::Invalid(_))) => {
                        let message = e.to_string();
                        let change = TaskChange::Completed { message: message.clone(), result: self.render.refused(&message), reflow_id: None };
                        self.pool.with(|store| store.write_with(|w| w.change_task(id, &waiting, &change, now_ms())))??;
                    }
                    // Our failure (a busy or broken database): the question keeps waiting for a retry.
                    Err(ReflowError::Store(e)) => return Err(e.into()),
                }
            }
            "decline" => {
                let render = self.render.clone();
                self.pool.with(|store| {
                    store.write_with(|w| {
                        let record = w.reflow_record(&reflow_id)?;
                        let tz = w.studio_tz()?;
                        let message = format!("Declined: nothing was moved ({} moves were proposed).", record.moves.len());
                        w.change_task(id, &waiting, &TaskChange::Completed { message, result: render.finished(&tz, &record), reflow_id: None }, now_ms())
                    })
                })??;
            }
            "cancel" => return self.cancel(id),
            other => return Err(TaskError::Refused(format!("unknown action {other:?}: answer accept, decline or cancel"))),
        }
        self.get(id)
    }

    /// Deletes expired tasks; their ids are unknown afterwards.
    /// A live task whose time ran out is cancelled first, so that no solve still running can
    /// apply its moves afterwards.
    pub fn sweep(&self) -> Result<usize, StoreError> {
        let now = now_ms();
        self.pool.with(|store| {
            for status in [TaskStatus::Working, TaskStatus::InputRequired] {
                for task in store.tasks_in(status)?.into_iter().filter(|t| t.expired(now)) {
                    if let Some(flag) = self.live.lock().unwrap_or_else(|e| e.into_inner()).get(&task.id) {
                        flag.store(true, Ordering::Relaxed);
                    }
                    let change = TaskChange::Cancelled { message: "Expired: its time to live ran out; nothing was moved.".into() };
                    store.write_with(|w| w.change_task(&task.id, &[status], &change, now))?;
                }
            }
            store.delete_expired_tasks(now)
        })?
    }

    fn spawn(self: &Arc<Self>, id: String) {
        let flag = Arc::new(AtomicBool::new(false));
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), flag.clone());
        let tasks = self.clone();
        std::thread::Builder::new()
            .name(format!("task-{}", &id[..id.len().min(12)]))
            .spawn(move || {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tasks.run(&id, &flag)));
                let failure = match outcome {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(_) => Some("the reflow stopped unexpectedly".to_owned()),
                };
                if let Some(message) = failure {
                    tracing::error!(task_id = %id, error = %message, "task failed");
                    let change = TaskChange::Failed { message: format!("Failed: {message}"), error: tasks.render.failure(&message) };
                    let _ = tasks.pool.with(|store| store.write_with(|w| w.change_task(&id, &[TaskStatus::Working], &change, now_ms())));
                }
                tasks.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            })
            .expect("the OS gives a thread");
    }

    /// Solves a task's reflow and ends it, unless it was cancelled meanwhile.
    fn run(&self, id: &str, cancel: &Arc<AtomicBool>) -> Result<(), StoreError> {
        let Some(task) = self.pool.with(|store| store.task(id))?? else { return Ok(()) };
        if task.status != TaskStatus::Working {
            return Ok(());
        }
        let job: ReflowJob = serde_json::from_value(task.request.clone())
            .map_err(|e| StoreError::Corrupt(format!("the request of task {id}: {e}")))?;
        // A plan can go stale between solving and applying only if someone books meanwhile; then
        // solve again rather than give up at once.
        for attempt in 1..=3 {
            let plan = match self.pool.with(|store| self.plan(store, id, &job, cancel))? {
                Ok(plan) => plan,
                Err(ReflowError::Store(e)) => return Err(e),
                Err(other) => return self.end_refused(id, &other.to_string()),
            };
            if cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            let render = self.render.clone();
            let working = [TaskStatus::Working];
            let ask = job.require_approval && !job.dry_run;
            let outcome = self.pool.with(|store| {
                reflow::apply_plan_with(store, &plan, job.dry_run || ask, |w, reflow_id| {
                    let record = w.reflow_record(reflow_id)?;
                    let tz = w.studio_tz()?;
                    let change = if ask {
                        TaskChange::AwaitInput {
                            message: format!("Waiting for approval: apply {} moves, {} unresolved?", record.moves.len(), record.unresolved.len()),
                            input_requests: render.approval(&tz, &record),
                            reflow_id: reflow_id.to_owned(),
                        }
                    } else {
                        TaskChange::Completed { message: done_message(&record), result: render.finished(&tz, &record), reflow_id: Some(reflow_id.to_owned()) }
                    };
                    // Only a live task may end this way; a cancelled one rolls the moves back.
                    if w.change_task(id, &working, &change, now_ms())? { Ok(()) } else { Err(StoreError::TaskGone) }
                })
            })?;
            match outcome {
                Ok(_) => return Ok(()),
                Err(ReflowError::Store(StoreError::TaskGone)) => return Ok(()),
                Err(ReflowError::Stale(why)) if attempt < 3 => tracing::info!(task_id = %id, %why, "plan went stale; solving again"),
                Err(ReflowError::Store(e)) => return Err(e),
                Err(other) => return self.end_refused(id, &other.to_string()),
            }
        }
        Ok(())
    }

    fn plan(&self, store: &mut Store, id: &str, job: &ReflowJob, cancel: &Arc<AtomicBool>) -> Result<ReflowPlan, ReflowError> {
        let export = reflow::export_instance(store, &job.request)?;
        let affected = export.affected_bookings().len();
        let pool = self.pool.clone();
        let task_id = id.to_owned();
        let last_write = Mutex::new(Instant::now() - Duration::from_secs(1));
        let delay = self.config.test_delay_per_part;
        let progress: Arc<dyn Fn(solver::Progress) + Send + Sync> = Arc::new(move |p: solver::Progress| {
            if let Some(delay) = delay {
                std::thread::sleep(delay);
            }
            // A status write is a commit: a few a second is plenty for someone polling.
            let mut last = last_write.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() >= Duration::from_millis(200) || p.parts_done == p.parts_total {
                *last = Instant::now();
                let message = format!("Reflowing {affected} bookings: {} of {} parts solved", p.parts_done, p.parts_total);
                let _ = pool.with(|s| s.write_with(|w| w.change_task(&task_id, &[TaskStatus::Working], &TaskChange::Progress(message), now_ms())));
            }
        });
        let options = solver::Options {
            threads: self.config.solver_threads,
            time_limit: self.config.solver_time_limit,
            cancel: Some(cancel.clone()),
            progress: Some(progress),
        };
        export.solve(&job.request, &options)
    }

    fn end_refused(&self, id: &str, message: &str) -> Result<(), StoreError> {
        let change = TaskChange::Completed { message: message.to_owned(), result: self.render.refused(message), reflow_id: None };
        self.pool.with(|store| store.write_with(|w| w.change_task(id, &[TaskStatus::Working], &change, now_ms())))??;
        Ok(())
    }
}

fn done_message(record: &ReflowRecord) -> String {
    let verb = if record.applied { "Moved" } else { "Would move" };
    format!("{verb} {} bookings; {} unresolved.", record.moves.len(), record.unresolved.len())
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
    fn poll_interval_grows_with_the_work() {
        assert_eq!(poll_interval(10), Duration::from_millis(250));
        assert_eq!(poll_interval(2000), Duration::from_millis(800));
        assert_eq!(poll_interval(100_000), Duration::from_secs(5));
    }
}
