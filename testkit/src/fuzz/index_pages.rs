//! Fuzz target `index_pages`: stored record and id pages decoded from any bytes.

use treelog::format::id_index::{IdPageView, encode_id_page, id_page_crc};
use treelog::format::page::{PageView, encode_page};

/// Input: a first seq (8 bytes, little-endian), then bytes read as a stored record page and as
/// a stored id page of `ids` under that key (format-spec/index.md §2), as they are and sealed
/// with the crc they would need, so that the fuzzer reaches the checks behind the crc.
/// Whatever the bytes, reading either gives records, entries or errors, never a panic;
/// records that decode re-encode to a page that decodes to them again, and so do id entries.
pub fn index_pages(data: &[u8]) {
    let Some((first, bytes)) = data.split_first_chunk::<8>() else {
        return;
    };
    let first_seq = u64::from_le_bytes(*first);
    if let Ok(page) = PageView::new(first_seq, bytes) {
        for slot in 0..page.len() as u64 {
            let record = page
                .get(first_seq.wrapping_add(slot))
                .expect("a slot below the count is in the page");
            let _ = (record.parent_seq(), record.depth());
            let _ = record.id().map(|id| id.as_str().len());
        }
        assert!(
            page.get(first_seq.wrapping_add(page.len() as u64))
                .is_none()
        );
        if let Ok(records) = page.decode_all() {
            let again = encode_page(first_seq, &records);
            let decoded = PageView::new(first_seq, &again).and_then(|page| page.decode_all());
            assert_eq!(
                decoded.as_ref(),
                Ok(&records),
                "a re-encoded page decodes differently"
            );
        }
    }
    let page_key = first_seq;
    let _ = IdPageView::new("ids", page_key, bytes);
    let mut sealed = bytes.to_vec();
    sealed.extend_from_slice(&id_page_crc("ids", page_key, bytes).to_le_bytes());
    if let Ok(page) = IdPageView::new("ids", page_key, &sealed) {
        assert!(
            IdPageView::new("ids-recent", page_key, &sealed).is_err(),
            "the crc covers the table's name"
        );
        let entries: Vec<(u64, u64)> = page.entries().collect();
        for (key, _) in &entries {
            assert!(page.covers(*key), "a stored key is in the page's coverage");
        }
        for (key, seq) in &entries {
            assert_eq!(page.get(*key), Some(*seq), "a stored key is found");
            assert!(page.holds_key_in(*key..=*key));
        }
        // Keys between two stored ones, and before the first or after the last, are absent.
        for pair in entries.windows(2) {
            let (low, high) = (pair[0].0, pair[1].0);
            if high - low > 1 {
                assert_eq!(page.get(low + 1), None, "a key between two is absent");
                assert!(!page.holds_key_in(low + 1..=high - 1));
            }
        }
        if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
            if first.0 > 0 {
                assert_eq!(page.get(first.0 - 1), None);
                assert!(!page.holds_key_in(0..=first.0 - 1));
            }
            if last.0 < u64::MAX {
                assert_eq!(page.get(last.0 + 1), None);
                assert!(!page.holds_key_in(last.0 + 1..=u64::MAX));
            }
        }
        let again = encode_id_page("ids", page_key, page.end(), &entries);
        let decoded: Vec<(u64, u64)> = IdPageView::new("ids", page_key, &again)
            .expect("an encoded id page decodes")
            .entries()
            .collect();
        assert_eq!(decoded, entries, "a re-encoded id page decodes differently");
    }
}
