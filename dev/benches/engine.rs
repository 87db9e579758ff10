//! In-process micro-benchmarks of the engine (`cargo bench -p treelog-dev --bench engine`). Whole-process figures against a
//! full replay of the log, with memory, are `treelog-dev bench` (BENCHMARKS.md).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use treelog::format::line::classify;
use treelog::{NewEntry, Session, SessionOptions};

fn main() {
    divan::main();
}

const SAMPLE: &str = include_str!("../../tests/data/pi-sample-200.jsonl");

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
                .append_compaction("summary", Some(&first_kept), "1000", None, None, None)
                .expect("compaction");
        }
        session.close().expect("close");
        drop(Session::open(&path, SessionOptions::default()).expect("index"));
        (dir, path)
    });
    path
}

/// A full id page of the kind a 1M-entry table of pi's ids holds (keys ~6,000 apart, seqs
/// below 2^20: 674 entries of 6 bytes), and of hashed text ids (8 + 3 bytes).
fn full_id_page(key_step: u64) -> (Vec<u8>, u64, Vec<u64>) {
    use treelog::format::id_index::{encode_id_page, page_chunks};
    let entries: Vec<(u64, u64)> = (0..3_000u64)
        .map(|n| (n * key_step + n % 7, (n * 2_654_435_761) % (1 << 20)))
        .collect();
    let page = page_chunks(&entries, true)
        .next()
        .expect("entries fill a page");
    (
        encode_id_page("ids", page[0].0, None, page),
        page[0].0,
        page.iter().map(|entry| entry.0).collect(),
    )
}

/// One id lookup inside a stored page: the page's checks (its crc, every key's order, its
/// coverage) and the binary search, what `seq_of` pays per id table after redb hands it the
/// page.
#[divan::bench(args = [("pi ids", 6_000), ("text ids", 1 << 50)])]
fn id_page_lookup(bencher: divan::Bencher, (_, key_step): (&str, u64)) {
    use treelog::format::id_index::IdPageView;
    let (bytes, page_key, keys) = full_id_page(key_step);
    let mut next = 0;
    bencher.bench_local(|| {
        next = (next + 1) % keys.len();
        IdPageView::new("ids", page_key, divan::black_box(&bytes))
            .expect("a page treelog wrote")
            .get(keys[next])
    });
}

/// One entry looked up by id in the 20,000-entry session: the id tables' page (one range read
/// and the page's checks) and the entry's line read back.
#[divan::bench]
fn entry_by_id(bencher: divan::Bencher) {
    let session = Session::open(fixture(), SessionOptions::default()).expect("open");
    let ids = session.path_ids(None).expect("path");
    let mut next = 0;
    bencher.bench_local(|| {
        next = (next + 7_919) % ids.len();
        session.entry(&ids[next]).expect("lookup").is_some()
    });
}

/// One record decoded from a full record page of pi-like entries: the page's checks and the
/// record's fields, what a context pays per message for its record.
#[divan::bench]
fn record_page_decode(bencher: divan::Bencher) {
    use treelog::format::page::{PAGE_RECORDS_MAX, PageView, encode_page};
    use treelog::format::record::Record;
    let records: Vec<Record> = (0..PAGE_RECORDS_MAX as u64)
        .map(Record::pi_like_message)
        .collect();
    let bytes = encode_page(0, &records);
    let mut next = 0;
    bencher.bench_local(|| {
        next = (next + 1) % PAGE_RECORDS_MAX as u64;
        PageView::new(0, divan::black_box(&bytes))
            .expect("a page treelog wrote")
            .get(next)
            .map(|record| record.decode())
    });
}

/// 4,096 pi-like records cut into pages as a flush does (`try_push` until a page is full,
/// then `finish`): the per-record cost of writing the index.
#[divan::bench]
fn record_pages_encode(bencher: divan::Bencher) {
    use treelog::format::page::PageBuilder;
    use treelog::format::record::Record;
    let records: Vec<Record> = (0..4096).map(Record::pi_like_message).collect();
    bencher
        .counter(divan::counter::ItemsCount::new(records.len()))
        .bench_local(|| {
            let mut page = PageBuilder::new(0);
            let mut bytes = 0;
            for record in divan::black_box(&records) {
                if !page.try_push(record) {
                    bytes += page.finish().len();
                    page.push(record);
                }
            }
            bytes + page.finish().len()
        });
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
