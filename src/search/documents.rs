//! The documents of a log: each complete line that holds searchable text, with its 1-based
//! line number and byte offset, read from a position to the end of the log's last complete
//! line: what the search index is built and caught up from (`refresh.rs`), with the log's
//! context edits applied ([`read_edits`] finds them): a removed entry has no document, a
//! replaced one holds its replacement's text.

use std::collections::HashMap;
use std::path::Path;

use super::error::SearchError;
use super::extract::{Extracted, context_edit, extract, header_version, replaceable};
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
    /// Byte offset of the context edit whose replacement `extracted.text` holds, when the
    /// entry was edited (the snippet is read from that line).
    pub edited_at: Option<u64>,
}

/// The edit that applies to an entry: the latest `context_edit` naming it in file order,
/// whatever its branch (format-spec/search.md §2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edit {
    /// 1-based line number of the edit: it applies to the lines before it with its target id.
    pub line: u64,
    pub offset_bytes: u64,
    /// The replacement's searchable text; `None` removes the entry.
    pub replacement: Option<String>,
}

/// The edits of a log by target id.
pub(crate) type Edits = HashMap<String, Edit>;

/// Bytes a `context_edit` line holds unless its `type` is written with a `\u` escape (the
/// only escape that gives a letter or `_`): lines with neither are not parsed for edits.
const EDIT_MARK: &[u8] = b"\"context_edit\"";
const ESCAPE_MARK: &[u8] = b"\\u";

/// The context edits of `log` in `[from.offset_bytes, end_bytes)`, the latest of each target
/// in file order; lines are numbered from `from.lines + 1`, as [`read_documents`] numbers them.
pub(crate) fn read_edits(
    log: &Path,
    from: LogPosition,
    end_bytes: u64,
) -> Result<Edits, SearchError> {
    let storage = FileStorage::open(log).map_err(|error| SearchError::io(log, "open", error))?;
    let mut lines = EditLines {
        lines: from.lines,
        edits: Edits::new(),
        finder: memchr::memmem::Finder::new(EDIT_MARK),
        escapes: memchr::memmem::Finder::new(ESCAPE_MARK),
    };
    let mut buf = Vec::new();
    scan_lines(&storage, from.offset_bytes, end_bytes, &mut lines, &mut buf)?;
    Ok(lines.edits)
}

/// Collects the context edits of a scan.
struct EditLines {
    lines: u64,
    edits: Edits,
    finder: memchr::memmem::Finder<'static>,
    escapes: memchr::memmem::Finder<'static>,
}

impl LineSink for EditLines {
    fn line(&mut self, line: ScannedLine<'_>) -> crate::Result<()> {
        self.lines += 1;
        let Some(bytes) = line.bytes else {
            return Ok(());
        };
        if self.finder.find(bytes).is_none() && self.escapes.find(bytes).is_none() {
            return Ok(());
        }
        let Ok(text) = simdutf8::basic::from_utf8(bytes) else {
            return Ok(());
        };
        if let Some((target, replacement)) = context_edit(text) {
            self.edits.insert(
                target,
                Edit {
                    line: self.lines,
                    offset_bytes: line.offset_bytes,
                    replacement,
                },
            );
        }
        Ok(())
    }

    fn consumed(&mut self, _bytes: &[u8]) -> crate::Result<()> {
        Ok(())
    }
}

/// What a read of documents hands out: the documents, and the bytes read (for progress).
pub(crate) trait DocumentSink {
    /// One document, in log order.
    fn document(&mut self, document: LineDocument);
    /// `len_bytes` more bytes of the log were read.
    fn read_bytes(&mut self, _len_bytes: u64) {}
    /// The entry at `line` (1-based) and `offset_bytes` is removed or replaced by a context
    /// edit: its own text has no document.
    fn edited(&mut self, _line: u64, _offset_bytes: u64) {}
}

/// Hands every document of `log` in `[from.offset_bytes, end_bytes)` to `sink` (`end_bytes`
/// is the log's length as the caller saw it) and returns where the read stopped: after the
/// last complete line, whose documents were all handed out. A line too long to keep or not
/// UTF-8 holds nothing pi could read and is counted but not handed out; the header (the
/// first non-blank line, when it is one) holds nothing searchable. Each of `edits` applies to
/// the lines before it with its target's id.
pub(crate) fn read_documents(
    log: &Path,
    from: LogPosition,
    end_bytes: u64,
    edits: &Edits,
    sink: &mut dyn DocumentSink,
) -> Result<LogPosition, SearchError> {
    let storage = FileStorage::open(log).map_err(|error| SearchError::io(log, "open", error))?;
    let mut lines = Lines {
        sink,
        edits,
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
    edits: &'a Edits,
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
        let Some(mut extracted) = extract(text, legacy_v1) else {
            return Ok(());
        };
        let mut edited_at = None;
        if !self.edits.is_empty()
            && !extracted.id.is_empty()
            && let Some(edit) = self.edits.get(&extracted.id)
            && edit.line > self.lines
        {
            match &edit.replacement {
                None => {
                    self.sink.edited(self.lines, line.offset_bytes);
                    return Ok(());
                }
                Some(replacement) if replaceable(&extracted) => {
                    self.sink.edited(self.lines, line.offset_bytes);
                    if replacement.is_empty() {
                        return Ok(());
                    }
                    extracted.text = replacement.clone();
                    edited_at = Some(edit.offset_bytes);
                }
                Some(_) => {}
            }
        }
        self.sink.document(LineDocument {
            line: self.lines,
            offset_bytes: line.offset_bytes,
            extracted,
            edited_at,
        });
        Ok(())
    }

    fn consumed(&mut self, bytes: &[u8]) -> crate::Result<()> {
        self.sink.read_bytes(bytes.len() as u64);
        Ok(())
    }
}
