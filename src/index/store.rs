//! The index store: redb tables plus an overlay of entries not yet written to them.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use redb::{
    Database, ReadOnlyTable, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition,
};

use super::apply::classify_bytes;
use super::hashing::{PrefixHasher, block_hash};
use super::id_table::{self, IDS, IDS_NAME, IDS_RECENT, IDS_RECENT_NAME};
use super::parallel::{Tuning, catch_up_parallel};
use super::small_tables::{self, CHILDREN, ID_COLLISIONS, LABELS, SmallWriter};
use super::writeback::Writeback;
use crate::error::{Error, Result};
use crate::format::id_index::{id_key, is_exact_key, merge_sorted_runs};
use crate::format::line::{FieldSpans, Line, is_complete_last_line};
use crate::format::page::{PageBuilder, PageView, RecordRef};
use crate::format::record::{
    DecodeError, LabelValue, Record, SEQ_NONE, Snapshot, State, StoredCounts,
};
use crate::limits::{FLUSH_BYTES_MAX, FLUSH_ENTRIES_MAX, HASH_BLOCK_LEN};
use crate::scan::{LineSink, ScannedLine, scan_lines};
use crate::storage::{FileIdentity, LogStorage, read_exact_at};

/// Bumped whenever a table or a layout changes, or the rules that derive records from lines
/// (format-spec/index.md §6); an index of any other version is rebuilt.
pub const SCHEMA_VERSION: u32 = 9;

/// The rebuild reason ([`IndexState::Rebuilt`]) of an index of another schema version.
pub const SCHEMA_CHANGED_REASON: &str = "index schema version differs";
const SCHEMA_MAGIC: &[u8; 12] = b"treelog-idx\0";

pub(crate) const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");
pub(crate) const BLOCKS: TableDefinition<u64, &[u8]> = TableDefinition::new("blocks");
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

const META_SCHEMA: &str = "schema";
const META_SNAPSHOT: &str = "snapshot";
const META_STATE: &str = "state";

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

/// Reloads one catch-up makes before it gives up on a last line that keeps changing (each one
/// a writer gluing bytes onto a line that had no `\n`).
const RELOADS_MAX: u32 = 2;

/// A reader writes what it caught up once it is at least this many lines or bytes.
const READER_FLUSH_RECORDS_MIN: usize = 256;
const READER_FLUSH_BYTES_MIN: u64 = 1024 * 1024;

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
    /// No sidecar is used (an in-memory session, or one that could not be written): the log
    /// was replayed into memory.
    Unindexed { reason: String },
}

/// Why an index is not used as it is, found when it is opened (format-spec/index.md §3).
pub(crate) struct Doubt {
    pub reason: String,
    /// The sidecar is damaged, not merely out of date (see [`IndexState::Rebuilt`]).
    pub damaged: bool,
}

impl Doubt {
    fn damaged(reason: impl Into<String>) -> Doubt {
        Doubt {
            reason: reason.into(),
            damaged: true,
        }
    }

    /// The index is sound but does not describe this log (another session, bytes rewritten
    /// behind its back), or is missing or of another version.
    fn stale(reason: impl Into<String>) -> Doubt {
        Doubt {
            reason: reason.into(),
            damaged: false,
        }
    }
}

/// Open read tables of the last committed index state.
struct ReadTables {
    records: ReadOnlyTable<u64, &'static [u8]>,
    ids: ReadOnlyTable<u64, &'static [u8]>,
    ids_recent: ReadOnlyTable<u64, &'static [u8]>,
    id_collisions: ReadOnlyTable<&'static str, &'static [u8]>,
    children: ReadOnlyTable<(u64, u64), u32>,
    labels: ReadOnlyTable<&'static str, &'static [u8]>,
    /// The key counts of the state committed with these tables (read in the same
    /// transaction): the small tables are checked against them when they are read whole.
    counts: StoredCounts,
    /// The small tables, read whole and checked on first use (`small_tables.rs`).
    loaded_children: OnceCell<FastMap<u64, Vec<u64>>>,
    loaded_labels: OnceCell<BTreeMap<String, LabelValue>>,
    loaded_id_collisions: OnceCell<HashMap<String, u64>>,
}

/// How many consecutive 8-hex ids [`Store::reserved_entry_id`] reserves at once: more than an
/// overlay takes, so that the ids a flush of appends files lie in one narrow key range and go
/// straight into `ids`, rewriting a page or two of it (format-spec/index.md, "Ids"). The ids
/// the tables already hold in the run (~15 at 1M ids) are skipped.
const RESERVED_IDS_LEN: u64 = 1 << 16;
const _: () = assert!(
    RESERVED_IDS_LEN >= crate::limits::FLUSH_ENTRIES_MAX as u64,
    "one run lasts an overlay of appends"
);
/// Runs used up (every one of their 65,536 ids held or refused) before falling back to random
/// ids looked up one by one: in practice only when nearly all 2^32 values are taken.
const RESERVE_TRIES_MAX: usize = 8;

/// A hash map keyed by seqs or id keys, with a hasher seeded per process.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Index content derived from lines not yet written to redb. Sequence numbers in
/// `records` are contiguous from `base_seq`.
#[derive(Default)]
pub(crate) struct Overlay {
    pub base_seq: u64,
    pub records: Vec<Record>,
    /// Id key (`format::id_index`) → the latest seq filed under it. Keys come from the log,
    /// so the map keeps a seeded hasher (foldhash: a quarter of SipHash's cost on u64 keys).
    pub ids: FastMap<u64, u64>,
    /// Ids whose key another id holds → their latest seq.
    pub id_collisions: HashMap<String, u64>,
    pub children: FastMap<u64, Vec<u64>>,
    /// `None` marks a label that was cleared.
    pub labels: HashMap<String, Option<LabelValue>>,
    pub base_len_bytes: u64,
    /// Keys of 8-hex ids handed out in increasing order by [`Store::reserved_entry_id`], which
    /// skips those the tables under this overlay hold (`reserved_held_keys`) and checks each
    /// against the overlay as it takes it. A new overlay (a flush, a reload) starts with none:
    /// the tables it sits on may hold more of them.
    pub reserved_id_keys: std::ops::Range<u64>,
    /// The keys in `reserved_id_keys` that the tables under this overlay file, largest first
    /// (the smallest is dropped once the run passes it): they are skipped.
    pub reserved_held_keys: Vec<u64>,
    /// [`Store::reserved_entry_id`] used up [`RESERVE_TRIES_MAX`] runs: it does not try again
    /// on this overlay (the caller draws random ids and looks each one up).
    pub reserve_failed: bool,
}

pub(crate) struct Store {
    log_path: PathBuf,
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
    /// Scratch space for scans, kept between catch-ups.
    scan_buf: Vec<u8>,
    /// The log's identity or times differ from the snapshot's although its bytes were checked
    /// in full: the snapshot is rewritten at the next chance.
    identity_outdated: bool,
    /// Why writing the index failed, after which this handle stops trying.
    write_failure: Option<String>,
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

/// The numeric tree fields of a record: what indexing needs of an earlier line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Links {
    pub canonical: bool,
    pub parent_seq: u64,
    pub jump_seq: u64,
    pub depth: u32,
    pub compaction_seq: u64,
    pub model_seq: u64,
    pub thinking_seq: u64,
}

impl From<&Record> for Links {
    fn from(record: &Record) -> Links {
        Links {
            canonical: record.kind.is_some(),
            parent_seq: record.parent_seq,
            jump_seq: record.jump_seq,
            depth: record.depth,
            compaction_seq: record.compaction_seq,
            model_seq: record.model_seq,
            thinking_seq: record.thinking_seq,
        }
    }
}

const LINKS_CACHE_LEN_MAX: usize = 1 << 16;

/// A walk toward the root that leaves a page steps back through at most this many pages
/// before it looks its target up from the root of the B-tree instead.
const PAGES_SKIPPED_MAX: u32 = 2;

/// An encoded record page as redb hands it out.
type StoredPage<'a> = redb::AccessGuard<'a, &'static [u8]>;

/// One record met on a walk toward the root: still in the overlay, or in a stored page.
pub(crate) enum Hop<'a> {
    Pending(&'a Record),
    Stored(RecordRef<'a, 'a>),
}

impl Hop<'_> {
    fn depth(&self) -> u64 {
        u64::from(match self {
            Hop::Pending(record) => record.depth,
            Hop::Stored(record) => record.depth(),
        })
    }
}

/// The key counts of the small tables that the state in `meta` records.
fn stored_counts(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
) -> Result<StoredCounts> {
    let state = meta
        .get(META_STATE)
        .map_err(|e| index_error(path, e))?
        .ok_or_else(|| index_error(path, "the index has no state"))?;
    State::decode(state.value())
        .map(|(_, counts)| counts)
        .map_err(|error| index_error(path, error.0))
}

/// A block hash as stored: sealed under its block index (`format::seal`).
fn seal_block(index: u64, hash: &[u8; 32]) -> Vec<u8> {
    crate::format::seal::seal(b"blocks", &index.to_le_bytes(), hash.to_vec())
}

fn unseal_block(index: u64, stored: &[u8]) -> std::result::Result<&[u8], DecodeError> {
    crate::format::seal::unseal(b"blocks", &index.to_le_bytes(), stored, || {
        format!("the hash of block {index}")
    })
}

