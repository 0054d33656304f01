//! Whose fault a failure is. Every error type below the edge says whether it is ours (the
//! database, its contents, the system) or the caller's (something they asked for and can change),
//! and whether one of ours is transient (the database connection was lost: the same request may
//! succeed if sent again); the edges turn that into their own terms: `isError` (saying what to
//! change, or to retry) or an internal JSON-RPC error for a tool, exit code 2 or 1 for a command.
//! Each error type implements it beside its own definition; this file depends on nothing.

/// A failure that knows whose it is.
pub trait Blame: std::error::Error + Send + Sync + 'static {
    /// Whether the failure is ours rather than something the caller can change.
    fn is_ours(&self) -> bool;

    /// Whether the failure is ours and passing: the database connection was lost (nothing is
    /// wrong with the request, and its message says whether anything was changed). A lost
    /// connection is never an internal error at the edge: the caller is told to retry.
    fn is_transient(&self) -> bool {
        false
    }
}
