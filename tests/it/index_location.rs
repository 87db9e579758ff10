//! Where sidecars live (`SessionOptions::index_dir`, `index_write`; src/index/location.rs):
//! beside the log by default, in an index directory under a name keyed by the log's canonical
//! path (two logs never share one, a moved log is not confused with another), and never
//! written at all in read-only mode, whatever the open finds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use treelog::{IndexState, Session, SessionOptions};

const USER: &str = r#"{"role":"user","content":"hello","timestamp":1}"#;

/// Every file under `dir` with its bytes: equal snapshots mean nothing was written.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    files
}

/// A log of `entries` user messages at `path`, written without an index.
fn write_log(path: &Path, entries: usize) {
    let options = SessionOptions {
        use_index: false,
        ..SessionOptions::default()
    };
    let mut session = Session::open(path, options).unwrap();
    for _ in 0..entries {
        session.append_message(USER).unwrap();
    }
    session.close().unwrap();
}

/// A log `s.jsonl` of `entries` user messages in `dir` with its index built beside it: the
/// log's path and the sidecar's.
fn indexed_log(dir: &Path, entries: usize) -> (PathBuf, PathBuf) {
    let log = dir.join("s.jsonl");
    write_log(&log, entries);
    drop(Session::open(&log, SessionOptions::default()).unwrap());
    let sidecar = treelog::sidecar_path(&log);
    (log, sidecar)
}

/// Ends the log with a torn line, which `repair` cuts.
fn tear_tail(log: &Path) {
    let mut bytes = std::fs::read(log).unwrap();
    bytes.extend_from_slice(br#"{"type":"message","id":"tor"#);
    std::fs::write(log, &bytes).unwrap();
}

fn in_dir(dir: &Path) -> SessionOptions {
    SessionOptions {
        index_dir: Some(dir.to_path_buf()),
        ..SessionOptions::default()
    }
}

fn read_only(index_dir: Option<&Path>) -> SessionOptions {
    SessionOptions {
        index_dir: index_dir.map(Path::to_path_buf),
        index_write: false,
        ..SessionOptions::default()
    }
}

fn state_name(state: &IndexState) -> &'static str {
    match state {
        IndexState::Fresh => "fresh",
        IndexState::CaughtUp { .. } => "caught up",
        IndexState::Rebuilt { .. } => "rebuilt",
        IndexState::Unindexed { .. } => "unindexed",
    }
}

/// By default the sidecar is `<log>.treelog`, and `Session::sidecar` says so.
#[test]
fn default_sidecar_is_beside_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    write_log(&log, 2);
    let session = Session::open(&log, SessionOptions::default()).unwrap();
    assert_eq!(
        session.sidecar(),
        Some(treelog::sidecar_path(&log).as_path())
    );
    assert!(treelog::sidecar_path(&log).exists());
}

/// With an index directory the session folder gets nothing but the log, the sidecar is in
/// the directory (created on first use), and the next open finds it fresh there.
#[test]
fn index_dir_keeps_the_session_folder_untouched() {
    let sessions = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let index_dir = cache.path().join("treelog-index");
    let log = sessions.path().join("s.jsonl");
    write_log(&log, 3);
    let before = snapshot(sessions.path());

    let session = Session::open(&log, in_dir(&index_dir)).unwrap();
    assert_eq!(state_name(session.index_state()), "rebuilt");
    let sidecar = session.sidecar().expect("an index is used").to_path_buf();
    assert_eq!(sidecar.parent(), Some(index_dir.as_path()));
    assert_eq!(sidecar, treelog::sidecar_in_dir(&index_dir, &log));
    assert!(sidecar.exists());
    drop(session);
    assert_eq!(
        snapshot(sessions.path()),
        before,
        "nothing written beside the log"
    );

    let again = Session::open(&log, in_dir(&index_dir)).unwrap();
    assert_eq!(state_name(again.index_state()), "fresh");
    assert_eq!(again.entry_count().unwrap(), 3);
}

