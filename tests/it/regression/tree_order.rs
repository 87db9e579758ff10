//! Regressions on the order of `Session::tree()`, checked against pi 1.6.0's
//! `getTree()` on the logs of `tests/data/tree-order/`. pi's answers were recorded by
//! `dev/pi-bench/tree_order.mjs`, run as
//! `node dev/pi-bench/tree_order.mjs --pi /tmp/pirefs/node_modules/@earendil-works/pi-coding-agent/dist/index.js`
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

/// Children lists with unparseable timestamps (NaN in JavaScript, which pi's comparator turns
/// into "equal") come in the order V8's TimSort gives them: lists of 2 to 260 children, random,
/// descending and galloping patterns, all-NaN and ties. treelog put NaN children first.
#[test]
fn nan_siblings_in_v8_order() {
    assert_same_tree("siblings.jsonl");
}

/// The two smallest cases, spelled out. pi 1.6.0's answer, under Node 24, for this log written
/// out: `p(a,b,c) q(d,f,e)`, printed by
/// `const s = SessionManager.open(file); const show = (n) => n.entry.id + (n.children.length ?
/// "(" + n.children.map(show).join(",") + ")" : ""); console.log(s.getTree().map(show).join(" "))`
/// (`SessionManager` from "@earendil-works/pi-coding-agent"). Under p,
/// [10 s, NaN, 5 s] is one ascending run for V8 (NaN compares equal), so the file order stays;
/// under q, [NaN, 10 s, 5 s] is a run of two and 5 s is inserted between NaN and 10 s.
#[test]
fn nan_sibling_examples() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let entry = |id: &str, parent: Option<&str>, timestamp: &str| {
        serde_json::json!({"type": "custom", "customType": "t", "id": id, "parentId": parent, "timestamp": timestamp})
            .to_string()
    };
    let (ten, five, nan) = (
        "2025-01-01T00:00:10.000Z",
        "2025-01-01T00:00:05.000Z",
        "not a date",
    );
    let lines = [
        r#"{"type":"session","version":3,"id":"00000000-0000-7000-8000-000000000003","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}"#.to_string(),
        entry("p", None, "2025-01-01T00:00:00.000Z"),
        entry("a", Some("p"), ten),
        entry("b", Some("p"), nan),
        entry("c", Some("p"), five),
        entry("q", None, "2025-01-01T00:00:00.000Z"),
        entry("d", Some("q"), nan),
        entry("e", Some("q"), ten),
        entry("f", Some("q"), five),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let session = Session::open(&path, SessionOptions::default()).unwrap();
    let ids = |rows: Vec<treelog::Entry>| rows.into_iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(ids(session.children("p").unwrap()), ["a", "b", "c"]);
    assert_eq!(ids(session.children("q").unwrap()), ["d", "f", "e"]);
}

/// Children whose timestamps are spelled in other forms `new Date()` reads (`2025`, a space
/// for the `T`, `+0000`, lower case `t`/`z`, six-digit years, `24:00`, a day rolled over) are
/// ordered by the instants JavaScript reads, and the forms it reads as NaN (`+24:00`, `+01:60`,
/// day 32) by V8's order for NaN. treelog read the former as NaN and the offsets as valid. pi's
/// answer: s0(c3,c1,c2,c0) s1(c1,c2,c3,c0,c4) s2(c0,c1,c2,c3) s3(c3,c2,c1,c0).
#[test]
fn timestamp_spellings_as_javascript_reads_them() {
    assert_same_tree("spellings.jsonl");
}
