//! Test scaffolding of the MCP edge, in no shipped build: the conformance suite's fixture tools
//! (`fixtures.rs`, `fixture_content.rs`; the `testing` feature) and the fuzz targets' entry points
//! (`fuzz.rs`; the `fuzzing` feature).

#[cfg(feature = "testing")]
pub(super) mod fixture_content;
#[cfg(feature = "testing")]
pub(super) mod fixtures;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
