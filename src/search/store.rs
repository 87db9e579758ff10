//! The search index of one directory, `DIR/.treelog-search/` (or `INDEX_DIR/search-<key>/`
//! with an index directory, [`index_path`]): tantivy's files, a lock file, and the catalog of
//! the logs it describes, kept in the payload of tantivy's commit so that the documents and
//! the catalog change together (format-spec/search.md).
//!
//! With index writes off a store is opened read-only ([`SearchStore::open_read_only`]) or
//! built in memory ([`SearchStore::in_memory`]); neither creates or writes a file. A
//! read-only store takes no lock of ours: a concurrent search may commit and merge beside it.
//! That is safe because tantivy replaces `meta.json` atomically, never modifies a segment
//! file, and opens a reader's segments under its own `.tantivy-meta.lock`, the lock its
//! garbage collection takes before deleting files (that lock file exists in every index a
//! writer committed, so opening it writes nothing). Once opened, segments are memory-mapped
//! and a later deletion does not affect them. Any engine error on the way falls back to an
//! in-memory index, so the hits stay those of the logs.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::indexer::{IndexWriterOptions, NoMergePolicy};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer, TokenStream,
};
use tantivy::{Index, IndexWriter};

use super::error::SearchError;
use super::progress::RebuildReason;
use crate::fs_safe;

/// The index directory's name inside the searched directory.
pub const INDEX_DIR_NAME: &str = ".treelog-search";
/// The lock file inside it: held exclusively while a search checks and updates the index.
const LOCK_FILE_NAME: &str = "lock";
/// The catalog's format. Any other value (or none) rebuilds the index.
pub const CATALOG_FORMAT: u32 = 2;
/// The analyzer's name in the schema.
const ANALYZER_NAME: &str = "treelog_text";
/// Tokens longer than this many bytes are dropped (base64 and hashes pasted into text).
const TOKEN_LEN_MAX: usize = 80;
/// Memory the writer's threads may fill before writing a segment.
const WRITER_MEMORY_BYTES: usize = 96 << 20;
/// The same for a build from an empty index, which merges nothing (see
/// [`SearchStore::writer`]): twice the memory, half as many segments, and a peak under the
/// 300 MiB build target (docs/decisions/search-build.md).
const BULK_WRITER_MEMORY_BYTES: usize = 192 << 20;
/// Log bytes a refresh reads at most to use the small writer ([`SearchStore::writer`]).
const SMALL_REFRESH_BYTES_MAX: u64 = 16 << 20;
/// The small writer's memory: tantivy's minimum for one indexing thread (its
/// `MEMORY_BUDGET_NUM_BYTES_MIN`; a smaller budget is refused).
const SMALL_WRITER_MEMORY_BYTES: usize = 15_000_000;

/// The tokenizer of the indexed text and of query words: tantivy's, splitting on what is not
/// a letter or digit (Unicode), lower-cased.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(TOKEN_LEN_MAX))
        .filter(LowerCaser)
        .build()
}

/// The tokens of `text` with their positions, as the index sees them.
pub fn tokens(text: &str) -> Vec<(usize, String)> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut found = Vec::new();
    while stream.advance() {
        let token = stream.token();
        found.push((token.position, token.text.clone()));
    }
    found
}

/// The schema's fields: one document per entry with searchable text.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    /// The log's path relative to the directory, `/`-separated (a term, for deletes).
    pub session: Field,
    /// 1-based line number in the log.
    pub line: Field,
    /// Byte offset of the line, to read it back for the snippet.
    pub offset: Field,
    pub id: Field,
    pub type_name: Field,
    /// A message's role; empty when none.
    pub role: Field,
    /// The timestamp as written.
    pub timestamp: Field,
    /// The timestamp in epoch ms, for `--since`, `--until` and `--sort newest`.
    pub timestamp_ms: Field,
    pub text: Field,
    /// Byte offset of the context edit whose replacement the text is; absent when the entry
    /// was not edited.
    pub edited_at: Field,
}

/// The name of the ms timestamp field (sorting by a fast field goes by name).
pub const TIMESTAMP_MS_FIELD: &str = "timestamp_ms";
/// The field of a document's session key (its log's path in the directory).
pub const SESSION_FIELD: &str = "session";
/// The field of a document's 1-based line in its log.
pub const LINE_FIELD: &str = "line";

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        // Fast (columns) as well: equal scores are ordered by them (search/top.rs).
        session: builder.add_text_field(SESSION_FIELD, STRING | STORED | FAST),
        line: builder.add_u64_field(LINE_FIELD, STORED | FAST),
        offset: builder.add_u64_field("offset", STORED),
        id: builder.add_text_field("id", STORED),
        type_name: builder.add_text_field("type", STRING | STORED),
        role: builder.add_text_field("role", STRING | STORED),
        timestamp: builder.add_text_field("timestamp", STORED),
        timestamp_ms: builder.add_i64_field(TIMESTAMP_MS_FIELD, INDEXED | FAST),
        text: builder.add_text_field("text", text_options),
        edited_at: builder.add_u64_field("edited_at", STORED),
    };
    (builder.build(), fields)
}

