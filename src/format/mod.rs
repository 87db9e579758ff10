//! The log and index formats as pure code: no file, no clock, no randomness beyond the id
//! generator's. Everything here is safe to call on any bytes from disk.
//!
//! - The log's lines: `line.rs` classifies one (blank, header, entry of any `type`, or opaque)
//!   in one pass of `json_scan.rs`; `write.rs` encodes new ones in pi's key order; below them
//!   `fields.rs`, `json_string.rs`, `message.rs`, `time.rs`, `ids.rs`, `system_message.rs`,
//!   `js_sort.rs` (V8's sort, for pi's children order), `js_text.rs` (JavaScript's white space
//!   and UTF-16 slices), and `pi_json.rs`, a line's values as `JSON.parse` gives them (the one
//!   reading of a `context_edit` and of every payload the context, the search index and the
//!   listing interpret).
//! - `usage.rs`: what an entry adds to pi's usage totals, which the index's state keeps.
//! - `size_facts.rs`: the names and images a line is counted under by `treelog stats`, which
//!   the index keeps as tallies.
//! - The index's values: `record.rs`, `page.rs` (record pages), `id_index.rs` (id pages) and
//!   `seal.rs` (the checksum every stored value ends in); `decode_error.rs` below them.

pub(crate) mod decode_error;
pub(crate) mod fields;
pub mod id_index;
pub mod ids;
pub mod js_sort;
pub mod js_text;
pub mod json_scan;
pub(crate) mod json_string;
pub mod line;
pub(crate) mod message;
pub mod page;
pub mod pi_json;
pub mod record;
pub mod seal;
pub mod size_facts;
pub mod system_message;
pub mod time;
pub mod usage;
pub mod write;

/// The session format version treelog writes (pi's `CURRENT_SESSION_VERSION`).
pub const CURRENT_VERSION: u32 = 3;

/// The UTF-8 byte order mark. At the very start of a log it is not part of the first line
/// (format-spec/log.md §1): pi 0.73.1's `trim()` of the whole file removes it, so the header
/// after it is read. It stays in the file; only the reading skips it.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How many bytes of the line at `offset_bytes` are a byte order mark to skip: 3 for the
/// log's first line when it starts with one, else 0.
pub fn bom_len(offset_bytes: u64, line: &[u8]) -> usize {
    if offset_bytes == 0 && line.starts_with(BOM) {
        BOM.len()
    } else {
        0
    }
}

/// Bytes needed to hold `value` in little-endian (0 for 0): the width of a frame-of-reference
/// field.
pub(crate) fn width_of(value: u64) -> usize {
    (64 - value.leading_zeros() as usize).div_ceil(8)
}

/// Little-endian value of up to 8 bytes.
pub(crate) fn read_le(bytes: &[u8]) -> u64 {
    let mut out = [0; 8];
    out[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(out)
}

/// `bytes` as text if they are UTF-8. SIMD validation: std's validator leaves its fast ASCII
/// path at every non-ASCII character, which transcripts hold every few dozen bytes
/// (docs/decisions/line-classification.md).
pub fn utf8_str(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

/// `bytes` as a `String` if they are UTF-8, else the bytes back; validated as [`utf8_str`].
pub fn utf8_string(bytes: Vec<u8>) -> Result<String, Vec<u8>> {
    if utf8_str(&bytes).is_none() {
        return Err(bytes);
    }
    // SAFETY: `utf8_str` has just validated all of `bytes` as UTF-8, and `bytes` is not
    // changed between that check and this conversion.
    Ok(unsafe { String::from_utf8_unchecked(bytes) })
}
