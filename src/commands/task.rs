//! `studioflow task`: the operator's view of the studio's durable tasks, whoever owns them. List
//! shows every task (id, status, month, owner, created, status message); cancel ends a live one,
//! recorded in the history as the operator's. Over MCP a task is seen by its owner alone; the
//! operator owns the machine, so this command sees them all (a revoked token's, a lost client's).

use super::{open_existing, CommandResult, OPERATOR};
use crate::domain::Actor;
use crate::store::{Target, TaskRecord, TaskStatus};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;

/// What a task command does.
pub enum TaskAction {
    List { json: bool },
    Cancel { id: String },
}

/// The status message of a task the operator cancelled.
const CANCELLED: &str = "Cancelled by the operator (studioflow task cancel): nothing was moved.";

fn instant(ms: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms)
}

/// An instant as the list shows it to people.
fn when(ms: i64) -> String {
    instant(ms).map_or_else(|| "?".to_owned(), |at| at.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// An instant as the JSON list gives it.
fn rfc3339(ms: i64) -> Option<String> {
    instant(ms).map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// Who owns a task, for people: the principal, with its token's name where it has one; the
/// local user (stdio, HTTP without authentication) owns the tasks with no owner.
fn owner_text(task: &TaskRecord, names: &HashMap<String, String>) -> String {
    match &task.owner {
        None => "local".to_owned(),
        Some(owner) => match names.get(owner) {
            Some(name) => format!("{owner} ({name})"),
            None => owner.clone(),
        },
    }
}

fn task_json(task: &TaskRecord, names: &HashMap<String, String>) -> serde_json::Value {
    json!({
        "id": task.id,
        "kind": task.kind,
        "status": task.status.as_str(),
        "month": task.month,
        "owner": task.owner,
        "owner_name": task.owner.as_ref().and_then(|o| names.get(o)),
        "created": rfc3339(task.created_ms),
        "updated": rfc3339(task.updated_ms),
        "expires": task.ttl_ms.and_then(|ttl| rfc3339(task.created_ms.saturating_add(ttl))),
        "status_message": task.status_message,
    })
}

/// `task`: lists the studio's tasks, or cancels one.
pub fn task(db: &Target, action: TaskAction) -> CommandResult {
    let mut store = open_existing(db)?;
    let mut out = std::io::stdout().lock();
    // Token owners are shown with their names: `token:tok_...` alone tells a person little.
    let names: HashMap<String, String> =
        store.tokens()?.into_iter().map(|t| (crate::auth::Principal::token_id(&t.id), t.name)).collect();
    match action {
        TaskAction::List { json: true } => {
            let tasks: Vec<_> = store.tasks()?.iter().map(|t| task_json(t, &names)).collect();
            writeln!(out, "{}", serde_json::Value::Array(tasks))?;
        }
        TaskAction::List { json: false } => {
            let tasks = store.tasks()?;
            if tasks.is_empty() {
                eprintln!("No tasks: a month reflow asked for as a task (or a synchronous one) makes one.");
            } else {
                writeln!(out, "ID\tSTATUS\tMONTH\tOWNER\tCREATED\tMESSAGE")?;
            }
            for t in tasks {
                let month = t.month.as_deref().unwrap_or("-");
                let message = t.status_message.as_deref().unwrap_or("").replace(['\t', '\n'], " ");
                writeln!(out, "{}\t{}\t{month}\t{}\t{}\t{message}", t.id, t.status.as_str(), owner_text(&t, &names), when(t.created_ms))?;
            }
        }
        TaskAction::Cancel { id } => {
            let now_ms = Utc::now().timestamp_millis();
            let was = store.write_as(&Actor::new(OPERATOR, "task cancel"), |w| w.cancel_task(&id, CANCELLED, now_ms))?;
            let month = was.month.as_deref().map_or_else(String::new, |m| format!(", reflow of {m}"));
            writeln!(
                out,
                "Cancelled {} ({}, owned by {}{month}): nothing of it is applied, and its month is free again.",
                was.id,
                was.status.as_str(),
                owner_text(&was, &names)
            )?;
            if was.status == TaskStatus::Working {
                eprintln!("Its solve stops when its server next reports progress or renews the task's lease (within a third of --task-lease).");
            }
        }
    }
    Ok(())
}
