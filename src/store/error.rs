//! What goes wrong in the store, as types the callers match on, never as text they parse:
//! [`StoreError`], with a variant per kind of failure, and the typed parts of some (why a reflow
//! cannot be undone, why a plan cannot be applied). Where a message tells the caller to do
//! something that is a tool's or a command's call (reactivate a room, end a window early), it is a
//! [`Remedy`]: the store words it without naming any tool, and an edge may word it its own way
//! ([`StoreError::worded`]).

use super::db;
use super::migrations::MigrationError;
use crate::domain::{BookingId, ClientId, EngineerId, Refusal, RoomId, SeriesError, SeriesId, TimeError};

/// What went wrong in the store: a refusal the caller can act on, bad input, or a database failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("unknown room \"{0}\": list the rooms to see their ids")]
    UnknownRoom(RoomId),
    #[error("unknown client \"{0}\"")]
    UnknownClient(ClientId),
    #[error("unknown engineer \"{0}\"")]
    UnknownEngineer(EngineerId),
    #[error("unknown booking \"{0}\"")]
    UnknownBooking(BookingId),
    #[error("unknown series \"{0}\"")]
    UnknownSeries(SeriesId),
    /// No reflow (applied or a plan) has this id: the one wording of it, wherever it is met.
    #[error("{}", unknown_reflow(.0))]
    UnknownReflow(String),
    /// A value the caller gave cannot be stored; `field` names it, the message says what to change.
    #[error("{message}")]
    Invalid { field: &'static str, message: String },
    /// Bookings a plan was made from are no longer where it found them.
    #[error("{} changed since the plan was made", list_ids(.0))]
    Stale(Vec<BookingId>),
    /// One live reflow per month: this month's is already under way, as `task` when the caller
    /// may know it (a task of a principal is named to nobody: task ids leak nothing).
    #[error("a reflow of {month} is already under way{}", as_task(.task))]
    Busy { month: String, task: Option<String> },
    #[error(transparent)]
    Series(#[from] SeriesError),
    #[error(transparent)]
    Time(#[from] TimeError),
    #[error("this database holds no studio yet: create it with `studioflow init --db PATH [--demo]`")]
    NoStudio,
    #[error(transparent)]
    Migration(#[from] MigrationError),
    #[error("database error: {0}")]
    Database(db::Error),
    /// The connection to the database was lost (PostgreSQL terminated it, shut down or restarted,
    /// or the network failed) before anything was committed: a transient fault, and the same
    /// request may simply be sent again.
    #[error("the database connection was lost ({0}); nothing was changed: retry")]
    ConnectionLost(db::Error),
    /// Another server changed the studio's settings or rooms as this write began, after this
    /// one had read them: nothing was changed, and the pool runs the work again once (so this
    /// reaches a caller only when they changed twice meanwhile).
    #[error("{0}; nothing was changed: retry")]
    ChangedMeanwhile(db::Error),
    /// The connection was lost while a change was being committed: it may have been made or
    /// not. A retry is safe where the request says so itself (an idempotency key).
    #[error(
        "the database connection was lost while the change was being committed ({0}), so it may or may not have been made: \
         read it back before retrying, or retry with the same idempotency key"
    )]
    OutcomeUnknown(db::Error),
    /// The database itself refused a write that would overlap another booking (PostgreSQL's
    /// exclusion constraints, named by `constraint`): a writer the store's own checks did not see.
    #[error("the database refused the change: it would overlap another booking ({constraint}); list the bookings again and pick another time")]
    Overlap { constraint: String },
    /// A stored row this build cannot read; the message names the row.
    #[error("the database holds a value this studioflow cannot read: {0}")]
    Corrupt(String),
    /// SQLite could not open or write the database file: the message says why (the file, its
    /// directory, a read-only file system) and what to change.
    #[error("{why}")]
    Unwritable { why: String, sqlite: String },
    /// No connection could be had from the pool in time (the database is down or restarting,
    /// or every connection is busy): a transient fault.
    #[error("no database connection could be had in time ({0}); nothing was changed: retry shortly")]
    Pool(String),
    /// A task ended or went away while a write for it was being prepared; the write rolls back.
    #[error("the task is no longer live")]
    TaskGone,
    /// A retired room, or a deactivated client or engineer, cannot be booked.
    #[error("{}", self.worded(&Remedy::neutral))]
    Inactive { kind: &'static str, id: String },
    /// A change to a room would put future bookings out of it (the first `bookings` of `total`);
    /// forced, it applies anyway.
    #[error("{}", self.worded(&Remedy::neutral))]
    RoomChangeDisplaces { room: RoomId, bookings: Vec<BookingId>, total: usize },
    /// An edit asked to cancel a booking: cancelling is a write of its own.
    #[error("{}", self.worded(&Remedy::neutral))]
    EditCancels,
    /// A reflow cannot be undone.
    #[error("{}", self.worded(&Remedy::neutral))]
    Undo(UndoRefusal),
    /// A stored plan cannot be applied.
    #[error("{}", self.worded(&Remedy::neutral))]
    Plan(PlanRefusal),
    /// No offline window has this id.
    #[error("{}", self.worded(&Remedy::neutral))]
    UnknownWindow(i64),
    /// No time off has this id.
    #[error("unknown time off {0}: list the engineer's time off to see the ids")]
    UnknownTimeOff(i64),
    /// The operating system gave no randomness for a new secret.
    #[error("no randomness for a secret: {0}")]
    NoRandomness(#[from] getrandom::Error),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl From<db::Error> for StoreError {
    fn from(e: db::Error) -> StoreError {
        if e.lost_uncommitted() {
            return StoreError::ConnectionLost(e);
        }
        if e.lost_maybe_committed() {
            return StoreError::OutcomeUnknown(e);
        }
        if matches!(e, db::Error::Stale) {
            return StoreError::ChangedMeanwhile(e);
        }
        match e.refusal() {
            Some(db::Refusal::Overlap(constraint)) => StoreError::Overlap { constraint },
            // A connection does not know its file's path: where the store does (opening, and
            // `write_as`), `explained` says what is in the way instead.
            Some(db::Refusal::FileAccess) => StoreError::Unwritable {
                why: format!(
                    "the database file cannot be opened or written ({e}): make it, and the directory it is in (SQLite creates FILE-wal and FILE-shm there), writable for the user running studioflow"
                ),
                sqlite: e.to_string(),
            },
            _ => StoreError::Database(e),
        }
    }
}

/// " as task ID", when the task may be named.
pub fn as_task(task: &Option<String>) -> String {
    task.as_ref().map(|id| format!(" as task {id}")).unwrap_or_default()
}

fn list_ids(ids: &[BookingId]) -> String {
    ids.iter().map(BookingId::as_str).collect::<Vec<_>>().join(", ")
}

impl StoreError {
    /// Bad input in `field`, with what to change.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> StoreError {
        StoreError::Invalid { field, message: message.into() }
    }
}

impl StoreError {
    /// Whether the failure is ours (the database, its contents, a task gone meanwhile) rather
    /// than something the caller asked for and can change.
    pub fn is_ours(&self) -> bool {
        matches!(
            self,
            StoreError::Database(_) | StoreError::Migration(_) | StoreError::Corrupt(_) | StoreError::Pool(_) | StoreError::TaskGone
                | StoreError::NoRandomness(_) | StoreError::Unwritable { .. } | StoreError::ConnectionLost(_) | StoreError::OutcomeUnknown(_)
                | StoreError::ChangedMeanwhile(_)
        )
    }

    /// Whether the failure is ours and passing: the database connection was lost, or none could
    /// be had in time. Nothing is wrong with the request; sent again, it may succeed (after
    /// [`StoreError::OutcomeUnknown`], safely only if it carries an idempotency key).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::ConnectionLost(_) | StoreError::OutcomeUnknown(_) | StoreError::Pool(_) | StoreError::ChangedMeanwhile(_))
    }

    /// Whether the database gave up on a lock another connection held.
    pub(super) fn is_busy(&self) -> bool {
        match self {
            StoreError::Database(e) | StoreError::Migration(MigrationError::Database(e)) => e.refusal() == Some(db::Refusal::Busy),
            _ => false,
        }
    }
}

/// Something the caller can do about a refusal that is a call of its own: the store's words for it
/// ([`Remedy::neutral`]) name no tool, since the command line shows them too; the MCP edge names
/// its tools instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Reactivate the room, client or engineer (`kind`) that is inactive.
    Reactivate(&'static str),
    /// Apply a room's change anyway, marking the bookings it breaks displaced.
    Force,
    /// Cancel the booking rather than edit it.
    CancelInstead,
    /// List the offline windows, with their ids.
    ListWindows,
    /// End an offline window early, which frees its room.
    EndWindowEarly,
    /// Make a new plan of the month.
    NewPlan,
    /// Make a plan with a dry run of the month's reflow.
    DryRunPlan,
}

impl Remedy {
    /// The store's own words for a remedy, naming no tool.
    pub fn neutral(self) -> String {
        match self {
            Remedy::Reactivate(_) => "reactivate it".into(),
            Remedy::Force => "force the change to apply it and mark them displaced".into(),
            Remedy::CancelInstead => "an edit does not cancel a booking: cancel it instead".into(),
            Remedy::ListWindows => "list the offline windows to see their ids".into(),
            Remedy::EndWindowEarly => "ending an offline window early frees its room".into(),
            Remedy::NewPlan => "make a new plan".into(),
            Remedy::DryRunPlan => "a dry run of the month's reflow makes a plan".into(),
        }
    }
}

/// "unknown reflow", said once for every layer that meets an id no reflow has.
fn unknown_reflow(id: &str) -> String {
    format!("unknown reflow \"{id}\": reflow ids look like rf_0001")
}

/// Why a reflow cannot be undone.
#[derive(Debug)]
pub enum UndoRefusal {
    /// No reflow has this id.
    Unknown { reflow: String },
    /// The reflow is a plan that was never applied.
    NeverApplied { reflow: String },
    /// The reflow was undone already (an undo happens at most once).
    AlreadyUndone { reflow: String },
    /// These bookings changed since the reflow moved them.
    Changed { reflow: String, bookings: Vec<BookingId> },
    /// These bookings cannot go back to their old places, each for the reason given.
    Blocked { reflow: String, blocked: Vec<(BookingId, StoreError)> },
}

impl UndoRefusal {
    /// The message, with a remedy in `words` (see [`StoreError::worded`]).
    fn worded(&self, words: &dyn Fn(Remedy) -> String) -> String {
        match self {
            UndoRefusal::Unknown { reflow } => unknown_reflow(reflow),
            UndoRefusal::NeverApplied { reflow } => format!("reflow {reflow} was never applied: there is nothing to undo"),
            UndoRefusal::AlreadyUndone { reflow } => format!("reflow {reflow} was undone already"),
            UndoRefusal::Changed { reflow, bookings } => {
                format!("cannot undo reflow {reflow}: {} changed since it moved them; move them back by hand instead", list_ids(bookings))
            }
            UndoRefusal::Blocked { reflow, blocked } => format!(
                "cannot undo reflow {reflow}: {} cannot go back: {}; free the old places first ({}), or move bookings by hand",
                if blocked.len() == 1 { "a booking" } else { "some bookings" },
                blocked.iter().map(|(id, why)| format!("{id} ({})", why.worded(words))).collect::<Vec<_>>().join("; "),
                words(Remedy::EndWindowEarly)
            ),
        }
    }
}

impl std::fmt::Display for UndoRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.worded(&Remedy::neutral))
    }
}