/// The reason an [`Error::Index`] carries, without its path; other errors as they print.
fn error_reason(error: &Error) -> String {
    match error {
        Error::Index { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

fn index_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::Index {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// What a caught redb panic becomes: damage, in the user's words. redb's own text
/// ("internal error: entered unreachable code", "Invalid page type byte 0") names its code,
/// not the file, and is not repeated to the user.
pub(crate) const REDB_PANIC_REASON: &str = "redb could not read a damaged page of the sidecar";

/// Runs redb work at the boundary where a panic on a corrupted file must become an error.
fn guarded<T>(path: &Path, work: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(_) => Err(index_error(path, REDB_PANIC_REASON)),
    }
}

impl Store {
    /// A store with no sidecar: everything lives in the overlay.
    pub fn in_memory(log_path: &Path) -> Store {
        Store {
            log_path: log_path.to_path_buf(),
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
            scan_buf: Vec::new(),
            identity_outdated: false,
            write_failure: None,
            apply_failure: None,
            parallel: Tuning::default(),
            id_runs: Vec::new(),
            writeback: None,
        }
    }

    /// Opens (or creates) the sidecar of `storage`'s log, checks it and brings it up to date.
    pub fn open(
        storage: &dyn LogStorage,
        sidecar_path: &Path,
        verify: Verify,
        force_rebuild: bool,
    ) -> Result<(Store, IndexState)> {
        let mut store = Store::in_memory(storage.path());
        store.sidecar_path = Some(sidecar_path.to_path_buf());
        let rebuild_reason = if force_rebuild {
            Some(Doubt::stale("rebuild requested"))
        } else if !sidecar_path.exists() {
            Some(Doubt::stale("no index yet"))
        } else {
            // A full check also verifies every page of the index against redb's checksums: a
            // quick open trusts the pages, so a flipped bit there can change an answer.
            let opened = if verify == Verify::Full {
                guarded(sidecar_path, || open_database_checked(sidecar_path))
            } else {
                // A writer killed during a commit leaves a file that needs redb's repair, which
                // only a read-write open performs: try that before rebuilding from the log.
                guarded(sidecar_path, || open_database_read_only(sidecar_path)).or_else(|_| {
                    guarded(sidecar_path, || {
                        open_database(sidecar_path).map(|db| Db::Writer(DropGuarded::new(db)))
                    })
                })
            };
            match opened {
                Err(error) => Some(Doubt::damaged(format!(
                    "the sidecar cannot be opened as an index: {}",
                    error_reason(&error)
                ))),
                Ok(db) => {
                    store.db = Some(db);
                    match guarded(sidecar_path, || store.load_and_check(storage, verify)) {
                        Ok(Ok(())) => None,
                        Ok(Err(reason)) => Some(reason),
                        // The index itself failed to read (corrupt pages, a redb panic).
                        Err(Error::Index { reason, .. }) => Some(Doubt::damaged(reason)),
                        Err(error) => return Err(error),
                    }
                }
            }
        };
        let mut rebuild_reason = rebuild_reason;
        let mut kept_state = None;
        if rebuild_reason.is_none() {
            let before = store.indexed_len_bytes;
            let seq_before = store.next_seq;
            // Writing can fail on damage that reading did not touch (redb's allocator state is
            // read only by a read-write open): that index is rebuilt too. A last line without
            // its `\n` is read after the flush: it is never written to the index.
            let caught_up = store
                .catch_up_lines(storage)
                .and_then(|len_bytes| {
                    store.flush_if(storage, Lag::Reader)?;
                    store.index_unterminated_line(storage, len_bytes)
                })
                .and_then(|()| match store.write_failure.take() {
                    Some(reason) => Err(index_error(sidecar_path, reason)),
                    None => Ok(()),
                });
            match caught_up {
                Ok(()) if store.indexed_len_bytes == before => kept_state = Some(IndexState::Fresh),
                Ok(()) => {
                    kept_state = Some(IndexState::CaughtUp {
                        bytes: store.indexed_len_bytes - before,
                        lines: store.next_seq - seq_before,
                    })
                }
                Err(Error::Index { reason, .. }) => rebuild_reason = Some(Doubt::damaged(reason)),
                Err(error) => return Err(error),
            }
        }
        let state = match (kept_state, rebuild_reason) {
            (Some(state), _) => state,
            (None, None) => unreachable!("an index is either kept or has a reason to be rebuilt"),
            (None, Some(Doubt { reason, damaged })) => {
                store.db = None;
                store.tables = None;
                if let Err(error) = store.rebuild(storage, sidecar_path) {
                    let reason = format!("{reason}; the index could not be rebuilt: {error}");
                    return Store::in_memory(storage.path()).replay_unindexed(storage, reason);
                }
                IndexState::Rebuilt { reason, damaged }
            }
        };
        Ok((store, state))
    }

    /// Builds a new index from the whole log in a private file, then renames it over the
    /// sidecar. Openers that still hold the old file keep a consistent (orphaned) index; new
    /// opens see the new one. Intermediate commits are not durable: only the final one is,
    /// and a crash before the rename leaves just a stray temporary file.
    fn rebuild(&mut self, storage: &dyn LogStorage, sidecar_path: &Path) -> Result<()> {
        let mut temp_name = sidecar_path.as_os_str().to_owned();
        temp_name.push(format!(
            ".rebuild-{}-{:08x}",
            std::process::id(),
            crate::format::ids::random_u64() as u32
        ));
        let temp_path = PathBuf::from(temp_name);
        let built = (|| {
            let db = guarded(&temp_path, || {
                Database::builder()
                    .set_cache_size(REBUILD_CACHE_BYTES)
                    .create(&temp_path)
                    .map_err(|e| index_error(&temp_path, e))
            })?;
            self.db = Some(Db::Writer(DropGuarded::new(db)));
            self.sidecar_path = Some(temp_path.clone());
            self.build_mode = true;
            self.writeback = Writeback::start(&temp_path);
            guarded(&temp_path, || self.reset())?;
            let len_bytes = self.catch_up_lines(storage)?;
            // The last overlay becomes the last id run; the merge is the durable commit.
            self.flush(storage)?;
            // Waits for the writeback under way, if any (a request still waiting is dropped):
            // the commit's own `fsync` follows.
            self.writeback = None;
            guarded(&temp_path, || self.merge_id_runs(&temp_path))?;
            self.build_mode = false;
            self.tables = None;
            let Some(Db::Writer(db)) = self.db.as_mut() else {
                unreachable!("the rebuild database was opened for writing above");
            };
            let indexed_log_bytes = self.indexed_len_bytes;
            guarded(&temp_path, || {
                compact_if_worth_it(db, &temp_path, indexed_log_bytes)
            })?;
            Ok(len_bytes)
        })();
        self.build_mode = false;
        self.writeback = None;
        self.db = None;
        self.tables = None;
        self.sidecar_path = Some(sidecar_path.to_path_buf());
        let len_bytes = match built {
            Ok(len_bytes) => len_bytes,
            Err(error) => {
                let _ = std::fs::remove_file(&temp_path);
                return Err(error);
            }
        };
        if let Err(error) = std::fs::rename(&temp_path, sidecar_path) {
            let _ = std::fs::remove_file(&temp_path);
            return Err(Error::io(sidecar_path, "rename the rebuilt index", error));
        }
        self.db = Some(guarded(sidecar_path, || {
            open_database_read_only(sidecar_path)
        })?);
        self.refresh_tables()?;
        // A last line without its `\n` is read into the overlay, never written to the index.
        self.index_unterminated_line(storage, len_bytes)
    }

    /// Replays the whole log into memory when no sidecar can be used.
    fn replay_unindexed(
        mut self,
        storage: &dyn LogStorage,
        reason: String,
    ) -> Result<(Store, IndexState)> {
        self.db = None;
        self.sidecar_path = None;
        self.catch_up(storage)?;
        Ok((self, IndexState::Unindexed { reason }))
    }

    /// Reads the committed snapshot and state and checks them against the log. `Err(reason)`
    /// means the index must be rebuilt; `Ok(Err)` is never used for I/O on the log, which is
    /// an error of its own.
    fn load_and_check(
        &mut self,
        storage: &dyn LogStorage,
        verify: Verify,
    ) -> Result<Result<(), Doubt>> {
        let path = self.sidecar_path.clone().unwrap_or_default();
        let db = self
            .db
            .as_ref()
            .expect("load_and_check runs only with a database");
        let txn = db.begin_read().map_err(|e| index_error(&path, e))?;
        let meta = match txn.open_table(META) {
            Ok(meta) => meta,
            Err(redb::TableError::TableDoesNotExist(_)) => {
                return Ok(Err(Doubt::stale("no index yet")));
            }
            Err(error) => {
                return Ok(Err(Doubt::damaged(format!(
                    "the meta table is unreadable: {error}"
                ))));
            }
        };
        let get = |key: &str| -> Result<Option<Vec<u8>>> {
            Ok(meta
                .get(key)
                .map_err(|e| index_error(&path, e))?
                .map(|value| value.value().to_vec()))
        };
        let mut expected_schema = SCHEMA_MAGIC.to_vec();
        expected_schema.extend_from_slice(&SCHEMA_VERSION.to_le_bytes());
        match get(META_SCHEMA)? {
            Some(schema) if schema == expected_schema => {}
            Some(schema) if schema.starts_with(SCHEMA_MAGIC) => {
                return Ok(Err(Doubt::stale(SCHEMA_CHANGED_REASON)));
            }
            Some(_) => return Ok(Err(Doubt::damaged("unknown schema tag"))),
            None => return Ok(Err(Doubt::damaged("no schema tag"))),
        }
        let snapshot = match get(META_SNAPSHOT)?.map(|bytes| Snapshot::decode(&bytes)) {
            Some(Ok(snapshot)) => snapshot,
            Some(Err(error)) => return Ok(Err(Doubt::damaged(error.0))),
            None => return Ok(Err(Doubt::damaged("the index has no snapshot"))),
        };
        let (state, counts) = match get(META_STATE)?.map(|bytes| State::decode(&bytes)) {
            Some(Ok(decoded)) => decoded,
            Some(Err(error)) => return Ok(Err(Doubt::damaged(error.0))),
            None => return Ok(Err(Doubt::damaged("the index has no state"))),
        };
        if let Some(reason) = state.inconsistency(snapshot.next_seq, snapshot.indexed_len_bytes) {
            return Ok(Err(Doubt::damaged(format!("inconsistent state: {reason}"))));
        }
        drop(meta);
        // The tables are read in this same transaction, so that they are the ones the snapshot
        // and state just checked describe (another writer may commit at any time), and an open
        // begins one read transaction, not two.
        let checked_txn = txn;

        let identity = storage
            .identity()
            .map_err(|e| Error::io(storage.path(), "stat", e))?;
        if identity.len_bytes < snapshot.indexed_len_bytes {
            return Ok(Err(Doubt::stale(format!(
                "log is shorter ({} bytes) than the indexed prefix ({} bytes)",
                identity.len_bytes, snapshot.indexed_len_bytes
            ))));
        }
        if snapshot.tail_block_start_bytes % HASH_BLOCK_LEN != 0
            || snapshot.tail_block_start_bytes > snapshot.indexed_len_bytes
            || snapshot.indexed_len_bytes - snapshot.tail_block_start_bytes > HASH_BLOCK_LEN
        {
            return Ok(Err(Doubt::damaged("snapshot: tail block out of range")));
        }
        // The first line: a different header means a different session.
        if state.header_offset_bytes != SEQ_NONE {
            let Some(header_end) = state
                .header_offset_bytes
                .checked_add(state.header_len_bytes)
            else {
                return Ok(Err(Doubt::damaged("state: header range overflows")));
            };
            if header_end > snapshot.indexed_len_bytes
                || state.header_len_bytes > crate::limits::LINE_LEN_MAX as u64
            {
                return Ok(Err(Doubt::damaged(
                    "state: header range outside the indexed prefix",
                )));
            }
            let mut header = vec![0; state.header_len_bytes as usize];
            read_exact_at(storage, state.header_offset_bytes, &mut header)
                .map_err(|e| Error::io(storage.path(), "read", e))?;
            if block_hash(&header) != snapshot.first_line_hash {
                return Ok(Err(Doubt::stale(
                    "the log's first line differs from the indexed one (another session or a rewritten header)",
                )));
            }
        }
        // The last, partial block: catches rewrites and truncate-then-append near the end.
        let mut tail =
            vec![0; (snapshot.indexed_len_bytes - snapshot.tail_block_start_bytes) as usize];
        read_exact_at(storage, snapshot.tail_block_start_bytes, &mut tail)
            .map_err(|e| Error::io(storage.path(), "read", e))?;
        if block_hash(&tail) != snapshot.tail_hash {
            return Ok(Err(Doubt::stale(format!(
                "the log's bytes {}..{} differ from the indexed ones (rewritten behind the index's back)",
                snapshot.tail_block_start_bytes, snapshot.indexed_len_bytes
            ))));
        }
        // A committed prefix ends just after a `\n`: a last line without one is never written
        // (it could still change), so anything else is damage.
        let last_byte = match (tail.last(), snapshot.indexed_len_bytes.checked_sub(1)) {
            (Some(byte), _) => Some(*byte),
            (None, Some(at)) => {
                let mut byte = [0];
                read_exact_at(storage, at, &mut byte)
                    .map_err(|e| Error::io(storage.path(), "read", e))?;
                Some(byte[0])
            }
            (None, None) => None,
        };
        if last_byte.is_some_and(|byte| byte != b'\n') {
            return Ok(Err(Doubt::damaged(
                "snapshot: the indexed prefix does not end at a line end",
            )));
        }
        let same_file = identity.device == snapshot.device && identity.inode == snapshot.inode;
        let untouched = identity.modified_ns == snapshot.modified_ns
            && identity.changed_ns == snapshot.changed_ns;
        // Same length as observed but other times: written without growing (a rewrite).
        let rewritten_in_place = identity.len_bytes == snapshot.observed_len_bytes && !untouched;
        let full_check = verify == Verify::Full || !same_file || rewritten_in_place;
        // A full check that passes for a moved or touched file re-records its identity, so
        // that the next open does not hash the whole log again.
        self.identity_outdated = (!same_file || rewritten_in_place) && verify != Verify::Full
            || (verify == Verify::Full && (!same_file || !untouched));
        if full_check && let Err(doubt) = self.verify_blocks(storage, &snapshot)? {
            let why = if verify == Verify::Full {
                "full check"
            } else if !same_file {
                "the log is another file than the indexed one"
            } else {
                "the log was modified without growing"
            };
            return Ok(Err(Doubt {
                reason: format!("{why}: {}", doubt.reason),
                ..doubt
            }));
        }
        // A full check that passed for a moved or touched log re-records its identity, so that
        // the next open does not hash the whole log again.
        self.identity_outdated = full_check && (!same_file || !untouched);
        self.committed = snapshot.clone();
        self.indexed_len_bytes = snapshot.indexed_len_bytes;
        self.next_seq = snapshot.next_seq;
        self.first_line_hash = snapshot.first_line_hash;
        self.hasher = PrefixHasher::resume(snapshot.tail_block_start_bytes, &tail);
        self.state = state;
        self.overlay = Overlay {
            base_seq: self.next_seq,
            base_len_bytes: self.indexed_len_bytes,
            ..Overlay::default()
        };
        self.tables = Some(self.tables_in(checked_txn, counts)?);
        // The tail block matched: a last record that does not describe its line is damage.
        if let Some(reason) = self.last_record_mismatch(storage, &tail)? {
            return Ok(Err(Doubt::damaged(reason)));
        }
        if self.state.header_version < crate::format::CURRENT_VERSION {
            self.legacy_session_id = self.header_session_id(storage)?;
        }
        Ok(Ok(()))
    }

    /// Whether the line `record` names, and the `\n` after it, lie inside the indexed prefix
    /// (a record from a damaged index could name any range); the unterminated last line ends
    /// where the prefix does.
    pub(crate) fn holds_line_of(&self, record: &Record) -> bool {
        record
            .offset_bytes
            .checked_add(u64::from(record.len_bytes))
            .is_some_and(|end| {
                end < self.indexed_len_bytes || (self.unterminated && end == self.indexed_len_bytes)
            })
    }

    /// Why the last record does not describe its line, if it does not: it must lie inside the
    /// indexed prefix, match the line's crc32 and, for an entry whose line names its id, hold
    /// that id. One record, whose line the tail block just read usually holds: a quick open
    /// trusts the index's pages otherwise, and this catches pages that decode but are wrong
    /// where a damaged or misread index is likeliest to show, its last page (and any change
    /// of a page's meaning that forgot the schema version).
    fn last_record_mismatch(
        &self,
        storage: &dyn LogStorage,
        tail: &[u8],
    ) -> Result<Option<String>> {
        /// Longer lines are not read for this check: an open reads what it returns.
        const CHECKED_LEN_MAX: u64 = 1 << 20;
        let Some(seq) = self.next_seq.checked_sub(1) else {
            return Ok(None);
        };
        let record = match self.existing_record(seq) {
            Ok(record) => record,
            Err(Error::Index { reason, .. }) => {
                return Ok(Some(format!("the last record: {reason}")));
            }
            Err(error) => return Err(error),
        };
        let len = u64::from(record.len_bytes);
        if !self.holds_line_of(&record) {
            return Ok(Some(format!(
                "the last record ({seq}) lies outside the indexed prefix"
            )));
        }
        if len > CHECKED_LEN_MAX {
            return Ok(None);
        }
        let tail_start = self.hasher.tail_block_start_bytes();
        let read;
        let line = match record.offset_bytes.checked_sub(tail_start) {
            // Inside the tail block, which ends at the end of the indexed prefix.
            Some(at) => match tail.get(at as usize..(at + len) as usize) {
                Some(line) => line,
                None => return Ok(Some(format!("the last record ({seq}) ends past the tail"))),
            },
            None => {
                let mut bytes = vec![0; len as usize];
                read_exact_at(storage, record.offset_bytes, &mut bytes)
                    .map_err(|e| Error::io(storage.path(), "read", e))?;
                read = bytes;
                &read
            }
        };
        if crate::line_reads::check_crc(storage.path(), &record, line).is_err() {
            return Ok(Some(format!(
                "the last record ({seq}) does not match its line's crc32 at byte {}",
                record.offset_bytes
            )));
        }
        if record.kind.is_some()
            && let Some(legacy_v1) = self.settled_legacy_v1()
            && let Line::Entry(entry) = classify_bytes(line, legacy_v1, false)
            && let Some(id) = entry.id
            && *id != *record.id
        {
            return Ok(Some(format!(
                "the last record ({seq}) names id {:?}, its line {id:?}",
                record.id.as_str()
            )));
        }
        Ok(None)
    }

    /// Re-hashes every full block of the indexed prefix and compares it with the stored hash.
    /// A stored hash that fails its seal, or is missing, is damage; a sound one that differs
    /// means the log changed.
    fn verify_blocks(
        &self,
        storage: &dyn LogStorage,
        snapshot: &Snapshot,
    ) -> Result<Result<(), Doubt>> {
        let path = self.sidecar_path.clone().unwrap_or_default();
        let db = self
            .db
            .as_ref()
            .expect("verify_blocks runs only with a database");
        let txn = db.begin_read().map_err(|e| index_error(&path, e))?;
        let blocks = match txn.open_table(BLOCKS) {
            Ok(blocks) => blocks,
            Err(error) => {
                return Ok(Err(Doubt::damaged(format!(
                    "the block table is unreadable: {error}"
                ))));
            }
        };
        let mut buf = vec![0; HASH_BLOCK_LEN as usize];
        let block_count = snapshot.tail_block_start_bytes / HASH_BLOCK_LEN;
        for index in 0..block_count {
            read_exact_at(storage, index * HASH_BLOCK_LEN, &mut buf)
                .map_err(|e| Error::io(storage.path(), "read", e))?;
            let stored = blocks.get(index).map_err(|e| index_error(&path, e))?;
            let Some(stored) = stored else {
                return Ok(Err(Doubt::damaged(format!("block {index} has no hash"))));
            };
            let hash = match unseal_block(index, stored.value()) {
                Ok(hash) => hash,
                Err(error) => return Ok(Err(Doubt::damaged(error.0))),
            };
            if *hash != block_hash(&buf)[..] {
                return Ok(Err(Doubt::stale(format!(
                    "bytes {}..{} differ from the indexed ones",
                    index * HASH_BLOCK_LEN,
                    (index + 1) * HASH_BLOCK_LEN
                ))));
            }
        }
        Ok(Ok(()))
    }

    /// Empties the index in one transaction, so other openers never see a half-cleared one.
    fn reset(&mut self) -> Result<()> {
        let path = self.sidecar_path.clone().unwrap_or_default();
        self.tables = None;
        self.ensure_writer()?;
        let db = writer(&self.db, &path)?;
        let mut txn = db.begin_write().map_err(|e| index_error(&path, e))?;
        if self.build_mode {
            txn.set_durability(redb::Durability::None)
                .map_err(|e| index_error(&path, e))?;
        }
        let names: Vec<String> = txn
            .list_tables()
            .map_err(|e| index_error(&path, e))?
            .map(|handle| redb::TableHandle::name(&handle).to_string())
            .collect();
        for name in names {
            let definition: TableDefinition<&[u8], &[u8]> = TableDefinition::new(&name);
            txn.delete_table(definition)
                .map_err(|e| index_error(&path, e))?;
        }
        let multimaps: Vec<String> = txn
            .list_multimap_tables()
            .map_err(|e| index_error(&path, e))?
            .map(|handle| redb::MultimapTableHandle::name(&handle).to_string())
            .collect();
        for name in multimaps {
            let definition: redb::MultimapTableDefinition<&[u8], &[u8]> =
                redb::MultimapTableDefinition::new(&name);
            txn.delete_multimap_table(definition)
                .map_err(|e| index_error(&path, e))?;
        }
        let fresh = Store::in_memory(&self.log_path);
        {
            let mut meta = txn.open_table(META).map_err(|e| index_error(&path, e))?;
            let mut schema = SCHEMA_MAGIC.to_vec();
            schema.extend_from_slice(&SCHEMA_VERSION.to_le_bytes());
            meta.insert(META_SCHEMA, schema.as_slice())
                .map_err(|e| index_error(&path, e))?;
            meta.insert(META_SNAPSHOT, fresh.committed.encode().as_slice())
                .map_err(|e| index_error(&path, e))?;
            meta.insert(
                META_STATE,
                fresh.state.encode(StoredCounts::default()).as_slice(),
            )
            .map_err(|e| index_error(&path, e))?;
            for table in [RECORDS, BLOCKS] {
                txn.open_table(table).map_err(|e| index_error(&path, e))?;
            }
            // Each id table starts with its one empty page covering every key.
            for (table, name) in [(IDS, IDS_NAME), (IDS_RECENT, IDS_RECENT_NAME)] {
                let mut table = txn.open_table(table).map_err(|e| index_error(&path, e))?;
                id_table::init(&mut table, name).map_err(|e| index_error(&path, e))?;
            }
            txn.open_table(ID_COLLISIONS)
                .map_err(|e| index_error(&path, e))?;
            txn.open_table(CHILDREN)
                .map_err(|e| index_error(&path, e))?;
            txn.open_table(LABELS).map_err(|e| index_error(&path, e))?;
        }
        txn.commit().map_err(|e| index_error(&path, e))?;
        self.committed = fresh.committed;
        self.state = fresh.state;
        self.overlay = Overlay::default();
        self.hasher = fresh.hasher;
        self.indexed_len_bytes = 0;
        self.unterminated = false;
        self.next_seq = 0;
        self.first_line_hash = [0; 32];
        self.links_cache.borrow_mut().clear();
        // A rebuild starts over from the log: a line that failed against the old index is
        // applied again against the new one.
        self.apply_failure = None;
        self.refresh_tables()
    }

    fn refresh_tables(&mut self) -> Result<()> {
        self.tables = self.read_tables()?;
        Ok(())
    }

    /// The committed tables, in a new read transaction (`None` without a database).
    fn read_tables(&self) -> Result<Option<ReadTables>> {
        let path = self.sidecar_path.clone().unwrap_or_default();
        let Some(db) = &self.db else {
            return Ok(None);
        };
        #[cfg(test)]
        if tests::fail_table_reads() {
            return Err(index_error(&path, "test: reading the tables fails"));
        }
        let txn = db.begin_read().map_err(|e| index_error(&path, e))?;
        let counts = stored_counts(
            &txn.open_table(META).map_err(|e| index_error(&path, e))?,
            &path,
        )?;
        self.tables_in(txn, counts).map(Some)
    }

    /// The committed tables of `txn`, whose state records `counts` for the small tables.
    fn tables_in(&self, txn: redb::ReadTransaction, counts: StoredCounts) -> Result<ReadTables> {
        let path = self.sidecar_path.clone().unwrap_or_default();
        Ok(ReadTables {
            counts,
            loaded_children: OnceCell::new(),
            loaded_labels: OnceCell::new(),
            loaded_id_collisions: OnceCell::new(),
            records: txn.open_table(RECORDS).map_err(|e| index_error(&path, e))?,
            ids: txn.open_table(IDS).map_err(|e| index_error(&path, e))?,
            ids_recent: txn
                .open_table(IDS_RECENT)
                .map_err(|e| index_error(&path, e))?,
            id_collisions: txn
                .open_table(ID_COLLISIONS)
                .map_err(|e| index_error(&path, e))?,
            children: txn
                .open_table(CHILDREN)
                .map_err(|e| index_error(&path, e))?,
            labels: txn.open_table(LABELS).map_err(|e| index_error(&path, e))?,
        })
    }

    /// Ends a rebuild: writes the union of the id runs into `ids` in key order (a key in
    /// several runs takes its largest seq, the latest line with it), in one durable commit.
    fn merge_id_runs(&mut self, path: &Path) -> Result<()> {
        self.tables = None;
        let runs = std::mem::take(&mut self.id_runs);
        let db = writer(&self.db, path)?;
        let txn = db.begin_write().map_err(|e| index_error(path, e))?;
        {
            // The writer writes the whole table: it starts from none (the reset left the
            // empty page, which the writer's first page would replace anyway).
            txn.delete_table(IDS).map_err(|e| index_error(path, e))?;
            let mut ids = txn.open_table(IDS).map_err(|e| index_error(path, e))?;
            let mut writer = id_table::InOrderWriter::new(IDS_NAME);
            for entry in merge_sorted_runs(&runs) {
                writer
                    .push(&mut ids, entry)
                    .map_err(|e| index_error(path, e))?;
            }
            writer.finish(&mut ids).map_err(|e| index_error(path, e))?;
        }
        drop(runs);
        txn.commit().map_err(|e| index_error(path, e))?;
        self.refresh_tables()
    }

    /// Indexes every line after the indexed prefix: the complete lines, flushing as the overlay
    /// grows, then the last line if it has no `\n` yet but is complete (format-spec/log.md §1).
    /// Returns the log's length as seen before the scan (lines appended during the scan may
    /// or may not be included; they are caught by the next call).
    pub fn catch_up(&mut self, storage: &dyn LogStorage) -> Result<u64> {
        let len_bytes = self.catch_up_lines(storage)?;
        self.index_unterminated_line(storage, len_bytes)?;
        Ok(len_bytes)
    }

    /// [`Store::catch_up`] but for a last line without its `\n`, which
    /// [`Store::index_unterminated_line`] reads; in between the overlay may be written (it is
    /// not written while it holds such a line).
    pub(crate) fn catch_up_lines(&mut self, storage: &dyn LogStorage) -> Result<u64> {
        self.check_applicable()?;
        let mut reloads = 0;
        while self.unterminated && !self.end_unterminated_line(storage)? {
            if reloads == RELOADS_MAX {
                return Err(Error::LogChanged {
                    path: storage.path().to_path_buf(),
                    offset_bytes: self.indexed_len_bytes,
                    reason: "the last line kept changing while it was read".into(),
                });
            }
            self.reload(storage)?;
            reloads += 1;
        }
        if self.state.header_version < crate::format::CURRENT_VERSION
            && self.legacy_session_id.is_empty()
            && self.indexed_len_bytes > 0
        {
            self.legacy_session_id = self.header_session_id(storage)?;
        }
        let start = self.indexed_len_bytes;
        let len_bytes = storage
            .len_bytes()
            .map_err(|e| Error::io(storage.path(), "stat", e))?;
        if len_bytes <= start {
            return Ok(len_bytes);
        }
        let identity = storage
            .identity()
            .map_err(|e| Error::io(storage.path(), "stat", e))?;
        if identity.len_bytes <= start {
            return Ok(identity.len_bytes);
        }
        let mut buf = std::mem::take(&mut self.scan_buf);
        let scanned = (|| {
            if identity.len_bytes - start >= self.parallel.min_bytes {
                if self.settled_legacy_v1().is_none() {
                    // The first line decides how the others are classified: read it alone.
                    let prefix_end = identity
                        .len_bytes
                        .min(start.saturating_add(self.parallel.chunk_len as u64));
                    scan_lines(
                        storage,
                        start,
                        prefix_end,
                        &mut CatchUp {
                            store: self,
                            identity,
                        },
                        &mut buf,
                    )?;
                }
                let tuning = self.parallel;
                catch_up_parallel(self, storage, identity.len_bytes, tuning, |store| {
                    store.flush_when_due(identity)
                })?;
            }
            // What is left: short catch-ups, the last partial line, lines too long to read in
            // one chunk, and everything when no thread could be started or the first
            // chunk held no non-blank line.
            scan_lines(
                storage,
                self.indexed_len_bytes,
                identity.len_bytes,
                &mut CatchUp {
                    store: self,
                    identity,
                },
                &mut buf,
            )
        })();
        self.scan_buf = buf;
        scanned.map(|_| identity.len_bytes)
    }

    /// While the last line indexed has no `\n`: reads the byte after it. Its `\n` ends it
    /// (then `true`, as when nothing follows yet); any other byte means a writer glued bytes
    /// onto it, so the line indexed is not the log's line (then `false`).
    fn end_unterminated_line(&mut self, storage: &dyn LogStorage) -> Result<bool> {
        let len_bytes = storage
            .len_bytes()
            .map_err(|e| Error::io(storage.path(), "stat", e))?;
        if len_bytes <= self.indexed_len_bytes {
            return Ok(true);
        }
        let mut next = [0];
        read_exact_at(storage, self.indexed_len_bytes, &mut next)
            .map_err(|e| Error::io(storage.path(), "read", e))?;
        if next != *b"\n" {
            return Ok(false);
        }
        self.hasher.update(&next);
        self.indexed_len_bytes += 1;
        self.unterminated = false;
        Ok(true)
    }

    /// Drops what this store derived from a last line that changed after it was indexed
    /// without its `\n`: reopens the index as a fresh open would (the committed index never
    /// holds such a line, so only what the overlay held is read again, from the log), or, with
    /// no sidecar, replays the log.
    fn reload(&mut self, storage: &dyn LogStorage) -> Result<()> {
        let tuning = self.parallel;
        // This store stays as it was if the reload fails (its next catch-up tries again).
        let store = match self.sidecar_path.clone() {
            Some(sidecar) => Store::open(storage, &sidecar, Verify::Quick, false)?.0,
            None => {
                let mut store = Store::in_memory(storage.path());
                store.parallel = tuning;
                store.catch_up(storage)?;
                store
            }
        };
        *self = store;
        self.parallel = tuning;
        self.reloaded = true;
        Ok(())
    }

    /// Whether a catch-up reloaded this store since the last call (see `reloaded`).
    pub(crate) fn take_reloaded(&mut self) -> bool {
        std::mem::take(&mut self.reloaded)
    }

    /// Indexes the bytes `[indexed_len_bytes, len_bytes)`, what follows the complete lines a
    /// catch-up read, as the log's last line when they are one without its `\n`
    /// ([`is_complete_last_line`]); otherwise they are a torn tail, left for a later catch-up.
    pub(crate) fn index_unterminated_line(
        &mut self,
        storage: &dyn LogStorage,
        len_bytes: u64,
    ) -> Result<()> {
        let start = self.indexed_len_bytes;
        if self.unterminated
            || len_bytes <= start
            || len_bytes - start > crate::limits::LINE_LEN_MAX as u64
        {
            return Ok(());
        }
        self.check_applicable()?;
        let mut bytes = vec![0; (len_bytes - start) as usize];
        read_exact_at(storage, start, &mut bytes)
            .map_err(|e| Error::io(storage.path(), "read", e))?;
        if !is_complete_last_line(&bytes) {
            return Ok(());
        }
        self.apply_unterminated_line(start, &bytes)?;
        self.hasher.update(&bytes);
        Ok(())
    }

    /// Indexes lines this handle has just written, from memory instead of reading them back.
    /// The caller guarantees that the log held exactly `indexed_len_bytes` before its write
    /// and exactly that plus `text` after it (no other writer's bytes around them), and that
    /// `text` is whole lines, each ending in `\n`; after a last line indexed without its `\n`
    /// (`unterminated`), `text` starts with that `\n`. `entries` are the field spans of the
    /// lines from `entries_start_bytes` on, as `NewEntry::encode_into` wrote them: those lines
    /// are indexed without a scan (`classify_written`), any before them (a header) are
    /// classified.
    pub fn apply_written(
        &mut self,
        text: &str,
        entries_start_bytes: usize,
        entries: &[FieldSpans],
    ) -> Result<()> {
        self.check_applicable()?;
        let start = self.indexed_len_bytes;
        let bytes = text.as_bytes();
        debug_assert!(bytes.ends_with(b"\n"), "appends end with a newline");
        let mut entries = entries.iter();
        let mut line_start = 0;
        let mut line_ends = memchr::memchr_iter(b'\n', bytes);
        if self.unterminated {
            // The text starts with the `\n` that ends the last line, indexed without it.
            debug_assert_eq!(
                bytes.first(),
                Some(&b'\n'),
                "an unterminated line is ended first"
            );
            line_ends.next();
            self.indexed_len_bytes += 1;
            self.unterminated = false;
            line_start = 1;
        }
        for line_end in line_ends {
            let line = &text[line_start..line_end];
            let offset_bytes = start + line_start as u64;
            let len_bytes = line.len() as u64;
            let crc32 = crc32fast::hash(line.as_bytes());
            let spans = (line_start >= entries_start_bytes)
                .then(|| entries.next())
                .flatten();
            let fits = line.len() <= crate::limits::LINE_LEN_MAX;
            match (spans, self.settled_legacy_v1()) {
                (Some(spans), Some(legacy_v1)) if fits => {
                    let classified = crate::format::line::classify_written(line, spans, legacy_v1);
                    debug_assert_eq!(
                        classified,
                        crate::format::line::classify(line, legacy_v1, false),
                        "classify_written answers as classify"
                    );
                    self.apply_classified_ahead(offset_bytes, len_bytes, crc32, classified)?;
                }
                _ => {
                    let kept = fits.then_some(line.as_bytes());
                    self.apply_line(offset_bytes, len_bytes, crc32, kept)?;
                }
            }
            line_start = line_end + 1;
        }
        self.hasher.update(&bytes[..line_start]);
        Ok(())
    }

    /// True when the overlay is big enough to be written out. A rebuild flushes as often as
    /// appends do: its commits are not durable and its ids go to runs (`id_index::push_run`),
    /// so a flush touches few pages, and an overlay of 32,768 records keeps its id map in the
    /// core's cache. Flushes of 2^18 records, once needed when each one merged its ids into
    /// the id table, made 1M-entry rebuilds ~7% slower than these with merged runs (medians
    /// of 8 alternating runs: 1.445 against 1.350 s) for ~25 MB more memory.
    fn flush_due(&self) -> bool {
        #[cfg(test)]
        if self.build_mode
            && let Some(entries_max) = tests::rebuild_flush_entries_max()
        {
            return self.overlay.records.len() >= entries_max;
        }
        self.overlay.records.len() >= FLUSH_ENTRIES_MAX
            || self.indexed_len_bytes - self.overlay.base_len_bytes >= FLUSH_BYTES_MAX
    }

    /// Writes the overlay to redb if it lags the log by at least `lag`.
    pub fn flush_if(&mut self, storage: &dyn LogStorage, lag: Lag) -> Result<()> {
        let pending_records = self.overlay.records.len();
        let pending_bytes = self.indexed_len_bytes - self.committed.indexed_len_bytes;
        let big_enough = match lag {
            Lag::Any => pending_bytes > 0,
            Lag::Reader => {
                pending_records >= READER_FLUSH_RECORDS_MIN
                    || pending_bytes >= READER_FLUSH_BYTES_MIN
            }
            Lag::Due => self.flush_due(),
        };
        if self.db.is_some()
            && self.write_failure.is_none()
            && ((pending_bytes > 0 && big_enough) || self.identity_outdated)
        {
            match self.flush(storage) {
                // The log is the truth and already holds every line: an index that cannot be
                // written must not fail the append that triggered the flush. This handle keeps
                // answering from its overlay; the next open rebuilds the index.
                Err(Error::Index { reason, .. }) => self.write_failure = Some(reason),
                other => other?,
            }
        }
        Ok(())
    }

    /// Writes the overlay to redb in one transaction. If another handle changed the index
    /// since this one last looked, nothing is written: this handle keeps answering from its
    /// overlay, and the other handle's flush already covers the log it saw.
    pub fn flush(&mut self, storage: &dyn LogStorage) -> Result<()> {
        let Some(sidecar) = self.sidecar_path.clone() else {
            return Ok(());
        };
        let identity = storage
            .identity()
            .map_err(|e| Error::io(storage.path(), "stat", e))?;
        guarded(&sidecar, || self.write_overlay(&sidecar, identity))
    }

    /// Writes the overlay's records from `write_from` on into record pages, extending the last
    /// stored page while it has room (format-spec/index.md).
    fn write_record_pages(
        &self,
        records: &mut redb::Table<'_, u64, &'static [u8]>,
        write_from: u64,
        path: &Path,
    ) -> Result<()> {
        let skipped = (write_from - self.overlay.base_seq) as usize;
        // Stored pages are rewritten only when records are added, after the last one's records
        // are checked: rewriting a page damaged on disk would give the damage a valid redb
        // checksum, which a full check could then no longer see.
        if skipped == self.overlay.records.len() {
            return Ok(());
        }
        let mut page = PageBuilder::new(write_from);
        let last = records
            .last()
            .map_err(|e| index_error(path, e))?
            .map(|(key, value)| {
                let first = key.value();
                let records = PageView::new(first, value.value())?.decode_all()?;
                let mut builder = PageBuilder::new(first);
                for (index, record) in records.iter().enumerate() {
                    // Wrapping, as the page's own seqs do: a damaged key near u64::MAX is
                    // refused below (its records do not end at `write_from`), not an overflow.
                    let seq = first.wrapping_add(index as u64);
                    if !record.links_point_back(seq) {
                        return Err(DecodeError(format!("record {seq} links forward")));
                    }
                    builder.push(record);
                }
                Ok(builder)
            })
            .transpose()
            .map_err(|error| index_error(path, error.0))?;
        match last {
            Some(builder)
                if builder.first_seq().checked_add(builder.len() as u64) == Some(write_from) =>
            {
                page = builder;
            }
            None if write_from == 0 => {}
            _ => {
                return Err(index_error(
                    path,
                    format!("the last record page does not end at record {write_from}"),
                ));
            }
        }
        for record in &self.overlay.records[skipped..] {
            if !page.try_push(record) {
                let first = page.first_seq();
                records
                    .insert(first, page.finish().as_slice())
                    .map_err(|e| index_error(path, e))?;
                page.push(record);
            }
        }
        if !page.is_empty() {
            let first = page.first_seq();
            records
                .insert(first, page.finish().as_slice())
                .map_err(|e| index_error(path, e))?;
        }
        Ok(())
    }

    fn write_overlay(&mut self, path: &Path, identity: FileIdentity) -> Result<()> {
        if self.unterminated {
            // The last line has no `\n` yet and may still change: nothing is written until
            // it has one (or a reload drops it), so the committed index ends at a `\n`.
            return Ok(());
        }
        self.check_applicable()?;
        self.ensure_writer()?;
        let db = writer(&self.db, path)?;
        // Kept until the snapshot check passes: if another handle changed the index, this
        // handle goes on reading the state its overlay extends (a newer state would overlap
        // the overlay and list its records twice).
        let tables = self.tables.take();
        // Every early return below gives the tables back: without them the handle would answer
        // as if the index were empty ("record N is missing"; found by the soak test, where a
        // write transaction failed to begin while other processes wrote).
        let begun = (|| {
            let mut txn = db.begin_write().map_err(|e| index_error(path, e))?;
            if self.build_mode {
                txn.set_durability(redb::Durability::None)
                    .map_err(|e| index_error(path, e))?;
            }
            let on_disk = {
                let meta = txn.open_table(META).map_err(|e| index_error(path, e))?;
                let value = meta.get(META_SNAPSHOT).map_err(|e| index_error(path, e))?;
                value.map(|value| Snapshot::decode(value.value()))
            };
            Ok((txn, on_disk))
        })();
        let (txn, on_disk) = match begun {
            Ok(begun) => begun,
            Err(error) => {
                self.tables = tables;
                return Err(error);
            }
        };
        // Where this flush starts writing records: after what the index already holds.
        let write_from = match on_disk {
            Some(Ok(disk)) if disk == self.committed => self.overlay.base_seq,
            // Another handle (a reader that caught up, say) indexed part of what this overlay
            // holds. The index of a log prefix does not depend on who built it, so the rest
            // is written after it; without this, a long-lived writer would never flush again.
            Some(Ok(disk))
                if disk.first_line_hash == self.first_line_hash
                    && disk.next_seq >= self.overlay.base_seq
                    && disk.next_seq <= self.next_seq
                    && disk.indexed_len_bytes >= self.overlay.base_len_bytes
                    && disk.indexed_len_bytes <= self.indexed_len_bytes =>
            {
                disk.next_seq
            }
            _ => {
                self.tables = tables;
                txn.abort().map_err(|e| index_error(path, e))?;
                return Ok(());
            }
        };
        // A rebuild writes each flush's ids as a run, merged once at the end: inserting random
        // keys among all the ids so far would rewrite most id pages at every flush.
        let write_run = self.build_mode;
        let snapshot = Snapshot {
            indexed_len_bytes: self.indexed_len_bytes,
            next_seq: self.next_seq,
            device: identity.device,
            inode: identity.inode,
            modified_ns: identity.modified_ns,
            changed_ns: identity.changed_ns,
            observed_len_bytes: identity.len_bytes.max(self.indexed_len_bytes),
            first_line_hash: self.first_line_hash,
            tail_block_start_bytes: self.hasher.tail_block_start_bytes(),
            tail_hash: self.hasher.tail_hash(),
        };
        // The tables this handle reads stay open until the commit succeeds: if anything fails
        // (a damaged page met while merging ids, a full disk), the handle goes on answering
        // from them and its overlay.
        let written = (|| -> Result<Vec<(u64, u64)>> {
            let mut new_run = Vec::new();
            {
                let mut records = txn.open_table(RECORDS).map_err(|e| index_error(path, e))?;
                self.write_record_pages(&mut records, write_from, path)?;
                let mut new_ids: Vec<(u64, u64)> = self
                    .overlay
                    .ids
                    .iter()
                    .filter(|(_, seq)| **seq >= write_from)
                    .map(|(key, seq)| (*key, *seq))
                    .collect();
                new_ids.sort_unstable();
                if write_run {
                    new_run = new_ids;
                } else {
                    // New ids spread over the key space (pi's, or another writer's caught up)
                    // go to the small `ids-recent`, which is drained into `ids` now and then:
                    // merging them into `ids` rewrote most of its pages at every flush once the
                    // log was long (format-spec/index.md, "Ids"). A narrow range goes to `ids`.
                    let pages = |table| -> Result<u64> {
                        let table = txn.open_table(table).map_err(|e| index_error(path, e))?;
                        table.len().map_err(|e| index_error(path, e))
                    };
                    // A flush of appends files ids from one reserved run: a narrow key range
                    // that `ids` holds a page or two of, filed there directly (unless
                    // `ids-recent` holds a key in it, which would shadow the new entry).
                    let narrow = match (new_ids.first(), new_ids.last()) {
                        (Some(&(first, _)), Some(&(last, _))) => {
                            last - first < 2 * RESERVED_IDS_LEN && {
                                let recent = txn
                                    .open_table(IDS_RECENT)
                                    .map_err(|e| index_error(path, e))?;
                                !id_table::holds_key_in(&recent, IDS_RECENT_NAME, first..=last)
                                    .map_err(|e| index_error(path, e))?
                            }
                        }
                        _ => false,
                    };
                    if narrow {
                        let mut ids = txn.open_table(IDS).map_err(|e| index_error(path, e))?;
                        id_table::merge_into(&mut ids, IDS_NAME, &new_ids, write_from)
                    } else if id_table::drain_due(pages(IDS_RECENT)?, new_ids.len(), pages(IDS)?) {
                        id_table::drain(&txn, &new_ids, write_from, write_from)
                    } else {
                        let mut recent = txn
                            .open_table(IDS_RECENT)
                            .map_err(|e| index_error(path, e))?;
                        id_table::merge_into(&mut recent, IDS_RECENT_NAME, &new_ids, write_from)
                    }
                    .map_err(|e| index_error(path, e))?;
                }
                // The small tables' counts move from those of the state on disk (whoever wrote
                // it), by what this flush adds or removes (`small_tables.rs`).
                let disk_counts = stored_counts(
                    &txn.open_table(META).map_err(|e| index_error(path, e))?,
                    path,
                )?;
                let mut small =
                    SmallWriter::open(&txn, disk_counts).map_err(|e| index_error(path, e))?;
                for (id, seq) in &self.overlay.id_collisions {
                    if *seq >= write_from {
                        small
                            .add_id_collision(id, *seq)
                            .map_err(|e| index_error(path, e))?;
                    }
                }
                let mut pairs: Vec<(u64, u64)> = self
                    .overlay
                    .children
                    .iter()
                    .flat_map(|(parent, kids)| kids.iter().map(move |kid| (*parent, *kid)))
                    .filter(|(_, kid)| *kid >= write_from)
                    .collect();
                pairs.sort_unstable();
                for (parent, child) in pairs {
                    small
                        .add_child(parent, child)
                        .map_err(|e| index_error(path, e))?;
                }
                for (target, value) in &self.overlay.labels {
                    small
                        .set_label(target, value.as_ref())
                        .map_err(|e| index_error(path, e))?;
                }
                let counts = small.counts;
                drop(small);
                let mut blocks = txn.open_table(BLOCKS).map_err(|e| index_error(path, e))?;
                for (index, hash) in self.hasher.finished() {
                    blocks
                        .insert(*index, seal_block(*index, hash).as_slice())
                        .map_err(|e| index_error(path, e))?;
                }
                let mut meta = txn.open_table(META).map_err(|e| index_error(path, e))?;
                meta.insert(META_SNAPSHOT, snapshot.encode().as_slice())
                    .map_err(|e| index_error(path, e))?;
                meta.insert(META_STATE, self.state.encode(counts).as_slice())
                    .map_err(|e| index_error(path, e))?;
            }
            txn.commit().map_err(|e| index_error(path, e))?;
            Ok(new_run)
        })();
        let new_run = match written {
            Ok(new_run) => new_run,
            Err(error) => {
                self.tables = tables;
                return Err(error);
            }
        };
        // The committed tables are read before the overlay is let go: without them this handle
        // would answer as if the index were empty (and every id looked free). If they cannot be
        // read, it keeps the state before the flush, whose answers are still right; its next
        // flush, if any, finds the index moved on and writes nothing.
        let new_tables = match self.read_tables() {
            Ok(new_tables) => new_tables,
            Err(error) => {
                self.tables = tables;
                return Err(error);
            }
        };
        drop(tables);
        if write_run {
            crate::format::id_index::push_run(&mut self.id_runs, new_run);
        }
        if let Some(writeback) = &self.writeback {
            writeback.request();
        }
        self.hasher.take_finished();
        self.committed = snapshot;
        self.identity_outdated = false;
        // The next overlay keeps this one's record and id buffers, emptied: freeing them at
        // every flush and faulting them back in as the next records arrive (a 4 MB record
        // buffer at 32,768 appends, ~30 MB in a rebuild) cost more than the records' own work.
        // A reload (`load`) starts from empty buffers.
        let mut records = std::mem::take(&mut self.overlay.records);
        records.clear();
        let mut ids = std::mem::take(&mut self.overlay.ids);
        ids.clear();
        self.overlay = Overlay {
            base_seq: self.next_seq,
            base_len_bytes: self.indexed_len_bytes,
            records,
            ids,
            ..Overlay::default()
        };
        self.tables = new_tables;
        Ok(())
    }

    fn header_session_id(&self, storage: &dyn LogStorage) -> Result<String> {
        if !self.state.first_line_is_header() {
            return Ok(String::new());
        }
        let mut header = vec![0; self.state.header_len_bytes as usize];
        read_exact_at(storage, self.state.header_offset_bytes, &mut header)
            .map_err(|e| Error::io(storage.path(), "read", e))?;
        let text = String::from_utf8_lossy(&header);
        Ok(match crate::format::line::classify(&text, false, true) {
            crate::format::line::Line::Header(header) => header.id.into_owned(),
            _ => String::new(),
        })
    }

    // ---- reads: overlay first, then the committed tables ----

    pub fn record(&self, seq: u64) -> Result<Option<Record>> {
        self.guard(|| self.record_unguarded(seq))
    }

    /// Whether the record of `seq` (which must exist) has the id `id`, without decoding the
    /// rest of it.
    fn record_has_id(&self, seq: u64, id: &str) -> Result<bool> {
        if seq >= self.overlay.base_seq {
            return match self
                .overlay
                .records
                .get((seq - self.overlay.base_seq) as usize)
            {
                Some(record) => Ok(record.id == id),
                None => Err(self.read_error(format!("record {seq} is missing"))),
            };
        }
        let Some((first, value)) = self.stored_page(seq)? else {
            return Err(self.read_error(format!("record {seq} is missing")));
        };
        let page = PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
        let record = page
            .get(seq)
            .ok_or_else(|| self.read_error(format!("record {seq} is missing")))?;
        Ok(record
            .id()
            .map_err(|error| self.read_error(error.0))?
            .as_str()
            == id)
    }

    fn record_unguarded(&self, seq: u64) -> Result<Option<Record>> {
        if seq >= self.overlay.base_seq {
            return Ok(self
                .overlay
                .records
                .get((seq - self.overlay.base_seq) as usize)
                .cloned());
        }
        // Every seq below the overlay's is in a stored page: one that is not was lost to
        // damage, never absent.
        let missing = || self.read_error(format!("record {seq} is missing"));
        let Some((first, value)) = self.stored_page(seq)? else {
            return Err(missing());
        };
        let page = PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
        page.get(seq)
            .ok_or_else(missing)?
            .decode()
            .map(Some)
            .map_err(|error| self.read_error(error.0))
    }

    /// The stored page that holds `seq` if any is: the one with the greatest first seq not
    /// above it (the caller checks that it reaches `seq`).
    fn stored_page(&self, seq: u64) -> Result<Option<(u64, StoredPage<'_>)>> {
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        match tables
            .records
            .range(..=seq)
            .map_err(|e| self.read_error(e))?
            .next_back()
        {
            None => Ok(None),
            Some(item) => {
                let (key, value) = item.map_err(|e| self.read_error(e))?;
                Ok(Some((key.value(), value)))
            }
        }
    }

    /// The record of `seq`, which the caller got from the index itself: a missing one means
    /// the index is inconsistent.
    pub fn existing_record(&self, seq: u64) -> Result<Record> {
        self.record(seq)?
            .ok_or_else(|| self.read_error(format!("record {seq} is missing")))
    }

    /// Records from `seq` up through its ancestors, nearest first, ending at a root or after
    /// `stop_seq`.
    pub fn ancestors(&self, seq: u64, stop_seq: u64) -> Result<Vec<(u64, Record)>> {
        let mut out = Vec::new();
        self.guard(|| {
            self.walk_up(seq, stop_seq, |seq, hop| {
                out.push((
                    seq,
                    match hop {
                        Hop::Pending(record) => record.clone(),
                        Hop::Stored(record) => {
                            record.decode().map_err(|error| self.read_error(error.0))?
                        }
                    },
                ));
                Ok(())
            })
        })?;
        Ok(out)
    }

    /// The ids of `seq` and its ancestors, nearest first: [`Store::ancestors`] without
    /// decoding whole records (the leaf-to-root walk of `path_ids`).
    pub fn ancestor_ids(&self, seq: u64) -> Result<crate::tree::PathIds> {
        let mut out = crate::tree::PathIds::default();
        self.guard(|| {
            self.walk_up(seq, SEQ_NONE, |_, hop| {
                if out.is_empty() {
                    // The depth says how many ids follow: one allocation instead of a doubling
                    // series (a damaged depth is bounded by the number of records).
                    out = crate::tree::PathIds::with_capacity(
                        hop.depth().saturating_add(1).min(self.next_seq) as usize,
                    );
                }
                match &hop {
                    Hop::Pending(record) => out.push_toward_root(&record.id),
                    Hop::Stored(record) => out.push_toward_root(
                        record
                            .id()
                            .map_err(|error| self.read_error(error.0))?
                            .as_str(),
                    ),
                }
                Ok(())
            })
        })?;
        Ok(out)
    }

    /// Calls `visit` with the record of `seq` and of each ancestor, nearest first, ending at a
    /// root or after `stop_seq`. A linear run of the tree is usually a run of consecutive
    /// lines, so most hops stay inside the page already read: one B-tree lookup serves up to
    /// `PAGE_RECORDS_MAX` hops. Parents precede children, so a parent link that does not go back
    /// (a damaged index) is an error rather than a walk without end.
    fn walk_up(
        &self,
        seq: u64,
        stop_seq: u64,
        mut visit: impl FnMut(u64, Hop<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut wanted = seq;
        let mut pages = None;
        let mut skipped = 0;
        let mut fresh_range = false;
        let missing = |seq: u64| self.read_error(format!("record {seq} is missing"));
        let step = |wanted: u64, parent: u64| -> Result<Option<u64>> {
            if wanted == stop_seq || parent == SEQ_NONE {
                Ok(None)
            } else if parent >= wanted {
                Err(self.read_error(format!("record {wanted} names a later parent {parent}")))
            } else {
                Ok(Some(parent))
            }
        };
        loop {
            if wanted >= self.overlay.base_seq {
                let record = self
                    .overlay
                    .records
                    .get((wanted - self.overlay.base_seq) as usize)
                    .ok_or_else(|| missing(wanted))?;
                visit(wanted, Hop::Pending(record))?;
                match step(wanted, record.parent_seq)? {
                    Some(parent) => wanted = parent,
                    None => return Ok(()),
                }
                continue;
            }
            // Most walks step back page by page: the reverse range goes on from the page it
            // read last, and is restarted only when the walk jumps further back.
            let (first, value) = loop {
                let Some(range) = pages.as_mut() else {
                    let Some(tables) = &self.tables else {
                        return Err(missing(wanted));
                    };
                    pages = Some(
                        tables
                            .records
                            .range(..=wanted)
                            .map_err(|e| self.read_error(e))?,
                    );
                    skipped = 0;
                    fresh_range = true;
                    continue;
                };
                let (key, value) = range
                    .next_back()
                    .ok_or_else(|| missing(wanted))?
                    .map_err(|e| self.read_error(e))?;
                // A range just started at `wanted` hands out no key above it, unless redb's
                // B-tree is damaged: restarting it would loop forever.
                let first_of_range = std::mem::replace(&mut fresh_range, false);
                if key.value() <= wanted {
                    break (key.value(), value);
                }
                if first_of_range {
                    return Err(self.read_error(format!(
                        "the records table answers page {} for record {wanted}",
                        key.value()
                    )));
                }
                skipped += 1;
                if skipped > PAGES_SKIPPED_MAX {
                    pages = None;
                }
            };
            let page =
                PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
            loop {
                let record = page.get(wanted).ok_or_else(|| missing(wanted))?;
                let parent = record.parent_seq();
                visit(wanted, Hop::Stored(record))?;
                match step(wanted, parent)? {
                    Some(next) => wanted = next,
                    None => return Ok(()),
                }
                if wanted < first {
                    break;
                }
            }
        }
    }

    /// The tree fields of `seq`, which the caller got from the index itself.
    pub fn links(&self, seq: u64) -> Result<Links> {
        if seq >= self.overlay.base_seq {
            return match self
                .overlay
                .records
                .get((seq - self.overlay.base_seq) as usize)
            {
                Some(record) => Ok(Links::from(record)),
                None => Err(self.read_error(format!("record {seq} is missing"))),
            };
        }
        if let Some(links) = self.links_cache.borrow().get(&seq) {
            return Ok(*links);
        }
        let links = Links::from(&self.existing_record(seq)?);
        let mut cache = self.links_cache.borrow_mut();
        if cache.len() >= LINKS_CACHE_LEN_MAX {
            cache.clear();
        }
        cache.insert(seq, links);
        Ok(links)
    }

    pub fn seq_of(&self, id: &str) -> Result<Option<u64>> {
        self.guard(|| self.seq_of_unguarded(id))
    }

    fn seq_of_unguarded(&self, id: &str) -> Result<Option<u64>> {
        let key = id_key(id);
        let owner = self.id_owner(key)?;
        if is_exact_key(key) {
            return Ok(owner);
        }
        // A hashed key is held by the first id filed under it: another id with the same key is
        // among the collisions.
        let Some(owner) = owner else {
            return Ok(None);
        };
        if self.record_has_id(owner, id)? {
            return Ok(Some(owner));
        }
        if let Some(seq) = self.overlay.id_collisions.get(id) {
            return Ok(Some(*seq));
        }
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        Ok(self.stored_id_collisions(tables)?.get(id).copied())
    }

    /// A new 8-hex entry id that no indexed line holds and `taken` does not refuse, or `None`
    /// when [`RESERVE_TRIES_MAX`] runs were used up (a log dense with ids: the caller then
    /// draws random ids and looks each one up). Ids come in increasing order from a run of
    /// [`RESERVED_IDS_LEN`] values at a random start, skipping the keys the tables file in it
    /// (read once for the whole run, a few range reads per table) and those in the overlay,
    /// so that an append looks its new id up in memory only: two redb lookups per id were a
    /// sixth of an append.
    pub fn reserved_entry_id(&mut self, taken: impl Fn(&str) -> bool) -> Result<Option<String>> {
        debug_assert!(
            self.id_runs.is_empty(),
            "id runs exist only inside a rebuild, which never appends"
        );
        if self.overlay.reserve_failed {
            return Ok(None);
        }
        for tries in 0.. {
            let overlay = &mut self.overlay;
            for key in overlay.reserved_id_keys.by_ref() {
                let held = &mut overlay.reserved_held_keys;
                while held.last().is_some_and(|held_key| *held_key < key) {
                    held.pop();
                }
                if held.last() == Some(&key) {
                    continue;
                }
                // Reserved runs end at `ffffffff` at most (below): every key is a hex id's.
                let Ok(value) = u32::try_from(key) else {
                    continue;
                };
                let id = crate::format::id_index::hex8_id(value);
                if !overlay.ids.contains_key(&key) && !taken(&id) {
                    return Ok(Some(id));
                }
            }
            if tries == RESERVE_TRIES_MAX {
                self.overlay.reserve_failed = true;
                break;
            }
            let run_len = RESERVED_IDS_LEN;
            #[cfg(test)]
            let run_len = tests::forced_reserved_ids_len().unwrap_or(run_len);
            // Any start from 0 to 2^32 - run_len: the run ends at `ffffffff` at most.
            let start = crate::format::ids::random_u64() % ((1 << 32) - run_len + 1);
            #[cfg(test)]
            let start = tests::forced_reserved_id_start().unwrap_or(start);
            let keys = start..start + run_len;
            let mut held = self.guard(|| self.tables_keys_in(keys.start..=keys.end - 1))?;
            held.sort_unstable_by(|a, b| b.cmp(a));
            self.overlay.reserved_id_keys = keys;
            self.overlay.reserved_held_keys = held;
        }
        Ok(None)
    }

    /// The keys the tables under the overlay (`ids-recent`, `ids`) file in `keys`.
    fn tables_keys_in(&self, keys: std::ops::RangeInclusive<u64>) -> Result<Vec<u64>> {
        let Some(tables) = &self.tables else {
            return Ok(Vec::new());
        };
        let mut found = id_table::keys_in(&tables.ids_recent, IDS_RECENT_NAME, keys.clone())
            .map_err(|e| self.read_error(e))?;
        found.extend(
            id_table::keys_in(&tables.ids, IDS_NAME, keys).map_err(|e| self.read_error(e))?,
        );
        Ok(found)
    }

    /// The latest seq filed under `key`: the overlay, then the runs of a rebuild newest
    /// first, then `ids-recent`, then `ids`.
    fn id_owner(&self, key: u64) -> Result<Option<u64>> {
        if let Some(seq) = self.overlay.ids.get(&key) {
            return Ok(Some(*seq));
        }
        for run in self.id_runs.iter().rev() {
            if let Ok(found) = run.binary_search_by_key(&key, |entry| entry.0) {
                return Ok(Some(run[found].1));
            }
        }
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        if let Some(seq) = id_table::lookup(&tables.ids_recent, IDS_RECENT_NAME, key)
            .map_err(|e| self.read_error(e))?
        {
            return Ok(Some(seq));
        }
        id_table::lookup(&tables.ids, IDS_NAME, key).map_err(|e| self.read_error(e))
    }

    /// Files `id` as the id of line `seq` (the latest line with it so far).
    pub(crate) fn note_id(&mut self, id: &str, seq: u64) -> Result<()> {
        let key = id_key(id);
        if !is_exact_key(key) {
            let held_by_other = self.guard(|| match self.id_owner(key)? {
                Some(owner) => Ok(!self.record_has_id(owner, id)?),
                None => Ok(false),
            })?;
            if held_by_other {
                self.overlay.id_collisions.insert(id.to_string(), seq);
                return Ok(());
            }
        }
        self.overlay.ids.insert(key, seq);
        Ok(())
    }

    /// Children of `parent_seq` ([`SEQ_NONE`] for the roots), in file order.
    pub fn children_of(&self, parent_seq: u64) -> Result<Vec<u64>> {
        self.guard(|| self.children_of_unguarded(parent_seq))
    }

    fn children_of_unguarded(&self, parent_seq: u64) -> Result<Vec<u64>> {
        let mut kids = Vec::new();
        // A child on the next line is not in the children table (format-spec/index.md): it
        // is the common case, and its record alone says it.
        if parent_seq != SEQ_NONE && parent_seq.saturating_add(1) < self.next_seq {
            let next = self.existing_record(parent_seq + 1)?;
            if next.kind.is_some() && next.parent_seq == parent_seq {
                kids.push(parent_seq + 1);
            }
        }
        if let Some(tables) = &self.tables {
            let listed = self.stored_children(tables)?;
            for &child in listed.get(&parent_seq).map_or(&[][..], Vec::as_slice) {
                // The next-line child is never stored (format-spec/index.md): listed, it would
                // be walked twice. Only a damaged index lists it. Tables committed by another
                // handle after this one's view may list later children: the overlay has them.
                if parent_seq != SEQ_NONE && child == parent_seq.saturating_add(1) {
                    return Err(self.read_error(format!(
                        "the children table lists record {child}, the next line after its parent"
                    )));
                }
                if child < self.overlay.base_seq {
                    kids.push(child);
                }
            }
        }
        if let Some(more) = self.overlay.children.get(&parent_seq) {
            kids.extend_from_slice(more);
        }
        Ok(kids)
    }

    pub fn label(&self, target_id: &str) -> Result<Option<LabelValue>> {
        self.guard(|| self.label_unguarded(target_id))
    }

    fn label_unguarded(&self, target_id: &str) -> Result<Option<LabelValue>> {
        if let Some(value) = self.overlay.labels.get(target_id) {
            return Ok(value.clone());
        }
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        Ok(self.stored_labels(tables)?.get(target_id).cloned())
    }

    /// The committed labels, read whole and checked once per committed state.
    fn stored_labels<'t>(
        &self,
        tables: &'t ReadTables,
    ) -> Result<&'t BTreeMap<String, LabelValue>> {
        self.small_table(&tables.loaded_labels, || {
            small_tables::load_labels(&tables.labels, tables.counts.labels)
        })
    }

    /// The committed listed children by parent, read whole and checked once per committed
    /// state.
    fn stored_children<'t>(&self, tables: &'t ReadTables) -> Result<&'t FastMap<u64, Vec<u64>>> {
        self.small_table(&tables.loaded_children, || {
            small_tables::load_children(&tables.children, tables.counts.children)
        })
    }

    /// The committed id collisions, read whole and checked once per committed state.
    fn stored_id_collisions<'t>(&self, tables: &'t ReadTables) -> Result<&'t HashMap<String, u64>> {
        self.small_table(&tables.loaded_id_collisions, || {
            small_tables::load_id_collisions(&tables.id_collisions, tables.counts.id_collisions)
        })
    }

    /// A small table of `tables`, loaded by `load` on first use.
    fn small_table<'t, T>(
        &self,
        cell: &'t OnceCell<T>,
        load: impl FnOnce() -> std::result::Result<T, String>,
    ) -> Result<&'t T> {
        if let Some(loaded) = cell.get() {
            return Ok(loaded);
        }
        let loaded = load().map_err(|e| self.read_error(e))?;
        Ok(cell.get_or_init(|| loaded))
    }

    /// Every label, as (target id, value), in target-id order.
    pub fn labels(&self) -> Result<Vec<(String, LabelValue)>> {
        self.guard(|| self.labels_unguarded())
    }

    fn labels_unguarded(&self) -> Result<Vec<(String, LabelValue)>> {
        let mut all = BTreeMap::new();
        if let Some(tables) = &self.tables {
            for (target, value) in self.stored_labels(tables)? {
                all.insert(target.clone(), Some(value.clone()));
            }
        }
        for (target, value) in &self.overlay.labels {
            all.insert(target.clone(), value.clone());
        }
        Ok(all
            .into_iter()
            .filter_map(|(target, value)| value.map(|value| (target, value)))
            .collect())
    }

    /// Reads every stored page of the records, ids and small tables and checks each as a read
    /// would (`treelog reindex` without `--force`): damage anywhere in them is an
    /// [`Error::Index`], not only damage a query happens to read.
    pub fn check_stored(&self) -> Result<()> {
        self.guard(|| {
            let Some(tables) = &self.tables else {
                return Ok(());
            };
            let mut next = 0u64;
            for item in tables.records.iter().map_err(|e| self.read_error(e))? {
                let (key, value) = item.map_err(|e| self.read_error(e))?;
                let first = key.value();
                if first != next {
                    return Err(self.read_error(format!(
                        "the record page after record {next} starts at {first}"
                    )));
                }
                let page = PageView::new(first, value.value())
                    .and_then(|page| page.decode_all())
                    .map_err(|error| self.read_error(error.0))?;
                next = first.saturating_add(page.len() as u64);
            }
            if next < self.overlay.base_seq {
                return Err(self.read_error(format!(
                    "the record pages end at record {next}, before {}",
                    self.overlay.base_seq
                )));
            }
            for (table, name) in [
                (&tables.ids, IDS_NAME),
                (&tables.ids_recent, IDS_RECENT_NAME),
            ] {
                id_table::check_pages(table, name).map_err(|e| self.read_error(e))?;
            }
            self.stored_children(tables)?;
            self.stored_labels(tables)?;
            self.stored_id_collisions(tables)?;
            Ok(())
        })
    }

    /// Number of records (entries and opaque lines) indexed.
    pub fn record_count(&self) -> u64 {
        self.next_seq
    }

    /// Bytes of index data redb holds for the committed tables.
    pub fn stored_bytes(&self) -> Result<u64> {
        self.guard(|| self.stored_bytes_unguarded())
    }

    fn stored_bytes_unguarded(&self) -> Result<u64> {
        let Some(tables) = &self.tables else {
            return Ok(0);
        };
        let mut total = 0;
        total += tables
            .records
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        for ids in [&tables.ids, &tables.ids_recent] {
            total += ids.stats().map_err(|e| self.read_error(e))?.stored_bytes();
        }
        total += tables
            .id_collisions
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        total += tables
            .children
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        total += tables
            .labels
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        Ok(total)
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

    pub(crate) fn read_error(&self, error: impl std::fmt::Display) -> Error {
        index_error(
            self.sidecar_path.as_deref().unwrap_or(&self.log_path),
            error,
        )
    }
}

