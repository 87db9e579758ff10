//! The commands agree with each other: one spelling per index state in text and one in JSON, across
//! `info`, `verify`, `reindex` and `list`; every JSON key a command prints is documented in its
//! `--help`; `info` reports the sidecar file's size beside the tables' bytes; `verify --json` and
//! `reindex --json` end with a summary line also when all is clean; the commands that check many
//! files end with one summary line on stderr, also when all are clean and when a directory holds no
//! session; `reindex --json` reports in argument order.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn treelog(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_treelog"));
    // The environment keeps the default sessions directory of `list` away from the user's.
    command
        .args(args)
        .env("PI_CODING_AGENT_DIR", "/nonexistent-treelog-test");
    treelog_testkit::process::output_with_stdin(&mut command, "")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn run_ok(args: &[&str]) -> Output {
    let output = treelog(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        stderr(&output)
    );
    output
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// A directory holding a copy of the bundled pi transcript as `DIR/sub/s.jsonl`, indexed,
/// then grown by one line written behind the index's back, so that the next open catches up.
fn caught_up_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let path = dir.path().join("sub/s.jsonl");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/pi-sample-200.jsonl");
    std::fs::copy(sample, &path).expect("copy sample");
    run_ok(&["reindex", arg(&path)]);
    let line = r#"{"type":"custom","customType":"note","id":"feedbeef","parentId":"c2fab1df","timestamp":"2025-01-01T11:00:00.000Z"}"#;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "{line}").unwrap();
    (dir, path)
}

/// A caught-up index reads "caught up" in every command's text and "caughtUp" in every
/// command's JSON, and the help of each command with a state in its JSON lists that spelling.
#[test]
fn one_spelling_per_index_state() {
    type Read = fn(&Output) -> String;
    let cases: [(&str, &[&str], bool, Read); 7] = [
        ("info", &["info", "FILE"], false, |output| {
            let text = stdout(output);
            let line = text
                .lines()
                .find(|line| line.starts_with("index:"))
                .unwrap();
            line["index:".len()..].trim().to_string()
        }),
        ("info --json", &["info", "FILE", "--json"], true, |output| {
            json_lines(&stdout(output))[0]["index"]["state"]
                .as_str()
                .unwrap()
                .to_string()
        }),
        ("verify", &["verify", "FILE"], false, |output| {
            let text = stdout(output);
            let at = text.find("; index ").expect("the index state") + "; index ".len();
            text[at..].trim_end().trim_end_matches(')').to_string()
        }),
        ("reindex", &["reindex", "FILE"], false, |output| {
            let text = stdout(output);
            let at = text.find(": ").unwrap() + 2;
            text[at..].split(',').next().unwrap().to_string()
        }),
        (
            "reindex --json",
            &["reindex", "FILE", "--json"],
            true,
            |output| {
                json_lines(&stdout(output))[0]["state"]
                    .as_str()
                    .unwrap()
                    .to_string()
            },
        ),
        ("list --json", &["list", "DIR", "--json"], true, |output| {
            json_lines(&stdout(output))[0]["index"]["state"]
                .as_str()
                .unwrap()
                .to_string()
        }),
        (
            "verify --full",
            &["verify", "FILE", "--full"],
            false,
            |output| {
                let text = stdout(output);
                let at = text.find("; index ").expect("the index state") + "; index ".len();
                text[at..].trim_end().trim_end_matches(')').to_string()
            },
        ),
    ];
    for (name, args, json, read) in cases {
        let (dir, path) = caught_up_copy();
        let args: Vec<&str> = args
            .iter()
            .map(|arg| match *arg {
                "FILE" => path.to_str().unwrap(),
                "DIR" => dir.path().to_str().unwrap(),
                other => other,
            })
            .collect();
        let state = read(&run_ok(&args));
        if json {
            assert_eq!(state, "caughtUp", "{name}");
            let help = stdout(&run_ok(&[args[0], "--help"]));
            assert!(
                ["fresh", "caughtUp", "rebuilt", "unindexed"]
                    .iter()
                    .all(|word| help.contains(word)),
                "{name}: the help lists the states: {help}"
            );
        } else {
            assert!(state.starts_with("caught up"), "{name}: {state:?}");
        }
    }
}

/// The keys of `value` that must be documented: its own, and those of the objects treelog
/// defines under it (`index`, `summary`), not the header's or the counts' (pi's and data).
fn keys(value: &Value, into: &mut BTreeSet<String>) {
    let Some(object) = value.as_object() else {
        return;
    };
    for (key, inner) in object {
        into.insert(key.clone());
        if key == "index" || key == "summary" {
            keys(inner, into);
        }
    }
}

