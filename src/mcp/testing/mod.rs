//! Test scaffolding of the MCP edge, in no shipped build: the conformance suite's server, a
//! wrapper that adds the suite's fixture tools to the real one (`server.rs`, `fixtures.rs`,
//! `fixture_content.rs`, `fixture_rounds.rs` for input-required results; the `testing` feature), and the fuzz targets' entry points (`fuzz.rs`;
//! the `fuzzing` feature).

#[cfg(feature = "testing")]
pub(super) mod fixture_content;
#[cfg(feature = "testing")]
pub(super) mod fixture_rounds;
#[cfg(feature = "testing")]
pub(super) mod fixtures;
#[cfg(feature = "testing")]
pub(super) mod server;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
