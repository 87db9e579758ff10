//! The errors of logs on an object store: each names the object (or address) and what the
//! store answered, or what is wrong with the segments found.

use std::path::PathBuf;
use std::time::Duration;

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
    /// A request the store did not answer within the bound (`RequestBounds::request_timeout`).
    #[error("{object}: cannot {operation}: the store did not answer within {} s", after.as_secs_f64())]
    Timeout {
        object: String,
        operation: &'static str,
        after: Duration,
    },
    /// A listing that does not end as a store's listing ends: refused before it is read as
    /// the log's segments.
    #[error("{object}: cannot list: {fault}")]
    Listing { object: String, fault: ListingFault },
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

/// Why a listing was given up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListingFault {
    /// More pages than `RequestBounds::listing_pages_max`.
    TooManyPages { max: usize },
    /// More objects than [`crate::limits::LISTED_OBJECTS_MAX`].
    TooManyObjects { max: usize },
    /// Not done within `RequestBounds::listing_deadline`.
    Deadline { after: Duration },
    /// The store said "more follows" with a continuation token it had given before.
    RepeatedToken { token: String },
}

impl std::fmt::Display for ListingFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListingFault::TooManyPages { max } => write!(
                f,
                "the store's listing did not end after {max} pages (a log has far fewer;                  `treelog compact` merges small segments)"
            ),
            ListingFault::TooManyObjects { max } => {
                write!(f, "the store listed more than {max} objects")
            }
            ListingFault::Deadline { after } => write!(
                f,
                "the store's listing did not end within {} s",
                after.as_secs_f64()
            ),
            ListingFault::RepeatedToken { token } => write!(
                f,
                "the store answered \"more follows\" with a continuation token it gave before                  ({token:?}): its listing would never end"
            ),
        }
    }
}
