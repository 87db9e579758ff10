//! Regression: when writing the index failed (a damaged sidecar whose allocator state only a
//! read-write open reads), the error escaped from the append that triggered the flush, after
//! the entry was already in the log: a caller would retry and append it twice. Index write
//! failures now leave the append successful; the handle answers from memory and the next open
//! rebuilds (or, where the sidecar path cannot hold a file, replays) the index.

use treelog::{IndexState, Session, SessionOptions, sidecar_path};

/// The sidecar path becomes a directory after the open: every index write fails, no append does.
#[test]
fn appends_survive_an_unwritable_index() {
    let (_dir, path) = treelog_testkit::indexed_sample();

    let mut session = Session::open(&path, SessionOptions::default()).expect("open");
    std::fs::remove_file(sidecar_path(&path)).expect("remove sidecar");
    std::fs::create_dir(sidecar_path(&path)).expect("a directory where the sidecar was");

    let mut ids = Vec::new();
    for index in 0..3 {
        let message = format!(r#"{{"role":"user","content":"after {index}","timestamp":1}}"#);
        ids.push(
            session
                .append_message(&message)
                .expect("the append succeeds although the index cannot be written"),
        );
    }
    session
        .sync()
        .expect("sync fsyncs the log; the index failure is not an error");
    assert_eq!(
        session.leaf_id().unwrap().as_deref(),
        ids.last().map(String::as_str)
    );
    drop(session);

    let reopened = Session::open(&path, SessionOptions::default()).expect("reopen");
    assert!(
        matches!(
            reopened.index_state(),
            IndexState::Unindexed { .. } | IndexState::Rebuilt { .. }
        ),
        "{:?}",
        reopened.index_state()
    );
    let path_ids = reopened.path_ids(None).unwrap();
    assert_eq!(
        &path_ids[path_ids.len() - 3..],
        ids.as_slice(),
        "each append is in the log exactly once"
    );
    let count = std::fs::read_to_string(&path)
        .unwrap()
        .matches("\"after ")
        .count();
    assert_eq!(count, 3);
}
