//! The doors before the SDK: stdio (`stdio.rs`) and Streamable HTTP (`http.rs` and `http/`: the
//! authority, CORS, authentication and connection checks), the JSON-RPC envelope both check first
//! (`jsonrpc.rs`), and the 2025-11-25 task wire, which the SDK no longer speaks and these fronts
//! answer from the same durable tasks (`legacy.rs`). A front knows the transport; the server
//! behind it does not.

pub(super) mod http;
pub(super) mod jsonrpc;
mod legacy;
mod stdio;

pub use http::{serve_http, AuthConfig, Gate, HttpConfig, HttpLimits, RateLimits};
pub use stdio::{serve_lines, serve_stdio};
