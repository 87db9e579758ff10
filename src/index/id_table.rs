//! The paged id tables in redb (format-spec/index.md, "Ids"): a lookup, merging a flush's new
//! ids into `ids`, and writing entries in key order. The page layout is
//! `format::id_index`; errors come back as text for the store to wrap with the sidecar's path.

use std::ops::Bound;

use redb::{ReadableTable, Table, TableDefinition};

use crate::format::id_index::{
    ID_PAGE_ENTRIES_MAX, IdPageView, encode_id_page, merge_entries, page_chunks,
};

pub(crate) type IdPages<'name> = TableDefinition<'name, u64, &'static [u8]>;

/// Key of the page → the page (format-spec/index.md).
pub(crate) const IDS: IdPages<'static> = TableDefinition::new("ids");
/// Ids whose key another id holds in `ids` (almost always empty).
pub(crate) const ID_COLLISIONS: TableDefinition<&str, u64> = TableDefinition::new("id-collisions");

type IdResult<T> = std::result::Result<T, String>;

fn decode(page_key: u64, bytes: &[u8]) -> IdResult<IdPageView<'_>> {
    let view =
        IdPageView::new(bytes).map_err(|error| format!("{} (page {page_key:#x})", error.0))?;
    if view.first_key() != page_key {
        return Err(format!(
            "id page {page_key} starts at key {}",
            view.first_key()
        ));
    }
    Ok(view)
}

/// The seq filed under `key`: one range read and a binary search in the page that may hold it.
pub(crate) fn lookup(
    table: &impl ReadableTable<u64, &'static [u8]>,
    key: u64,
) -> IdResult<Option<u64>> {
    let Some(item) = table.range(..=key).map_err(|e| e.to_string())?.next_back() else {
        return Ok(None);
    };
    let (page_key, page) = item.map_err(|e| e.to_string())?;
    Ok(decode(page_key.value(), page.value())?.get(key))
}

/// Files `entries` (sorted by key, no key twice) into `table`: each page they fall into is
/// rewritten once with them merged in (a key already there takes the new seq), and a page
/// that grows past the maximum is split. A page being rewritten must name only seqs below
/// `stored_seq_end` (the records the table describes): rewriting a page damaged on disk would
/// give the damage a valid redb checksum.
pub(crate) fn merge_into(
    table: &mut Table<'_, u64, &'static [u8]>,
    entries: &[(u64, u64)],
    stored_seq_end: u64,
) -> IdResult<()> {
    let mut next = 0;
    while next < entries.len() {
        let key = entries[next].0;
        // The page that may hold `key`: the last one starting at or before it, else the first.
        let (page_key, old) = {
            let found = match table.range(..=key).map_err(|e| e.to_string())?.next_back() {
                Some(item) => Some(item.map_err(|e| e.to_string())?),
                None => table.first().map_err(|e| e.to_string())?,
            };
            match found {
                Some((page_key, page)) => {
                    let page_key = page_key.value();
                    let old: Vec<(u64, u64)> = decode(page_key, page.value())?.entries().collect();
                    if let Some((key, seq)) = old.iter().find(|(_, seq)| *seq >= stored_seq_end) {
                        return Err(format!(
                            "id page {page_key:#x} files key {key:#x} under seq {seq}, past the \
                             {stored_seq_end} stored records"
                        ));
                    }
                    (Some(page_key), old)
                }
                None => (None, Vec::new()),
            }
        };
        // This page takes the entries before the next page's first key.
        let bound = match page_key {
            Some(page_key) => table
                .range((Bound::Excluded(page_key), Bound::Unbounded))
                .map_err(|e| e.to_string())?
                .next()
                .transpose()
                .map_err(|e| e.to_string())?
                .map(|(next_key, _)| next_key.value()),
            None => None,
        };
        let end = match bound {
            Some(bound) => next + entries[next..].partition_point(|entry| entry.0 < bound),
            None => entries.len(),
        };
        let merged = merge_entries(&old, &entries[next..end]);
        if let Some(page_key) = page_key {
            table.remove(page_key).map_err(|e| e.to_string())?;
        }
        for chunk in page_chunks(&merged, false) {
            table
                .insert(chunk[0].0, encode_id_page(chunk).as_slice())
                .map_err(|e| e.to_string())?;
        }
        next = end;
    }
    Ok(())
}

/// Appends entries, in increasing key order and above every key in the table, as full pages.
pub(crate) struct InOrderWriter {
    pending: Vec<(u64, u64)>,
}

impl InOrderWriter {
    pub fn new() -> InOrderWriter {
        InOrderWriter {
            pending: Vec::with_capacity(ID_PAGE_ENTRIES_MAX),
        }
    }

    pub fn push(
        &mut self,
        table: &mut Table<'_, u64, &'static [u8]>,
        entry: (u64, u64),
    ) -> IdResult<()> {
        self.pending.push(entry);
        if self.pending.len() == ID_PAGE_ENTRIES_MAX {
            self.write(table)?;
        }
        Ok(())
    }

    pub fn finish(mut self, table: &mut Table<'_, u64, &'static [u8]>) -> IdResult<()> {
        self.write(table)
    }

    fn write(&mut self, table: &mut Table<'_, u64, &'static [u8]>) -> IdResult<()> {
        if let Some(first) = self.pending.first() {
            table
                .insert(first.0, encode_id_page(&self.pending).as_slice())
                .map_err(|e| e.to_string())?;
            self.pending.clear();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn database() -> redb::Database {
        redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("in-memory database")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Batches of random keys merged into the paged table one transaction at a time give
        /// the same answers as a map: every key finds its latest seq, absent keys find
        /// nothing, pages stay within the maximum and are keyed by their first key.
        #[test]
        fn merged_batches_answer_like_a_map(
            batches in proptest::collection::vec(
                proptest::collection::btree_map(0u64..5_000, 0u64..1_000_000, 0..700), 1..6),
            probes in proptest::collection::vec(0u64..5_200, 50),
        ) {
            let db = database();
            let mut model = BTreeMap::new();
            for batch in &batches {
                let entries: Vec<(u64, u64)> = batch.iter().map(|(k, v)| (*k, *v)).collect();
                let txn = db.begin_write().expect("write");
                {
                    let mut table = txn.open_table(IDS).expect("table");
                    merge_into(&mut table, &entries, u64::MAX).expect("merge");
                }
                txn.commit().expect("commit");
                model.extend(batch.iter().map(|(k, v)| (*k, *v)));
            }
            let txn = redb::ReadableDatabase::begin_read(&db).expect("read");
            let table = txn.open_table(IDS).expect("table");
            for key in model.keys().chain(&probes) {
                prop_assert_eq!(lookup(&table, *key).expect("lookup"), model.get(key).copied());
            }
            let mut stored = Vec::new();
            for item in table.iter().expect("iter") {
                let (page_key, page) = item.expect("page");
                let view = decode(page_key.value(), page.value()).expect("valid page");
                prop_assert!(view.len() <= ID_PAGE_ENTRIES_MAX);
                stored.extend(view.entries());
            }
            prop_assert_eq!(stored, model.into_iter().collect::<Vec<_>>());
        }
    }
}
