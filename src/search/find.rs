//! Finding the logs a search covers: every `*.jsonl` file under a directory (the index's own
//! directory and symlinked directories are not entered).

use std::fs;
use std::path::{Path, PathBuf};

use super::error::SearchError;
use super::store::INDEX_DIR_NAME;

/// Directory levels searched below the searched directory.
const DIRECTORY_DEPTH_MAX: usize = 32;

/// A log found under the searched directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundLog {
    /// `/`-separated path relative to the searched directory: its key in the catalog.
    pub key: String,
    pub path: PathBuf,
}

/// The logs under `dir`, sorted by key. A subdirectory that cannot be read is an error: a
/// search that silently skipped it would drop its logs from the index.
pub fn logs_under(dir: &Path) -> Result<Vec<FoundLog>, SearchError> {
    let mut found = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new(), 0)];
    while let Some((at, prefix, depth)) = pending.pop() {
        let entries =
            fs::read_dir(&at).map_err(|error| SearchError::io(&at, "read the directory", error))?;
        for entry in entries {
            let entry = entry.map_err(|error| SearchError::io(&at, "read the directory", error))?;
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                // A name that is not UTF-8 cannot be a catalog key; such logs are not searched.
                continue;
            };
            let key = format!("{prefix}{name}");
            if file_type.is_dir() {
                if name != INDEX_DIR_NAME && depth < DIRECTORY_DEPTH_MAX {
                    pending.push((entry.path(), format!("{key}/"), depth + 1));
                }
            } else if name.ends_with(".jsonl")
                && fs::metadata(entry.path()).is_ok_and(|metadata| metadata.is_file())
            {
                found.push(FoundLog {
                    key,
                    path: entry.path(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(found)
}
