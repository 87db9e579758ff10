//! Escape sequences in a transcript never reach a terminal: `tree`, `info`, `list`, `search`
//! and `export` to stdout, run on `script`'s pseudo-terminal, show a message that holds an OSC
//! title change, a screen clear and a C1 control with those characters written as `\uXXXX`;
//! piped, `export` keeps every byte. Where `script` cannot run, the terminal cases say why and
//! check nothing.

use std::process::Command;

fn treelog() -> &'static str {
    env!("CARGO_BIN_EXE_treelog")
}

/// Runs `treelog ARGS` on a pseudo-terminal, returning what it drew, or why it cannot.
fn on_terminal(args: &str) -> Result<String, String> {
    let output = Command::new("script")
        .args(["-qec", &format!("{} {args}", treelog()), "/dev/null"])
        .output()
        .map_err(|error| format!("`script` cannot be run: {error}"))?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";

#[test]
fn control_characters_from_logs_are_escaped_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("evil.jsonl");
    let lines = [
        serde_json::json!({"type":"session","version":3,"id":"s","timestamp":"2025-03-01T00:00:00.000Z","cwd":"/w"}),
        serde_json::json!({"type":"message","id":"m1","parentId":null,"timestamp":"2025-03-01T00:00:01.000Z",
            "message":{"role":"user","content":format!("zzword {HOSTILE} end")}}),
        serde_json::json!({"type":"session_info","id":"n1","parentId":"m1","timestamp":"2025-03-01T00:00:02.000Z",
            "name":format!("named {HOSTILE}")}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&log, text).unwrap();
    let path = log.to_str().unwrap();
    let dir_path = dir.path().to_str().unwrap();

    let piped = Command::new(treelog())
        .args(["export", path])
        .output()
        .unwrap();
    let piped = String::from_utf8_lossy(&piped.stdout);
    assert!(
        piped.contains('\u{1b}') || piped.contains("\\u001b"),
        "{piped}"
    );

    for args in [
        format!("tree {path}"),
        format!("info {path}"),
        format!("list {dir_path}"),
        format!("search zzword {path}"),
        format!("export {path}"),
    ] {
        let drawn = match on_terminal(&args) {
            Ok(drawn) => drawn,
            Err(reason) => {
                println!("skipped the terminal cases: {reason}");
                return;
            }
        };
        assert!(
            !drawn.contains("\u{1b}]") && !drawn.contains("\u{1b}[2J") && !drawn.contains('\u{9b}'),
            "{args}: {drawn:?}"
        );
        assert!(
            drawn.contains("\\u001b") || drawn.contains("\\u009b"),
            "{args} shows the escaped text: {drawn:?}"
        );
    }
}

/// An error on stderr names the path as given, and a path can hold escape sequences too (a
/// file name made by whoever writes the folder): on a terminal they are written as `\uXXXX`;
/// piped, stderr keeps the name's bytes.
#[test]
fn control_characters_in_errors_are_escaped_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join(format!("gone{HOSTILE}.jsonl"));
    let piped = Command::new(treelog())
        .arg("info")
        .arg(&evil)
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(2));
    let piped_err = String::from_utf8_lossy(&piped.stderr);
    assert!(piped_err.contains(HOSTILE), "{piped_err:?}");

    // `script` runs the command through a shell: the name travels in the environment.
    let output = Command::new("script")
        .args([
            "-qec",
            &format!("{} info \"$EVIL\"", treelog()),
            "/dev/null",
        ])
        .env("EVIL", &evil)
        .output()
        .expect("`script` (util-linux) runs a command on a pseudo-terminal");
    let drawn = String::from_utf8_lossy(&output.stdout);
    assert!(
        drawn.contains("treelog: "),
        "the error reached the terminal: {drawn:?}"
    );
    assert!(
        !drawn.contains("\u{1b}]") && !drawn.contains("\u{1b}[2J") && !drawn.contains('\u{9b}'),
        "{drawn:?}"
    );
    assert!(drawn.contains("gone\\u001b]0;pwned\\u0007"), "{drawn:?}");
}
