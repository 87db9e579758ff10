//! Regression (found by the `open_log` fuzz target): a sidecar with a damaged redb page that
//! still passed the open checks made a later read panic inside redb ("range start index out of
//! range", btree_base.rs) while `session_name` looked up a record. Reads of the committed index
//! now turn a redb panic into `Error::Index`, as opening already did; a rebuild repairs.

use treelog::{Error, Session, SessionOptions, sidecar_path};

/// The fuzz input: mode 3, then the xor patches and the log (see `treelog_testkit::fuzz::open_log`).
const INPUT: &[u8] = include_bytes!("../../../fuzz/corpus/open_log/regression-redb-panic-escapes");

#[test]
fn damaged_index_page_is_an_error_not_a_panic() {
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

    // Each answer is either right or an error naming the index; none panics.
    let plain = Session::open(
        &path,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )
    .expect("index-free open");
    if let Ok(session) = Session::open(&path, SessionOptions::default()) {
        match session.session_name() {
            Ok(name) => assert_eq!(name, plain.session_name().expect("name")),
            Err(error) => assert!(matches!(error, Error::Index { .. }), "{error:?}"),
        }
        let _ = session.path_ids(None);
        let _ = session.build_context(None);
        let _ = session.entries().map(|entries| entries.count());
    }

    // A rebuild gives the index-free answers.
    let rebuilt = Session::open(
        &path,
        SessionOptions {
            rebuild_index: true,
            ..SessionOptions::default()
        },
    )
    .expect("rebuilding open");
    assert_eq!(
        rebuilt.session_name().expect("name"),
        plain.session_name().expect("name")
    );
    assert_eq!(
        rebuilt.path_ids(None).expect("path"),
        plain.path_ids(None).expect("path")
    );
}
