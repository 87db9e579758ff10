//! Checking a log and its index: what `treelog verify` reports.
//!
//! Two independent checks. The first is a raw scan of the log, line by line, that does not
//! use the index at all: header, torn tail, unreadable or opaque lines, duplicate ids,
//! dangling parents, self-parents and parent cycles (as pi would resolve them), compactions
//! whose first kept entry is not on their path. The second opens the session through its
//! index and compares every answer the index gives (entries, opaque records, leaf, path,
//! labels, tree) with a fresh in-memory replay of the log.
//!
//! Architecture invariant: nothing here writes the log. Opening through the index may update
//! or rebuild the sidecar, as every open does.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::json_scan;
use crate::format::line::{
    EntryKind, Line, OpaqueReason, ParentRef, classify, is_complete_last_line, json_text_str,
};
use crate::index::{IndexState, Verify};
use crate::limits::LINE_LEN_MAX;
use crate::session::{Session, SessionOptions};

/// Problems kept per log; past this one more problem says how many were left out.
pub const PROBLEMS_MAX: usize = 10_000;

/// Read buffer of the raw scan.
const READ_BUFFER_LEN: usize = 1024 * 1024;

/// What kind of problem a [`Problem`] is; [`ProblemKind::as_str`] is its stable JSON name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The header is missing, unreadable, or not first.
    Header,
    /// The session is in an older format version (v1 or v2), which pi migrates on load.
    LegacyVersion,
    /// Bytes after the last newline: an unfinished or torn write.
    TornTail,
    /// A line that is not valid JSON (or too long to parse).
    Unparseable,
    /// A line that is kept verbatim but is not an entry (unknown type, no id, ...).
    Opaque,
    /// A line that is not valid UTF-8, or a byte order mark opening the log (pi 1.6.0 refuses it).
    Encoding,
    /// An id used by an earlier line too.
    DuplicateId,
    /// A `parentId` that names no earlier line.
    DanglingParent,
    /// An entry that is its own parent.
    SelfParent,
    /// Entries whose `parentId`s form a loop (pi loops forever on them).
    Cycle,
    /// A compaction whose `firstKeptEntryId` is not on its path.
    CompactionFirstKept,
    /// An entry `timestamp` that is missing or not an ISO time: pi sorts children and dates
    /// summaries with `NaN`, OpenClaw refuses to build the context.
    Timestamp,
    /// An answer given through the index differs from a replay of the log.
    Index,
    /// The index was damaged (a checksum, a count or a layout check failed, or redb could not
    /// read it) and was rebuilt from the log: the log is fine.
    IndexDamaged,
    /// More problems were found than are reported.
    Truncated,
}

impl ProblemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Header => "header",
            ProblemKind::LegacyVersion => "legacyVersion",
            ProblemKind::TornTail => "tornTail",
            ProblemKind::Unparseable => "unparseable",
            ProblemKind::Opaque => "opaque",
            ProblemKind::Encoding => "encoding",
            ProblemKind::DuplicateId => "duplicateId",
            ProblemKind::DanglingParent => "danglingParent",
            ProblemKind::SelfParent => "selfParent",
            ProblemKind::Cycle => "cycle",
            ProblemKind::CompactionFirstKept => "compactionFirstKept",
            ProblemKind::Timestamp => "timestamp",
            ProblemKind::Index => "index",
            ProblemKind::IndexDamaged => "indexDamaged",
            ProblemKind::Truncated => "truncated",
        }
    }
}

/// One problem, located by 1-based line number and byte offset where it has a place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub line: Option<u64>,
    pub offset_bytes: Option<u64>,
    pub message: String,
}