impl Store {
    /// Hashes the bytes of lines just indexed, and writes the overlay out if it is big enough
    /// (only at a line end, where the hashes and the records describe the same prefix).
    fn consumed(&mut self, bytes: &[u8], identity: FileIdentity) -> Result<()> {
        self.hasher.update(bytes);
        self.flush_when_due(identity)
    }

    /// Writes the overlay out if it is big enough and the hashes cover what it indexes.
    fn flush_when_due(&mut self, identity: FileIdentity) -> Result<()> {
        if self.db.is_some()
            && self.flush_due()
            && self.hasher.hashed_len_bytes() == self.indexed_len_bytes
        {
            let sidecar = self.sidecar_path.clone().unwrap_or_default();
            guarded(&sidecar, || self.write_overlay(&sidecar, identity))?;
        }
        Ok(())
    }
}

/// Feeds scanned lines to the store; flushes at chunk ends when the overlay is big.
struct CatchUp<'a> {
    store: &'a mut Store,
    identity: FileIdentity,
}

impl LineSink for CatchUp<'_> {
    fn line(&mut self, line: ScannedLine<'_>) -> Result<()> {
        self.store
            .apply_line(line.offset_bytes, line.len_bytes, line.crc32, line.bytes)
    }

    fn consumed(&mut self, bytes: &[u8]) -> Result<()> {
        self.store.consumed(bytes, self.identity)
    }
}

