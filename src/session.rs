//! The session API: what pi's and OpenClaw's `SessionManager` offer, over the log and the
//! index: opening, queries, moving the leaf, durability. Appends, the write path, are in
//! `session/append.rs`; recovery from a damaged index in `session/recovery.rs`.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use crate::context::{self, Context, PiCompat, Projection};
use crate::error::{Error, Result};
use crate::format::ids::{new_entry_id, new_session_id, uuid_v8_from_name};
use crate::format::json_scan;
use crate::format::line::{
    EntryKind, Line, classify, json_str, json_text_str, relink, top_level_fields,
};
use crate::format::record::{Record, SEQ_NONE};
use crate::format::system_message::current_system_message;
use crate::format::time::{format_iso_ms, parse_iso_ms};
use crate::format::write::{NewEntry, encode_header, single_line_raw};
use crate::index::{IndexState, Lag, Store, Verify, sidecar_path};
use crate::line_reads::{self, LineTexts};
use crate::storage::{FileStorage, LogStorage, MemoryStorage, read_exact_at};
use crate::tree::{self, PathIds};

mod append;
mod recovery;
use recovery::Recovered;

/// When appended bytes are made durable (fsync of the log). The index is never fsynced per
/// append: it is a cache, rebuilt from the log after a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync after every append, before it returns: an acknowledged entry survives a crash of
    /// the process and of the machine.
    EveryAppend,
    /// fsync after every `n`th append and on [`Session::sync`] / [`Session::close`]: a process
    /// crash loses nothing acknowledged; a machine crash may lose the appends since the last
    /// fsync (at most `n - 1`).
    Batched(u32),
    /// Never fsync on its own (only [`Session::sync`], on request); the kernel writes back. A
    /// process crash loses nothing acknowledged; a machine crash may lose any append not yet
    /// written back.
    None,
}

/// What an append does when another writer appended a child of this handle's leaf since the
/// handle last looked (it would otherwise silently start a sibling branch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnConflict {
    /// Return [`Error::Conflict`] and write nothing.
    #[default]
    Fail,
    /// Move this handle's leaf to the log's current leaf and append there.
    FollowTip,
}

/// The largest append buffer a handle keeps for its next append (a batch of ~700 typical
/// entries); a larger one, left by a batch of big entries, is freed.
const APPEND_TEXT_KEPT_LEN_MAX: usize = 1 << 20;

/// How a session is opened.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub durability: Durability,
    pub on_conflict: OnConflict,
    pub verify: Verify,
    /// Rebuild the index from the log even if it looks valid.
    pub rebuild_index: bool,
    /// Use a sidecar index (false replays the log into memory, as the reference tools do).
    pub use_index: bool,
    /// Which pi's context rule `build_context` follows (format-spec/log.md §7).
    pub pi_compat: PiCompat,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            durability: Durability::None,
            on_conflict: OnConflict::Fail,
            verify: Verify::Quick,
            rebuild_index: false,
            use_index: true,
            pi_compat: PiCompat::Current,
        }
    }
}

/// The session header (first line of the log).
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The header line as stored, or as synthesised when the log has none.
    pub json: String,
    pub id: String,
    pub version: u32,
    pub timestamp: Option<String>,
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    /// The log has no readable header (missing, corrupt or not first); this one was made up in
    /// memory and the file was left as it is (OpenClaw's `recoveredCorruptHeader`).
    pub recovered: bool,
}

impl Header {
    fn parse(json: String, recovered: bool) -> Option<Header> {
        let header = match classify(&json, false, true) {
            Line::Header(header) => Header {
                id: header.id.into_owned(),
                version: header.version,
                timestamp: header.timestamp.map(Cow::into_owned),
                cwd: header.cwd.map(Cow::into_owned),
                parent_session: header.parent_session.map(Cow::into_owned),
                json: String::new(),
                recovered,
            },
            _ => return None,
        };
        Some(Header { json, ..header })
    }

    /// The file name pi gives this session: `<timestamp with : and . as ->_<id>.jsonl`.
    pub fn file_name(&self) -> String {
        let timestamp = self.timestamp.as_deref().unwrap_or_default();
        format!("{}_{}.jsonl", timestamp.replace([':', '.'], "-"), self.id)
    }

    fn new(id: String, cwd: &str, parent_session: Option<&str>, recovered: bool) -> Header {
        let timestamp = format_iso_ms(now_ms());
        let json = encode_header(&id, &timestamp, cwd, parent_session);
        Header::parse(json, recovered).expect("an encoded header parses as a header")
    }
}

/// One entry of the session.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub id: String,
    pub kind: EntryKind,
    /// `parentId` as written (`None` for null or absent); it may name no entry.
    pub parent_id: Option<String>,
    /// The entry's parent in the tree (`None` for a root), by the rules of format-spec/log.md.
    pub tree_parent_id: Option<String>,
    pub timestamp: String,
    pub depth: u32,
    pub offset_bytes: u64,
    /// The line as stored (invalid UTF-8 replaced by U+FFFD).
    pub json: String,
}

