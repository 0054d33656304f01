//! Durable tasks: a row per task, written before anyone hears of the task, and moved between
//! states only by guarded updates. The database refuses to change a finished task (a trigger) and
//! to hold two live reflows of one month (a unique index), so no code path can break either rule.
//!
//! A working task is run by whichever server holds its **lease**: a random token and an expiry on
//! the database's clock. The server that creates a task holds it from the start; it renews the
//! lease while it solves, and every write its runner makes is fenced on the token, so a server
//! that lost the lease (it paused past the expiry, or the task was cancelled elsewhere) changes
//! nothing. A lease that runs out (its server died) is claimed by another server, once:
//! PostgreSQL's `FOR UPDATE SKIP LOCKED` keeps concurrent claimers off each other's rows.
//!
//! Outside MCP, a live task is cancelled by the operator ([`Writer::cancel_task`]) or because the
//! API token that owns it was revoked ([`Writer::cancel_tasks_owned_by`]); both are recorded in
//! the history, and a solve under way stops when its runner next renews its lease or reports.

use super::events::{self, Action, Entity};
use super::{Result, Store, StoreError, Writer};
use super::db::{self, params, Connection, OptionalExtension, Row};
use serde_json::json;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    fn parse(s: &str) -> Option<TaskStatus> {
        [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled]
            .into_iter()
            .find(|t| t.as_str() == s)
    }

    pub fn is_final(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: String,
    pub kind: String,
    /// What the task was asked to do, as the runner wrote it (JSON).
    pub request: serde_json::Value,
    pub month: Option<String>,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub ttl_ms: Option<i64>,
    pub poll_interval_ms: i64,
    /// The plan awaiting approval, then the reflow the task ended with.
    pub reflow_id: Option<String>,
    /// A completed task that could not do its work: what the caller can change.
    pub refusal: Option<String>,
    /// A failed task: what went wrong on our side.
    pub failure: Option<String>,
    /// The principal that created it (`Principal::id`); `None` for the local user.
    pub owner: Option<String>,
    /// The server that holds its lease, or last held it (`host/pid/random`).
    pub holder: Option<String>,
}

/// How a finished task ended, in the store's terms; the edge words it for its clients.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// The reflow ran, and this is its record (applied, a dry run, or a declined plan).
    Reflow(String),
    /// The work could not be done, for a reason the caller can act on.
    Refused(String),
    /// It failed on our side.
    Failed(String),
    Cancelled,
}

impl TaskRecord {
    /// Whether its time to live has run out at `now_ms`.
    pub fn expired(&self, now_ms: i64) -> bool {
        self.ttl_ms.is_some_and(|ttl| self.created_ms.saturating_add(ttl) <= now_ms)
    }

    /// How it ended; `None` while it is live. A row that does not add up is corrupt.
    pub fn outcome(&self) -> Result<Option<TaskOutcome>> {
        let corrupt = || StoreError::Corrupt(format!("task {} is {} with nothing to show for it", self.id, self.status.as_str()));
        Ok(Some(match self.status {
            TaskStatus::Working | TaskStatus::InputRequired => return Ok(None),
            TaskStatus::Cancelled => TaskOutcome::Cancelled,
            TaskStatus::Failed => TaskOutcome::Failed(self.failure.clone().ok_or_else(corrupt)?),
            TaskStatus::Completed => match (&self.refusal, &self.reflow_id) {
                (Some(refusal), _) => TaskOutcome::Refused(refusal.clone()),
                (None, Some(reflow)) => TaskOutcome::Reflow(reflow.clone()),
                (None, None) => return Err(corrupt()),
            },
        }))
    }
}

/// The right to run a working task: who holds it, with what token, for how long at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Random per claim: the fence of every write the runner makes.
    pub token: String,
    /// The server holding it (`host/pid/random`), for logs and for taking over from a dead process.
    pub server: String,
    /// How long the lease lasts from each claim or renewal, in milliseconds.
    pub ms: i64,
}

/// A new task, before it is written.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub id: String,
    pub kind: String,
    pub request: serde_json::Value,
    pub month: Option<String>,
    pub status_message: String,
    pub now_ms: i64,
    pub ttl_ms: Option<i64>,
    pub poll_interval_ms: i64,
    /// The principal creating it (`Principal::id`); `None` for the local user.
    pub owner: Option<String>,
    /// The lease the creating server takes at once, so that no other server starts it meanwhile.
    pub lease: Option<Lease>,
}

