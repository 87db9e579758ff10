//! The library's integration tests, in one test binary (one link of redb and tantivy instead
//! of one per file): one module per subject, `regression` for the bugs found and fixed.
//! `search` and `openclaw` need their features; `cargo test --workspace` enables both (the CLI
//! turns them on), `cargo test -p treelog` alone leaves them out.
//! Run one module with `cargo test -p treelog --test it faults::`.
//! `tests/object_store.rs` stays a binary of its own (the `object-store` feature). The helpers
//! these tests share with the CLI's and the fuzzer are the `treelog-testkit` crate (testkit/).

mod agents;
mod audit;
mod bad_input;
mod concurrency;
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
mod oracle;
mod pi_oracle;
mod rebuild_size;
mod regression;
#[cfg(feature = "search")]
mod search;
mod secrets;
mod session_api;
mod session_ids;
mod stats;
mod usage_entries;
