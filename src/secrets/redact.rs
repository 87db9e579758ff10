//! Replacing a [`Matcher`]'s matches inside a log's JSON string values, and nothing else: each
//! changed string is written again the way `JSON.stringify` writes it, every other byte of
//! the line stays as it was. The log is replaced under its writer lock by a new file renamed
//! over it (mode, owner and link kept); bytes another writer appended meanwhile are carried
//! over. The sidecar is rebuilt afterwards, so no derived file of the log keeps the text.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::error::SecretsError;
use super::matcher::{Matcher, mask};
use super::scan::{Finding, candidate_lines, entry_id, strip_bom};
use super::walk::{self, Position};
use crate::storage::{FileStorage, LogStorage};
use crate::{Error, Session, SessionOptions};

/// Times the log is read again when it grew while it was being rewritten.
const ATTEMPTS_MAX: u32 = 8;

/// What a redaction of one log did.
#[derive(Debug, Default)]
pub struct Redacted {
    /// Each replaced occurrence (with `--dry-run`: each one that would be).
    pub findings: Vec<Finding>,
    /// The log was replaced.
    pub written: bool,
    /// Bytes another writer appended to the old file after it was read, carried over.
    pub carried_bytes: u64,
    /// The sidecar index was deleted and built again from the redacted log.
    pub sidecar_rebuilt: bool,
}

/// Why a string may not change: it is a key, or the value of a field that holds the
/// session's structure.
fn protected(position: &Position, is_key: bool) -> Option<&'static str> {
    if is_key {
        return Some("the match is in an object key, which redaction never changes");
    }
    let key = position.key()?;
    // `uuid`, `parentUuid`, `sessionId`: the ids of other agents' lines too.
    if key == "id"
        || key.ends_with("Id")
        || key.ends_with("Ids")
        || key == "uuid"
        || key.ends_with("Uuid")
    {
        return Some("the match is in an id, which redaction never changes");
    }
    match key {
        "type" | "role" | "timestamp" => {
            Some("the match is in a type, role or timestamp field, which redaction never changes")
        }
        _ => None,
    }
}

/// The line with every match in its string values replaced by `replacement`, or `None` when
/// it holds none; each replaced occurrence is added to `found`.
pub fn redact_line(
    path: &Path,
    line: &[u8],
    matcher: &Matcher,
    replacement: &str,
    line_number: u64,
    line_offset_bytes: u64,
    found: &mut Vec<Finding>,
) -> Result<Option<Vec<u8>>, SecretsError> {
    let bom_len = line.len() - strip_bom(line, line_offset_bytes).len();
    let body = &line[bom_len..];
    let valid = crate::format::utf8_str(body).is_some_and(crate::format::json_scan::is_valid);
    if !valid {
        let text = String::from_utf8_lossy(body);
        if matcher.find(&text).is_empty() {
            return Ok(None);
        }
        return Err(SecretsError::NotJson {
            path: path.to_path_buf(),
            line: line_number,
        });
    }
    let before = found.len();
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut refusal = None;
    walk::strings(body, |token, position| {
        let raw = &body[token.start..token.end];
        if !matcher.may_match_raw(raw) {
            return true;
        }
        let text = match exact_text(raw) {
            Some(text) => text,
            None => {
                // A lone surrogate escape: the text cannot be changed without changing the
                // escape; a match in it is refused.
                if !matcher.find(&walk::decode(raw)).is_empty() {
                    refusal = Some((position.path(), "the string holds a lone surrogate escape"));
                    return false;
                }
                return true;
            }
        };
        let hits = matcher.find(&text);
        if hits.is_empty() {
            return true;
        }
        if let Some(reason) = protected(position, token.is_key) {
            refusal = Some((position.path(), reason));
            return false;
        }
        let mut replaced = String::with_capacity(text.len());
        let mut at = 0;
        for hit in &hits {
            replaced.push_str(&text[at..hit.range.start]);
            replaced.push_str(replacement);
            at = hit.range.end;
            let matched = &text[hit.range.clone()];
            found.push(Finding {
                line: line_number,
                line_offset_bytes,
                entry_id: None,
                json_path: Some(position.path()),
                in_key: false,
                rule: hit.rule.clone(),
                masked: mask(matched),
                text: matched.to_string(),
            });
        }
        replaced.push_str(&text[at..]);
        edits.push((
            token.start,
            token.end,
            crate::format::json_string::json_string(&replaced),
        ));
        true
    });
    if let Some((json_path, reason)) = refusal {
        return Err(SecretsError::Refused {
            path: path.to_path_buf(),
            line: line_number,
            entry_id: entry_id(body),
            json_path,
            reason: reason.to_string(),
        });
    }
    if edits.is_empty() {
        return Ok(None);
    }
    let id = entry_id(body);
    for finding in &mut found[before..] {
        finding.entry_id.clone_from(&id);
    }
    let mut out = Vec::with_capacity(line.len());
    out.extend_from_slice(&line[..bom_len]);
    let mut at = 0;
    for (start, end, raw) in &edits {
        out.extend_from_slice(&body[at..*start]);
        out.extend_from_slice(raw.as_bytes());
        at = *end;
    }
    out.extend_from_slice(&body[at..]);
    debug_assert!(
        crate::format::utf8_str(&out[bom_len..]).is_some_and(crate::format::json_scan::is_valid)
    );
    Ok(Some(out))
}

/// The exact text of a raw JSON string, `None` when it spells a lone surrogate.
fn exact_text(raw: &[u8]) -> Option<String> {
    if memchr::memchr(b'\\', raw).is_none() {
        return Some(walk::decode(raw).into_owned());
    }
    serde_json::from_slice::<String>(raw).ok()
}

