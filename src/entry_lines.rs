//! Every entry line of a session, in file order, as one JSON array (pi's `getEntries()`) or as
//! JSONL (each line ending in `\n`), read in one sequential pass over the log instead of entry
//! by entry through the index.
//!
//! Why it is shaped so: a caller that wants every entry wants the whole log, and one read of
//! the indexed span into the buffer that becomes the answer costs a page fault per page and
//! nothing more. The records only say where each line is and what its crc32 is: each line is
//! checked against its record, and the lines are moved down over the bytes they replace
//! (opaque lines dropped, each `\n` becoming the array's `,` or staying), so the answer is
//! built in place without a second buffer.
//!
//! Invariant: records are in file order and do not overlap, each followed by its `\n`; that
//! is what makes the in-place move safe (the write position never passes the read position).
//! Records that break it are damage of the index ([`Error::Index`]): the session rebuilds it
//! from the log and answers again. A line whose crc32 differs from its (sealed) record's is a
//! log rewritten behind the index, [`Error::LogChanged`], as for every other read of a line.

use std::path::Path;

use crate::error::{Error, Result};
use crate::index::{Store, sidecar_path};
use crate::line_reads::check_line_crc;
use crate::storage::{LogStorage, read_exact_at};

/// Where a line lies in the log and how to check it, taken from its record.
struct LineSpan {
    offset_bytes: u64,
    len_bytes: usize,
    crc32: u32,
    is_entry: bool,
}

/// How the lines are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryLinesLayout {
    /// `[line,line,...]`: one JSON array.
    Array,
    /// `line\nline\n...`: JSONL, as the log holds them (a reader that parses line by line, or
    /// a copy of the entries into another log).
    Lines,
}

/// The entry lines of the log `storage` holds, indexed by `store`, joined as `layout` says.
pub(crate) fn entry_lines(
    storage: &dyn LogStorage,
    store: &Store,
    log_path: &Path,
    layout: EntryLinesLayout,
) -> Result<String> {
    let (open, separator, close) = match layout {
        EntryLinesLayout::Array => ("[", b',', "]"),
        EntryLinesLayout::Lines => ("", b'\n', ""),
    };
    let empty = || format!("{open}{close}");
    let spans = line_spans(store, log_path)?;
    let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
        return Ok(empty());
    };
    let span_start = first.offset_bytes;
    let span_len = (last.offset_bytes + last.len_bytes as u64 - span_start) as usize;
    // The opening bracket (if any), then the log's bytes from the first line to the end of
    // the last, and room for the last separator; the answer is moved down into this buffer
    // and is never longer than it.
    let start = open.len();
    let mut buffer = vec![0u8; start + span_len + 1];
    buffer[..start].copy_from_slice(open.as_bytes());
    read_exact_at(storage, span_start, &mut buffer[start..start + span_len]).map_err(|error| {
        Error::LogChanged {
            path: log_path.to_path_buf(),
            offset_bytes: span_start,
            reason: format!("cannot read the indexed lines: {error}"),
        }
    })?;
    let mut written = start;
    for span in &spans {
        let from = start + (span.offset_bytes - span_start) as usize;
        let line = &buffer[from..from + span.len_bytes];
        check_line_crc(log_path, span.offset_bytes, span.crc32, line)?;
        if !span.is_entry {
            continue;
        }
        if from != written {
            buffer.copy_within(from..from + span.len_bytes, written);
        }
        written += span.len_bytes;
        buffer[written] = separator;
        written += 1;
    }
    if written == start {
        return Ok(empty());
    }
    if layout == EntryLinesLayout::Array {
        // The last ',' closes the array.
        buffer[written - 1] = close.as_bytes()[0];
    }
    buffer.truncate(written);
    // Invalid bytes become U+FFFD, as in a line read on its own: the separators and brackets
    // are ASCII, so no replacement spans two lines.
    Ok(match crate::format::utf8_string(buffer) {
        Ok(text) => text,
        Err(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// Every record's line, in sequence order, checked to lie inside the indexed prefix and after
/// the previous line and its `\n`.
fn line_spans(store: &Store, log_path: &Path) -> Result<Vec<LineSpan>> {
    let count = store.record_count();
    let mut spans = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut next_free_bytes = 0u64;
    let mut seq = 0u64;
    while seq < count {
        // A page's records at once; each is checked on its own below.
        for record in store.records_from(seq)? {
            if seq >= count {
                break;
            }
            if !store.holds_line_of(&record)
                || record.len_bytes as usize > crate::limits::LINE_LEN_MAX
            {
                return Err(damage(
                    log_path,
                    format!(
                        "record {seq} names bytes {}..+{} outside the {} indexed bytes of the log",
                        record.offset_bytes, record.len_bytes, store.indexed_len_bytes
                    ),
                ));
            }
            if record.offset_bytes < next_free_bytes {
                return Err(damage(
                    log_path,
                    format!(
                        "record {seq} starts at byte {}, before the end of the line before it",
                        record.offset_bytes
                    ),
                ));
            }
            next_free_bytes = record.offset_bytes + u64::from(record.len_bytes) + 1;
            spans.push(LineSpan {
                offset_bytes: record.offset_bytes,
                len_bytes: record.len_bytes as usize,
                crc32: record.crc32,
                is_entry: record.kind.is_some(),
            });
            seq += 1;
        }
    }
    Ok(spans)
}

fn damage(log_path: &Path, reason: String) -> Error {
    Error::Index {
        path: sidecar_path(log_path),
        reason,
    }
}
