//! The values the index holds, and the fixed-width little-endian layouts of its `meta` and
//! `labels` values (format-spec/index.md is normative; record pages are in `page`). Pure
//! code: bytes in, values out. Decoding never panics: a value of the wrong length or with an
//! unknown code is an error, which makes the whole index untrusted and rebuilt.

pub use super::decode_error::DecodeError;
use super::line::{EntryKind, KIND_CODE_END};
use super::seal::{SEAL_LEN, seal, unseal};
use super::usage::{COUNTED_ROLES, USAGE_FIELDS, UsageTotals};

/// "No entry" in a sequence-number field.
pub const SEQ_NONE: u64 = u64::MAX;
/// "No timestamp" (absent or not a date) in a millisecond field.
pub const TIMESTAMP_NONE: i64 = i64::MIN;

/// Stored lengths of the `meta` values, each sealed (`format::seal`) under its key.
pub const SNAPSHOT_LEN: usize = 128 + SEAL_LEN;
pub const STATE_LEN: usize = 8 * 6 + 8 * KIND_CODE_END + 8 + 8 * 4 + USAGE_LEN + SEAL_LEN;
/// The stored usage totals (`State::usage`): five sums, the last assistant's three prompt
/// fields, a flags word, the message counts by role and the tool calls.
const USAGE_LEN: usize = 8 * (USAGE_FIELDS + 3 + 1 + COUNTED_ROLES + 1);
const USAGE_HAS_LAST: u64 = 1;
const USAGE_UNREADABLE: u64 = 2;
const USAGE_TOOL_CALLS_UNREADABLE: u64 = 4;
const META_DOMAIN: &[u8] = b"meta";

/// One line of the log: a canonical entry (`kind` is `Some`) or an opaque record (`None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub offset_bytes: u64,
    /// Length of the line without its `\n`.
    pub len_bytes: u32,
    /// crc32 of the `len_bytes` bytes at `offset_bytes`.
    pub crc32: u32,
    /// The tree parent (an earlier entry), or [`SEQ_NONE`] for a root. For an opaque record:
    /// the canonical entry its `parentId` resolves to.
    pub parent_seq: u64,
    /// A skew-binary jump pointer to an ancestor, for O(log depth) ancestor queries.
    pub jump_seq: u64,
    /// Number of ancestors (0 for a root).
    pub depth: u32,
    pub kind: Option<EntryKind>,
    pub assistant: bool,
    pub side: bool,
    /// A `message` entry's role code (`format::line::role_code`; 0 otherwise).
    pub role: u8,
    /// A message entry in pi's layout (`EntryLine::pi_layout`) whose `parentId` is its tree
    /// parent's id, or null for a root: what the entry holds besides its timestamp and message
    /// is known from the index alone.
    pub plain: bool,
    /// For an opaque record, a code for its reason (format-spec/index.md).
    pub opaque_code: u8,
    pub timestamp_ms: i64,
    /// Nearest ancestor-or-self of each kind that context assembly needs, or [`SEQ_NONE`].
    pub compaction_seq: u64,
    pub model_seq: u64,
    pub thinking_seq: u64,
    /// For an assistant message: an assistant record at or before this one whose message has
    /// the same `provider` and `model` (`EntryLine::model_key`), so that reading those two
    /// fields of many messages reads one line per distinct pair; [`SEQ_NONE`] when either is
    /// an object or an array. Other entries inherit their parent's (so that a page's records
    /// share one value), opaque records have [`SEQ_NONE`].
    pub model_origin_seq: u64,
    /// Where the raw JSON of a `message` entry's message lies in its line (offset, length in
    /// bytes), when it was found at indexing.
    pub message_span: Option<(u32, u32)>,
    /// The entry's id (a generated one for v1 files; empty for an opaque record without one).
    pub id: compact_str::CompactString,
}

impl Record {
    /// The role code of a plain message entry's record (kind message, [`Record::plain`]), or
    /// `None` for any other record; `RecordRef::plain_message_role` reads it from a page.
    pub fn plain_message_role(&self) -> Option<u8> {
        (self.plain && self.kind == Some(EntryKind::Message)).then_some(self.role)
    }
}

