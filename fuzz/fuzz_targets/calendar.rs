//! A calendar from arbitrary names, ids, needs, notes and bookings, written by the real renderer
//! and read back by a strict reader: the events must be exactly the bookings, and every name must
//! read as written but for the control characters TEXT cannot hold (`src/ics/fuzz.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    studioflow::ics::fuzz::calendar(data);
});