/// The outcome of verifying one log.
#[derive(Clone, Debug)]
pub struct Report {
    pub problems: Vec<Problem>,
    /// What opening the index found (before it was compared with the replay).
    pub index_state: IndexState,
    /// Lines in the log (blank ones, and a complete last line without its `\n`, included).
    pub line_count: u64,
    pub entry_count: u64,
    pub log_len_bytes: u64,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies the log at `path`: a raw scan, then the index against a replay. With `full`,
/// the index is opened with [`Verify::Full`] (every hash block of the log is re-read).
///
/// A log that grows meanwhile (another process appending) is verified again, up to
/// [`ATTEMPTS_MAX`] times, so a half-written line or an entry one view has and the other has
/// not is never reported as a problem; a log that keeps growing is an error.
pub fn verify_log(path: &Path, full: bool) -> Result<Report> {
    let mut len_now = 0;
    for _ in 0..ATTEMPTS_MAX {
        let report = verify_once(path, full)?;
        len_now = std::fs::metadata(path)
            .map_err(|e| Error::io(path, "stat", e))?
            .len();
        if len_now == report.log_len_bytes {
            return Ok(report);
        }
    }
    Err(Error::LogChanged {
        path: path.to_path_buf(),
        offset_bytes: len_now,
        reason: format!(
            "the log grew during each of {ATTEMPTS_MAX} attempts to verify it (a writer is appending); try again when it is idle"
        ),
    })
}

/// Attempts at verifying a log that grows while it is verified.
pub const ATTEMPTS_MAX: usize = 3;

fn verify_once(path: &Path, full: bool) -> Result<Report> {
    let mut problems = Problems::default();
    let scan = scan_raw(path, &mut problems)?;
    let replay = Session::open(
        path,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )?;
    check_compactions(&replay, &scan, &mut problems)?;
    let indexed = Session::open(
        path,
        SessionOptions {
            verify: if full { Verify::Full } else { Verify::Quick },
            ..SessionOptions::default()
        },
    )?;
    compare_index(&indexed, &replay, &scan, &mut problems)?;
    // Comparing read the whole index: damage met on the way was rebuilt from the log (the
    // answers compared are the rebuilt index's), and is a problem found of its own.
    indexed.check_index()?;
    let index_state = indexed.index_state().clone();
    if let IndexState::Rebuilt {
        reason,
        damaged: true,
    } = &index_state
    {
        problems.push(
            ProblemKind::IndexDamaged,
            None,
            None,
            format!("index damaged ({reason}); rebuilt from the log"),
        );
    }
    Ok(Report {
        problems: problems.finish(),
        index_state,
        line_count: scan.line_starts.len() as u64,
        entry_count: scan.entry_count,
        log_len_bytes: scan.log_len_bytes,
    })
}

/// Problems collected so far, bounded by [`PROBLEMS_MAX`].
#[derive(Default)]
struct Problems {
    list: Vec<Problem>,
    left_out: u64,
}

impl Problems {
    fn push(&mut self, kind: ProblemKind, line: Option<u64>, offset: Option<u64>, message: String) {
        if self.list.len() < PROBLEMS_MAX {
            self.list.push(Problem {
                kind,
                line,
                offset_bytes: offset,
                message,
            });
        } else {
            self.left_out += 1;
        }
    }

