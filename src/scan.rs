//! Splitting a log into lines, reading it in large chunks from a byte offset to its end.
//!
//! Invariant (as in ripgrep's line buffer): the bytes after the last `\n` always belong to a
//! partial line. They are never handed out as a line: a final line without `\n` is left for
//! the caller, which reads it as the log's last line when it is complete JSON
//! (`Store::index_unterminated_line`, format-spec/log.md §1) and as a torn tail otherwise.

use memchr::memchr;

use crate::error::{Error, Result};
use crate::limits::{LINE_LEN_MAX, SCAN_CHUNK_LEN};
use crate::storage::LogStorage;

/// One complete line, without its `\n`.
pub struct ScannedLine<'a> {
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub crc32: u32,
    /// `None` when the line is longer than [`LINE_LEN_MAX`] and was streamed, not kept.
    pub bytes: Option<&'a [u8]>,
}

/// Receives the lines of a scan.
pub trait LineSink {
    /// One complete line, in file order.
    fn line(&mut self, line: ScannedLine<'_>) -> Result<()>;
    /// Every byte of the lines handed out so far and not yet passed here (terminators
    /// included), in order; called at least once per read chunk, after its lines.
    fn consumed(&mut self, bytes: &[u8]) -> Result<()>;
}

/// Hands each complete line in `[start_bytes, end_bytes)` to `sink` (`end_bytes` is the log
/// length the caller saw; bytes appended since are left for a later scan). Returns the offset
/// just after the last complete line. `buf` is scratch space, kept by the caller so that
/// frequent small scans (one per append) do not allocate; it is left at most
/// [`SCAN_CHUNK_LEN`] long.
pub fn scan_lines(
    storage: &dyn LogStorage,
    start_bytes: u64,
    end_bytes: u64,
    sink: &mut impl LineSink,
    buf: &mut Vec<u8>,
) -> Result<u64> {
    if buf.is_empty() {
        // A zeroed allocation, not a fill: `resize` writes byte by byte in debug builds, which
        // made every open of a test session cost a 1 MiB loop.
        *buf = vec![0; SCAN_CHUNK_LEN];
    } else if buf.len() != SCAN_CHUNK_LEN {
        buf.resize(SCAN_CHUNK_LEN, 0);
        buf.shrink_to(SCAN_CHUNK_LEN);
    }
    let result = scan_into(storage, start_bytes, end_bytes, sink, buf);
    if buf.len() != SCAN_CHUNK_LEN {
        // A long line grew the buffer: give the memory back.
        buf.truncate(SCAN_CHUNK_LEN);
        buf.shrink_to(SCAN_CHUNK_LEN);
    }
    result
}

fn scan_into(
    storage: &dyn LogStorage,
    start_bytes: u64,
    end_bytes: u64,
    sink: &mut impl LineSink,
    buf: &mut Vec<u8>,
) -> Result<u64> {
    let mut filled = 0;
    // Bytes at the front of `buf` already known to hold no `\n`.
    let mut searched = 0;
    let mut buf_offset = start_bytes;
    loop {
        let mut line_start = 0;
        while let Some(found) = memchr(b'\n', &buf[searched..filled]) {
            let line_end = searched + found;
            let line = &buf[line_start..line_end];
            sink.line(ScannedLine {
                offset_bytes: buf_offset + line_start as u64,
                len_bytes: line.len() as u64,
                crc32: crc32fast::hash(line),
                bytes: Some(line),
            })?;
            line_start = line_end + 1;
            searched = line_start;
        }
        if line_start > 0 {
            sink.consumed(&buf[..line_start])?;
        }
        buf.copy_within(line_start..filled, 0);
        filled -= line_start;
        searched = filled;
        buf_offset += line_start as u64;

        if filled == buf.len() {
            if buf.len() <= LINE_LEN_MAX {
                buf.resize((buf.len() * 2).min(LINE_LEN_MAX + 1), 0);
            } else {
                // No newline in LINE_LEN_MAX + 1 bytes: stream the rest of this line.
                match stream_long_line(storage, buf_offset, end_bytes, buf, sink)? {
                    Some((next_offset, carried)) => {
                        buf_offset = next_offset;
                        filled = carried;
                        searched = 0;
                        buf.truncate(SCAN_CHUNK_LEN.max(carried));
                        buf.shrink_to_fit();
                        continue;
                    }
                    None => return Ok(buf_offset),
                }
            }
        }
        let read_from = buf_offset + filled as u64;
        let want = (buf.len() - filled).min(end_bytes.saturating_sub(read_from) as usize);
        let read = if want == 0 {
            0
        } else {
            storage
                .read_at(read_from, &mut buf[filled..filled + want])
                .map_err(|error| Error::io(storage.path(), "read the log", error))?
        };
        if read == 0 {
            return Ok(buf_offset);
        }
        filled += read;
    }
}

/// Streams a line that starts at `line_offset` and fills all of `buf` without a newline.
/// Returns the offset after it and how many bytes after its `\n` were left at the front of
/// `buf`, or `None` when the log ends before the line does (a torn tail).
fn stream_long_line(
    storage: &dyn LogStorage,
    line_offset: u64,
    end_bytes: u64,
    buf: &mut [u8],
    sink: &mut impl LineSink,
) -> Result<Option<(u64, usize)>> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(buf);
    let mut len = buf.len() as u64;
    loop {
        let want = buf
            .len()
            .min(end_bytes.saturating_sub(line_offset + len) as usize);
        let read = if want == 0 {
            0
        } else {
            storage
                .read_at(line_offset + len, &mut buf[..want])
                .map_err(|error| Error::io(storage.path(), "read the log", error))?
        };
        if read == 0 {
            return Ok(None);
        }
        if let Some(found) = memchr(b'\n', &buf[..read]) {
            crc.update(&buf[..found]);
            len += found as u64;
            sink.line(ScannedLine {
                offset_bytes: line_offset,
                len_bytes: len,
                crc32: crc.finalize(),
                bytes: None,
            })?;
            // The bytes were not kept: read them again to hand them to `on_consumed`.
            let carried = read - found - 1;
            let mut carry = buf[found + 1..read].to_vec();
            let end = line_offset + len + 1;
            let mut at = line_offset;
            while at < end {
                let want = ((end - at) as usize).min(buf.len());
                crate::storage::read_exact_at(storage, at, &mut buf[..want])
                    .map_err(|error| Error::io(storage.path(), "read the log", error))?;
                sink.consumed(&buf[..want])?;
                at += want as u64;
            }
            buf[..carried].copy_from_slice(&carry);
            carry.clear();
            return Ok(Some((end, carried)));
        }
        crc.update(&buf[..read]);
        len += read as u64;
    }
}
