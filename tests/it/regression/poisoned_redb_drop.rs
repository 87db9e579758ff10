//! Regression (found by the `open_log` fuzz target): on a sidecar with a damaged page, a redb
//! call failed inside redb while holding one of its locks; treelog caught that panic (as it
//! catches every redb panic), but dropping the session then dropped redb's `Database`, whose
//! `drop` unwraps the poisoned lock and panicked outside any guard, in the caller's drop.
//! The redb handle is now dropped under the same guard.
//!
//! redb panics at the first step only in builds without debug assertions (debug builds stop
//! earlier at a `debug_assert!`), so this test shows the bug under `cargo test --release`; the
//! fuzz target, which builds like a release build, found it.

use treelog::{Session, SessionOptions, sidecar_path};

/// The fuzz input: mode 3, then the xor patches and the log (see `treelog_testkit::fuzz::open_log`).
const INPUT: &[u8] = include_bytes!("../../../fuzz/corpus/open_log/regression-redb-poisoned-drop");

#[test]
fn dropping_a_session_on_a_damaged_sidecar_does_not_panic() {
    assert_eq!(INPUT[0] % 4, 3, "the input damages a built sidecar");
    let split = usize::from(u16::from_le_bytes([INPUT[1], INPUT[2]]));
    let body = &INPUT[3..];
    let (patches, log) = body.split_at(split.min(body.len()));

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("x.jsonl");
    std::fs::write(&path, log).expect("write log");
    drop(Session::open(&path, SessionOptions::default()).expect("build the index"));
    let sidecar = sidecar_path(&path);
    let mut bytes = std::fs::read(&sidecar).expect("read sidecar");
    for patch in patches.chunks_exact(5) {
        let offset = u32::from_le_bytes([patch[0], patch[1], patch[2], patch[3]]) as usize;
        let at = offset % bytes.len();
        bytes[at] ^= patch[4].max(1);
    }
    std::fs::write(&sidecar, bytes).expect("damage sidecar");

    // Every answer may fail; opening, asking and dropping must not panic.
    if let Ok(session) = Session::open(&path, SessionOptions::default()) {
        let _ = session.session_name();
        let _ = session.path_ids(None);
        let _ = session.build_context(None);
        let _ = session.labels();
        let _ = session.entries().map(|entries| entries.count());
        drop(session);
    }
    let rebuilt = Session::open(
        &path,
        SessionOptions {
            rebuild_index: true,
            ..SessionOptions::default()
        },
    )
    .expect("rebuilding open");
    let plain = Session::open(
        &path,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )
    .expect("index-free open");
    assert_eq!(
        rebuilt.path_ids(None).expect("path"),
        plain.path_ids(None).expect("path")
    );
}
