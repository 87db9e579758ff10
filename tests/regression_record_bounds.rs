//! Regression: a damaged index record that names a huge or out-of-range line (len_bytes =
//! u32::MAX) made a read allocate a buffer of that size before any check. Reads now refuse a
//! record outside the indexed prefix with `Error::Index`, before allocating.

use redb::{ReadableTable, TableDefinition};
use treelog::format::record::RECORD_FIXED_LEN;
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
        // A page is a u32 count, then fixed parts; len_bytes is at offset 6 of each.
        for (first_seq, mut bytes) in all {
            let count = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
            for slot in 0..count {
                let at = 4 + slot * RECORD_FIXED_LEN + 6;
                bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            }
            records
                .insert(first_seq, bytes.as_slice())
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
