//! Regression: `repair` migrated a version 1 log through serde_json's `Value`, which refuses a
//! line holding an unpaired surrogate escape (`"\ud800"`) that `JSON.parse` reads. Such a line
//! was not counted among the parsed records, so a later compaction's `firstKeptEntryIndex`
//! named the record after the one pi names, and the line itself got no id or parentId. Now
//! records are counted by `json_scan` validity and such a line is migrated in its text.

use treelog::format::line::raw_field;
use treelog::{Session, SessionOptions};

/// The path and context treelog answers for `path`.
fn answers(path: &std::path::Path) -> (Vec<String>, String) {
    let session = Session::open(path, SessionOptions::default()).expect("open");
    let ids = session.path_ids(None).expect("path");
    let context = session.build_context(None).expect("context").to_json();
    (ids, context)
}

/// After the migration every entry carries its id and parentId, the compaction keeps the
/// entry pi's index names ("three", record 3 counting the header and the odd line), and
/// treelog answers as it did on the version 1 log.
#[test]
fn v1_line_with_a_lone_surrogate_is_counted_and_migrated() {
    let lines = [
        r#"{"type":"session","id":"v1-session","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"one"}}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"user","content":"odd \ud800"}}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:03.000Z","message":{"role":"user","content":"three"}}"#,
        r#"{"type":"compaction","timestamp":"2024-01-01T00:00:04.000Z","summary":"s","firstKeptEntryIndex":3,"tokensBefore":10}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:05.000Z","message":{"role":"user","content":"four"}}"#,
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("v1.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write log");
    let (ids_before, context_before) = answers(&path);
    assert_eq!(ids_before.len(), 5);
    assert!(context_before.contains("three") && !context_before.contains("odd"));

    let outcome = treelog::repair::repair_file(&path, true, "/p").expect("repair");
    assert!(outcome.backup.is_some(), "{:?}", outcome.plan.fixes);
    let text = std::fs::read_to_string(&path).expect("read migrated log");
    let migrated: Vec<&str> = text.lines().collect();
    assert_eq!(migrated.len(), lines.len());
    // Entries in file order are the path (a chain), each linked to the one before.
    let mut parent = "null".to_string();
    for (line, id) in migrated[1..].iter().zip(&ids_before) {
        let field = |name| raw_field(line, name).map(|raw| raw.get().to_string());
        assert_eq!(field("id"), Some(format!("\"{id}\"")), "{line}");
        assert_eq!(field("parentId"), Some(parent.clone()), "{line}");
        parent = format!("\"{id}\"");
    }
    assert!(
        migrated[2].contains(r#""odd \ud800""#),
        "the odd text is kept byte for byte"
    );
    assert_eq!(
        raw_field(migrated[4], "firstKeptEntryId").map(|raw| raw.get().to_string()),
        Some(format!("\"{}\"", ids_before[2])),
        "record 3 is the entry \"three\""
    );
    assert_eq!(answers(&path), (ids_before, context_before));
}
