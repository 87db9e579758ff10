//! `treelog search` and `treelog reindex --search` end to end: the output and exit codes `treelog
//! search --help` documents, hits checked against a brute-force scan of the same logs, searches at
//! once, and a reindex killed mid-update repaired by the next search.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use treelog::search;
use treelog_testkit::rng::Rng;
use treelog_testkit::search_texts::followed_entry_texts;

fn treelog(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run treelog")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(name)
}

/// A directory with the bundled transcripts, one of them in a subdirectory.
fn corpus() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    for (name, into) in [
        ("pi16-sample-300.jsonl", ""),
        ("pi16-gen-a.jsonl", "sub"),
        ("pi-sample-200.jsonl", ""),
    ] {
        std::fs::copy(data(name), dir.path().join(into).join(name)).unwrap();
    }
    dir
}

/// (session as printed, line, id) of every entry under `dir` whose text matches `query`,
/// found by reading every line; sessions are written as `prefix` joined with the relative path.
fn brute_force(dir: &Path, prefix: &Path, query: &str) -> BTreeSet<(PathBuf, u64, String)> {
    let query = search::parse(query).unwrap();
    followed_entry_texts(dir)
        .into_iter()
        .filter(|entry| search::matches_text(&query, &entry.text))
        .map(|entry| (prefix.join(&entry.key), entry.line, entry.id))
        .collect()
}

