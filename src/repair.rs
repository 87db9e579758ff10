//! Explicit repairs of a log, planned as a dry run and applied only on request: what
//! `treelog repair` does.
//!
//! Fixes, in order:
//! 1. the bytes after the last newline: a complete last line (format-spec/log.md §1, already
//!    read as a line) gets its missing newline; a torn tail (a cut-off or blank line) is cut;
//! 2. a missing or corrupt header is restored: a valid `session` line further down is moved to
//!    the top, a `session` object without an id gets one, or else a synthesised version-3
//!    header is inserted above every other line (using the id treelog already showed for the
//!    log, so the session keeps its identity);
//! 3. a version 1 or 2 log is migrated to version 3 as pi migrates it: ids and `parentId`s
//!    for v1 entries (the ids treelog already derived for them), `firstKeptEntryIndex` to
//!    `firstKeptEntryId`, the `hookMessage` role to `custom`, and the header's version.
//!
//! Architecture invariant: a line that parses as JSON is never dropped; lines that need no
//! change are copied byte for byte. Applying writes a backup first, replaces the log
//! atomically and deletes the sidecar index (the next open rebuilds it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::format::json_scan;
use crate::format::json_string::json_string;
use crate::format::line::{
    Line, OpaqueLine, OpaqueReason, classify, is_complete_last_line, json_text_str, relink,
    with_field,
};
use crate::format::write::encode_header;
use crate::index::sidecar_for;
use crate::session::{Session, SessionOptions};
use crate::storage::{FileStorage, LogStorage, MemoryStorage};

/// One planned fix, located in the original log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub line: Option<u64>,
    pub offset_bytes: Option<u64>,
    pub description: String,
}

/// What a repair would do: the fixes and the log's new content.
#[derive(Clone, Debug)]
pub struct Plan {
    pub fixes: Vec<Fix>,
    pub content: Vec<u8>,
    pub original_len_bytes: u64,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.fixes.is_empty()
    }
}

/// The outcome of [`repair_file`].
#[derive(Clone, Debug)]
pub struct Outcome {
    pub plan: Plan,
    /// Where the original was copied, when the plan was applied.
    pub backup: Option<PathBuf>,
}

/// Plans the repair of the log at `path` and, with `apply`, carries it out under the log's
/// lock: backup `<path>.bak-<unix seconds>`, atomic replacement, sidecar deleted. `cwd` goes
/// into a synthesised header. Writers appending to the log meanwhile would append to the
/// replaced file: stop them first.
pub fn repair_file(path: &Path, apply: bool, cwd: &str) -> Result<Outcome> {
    repair_file_with(path, apply, cwd, &SessionOptions::default())
}

/// [`repair_file`] for logs whose sidecar lives where `options` say
/// ([`SessionOptions::index_dir`]). With [`SessionOptions::index_write`] off the sidecar is
/// left in place: it no longer matches the repaired log, so no open trusts it.
pub fn repair_file_with(
    path: &Path,
    apply: bool,
    cwd: &str,
    options: &SessionOptions,
) -> Result<Outcome> {
    let mut storage = FileStorage::open(path).map_err(|e| Error::io(path, "open the log", e))?;
    if apply {
        storage
            .lock()
            .map_err(|e| Error::io(path, "open the log for writing", e))?;
    }
    let result = (|| {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, "read the log", e))?;
        let plan = plan_repair(path, &bytes, cwd)?;
        if !apply || plan.is_empty() {
            return Ok(Outcome { plan, backup: None });
        }
        let backup = backup_path(path);
        write_backup(path, &backup).map_err(|e| Error::io(&backup, "write the backup", e))?;
        let now_len = std::fs::metadata(path)
            .map_err(|e| Error::io(path, "look at the log", e))?
            .len();
        if now_len != plan.original_len_bytes {
            return Err(Error::LogChanged {
                path: path.to_path_buf(),
                offset_bytes: now_len,
                reason: "the log changed while the repair was planned; nothing was written".into(),
            });
        }
        crate::directory::write_file_atomically(path, &plan.content)?;
        // Read-only: the sidecar stays; it no longer matches the log, so no open trusts it.
        if options.index_write {
            let sidecar = sidecar_for(path, options.index_dir.as_deref());
            match std::fs::remove_file(&sidecar) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(Error::io(&sidecar, "delete the index", error)),
            }
        }
        Ok(Outcome {
            plan,
            backup: Some(backup),
        })
    })();
    if apply {
        let _ = storage.unlock();
    }
    result
}

