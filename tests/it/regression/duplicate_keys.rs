//! Regression (found by the `line_parser` fuzz target): a line whose object repeats a key was
//! kept as an opaque record ("not a JSON object"), because serde's derived struct refuses
//! duplicate fields. pi and OpenClaw read lines with `JSON.parse`, which keeps the last value
//! of a repeated key, so for them the line is an entry.

use treelog::EntryKind;
use treelog::format::line::{Line, classify};

#[test]
fn repeated_keys_take_the_last_value() {
    let line = r#"{"type":"message","type":"label","id":"a","id":"b","parentId":null,"targetId":"x","label":"l"}"#;
    match classify(line, false, false) {
        Line::Entry(entry) => {
            assert_eq!(entry.kind, EntryKind::Label);
            assert_eq!(entry.id.as_deref(), Some("b"));
            assert_eq!(entry.label.as_deref(), Some("l"));
        }
        other => panic!("expected a label entry, got {other:?}"),
    }
}

#[test]
fn repeated_keys_in_a_header() {
    let line = r#"{"type":"session","id":"s1","version":2,"id":"s2","version":3,"cwd":"/w"}"#;
    match classify(line, false, true) {
        Line::Header(header) => {
            assert_eq!(header.id, "s2");
            assert_eq!(header.version, 3);
        }
        other => panic!("expected a header, got {other:?}"),
    }
}

/// A repeated key in a whole log: the entry is part of the tree, as pi sees it.
#[test]
fn repeated_keys_in_a_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("dup.jsonl");
    let log = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","id":"b","parentId":"x","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"again","timestamp":2}}"#,
        "\n",
    );
    std::fs::write(&path, log).expect("write log");
    let session = treelog::Session::open(&path, treelog::SessionOptions::default()).expect("open");
    assert_eq!(session.path_ids(None).expect("path"), ["a", "b"]);
}