/// The sidecar handle: read-only until this handle first writes, because a read-write open
/// of redb costs several fsyncs even when nothing is written, and most opens write nothing.
enum Db {
    ReadOnly(DropGuarded<redb::ReadOnlyDatabase>),
    Writer(DropGuarded<Database>),
}

impl Db {
    fn begin_read(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::ReadOnly(db) => db.begin_read(),
            Db::Writer(db) => db.begin_read(),
        }
    }
}

/// A redb handle dropped where a panic is caught: redb's `Database::drop` unwraps a mutex that
/// an earlier redb panic (caught by `guarded` on a damaged sidecar) may have poisoned, so the
/// drop is guarded as every other redb call is (found by the `open_log` fuzz target).
struct DropGuarded<T>(Option<T>);

impl<T> DropGuarded<T> {
    fn new(inner: T) -> DropGuarded<T> {
        DropGuarded(Some(inner))
    }
}

impl<T> std::ops::Deref for DropGuarded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<T> std::ops::DerefMut for DropGuarded<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("present until dropped")
    }
}

impl<T> Drop for DropGuarded<T> {
    fn drop(&mut self) {
        let inner = self.0.take();
        let _ = catch_unwind(AssertUnwindSafe(move || drop(inner)));
    }
}

impl Store {
    /// Makes sure the read-write handle of the sidecar is open (it is opened on first use).
    /// Read transactions of the read-only handle stay valid: redb lets both handles share the
    /// file in this process.
    fn ensure_writer(&mut self) -> Result<()> {
        if let Some(Db::ReadOnly(_)) = &self.db {
            let path = self.sidecar_path.clone().unwrap_or_default();
            self.db = Some(Db::Writer(DropGuarded::new(open_database(&path)?)));
        }
        Ok(())
    }
}

