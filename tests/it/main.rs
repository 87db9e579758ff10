//! The library's integration tests, in one test binary (one link of redb and tantivy instead
//! of one per file): one module per subject, `regression` for the bugs found and fixed.
//! `search` and `openclaw` need their features; `cargo test --workspace` enables both (the CLI
//! turns them on). Built without one, the module is a single ignored test saying which feature
//! to pass, so that a filter naming it (`cargo test -p treelog --test it search::`) says why
//! nothing ran instead of running nothing in silence.
//! Run one module with `cargo test -p treelog --test it faults::`.
//! `tests/object_store.rs` stays a binary of its own (the `object-store` feature). The helpers
//! these tests share with the CLI's and the fuzzer are the `treelog-testkit` crate (testkit/).

mod agents;
mod audit;
mod bad_input;
mod concurrency;
mod convert;
mod damage_campaign;
mod doc_numbers;
mod entry_lines;
mod error_messages;
mod examples;
mod faults;
mod fuzz_corpus;
mod index_corruption;
mod index_location;
mod json_scan;
mod large_context;
mod model;
mod module_graph;
mod open_progress;
#[cfg(feature = "openclaw")]
mod openclaw;
#[cfg(not(feature = "openclaw"))]
mod openclaw {
    #[test]
    #[ignore = "built without the `openclaw` feature: cargo test --workspace, or -p treelog --features openclaw"]
    fn needs_the_openclaw_feature() {}
}
mod oracle;
mod pi_oracle;
mod rebuild_size;
mod regression;
#[cfg(feature = "search")]
mod search;
#[cfg(not(feature = "search"))]
mod search {
    #[test]
    #[ignore = "built without the `search` feature: cargo test --workspace, or -p treelog --features search"]
    fn needs_the_search_feature() {}
}
mod secrets;
mod session_api;
mod session_ids;
mod stats;
mod usage_entries;
