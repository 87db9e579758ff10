//! `treelog secrets` and `treelog redact` end to end: a key planted in every kind of entry of
//! a pi session is listed masked (never whole) with exit 0, and redaction takes it out of the
//! log, the sidecar and the search index, which a byte grep over the whole folder confirms;
//! refusals, dry runs and the exit codes `--help` documents.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const KEY: &str = "AKIAQ3EGRZ7DKX5M7Q2X";

fn treelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(args)
        .env_remove("TREELOG_INDEX_DIR")
        .output()
        .expect("run treelog")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder with pi's sample session, `KEY` appended to the text of a user message (line 6),
/// a tool result (8), a bash execution's output (20), a custom entry (30), a context edit's
/// replacement (31), a compaction summary (38), a label (41) and a branch summary (62).
fn planted() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/pi16-gen-a.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(source)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let sites: &[(usize, &[&str])] = &[
        (6, &["message", "content", "0", "text"]),
        (8, &["message", "content", "0", "text"]),
        (20, &["message", "output"]),
        (30, &["data", "state"]),
        (31, &["replacement", "content", "0", "text"]),
        (38, &["summary"]),
        (41, &["label"]),
        (62, &["summary"]),
    ];
    for (line, segments) in sites {
        let mut value: Value = serde_json::from_str(&lines[line - 1]).unwrap();
        let mut at = &mut value;
        for segment in *segments {
            at = match segment.parse::<usize>() {
                Ok(index) => &mut at[index],
                Err(_) => &mut at[*segment],
            };
        }
        *at = Value::String(format!("{} key {KEY}", at.as_str().unwrap()));
        lines[line - 1] = serde_json::to_string(&value).unwrap();
    }
    let log = dir.path().join("s.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    (dir, log)
}

/// The files under `dir` (at any depth) whose bytes hold `needle`.
fn grep(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|window| window == needle)
            {
                found.push(path);
            }
        }
    }
    found
}

/// Findings are listed masked with their places; the whole key is never printed; no finding
/// exits 1, an unreadable path or a bad pattern 2.
#[test]
fn secrets_lists_masked_findings_with_their_places() {
    let (dir, log) = planted();
    let folder = dir.path().to_str().unwrap();
    let output = treelog(&["secrets", folder]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(!stdout.contains(KEY), "the key printed whole:\n{stdout}");
    assert_eq!(stdout.lines().count(), 8, "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{}:6  2dfaff8a  message.content[0].text  aws-access-key-id  AKIA…7Q2X",
            log.display()
        )),
        "{stdout}"
    );

    let output = treelog(&["secrets", "--json", folder]);
    assert_eq!(output.status.code(), Some(0));
    let findings: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let places: Vec<(u64, &str)> = findings
        .iter()
        .map(|finding| {
            (
                finding["line"].as_u64().unwrap(),
                finding["jsonPath"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            (6, "message.content[0].text"),
            (8, "message.content[0].text"),
            (20, "message.output"),
            (30, "data.state"),
            (31, "replacement.content[0].text"),
            (38, "summary"),
            (41, "label"),
            (62, "summary"),
        ]
    );

    let output = treelog(&["secrets", "--literal", "no such text anywhere", folder]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let output = treelog(&["secrets", "--pattern", "k(e)y [A-Z0-9]{20}", folder]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(text(&output.stdout).lines().count(), 8);
    let output = treelog(&["secrets", "--pattern", "(", folder]);
    assert_eq!(output.status.code(), Some(2));
    let output = treelog(&["secrets", &format!("{folder}/missing.jsonl")]);
    assert_eq!(output.status.code(), Some(2));
}

/// After `redact --secrets`, no byte of the folder (log, sidecar, search index) spells the
/// key, in any case; the search finds it no more; the session has the same tree and `verify`
/// says the same of it.
#[test]
fn redact_takes_the_key_out_of_the_log_sidecar_and_search_index() {
    let (dir, log) = planted();
    let folder = dir.path().to_str().unwrap();
    let log_path = log.to_str().unwrap();
    // A sidecar and a search index that hold the key's text.
    let output = treelog(&["info", log_path]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let output = treelog(&["search", &KEY.to_lowercase(), folder]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(dir.path().join(".treelog-search").is_dir());
    let before = text(&treelog(&["tree", "--json", log_path]).stdout);
    let verified = treelog(&["verify", log_path]);
    assert!(!grep(dir.path(), KEY.as_bytes()).is_empty());

    let output = treelog(&["redact", "--dry-run", "--secrets", folder]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("would replace 8 occurrence(s)"));
    assert!(!grep(dir.path(), KEY.as_bytes()).is_empty());

    let output = treelog(&["redact", "--secrets", folder]);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("replaced 8 occurrence(s); 1 log(s) rewritten, 1 sidecar index(es) rebuilt, 1 search index(es) rewritten"), "{stdout}");
    assert!(
        stdout.contains("check: the text is found nowhere"),
        "{stdout}"
    );
    assert!(!stdout.contains(KEY));
    for needle in [KEY.to_string(), KEY.to_lowercase()] {
        assert_eq!(
            grep(dir.path(), needle.as_bytes()),
            Vec::<PathBuf>::new(),
            "{needle}"
        );
    }
    let output = treelog(&["search", &KEY.to_lowercase(), folder]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert_eq!(
        text(&treelog(&["tree", "--json", log_path]).stdout),
        before.replace(KEY, "[REDACTED]")
    );
    // verify says of the redacted log what it said before (the sample has compactions it
    // reports on), but for the byte offsets and the size, which the shorter text changed.
    let output = treelog(&["verify", log_path]);
    assert_eq!(output.status.code(), verified.status.code());
    let without_offsets = |bytes: &[u8]| -> Vec<String> {
        text(bytes)
            .lines()
            .filter(|line| !line.starts_with("treelog: verified"))
            .map(|line| line.split(" (byte ").next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        without_offsets(&output.stderr),
        without_offsets(&verified.stderr)
    );
    let redacted = std::fs::read_to_string(&log).unwrap();
    assert_eq!(redacted.matches("key [REDACTED]").count(), 8);

    // Nothing left: exit 1 for secrets, 0 for a second redaction that writes nothing.
    assert_eq!(treelog(&["secrets", folder]).status.code(), Some(1));
    let output = treelog(&["redact", "--secrets", folder]);
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("replaced 0 occurrence(s); 0 log(s) rewritten"));
}

/// A literal that is an entry's id is refused (exit 2) with the line, entry and JSON path,
/// and the log is left as it was; so is a replacement holding the text, and no option.
#[test]
fn redact_refuses_to_change_ids_and_leaves_the_log_alone() {
    let (_dir, log) = planted();
    let log_path = log.to_str().unwrap();
    let original = std::fs::read(&log).unwrap();
    let output = treelog(&["redact", "--literal", "2dfaff8a", log_path]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(":6: entry 2dfaff8a: id: the match is in an id"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(std::fs::read(&log).unwrap(), original);

    let output = treelog(&[
        "redact",
        "--literal",
        "key",
        "--replacement",
        "a key",
        log_path,
    ]);
    assert_eq!(output.status.code(), Some(2));
    let output = treelog(&["redact", log_path]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("--literal TEXT, --pattern REGEX or --secrets"));
    let output = treelog(&["redact", "--secrets", "openclaw://main/abc"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("read-only for treelog"));
    assert_eq!(std::fs::read(&log).unwrap(), original);
}
