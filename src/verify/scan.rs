//! The raw scan of `treelog verify`: the log read line by line without the index (header,
//! torn tail, unreadable and opaque lines, duplicate ids, dangling parents, parent cycles).
//! It must not open the index or the session: it is the check that trusts neither.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::problems::{ProblemKind, Problems};
use crate::error::{Error, Result, quoted};
use crate::format::json_scan;
use crate::format::line::{
    EntryKind, Line, OpaqueReason, ParentRef, classify, is_complete_last_line, json_text_str,
};
use crate::limits::LINE_LEN_MAX;

/// Read buffer of the raw scan.
const READ_BUFFER_LEN: usize = 1024 * 1024;

/// Where a record with an id was first seen.
pub(super) struct Seen {
    pub(super) line: u64,
    pub(super) offset_bytes: u64,
}

/// A compaction line found by the scan.
pub(super) struct CompactionLine {
    pub(super) id: String,
    pub(super) first_kept: Option<String>,
    pub(super) line: u64,
    pub(super) offset_bytes: u64,
}

/// What the raw scan learned that later checks need.
pub(super) struct ScanResult {
    /// Byte offset of each line, in order (line N starts at `line_starts[N - 1]`).
    pub(super) line_starts: Vec<u64>,
    pub(super) compactions: Vec<CompactionLine>,
    pub(super) entry_count: u64,
    pub(super) log_len_bytes: u64,
}

impl ScanResult {
    /// The 1-based line number of the line starting at or containing `offset`.
    pub(super) fn line_of(&self, offset: u64) -> u64 {
        match self.line_starts.binary_search(&offset) {
            Ok(index) => index as u64 + 1,
            Err(index) => index as u64,
        }
    }
}

/// Reads the log line by line, independently of the index, and reports what is wrong with
/// the lines themselves.
pub(super) fn scan_raw(path: &Path, problems: &mut Problems) -> Result<ScanResult> {
    let file = crate::fs_safe::open_regular(path, std::fs::OpenOptions::new().read(true))
        .map_err(|e| Error::io(path, "open the log", e))?;
    let log_len_bytes = file
        .metadata()
        .map_err(|e| Error::io(path, "look at the log", e))?
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
            .map_err(|e| Error::io(path, "read the log", e))?;
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
                                    format!("timestamp {}, not an ISO time", quoted(timestamp)),
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
                    format!(
                        "entry {} is its own parent (pi loops forever on it)",
                        quoted(&id)
                    ),
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
                    "id {} is already used by line {} (byte {}); pi keeps the last one",
                    quoted(&id),
                    earlier.line,
                    earlier.offset_bytes
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
            format!(
                "entry {} names parent {}, which is no earlier line{later}; it is read as a root",
                quoted(&id),
                quoted(&parent)
            ),
        );
    }
    report_cycles(&first_seen, &last_parent, problems);
    Ok(result)
}

pub(super) fn report_header(problems: &mut Problems, line: u64, offset: u64, what: &str) {
    problems.push(
        ProblemKind::Header,
        Some(line),
        Some(offset),
        format!("{what} (a header is made up in memory; `treelog repair` writes one)"),
    );
}

pub(super) fn torn_tail(
    problems: &mut Problems,
    line: u64,
    offset: u64,
    len: u64,
    bytes: Option<&[u8]>,
) {
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
pub(super) fn skip_line(reader: &mut impl BufRead, path: &Path) -> Result<(u64, bool)> {
    let mut skipped = 0u64;
    loop {
        let buffer = reader
            .fill_buf()
            .map_err(|e| Error::io(path, "read the log", e))?;
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
pub(super) fn report_cycles(
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