    fn finish(mut self) -> Vec<Problem> {
        self.list.sort_by_key(|problem| {
            (
                problem.line.unwrap_or(u64::MAX),
                problem.offset_bytes.unwrap_or(u64::MAX),
            )
        });
        if self.left_out > 0 {
            self.list.push(Problem {
                kind: ProblemKind::Truncated,
                line: None,
                offset_bytes: None,
                message: format!("{} more problems not shown", self.left_out),
            });
        }
        self.list
    }
}

/// Where a record with an id was first seen.
struct Seen {
    line: u64,
    offset_bytes: u64,
}

/// A compaction line found by the scan.
struct CompactionLine {
    id: String,
    first_kept: Option<String>,
    line: u64,
    offset_bytes: u64,
}

/// What the raw scan learned that later checks need.
struct ScanResult {
    /// Byte offset of each line, in order (line N starts at `line_starts[N - 1]`).
    line_starts: Vec<u64>,
    compactions: Vec<CompactionLine>,
    entry_count: u64,
    log_len_bytes: u64,
}

impl ScanResult {
    /// The 1-based line number of the line starting at or containing `offset`.
    fn line_of(&self, offset: u64) -> u64 {
        match self.line_starts.binary_search(&offset) {
            Ok(index) => index as u64 + 1,
            Err(index) => index as u64,
        }
    }
}

/// Reads the log line by line, independently of the index, and reports what is wrong with
/// the lines themselves.
fn scan_raw(path: &Path, problems: &mut Problems) -> Result<ScanResult> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let log_len_bytes = file
        .metadata()
        .map_err(|e| Error::io(path, "stat", e))?
        .len();
    let mut reader = BufReader::with_capacity(READ_BUFFER_LEN, file);
    let mut result = ScanResult {
        line_starts: Vec::new(),
        compactions: Vec::new(),
        entry_count: 0,
        log_len_bytes,
    };
    // Every id seen (entries and opaque records), first occurrence wins for "earlier" checks.
    let mut first_seen: HashMap<Box<str>, Seen> = HashMap::new();
    // pi's view: the last occurrence of each id and its raw parent.
    let mut last_parent: HashMap<Box<str>, Option<Box<str>>> = HashMap::new();
    let mut dangling: Vec<(String, String, u64, u64)> = Vec::new();
    let mut header_seen = false;
    let mut header_recovered = false;
    let mut header_version = 3;
    // Non-blank lines read while no line had decided the header (lines that are not JSON).
    let mut non_json_before_header = 0u64;
    let mut offset = 0u64;
    let mut line_number = 0u64;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        let read = (&mut reader)
            .take(LINE_LEN_MAX as u64 + 2)
            .read_until(b'\n', &mut bytes)
            .map_err(|e| Error::io(path, "read", e))?;
        if read == 0 {
            break;
        }
        let terminated = bytes.last() == Some(&b'\n');
        // A last line without its `\n` is a line when it is complete (log.md §1), as pi
        // reads it; only a cut-off or blank one is a torn tail.
        if !terminated && !is_complete_last_line(&bytes) {
            if bytes.len() > LINE_LEN_MAX {
                // A line longer than the limit: skip to its end without keeping it.
                let (skipped, ended) = skip_line(&mut reader, path)?;
                let len = bytes.len() as u64 + skipped;
                if ended {
                    line_number += 1;
                    result.line_starts.push(offset);
                    problems.push(
                        ProblemKind::Unparseable,
                        Some(line_number),
                        Some(offset),
                        format!("line of {len} bytes is longer than the {LINE_LEN_MAX}-byte limit and is kept unparsed"),
                    );
                    if !header_seen && !header_recovered {
                        header_recovered = true;
                        report_header(
                            problems,
                            line_number,
                            offset,
                            "the first line is too long to be a header",
                        );
                    }
                    offset += len + 1;
                    continue;
                }
                torn_tail(problems, line_number + 1, offset, len, None);
                break;
            }
            if offset == 0 && bytes == crate::format::BOM {
                // Nothing but a byte order mark: an empty log for treelog, whose first append
                // writes the header after it; pi 1.6.0 refuses it as not a session.
                problems.push(
                    ProblemKind::Encoding,
                    Some(1),
                    Some(0),
                    "the log holds only a UTF-8 byte order mark: pi 1.6.0 refuses the file (\"not a valid session\"); treelog reads it as empty".into(),
                );
                break;
            }
            torn_tail(
                problems,
                line_number + 1,
                offset,
                bytes.len() as u64,
                Some(&bytes),
            );
            break;
        }
        line_number += 1;
        result.line_starts.push(offset);
        let line_offset = offset;
        offset += bytes.len() as u64;
        if terminated {
            bytes.pop();
        }
        let bom = crate::format::bom_len(line_offset, &bytes);
        if bom > 0 {
            problems.push(
                ProblemKind::Encoding,
                Some(line_number),
                Some(line_offset),
                "the log starts with a UTF-8 byte order mark: pi 1.6.0 refuses the file (\"not a valid session\"); pi 0.73.1 and treelog read the line after it".into(),
            );
            bytes.drain(..bom);
        }
        let text = match crate::format::utf8_str(&bytes) {
            Some(text) => Cow::Borrowed(text),
            None => {
                problems.push(
                    ProblemKind::Encoding,
                    Some(line_number),
                    Some(line_offset),
                    "not valid UTF-8 (read with U+FFFD replacements, as pi reads it)".into(),
                );
                String::from_utf8_lossy(&bytes)
            }
        };
        let first_line = !header_seen && !header_recovered;
        let legacy_v1 = header_version < 2 && !header_recovered && !first_line;
        let line = classify(&text, legacy_v1, first_line);
        // A line that is not JSON does not decide the header: the first line that is JSON
        // does, as for pi (format-spec/log.md §2).
        let first_line = first_line
            && !matches!(
                &line,
                Line::Opaque(opaque) if matches!(opaque.reason, OpaqueReason::InvalidJson(_))
            );
        if !header_seen && !header_recovered && !matches!(line, Line::Blank) {
            non_json_before_header += 1;
        }
        let (id, parent) = match &line {
            Line::Blank => continue,
            Line::Header(header) => {
                header_seen = true;
                header_version = header.version;
                if header.version < 3 {
                    problems.push(
                        ProblemKind::LegacyVersion,
                        Some(line_number),
                        Some(line_offset),
                        format!(
                            "session version {} (pi migrates it on every load; `treelog repair` rewrites it as version 3)",
                            header.version
                        ),
                    );
                }
                continue;
            }
            Line::Entry(entry) => {
                result.entry_count += 1;
                if first_line {
                    header_recovered = true;
                    report_header(
                        problems,
                        line_number,
                        line_offset,
                        &format!("missing header: the first line is a {} entry", entry.kind),
                    );
                }
                if entry
                    .timestamp
                    .as_deref()
                    .and_then(crate::format::time::parse_iso_ms)
                    .is_none()
                {
                    problems.push(
                        ProblemKind::Timestamp,
                        Some(line_number),
                        Some(line_offset),
                        format!(
                            "{} entry has {} (pi dates it NaN, OpenClaw refuses the context)",
                            entry.kind,
                            match &entry.timestamp {
                                Some(timestamp) =>
                                    format!("timestamp {timestamp:?}, not an ISO time"),
                                None => "no string timestamp".to_string(),
                            }
                        ),
                    );
                }
                if entry.kind == EntryKind::Compaction
                    && let Some(id) = &entry.id
                {
                    let first_kept = json_scan::scan(&text, &["firstKeptEntryId"])
                        .ok()
                        .and_then(|found| found.fields[0])
                        .and_then(json_text_str)
                        .map(Cow::into_owned);
                    result.compactions.push(CompactionLine {
                        id: id.to_string(),
                        first_kept,
                        line: line_number,
                        offset_bytes: line_offset,
                    });
                }
                (entry.id.clone(), entry.parent.clone())
            }
            Line::Opaque(opaque) => {
                if first_line {
                    header_recovered = true;
                    let what = match &opaque.reason {
                        OpaqueReason::InvalidJson(_) => {
                            "corrupt header: the first line is not valid JSON".to_string()
                        }
                        OpaqueReason::ExtraHeader => {
                            "corrupt header: a session record without a string id".to_string()
                        }
                        other => format!("missing header: the first line is {other}"),
                    };
                    report_header(problems, line_number, line_offset, &what);
                } else {
                    let kind = match opaque.reason {
                        OpaqueReason::InvalidJson(_) | OpaqueReason::TooLong => {
                            ProblemKind::Unparseable
                        }
                        _ => ProblemKind::Opaque,
                    };
                    let what = match &opaque.reason {
                        OpaqueReason::ExtraHeader => {
                            "a second session header (kept verbatim, ignored; nothing to repair)"
                                .to_string()
                        }
                        reason => format!(
                            "{reason}: kept verbatim, not an entry (pi skips it too; nothing to repair)"
                        ),
                    };
                    problems.push(kind, Some(line_number), Some(line_offset), what);
                }
                (opaque.id.clone(), opaque.parent.clone())
            }
        };
        let Some(id) = id else { continue };
        let parent = match parent {
            ParentRef::Id(parent) => Some(parent),
            ParentRef::Absent | ParentRef::Root => None,
        };
        if let Some(parent) = &parent {
            if parent.as_ref() == id.as_ref() {
                problems.push(
                    ProblemKind::SelfParent,
                    Some(line_number),
                    Some(line_offset),
                    format!("entry {id:?} is its own parent (pi loops forever on it)"),
                );
            } else if !first_seen.contains_key(parent.as_ref()) {
                dangling.push((id.to_string(), parent.to_string(), line_number, line_offset));
            }
        }
        match first_seen.get(id.as_ref()) {
            Some(earlier) => problems.push(
                ProblemKind::DuplicateId,
                Some(line_number),
                Some(line_offset),
                format!(
                    "id {id:?} is already used by line {} (byte {}); pi keeps the last one",
                    earlier.line, earlier.offset_bytes
                ),
            ),
            None => {
                first_seen.insert(
                    id.as_ref().into(),
                    Seen {
                        line: line_number,
                        offset_bytes: line_offset,
                    },
                );
            }
        }
        last_parent.insert(id.as_ref().into(), parent.map(|p| p.as_ref().into()));
    }
    // A log without a non-blank line is a new, empty session (log.md §2): its first append
    // writes the header, and there is nothing to repair. One whose lines are all not JSON
    // (a torn first write, random bytes) has no header either; `treelog repair` writes one.
    if !header_seen && !header_recovered && non_json_before_header > 0 {
        report_header(
            problems,
            1,
            0,
            "no header: no line of the log is JSON, so none is a session header",
        );
    }
    for (id, parent, line, offset) in dangling {
        let later = first_seen
            .get(parent.as_str())
            .map(|seen| format!("; it appears only later, at line {}", seen.line))
            .unwrap_or_default();
        problems.push(
            ProblemKind::DanglingParent,
            Some(line),
            Some(offset),
            format!("entry {id:?} names parent {parent:?}, which is no earlier line{later}; it is read as a root"),
        );
    }
    report_cycles(&first_seen, &last_parent, problems);
    Ok(result)
}

