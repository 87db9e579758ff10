//! Deriving index records from lines, in file order. The rules here are the normative tree
//! rules of format-spec/log.md; each record depends only on the lines before it, so the index
//! of a log prefix never changes when the log grows.

use compact_str::CompactString;
use std::borrow::Cow;

use super::classify::classify_bytes;
use super::links::Links;
use super::store::{Store, TallyAdd};
use crate::error::Result;
use crate::format::ids::migrated_entry_id;
use crate::format::line::{EntryKind, EntryLine, Line, OpaqueLine, OpaqueReason, ParentRef};
use crate::format::record::{LabelValue, Record, SEQ_NONE, TIMESTAMP_NONE};
use crate::format::size_facts::IMAGES_KEY;
use crate::format::time::parse_iso_ms;

/// Opaque reason codes stored in records (format-spec/index.md).
pub(crate) fn opaque_code(reason: &OpaqueReason) -> u8 {
    match reason {
        OpaqueReason::InvalidJson(_) => 1,
        OpaqueReason::NotAnObject => 2,
        OpaqueReason::MissingType => 3,
        OpaqueReason::MissingId => 5,
        OpaqueReason::LeafControl => 6,
        OpaqueReason::ExtraHeader => 7,
        OpaqueReason::TooLong => 8,
    }
}

impl Store {
    /// Indexes one complete line: `len_bytes` bytes at `offset_bytes`, followed by `\n`.
    /// `bytes` is `None` for a line longer than the parse limit.
    pub(crate) fn apply_line(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        crc32: u32,
        bytes: Option<&[u8]>,
    ) -> Result<()> {
        let applied = self.apply_line_once(offset_bytes, len_bytes, crc32, bytes);
        self.stop_after_failure(applied)
    }

    /// Indexes the log's last line, which has no `\n` yet but is complete (format-spec/log.md
    /// §1): as any line, but the indexed prefix ends at its last byte, and the store stays
    /// `unterminated` until a catch-up reads its `\n`.
    pub(crate) fn apply_unterminated_line(
        &mut self,
        offset_bytes: u64,
        bytes: &[u8],
    ) -> Result<()> {
        let len_bytes = bytes.len() as u64;
        let applied =
            self.apply_line_once(offset_bytes, len_bytes, crc32fast::hash(bytes), Some(bytes));
        self.indexed_len_bytes = offset_bytes + len_bytes;
        self.unterminated = true;
        self.stop_after_failure(applied)
    }

    fn apply_line_once(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        crc32: u32,
        bytes: Option<&[u8]>,
    ) -> Result<()> {
        debug_assert_eq!(
            offset_bytes, self.indexed_len_bytes,
            "lines are applied in order, without gaps"
        );
        self.indexed_len_bytes = offset_bytes + len_bytes + 1;
        // A byte order mark opening the log is not part of its first line: that line (header
        // or record) starts after it, so everything read back through the index skips it.
        let (offset_bytes, len_bytes, crc32, bytes) = match bytes {
            Some(line) if crate::format::bom_len(offset_bytes, line) > 0 => {
                let line = &line[crate::format::BOM.len()..];
                let bom = crate::format::BOM.len() as u64;
                (bom, len_bytes - bom, crc32fast::hash(line), Some(line))
            }
            _ => (offset_bytes, len_bytes, crc32, bytes),
        };
        let settled_legacy_v1 = self.settled_legacy_v1();
        let first_line = settled_legacy_v1.is_none();
        let Some(bytes) = bytes else {
            if first_line {
                self.state.header_recovered = true;
            }
            let opaque = OpaqueLine {
                reason: OpaqueReason::TooLong,
                id: None,
                parent: ParentRef::Root,
                target_id: None,
            };
            return self.apply_opaque(offset_bytes, len_bytes, crc32, opaque);
        };
        let line = classify_bytes(bytes, settled_legacy_v1.unwrap_or(false), first_line);
        // The first line that is JSON decides the header, as pi takes the first line that
        // parses as its `entries[0]` (format-spec/log.md §2): a line before it that is not
        // JSON (a torn first write, ended by the next append's `\n`) is an opaque record.
        let first_line = first_line
            && !matches!(
                line,
                Line::Blank
                    | Line::Opaque(OpaqueLine {
                        reason: OpaqueReason::InvalidJson(_),
                        ..
                    })
            );
        if first_line {
            self.state.header_offset_bytes = offset_bytes;
            self.state.header_len_bytes = len_bytes;
            self.first_line_hash = *blake3::hash(bytes).as_bytes();
        }
        self.apply_classified(offset_bytes, len_bytes, crc32, line, first_line)
    }

