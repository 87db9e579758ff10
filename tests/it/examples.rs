//! The examples under `examples/` run and say what they teach: each is built with `cargo build
//! --workspace --example`, run, and its output checked for the facts it demonstrates (counts,
//! ids relations, refusals), so an example that goes stale fails here. The timing probes under
//! `dev/probes/` (treelog-dev's examples) answer bad usage and bad files with their usage text and exit 2, never
//! a panic.

use std::path::Path;
use std::process::Output;

/// Runs example NAME with ARGS. It is built with `cargo build --workspace`, the package selection
/// `cargo test --workspace` builds with: a `cargo run` of this package alone would resolve other
/// features, rebuild the library for the example and leave the next test build to rebuild it
/// back. After a workspace test build the build step finds everything fresh.
fn run_example(name: &str, args: &[&str]) -> Output {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let build = std::process::Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--workspace", "--manifest-path"])
        .arg(&manifest)
        .args(["--example", name])
        .output()
        .expect("cargo runs");
    assert!(
        build.status.success(),
        "example {name} does not build:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    // The test binary is target/<profile>/deps/it-HASH; examples are target/<profile>/examples.
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lies in <target>/<profile>/deps");
    std::process::Command::new(profile_dir.join("examples").join(name))
        .args(args)
        .output()
        .expect("the built example runs")
}

/// The example's stdout, after checking that it exited 0.
fn stdout_of(name: &str) -> String {
    let output = run_example(name, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "example {name} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Checks that every expected line fragment appears, in order, in the example's output.
fn check(name: &str, expected_in_order: &[&str]) {
    let stdout = stdout_of(name);
    let mut rest = stdout.as_str();
    for expected in expected_in_order {
        match rest.find(expected) {
            Some(at) => rest = &rest[at + expected.len()..],
            None => panic!("example {name}: expected {expected:?} (in this order) in:\n{stdout}"),
        }
    }
}

/// `open_or_create`: the file appears with the first append, the first open builds the index
/// and the next finds it fresh; a missing path opens empty.
#[test]
fn open_or_create() {
    check(
        "open_or_create",
        &[
            "(on disk yet: false)",
            "after the first append, on disk: true",
            "with 1 entry, index built from the log",
            "sidecar beside the log: true",
            "opened again: index fresh",
            "a missing file opens as an empty session: 0 entries",
            "continue_recent picked ",
        ],
    );
}

/// `append_entries`: one entry of every kind treelog writes, in order, each a child of the
/// one before except the branch summary, which goes back to the answer.
#[test]
fn append_entries() {
    let stdout = stdout_of("append_entries");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|line| line.contains(" parent "))
        .map(|line| line.split_whitespace().collect())
        .collect();
    let kinds: Vec<&str> = rows.iter().map(|row| row[1]).collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "message",
            "message",
            "usage",
            "custom",
            "custom_message",
            "session_info",
            "label",
            "context_edit",
            "compaction",
            "branch_summary"
        ],
        "{stdout}"
    );
    for kind in treelog::EntryKind::ALL {
        let name = kind.as_str();
        if name != "other" {
            assert!(kinds.contains(&name), "no {name} entry in:\n{stdout}");
        }
    }
    for pair in rows[..rows.len() - 1].windows(2) {
        assert_eq!(pair[1][3], pair[0][0], "a chain of appends:\n{stdout}");
    }
    // The branch summary's parent is the final answer (the 4th message, row 5).
    assert_eq!(rows[13][3], rows[5][0], "{stdout}");
    assert!(
        stdout.contains("14 entries; the context holds 5 messages"),
        "{stdout}"
    );
}

/// `branch_and_reset`: a second answer to the same question, the path following the leaf,
/// and a new root after a reset.
#[test]
fn branch_and_reset() {
    let stdout = stdout_of("branch_and_reset");
    assert!(stdout.contains("the question has 2 answers"), "{stdout}");
    let paths: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.split_once(" with path ").map(|(_, path)| path))
        .collect();
    assert_eq!(paths.len(), 2, "{stdout}");
    assert_ne!(paths[0], paths[1], "the path follows the leaf:\n{stdout}");
    assert!(stdout.contains("new root "), "{stdout}");
    let roots = stdout
        .lines()
        .filter(|line| line.ends_with("(message)") && !line.starts_with(' '))
        .count();
    assert_eq!(roots, 2, "two roots in the tree:\n{stdout}");
}

/// `labels`: the last label wins, clearing removes it, an unknown target is refused.
#[test]
fn labels() {
    check(
        "labels",
        &[
            ": plan v2",
            "after clearing: (none)",
            "is labelled \"plan v2\"",
            "refused: ",
            "no entry has the id \"0badc0de\"",
        ],
    );
}

