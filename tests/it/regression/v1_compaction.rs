//! Regression: a v1 compaction names its first kept entry by `firstKeptEntryIndex` (an index
//! among the parsed records, the header being 0), which treelog ignored, so its context
//! dropped the kept entries that pi's migration keeps. The index now resolves to the entry.

use treelog::{Session, SessionOptions};

/// The context of a v1 file after a compaction keeps the entries from the indexed one on.
#[test]
fn v1_compaction_keeps_from_its_indexed_entry() {
    let lines = [
        r#"{"type":"session","id":"v1-session","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"one"}}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"user","content":"two"}}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:03.000Z","message":{"role":"user","content":"three"}}"#,
        r#"{"type":"compaction","timestamp":"2024-01-01T00:00:04.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":10}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:05.000Z","message":{"role":"user","content":"four"}}"#,
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    for use_index in [true, false] {
        let session = Session::open(
            &path,
            SessionOptions {
                use_index,
                ..SessionOptions::default()
            },
        )
        .unwrap();
        let context: serde_json::Value =
            serde_json::from_str(&session.build_context(None).unwrap().to_json()).unwrap();
        let contents: Vec<&str> = context["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| {
                message["content"]
                    .as_str()
                    .unwrap_or(message["role"].as_str().unwrap())
            })
            .collect();
        // Record 2 is the second entry ("two"): kept from there, then what follows the compaction.
        assert_eq!(
            contents,
            ["compactionSummary", "two", "three", "four"],
            "use_index {use_index}"
        );
    }
}
