//! Rebuilding: a new index built from the whole log in a private file (non-durable commits,
//! id runs merged once at the end, compaction when worth it), renamed over the sidecar. It
//! reuses the catch-up and the flush; it must not change what the index holds, only how a
//! whole one is written.

use std::path::{Path, PathBuf};

use redb::{Database, TableDefinition};

use super::Store;
use super::handle::{Db, DropGuarded, guarded, index_error, open_database_read_only, writer};
use super::overlay::Overlay;
use super::schema::{
    BLOCKS, META, META_SCHEMA, META_SNAPSHOT, META_STATE, RECORDS, SCHEMA_MAGIC, SCHEMA_VERSION,
};
use crate::error::{Error, Result};
use crate::format::id_index::merge_sorted_runs;
use crate::format::record::StoredCounts;
use crate::index::id_table::{self, IDS, IDS_NAME, IDS_RECENT, IDS_RECENT_NAME};
use crate::index::small_tables::{CHILDREN, ID_COLLISIONS, LABELS, TALLIES};
use crate::index::writeback::Writeback;
use crate::storage::LogStorage;

/// redb's cache while rebuilding. redb holds the pages of commits that are not durable in
/// memory, up to half its cache, and writes the rest out as it goes: with its default of 1 GiB
/// a large rebuild would hold hundreds of MB of pages and write them all in its last commit.
/// With 64 MiB it writes them as it goes, and the writeback helper (`writeback.rs`) sends them
/// to disk, so the last commit finds little left (docs/decisions/rebuild-end.md).
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
/// - An index is 2-6% of its log, and the slack of a large one is a small part of the log:
///   trimming it costs a few percent of the rebuild, so it is left as it is.
/// - A small log's index is mostly redb's fixed tables, much of it slack: compacting it takes
///   a few ms and keeps it under a tenth of the log.
///
/// The figures behind both thresholds are in docs/decisions/rebuild-end.md.
pub(super) fn compaction_worth_it(
    file_bytes: u64,
    used_bytes: u64,
    indexed_log_bytes: u64,
) -> bool {
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
        .map_err(|e| Error::io(path, "look at the index", e))?
        .len();
    if !compaction_worth_it(file_bytes, used_bytes, indexed_log_bytes) {
        return Ok(());
    }
    db.compact().map(drop).map_err(|e| index_error(path, e))
}

/// What a rebuild adds to the sidecar's name for its private file, before `<pid>-<hex>`.
const REBUILD_INFIX: &str = ".rebuild-";

/// Removes the private files that rebuilds killed before their rename left in the folder of
/// `sidecar_path` ([`crate::fs_safe::remove_leftovers`]), once per folder and process: a
/// reindex of a folder of logs reads it once, not once per log.
fn remove_rebuild_leftovers(sidecar_path: &Path) {
    let folder = match sidecar_path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let infix = format!("{}{REBUILD_INFIX}", crate::SIDECAR_SUFFIX);
    crate::fs_safe::remove_leftovers_once(folder, |name| {
        let (_, rest) = name.rsplit_once(infix.as_str())?;
        crate::fs_safe::pid_after(rest, "")
    });
}

impl Store {
    /// Builds a new index from the whole log in a private file, then renames it over the
    /// sidecar. Openers that still hold the old file keep a consistent (orphaned) index; new
    /// opens see the new one. Intermediate commits are not durable: only the final one is,
    /// and a crash before the rename leaves just a stray temporary file.
    pub(super) fn rebuild(&mut self, storage: &dyn LogStorage, sidecar_path: &Path) -> Result<()> {
        let mut temp_name = sidecar_path.as_os_str().to_owned();
        temp_name.push(REBUILD_INFIX);
        remove_rebuild_leftovers(sidecar_path);
        temp_name.push(format!(
            "{}-{:08x}",
            std::process::id(),
            crate::format::ids::random_u64() as u32
        ));
        let temp_path = PathBuf::from(temp_name);
        // Created exclusively (never through a link, never another's file), no more readable
        // than the log.
        let mode = crate::fs_safe::mode_derived_from(storage.path());
        let created = crate::fs_safe::create_new_file(&temp_path, mode)
            .map_err(|io| Error::io(sidecar_path, "create the index", io))?;
        let built = (|| {
            let db = guarded(&temp_path, || {
                redb::backends::FileBackend::new(created)
                    .and_then(|backend| {
                        Database::builder()
                            .set_cache_size(REBUILD_CACHE_BYTES)
                            .create_with_backend(backend)
                    })
                    .map_err(|error| match error {
                        // The file could not be made (a read-only directory, a full disk):
                        // said of the sidecar the user knows, not of the private file.
                        redb::DatabaseError::Storage(redb::StorageError::Io(io)) => {
                            Error::io(sidecar_path, "create the index", io)
                        }
                        other => index_error(&temp_path, other),
                    })
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
            return Err(Error::io(
                sidecar_path,
                "put the rebuilt index in place",
                error,
            ));
        }
        self.db = Some(guarded(sidecar_path, || {
            open_database_read_only(sidecar_path)
        })?);
        self.refresh_tables()?;
        // A last line without its `\n` is read into the overlay, never written to the index.
        self.index_unterminated_line(storage, len_bytes)
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
            txn.open_table(TALLIES).map_err(|e| index_error(&path, e))?;
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
        self.model_origins.clear();
        // A rebuild starts over from the log: a line that failed against the old index is
        // applied again against the new one.
        self.apply_failure = None;
        self.refresh_tables()
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
}
