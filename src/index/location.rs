//! Where a log's sidecar index lives (the one place that decides it).
//!
//! - Beside the log (the default): `session.jsonl` is indexed by `session.jsonl.treelog`.
//! - In an index directory (`SessionOptions::index_dir`, the CLI's `--index-dir` or
//!   `TREELOG_INDEX_DIR`), for users who share or sync their session folders: the sidecar is
//!   `<dir>/<file name>-<key>.treelog`, `<key>` the first 16 hex digits of the blake3 hash of
//!   the log's canonical absolute path. Two logs never share a sidecar (their canonical paths
//!   differ), a log reached through a symlink or a relative path finds the same one, and a log
//!   moved elsewhere gets a new one (the old file is left behind, unused). A log moved *into*
//!   a path another log had is not confused with it either: an index answers only after it is
//!   checked against the log's bytes (header, length, hashes; format-spec/index.md §3), so the
//!   stale one is rebuilt.
//!
//! Invariant: the path is a pure function of the log's canonical path and the directory; no
//! file is created here.

use std::path::{Path, PathBuf};

/// File name suffix of the sidecar: `session.jsonl` is indexed by `session.jsonl.treelog`.
pub const SIDECAR_SUFFIX: &str = ".treelog";

/// Hex digits of the path hash in a sidecar's name in an index directory (64 bits: a
/// collision between two of one user's logs is out of reach).
pub(crate) const KEY_HEX_LEN: usize = 16;

/// The longest log file name kept readable in an index directory's sidecar name; a longer one
/// is left out (the key alone names the sidecar), so the name stays within the 255 bytes file
/// systems allow.
const FILE_NAME_KEPT_LEN_MAX: usize = 200;

/// The sidecar beside a log.
pub fn sidecar_path(log_path: &Path) -> PathBuf {
    let mut name = log_path.as_os_str().to_owned();
    name.push(SIDECAR_SUFFIX);
    name.into()
}

/// The sidecar of `log_path`: beside it, or in `index_dir` when one is given.
pub fn sidecar_for(log_path: &Path, index_dir: Option<&Path>) -> PathBuf {
    match index_dir {
        None => sidecar_path(log_path),
        Some(dir) => sidecar_in_dir(dir, log_path),
    }
}

/// The sidecar of `log_path` in the index directory `dir` (see the module docs).
pub fn sidecar_in_dir(dir: &Path, log_path: &Path) -> PathBuf {
    let canonical = canonical_path(log_path);
    let key = path_key(&canonical);
    let mut name = std::ffi::OsString::new();
    if let Some(file_name) = canonical.file_name()
        && file_name.len() <= FILE_NAME_KEPT_LEN_MAX
    {
        name.push(file_name);
        name.push("-");
    }
    name.push(&key);
    name.push(SIDECAR_SUFFIX);
    dir.join(name)
}

/// The first 16 hex digits of the blake3 hash of `canonical` (a path from
/// [`canonical_path`]): what tells apart, in an index directory, the caches of two files or
/// directories (the sidecars here, the search indexes of `search::index_path`).
pub(crate) fn path_key(canonical: &Path) -> String {
    let hash = blake3::hash(canonical.as_os_str().as_encoded_bytes());
    hash.to_hex()[..KEY_HEX_LEN].to_owned()
}

/// The log's canonical absolute path: symlinks and `..` resolved. A log not created yet is
/// named through its canonical directory (so that it keeps its sidecar once it exists); with
/// no directory either, the absolute path as given.
pub(crate) fn canonical_path(log_path: &Path) -> PathBuf {
    if let Ok(canonical) = std::fs::canonicalize(log_path) {
        return canonical;
    }
    let absolute = std::path::absolute(log_path).unwrap_or_else(|_| log_path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(file_name)) => match std::fs::canonicalize(parent) {
            Ok(parent) => parent.join(file_name),
            Err(_) => absolute,
        },
        _ => absolute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beside the log, the sidecar is the log's path plus `.treelog`.
    #[test]
    fn beside_the_log() {
        assert_eq!(
            sidecar_for(Path::new("/s/a.jsonl"), None),
            PathBuf::from("/s/a.jsonl.treelog")
        );
    }

    /// In a directory, the name keeps the log's file name and adds the key of its path.
    #[test]
    fn in_a_directory() {
        let sidecar = sidecar_for(Path::new("/nowhere/a.jsonl"), Some(Path::new("/cache")));
        let name = sidecar.file_name().unwrap().to_str().unwrap();
        assert_eq!(sidecar.parent(), Some(Path::new("/cache")));
        assert!(
            name.starts_with("a.jsonl-") && name.ends_with(".treelog"),
            "{name}"
        );
        assert_eq!(
            name.len(),
            "a.jsonl-".len() + KEY_HEX_LEN + SIDECAR_SUFFIX.len()
        );
    }

    /// A file name too long to keep is left out of the sidecar's name.
    #[test]
    fn long_file_names_are_left_out() {
        let long = format!("/nowhere/{}.jsonl", "x".repeat(FILE_NAME_KEPT_LEN_MAX));
        let sidecar = sidecar_in_dir(Path::new("/cache"), Path::new(&long));
        let name = sidecar.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), KEY_HEX_LEN + SIDECAR_SUFFIX.len(), "{name}");
    }
}
