//! Reading many indexed lines back at once (a context's messages): the lines are gathered
//! into one buffer with as few reads as their layout allows, each checked against its crc32,
//! and values cut out of them share that buffer.
//!
//! Why it is shaped so: in a fresh process every new page of the buffer costs a page fault, so
//! the buffer holds only the wanted lines (and short gaps between them, cheaper to copy than to
//! skip with another read), is filled on two threads when large, and is never copied again.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::record::Record;
use crate::storage::{LogStorage, read_exact_at};

/// Lines closer than this in the log are read together with the bytes between them...
const GAP_READ_MAX_BYTES: u64 = 4 * 1024;
/// ...unless the gaps would make the buffer larger than twice the lines plus this (many short
/// lines between long ones of another branch): then each line is read on its own.
const GAP_TOTAL_SLACK_BYTES: usize = 64 * 1024;
/// Buffers of at least this many bytes are filled on two threads: in a fresh process most of
/// the time of filling a large buffer is page faults (docs/decisions/line-reads.md).
const PARALLEL_FILL_MIN_BYTES: usize = 1 << 20;

/// Lines read together, in one buffer.
#[derive(Default)]
pub(crate) struct LineTexts {
    pub text: Arc<String>,
    /// Where each line is in `text`; every range lies on character boundaries.
    pub ranges: Vec<Range<usize>>,
}

impl LineTexts {
    /// The lines in one new buffer, in order.
    pub fn joined<'a>(lines: impl Iterator<Item = Cow<'a, str>>) -> LineTexts {
        let mut text = String::new();
        let mut ranges = Vec::new();
        for line in lines {
            ranges.push(text.len()..text.len() + line.len());
            text.push_str(&line);
        }
        LineTexts {
            text: Arc::new(text),
            ranges,
        }
    }

    pub fn line(&self, index: usize) -> &str {
        &self.text[self.ranges[index].clone()]
    }
}

/// One read: `len_bytes` bytes of the log at `file_offset_bytes` into the buffer at
/// `buffer_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LogRead {
    file_offset_bytes: u64,
    buffer_offset: usize,
    len_bytes: usize,
}

/// The reads that gather the lines of `records` (in the given order) into one buffer, and where
/// each line lands in it. A line joins the previous read when it starts at most `gap_max_bytes`
/// after that read's end and not before its start (file order along a path); otherwise it
/// starts a new read.
fn plan_reads(records: &[&Record], gap_max_bytes: u64) -> (Vec<LogRead>, Vec<Range<usize>>) {
    let mut reads: Vec<LogRead> = Vec::new();
    let mut ranges = Vec::with_capacity(records.len());
    for record in records {
        let start = record.offset_bytes;
        let len = record.len_bytes as usize;
        let joins = reads.last().is_some_and(|read| {
            let read_end = read.file_offset_bytes + read.len_bytes as u64;
            start >= read.file_offset_bytes && start <= read_end.saturating_add(gap_max_bytes)
        });
        if joins {
            let read = reads
                .last_mut()
                .expect("`joins` holds only when a read exists");
            let from = (start - read.file_offset_bytes) as usize;
            read.len_bytes = read.len_bytes.max(from + len);
            ranges.push(read.buffer_offset + from..read.buffer_offset + from + len);
        } else {
            let buffer_offset = reads
                .last()
                .map_or(0, |read| read.buffer_offset + read.len_bytes);
            reads.push(LogRead {
                file_offset_bytes: start,
                buffer_offset,
                len_bytes: len,
            });
            ranges.push(buffer_offset..buffer_offset + len);
        }
    }
    (reads, ranges)
}