/// The read-write handle of `db`, after [`Store::ensure_writer`].
fn writer<'a>(db: &'a Option<Db>, path: &Path) -> Result<&'a Database> {
    match db {
        Some(Db::Writer(db)) => Ok(db),
        _ => Err(index_error(path, "no writable index database is open")),
    }
}

/// redb's cache while rebuilding. redb holds the pages of commits that are not durable in
/// memory, up to half its cache, and writes the rest out as it goes: with its default of 1 GiB,
/// a 10M-entry rebuild held ~400 MB of pages (peak RSS 492 MiB) and wrote them all in its last
/// commit, whose `fsync` then took 1.6 s. With 64 MiB it writes them as it goes, the writeback
/// helper (`writeback.rs`) sends them to disk, and that commit took 0.15 s (peak RSS 304 MiB).
const REBUILD_CACHE_BYTES: usize = 64 << 20;

/// A rebuilt file is compacted when at least this fraction of it is slack ...
const COMPACT_SLACK_MIN: f64 = 0.2;
/// ... and it is more than this fraction of the log it indexes (see `compaction_worth_it`).
const COMPACT_FILE_OF_LOG_MIN: f64 = 0.05;

/// Whether compacting a freshly built index of `file_bytes`, `used_bytes` of them in use, for
/// a log of which it indexes `indexed_log_bytes`, is worth its cost. redb grows a file by
/// doubling its regions, so up to half of it may be unused; compaction moves pages down and
/// trims, at the cost of rewriting them over several durable commits, and that runs alone at
/// the end of a rebuild.
/// - Since schema 7 an index is 2-6% of its log, and the slack of a large one is a small part
///   of the log: at 1M entries 4.8 MB of 35.7 MB (13%; 0.4% of the 1.3 GB log), trimmed in
///   ~50 ms, 3-4% of the rebuild; at 100k entries 1.2 MB of 4.5 MB in 11 ms (5%). Those are
///   left as they are: the file is then 2.7% and 3.4% of the log.
/// - A small log's index is mostly redb's fixed tables: 143 KB for 1,000 entries (1.2 MB of
///   log, 12%), 40% of it slack. Compacting it (~5 ms) keeps it under a tenth of the log.
/// - Until schema 7, with ~100 bytes an entry, compaction kept indexes near 8% of the log
///   instead of 11-16%; at 10M entries it took 5.8 s (a sixth of the rebuild) to trim 11%.
fn compaction_worth_it(file_bytes: u64, used_bytes: u64, indexed_log_bytes: u64) -> bool {
    let slack_bytes = file_bytes.saturating_sub(used_bytes);
    let slack = slack_bytes as f64 / file_bytes.max(1) as f64;
    slack >= COMPACT_SLACK_MIN
        && file_bytes as f64 > COMPACT_FILE_OF_LOG_MIN * indexed_log_bytes as f64
}

