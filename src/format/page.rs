//! Record pages (format-spec/index.md, "Record pages"): the records of up to
//! [`PAGE_RECORDS_MAX`] consecutive lines in one redb value. Pure code: records in, bytes out,
//! and back; decoding never panics.
//!
//! Why frame of reference: neighbouring lines have alike records. Offsets grow by about a
//! line's length, the parent is usually the line before, and the nearest compaction is the
//! same for thousands of lines. So each field is stored as its distance from a base chosen
//! for the page, in the fewest whole bytes that hold every distance in the page (often none).
//! Records stay fixed-width within a page, so any slot is read in O(1), and a pi record takes
//! ~30 bytes instead of 80.

use super::id_index::hex8_value;
use super::line::EntryKind;
use super::record::{DecodeError, Record};
use super::{read_le, width_of};

/// At most this many records share a page.
pub const PAGE_RECORDS_MAX: usize = 255;
const _: () = assert!(
    PAGE_RECORDS_MAX <= u8::MAX as usize,
    "a page's count is one byte"
);
/// A page is closed before it grows past this many bytes, so that it fits one 4 KiB page of
/// redb (16 bytes of redb's leaf header, key and value end). A single record longer than this
/// (a huge id) gets a page of its own.
pub const PAGE_LEN_MAX: usize = 4096 - 16;

/// The stored fields, in the order of the page's descriptors and of each record's bytes.
mod field {
    pub const OFFSET: usize = 0;
    pub const LEN: usize = 1;
    pub const CRC: usize = 2;
    pub const PARENT: usize = 3;
    pub const JUMP: usize = 4;
    pub const DEPTH: usize = 5;
    pub const TAGS: usize = 6;
    pub const TIMESTAMP: usize = 7;
    pub const COMPACTION: usize = 8;
    pub const MODEL: usize = 9;
    pub const THINKING: usize = 10;
    pub const SPAN_OFFSET: usize = 11;
    pub const SPAN_TAIL: usize = 12;
    pub const MODEL_ORIGIN: usize = 13;
    /// The id: where it ends in the id heap, or in a page of hex ids the id's value + 1 (0 for
    /// an empty id).
    pub const ID: usize = 14;
    pub const COUNT: usize = 15;
}

/// Bytes before the descriptors: the record count and the id mode.
const PAGE_HEAD_LEN: usize = 2;
/// The page's seal (`format::seal`) under the table key `first_seq`: redb verifies its own
/// page checksums only in a full integrity check, so a flipped bit would otherwise be read as
/// a record, and a sound page found under another key (a damaged B-tree) as the wrong one.
pub const PAGE_TRAILER_LEN: usize = super::seal::SEAL_LEN;
const SEAL_DOMAIN: &[u8] = b"records";

/// The checksum a page stored under `first_seq` with `body` before its trailer must carry.
fn page_checksum(first_seq: u64, body: &[u8]) -> u32 {
    super::seal::seal_of(SEAL_DOMAIN, &first_seq.to_le_bytes(), body)
}
const ID_MODE_HEAP: u8 = 0;
const ID_MODE_HEX: u8 = 1;

const FLAG_ASSISTANT: u64 = 1;
const FLAG_SIDE: u64 = 2;
const FLAG_PLAIN: u64 = 4;
/// The tags code: the kind in bits 0-3, the flags in 4-6, the role in 7-10, the opaque code
/// from bit 11.
const TAGS_FLAGS_SHIFT: u32 = 4;
const TAGS_ROLE_SHIFT: u32 = 7;
const TAGS_OPAQUE_SHIFT: u32 = 11;
/// Flips the sign bit: timestamps keep their order as codes, and `TIMESTAMP_NONE` (i64::MIN)
/// becomes 0.
const TIMESTAMP_BIAS: u64 = 1 << 63;

/// Each field of the record of `seq` as a `u64` code. Every code is a bijection of its field
/// (wrapping arithmetic), so any record round-trips, a damaged one included: the checks that
/// links point back stay with the reader, where they were before codes existed.
fn codes(record: &Record, seq: u64) -> [u64; field::ID] {
    let (span_offset, span_tail) = match record.message_span {
        None => (0, 0),
        // The span usually ends a byte before the line does: its tail is then 1.
        Some((offset, len)) => (
            u64::from(offset) + 1,
            u64::from(record.len_bytes).wrapping_sub(u64::from(offset) + u64::from(len)),
        ),
    };
    let flags = if record.assistant { FLAG_ASSISTANT } else { 0 }
        | if record.side { FLAG_SIDE } else { 0 }
        | if record.plain { FLAG_PLAIN } else { 0 };
    [
        record.offset_bytes,
        u64::from(record.len_bytes),
        u64::from(record.crc32),
        // Links back as distances from the record itself: a parent is usually 1 back. SEQ_NONE
        // (u64::MAX) becomes seq + 1.
        seq.wrapping_sub(record.parent_seq),
        seq.wrapping_sub(record.jump_seq),
        u64::from(record.depth),
        record.kind.map_or(0, |kind| kind as u64)
            | flags << TAGS_FLAGS_SHIFT
            | u64::from(record.role & 0x0f) << TAGS_ROLE_SHIFT
            | u64::from(record.opaque_code) << TAGS_OPAQUE_SHIFT,
        record.timestamp_ms as u64 ^ TIMESTAMP_BIAS,
        // Nearest-kind links as themselves (alike across a page), SEQ_NONE as 0.
        record.compaction_seq.wrapping_add(1),
        record.model_seq.wrapping_add(1),
        record.thinking_seq.wrapping_add(1),
        span_offset,
        span_tail,
        // As itself, SEQ_NONE as 0: a page's records usually share one origin.
        record.model_origin_seq.wrapping_add(1),
    ]
}

