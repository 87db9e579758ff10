//! In-process micro-benchmarks of the engine (`cargo bench`). Whole-process figures against a
//! full replay of the log, with memory, are `treelog bench` (BENCHMARKS.md).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use treelog::format::line::classify;
use treelog::{NewEntry, Session, SessionOptions};

fn main() {
    divan::main();
}

const SAMPLE: &str = include_str!("../tests/data/pi-sample-200.jsonl");

/// A 20,000-entry session (a chain with a compaction every 2,000 entries), built once.
fn fixture() -> &'static Path {
    static FIXTURE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("bench.jsonl");
        let mut session = Session::open(&path, SessionOptions::default()).expect("create");
        let messages: Vec<&str> = SAMPLE
            .lines()
            .filter(|line| line.contains(r#""type":"message""#))
            .collect();
        for chunk in 0..10 {
            let mut batch = Vec::new();
            for index in 0..1_999 {
                let line = messages[(chunk * 1_999 + index) % messages.len()];
                let message = treelog::format::line::raw_field(line, "message")
                    .expect("sample messages have a message");
                batch.push(NewEntry::Message {
                    message: message.to_owned(),
                });
            }
            session.append_many(batch).expect("append");
            let path_ids = session.path_ids(None).expect("path");
            let first_kept = path_ids[path_ids.len() - 20].clone();
            session
                .append_compaction("summary", &first_kept, "1000", None, None)
                .expect("compaction");
        }
        session.close().expect("close");
        drop(Session::open(&path, SessionOptions::default()).expect("index"));
        (dir, path)
    });
    path
}

/// Classifying every line of the bundled pi transcript (the per-line cost of indexing).
#[divan::bench]
fn classify_sample_lines(bencher: divan::Bencher) {
    bencher
        .counter(divan::counter::BytesCount::of_str(SAMPLE))
        .bench(|| {
            SAMPLE
                .lines()
                .map(|line| classify(divan::black_box(line), false, false))
                .filter(|line| matches!(line, treelog::format::line::Line::Entry(_)))
                .count()
        });
}

/// Opening an indexed session (quick checks, no replay).
#[divan::bench]
fn open_indexed(bencher: divan::Bencher) {
    let path = fixture();
    bencher.bench(|| Session::open(path, SessionOptions::default()).expect("open"));
}

/// The context of the leaf: from the latest compaction's first kept entry.
#[divan::bench]
fn build_context(bencher: divan::Bencher) {
    let session = Session::open(fixture(), SessionOptions::default()).expect("open");
    bencher.bench_local(|| session.build_context(None).expect("context").messages.len());
}

/// Ids from the leaf to the root of a 20,000-deep path.
#[divan::bench]
fn path_ids(bencher: divan::Bencher) {
    let session = Session::open(fixture(), SessionOptions::default()).expect("open");
    bencher.bench_local(|| session.path_ids(None).expect("path").len());
}

/// One append with index maintenance, no fsync.
#[divan::bench]
fn append_message(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("append.jsonl");
    let mut session = Session::open(&path, SessionOptions::default()).expect("create");
    let message = r#"{"role":"user","content":"a short question about the code","timestamp":1}"#;
    bencher.bench_local(|| session.append_message(message).expect("append"));
}