/// `<path>.bak-<unix seconds>`, with `-N` added while that name is taken.
fn backup_path(path: &Path) -> PathBuf {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let base = format!("{}.bak-{seconds}", path.display());
    let mut candidate = PathBuf::from(&base);
    let mut suffix = 1;
    // A link counts as taken, whether or not it leads anywhere.
    while std::fs::symlink_metadata(&candidate).is_ok() {
        candidate = PathBuf::from(format!("{base}-{suffix}"));
        suffix += 1;
    }
    candidate
}

/// Copies the log at `path` to the new file `backup`, created exclusively (never through a
/// link) with the log's mode.
fn write_backup(path: &Path, backup: &Path) -> std::io::Result<()> {
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path)?.permissions());
    let mut from = std::fs::File::open(path)?;
    let mut to = crate::fs_safe::create_new_file(backup, mode & 0o777)?;
    std::io::copy(&mut from, &mut to)?;
    to.sync_all()
}

/// One line of the log being repaired.
struct PlanLine {
    /// The bytes, without `\n`.
    bytes: Vec<u8>,
    /// 1-based line number and offset in the original log (`None` for inserted lines).
    line: Option<u64>,
    offset_bytes: Option<u64>,
}

/// Plans the repair of `bytes`, the content of the log at `path`. A byte order mark opening
/// the log is kept as it is, in front of the repaired lines (format-spec/log.md §1).
pub fn plan_repair(path: &Path, bytes: &[u8], cwd: &str) -> Result<Plan> {
    let bom = crate::format::bom_len(0, bytes);
    let mut plan = plan_lines(path, &bytes[bom..], cwd)?;
    if bom > 0 {
        for fix in &mut plan.fixes {
            fix.offset_bytes = fix.offset_bytes.map(|offset| offset + bom as u64);
        }
        plan.content.splice(0..0, bytes[..bom].iter().copied());
        plan.original_len_bytes = bytes.len() as u64;
    }
    Ok(plan)
}

/// [`plan_repair`] for the lines of a log, its byte order mark (if any) left out.
fn plan_lines(path: &Path, bytes: &[u8], cwd: &str) -> Result<Plan> {
    let mut fixes = Vec::new();
    let mut lines = Vec::new();
    let mut offset = 0usize;
    let mut line_number = 0u64;
    while let Some(found) = memchr::memchr(b'\n', &bytes[offset..]) {
        line_number += 1;
        lines.push(PlanLine {
            bytes: bytes[offset..offset + found].to_vec(),
            line: Some(line_number),
            offset_bytes: Some(offset as u64),
        });
        offset += found + 1;
    }

    // 1. The bytes after the last newline.
    let tail = &bytes[offset..];
    if !tail.is_empty() {
        let at = (Some(line_number + 1), Some(offset as u64));
        if is_complete_last_line(tail) {
            fixes.push(fix(
                at,
                format!(
                    "end the last line ({} bytes of complete JSON, already read as a line) with its missing newline",
                    tail.len()
                ),
            ));
            lines.push(PlanLine {
                bytes: tail.to_vec(),
                line: at.0,
                offset_bytes: at.1,
            });
        } else {
            fixes.push(fix(at, format!("cut the torn tail: {} bytes after the last newline that are not a complete JSON line", tail.len())));
        }
    }

    // 2. The header.
    restore_header(path, &mut lines, &mut fixes, cwd)?;

    // 3. Migration to version 3.
    migrate(path, &mut lines, &mut fixes)?;

    let mut content = Vec::with_capacity(bytes.len() + 256);
    for line in &lines {
        content.extend_from_slice(&line.bytes);
        content.push(b'\n');
    }
    if fixes.is_empty() {
        content = bytes.to_vec();
    }
    Ok(Plan {
        fixes,
        content,
        original_len_bytes: bytes.len() as u64,
    })
}