/// The record of `seq` whose codes are `codes` (the inverse of [`codes`]); codes that no record
/// has (a damaged page) are errors.
fn record_from_codes(seq: u64, codes: [u64; field::ID], id: String) -> Result<Record, DecodeError> {
    let narrow = |code: u64, what: &str| {
        u32::try_from(code).map_err(|_| DecodeError(format!("record {seq}: {what} {code}")))
    };
    let len_bytes = narrow(codes[field::LEN], "line length")?;
    let tags = codes[field::TAGS];
    let kind = match tags & 0x0f {
        0 => None,
        code => Some(
            EntryKind::from_code(code as u8)
                .ok_or_else(|| DecodeError(format!("unknown entry kind code {code}")))?,
        ),
    };
    let opaque_code = u8::try_from(tags >> TAGS_OPAQUE_SHIFT)
        .map_err(|_| DecodeError(format!("record {seq}: tags {tags:#x}")))?;
    let message_span = match codes[field::SPAN_OFFSET] {
        0 => None,
        code => {
            let offset = narrow(code - 1, "message offset")?;
            let len = u64::from(len_bytes)
                .wrapping_sub(u64::from(offset))
                .wrapping_sub(codes[field::SPAN_TAIL]);
            Some((offset, narrow(len, "message length")?))
        }
    };
    Ok(Record {
        offset_bytes: codes[field::OFFSET],
        len_bytes,
        crc32: narrow(codes[field::CRC], "crc32")?,
        parent_seq: seq.wrapping_sub(codes[field::PARENT]),
        jump_seq: seq.wrapping_sub(codes[field::JUMP]),
        depth: narrow(codes[field::DEPTH], "depth")?,
        kind,
        assistant: tags >> TAGS_FLAGS_SHIFT & FLAG_ASSISTANT != 0,
        side: tags >> TAGS_FLAGS_SHIFT & FLAG_SIDE != 0,
        plain: tags >> TAGS_FLAGS_SHIFT & FLAG_PLAIN != 0,
        role: (tags >> TAGS_ROLE_SHIFT & 0x0f) as u8,
        opaque_code,
        timestamp_ms: (codes[field::TIMESTAMP] ^ TIMESTAMP_BIAS) as i64,
        compaction_seq: codes[field::COMPACTION].wrapping_sub(1),
        model_seq: codes[field::MODEL].wrapping_sub(1),
        thinking_seq: codes[field::THINKING].wrapping_sub(1),
        model_origin_seq: codes[field::MODEL_ORIGIN].wrapping_sub(1),
        message_span,
        id: id.into(),
    })
}

/// The base and width a page stores a field in, given the smallest and largest code: the
/// smallest as base when that narrows the field, else 0 (which saves storing a base).
fn frame(min: u64, max: u64) -> (u64, usize) {
    // An empty builder's ranges are (u64::MAX, 0): width 0.
    let spread = width_of(max.saturating_sub(min));
    if spread < width_of(max) {
        (min, spread)
    } else {
        (0, spread)
    }
}

/// Where a field is in each record of a page, and what its stored bytes are added to.
#[derive(Clone, Copy, Debug, Default)]
struct Column {
    base: u64,
    /// The low `width` bytes set: what an 8-byte load at the field keeps.
    mask: u64,
    width: u8,
    /// Byte offset of the field in a record.
    at: u8,
}

impl Column {
    /// The code stored at the start of `bytes`, which hold at least 8 bytes.
    fn code_from_word(&self, bytes: &[u8]) -> u64 {
        let word: [u8; 8] = bytes[..8]
            .try_into()
            .expect("a slice of 8 bytes is 8 bytes");
        self.base.wrapping_add(u64::from_le_bytes(word) & self.mask)
    }
}

/// A checked view of an encoded page: its count, descriptors, records and id heap agree.
#[derive(Clone, Debug)]
pub struct PageView<'a> {
    first_seq: u64,
    count: usize,
    hex_ids: bool,
    columns: [Column; field::COUNT],
    /// Bytes per record.
    stride: usize,
    records: &'a [u8],
    heap: &'a [u8],
}

