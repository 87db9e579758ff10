//! Why a search failed: the one error type of `search`, below every file of it (they all
//! return it; `mod.rs` re-exports it).

use std::io;
use std::path::PathBuf;

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query cannot be run; the reason is in the user's words.
    #[error("bad query: {reason}")]
    BadQuery { reason: String },
    /// A file or directory could not be read or written: `PATH: cannot OPERATION: reason`, the
    /// reason in the user's words as the library's own I/O errors give it.
    #[error("{}: cannot {operation}: {}", path.display(), crate::io_reason(source))]
    Io {
        path: PathBuf,
        /// What was being done to `path`, as the words after "cannot" (`open`, `read the
        /// directory`).
        operation: &'static str,
        source: io::Error,
    },
    /// Reading a log failed.
    #[error(transparent)]
    Log(#[from] crate::Error),
    /// The search engine failed on the index in `path`, even after rebuilding it.
    #[error("{}: search index: {reason}", path.display())]
    Engine { path: PathBuf, reason: String },
    /// The OpenClaw session or sessions an `openclaw://` address names cannot be read: the
    /// address as the user wrote it, then what is wrong (the database, agent, session or row).
    #[cfg(feature = "openclaw")]
    #[error("{address}: {source}")]
    OpenClaw {
        address: String,
        source: crate::openclaw::OpenClawError,
    },
    /// A log on an object store (an `s3://` address) cannot be read: the object and what the
    /// store answered, or what is wrong with the log's segments.
    #[cfg(feature = "object-store")]
    #[error(transparent)]
    ObjectStore(#[from] crate::object_store::ObjectStoreError),
}

impl SearchError {
    pub(crate) fn io(path: impl Into<PathBuf>, operation: &'static str, source: io::Error) -> Self {
        SearchError::Io {
            path: path.into(),
            operation,
            source,
        }
    }
}
