//! The index store: redb tables plus an overlay of the records not yet written to them.
//!
//! This module holds the [`Store`] type and what an open reports ([`IndexState`], [`Verify`]);
//! each job on it lives in a file of its own, an `impl Store` block that imports this file
//! and the files below it, never a sibling job's file:
//! - `schema.rs`: the tables, their keys and layouts, the schema version (change it there).
//! - `handle.rs`: the redb handles and the guard that turns a redb panic into an error.
//! - `overlay.rs`: the records derived from lines not yet written to redb.
//! - `open.rs`: opening a sidecar and checking it against the log.
//! - `rebuild.rs`: building a new index from the whole log in a private file.
//! - `catch_up.rs`: indexing the lines after the indexed prefix (read back or just written).
//! - `flush.rs`: writing the overlay to redb in one transaction.
//! - `reads.rs`: every read, overlay first, then the committed tables.
//! - `ids.rs`: id lookups and the reservation of new entry ids.
//!
//! Deriving a record from a line is `index/apply.rs`; long catch-ups on several threads are
//! `index/parallel.rs`. This file must not import the job files: they import it.

mod catch_up;
mod flush;
mod handle;
mod ids;
mod open;
mod overlay;
mod reads;
mod rebuild;
mod schema;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use overlay::TallyAdd;
pub use schema::{SCHEMA_CHANGED_REASON, SCHEMA_VERSION};

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::record::{Snapshot, State};
use crate::index::fast_map::FastMap;
use crate::index::hashing::PrefixHasher;
use crate::index::links::Links;
use crate::index::tuning::Tuning;
use crate::index::writeback::Writeback;
use handle::{Db, guarded, index_error};
use overlay::Overlay;
use schema::ReadTables;

/// How far the index may lag the log before a handle writes its overlay out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lag {
    /// Anything pending (a writer closing, an explicit sync).
    Any,
    /// Enough that the next opener would redo noticeable work: a handle that only reads does
    /// not pay a read-write open of redb (several fsyncs) to save the next one a few lines.
    Reader,
    /// The overlay reached its size limit.
    Due,
}

/// How much of the log an open checks against the index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Header line, length, the last hash block, file identity: reads at most one block.
    #[default]
    Quick,
    /// Also re-hashes the whole indexed prefix and compares every block, and verifies every
    /// page of the index against redb's checksums (reads the whole log and the whole index).
    Full,
}

/// What opening the index found, as reported by `treelog info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexState {
    /// The index covered the whole log.
    Fresh,
    /// The index was valid for a prefix; the lines after it were read.
    CaughtUp { bytes: u64, lines: u64 },
    /// The index was missing or could not be trusted, and was rebuilt by replaying the log.
    /// `damaged`: the sidecar itself was damaged (a checksum, a count or a layout check failed,
    /// or redb could not read it), as opposed to missing, of another version, or describing
    /// other log bytes.
    Rebuilt { reason: String, damaged: bool },
    /// No sidecar is used (an in-memory session, one that could not be written, or index
    /// writes are off): the log was replayed into memory. `damaged`: a sidecar was there but
    /// damaged, as for [`IndexState::Rebuilt`], and left as it is because index writes are off.
    Unindexed { reason: String, damaged: bool },
}

impl IndexState {
    /// The one line a user hears about the index of `sidecar` (the CLI on stderr, the Node
    /// package as a warning), or `None` when there is nothing worth saying: the index was
    /// damaged (the answers are right, they come from the log, but the disk or another program
    /// damaged the sidecar), an older treelog wrote it (the rebuild costs time the user should
    /// be able to explain), or it cannot be written (the session works from the log in
    /// memory, which costs memory and time on every open).
    pub fn notice(&self, sidecar: &std::path::Path) -> Option<String> {
        let sidecar = sidecar.display();
        match self {
            IndexState::Rebuilt {
                reason,
                damaged: true,
            } => Some(format!(
                "{sidecar}: index damaged ({reason}); rebuilt from the log"
            )),
            IndexState::Rebuilt { reason, .. } if reason == SCHEMA_CHANGED_REASON => Some(format!(
                "{sidecar}: index written by another treelog version; rebuilt from the log"
            )),
            IndexState::Unindexed {
                reason,
                damaged: true,
            } => Some(format!(
                "{sidecar}: index damaged ({reason}); reading the log into memory instead"
            )),
            IndexState::Unindexed { reason, .. } if reason.contains(NOT_REBUILT) => Some(format!(
                "{sidecar}: {reason}; reading the log into memory instead"
            )),
            _ => None,
        }
    }
}

/// How [`IndexState::Unindexed`]'s reason says that a rebuild could not write the index.
/// The most model keys a store remembers (`Store::model_origins`): pi's sessions use a few
/// models; a log with a new model on every message must not grow the map without bound.
pub(crate) const MODEL_ORIGINS_MAX: usize = 1024;

pub(crate) const NOT_REBUILT: &str = "the index could not be rebuilt";

/// Where a store reports how far it has indexed the log (see `SessionOptions::progress_bytes`).
pub(crate) type Progress = Option<std::sync::Arc<std::sync::atomic::AtomicU64>>;

