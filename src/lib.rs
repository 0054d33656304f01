//! studioflow keeps the bookings of a recording, rehearsal and podcast studio, and reflows a month
//! when a room goes offline. The modules, in reading order:
//!
//! - [`domain`]: rooms, bookings, series, offline windows and the rules that say when they clash.
//! - [`store`]: the store, on SQLite or PostgreSQL, the only code that speaks SQL.
//! - [`availability`]: what is free and what is in the way, from several reads (free slots, the
//!   offline windows to come, what a window displaces).
//! - [`reflow`]: the bridge between the store and the solver crate.
//! - [`figures`]: the month in figures (rooms' open and booked hours, utilisation and revenue,
//!   engineers' hours, deposits, reflows), for the `studio_report` tool and the view.
//! - [`shapes`]: a reflow and a booking as they are written out, for the tools' answers and the
//!   view alike.
//! - [`ics`]: a room's, client's or engineer's calendar as iCalendar (RFC 5545), written by its
//!   own content-line writer.
//! - [`feeds`]: calendar feed URLs: their read-only secrets, stored as hashes, and the HTTP route
//!   that serves a calendar to whoever holds one.
//! - [`oauth`]: studioflow as its own OAuth 2.1 authorization server: staff sign in on plain
//!   HTML pages and grant MCP clients (registered, or named by their metadata document's URL)
//!   opaque tokens within their role.
//! - [`tasks`]: durable reflow tasks, the one way a reflow runs.
//! - [`notify`]: telling people: the worker that delivers the outbox's notifications after
//!   commit (webhooks, signed to the Standard Webhooks specification), with retries.
//! - [`auth`]: scopes, principals and which request needs which scope (remote access).
//! - [`error`]: whose fault a failure is, for the edges to word.
//! - [`tls`]: the TLS of the HTTPS clients (rustls with ring), installed once per process.
//! - [`net`]: the addresses that requests made on a caller's word (webhooks, client metadata
//!   documents) may not reach unless the operator allows it.
//! - [`html`]: text made safe for HTML (the sign-in pages, the e-mail's HTML body).
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
pub mod figures;
pub mod shapes;
pub mod ics;
pub mod feeds;
pub mod oauth;
pub mod tasks;
pub mod notify;
pub mod auth;
pub mod error;
pub mod tls;
pub mod html;
pub mod net;
pub mod demo;
pub mod view;
pub mod mcp;
pub mod commands;
pub mod reflow_text;
pub mod client;
