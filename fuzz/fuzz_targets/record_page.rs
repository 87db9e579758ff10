//! Fuzz target `record_page`: see `checks::record_page` for what it checks.
#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_one(data, checks::record_page));