impl Entry {
    /// The entry's `type` as written (for [`EntryKind::Other`], the type this version does
    /// not know).
    pub fn type_name(&self) -> Cow<'_, str> {
        match self.kind {
            EntryKind::Other => json_scan::scan(&self.json, &["type"])
                .ok()
                .and_then(|found| found.fields[0])
                .and_then(json_text_str)
                .unwrap_or(Cow::Borrowed("other")),
            kind => Cow::Borrowed(kind.as_str()),
        }
    }

    /// A top-level field of the entry as raw JSON (the last one, if a key repeats).
    pub fn field(&self, name: &str) -> Option<Box<RawValue>> {
        top_level_fields(&self.json)
            .ok()?
            .remove(name.as_bytes())
            .map(|raw| raw.to_owned())
    }
}

/// A node of the depth-first tree walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeNode {
    pub id: String,
    pub parent_id: Option<String>,
    pub depth: u32,
    pub label: Option<String>,
    pub label_timestamp: Option<String>,
    pub kind: EntryKind,
    pub seq: u64,
}

/// A line kept verbatim that is not an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpaqueRecord {
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// A code for why (format-spec/index.md); [`OpaqueRecord::reason`] says it in words.
    pub code: u8,
}

impl OpaqueRecord {
    pub fn reason(&self) -> &'static str {
        match self.code {
            1 => "not valid JSON",
            2 => "not a JSON object",
            3 => "no string \"type\"",
            5 => "no string \"id\"",
            6 => "leaf control row",
            7 => "session header that is not the first line",
            8 => "line too long to parse",
            _ => "unknown reason",
        }
    }
}

/// Counts for `treelog info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    pub entry_count: u64,
    pub opaque_count: u64,
    pub counts_by_kind: Vec<(EntryKind, u64)>,
    pub log_len_bytes: u64,
    pub indexed_len_bytes: u64,
    /// Bytes after the last complete line (a torn or in-progress write).
    pub torn_tail_bytes: u64,
}

/// A conversation transcript: a log plus its index.
pub struct Session {
    storage: Box<dyn LogStorage>,
    store: Store,
    /// A store rebuilt from the log by a query (`&self`) that found the index damaged: it
    /// answers from then on ([`Session::store`]), and takes the place of `store` at the next
    /// call that holds `&mut self` (`settle_recovered`).
    recovered: OnceCell<Recovered>,
    options: SessionOptions,
    header: Header,
    /// The handle was opened or created on an empty log and has not seen it non-empty since:
    /// `header` is its own, not the log's (an append writes it when the log still has no
    /// non-blank line; see `header_undecided` and `adopt_log_header`).
    header_pending: bool,
    /// `header` was made up for a log whose complete lines were all blank: its first non-blank
    /// line, when one comes, decides the header (log.md §2), and the handle then adopts it.
    header_undecided: bool,
    /// This handle's leaf; `SEQ_NONE` after [`Session::reset_leaf`] or in an empty session.
    leaf_seq: u64,
    index_state: IndexState,
    poisoned: Option<String>,
    appends_since_sync: u32,
    /// Set when an append failed with [`Error::Conflict`]: the view (sequence number, log leaf)
    /// the conflict was found against. Until `refresh`, later appends check the same lines
    /// (a retry fails again instead of starting the sibling branch), and `refresh` follows the
    /// log's leaf as if the failed append had not read the log.
    conflict_base: Option<(u64, u64)>,
    persistent: bool,
    /// This handle appended at least once (it writes its index out when dropped).
    appended: bool,
    /// The buffer of the last append, kept for the next one: entries are encoded straight
    /// into it (a line allocated per entry, then copied into a batch buffer allocated per
    /// append, cost 11% of a single append's rate). Not kept past [`APPEND_TEXT_KEPT_LEN_MAX`].
    append_text: String,
    /// The id and timestamp the next append gives its first entry ([`Session::stamp_next`]).
    next_stamp: Option<Stamp>,
}

/// An id and a timestamp chosen by the caller for the next appended entry, instead of the
/// ones the handle draws. pi draws both itself (`crypto.randomUUID().slice(0, 8)` and
/// `new Date().toISOString()`); a binding that keeps pi's sources, so that a caller's
/// injected clock and ids apply as they do in pi, hands them over with
/// [`Session::stamp_next`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The entry's id: not taken by any id of the session, and without characters JSON must
    /// escape.
    pub id: String,
    /// The entry's `timestamp`, written as given (pi writes `toISOString()`), without
    /// characters JSON must escape.
    pub timestamp: String,
}

impl Session {
    // ---- construction ----

