//! The sidecar index: a redb database beside the log that caches what an open needs. It is
//! only ever a cache: every open checks it against the log, and any doubt rebuilds it from the
//! log. Layout and rules are in format-spec/index.md.
//!
//! Data flow: `scan` hands complete lines to [`Store::apply_line`] (apply.rs), which derives a
//! record and updates the in-memory overlay; [`Store::flush`] writes the overlay to redb in one
//! transaction. Reads look in the overlay first, then in redb.
//!
//! - `store/`: the [`Store`] type and one file per job on it (listed in `store/mod.rs`);
//!   `store/handle.rs` is the one place that opens redb.
//! - `apply.rs`: the tree rules that derive a record from a line (normative in
//!   format-spec/log.md); `links.rs`, the tree fields it needs of earlier lines.
//! - `classify.rs`: a line's bytes classified as indexing reads them, below everything else.
//! - `parallel.rs`: long catch-ups and rebuilds on several threads (`tuning.rs`: their sizes).
//! - `id_table.rs`, `small_tables.rs`: the paged id tables and the small tables, read with
//!   their checks; they read and write what the store hands them.
//! - `hashing.rs`: the block hashes of the indexed prefix.
//! - `location.rs`: where a sidecar lives (beside the log or in an index directory).
//! - `writeback.rs`: a rebuild's early writeback; `fast_map.rs`: the hash map used throughout.

mod apply;
mod classify;
mod fast_map;
mod hashing;
mod id_table;
mod links;
mod location;
mod parallel;
mod small_tables;
mod store;
mod tuning;
mod writeback;

#[cfg(all(feature = "search", test))]
pub(crate) use location::KEY_HEX_LEN;
pub use location::{SIDECAR_SUFFIX, sidecar_for, sidecar_in_dir, sidecar_path};
#[cfg(feature = "search")]
pub(crate) use location::{canonical_path, path_key};
pub use store::{IndexState, SCHEMA_CHANGED_REASON, SCHEMA_VERSION, Verify};
pub(crate) use store::{Lag, Store};
