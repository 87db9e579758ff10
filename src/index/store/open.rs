//! Opening a sidecar: checks the committed snapshot and state against the log (header,
//! length, the last hash block, the file's identity, the last record; every block on a full
//! check), catches the index up, and rebuilds it on any doubt (format-spec/index.md §3). It
//! decides what an open reports ([`IndexState`]); it does not write the index itself (the
//! flush and the rebuild do).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::handle::{
    Db, DropGuarded, error_reason, guarded, index_error, open_database, open_database_checked,
    open_database_read_only,
};
use super::overlay::Overlay;
use super::schema::{
    BLOCKS, META, META_SCHEMA, META_SNAPSHOT, META_STATE, SCHEMA_CHANGED_REASON, SCHEMA_MAGIC,
    SCHEMA_VERSION, unseal_block,
};
use super::{IndexState, Lag, NOT_REBUILT, Progress, Store, Verify};
use crate::error::{Error, Result};
use crate::format::line::Line;
use crate::format::record::{SEQ_NONE, Snapshot, State};
use crate::index::classify::classify_bytes;
use crate::index::hashing::{PrefixHasher, block_hash};
use crate::limits::HASH_BLOCK_LEN;
use crate::storage::{LogStorage, read_exact_at};

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

impl Store {
    /// Opens (or creates) the sidecar of `storage`'s log, checks it and brings it up to date.
    pub fn open(
        storage: &dyn LogStorage,
        sidecar_path: &Path,
        verify: Verify,
        force_rebuild: bool,
        progress: &Progress,
    ) -> Result<(Store, IndexState)> {
        // A sidecar that is a link is neither read, written nor replaced: whoever made it may
        // mean the write to land elsewhere. The log answers instead.
        let sidecar_meta = std::fs::symlink_metadata(sidecar_path);
        if sidecar_meta
            .as_ref()
            .is_ok_and(|meta| meta.file_type().is_symlink())
        {
            let refusal = crate::fs_safe::Refusal::Link;
            let reason = format!("{NOT_REBUILT}: the sidecar is not used ({refusal})");
            return Store::replayed(storage, reason, false, progress);
        }
        // An index no more readable than its log, one written by an older treelog included.
        if let Ok(meta) = &sidecar_meta {
            let mode = crate::fs_safe::mode_derived_from(storage.path());
            if meta.permissions().mode() & 0o777 & !mode != 0 {
                let _ = crate::fs_safe::narrow_file(sidecar_path, mode);
            }
        }
        let mut store = Store::in_memory(storage.path()).with_progress(progress);
        store.sidecar_path = Some(sidecar_path.to_path_buf());
        let rebuild_reason = if force_rebuild {
            Some(Doubt::stale("rebuild requested"))
        } else if sidecar_meta.is_err() {
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
                    let reason = format!("{reason}; {NOT_REBUILT}: {error}");
                    return Store::replayed(storage, reason, false, progress);
                }
                IndexState::Rebuilt { reason, damaged }
            }
        };
        Ok((store, state))
    }

    /// Opens the sidecar of `storage`'s log without ever writing it (`SessionOptions::index_write`
    /// off): a valid index answers, caught up in memory (the lines after it go to the overlay,
    /// which is never flushed); a missing or doubtful one is neither built nor rebuilt, and the
    /// log is replayed into memory instead. redb's page integrity check and its repair of an
    /// interrupted commit need a read-write open, so neither runs here: [`Verify::Full`] still
    /// re-reads every hash block of the log.
    pub fn open_read_only(
        storage: &dyn LogStorage,
        sidecar_path: &Path,
        verify: Verify,
        progress: &Progress,
    ) -> Result<(Store, IndexState)> {
        const NOT_WRITTEN: &str = "index writes are off";
        // `damaged`: the sidecar is there but cannot be trusted, as a writable open would
        // report it before rebuilding.
        let replay =
            |reason: String, damaged: bool| Store::replayed(storage, reason, damaged, progress);
        if !sidecar_path.exists() {
            return replay(format!("no index yet; {NOT_WRITTEN}"), false);
        }
        let mut store = Store::in_memory(storage.path()).with_progress(progress);
        store.read_only = true;
        store.sidecar_path = Some(sidecar_path.to_path_buf());
        match guarded(sidecar_path, || open_database_read_only(sidecar_path)) {
            Ok(db) => store.db = Some(db),
            Err(error) => {
                return replay(
                    format!(
                        "the sidecar cannot be opened read-only ({}); {NOT_WRITTEN}",
                        error_reason(&error)
                    ),
                    true,
                );
            }
        }
        match guarded(sidecar_path, || store.load_and_check(storage, verify)) {
            Ok(Ok(())) => {}
            Ok(Err(Doubt { reason, damaged })) => {
                return replay(format!("{reason}; not rebuilt: {NOT_WRITTEN}"), damaged);
            }
            // The index itself failed to read (corrupt pages, a redb panic).
            Err(Error::Index { reason, .. }) => {
                return replay(format!("{reason}; not rebuilt: {NOT_WRITTEN}"), true);
            }
            Err(error) => return Err(error),
        }
        let before = store.indexed_len_bytes;
        let seq_before = store.next_seq;
        let caught_up = store
            .catch_up_lines(storage)
            .and_then(|len_bytes| store.index_unterminated_line(storage, len_bytes));
        match caught_up {
            Ok(()) if store.indexed_len_bytes == before => Ok((store, IndexState::Fresh)),
            Ok(()) => {
                let state = IndexState::CaughtUp {
                    bytes: store.indexed_len_bytes - before,
                    lines: store.next_seq - seq_before,
                };
                Ok((store, state))
            }
            Err(Error::Index { reason, .. }) => {
                replay(format!("{reason}; not rebuilt: {NOT_WRITTEN}"), true)
            }
            Err(error) => Err(error),
        }
    }

    /// A store holding the whole log replayed into memory, no sidecar, reported as
    /// [`IndexState::Unindexed`] for `reason` (`damaged`: a damaged sidecar was left alone).
    pub fn replayed(
        storage: &dyn LogStorage,
        reason: String,
        damaged: bool,
        progress: &Progress,
    ) -> Result<(Store, IndexState)> {
        let mut store = Store::in_memory(storage.path()).with_progress(progress);
        store.catch_up(storage)?;
        Ok((store, IndexState::Unindexed { reason, damaged }))
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
            .map_err(|e| Error::io(storage.path(), "look at the log", e))?;
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
                .map_err(|e| Error::io(storage.path(), "read the log", e))?;
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
            .map_err(|e| Error::io(storage.path(), "read the log", e))?;
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
                    .map_err(|e| Error::io(storage.path(), "read the log", e))?;
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
                    .map_err(|e| Error::io(storage.path(), "read the log", e))?;
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
                "the last record ({seq}) names id {}, its line {}",
                crate::error::quoted(record.id.as_str()),
                crate::error::quoted(&id)
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
                .map_err(|e| Error::io(storage.path(), "read the log", e))?;
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

    pub(super) fn header_session_id(&self, storage: &dyn LogStorage) -> Result<String> {
        if !self.state.first_line_is_header() {
            return Ok(String::new());
        }
        let mut header = vec![0; self.state.header_len_bytes as usize];
        read_exact_at(storage, self.state.header_offset_bytes, &mut header)
            .map_err(|e| Error::io(storage.path(), "read the log", e))?;
        let text = String::from_utf8_lossy(&header);
        Ok(match crate::format::line::classify(&text, false, true) {
            crate::format::line::Line::Header(header) => header.id.into_owned(),
            _ => String::new(),
        })
    }
}
