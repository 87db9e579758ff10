//! A search cleared whatever a symlinked `.treelog-search` (or `search-<key>` under an index
//! directory) pointed to, every file and folder but one named `lock`, and wrote tantivy's files
//! there; the index's files were as readable as the folder's defaults, not as the logs. Found by
//! trying the CLI as someone who may write the searched folder would. Now the link is set
//! aside (renamed, never followed), a fresh private index made beside it, and the index gets
//! the permissions of its logs at most.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use treelog::search::{self, Branches, Filters, Quiet, SearchOptions, SortOrder};

fn options(index_dir: Option<&Path>) -> SearchOptions {
    SearchOptions {
        filters: Filters::default(),
        limit: 100,
        sort: SortOrder::Score,
        index_dir: index_dir.map(Path::to_path_buf),
        index_write: true,
        branches: Branches::All,
        include_edited: false,
    }
}

/// A log of a header and one message holding `word`.
fn write_log(path: &Path, word: &str) {
    let header = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let message = format!(
        r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"find {word} here","timestamp":1}}}}"#
    );
    fs::write(path, format!("{header}\n{message}\n")).unwrap();
}

/// A folder with a file and a subfolder that a search must leave alone.
fn victim(root: &Path) -> std::path::PathBuf {
    let victim = root.join("victim");
    fs::create_dir_all(victim.join("sub")).unwrap();
    fs::write(victim.join("important.txt"), "keep me").unwrap();
    fs::write(victim.join("sub/nested.txt"), "keep me too").unwrap();
    victim
}

fn assert_untouched(victim: &Path) {
    let mut names: Vec<_> = fs::read_dir(victim)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["important.txt", "sub"],
        "the linked folder was written"
    );
    assert_eq!(
        fs::read_to_string(victim.join("important.txt")).unwrap(),
        "keep me"
    );
    assert_eq!(
        fs::read_to_string(victim.join("sub/nested.txt")).unwrap(),
        "keep me too"
    );
}

/// A symlinked `.treelog-search` is set aside, not cleared: the folder it names keeps every
/// file, the search still finds the hit, and the new index is a real folder.
#[test]
fn symlinked_search_folder_is_set_aside() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions");
    fs::create_dir(&sessions).unwrap();
    write_log(&sessions.join("a.jsonl"), "needle");
    let victim = victim(root.path());
    symlink(&victim, sessions.join(search::INDEX_DIR_NAME)).unwrap();
    let query = search::parse("needle").unwrap();
    let hits = search::search(&sessions, &query, &options(None), &Quiet).unwrap();
    assert_eq!(hits.len(), 1);
    assert_untouched(&victim);
    let index = fs::symlink_metadata(sessions.join(search::INDEX_DIR_NAME)).unwrap();
    assert!(index.is_dir() && !index.file_type().is_symlink());
    let aside: Vec<_> = fs::read_dir(&sessions)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| fs::symlink_metadata(path).unwrap().file_type().is_symlink())
        .collect();
    assert_eq!(aside.len(), 1, "the link is kept, renamed aside");
    assert_eq!(fs::read_link(&aside[0]).unwrap(), victim);
}

/// The same under an index directory: a symlinked `search-<key>` is set aside.
#[test]
fn symlinked_search_folder_in_index_dir_is_set_aside() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions");
    let index_dir = root.path().join("index");
    fs::create_dir_all(&sessions).unwrap();
    fs::create_dir_all(&index_dir).unwrap();
    write_log(&sessions.join("a.jsonl"), "needle");
    let victim = victim(root.path());
    symlink(&victim, search::index_path(&sessions, Some(&index_dir))).unwrap();
    let query = search::parse("needle").unwrap();
    let hits = search::search(&sessions, &query, &options(Some(&index_dir)), &Quiet).unwrap();
    assert_eq!(hits.len(), 1);
    assert_untouched(&victim);
}

/// The index of 0600 logs is a 0700 folder of files no more readable than 0600, and the
/// logs' sidecars are 0600 too.
#[test]
fn index_of_private_logs_is_private() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions");
    fs::create_dir(&sessions).unwrap();
    fs::set_permissions(&sessions, fs::Permissions::from_mode(0o755)).unwrap();
    let log = sessions.join("a.jsonl");
    write_log(&log, "needle");
    fs::set_permissions(&log, fs::Permissions::from_mode(0o600)).unwrap();
    let query = search::parse("needle").unwrap();
    search::search(&sessions, &query, &options(None), &Quiet).unwrap();
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let index = sessions.join(search::INDEX_DIR_NAME);
    assert_eq!(mode(&index), 0o700);
    for entry in fs::read_dir(&index).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            assert_eq!(
                mode(&path) & 0o077,
                0,
                "{} is readable by others",
                path.display()
            );
        }
    }
    treelog::Session::open(&log, Default::default())
        .unwrap()
        .close()
        .unwrap();
    assert_eq!(mode(&treelog::sidecar_path(&log)), 0o600);
}