fn fix(at: (Option<u64>, Option<u64>), description: String) -> Fix {
    Fix {
        line: at.0,
        offset_bytes: at.1,
        description,
    }
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// Whether a line decides the header: the first line that is JSON does (format-spec/log.md
/// §2); blank lines and lines that are not JSON before it are skipped, as pi skips them.
fn decides_header(bytes: &[u8]) -> bool {
    !matches!(
        classify(&String::from_utf8_lossy(bytes), false, true),
        Line::Blank
            | Line::Opaque(OpaqueLine {
                reason: OpaqueReason::InvalidJson(_),
                ..
            })
    )
}

fn is_header(bytes: &[u8]) -> bool {
    matches!(
        classify(&String::from_utf8_lossy(bytes), false, true),
        Line::Header(_)
    )
}

fn restore_header(
    path: &Path,
    lines: &mut Vec<PlanLine>,
    fixes: &mut Vec<Fix>,
    cwd: &str,
) -> Result<()> {
    let Some(first) = lines
        .iter()
        .position(|line| decides_header(&line.bytes))
        .or_else(|| {
            // No line is JSON: the header goes above the first non-blank line.
            lines.iter().position(|line| !is_blank(&line.bytes))
        })
    else {
        // An empty log is a valid new session: its header is written with the first entry.
        return Ok(());
    };
    if is_header(&lines[first].bytes) {
        return Ok(());
    }
    let at = (lines[first].line, lines[first].offset_bytes);
    // The id treelog shows for this log while it has no header, so the identity is kept.
    let replay = Session::open_storage(
        Box::new(MemoryStorage::new(path, join(lines))),
        SessionOptions::default(),
    )?;
    let session_id = replay.session_id().to_string();
    let first_timestamp = replay
        .entries()?
        .next()
        .transpose()?
        .and_then(|entry| crate::format::time::parse_iso_ms(&entry.timestamp))
        // In `toISOString()`'s form, which pi writes in headers, whatever the entry's spelling.
        .map(crate::format::time::format_iso_ms);
    drop(replay);

    // A valid header further down moves to the top.
    if let Some(later) = lines[first + 1..]
        .iter()
        .position(|line| is_header(&line.bytes))
        .map(|position| position + first + 1)
    {
        let header = lines.remove(later);
        fixes.push(fix(
            (header.line, header.offset_bytes),
            format!(
                "move the session header from line {} to the top (line {} is not a header)",
                header.line.unwrap_or(0),
                at.0.unwrap_or(0)
            ),
        ));
        lines.insert(first, header);
        return Ok(());
    }
    // A `session` object without a string id gets one.
    if let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(&lines[first].bytes)
        && object.get("type") == Some(&Value::String("session".into()))
    {
        object.insert("id".into(), Value::String(session_id.clone()));
        let text = serde_json::to_string(&object).map_err(|error| invalid(path, error))?;
        lines[first].bytes = text.into_bytes();
        fixes.push(fix(
            at,
            format!("give the session header the id {session_id} (it had no string id)"),
        ));
        return Ok(());
    }
    let timestamp = first_timestamp
        .unwrap_or_else(|| crate::format::time::format_iso_ms(crate::session::header::now_ms()));
    let header = encode_header(&session_id, &timestamp, cwd, None);
    let what = match serde_json::from_slice::<serde::de::IgnoredAny>(&lines[first].bytes) {
        Ok(_) => "the first line is not a session header",
        Err(_) => "the first line is not valid JSON (it is kept)",
    };
    fixes.push(fix(
        at,
        format!(
            "insert a version 3 header (id {session_id}, cwd {}) above line {}: {what}",
            crate::error::quoted(cwd),
            at.0.unwrap_or(0)
        ),
    ));
    lines.insert(
        first,
        PlanLine {
            bytes: header.into_bytes(),
            line: None,
            offset_bytes: None,
        },
    );
    Ok(())
}

fn join(lines: &[PlanLine]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(&line.bytes);
        bytes.push(b'\n');
    }
    bytes
}