    /// The flags `classify` takes for every line after the first non-blank one, or `None`
    /// while that line has not been seen (it decides them). Once known they never change,
    /// which is what lets lines be classified ahead, on another thread (`parallel.rs`).
    pub(crate) fn settled_legacy_v1(&self) -> Option<bool> {
        let first_line = self.state.header_offset_bytes == SEQ_NONE && !self.state.header_recovered;
        (!first_line).then_some(self.state.header_version < 2 && !self.state.header_recovered)
    }

    /// Indexes one line classified ahead with the flags of [`Store::settled_legacy_v1`].
    pub(crate) fn apply_classified_ahead(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        crc32: u32,
        line: Line<'_>,
    ) -> Result<()> {
        debug_assert!(self.settled_legacy_v1().is_some());
        debug_assert_eq!(offset_bytes, self.indexed_len_bytes);
        self.indexed_len_bytes = offset_bytes + len_bytes + 1;
        let applied = self.apply_classified(offset_bytes, len_bytes, crc32, line, false);
        self.stop_after_failure(applied)
    }

    /// A line that failed to apply may be half applied (counted in `indexed_len_bytes`, its
    /// record missing, the hasher ahead of it on the threaded path or behind it on the
    /// plain scan): the store then indexes and writes nothing more (`check_applicable`).
    fn stop_after_failure(&mut self, applied: Result<()>) -> Result<()> {
        if let Err(error) = &applied {
            self.apply_failure = Some(match error {
                crate::error::Error::Index { reason, .. } => reason.clone(),
                other => other.to_string(),
            });
        }
        applied
    }

    fn apply_classified(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        crc32: u32,
        line: Line<'_>,
        first_line: bool,
    ) -> Result<()> {
        match line {
            Line::Blank => Ok(()),
            Line::Header(header) => {
                self.state.header_version = header.version;
                if header.version < 3 {
                    self.legacy_session_id = header.id.into_owned();
                }
                Ok(())
            }
            Line::Entry(entry) => {
                if first_line {
                    self.state.header_recovered = true;
                }
                self.apply_entry(offset_bytes, len_bytes, crc32, entry)
            }
            Line::Opaque(opaque) => {
                if first_line {
                    self.state.header_recovered = true;
                }
                self.apply_opaque(offset_bytes, len_bytes, crc32, opaque)
            }
        }
    }

    /// The canonical entry a `parentId` names: entries resolve to themselves, opaque records
    /// to the entry their own parent resolved to. Only earlier lines are visible.
    fn resolve_parent(&self, parent: &ParentRef<'_>) -> Result<u64> {
        // Most entries continue the record before them. While that record is the latest and
        // an entry, its id names it (the latest line with an id wins, and an opaque record's
        // id never shadows an entry's), so no lookup is needed.
        if let ParentRef::Id(id) = parent
            && let Some(previous) = self.overlay.records.last()
            && previous.kind.is_some()
            && previous.id == **id
        {
            return Ok(self.next_seq - 1);
        }
        Ok(match parent {
            ParentRef::Absent => self.state.leaf_seq,
            ParentRef::Root => SEQ_NONE,
            ParentRef::Id(id) => match self.seq_of(id)? {
                None => SEQ_NONE,
                Some(seq) => {
                    let links = self.links(seq)?;
                    if links.canonical {
                        seq
                    } else {
                        links.parent_seq
                    }
                }
            },
        })
    }

