//! Appends: every `append_*` of the session API, and the write path they share. Write path
//! of one append, in order (reordering breaks the guarantees):
//!
//! 1. refuse if an earlier write or sync failed (the handle is poisoned);
//! 2. take the log's exclusive advisory lock;
//! 3. catch up with lines other processes appended, and apply the conflict rule;
//! 4. write the new line(s) with one `O_APPEND` write (a `\n` first if the log ends in a torn
//!    line or in a complete last line without its `\n`; the header first if no line of the
//!    log is JSON; refused, nothing written, if the log has no header pi reads first or is
//!    v1/v2);
//! 5. fsync the log as the durability policy says;
//! 6. index the new lines: from memory when the log's length shows that it holds exactly the
//!    bytes written after the indexed ones, else read back, so the index sees exactly the file;
//! 7. release the lock; flush the index when enough is pending.
//!
//! IMPORTANT: the index is never flushed before the log bytes it describes are written.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::header::{log_header, now_ms};
use super::{Durability, OnConflict, Session, Stamp};
use crate::context::{self, PiCompat};
use crate::error::{Error, Result};
use crate::format::ids::new_entry_id;
use crate::format::json_scan;
use crate::format::line::{EntryKind, json_text_str};
use crate::format::record::SEQ_NONE;
use crate::format::system_message::current_system_message;
use crate::format::time::format_iso_ms;
use crate::format::write::{NewEntry, single_line_raw};
use crate::index::Lag;
use crate::tree;

/// The largest append buffer a handle keeps for its next append (a batch of ~700 typical
/// entries); a larger one, left by a batch of big entries, is freed.
const APPEND_TEXT_KEPT_LEN_MAX: usize = 1 << 20;

/// How many times one append starts again after another writer extended the log between its
/// catch-up and its write (a backend with conditional appends); each time, someone else's
/// append succeeded.
const APPEND_RACES_MAX: u32 = 64;

impl Session {
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

    // ---- appends: each returns the new entry's id ----

    /// Appends a `message` entry. `message` is the message object as JSON; it is stored
    /// byte for byte (line breaks, which JSON allows only as whitespace, become spaces).
    pub fn append_message(&mut self, message: &str) -> Result<String> {
        let message = self.raw(message, "message")?;
        self.append(NewEntry::Message { message })
    }