/// Two logs with the same file name in different folders get different sidecars; a log
/// reached through a symlink or a relative path gets the one of its canonical path.
#[test]
fn sidecar_names_are_keyed_by_the_canonical_path() {
    let root = tempfile::tempdir().unwrap();
    let index_dir = root.path().join("index");
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    write_log(&a.join("s.jsonl"), 1);
    write_log(&b.join("s.jsonl"), 2);
    let sidecar_a = treelog::sidecar_in_dir(&index_dir, &a.join("s.jsonl"));
    let sidecar_b = treelog::sidecar_in_dir(&index_dir, &b.join("s.jsonl"));
    assert_ne!(sidecar_a, sidecar_b);

    let link = root.path().join("link.jsonl");
    std::os::unix::fs::symlink(a.join("s.jsonl"), &link).unwrap();
    assert_eq!(treelog::sidecar_in_dir(&index_dir, &link), sidecar_a);
    let dotted = a.join("..").join("a").join("s.jsonl");
    assert_eq!(treelog::sidecar_in_dir(&index_dir, &dotted), sidecar_a);

    // Each answers for its own log.
    let count = |log: &Path| {
        Session::open(log, in_dir(&index_dir))
            .unwrap()
            .entry_count()
            .unwrap()
    };
    assert_eq!(
        (count(&a.join("s.jsonl")), count(&b.join("s.jsonl"))),
        (1, 2)
    );
    assert_eq!(count(&link), 1);
}

/// A log moved away gets a new sidecar; another log moved into its old path finds the old
/// sidecar but is not confused with the log that left: the index is checked against the bytes
/// and rebuilt.
#[test]
fn a_moved_log_is_not_confused_with_another() {
    let root = tempfile::tempdir().unwrap();
    let index_dir = root.path().join("index");
    let (first, moved, other) = (
        root.path().join("first.jsonl"),
        root.path().join("moved.jsonl"),
        root.path().join("other.jsonl"),
    );
    write_log(&first, 5);
    write_log(&other, 2);
    drop(Session::open(&first, in_dir(&index_dir)).unwrap());

    std::fs::rename(&first, &moved).unwrap();
    let session = Session::open(&moved, in_dir(&index_dir)).unwrap();
    assert_eq!(state_name(session.index_state()), "rebuilt");
    assert_eq!(session.entry_count().unwrap(), 5);
    drop(session);

    std::fs::rename(&other, &first).unwrap();
    let session = Session::open(&first, in_dir(&index_dir)).unwrap();
    assert_eq!(
        state_name(session.index_state()),
        "rebuilt",
        "the old index of this path describes another log"
    );
    assert_eq!(session.entry_count().unwrap(), 2);
}

/// Read-only without any index: nothing is created (not the sidecar, not the index
/// directory), the log is replayed, and appends still go to the log only.
#[test]
fn read_only_without_an_index_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let index_dir = root.path().join("index");
    for (name, index_dir) in [("a.jsonl", None), ("b.jsonl", Some(index_dir.as_path()))] {
        let log = root.path().join(name);
        write_log(&log, 2);
        let before = snapshot(root.path());
        let mut session = Session::open(&log, read_only(index_dir)).unwrap();
        assert_eq!(state_name(session.index_state()), "unindexed");
        assert_eq!(session.sidecar(), None);
        assert_eq!(session.entry_count().unwrap(), 2);
        session.build_context(None).unwrap();
        assert_eq!(snapshot(root.path()), before, "{index_dir:?}");
        let id = session.append_message(USER).unwrap();
        session.close().unwrap();
        let after = snapshot(root.path());
        assert_eq!(after.len(), before.len(), "only the log changed: {after:?}");
        assert!(after[&log].ends_with(b"\n") && after[&log].len() > before[&log].len());
        let reread = Session::open(&log, read_only(index_dir)).unwrap();
        assert_eq!(reread.leaf_id().unwrap(), Some(id));
    }
    assert!(!index_dir.exists());
}

/// Read-only with a valid index: it answers (caught up in memory when the log grew), and
/// the sidecar's bytes never change, even across appends and close.
#[test]
fn read_only_reads_a_valid_index_without_writing_it() {
    let root = tempfile::tempdir().unwrap();
    let (log, sidecar) = indexed_log(root.path(), 3);
    let sidecar_before = std::fs::read(&sidecar).unwrap();

    let session = Session::open(&log, read_only(None)).unwrap();
    assert_eq!(state_name(session.index_state()), "fresh");
    assert_eq!(session.sidecar(), Some(sidecar.as_path()));
    drop(session);

    write_log(&log, 2); // another writer appends, without the index
    let mut session = Session::open(&log, read_only(None)).unwrap();
    assert_eq!(state_name(session.index_state()), "caught up");
    assert_eq!(session.entry_count().unwrap(), 5);
    session.append_message(USER).unwrap();
    session.sync().unwrap();
    assert_eq!(session.entry_count().unwrap(), 6);
    session.close().unwrap();
    assert_eq!(std::fs::read(&sidecar).unwrap(), sidecar_before);
}