/// Why a stored plan cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanRefusal {
    /// No plan has this id.
    Unknown { reflow: String },
    /// The plan was applied already (and perhaps undone since): a plan is applied at most once.
    Applied { reflow: String, undone: bool },
}

impl PlanRefusal {
    /// The message, with a remedy in `words` (see [`StoreError::worded`]).
    fn worded(&self, words: &dyn Fn(Remedy) -> String) -> String {
        match self {
            PlanRefusal::Unknown { reflow } => {
                format!("{}; {}", unknown_reflow(reflow), words(Remedy::DryRunPlan))
            }
            PlanRefusal::Applied { reflow, undone } => {
                let state = if *undone { "applied and then undone" } else { "applied already" };
                format!("reflow {reflow} was {state}: {}", words(Remedy::NewPlan))
            }
        }
    }
}

impl std::fmt::Display for PlanRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.worded(&Remedy::neutral))
    }
}

impl StoreError {
    /// The message, with each [`Remedy`] in `words`: `Display` gives [`Remedy::neutral`], and an
    /// edge that names its own tools passes its words for them. Only a refusal with a remedy is
    /// worded here; every other message is its `Display`.
    pub fn worded(&self, words: &dyn Fn(Remedy) -> String) -> String {
        match self {
            StoreError::Inactive { kind, id } => {
                format!("{kind} \"{id}\" is inactive and cannot be booked: choose another {kind}, or {}", words(Remedy::Reactivate(kind)))
            }
            StoreError::RoomChangeDisplaces { room, bookings, total } => format!(
                "this change to {room} would displace {total} future {}: {}{}; change them first, or {} (a reflow of their \
                 month then moves them)",
                if *total == 1 { "booking" } else { "bookings" },
                list_ids(bookings),
                if *total > bookings.len() { format!(" and {} more", total - bookings.len()) } else { String::new() },
                words(Remedy::Force)
            ),
            StoreError::EditCancels => format!("status: {}", words(Remedy::CancelInstead)),
            StoreError::UnknownWindow(id) => format!("unknown offline window {id}: {}", words(Remedy::ListWindows)),
            StoreError::Undo(why) => why.worded(words),
            StoreError::Plan(why) => why.worded(words),
            other => other.to_string(),
        }
    }
}

