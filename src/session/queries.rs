//! Queries: the leaf, entries, children, labels, paths, the tree and the counts, answered
//! through the index (a query that finds it damaged answers again from a rebuild:
//! `recovery.rs`), and the reads of indexed lines they share, each checked against its
//! record's crc32. Nothing here writes the log.

use std::borrow::Cow;

use super::types::Parent;
use super::{Entry, IndexedEntries, MESSAGE_HEAD_KEYS, OpaqueRecord, Session, Stats, TreeWalk};
use crate::error::{Error, Result};
use crate::format::json_scan;
use crate::format::line::{EntryKind, json_str, json_text_str};
use crate::format::record::{Record, SEQ_NONE};
use crate::format::usage::UsageTotals;
use crate::index::Store;
use crate::line_reads::{self, LineTexts};
use crate::storage::read_exact_at;
use crate::tree::{self, PathIds};

impl Session {
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

    /// The sequence number of the canonical entry `id`: its place among the log's lines, which
    /// never changes (the log is append-only and a rebuilt index numbers lines alike). A
    /// caller that keeps entries as values keys them by it.
    pub fn entry_seq(&self, id: &str) -> Result<Option<u64>> {
        self.answering(|session| session.canonical_seq(id))
    }

    /// The sequence number of this handle's leaf (`None` before the first entry or after a
    /// reset).
    pub fn leaf_seq(&self) -> Option<u64> {
        (self.leaf_seq != SEQ_NONE).then_some(self.leaf_seq)
    }

    /// The path to `leaf_seq` for a caller that holds the path to `known_leaf_seq` already:
    /// how many entries of the known path the new one keeps (the root up to the two leaves'
    /// deepest common ancestor), then the entries below them, root first, as the index knows
    /// them. Costs O(log depth) plus the entries returned; reads no line.
    pub fn path_since(
        &self,
        leaf_seq: Option<u64>,
        known_leaf_seq: Option<u64>,
    ) -> Result<(u64, IndexedEntries)> {
        self.answering(|session| {
            let Some(leaf_seq) = leaf_seq else {
                return Ok((0, IndexedEntries::default()));
            };
            let store = session.store();
            let common = match known_leaf_seq {
                Some(known) => tree::common_ancestor(store, known, leaf_seq)?,
                None => None,
            };
            let (kept, stop) = match common {
                Some(seq) => (u64::from(store.existing_record(seq)?.depth) + 1, seq),
                None => (0, SEQ_NONE),
            };
            let mut walked = store.ancestor_entries(leaf_seq, stop)?;
            // The common ancestor ends the walk; the caller holds it already, and it is the
            // parent of the first entry handed out.
            let above = if common.is_some() { walked.pop() } else { None };
            let mut out = IndexedEntries::with_capacity(walked.len());
            for (index, entry) in walked.iter().rev().enumerate() {
                let parent = match (index, &above) {
                    (0, Some(above)) => Parent::Listed(&above.id),
                    // A path's root has no parent; a plain entry's parent is its tree parent.
                    (0, None) => Parent::Null,
                    (index, _) => Parent::At(index - 1),
                };
                out.push(
                    entry.seq,
                    &entry.id,
                    entry.plain_role,
                    entry.timestamp_ms,
                    parent,
                );
            }
            Ok((kept, out))
        })
    }

    /// The sequence numbers of the path to `leaf_seq` from its nearest compaction
    /// ancestor-or-self on, that compaction first and the leaf last; the whole path when it
    /// holds no compaction. What pi's checks of context usage look at: every entry they look
    /// for on a path (the latest compaction, the latest compaction or context edit, the entries
    /// after them) lies there. Costs the entries returned; reads no line.
    pub fn path_since_compaction(&self, leaf_seq: u64) -> Result<Vec<u64>> {
        self.answering(|session| {
            let store = session.store();
            let compaction = store.existing_record(leaf_seq)?.compaction_seq;
            let walked = store.ancestor_entries(leaf_seq, compaction)?;
            Ok(walked.iter().rev().map(|entry| entry.seq).collect())
        })
    }