#[cfg(test)]
impl Record {
    /// The record of a line of `len_bytes` bytes at `offset_bytes` with no links, no kind and
    /// no id: the base that tests fill in.
    pub(crate) fn unlinked(offset_bytes: u64, len_bytes: u32) -> Record {
        Record {
            offset_bytes,
            len_bytes,
            crc32: 0,
            parent_seq: SEQ_NONE,
            jump_seq: SEQ_NONE,
            depth: 0,
            kind: None,
            assistant: false,
            side: false,
            role: 0,
            plain: false,
            opaque_code: 0,
            timestamp_ms: 0,
            compaction_seq: SEQ_NONE,
            model_seq: SEQ_NONE,
            thinking_seq: SEQ_NONE,
            model_origin_seq: SEQ_NONE,
            message_span: None,
            id: Default::default(),
        }
    }
}

impl Record {
    /// The record of line `seq` shaped like one of pi's message entries: 775 bytes, right
    /// after the line before it and its child, an 8-hex id, no compaction or thinking level.
    /// What the page tests, benchmarks and fuzz seeds build pages from; the engine never
    /// makes one.
    #[doc(hidden)]
    pub fn pi_like_message(seq: u64) -> Record {
        Record {
            offset_bytes: 1_000 + seq * 776,
            len_bytes: 775,
            crc32: (seq as u32).wrapping_mul(0x9e37_79b9),
            parent_seq: seq.wrapping_sub(1),
            jump_seq: seq / 2,
            depth: seq as u32,
            kind: Some(EntryKind::Message),
            assistant: seq % 2 == 1,
            side: false,
            role: if seq % 2 == 1 { 2 } else { 1 },
            plain: true,
            opaque_code: 0,
            timestamp_ms: 1_764_000_000_000 + seq as i64 * 2_345,
            compaction_seq: SEQ_NONE,
            model_seq: seq - seq % 2,
            thinking_seq: SEQ_NONE,
            model_origin_seq: 1,
            message_span: Some((120, 775 - 120 - 1)),
            id: format!("{:08x}", (seq as u32).wrapping_mul(0x2545_f491)).into(),
        }
    }

    /// Whether every link of the record of `seq` points where the tree rules allow: its parent
    /// before it, its jump pointer, its nearest compaction / model / thinking entries and its
    /// model origin at it or before it (each may be SEQ_NONE). A record that breaks this was
    /// damaged on disk.
    pub fn links_point_back(&self, seq: u64) -> bool {
        let at_or_before = |link: u64| link == SEQ_NONE || link <= seq;
        (self.parent_seq == SEQ_NONE || self.parent_seq < seq)
            && at_or_before(self.jump_seq)
            && at_or_before(self.compaction_seq)
            && at_or_before(self.model_seq)
            && at_or_before(self.thinking_seq)
            && at_or_before(self.model_origin_seq)
    }
}

/// What the index knows about the log prefix it covers: checked on every open.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// Bytes of the log covered by the index; always the end of a complete line.
    pub indexed_len_bytes: u64,
    /// Sequence number the next line will get (lines indexed so far, blank lines excluded).
    pub next_seq: u64,
    /// File identity and change times when the index last synced with the log.
    pub device: u64,
    pub inode: u64,
    pub modified_ns: i64,
    pub changed_ns: i64,
    /// blake3 of the first line (the header) without its `\n`; zeros when the log is empty.
    pub first_line_hash: [u8; 32],
    /// Start of the last, partial hash block (a multiple of the block size).
    pub tail_block_start_bytes: u64,
    /// blake3 of the bytes from `tail_block_start_bytes` to `indexed_len_bytes`.
    pub tail_hash: [u8; 32],
    /// The log's length when `device` .. `changed_ns` were observed (at least
    /// `indexed_len_bytes`; more when the log ended in a torn or unfinished line).
    pub observed_len_bytes: u64,
}

impl Snapshot {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SNAPSHOT_LEN);
        for value in [
            self.indexed_len_bytes,
            self.next_seq,
            self.device,
            self.inode,
        ] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&self.modified_ns.to_le_bytes());
        out.extend_from_slice(&self.changed_ns.to_le_bytes());
        out.extend_from_slice(&self.first_line_hash);
        out.extend_from_slice(&self.tail_block_start_bytes.to_le_bytes());
        out.extend_from_slice(&self.tail_hash);
        out.extend_from_slice(&self.observed_len_bytes.to_le_bytes());
        out.resize(SNAPSHOT_LEN - SEAL_LEN, 0);
        seal(META_DOMAIN, b"snapshot", out)
    }

    pub fn decode(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
        if bytes.len() != SNAPSHOT_LEN {
            return Err(DecodeError(format!(
                "snapshot of {} bytes, expected {SNAPSHOT_LEN}",
                bytes.len()
            )));
        }
        let bytes = unseal(META_DOMAIN, b"snapshot", bytes, || "snapshot".into())?;
        let mut reader = Reader { bytes, at: 0 };
        Ok(Snapshot {
            indexed_len_bytes: reader.u64(),
            next_seq: reader.u64(),
            device: reader.u64(),
            inode: reader.u64(),
            modified_ns: reader.i64(),
            changed_ns: reader.i64(),
            first_line_hash: reader.hash(),
            tail_block_start_bytes: reader.u64(),
            tail_hash: reader.hash(),
            observed_len_bytes: reader.u64(),
        })
    }
}

