//! Questions asked in the middle of a call, for a client of the 2025-11-25 `initialize` handshake
//! in a session (stdio, or an HTTP session from its `initialize`). A 2026-07-28 client is asked
//! through an input-required result and calls again; that wire does not exist before 2026-07-28,
//! so for a legacy client in a session the same questions become real server-to-client requests
//! (`elicitation/create`, `roots/list`, `sampling/createMessage`) sent through rmcp's peer, and
//! their answers are handed back to the handler as the `inputResponses` of its next round.
//! A handler writes its questions once; this file knows nothing of what they ask.

use rmcp::model::{InputRequest, InputRequests, InputResponses, ServerRequest};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;

/// How many rounds of questions one call may take before it is refused, as rmcp's own client
/// limits them ([`rmcp::model::DEFAULT_MRTR_MAX_ROUNDS`]).
pub const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// Whether the caller can be asked mid-call: a legacy client (its request's `_meta` names no
/// protocol version) in a session.
pub fn can_ask(context: &RequestContext<RoleServer>) -> bool {
    context.meta.protocol_version().is_none() && in_session(context)
}

/// Whether the request came in a legacy session, which lasts and can carry the server's own
/// messages: stdio's (no HTTP request behind it), or an HTTP session of rmcp's session mode, whose
/// requests name it (the front passes the `Mcp-Session-Id` header on to the session's requests
/// only). Stateless HTTP has an `initialize`-shaped peer for each request, and no session.
pub fn in_session(context: &RequestContext<RoleServer>) -> bool {
    if context.peer.peer_info().is_none() {
        return false;
    }
    match context.extensions.get::<axum::http::request::Parts>() {
        Some(parts) => parts.headers.contains_key("mcp-session-id"),
        None => true,
    }
}

/// Asks the client each question, in key order, and gives its answers by the same keys. A
/// question the client did not declare it can answer is refused before anything is sent.
pub async fn ask(context: &RequestContext<RoleServer>, questions: InputRequests) -> Result<InputResponses, McpError> {
    let declared = context.client_capabilities().unwrap_or_default();
    let mut answers = InputResponses::new();
    for (key, question) in questions {
        // Sampling and roots are deprecated by 2026-07-28, and still part of 2025-11-25.
        #[allow(deprecated)]
        let (request, capability) = match question {
            InputRequest::Elicitation(request) => (ServerRequest::ElicitRequest(request), declared.elicitation.is_some()),
            InputRequest::ListRoots(request) => (ServerRequest::ListRootsRequest(request), declared.roots.is_some()),
            InputRequest::CreateMessage(request) => (ServerRequest::CreateMessageRequest(request), declared.sampling.is_some()),
            _ => return Err(McpError::internal_error(format!("question {key} is of a kind this server cannot ask"), None)),
        };
        if !capability {
            let method = serde_json::to_value(&request).ok().and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_owned));
            return Err(McpError::invalid_request(
                format!(
                    "this call needs to ask the client ({}), which its initialize did not declare it can answer: declare the capability, or answer from a 2026-07-28 client",
                    method.unwrap_or_else(|| key.clone())
                ),
                None,
            ));
        }
        let answer = context
            .peer
            .send_request(request)
            .await
            .map_err(|e| McpError::internal_error(format!("asking the client ({key}) failed: {e}"), None))?;
        let answer = serde_json::to_value(answer).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        answers.insert(key, answer);
    }
    Ok(answers)
}