fn report_header(problems: &mut Problems, line: u64, offset: u64, what: &str) {
    problems.push(
        ProblemKind::Header,
        Some(line),
        Some(offset),
        format!("{what} (a header is made up in memory; `treelog repair` writes one)"),
    );
}

fn torn_tail(problems: &mut Problems, line: u64, offset: u64, len: u64, bytes: Option<&[u8]>) {
    let blank = bytes.is_some_and(|bytes| {
        bytes
            .iter()
            .all(|byte| matches!(byte, b' ' | b'\t' | b'\r'))
    });
    let what = if blank {
        "blank"
    } else {
        "a cut-off line, not complete JSON"
    };
    problems.push(
        ProblemKind::TornTail,
        Some(line),
        Some(offset),
        format!("torn tail: {len} bytes after the last newline ({what}); it is not read until a newline ends it (`treelog repair` cuts it)"),
    );
}

/// Reads to the end of an overlong line; returns the bytes read and whether a `\n` ended it.
fn skip_line(reader: &mut impl BufRead, path: &Path) -> Result<(u64, bool)> {
    let mut skipped = 0u64;
    loop {
        let buffer = reader.fill_buf().map_err(|e| Error::io(path, "read", e))?;
        if buffer.is_empty() {
            return Ok((skipped, false));
        }
        if let Some(found) = memchr::memchr(b'\n', buffer) {
            skipped += found as u64;
            reader.consume(found + 1);
            return Ok((skipped, true));
        }
        let len = buffer.len();
        skipped += len as u64;
        reader.consume(len);
    }
}