/// What the index knows of one log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogState {
    /// Bytes of the log indexed: up to the end of its last complete line.
    pub indexed_bytes: u64,
    /// Lines in those bytes.
    pub lines: u64,
    /// The log's size and modification time when it was last checked: unchanged, the log is
    /// taken as unchanged without reading it.
    pub size_bytes: u64,
    pub modified_ns: u128,
    /// Whether the log is a version-1 pi log (entries without ids are read).
    pub legacy_v1: bool,
    /// [`super::refresh::prefix_hash`] of the indexed bytes: a log whose prefix no longer has
    /// it was rewritten and is read again.
    pub prefix_hash: String,
    /// The lines a context edit removes or replaces, as `[line, byte offset]` in file order:
    /// where their original text is read back from the log (never their text, which the
    /// index does not hold).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edited: Vec<[u64; 2]>,
}

/// The catalog: every log the index describes, by its path relative to the directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    pub format: u32,
    pub logs: BTreeMap<String, LogState>,
}

impl Catalog {
    /// The catalog of an index that describes no log yet.
    fn empty() -> Catalog {
        Catalog {
            format: CATALOG_FORMAT,
            logs: BTreeMap::new(),
        }
    }
}

/// Where the search index of `searched_dir` lives: `searched_dir/.treelog-search/`, or with
/// an index directory `index_dir/search-<key>/`, `<key>` the first 16 hex digits of the
/// blake3 hash of the searched directory's canonical path (a directory reached through a
/// symlink or a relative path finds the same index). A pure function of its arguments and the
/// file system's names; nothing is created here.
pub fn index_path(searched_dir: &Path, index_dir: Option<&Path>) -> PathBuf {
    let Some(index_dir) = index_dir else {
        return searched_dir.join(INDEX_DIR_NAME);
    };
    let key = crate::index::path_key(&crate::index::canonical_path(searched_dir));
    index_dir.join(format!("search-{key}"))
}

/// An open search index: on disk with its lock held, on disk read-only, or in memory.
pub struct SearchStore {
    /// The index's directory (for an in-memory store, where it would be: named in notices).
    pub dir: PathBuf,
    pub index: Index,
    pub fields: Fields,
    pub catalog: Catalog,
    /// Held for the life of a writable store: two searches never update the index at once.
    /// `None` for a read-only or in-memory store, which is never written to disk.
    _lock: Option<File>,
}