/// `build_context`: the compaction summary leads the context after a compaction, and the
/// context of an earlier entry is shorter.
#[test]
fn build_context() {
    check(
        "build_context",
        &[
            "before compaction: 2 messages, model {\"provider\":\"anthropic\",\"modelId\":\"claude-sonnet-4-5\"}, thinking \"high\"",
            "after compaction: 3 messages",
            "  compactionSummary\n  assistant\n  user",
            "to_json: ",
            "starts {\"messages\":[{\"role\":\"compactionSummary\"",
            ": 2 messages",
        ],
    );
}

/// `fork_session`: a whole copy keeps both branches, a branched copy the path and its label.
#[test]
fn fork_session() {
    check(
        "fork_session",
        &[
            "source: 4 entries",
            "fork_from: 4 entries in a new session",
            "its parentSession names the source: true",
            "create_branched_session: 2 entries; label kept: [\"start\"]",
        ],
    );
}

/// `follow_writer`: a stale handle's append is refused, then goes after the other writer's
/// entry once refreshed; `FollowTip` follows on its own.
#[test]
fn follow_writer() {
    let stdout = stdout_of("follow_writer");
    assert!(stdout.contains("refused: they appended "), "{stdout}");
    assert!(
        stdout.contains("after refresh our leaf is theirs: true"),
        "{stdout}"
    );
    assert!(stdout.contains(": true\npath: "), "{stdout}");
    let path = stdout.lines().last().unwrap_or_default();
    assert_eq!(
        path.matches(", ").count(),
        4,
        "five entries in one chain: {path}"
    );
}

/// `ancestors`: the answers for a two-branch tree drawn in the example's comment.
#[test]
fn ancestors() {
    check(
        "ancestors",
        &[
            "a1 is an ancestor of b3: true",
            "a2 is an ancestor of b3: false",
            "branch point of a3 and b3: a1",
            "only on A: a2 a3; only on B: b2 b3",
            "path to b3: root a1 b2 b3",
        ],
    );
}

/// A probe run with bad arguments: exit 2, its name and the problem on stderr, its usage,
/// and no panic.
fn check_probe_refuses(name: &str, args: &[&str], problem: &str) {
    let output = run_example(name, args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{name} {args:?}: {stderr}");
    assert!(
        stderr.contains(&format!("{name}: ")) && stderr.contains(problem),
        "{name} {args:?}: expected {problem:?} in:\n{stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "{name} {args:?} panicked:\n{stderr}"
    );
}

/// Each probe without its required argument, or with a bad one, prints its usage and exits 2.
#[test]
fn probes_refuse_bad_usage() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let missing = missing.to_str().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    let empty = empty.to_str().unwrap();
    let cases: &[(&str, &[&str], &str)] = &[
        ("redb_stats", &[], "missing FILE"),
        ("redb_stats", &[missing], "no such sidecar"),
        (
            "context_loop",
            &[],
            "usage: cargo run -p treelog-dev --release --example context_loop",
        ),
        ("context_loop", &[missing], "missing.jsonl: no such file"),
        (
            "context_loop",
            &[empty, "many"],
            "N must be a whole number, got \"many\"",
        ),
        (
            "open_timing",
            &[empty, "--fast"],
            "unknown option \"--fast\"",
        ),
        ("parse_timing", &[missing], "read "),
        ("many_opens", &[], "missing DIR"),
        ("append_timing", &["ten"], "N must be a whole number"),
        ("secrets_timing", &[missing], "missing.jsonl: no such file"),
    ];
    for (name, args, problem) in cases {
        check_probe_refuses(name, args, problem);
    }
}

/// `redb_stats` takes the log (as every treelog tool does) and finds its sidecar; a file
/// that is not a sidecar is named in a clear error.
#[test]
fn redb_stats_reads_a_logs_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let mut session = treelog::Session::open(&log, Default::default()).unwrap();
    session
        .append_message(r#"{"role":"user","content":"hi","timestamp":1}"#)
        .unwrap();
    session.close().unwrap();
    drop(treelog::Session::open(&log, Default::default()).unwrap());

    let output = run_example("redb_stats", &[log.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.lines().any(|line| line.starts_with("records: len ")),
        "{stdout}"
    );

    let not_a_sidecar = dir.path().join("x.treelog");
    std::fs::write(&not_a_sidecar, b"{\"type\":\"session\"}\n").unwrap();
    check_probe_refuses(
        "redb_stats",
        &[not_a_sidecar.to_str().unwrap()],
        "x.treelog: not a readable sidecar index",
    );
}
