//! One module per subcommand. Each has an `Args` struct (its `--help`) and a `run` function;
//! helpers shared by several commands live here.

pub mod append;
pub mod bench;
pub mod context;
pub mod demo;
pub mod export;
pub mod generate;
pub mod info;
pub mod list;
pub mod path;
pub mod reindex;
pub mod repair;
pub mod tree;
pub mod verify;

use std::path::Path;

use treelog::{Session, SessionOptions};

use crate::exit::CliError;

/// Opens an existing log (a missing file is an error here, whereas the library would bind a
/// new empty session to the path).
pub fn open_existing(path: &Path, options: SessionOptions) -> Result<Session, CliError> {
    if crate::files::is_sidecar(path) {
        return Err(crate::files::sidecar_error(path));
    }
    let metadata = std::fs::metadata(path).map_err(|e| CliError::io(path, "open", e))?;
    if !metadata.is_file() {
        return Err(CliError::input(
            path.display().to_string(),
            "not a regular file",
        ));
    }
    let session = Session::open(path, options)?;
    notice_rebuild(&session);
    Ok(session)
}

/// One line on stderr when an open rebuilt an index that an older treelog wrote: the answers
/// are right (they come from the log), but the rebuild costs time the user should be able to
/// explain.
pub fn notice_rebuild(session: &Session) {
    if let treelog::IndexState::Rebuilt { reason } = session.index_state()
        && reason == treelog::SCHEMA_CHANGED_REASON
    {
        eprintln!(
            "treelog: {}: index written by another treelog version; rebuilt from the log",
            treelog::sidecar_path(session.log_path()).display()
        );
    }
}

/// Opens an existing log with the default options (index used and updated).
pub fn open_default(path: &Path) -> Result<Session, CliError> {
    open_existing(path, SessionOptions::default())
}
