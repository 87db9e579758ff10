//! An index written by the previous schema (7, before pi 1.6's entries were entries) is never
//! read: its `usage` and `context_edit` lines were opaque records there, so trusting it would
//! drop them from paths and leave edits unapplied. The open rebuilds it, and the answers are
//! pi 1.6's (tests/data/pi16-sample-300.oracle.json).

use std::path::{Path, PathBuf};

use serde_json::Value;
use treelog::{IndexState, SCHEMA_CHANGED_REASON, Session, SessionOptions};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A schema-7 sidecar beside its log is rebuilt on open (reason: the schema), the rebuilt
/// index answers as pi 1.6 does, and the next open finds it fresh.
#[test]
fn schema_7_sidecar_is_rebuilt_not_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("session.jsonl");
    std::fs::copy(data("pi16-sample-300.jsonl"), &log).expect("copy log");
    let sidecar = treelog::sidecar_path(&log);
    std::fs::copy(data("pi16-sample-300.schema7.treelog"), &sidecar).expect("copy sidecar");
    let mut permissions = std::fs::metadata(&sidecar).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&sidecar, permissions).unwrap();

    let oracle: Value = serde_json::from_str(
        &std::fs::read_to_string(data("pi16-sample-300.oracle.json")).expect("oracle"),
    )
    .expect("oracle is JSON");
    let session = Session::open(&log, SessionOptions::default()).expect("open");
    match session.index_state() {
        IndexState::Rebuilt { reason, .. } => assert_eq!(reason, SCHEMA_CHANGED_REASON),
        other => panic!("a schema-7 index must be rebuilt, not {other:?}"),
    }
    let path: Vec<Value> = session
        .path_ids(None)
        .unwrap()
        .into_iter()
        .map(Value::String)
        .collect();
    assert_eq!(Value::Array(path), oracle["path"]);
    let context: Value =
        serde_json::from_str(&session.build_context(None).unwrap().to_json()).unwrap();
    assert_eq!(context, oracle["context"]);
    assert_eq!(
        session.entry_count().unwrap(),
        oracle["entryCount"].as_u64().unwrap()
    );
    drop(session);
    let again = Session::open(&log, SessionOptions::default()).expect("reopen");
    assert!(
        matches!(again.index_state(), IndexState::Fresh),
        "{:?}",
        again.index_state()
    );
}
