//! The paged id tables in redb (format-spec/index.md, "Ids"): a lookup, merging a flush's new
//! ids into `ids-recent`, draining `ids-recent` into a rewritten `ids`, and writing entries
//! in key order.
//! The page layout is `format::id_index`; errors come back as text for the store to wrap with
//! the sidecar's path.

use std::ops::Bound;

use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};

use crate::format::id_index::{
    ID_PAGE_ENTRIES_TYPICAL, ID_PAGE_LEN_MAX, IdPageFill, IdPageView, encode_id_page,
    merge_entries, page_chunks,
};

pub(crate) type IdPages<'name> = TableDefinition<'name, u64, &'static [u8]>;

/// Key of the page → the page (format-spec/index.md).
pub(crate) const IDS: IdPages<'static> = TableDefinition::new("ids");
/// Ids filed since `ids` was last rewritten, in the same pages; an entry here is newer than
/// one for the same key in `ids`.
pub(crate) const IDS_RECENT: IdPages<'static> = TableDefinition::new("ids-recent");
/// `ids` being rewritten by a drain; exists only inside that drain's transaction.
const IDS_NEXT: IdPages<'static> = TableDefinition::new("ids-next");

/// `ids-recent` is drained into `ids` once it has more pages than `ids` has divided by this:
/// a flush then rewrites pages of a table an eighth the size of `ids` or less, and `ids`
/// itself is rewritten once per some forty to sixty new ids per page of it (an eighth of what
/// a page of `ids-recent` holds).
const RECENT_SHARE_MAX: u64 = 8;
/// ... and more than this many pages (small logs drain rarely and cheaply).
const RECENT_PAGES_MIN: u64 = 32;

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

