//! Which scope a JSON-RPC request needs, beyond a valid credential: for a tool call, the scope its
//! row of the tool table names (`reflow_month` with `dry_run: true` reads); answering a task's
//! question approves or declines its plan; reading tasks, resources, prompts and completions
//! reads the studio; the handshake, discovery and the lists of what exists need nothing more.
//! A tool the table does not have needs nothing: it cannot run, and its call is refused as unknown.

use crate::auth::Scope;
use crate::mcp::server::tools::ToolSpec;
use serde_json::Value;

/// The scope `method` with `params` needs, if any.
pub fn needed(tools: &[ToolSpec], method: &str, params: Option<&Value>) -> Option<Scope> {
    let params = params.unwrap_or(&Value::Null);
    match method {
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
            let spec = tools.iter().find(|spec| spec.name() == name)?;
            Some(spec.access.needed(params.get("arguments")))
        }
        // Answering a task's question is approving (or declining) its plan.
        "tasks/update" => Some(Scope::ReflowApply),
        "tasks/get" | "tasks/cancel" | "tasks/list" | "tasks/result" => Some(Scope::StudioRead),
        "resources/read" | "resources/list" | "resources/subscribe" | "resources/unsubscribe" | "prompts/get"
        | "completion/complete" => Some(Scope::StudioRead),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::server::tools::{self, names, Access};
    use serde_json::json;

    #[test]
    fn a_tool_needs_the_scope_of_its_row_and_a_dry_run_only_reads() {
        let table = tools::all();
        let call = |name: &str, args: Value| needed(&table, "tools/call", Some(&json!({"name": name, "arguments": args})));
        assert_eq!(call(names::REFLOW_MONTH, json!({"dry_run": true})), Some(Scope::StudioRead));
        assert_eq!(call(names::REFLOW_MONTH, json!({"dry_run": false})), Some(Scope::ReflowApply));
        assert_eq!(call(names::REFLOW_MONTH, json!({})), Some(Scope::ReflowApply));
        assert_eq!(call(names::CREATE_BOOKING, json!({})), Some(Scope::BookingsWrite));
        assert_eq!(call(names::LIST_ROOMS, json!({})), Some(Scope::StudioRead));
        // An unknown tool cannot run: it needs nothing, and its call is refused as unknown.
        assert_eq!(call("no_such_tool", json!({})), None);
        assert_eq!(needed(&table, "tools/list", None), None);
        assert_eq!(needed(&table, "tasks/update", None), Some(Scope::ReflowApply));
    }

    #[test]
    fn every_tool_that_writes_needs_more_than_reading() {
        for spec in tools::all() {
            let read_only = spec.tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
            // A tool that writes needs more than reading; one that only reads needs studio:read,
            // or studio:manage where what it reads is the operator's (webhook endpoints).
            if read_only {
                assert!(matches!(spec.access, Access::Needs(Scope::StudioRead | Scope::StudioManage)), "{}: a read needs studio:read or studio:manage", spec.name());
            } else {
                assert_ne!(spec.access, Access::Needs(Scope::StudioRead), "{}: a tool that writes needs more than studio:read", spec.name());
            }
        }
    }
}
