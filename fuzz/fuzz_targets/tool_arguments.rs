//! One tool's `arguments` (the first byte picks the tool, the rest is the JSON object), decoded
//! into the tool's argument type and run on the demo studio as `tools/call` runs it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some((&tool, arguments)) = data.split_first() {
        studioflow::mcp::fuzz::tool_arguments(tool as usize, arguments);
    }
});