/// The lines of `records`, each checked against its crc32. The caller has checked that every
/// record lies inside the log's indexed bytes.
pub(crate) fn read_lines(
    storage: &dyn LogStorage,
    path: &Path,
    records: &[&Record],
) -> Result<LineTexts> {
    let buffer_len = |reads: &[LogRead]| {
        reads
            .last()
            .map_or(0, |read| read.buffer_offset + read.len_bytes)
    };
    let (mut reads, mut ranges) = plan_reads(records, GAP_READ_MAX_BYTES);
    let needed: usize = records.iter().map(|record| record.len_bytes as usize).sum();
    if buffer_len(&reads)
        > needed
            .saturating_mul(2)
            .saturating_add(GAP_TOTAL_SLACK_BYTES)
    {
        (reads, ranges) = plan_reads(records, 0);
    }
    let total = buffer_len(&reads);
    let mut bytes = vec![0; total];
    // Split at a line start near the middle, so that (with an intact index) each half holds
    // whole lines and both are checked on their own threads.
    let split = ranges
        .iter()
        .map(|range| range.start)
        .filter(|start| *start >= total / 2)
        .min()
        .filter(|_| total >= PARALLEL_FILL_MIN_BYTES)
        .unwrap_or(total);
    let (first, second) = bytes.split_at_mut(split);
    let fill = |part: &mut [u8], part_start: usize| {
        fill_part(storage, path, &reads, records, &ranges, part, part_start)
    };
    let is_utf8 = if second.is_empty() {
        fill(first, 0)?
    } else {
        let (first, second) = std::thread::scope(|scope| {
            let worker =
                std::thread::Builder::new().spawn_scoped(scope, move || fill(second, split));
            let first = fill(first, 0);
            let second = worker.ok().map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (first, second)
        });
        // Where no thread could be started, this thread fills the second half too.
        let second = match second {
            Some(second) => second,
            None => fill(&mut bytes[split..], split),
        };
        let is_utf8 = first? & second?;
        // Lines across the split (only a damaged index overlaps lines) were checked by neither.
        for (record, range) in records.iter().zip(&ranges) {
            if range.start < split && range.end > split {
                check_crc(path, record, &bytes[range.clone()])?;
            }
        }
        is_utf8
    };
    // Valid UTF-8 throughout (the common case): the buffer itself is the text. Otherwise each
    // line is decoded on its own, invalid bytes and a range that cuts a character (only a
    // damaged index names one) becoming U+FFFD, from the bytes already read.
    if is_utf8 {
        // SAFETY: every byte of `bytes` was validated as UTF-8, in one part or in two parts
        // each valid on its own (so their concatenation is valid too), and nothing has changed
        // the bytes since.
        let text = unsafe { String::from_utf8_unchecked(bytes) };
        if ranges
            .iter()
            .all(|range| text.is_char_boundary(range.start) && text.is_char_boundary(range.end))
        {
            return Ok(LineTexts {
                text: Arc::new(text),
                ranges,
            });
        }
        bytes = text.into_bytes();
    }
    Ok(LineTexts::joined(
        ranges
            .into_iter()
            .map(|range| String::from_utf8_lossy(&bytes[range])),
    ))
}

/// Fills `part`, the buffer from `part_start` on, with its share of `reads`; checks the crc32
/// of each line wholly inside it; says whether it is UTF-8.
fn fill_part(
    storage: &dyn LogStorage,
    path: &Path,
    reads: &[LogRead],
    records: &[&Record],
    ranges: &[Range<usize>],
    part: &mut [u8],
    part_start: usize,
) -> Result<bool> {
    let part_end = part_start + part.len();
    for read in reads {
        let from = read.buffer_offset.max(part_start);
        let to = (read.buffer_offset + read.len_bytes).min(part_end);
        if from >= to {
            continue;
        }
        let file_offset = read.file_offset_bytes + (from - read.buffer_offset) as u64;
        read_exact_at(
            storage,
            file_offset,
            &mut part[from - part_start..to - part_start],
        )
        .map_err(|error| Error::LogChanged {
            path: path.to_path_buf(),
            offset_bytes: file_offset,
            reason: format!("cannot read the indexed lines: {error}"),
        })?;
    }
    for (record, range) in records.iter().zip(ranges) {
        if range.start >= part_start && range.end <= part_end {
            check_crc(
                path,
                record,
                &part[range.start - part_start..range.end - part_start],
            )?;
        }
    }
    Ok(crate::format::utf8_str(part).is_some())
}

