//! `treelog stats`: the JSON over a directory lists each session, largest first, and totals
//! that add up.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Two sessions in a directory: listed largest first, the total's lines are their sum.
#[test]
fn stats_over_a_directory_lists_sessions_by_size() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    std::fs::copy(
        data.join("pi16-sample-300.jsonl"),
        dir.path().join("big.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        data.join("audit/pi063.jsonl"),
        dir.path().join("small.jsonl"),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(["stats", "--json", dir.path().to_str().unwrap()])
        .output()
        .expect("run treelog");
    assert_eq!(output.status.code(), Some(0));
    let stats: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let sessions = stats["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert!(sessions[0]["path"].as_str().unwrap().ends_with("big.jsonl"));
    let lines: u64 = sessions
        .iter()
        .map(|s| s["lines"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(stats["total"]["lines"]["count"].as_u64(), Some(lines));
    assert_eq!(lines, 300 + 56);
    assert!(stats["total"]["byTool"]["read"]["bytes"].as_u64().unwrap() > 0);
}
