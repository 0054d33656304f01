//! The reflow tools: `reflow_month` (the synchronous call waits for the same task runner a task
//! uses), `get_reflow`, and, for clients without the tasks extension, `apply_reflow` (applies a
//! plan a dry run stored, after the approval gate's stale check, only while no reflow of its month
//! is live) and `undo_reflow`. Both go through the task runner, which keeps the
//! one-live-reflow-per-month rule.

use super::super::wire::{self, *};
use super::{decode, names, plural, room_id, Call, Caller, ToolError};
use crate::domain::Actor;
use crate::reflow::{self, Month, ReflowError, ReflowRequest, DEFAULT_MAX_SHIFT};
use crate::store::{as_task, StoreError, TaskOutcome};
use crate::tasks::{ReflowJob, TaskError, TaskView};
use rmcp::model::JsonObject;

/// Reads a reflow request. The request's own checks (rooms, shift) are the reflow's, made once
/// when its month is exported.
fn reflow_job(a: &ReflowMonthArgs, actor: Actor, owner: Option<String>) -> Result<ReflowJob, ToolError> {
    let request = ReflowRequest {
        month: Month::parse(&a.month)?,
        offline_rooms: a.offline_rooms.iter().map(|r| room_id(r)).collect(),
        max_shift_minutes: a.max_shift_minutes.unwrap_or(DEFAULT_MAX_SHIFT),
    };
    Ok(ReflowJob { request, dry_run: a.dry_run, require_approval: a.require_approval, actor, owner })
}

/// `reflow_month`'s arguments as the durable job a task runs, owned by the caller: the one
/// decoder of every way a reflow task is asked for (the Tasks extension, the 2025-11-25 task wire).
pub fn job(caller: &Caller, arguments: JsonObject) -> Result<ReflowJob, ToolError> {
    let a: ReflowMonthArgs = decode(names::REFLOW_MONTH, arguments)?;
    reflow_job(&a, Actor::new(caller.who.as_str(), names::REFLOW_MONTH), caller.owner.clone())
}

/// How the caller follows a reflow: as a task it polls, or by waiting for the answer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Task,
    Wait,
}

/// A reflow that was not started, in words that name the tools to use instead.
pub fn reflow_refusal(e: TaskError, follow: Follow) -> ToolError {
    match e {
        TaskError::Reflow(ReflowError::NoWindow { room, month }) => ToolError::Fix(format!(
            "{room} has no offline window in {month}: take it offline first with {} (from, to, reason), \
             or preview the whole month with dry_run",
            names::SET_ROOM_OFFLINE
        )),
        TaskError::Store(StoreError::Busy { month, task: Some(task) }) if follow == Follow::Task => ToolError::Fix(format!(
            "a reflow of {month} is already under way as task {task}: poll it with tasks/get, or cancel it with \
             tasks/cancel before starting another"
        )),
        TaskError::Store(StoreError::Busy { month, task }) => ToolError::Fix(format!(
            "a reflow of {month} is already under way{}: wait for it to finish ({} shows its plan once it is \
             recorded), then run {} again",
            as_task(&task),
            names::GET_REFLOW,
            names::REFLOW_MONTH
        )),
        other => other.into(),
    }
}

/// The synchronous `reflow_month`: the same task runner a task uses, waited for, telling the
/// call's progress hook (if the client asked to hear) how the solve goes before it returns.
pub fn reflow_month(ctx: &Call<'_>, a: ReflowMonthArgs) -> Result<(ReflowOut, String), ToolError> {
    let job = reflow_job(&a, ctx.actor(), ctx.caller.owner.clone())?;
    if job.require_approval {
        return Err(ToolError::Fix(format!(
            "require_approval needs a client that can be asked: one of protocol 2026-07-28, or a 2025-11-25 client \
             in a session that declared elicitation; otherwise run {} with dry_run: true, review the moves, then \
             apply the plan with {}",
            names::REFLOW_MONTH,
            names::APPLY_REFLOW
        )));
    }
    // The same runner as a task, waited for: the per-month lock, retries of a stale plan and the
    // final summary hold on this path by construction.
    let view = ctx.tasks.reflow_watched(&job, ctx.progress.clone()).map_err(|e| reflow_refusal(e, Follow::Wait))?;
    finished_reflow(&view)
}

