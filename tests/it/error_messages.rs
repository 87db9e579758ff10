//! The text of every kind of `treelog::Error`, pinned: each says what happened in the user's words,
//! names the file, and says what to do where there is something to do; none carries Rust's debug
//! text (`Some(..)`, `Os { .. }`) or the operating system's error numbers. The kinds a test can
//! bring about through the API are brought about that way; the rest are built and displayed.

use std::io;
use std::path::PathBuf;

use treelog::{Error, OnConflict, Session, SessionOptions};
use treelog_testkit::hooked_storage::HookedStorage;

fn user(text: &str) -> String {
    format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#)
}

/// Checks that `message` is in the user's words: no Rust debug text, no errno.
fn assert_plain(message: &str) {
    for leak in ["Some(", "None", "os error", "Os {", "kind:"] {
        assert!(!message.contains(leak), "{leak:?} in {message}");
    }
}

/// Each kind of error as built by the library, and the exact line it prints.
#[test]
fn every_error_kind_reads_as_pinned() {
    let path = PathBuf::from("/home/user/s.jsonl");
    let cases: Vec<(Error, &str)> = vec![
        (
            Error::Io {
                path: path.clone(),
                operation: "append to the log",
                source: io::Error::from_raw_os_error(13),
            },
            "/home/user/s.jsonl: cannot append to the log: permission denied (check the permissions of the file and of its directory)",
        ),
        (
            Error::Io {
                path: path.clone(),
                operation: "open the log",
                source: io::Error::from_raw_os_error(2),
            },
            "/home/user/s.jsonl: cannot open the log: no such file or directory",
        ),
        (
            Error::Io {
                path: path.clone(),
                operation: "read the log",
                source: io::Error::from_raw_os_error(21),
            },
            "/home/user/s.jsonl: cannot read the log: is a directory",
        ),
        (
            Error::Io {
                path: path.clone(),
                operation: "sync the log to disk",
                source: io::Error::from_raw_os_error(28),
            },
            "/home/user/s.jsonl: cannot sync the log to disk: no space left on the device",
        ),
        (
            Error::Io {
                path: path.clone(),
                operation: "read the log",
                source: io::Error::from(io::ErrorKind::UnexpectedEof),
            },
            "/home/user/s.jsonl: cannot read the log: the file ended before the bytes expected",
        ),
        (
            Error::Index {
                path: PathBuf::from("/home/user/s.jsonl.treelog"),
                reason: "the id page at 3 does not cover its keys".into(),
            },
            "/home/user/s.jsonl.treelog: index: the id page at 3 does not cover its keys",
        ),
        (
            Error::LogChanged {
                path: path.clone(),
                offset_bytes: 4096,
                reason: "crc mismatch".into(),
            },
            "/home/user/s.jsonl: byte 4096: the log changed under the index (crc mismatch); reopen the session",
        ),
        (
            Error::EntryNotFound {
                path: path.clone(),
                id: "ab\"cd".into(),
            },
            r#"/home/user/s.jsonl: no entry has the id "ab\"cd""#,
        ),
        (
            Error::Conflict {
                path: path.clone(),
                leaf: Some("c2fab1df".into()),
                their_id: "09cef732".into(),
            },
            "/home/user/s.jsonl: another writer appended entry 09cef732 after this session's leaf c2fab1df; nothing was written (refresh the session to append after their entries, or branch explicitly, then append again)",
        ),
        (
            Error::Conflict {
                path: path.clone(),
                leaf: None,
                their_id: "09cef732".into(),
            },
            "/home/user/s.jsonl: another writer appended entry 09cef732 after the start of this session; nothing was written (refresh the session to append after their entries, or branch explicitly, then append again)",
        ),
        (
            Error::Poisoned {
                path: path.clone(),
                reason: "a write failed: no space left on the device".into(),
            },
            "/home/user/s.jsonl: writes refused after an earlier I/O failure (a write failed: no space left on the device); reopen the session",
        ),
        (
            Error::AppendRefused {
                path: path.clone(),
                reason: "the log is version 1".into(),
            },
            "/home/user/s.jsonl: the log is version 1; nothing was written",
        ),
        (
            Error::InvalidInput {
                path: path.clone(),
                reason: "the message is not valid JSON".into(),
            },
            "/home/user/s.jsonl: the message is not valid JSON",
        ),
    ];
    for (error, expected) in cases {
        let text = error.to_string();
        assert_eq!(text, expected);
        assert_plain(&text);
    }
}

