//! Damage written into a sidecar behind treelog's back, as a damaged disk could: the tests of
//! the index's checks use it (format-spec/index.md).

use std::path::Path;

use treelog::format::record::Record;

/// Tables of the sidecar, for tests that damage it on purpose (format-spec/index.md).
/// `children` values are the key's seal (format-spec/index.md, "Checksums").
pub const CHILDREN: redb::TableDefinition<(u64, u64), u32> = redb::TableDefinition::new("children");
pub const RECORDS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("records");

/// Writes into the sidecar of `path` behind treelog's back, as a damaged disk could.
pub fn tamper(path: &Path, edit: impl FnOnce(&redb::WriteTransaction)) {
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .create(treelog::sidecar_path(path))
        .expect("open sidecar");
    let txn = db.begin_write().expect("write transaction");
    edit(&txn);
    txn.commit().expect("commit");
}

/// Replaces the stored page that holds record `seq` by `edit` of its bytes (format-spec/index.md:
/// pages keyed by their first seq).
pub fn tamper_page(txn: &redb::WriteTransaction, seq: u64, edit: impl FnOnce(u64, &mut Vec<u8>)) {
    use redb::ReadableTable;
    let mut records = txn.open_table(RECORDS).expect("records table");
    let (first, mut bytes) = {
        let (key, value) = records
            .range(..=seq)
            .expect("range")
            .next_back()
            .expect("a page holds the record")
            .expect("readable page");
        (key.value(), value.value().to_vec())
    };
    edit(first, &mut bytes);
    records.insert(first, bytes.as_slice()).expect("patch");
}

/// The tags field (kind, flags, opaque reason) of a record page (format-spec/index.md §2).
pub const FIELD_TAGS: usize = 6;

/// Overwrites the first stored byte of `field` in record `seq` with `byte`, leaving the rest of
/// its page as it was: damage that treelog's codec could not write. The field is located by
/// reading the page's descriptors as format-spec/index.md §2 lays them out (count, id mode,
/// 14 descriptors of width | base length << 4, the bases, then the records); the field must
/// be stored in at least one byte from a base of 0, so that `byte` is its code.
pub fn patch_stored_field(txn: &redb::WriteTransaction, seq: u64, field: usize, byte: u8) {
    tamper_page(txn, seq, |first, page| {
        let descriptors = &page[2..16];
        let (width, base_len) = (descriptors[field] & 0x0f, descriptors[field] >> 4);
        assert!(
            width >= 1 && base_len == 0,
            "field {field}: {descriptors:?}"
        );
        let bases: usize = descriptors.iter().map(|d| usize::from(d >> 4)).sum();
        let stride: usize = descriptors.iter().map(|d| usize::from(d & 0x0f)).sum();
        let before: usize = descriptors[..field]
            .iter()
            .map(|d| usize::from(d & 0x0f))
            .sum();
        let at = 16 + bases + (seq - first) as usize * stride + before;
        page[at] = byte;
    });
}

/// Changes record `seq` by `edit`, re-encoding its page with treelog's own codec: any value a
/// `Record` can hold, damaged ones included (a forward link, a wrong length), is stored as is.
pub fn patch_record(txn: &redb::WriteTransaction, seq: u64, edit: impl FnOnce(&mut Record)) {
    use treelog::format::page::{PageView, encode_page};
    tamper_page(txn, seq, |first, bytes| {
        let mut records = PageView::new(first, bytes)
            .and_then(|page| page.decode_all())
            .expect("a page treelog wrote decodes");
        edit(&mut records[(seq - first) as usize]);
        *bytes = encode_page(first, &records);
    });
}
