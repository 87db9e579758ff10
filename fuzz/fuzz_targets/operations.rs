//! Fuzz target `operations`: see `checks::operations` for what it checks.
#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_one(data, checks::operations));
