//! Differential tests against what pi 0.73.1 derives from a transcript it wrote itself
//! (tests/data/pi-sample-200.oracle.json): context, path, tree, labels, header, leaf, name.

use std::path::{Path, PathBuf};

use serde_json::Value;
use treelog::{IndexState, Session, SessionOptions};

fn oracle() -> Value {
    let text =
        std::fs::read_to_string(data("pi-sample-200.oracle.json")).expect("oracle file is bundled");
    serde_json::from_str(&text).expect("oracle is JSON")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A private copy of the bundled transcript, so that sidecars are written in a temp dir.
fn sample_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sample.jsonl");
    std::fs::copy(data("pi-sample-200.jsonl"), &path).expect("copy sample");
    (dir, path)
}

fn check_against_oracle(session: &Session) {
    let oracle = oracle();
    let header: Value = serde_json::from_str(&session.header().json).expect("header JSON");
    assert_eq!(header, oracle["header"]);
    assert_eq!(
        session.leaf_id().unwrap().as_deref(),
        oracle["leafId"].as_str()
    );
    assert_eq!(
        session.session_name().unwrap().as_deref(),
        oracle["sessionName"].as_str()
    );
    let count = session.entries().unwrap().count() as u64;
    assert_eq!(count, oracle["entryCount"].as_u64().unwrap());
    let path: Vec<Value> = session
        .path_ids(None)
        .unwrap()
        .into_iter()
        .map(Value::String)
        .collect();
    assert_eq!(Value::Array(path), oracle["path"]);
    let context: Value = serde_json::from_str(&session.build_context(None).unwrap().to_json())
        .expect("context JSON");
    assert_eq!(context, oracle["context"]);
    let tree: Vec<Value> = session
        .tree()
        .unwrap()
        .map(|node| {
            let node = node.unwrap();
            serde_json::json!({"id": node.id, "parentId": node.parent_id, "depth": node.depth, "label": node.label, "labelTimestamp": node.label_timestamp})
        })
        .collect();
    assert_eq!(Value::Array(tree), oracle["tree"]);
    let labels: serde_json::Map<String, Value> = session
        .labels()
        .unwrap()
        .into_iter()
        .map(|(target, label, _)| (target, Value::String(label)))
        .collect();
    assert_eq!(Value::Object(labels), oracle["labels"]);
}

/// Every answer pi gives for its own file, treelog gives too: cold (index built), then warm.
#[test]
fn matches_pi_on_its_own_transcript() {
    let (_dir, path) = sample_copy();
    let before = std::fs::read(&path).unwrap();
    let cold = Session::open(&path, SessionOptions::default()).unwrap();
    assert!(
        matches!(cold.index_state(), IndexState::Rebuilt { .. }),
        "{:?}",
        cold.index_state()
    );
    check_against_oracle(&cold);
    drop(cold);
    let warm = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(warm.index_state(), &IndexState::Fresh);
    check_against_oracle(&warm);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "opening never changes the log"
    );
}

/// Without an index (a full replay, as pi does) the answers are the same.
#[test]
fn matches_pi_without_index() {
    let (_dir, path) = sample_copy();
    let session = Session::open(
        &path,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )
    .unwrap();
    check_against_oracle(&session);
}
