//! Regression: a line whose indexing failed part-way (here: its parent's record is damaged on
//! disk, which a quick open does not read) was counted as indexed all the same. A later
//! catch-up went on after it, so the index silently lacked the line, and a flush could have
//! written that gap with valid hashes. Now the store stops indexing and writing after such a
//! failure: every later catch-up and append fails until the log is opened again.

mod common;

use std::io::Write;

use treelog::Error;

#[test]
fn failed_apply_is_not_skipped() {
    let dir = common::scratch_dir();
    let path = dir.path().join("log.jsonl");
    let mut session = common::open(&path);
    let ids: Vec<String> = (0..300)
        .map(|n| {
            session
                .append_message(&format!(r#"{{"role":"user","content":"m{n}"}}"#))
                .expect("append")
        })
        .collect();
    session.close().expect("close");
    // The log was created by that session, without a sidecar: this open builds one.
    drop(common::open(&path));
    // The page of the third entry's record (seq 2: the header line has none) gets an unknown
    // id mode (its second byte), so reading its links fails.
    common::tamper(&path, |txn| {
        common::tamper_page(txn, 2, |_, page| page[1] = 0xEE)
    });
    let sidecar_before = std::fs::read(treelog::sidecar_path(&path)).expect("sidecar");

    let mut session = common::open(&path);
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

    let first = session
        .refresh()
        .expect_err("the damaged parent cannot be read");
    assert!(matches!(first, Error::Index { .. }), "{first:?}");
    // The failed line is not skipped: the next catch-up and append fail too.
    let again = session.refresh().expect_err("still failed");
    assert!(matches!(again, Error::Index { .. }), "{again:?}");
    assert!(
        session
            .append_message(r#"{"role":"user","content":"z"}"#)
            .is_err()
    );
    let _ = session.close();
    // Nothing was written over the committed index.
    assert_eq!(
        std::fs::read(treelog::sidecar_path(&path)).expect("sidecar"),
        sidecar_before
    );
    // Opened again, the catch-up meets the damage, rebuilds, and both lines are there.
    let reopened = common::open(&path);
    assert!(reopened.entry("aaaa0001").expect("entry").is_some());
    assert_eq!(
        common::answers(&reopened).expect("answers"),
        common::replay(&path)
    );
}
