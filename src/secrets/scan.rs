//! Finding the matches of a [`Matcher`] in a log's string values: read in large chunks, the
//! lines the prefilter passes walked string by string. Reads the log only (never an index).

use std::io::Read;
use std::path::Path;

use super::matcher::{Matcher, mask};
use super::walk;

/// Bytes read from a log at a time.
const CHUNK_LEN: usize = 8 << 20;

/// One match in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// 1-based line number.
    pub line: u64,
    /// The byte offset where the line starts.
    pub line_offset_bytes: u64,
    /// The line's `id`, when it is a JSON object that has one.
    pub entry_id: Option<String>,
    /// Where in the line's JSON the match is (`message.content[2].text`); `None` when the line
    /// is not JSON.
    pub json_path: Option<String>,
    /// The match is in an object's key, not in a value.
    pub in_key: bool,
    /// The rule's id, or `literal` / `pattern`.
    pub rule: String,
    /// The matched text masked for display ([`mask`]).
    pub masked: String,
    /// The matched text itself: for the redaction and its final check, never to be printed.
    pub text: String,
}

/// Finds the matches in one line (`\n` excluded) and adds them to `found`.
pub fn scan_line(
    line: &[u8],
    matcher: &Matcher,
    line_number: u64,
    line_offset_bytes: u64,
    found: &mut Vec<Finding>,
) {
    let line = strip_bom(line, line_offset_bytes);
    let before = found.len();
    match crate::format::utf8_str(line).filter(|text| crate::format::json_scan::is_valid(text)) {
        Some(_) => walk::strings(line, |token, position| {
            let raw = &line[token.start..token.end];
            if !matcher.may_match_raw(raw) {
                return true;
            }
            let text = walk::decode(raw);
            for hit in matcher.find(&text) {
                let matched = &text[hit.range];
                found.push(Finding {
                    line: line_number,
                    line_offset_bytes,
                    entry_id: None,
                    json_path: Some(position.path()),
                    in_key: token.is_key,
                    rule: hit.rule,
                    masked: mask(matched),
                    text: matched.to_string(),
                });
            }
            true
        }),
        None => {
            let text = String::from_utf8_lossy(line);
            for hit in matcher.find(&text) {
                let matched = &text[hit.range];
                found.push(Finding {
                    line: line_number,
                    line_offset_bytes,
                    entry_id: None,
                    json_path: None,
                    in_key: false,
                    rule: hit.rule,
                    masked: mask(matched),
                    text: matched.to_string(),
                });
            }
        }
    }
    if found.len() > before {
        let id = entry_id(line);
        for finding in &mut found[before..] {
            finding.entry_id.clone_from(&id);
        }
    }
}

/// The `id` of a line that is a JSON object with a string id.
pub fn entry_id(line: &[u8]) -> Option<String> {
    let text = crate::format::utf8_str(line)?;
    let scan = crate::format::json_scan::scan(text, &["id"]).ok()?;
    let raw = scan.fields[0]?;
    raw.starts_with('"')
        .then(|| walk::decode(raw.as_bytes()).into_owned())
}

/// The line without the byte order mark that may open a log.
pub fn strip_bom(line: &[u8], line_offset_bytes: u64) -> &[u8] {
    match line.strip_prefix(crate::format::BOM) {
        Some(rest) if line_offset_bytes == 0 => rest,
        _ => line,
    }
}

/// Calls `visit` with each line of `chunk` (whole lines; the last may lack its `\n`) that the
/// prefilter passes, with its 1-based number and offset; `first_line` and `offset_bytes` are
/// those of the chunk's first byte.
pub fn candidate_lines(
    chunk: &[u8],
    matcher: &Matcher,
    first_line: u64,
    offset_bytes: u64,
    mut visit: impl FnMut(&[u8], u64, u64),
) {
    let mut from = 0;
    let mut line_number = first_line;
    let mut counted_to = 0;
    while let Some(at) = matcher.next_candidate(chunk, from) {
        let start = memchr::memrchr(b'\n', &chunk[..at]).map_or(0, |found| found + 1);
        let end = memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |found| at + found);
        line_number += memchr::memchr_iter(b'\n', &chunk[counted_to..start]).count() as u64;
        counted_to = start;
        if end > start {
            visit(&chunk[start..end], line_number, offset_bytes + start as u64);
        }
        from = end + 1;
        if from >= chunk.len() {
            break;
        }
    }
}

/// Reads the log at `path` in chunks of whole lines and calls `visit` with each chunk, its
/// first line's number and its offset. A line longer than [`crate::limits::LINE_LEN_MAX`]
/// is an error.
pub fn read_chunks(
    path: &Path,
    mut visit: impl FnMut(&[u8], u64, u64),
) -> Result<u64, crate::Error> {
    let mut file = crate::fs_safe::open_regular(path, std::fs::OpenOptions::new().read(true))
        .map_err(|e| crate::Error::io(path, "open the log", e))?;
    let mut buffer: Vec<u8> = Vec::with_capacity(CHUNK_LEN);
    let (mut line, mut offset) = (1u64, 0u64);
    loop {
        let filled = buffer.len();
        let want = (filled + CHUNK_LEN).max(buffer.capacity());
        buffer.resize(want, 0);
        let read = loop {
            match file.read(&mut buffer[filled..]) {
                Ok(read) => break read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(crate::Error::io(path, "read the log", error)),
            }
        };
        buffer.truncate(filled + read);
        let end_of_file = read == 0;
        let whole = if end_of_file {
            buffer.len()
        } else {
            match memchr::memrchr(b'\n', &buffer[filled..]) {
                Some(found) => filled + found + 1,
                None if buffer.len() > crate::limits::LINE_LEN_MAX => {
                    return Err(crate::Error::InvalidInput {
                        path: path.to_path_buf(),
                        reason: format!(
                            "line {line} is longer than {} bytes",
                            crate::limits::LINE_LEN_MAX
                        ),
                    });
                }
                None => continue,
            }
        };
        if whole > 0 {
            visit(&buffer[..whole], line, offset);
            line += memchr::memchr_iter(b'\n', &buffer[..whole]).count() as u64;
            offset += whole as u64;
            buffer.drain(..whole);
        }
        if end_of_file {
            return Ok(offset);
        }
    }
}

/// The matches of `matcher` in the log at `path`, in order.
pub fn scan_file(path: &Path, matcher: &Matcher) -> Result<Vec<Finding>, crate::Error> {
    let mut found = Vec::new();
    read_chunks(path, |chunk, first_line, offset| {
        candidate_lines(chunk, matcher, first_line, offset, |line, number, at| {
            scan_line(line, matcher, number, at, &mut found);
        });
    })?;
    Ok(found)
}