/// Loops of raw parent links in pi's view (the last line of each id wins), each reported
/// once at the first line of its lowest-numbered member. Self-parents are reported apart.
fn report_cycles(
    first_seen: &HashMap<Box<str>, Seen>,
    last_parent: &HashMap<Box<str>, Option<Box<str>>>,
    problems: &mut Problems,
) {
    // 0: not visited, 1: on the current walk, 2: done.
    let mut state: HashMap<&str, u8> = HashMap::with_capacity(last_parent.len());
    for start in last_parent.keys() {
        if state.get(start.as_ref()).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut walk: Vec<&str> = Vec::new();
        let mut at: Option<&str> = Some(start.as_ref());
        while let Some(id) = at {
            match state.get(id).copied().unwrap_or(0) {
                0 => {
                    state.insert(id, 1);
                    walk.push(id);
                    at = last_parent.get(id).and_then(|parent| parent.as_deref());
                }
                1 => {
                    // A loop: the part of the walk from `id` on.
                    let from = walk.iter().position(|member| *member == id).unwrap_or(0);
                    let members = &walk[from..];
                    if members.len() > 1 {
                        let first = members
                            .iter()
                            .filter_map(|member| first_seen.get(*member))
                            .min_by_key(|seen| seen.line);
                        let mut chain: Vec<&str> = members.to_vec();
                        chain.push(id);
                        problems.push(
                            ProblemKind::Cycle,
                            first.map(|seen| seen.line),
                            first.map(|seen| seen.offset_bytes),
                            format!(
                                "parent cycle {} (pi loops forever on it)",
                                chain.join(" → ")
                            ),
                        );
                    }
                    break;
                }
                _ => break,
            }
        }
        for id in walk {
            state.insert(id, 2);
        }
    }
}

