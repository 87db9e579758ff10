//! Fuzz target `open_log`: see `checks::open_log` for what it checks.
#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_one(data, checks::open_log));
