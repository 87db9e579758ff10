//! `treelog audit` and `treelog export --dropped` on sessions pi's own compaction code wrote
//! (`tests/data/audit/`): the hole pi 0.63.0 leaves at a second compaction is reported with
//! exit 1 and given back; a session without compactions exits 0; an unreadable file exits 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir
        .path()
        .join(Path::new(name).file_name().expect("a file name"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    std::fs::copy(source.join(name), &log).expect("copy");
    (dir, log)
}

fn treelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(args)
        .output()
        .expect("run treelog")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// pi 0.63.0's session: 8 messages at risk over two compactions, exit 1; the JSON says which,
/// and `export --dropped --format json` hands back exactly those messages.
#[test]
fn audit_finds_the_pi063_hole_and_export_gives_it_back() {
    let (_dir, log) = copy("audit/pi063.jsonl");
    let path = log.to_str().unwrap();
    let output = treelog(&["audit", path]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("8 at risk, 0 dropped"));

    let output = treelog(&["audit", "--json", path]);
    assert_eq!(output.status.code(), Some(1));
    let audit: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(audit["atRisk"], 8);
    let risked: Vec<String> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|event| event["left"].as_array().unwrap().clone())
        .filter(|entry| entry["class"] == "atRisk")
        .map(|entry| entry["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(risked.len(), 8);

    let output = treelog(&["export", path, "--dropped", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let exported: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let ids: Vec<String> = exported["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, risked, "export gives back what the audit found");
    assert_eq!(exported["messages"].as_array().unwrap().len(), 8);
    assert_eq!(exported["messages"][0]["role"], "user");

    let output = treelog(&["export", path, "--dropped"]);
    let markdown = text(&output.stdout);
    assert!(
        markdown.contains("## User") && markdown.contains("Question 4."),
        "{markdown}"
    );
}

/// A session with no compaction has nothing at risk: exit 0.
#[test]
fn audit_of_a_session_without_compactions_exits_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("plain.jsonl");
    std::fs::write(
        &log,
        concat!(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
            "\n"
        ),
    )
    .expect("write");
    let output = treelog(&["audit", log.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
}

/// A file that cannot be read is exit 2, with its name on stderr.
#[test]
fn audit_of_a_missing_file_exits_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.jsonl");
    let output = treelog(&["audit", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("missing.jsonl"));
}
