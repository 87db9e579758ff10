//! A file's bytes as JSONL lines: each line's offset and its parsed object. Blank lines are
//! skipped; NUL bytes before a line (left by a write torn at a crash, which Claude Code skips
//! too) are skipped and reported; the bytes after the last `\n` are a line when they parse.

use serde_json::{Map, Value};

/// One non-blank line.
pub(super) struct RawLine<'a> {
    /// Byte offset of the line's first byte after NUL padding.
    pub offset: usize,
    /// The line's bytes, without `\n` and NUL padding.
    pub bytes: &'a [u8],
    /// Whether NUL bytes stood before it.
    pub nul_padded: bool,
}

/// The non-blank lines of `bytes`, in order.
pub(super) fn split(bytes: &[u8]) -> Vec<RawLine<'_>> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |n| start + n);
        let mut first = start;
        while first < end && bytes[first] == 0 {
            first += 1;
        }
        let line = &bytes[first..end];
        if !line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            lines.push(RawLine {
                offset: first,
                bytes: line,
                nul_padded: first > start,
            });
        }
        start = end + 1;
    }
    lines
}

/// The line as a JSON object, or `None` when it is not one.
pub(super) fn object(bytes: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// The string at `key`, if it is one.
pub(super) fn string<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}