/// How a task moves on: progress, a question, or its end.
#[derive(Debug, Clone)]
pub enum TaskChange {
    /// Still working: a new status message.
    Progress(String),
    /// Waits for the client to approve the recorded plan `reflow_id`.
    AwaitApproval { message: String, reflow_id: String },
    /// Done: the reflow it ended with.
    Completed { message: String, reflow_id: String },
    /// Done without doing its work, for a reason the caller can act on (the message).
    Refused { message: String },
    Failed { message: String },
    Cancelled { message: String },
}

const COLUMNS: &str = "id, kind, request, month, status, status_message, created_ms, updated_ms, ttl_ms, \
     poll_interval_ms, reflow_id, refusal, failure, owner";

/// What a claim sets: the new lease (`?1` its token, `?2` its length in ms, `?3` the server) and
/// one more attempt.
fn claiming(backend: db::Backend) -> String {
    format!("lease_token = ?1, lease_expires_ms = {} + ?2, claimed_by = ?3, attempts = attempts + 1", database_now_ms(backend))
}

/// The database's clock in unix milliseconds: leases are timed by the one clock every server
/// shares, not by each server's own.
fn database_now_ms(backend: db::Backend) -> &'static str {
    match backend {
        db::Backend::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        db::Backend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    }
}

fn task_from_row(row: &Row<'_>) -> db::Result<TaskRecord> {
    fn json(column: usize, text: Option<String>) -> db::Result<Option<serde_json::Value>> {
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| db::Error::column(column, e.to_string()))
        })
        .transpose()
    }
    let status: String = row.get(4)?;
    Ok(TaskRecord {
        id: row.get(0)?,
        kind: row.get(1)?,
        request: json(2, Some(row.get(2)?))?.unwrap_or_default(),
        month: row.get(3)?,
        status: TaskStatus::parse(&status).ok_or_else(|| {
            db::Error::column(4, format!("task status {status:?}"))
        })?,
        status_message: row.get(5)?,
        created_ms: row.get(6)?,
        updated_ms: row.get(7)?,
        ttl_ms: row.get(8)?,
        poll_interval_ms: row.get(9)?,
        reflow_id: row.get(10)?,
        refusal: row.get(11)?,
        failure: row.get(12)?,
        owner: row.get(13)?,
        holder: row.get(14)?,
    })
}

/// What a task row is read as: its columns and its lease's holder.
const READ: &str = "id, kind, request, month, status, status_message, created_ms, updated_ms, ttl_ms, \
     poll_interval_ms, reflow_id, refusal, failure, owner, claimed_by";

fn task_in(conn: &Connection, id: &str) -> Result<Option<TaskRecord>> {
    Ok(conn.prepare_cached(&format!("SELECT {READ} FROM tasks WHERE id = ?"))?.query_row([id], task_from_row).optional()?)
}

impl Store {
    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>> {
        task_in(self.conn(), id)
    }

    /// Every task of the studio, whoever owns it, oldest first (for the operator's `task list`).
    pub fn tasks(&self) -> Result<Vec<TaskRecord>> {
        let mut stmt = self.conn().prepare_cached(&format!("SELECT {READ} FROM tasks ORDER BY created_ms, id"))?;
        let rows = stmt.query_map((), task_from_row)?;
        Ok(rows.collect::<db::Result<_>>()?)
    }

    /// Tasks still in `status`, oldest first (for resuming work after a restart).
    pub fn tasks_in(&self, status: TaskStatus) -> Result<Vec<TaskRecord>> {
        let mut stmt = self.conn().prepare_cached(&format!("SELECT {READ} FROM tasks WHERE status = ? ORDER BY created_ms, id"))?;
        let rows = stmt.query_map([status.as_str()], task_from_row)?;
        Ok(rows.collect::<db::Result<_>>()?)
    }

    /// The tasks `owner` created, oldest first.
    pub fn tasks_owned_by(&self, owner: &str) -> Result<Vec<TaskRecord>> {
        let mut stmt = self.conn().prepare_cached(&format!("SELECT {READ} FROM tasks WHERE owner = ? ORDER BY created_ms, id"))?;
        let rows = stmt.query_map([owner], task_from_row)?;
        Ok(rows.collect::<db::Result<_>>()?)
    }

