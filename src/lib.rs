//! studioflow keeps the bookings of a recording, rehearsal and podcast studio, and reflows a month
//! when a room goes offline. The modules, in reading order:
//!
//! - [`domain`]: rooms, bookings, series, offline windows and the rules that say when they clash.
//! - [`store`]: the SQLite store, the only code that speaks SQL.
//! - [`demo`]: the demo studio, loaded from the text files in `data/demo`.
//! - [`reflow`]: the bridge between the store and the solver crate.

pub mod domain;
pub mod store;
pub mod demo;
pub mod reflow;
pub mod calendar;
pub mod tasks;
pub mod commands;
pub mod mcp;
