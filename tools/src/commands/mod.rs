//! One module per subcommand. Each has an `Args` struct (its `--help`) and a `run` function;
//! helpers shared by several commands live here.

pub mod append;
pub mod audit;
pub mod compact;
pub mod completions;
pub mod context;
pub mod convert;
pub mod demo;
pub mod export;
pub mod foreign;
pub mod info;
pub mod list;
pub mod list_agents;
pub mod list_store;
pub mod man;
pub mod openclaw;
pub mod path;
pub mod push_pull;
pub mod redact;
pub mod reindex;
pub mod repair;
pub mod search;
pub mod secrets;
pub mod stats;
pub mod tree;
pub mod verify;

use std::path::Path;

use treelog::{Session, SessionOptions};

use crate::exit::CliError;

/// Opens an existing log (a missing file is an error here, whereas the library would bind a
/// new empty session to the path).
pub fn open_existing(path: &Path, options: SessionOptions) -> Result<Opened, CliError> {
    if let Some(address) = path.to_str().and_then(treelog::openclaw::Address::parse) {
        let address = address.map_err(openclaw::cli_error)?;
        return Ok(Opened {
            session: Some(openclaw::open_address(&address, options)?),
            noticed: false,
        });
    }
    if let Some(address) = push_pull::address_of(path) {
        let session = push_pull::open_address(&address?, options, true)?;
        let noticed = notice_rebuild(&session);
        return Ok(Opened {
            session: Some(session),
            noticed,
        });
    }
    if crate::files::is_sidecar(path) {
        return Err(crate::files::sidecar_error(path));
    }
    // Another agent's file is never opened as a pi session: its sidecar would be written
    // beside it, and an append would write pi's lines into it.
    if let Some(format) = foreign::detect_file(path) {
        return Err(foreign::refuse(path, format));
    }
    let metadata = std::fs::metadata(path).map_err(|e| CliError::io(path, "open the log", e))?;
    if !metadata.is_file() {
        return Err(CliError::input(
            path.display().to_string(),
            "not a regular file",
        ));
    }
    let session = Session::open(path, options)?;
    let noticed = notice_rebuild(&session);
    Ok(Opened {
        session: Some(session),
        noticed,
    })
}

/// A session opened by a command: when it is dropped, a rebuild for damage that a read found
/// after the open (the library rebuilds and answers again) gets its one line on stderr too.
pub struct Opened {
    /// Always `Some` but in `close`.
    session: Option<Session>,
    /// The open's own rebuild notice was printed.
    noticed: bool,
}

impl std::ops::Deref for Opened {
    type Target = Session;
    fn deref(&self) -> &Session {
        self.session.as_ref().expect("present until closed")
    }
}

impl std::ops::DerefMut for Opened {
    fn deref_mut(&mut self) -> &mut Session {
        self.session.as_mut().expect("present until closed")
    }
}

impl Opened {
    /// [`Session::close`], with the notice.
    pub fn close(mut self) -> treelog::Result<()> {
        self.notice();
        let session = self.session.take().expect("present until closed");
        session.close()
    }

    fn notice(&mut self) {
        if !self.noticed
            && let Some(session) = &self.session
        {
            self.noticed = notice_rebuild(session);
        }
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        self.notice();
    }
}

/// One line on stderr when the index was rebuilt for a reason the user should hear of: it was
/// damaged (the answers are right, they come from the log, but the disk or another program
/// damaged the sidecar), or an older treelog wrote it (the rebuild costs time the user should
/// be able to explain); or when no index could be written (a read-only folder or file system,
/// a sidecar that is a link) and the answers come from the log read into memory. Returns
/// whether it printed.
pub fn notice_rebuild(session: &Session) -> bool {
    let sidecar = session.sidecar().map_or_else(
        || treelog::sidecar_path(session.log_path()),
        Path::to_path_buf,
    );
    // The CLI speaks of rebuilds, and of indexes it could not write: a command run without an
    // index by choice says so in its output.
    let rebuilt = matches!(
        session.index_state(),
        treelog::IndexState::Rebuilt { .. } | treelog::IndexState::Unindexed { damaged: false, .. }
    );
    match session.index_state().notice(&sidecar).filter(|_| rebuilt) {
        Some(notice) => {
            crate::terminal::eprint_line(&notice.to_string());
            true
        }
        None => false,
    }
}

/// Opens an existing log with the run's options (index used and updated, where
/// `--index-dir` and `--no-index-write` say), for a command
/// that reads it as a session ([`open_session`]).
pub fn open_default(path: &Path) -> Result<Opened, CliError> {
    open_session(path, crate::sidecars::options())
}

/// What a log holds, as the commands that read it as a session see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// A session header or at least one entry.
    Session,
    /// Nothing but blank lines (or nothing at all): a new, empty session, whose first append
    /// writes its header.
    Empty,
}

/// Opens an existing log for a command that reads it as a session (`context`, `path`,
/// `tree`, `info`, `export`): a file that holds neither a session header nor an entry (random
/// bytes, a torn first write, lines of other JSON) is refused as not a session log, rather
/// than answered as an empty session.
pub fn open_session(path: &Path, options: SessionOptions) -> Result<Opened, CliError> {
    let mut session = open_existing(path, options)?;
    content(&mut session)?;
    Ok(session)
}

/// Whether `session`'s log is a session or an empty log; an error naming the file otherwise.
pub fn content(session: &mut Session) -> Result<Content, CliError> {
    let stats = session.stats()?;
    let own_header = !session.header().recovered && stats.log_len_bytes > 0;
    if own_header || stats.entry_count > 0 {
        return Ok(Content::Session);
    }
    if stats.opaque_count == 0 && stats.torn_tail_bytes == 0 {
        return Ok(Content::Empty);
    }
    let mut held = Vec::new();
    if stats.opaque_count > 0 {
        held.push(format!("{} line(s) that are neither", stats.opaque_count));
    }
    if stats.torn_tail_bytes > 0 {
        held.push(format!(
            "{} byte(s) after the last newline (a cut-off write)",
            stats.torn_tail_bytes
        ));
    }
    Err(CliError::input(
        session.log_path().display().to_string(),
        format!(
            "not a session log: it holds neither a session header nor an entry ({} bytes: {})",
            stats.log_len_bytes,
            held.join(", ")
        ),
    ))
}

/// `1.2 KiB`-style sizes.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