impl<'a> PageView<'a> {
    /// The page stored under `first_seq` (its records are those of `first_seq ..`).
    pub fn new(first_seq: u64, bytes: &'a [u8]) -> Result<PageView<'a>, DecodeError> {
        let bad = |what: String| DecodeError(format!("record page {first_seq}: {what}"));
        let Some(body_len) = bytes.len().checked_sub(PAGE_TRAILER_LEN) else {
            return Err(bad(format!("{} bytes", bytes.len())));
        };
        let (bytes, trailer) = bytes.split_at(body_len);
        if page_checksum(first_seq, bytes).to_le_bytes() != trailer {
            return Err(bad("checksum mismatch".into()));
        }
        let (Some(&[count, id_mode]), Some(descriptors)) = (
            bytes.first_chunk::<PAGE_HEAD_LEN>(),
            bytes.get(PAGE_HEAD_LEN..PAGE_HEAD_LEN + field::COUNT),
        ) else {
            return Err(bad(format!("{} bytes", bytes.len())));
        };
        let count = usize::from(count);
        if count == 0 || count > PAGE_RECORDS_MAX {
            return Err(bad(format!("holds {count} records")));
        }
        let hex_ids = match id_mode {
            ID_MODE_HEAP => false,
            ID_MODE_HEX => true,
            other => return Err(bad(format!("id mode {other}"))),
        };
        let mut columns = [Column::default(); field::COUNT];
        let mut at = PAGE_HEAD_LEN + field::COUNT;
        let mut stride = 0;
        for (column, descriptor) in columns.iter_mut().zip(descriptors) {
            let (width, base_len) = (descriptor & 0x0f, usize::from(descriptor >> 4));
            if width > 8 || base_len > 8 {
                return Err(bad(format!("field descriptor {descriptor:#04x}")));
            }
            let base = bytes
                .get(at..at + base_len)
                .ok_or_else(|| bad(format!("{} bytes", bytes.len())))?;
            at += base_len;
            *column = Column {
                base: read_le(base),
                mask: match width {
                    8 => u64::MAX,
                    width => (1 << (8 * width)) - 1,
                },
                width,
                // At most 14 fields of 8 bytes: an offset below 112.
                at: stride as u8,
            };
            stride += usize::from(width);
        }
        let records_end = at + count * stride;
        let (Some(records), Some(heap)) = (bytes.get(at..records_end), bytes.get(records_end..))
        else {
            return Err(bad(format!(
                "{} bytes cannot hold {count} records of {stride}",
                bytes.len()
            )));
        };
        let view = PageView {
            first_seq,
            count,
            hex_ids,
            columns,
            stride,
            records,
            heap,
        };
        if hex_ids {
            if !heap.is_empty() {
                return Err(bad("bytes after the records of a page of hex ids".into()));
            }
            return Ok(view);
        }
        // The last id ends the heap; each id's own bounds are checked when it is read, so that
        // opening a page stays O(fields), not O(records).
        if view.code(count - 1, field::ID) != heap.len() as u64 {
            return Err(bad("its last id does not end the id heap".into()));
        }
        Ok(view)
    }

    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The code of `field` in `slot`, which is below the count: the checks of [`PageView::new`]
    /// keep the bytes in bounds.
    fn code(&self, slot: usize, field: usize) -> u64 {
        let column = self.columns[field];
        let at = slot * self.stride + usize::from(column.at);
        match self.records.get(at..at + 8) {
            // One load and a mask instead of a copy of `width` bytes (most fields are read
            // this way: only the last few bytes of a page are too close to its end).
            Some(word) => column.code_from_word(word),
            None => column
                .base
                .wrapping_add(read_le(&self.records[at..at + usize::from(column.width)])),
        }
    }

    /// Every code of `slot` but the id's, read from one copy of the record.
    fn codes(&self, slot: usize) -> [u64; field::ID] {
        // The record, then room for the 8-byte loads of its last fields.
        let mut record = [0; field::COUNT * 8 + 8];
        let start = slot * self.stride;
        record[..self.stride].copy_from_slice(&self.records[start..start + self.stride]);
        let mut codes = [0; field::ID];
        for (code, column) in codes.iter_mut().zip(&self.columns) {
            *code = column.code_from_word(&record[usize::from(column.at)..]);
        }
        codes
    }

    /// The record of `seq`, or `None` outside the page.
    pub fn get(&self, seq: u64) -> Option<RecordRef<'_, 'a>> {
        // Seqs wrap like every code does, so a page near u64::MAX reads as it decodes.
        let slot = usize::try_from(seq.wrapping_sub(self.first_seq)).ok()?;
        (slot < self.count).then_some(RecordRef {
            page: self,
            slot,
            seq,
        })
    }

    /// Every record of the page, decoded.
    pub fn decode_all(&self) -> Result<Vec<Record>, DecodeError> {
        (0..self.count)
            .map(|slot| {
                RecordRef {
                    page: self,
                    slot,
                    seq: self.first_seq.wrapping_add(slot as u64),
                }
                .decode()
            })
            .collect()
    }
}

/// A record's id as a page holds it: text in the id heap, or a pi id of 8 hex digits packed
/// into its value.
pub enum StoredId<'a> {
    Text(&'a str),
    Hex([u8; 8]),
}

impl StoredId<'_> {
    pub fn as_str(&self) -> &str {
        match self {
            StoredId::Text(text) => text,
            StoredId::Hex(digits) => {
                std::str::from_utf8(digits).expect("hex digits are ASCII, so valid UTF-8")
            }
        }
    }
}

/// One record inside a page: fields are decoded on demand.
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'p, 'a> {
    page: &'p PageView<'a>,
    slot: usize,
    seq: u64,
}

impl<'p, 'a> RecordRef<'p, 'a> {
    pub fn parent_seq(&self) -> u64 {
        self.seq
            .wrapping_sub(self.page.code(self.slot, field::PARENT))
    }

    /// Whether the record is an assistant message's.
    pub fn assistant(&self) -> bool {
        self.page.code(self.slot, field::TAGS) >> TAGS_FLAGS_SHIFT & FLAG_ASSISTANT != 0
    }

    /// The role code of a plain message entry's record (kind message, [`Record::plain`]), or
    /// `None` for any other record.
    pub fn plain_message_role(&self) -> Option<u8> {
        let tags = self.page.code(self.slot, field::TAGS);
        (tags & 0x0f == EntryKind::Message as u64 && tags >> TAGS_FLAGS_SHIFT & FLAG_PLAIN != 0)
            .then_some((tags >> TAGS_ROLE_SHIFT & 0x0f) as u8)
    }

    /// [`Record::timestamp_ms`].
    pub fn timestamp_ms(&self) -> i64 {
        (self.page.code(self.slot, field::TIMESTAMP) ^ TIMESTAMP_BIAS) as i64
    }

    /// [`Record::model_origin_seq`], unchecked ([`RecordRef::decode`] checks nothing of it
    /// either: its reader does).
    pub fn model_origin_seq(&self) -> u64 {
        self.page
            .code(self.slot, field::MODEL_ORIGIN)
            .wrapping_sub(1)
    }

    /// The depth, saturated for a damaged one ([`RecordRef::decode`] refuses it).
    pub fn depth(&self) -> u32 {
        u32::try_from(self.page.code(self.slot, field::DEPTH)).unwrap_or(u32::MAX)
    }