/// Each compaction's first kept entry must be an earlier entry on its path, or the context
/// keeps nothing before the compaction.
fn check_compactions(replay: &Session, scan: &ScanResult, problems: &mut Problems) -> Result<()> {
    for compaction in &scan.compactions {
        let (line, offset) = (Some(compaction.line), Some(compaction.offset_bytes));
        let Some(first_kept) = &compaction.first_kept else {
            problems.push(
                ProblemKind::CompactionFirstKept,
                line,
                offset,
                format!(
                    "compaction {:?} has no string firstKeptEntryId",
                    compaction.id
                ),
            );
            continue;
        };
        if replay.entry(first_kept)?.is_none() {
            problems.push(
                ProblemKind::CompactionFirstKept,
                line,
                offset,
                format!(
                    "compaction {:?}: firstKeptEntryId {first_kept:?} names no entry",
                    compaction.id
                ),
            );
            continue;
        }
        if replay.entry(&compaction.id)?.is_none() {
            continue;
        }
        if first_kept == &compaction.id || !replay.is_ancestor(first_kept, &compaction.id)? {
            problems.push(
                ProblemKind::CompactionFirstKept,
                line,
                offset,
                format!(
                    "compaction {:?}: firstKeptEntryId {first_kept:?} is not an earlier entry on its path (the context keeps nothing before the compaction)",
                    compaction.id
                ),
            );
        }
    }
    Ok(())
}

