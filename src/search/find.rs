//! Finding the logs a search covers: every `*.jsonl` file under a directory (the index's own
//! directory and symlinked directories are not entered), each with the size and mtime the
//! refresh compares with the catalog, taken once while walking.

use std::fs::{self, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::error::SearchError;
use super::store::INDEX_DIR_NAME;

/// Directory levels searched below the searched directory.
const DIRECTORY_DEPTH_MAX: usize = 32;

/// A log found under the searched directory, with its size and mtime when it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundLog {
    /// `/`-separated path relative to the searched directory: its key in the catalog.
    pub key: String,
    pub path: PathBuf,
    pub size_bytes: u64,
    /// Modification time in ns since the Unix epoch (0 when the system cannot tell).
    pub modified_ns: u128,
    /// Its permission bits: the search index holds its text, and is no more readable.
    pub mode: u32,
}

/// The logs under `dir`, sorted by key. A subdirectory that cannot be read is an error: a
/// search that silently skipped it would drop its logs from the index. A log that vanishes
/// while the directory is read is not found.
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
                continue;
            }
            if !name.ends_with(".jsonl") {
                continue;
            }
            // A regular file is stat'ed relative to its directory (`DirEntry::metadata`); a
            // symlink is followed, and kept when it leads to a regular file.
            let metadata = if file_type.is_symlink() {
                fs::metadata(entry.path())
            } else {
                entry.metadata()
            };
            match metadata {
                Ok(metadata) if metadata.is_file() => found.push(FoundLog {
                    key,
                    path: entry.path(),
                    size_bytes: metadata.len(),
                    modified_ns: modified_ns(&metadata),
                    mode: metadata.mode() & 0o7777,
                }),
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(SearchError::io(
                        entry.path(),
                        "read the size and time of",
                        error,
                    ));
                }
            }
        }
    }
    found.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(found)
}

/// The log at `path`, named `key` in its directory's catalog.
pub fn log_at(path: &Path, key: String) -> Result<FoundLog, SearchError> {
    let metadata = fs::metadata(path).map_err(|error| SearchError::io(path, "open", error))?;
    Ok(FoundLog {
        key,
        path: path.to_path_buf(),
        size_bytes: metadata.len(),
        modified_ns: modified_ns(&metadata),
        mode: metadata.mode() & 0o7777,
    })
}

/// The modification time of `metadata` in ns since the Unix epoch, 0 when it cannot be told.
fn modified_ns(metadata: &Metadata) -> u128 {
    metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_nanos())
}