/// Compacts a freshly built index when [`compaction_worth_it`].
fn compact_if_worth_it(db: &mut Database, path: &Path, indexed_log_bytes: u64) -> Result<()> {
    let txn = db.begin_write().map_err(|e| index_error(path, e))?;
    let stats = txn.stats().map_err(|e| index_error(path, e))?;
    txn.abort().map_err(|e| index_error(path, e))?;
    let used_bytes = stats.allocated_pages() * stats.page_size() as u64;
    let file_bytes = std::fs::metadata(path)
        .map_err(|e| Error::io(path, "stat", e))?
        .len();
    if !compaction_worth_it(file_bytes, used_bytes, indexed_log_bytes) {
        return Ok(());
    }
    db.compact().map(drop).map_err(|e| index_error(path, e))
}

/// redb's page cache for a read-only handle. redb's default (1 GiB) keeps every page a walk
/// reads: a leaf-to-root path of 8M entries grew the process to 960 MB and ran slower
/// (156-207 ns/hop) than with this cache (140-156 ns/hop, 196 MB), the fresh memory's page
/// faults costing more than the cache saved. Writers keep the default: a rebuild with this
/// cache ran ~25% slower (its non-durable commits' pages spill to the file and are read back).
const READ_CACHE_BYTES: usize = 64 * 1024 * 1024;

