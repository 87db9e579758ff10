//! Which hits stand on their session's active path: the path from the leaf the session opens
//! at (its last entry, as pi opens it) to the root, read through the library's `Session`
//! (read-only when the search writes nothing), once per session a search reports. A Claude
//! Code session or a Codex rollout is read by `crate::agents` instead, never opened as a
//! pi session (which would write a sidecar beside it): its active path runs from the leaf its
//! client resumes at, and a rollout is one path.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use std::io::Read;

use crate::agents::Format;
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
enum ActivePath {
    Pi {
        session: Box<Session>,
        ids: HashSet<String>,
    },
    /// Another agent's session: the byte offsets of the lines on its active path.
    Other {
        format: Format,
        offsets: HashSet<u64>,
    },
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
        let options = &self.options;
        let path = self
            .paths
            .entry(log.to_path_buf())
            .or_insert_with(|| open(log, options.clone()));
        match path {
            Some(ActivePath::Pi { session, ids }) => {
                !id.is_empty()
                    && ids.contains(id)
                    && session
                        .entry(id)
                        .ok()
                        .flatten()
                        .is_some_and(|entry| entry.offset_bytes == offset_bytes)
            }
            Some(ActivePath::Other { offsets, .. }) => offsets.contains(&offset_bytes),
            None => false,
        }
    }

    /// The agent whose session `log` is (after [`ActivePaths::contains`] read it): pi's,
    /// unless the log is a Claude Code session or a Codex rollout.
    pub(crate) fn format(&self, log: &Path) -> Format {
        match self.paths.get(log) {
            Some(Some(ActivePath::Other { format, .. })) => *format,
            _ => Format::Pi,
        }
    }
}

/// Bytes of a log's start read to tell its format.
const HEAD_BYTES_MAX: u64 = 1 << 20;

fn open(log: &Path, options: SessionOptions) -> Option<ActivePath> {
    let mut head = Vec::new();
    // Checked before the open: opening a FIFO would wait for a writer.
    if !std::fs::metadata(log).ok()?.is_file() {
        return None;
    }
    std::fs::File::open(log)
        .ok()?
        .take(HEAD_BYTES_MAX)
        .read_to_end(&mut head)
        .ok()?;
    match crate::agents::detect(&head) {
        Some(Format::ClaudeCode | Format::Codex) => {
            let bytes = std::fs::read(log).ok()?;
            let transcript = crate::agents::read(&bytes)?;
            let offsets = match transcript.leaf {
                Some(leaf) => transcript
                    .path_to(leaf)
                    .into_iter()
                    .map(|entry| transcript.line_of(entry).offset as u64)
                    .collect(),
                None => HashSet::new(),
            };
            Some(ActivePath::Other {
                format: transcript.format,
                offsets,
            })
        }
        _ => {
            let session = Session::open(log, options).ok()?;
            let ids = session.path_ids(None).ok()?.into_iter().collect();
            Some(ActivePath::Pi {
                session: Box::new(session),
                ids,
            })
        }
    }
}