impl SearchStore {
    /// Opens the index in `dir` ([`index_path`]), creating the directory if needed and taking
    /// its lock (waiting for another search to finish). An index that cannot be used is
    /// rebuilt empty; the reason is returned so that the caller can tell the user.
    pub fn open(dir: PathBuf) -> Result<(SearchStore, Option<RebuildReason>), SearchError> {
        let set_aside = prepare_dir(&dir)?;
        let lock_path = dir.join(LOCK_FILE_NAME);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|error| SearchError::io(&lock_path, "open", error))?;
        lock.lock()
            .map_err(|error| SearchError::io(&lock_path, "lock the search index", error))?;
        match open_existing(&dir) {
            Ok((index, fields, catalog)) => Ok((
                SearchStore {
                    dir,
                    index,
                    fields,
                    catalog,
                    _lock: Some(lock),
                },
                None,
            )),
            Err(reason) => {
                let store = SearchStore::create(dir, lock)?;
                Ok((store, Some(set_aside.unwrap_or(reason))))
            }
        }
    }

    /// Opens the index in `dir` without creating, locking or writing anything (see the module
    /// docs for why reading beside a writer is safe); why it cannot be used otherwise.
    pub fn open_read_only(dir: PathBuf) -> Result<SearchStore, RebuildReason> {
        let (index, fields, catalog) = open_existing(&dir)?;
        Ok(SearchStore {
            dir,
            index,
            fields,
            catalog,
            _lock: None,
        })
    }

    /// An empty index in memory with the same schema and analyzer as one on disk, so that
    /// the same refresh fills it and the same query finds the same hits. `dir` is where the
    /// index would be on disk, for notices; nothing is created there.
    pub fn in_memory(dir: PathBuf) -> SearchStore {
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        register(&index);
        SearchStore {
            dir,
            index,
            fields,
            catalog: Catalog::empty(),
            _lock: None,
        }
    }

    /// Whether this store is written to disk (it holds the index's lock).
    pub fn writable(&self) -> bool {
        self._lock.is_some()
    }

    /// Gives the index folder and its files the permissions of logs of mode `log_file_mode`
    /// at most ([`fs_safe::mode_for_derived`]; the folder: [`fs_safe::dir_mode_for`]), after a
    /// refresh wrote them; with `all_logs` (the mode is that of every log the index holds) the
    /// folder gets exactly those, else it is only narrowed. Nothing for a store not written to
    /// disk.
    pub fn fit_modes(&self, log_file_mode: u32, all_logs: bool) -> Result<(), SearchError> {
        if !self.writable() {
            return Ok(());
        }
        let failed = |path: &Path, error| SearchError::io(path, "set the permissions of", error);
        let dir_mode = fs_safe::dir_mode_for(log_file_mode);
        fs_safe::set_dir_mode(&self.dir, dir_mode, all_logs)
            .map_err(|error| failed(&self.dir, error))?;
        let entries = fs::read_dir(&self.dir)
            .map_err(|error| SearchError::io(&self.dir, "read the directory", error))?;
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_file()) {
                let path = entry.path();
                fs_safe::narrow_file(&path, log_file_mode).map_err(|error| failed(&path, error))?;
            }
        }
        Ok(())
    }

    /// Discards the index's files (never the lock) and creates an empty index.
    fn create(dir: PathBuf, lock: File) -> Result<SearchStore, SearchError> {
        clear(&dir)?;
        let (schema, fields) = schema();
        let index = Index::create_in_dir(&dir, schema).map_err(|error| engine(&dir, error))?;
        register(&index);
        Ok(SearchStore {
            dir,
            index,
            fields,
            catalog: Catalog::empty(),
            _lock: Some(lock),
        })
    }

    /// Rebuilds this store empty, keeping its lock (after damage found while using it); a
    /// store that is not written to disk is replaced by an empty one in memory.
    pub fn rebuild(self) -> Result<SearchStore, SearchError> {
        let SearchStore {
            dir, index, _lock, ..
        } = self;
        drop(index);
        match _lock {
            Some(lock) => SearchStore::create(dir, lock),
            None => Ok(SearchStore::in_memory(dir)),
        }
    }

    /// A writer for a refresh that reads `planned_bytes` of logs. With `bulk` (the index is
    /// empty: a first build or a rebuild) the writer merges no segments: a merge re-encodes
    /// every posting it takes in and, run beside the indexing threads, nearly doubles the
    /// build's peak memory; the memory saved buys larger, and so fewer, segments instead
    /// (docs/decisions/search-build.md). Later refreshes merge as usual. A small catch-up (an
    /// append, a new session) gets one indexing thread, one merge thread and the engine's
    /// smallest memory budget: starting more threads and touching a larger arena would cost
    /// more than indexing a few MiB takes.
    pub fn writer(&self, bulk: bool, planned_bytes: u64) -> Result<IndexWriter, SearchError> {
        if !bulk && planned_bytes <= SMALL_REFRESH_BYTES_MAX {
            return self
                .index
                .writer_with_options(
                    IndexWriterOptions::builder()
                        .num_worker_threads(1)
                        .num_merge_threads(1)
                        .memory_budget_per_thread(SMALL_WRITER_MEMORY_BYTES)
                        .build(),
                )
                .map_err(|error| engine(&self.dir, error));
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, 4);
        let memory_bytes = if bulk {
            BULK_WRITER_MEMORY_BYTES
        } else {
            WRITER_MEMORY_BYTES
        };
        let writer = self
            .index
            .writer_with_num_threads(threads, memory_bytes)
            .map_err(|error| engine(&self.dir, error))?;
        if bulk {
            writer.set_merge_policy(Box::new(NoMergePolicy));
        }
        Ok(writer)
    }
}

/// The error for a failure of the engine on the index in `dir`.
pub fn engine(dir: &Path, error: tantivy::TantivyError) -> SearchError {
    SearchError::Engine {
        path: dir.to_path_buf(),
        reason: error.to_string(),
    }
}

fn register(index: &Index) {
    index.tokenizers().register(ANALYZER_NAME, analyzer());
}

