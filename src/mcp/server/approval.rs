//! A reflow's approval for a client without the Tasks extension, as an input-required result
//! (MCP 2026-07-28, multi round-trip requests): a plain `reflow_month {require_approval: true}`
//! solves and answers `resultType: "input_required"` with the same approval question a task asks,
//! and a `requestState`; the client calls again with the same arguments, `inputResponses` and that
//! `requestState`, and the plan is applied or declined by [`crate::tasks::Tasks::answer`], the task
//! path's own gate (its stale-plan check, its one transaction). Behind the state is a task that
//! waits for approval like any other; its id travels in the state.
//! The state is rmcp's HMAC-sealed `requestState` ([`RequestStateCodec`]), bound to the caller, the
//! tool and the arguments, and expiring with the task; a forged, altered, misplaced or expired state
//! is refused with -32602 and applies nothing, and a replayed one finds its task already answered.
//! This module knows no SQL and no transport.

use super::tasks::approval_question;
use super::tools::{call_tool_result, finished_reflow, names, reflow_refusal, Caller, Follow, JobOf, Reply};
use super::StudioServer;
use crate::domain::Actor;
use crate::store::TaskStatus;
use crate::tasks::{Approval, TaskError, TaskView};
use rmcp::model::{
    CallToolResponse, InputRequests, InputRequiredResult, InputResponses, JsonObject, RequestStateCodec, RequestStateError,
    SealOptions,
};
use rmcp::ErrorData as McpError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// The shortest life a state is given, so that a task about to expire still gets one round trip.
const MIN_STATE_TTL: Duration = Duration::from_secs(1);

/// The keys that seal and open `requestState`. Several servers behind one address must share them
/// (`serve --request-state-keys`); without keys a server makes a random one for its own life.
#[derive(Debug)]
pub struct RequestStates {
    codec: RequestStateCodec,
}

impl RequestStates {
    /// A random 32-byte key, for one process.
    pub fn random() -> Result<RequestStates, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| format!("no randomness for the request-state key: {e}"))?;
        let codec = RequestStateCodec::new_with_keyring("k0", [("k0", key.to_vec())]).map_err(|e| e.to_string())?;
        Ok(RequestStates { codec })
    }

    /// Keys from `kid=secret,kid=secret`: the first seals, every one opens (rotation: put the new
    /// key first, keep the old one until the states it sealed have expired). Each secret must be
    /// at least 32 bytes.
    pub fn from_spec(spec: &str) -> Result<RequestStates, String> {
        let mut keys = Vec::new();
        for (n, part) in spec.split(',').map(str::trim).filter(|p| !p.is_empty()).enumerate() {
            let Some((kid, secret)) = part.split_once('=') else {
                return Err(format!("request-state key {}: write it as id=secret (for example k1=<32 or more characters>)", n + 1));
            };
            let (kid, secret) = (kid.trim(), secret.trim());
            if kid.is_empty() || !kid.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(format!("request-state key {}: the id {kid:?} must be letters, digits, - or _", n + 1));
            }
            if secret.len() < RequestStateCodec::MIN_KEY_LENGTH {
                return Err(format!(
                    "request-state key {kid:?}: the secret has {} bytes; give at least {}",
                    secret.len(),
                    RequestStateCodec::MIN_KEY_LENGTH
                ));
            }
            keys.push((kid.to_owned(), secret.as_bytes().to_vec()));
        }
        let Some((first, _)) = keys.first().cloned() else {
            return Err("--request-state-keys is empty: give id=secret, comma-separated, the signing key first".into());
        };
        let codec = RequestStateCodec::new_with_keyring(first, keys).map_err(|e| format!("request-state keys: {e}"))?;
        Ok(RequestStates { codec })
    }
}

/// What the state carries: the task waiting for the answer.
#[derive(Serialize, Deserialize)]
struct Waiting {
    task: String,
}

/// Whether a call asks for the round trip: `require_approval: true` in its arguments, or a
/// `requestState` that answers one.
pub fn asked(arguments: &JsonObject, state: Option<&str>) -> bool {
    state.is_some() || arguments.get("require_approval") == Some(&Value::Bool(true))
}

/// What a state is bound to: the caller, the tool and its arguments (in a canonical order), so a
/// state cannot be replayed by someone else, or against another month or other arguments.
fn binding(caller: &Caller, tool: &str, arguments: &JsonObject) -> Vec<u8> {
    let mut digest = Sha256::new();
    digest.update(caller.owner.as_deref().unwrap_or("local").as_bytes());
    digest.update([0]);
    digest.update(tool.as_bytes());
    digest.update([0]);
    digest.update(canonical(&Value::Object(arguments.clone())).as_bytes());
    digest.finalize().to_vec()
}

