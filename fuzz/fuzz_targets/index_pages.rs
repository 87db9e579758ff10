//! Fuzz target `index_pages`: see `checks::index_pages` for what it checks.
#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_one(data, checks::index_pages));
