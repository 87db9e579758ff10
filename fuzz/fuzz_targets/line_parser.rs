//! Fuzz target `line_parser`: see `checks::line_parser` for what it checks.
#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_one(data, checks::line_parser));