/// JSON with every object's keys sorted, whatever order the client wrote them in.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys.iter().map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k]))).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// One round of the approval: the first call (no state) solves and asks; a call with the state
/// answers. Refusals the caller can act on are tool errors, as on every other path.
pub async fn round(
    server: &StudioServer,
    job: JobOf,
    tool: &str,
    arguments: JsonObject,
    responses: Option<InputResponses>,
    state: Option<String>,
    caller: Caller,
) -> Result<CallToolResponse, McpError> {
    let bound = binding(&caller, tool, &arguments);
    let Some(state) = state else {
        let job = match job(&caller, arguments) {
            Ok(job) => job,
            Err(e) => return call_tool_result(Err(e)).map(CallToolResponse::Complete),
        };
        let tasks = server.tasks();
        let solved = tokio::task::spawn_blocking(move || tasks.reflow(&job))
            .await
            .map_err(|e| McpError::internal_error(format!("the reflow stopped: {e}"), None))?;
        return match solved {
            Ok(view) if view.task.status == TaskStatus::InputRequired => ask(server, &view, &bound),
            Ok(view) => finished(&view),
            Err(e) => call_tool_result(Err(reflow_refusal(e, Follow::Wait))).map(CallToolResponse::Complete),
        };
    };
    let waiting: Waiting = server.states.codec.open_json_with(&state, &bound).map_err(state_refused)?;
    // A response that does not answer the question (a missing or unknown key) asks again; one
    // that answers it wrongly (no action, an unknown action) is the caller's error.
    let answer = match &responses {
        Some(responses) => super::tasks::approval(responses)?,
        None => None,
    };
    let owner = caller.owner.clone();
    let view = on_task(server, waiting.task.clone(), owner.clone(), |tasks, id, owner| tasks.view(id, owner)).await?;
    if view.task.status != TaskStatus::InputRequired {
        return Err(McpError::invalid_params(
            format!(
                "requestState: this approval was already answered ({}); nothing more was applied. \
                 Call {} again without requestState for a new plan",
                view.task.status_message.as_deref().unwrap_or(view.task.status.as_str()),
                names::REFLOW_MONTH
            ),
            None,
        ));
    }
    let Some(answer) = answer else {
        return ask(server, &view, &bound);
    };
    let actor = Actor::new(caller.who.as_str(), tool);
    let view = on_task(server, waiting.task, owner, move |tasks, id, owner| {
        tasks.answer(id, owner, answer, &actor)?;
        tasks.view(id, owner)
    })
    .await?;
    if matches!(answer, Approval::Accept | Approval::Decline) || view.task.status != TaskStatus::InputRequired {
        return finished(&view);
    }
    ask(server, &view, &bound)
}

/// The input-required result: the task's approval question, and a state sealed for this caller
/// and these arguments that expires with the task.
fn ask(server: &StudioServer, view: &TaskView, bound: &[u8]) -> Result<CallToolResponse, McpError> {
    let reflow = view
        .reflow
        .as_ref()
        .ok_or_else(|| McpError::internal_error(format!("task {} waits with no plan", view.task.id), None))?;
    let questions: InputRequests = serde_json::from_value(approval_question(&view.tz, reflow))
        .map_err(|e| McpError::internal_error(format!("the approval question: {e}"), None))?;
    let left = view
        .task
        .ttl_ms
        .map(|ttl| view.task.created_ms.saturating_add(ttl).saturating_sub(chrono::Utc::now().timestamp_millis()))
        .map_or(crate::tasks::MAX_TTL, |ms| Duration::from_millis(ms.max(0) as u64))
        .max(MIN_STATE_TTL);
    let state = server
        .states
        .codec
        .seal_json_with(&Waiting { task: view.task.id.clone() }, &SealOptions::new().associated_data(bound).ttl(left))
        .map_err(|e| McpError::internal_error(format!("sealing the request state: {e}"), None))?;
    Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(questions), Some(state))))
}

/// The call's answer once the task has ended: what the task path answers, but a declined plan
/// says so rather than what it would have moved.
fn finished(view: &TaskView) -> Result<CallToolResponse, McpError> {
    let outcome = finished_reflow(view).map(|(out, summary)| {
        let declined = view.reflow.as_ref().is_some_and(|r| !r.applied) && view.task.status_message.as_deref().is_some_and(|m| m.starts_with("Declined"));
        let summary = if declined { view.task.status_message.clone().unwrap_or(summary) } else { summary };
        Reply::new(out, summary)
    });
    call_tool_result(outcome).map(CallToolResponse::Complete)
}

