//! Whose fault a failure is. Every error type below the edge says whether it is ours (the
//! database, its contents, the system) or the caller's (something they asked for and can change);
//! the edges turn that one answer into their own terms: `isError` or an internal JSON-RPC error for
//! a tool, exit code 2 or 1 for a command.

use crate::reflow::ReflowError;
use crate::store::StoreError;
use crate::tasks::TaskError;

/// A failure that knows whose it is.
pub trait Blame: std::error::Error + Send + Sync + 'static {
    /// Whether the failure is ours rather than something the caller can change.
    fn is_ours(&self) -> bool;
}

impl Blame for StoreError {
    fn is_ours(&self) -> bool {
        StoreError::is_ours(self)
    }
}

impl Blame for ReflowError {
    fn is_ours(&self) -> bool {
        ReflowError::is_ours(self)
    }
}

impl Blame for TaskError {
    fn is_ours(&self) -> bool {
        TaskError::is_ours(self)
    }
}