/// Read-only with a damaged index: it is not rebuilt (its bytes stay), the log answers.
#[test]
fn read_only_leaves_a_damaged_index_alone() {
    let root = tempfile::tempdir().unwrap();
    let (log, sidecar) = indexed_log(root.path(), 4);
    std::fs::write(&sidecar, b"not an index at all").unwrap();

    let session = Session::open(&log, read_only(None)).unwrap();
    assert_eq!(state_name(session.index_state()), "unindexed");
    assert_eq!(session.entry_count().unwrap(), 4);
    drop(session);
    assert_eq!(std::fs::read(&sidecar).unwrap(), b"not an index at all");
}

/// `verify` reports a damaged sidecar as `IndexDamaged` with index writes off too, as it does
/// when it rebuilds one (the read-only run reported it only in the unindexed reason), and the
/// read-only run leaves the sidecar's bytes as they were; a missing sidecar is no damage.
#[test]
fn read_only_verify_reports_a_damaged_index() {
    use treelog::verify::{ProblemKind, verify_log_with};
    let root = tempfile::tempdir().unwrap();
    let (log, sidecar) = indexed_log(root.path(), 4);
    let valid = std::fs::read(&sidecar).unwrap();
    let damages: [(&str, Option<Vec<u8>>, bool); 3] = [
        ("garbage", Some(b"not an index at all".to_vec()), true),
        ("cut in half", Some(valid[..valid.len() / 2].to_vec()), true),
        ("missing", None, false),
    ];
    for (name, bytes, damaged) in damages {
        let damaged_kinds = |options: &SessionOptions| -> Vec<ProblemKind> {
            match &bytes {
                Some(bytes) => std::fs::write(&sidecar, bytes).unwrap(),
                None => std::fs::remove_file(&sidecar).unwrap_or(()),
            }
            let report = verify_log_with(&log, false, options).unwrap();
            let kinds = report.problems.iter().map(|problem| problem.kind).collect();
            if !options.index_write {
                assert_eq!(
                    std::fs::read(&sidecar).ok(),
                    bytes,
                    "{name}: read-only wrote"
                );
            }
            kinds
        };
        let expected = if damaged {
            vec![ProblemKind::IndexDamaged]
        } else {
            vec![]
        };
        assert_eq!(
            damaged_kinds(&read_only(None)),
            expected,
            "{name}, read-only"
        );
        assert_eq!(
            damaged_kinds(&SessionOptions::default()),
            expected,
            "{name}, writable"
        );
    }
}

/// The library's listing and verification take the same options: read-only, they write
/// nothing; with an index directory, nothing beside the log. A repair applied with an index
/// directory deletes the sidecar there (the next open rebuilds it).
#[test]
fn listing_verify_and_repair_follow_the_options() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions");
    let index_dir = root.path().join("index");
    std::fs::create_dir_all(&sessions).unwrap();
    let log = sessions.join("s.jsonl");
    write_log(&log, 3);

    let before = snapshot(root.path());
    let info = treelog::listing::session_info_with(&log, &read_only(None)).unwrap();
    assert_eq!(info.message_count, 3);
    let report = treelog::verify::verify_log_with(&log, true, &read_only(None)).unwrap();
    assert!(report.is_clean());
    assert_eq!(snapshot(root.path()), before, "read-only: nothing written");

    treelog::listing::session_info_with(&log, &in_dir(&index_dir)).unwrap();
    treelog::verify::verify_log_with(&log, false, &in_dir(&index_dir)).unwrap();
    assert_eq!(
        snapshot(&sessions),
        before
            .into_iter()
            .filter(|(p, _)| p.starts_with(&sessions))
            .collect()
    );
    let sidecar = treelog::sidecar_in_dir(&index_dir, &log);
    assert!(sidecar.exists());

    tear_tail(&log);
    let outcome = treelog::repair::repair_file_with(&log, true, "/p", &in_dir(&index_dir)).unwrap();
    assert!(outcome.backup.is_some());
    assert!(
        !sidecar.exists(),
        "the repaired log's sidecar is deleted where it lives"
    );
}

/// A repair applied read-only replaces the log but leaves its sidecar's bytes as they were;
/// the next open checks the sidecar against the new log as always and answers right.
#[test]
fn read_only_repair_leaves_the_sidecar_alone() {
    let root = tempfile::tempdir().unwrap();
    let (log, sidecar) = indexed_log(root.path(), 3);
    let sidecar_before = std::fs::read(&sidecar).unwrap();
    tear_tail(&log);

    treelog::repair::repair_file_with(&log, true, "/p", &read_only(None)).unwrap();
    assert_eq!(std::fs::read(&sidecar).unwrap(), sidecar_before);
    let mut session = Session::open(&log, read_only(None)).unwrap();
    assert_eq!(session.entry_count().unwrap(), 3);
    assert_eq!(
        session.stats().map(|stats| stats.torn_tail_bytes).ok(),
        Some(0)
    );
}
