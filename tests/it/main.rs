//! One integration test binary, so the project links once. Each module tests one boundary:
//! the store's rules on real SQLite files, the reflow bridge, and the real `studioflow` binary
//! (its commands, its MCP server, durable tasks, and `studioflow client` against the server), and
//! the OAuth access-token verifier against a test issuer.

mod approval_rounds;
mod auth;
mod bad_inputs;
mod calendars;
mod cli;
mod client;
mod cors;
mod front;
mod input_bounds;
mod jwt;
mod legacy_sessions;
mod mail;
mod mcp;
mod mcp_beyond_tools;
mod mcp_client;
mod mirror;
mod oauth;
mod outbox;
mod pg_faults;
mod readme;
mod reflow;
mod reflow_people;
mod running_the_studio;
mod sdk_oauth;
mod sdk_python;
mod sdk_ts;
mod servers;
mod store;
mod studio_money;
mod studio_week;
mod strict_2026;
mod support;
mod takeover;
mod tasks;
mod tidy;
mod tokens;
mod view;