/// What `read` finds in the last page of `table` starting at or before `key` (the only page
/// that may hold `key`): one range read. `None` if no page starts there.
fn with_page_up_to<T>(
    table: &impl ReadableTable<u64, &'static [u8]>,
    key: u64,
    read: impl FnOnce(IdPageView<'_>) -> T,
) -> IdResult<Option<T>> {
    let Some(item) = table.range(..=key).map_err(|e| e.to_string())?.next_back() else {
        return Ok(None);
    };
    let (page_key, page) = item.map_err(|e| e.to_string())?;
    Ok(Some(read(decode(page_key.value(), page.value())?)))
}

/// The seq filed under `key`: one range read and a binary search in the page that may hold it.
pub(crate) fn lookup(
    table: &impl ReadableTable<u64, &'static [u8]>,
    key: u64,
) -> IdResult<Option<u64>> {
    Ok(with_page_up_to(table, key, |page| page.get(key))?.flatten())
}

/// Whether `table` files any key in `keys`: one range read, as a lookup. Pages hold disjoint
/// key ranges, each starting at its page's key, so only the last page starting at or before
/// the range's end can hold keys in the range (when it starts inside the range, its own first
/// key is one).
pub(crate) fn holds_key_in(
    table: &impl ReadableTable<u64, &'static [u8]>,
    keys: std::ops::RangeInclusive<u64>,
) -> IdResult<bool> {
    let end = *keys.end();
    Ok(with_page_up_to(table, end, |page| page.holds_key_in(keys))?.unwrap_or(false))
}

/// The keys `table` files in `keys`, in increasing order: those of the last page starting at
/// or before the range's start and of the pages starting inside it (pages hold disjoint key
/// ranges, each from its page's key). A few range reads for a narrow range.
pub(crate) fn keys_in(
    table: &impl ReadableTable<u64, &'static [u8]>,
    keys: std::ops::RangeInclusive<u64>,
) -> IdResult<Vec<u64>> {
    let (start, end) = (*keys.start(), *keys.end());
    let mut found = Vec::new();
    let mut collect = |page_key: u64, bytes: &[u8]| -> IdResult<()> {
        let page = decode(page_key, bytes)?;
        found.extend(
            page.entries()
                .map(|(key, _)| key)
                .filter(|key| keys.contains(key)),
        );
        Ok(())
    };
    if let Some(item) = table
        .range(..=start)
        .map_err(|e| e.to_string())?
        .next_back()
    {
        let (page_key, page) = item.map_err(|e| e.to_string())?;
        collect(page_key.value(), page.value())?;
    }
    if start < end {
        for item in table
            .range((Bound::Excluded(start), Bound::Included(end)))
            .map_err(|e| e.to_string())?
        {
            let (page_key, page) = item.map_err(|e| e.to_string())?;
            collect(page_key.value(), page.value())?;
        }
    }
    Ok(found)
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

/// Whether a flush of `new_count` ids should drain `ids-recent` (of `recent_pages` pages)
/// into `ids` (of `ids_pages`) instead of merging them into it: counting them as full pages.
pub(crate) fn drain_due(recent_pages: u64, new_count: usize, ids_pages: u64) -> bool {
    let recent_pages = recent_pages + new_count.div_ceil(ID_PAGE_ENTRIES_TYPICAL) as u64;
    #[cfg(test)]
    if let Some(pages_min) = tests::recent_pages_min() {
        return recent_pages > pages_min;
    }
    recent_pages > RECENT_PAGES_MIN.max(ids_pages / RECENT_SHARE_MAX)
}

/// Rewrites `ids` with every entry of `ids-recent` and `new` (sorted by key, no key twice)
/// merged in, as full pages in key order, and empties `ids-recent`: `new` wins over
/// `ids-recent`, which wins over `ids` (each is newer). A drain rewrites nearly every page of
/// `ids` anyway (some forty to sixty new ids land on each), so it streams `ids` into a fresh
/// table (`ids-next`, renamed to `ids` in the same transaction) instead of merging page by page,
/// holding only `ids-recent`, `new` and one page in memory. The entries of `ids-recent` must
/// name seqs below `recent_seq_end` (the records when it was last written); those of `ids`,
/// seqs below `ids_seq_end` (as for `merge_into`): a damaged page is refused, not rewritten
/// with a valid checksum.
pub(crate) fn drain(
    txn: &WriteTransaction,
    new: &[(u64, u64)],
    recent_seq_end: u64,
    ids_seq_end: u64,
) -> IdResult<()> {
    let recent = {
        let table = txn.open_table(IDS_RECENT).map_err(|e| e.to_string())?;
        merge_entries(&table_entries(&table, recent_seq_end)?, new)
    };
    // `ids-next` never outlives a drain's transaction; should one exist all the same, its
    // pages must not mix with the new ones (the writer assumes an empty table).
    txn.delete_table(IDS_NEXT).map_err(|e| e.to_string())?;
    {
        let ids = txn.open_table(IDS).map_err(|e| e.to_string())?;
        let mut next = txn.open_table(IDS_NEXT).map_err(|e| e.to_string())?;
        let mut writer = InOrderWriter::new();
        let mut newer = recent.iter().copied().peekable();
        for_each_entry(&ids, ids_seq_end, |(key, seq)| {
            while let Some(entry) = newer.next_if(|(newer_key, _)| *newer_key < key) {
                writer.push(&mut next, entry)?;
            }
            match newer.next_if(|(newer_key, _)| *newer_key == key) {
                Some(entry) => writer.push(&mut next, entry),
                None => writer.push(&mut next, (key, seq)),
            }
        })?;
        for entry in newer {
            writer.push(&mut next, entry)?;
        }
        writer.finish(&mut next)?;
    }
    txn.delete_table(IDS).map_err(|e| e.to_string())?;
    txn.rename_table(IDS_NEXT, IDS).map_err(|e| e.to_string())?;
    txn.delete_table(IDS_RECENT).map_err(|e| e.to_string())?;
    txn.open_table(IDS_RECENT).map_err(|e| e.to_string())?;
    Ok(())
}

/// Visits every entry of a paged id table in key order, one page in memory at a time. Refuses
/// pages that overlap the one before, and entries naming a seq at or past `seq_end` (the
/// records the table may describe): a drain must not rewrite damage under a valid checksum.
fn for_each_entry(
    table: &impl ReadableTable<u64, &'static [u8]>,
    seq_end: u64,
    mut visit: impl FnMut((u64, u64)) -> IdResult<()>,
) -> IdResult<()> {
    let mut last_key = None;
    for item in table.iter().map_err(|e| e.to_string())? {
        let (page_key, page) = item.map_err(|e| e.to_string())?;
        let page_key = page_key.value();
        let view = decode(page_key, page.value())?;
        if last_key.is_some_and(|last| last >= page_key) {
            return Err(format!("id page {page_key:#x} overlaps the one before it"));
        }
        for (key, seq) in view.entries() {
            if seq >= seq_end {
                return Err(format!(
                    "id page {page_key:#x} files key {key:#x} under seq {seq}, past the \
                     {seq_end} stored records"
                ));
            }
            last_key = Some(key);
            visit((key, seq))?;
        }
    }
    Ok(())
}

/// Reads every page of a paged id table and checks it as [`for_each_entry`] does (any seq).
pub(crate) fn check_pages(table: &impl ReadableTable<u64, &'static [u8]>) -> IdResult<()> {
    for_each_entry(table, u64::MAX, |_| Ok(()))
}

/// Every entry of a paged id table in key order, checked as by [`for_each_entry`].
fn table_entries(
    table: &impl ReadableTable<u64, &'static [u8]>,
    seq_end: u64,
) -> IdResult<Vec<(u64, u64)>> {
    let mut entries = Vec::new();
    for_each_entry(table, seq_end, |entry| {
        entries.push(entry);
        Ok(())
    })?;
    Ok(entries)
}

/// Appends entries, in increasing key order and above every key in the table, as full pages.
pub(crate) struct InOrderWriter {
    pending: Vec<(u64, u64)>,
    fill: IdPageFill,
}

impl InOrderWriter {
    pub fn new() -> InOrderWriter {
        InOrderWriter {
            pending: Vec::with_capacity(ID_PAGE_ENTRIES_TYPICAL),
            fill: IdPageFill::new(),
        }
    }

    pub fn push(
        &mut self,
        table: &mut Table<'_, u64, &'static [u8]>,
        entry: (u64, u64),
    ) -> IdResult<()> {
        debug_assert!(
            self.pending.last().is_none_or(|last| last.0 < entry.0),
            "entries come in increasing key order"
        );
        if !self.fill.fits(entry, ID_PAGE_LEN_MAX) {
            self.write(table)?;
        }
        self.pending.push(entry);
        self.fill.push(entry);
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
            self.fill = IdPageFill::new();
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    thread_local! {
        static TEST_RECENT_PAGES_MIN: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    }

    /// The drain threshold set by the test on this thread, if any.
    pub(crate) fn recent_pages_min() -> Option<u64> {
        TEST_RECENT_PAGES_MIN.with(std::cell::Cell::get)
    }

    /// Drains `ids-recent` whenever it has more than `pages_min` pages, on this thread.
    pub(crate) fn set_recent_pages_min(pages_min: Option<u64>) {
        TEST_RECENT_PAGES_MIN.with(|cell| cell.set(pages_min));
    }

    fn database() -> redb::Database {
        redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("in-memory database")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Batches of random keys merged into the paged table one transaction at a time give
        /// the same answers as a map: every key finds its latest seq, absent keys find
        /// nothing, a range holds a key iff the map has one in it and `keys_in` lists the
        /// map's keys in it, pages stay within the
        /// maximum and are keyed by their first key.
        #[test]
        fn merged_batches_answer_like_a_map(
            batches in proptest::collection::vec(
                proptest::collection::btree_map(0u64..5_000, 0u64..1_000_000, 0..700), 1..6),
            probes in proptest::collection::vec(0u64..5_200, 50),
            ranges in proptest::collection::vec((0u64..5_200, 0u64..40), 50),
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
            for (start, len) in &ranges {
                let keys = *start..=start + len;
                prop_assert_eq!(
                    holds_key_in(&table, keys.clone()).expect("range read"),
                    model.range(keys.clone()).next().is_some(),
                    "{:?}", keys
                );
                prop_assert_eq!(
                    keys_in(&table, keys.clone()).expect("range read"),
                    model.range(keys.clone()).map(|(key, _)| *key).collect::<Vec<_>>(),
                    "{:?}", keys
                );
            }
            let mut stored = Vec::new();
            for item in table.iter().expect("iter") {
                let (page_key, page) = item.expect("page");
                let view = decode(page_key.value(), page.value()).expect("valid page");
                prop_assert!(page.value().len() <= ID_PAGE_LEN_MAX);
                stored.extend(view.entries());
            }
            prop_assert_eq!(stored, model.into_iter().collect::<Vec<_>>());
        }

        /// Batches filed into `ids-recent`, drained into `ids` after the batches chosen, give
        /// the same answers as a map when a lookup reads `ids-recent` first: a key refiled
        /// later wins wherever each of its entries is, and a drain leaves `ids-recent` empty.
        #[test]
        fn recent_then_drained_answers_like_a_map(
            batches in proptest::collection::vec(
                (proptest::collection::btree_map(0u64..3_000, 0u64..1_000, 0..500),
                 proptest::bool::ANY), 1..6),
            probes in proptest::collection::vec(0u64..3_200, 50),
        ) {
            let db = database();
            let mut model = BTreeMap::new();
            // Seqs grow from batch to batch, as lines do.
            for (round, (batch, drains)) in batches.iter().enumerate() {
                let seq_base = round as u64 * 1_000;
                let entries: Vec<(u64, u64)> =
                    batch.iter().map(|(k, v)| (*k, seq_base + v)).collect();
                let txn = db.begin_write().expect("write");
                {
                    // Both tables exist from the first round, as in a sidecar.
                    drop(txn.open_table(IDS).expect("table"));
                    if *drains {
                        drain(&txn, &entries, seq_base, seq_base).expect("drain");
                        let recent = txn.open_table(IDS_RECENT).expect("table");
                        prop_assert_eq!(redb::ReadableTableMetadata::len(&recent).expect("len"), 0);
                        // A drain writes full pages: each but the last would not take the
                        // first entry of the next one.
                        let ids = txn.open_table(IDS).expect("table");
                        let pages: Vec<Vec<(u64, u64)>> = ids
                            .iter()
                            .expect("iter")
                            .map(|item| {
                                let (key, page) = item.expect("page");
                                decode(key.value(), page.value()).expect("valid page").entries().collect()
                            })
                            .collect();
                        for pair in pages.windows(2) {
                            let mut fill = IdPageFill::new();
                            pair[0].iter().for_each(|entry| fill.push(*entry));
                            prop_assert!(!fill.fits(pair[1][0], ID_PAGE_LEN_MAX));
                        }
                    } else {
                        let mut recent = txn.open_table(IDS_RECENT).expect("table");
                        merge_into(&mut recent, &entries, seq_base).expect("merge");
                    }
                }
                txn.commit().expect("commit");
                model.extend(entries);
            }
            let txn = redb::ReadableDatabase::begin_read(&db).expect("read");
            let recent = txn.open_table(IDS_RECENT).expect("table");
            let ids = txn.open_table(IDS).expect("table");
            prop_assert!(txn.open_table(IDS_NEXT).is_err(), "ids-next is gone after a drain");
            // Every stored entry is the model's: ids-recent's over those of ids.
            let mut stored: BTreeMap<u64, u64> =
                table_entries(&ids, u64::MAX).expect("entries").into_iter().collect();
            stored.extend(table_entries(&recent, u64::MAX).expect("entries"));
            prop_assert_eq!(&stored, &model);
            for key in model.keys().chain(&probes) {
                let found = match lookup(&recent, *key).expect("lookup") {
                    Some(seq) => Some(seq),
                    None => lookup(&ids, *key).expect("lookup"),
                };
                prop_assert_eq!(found, model.get(key).copied());
            }
        }
    }

    /// A drain refuses an entry past the records the tables describe, in `ids-recent` or in
    /// `ids`, instead of filing it where a lookup would trust it.
    #[test]
    fn drain_refuses_seqs_past_the_records() {
        let db = database();
        let txn = db.begin_write().expect("write");
        {
            let mut recent = txn.open_table(IDS_RECENT).expect("table");
            merge_into(&mut recent, &[(7, 40)], 0).expect("merge");
            let mut ids = txn.open_table(IDS).expect("table");
            merge_into(&mut ids, &[(3, 20)], 0).expect("merge");
        }
        let error = drain(&txn, &[], 40, 30).expect_err("seq 40 of 40 records");
        assert!(
            error.contains("seq 40, past the 40 stored records"),
            "{error}"
        );
        let error = drain(&txn, &[], 41, 20).expect_err("seq 20 of 20 records in ids");
        assert!(
            error.contains("seq 20, past the 20 stored records"),
            "{error}"
        );
    }

    /// A drain refuses `ids` pages whose key ranges overlap (damage that decodes), rather
    /// than writing their keys out of order under a valid checksum.
    #[test]
    fn drain_refuses_overlapping_pages() {
        let db = database();
        let txn = db.begin_write().expect("write");
        {
            let mut ids = txn.open_table(IDS).expect("table");
            ids.insert(10, encode_id_page(&[(10, 1), (30, 2)]).as_slice())
                .expect("insert");
            ids.insert(20, encode_id_page(&[(20, 3)]).as_slice())
                .expect("insert");
            txn.open_table(IDS_RECENT).expect("table");
        }
        let error = drain(&txn, &[(5, 4)], 10, 10).expect_err("overlapping pages");
        assert!(error.contains("overlaps the one before it"), "{error}");
    }

    /// The drain rule: never below the minimum, then once `ids-recent` with the new ids as
    /// full pages passes an eighth of `ids`.
    #[test]
    fn drain_due_at_an_eighth() {
        assert!(!drain_due(RECENT_PAGES_MIN, 0, 0));
        assert!(drain_due(RECENT_PAGES_MIN, 1, 0));
        assert!(!drain_due(999, ID_PAGE_ENTRIES_TYPICAL, 8_000));
        assert!(drain_due(999, ID_PAGE_ENTRIES_TYPICAL + 1, 8_000));
    }
}
