//! Why a task request was not taken, typed: the caller's (a reflow that cannot be done as asked,
//! an unknown task, or the store's refusals: a month already being reflowed, an unknown or used
//! plan) or ours (the store, the system). The edges word them; where a message should name a tool or a command, the
//! edge adds it.

use crate::reflow::ReflowError;
use crate::store::StoreError;

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
    /// ([`StoreError::Busy`]), and so is a plan applied at most once ([`StoreError::Plan`]).
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

impl crate::error::Blame for TaskError {
    fn is_ours(&self) -> bool {
        TaskError::is_ours(self)
    }

    fn is_transient(&self) -> bool {
        TaskError::is_transient(self)
    }
}