    pub fn id(&self) -> Result<StoredId<'a>, DecodeError> {
        let code = self.page.code(self.slot, field::ID);
        if self.page.hex_ids {
            // 0 is an empty id (an opaque record without one), any other code a hex id + 1.
            let Some(value) = code.checked_sub(1) else {
                return Ok(StoredId::Text(""));
            };
            let value = u32::try_from(value)
                .map_err(|_| DecodeError(format!("record {}: hex id {code:#x}", self.seq)))?;
            return Ok(StoredId::Hex(super::id_index::hex8_digits(value)));
        }
        let start = match self.slot {
            0 => 0,
            slot => self.page.code(slot - 1, field::ID),
        };
        let heap: &'a [u8] = self.page.heap;
        let text = usize::try_from(start)
            .ok()
            .zip(usize::try_from(code).ok())
            .and_then(|(start, end)| heap.get(start..end))
            .ok_or_else(|| {
                DecodeError(format!(
                    "record {}: id at {start}..{code} of a heap of {}",
                    self.seq,
                    heap.len()
                ))
            })?;
        std::str::from_utf8(text)
            .map(StoredId::Text)
            .map_err(|_| DecodeError(format!("record {}: id is not UTF-8", self.seq)))
    }

    pub fn decode(&self) -> Result<Record, DecodeError> {
        record_from_codes(
            self.seq,
            self.page.codes(self.slot),
            self.id()?.as_str().to_string(),
        )
    }
}

/// Builds one page of consecutive records (format-spec/index.md, "Record pages").
pub struct PageBuilder {
    first_seq: u64,
    /// Each record's codes; the last is where its id ends in `heap`.
    codes: Vec<[u64; field::COUNT]>,
    /// Each record's id code in a page of hex ids, while every id so far can have one.
    hex_ids: Option<Vec<u64>>,
    heap: Vec<u8>,
    /// Smallest and largest code of each field so far (the id's: of its end in the heap).
    ranges: [(u64, u64); field::COUNT],
    hex_range: (u64, u64),
}

impl PageBuilder {
    /// An empty page that starts at record `first_seq`.
    pub fn new(first_seq: u64) -> PageBuilder {
        PageBuilder {
            first_seq,
            codes: Vec::with_capacity(PAGE_RECORDS_MAX),
            hex_ids: Some(Vec::with_capacity(PAGE_RECORDS_MAX)),
            heap: Vec::new(),
            ranges: [(u64::MAX, 0); field::COUNT],
            hex_range: (u64::MAX, 0),
        }
    }

    /// The seq of the page's first record (of the next page once this one is finished).
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Encoded length of a page of `count` records whose fields span `ranges`.
    fn encoded_len(
        count: usize,
        ranges: &[(u64, u64); field::COUNT],
        hex_range: Option<(u64, u64)>,
        heap_len: usize,
    ) -> usize {
        let mut len = PAGE_HEAD_LEN + field::COUNT;
        for (field, &(min, max)) in ranges.iter().enumerate() {
            let (min, max) = match hex_range {
                Some(hex) if field == field::ID => hex,
                _ => (min, max),
            };
            let (base, width) = frame(min, max);
            len += width_of(base) + count * width;
        }
        len + if hex_range.is_some() { 0 } else { heap_len } + PAGE_TRAILER_LEN
    }

    /// Adds `record` if the page still takes it within [`PAGE_LEN_MAX`] and
    /// [`PAGE_RECORDS_MAX`] (an empty page takes any record); returns whether it did.
    pub fn try_push(&mut self, record: &Record) -> bool {
        if self.codes.len() >= PAGE_RECORDS_MAX {
            return false;
        }
        let (codes, hex) = self.codes_of(record);
        if !self.codes.is_empty() && self.len_with(&codes, hex, record.id.len()) > PAGE_LEN_MAX {
            return false;
        }
        self.add(record, &codes, hex);
        true
    }

    /// Adds `record` whatever the page's length in bytes (a lone record longer than
    /// [`PAGE_LEN_MAX`], a stored page continued); the page holds fewer than
    /// [`PAGE_RECORDS_MAX`] records.
    pub fn push(&mut self, record: &Record) {
        debug_assert!(
            self.codes.len() < PAGE_RECORDS_MAX,
            "a full page takes no record"
        );
        let (codes, hex) = self.codes_of(record);
        self.add(record, &codes, hex);
    }

    /// The page's encoded length with a next record of `codes`, `hex` and an id of `id_len`
    /// bytes: [`PageBuilder::encoded_len`] of the widened ranges, without building them.
    fn len_with(&self, codes: &[u64; field::COUNT], hex: Option<u64>, id_len: usize) -> usize {
        let count = self.codes.len() + 1;
        let mut len = PAGE_HEAD_LEN + field::COUNT;
        for (&range, &code) in self.ranges[..field::ID].iter().zip(codes) {
            let (min, max) = widen(range, code);
            let (base, width) = frame(min, max);
            len += width_of(base) + count * width;
        }
        let (id_range, heap_len) = match (&self.hex_ids, hex) {
            (Some(_), Some(value)) => (widen(self.hex_range, value), 0),
            _ => (
                widen(self.ranges[field::ID], codes[field::ID]),
                self.heap.len() + id_len,
            ),
        };
        let (base, width) = frame(id_range.0, id_range.1);
        len + width_of(base) + count * width + heap_len + PAGE_TRAILER_LEN
    }

    fn add(&mut self, record: &Record, codes: &[u64; field::COUNT], hex: Option<u64>) {
        merge(&mut self.ranges, codes);
        self.codes.push(*codes);
        self.heap.extend_from_slice(record.id.as_bytes());
        match (&mut self.hex_ids, hex) {
            (Some(values), Some(value)) => {
                values.push(value);
                self.hex_range = widen(self.hex_range, value);
            }
            (hex_ids, _) => *hex_ids = None,
        }
    }