/// A state that does not open: one message for every kind of forgery (rmcp asks that the
/// details stay inside), and its own for an expired one, which is no one's fault.
fn state_refused(e: RequestStateError) -> McpError {
    match e {
        RequestStateError::Expired => McpError::invalid_params(
            format!("requestState has expired: nothing was applied. Call {} again without requestState for a new plan", names::REFLOW_MONTH),
            None,
        ),
        other => {
            tracing::info!(error = %other, "a requestState was refused");
            McpError::invalid_params(
                format!(
                    "requestState was not issued by this server for this caller and these arguments (it was altered, \
                     or belongs to another call): nothing was applied. Send the requestState unchanged with the same \
                     arguments, or call {} again without it",
                    names::REFLOW_MONTH
                ),
                None,
            )
        }
    }
}

/// Runs `f` on the task store off the async threads; an unknown task (expired and swept, or
/// another's) is the caller's error.
async fn on_task<T: Send + 'static>(
    server: &StudioServer,
    id: String,
    owner: Option<String>,
    f: impl FnOnce(&crate::tasks::Tasks, &str, Option<&str>) -> Result<T, TaskError> + Send + 'static,
) -> Result<T, McpError> {
    let tasks = server.tasks();
    tokio::task::spawn_blocking(move || f(&tasks, &id, owner.as_deref()))
        .await
        .map_err(|e| McpError::internal_error(format!("the approval stopped: {e}"), None))?
        .map_err(|e| match e {
            TaskError::Unknown(_) => McpError::invalid_params(
                format!(
                    "requestState: the plan it approves has expired and is gone: nothing was applied. Call {} again without requestState for a new plan",
                    names::REFLOW_MONTH
                ),
                None,
            ),
            other => super::tasks::task_error(other),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_strictly() {
        assert!(RequestStates::from_spec("k1=0123456789abcdef0123456789abcdef").is_ok());
        assert!(RequestStates::from_spec("k2=0123456789abcdef0123456789abcdef, k1=abcdefabcdefabcdefabcdefabcdefab").is_ok());
        assert!(RequestStates::from_spec("").unwrap_err().contains("empty"));
        assert!(RequestStates::from_spec("0123456789abcdef0123456789abcdef").unwrap_err().contains("id=secret"));
        assert!(RequestStates::from_spec("k1=short").unwrap_err().contains("at least 32"));
        assert!(RequestStates::from_spec("k 1=0123456789abcdef0123456789abcdef").unwrap_err().contains("letters"));
    }

    #[test]
    fn a_state_opens_only_for_its_binding_and_with_a_known_key() {
        let old = RequestStates::from_spec("k1=0123456789abcdef0123456789abcdef").unwrap();
        let rotated = RequestStates::from_spec("k2=abcdefabcdefabcdefabcdefabcdefab,k1=0123456789abcdef0123456789abcdef").unwrap();
        let retired = RequestStates::from_spec("k2=abcdefabcdefabcdefabcdefabcdefab").unwrap();
        let caller = Caller { who: "a".into(), owner: None };
        let args: JsonObject = serde_json::from_value(serde_json::json!({"month": "2026-09", "require_approval": true})).unwrap();
        let same_in_other_order: JsonObject = serde_json::from_value(serde_json::json!({"require_approval": true, "month": "2026-09"})).unwrap();
        let other: JsonObject = serde_json::from_value(serde_json::json!({"month": "2026-10", "require_approval": true})).unwrap();
        let sealed = old.codec.seal_json_with(&Waiting { task: "tsk_1".into() }, &SealOptions::new().associated_data(&binding(&caller, names::REFLOW_MONTH, &args))).unwrap();
        let open = |states: &RequestStates, args: &JsonObject| states.codec.open_json_with::<Waiting>(&sealed, &binding(&caller, names::REFLOW_MONTH, args)).map(|w| w.task);
        assert_eq!(open(&old, &same_in_other_order).unwrap(), "tsk_1");
        assert_eq!(open(&rotated, &args).unwrap(), "tsk_1", "an old key still opens during rotation");
        assert!(open(&retired, &args).is_err(), "a retired key opens nothing");
        assert!(open(&old, &other).is_err(), "bound to the arguments");
        let someone: Caller = Caller { who: "b".into(), owner: Some("user-b".into()) };
        assert!(old.codec.open_json_with::<Waiting>(&sealed, &binding(&someone, names::REFLOW_MONTH, &args)).is_err(), "bound to the caller");
    }
}
