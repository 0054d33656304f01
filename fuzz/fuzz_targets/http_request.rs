//! Raw bytes on an HTTP connection, served end to end (front, SDK, tools) on the demo studio.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    studioflow::mcp::fuzz::http_request(bytes);
});
