//! The brute-force side of the search tests (tests/search.rs, tools/tests/search.rs): every
//! entry's searchable text read straight from the logs, line by line, without the index.

// Each test binary reads the fields it needs.
#![allow(dead_code)]

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