    /// The sequence numbers of the canonical entries from `from_seq` on, in file order: what a
    /// caller holding most entries already needs to find the ones it lacks.
    pub fn entry_seqs_from(&self, from_seq: u64) -> Result<Vec<u64>> {
        self.answering(|session| {
            let store = session.store();
            let mut out = Vec::new();
            let mut seq = from_seq;
            while seq < store.record_count() {
                for record in store.records_from(seq)? {
                    if record.kind.is_some() {
                        out.push(seq);
                    }
                    seq += 1;
                }
            }
            Ok(out)
        })
    }

    /// The entries `seqs` as the index knows them.
    pub fn indexed_entries(&self, seqs: &[u64]) -> Result<IndexedEntries> {
        self.answering(|session| {
            let store = session.store();
            let records = session.records_of(seqs)?;
            // Entries are usually asked for in file order, parents before their children.
            let index_of: std::collections::HashMap<u64, usize> = seqs
                .iter()
                .enumerate()
                .map(|(index, &seq)| (seq, index))
                .collect();
            let mut out = IndexedEntries::with_capacity(seqs.len());
            for (&seq, record) in seqs.iter().zip(&records) {
                let plain_role = record.plain_message_role();
                let listed;
                let parent = match record.parent_seq {
                    _ if plain_role.is_none() => Parent::Null,
                    SEQ_NONE => Parent::Null,
                    parent => match index_of.get(&parent) {
                        Some(&index) => Parent::At(index),
                        None => {
                            listed = store.existing_record(parent)?.id;
                            Parent::Listed(&listed)
                        }
                    },
                };
                out.push(seq, &record.id, plain_role, record.timestamp_ms, parent);
            }
            Ok(out)
        })
    }