/// Facts derived from the whole indexed prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// The leaf implied by the log: the last canonical, non-side entry, or the target of a later
    /// valid `leaf` control row.
    pub leaf_seq: u64,
    /// The last `session_info` entry in file order (its name is the session name).
    pub session_info_seq: u64,
    /// Where the header line is (a recovered header has none: [`SEQ_NONE`] offset).
    pub header_offset_bytes: u64,
    pub header_len_bytes: u64,
    pub entry_count: u64,
    pub opaque_count: u64,
    /// Entries per kind, indexed by kind code (0 unused).
    pub kind_counts: [u64; KIND_CODE_END],
    pub header_version: u32,
    pub header_recovered: bool,
    /// pi's usage totals over every entry in file order (`format::usage`).
    pub usage: UsageTotals,
}

/// How many keys the `children`, `labels`, `id-collisions` and `tallies` tables hold, stored in the state
/// value beside the [`State`] committed with them: those tables are read whole and checked
/// against these counts, so that a key lost to damage is noticed (format-spec/index.md,
/// "Checksums"). They describe committed tables, not the log, so they live apart from the
/// in-memory state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoredCounts {
    pub children: u64,
    pub labels: u64,
    pub id_collisions: u64,
    pub tallies: u64,
}

impl State {
    /// Whether the log's first non-blank line is indexed and is a header (not one made up:
    /// `header_recovered`), so that reading the header means reading that line.
    pub fn first_line_is_header(&self) -> bool {
        self.header_offset_bytes != SEQ_NONE && !self.header_recovered
    }

    /// What is wrong with this state for an index of `next_seq` records over the first
    /// `indexed_len_bytes` of the log, if anything. Every field is derived from the records, so
    /// one that disagrees with them was damaged on disk; the index is then rebuilt rather than
    /// trusted (and written back by the next flush with a valid checksum).
    pub fn inconsistency(&self, next_seq: u64, indexed_len_bytes: u64) -> Option<String> {
        let names_a_record = |seq: u64| seq == SEQ_NONE || seq < next_seq;
        if !names_a_record(self.leaf_seq) {
            return Some(format!("leaf {} past {next_seq} records", self.leaf_seq));
        }
        if !names_a_record(self.session_info_seq) {
            return Some(format!(
                "session info {} past {next_seq} records",
                self.session_info_seq
            ));
        }
        if self.entry_count.checked_add(self.opaque_count) != Some(next_seq) {
            return Some(format!(
                "{} entries and {} opaque records for {next_seq} records",
                self.entry_count, self.opaque_count
            ));
        }
        let by_kind = self
            .kind_counts
            .iter()
            .try_fold(0u64, |sum, count| sum.checked_add(*count));
        if self.kind_counts[0] != 0 || by_kind != Some(self.entry_count) {
            return Some(format!(
                "entries by kind {:?} do not add up to {}",
                self.kind_counts, self.entry_count
            ));
        }
        let header_end = self.header_offset_bytes.checked_add(self.header_len_bytes);
        if self.header_offset_bytes != SEQ_NONE
            && header_end.is_none_or(|end| end > indexed_len_bytes)
        {
            return Some(format!(
                "header at {}+{} past the {indexed_len_bytes} indexed bytes",
                self.header_offset_bytes, self.header_len_bytes
            ));
        }
        None
    }
}

impl Default for State {
    fn default() -> Self {
        State {
            leaf_seq: SEQ_NONE,
            session_info_seq: SEQ_NONE,
            header_offset_bytes: SEQ_NONE,
            header_len_bytes: 0,
            entry_count: 0,
            opaque_count: 0,
            kind_counts: [0; KIND_CODE_END],
            header_version: crate::format::CURRENT_VERSION,
            header_recovered: false,
            usage: UsageTotals::default(),
        }
    }
}

