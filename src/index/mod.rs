//! The sidecar index: a redb database beside the log that caches what an open needs. It is
//! only ever a cache: every open checks it against the log, and any doubt rebuilds it from the
//! log. Layout and rules are in format-spec/index.md.
//!
//! Data flow: `scan` hands complete lines to [`Store::apply_line`] (apply.rs), which derives a
//! record and updates the in-memory overlay; [`Store::flush`] writes the overlay to redb in one
//! transaction. Reads look in the overlay first, then in redb.

mod apply;
mod classify;
mod fast_map;
mod hashing;
mod id_table;
mod links;
mod parallel;
mod small_tables;
mod store;
mod tuning;
mod writeback;

pub use store::{IndexState, SCHEMA_CHANGED_REASON, SCHEMA_VERSION, Verify};
pub(crate) use store::{Lag, Store};

/// File name suffix of the sidecar: `session.jsonl` is indexed by `session.jsonl.treelog`.
pub const SIDECAR_SUFFIX: &str = ".treelog";

/// The sidecar of a log.
pub fn sidecar_path(log_path: &std::path::Path) -> std::path::PathBuf {
    let mut name = log_path.as_os_str().to_owned();
    name.push(SIDECAR_SUFFIX);
    name.into()
}
