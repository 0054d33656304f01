//! What becomes of a recorded plan after its solve: the approval answer of a task waiting for
//! input ([`Tasks::answer`]), a dry run's plan applied later ([`Tasks::apply_plan`]), and an
//! applied reflow undone ([`Tasks::undo`]). Each applies only after checking that the month is as
//! the plan found it, and each keeps the rule of one live reflow per month.

use super::{now_ms, Approval, TaskError, Tasks};
use crate::domain::Actor;
use crate::reflow::{self, ReflowError, ReflowRequest};
use crate::store::{PlanRefusal, ReflowRecord, StoreError, TaskChange, TaskRecord, TaskStatus};

impl Tasks {
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
                    store
                        .write_as(actor, |w| {
                            reflow::apply_recorded(w, &reflow_id)?;
                            let record = w.reflow_record(&reflow_id)?;
                            let change = TaskChange::Completed { message: reflow::summary(&record), reflow_id: reflow_id.clone() };
                            if w.change_task(id, &waiting, &change, now_ms())? { Ok(()) } else { Err(StoreError::TaskGone) }
                        })
                        .map_err(ReflowError::applying)
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
            let record = store.reflow(reflow_id)?.ok_or_else(|| StoreError::Plan(PlanRefusal::Unknown { reflow: reflow_id.to_owned() }))?;
            let request: ReflowRequest = serde_json::from_value(record.request.clone())
                .map_err(|e| StoreError::Corrupt(format!("the request of reflow {reflow_id}: {e}")))?;
            // Applying needs the offline windows a preview could do without.
            reflow::require_windows(store, &request)?;
            // A plan is applied once: checked in the transaction that applies it, so that two
            // callers cannot both apply it.
            let applied = store
                .write_as(actor, |w| {
                    let record = w.reflow_record(reflow_id)?;
                    if record.applied {
                        return Err(StoreError::Plan(PlanRefusal::Applied { reflow: reflow_id.to_owned(), undone: record.undone }));
                    }
                    if let Some(live) = w.live_task(&record.month)? {
                        return Err(live.busy(&record.month));
                    }
                    reflow::apply_recorded(w, reflow_id)?;
                    w.reflow_record(reflow_id)
                })
                .map_err(ReflowError::applying);
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
}
