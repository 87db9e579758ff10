//! The errors the binding throws: JS `Error`s whose `code` is stable (`TREELOG_*`). [`code_of`]
//! and [`search_code_of`] are the only places codes of the engine's errors are chosen; a
//! panic in the engine becomes `TREELOG_PANIC` ([`guarded`]), never an abort of the process.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use treelog::Session;

/// A JS error with a stable `code`.
pub(crate) type Result<T> = std::result::Result<T, napi::Error<String>>;

pub(crate) fn js_error(code: &str, message: impl Into<String>) -> napi::Error<String> {
    napi::Error::new(code.to_string(), message.into())
}

/// The stable code of a library error.
pub(crate) fn code_of(error: &treelog::Error) -> &'static str {
    match error {
        treelog::Error::Io { .. } => "TREELOG_IO",
        treelog::Error::Index { .. } => "TREELOG_INDEX",
        treelog::Error::LogChanged { .. } => "TREELOG_LOG_CHANGED",
        treelog::Error::EntryNotFound { .. } => "TREELOG_NOT_FOUND",
        treelog::Error::Conflict { .. } => "TREELOG_CONFLICT",
        treelog::Error::Poisoned { .. } => "TREELOG_POISONED",
        treelog::Error::InvalidInput { .. } => "TREELOG_INVALID_INPUT",
        _ => "TREELOG_ERROR",
    }
}

/// The stable code of a search error (`search.rs`); a log's own error keeps its code.
pub(crate) fn search_code_of(error: &treelog::search::SearchError) -> &'static str {
    use treelog::search::SearchError;
    match error {
        SearchError::BadQuery { .. } => "TREELOG_BAD_QUERY",
        SearchError::Io { .. } => "TREELOG_IO",
        SearchError::Log(error) => code_of(error),
        SearchError::Engine { .. } => "TREELOG_SEARCH_INDEX",
        _ => "TREELOG_ERROR",
    }
}

pub(crate) fn to_js(error: treelog::Error) -> napi::Error<String> {
    // pi's words lead where pi has words for the same failure, so code that matches on
    // them keeps working; the file follows.
    let message = match &error {
        treelog::Error::EntryNotFound { path, id } => {
            format!("Entry {id} not found ({})", path.display())
        }
        _ => error.to_string(),
    };
    js_error(code_of(&error), message)
}

/// The error of a selector call without an open selector.
pub(crate) fn no_tree() -> napi::Error<String> {
    js_error(
        "TREELOG_INVALID_INPUT",
        "no tree selector is open on this session",
    )
}

/// Runs `body`, turning a library error into a coded JS error and a panic into
/// `TREELOG_PANIC`.
pub(crate) fn guarded<T>(body: impl FnOnce() -> treelog::Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result.map_err(to_js),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(js_error(
                "TREELOG_PANIC",
                format!("treelog panicked: {what}; this session handle is closed"),
            ))
        }
    }
}

pub(crate) fn broken() -> napi::Error<String> {
    js_error(
        "TREELOG_PANIC",
        "this session handle was closed by an earlier panic; open the session again",
    )
}

pub(crate) fn closed() -> napi::Error<String> {
    js_error("TREELOG_INVALID_INPUT", "this session handle was closed")
}

pub(crate) fn closed_error() -> treelog::Error {
    treelog::Error::InvalidInput {
        path: PathBuf::from("<closed>"),
        reason: "this session handle was closed".into(),
    }
}

pub(crate) fn not_found(session: &Session, id: &str) -> treelog::Error {
    treelog::Error::EntryNotFound {
        path: session.log_path().to_path_buf(),
        id: id.into(),
    }
}

pub(crate) fn panicked_error() -> treelog::Error {
    treelog::Error::InvalidInput {
        path: PathBuf::from("<closed>"),
        reason: "this session handle was closed by an earlier panic".into(),
    }
}
