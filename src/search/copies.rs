//! Folders of local copies that a search of sessions kept elsewhere (`openclaw://`, `s3://`)
//! reads as folders of logs: which folders, whether the search may write them, the address each
//! copy's hits are named by, and the temporary folder (if any) deleted after the search.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::error::SearchError;
use crate::fs_safe::PrivateTempDir;

/// One folder of copies to search, and how its hits are named.
pub(crate) struct Prepared {
    /// The folder, or one session's copy in it.
    pub(crate) path: PathBuf,
    /// Whether the search may write the folder's index and sidecars.
    pub(crate) index_write: bool,
    /// The address of each copy, by its path as the search of `path` names its hits
    /// (`path` joined with the copy's `/`-separated key, or `path` itself for one copy).
    pub(crate) addresses: HashMap<PathBuf, String>,
}

/// The folders an address's search covers, with the temporary folder (if any) that holds
/// them, deleted when this is dropped, and the lock (if any) held on the copies until then.
pub(crate) struct Materialized {
    pub(crate) searches: Vec<Prepared>,
    pub(crate) temporary: Option<PrivateTempDir>,
    pub(crate) lock: Option<fs::File>,
}

/// A fresh private temporary folder for copies of `kind` ([`PrivateTempDir`]: 0700, an
/// unpredictable name, removed when dropped or on a signal).
pub(crate) fn temporary_dir(kind: &str) -> Result<PrivateTempDir, SearchError> {
    PrivateTempDir::new(kind)
        .map_err(|error| SearchError::io(std::env::temp_dir(), "create a temporary folder", error))
}

/// `folder` joined with the `/`-separated `key`, as a directory search names the log `key`;
/// a part that could leave or hide in the folder (`..`, `.`, empty) is encoded
/// ([`crate::path_component::encode`]).
pub(crate) fn copy_path(folder: &Path, key: &str) -> PathBuf {
    key.split('/').fold(folder.to_path_buf(), |path, part| {
        path.join(&*crate::path_component::encode(part))
    })
}

/// Deletes `file` if it is there.
pub(crate) fn remove_if_present(file: &Path) -> Result<(), SearchError> {
    match fs::remove_file(file) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            Err(SearchError::io(file, "delete the stale copy", error))
        }
        _ => Ok(()),
    }
}
