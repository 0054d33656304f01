//! The MCP edge: the only code that knows JSON-RPC, MCP and JSON schemas, in rooms of its own:
//!
//! - [`server`]: the studio as an MCP server: the tools (one table, one row per tool), their wire
//!   types, resources, prompts, the view as an MCP App, progress, and tasks on the wire.
//! - [`front`]: the doors before the SDK: stdio and Streamable HTTP (with its authority, CORS,
//!   authentication and connection checks), the JSON-RPC envelope both share, and the 2025-11-25
//!   task wire that the SDK no longer speaks.
//! - [`client`]: the other side of the same wire, for `studioflow client`.
//! - `testing`: the conformance suite's fixture tools and the fuzz targets' entry points, only in
//!   builds with the `testing` or `fuzzing` feature.
//!
//! Nothing below this module knows the protocol.

pub mod client;
mod front;
mod server;
#[cfg(any(feature = "testing", feature = "fuzzing"))]
mod testing;

pub use front::{serve_http, serve_lines, serve_stdio, AuthConfig, Gate, HttpConfig, HttpLimits, RateLimits};
pub use server::{Ctx, RequestStates, Served, StudioServer};
#[cfg(feature = "testing")]
pub use testing::server::FixtureServer;
#[cfg(feature = "fuzzing")]
pub use testing::fuzz;