fn invalid(path: &Path, error: serde_json::Error) -> Error {
    Error::InvalidInput {
        path: path.to_path_buf(),
        reason: format!("cannot re-serialise a line: {error}"),
    }
}

/// Migrates a version 1 or 2 log to version 3, in place.
fn migrate(path: &Path, lines: &mut [PlanLine], fixes: &mut Vec<Fix>) -> Result<()> {
    let Some(header_index) = lines.iter().position(|line| decides_header(&line.bytes)) else {
        return Ok(());
    };
    let version = match classify(
        &String::from_utf8_lossy(&lines[header_index].bytes),
        false,
        true,
    ) {
        Line::Header(header) => header.version,
        _ => return Ok(()),
    };
    if version >= crate::format::CURRENT_VERSION {
        return Ok(());
    }
    // The ids and tree parents treelog derives for the log as it is (v1 entries have none).
    let mut offsets = Vec::with_capacity(lines.len());
    let mut at = 0u64;
    for line in lines.iter() {
        offsets.push(at);
        at += line.bytes.len() as u64 + 1;
    }
    let replay = Session::open_storage(
        Box::new(MemoryStorage::new(path, join(lines))),
        SessionOptions::default(),
    )?;
    let mut by_offset: HashMap<u64, (String, Option<String>)> = HashMap::new();
    for entry in replay.entries()? {
        let entry = entry?;
        by_offset.insert(entry.offset_bytes, (entry.id, entry.tree_parent_id));
    }
    let session_id = replay.session_id().to_string();
    drop(replay);

    // pi's firstKeptEntryIndex counts every parsed record, header included.
    let mut record_ids: Vec<Option<String>> = Vec::new();
    let mut parsed: Vec<Option<Map<String, Value>>> = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let value = serde_json::from_slice::<Value>(&line.bytes).ok();
        // What `JSON.parse` reads, which counts: serde's `Value` refuses unpaired surrogate
        // escapes that `JSON.parse` keeps, json_scan does not.
        let text = std::str::from_utf8(&line.bytes).ok();
        if text.is_some_and(json_scan::is_valid) {
            let id = if index == header_index {
                Some(session_id.clone())
            } else {
                by_offset
                    .get(&offsets[index])
                    .map(|(id, _)| id.clone())
                    .or_else(|| {
                        let found = json_scan::scan(text?, &["id"]).ok()?;
                        Some(json_text_str(found.fields[0]?)?.into_owned())
                    })
            };
            record_ids.push(id);
        }
        parsed.push(match value {
            Some(Value::Object(object)) => Some(object),
            _ => None,
        });
    }

    let (mut ids_added, mut indexes_resolved, mut roles_renamed) = (0u64, 0u64, 0u64);
    for (index, object) in parsed.iter_mut().enumerate() {
        let Some(object) = object else {
            // A v1 entry that serde cannot hold (an unpaired surrogate escape) gets its id and
            // parentId set in its text, every other byte kept.
            if let Some((id, parent)) = by_offset.get(&offsets[index])
                && version < 2
                && let Ok(text) = std::str::from_utf8(&lines[index].bytes)
                && let Ok(found) = json_scan::scan(text, &["id"])
                && found.fields[0].is_none_or(|raw| !raw.starts_with('"'))
                && let Some(with_id) = with_field(text, "id", &json_string(id))
                && let Some(migrated) = relink(&with_id, parent.as_deref())
            {
                lines[index].bytes = migrated.into_bytes();
                ids_added += 1;
            }
            continue;
        };
        let mut changed = false;
        if index == header_index {
            object.insert(
                "version".into(),
                Value::from(crate::format::CURRENT_VERSION),
            );
            changed = true;
        } else if let Some((id, parent)) = by_offset.get(&offsets[index]) {
            if version < 2 && !object.get("id").is_some_and(Value::is_string) {
                object.insert("id".into(), Value::String(id.clone()));
                object.insert(
                    "parentId".into(),
                    parent.clone().map_or(Value::Null, Value::String),
                );
                ids_added += 1;
                changed = true;
            }
            if let Some(kept_index) = object.get("firstKeptEntryIndex").and_then(Value::as_u64) {
                let kept = record_ids.get(kept_index as usize).cloned().flatten();
                if let Some(kept) = kept {
                    object.shift_remove("firstKeptEntryIndex");
                    object.insert("firstKeptEntryId".into(), Value::String(kept));
                    indexes_resolved += 1;
                    changed = true;
                }
            }
            if let Some(Value::Object(message)) = object.get_mut("message")
                && message.get("role") == Some(&Value::String("hookMessage".into()))
            {
                message.insert("role".into(), Value::String("custom".into()));
                roles_renamed += 1;
                changed = true;
            }
        }
        if changed {
            let text = serde_json::to_string(&object).map_err(|error| invalid(path, error))?;
            lines[index].bytes = text.into_bytes();
        }
    }
    let header = &lines[header_index];
    let mut description = format!("migrate the log from version {version} to 3");
    let mut details = Vec::new();
    if ids_added > 0 {
        details.push(format!("ids and parentIds for {ids_added} entries"));
    }
    if indexes_resolved > 0 {
        details.push(format!(
            "{indexes_resolved} firstKeptEntryIndex to firstKeptEntryId"
        ));
    }
    if roles_renamed > 0 {
        details.push(format!("{roles_renamed} hookMessage roles to custom"));
    }
    if !details.is_empty() {
        description.push_str(&format!(": {}", details.join(", ")));
    }
    fixes.push(fix((header.line, header.offset_bytes), description));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Plan {
        plan_repair(Path::new("/nowhere/log.jsonl"), text.as_bytes(), "/cwd").expect("plan")
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#;
    const ENTRY: &str = r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x","timestamp":1}}"#;

    /// A healthy log needs nothing, and its content is left exactly as it is.
    #[test]
    fn healthy_log_is_untouched() {
        let text = format!("{HEADER}\n{ENTRY}\n");
        let plan = plan(&text);
        assert!(plan.is_empty());
        assert_eq!(plan.content, text.as_bytes());
    }

    /// A header further down moves to the top; no line is lost.
    #[test]
    fn later_header_moves_up() {
        let plan = plan(&format!("{ENTRY}\n{HEADER}\n"));
        assert_eq!(plan.fixes.len(), 1);
        assert_eq!(plan.content, format!("{HEADER}\n{ENTRY}\n").as_bytes());
    }

    /// A session record without an id keeps its fields and gains an id.
    #[test]
    fn header_without_id_gets_one() {
        let plan = plan(&format!(
            "{{\"type\":\"session\",\"version\":3,\"cwd\":\"/y\"}}\n{ENTRY}\n"
        ));
        let first = String::from_utf8(plan.content).expect("UTF-8");
        let header: Value =
            serde_json::from_str(first.lines().next().expect("a line")).expect("JSON");
        assert_eq!(header["cwd"], "/y");
        assert!(header["id"].is_string());
    }

    /// A v2 log keeps its ids; only roles and the version change.
    #[test]
    fn v2_migration() {
        let header = r#"{"type":"session","version":2,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#;
        let hook = r#"{"type":"message","id":"h","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"hookMessage","content":"x","timestamp":1}}"#;
        let plan = plan(&format!("{header}\n{hook}\n"));
        let text = String::from_utf8(plan.content).expect("UTF-8");
        assert_eq!(
            text,
            format!(
                "{}\n{}\n",
                header.replace("\"version\":2", "\"version\":3"),
                hook.replace("hookMessage", "custom")
            )
        );
    }
}
