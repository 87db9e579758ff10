//! Regression: a damaged index record that names a huge or out-of-range line (len_bytes =
//! u32::MAX) made a read allocate a buffer of that size before any check. Reads now refuse a
//! record outside the indexed prefix with `Error::Index`, before allocating.

use redb::{ReadableTable, TableDefinition};
use treelog::format::page::{PageView, encode_page};
use treelog::format::record::Record;
use treelog::{Error, IndexState, Session, SessionOptions, sidecar_path};

const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");

/// Calls `damage(seq, last_seq, record)` on every record of the index (through the page codec,
/// so that the damage still decodes).
fn damage_records(path: &std::path::Path, damage: impl Fn(u64, u64, &mut Record)) {
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open(sidecar_path(path))
        .expect("open sidecar");
    let txn = db.begin_write().expect("write txn");
    {
        let mut records = txn.open_table(RECORDS).expect("records table");
        let all: Vec<(u64, Vec<u8>)> = records
            .iter()
            .expect("iterate")
            .map(|item| {
                let (key, value) = item.expect("record");
                (key.value(), value.value().to_vec())
            })
            .collect();
        let pages: Vec<(u64, Vec<Record>)> = all
            .iter()
            .map(|(first_seq, bytes)| {
                let page = PageView::new(*first_seq, bytes)
                    .and_then(|page| page.decode_all())
                    .expect("a page treelog wrote decodes");
                (*first_seq, page)
            })
            .collect();
        let last_seq = pages
            .iter()
            .map(|(first_seq, page)| first_seq + page.len() as u64 - 1)
            .max()
            .expect("records");
        for (first_seq, mut page) in pages {
            for (seq, record) in (first_seq..).zip(&mut page) {
                damage(seq, last_seq, record);
            }
            records
                .insert(first_seq, encode_page(first_seq, &page).as_slice())
                .expect("patch record");
        }
    }
    txn.commit().expect("commit");
}

fn sample_copy(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("s.jsonl");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/pi-sample-200.jsonl"
        ),
        &path,
    )
    .expect("copy sample");
    drop(Session::open(&path, SessionOptions::default()).expect("build the index"));
    path
}

/// Every record's length but the last one's set to u32::MAX (the open checks the last record
/// against its line): the context read is an index error, not an abort.
#[test]
fn oversized_record_is_an_index_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = sample_copy(&dir);
    damage_records(&path, |seq, last_seq, record| {
        if seq != last_seq {
            record.len_bytes = u32::MAX;
        }
    });

    let session =
        Session::open(&path, SessionOptions::default()).expect("open passes the quick checks");
    match session.build_context(None) {
        Err(Error::Index { reason, .. }) => assert!(reason.contains("outside"), "{reason}"),
        other => panic!("expected an index error, got {other:?}"),
    }
}

/// The last record damaged so that it still decodes (outside the log, another crc32, another
/// id: what a page misread after a layout change without a schema bump looks like): a quick
/// open checks that record against its line and rebuilds; the answers are the log's.
#[test]
fn damaged_last_record_rebuilds_on_open() {
    type Damage = fn(&mut Record);
    let cases: [(&str, Damage, &str); 3] = [
        (
            "length",
            |record| record.len_bytes = u32::MAX,
            "outside the indexed prefix",
        ),
        ("crc32", |record| record.crc32 ^= 1, "crc32"),
        ("id", |record| record.id = "0badc0de".into(), "names id"),
    ];
    for (case, damage, reason_part) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = sample_copy(&dir);
        let expected = Session::open(&path, SessionOptions::default())
            .and_then(|session| session.build_context(None))
            .map(|context| format!("{context:?}"))
            .expect("context");
        damage_records(&path, |seq, last_seq, record| {
            if seq == last_seq {
                damage(record);
            }
        });
        let session = Session::open(&path, SessionOptions::default()).expect("open");
        match session.index_state() {
            IndexState::Rebuilt { reason } => {
                assert!(reason.contains(reason_part), "{case}: {reason}");
            }
            other => panic!("{case}: expected a rebuild, got {other:?}"),
        }
        let context = session.build_context(None).expect("context");
        assert_eq!(format!("{context:?}"), expected, "{case}");
    }
}
