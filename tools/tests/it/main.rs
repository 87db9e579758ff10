//! The CLI's integration tests, in one test binary (one link of redb and tantivy instead of one
//! per file): one module per subject, each running the `treelog` binary
//! (`CARGO_BIN_EXE_treelog`). Run one module with `cargo test -p treelog-cli --test it crash::`.
//! `object_store_cli.rs` stays a binary of its own (the object-store tests). Helpers shared with
//! the library's tests are the `treelog-testkit` crate (testkit/).

mod agents;
mod audit;
mod cli;
mod cli_consistency;
mod completions_man;
mod crash;
mod damage_cli;
mod error_texts;
mod hostile_files;
mod index_location;
mod openclaw;
mod openclaw_search;
mod redact;
mod reindex_progress;
mod search;
mod soak;
mod stats;
mod synth;
mod terminal_escapes;