/// A conflict met by two handles names both ids, the other writer's and this handle's leaf.
#[test]
fn conflict_names_both_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let options = SessionOptions {
        on_conflict: OnConflict::Fail,
        ..SessionOptions::default()
    };
    let mut mine = Session::open(&path, options.clone()).unwrap();
    let leaf = mine.append_message(&user("first")).unwrap();
    let mut theirs = Session::open(&path, options).unwrap();
    let their_id = theirs.append_message(&user("theirs")).unwrap();
    let error = mine.append_message(&user("mine")).unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "{}: another writer appended entry {their_id} after this session's leaf {leaf}; nothing was written (refresh the session to append after their entries, or branch explicitly, then append again)",
            path.display()
        )
    );
}

/// Errors a caller meets through the API: an unknown id, a log treelog will not append to,
/// input that is not JSON, a log that is a directory.
#[test]
fn api_errors_read_as_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = Session::open(&path, SessionOptions::default()).unwrap();
    session.append_message(&user("hello")).unwrap();
    let shown = |error: Error| {
        let text = error.to_string();
        assert_plain(&text);
        text.replace(&dir.path().display().to_string(), "DIR")
    };

    assert_eq!(
        shown(session.branch("nope").unwrap_err()),
        r#"DIR/s.jsonl: no entry has the id "nope""#
    );
    assert_eq!(
        shown(session.append_message("{not json").unwrap_err()),
        "DIR/s.jsonl: message is not valid JSON: key must be a string at line 1 column 2"
    );

    let headerless = dir.path().join("headerless.jsonl");
    std::fs::write(
        &headerless,
        "{\"type\":\"message\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n",
    )
    .unwrap();
    let mut session = Session::open(&headerless, SessionOptions::default()).unwrap();
    let refused = shown(session.append_message(&user("more")).unwrap_err());
    assert!(
        refused.starts_with("DIR/headerless.jsonl: the log has no session header")
            && refused
                .contains("`treelog repair DIR/headerless.jsonl --apply` writes a header first")
            && refused.ends_with("; nothing was written"),
        "{refused}"
    );

    let directory = dir.path().join("a-directory.jsonl");
    std::fs::create_dir(&directory).unwrap();
    let error = match Session::open(&directory, SessionOptions::default()) {
        Ok(_) => panic!("a directory opened as a log"),
        Err(error) => error,
    };
    assert_eq!(
        shown(error),
        "DIR/a-directory.jsonl: cannot open the log: it is a folder, not a regular file: only files are read as logs"
    );
}

/// A failed write says why in words, and the handle then refuses writes, saying why and what
/// to do.
#[test]
fn failed_write_then_poisoned() {
    let storage =
        HookedStorage::new("/w/s.jsonl", Vec::new()).failing_appends(io::ErrorKind::StorageFull);
    let mut session = Session::open_storage(Box::new(storage), SessionOptions::default()).unwrap();
    let first = session
        .append_message(&user("one"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        first,
        "/w/s.jsonl: cannot append to the log: no space left on the device"
    );
    let then = session
        .append_message(&user("two"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        then,
        "/w/s.jsonl: writes refused after an earlier I/O failure (a write failed: no space left on the device); reopen the session"
    );
    assert_plain(&first);
    assert_plain(&then);
}
