//! The MCP edge: the only code that knows JSON-RPC, MCP and JSON schemas. It serves the studio's
//! tools over stdio or Streamable HTTP with the official SDK (rmcp), converting wire types by hand
//! to and from the domain; [`client`] is the other side of the same wire, for `studioflow client`.
//! Nothing below this module knows the protocol.

mod apps;
pub mod client;
#[cfg(feature = "testing")]
mod fixture_content;
#[cfg(feature = "testing")]
mod fixtures;
mod feeds;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod http;
mod jsonrpc;
mod legacy;
mod progress;
mod prompts;
mod resources;
mod server;
mod stdio;
mod tasks;
mod tools;
mod wire;

pub use http::{serve_http, AuthConfig, Gate, HttpConfig, HttpLimits, RateLimits};
pub use server::StudioServer;
pub use stdio::{serve_lines, serve_stdio};
pub use tools::Ctx;