    /// The records of `seqs` (in the order given), each stored page read once for the
    /// records it holds, and only those decoded (`Store::records_at`).
    fn records_of(&self, seqs: &[u64]) -> Result<Vec<Record>> {
        if seqs.is_sorted() {
            return self.store().records_at(seqs);
        }
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&at| seqs[at]);
        let sorted: Vec<u64> = order.iter().map(|&at| seqs[at]).collect();
        let mut out: Vec<Option<Record>> = vec![None; seqs.len()];
        for (record, at) in self.store().records_at(&sorted)?.into_iter().zip(order) {
            out[at] = Some(record);
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// The records and lines of `seqs`, read in file order (as lines are read together), with
    /// the place in `seqs` of each: a caller puts its answers back in the order it was asked.
    fn lines_in_file_order(&self, seqs: &[u64]) -> Result<(Vec<usize>, Vec<Record>, LineTexts)> {
        let (order, sorted) = file_order(seqs);
        let records = self.records_of(&sorted)?;
        let lines = self.read_lines(&records.iter().collect::<Vec<_>>())?;
        Ok((order, records, lines))
    }

    /// For each of the message entries `seqs`, its message's fields among
    /// [`MESSAGE_HEAD_KEYS`] (the last of a repeated key, as `JSON.parse` keeps) as
    /// `[{KEY: VALUE, ...}, [KEY, ...]]`: those whose raw JSON is at most 256 bytes with their
    /// values (scalars, and small objects such as an assistant's `usage`), then the names of
    /// the longer ones (read with the whole line). `None` for an entry that is not a message:
    /// its caller reads the whole line. What a scan over many messages' roles, providers, stop
    /// reasons or usage needs, without their contents.
    pub fn message_heads(&self, seqs: &[u64]) -> Result<Vec<Option<String>>> {
        self.answering(|session| {
            let (order, records, lines) = session.lines_in_file_order(seqs)?;
            let mut out = vec![None; seqs.len()];
            for (index, &at) in order.iter().enumerate() {
                let record = &records[index];
                let (Some(EntryKind::Message), Some((offset, len))) =
                    (record.kind, record.message_span)
                else {
                    continue;
                };
                let message = lines
                    .line(index)
                    .get(offset as usize..offset as usize + len as usize);
                out[at] = message.and_then(message_head);
            }
            Ok(out)
        })
    }

    /// For each of the entries `seqs`, when it is an assistant message: an assistant message
    /// entry at or before it whose message has the same `provider` and `model` (the same
    /// values, or both absent), often itself; `None` for other entries and where either field
    /// holds an object or an array. A scan of many messages' providers and models (pi's, on
    /// every projection) reads one line per distinct pair.
    pub fn model_origins(&self, seqs: &[u64]) -> Result<Vec<Option<u64>>> {
        self.answering(|session| {
            let (order, sorted) = file_order(seqs);
            let origins = session.store().model_origins(&sorted)?;
            let mut out = vec![None; seqs.len()];
            for (index, &at) in order.iter().enumerate() {
                out[at] = Some(origins[index]).filter(|&origin| origin != SEQ_NONE);
            }
            Ok(out)
        })
    }

    /// The lines of the entries `seqs` as JSONL (each line ending in `\n`, in the order
    /// given), each checked against its crc32: entries read back in one call.
    pub fn lines_jsonl(&self, seqs: &[u64]) -> Result<String> {
        self.lines_joined(seqs, "", "\n", true, "")
    }

    /// The lines of the entries `seqs` as the text of one JSON array of them (in the order
    /// given), each checked against its crc32: what a caller that parses the entries at once
    /// reads, with one copy of the lines after the read.
    pub fn lines_json_array(&self, seqs: &[u64]) -> Result<String> {
        self.lines_joined(seqs, "[", ",", false, "]")
    }

    /// `open`, the lines of `seqs` in the order given, each followed by `separator` (the last
    /// one too when `trailing`), then `close`.
    fn lines_joined(
        &self,
        seqs: &[u64],
        open: &str,
        separator: &str,
        trailing: bool,
        close: &str,
    ) -> Result<String> {
        self.answering(|session| {
            let (order, _, lines) = session.lines_in_file_order(seqs)?;
            let mut place = vec![0; seqs.len()];
            for (index, &at) in order.iter().enumerate() {
                place[at] = index;
            }
            let mut out = String::with_capacity(
                open.len() + lines.text.len() + seqs.len() * separator.len() + close.len(),
            );
            out.push_str(open);
            for (n, index) in place.into_iter().enumerate() {
                if n > 0 && !trailing {
                    out.push_str(separator);
                }
                out.push_str(lines.line(index));
                if trailing {
                    out.push_str(separator);
                }
            }
            out.push_str(close);
            Ok(out)
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
        self.entry_lines_as(crate::entry_lines::EntryLinesLayout::Array)
    }

    /// [`Session::entry_lines`] as JSONL, each line ending in `\n` (empty without entries): for
    /// a reader that parses line by line (in V8, 100k lines parsed one by one cost less than
    /// one array of them), or a copy of the entries into another log.
    pub fn entry_lines_jsonl(&self) -> Result<String> {
        self.entry_lines_as(crate::entry_lines::EntryLinesLayout::Lines)
    }

    fn entry_lines_as(&self, layout: crate::entry_lines::EntryLinesLayout) -> Result<String> {
        self.answering(|session| {
            crate::entry_lines::entry_lines(
                session.storage.as_ref(),
                session.store(),
                session.log_path(),
                layout,
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
            .map_err(|e| Error::io(self.storage.path(), "look at the log", e))?
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

    /// The size of the sidecar file on disk (its tables' bytes, [`Session::index_stored_bytes`],
    /// plus redb's free pages and headers); `None` when this session uses no sidecar.
    pub fn index_file_bytes(&self) -> Result<Option<u64>> {
        let Some(path) = self.store().sidecar_path() else {
            return Ok(None);
        };
        match std::fs::metadata(path) {
            Ok(metadata) => Ok(Some(metadata.len())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(Error::io(path, "look at the index", error)),
        }
    }

    /// The number of entries (the header and opaque records excluded): pi's
    /// `getEntryCount()`, without reading them.
    pub fn entry_count(&self) -> Result<u64> {
        Ok(self.store().state.entry_count)
    }

    /// The number of entries of `kind`: pi's `getEntries().filter((e) => e.type === kind)`'s
    /// length, without reading them (for [`EntryKind::Other`], of every type this version does
    /// not name).
    pub fn entry_count_of_kind(&self, kind: EntryKind) -> Result<u64> {
        Ok(self.store().state.kind_counts[kind as usize])
    }

    /// pi's usage totals over every entry in file order (its footer's sums), from the index's
    /// state, without reading a line; `None` when an entry pi sums holds no usage of numbers
    /// (format-spec/index.md, "usage totals"): pi's own loop then gives pi's answer.
    pub fn usage_totals(&self) -> Result<Option<UsageTotals>> {
        let totals = self.store().state.usage;
        Ok((!totals.unreadable).then_some(totals))
    }

    /// pi's session statistics over every entry (`AgentSession.getSessionStats`): the usage
    /// totals of [`Session::usage_totals`] with the `message` entries' count, their counts by
    /// role and the assistants' tool calls; `None` when pi's own loop must answer.
    pub fn session_stats(&self) -> Result<Option<(UsageTotals, u64)>> {
        let state = &self.store().state;
        let totals = state.usage;
        Ok((!totals.unreadable && !totals.tool_calls_unreadable)
            .then_some((totals, state.kind_counts[EntryKind::Message as usize])))
    }

    /// Whether `id` is taken by an entry or an opaque record of the session (pi's
    /// `generateId` draws again on such an id).
    pub fn id_taken(&self, id: &str) -> Result<bool> {
        Ok(self.store.seq_of(id)?.is_some())
    }

    pub(super) fn id_of(&self, seq: u64) -> Result<Option<String>> {
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

    pub(super) fn require_seq(&self, id: &str) -> Result<u64> {
        self.canonical_seq(id)?.ok_or_else(|| Error::EntryNotFound {
            path: self.log_path().to_path_buf(),
            id: id.into(),
        })
    }

    pub(super) fn leaf_or(&self, leaf: Option<&str>) -> Result<u64> {
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
                path: self.sidecar_location(),
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

    /// The error for an indexed entry whose line no longer reads as a JSON object.
    pub(super) fn not_an_object(&self, record: &Record) -> Error {
        Error::LogChanged {
            path: self.log_path().to_path_buf(),
            offset_bytes: record.offset_bytes,
            reason: "an indexed entry is no longer a JSON object".into(),
        }
    }

    fn entry_from(&self, _seq: u64, record: &Record) -> Result<Entry> {
        let json = self.read_line(record)?;
        // One pass validates the line and finds the two fields (the last of a repeated key).
        let [parent_raw, timestamp_raw] = match json_scan::scan(&json, &["parentId", "timestamp"]) {
            Ok(found) if found.is_object => found.fields,
            _ => return Err(self.not_an_object(record)),
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

/// `seqs` in file order, and the place in `seqs` of each: a caller reads in file order and puts
/// its answers back in the order it was asked.
fn file_order(seqs: &[u64]) -> (Vec<usize>, Vec<u64>) {
    let mut order: Vec<usize> = (0..seqs.len()).collect();
    order.sort_by_key(|&at| seqs[at]);
    let sorted = order.iter().map(|&at| seqs[at]).collect();
    (order, sorted)
}

/// The longest value a message head holds; longer ones are named with the objects.
const HEAD_VALUE_LEN_MAX: usize = 256;

/// `[{KEY: VALUE, ...}, [KEY, ...]]` of a message object over [`MESSAGE_HEAD_KEYS`] (see
/// [`Session::message_heads`]).
fn message_head(message: &str) -> Option<String> {
    let found = json_scan::scan(message, &MESSAGE_HEAD_KEYS).ok()?;
    if !found.is_object {
        return None;
    }
    let mut values = Vec::new();
    let mut long = Vec::new();
    for (key, raw) in MESSAGE_HEAD_KEYS.iter().zip(found.fields) {
        let Some(raw) = raw else { continue };
        // Long values (a message's content, a user's text) come with the whole line.
        if raw.len() > HEAD_VALUE_LEN_MAX {
            long.push(format!("\"{key}\""));
        } else {
            values.push(format!("\"{key}\":{raw}"));
        }
    }
    Some(format!("[{{{}}},[{}]]", values.join(","), long.join(",")))
}
