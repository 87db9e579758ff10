//! Which hits stand on their session's active path: the path from the leaf the session opens
//! at (its last entry, as pi opens it) to the root, read through the library's `Session`
//! (read-only when the search writes nothing), once per session a search reports.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::{Session, SessionOptions};

/// Which branches a search covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Branches {
    /// Every entry, on any branch.
    #[default]
    All,
    /// Only the entries on their session's active path.
    Active,
}

/// One session's active path: its ids, and the session to tell which line an id names.
struct ActivePath {
    session: Session,
    ids: HashSet<String>,
}

/// The active paths of the sessions a search reports, each read once.
pub(crate) struct ActivePaths {
    options: SessionOptions,
    paths: HashMap<PathBuf, Option<ActivePath>>,
}

impl ActivePaths {
    /// Sessions are opened with the search's sidecar choice: `index_dir`, and `index_write`
    /// (without, a sidecar is read but never written, and a log without one is replayed).
    pub(crate) fn new(index_dir: Option<PathBuf>, index_write: bool) -> ActivePaths {
        ActivePaths {
            options: SessionOptions {
                index_dir,
                index_write,
                ..SessionOptions::default()
            },
            paths: HashMap::new(),
        }
    }

    /// Whether the entry `id` at `offset_bytes` of `log` is on the log's active path: its id
    /// is on the path and names the line at that offset. An entry without an id, or of a log
    /// the session API cannot open, is on no active path.
    pub(crate) fn contains(&mut self, log: &Path, id: &str, offset_bytes: u64) -> bool {
        if id.is_empty() {
            return false;
        }
        let options = &self.options;
        let path = self
            .paths
            .entry(log.to_path_buf())
            .or_insert_with(|| open(log, options.clone()));
        let Some(path) = path else {
            return false;
        };
        path.ids.contains(id)
            && path
                .session
                .entry(id)
                .ok()
                .flatten()
                .is_some_and(|entry| entry.offset_bytes == offset_bytes)
    }
}

fn open(log: &Path, options: SessionOptions) -> Option<ActivePath> {
    let session = Session::open(log, options).ok()?;
    let ids = session.path_ids(None).ok()?.into_iter().collect();
    Some(ActivePath { session, ids })
}