    /// The codes `record` would have as the next record, and its id's code in a page of hex
    /// ids if it can have one: 0 for an empty id, the value + 1 for 8 hex digits (so that an
    /// opaque record without an id does not move its whole page to the heap).
    fn codes_of(&self, record: &Record) -> ([u64; field::COUNT], Option<u64>) {
        let seq = self.first_seq.wrapping_add(self.codes.len() as u64);
        let mut all = [0; field::COUNT];
        all[..field::ID].copy_from_slice(&codes(record, seq));
        all[field::ID] = (self.heap.len() + record.id.len()) as u64;
        let hex = match record.id.as_str() {
            "" => Some(0),
            id => hex8_value(id).map(|value| u64::from(value) + 1),
        };
        (all, hex)
    }

    /// The encoded page; the builder then starts the next page, after this one's records.
    pub fn finish(&mut self) -> Vec<u8> {
        let count = self.codes.len();
        debug_assert!(
            (1..=PAGE_RECORDS_MAX).contains(&count),
            "a page holds 1 to {PAGE_RECORDS_MAX} records, not {count}"
        );
        let hex_range = self.hex_ids.as_ref().map(|_| self.hex_range);
        let mut out = Vec::with_capacity(Self::encoded_len(
            count,
            &self.ranges,
            hex_range,
            self.heap.len(),
        ));
        // `fits` closes pages at PAGE_RECORDS_MAX, which the count byte holds.
        out.push(count as u8);
        out.push(if hex_range.is_some() {
            ID_MODE_HEX
        } else {
            ID_MODE_HEAP
        });
        let mut frames = [(0, 0); field::COUNT];
        for (field, frame_of) in frames.iter_mut().enumerate() {
            let (min, max) = match hex_range {
                Some(hex) if field == field::ID => hex,
                _ => self.ranges[field],
            };
            *frame_of = frame(min, max);
        }
        for (base, width) in frames {
            out.push((width | width_of(base) << 4) as u8);
        }
        for (base, _) in frames {
            out.extend_from_slice(&base.to_le_bytes()[..width_of(base)]);
        }
        // The fields stored in more than no bytes, each written as one 8-byte store of its
        // distance from its base, whose bytes past its width the next field overwrites (and
        // the last record's, the truncation): one store per field instead of a copy of
        // `width` bytes.
        let mut stored = [(0, 0, 0); field::COUNT];
        let mut stored_count = 0;
        for (field, &(base, width)) in frames.iter().enumerate() {
            if width > 0 {
                stored[stored_count] = (field, base, width);
                stored_count += 1;
            }
        }
        let stored = &stored[..stored_count];
        let records_start = out.len();
        let stride: usize = stored.iter().map(|&(_, _, width)| width).sum();
        out.resize(records_start + count * stride + 8, 0);
        if let Some(values) = &self.hex_ids {
            // The codes are cleared below: each id's code becomes the one this page stores.
            for (codes, &value) in self.codes.iter_mut().zip(values) {
                codes[field::ID] = value;
            }
        }
        let mut at = records_start;
        for codes in &self.codes {
            for &(field, base, width) in stored {
                out[at..at + 8].copy_from_slice(&codes[field].wrapping_sub(base).to_le_bytes());
                at += width;
            }
        }
        out.truncate(at);
        if hex_range.is_none() {
            out.extend_from_slice(&self.heap);
        }
        let checksum = page_checksum(self.first_seq, &out);
        out.extend_from_slice(&checksum.to_le_bytes());
        self.first_seq = self.first_seq.wrapping_add(count as u64);
        self.codes.clear();
        self.heap.clear();
        match &mut self.hex_ids {
            Some(values) => values.clear(),
            None => self.hex_ids = Some(Vec::with_capacity(PAGE_RECORDS_MAX)),
        }
        self.ranges = [(u64::MAX, 0); field::COUNT];
        self.hex_range = (u64::MAX, 0);
        out
    }
}

fn widen((min, max): (u64, u64), value: u64) -> (u64, u64) {
    (min.min(value), max.max(value))
}

fn merge(ranges: &mut [(u64, u64); field::COUNT], codes: &[u64; field::COUNT]) {
    for (range, &code) in ranges.iter_mut().zip(codes) {
        *range = widen(*range, code);
    }
}

