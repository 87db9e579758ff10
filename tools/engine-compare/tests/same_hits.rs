//! Both engines index the same documents and read queries the same way: on bundled
//! transcripts, every query finds the same set of (session, line) with FTS5 as with
//! `treelog::search`, also after a log grew. Run by hand (`cargo test --manifest-path
//! tools/engine-compare/Cargo.toml`); the crate is outside the workspace, so CI does not.

use std::path::{Path, PathBuf};

use engine_compare::{Engine, build, search};

/// More than any query here finds, so that the whole sets are compared.
const LIMIT_ALL: usize = 100_000;

/// Bundled transcripts pi wrote (1.6.0 and 0.73.1), copied into the test's directory.
const TRANSCRIPTS: &[&str] = &[
    "pi16-demo.jsonl",
    "pi16-sample-300.jsonl",
    "pi073-gen-a.jsonl",
    "pi16-gen-b.jsonl",
];

/// Words, a phrase, a prefix and exclusions, each found in at least one transcript.
const QUERIES: &[&str] = &[
    "test",
    "greet",
    "\"the test\"",
    "gre*",
    "test -greet",
    "bash",
    "file read",
];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(name)
}

fn hit_set(engine: Engine, dir: &Path, query: &str) -> Vec<(String, u64)> {
    let mut hits: Vec<(String, u64)> = search(engine, dir, query, LIMIT_ALL)
        .unwrap_or_else(|error| panic!("{} on {query}: {error}", engine.name()))
        .into_iter()
        .map(|hit| (hit.key, hit.line))
        .collect();
    hits.sort();
    hits
}

fn assert_same_hits(dir: &Path) {
    let mut found_any = 0;
    for query in QUERIES {
        let fts5 = hit_set(Engine::Fts5, dir, query);
        let tantivy = hit_set(Engine::Tantivy, dir, query);
        assert_eq!(
            fts5, tantivy,
            "query {query}: fts5 (left) against tantivy (right)"
        );
        found_any += usize::from(!fts5.is_empty());
    }
    assert!(
        found_any >= QUERIES.len() - 1,
        "the queries should find something"
    );
}

/// A fresh build of both engines finds the same (session, line) for every query, and so does
/// the catch-up of each after a log grew by another log's lines.
#[test]
fn both_engines_find_the_same_entries() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    for (at, name) in TRANSCRIPTS.iter().enumerate() {
        let into = if at % 2 == 0 { dir.path() } else { &sub };
        std::fs::copy(data(name), into.join(name)).unwrap();
    }
    for engine in Engine::ALL {
        build(engine, dir.path()).unwrap();
    }
    assert_same_hits(dir.path());

    let grown = dir.path().join(TRANSCRIPTS[0]);
    let appended = std::fs::read_to_string(data(TRANSCRIPTS[2])).unwrap();
    let body: String = appended.split_inclusive('\n').skip(1).collect();
    let mut log = std::fs::read_to_string(&grown).unwrap();
    log.push_str(&body);
    std::fs::write(&grown, log).unwrap();
    assert_same_hits(dir.path());
}