fn open_database_read_only(path: &Path) -> Result<Db> {
    Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .set_cache_size(READ_CACHE_BYTES)
        .open_read_only(path)
        .map(|db| Db::ReadOnly(DropGuarded::new(db)))
        .map_err(|e| index_error(path, e))
}

/// A read-write handle whose open verifies the checksum of every page of the committed trees
/// (it reads the whole sidecar): a damaged file fails to open instead of being trusted.
fn open_database_checked(path: &Path) -> Result<Db> {
    Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .set_check_integrity_on_open(true)
        .open(path)
        .map(|db| Db::Writer(DropGuarded::new(db)))
        .map_err(|e| index_error(path, e))
}

fn open_database(path: &Path) -> Result<Database> {
    Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .create(path)
        .map_err(|e| index_error(path, e))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static REBUILD_FLUSH_ENTRIES: Cell<Option<usize>> = const { Cell::new(None) };
        static RESERVED_ID_STARTS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
        static RESERVED_IDS_LEN_FORCED: Cell<Option<u64>> = const { Cell::new(None) };
        static FAIL_TABLE_READS: Cell<bool> = const { Cell::new(false) };
    }

    /// Whether reading the committed tables fails, as set by the test on this thread.
    pub(super) fn fail_table_reads() -> bool {
        FAIL_TABLE_READS.with(Cell::get)
    }

    /// Compaction runs for a fifth of slack or more in a file that is more than a twentieth of
    /// its log: a small log's index (mostly redb's fixed tables) is trimmed, the 2-4% indexes
    /// of the 100k and 1M bench logs are not, nor a file with little slack.
    #[test]
    fn compaction_worth_it_by_size_and_slack() {
        const MB: u64 = 1_000_000;
        let cases = [
            // (file bytes, used bytes, log bytes, compact?)
            // 1M generated entries: 13% slack, the file 2.7% of the log.
            (35_655_680, 30_851_072, 1_299_569_947, false),
            // 100k: 28% slack, but the file is 3.4% of the log.
            (4_460_544, 3_227_648, 130_024_346, false),
            // 1,000 entries: redb's fixed tables, 40% slack, 12% of the log.
            (143_360, 86_016, 1_227_000, true),
            // A file a sixth of its log, more than a fifth of it slack; just under a fifth
            // (pi-shaped entries before schema 7) is not worth it.
            (18 * MB, 14 * MB, 104 * MB, true),
            (17_829_888, 14_303_232, 104 * MB, false),
            // Large slack in a file that is a large part of its log.
            (142_600_000, 101_300_000, 1_000 * MB, true),
            // Little slack, whatever the file's share of the log.
            (20 * MB, 18_900_000, 100 * MB, false),
            (1_100 * MB, 979 * MB, 10_000 * MB, false),
            (0, 0, 0, false),
        ];
        for (file_bytes, used_bytes, log_bytes, expected) in cases {
            assert_eq!(
                compaction_worth_it(file_bytes, used_bytes, log_bytes),
                expected,
                "{file_bytes} bytes, {used_bytes} used, log {log_bytes}"
            );
        }
    }

    /// A flush whose commit succeeds but whose tables cannot be read back fails, and the
    /// store answers as before it (every record, id and child, from its old tables and its
    /// overlay) instead of as an empty index; ids it holds are not handed out again.
    #[test]
    fn flush_that_cannot_read_its_tables_keeps_answering() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        let log = repeating_ids_log();
        let half = log[..log.len() / 2]
            .iter()
            .rposition(|byte| *byte == b'\n')
            .expect("a line ends there")
            + 1;
        std::fs::write(&path, &log[..half]).expect("write half");
        let sidecar = crate::index::sidecar_path(&path);
        let storage = crate::storage::FileStorage::open(&path).expect("open log");
        let (mut store, _) = Store::open(&storage, &sidecar, Verify::Quick, true).expect("build");
        std::fs::write(&path, &log).expect("write the rest");
        store.catch_up(&storage).expect("catch up");
        assert!(!store.overlay.records.is_empty());
        let before = dump(&store);

        FAIL_TABLE_READS.with(|cell| cell.set(true));
        let flushed = store.flush(&storage);
        FAIL_TABLE_READS.with(|cell| cell.set(false));
        assert!(matches!(flushed, Err(Error::Index { .. })), "{flushed:?}");
        assert_eq!(dump(&store), before);
        let taken = store
            .existing_record(store.next_seq - 1)
            .expect("record")
            .id;
        assert!(store.seq_of(&taken).expect("lookup").is_some());
    }

    /// The next start of a run of reserved ids set by the test on this thread, if any.
    pub(super) fn forced_reserved_id_start() -> Option<u64> {
        RESERVED_ID_STARTS.with(|starts| starts.borrow_mut().pop())
    }

    /// Makes the next runs of reserved ids start at `starts`, in order, on this thread.
    fn force_reserved_id_starts(starts: &[u64]) {
        RESERVED_ID_STARTS.with(|cell| *cell.borrow_mut() = starts.iter().rev().copied().collect());
    }

    const SESSION_HEADER_LINE: &str =
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/w\"}\n";

    /// The line of a user message with the 8-hex id `id`, child of `parent`.
    fn message_line(id: u64, parent: Option<u64>) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p:08x}\""));
        format!(
            r#"{{"type":"message","id":"{id:08x}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"x"}}}}"#
        ) + "\n"
    }

    /// The length of the runs of reserved ids set by the test on this thread, if any.
    pub(super) fn forced_reserved_ids_len() -> Option<u64> {
        RESERVED_IDS_LEN_FORCED.with(Cell::get)
    }

    /// The ids `reserved_entry_id` hands out never include one the tables or the overlay hold
    /// or one the caller refuses: a run skips the ids stored in it (in `ids` or `ids-recent`),
    /// those in the overlay (a line another writer appended meanwhile) and refused ones; a
    /// flush drops the run; and after [`RESERVE_TRIES_MAX`] runs used up the caller is told to
    /// fall back.
    #[test]
    fn reserved_ids_skip_every_held_id() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        let entry = message_line;
        let mut log = SESSION_HEADER_LINE.to_string();
        log += &entry(0x200, None);
        std::fs::write(&path, &log).expect("write log");
        let sidecar = crate::index::sidecar_path(&path);
        let storage = crate::storage::FileStorage::open(&path).expect("open log");
        let (mut store, _) = Store::open(&storage, &sidecar, Verify::Quick, true).expect("build");
        // 0x200 is in the tables; 0x204 comes into the overlay from a line appended later.
        std::fs::write(&path, log.clone() + &entry(0x204, Some(0x200))).expect("append");
        store.catch_up(&storage).expect("catch up");
        assert!(store.overlay.ids.contains_key(&0x204));

        let refused = |id: &str| id == "00000203";
        let next = |store: &mut Store| store.reserved_entry_id(refused).expect("reserve");
        force_reserved_id_starts(&[0x1fe]);
        let ids: Vec<_> = (0..5).map(|_| next(&mut store)).collect();
        let expected = ["000001fe", "000001ff", "00000201", "00000202", "00000205"];
        assert_eq!(ids, expected.map(|id| Some(id.to_string())));

        // A flush drops the run: the tables under the new overlay hold 0x204 now (in `ids`
        // itself: a flush's ids in one narrow key range go there directly), and a run over it
        // skips it as it skips 0x200.
        store.flush(&storage).expect("flush");
        let (recent, ids) = tables(&store);
        assert_eq!(
            id_table::lookup(ids, IDS_NAME, 0x204).expect("read"),
            Some(1)
        );
        assert_eq!(
            id_table::lookup(recent, IDS_RECENT_NAME, 0x204).expect("read"),
            None
        );
        assert!(store.overlay.ids.is_empty());
        force_reserved_id_starts(&[0x200]);
        let ids: Vec<_> = (0..4).map(|_| next(&mut store)).collect();
        let expected = ["00000201", "00000202", "00000205", "00000206"];
        assert_eq!(ids, expected.map(|id| Some(id.to_string())));

        // Runs whose every id is held or refused are used up: after the maximum the caller
        // falls back to random ids, and the store does not try again until its next overlay.
        store.flush(&storage).expect("flush");
        RESERVED_IDS_LEN_FORCED.with(|len| len.set(Some(1)));
        force_reserved_id_starts(&[0x200; RESERVE_TRIES_MAX + 1]);
        assert_eq!(next(&mut store), None);
        assert_eq!(
            forced_reserved_id_start(),
            Some(0x200),
            "tried exactly the maximum"
        );
        force_reserved_id_starts(&[0x6000]);
        assert_eq!(next(&mut store), None);
        store.flush(&storage).expect("flush");
        assert_eq!(next(&mut store).as_deref(), Some("00006000"));
        RESERVED_IDS_LEN_FORCED.with(|len| len.set(None));
    }

    /// A narrow flush must not file into `ids` a key that `ids-recent` holds (older): the
    /// lookup reads `ids-recent` first and would find the stale seq. And a run skips a key
    /// held only in `ids-recent`. (Found missing in review: either check could be dropped
    /// with every other test passing.)
    #[test]
    fn narrow_flush_never_shadowed_by_ids_recent() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        let entry = |id: u64| message_line(id, None);
        let mut log = SESSION_HEADER_LINE.to_string();
        log += &entry(0x200);
        std::fs::write(&path, &log).expect("write log");
        let sidecar = crate::index::sidecar_path(&path);
        let storage = crate::storage::FileStorage::open(&path).expect("open log");
        let (mut store, _) = Store::open(&storage, &sidecar, Verify::Quick, true).expect("build");
        // A wide flush: 0x10_0000 (seq 1) goes to ids-recent.
        log += &entry(0x10_0000);
        log += &entry(0x9000_0000);
        std::fs::write(&path, &log).expect("append");
        store.catch_up(&storage).expect("catch up");
        store.flush(&storage).expect("flush");
        assert_eq!(
            id_table::lookup(tables(&store).0, IDS_RECENT_NAME, 0x10_0000).expect("read"),
            Some(1)
        );
        // A run over a key held only in ids-recent skips it.
        force_reserved_id_starts(&[0xf_ffff]);
        let ids: Vec<_> = (0..2)
            .map(|_| store.reserved_entry_id(|_| false).expect("reserve"))
            .collect();
        assert_eq!(ids, ["000fffff", "00100001"].map(|id| Some(id.to_string())));
        // A narrow flush re-filing 0x10_0000 (seq 3) next to a new id.
        log += &entry(0x10_0000);
        log += &entry(0x10_0001);
        std::fs::write(&path, &log).expect("append");
        store.catch_up(&storage).expect("catch up");
        assert_eq!(store.seq_of("00100000").expect("lookup"), Some(3));
        store.flush(&storage).expect("flush");
        assert_eq!(store.seq_of("00100000").expect("lookup"), Some(3));
    }

    type IdPagesTable = ReadOnlyTable<u64, &'static [u8]>;

    /// The `ids-recent` and `ids` tables of an open store.
    fn tables(store: &Store) -> (&IdPagesTable, &IdPagesTable) {
        let tables = store.tables.as_ref().expect("a sidecar is open");
        (&tables.ids_recent, &tables.ids)
    }

    /// A rebuild flush size set by the test on this thread, if any.
    pub(super) fn rebuild_flush_entries_max() -> Option<usize> {
        REBUILD_FLUSH_ENTRIES.with(Cell::get)
    }

    /// Everything the store answers about `log`, after a rebuild with the given flush size.
    fn rebuilt(dir: &Path, name: &str, log: &[u8], flush_entries: Option<usize>) -> String {
        let path = dir.join(name);
        std::fs::write(&path, log).expect("write log");
        REBUILD_FLUSH_ENTRIES.with(|cell| cell.set(flush_entries));
        let storage = crate::storage::FileStorage::open(&path).expect("open log");
        let sidecar = crate::index::sidecar_path(&path);
        let (store, state) = Store::open(&storage, &sidecar, Verify::Quick, true).expect("rebuild");
        REBUILD_FLUSH_ENTRIES.with(|cell| cell.set(None));
        assert!(matches!(state, IndexState::Rebuilt { .. }), "{state:?}");
        dump(&store)
    }

    /// Everything a store answers, to compare two ways of building it: the indexed length,
    /// state and hashes (the block hashes not yet written, all of them in a store without a
    /// database); every record, what its id finds, its children; then a missing id, the
    /// roots and the labels.
    pub(crate) fn dump(store: &Store) -> String {
        let mut out = format!(
            "len {} next {} state {:?} hash {:?} tail {:?} blocks {:?}\n",
            store.indexed_len_bytes,
            store.next_seq,
            store.state,
            store.first_line_hash,
            store.hasher.tail_hash(),
            store.hasher.finished()
        );
        for seq in 0..store.next_seq {
            let record = store.existing_record(seq).expect("record");
            let found = store.seq_of(&record.id).expect("id lookup");
            let kids = store.children_of(seq).expect("children");
            out.push_str(&format!("{seq} {record:?} {found:?} {kids:?}\n"));
        }
        out.push_str(&format!(
            "{:?} {:?} {:?}\n",
            store.seq_of("no-such-id"),
            store.children_of(SEQ_NONE),
            store.labels()
        ));
        out
    }

    /// A log whose ids repeat across ~6 MiB, with opaque lines carrying ids, branches and
    /// pi's real sample in front: a flush happens at most once per 1 MiB scan chunk, so
    /// this makes several flushes, and ids repeat across them.
    fn repeating_ids_log() -> Vec<u8> {
        let mut log = include_bytes!("../../tests/data/pi-sample-200.jsonl").to_vec();
        let padding = "x".repeat(1200);
        for n in 0..5000 {
            let id = format!("dup{}", n % 311);
            let parent = if n % 9 == 0 {
                "null".to_string()
            } else {
                format!("\"dup{}\"", (n + 5) % 311)
            };
            log.extend_from_slice(
                format!(r#"{{"type":"message","id":"{id}","parentId":{parent},"message":{{"role":"user","content":"{padding}"}}}}"#)
                    .as_bytes(),
            );
            log.push(b'\n');
            if n % 11 == 0 {
                log.extend_from_slice(
                    format!(r#"{{"type":"weird","id":"dup{}"}}"#, n % 400).as_bytes(),
                );
                log.push(b'\n');
                log.extend_from_slice(format!(r#"{{"type":"weird","id":"opaque{n}"}}"#).as_bytes());
                log.push(b'\n');
            }
        }
        log
    }

    /// Ids that share a hashed key (forced here: all of them into 3 keys) are told apart: a
    /// rebuild in many runs, a rebuild in one, and an index caught up from half the log
    /// (which merges into `ids` and writes `id-collisions`) all answer exactly as an index
    /// whose ids never collide.
    #[test]
    fn colliding_id_keys_answer_as_distinct_ones() {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = repeating_ids_log();
        let expected = rebuilt(dir.path(), "plain.jsonl", &log, None);
        crate::format::id_index::tests::with_hashed_keys_max(3, || {
            assert_eq!(rebuilt(dir.path(), "runs.jsonl", &log, Some(7)), expected);
            assert_eq!(rebuilt(dir.path(), "one.jsonl", &log, None), expected);
            let half = log[..log.len() / 2]
                .iter()
                .rposition(|byte| *byte == b'\n')
                .expect("a line ends in the first half")
                + 1;
            rebuilt(dir.path(), "caught-up.jsonl", &log[..half], None);
            let path = dir.path().join("caught-up.jsonl");
            std::fs::write(&path, &log).expect("append the second half");
            let storage = crate::storage::FileStorage::open(&path).expect("open log");
            let sidecar = crate::index::sidecar_path(&path);
            let (mut store, state) =
                Store::open(&storage, &sidecar, Verify::Quick, false).expect("catch up");
            assert!(matches!(state, IndexState::CaughtUp { .. }), "{state:?}");
            store.flush(&storage).expect("flush");
            assert_eq!(dump(&store), expected);
            drop(store);
            let (store, state) =
                Store::open(&storage, &sidecar, Verify::Quick, false).expect("reopen");
            assert_eq!(state, IndexState::Fresh);
            assert_eq!(dump(&store), expected);
        });
    }

    /// An index caught up and flushed in many steps answers exactly as a rebuild, whether
    /// flushes drain `ids-recent` into `ids` (every other one here) or never do: duplicate
    /// ids, ids in both tables, opaque records, labels, branches.
    #[test]
    fn recent_ids_drained_or_not_answer_as_a_rebuild() {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = repeating_ids_log();
        let expected = rebuilt(dir.path(), "plain.jsonl", &log, None);
        let line_ends: Vec<usize> = log
            .iter()
            .enumerate()
            .filter(|(_, byte)| **byte == b'\n')
            .map(|(at, _)| at + 1)
            .collect();
        for (name, pages_min) in [("drained.jsonl", Some(1)), ("kept.jsonl", None)] {
            let path = dir.path().join(name);
            let sidecar = crate::index::sidecar_path(&path);
            crate::index::id_table::tests::set_recent_pages_min(pages_min);
            let step = line_ends.len() / 24;
            for end in line_ends.iter().step_by(step).chain(line_ends.last()) {
                std::fs::write(&path, &log[..*end]).expect("extend the log");
                let storage = crate::storage::FileStorage::open(&path).expect("open log");
                let (mut store, _) =
                    Store::open(&storage, &sidecar, Verify::Quick, false).expect("catch up");
                store.flush(&storage).expect("flush");
            }
            crate::index::id_table::tests::set_recent_pages_min(None);
            let storage = crate::storage::FileStorage::open(&path).expect("open log");
            let (store, state) =
                Store::open(&storage, &sidecar, Verify::Quick, false).expect("reopen");
            assert_eq!(state, IndexState::Fresh, "{name}");
            assert_eq!(dump(&store), expected, "{name}");
            let tables = store.tables.as_ref().expect("a sidecar is open");
            let entries = |table, name| id_table::tests::stored_entries(table, name).len();
            match pages_min {
                // Every other flush drains (one page of new ids each, drained past one).
                Some(_) => assert!(entries(&tables.ids, IDS_NAME) > 0, "ids-recent was drained"),
                None => assert!(
                    entries(&tables.ids, IDS_NAME) == 0
                        && entries(&tables.ids_recent, IDS_RECENT_NAME) > 0,
                    "the ids stayed in ids-recent"
                ),
            }
        }
    }

    /// A flush that drains `ids-recent` after another handle has indexed part of its overlay
    /// (so it writes only after that handle's lines) gives the index a rebuild gives: the
    /// other handle's ids, already in `ids-recent`, and this one's all end in `ids`.
    #[test]
    fn drain_after_another_handle_flushed_part_of_the_overlay() {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = repeating_ids_log();
        let line_end = |fraction: usize| {
            log[..log.len() * fraction / 4]
                .iter()
                .rposition(|byte| *byte == b'\n')
                .expect("a line ends there")
                + 1
        };
        let (first, second) = (line_end(1), line_end(2));
        let expected = rebuilt(dir.path(), "plain.jsonl", &log, None);
        let path = dir.path().join("shared.jsonl");
        let sidecar = crate::index::sidecar_path(&path);
        std::fs::write(&path, &log[..first]).expect("write the first quarter");
        let storage = crate::storage::FileStorage::open(&path).expect("open log");
        let (mut ahead, _) = Store::open(&storage, &sidecar, Verify::Quick, false).expect("A");
        // B indexes up to the half and flushes, leaving its ids in `ids-recent`.
        std::fs::write(&path, &log[..second]).expect("extend to the half");
        let (mut behind, _) = Store::open(&storage, &sidecar, Verify::Quick, false).expect("B");
        behind.flush(&storage).expect("B flushes");
        let recent_entries = |store: &Store| {
            let tables = store.tables.as_ref().expect("tables");
            id_table::tests::stored_entries(&tables.ids_recent, IDS_RECENT_NAME).len()
        };
        assert!(recent_entries(&behind) > 0, "B's ids are in ids-recent");
        // A, still on the first quarter's index, catches up with the whole log and flushes
        // with a drain: it writes only the lines after B's.
        std::fs::write(&path, &log).expect("the whole log");
        ahead.catch_up(&storage).expect("A catches up");
        crate::index::id_table::tests::set_recent_pages_min(Some(0));
        let flushed = ahead.flush(&storage);
        crate::index::id_table::tests::set_recent_pages_min(None);
        flushed.expect("A flushes");
        drop((ahead, behind));
        let (store, state) = Store::open(&storage, &sidecar, Verify::Quick, false).expect("reopen");
        assert_eq!(state, IndexState::Fresh);
        assert_eq!(recent_entries(&store), 0, "the flush drained ids-recent");
        assert_eq!(dump(&store), expected);
    }

    /// A rebuild that writes its ids in many runs (a flush every 7 lines) and merges them
    /// answers exactly as one that writes them in one go: duplicate ids (the latest line
    /// wins), opaque records with ids (never shadowing an entry), labels, branches.
    #[test]
    fn id_runs_merge_to_the_same_index() {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = repeating_ids_log();
        let many_runs = rebuilt(dir.path(), "runs.jsonl", &log, Some(7));
        let one_go = rebuilt(dir.path(), "one.jsonl", &log, None);
        assert_eq!(many_runs, one_go);
    }
}
