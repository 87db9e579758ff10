//! The errors of logs on an object store: each names the object (or address) and what the
//! store answered, or what is wrong with the segments found.

use std::path::PathBuf;

/// Result of the object-store functions.
pub type Result<T> = std::result::Result<T, ObjectStoreError>;

#[derive(Debug, thiserror::Error)]
pub enum ObjectStoreError {
    /// An `s3://` address that cannot name a log.
    #[error("{address}: {reason}")]
    Address { address: String, reason: String },
    /// The settings from the environment are missing or unusable.
    #[error("object store settings: {reason}")]
    Config { reason: String },
    /// The store refused or failed a request: the object, what was asked, and its answer.
    #[error("{object}: cannot {operation}: the store answered: {answer}")]
    Store {
        object: String,
        operation: &'static str,
        answer: String,
    },
    /// The segments found do not tile the log (a gap, an overlap, an object that is not a
    /// segment, an empty segment, a segment shorter than listed): never read as a log.
    #[error("{object}: {reason}")]
    Layout { object: String, reason: String },
    /// `push` to an address that holds another log, or `pull` over an existing file.
    #[error("{target}: {reason}")]
    Refused { target: String, reason: String },
    /// The copy's bytes differ from the original's.
    #[error(
        "{target}: the copy differs from {source_name}: blake3 {copy_hash} ({copy_len} bytes) against {source_hash} ({source_len} bytes)"
    )]
    Mismatch {
        target: String,
        source_name: String,
        copy_hash: String,
        copy_len: u64,
        source_hash: String,
        source_len: u64,
    },
    /// A local file could not be read or written.
    #[error("{}: cannot {operation}: {}", path.display(), crate::error::io_reason(source))]
    Io {
        path: PathBuf,
        operation: &'static str,
        source: std::io::Error,
    },
    /// The session engine failed (its message names the log).
    #[error(transparent)]
    Session(#[from] crate::Error),
}

impl ObjectStoreError {
    /// The error as an `io::Error` for the engine's `LogStorage` calls, which keep it as
    /// their source (its message names the object).
    pub fn into_io(self) -> std::io::Error {
        std::io::Error::other(self)
    }
}