/// Compares what the index answers with what a replay of the log answers.
fn compare_index(
    indexed: &Session,
    replay: &Session,
    scan: &ScanResult,
    problems: &mut Problems,
) -> Result<()> {
    let mut report = |offset: Option<u64>, message: String| {
        problems.push(
            ProblemKind::Index,
            offset.map(|offset| scan.line_of(offset)),
            offset,
            format!("index: {message}"),
        );
    };
    // Entries, field by field, in file order.
    let mut left = indexed.entries()?;
    let mut right = replay.entries()?;
    loop {
        match (left.next().transpose()?, right.next().transpose()?) {
            (None, None) => break,
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                report(
                    Some(b.offset_bytes),
                    format!(
                        "entry {:?} (parent {:?}, depth {}) differs from the replay's {:?} (parent {:?}, depth {})",
                        a.id, a.tree_parent_id, a.depth, b.id, b.tree_parent_id, b.depth
                    ),
                );
                break;
            }
            (Some(a), None) => {
                report(
                    Some(a.offset_bytes),
                    format!("has entry {:?} beyond the replay's last", a.id),
                );
                break;
            }
            (None, Some(b)) => {
                report(Some(b.offset_bytes), format!("lacks entry {:?}", b.id));
                break;
            }
        }
    }
    let (a, b) = (indexed.opaque_records()?, replay.opaque_records()?);
    if a != b {
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        let offset = b
            .get(first)
            .or(a.get(first))
            .map(|record| record.offset_bytes);
        report(
            offset,
            format!(
                "{} opaque records, the replay has {}; first difference at record {}",
                a.len(),
                b.len(),
                first + 1
            ),
        );
    }
    let (a, b) = (indexed.leaf_id()?, replay.leaf_id()?);
    if a != b {
        report(None, format!("leaf {a:?}, the replay's is {b:?}"));
    }
    let (a, b) = (indexed.path_ids(None)?, replay.path_ids(None)?);
    if a != b {
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        report(
            None,
            format!(
                "path of {} entries differs from the replay's ({} entries) at position {}",
                a.len(),
                b.len(),
                first + 1
            ),
        );
    }
    let (a, b) = (indexed.labels()?, replay.labels()?);
    if a != b {
        report(
            None,
            format!(
                "{} labels, the replay has {} (or they differ)",
                a.len(),
                b.len()
            ),
        );
    }
    let (a, b) = (indexed.session_name()?, replay.session_name()?);
    if a != b {
        report(None, format!("session name {a:?}, the replay's is {b:?}"));
    }
    let mut left = indexed.tree()?;
    let mut right = replay.tree()?;
    let mut position = 0u64;
    loop {
        position += 1;
        match (left.next().transpose()?, right.next().transpose()?) {
            (None, None) => break,
            (Some(a), Some(b)) if a == b => {}
            (a, b) => {
                let id = |node: &Option<crate::session::TreeNode>| {
                    node.as_ref().map(|node| node.id.clone())
                };
                report(
                    None,
                    format!(
                        "tree node {position} is {:?}, the replay's is {:?}",
                        id(&a),
                        id(&b)
                    ),
                );
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#;

    fn message(id: &str, parent: Option<&str>) -> String {
        let parent = parent.map_or("null".to_string(), |parent| format!("\"{parent}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
        )
    }

    /// Verifies a log made of `lines` and returns (kind, line) of each problem.
    fn problems(lines: &[String]) -> Vec<(ProblemKind, Option<u64>)> {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, format!("{}\n", lines.join("\n"))).expect("write log");
        verify_log(&path, true)
            .expect("verify runs")
            .problems
            .into_iter()
            .map(|problem| (problem.kind, problem.line))
            .collect()
    }

    /// A clean log has no problems.
    #[test]
    fn clean_log() {
        let lines = [
            HEADER.to_string(),
            message("a", None),
            message("b", Some("a")),
        ];
        assert_eq!(problems(&lines), vec![]);
    }

    /// Two entries naming each other as parents are a cycle (pi loops on it), reported once,
    /// besides the forward reference that makes one of them dangle.
    #[test]
    fn parent_cycle() {
        let lines = [
            HEADER.to_string(),
            message("a", Some("b")),
            message("b", Some("a")),
        ];
        assert_eq!(
            problems(&lines),
            vec![
                (ProblemKind::DanglingParent, Some(2)),
                (ProblemKind::Cycle, Some(2)),
            ]
        );
    }

    /// A compaction whose first kept entry is on another branch is reported at its line.
    #[test]
    fn compaction_first_kept_off_path() {
        let compaction = r#"{"type":"compaction","id":"c","parentId":"b","timestamp":"2025-01-01T00:00:02.000Z","summary":"s","firstKeptEntryId":"x","tokensBefore":1}"#;
        let lines = [
            HEADER.to_string(),
            message("a", None),
            message("x", Some("a")),
            message("b", Some("a")),
            compaction.to_string(),
        ];
        assert_eq!(
            problems(&lines),
            vec![(ProblemKind::CompactionFirstKept, Some(5))]
        );
    }

    /// An entry whose timestamp JavaScript cannot parse is reported.
    #[test]
    fn bad_timestamp() {
        let line = message("a", None).replace("2025-01-01T00:00:01.000Z", "yesterday");
        assert_eq!(
            problems(&[HEADER.to_string(), line]),
            vec![(ProblemKind::Timestamp, Some(2))]
        );
    }

    /// A missing header is reported at the first line; a blank line before it is no problem.
    #[test]
    fn missing_header() {
        let lines = [String::new(), message("a", None)];
        assert_eq!(problems(&lines), vec![(ProblemKind::Header, Some(2))]);
    }
}