fn json_hits(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn hit_set(hits: &[Value]) -> BTreeSet<(PathBuf, u64, String)> {
    hits.iter()
        .map(|hit| {
            (
                PathBuf::from(hit["session"].as_str().unwrap()),
                hit["line"].as_u64().unwrap(),
                hit["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// `--json` prints one object per hit with exactly the documented keys, and the hits are those of
/// a brute-force scan, with session paths as found from the PATH given (relative here).
#[test]
fn json_hits_have_the_keys_and_match_a_scan() {
    let dir = corpus();
    for query in ["tokio", "\"build lock\"", "bench*", "lock -tokio", "LOCK"] {
        let output = treelog(
            &["search", query, ".", "--json", "--limit", "100000"],
            dir.path(),
        );
        let hits = json_hits(&output);
        let expected = brute_force(dir.path(), Path::new("."), query);
        assert_eq!(
            output.status.code(),
            Some(if expected.is_empty() { 1 } else { 0 }),
            "{query}"
        );
        assert_eq!(hit_set(&hits), expected, "{query}");
        for hit in &hits {
            let keys: Vec<&str> = hit
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                [
                    "session",
                    "line",
                    "id",
                    "type",
                    "role",
                    "timestamp",
                    "score",
                    "snippet",
                    "edited",
                    "activePath",
                    "agent",
                ]
            );
            assert!(hit["score"].as_f64().unwrap() > 0.0);
        }
    }
}

/// The human line is `FILE:LINE  ROLE  TIMESTAMP  snippet`, without colour when stdout is
/// not a terminal; --limit caps the hits, a file PATH searches that file only.
#[test]
fn human_output_limit_and_file_paths() {
    let dir = corpus();
    let output = treelog(&["search", "tokio", "--limit", "3"], dir.path());
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.lines().count(), 3);
    for line in text.lines() {
        let fields: Vec<&str> = line.splitn(4, "  ").collect();
        assert_eq!(fields.len(), 4, "{line}");
        let (file, number) = fields[0].rsplit_once(':').unwrap();
        assert!(file.starts_with("./") && file.ends_with(".jsonl"), "{line}");
        assert!(number.parse::<u64>().unwrap() > 1, "{line}");
        assert!(fields[2].starts_with("2025-"), "{line}");
        assert!(fields[3].to_lowercase().contains("tokio"), "{line}");
        assert!(!line.contains('\x1b'), "{line}");
    }
    let file = dir.path().join("sub/pi16-gen-a.jsonl");
    let output = treelog(
        &[
            "search",
            "cache",
            file.to_str().unwrap(),
            "--json",
            "--limit",
            "100000",
        ],
        dir.path(),
    );
    let expected: BTreeSet<_> = brute_force(dir.path(), dir.path(), "cache")
        .into_iter()
        .filter(|(path, _, _)| path == &file)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(hit_set(&json_hits(&output)), expected);
}

/// Exit codes as grep's: 1 for no hit, 2 for a bad query, bad flags or an unreadable PATH,
/// each with a reason on stderr.
#[test]
fn exit_codes() {
    let dir = corpus();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["search", "zzzqqqxxx"], 1, ""),
        (&["search", "-tokio"], 2, "bad query"),
        (&["search", "\"open"], 2, "no closing quote"),
        (
            &["search", "tokio", "missing-dir"],
            2,
            "missing-dir: cannot open: no such file or directory",
        ),
        (&["search", "tokio", "--since", "yesterday"], 2, "--since"),
        (&["search", "tokio", "--limit", "0"], 2, "limit"),
        (&["search", "tokio", "--role", "robot"], 2, "robot"),
    ];
    for (args, code, said) in cases {
        let output = treelog(args, dir.path());
        assert_eq!(output.status.code(), Some(*code), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// Searches started at once on a directory without an index all answer the same, and the
/// index they leave answers later searches without a rebuild.
#[test]
fn searches_at_once() {
    let dir = corpus();
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_treelog"))
                .args(["search", "tokio", ".", "--json", "--limit", "100000"])
                .current_dir(dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let expected = brute_force(dir.path(), Path::new("."), "tokio");
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(hit_set(&json_hits(&output)), expected);
    }
    let output = treelog(
        &["search", "tokio", "--json", "--limit", "100000"],
        dir.path(),
    );
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A `reindex --search` killed at random moments of its update leaves an index that the next
/// search repairs or rebuilds: its hits are still exactly the scan's.
#[test]
fn killed_update_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..4 {
        let file = dir.path().join(format!("g{seed}.jsonl"));
        crate::synth::generate(&file, 1000, seed);
    }
    let mut rng = Rng(2105);
    for round in 0..4 {
        if round % 2 == 1 {
            // Appends too, so that the killed update is a catch-up.
            use std::io::Write;
            let file = dir.path().join(format!("g{}.jsonl", rng.below(4)));
            let mut log = std::fs::OpenOptions::new().append(true).open(file).unwrap();
            writeln!(
                log,
                r#"{{"type":"message","id":"r{round}","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"tokio again"}}}}"#
            )
            .unwrap();
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_treelog"))
            .args(["reindex", "--search", "--force", "."])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.below(400u64)));
        let _ = child.kill();
        let _ = child.wait();
        let output = treelog(
            &["search", "tokio", ".", "--json", "--limit", "1000000"],
            dir.path(),
        );
        assert_eq!(
            hit_set(&json_hits(&output)),
            brute_force(dir.path(), Path::new("."), "tokio"),
            "round {round}"
        );
    }
}

/// `reindex --search DIR` builds the index ahead of time: the next search reads no log.
/// The first build says it builds (there was nothing to rebuild).
#[test]
fn reindex_search_builds_ahead() {
    let dir = corpus();
    let output = treelog(&["reindex", "--search", ".", "--json"], dir.path());
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "treelog: ./.treelog-search: there is no search index yet; building it from the logs\n"
    );
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["readWhole"], 3);
    let output = treelog(&["reindex", "--search", ".", "--json"], dir.path());
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (summary["fresh"].as_u64(), summary["readWhole"].as_u64()),
        (Some(3), Some(0))
    );
    let output = treelog(
        &["reindex", "--search", "--force", ".", "--json"],
        dir.path(),
    );
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["readWhole"], 3);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "treelog: ./.treelog-search: --force; rebuilding the search index from the logs\n",
        "one notice for --force (the emptied index was once taken for a half-written one)"
    );
    let output = treelog(
        &["reindex", "--search", "pi16-sample-300.jsonl"],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(2));
}

/// The search index is a cache: where it cannot be written (here a file stands where its
/// directory goes, as a read-only folder would refuse it), a search still answers, with the
/// hits of a writable folder and one notice naming the path and the reason, and writes
/// nothing; `reindex --search`, whose one job is to write it, fails with exit 2. Regression:
/// such a search exited 2 with "cannot create the search index directory".
#[test]
fn an_unwritable_index_does_not_fail_the_search() {
    let writable = corpus();
    let expected = treelog(
        &["search", "--json", "--limit", "1000", "the", "."],
        writable.path(),
    );
    assert_eq!(expected.status.code(), Some(0));

    let dir = corpus();
    let blocker = dir.path().join(".treelog-search");
    std::fs::write(&blocker, "not a directory").unwrap();
    for _ in 0..2 {
        let output = treelog(
            &["search", "--json", "--limit", "1000", "the", "."],
            dir.path(),
        );
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(json_hits(&output), json_hits(&expected));
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            "treelog: ./.treelog-search: cannot create the search index directory: file exists; \
             searching without writing the index (--index-dir DIR keeps it elsewhere)\n"
        );
    }
    assert_eq!(std::fs::read(&blocker).unwrap(), b"not a directory");
    let output = treelog(&["reindex", "--search", "."], dir.path());
    assert_eq!(output.status.code(), Some(2));
}
