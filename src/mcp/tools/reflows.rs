//! Approving and taking back reflows without the tasks extension: `apply_reflow` applies a plan a
//! dry run stored (after the approval gate's stale check, and only while no reflow of its month is
//! live), `undo_reflow` puts back what an applied reflow moved. Both go through the task runner,
//! which keeps the one-live-reflow-per-month rule.

use super::super::wire::{self, *};
use super::{plural, Call, ToolError};
use crate::reflow::{self, ReflowError};
use crate::store::StoreError;
use crate::tasks::TaskError;

/// A refusal worded with the tools to use.
fn refusal(e: TaskError) -> ToolError {
    match e {
        TaskError::Busy { month, task } | TaskError::Store(StoreError::Busy { month, task }) => ToolError::Fix(format!(
            "a reflow of {month} is under way as task {task}: wait for it to finish, or cancel it with tasks/cancel, then try again"
        )),
        TaskError::Reflow(ReflowError::NoWindow { room, month }) => ToolError::Fix(format!(
            "{room} has no offline window in {month}: a plan that moves bookings out of a room is applied only while the room \
             has a window; add one with set_room_offline, then apply the plan"
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
