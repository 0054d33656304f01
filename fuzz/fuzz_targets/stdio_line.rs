//! One stdio line through the JSON-RPC envelope check: what it forwards the SDK must read as what
//! it says it is, and what it answers must carry the request's id when that id is readable.
#![no_main]

libfuzzer_sys::fuzz_target!(|line: &[u8]| {
    studioflow::mcp::fuzz::stdio_line(line);
});