/// What a finished reflow task answers: exactly what the synchronous call returns.
pub fn finished_reflow(view: &TaskView) -> Result<(ReflowOut, String), ToolError> {
    match view.task.outcome()? {
        Some(TaskOutcome::Reflow(id)) => {
            let record = view.reflow.as_ref().ok_or_else(|| ToolError::Internal(format!("reflow {id} was not recorded")))?;
            Ok((wire::reflow(&view.tz, record), reflow::summary(record)))
        }
        Some(TaskOutcome::Refused(message)) => Err(ToolError::Fix(message)),
        Some(TaskOutcome::Failed(message)) => Err(ToolError::Internal(message)),
        Some(TaskOutcome::Cancelled) => Err(ToolError::Fix(
            view.task.status_message.clone().unwrap_or_else(|| "the reflow was cancelled: nothing was moved".into()),
        )),
        None => Err(ToolError::Internal(format!("task {} has not finished", view.task.id))),
    }
}

pub fn get_reflow(ctx: &Call<'_>, a: GetReflowArgs) -> Result<(StoredReflowOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let record = store
            .reflow(a.reflow_id.trim())?
            .ok_or_else(|| StoreError::UnknownReflow(a.reflow_id.to_string()))?;
        let staffed = match record.moves.iter().filter(|m| m.moved.changes_engineer()).count() {
            0 => String::new(),
            n => format!(" ({n} with another engineer)"),
        };
        let summary = format!(
            "Reflow {} of {}: {} moves{staffed}, {} unresolved, {}.",
            record.id, record.month, record.moves.len(), record.unresolved.len(), if record.applied { "applied" } else { "not applied" }
        );
        let summary = if record.undone { summary.replace(", applied.", ", applied and then undone.") } else { summary };
        Ok((wire::stored_reflow(&tz, &record), summary))
    })
}

/// A refusal worded with the tools to use.
fn refusal(e: TaskError) -> ToolError {
    match e {
        TaskError::Store(StoreError::Busy { month, task }) => ToolError::Fix(format!(
            "a reflow of {month} is under way{}: wait for it to finish{}, then try again",
            as_task(&task),
            if task.is_some() { ", or cancel it with tasks/cancel" } else { "" }
        )),
        TaskError::Reflow(ReflowError::NoWindow { room, month }) => ToolError::Fix(format!(
            "{room} has no offline window in {month}: a plan that moves bookings out of a room is applied only while the room \
             has a window; add one with {}, then apply the plan",
            names::SET_ROOM_OFFLINE
        )),
        other => other.into(),
    }
}

pub fn apply_reflow(ctx: &Call<'_>, a: ReflowIdArgs) -> Result<(ReflowOut, String), ToolError> {
    let record = ctx.tasks.apply_plan(a.reflow_id.trim(), &ctx.actor()).map_err(refusal)?;
    let tz = ctx.with(|store| Ok(store.studio()?.tz))?;
    Ok((wire::reflow(&tz, &record), reflow::summary(&record)))
}

pub fn undo_reflow(ctx: &Call<'_>, a: ReflowIdArgs) -> Result<(UndoneOut, String), ToolError> {
    let undone = ctx.tasks.undo(a.reflow_id.trim(), &ctx.actor()).map_err(refusal)?;
    let tz = ctx.with(|store| Ok(store.studio()?.tz))?;
    let summary = format!("Undid reflow {}: {} back where they were.", undone.reflow, plural(undone.restored.len(), "booking is", "bookings are"));
    Ok((UndoneOut { reflow_id: undone.reflow, restored: undone.restored.iter().map(|b| wire::booking(&tz, b)).collect() }, summary))
}
