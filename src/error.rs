//! The library's error type. Every variant names the file it concerns and, where one exists,
//! the byte offset; the CLI maps variants to exit codes in one place (tools/src/exit.rs).

use std::io;
use std::path::PathBuf;

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: cannot {operation}: {}", io_reason(source))]
    Io {
        path: PathBuf,
        /// What was being done to `path`, as the words after "cannot" (`append to`,
        /// `create the index`).
        operation: &'static str,
        source: io::Error,
    },

    /// The sidecar index could not be used. An open rebuilds it where possible, and a session
    /// rebuilds it when a read finds it damaged and answers again (format-spec/index.md §3), so
    /// this reaches the caller only when that rebuild failed too, or the handle already
    /// rebuilt once; opening the log again rebuilds.
    #[error("{path}: index: {reason}")]
    Index { path: PathBuf, reason: String },

    /// A line read through the index no longer matches the bytes the index recorded: the log
    /// was rewritten behind this handle's back. Reopening rebuilds the index.
    #[error(
        "{path}: byte {offset_bytes}: the log changed under the index ({reason}); reopen the session"
    )]
    LogChanged {
        path: PathBuf,
        offset_bytes: u64,
        reason: String,
    },

    /// An entry named by the caller does not exist.
    #[error("{path}: no entry has the id {}", quoted(id))]
    EntryNotFound { path: PathBuf, id: String },

    /// Another writer appended a child of this handle's leaf since it last looked, so this
    /// append would have silently started a sibling branch.
    #[error(
        "{path}: another writer appended entry {their_id} after {}; nothing was written (refresh the session to append after their entries, or branch explicitly, then append again)",
        leaf_words(leaf)
    )]
    Conflict {
        path: PathBuf,
        leaf: Option<String>,
        their_id: String,
    },

    /// An earlier write or sync failed; nothing more is written until the session is reopened.
    #[error("{path}: writes refused after an earlier I/O failure ({reason}); reopen the session")]
    Poisoned { path: PathBuf, reason: String },

    /// An append refused before anything was written, because pi would not read the log
    /// with the new entry as treelog does (no header pi reads, a version pi migrates, not a
    /// session log at all).
    #[error("{path}: {reason}; nothing was written")]
    AppendRefused { path: PathBuf, reason: String },

    /// The caller passed something unusable (invalid JSON, an unknown option).
    #[error("{path}: {reason}")]
    InvalidInput { path: PathBuf, reason: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        operation: &'static str,
        source: io::Error,
    ) -> Error {
        Error::Io {
            path: path.into(),
            operation,
            source,
        }
    }
}

/// What an I/O error means, in the user's words: the system's message without its number
/// (`os error 13`) and starting in lower case, and for a refused permission what to check.
pub fn io_reason(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::PermissionDenied => {
            "permission denied (check the permissions of the file and of its directory)".into()
        }
        io::ErrorKind::ReadOnlyFilesystem => "the file system is read-only".into(),
        io::ErrorKind::StorageFull => "no space left on the device".into(),
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::UnexpectedEof => "the file ended before the bytes expected".into(),
        _ => {
            let text = error.to_string();
            let text = match (error.raw_os_error(), text.rfind(" (os error ")) {
                (Some(_), Some(at)) => &text[..at],
                _ => text.as_str(),
            };
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => "an unknown I/O error".into(),
            }
        }
    }
}

/// An id as the user would type it: in double quotes, with JSON's escapes for quotes,
/// backslashes and control characters (never Rust's debug escapes).
pub(crate) fn quoted(id: &str) -> String {
    serde_json::to_string(id).unwrap_or_else(|_| format!("\"{id}\""))
}

/// An optional value as the user would read it: [`quoted`] when present, else `absent` (such
/// as `none` or `the start of the session`), never Rust's `Some(..)`.
pub(crate) fn quoted_or(value: Option<&str>, absent: &str) -> String {
    value.map_or_else(|| absent.to_string(), quoted)
}

/// The leaf a conflict names, in words: its id, or the start of the session.
fn leaf_words(leaf: &Option<String>) -> String {
    match leaf {
        Some(id) => format!("this session's leaf {id}"),
        None => "the start of this session".into(),
    }
}