    /// Claims the oldest working task whose lease has run out (or that never had one) for
    /// `lease`, and returns its id; `None` when there is none. Concurrent claimers on other
    /// servers skip the rows this one has locked, so each task goes to one of them.
    pub fn claim_task(&self, lease: &Lease) -> Result<Option<String>> {
        let backend = self.backend();
        let now = database_now_ms(backend);
        let skip_locked = if backend == db::Backend::Postgres { "FOR UPDATE SKIP LOCKED" } else { "" };
        let claiming = claiming(backend);
        let sql = format!(
            "UPDATE tasks SET {claiming} \
             WHERE id = (SELECT id FROM tasks WHERE status = 'working' AND (lease_expires_ms IS NULL OR lease_expires_ms <= {now}) \
                         ORDER BY created_ms, id LIMIT 1 {skip_locked}) \
               AND status = 'working' AND (lease_expires_ms IS NULL OR lease_expires_ms <= {now}) \
             RETURNING id"
        );
        Ok(self.conn().query_row(&sql, params![lease.token, lease.ms, lease.server], |row| row.get(0)).optional()?)
    }

    /// Takes over working tasks whose lease names one of `servers` (processes known to be dead),
    /// whatever its expiry: a server restarted on the same machine need not wait for the lease of
    /// the process it replaces. Each task gets a lease of its own (`lease` names the token maker);
    /// returns the ids and tokens taken.
    pub fn take_over_tasks(&self, servers: &[String], lease: impl Fn() -> Result<Lease>) -> Result<Vec<(String, Lease)>> {
        let mut taken = Vec::new();
        for server in servers {
            let held: Vec<String> = {
                let mut stmt = self.conn().prepare_cached("SELECT id FROM tasks WHERE status = 'working' AND claimed_by = ? ORDER BY created_ms, id")?;
                stmt.query_map([server], |row| row.get(0))?.collect::<db::Result<_>>()?
            };
            for id in held {
                let new = lease()?;
                let sql = format!("UPDATE tasks SET {} WHERE id = ?4 AND status = 'working' AND claimed_by = ?5", claiming(self.backend()));
                if self.conn().execute(&sql, params![new.token, new.ms, new.server, id, server])? == 1 {
                    taken.push((id, new));
                }
            }
        }
        Ok(taken)
    }

    /// The servers holding working tasks, as they named themselves (for a server to find its dead
    /// predecessors on the same machine).
    pub fn task_holders(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn().prepare_cached("SELECT DISTINCT claimed_by FROM tasks WHERE status = 'working' AND claimed_by IS NOT NULL")?;
        Ok(stmt.query_map((), |row| row.get(0))?.collect::<db::Result<_>>()?)
    }

    /// Extends a lease by its length from now; false (and nothing changed) when the task is no
    /// longer working or another server holds it: its runner must stop.
    pub fn renew_lease(&self, id: &str, lease: &Lease) -> Result<bool> {
        let now = database_now_ms(self.backend());
        let sql = format!("UPDATE tasks SET lease_expires_ms = {now} + ?1 WHERE id = ?2 AND lease_token = ?3 AND status = 'working'");
        Ok(self.conn().execute(&sql, params![lease.ms, id, lease.token])? == 1)
    }

    /// Whether `lease` is still the lease of a working task: false once the task ended (a commit
    /// whose answer was lost shows here as its own end) or another claim replaced it.
    pub fn holds_lease(&self, id: &str, lease: &Lease) -> Result<bool> {
        let held = self
            .conn()
            .query_row("SELECT 1 FROM tasks WHERE id = ? AND lease_token = ? AND status = 'working'", params![id, lease.token], |_| Ok(()))
            .optional()?;
        Ok(held.is_some())
    }

    /// Gives a lease up, so that any server may claim the task at once (its runner could not start, or
    /// lost the database).
    pub fn release_lease(&self, id: &str, lease: &Lease) -> Result<bool> {
        Ok(self.conn().execute(
            "UPDATE tasks SET lease_expires_ms = NULL WHERE id = ? AND lease_token = ? AND status = 'working'",
            params![id, lease.token],
        )? == 1)
    }

