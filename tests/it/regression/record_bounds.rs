//! Regression: a damaged index record that names a huge or out-of-range line (len_bytes =
//! u32::MAX) made a read allocate a buffer of that size before any check. Reads now refuse a
//! record outside the indexed prefix before allocating, as damage: the index is rebuilt from
//! the log and the read answers from it.

use redb::ReadableTable;
use treelog::format::page::{PageView, encode_page};
use treelog::format::record::Record;
use treelog::{IndexState, Session, SessionOptions};

/// The seq of the last record in the sidecar (the last of its last page).
fn last_seq(txn: &redb::WriteTransaction) -> u64 {
    let records = txn
        .open_table(treelog_testkit::RECORDS)
        .expect("records table");
    let (first_seq, page) = records.last().expect("read").expect("a page");
    let count = PageView::new(first_seq.value(), page.value())
        .and_then(|page| page.decode_all())
        .expect("a page treelog wrote decodes")
        .len();
    first_seq.value() + count as u64 - 1
}

/// Every record's length but the last one's set to u32::MAX (the open checks the last record
/// against its line), in pages sealed as treelog seals them (what a bug, not the disk, would
/// write): the context read refuses the record before allocating, rebuilds, and answers as
/// the log does.
#[test]
fn oversized_record_is_rebuilt_not_read() {
    let (_dir, path) = treelog_testkit::indexed_sample();
    let expected = Session::open(&path, SessionOptions::default())
        .and_then(|session| session.build_context(None))
        .map(|context| format!("{context:?}"))
        .expect("context");
    treelog_testkit::tamper(&path, |txn| {
        let last = last_seq(txn);
        let mut records = txn
            .open_table(treelog_testkit::RECORDS)
            .expect("records table");
        let pages: Vec<(u64, Vec<u8>)> = records
            .iter()
            .expect("iterate")
            .map(|item| {
                let (key, value) = item.expect("page");
                (key.value(), value.value().to_vec())
            })
            .collect();
        for (first_seq, bytes) in pages {
            let mut page = PageView::new(first_seq, &bytes)
                .and_then(|page| page.decode_all())
                .expect("a page treelog wrote decodes");
            for (seq, record) in (first_seq..).zip(&mut page) {
                if seq != last {
                    record.len_bytes = u32::MAX;
                }
            }
            records
                .insert(first_seq, encode_page(first_seq, &page).as_slice())
                .expect("patch page");
        }
    });

    let session =
        Session::open(&path, SessionOptions::default()).expect("open passes the quick checks");
    let context = session.build_context(None).expect("rebuilt and answered");
    assert_eq!(format!("{context:?}"), expected);
    match session.index_state() {
        IndexState::Rebuilt {
            reason,
            damaged: true,
        } => assert!(reason.contains("outside"), "{reason}"),
        other => panic!("expected a rebuild for damage, got {other:?}"),
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
        let (_dir, path) = treelog_testkit::indexed_sample();
        let expected = Session::open(&path, SessionOptions::default())
            .and_then(|session| session.build_context(None))
            .map(|context| format!("{context:?}"))
            .expect("context");
        treelog_testkit::tamper(&path, |txn| {
            treelog_testkit::patch_record(txn, last_seq(txn), damage)
        });
        let session = Session::open(&path, SessionOptions::default()).expect("open");
        match session.index_state() {
            IndexState::Rebuilt { reason, .. } => {
                assert!(reason.contains(reason_part), "{case}: {reason}");
            }
            other => panic!("{case}: expected a rebuild, got {other:?}"),
        }
        let context = session.build_context(None).expect("context");
        assert_eq!(format!("{context:?}"), expected, "{case}");
    }
}