/// Every key of every JSON line a command prints appears, in double quotes, in its `--help`.
#[test]
fn every_json_key_is_in_help() {
    let (dir, path) = caught_up_copy();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\nnot json\n").unwrap();
    let missing = dir.path().join("missing.jsonl");
    let runs: Vec<Vec<&str>> = vec![
        vec!["info", arg(&path), "--json"],
        vec!["info", arg(&empty), "--json"],
        vec!["tree", arg(&path), "--json"],
        vec!["list", arg(dir.path()), "--json"],
        vec!["verify", arg(&broken), arg(&missing), arg(&path), "--json"],
        vec!["reindex", arg(&missing), arg(&path), "--json"],
    ];
    for args in runs {
        let output = treelog(&args);
        let mut found = BTreeSet::new();
        for line in json_lines(&stdout(&output)) {
            keys(&line, &mut found);
        }
        assert!(!found.is_empty(), "{args:?}");
        let help = stdout(&run_ok(&[args[0], "--help"]));
        let undocumented: Vec<&String> = found
            .iter()
            .filter(|key| !help.contains(&format!("\"{key}\"")))
            .collect();
        assert!(
            undocumented.is_empty(),
            "{}: {undocumented:?} not in --help:\n{help}",
            args[0]
        );
    }
}

/// `info` gives the tables' bytes and the sidecar file's size, which is what the file
/// system says; the file holds at least the tables.
#[test]
fn info_reports_the_sidecar_file_size() {
    let (_dir, path) = caught_up_copy();
    let info = &json_lines(&stdout(&run_ok(&["info", arg(&path), "--json"])))[0];
    let sidecar = PathBuf::from(format!("{}.treelog", path.display()));
    let on_disk = std::fs::metadata(&sidecar).unwrap().len();
    assert_eq!(info["indexFileBytes"].as_u64(), Some(on_disk));
    assert_eq!(info["indexPath"].as_str(), Some(arg(&sidecar)));
    assert!(info["indexStoredBytes"].as_u64().unwrap() <= on_disk);
    let text = stdout(&run_ok(&["info", arg(&path)]));
    assert!(
        text.contains(&format!("the sidecar file holds {on_disk} bytes")),
        "{text}"
    );
}

/// `verify --json` on a clean file prints only its summary line; `reindex --json` ends with
/// its summary too.
#[test]
fn json_summaries_also_when_clean() {
    let (_dir, path) = caught_up_copy();
    let verify = json_lines(&stdout(&run_ok(&["verify", arg(&path), "--json"])));
    assert_eq!(verify.len(), 1, "{verify:?}");
    let summary = &verify[0]["summary"];
    assert_eq!(summary["files"], 1);
    assert_eq!(summary["clean"], 1);
    assert_eq!(summary["problems"], 0);
    let reindex = json_lines(&stdout(&run_ok(&["reindex", arg(&path), "--json"])));
    assert_eq!(reindex.last().unwrap()["summary"]["files"], 1);
}

/// `verify`, `reindex` and `list` end with one summary line on stderr when all is clean, and
/// say "no sessions found under DIR" for a directory without sessions (exit 0).
#[test]
fn summaries_on_stderr() {
    let (dir, _path) = caught_up_copy();
    let empty = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["verify", "DIR"], "verified 1 file(s), "),
        (&["reindex", "DIR"], "reindexed 1 file(s), "),
        (&["list", "DIR"], "listed 1 session(s) under "),
        (&["verify", "EMPTY"], "no sessions found under EMPTY"),
        (&["reindex", "EMPTY"], "no sessions found under EMPTY"),
        (&["list", "EMPTY"], "no sessions found under EMPTY"),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args
            .iter()
            .map(|arg| match *arg {
                "DIR" => dir.path().to_str().unwrap(),
                "EMPTY" => empty.path().to_str().unwrap(),
                other => other,
            })
            .collect();
        let output = run_ok(&args);
        let text = stderr(&output);
        let lines: Vec<&str> = text.lines().collect();
        let expected = expected.replace("EMPTY", arg(empty.path()));
        assert_eq!(lines.len(), 1, "{args:?}: {text}");
        assert!(
            lines[0].starts_with(&format!("treelog: {expected}")),
            "{args:?}: {text}"
        );
    }
}

/// `reindex --json` reports the files in the order they were named, a missing one in its
/// place (it was reported first).
#[test]
fn reindex_json_in_argument_order() {
    let (dir, path) = caught_up_copy();
    let missing_a = dir.path().join("a-missing.jsonl");
    let missing_z = dir.path().join("z-missing.jsonl");
    let output = treelog(&[
        "reindex",
        arg(&missing_z),
        arg(&path),
        arg(&missing_a),
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let lines = json_lines(&stdout(&output));
    let order: Vec<&str> = lines[..3]
        .iter()
        .map(|line| line["path"].as_str().unwrap())
        .collect();
    assert_eq!(order, [arg(&missing_z), arg(&path), arg(&missing_a)]);
    let states: Vec<&str> = lines[..3]
        .iter()
        .map(|line| line["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["failed", "caughtUp", "failed"]);
    assert_eq!(lines[3]["summary"]["failed"], 2);
}