    /// Deletes the finished tasks whose time to live ran out before `now_ms`; returns how many went.
    /// A task that has just finished stays a little longer (half its time to live, at most 30 s),
    /// whatever its creation, so that a caller waiting for it (a synchronous reflow whose solve
    /// took longer than the time to live) reads how it ended.
    pub fn delete_expired_tasks(&mut self, now_ms: i64) -> Result<usize> {
        self.write_with(|w| {
            Ok(w.conn().execute(
                "DELETE FROM tasks WHERE ttl_ms IS NOT NULL AND created_ms + ttl_ms <= ?1 \
                 AND updated_ms + (CASE WHEN ttl_ms < 60000 THEN ttl_ms / 2 ELSE 30000 END) <= ?1 \
                 AND status IN ('completed', 'failed', 'cancelled')",
                [now_ms],
            )?)
        })
    }
}

impl Writer<'_> {
    /// Writes a new working task. A live reflow of the same month already there is refused,
    /// naming it.
    pub fn create_task(&mut self, task: &NewTask) -> Result<()> {
        if let Some(month) = &task.month
            && let Some(live) = self.live_task(month)?
        {
            return Err(live.busy(month));
        }
        let now = database_now_ms(self.conn().backend());
        self.conn().execute(
            &format!(
                "INSERT INTO tasks ({COLUMNS}, lease_token, lease_expires_ms, claimed_by, attempts) \
                 VALUES (?, ?, ?, ?, 'working', ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, {now} + ?, ?, ?)"
            ),
            params![
                task.id,
                task.kind,
                task.request.to_string(),
                task.month,
                task.status_message,
                task.now_ms,
                task.now_ms,
                task.ttl_ms,
                task.poll_interval_ms,
                task.owner,
                task.lease.as_ref().map(|l| l.token.as_str()),
                task.lease.as_ref().map(|l| l.ms),
                task.lease.as_ref().map(|l| l.server.as_str()),
                i64::from(task.lease.is_some())
            ],
        )?;
        Ok(())
    }

    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>> {
        task_in(self.conn(), id)
    }

    /// Moves a task from one of `from` to a new state; returns false (and changes nothing) when the
    /// task is no longer in any of them, e.g. because it was cancelled meanwhile.
    pub fn change_task(&mut self, id: &str, from: &[TaskStatus], change: &TaskChange, now_ms: i64) -> Result<bool> {
        self.change_task_fenced(id, from, None, change, now_ms)
    }

    /// [`Writer::change_task`] from `working`, by the runner holding `lease`: false (and nothing
    /// changed) when another server holds the task now, or it is no longer working.
    pub fn change_task_leased(&mut self, id: &str, lease: &Lease, change: &TaskChange, now_ms: i64) -> Result<bool> {
        self.change_task_fenced(id, &[TaskStatus::Working], Some(&lease.token), change, now_ms)
    }

    fn change_task_fenced(&mut self, id: &str, from: &[TaskStatus], token: Option<&str>, change: &TaskChange, now_ms: i64) -> Result<bool> {
        let current = match self.task(id)? {
            Some(t) => t,
            None => return Ok(false),
        };
        if !from.contains(&current.status) {
            return Ok(false);
        }
        let kept = current.reflow_id.clone();
        let (status, message, reflow_id, refusal, failure) = match change {
            TaskChange::Progress(m) => (TaskStatus::Working, m, kept, None, None),
            TaskChange::AwaitApproval { message, reflow_id } => (TaskStatus::InputRequired, message, Some(reflow_id.clone()), None, None),
            TaskChange::Completed { message, reflow_id } => (TaskStatus::Completed, message, Some(reflow_id.clone()), None, None),
            TaskChange::Refused { message } => (TaskStatus::Completed, message, kept, Some(message.clone()), None),
            TaskChange::Failed { message } => (TaskStatus::Failed, message, kept, None, Some(message.clone())),
            TaskChange::Cancelled { message } => (TaskStatus::Cancelled, message, kept, None, None),
        };
        let placeholders = vec!["?"; from.len()].join(", ");
        // A task that stops working needs no runner: its lease ends with it.
        let lease = if status == TaskStatus::Working { "" } else { ", lease_token = NULL, lease_expires_ms = NULL" };
        let fence = if token.is_some() { " AND lease_token = ?" } else { "" };
        let sql = format!(
            "UPDATE tasks SET status = ?, status_message = ?, updated_ms = ?, reflow_id = ?, refusal = ?, failure = ?{lease} \
             WHERE id = ? AND status IN ({placeholders}){fence}"
        );
        let mut args: Vec<db::Value> = vec![
            status.as_str().to_owned().into(),
            message.clone().into(),
            now_ms.into(),
            reflow_id.into(),
            refusal.into(),
            failure.into(),
            id.to_owned().into(),
        ];
        args.extend(from.iter().map(|s| db::Value::from(s.as_str().to_owned())));
        args.extend(token.map(db::Value::from));
        Ok(self.conn().execute(&sql, args)? == 1)
    }
}