pub(crate) struct Store {
    log_path: PathBuf,
    /// Raised (never lowered) to the indexed length after each chunk a catch-up or rebuild
    /// applies, for a progress bar.
    progress: Progress,
    sidecar_path: Option<PathBuf>,
    db: Option<Db>,
    tables: Option<ReadTables>,
    /// The snapshot the committed index holds, as last read or written by this handle.
    committed: Snapshot,
    pub(crate) overlay: Overlay,
    pub(crate) state: State,
    pub(crate) hasher: PrefixHasher,
    /// End of the last line indexed (committed or in the overlay): just after its `\n`, or,
    /// while `unterminated`, just after its last byte.
    pub(crate) indexed_len_bytes: u64,
    /// The last line indexed is the log's last line and had no `\n` when it was read: a
    /// complete line all the same (format-spec/log.md §1). It lives in the overlay only: no
    /// flush writes while this is set, so the committed index always ends at a `\n`, where
    /// no later byte can change a line it describes. A catch-up then requires the next byte
    /// to be that `\n`; any other byte changed the line, and the store is reloaded.
    pub(crate) unterminated: bool,
    /// Set when a catch-up found the unterminated last line changed and reloaded the store
    /// from the committed index (or replayed the log). The session takes it to move a leaf
    /// that named a record that is no longer an entry.
    reloaded: bool,
    pub(crate) next_seq: u64,
    /// The first line's hash (zeros until one is seen).
    pub(crate) first_line_hash: [u8; 32],
    /// Session id used to derive ids for v1 files.
    pub(crate) legacy_session_id: String,
    /// Set while rebuilding into a private file: commits need not be durable.
    build_mode: bool,
    /// Links of committed records recently looked up while indexing (jump pointers reach far
    /// back, so the same few ancestors are looked up again and again). Bounded.
    links_cache: RefCell<FastMap<u64, Links>>,
    /// Model keys (`EntryLine::model_key`) of assistant records this store indexed, to the
    /// first such record: the `model_origin_seq` of later assistants with the same key.
    /// Bounded by [`MODEL_ORIGINS_MAX`]; a key it cannot take makes its own origins.
    pub(crate) model_origins: FastMap<String, u64>,
    /// Scratch space for scans, kept between catch-ups.
    scan_buf: Vec<u8>,
    /// The log's identity or times differ from the snapshot's although its bytes were checked
    /// in full: the snapshot is rewritten at the next chance.
    identity_outdated: bool,
    /// Why writing the index failed, after which this handle stops trying.
    write_failure: Option<String>,
    /// Never write the sidecar (`SessionOptions::index_write` off): the lines after the
    /// committed index live in the overlay only, and nothing flushes it
    /// ([`Store::open_read_only`]).
    read_only: bool,
    /// Why indexing a line failed, after which this store neither indexes nor writes anything
    /// (the line may be half applied); the log must be opened again.
    pub(super) apply_failure: Option<String>,
    /// When a catch-up runs on several threads (`parallel.rs`).
    pub(crate) parallel: Tuning,
    /// While rebuilding, each flush keeps its id entries, sorted, in memory (an id run: 16
    /// bytes per id) instead of merging them among all the ids so far (random keys: most id
    /// pages would be rewritten at every flush), a run merged into the one before it while
    /// that one is less than twice as long (`id_index::push_run`). Lookups read the runs
    /// newest first; the rebuild ends by writing their union into `ids` in key order, once.
    id_runs: Vec<Vec<(u64, u64)>>,
    /// While rebuilding: writes the private file out to disk after each flush
    /// (`writeback.rs`).
    writeback: Option<Writeback>,
}

impl Store {
    /// A store with no sidecar: everything lives in the overlay.
    pub fn in_memory(log_path: &Path) -> Store {
        Store {
            log_path: log_path.to_path_buf(),
            progress: None,
            sidecar_path: None,
            db: None,
            tables: None,
            committed: Snapshot::default(),
            overlay: Overlay::default(),
            state: State::default(),
            hasher: PrefixHasher::resume(0, &[]),
            indexed_len_bytes: 0,
            unterminated: false,
            reloaded: false,
            next_seq: 0,
            first_line_hash: [0; 32],
            legacy_session_id: String::new(),
            build_mode: false,
            links_cache: RefCell::new(FastMap::default()),
            model_origins: FastMap::default(),
            scan_buf: Vec::new(),
            identity_outdated: false,
            write_failure: None,
            read_only: false,
            apply_failure: None,
            parallel: Tuning::default(),
            id_runs: Vec::new(),
            writeback: None,
        }
    }

    /// The sidecar this store reads (and writes, unless read-only); `None` when the log was
    /// replayed into memory.
    pub fn sidecar(&self) -> Option<&Path> {
        self.sidecar_path.as_deref()
    }

    /// Runs a read of the committed tables: a redb panic on a damaged sidecar (found by the
    /// `open_log` fuzz target) becomes an [`Error::Index`] instead of unwinding into the caller.
    fn guard<T>(&self, work: impl FnOnce() -> Result<T>) -> Result<T> {
        guarded(self.sidecar_path.as_deref().unwrap_or(&self.log_path), work)
    }

    /// Refuses to index or write after a line failed to apply (`apply_failure`).
    fn check_applicable(&self) -> Result<()> {
        match &self.apply_failure {
            None => Ok(()),
            Some(reason) => Err(self.read_error(format!(
                "indexing stopped at a line that failed ({reason}); open the log again"
            ))),
        }
    }

    /// This store, reporting its indexing to `progress`.
    pub(crate) fn with_progress(mut self, progress: &Progress) -> Store {
        self.progress = progress.clone();
        self
    }

    /// Raises the progress counter to the bytes indexed so far.
    pub(super) fn report_progress(&self) {
        if let Some(progress) = &self.progress {
            progress.fetch_max(self.indexed_len_bytes, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The sidecar file this store reads and writes; `None` when it uses none (in memory, or
    /// unindexed because the sidecar could not be used).
    pub(crate) fn sidecar_path(&self) -> Option<&Path> {
        self.sidecar_path.as_deref()
    }

    pub(crate) fn read_error(&self, error: impl std::fmt::Display) -> Error {
        index_error(
            self.sidecar_path.as_deref().unwrap_or(&self.log_path),
            error,
        )
    }
}