/// Encodes `records`, the records of `first_seq ..`, as one page (see [`PageBuilder`]).
///
/// # Panics
/// Unless there are 1 to [`PAGE_RECORDS_MAX`] records: the count byte could not say more.
pub fn encode_page(first_seq: u64, records: &[Record]) -> Vec<u8> {
    assert!(
        (1..=PAGE_RECORDS_MAX).contains(&records.len()),
        "a page holds 1 to {PAGE_RECORDS_MAX} records, not {}",
        records.len()
    );
    let mut builder = PageBuilder::new(first_seq);
    for record in records {
        builder.push(record);
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::record::{SEQ_NONE, TIMESTAMP_NONE};
    use proptest::prelude::*;

    /// Applies `edit` to the page's bytes before its trailer, then seals it again with the
    /// checksum of the edited bytes: how the structural checks are reached behind the sum.
    fn resealed(first_seq: u64, page: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut body = page[..page.len() - PAGE_TRAILER_LEN].to_vec();
        edit(&mut body);
        let checksum = page_checksum(first_seq, &body);
        body.extend_from_slice(&checksum.to_le_bytes());
        body
    }

    /// Where `field` of `slot` is in an encoded page, read from its descriptors as
    /// format-spec/index.md §2 lays them out.
    fn field_at(bytes: &[u8], slot: usize, field: usize) -> usize {
        let descriptors = &bytes[2..2 + field::COUNT];
        let bases: usize = descriptors.iter().map(|d| usize::from(d >> 4)).sum();
        let widths: Vec<usize> = descriptors.iter().map(|d| usize::from(d & 0x0f)).collect();
        let stride: usize = widths.iter().sum();
        2 + field::COUNT + bases + slot * stride + widths[..field].iter().sum::<usize>()
    }

    fn decoded_page(first_seq: u64, bytes: &[u8]) -> Vec<Record> {
        decoded(first_seq, bytes).expect("an encoded page decodes")
    }

    fn decoded(first_seq: u64, bytes: &[u8]) -> Result<Vec<Record>, DecodeError> {
        PageView::new(first_seq, bytes)?.decode_all()
    }

    fn any_record() -> impl Strategy<Value = Record> {
        let link = prop_oneof![Just(SEQ_NONE), 0u64..200, any::<u64>()];
        let id = prop_oneof![
            Just(String::new()),
            "[0-9a-f]{8}",
            "[0-9a-fA-F]{7,9}",
            "\\PC{0,12}",
        ];
        (
            (
                any::<u64>(),
                any::<u32>(),
                any::<u32>(),
                link.clone(),
                link.clone(),
            ),
            (
                any::<u32>(),
                0u8..10,
                (any::<bool>(), any::<bool>(), 0u8..16),
                any::<bool>(),
                any::<u8>(),
            ),
            (
                prop_oneof![Just(TIMESTAMP_NONE), any::<i64>()],
                link.clone(),
                link.clone(),
                link.clone(),
                link,
            ),
            (proptest::option::of((any::<u32>(), any::<u32>())), id),
        )
            .prop_map(
                |(
                    (offset_bytes, len_bytes, crc32, parent_seq, jump_seq),
                    (depth, kind, (assistant, plain, role), side, opaque_code),
                    (timestamp_ms, compaction_seq, model_seq, thinking_seq, model_origin_seq),
                    (message_span, id),
                )| Record {
                    offset_bytes,
                    len_bytes,
                    crc32,
                    parent_seq,
                    jump_seq,
                    depth,
                    kind: EntryKind::from_code(kind),
                    assistant,
                    side,
                    role,
                    plain,
                    opaque_code,
                    timestamp_ms,
                    compaction_seq,
                    model_seq,
                    thinking_seq,
                    model_origin_seq,
                    message_span,
                    id: id.into(),
                },
            )
    }

    proptest! {
        /// Any records, damaged ones included (forward links, spans outside the line), decode
        /// to what was encoded, whole and field by field; the builder's size estimate is the
        /// encoded size; and a page continued from its decoded records encodes as if built at
        /// once (what a flush does with the last stored page).
        #[test]
        fn pages_round_trip(
            first_seq in prop_oneof![0u64..1000, any::<u64>()],
            records in proptest::collection::vec(any_record(), 1..=PAGE_RECORDS_MAX),
            cut in 0usize..PAGE_RECORDS_MAX,
        ) {
            let mut builder = PageBuilder::new(first_seq);
            for record in &records {
                builder.push(record);
            }
            let estimate = PageBuilder::encoded_len(
                builder.len(),
                &builder.ranges,
                builder.hex_ids.as_ref().map(|_| builder.hex_range),
                builder.heap.len(),
            );
            let bytes = builder.finish();
            prop_assert_eq!(bytes.len(), estimate);
            prop_assert_eq!(builder.first_seq(), first_seq.wrapping_add(records.len() as u64));
            prop_assert_eq!(&decoded(first_seq, &bytes).unwrap(), &records);
            let page = PageView::new(first_seq, &bytes).unwrap();
            for (slot, record) in records.iter().enumerate() {
                let seq = first_seq.wrapping_add(slot as u64);
                let stored = page.get(seq).unwrap();
                prop_assert_eq!(stored.parent_seq(), record.parent_seq);
                prop_assert_eq!(stored.depth(), record.depth);
                let id = stored.id().unwrap();
                prop_assert_eq!(id.as_str(), record.id.as_str());
            }
            prop_assert!(page.get(first_seq.wrapping_add(records.len() as u64)).is_none());

            let cut = cut % records.len() + 1;
            let head = encode_page(first_seq, &records[..cut]);
            let mut continued = PageBuilder::new(first_seq);
            for record in decoded_page(first_seq, &head).iter().chain(&records[cut..]) {
                continued.push(record);
            }
            prop_assert_eq!(continued.finish(), bytes);
        }

        /// A builder fed by `try_push` cuts pages within PAGE_LEN_MAX bytes (a lone record
        /// excepted) and PAGE_RECORDS_MAX records, each but the last refusing the record that
        /// starts the next, and the pages hold the records in order.
        #[test]
        fn pages_are_cut_at_their_length(
            records in proptest::collection::vec(
                (any_record(), 0usize..600, any::<char>()).prop_map(|(record, len, unit)| {
                    Record {
                        id: if len % 3 == 0 {
                            unit.to_string().repeat(len).into()
                        } else {
                            record.id.clone()
                        },
                        ..record
                    }
                }),
                1..400,
            ),
        ) {
            let mut builder = PageBuilder::new(5);
            let mut pages = Vec::new();
            for record in &records {
                if !builder.try_push(record) {
                    let first = builder.first_seq();
                    pages.push((first, builder.finish()));
                    builder.push(record);
                }
            }
            let first = builder.first_seq();
            pages.push((first, builder.finish()));
            let mut decoded = Vec::new();
            for (index, (first, bytes)) in pages.iter().enumerate() {
                let page = decoded_page(*first, bytes);
                prop_assert!(bytes.len() <= PAGE_LEN_MAX || page.len() == 1);
                prop_assert!(page.len() <= PAGE_RECORDS_MAX);
                if let Some((next_first, _)) = pages.get(index + 1) {
                    prop_assert_eq!(first + page.len() as u64, *next_first);
                    let mut longer = page.clone();
                    longer.push(records[(next_first - 5) as usize].clone());
                    prop_assert!(
                        longer.len() > PAGE_RECORDS_MAX
                            || encode_page(*first, &longer).len() > PAGE_LEN_MAX
                    );
                }
                decoded.extend(page);
            }
            prop_assert_eq!(decoded, records);
        }

        /// Whatever bytes a page holds, reading it gives records or errors, never a panic.
        #[test]
        fn damaged_pages_do_not_panic(
            records in proptest::collection::vec(any_record(), 1..8),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            cut in any::<usize>(),
        ) {
            // Sealed again after the damage, so that the layout checks behind the checksum are
            // what is exercised.
            let bytes = resealed(7, &encode_page(7, &records), |bytes| {
                for (at, value) in flips {
                    let len = bytes.len();
                    bytes[at % len] = value;
                }
                bytes.truncate(bytes.len() - cut % 3);
            });
            if let Ok(page) = PageView::new(7, &bytes) {
                let _ = page.decode_all();
                for seq in 7..7 + page.len() as u64 {
                    let record = page.get(seq).unwrap();
                    let _ = (record.parent_seq(), record.depth(), record.id().map(|id| id.as_str().len()));
                }
            }
        }
    }

    /// A page of 64 pi records takes what format-spec/index.md says it does: two bytes of head,
    /// fifteen descriptors and the bases, then records of the fields' widths. Each stores its
    /// offset (2 bytes), crc32 (4), jump pointer (1), depth (1), tags (1), timestamp (3), model
    /// (1) and id (4), and nothing of its length, parent, compaction, thinking level, span or
    /// model origin, which are alike across the page: 17 bytes instead of 88.
    #[test]
    fn pi_records_take_a_quarter_of_fixed_ones() {
        let first_seq = 1000;
        let records: Vec<Record> = (first_seq..first_seq + 64)
            .map(Record::pi_like_message)
            .collect();
        let bytes = encode_page(first_seq, &records);
        assert_eq!(bytes[..2], [64, ID_MODE_HEX]);
        let descriptors = &bytes[2..17];
        let widths: Vec<u8> = descriptors.iter().map(|d| d & 0x0f).collect();
        //               off len crc par jmp dep tag  ts cmp mod thk spo spt org  id
        assert_eq!(widths, [2, 0, 4, 0, 1, 1, 1, 3, 0, 1, 0, 0, 0, 0, 4]);
        let base_lens: usize = descriptors.iter().map(|d| usize::from(d >> 4)).sum();
        // The offset's base (3 bytes) and those of the fields whose spread is narrower than
        // their values: 3 + 2 + 2 + 2 + 2 + 6 + 1 + 2 + 1 + 1 + 1 + 1 + 1 + 4 = 29 at most.
        assert!(base_lens <= 29, "{base_lens}");
        assert_eq!(bytes.len(), 17 + base_lens + 64 * 17 + PAGE_TRAILER_LEN);
        assert_eq!(decoded(first_seq, &bytes).unwrap(), records);
    }

    /// Regression (found by the `index_pages` fuzzer): a page whose seqs wrap past u64::MAX
    /// decoded all its records but could not look up the wrapped ones by seq.
    #[test]
    fn seqs_wrap_like_codes() {
        let first_seq = u64::MAX - 1;
        let records: Vec<Record> = (0..4).map(Record::pi_like_message).collect();
        let bytes = encode_page(first_seq, &records);
        let page = PageView::new(first_seq, &bytes).unwrap();
        for (slot, record) in records.iter().enumerate() {
            let stored = page.get(first_seq.wrapping_add(slot as u64)).unwrap();
            assert_eq!(&stored.decode().unwrap(), record);
        }
        assert!(page.get(2).is_none());
        assert!(page.get(first_seq - 1).is_none());
    }

    /// An opaque record without an id keeps its page of hex ids in hex mode (its id code is
    /// 0): 4 bytes an id instead of the heap's 8 and an end.
    #[test]
    fn an_empty_id_keeps_hex_ids_packed() {
        let mut records: Vec<Record> = (1..101).map(Record::pi_like_message).collect();
        let all_hex = encode_page(1, &records);
        records[50].id = Default::default();
        records[50].kind = None;
        let bytes = encode_page(1, &records);
        assert_eq!(bytes[1], ID_MODE_HEX);
        assert!(
            bytes.len() <= all_hex.len() + 100,
            "{} against {}",
            bytes.len(),
            all_hex.len()
        );
        assert_eq!(decoded_page(1, &bytes), records);
        records[60].id = "not-hex!".into();
        let bytes = encode_page(1, &records);
        assert_eq!(bytes[1], ID_MODE_HEAP);
        assert_eq!(decoded_page(1, &bytes), records);
        let empty: Vec<Record> = (0..3).map(|seq| Record::unlinked(seq * 10, 9)).collect();
        let bytes = encode_page(0, &empty);
        assert_eq!(bytes[1], ID_MODE_HEX);
        assert_eq!(bytes[2 + field::ID], 0, "ids all empty take no bytes");
        assert_eq!(decoded_page(0, &bytes), empty);
    }

    /// A record's fields are at the offsets the widths give, as `base + stored` little-endian.
    #[test]
    fn page_layout_is_the_specs() {
        let mut first = Record::unlinked(1000, 5);
        first.id = "root".into();
        first.jump_seq = 10;
        first.timestamp_ms = TIMESTAMP_NONE;
        let mut second = Record::unlinked(1006, 7);
        second.parent_seq = 10;
        second.jump_seq = 10;
        second.depth = 1;
        second.kind = Some(EntryKind::Message);
        second.assistant = true;
        second.message_span = Some((2, 4));
        second.id = "xy".into();
        second.timestamp_ms = TIMESTAMP_NONE;
        let bytes = encode_page(10, &[first, second]);
        #[rustfmt::skip]
        let expected: &[u8] = &[
            2, ID_MODE_HEAP,
            // descriptors: width | base length << 4; offset 1 byte from a base of 2 bytes,
            // then len, parent, jump, depth, tags, span offset and tail and id 1 byte each
            0x21, 0x01, 0x00, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00,
            0x01,
            0xe8, 0x03, // offset base 1000
            // record 10: offset +0, len 5, parent code 10 + 1 (none), jump 0 back (itself),
            // depth 0, tags 0, no span, id ends at 4
            0, 5, 11, 0, 0, 0, 0, 0, 4,
            // record 11: offset +6, len 7, parent and jump 1 back, depth 1, tags message (1)
            // | assistant << 4, span offset 2 + 1, tail 7 - 2 - 4 = 1, id ends at 6
            6, 7, 1, 1, 1, 0x11, 3, 1, 6,
        ];
        let mut expected = expected.to_vec();
        expected.extend_from_slice(b"rootxy");
        // The trailer: crc32 of the domain, the key's length and the key (the first seq), and
        // the bytes above.
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(b"records");
        hasher.update(&8u64.to_le_bytes());
        hasher.update(&10u64.to_le_bytes());
        hasher.update(&expected);
        expected.extend_from_slice(&hasher.finalize().to_le_bytes());
        assert_eq!(bytes, expected);
    }

    /// Every single flipped bit of a page, and a page read under another first seq than its own
    /// (a damaged B-tree handing out the wrong value), fail the checksum: damage is never read
    /// as records.
    #[test]
    fn any_flipped_bit_or_other_key_fails_the_checksum() {
        let mut records: Vec<Record> = (40..90).map(Record::pi_like_message).collect();
        records[7].id = "a text id".into();
        for page in [encode_page(40, &records[..20]), encode_page(40, &records)] {
            assert!(PageView::new(40, &page).is_ok());
            assert!(
                PageView::new(41, &page).is_err(),
                "stored under another key"
            );
            for bit in 0..page.len() * 8 {
                let mut damaged = page.clone();
                damaged[bit / 8] ^= 1 << (bit % 8);
                let error = PageView::new(40, &damaged).err();
                assert!(
                    error.is_some_and(|error| error.0.contains("checksum")),
                    "bit {bit}"
                );
            }
        }
    }

    /// Truncated or foreign bytes are decode errors, never panics.
    #[test]
    fn malformed_pages_are_errors() {
        let records: Vec<Record> = (0..3).map(Record::pi_like_message).collect();
        let mut with_text_id = records.clone();
        with_text_id[2].id = "ünïcode".into();
        for page in [encode_page(0, &records), encode_page(0, &with_text_id)] {
            for len in 0..page.len() {
                assert!(
                    PageView::new(0, &page[..len]).is_err(),
                    "truncated to {len}"
                );
            }
            let mut longer = page.clone();
            longer.push(0);
            assert!(PageView::new(0, &longer).is_err(), "a byte too many");
        }
        let bytes = encode_page(0, &with_text_id);
        type Damage = fn(&mut Vec<u8>);
        let errors: [(&str, Damage); 4] = [
            ("no records", |page| page[0] = 0),
            ("more records than it holds", |page| page[0] = 4),
            ("id mode 2", |page| page[1] = 2),
            ("a width of 9", |page| page[2] = 0x09),
        ];
        for (what, damage) in errors {
            let page = resealed(0, &bytes, damage);
            assert!(PageView::new(0, &page).is_err(), "{what}");
        }
        // An id end out of order in the middle of the heap: the page opens (that check is the
        // last id's only), and reading that record's id is the error.
        let bad_end = resealed(0, &bytes, |page| {
            let at = field_at(page, 1, field::ID);
            page[at] = 0xff;
        });
        let page = PageView::new(0, &bad_end).expect("the last id still ends the heap");
        assert!(page.get(1).is_some_and(|record| record.id().is_err()));
        assert!(page.get(2).is_some_and(|record| record.id().is_err()));
        assert!(page.decode_all().is_err());
        let bad_utf8 = resealed(0, &bytes, |page| {
            let last = page.len() - 1;
            page[last] = 0xff;
        });
        let page = PageView::new(0, &bad_utf8).expect("the layout is intact");
        assert!(page.get(2).is_some_and(|record| record.id().is_err()));
        assert!(page.decode_all().is_err());
        assert!(page.get(3).is_none());
    }

    /// Codes that no record has are decode errors: an unknown kind, a depth or length past
    /// 32 bits, an opaque code past a byte, a hex id past 32 bits.
    #[test]
    fn impossible_codes_are_errors() {
        let mut codes = codes(&Record::pi_like_message(5), 5);
        assert!(record_from_codes(5, codes, String::new()).is_ok());
        for (field, value) in [
            (field::TAGS, 0x0e),
            (field::TAGS, 1 << (TAGS_OPAQUE_SHIFT + 8)),
            (field::DEPTH, 1 << 32),
            (field::LEN, 1 << 32),
            (field::CRC, 1 << 32),
        ] {
            let kept = codes[field];
            codes[field] = value;
            assert!(
                record_from_codes(5, codes, String::new()).is_err(),
                "{field}"
            );
            codes[field] = kept;
        }
        // A one-record page of hex ids stores the id as its base, with width 0: a base of
        // 5 bytes names a value past 32 bits.
        let id_descriptor = 2 + field::ID;
        let page = resealed(0, &encode_page(0, &[Record::pi_like_message(1)]), |page| {
            assert_eq!(page[id_descriptor], 0x40);
            page[id_descriptor] = 0x50;
            page.push(1);
        });
        let view = PageView::new(0, &page).expect("the layout is intact");
        assert!(view.get(0).is_some_and(|record| record.id().is_err()));
    }
}