    /// A new session in `dir`, named `<timestamp>_<uuid>.jsonl` as pi names them. The file is
    /// created by the first append.
    pub fn create(dir: &Path, cwd: &str, options: SessionOptions) -> Result<Session> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        let header = Header::new(new_session_id(now_ms()), cwd, None, false);
        Session::create_at(&dir.join(header.file_name()), header, options)
    }

    fn create_at(path: &Path, header: Header, options: SessionOptions) -> Result<Session> {
        if path.exists() {
            return Err(Error::InvalidInput {
                path: path.to_path_buf(),
                reason: "a file already exists there".into(),
            });
        }
        let mut session = Session::open(path, options)?;
        session.header = header;
        session.header_pending = true;
        Ok(session)
    }

    /// Opens the log at `path`, checking and updating its index. A missing file gives a new,
    /// empty session bound to that path (as pi does); the file is created by the first append.
    /// The log is never modified by opening, whatever it contains.
    pub fn open(path: &Path, options: SessionOptions) -> Result<Session> {
        let storage = FileStorage::open(path).map_err(|e| Error::io(path, "open", e))?;
        let exists = storage
            .identity()
            .map_err(|e| Error::io(path, "stat", e))?
            .inode
            != 0
            || path.exists();
        let (store, index_state) = if options.use_index && exists {
            Store::open(
                &storage,
                &sidecar_path(path),
                options.verify,
                options.rebuild_index,
            )?
        } else {
            let mut store = Store::in_memory(path);
            store.catch_up(&storage)?;
            let reason = if exists {
                "index disabled"
            } else {
                "no log yet"
            };
            (
                store,
                IndexState::Unindexed {
                    reason: reason.into(),
                },
            )
        };
        let mut session =
            Session::from_parts(Box::new(storage), store, options, index_state, true)?;
        if !exists && session.options.use_index {
            session.index_state = IndexState::Unindexed {
                reason: "no log yet; the index is created by the first open after it exists".into(),
            };
        }
        Ok(session)
    }

    /// A session that never touches the disk.
    pub fn in_memory(cwd: &str) -> Session {
        let storage = MemoryStorage::new("<memory>", Vec::new());
        let store = Store::in_memory(Path::new("<memory>"));
        let options = SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        };
        let mut session = Session::from_parts(
            Box::new(storage),
            store,
            options,
            IndexState::Unindexed {
                reason: "in memory".into(),
            },
            false,
        )
        .expect("an empty in-memory log cannot fail to load");
        session.header = Header::new(new_session_id(now_ms()), cwd, None, false);
        session.header_pending = true;
        session
    }

    /// Opens a session on any storage backend (used by fault-injection tests). No index.
    pub fn open_storage(
        mut storage: Box<dyn LogStorage>,
        options: SessionOptions,
    ) -> Result<Session> {
        let mut store = Store::in_memory(storage.path());
        store.catch_up(storage.as_mut())?;
        let options = SessionOptions {
            use_index: false,
            ..options
        };
        Session::from_parts(
            storage,
            store,
            options,
            IndexState::Unindexed {
                reason: "custom storage".into(),
            },
            true,
        )
    }

    fn from_parts(
        storage: Box<dyn LogStorage>,
        store: Store,
        options: SessionOptions,
        index_state: IndexState,
        persistent: bool,
    ) -> Result<Session> {
        let log_len = storage
            .identity()
            .map_err(|e| Error::io(storage.path(), "stat", e))?
            .len_bytes;
        let header_pending = log_len == 0;
        let header = log_header(storage.as_ref(), &store, log_len)?;
        let header_undecided = store.settled_legacy_v1().is_none();
        Ok(Session {
            leaf_seq: store.state.leaf_seq,
            storage,
            store,
            recovered: OnceCell::new(),
            options,
            header,
            header_pending,
            header_undecided,
            index_state,
            poisoned: None,
            appends_since_sync: 0,
            conflict_base: None,
            persistent,
            appended: false,
            append_text: String::new(),
            next_stamp: None,
        })
    }

    /// The most recently modified `*.jsonl` session in `dir` whose header names `cwd`, or a new
    /// session there when none does.
    pub fn continue_recent(dir: &Path, cwd: &str, options: SessionOptions) -> Result<Session> {
        match crate::directory::most_recent(dir, Some(cwd))? {
            Some(path) => Session::open(&path, options),
            None => Session::create(dir, cwd, options),
        }
    }

    /// A new session in `dir` for `target_cwd` holding a verbatim copy of every entry of
    /// `source` (pi's `forkFrom`); its header's `parentSession` is `source`.
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        dir: &Path,
        options: SessionOptions,
    ) -> Result<Session> {
        let source_session = Session::open(
            source,
            SessionOptions {
                use_index: true,
                ..options.clone()
            },
        )?;
        let parent = std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf());
        let mut lines = Vec::new();
        for entry in source_session.entries()? {
            lines.push(entry?.json);
        }
        Session::write_new(dir, target_cwd, &parent.to_string_lossy(), &lines, options)
    }

    /// A new session in the same directory holding the path from the root to `leaf_id`, with
    /// `parentSession` naming this one (pi's `createBranchedSession`). Label entries are
    /// dropped from the copy and the labels of copied entries re-created; every copied entry
    /// is re-linked to the previous copied one, so no parent dangles (pi leaves one dangling
    /// when a label sits mid-path; OpenClaw re-links, as here). Returns the new file's path.
    pub fn create_branched_session(&self, leaf_id: &str) -> Result<PathBuf> {
        self.answering(|session| session.create_branched_session_once(leaf_id))
    }

    fn create_branched_session_once(&self, leaf_id: &str) -> Result<PathBuf> {
        let leaf_seq = self.require_seq(leaf_id)?;
        let path = tree::path_to_root(self.store(), leaf_seq)?;
        let mut lines = Vec::new();
        let mut previous: Option<String> = None;
        let mut labels = Vec::new();
        for (_, record) in &path {
            if record.kind == Some(EntryKind::Label) {
                continue;
            }
            let json = self.read_line(record)?;
            let relinked = relink(&json, previous.as_deref()).ok_or_else(|| Error::LogChanged {
                path: self.log_path().to_path_buf(),
                offset_bytes: record.offset_bytes,
                reason: "an indexed entry is no longer a JSON object".into(),
            })?;
            lines.push(relinked);
            if let Some(label) = self.store().label(&record.id)? {
                labels.push((record.id.to_string(), label));
            }
            previous = Some(record.id.to_string());
        }
        let mut taken: std::collections::HashSet<String> = path
            .iter()
            .map(|(_, record)| record.id.to_string())
            .collect();
        for (target, label) in labels {
            let id = new_entry_id(|candidate| taken.contains(candidate));
            taken.insert(id.clone());
            let entry = NewEntry::Label {
                target_id: target,
                label: Some(label.label),
            };
            lines.push(entry.encode(&id, previous.as_deref(), &label.timestamp));
            previous = Some(id);
        }
        let dir = self
            .log_path()
            .parent()
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let cwd = self.header.cwd.clone().unwrap_or_default();
        let parent =
            std::path::absolute(self.log_path()).unwrap_or_else(|_| self.log_path().to_path_buf());
        let session = Session::write_new(
            &dir,
            &cwd,
            &parent.to_string_lossy(),
            &lines,
            self.options.clone(),
        )?;
        Ok(session.log_path().to_path_buf())
    }

    /// Writes a new session file with the given entry lines, durably, and opens it.
    fn write_new(
        dir: &Path,
        cwd: &str,
        parent_session: &str,
        lines: &[String],
        options: SessionOptions,
    ) -> Result<Session> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        let header = Header::new(new_session_id(now_ms()), cwd, Some(parent_session), false);
        let path = dir.join(header.file_name());
        let mut bytes = Vec::with_capacity(
            header.json.len() + 1 + lines.iter().map(|line| line.len() + 1).sum::<usize>(),
        );
        bytes.extend_from_slice(header.json.as_bytes());
        bytes.push(b'\n');
        for line in lines {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        crate::directory::write_file_atomically(&path, &bytes)?;
        Session::open(&path, options)
    }

    // ---- accessors ----

    pub fn log_path(&self) -> &Path {
        self.storage.path()
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    pub fn cwd(&self) -> Option<&str> {
        self.header.cwd.as_deref()
    }

    /// Whether this session writes to a file (false for [`Session::in_memory`]).
    pub fn is_persisted(&self) -> bool {
        self.persistent
    }

    /// What opening found about the index.
    pub fn index_state(&self) -> &IndexState {
        match self.recovered.get() {
            Some(recovered) => &recovered.index_state,
            None => &self.index_state,
        }
    }

    /// The leaf this handle appends to.
    pub fn leaf_id(&self) -> Result<Option<String>> {
        self.answering(|session| session.id_of(session.leaf_seq))
    }

    /// The leaf the log implies (the last entry in file order, or a `leaf` row's target).
    pub fn log_leaf_id(&self) -> Result<Option<String>> {
        self.answering(|session| session.id_of(session.store().state.leaf_seq))
    }

    pub fn leaf_entry(&self) -> Result<Option<Entry>> {
        if self.leaf_seq == SEQ_NONE {
            return Ok(None);
        }
        self.answering(|session| session.entry_at(session.leaf_seq).map(Some))
    }

    /// The session name: the `name` of the last `session_info` entry in file order, unless
    /// it is empty.
    pub fn session_name(&self) -> Result<Option<String>> {
        self.answering(|session| {
            let seq = session.store().state.session_info_seq;
            if seq == SEQ_NONE {
                return Ok(None);
            }
            let entry = session.entry_at(seq)?;
            Ok(entry
                .field("name")
                .and_then(|raw| json_str(&raw).map(Cow::into_owned))
                .filter(|name| !name.is_empty()))
        })
    }

    /// The entry with this id (the last one in file order, if the id repeats).
    pub fn entry(&self, id: &str) -> Result<Option<Entry>> {
        self.answering(|session| match session.canonical_seq(id)? {
            Some(seq) => session.entry_at(seq).map(Some),
            None => Ok(None),
        })
    }

    /// The children of `id` in pi's order (by timestamp, ties in file order; with unparseable
    /// timestamps, V8's sort order: format-spec/log.md §5).
    pub fn children(&self, id: &str) -> Result<Vec<Entry>> {
        self.answering(|session| {
            let Some(seq) = session.canonical_seq(id)? else {
                return Ok(Vec::new());
            };
            tree::sorted_children(session.store(), seq)?
                .into_iter()
                .map(|(seq, _)| session.entry_at(seq))
                .collect()
        })
    }

    /// The current label of `id`, if any.
    pub fn label(&self, id: &str) -> Result<Option<String>> {
        self.answering(|session| Ok(session.store().label(id)?.map(|value| value.label)))
    }

    /// Every current label as (target id, label, timestamp), by target id.
    pub fn labels(&self) -> Result<Vec<(String, String, String)>> {
        self.answering(|session| {
            Ok(session
                .store()
                .labels()?
                .into_iter()
                .map(|(target, value)| (target, value.label, value.timestamp))
                .collect())
        })
    }

    /// Ids from the root to `leaf` (default: this handle's leaf), root first.
    pub fn path_ids(&self, leaf: Option<&str>) -> Result<Vec<String>> {
        Ok(self.path_id_list(leaf)?.to_vec())
    }

    /// [`Session::path_ids`] in one buffer (one allocation per path, not one per id): the
    /// leaf-to-root walk at its cheapest, for long paths.
    pub fn path_id_list(&self, leaf: Option<&str>) -> Result<PathIds> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            if leaf_seq == SEQ_NONE {
                return Ok(PathIds::default());
            }
            session.store().ancestor_ids(leaf_seq)
        })
    }

    /// Entries from the root to `leaf` (default: this handle's leaf), root first.
    pub fn path(&self, leaf: Option<&str>) -> Result<Vec<Entry>> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            if leaf_seq == SEQ_NONE {
                // No entry yet (an empty or header-only log), or a reset leaf: an empty path.
                return Ok(Vec::new());
            }
            tree::path_to_root(session.store(), leaf_seq)?
                .into_iter()
                .map(|(seq, record)| session.entry_from(seq, &record))
                .collect()
        })
    }

    /// Whether `ancestor` is `descendant` or one of its ancestors (O(log depth)).
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        self.answering(|session| {
            tree::is_ancestor(
                session.store(),
                session.require_seq(ancestor)?,
                session.require_seq(descendant)?,
            )
        })
    }

    /// The branch point of two entries: their deepest common ancestor, if they share a root.
    pub fn common_ancestor(&self, a: &str, b: &str) -> Result<Option<String>> {
        self.answering(|session| {
            let (a, b) = (session.require_seq(a)?, session.require_seq(b)?);
            let seq = tree::common_ancestor(session.store(), a, b)?;
            session.id_of(seq.unwrap_or(SEQ_NONE))
        })
    }

    /// The entries on each branch below the branch point of `a` and `b` (root-first order):
    /// what a "diff two branches" view shows.
    pub fn branch_difference(&self, a: &str, b: &str) -> Result<(Vec<String>, Vec<String>)> {
        self.answering(|session| {
            let (a, b) = (session.require_seq(a)?, session.require_seq(b)?);
            let common = tree::common_ancestor(session.store(), a, b)?;
            let below = |seq: u64| -> Result<Vec<String>> {
                let mut ids = Vec::new();
                let mut current = seq;
                while current != SEQ_NONE && Some(current) != common {
                    let record = session.store().existing_record(current)?;
                    ids.push(record.id.into_string());
                    current = record.parent_seq;
                }
                ids.reverse();
                Ok(ids)
            };
            Ok((below(a)?, below(b)?))
        })
    }

    /// Streams the tree depth-first in pre-order, children in pi's order. Memory is bounded by
    /// the pending siblings along the current path, not by the size of the tree.
    pub fn tree(&self) -> Result<TreeWalk<'_>> {
        Ok(TreeWalk {
            session: self,
            walk: self.answering(|session| tree::Walk::new(session.store()))?,
            yielded: 0,
        })
    }

    /// Every entry in file order (opaque lines excluded; see [`Session::opaque_records`]).
    pub fn entries(&self) -> Result<impl Iterator<Item = Result<Entry>> + '_> {
        Ok((0..self.store().record_count()).filter_map(move |seq| {
            let entry = self.answering(|session| {
                let record = session.store().existing_record(seq)?;
                match record.kind {
                    Some(_) => session.entry_from(seq, &record).map(Some),
                    None => Ok(None),
                }
            });
            entry.transpose()
        }))
    }

    /// Every entry line in file order as one JSON array (`[line,line,...]`, opaque lines
    /// excluded): what [`Session::entries`] yields, read in one sequential pass over the log
    /// and checked line by line against the index's crc32s (see `entry_lines.rs`). A caller
    /// that wants every entry (pi's `getEntries()`) pays one read of the log, not one per
    /// entry.
    pub fn entry_lines(&self) -> Result<String> {
        self.answering(|session| {
            crate::entry_lines::entry_lines_array(
                session.storage.as_ref(),
                session.store(),
                session.log_path(),
            )
        })
    }

    /// Lines kept verbatim that are not entries, in file order.
    pub fn opaque_records(&self) -> Result<Vec<OpaqueRecord>> {
        self.answering(|session| {
            let mut out = Vec::new();
            for seq in 0..session.store().record_count() {
                let record = session.store().existing_record(seq)?;
                if record.kind.is_none() {
                    out.push(OpaqueRecord {
                        offset_bytes: record.offset_bytes,
                        len_bytes: u64::from(record.len_bytes),
                        code: record.opaque_code,
                    });
                }
            }
            Ok(out)
        })
    }

    pub fn stats(&mut self) -> Result<Stats> {
        self.settle_recovered();
        let state = &self.store().state;
        let log_len = self
            .storage
            .identity()
            .map_err(|e| Error::io(self.storage.path(), "stat", e))?
            .len_bytes;
        Ok(Stats {
            entry_count: state.entry_count,
            opaque_count: state.opaque_count,
            counts_by_kind: EntryKind::ALL
                .iter()
                .map(|kind| (*kind, state.kind_counts[*kind as usize]))
                .collect(),
            log_len_bytes: log_len,
            indexed_len_bytes: self.store().indexed_len_bytes,
            torn_tail_bytes: log_len.saturating_sub(self.store().indexed_len_bytes),
        })
    }

    /// Reads the whole index and checks every stored value as a read would (seals, tilings,
    /// counts); damage found is rebuilt from the log, as any read does, and
    /// [`Session::index_state`] then says so. What `treelog reindex` runs without `--force`.
    pub fn check_index(&self) -> Result<()> {
        self.answering(|session| session.store().check_stored())
    }

    /// Bytes redb stores for this session's index tables (0 without a sidecar).
    pub fn index_stored_bytes(&self) -> Result<u64> {
        self.answering(|session| session.store().stored_bytes())
    }

    /// pi's `buildSessionContext` for `leaf` (default: this handle's leaf). Reads only the
    /// entries from the latest compaction's first kept entry to the leaf.
    pub fn build_context(&self, leaf: Option<&str>) -> Result<Context> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::build(session, leaf_seq, session.options.pi_compat)
        })
    }

    /// pi 1.6's `buildContextEntries` for `leaf` (default: this handle's leaf): the latest
    /// compaction on the path, its kept entries but system messages, then the entries after
    /// it; without a compaction, the whole path.
    pub fn context_entries(&self, leaf: Option<&str>) -> Result<Vec<Entry>> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::context_entry_seqs(session, leaf_seq)?
                .into_iter()
                .map(|seq| session.entry_at(seq))
                .collect()
        })
    }

    /// pi 1.6's `buildSessionProjection` for `leaf` (default: this handle's leaf): each
    /// context entry with the messages it contributes, edits applied.
    pub fn build_projection(&self, leaf: Option<&str>) -> Result<Projection> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::build_projection(session, leaf_seq)
        })
    }

    /// The number of entries (the header and opaque records excluded): pi's
    /// `getEntryCount()`, without reading them.
    pub fn entry_count(&self) -> Result<u64> {
        Ok(self.store().state.entry_count)
    }

    /// Whether `id` is taken by an entry or an opaque record of the session (pi's
    /// `generateId` draws again on such an id).
    pub fn id_taken(&self, id: &str) -> Result<bool> {
        Ok(self.store.seq_of(id)?.is_some())
    }

    /// Gives the next append's first entry `stamp`'s id and timestamp (the entries after it in
    /// one [`Session::append_many`] get `stamp`'s timestamp and ids the handle draws). Refused,
    /// with nothing changed, when the id is taken or empty, or when either needs a JSON escape
    /// (a quote, a backslash, a control character). An append that fails uses the stamp up
    /// too; an id taken meanwhile by another writer fails the append.
    pub fn stamp_next(&mut self, stamp: Stamp) -> Result<()> {
        let needs_escape = |text: &str| text.chars().any(|c| c == '"' || c == '\\' || c < ' ');
        let reason = if stamp.id.is_empty() {
            Some("an entry id must not be empty".to_string())
        } else if needs_escape(&stamp.id) || needs_escape(&stamp.timestamp) {
            Some("an entry id or timestamp must not need JSON escapes".to_string())
        } else if self.id_taken(&stamp.id)? {
            Some(format!("the id {} is taken", stamp.id))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(Error::InvalidInput {
                path: self.log_path().to_path_buf(),
                reason,
            });
        }
        self.next_stamp = Some(stamp);
        Ok(())
    }

    // ---- moving the leaf ----

    /// Moves this handle's leaf to `id` (in memory: the log records a branch only when the
    /// next entry is appended, as in pi).
    pub fn branch(&mut self, id: &str) -> Result<()> {
        self.settle_recovered();
        self.leaf_seq = self.answering(|session| session.require_seq(id))?;
        Ok(())
    }

    /// The next append starts a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf_seq = SEQ_NONE;
    }

    /// Catches up with entries other processes appended. If this handle was at the log's
    /// leaf, it follows the log's new leaf.
    pub fn refresh(&mut self) -> Result<()> {
        self.settle_recovered();
        let leaf_before = match self.conflict_base.take() {
            Some((_, leaf_before)) => leaf_before,
            None => self.store.state.leaf_seq,
        };
        match self.catch_up_log() {
            // A rebuilt index has read the whole log: what is left is the header and the leaf.
            Err(damage @ Error::Index { .. }) => {
                self.recover_now(damage)?;
                self.catch_up_log()?;
            }
            other => other?,
        }
        if self.leaf_seq == leaf_before {
            self.leaf_seq = self.store.state.leaf_seq;
        }
        Ok(())
    }

    /// Reads what other processes appended since this handle last looked.
    fn catch_up_log(&mut self) -> Result<()> {
        let log_len = self.store.catch_up(self.storage.as_mut())?;
        self.after_reload(log_len)?;
        self.adopt_log_header(log_len)
    }

    /// Makes every append durable (an fsync of the log, whatever the durability policy: the
    /// caller asks for it) and writes pending index entries.
    pub fn sync(&mut self) -> Result<()> {
        self.finish(true)
    }

    /// Releases the session: fsyncs the log unless the policy is [`Durability::None`], and
    /// writes pending index entries.
    pub fn close(mut self) -> Result<()> {
        let fsync = self.options.durability != Durability::None;
        self.finish(fsync)
    }

    fn finish(&mut self, fsync: bool) -> Result<()> {
        self.settle_recovered();
        if let Some(reason) = &self.poisoned {
            return Err(Error::Poisoned {
                path: self.log_path().to_path_buf(),
                reason: reason.clone(),
            });
        }
        if fsync {
            self.sync_log()?;
        }
        self.store.flush_if(self.storage.as_mut(), Lag::Any)
    }

    // ---- helpers ----

    fn raw(&self, json: &str, what: &str) -> Result<Box<RawValue>> {
        single_line_raw(json).map_err(|error| Error::InvalidInput {
            path: self.log_path().to_path_buf(),
            reason: format!("{what} is not valid JSON: {error}"),
        })
    }

    /// A fresh 8-hex id, unique among the session's ids and `also_taken` (the batch's ids so
    /// far): the next of a reserved run when one is free, else a random one looked up.
    fn new_id(&mut self, also_taken: &[String]) -> Result<String> {
        let in_batch = |candidate: &str| also_taken.iter().any(|taken| taken == candidate);
        if let Some(id) = self.store.reserved_entry_id(in_batch)? {
            return Ok(id);
        }
        let mut lookup_error = None;
        let id = new_entry_id(|candidate| {
            if in_batch(candidate) {
                return true;
            }
            match self.store().seq_of(candidate) {
                Ok(found) => found.is_some(),
                Err(error) => {
                    lookup_error = Some(error);
                    true
                }
            }
        });
        match lookup_error {
            Some(error) => Err(error),
            None => Ok(id),
        }
    }

    fn id_of(&self, seq: u64) -> Result<Option<String>> {
        if seq == SEQ_NONE {
            return Ok(None);
        }
        Ok(Some(self.store().existing_record(seq)?.id.into_string()))
    }

    /// The sequence number of the canonical entry `id`, if there is one.
    fn canonical_seq(&self, id: &str) -> Result<Option<u64>> {
        let Some(seq) = self.store().seq_of(id)? else {
            return Ok(None);
        };
        Ok(self.store().existing_record(seq)?.kind.map(|_| seq))
    }

    fn require_seq(&self, id: &str) -> Result<u64> {
        self.canonical_seq(id)?.ok_or_else(|| Error::EntryNotFound {
            path: self.log_path().to_path_buf(),
            id: id.into(),
        })
    }

    fn leaf_or(&self, leaf: Option<&str>) -> Result<u64> {
        match leaf {
            Some(id) => self.require_seq(id),
            None => Ok(self.leaf_seq),
        }
    }

    /// The store that answers: the one rebuilt after a read found the index damaged, if any.
    pub(crate) fn store(&self) -> &Store {
        match self.recovered.get() {
            Some(recovered) => &recovered.store,
            None => &self.store,
        }
    }

    /// The lines of `records` (in file order along a path), each checked against its crc32,
    /// in one shared buffer. Lines that lie close together, as a path's lines usually do, are
    /// read with one read into that buffer, and values cut out of them share it: a context of
    /// thousands of messages then touches its bytes once instead of copying them three times
    /// (in a fresh process, each new page of memory costs a fault).
    pub(crate) fn read_lines(&self, records: &[&Record]) -> Result<LineTexts> {
        for record in records {
            self.check_line_bounds(record)?;
        }
        line_reads::read_lines(self.storage.as_ref(), self.log_path(), records)
    }

    fn check_crc(&self, record: &Record, bytes: &[u8]) -> Result<()> {
        line_reads::check_crc(self.log_path(), record, bytes)
    }

    /// The line of `record`, checked against its crc32 before it is trusted.
    pub(crate) fn read_line(&self, record: &Record) -> Result<String> {
        self.check_line_bounds(record)?;
        let mut bytes = vec![0; record.len_bytes as usize];
        read_exact_at(self.storage.as_ref(), record.offset_bytes, &mut bytes).map_err(|error| {
            Error::LogChanged {
                path: self.log_path().to_path_buf(),
                offset_bytes: record.offset_bytes,
                reason: format!("cannot read the indexed line: {error}"),
            }
        })?;
        self.checked_line(record, bytes)
    }

    /// A record from a damaged index could name any range: it must lie inside the indexed
    /// prefix and be no longer than a parsed line can be, before a buffer is allocated for it.
    fn check_line_bounds(&self, record: &Record) -> Result<()> {
        if !self.store().holds_line_of(record)
            || record.len_bytes as usize > crate::limits::LINE_LEN_MAX
        {
            return Err(Error::Index {
                path: crate::index::sidecar_path(self.log_path()),
                reason: format!(
                    "a record names bytes {}..+{} outside the {} indexed bytes of the log",
                    record.offset_bytes,
                    record.len_bytes,
                    self.store().indexed_len_bytes
                ),
            });
        }
        Ok(())
    }

    /// `bytes`, read at `record`'s offset, as text once its crc32 matches the index.
    fn checked_line(&self, record: &Record, bytes: Vec<u8>) -> Result<String> {
        self.check_crc(record, &bytes)?;
        Ok(match crate::format::utf8_string(bytes) {
            Ok(text) => text,
            Err(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    /// The entry whose sequence number is `seq` (a [`TreeNode::seq`]): a tree walk's entries
    /// read without an id lookup each.
    pub fn entry_at(&self, seq: u64) -> Result<Entry> {
        let record = self.store().existing_record(seq)?;
        self.entry_from(seq, &record)
    }

    fn entry_from(&self, _seq: u64, record: &Record) -> Result<Entry> {
        let json = self.read_line(record)?;
        // One pass validates the line and finds the two fields (the last of a repeated key).
        let [parent_raw, timestamp_raw] = match json_scan::scan(&json, &["parentId", "timestamp"]) {
            Ok(found) if found.is_object => found.fields,
            _ => {
                return Err(Error::LogChanged {
                    path: self.log_path().to_path_buf(),
                    offset_bytes: record.offset_bytes,
                    reason: "an indexed entry is no longer a JSON object".into(),
                });
            }
        };
        let text = |raw: Option<&str>| raw.and_then(json_text_str).map(Cow::into_owned);
        let tree_parent_id = self.id_of(record.parent_seq)?;
        let parent_id =
            if self.store().state.header_version < 2 && !self.store().state.header_recovered {
                tree_parent_id.clone()
            } else {
                text(parent_raw)
            };
        let timestamp = text(timestamp_raw).unwrap_or_default();
        let kind = record.kind.ok_or_else(|| Error::LogChanged {
            path: self.log_path().to_path_buf(),
            offset_bytes: record.offset_bytes,
            reason: "an opaque record was read as an entry".into(),
        })?;
        Ok(Entry {
            id: record.id.to_string(),
            kind,
            parent_id,
            tree_parent_id,
            timestamp,
            depth: record.depth,
            offset_bytes: record.offset_bytes,
            json,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Best effort: an index that is not flushed is caught up by the next open. A handle
        // that appended writes everything out; one that only read, only a large catch-up.
        self.settle_recovered();
        if self.poisoned.is_none() {
            let lag = if self.appended { Lag::Any } else { Lag::Reader };
            let _ = self.store.flush_if(self.storage.as_mut(), lag);
        }
    }
}

/// The depth-first walk returned by [`Session::tree`].
pub struct TreeWalk<'a> {
    session: &'a Session,
    walk: tree::Walk,
    /// Nodes handed out so far: a walk that meets a damaged index starts again on the rebuilt
    /// one and skips as many (the same tree, walked in the same order).
    yielded: u64,
}

impl TreeWalk<'_> {
    fn next_node(&mut self) -> Option<Result<TreeNode>> {
        let store = self.session.store();
        let (seq, record) = match self.walk.next(store) {
            Ok(Some(next)) => next,
            Ok(None) => return None,
            Err(error) => return Some(Err(error)),
        };
        let node = (|| {
            let label = store.label(&record.id)?;
            Ok(TreeNode {
                parent_id: self.session.id_of(record.parent_seq)?,
                depth: record.depth,
                label: label.as_ref().map(|value| value.label.clone()),
                label_timestamp: label.map(|value| value.timestamp),
                kind: record.kind.expect("the walk yields only entries"),
                id: record.id.into_string(),
                seq,
            })
        })();
        Some(node)
    }

    /// After the index was rebuilt: the walk on the new one, past the nodes already handed out.
    fn restart(&mut self) -> Result<()> {
        self.walk = tree::Walk::new(self.session.store())?;
        for _ in 0..self.yielded {
            if let Some(Err(error)) = self.next_node() {
                return Err(error);
            }
        }
        Ok(())
    }
}

impl Iterator for TreeWalk<'_> {
    type Item = Result<TreeNode>;

    fn next(&mut self) -> Option<Result<TreeNode>> {
        let node = match self.next_node() {
            Some(Err(Error::Index { reason, .. })) if self.session.recover(&reason) => {
                if let Err(error) = self.restart() {
                    return Some(Err(error));
                }
                self.next_node()
            }
            node => node,
        };
        if matches!(node, Some(Ok(_))) {
            self.yielded += 1;
        }
        node
    }
}

/// The header a log of `log_len` bytes has: its first line's, or one made up in memory
/// (recovered when the log has bytes but no header; pending when it is empty).
fn log_header(storage: &dyn LogStorage, store: &Store, log_len: u64) -> Result<Header> {
    let state = &store.state;
    let header = if state.first_line_is_header() {
        let mut bytes = vec![0; state.header_len_bytes as usize];
        read_exact_at(storage, state.header_offset_bytes, &mut bytes)
            .map_err(|e| Error::io(storage.path(), "read", e))?;
        Header::parse(String::from_utf8_lossy(&bytes).into_owned(), false)
    } else {
        None
    };
    Ok(match header {
        Some(header) => header,
        None => {
            let cwd = std::env::current_dir()
                .map(|dir| dir.to_string_lossy().into_owned())
                .unwrap_or_default();
            // An empty log gets a new session's header, written with its first append, as pi
            // writes one into an empty file: a fresh UUIDv7 (a handle that finds the log
            // written by another adopts that header). A log with bytes but no header gets an
            // id derived from its path, so that every open, and `treelog repair`'s header,
            // agree on it.
            let id = if log_len == 0 {
                new_session_id(now_ms())
            } else {
                uuid_v8_from_name(storage.path().as_os_str().as_encoded_bytes())
            };
            Header::new(id, &cwd, None, log_len > 0)
        }
    })
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or(0)
}

/// The epoch milliseconds of an entry timestamp, as JavaScript's `Date` gives them (`None`
/// for `NaN`).
pub(crate) fn timestamp_ms(timestamp: &str) -> Option<i64> {
    parse_iso_ms(timestamp)
}
