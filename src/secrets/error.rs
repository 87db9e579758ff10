//! Why a secrets scan or a redaction stopped: each variant names the file and, where there is
//! one, the line, the entry and the JSON path.

use std::path::PathBuf;

/// A scan or a redaction could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretsError {
    /// Reading or writing a file failed (the log, its sidecar, a temporary file).
    #[error(transparent)]
    Log(#[from] crate::Error),
    /// A match stands where changing it would change the session's structure (a key, an id,
    /// a parent id, a type, a role, a timestamp): nothing was written.
    #[error(
        "{}:{line}: entry {}: {json_path}: {reason}; nothing was written",
        path.display(),
        entry_id.as_deref().unwrap_or("(none)")
    )]
    Refused {
        path: PathBuf,
        /// 1-based line of the log.
        line: u64,
        entry_id: Option<String>,
        json_path: String,
        reason: String,
    },
    /// A line that holds a match is not JSON: its string values cannot be told apart, so the
    /// match is not replaced (`treelog repair` makes such a log readable first).
    #[error(
        "{}:{line}: the line holds a match but is not JSON, so it cannot be redacted in place; nothing was written",
        path.display()
    )]
    NotJson { path: PathBuf, line: u64 },
    /// The log kept changing while it was rewritten.
    #[error(
        "{}: the log kept growing while it was redacted ({attempts} attempts); nothing was written",
        path.display()
    )]
    Busy { path: PathBuf, attempts: u32 },
}
