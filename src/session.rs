//! The session API: what pi's and OpenClaw's `SessionManager` offer, over the log and the
//! index. This file holds the [`Session`] handle and its life: opening, creating, forking,
//! moving the leaf, durability, and the depth-first [`TreeWalk`]. The rest lives beside it,
//! each file an `impl Session` block that imports this one (never the other way):
//! - `types.rs`: the values the API hands out and takes (entries, options, stats).
//! - `header.rs`: the session header, read from the log or made up.
//! - `queries.rs`: reads of the tree, the entries and the lines, through the index.
//! - `context_queries.rs`: the context builds (`context.rs` reads through this handle).
//! - `append.rs`: every `append_*` and the write path they share (documented there).
//! - `branched.rs`: what a session branched off at an entry holds, by pi 1.6's rules.
//! - `reports.rs`: the audit of compactions and the size stats, over the whole session.
//! - `recovery.rs`: a query or append that finds the index damaged rebuilds it and answers.
//! - `tree_view.rs`: pi's `/tree` selector over the index (its rules: `crate::tree_view`).
//! - `usage_entries.rs`: the entries pi's `/session` sums read, cut down to what they read.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::ids::{new_session_id, uuid_v4};
use crate::format::record::SEQ_NONE;
use crate::index::{IndexState, Lag, Store, sidecar_for};
use crate::storage::{FileStorage, LogStorage, MemoryStorage};
use crate::tree::{self};

mod append;
mod branched;
mod context_queries;
pub(crate) mod header;
mod queries;
mod recovery;
mod reports;
mod tree_view;
mod types;
mod usage_entries;

pub use header::Header;
pub use types::{
    BranchedEntries, Durability, Entry, IndexedEntries, MESSAGE_HEAD_KEYS, NOT_PLAIN, OnConflict,
    OpaqueRecord, PARENT_LISTED, PARENT_NULL, SessionOptions, Stamp, Stats, TIMESTAMP_LEN,
    TreeNode,
};

use header::{log_header, now_ms};

/// A store rebuilt from the log after a read found the index damaged (`recovery.rs`).
struct Recovered {
    store: Store,
    index_state: IndexState,
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
    /// into it, with no allocation per entry or per append. Not kept past
    /// [`APPEND_TEXT_KEPT_LEN_MAX`].
    append_text: String,
    /// The id and timestamp the next append gives its first entry ([`Session::stamp_next`]).
    next_stamp: Option<Stamp>,
    /// Where the sidecar is when the caller chose it ([`Session::open_storage_indexed`]).
    sidecar_at: Option<PathBuf>,
}

impl Session {
    // ---- construction ----