impl Writer<'_> {
    /// Cancels a live (working or waiting) task, whoever owns it, and records it in the history as
    /// this transaction's actor's; returns the task as it was. `message` is its new status
    /// message. An id never issued, or a task already finished, is refused, naming it.
    pub fn cancel_task(&mut self, id: &str, message: &str, now_ms: i64) -> Result<TaskRecord> {
        let id = id.trim();
        let Some(task) = self.task(id)? else {
            return Err(StoreError::invalid("id", format!("there is no task {id:?}: `studioflow task list` shows the tasks' ids")));
        };
        if task.status.is_final() {
            return Err(StoreError::invalid(
                "id",
                format!("task {id} has already ended ({}): there is nothing to cancel; `studioflow task list` shows which are live", task.status.as_str()),
            ));
        }
        self.cancel_live(&task, message, now_ms)?;
        Ok(task)
    }

    /// Cancels every live task of the principal `owner` (its credential was revoked), each
    /// recorded in the history; returns the tasks it cancelled, as they were.
    pub fn cancel_tasks_owned_by(&mut self, owner: &str, message: &str, now_ms: i64) -> Result<Vec<TaskRecord>> {
        let live: Vec<TaskRecord> = {
            let sql = format!("SELECT {READ} FROM tasks WHERE owner = ? AND status IN ('working', 'input_required') ORDER BY created_ms, id");
            let mut stmt = self.conn().prepare_cached(&sql)?;
            stmt.query_map([owner], task_from_row)?.collect::<db::Result<_>>()?
        };
        let mut cancelled = Vec::with_capacity(live.len());
        for task in live {
            if self.cancel_live(&task, message, now_ms)? {
                cancelled.push(task);
            }
        }
        Ok(cancelled)
    }

    /// Moves a live task to `cancelled` (its lease ends with it, so a runner anywhere stops at its
    /// next renewal or report) and records the change; false if it had ended meanwhile.
    fn cancel_live(&mut self, task: &TaskRecord, message: &str, now_ms: i64) -> Result<bool> {
        let live = [TaskStatus::Working, TaskStatus::InputRequired];
        if !self.change_task(&task.id, &live, &TaskChange::Cancelled { message: message.to_owned() }, now_ms)? {
            return Ok(false);
        }
        let before = events::fields([("status", json!(task.status.as_str())), ("status_message", json!(task.status_message))]);
        let after = events::fields([("status", json!(TaskStatus::Cancelled.as_str())), ("status_message", json!(message))]);
        self.event(Entity::Task, &task.id, Action::Cancelled, events::diff(Some(before), Some(after)))?;
        Ok(true)
    }

    /// The live (working or waiting) task of a month, as this transaction sees it.
    pub fn live_task(&self, month: &str) -> Result<Option<LiveTask>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, owner FROM tasks WHERE month = ? AND status IN ('working', 'input_required') LIMIT 1",
                [month],
                |row| Ok(LiveTask { id: row.get(0)?, owner: row.get(1)? }),
            )
            .optional()?)
    }
}

/// A month's live task, which keeps other reflows of the month out.
pub struct LiveTask {
    pub id: String,
    pub owner: Option<String>,
}

impl LiveTask {
    /// The refusal of another reflow of `month`. A principal's task is not named: its id is for
    /// its owner alone, who knows it already.
    pub fn busy(self, month: &str) -> StoreError {
        StoreError::Busy { month: month.to_owned(), task: self.owner.is_none().then_some(self.id) }
    }
}