impl State {
    /// The stored state value: this state, then the key counts of the tables committed with
    /// it, sealed.
    pub fn encode(&self, counts: StoredCounts) -> Vec<u8> {
        let mut out = Vec::with_capacity(STATE_LEN);
        for value in [
            self.leaf_seq,
            self.session_info_seq,
            self.header_offset_bytes,
            self.header_len_bytes,
            self.entry_count,
            self.opaque_count,
        ] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        for count in self.kind_counts {
            out.extend_from_slice(&count.to_le_bytes());
        }
        out.extend_from_slice(&self.header_version.to_le_bytes());
        out.push(u8::from(self.header_recovered));
        out.extend_from_slice(&[0; 3]);
        for count in [
            counts.children,
            counts.labels,
            counts.id_collisions,
            counts.tallies,
        ] {
            out.extend_from_slice(&count.to_le_bytes());
        }
        let usage = &self.usage;
        let flag = |set: bool, bit: u64| if set { bit } else { 0 };
        let flags = flag(usage.has_last, USAGE_HAS_LAST)
            | flag(usage.unreadable, USAGE_UNREADABLE)
            | flag(usage.tool_calls_unreadable, USAGE_TOOL_CALLS_UNREADABLE);
        for value in usage
            .sums
            .iter()
            .chain(&usage.last_prompt)
            .chain([&flags])
            .chain(&usage.messages_by_role)
            .chain([&usage.tool_calls])
        {
            out.extend_from_slice(&value.to_le_bytes());
        }
        let out = seal(META_DOMAIN, b"state", out);
        debug_assert_eq!(out.len(), STATE_LEN);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<(State, StoredCounts), DecodeError> {
        if bytes.len() != STATE_LEN {
            return Err(DecodeError(format!(
                "state of {} bytes, expected {STATE_LEN}",
                bytes.len()
            )));
        }
        let bytes = unseal(META_DOMAIN, b"state", bytes, || "state".into())?;
        let mut reader = Reader { bytes, at: 0 };
        let mut state = State {
            leaf_seq: reader.u64(),
            session_info_seq: reader.u64(),
            header_offset_bytes: reader.u64(),
            header_len_bytes: reader.u64(),
            entry_count: reader.u64(),
            opaque_count: reader.u64(),
            ..State::default()
        };
        for count in &mut state.kind_counts {
            *count = reader.u64();
        }
        state.header_version = reader.u32();
        state.header_recovered = match reader.u8() {
            0 => false,
            1 => true,
            other => return Err(DecodeError(format!("header_recovered flag {other}"))),
        };
        if reader.take::<3>() != [0; 3] {
            return Err(DecodeError("state padding is not zero".into()));
        }
        let counts = StoredCounts {
            children: reader.u64(),
            labels: reader.u64(),
            id_collisions: reader.u64(),
            tallies: reader.u64(),
        };
        for sum in &mut state.usage.sums {
            *sum = reader.u64();
        }
        for field in &mut state.usage.last_prompt {
            *field = reader.u64();
        }
        let flags = reader.u64();
        if flags & !(USAGE_HAS_LAST | USAGE_UNREADABLE | USAGE_TOOL_CALLS_UNREADABLE) != 0 {
            return Err(DecodeError(format!("usage flags {flags:#x}")));
        }
        state.usage.has_last = flags & USAGE_HAS_LAST != 0;
        state.usage.unreadable = flags & USAGE_UNREADABLE != 0;
        state.usage.tool_calls_unreadable = flags & USAGE_TOOL_CALLS_UNREADABLE != 0;
        for count in &mut state.usage.messages_by_role {
            *count = reader.u64();
        }
        state.usage.tool_calls = reader.u64();
        Ok((state, counts))
    }
}

/// A label's current value, stored under its target id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelValue {
    pub label: String,
    pub timestamp: String,
}

impl LabelValue {
    /// `u32` length of the label, the label, then the timestamp.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.label.len() + self.timestamp.len());
        out.extend_from_slice(&(self.label.len() as u32).to_le_bytes());
        out.extend_from_slice(self.label.as_bytes());
        out.extend_from_slice(self.timestamp.as_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<LabelValue, DecodeError> {
        let bad = || DecodeError("malformed label value".into());
        let len_bytes: [u8; 4] = bytes
            .get(..4)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?;
        let label_len = u32::from_le_bytes(len_bytes) as usize;
        let label = bytes.get(4..4 + label_len).ok_or_else(bad)?;
        let timestamp = &bytes[4 + label_len..];
        Ok(LabelValue {
            label: String::from_utf8(label.to_vec()).map_err(|_| bad())?,
            timestamp: String::from_utf8(timestamp.to_vec()).map_err(|_| bad())?,
        })
    }
}

/// Sequential little-endian reads. Callers check the total length first, so the slices
/// taken here are always in bounds.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.bytes[self.at..self.at + N]);
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    fn hash(&mut self) -> [u8; 32] {
        self.take()
    }
}

