//! What a search or reindex reports while it works (`refresh.rs` calls it; `mod.rs`
//! re-exports it): plain callbacks, below every file of `search`.

use std::fmt;
use std::path::Path;

/// Why an index is built or rebuilt from the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebuildReason {
    /// There was no index yet: the first search or reindex of a directory.
    Missing,
    /// The caller asked for it (`treelog reindex --search --force`).
    Forced,
    /// The index could not be used (damaged, of another version, half-written, not up to
    /// date for a search that writes nothing), in words.
    Unusable(String),
    /// The index cannot be written (the I/O error, naming its path): the search reads a
    /// current index as it is, or builds one in memory, as with `--no-index-write`.
    Unwritable(String),
    /// Index writes are off and the index on disk cannot answer (why, in words): one is built
    /// in memory for this search only.
    InMemory(String),
}

impl fmt::Display for RebuildReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RebuildReason::Missing => f.write_str("there is no search index yet"),
            RebuildReason::Forced => f.write_str("--force"),
            RebuildReason::Unusable(reason) | RebuildReason::Unwritable(reason) => {
                f.write_str(reason)
            }
            RebuildReason::InMemory(reason) => write!(f, "{reason} and index writes are off"),
        }
    }
}

impl RebuildReason {
    /// The index is damaged, as the engine (or the refresh) found: `reason` in its words.
    pub fn damaged(reason: impl fmt::Display) -> RebuildReason {
        RebuildReason::Unusable(format!("the search index is damaged ({reason})"))
    }

    /// The one-line notice of a (re)build of the index in `index_dir`, as the CLI prints it
    /// on stderr and the Node package hands it to `onNotice`.
    pub fn notice(&self, index_dir: &Path) -> String {
        let action = match self {
            RebuildReason::Missing => "building it from the logs",
            RebuildReason::Forced | RebuildReason::Unusable(_) => {
                "rebuilding the search index from the logs"
            }
            RebuildReason::InMemory(_) => {
                "building it in memory from the logs, for this search only"
            }
            // The reason names the path already.
            RebuildReason::Unwritable(reason) => {
                return format!(
                    "{reason}; searching without writing the index (--index-dir DIR keeps it elsewhere)"
                );
            }
        };
        format!("{}: {self}; {action}", index_dir.display())
    }
}

/// Hears what a search or reindex is doing (the CLI prints a notice and drives a bar).
pub trait Progress: Sync {
    /// The index of `index_dir` is built or rebuilt from the logs, for `reason`.
    fn rebuilding(&self, _index_dir: &Path, _reason: &RebuildReason) {}
    /// A refresh will read this many log bytes.
    fn planned(&self, _bytes: u64) {}
    /// This many more log bytes were read.
    fn indexed(&self, _bytes: u64) {}
}

/// A [`Progress`] that ignores everything.
pub struct Quiet;
impl Progress for Quiet {}
