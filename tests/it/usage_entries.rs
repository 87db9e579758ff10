//! `Session::usage_entries_json`: the entries pi's `/session` sums read (`computeCacheWaste`,
//! `getUsageCostBreakdown`), cut down to the fields those read. Parsed, it must equal what
//! cutting down the replay's parsed entries by the same rules gives (on pi's transcripts and on
//! hand-made lines: repeated keys, `responseModel`, `usage` entries, tool results with and
//! without a usage, compactions and branch summaries); read in windows it must give the same
//! entries as read at once; and a line that is not an entry, or a message that is not an
//! object, must leave the answer to pi's own code (`None`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use treelog::Session;

fn bundled(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.jsonl"))
}

/// The fields of `object` among `names` that it has.
fn kept(object: &Value, names: &[&str]) -> Map<String, Value> {
    names
        .iter()
        .filter_map(|name| Some((name.to_string(), object.get(*name)?.clone())))
        .collect()
}

/// The rules of the cut-down, over a parsed entry: what pi's two sums read of it, or nothing
/// when they skip it.
fn cut_down(entry: &Value) -> Option<Value> {
    let kind = entry["type"].as_str()?;
    match kind {
        "message" => {
            let message = &entry["message"];
            match message["role"].as_str()? {
                "assistant" => {
                    let mut fields = Map::new();
                    fields.insert("role".into(), json!("assistant"));
                    fields.extend(kept(
                        message,
                        &["provider", "model", "responseModel", "usage"],
                    ));
                    Some(json!({"type": "message", "message": fields}))
                }
                "toolResult" => message.get("usage").map(|usage| {
                    json!({"type": "message", "message": {"role": "toolResult", "usage": usage}})
                }),
                _ => None,
            }
        }
        "usage" | "compaction" | "branch_summary" => {
            let mut fields = Map::new();
            fields.insert("type".into(), json!(kind));
            let names: &[&str] = if kind == "usage" {
                &["kind", "provider", "model", "usage"]
            } else {
                &["usage"]
            };
            fields.extend(kept(entry, names));
            Some(Value::Object(fields))
        }
        _ => None,
    }
}

/// The replay's entries (no index) cut down.
fn expected(path: &Path) -> Vec<Value> {
    let session = Session::open(path, treelog_testkit::no_index()).expect("index-free open");
    session
        .entries()
        .expect("entries")
        .filter_map(|entry| {
            let value: Value = serde_json::from_str(&entry.expect("entry").json).expect("json");
            cut_down(&value)
        })
        .collect()
}

/// The cut-down entries read in windows of `window` records, or `None`.
fn read(session: &Session, window: u64) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    let mut from = 0;
    loop {
        let (text, next) = session
            .usage_entries_json(from, window)
            .expect("usage entries")?;
        let batch: Vec<Value> = serde_json::from_str(&text).expect("a JSON array");
        out.extend(batch);
        if next >= session.record_count() {
            return Some(out);
        }
        assert!(next > from, "the window moves on");
        from = next;
    }
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// Lines pi writes, and lines it could read, each an entry whose cut-down has a rule to get
/// right.
const VECTOR_LINES: &[&str] = &[
    r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
    r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"x"}],"provider":"anthropic","model":"m1","responseModel":"m1-2025","usage":{"input":10,"output":2,"cacheRead":5000,"cacheWrite":3,"cost":{"input":0.1,"output":0.2,"cacheRead":0.01,"cacheWrite":0.02,"total":0.33}},"stopReason":"stop","timestamp":5}}"#,
    r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"assistant","provider":"p","model":"m","model":"m2","responseModel":null,"usage":{"input":1,"input":9000,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"input":0.5,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.5}}}}"#,
    r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"big"}],"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.01}}}}"#,
    r#"{"type":"message","id":"a5","parentId":"a4","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","content":[]}}"#,
    r#"{"type":"message","id":"a6","parentId":"a5","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","content":[],"usage":0}}"#,
    r#"{"type":"usage","id":"a7","parentId":"a6","timestamp":"2025-01-01T00:10:00.000Z","kind":"cache_warm","provider":"anthropic","model":"m1","usage":{"input":1,"output":0,"cacheRead":8000,"cacheWrite":0,"cost":{"total":0.001}}}"#,
    r#"{"type":"compaction","id":"a8","parentId":"a7","timestamp":"t","summary":"s","firstKeptEntryId":"a2","tokensBefore":9,"usage":null}"#,
    r#"{"type":"branch_summary","id":"a9","parentId":"a8","timestamp":"t","fromId":"a1","summary":"s","usage":{"input":2,"output":2,"cacheRead":2,"cacheWrite":2,"cost":{"total":0.25}}}"#,
    r#"{"type":"message","id":"b1","parentId":"a9","timestamp":"t","message":{"role":"assistant","content":[]}}"#,
    r#"{"type":"model_change","id":"b2","parentId":"b1","timestamp":"t","provider":"p","modelId":"m"}"#,
    r#"{"type":"message","id":"b3","parentId":"b2","timestamp":"t","message":{"role":"custom","content":"x","usage":{"input":1}}}"#,
];

/// On every bundled transcript and on the hand-made lines, the indexed answer equals the
/// replay's entries cut down, read at once and in windows of every small size.
#[test]
fn cut_down_entries_equal_the_replays() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut logs = Vec::new();
    for name in [
        "pi-sample-200",
        "pi16-gen-a",
        "pi16-gen-b",
        "pi073-gen-a",
        "pi16-sample-300",
    ] {
        let path = dir.path().join(format!("{name}.jsonl"));
        std::fs::copy(bundled(name), &path).expect("copy transcript");
        logs.push((name.to_string(), path));
    }
    let path = dir.path().join("vectors.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{}\n", VECTOR_LINES.join("\n"))).expect("write");
    logs.push(("vectors".into(), path));
    for (name, path) in logs {
        let expected = expected(&path);
        let session = treelog_testkit::open(&path);
        assert_eq!(read(&session, u64::MAX).as_ref(), Some(&expected), "{name}");
        for window in [1, 2, 3, 7] {
            assert_eq!(
                read(&session, window).as_ref(),
                Some(&expected),
                "{name}, windows of {window}"
            );
        }
    }
}

/// An opaque line or a message that is not an object anywhere in the log: pi's own code must
/// read the entries (it may throw, or read what the index does not describe).
#[test]
fn lines_pi_reads_otherwise_leave_it_to_pi() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (what, line) in [
        ("an opaque line", r#"{"no":"type"}"#),
        (
            "a null message",
            r#"{"type":"message","id":"n1","parentId":"a1","timestamp":"t","message":null}"#,
        ),
        (
            "a string message",
            r#"{"type":"message","id":"n1","parentId":"a1","timestamp":"t","message":"x"}"#,
        ),
    ] {
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, format!("{HEADER}\n{}\n{line}\n", VECTOR_LINES[0])).expect("write");
        let session = treelog_testkit::open(&path);
        assert_eq!(read(&session, u64::MAX), None, "{what}");
    }
}
