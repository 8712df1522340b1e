//! SQL text through the parser, binder and planner
//! (`ripple::coord::fuzz_sql`): no input may panic or overflow the stack.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(sql) = std::str::from_utf8(data) {
        let _ = ripple::coord::fuzz_sql::plan_sql_on_session_stack(sql);
    }
});