/// Opens an existing index, or says why it cannot be used.
fn open_existing(dir: &Path) -> Result<(Index, Fields, Catalog), RebuildReason> {
    if !dir.join("meta.json").exists() {
        return Err(RebuildReason::Missing);
    }
    let unusable = RebuildReason::Unusable;
    let index = Index::open_in_dir(dir).map_err(RebuildReason::damaged)?;
    let (expected, fields) = schema();
    if index.schema() != expected {
        return Err(unusable(
            "the search index was written by another version of treelog".into(),
        ));
    }
    register(&index);
    let metas = index.load_metas().map_err(RebuildReason::damaged)?;
    let Some(payload) = metas.payload else {
        return Err(unusable("the search index was left half-written".into()));
    };
    let catalog: Catalog = serde_json::from_str(&payload)
        .map_err(|error| unusable(format!("the search index's catalog is damaged ({error})")))?;
    if catalog.format != CATALOG_FORMAT {
        return Err(unusable(format!(
            "the search index has format {}, this treelog reads format {CATALOG_FORMAT}",
            catalog.format
        )));
    }
    Ok((index, fields, catalog))
}

/// Makes the index folder `dir` ready to be written: checked when it is there, else created
/// private (0700, until [`SearchStore::fit_modes`] gives it the logs' permissions). A link or
/// another user's folder is renamed aside (never followed, never cleared) and a fresh one
/// made; the reason returned says so, for the notice. A file there is left alone: the index
/// cannot be written ("file exists"), and the search runs without writing it.
fn prepare_dir(dir: &Path) -> Result<Option<RebuildReason>, SearchError> {
    let refused = match fs_safe::check_owned_dir(dir) {
        Ok(true) => return Ok(None),
        Ok(false) => None,
        Err(error) if fs_safe::refusal(&error) == Some(&fs_safe::Refusal::NotAFolder) => {
            let exists = std::io::Error::from_raw_os_error(rustix::io::Errno::EXIST.raw_os_error());
            return Err(SearchError::io(
                dir,
                "create the search index directory",
                exists,
            ));
        }
        Err(error) => match fs_safe::refusal(&error) {
            Some(refusal) => Some(refusal.to_string()),
            None => {
                return Err(SearchError::io(
                    dir,
                    "look at the search index directory",
                    error,
                ));
            }
        },
    };
    let set_aside = match refused {
        Some(why) => {
            let mut aside = dir.as_os_str().to_owned();
            aside.push(format!(
                ".set-aside-{}-{:08x}",
                std::process::id(),
                crate::format::ids::random_u64() as u32
            ));
            let aside = PathBuf::from(aside);
            fs::rename(dir, &aside).map_err(|error| {
                SearchError::io(dir, "set aside the search index directory", error)
            })?;
            Some(RebuildReason::Unusable(format!(
                "{why}: set aside as {}, not followed",
                aside.display()
            )))
        }
        None => None,
    };
    fs_safe::create_owned_dir(dir, fs_safe::dir_mode_for(fs_safe::mode_for_derived(None)))
        .map_err(|error| SearchError::io(dir, "create the search index directory", error))?;
    Ok(set_aside)
}

/// Removes everything in the index directory but the lock file, after checking again that it
/// is a folder of this user and not a link: nothing outside it is ever deleted.
fn clear(dir: &Path) -> Result<(), SearchError> {
    fs_safe::check_owned_dir(dir)
        .map_err(|error| SearchError::io(dir, "clear the search index directory", error))?;
    let entries =
        fs::read_dir(dir).map_err(|error| SearchError::io(dir, "read the directory", error))?;
    for entry in entries {
        let entry = entry.map_err(|error| SearchError::io(dir, "read the directory", error))?;
        if entry.file_name() == LOCK_FILE_NAME {
            continue;
        }
        let path = entry.path();
        let removed = if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.map_err(|error| SearchError::io(&path, "remove", error))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::KEY_HEX_LEN;

    /// Without an index directory the index is in the searched directory; with one, it is
    /// `search-` and 16 hex digits there, the same whether the searched directory is named
    /// relatively, absolutely or through a symlink, and another directory gets another one.
    #[test]
    fn index_path_in_and_out_of_the_searched_directory() {
        let root = tempfile::tempdir().unwrap();
        let searched = root.path().join("sessions");
        let other = root.path().join("others");
        fs::create_dir_all(searched.join("sub")).unwrap();
        fs::create_dir_all(&other).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&searched, &link).unwrap();
        let cache = Path::new("/cache");
        assert_eq!(index_path(&searched, None), searched.join(INDEX_DIR_NAME));
        let direct = index_path(&searched, Some(cache));
        let name = direct.file_name().unwrap().to_str().unwrap();
        assert_eq!(direct.parent(), Some(cache));
        assert!(name.starts_with("search-") && name.len() == "search-".len() + KEY_HEX_LEN);
        assert!(
            name["search-".len()..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit())
        );
        assert_eq!(index_path(&link, Some(cache)), direct);
        assert_eq!(index_path(&searched.join("sub/.."), Some(cache)), direct);
        assert_ne!(index_path(&other, Some(cache)), direct);
    }
}