    pub fn append_thinking_level_change(&mut self, thinking_level: &str) -> Result<String> {
        self.append(NewEntry::ThinkingLevelChange {
            thinking_level: thinking_level.into(),
        })
    }

    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        self.append(NewEntry::ModelChange {
            provider: provider.into(),
            model_id: model_id.into(),
        })
    }

    /// Appends a `compaction` entry, as pi 1.6's `appendCompaction`: `first_kept_entry_id`
    /// `None` names the compaction itself (nothing before it is kept); `tokens_before`,
    /// `details` and `usage` are raw JSON. The system message in force on this handle's
    /// context (every system message replayed, `format::system_message`) is stored with it,
    /// as pi 1.6 stores it, so that it leads the context after the compaction.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: Option<&str>,
        tokens_before: &str,
        details: Option<&str>,
        from_hook: Option<bool>,
        usage: Option<&str>,
    ) -> Result<String> {
        let tokens_before = self.raw(tokens_before, "tokensBefore")?;
        let details = details
            .map(|details| self.raw(details, "details"))
            .transpose()?;
        let usage = usage.map(|usage| self.raw(usage, "usage")).transpose()?;
        self.settle_recovered();
        let context =
            self.answering(|session| context::build(session, session.leaf_seq, PiCompat::Current))?;
        let system_message =
            current_system_message(context.messages.iter().map(|message| message.get()), 0)
                .map(|json| self.raw(&json, "systemMessage"))
                .transpose()?;
        self.append(NewEntry::Compaction {
            summary: summary.into(),
            first_kept_entry_id: first_kept_entry_id.map(Into::into),
            tokens_before,
            details,
            usage,
            from_hook,
            system_message,
        })
    }

    /// Appends a `usage` entry (pi 1.6): model-attributed usage outside the context; `usage`
    /// is raw JSON, and an empty `note` is left out as pi leaves it out.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: &str,
        note: Option<&str>,
    ) -> Result<String> {
        let usage = self.raw(usage, "usage")?;
        self.append(NewEntry::Usage {
            kind: kind.into(),
            provider: provider.into(),
            model: model.into(),
            usage,
            note: note.filter(|note| !note.is_empty()).map(Into::into),
        })
    }

    /// Appends a `context_edit` entry (pi 1.6's `appendContextEdit`): `replacement` is raw
    /// JSON `{"content": string | array}`, or `None` to remove `target_id` from the context.
    /// As in pi, the target must be on this handle's branch and be a user, assistant or tool
    /// result message or a custom message; a string replacement of an assistant or tool
    /// result is stored as one text part.
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<&str>,
    ) -> Result<String> {
        self.settle_recovered();
        let invalid = |reason: String| Error::InvalidInput {
            path: self.log_path().to_path_buf(),
            reason,
        };
        let replacement = replacement
            .map(|json| self.raw(json, "replacement"))
            .transpose()?;
        let content = match &replacement {
            None => None,
            Some(raw) => {
                let content = json_scan::scan(raw.get(), &["content"])
                    .ok()
                    .filter(|found| found.is_object)
                    .and_then(|found| found.fields[0])
                    .filter(|content| content.starts_with(['"', '[']));
                match content {
                    Some(content) => Some(content.to_string()),
                    None => {
                        return Err(invalid(
                            "context edit replacement must be null or an object with string or \
                             array content"
                                .into(),
                        ));
                    }
                }
            }
        };
        let on_branch = self.answering(|session| {
            let target_seq = session.require_seq(target_id)?;
            let on_branch = session.leaf_seq != SEQ_NONE
                && tree::is_ancestor(session.store(), target_seq, session.leaf_seq)?;
            Ok(on_branch.then_some(target_seq))
        })?;
        let Some(target_seq) = on_branch else {
            return Err(invalid(format!(
                "entry {target_id} is not on the active branch"
            )));
        };
        let target = self.answering(|session| session.entry_at(target_seq))?;
        let role = match target.kind {
            EntryKind::CustomMessage => Some("custom".to_string()),
            EntryKind::Message => target
                .field("message")
                .and_then(|message| {
                    json_scan::scan(message.get(), &["role"])
                        .ok()
                        .and_then(|found| found.fields[0].and_then(json_text_str))
                        .map(Cow::into_owned)
                })
                .filter(|role| matches!(role.as_str(), "user" | "assistant" | "toolResult")),
            _ => None,
        };
        let Some(role) = role else {
            return Err(invalid(format!(
                "entry {target_id} does not contribute editable model content"
            )));
        };
        let replacement = match (content, replacement) {
            (Some(content), _)
                if content.starts_with('"')
                    && matches!(role.as_str(), "assistant" | "toolResult") =>
            {
                self.raw(
                    &format!("{{\"content\":[{{\"type\":\"text\",\"text\":{content}}}]}}"),
                    "replacement",
                )?
            }
            (_, Some(replacement)) => replacement,
            (_, None) => self.raw("null", "replacement")?,
        };
        self.append(NewEntry::ContextEdit {
            target_id: target_id.into(),
            replacement,
        })
    }

    /// Appends a `custom` entry (extension state; never part of the context).
    pub fn append_custom_entry(&mut self, custom_type: &str, data: Option<&str>) -> Result<String> {
        let data = data.map(|data| self.raw(data, "data")).transpose()?;
        self.append(NewEntry::Custom {
            custom_type: custom_type.into(),
            data,
        })
    }

    /// Appends a `custom_message` entry; `content` and `details` are raw JSON.
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: &str,
        display: bool,
        details: Option<&str>,
    ) -> Result<String> {
        let content = self.raw(content, "content")?;
        let details = details
            .map(|details| self.raw(details, "details"))
            .transpose()?;
        self.append(NewEntry::CustomMessage {
            custom_type: custom_type.into(),
            content,
            display,
            details,
        })
    }

    /// Appends a `session_info` entry naming the session (trimmed, as pi does; empty clears).
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        self.append(NewEntry::SessionInfo {
            name: name.trim().into(),
        })
    }

    /// Appends a `label` entry setting (or, with `None` or "", clearing) the label of
    /// `target_id`, which must exist.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        self.require_seq(target_id)?;
        self.append(NewEntry::Label {
            target_id: target_id.into(),
            label: label.filter(|label| !label.is_empty()).map(Into::into),
        })
    }

    /// Moves the leaf to `from_id` (or to no entry) and appends a `branch_summary` there, as
    /// pi 1.6's `branchWithSummary`: its `fromId` names the leaf being left (`"root"` when
    /// there is none; pi 0.73.1 wrote the branch point there); `details` and `usage` are raw
    /// JSON.
    pub fn branch_with_summary(
        &mut self,
        from_id: Option<&str>,
        summary: &str,
        details: Option<&str>,
        from_hook: Option<bool>,
        usage: Option<&str>,
    ) -> Result<String> {
        let details = details
            .map(|details| self.raw(details, "details"))
            .transpose()?;
        let usage = usage.map(|usage| self.raw(usage, "usage")).transpose()?;
        let left_leaf = self.id_of(self.leaf_seq)?;
        match from_id {
            Some(id) => self.branch(id)?,
            None => self.reset_leaf(),
        }
        self.append(NewEntry::BranchSummary {
            from_id: left_leaf.unwrap_or_else(|| "root".into()),
            summary: summary.into(),
            details,
            usage,
            from_hook,
        })
    }

    /// Appends any entry as a child of this handle's leaf; the entry becomes the leaf.
    pub fn append(&mut self, entry: NewEntry) -> Result<String> {
        let mut ids = self.append_many(vec![entry])?;
        Ok(ids.pop().expect("append_many returns one id per entry"))
    }

    /// Appends entries as a chain from this handle's leaf (each the child of the one before),
    /// under one lock, with one write and at most one fsync: what an agent does when a turn
    /// produces several entries at once. The last entry becomes the leaf.
    pub fn append_many(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>> {
        if let Some(reason) = &self.poisoned {
            return Err(Error::Poisoned {
                path: self.log_path().to_path_buf(),
                reason: reason.clone(),
            });
        }
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        self.settle_recovered();
        if let Err(error) = self.storage.lock() {
            // Locking opens the log for appending, creating it when it does not exist yet.
            let missing = self
                .storage
                .identity()
                .is_ok_and(|identity| identity == crate::storage::FileIdentity::default());
            let operation = if missing {
                "create the log"
            } else {
                "open the log for appending"
            };
            return Err(Error::io(self.storage.path(), operation, error));
        }
        // Damage met before anything was written (catching up, checking for conflicts,
        // choosing ids) rebuilds the index, and the append starts again on the new one. Damage
        // met after the write is handled where it is met (`append_locked`), never retried.
        let stamp = self.next_stamp.take();
        // A backend with conditional appends (an object store) may find that another writer
        // extended the log between the catch-up and the write: nothing was written, and the
        // append starts again from the catch-up, as if the lock had been taken after that
        // writer (the conflict rule applies to what it wrote).
        let mut races = 0;
        let result = loop {
            let attempt = match self.append_locked(&entries, stamp.clone()) {
                Err(damage @ Error::Index { .. }) if self.poisoned.is_none() => self
                    .recover_now(damage)
                    .and_then(|()| self.append_locked(&entries, stamp.clone())),
                result => result,
            };
            match attempt {
                Err(Error::Io { ref source, .. })
                    if crate::storage::is_append_raced(source) && races < APPEND_RACES_MAX =>
                {
                    races += 1;
                }
                attempt => break attempt,
            }
        };
        let unlocked = self
            .storage
            .unlock()
            .map_err(|e| Error::io(self.storage.path(), "unlock the log", e));
        let ids = result?;
        unlocked?;
        self.appended = true;
        self.store.flush_if(self.storage.as_mut(), Lag::Due)?;
        Ok(ids)
    }

    fn append_locked(&mut self, entries: &[NewEntry], stamp: Option<Stamp>) -> Result<Vec<String>> {
        let mut stamp = stamp;
        // Catch up with other writers, then apply the conflict rule.
        let (seen_before, log_leaf_before) = self
            .conflict_base
            .unwrap_or((self.store().next_seq, self.store().state.leaf_seq));
        let log_len = self.store.catch_up(self.storage.as_mut())?;
        self.after_reload(log_len)?;
        self.adopt_log_header(log_len)?;
        if log_len < self.store().indexed_len_bytes {
            return Err(Error::LogChanged {
                path: self.log_path().to_path_buf(),
                offset_bytes: log_len,
                reason: format!(
                    "the log shrank below the {} bytes this handle has read",
                    self.store().indexed_len_bytes
                ),
            });
        }
        if self.store().next_seq != seen_before {
            if let Some(their_id) = self.sibling_since(seen_before)? {
                match self.options.on_conflict {
                    OnConflict::Fail => {
                        self.conflict_base = Some((seen_before, log_leaf_before));
                        return Err(Error::Conflict {
                            path: self.log_path().to_path_buf(),
                            leaf: self.leaf_id()?,
                            their_id,
                        });
                    }
                    OnConflict::FollowTip => self.leaf_seq = self.store().state.leaf_seq,
                    OnConflict::Branch => {}
                }
            } else if self.leaf_seq == log_leaf_before
                && self.options.on_conflict != OnConflict::Branch
            {
                self.leaf_seq = self.store().state.leaf_seq;
            }
        }

        let mut text = std::mem::take(&mut self.append_text);
        text.clear();
        // A log holding only a byte order mark is empty: the header goes right after the mark.
        let only_bom = self.store().indexed_len_bytes == 0
            && crate::storage::holds_only_bom(self.storage.as_ref(), log_len)
                .map_err(|e| Error::io(self.storage.path(), "read the log", e))?;
        let torn = log_len > self.store.indexed_len_bytes && !only_bom;
        // No line of the log is JSON yet (it is empty, blank, or a torn first write): nothing
        // in it was acknowledged, and this append writes the handle's header, after the `\n`
        // that ends a torn fragment, so the log does not stay headerless (format-spec/log.md
        // §2). A log with a header that pi would not read first, or in a version pi migrates,
        // is refused.
        let writes_header = self.store.settled_legacy_v1().is_none();
        if !writes_header && let Err(refused) = self.check_appendable() {
            // The conflict rule held above: the handle has seen every line, so a refusal
            // leaves no conflict base behind, and the next append checks only the lines
            // written after this one (a base kept from an earlier conflict made it report
            // that old conflict again).
            self.conflict_base = None;
            return Err(refused);
        }
        if torn || self.store.unterminated {
            // A torn last line, or a complete one without its `\n`: end it, so the new entry
            // is not glued onto it.
            text.push('\n');
        }
        if writes_header {
            text.push_str(&self.header.json);
            text.push('\n');
        }
        let mut parent_id = self.id_of(self.leaf_seq)?;
        let mut ids: Vec<String> = Vec::with_capacity(entries.len());
        // Where the indexed fields of each entry line lie, so it is indexed without a scan.
        let mut written = Vec::with_capacity(entries.len());
        let timestamp = match &stamp {
            Some(stamp) => stamp.timestamp.clone(),
            None => format_iso_ms(now_ms()),
        };
        let entries_start_bytes = text.len();
        for entry in entries {
            let id = match stamp.take() {
                // Another writer may have taken it since `stamp_next` looked.
                Some(stamp) if self.id_taken(&stamp.id)? => {
                    self.append_text = text;
                    return Err(Error::InvalidInput {
                        path: self.log_path().to_path_buf(),
                        reason: format!("the id {} is taken", stamp.id),
                    });
                }
                Some(stamp) => stamp.id,
                None => self.new_id(&ids)?,
            };
            written.push(entry.encode_into(&mut text, &id, parent_id.as_deref(), &timestamp));
            text.push('\n');
            parent_id = Some(id.clone());
            ids.push(id);
        }
        let bytes = text.as_bytes();

        let end_bytes = match self.storage.append(bytes) {
            Ok(end_bytes) => end_bytes,
            // Nothing was written: the handle stays usable, and `append_many` tries again.
            Err(error) if crate::storage::is_append_raced(&error) => {
                self.append_text = text;
                return Err(Error::io(self.storage.path(), "append to the log", error));
            }
            Err(error) => {
                self.poisoned = Some(format!(
                    "a write failed: {}",
                    crate::error::io_reason(&error)
                ));
                return Err(Error::io(self.storage.path(), "append to the log", error));
            }
        };
        let sync_now = match self.options.durability {
            Durability::EveryAppend => true,
            Durability::Batched(every) => {
                self.appends_since_sync += ids.len() as u32;
                self.appends_since_sync >= every.max(1)
            }
            Durability::None => false,
        };
        if sync_now {
            self.sync_log()?;
        }
        self.header_pending = false;
        if writes_header {
            // Made up for a log of blank lines, it is the log's own now.
            self.header.recovered = false;
        }
        // The lines just written are indexed from memory when the log holds exactly what it
        // held before plus them; otherwise (a torn tail was ended, or another writer that takes
        // no lock appended meanwhile) they are read back, so the index sees exactly the file.
        // This relies on O_APPEND writes being atomic with respect to other appenders, as on
        // local POSIX filesystems (not NFS): where the write ended then proves where it began.
        let last = ids.last().expect("entries is not empty");
        let indexed = if log_len == self.store.indexed_len_bytes
            && end_bytes == log_len + bytes.len() as u64
        {
            self.store
                .apply_written(&text, entries_start_bytes, &written)
        } else {
            self.store
                .catch_up(self.storage.as_mut())
                .and_then(|log_len| self.after_reload(log_len))
        }
        .and_then(|()| self.find_appended(last, seen_before, log_len));
        let seq = match indexed {
            // The entries are in the log: the index is rebuilt from it, and they are found
            // there. A handle that cannot rebuild it is poisoned, so that the append is never
            // retried (it was written).
            Err(damage @ Error::Index { .. }) => match self.recover_now(damage) {
                Ok(()) => self.find_appended(last, seen_before, log_len)?,
                Err(error) => {
                    self.poisoned = Some(format!(
                        "the index could not be rebuilt after an append: {error}"
                    ));
                    return Err(error);
                }
            },
            other => other?,
        };
        self.leaf_seq = seq;
        self.conflict_base = None;
        if text.capacity() <= APPEND_TEXT_KEPT_LEN_MAX {
            self.append_text = text;
        }
        Ok(ids)
    }

    /// The seq of `id`, an entry this handle appended at or after `seen_before`.
    fn find_appended(&self, id: &str, seen_before: u64, log_len: u64) -> Result<u64> {
        self.store()
            .seq_of(id)?
            .filter(|seq| *seq >= seen_before)
            .ok_or_else(|| Error::LogChanged {
                path: self.log_path().to_path_buf(),
                offset_bytes: log_len,
                reason: format!("the appended entry {id} was not found when the log was read back"),
            })
    }

    /// Refuses an append to a log whose header pi would not read, or that pi migrates on
    /// load: what the append wrote would not be read back by pi as it is by treelog
    /// (format-spec/log.md §2, §6, §8).
    fn check_appendable(&self) -> Result<()> {
        let state = &self.store.state;
        let reason = if state.header_recovered {
            format!(
                "the log has no session header (its first line that is JSON, at byte {}, is not one): pi would not read an entry appended to it (pi 1.6 refuses the file, pi 0.73.1 replaces it with a new header and loses the rest); `treelog repair {} --apply` writes a header first",
                state.header_offset_bytes,
                self.log_path().display()
            )
        } else if state.header_version < crate::format::CURRENT_VERSION {
            format!(
                "the log is a version {} session, which pi migrates on every load, giving its entries new ids and parents: an entry appended now would name a parent that only treelog's in-memory migration has; `treelog repair {} --apply` migrates it to version 3 first",
                state.header_version,
                self.log_path().display()
            )
        } else {
            return Ok(());
        };
        Err(Error::AppendRefused {
            path: self.log_path().to_path_buf(),
            reason,
        })
    }

    /// A handle opened on an empty log made its header up, to write it with its first append.
    /// Once another process has written to the log, the header is the log's own (or a
    /// recovered one), as a fresh open would report it; a header made up while the log held
    /// only blank lines is replaced by the log's once its first non-blank line is indexed.
    /// A recovered header is kept as it is once made up (its id comes from the path, but its
    /// timestamp and cwd from the moment and process that made it).
    pub(super) fn adopt_log_header(&mut self, log_len: u64) -> Result<()> {
        let first_line_indexed = self.store().settled_legacy_v1().is_some();
        if (self.header_pending && log_len > 0) || (self.header_undecided && first_line_indexed) {
            if self.store().state.first_line_is_header() || !self.header.recovered {
                self.header = log_header(self.storage.as_ref(), self.store(), log_len)?;
            }
            self.header_pending = false;
            self.header_undecided = !first_line_indexed;
        }
        Ok(())
    }

    /// After a catch-up that reloaded the store, because a writer glued bytes onto a last line
    /// that was read without its `\n` (format-spec/log.md §1): a leaf that named that line,
    /// no longer an entry, follows the log's leaf, and the header is the log's as a fresh
    /// open reads it (a recovered one stays as it was made up).
    pub(super) fn after_reload(&mut self, log_len: u64) -> Result<()> {
        if !self.store.take_reloaded() {
            return Ok(());
        }
        let leaf_is_entry = self.leaf_seq == SEQ_NONE
            || (self.leaf_seq < self.store().next_seq
                && self.store().existing_record(self.leaf_seq)?.kind.is_some());
        if !leaf_is_entry {
            self.leaf_seq = self.store().state.leaf_seq;
        }
        if !self.header_pending
            && (self.store().state.first_line_is_header() || !self.header.recovered)
        {
            self.header = log_header(self.storage.as_ref(), self.store(), log_len)?;
        }
        Ok(())
    }

    /// The id of the first entry appended by someone else since `seen_before` that has this
    /// handle's leaf as its tree parent (appending now would make a sibling of it).
    fn sibling_since(&self, seen_before: u64) -> Result<Option<String>> {
        for seq in seen_before..self.store().next_seq {
            let record = self.store().existing_record(seq)?;
            if record.kind.is_some() && record.parent_seq == self.leaf_seq {
                return Ok(Some(record.id.into_string()));
            }
        }
        Ok(None)
    }

    pub(super) fn sync_log(&mut self) -> Result<()> {
        if let Err(error) = self.storage.sync() {
            // A failed fsync may have dropped dirty pages: never retry as if nothing happened.
            self.poisoned = Some(format!(
                "syncing the log to disk failed: {}",
                crate::error::io_reason(&error)
            ));
            return Err(Error::io(
                self.storage.path(),
                "sync the log to disk",
                error,
            ));
        }
        self.appends_since_sync = 0;
        Ok(())
    }
}