    fn apply_entry(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        crc32: u32,
        entry: EntryLine<'_>,
    ) -> Result<()> {
        let seq = self.next_seq;
        let legacy_v1 = entry.id.is_none();
        let id: Cow<'_, str> = match entry.id {
            Some(id) => id,
            None => {
                let session_id = self.legacy_session_id.clone();
                // A lookup error counts as taken: the next candidate is tried instead.
                Cow::Owned(migrated_entry_id(&session_id, seq, |candidate| {
                    !matches!(self.seq_of(candidate), Ok(None))
                }))
            }
        };
        // v1 files are a linear chain in file order.
        let parent_seq = if legacy_v1 {
            self.state.leaf_seq
        } else {
            self.resolve_parent(&entry.parent)?
        };
        let parent = if parent_seq == SEQ_NONE {
            None
        } else {
            Some(self.links(parent_seq)?)
        };
        let is_assistant = entry.assistant;
        let nearest = |own: bool, inherited: fn(&Links) -> u64| -> u64 {
            if own {
                seq
            } else {
                parent.as_ref().map_or(SEQ_NONE, inherited)
            }
        };
        let jump_seq = match &parent {
            None => seq,
            Some(parent_record) => {
                // Myers' skew-binary jump pointers: O(log depth) ancestor queries.
                let jump = self.links(parent_record.jump_seq)?;
                let jump_jump = self.links(jump.jump_seq)?;
                // Wrapping: depths read from a damaged sidecar must not panic here; such an
                // index gives wrong jumps at worst, which the walks refuse.
                if parent_record.depth.wrapping_sub(jump.depth)
                    == jump.depth.wrapping_sub(jump_jump.depth)
                {
                    jump.jump_seq
                } else {
                    parent_seq
                }
            }
        };
        let record = Record {
            offset_bytes,
            len_bytes: len_bytes as u32,
            crc32,
            parent_seq,
            jump_seq,
            depth: parent
                .as_ref()
                .map_or(0, |parent| parent.depth.saturating_add(1)),
            kind: Some(entry.kind),
            assistant: is_assistant,
            side: entry.side,
            role: entry.role,
            // The parentId of a plain record is its tree parent's id (or null for a root): a
            // parentId that names no entry makes the record a root, and is not plain.
            plain: entry.pi_layout && (parent_seq != SEQ_NONE || entry.parent == ParentRef::Root),
            opaque_code: 0,
            timestamp_ms: entry
                .timestamp
                .as_deref()
                .and_then(parse_iso_ms)
                .unwrap_or(TIMESTAMP_NONE),
            compaction_seq: nearest(entry.kind == EntryKind::Compaction, |p| p.compaction_seq),
            model_seq: nearest(entry.kind == EntryKind::ModelChange || is_assistant, |p| {
                p.model_seq
            }),
            thinking_seq: nearest(entry.kind == EntryKind::ThinkingLevelChange, |p| {
                p.thinking_seq
            }),
            model_origin_seq: match &entry.model_key {
                _ if !is_assistant => parent.as_ref().map_or(SEQ_NONE, |p| p.model_origin_seq),
                None => SEQ_NONE,
                Some(key) => self.model_origins.get(key.as_ref()).copied().unwrap_or(seq),
            },
            // Only a message entry's message is read by span (the context).
            message_span: entry
                .message_span
                .filter(|_| entry.kind == EntryKind::Message),
            // Inline when short (pi's ids are 8 bytes): no allocation, nor a free at flush.
            id: CompactString::new(&id),
        };
        // First of the changes this line makes: the one that can fail (it may read the
        // record of the id's key owner) must not leave the line half applied.
        self.note_id(&record.id, seq)?;
        if record.model_origin_seq == seq
            && self.model_origins.len() < super::store::MODEL_ORIGINS_MAX
            && let Some(key) = entry.model_key
        {
            self.model_origins.insert(key.into_owned(), seq);
        }
        match entry.kind {
            EntryKind::Label => {
                if let Some(target) = entry.target_id {
                    let value =
                        entry
                            .label
                            .filter(|label| !label.is_empty())
                            .map(|label| LabelValue {
                                label: label.into_owned(),
                                timestamp: entry
                                    .timestamp
                                    .as_deref()
                                    .unwrap_or_default()
                                    .to_string(),
                            });
                    self.overlay.labels.insert(target.into_owned(), value);
                }
            }
            EntryKind::SessionInfo => self.state.session_info_seq = seq,
            _ => {}
        }
        if !entry.side {
            self.state.leaf_seq = seq;
        }
        self.state.entry_count += 1;
        self.state.kind_counts[entry.kind as usize] += 1;
        self.state.usage.add(entry.usage, is_assistant);
        if entry.kind == EntryKind::Message {
            self.state.usage.count_message(entry.role, entry.tool_calls);
        }
        if let Some((group, name)) = &entry.size_facts.name {
            let mut key = CompactString::default();
            key.push(group.prefix());
            key.push(':');
            key.push_str(name);
            self.overlay.tallies.push(TallyAdd {
                seq,
                key,
                added: (1, u64::from(record.len_bytes)),
            });
        }
        if entry.size_facts.image_count > 0 {
            self.overlay.tallies.push(TallyAdd {
                seq,
                key: CompactString::const_new(IMAGES_KEY),
                added: (entry.size_facts.image_count, entry.size_facts.image_bytes),
            });
        }
        // A child on the line after its parent is implied by its record (format-spec/index.md).
        if parent_seq == SEQ_NONE || parent_seq + 1 != seq {
            self.overlay
                .children
                .entry(parent_seq)
                .or_default()
                .push(seq);
        }
        self.push_record(record)
    }

    fn apply_opaque(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        crc32: u32,
        opaque: OpaqueLine<'_>,
    ) -> Result<()> {
        let seq = self.next_seq;
        let parent_seq = self.resolve_parent(&opaque.parent)?;
        // A leaf row moves the leaf only to an id that is already known (not its own).
        let mut leaf_seq = None;
        if opaque.reason == OpaqueReason::LeafControl
            && let Some(target) = opaque.target_id.as_deref()
            && self.seq_of(target)?.is_some()
        {
            leaf_seq = Some(self.resolve_parent(&ParentRef::Id(Cow::Borrowed(target)))?);
        }
        let id = opaque.id.map(Cow::into_owned).unwrap_or_default();
        // An opaque id never shadows an entry's id: entries are looked up first, as in OpenClaw.
        if !id.is_empty() && self.seq_of(&id)?.is_none() {
            self.note_id(&id, seq)?;
        }
        if let Some(leaf_seq) = leaf_seq {
            self.state.leaf_seq = leaf_seq;
        }
        self.state.opaque_count += 1;
        self.push_record(Record {
            offset_bytes,
            len_bytes: len_bytes.min(u64::from(u32::MAX)) as u32,
            crc32,
            parent_seq,
            jump_seq: SEQ_NONE,
            depth: 0,
            kind: None,
            assistant: false,
            side: false,
            role: 0,
            plain: false,
            opaque_code: opaque_code(&opaque.reason),
            timestamp_ms: TIMESTAMP_NONE,
            compaction_seq: SEQ_NONE,
            model_seq: SEQ_NONE,
            thinking_seq: SEQ_NONE,
            model_origin_seq: SEQ_NONE,
            message_span: None,
            id: id.into(),
        })
    }

    fn push_record(&mut self, record: Record) -> Result<()> {
        debug_assert_eq!(
            self.overlay.base_seq + self.overlay.records.len() as u64,
            self.next_seq
        );
        self.overlay.records.push(record);
        self.next_seq += 1;
        Ok(())
    }
}
