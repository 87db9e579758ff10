//! Regression: a line whose indexing failed part-way (here: its parent's record is damaged on
//! disk, which a quick open does not read) was counted as indexed all the same. A later
//! catch-up went on after it, so the index silently lacked the line, and a flush could have
//! written that gap with valid hashes. Now the store stops indexing and writing after such a
//! failure, and the session rebuilds the index from the log (format-spec/index.md §3, "Damage
//! found by a read"): the catch-up succeeds with every line, none skipped.

use std::io::Write;

#[test]
fn failed_apply_is_not_skipped() {
    let dir = treelog_testkit::scratch_dir();
    let path = dir.path().join("log.jsonl");
    let mut session = treelog_testkit::open(&path);
    let ids: Vec<String> = (0..300)
        .map(|n| {
            session
                .append_message(&format!(r#"{{"role":"user","content":"m{n}"}}"#))
                .expect("append")
        })
        .collect();
    session.close().expect("close");
    // The log was created by that session, without a sidecar: this open builds one.
    drop(treelog_testkit::open(&path));
    // The page of the third entry's record (seq 2: the header line has none) gets an unknown
    // id mode (its second byte), so reading its links fails.
    treelog_testkit::tamper(&path, |txn| {
        treelog_testkit::tamper_page(txn, 2, |_, page| page[1] = 0xEE)
    });
    let sidecar_before = std::fs::read(treelog::sidecar_path(&path)).expect("sidecar");

    let mut session = treelog_testkit::open(&path);
    // Another process appends a child of the damaged entry, then a child of the last one.
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open log");
    writeln!(
        log,
        r#"{{"type":"message","id":"aaaa0001","parentId":"{}","timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"x"}}}}"#,
        ids[2]
    )
    .expect("append");
    writeln!(
        log,
        r#"{{"type":"message","id":"aaaa0002","parentId":"{}","timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"y"}}}}"#,
        ids[299]
    )
    .expect("append");
    drop(log);

    // The page was damaged in place: its seal fails when the catch-up reads the parent, and
    // the session rebuilds the index from the log, with both lines.
    session.refresh().expect("rebuilt from the log");
    assert!(matches!(
        session.index_state(),
        treelog::IndexState::Rebuilt { damaged: true, .. }
    ));
    assert_eq!(
        treelog_testkit::answers(&session).expect("answers"),
        treelog_testkit::replay(&path)
    );
    assert!(session.entry("aaaa0001").expect("entry").is_some());
    session
        .append_message(r#"{"role":"user","content":"z"}"#)
        .expect("append after the rebuild");
    session.close().expect("close");
    // The damaged sidecar was replaced, and the next open agrees with a replay.
    assert_ne!(
        std::fs::read(treelog::sidecar_path(&path)).expect("sidecar"),
        sidecar_before
    );
    let reopened = treelog_testkit::open(&path);
    assert!(reopened.entry("aaaa0001").expect("entry").is_some());
    assert_eq!(
        treelog_testkit::answers(&reopened).expect("answers"),
        treelog_testkit::replay(&path)
    );
}