impl crate::error::Blame for StoreError {
    fn is_ours(&self) -> bool {
        StoreError::is_ours(self)
    }

    fn is_transient(&self) -> bool {
        StoreError::is_transient(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store's words name no tool (the command line shows them too); the MCP edge words each
    /// remedy with its tool.
    #[test]
    fn the_store_words_its_remedies_without_naming_a_tool() {
        let refusals = [
            StoreError::Inactive { kind: "room", id: "studio-c".into() },
            StoreError::RoomChangeDisplaces { room: RoomId::new("studio-c"), bookings: vec![BookingId::new("bk_00001")], total: 3 },
            StoreError::EditCancels,
            StoreError::UnknownWindow(9),
            StoreError::Undo(UndoRefusal::Blocked {
                reflow: "rf_0001".into(),
                blocked: vec![(BookingId::new("bk_00001"), StoreError::Inactive { kind: "client", id: "lumens".into() })],
            }),
            StoreError::Plan(PlanRefusal::Unknown { reflow: "rf_0009".into() }),
            StoreError::Plan(PlanRefusal::Applied { reflow: "rf_0001".into(), undone: true }),
        ];
        let tools = ["update_", "force: true", "cancel_booking", "list_offline_windows", "remove_offline_window", "reflow_month", "dry_run"];
        for refusal in &refusals {
            let text = refusal.to_string();
            assert!(!tools.iter().any(|tool| text.contains(tool)), "{text}");
            assert_eq!(text, refusal.worded(&Remedy::neutral));
        }
        let edge = |remedy: Remedy| format!("<{remedy:?}>");
        assert_eq!(
            refusals[4].worded(&edge),
            "cannot undo reflow rf_0001: a booking cannot go back: bk_00001 (client \"lumens\" is inactive and cannot be booked: \
             choose another client, or <Reactivate(\"client\")>); free the old places first (<EndWindowEarly>), or move bookings by hand"
        );
        assert_eq!(
            refusals[1].to_string(),
            "this change to studio-c would displace 3 future bookings: bk_00001 and 2 more; change them first, or force the change \
             to apply it and mark them displaced (a reflow of their month then moves them)"
        );
    }
}
