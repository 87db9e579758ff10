//! Regressions on the order of `Session::tree()` (issue 19, item 5), checked against pi 1.6.0's
//! `getTree()` on the logs of `tests/data/tree-order/`. pi's answers were recorded by
//! `tools/pi-bench/tree_order.mjs`, run as
//! `node tools/pi-bench/tree_order.mjs --pi /tmp/pirefs/node_modules/@earendil-works/pi-coding-agent/dist/index.js`
//! under Node 24.22.3 (V8 13.6); it opens each log with `SessionManager.open` and lists
//! `getTree()` depth-first, children in their array order.
//!
//! treelog sorted the roots by timestamp, where pi keeps them in file order.

use std::path::Path;

use serde_json::Value;
use treelog::{Session, SessionOptions};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tree-order");

/// pi's tree of `name` as (id, depth) in depth-first pre-order.
fn pi_tree(name: &str) -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(Path::new(DATA).join("pi-trees.json")).unwrap();
    let answers: Value = serde_json::from_str(&text).unwrap();
    answers["trees"][name]
        .as_array()
        .unwrap_or_else(|| panic!("no answer for {name}"))
        .iter()
        .map(|row| {
            (
                row[0].as_str().unwrap().to_string(),
                row[1].as_u64().unwrap() as u32,
            )
        })
        .collect()
}

/// treelog's tree of a copy of `name` (opening writes a sidecar beside the log).
fn treelog_tree(name: &str) -> Vec<(String, u32)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::copy(Path::new(DATA).join(name), &path).unwrap();
    let session = Session::open(&path, SessionOptions::default()).unwrap();
    session
        .tree()
        .unwrap()
        .map(|node| node.map(|node| (node.id, node.depth)).unwrap())
        .collect()
}

fn assert_same_tree(name: &str) {
    let (pi, ours) = (pi_tree(name), treelog_tree(name));
    if let Some(at) = (0..pi.len().max(ours.len())).find(|at| pi.get(*at) != ours.get(*at)) {
        panic!(
            "{name}: trees differ at node {at}: pi {:?}, treelog {:?}",
            &pi[at.saturating_sub(3)..(at + 4).min(pi.len())],
            &ours[at.saturating_sub(3)..(at + 4).min(ours.len())]
        );
    }
}

/// Roots of every kind (parentId null, a self-parent, a parentId naming no entry) come in file
/// order whatever their timestamps, and children by timestamp. pi's answer: r1 (children r1c,
/// r1b, r1a), r2, r3 (r3a), r4, r5, r6, r7.
#[test]
fn roots_in_file_order() {
    assert_same_tree("roots.jsonl");
    assert_eq!(
        treelog_tree("roots.jsonl")
            .into_iter()
            .filter(|(_, depth)| *depth == 0)
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        ["r1", "r2", "r3", "r4", "r5", "r6", "r7"]
    );
}
