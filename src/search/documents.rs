//! The documents of a log: each complete line that holds searchable text, with its 1-based
//! line number and byte offset, read from a position to the end of the log's last complete
//! line: what the search index is built and caught up from (`refresh.rs`).

use std::path::Path;

use super::error::SearchError;
use super::extract::{Extracted, extract, header_version};
use crate::scan::{LineSink, ScannedLine, scan_lines};
use crate::storage::FileStorage;

/// Where a read of a log's documents starts, and where it stopped: a log's start is
/// [`LogPosition::START`], a catch-up starts where the last read stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LogPosition {
    /// Bytes read: always the end of a complete line (or 0).
    pub offset_bytes: u64,
    /// Lines in those bytes (the next line's number is this plus one).
    pub lines: u64,
    /// Whether the log is a version-1 pi log (entries without ids are read); `None` until
    /// its first non-blank line has been read.
    pub legacy_v1: Option<bool>,
}

impl LogPosition {
    /// The start of a log.
    pub const START: LogPosition = LogPosition {
        offset_bytes: 0,
        lines: 0,
        legacy_v1: None,
    };
}

/// One line of a log that holds searchable text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LineDocument {
    /// 1-based line number in the log.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset_bytes: u64,
    pub extracted: Extracted,
}

/// What a read of documents hands out: the documents, and the bytes read (for progress).
pub(crate) trait DocumentSink {
    /// One document, in log order.
    fn document(&mut self, document: LineDocument);
    /// `len_bytes` more bytes of the log were read.
    fn read_bytes(&mut self, _len_bytes: u64) {}
}

/// Hands every document of `log` in `[from.offset_bytes, end_bytes)` to `sink` (`end_bytes`
/// is the log's length as the caller saw it) and returns where the read stopped: after the
/// last complete line, whose documents were all handed out. A line too long to keep or not
/// UTF-8 holds nothing pi could read and is counted but not handed out; the header (the
/// first non-blank line, when it is one) holds nothing searchable.
pub(crate) fn read_documents(
    log: &Path,
    from: LogPosition,
    end_bytes: u64,
    sink: &mut dyn DocumentSink,
) -> Result<LogPosition, SearchError> {
    let storage = FileStorage::open(log).map_err(|error| SearchError::io(log, "open", error))?;
    let mut lines = Lines {
        sink,
        lines: from.lines,
        legacy_v1: from.legacy_v1,
    };
    let mut buf = Vec::new();
    let end = scan_lines(&storage, from.offset_bytes, end_bytes, &mut lines, &mut buf)?;
    Ok(LogPosition {
        offset_bytes: end,
        lines: lines.lines,
        legacy_v1: lines.legacy_v1,
    })
}

/// Turns each complete line of a scan into a document.
struct Lines<'a> {
    sink: &'a mut dyn DocumentSink,
    lines: u64,
    legacy_v1: Option<bool>,
}

impl LineSink for Lines<'_> {
    fn line(&mut self, line: ScannedLine<'_>) -> crate::Result<()> {
        self.lines += 1;
        let Some(text) = line
            .bytes
            .and_then(|bytes| simdutf8::basic::from_utf8(bytes).ok())
        else {
            return Ok(());
        };
        let legacy_v1 = match self.legacy_v1 {
            Some(legacy_v1) => legacy_v1,
            None if text.trim().is_empty() => return Ok(()),
            None => {
                let version = header_version(text);
                self.legacy_v1 = Some(version == Some(1));
                if version.is_some() {
                    return Ok(());
                }
                false
            }
        };
        if let Some(extracted) = extract(text, legacy_v1) {
            self.sink.document(LineDocument {
                line: self.lines,
                offset_bytes: line.offset_bytes,
                extracted,
            });
        }
        Ok(())
    }

    fn consumed(&mut self, bytes: &[u8]) -> crate::Result<()> {
        self.sink.read_bytes(bytes.len() as u64);
        Ok(())
    }
}