/// Fails unless `bytes`, the line of `record`, has the indexed crc32.
pub(crate) fn check_crc(path: &Path, record: &Record, bytes: &[u8]) -> Result<()> {
    check_line_crc(path, record.offset_bytes, record.crc32, bytes)
}

/// Fails unless `bytes`, the line at `offset_bytes`, has the indexed `crc32`. A record is
/// sealed (a damaged one fails its own check before it is used), so a line that differs from
/// it is a log rewritten behind the index: [`Error::LogChanged`], never index damage to
/// rebuild from the changed log (format-spec/index.md §3).
pub(crate) fn check_line_crc(
    path: &Path,
    offset_bytes: u64,
    crc32: u32,
    bytes: &[u8],
) -> Result<()> {
    if crc32fast::hash(bytes) != crc32 {
        return Err(Error::LogChanged {
            path: path.to_path_buf(),
            offset_bytes,
            reason: "the line's crc32 differs from the indexed one".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short wanted lines between long unwanted ones (another branch) are read one by one
    /// rather than with the gaps, which would make the buffer ~40 times what is needed; the
    /// lines come back exact either way.
    #[test]
    fn gaps_do_not_swell_the_buffer() {
        let mut log = Vec::new();
        let mut lines = Vec::new();
        for n in 0..200 {
            let wanted = format!("{{\"n\":{n}}}");
            let mut line = Record::unlinked(log.len() as u64, wanted.len() as u32);
            line.crc32 = crc32fast::hash(wanted.as_bytes());
            lines.push(line);
            log.extend_from_slice(wanted.as_bytes());
            log.push(b'\n');
            log.extend_from_slice("x".repeat(4000).as_bytes());
            log.push(b'\n');
        }
        let storage = crate::storage::MemoryStorage::new("/t/log.jsonl", log);
        let refs: Vec<&Record> = lines.iter().collect();
        let texts = read_lines(&storage, Path::new("/t/log.jsonl"), &refs).expect("read");
        let needed: usize = lines.iter().map(|line| line.len_bytes as usize).sum();
        assert!(texts.text.len() <= 2 * needed + GAP_TOTAL_SLACK_BYTES);
        for (n, _) in lines.iter().enumerate() {
            assert_eq!(texts.line(n), format!("{{\"n\":{n}}}"));
        }
    }

    /// Lines in file order with short gaps share a read; a long gap, or a line before the
    /// current read (not file order), starts a new one; each line lands where its read puts it.
    #[test]
    fn reads_gather_nearby_lines() {
        let lines = [
            Record::unlinked(100, 10),  // read 0 at buffer 0
            Record::unlinked(111, 20),  // joins: gap 1 byte
            Record::unlinked(5000, 30), // gap 4,869 > 4,096: read 1 at buffer 31
            Record::unlinked(9126, 5),  // gap exactly 4,096: joins read 1
            Record::unlinked(50, 10),   // before read 1's start: read 2
            Record::unlinked(50, 10),   // the same line again: joins read 2 at the same place
        ];
        let refs: Vec<&Record> = lines.iter().collect();
        let (reads, ranges) = plan_reads(&refs, GAP_READ_MAX_BYTES);
        assert_eq!(
            reads,
            vec![
                LogRead {
                    file_offset_bytes: 100,
                    buffer_offset: 0,
                    len_bytes: 31
                },
                LogRead {
                    file_offset_bytes: 5000,
                    buffer_offset: 31,
                    len_bytes: 4131
                },
                LogRead {
                    file_offset_bytes: 50,
                    buffer_offset: 4162,
                    len_bytes: 10
                },
            ]
        );
        assert_eq!(
            ranges,
            vec![0..10, 11..31, 31..61, 4157..4162, 4162..4172, 4162..4172]
        );
    }
}
