//! What a search or reindex reports while it works (`refresh.rs` calls it; `mod.rs`
//! re-exports it): plain callbacks, below every file of `search`.

use std::path::Path;

/// Hears what a search or reindex is doing (the CLI prints a notice and drives a bar).
pub trait Progress: Sync {
    /// The index of `index_dir` is rebuilt from the logs, for `reason`.
    fn rebuilding(&self, _index_dir: &Path, _reason: &str) {}
    /// A refresh will read this many log bytes.
    fn planned(&self, _bytes: u64) {}
    /// This many more log bytes were read.
    fn indexed(&self, _bytes: u64) {}
}

/// A [`Progress`] that ignores everything.
pub struct Quiet;
impl Progress for Quiet {}
