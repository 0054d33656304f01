//! studioflow keeps the bookings of a recording, rehearsal and podcast studio, and reflows a month
//! when a room goes offline. The modules, in reading order:
//!
//! - [`domain`]: rooms, bookings, series, offline windows and the rules that say when they clash.
//! - [`store`]: the SQLite store, the only code that speaks SQL.
//! - [`availability`]: what is free and what is in the way, from several reads (free slots, the
//!   offline windows to come, what a window displaces).
//! - [`reflow`]: the bridge between the store and the solver crate.
//! - [`ics`]: a room's, client's or engineer's calendar as iCalendar (RFC 5545), written by its
//!   own content-line writer.
//! - [`feeds`]: the read-only secrets of calendar feed URLs, stored as hashes.
//! - [`tasks`]: durable reflow tasks, the one way a reflow runs.
//! - [`auth`]: scopes, principals and which request needs which scope (remote access).
//! - [`error`]: whose fault a failure is, for the edges to word.
//! - [`tls`]: the TLS of the HTTPS clients (rustls with ring), installed once per process.
//! - [`demo`]: the demo studio, loaded from the text files in `data/demo`.
//! - [`view`]: the studio's view (timeline and reflow review), one HTML page, and its data.
//! - [`mcp`]: the MCP edge: tools, tasks on the wire, stdio and HTTP, and the client side that
//!   [`client`] speaks through.
//! - [`commands`]: the command line's commands, one file each.
//! - [`reflow_text`]: a finished reflow told to people in text (by `demo` and by `client`); the
//!   `report` command's HTML page is [`view`]'s.
//! - [`client`]: `studioflow client`, which asks a server for reflows as tasks and follows them.

pub mod domain;
pub mod store;
pub mod availability;
pub mod reflow;
pub mod ics;
pub mod feeds;
pub mod tasks;
pub mod auth;
pub mod error;
pub mod tls;
pub mod demo;
pub mod view;
pub mod mcp;
pub mod commands;
pub mod reflow_text;
pub mod client;
