//! Fuzz target `context_edit`: see `treelog_testkit::fuzz::context_edit` for what it checks.
#![no_main]

use treelog_testkit::fuzz;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::fuzz_one(data, fuzz::context_edit));