const _: () = assert!(
    SNAPSHOT_LEN - SEAL_LEN >= 8 * 6 + 32 + 8 + 32 + 8,
    "the snapshot fields fit its fixed length"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Links may point back (or at the record itself, or nowhere); one that points forward
    /// is damage, which a flush must refuse to carry into a rewritten page.
    #[test]
    fn links_point_back_only() {
        let seq = 1000;
        let mut ok = Record::unlinked(0, 10);
        (
            ok.parent_seq,
            ok.jump_seq,
            ok.compaction_seq,
            ok.model_seq,
            ok.thinking_seq,
        ) = (999, 500, seq, SEQ_NONE, 3);
        assert!(ok.links_point_back(seq));
        let forward: [fn(&mut Record); 5] = [
            |r| r.parent_seq = 1000,
            |r| r.jump_seq = 1001,
            |r| r.compaction_seq = 0xCEFF_FFFF_FFFF,
            |r| r.model_seq = 1001,
            |r| r.thinking_seq = u64::MAX - 1,
        ];
        for damage in forward {
            let mut bad = ok.clone();
            damage(&mut bad);
            assert!(!bad.links_point_back(seq), "{bad:?}");
        }
    }

    /// A state that agrees with its records passes; each field damaged past what the records
    /// allow is named.
    #[test]
    fn state_inconsistencies_are_named() {
        let mut good = State {
            leaf_seq: 9,
            session_info_seq: SEQ_NONE,
            header_offset_bytes: 0,
            header_len_bytes: 100,
            entry_count: 8,
            opaque_count: 2,
            ..State::default()
        };
        good.kind_counts[1] = 8;
        assert_eq!(good.inconsistency(10, 5000), None);
        type Damage = fn(&mut State);
        let damaged: [(&str, Damage); 6] = [
            ("leaf", |s| s.leaf_seq = 10),
            ("session info", |s| s.session_info_seq = u64::MAX - 5376),
            ("opaque", |s| s.opaque_count = 3),
            ("by kind", |s| s.kind_counts[2] = 1),
            ("by kind", |s| s.kind_counts[0] = 1),
            ("header", |s| s.header_len_bytes = 5001),
        ];
        for (what, damage) in damaged {
            let mut state = good.clone();
            damage(&mut state);
            let reason = state.inconsistency(10, 5000).expect(what);
            assert!(reason.contains(what), "{what}: {reason}");
        }
    }

    /// Every layout decodes to what was encoded.
    #[test]
    fn layouts_round_trip() {
        let snapshot = Snapshot {
            indexed_len_bytes: 10,
            next_seq: 3,
            inode: 7,
            first_line_hash: [9; 32],
            tail_hash: [4; 32],
            ..Snapshot::default()
        };
        assert_eq!(Snapshot::decode(&snapshot.encode()), Ok(snapshot));
        let mut state = State {
            leaf_seq: 3,
            kind_counts: [1; KIND_CODE_END],
            header_recovered: true,
            ..State::default()
        };
        state.usage.sums = [1.5f64, 2.0, 0.1, -0.0, 1e300].map(f64::to_bits);
        state.usage.last_prompt = [3.0f64, 4.0, 5.0].map(f64::to_bits);
        state.usage.has_last = true;
        state.usage.unreadable = true;
        state.usage.tool_calls_unreadable = true;
        state.usage.messages_by_role = [7, 8, 9];
        state.usage.tool_calls = 10;
        let counts = StoredCounts {
            children: 5,
            labels: 6,
            id_collisions: 7,
            tallies: 8,
        };
        assert_eq!(
            State::decode(&state.encode(counts)),
            Ok((state.clone(), counts))
        );
        // Sealed: any flipped bit is an error.
        let bytes = state.encode(counts);
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(State::decode(&damaged).is_err(), "bit {bit}");
        }
        let snapshot = Snapshot::default().encode();
        for bit in 0..snapshot.len() * 8 {
            let mut damaged = snapshot.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(Snapshot::decode(&damaged).is_err(), "bit {bit}");
        }
        let label = LabelValue {
            label: "l".into(),
            timestamp: "t".into(),
        };
        assert_eq!(LabelValue::decode(&label.encode()), Ok(label));
    }

    /// Truncated or foreign bytes are decode errors, never panics.
    #[test]
    fn malformed_values_are_errors() {
        assert!(Snapshot::decode(&[0; 5]).is_err());
        assert!(State::decode(&[0; 5]).is_err());
        assert!(LabelValue::decode(&[255, 255, 255, 255]).is_err());
    }
}
