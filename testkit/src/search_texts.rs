//! The brute-force side of the search tests (tests/it/search.rs, tools/tests/it/search.rs): every
//! entry's searchable text read straight from the logs, line by line, without the index.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use treelog::search;

/// One entry with searchable text, where it stands and what it says.
pub struct EntryText {
    pub path: PathBuf,
    /// The log's key relative to the searched directory (`/`-separated), as a hit names it.
    pub key: String,
    /// 1-based.
    pub line: u64,
    pub id: String,
    pub text: String,
}

/// Every entry with searchable text in the complete lines (up to the last `\n`) of the logs
/// under `dir`; a version-1 log's entries without ids are read as pi reads them.
pub fn entry_texts(dir: &Path) -> Vec<EntryText> {
    let mut entries = Vec::new();
    for log in search::logs_under(dir).unwrap() {
        let bytes = std::fs::read(&log.path).unwrap();
        let complete = bytes
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        let mut legacy_v1 = None;
        for (n, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
            let Ok(text) = std::str::from_utf8(line) else {
                continue;
            };
            if legacy_v1.is_none() && !text.trim().is_empty() {
                legacy_v1 = Some(search::header_version(text) == Some(1));
            }
            if let Some(found) = search::extract(text, legacy_v1.unwrap_or(false)) {
                entries.push(EntryText {
                    path: log.path.clone(),
                    key: log.key.clone(),
                    line: n as u64 + 1,
                    id: found.id,
                    text: found.text,
                });
            }
        }
    }
    entries
}

/// Every entry's text with its log's context edits applied, read here line by line
/// (format-spec/search.md §2): the latest edit naming an entry's id, later in the log than
/// the entry, removes it, or gives a user, assistant or tool result message or a custom
/// message its replacement's text (none when that is empty).
pub fn followed_entry_texts(dir: &Path) -> Vec<EntryText> {
    /// A log's lines, and its latest edit of each target id: (line, replacement).
    type LogEdits = (Vec<String>, HashMap<String, (u64, Option<String>)>);
    let mut logs: HashMap<PathBuf, LogEdits> = HashMap::new();
    let mut entries = entry_texts(dir);
    entries.retain_mut(|entry| {
        let (lines, edits) = logs.entry(entry.path.clone()).or_insert_with(|| {
            let lines: Vec<String> = String::from_utf8_lossy(&std::fs::read(&entry.path).unwrap())
                .lines()
                .map(str::to_owned)
                .collect();
            let mut edits = HashMap::new();
            for (at, line) in lines.iter().enumerate() {
                if let Some((target, replacement)) = search::context_edit(line) {
                    edits.insert(target, (at as u64 + 1, replacement));
                }
            }
            (lines, edits)
        });
        let Some((edit_line, replacement)) = edits.get(&entry.id).filter(|_| !entry.id.is_empty())
        else {
            return true;
        };
        if *edit_line <= entry.line {
            return true;
        }
        let Some(replacement) = replacement else {
            return false;
        };
        let found = search::extract(&lines[entry.line as usize - 1], false).unwrap();
        let replaceable = found.kind == treelog::EntryKind::CustomMessage
            || (found.kind == treelog::EntryKind::Message
                && matches!(
                    found.role.as_deref(),
                    Some("user" | "assistant" | "toolResult")
                ));
        if !replaceable {
            return true;
        }
        entry.text = replacement.clone();
        !entry.text.is_empty()
    });
    entries
}
