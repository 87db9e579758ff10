//! Regression: a damaged index record that names a huge or out-of-range line (len_bytes =
//! u32::MAX) made a read allocate a buffer of that size before any check. Reads now refuse a
//! record outside the indexed prefix with `Error::Index`, before allocating.

use redb::{ReadableTable, TableDefinition};
use treelog::format::page::{PageView, encode_page};
use treelog::{Error, Session, SessionOptions, sidecar_path};

const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");

/// Every record's length set to u32::MAX: the context read is an index error, not an abort.
#[test]
fn oversized_record_is_an_index_error() {
    let dir = tempfile::tempdir().expect("temp dir");
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

    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open(sidecar_path(&path))
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
        for (first_seq, bytes) in all {
            let mut page = PageView::new(first_seq, &bytes)
                .and_then(|page| page.decode_all())
                .expect("a page treelog wrote decodes");
            for record in &mut page {
                record.len_bytes = u32::MAX;
            }
            records
                .insert(first_seq, encode_page(first_seq, &page).as_slice())
                .expect("patch record");
        }
    }
    txn.commit().expect("commit");
    drop(db);

    let session =
        Session::open(&path, SessionOptions::default()).expect("open passes the quick checks");
    match session.build_context(None) {
        Err(Error::Index { reason, .. }) => assert!(reason.contains("outside"), "{reason}"),
        other => panic!("expected an index error, got {other:?}"),
    }
}