/// `bytes` (whole lines of a log, starting at line `first_line` and byte `offset_bytes`) with
/// every match replaced; the replaced occurrences are added to `found`.
pub fn redact_bytes(
    path: &Path,
    bytes: &[u8],
    matcher: &Matcher,
    replacement: &str,
    first_line: u64,
    offset_bytes: u64,
    found: &mut Vec<Finding>,
) -> Result<Vec<u8>, SecretsError> {
    let mut out = Vec::new();
    let mut copied = 0usize;
    let mut failure = None;
    candidate_lines(
        bytes,
        matcher,
        first_line,
        offset_bytes,
        |line, number, at| {
            if failure.is_some() {
                return;
            }
            match redact_line(path, line, matcher, replacement, number, at, found) {
                Ok(Some(new_line)) => {
                    let start = (at - offset_bytes) as usize;
                    if out.is_empty() {
                        out.reserve(bytes.len());
                    }
                    out.extend_from_slice(&bytes[copied..start]);
                    out.extend_from_slice(&new_line);
                    copied = start + line.len();
                }
                Ok(None) => {}
                Err(error) => failure = Some(error),
            }
        },
    );
    if let Some(error) = failure {
        return Err(error);
    }
    if copied == 0 && out.is_empty() {
        return Ok(bytes.to_vec());
    }
    out.extend_from_slice(&bytes[copied..]);
    Ok(out)
}

/// Redacts the log at `path`: every match of `matcher` in its string values becomes
/// `replacement`. With `dry_run` nothing is written and the findings say what would change.
/// Otherwise, under the log's writer lock: the log is read, rewritten into a new file renamed
/// over it, bytes appended to the old file meanwhile are carried over, and the sidecar (where
/// `options` keep it, when they allow writing it) is deleted and built again.
pub fn redact_file(
    path: &Path,
    matcher: &Matcher,
    replacement: &str,
    dry_run: bool,
    options: &SessionOptions,
) -> Result<Redacted, SecretsError> {
    let mut storage = FileStorage::open(path).map_err(|e| Error::io(path, "open the log", e))?;
    if !dry_run {
        storage
            .lock()
            .map_err(|e| Error::io(path, "open the log for writing", e))?;
    }
    let result = redact_locked(path, matcher, replacement, dry_run, options);
    if !dry_run {
        let _ = storage.unlock();
    }
    result
}

fn redact_locked(
    path: &Path,
    matcher: &Matcher,
    replacement: &str,
    dry_run: bool,
    options: &SessionOptions,
) -> Result<Redacted, SecretsError> {
    for _ in 0..ATTEMPTS_MAX {
        let mut old = crate::fs_safe::open_regular(path, std::fs::OpenOptions::new().read(true))
            .map_err(|e| Error::io(path, "open the log", e))?;
        let mut bytes = Vec::new();
        old.read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, "read the log", e))?;
        let mut findings = Vec::new();
        let content = redact_bytes(path, &bytes, matcher, replacement, 1, 0, &mut findings)?;
        if findings.is_empty() || dry_run {
            return Ok(Redacted {
                findings,
                ..Redacted::default()
            });
        }
        let len_now = old
            .metadata()
            .map_err(|e| Error::io(path, "look at the log", e))?
            .len();
        if len_now != bytes.len() as u64 {
            continue;
        }
        crate::fs_safe::replace_file_keeping(path, &content)
            .map_err(|e| Error::io(path, "replace the log", e))?;
        let carried_bytes =
            carry_over(path, &mut old, &bytes, matcher, replacement, &mut findings)?;
        let sidecar_rebuilt = rebuild_sidecar(path, options)?;
        return Ok(Redacted {
            findings,
            written: true,
            carried_bytes,
            sidecar_rebuilt,
        });
    }
    Err(SecretsError::Busy {
        path: path.to_path_buf(),
        attempts: ATTEMPTS_MAX,
    })
}

/// Appends to the new log, redacted, the bytes a writer holding the old file open appended to
/// it after it was read (between the last look at its length and the rename).
fn carry_over(
    path: &Path,
    old: &mut std::fs::File,
    read: &[u8],
    matcher: &Matcher,
    replacement: &str,
    findings: &mut Vec<Finding>,
) -> Result<u64, SecretsError> {
    let mut extra = Vec::new();
    old.seek(SeekFrom::Start(read.len() as u64))
        .and_then(|_| old.read_to_end(&mut extra))
        .map_err(|e| Error::io(path, "read the old log", e))?;
    if extra.is_empty() {
        return Ok(0);
    }
    let first_line = 1 + memchr::memchr_iter(b'\n', read).count() as u64;
    let redacted = redact_bytes(
        path,
        &extra,
        matcher,
        replacement,
        first_line,
        read.len() as u64,
        findings,
    )?;
    let mut file = crate::fs_safe::open_regular(path, std::fs::OpenOptions::new().append(true))
        .map_err(|e| Error::io(path, "append to the log", e))?;
    file.write_all(&redacted)
        .and_then(|()| file.sync_data())
        .map_err(|e| Error::io(path, "append to the log", e))?;
    Ok(extra.len() as u64)
}

/// Deletes the log's sidecar and builds it again from the redacted log, when `options` allow
/// writing it; returns whether it did.
fn rebuild_sidecar(path: &Path, options: &SessionOptions) -> Result<bool, SecretsError> {
    if !options.index_write {
        // The sidecar stays; it no longer matches the log, so no open trusts it.
        return Ok(false);
    }
    let sidecar = crate::sidecar_for(path, options.index_dir.as_deref());
    match std::fs::remove_file(&sidecar) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(Error::io(&sidecar, "delete the index", error).into()),
    }
    drop(Session::open(path, options.clone())?);
    Ok(true)
}