    /// A new session in `dir`, named `<timestamp>_<uuid>.jsonl` as pi names them. The file is
    /// created by the first append.
    pub fn create(dir: &Path, cwd: &str, options: SessionOptions) -> Result<Session> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create the directory", e))?;
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
        let storage = FileStorage::open(path).map_err(|e| Error::io(path, "open the log", e))?;
        let exists = storage
            .identity()
            .map_err(|e| Error::io(path, "look at the log", e))?
            .inode
            != 0
            || path.exists();
        let (store, index_state) = if options.use_index && exists {
            let sidecar = sidecar_for(path, options.index_dir.as_deref());
            if !options.index_write {
                Store::open_read_only(&storage, &sidecar, options.verify, &options.progress_bytes)?
            } else {
                if let Some(dir) = &options.index_dir {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| Error::io(dir, "create the index directory", e))?;
                }
                Store::open(
                    &storage,
                    &sidecar,
                    options.verify,
                    options.rebuild_index,
                    &options.progress_bytes,
                )?
            }
        } else {
            let mut store = Store::in_memory(path).with_progress(&options.progress_bytes);
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
                    damaged: false,
                },
            )
        };
        if let Some(progress) = &options.progress_bytes {
            // A fresh index read nothing: what it covers is done too.
            progress.fetch_max(
                store.indexed_len_bytes,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        let mut session =
            Session::from_parts(Box::new(storage), store, options, index_state, true)?;
        if !exists && session.options.use_index {
            session.index_state = IndexState::Unindexed {
                reason: "no log yet; the index is created by the first open after it exists".into(),
                damaged: false,
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
                damaged: false,
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
        let mut store = Store::in_memory(storage.path()).with_progress(&options.progress_bytes);
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
                damaged: false,
            },
            true,
        )
    }

    /// Opens a session on any storage backend with its sidecar index at `sidecar`: a backend
    /// whose log is not a local file (an object store) keeps its index in a local cache. The
    /// index is checked against the log, caught up or rebuilt as for a file; with
    /// [`SessionOptions::index_write`] off, a valid one is read and none is written.
    pub fn open_storage_indexed(
        storage: Box<dyn LogStorage>,
        sidecar: &Path,
        options: SessionOptions,
    ) -> Result<Session> {
        let (store, index_state) = if options.index_write {
            if let Some(dir) = sidecar.parent().filter(|dir| !dir.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::io(dir, "create the index directory", e))?;
            }
            Store::open(
                storage.as_ref(),
                sidecar,
                options.verify,
                options.rebuild_index,
                &options.progress_bytes,
            )?
        } else {
            Store::open_read_only(
                storage.as_ref(),
                sidecar,
                options.verify,
                &options.progress_bytes,
            )?
        };
        let options = SessionOptions {
            use_index: true,
            ..options
        };
        let mut session = Session::from_parts(storage, store, options, index_state, true)?;
        session.sidecar_at = Some(sidecar.to_path_buf());
        Ok(session)
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
            .map_err(|e| Error::io(storage.path(), "look at the log", e))?
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
            sidecar_at: None,
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

    /// Writes a new file at `path`, which must not exist, holding `header_line` and then every
    /// entry line of this session in file order, and syncs it: pi's `forkFrom` for a caller that
    /// draws the new session's id and time itself (the Node package), without handing the log
    /// through its own strings (a JavaScript string holds at most 512 MiB). A failed write
    /// removes the partial file.
    pub fn write_fork(&self, path: &Path, header_line: &str) -> Result<()> {
        use std::io::Write;
        let lines = self.entry_lines_jsonl()?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(path, "create", e))?;
        let written = (|| {
            file.write_all(header_line.as_bytes())?;
            file.write_all(b"\n")?;
            file.write_all(lines.as_bytes())?;
            file.sync_all()
        })();
        if let Err(error) = written {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(Error::io(path, "write", error));
        }
        crate::storage::sync_parent_dir(path).map_err(|e| Error::io(path, "sync the folder of", e))
    }

    /// A new session in the same directory holding the path from the root to `leaf_id`, with
    /// `parentSession` naming this one (pi's `createBranchedSession`): the entries of
    /// [`Session::branched_entries`], written at once. Returns the new file's path.
    pub fn create_branched_session(&self, leaf_id: &str) -> Result<PathBuf> {
        let entries = self.branched_entries(leaf_id, uuid_v4)?;
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
            &entries.lines,
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
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create the directory", e))?;
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

    /// Where this session's sidecar index is (beside the log or in
    /// [`SessionOptions::index_dir`]), or `None` when no index is used (the log was replayed
    /// into memory: the index is off, could not be written, or is read-only and missing).
    pub fn sidecar(&self) -> Option<&Path> {
        self.store.sidecar()
    }

    /// Where the sidecar of this session's log goes under its options, used or not.
    pub(crate) fn sidecar_location(&self) -> PathBuf {
        if let Some(sidecar) = &self.sidecar_at {
            return sidecar.clone();
        }
        sidecar_for(self.log_path(), self.options.index_dir.as_deref())
    }

    /// What opening found about the index.
    pub fn index_state(&self) -> &IndexState {
        match self.recovered.get() {
            Some(recovered) => &recovered.index_state,
            None => &self.index_state,
        }
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
