//! Why a task request was not taken, typed: the caller's (a reflow that cannot be done as asked,
//! a month already being reflowed, an unknown task or plan, a plan applied already) or ours (the
//! store, the system). The edges word them; where a message should name a tool or a command, the
//! edge adds it.

use crate::reflow::ReflowError;
use crate::store::StoreError;

/// Why a task request was not taken.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The reflow asked for cannot be done as asked.
    #[error(transparent)]
    Reflow(#[from] ReflowError),
    /// One live reflow per month: this month's is already under way (named when it may be).
    #[error("a reflow of {month} is already under way{}", crate::store::as_task(.task))]
    Busy { month: String, task: Option<String> },
    /// No such task (or it expired).
    #[error("unknown task {0:?}: it never existed or its time to live ran out")]
    Unknown(String),
    /// No stored plan has this id: it was never made, or it expired unapplied.
    #[error("unknown reflow \"{0}\": reflow ids look like rf_0001")]
    UnknownPlan(String),
    /// A stored plan is applied once: this one was applied already (and perhaps undone since).
    #[error("reflow {reflow} was {}", if *.undone { "applied and then undone" } else { "applied already" })]
    PlanUsed { reflow: String, undone: bool },
    /// The system gave no randomness for a task id.
    #[error("no randomness for a task id: {0}")]
    NoRandomness(String),
    /// The system gave no thread to run the task on; the task stays `working` for the next start.
    #[error("no thread to run the reflow on: {0}")]
    NoThread(std::io::Error),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for TaskError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Busy { month, task } => TaskError::Busy { month, task },
            other => TaskError::Store(other),
        }
    }
}

impl TaskError {
    /// Whether the failure is ours rather than the caller's.
    pub fn is_ours(&self) -> bool {
        match self {
            TaskError::Reflow(e) => e.is_ours(),
            TaskError::Store(e) => e.is_ours(),
            TaskError::NoRandomness(_) | TaskError::NoThread(_) => true,
            TaskError::Busy { .. } | TaskError::Unknown(_) | TaskError::UnknownPlan(_) | TaskError::PlanUsed { .. } => false,
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
