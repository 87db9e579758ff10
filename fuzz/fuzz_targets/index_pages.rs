//! Fuzz target `index_pages`: see `treelog_testkit::fuzz::index_pages` for what it checks.
#![no_main]

use treelog_testkit::fuzz;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::fuzz_one(data, fuzz::index_pages));
