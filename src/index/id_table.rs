//! The paged id tables in redb (format-spec/index.md, "Ids"): a lookup, merging a flush's new
//! ids into `ids-recent`, draining `ids-recent` into a rewritten `ids`, and writing entries
//! in key order. A flush whose ids lie in one narrow key range (a handle's own appends, drawn
//! from reserved runs) where `ids-recent` holds no key is merged into `ids` directly,
//! rewriting the page or two that cover the range (the store decides, in `flush.rs`).
//! The page layout is `format::id_index`; errors come back as text for the store to wrap with
//! the sidecar's path.
//!
//! redb does not check its page checksums on a normal read, so a damaged sidecar can hand a
//! read any bytes, or (damage in a branch page) another valid page than the one asked for.
//! Each id page therefore carries a crc over its table's name, its key and its bytes, and
//! the pages of a table tile the key space (the first at key 0, each ending where the next
//! starts, the last at the end): a read checks the crc of every page it reads and that the
//! pages it read cover the keys it asked about, so damage is an error, never a wrong seq or
//! a key reported absent.

use std::ops::Bound;

use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};

use crate::format::id_index::{
    ID_PAGE_ENTRIES_TYPICAL, ID_PAGE_LEN_MAX, IdPageFill, IdPageView, encode_id_page,
    merge_entries, page_chunks,
};

pub(crate) type IdPages<'name> = TableDefinition<'name, u64, &'static [u8]>;

/// The name of `ids`, which its pages' crcs cover (also while a drain builds it as `ids-next`).
pub(crate) const IDS_NAME: &str = "ids";
/// The name of `ids-recent`, which its pages' crcs cover.
pub(crate) const IDS_RECENT_NAME: &str = "ids-recent";
/// Key of the page → the page (format-spec/index.md).
pub(crate) const IDS: IdPages<'static> = TableDefinition::new(IDS_NAME);
/// Ids filed since `ids` was last rewritten, in the same pages; an entry here is newer than
/// one for the same key in `ids`.
pub(crate) const IDS_RECENT: IdPages<'static> = TableDefinition::new(IDS_RECENT_NAME);
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

/// The page stored under `page_key` in the table named `name`, checked (crc, shape, order,
/// coverage).
fn decode<'page>(name: &str, page_key: u64, bytes: &'page [u8]) -> IdResult<IdPageView<'page>> {
    IdPageView::new(name, page_key, bytes).map_err(|error| error.0)
}

/// Gives a new table its one page: empty, under key 0, covering every key (a table that
/// exists always holds the pages that tile the key space).
pub(crate) fn init(table: &mut Table<'_, u64, &'static [u8]>, name: &str) -> IdResult<()> {
    table
        .insert(0, encode_id_page(name, 0, None, &[]).as_slice())
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// What `read` finds in the page of `table` that covers `key`, the last one starting at or
/// before it: one range read. No such page, or one whose coverage ends at or before `key`
/// (the page that covers it is missing, or the read was sent to another page), is damage.
fn with_page_covering<T>(
    table: &impl ReadableTable<u64, &'static [u8]>,
    name: &str,
    key: u64,
    read: impl FnOnce(IdPageView<'_>) -> T,
) -> IdResult<T> {
    let item = table
        .range(..=key)
        .map_err(|e| e.to_string())?
        .next_back()
        .ok_or_else(|| format!("no id page of {name} covers key {key:#x} (none at key 0)"))?;
    let (page_key, page) = item.map_err(|e| e.to_string())?;
    let page = decode(name, page_key.value(), page.value())?;
    if !page.covers(key) {
        return Err(not_covered(name, &page, key));
    }
    Ok(read(page))
}

/// The error for a page read for `key` that does not cover it.
fn not_covered(name: &str, page: &IdPageView<'_>, key: u64) -> String {
    format!(
        "id page {:#x} of {name} ends at {:#x}, before key {key:#x}: the page covering it is \
         missing",
        page.page_key(),
        page.end().unwrap_or(u64::MAX)
    )
}

/// The seq filed under `key`: one range read and a binary search in the page that covers it.
pub(crate) fn lookup(
    table: &impl ReadableTable<u64, &'static [u8]>,
    name: &str,
    key: u64,
) -> IdResult<Option<u64>> {
    with_page_covering(table, name, key, |page| page.get(key))
}

/// Whether `table` files any key in `keys`: one range read, as a lookup. Only the page
/// covering the range's end can hold keys in the range without holding its own key, which is
/// in the range when the page starts inside it (a page under a key other than 0 files its key).
pub(crate) fn holds_key_in(
    table: &impl ReadableTable<u64, &'static [u8]>,
    name: &str,
    keys: std::ops::RangeInclusive<u64>,
) -> IdResult<bool> {
    let end = *keys.end();
    with_page_covering(table, name, end, |page| page.holds_key_in(keys))
}

/// The keys `table` files in `keys`, in increasing order: those of the page covering the
/// range's start and of the pages after it, which must each start where the one before ends,
/// up to one that covers the range's end. A few range reads for a narrow range.
pub(crate) fn keys_in(
    table: &impl ReadableTable<u64, &'static [u8]>,
    name: &str,
    keys: std::ops::RangeInclusive<u64>,
) -> IdResult<Vec<u64>> {
    let (start, end) = (*keys.start(), *keys.end());
    let mut found = Vec::new();
    let in_range = |page: &IdPageView<'_>, found: &mut Vec<u64>| {
        found.extend(
            page.entries()
                .map(|(key, _)| key)
                .filter(|key| keys.contains(key)),
        );
    };
    // Where the pages read so far stop covering (`None`: at the end of the key space).
    let mut covered_to = with_page_covering(table, name, start, |page| {
        in_range(&page, &mut found);
        page.end()
    })?;
    if start < end {
        for item in table
            .range((Bound::Excluded(start), Bound::Included(end)))
            .map_err(|e| e.to_string())?
        {
            let (page_key, page) = item.map_err(|e| e.to_string())?;
            let page_key = page_key.value();
            if covered_to != Some(page_key) {
                return Err(format!(
                    "id page {page_key:#x} of {name} does not start where the page before it \
                     ends ({:#x})",
                    covered_to.unwrap_or(u64::MAX)
                ));
            }
            let page = decode(name, page_key, page.value())?;
            in_range(&page, &mut found);
            covered_to = page.end();
        }
    }
    if let Some(covered_to) = covered_to.filter(|covered_to| *covered_to <= end) {
        return Err(format!(
            "the id pages of {name} read for keys {start:#x}..={end:#x} end at {covered_to:#x}: \
             the page after them is missing"
        ));
    }
    Ok(found)
}

/// Files `entries` (sorted by key, no key twice) into `table`, named `name`: each page they
/// fall into is rewritten once with them merged in (a key already there takes the new seq),
/// under its own key, and a page that grows past the maximum is split: the first piece keeps
/// the page's key, each other one starts at its first key, and the last keeps the page's
/// coverage end, so the pages still tile the key space. A page being rewritten must pass its
/// checks and name only seqs below `stored_seq_end` (the records the table describes):
/// rewriting a page damaged on disk would give the damage a valid checksum.
pub(crate) fn merge_into(
    table: &mut Table<'_, u64, &'static [u8]>,
    name: &str,
    entries: &[(u64, u64)],
    stored_seq_end: u64,
) -> IdResult<()> {
    let mut next = 0;
    while next < entries.len() {
        let key = entries[next].0;
        let (page_key, page_end, old) = with_page_covering(table, name, key, |page| {
            (
                page.page_key(),
                page.end(),
                page.entries().collect::<Vec<_>>(),
            )
        })?;
        if let Some((key, seq)) = old.iter().find(|(_, seq)| *seq >= stored_seq_end) {
            return Err(format!(
                "id page {page_key:#x} of {name} files key {key:#x} under seq {seq}, past the \
                 {stored_seq_end} stored records"
            ));
        }
        // This page takes the entries before its coverage end.
        let stop = match page_end {
            Some(page_end) => next + entries[next..].partition_point(|entry| entry.0 < page_end),
            None => entries.len(),
        };
        let merged = merge_entries(&old, &entries[next..stop]);
        let mut chunks = page_chunks(&merged, false).peekable();
        let mut chunk_key = page_key;
        while let Some(chunk) = chunks.next() {
            let chunk_end = chunks.peek().map_or(page_end, |after| Some(after[0].0));
            table
                .insert(
                    chunk_key,
                    encode_id_page(name, chunk_key, chunk_end, chunk).as_slice(),
                )
                .map_err(|e| e.to_string())?;
            chunk_key = chunk_end.unwrap_or(u64::MAX);
        }
        next = stop;
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
/// merged in, as full pages in key order, and empties `ids-recent` (one empty page covering
/// every key): `new` wins over `ids-recent`, which wins over `ids` (each is newer). A drain
/// rewrites nearly every page of `ids` anyway (some forty to sixty new ids land on each), so
/// it streams `ids` into a fresh table (`ids-next`, renamed to `ids` in the same transaction;
/// its pages' crcs name `ids`) instead of merging page by page, holding only `ids-recent`,
/// `new` and one page in memory. Both tables are read whole and must tile the key space; the
/// entries of `ids-recent` must name seqs below `recent_seq_end` (the records when it was last
/// written), those of `ids`, seqs below `ids_seq_end` (as for `merge_into`): a damaged page
/// is refused, not rewritten with a valid checksum.
pub(crate) fn drain(
    txn: &WriteTransaction,
    new: &[(u64, u64)],
    recent_seq_end: u64,
    ids_seq_end: u64,
) -> IdResult<()> {
    let recent = {
        let table = txn.open_table(IDS_RECENT).map_err(|e| e.to_string())?;
        merge_entries(
            &table_entries(&table, IDS_RECENT_NAME, recent_seq_end)?,
            new,
        )
    };
    // `ids-next` never outlives a drain's transaction; should one exist all the same, its
    // pages must not mix with the new ones (the writer assumes an empty table).
    txn.delete_table(IDS_NEXT).map_err(|e| e.to_string())?;
    {
        let ids = txn.open_table(IDS).map_err(|e| e.to_string())?;
        let mut next = txn.open_table(IDS_NEXT).map_err(|e| e.to_string())?;
        let mut writer = InOrderWriter::new(IDS_NAME);
        let mut newer = recent.iter().copied().peekable();
        for_each_entry(&ids, IDS_NAME, ids_seq_end, |(key, seq)| {
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
    let mut recent = txn.open_table(IDS_RECENT).map_err(|e| e.to_string())?;
    init(&mut recent, IDS_RECENT_NAME)
}

/// Visits every entry of a paged id table in key order, one page in memory at a time,
/// checking every page and that the pages tile the key space: the first under key 0, each
/// next one under the key where the one before ends, the last running to the end. Refuses
/// entries naming a seq at or past `seq_end` (the records the table may describe): a drain
/// must not rewrite damage under a valid checksum.
fn for_each_entry(
    table: &impl ReadableTable<u64, &'static [u8]>,
    name: &str,
    seq_end: u64,
    mut visit: impl FnMut((u64, u64)) -> IdResult<()>,
) -> IdResult<()> {
    // Where the next page must start; `None` once a page ran to the end of the key space.
    let mut expected = Some(0);
    for item in table.iter().map_err(|e| e.to_string())? {
        let (page_key, page) = item.map_err(|e| e.to_string())?;
        let page_key = page_key.value();
        if expected != Some(page_key) {
            return Err(match expected {
                Some(expected) => format!(
                    "id page {page_key:#x} of {name} is not where the pages before it end \
                     ({expected:#x})"
                ),
                None => format!(
                    "id page {page_key:#x} of {name} follows a page that covers every key after \
                     it"
                ),
            });
        }
        let view = decode(name, page_key, page.value())?;
        for (key, seq) in view.entries() {
            if seq >= seq_end {
                return Err(format!(
                    "id page {page_key:#x} of {name} files key {key:#x} under seq {seq}, past the \
                     {seq_end} stored records"
                ));
            }
            visit((key, seq))?;
        }
        expected = view.end();
    }
    match expected {
        None => Ok(()),
        Some(0) => Err(format!("{name} holds no id page")),
        Some(expected) => Err(format!(
            "the id pages of {name} end at {expected:#x}: the page after them is missing"
        )),
    }
}

/// Reads every page of a paged id table and checks it as [`for_each_entry`] does (any seq).
pub(crate) fn check_pages(
    table: &impl ReadableTable<u64, &'static [u8]>,
    name: &str,
) -> IdResult<()> {
    for_each_entry(table, name, u64::MAX, |_| Ok(()))
}

/// Every entry of a paged id table in key order, checked as by [`for_each_entry`].
fn table_entries(
    table: &impl ReadableTable<u64, &'static [u8]>,
    name: &str,
    seq_end: u64,
) -> IdResult<Vec<(u64, u64)>> {
    let mut entries = Vec::new();
    for_each_entry(table, name, seq_end, |entry| {
        entries.push(entry);
        Ok(())
    })?;
    Ok(entries)
}

/// Writes a whole table from entries in increasing key order, as full pages that tile the key
/// space: the first under key 0, each next one under the entry that did not fit the page
/// before (which ends there), the last running to the end of the key space (an empty page
/// under 0 when no entry came). The table must be empty, or hold only the empty page of
/// [`init`], which the first page replaces.
pub(crate) struct InOrderWriter {
    name: &'static str,
    pending: Vec<(u64, u64)>,
    fill: IdPageFill,
    /// The key of the page being filled.
    page_key: u64,
}

impl InOrderWriter {
    /// A writer of the table named `name` (whose pages' crcs cover it).
    pub fn new(name: &'static str) -> InOrderWriter {
        InOrderWriter {
            name,
            pending: Vec::with_capacity(ID_PAGE_ENTRIES_TYPICAL),
            fill: IdPageFill::new(),
            page_key: 0,
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
            self.write(table, Some(entry.0))?;
            self.page_key = entry.0;
        }
        self.pending.push(entry);
        self.fill.push(entry);
        Ok(())
    }

    /// Writes the last page, running to the end of the key space.
    pub fn finish(mut self, table: &mut Table<'_, u64, &'static [u8]>) -> IdResult<()> {
        self.write(table, None)
    }

    fn write(
        &mut self,
        table: &mut Table<'_, u64, &'static [u8]>,
        end: Option<u64>,
    ) -> IdResult<()> {
        let page = encode_id_page(self.name, self.page_key, end, &self.pending);
        table
            .insert(self.page_key, page.as_slice())
            .map_err(|e| e.to_string())?;
        self.pending.clear();
        self.fill = IdPageFill::new();
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

    /// Every entry of a table whose pages must be valid and tile the key space.
    pub(crate) fn stored_entries(
        table: &impl ReadableTable<u64, &'static [u8]>,
        name: &str,
    ) -> Vec<(u64, u64)> {
        check_tiling(table, name).expect("valid, tiled pages");
        table_entries(table, name, u64::MAX).expect("valid, tiled pages")
    }

    /// A stored page: its key, where its coverage ends, its entries.
    type StoredPage = (u64, Option<u64>, Vec<(u64, u64)>);

    /// The pages of a table if they tile the key space (written independently of the code
    /// under test): each within the maximum length, passing its checks, the first under key
    /// 0, each next one under the key where the one before ends, the last running to the end
    /// of the key space.
    pub(crate) fn check_tiling(
        table: &impl ReadableTable<u64, &'static [u8]>,
        name: &str,
    ) -> Result<Vec<StoredPage>, String> {
        let mut pages: Vec<StoredPage> = Vec::new();
        for item in table.iter().map_err(|e| e.to_string())? {
            let (key, bytes) = item.map_err(|e| e.to_string())?;
            let (key, bytes) = (key.value(), bytes.value());
            if bytes.len() > ID_PAGE_LEN_MAX {
                return Err(format!("page {key:#x}: {} bytes", bytes.len()));
            }
            let view = decode(name, key, bytes)?;
            let start = match pages.last() {
                None => 0,
                Some((_, Some(end), _)) => *end,
                Some((_, None, _)) => return Err(format!("page {key:#x} after the last")),
            };
            if key != start {
                return Err(format!("page {key:#x} where {start:#x} was due"));
            }
            pages.push((key, view.end(), view.entries().collect()));
        }
        match pages.last() {
            Some((_, None, _)) => Ok(pages),
            _ => Err("the pages do not run to the end of the key space".to_string()),
        }
    }

    fn database() -> redb::Database {
        redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("in-memory database")
    }

    /// A database with both id tables, each holding its one empty page.
    fn initialized() -> redb::Database {
        let db = database();
        let txn = db.begin_write().expect("write");
        for (table, name) in [(IDS, IDS_NAME), (IDS_RECENT, IDS_RECENT_NAME)] {
            init(&mut txn.open_table(table).expect("table"), name).expect("init");
        }
        txn.commit().expect("commit");
        db
    }

    /// Files `rounds` of entries as flushes do, each merged into `ids-recent` or, when its
    /// flag is set, drained with `ids-recent` into `ids`, with seqs growing from round to
    /// round; checks after each that both tables tile the key space and that a merge left the
    /// pages it did not touch as they were. Returns the model of each table: `ids`,
    /// `ids-recent`.
    fn file_rounds(
        db: &redb::Database,
        rounds: &[(BTreeMap<u64, u64>, bool)],
    ) -> (BTreeMap<u64, u64>, BTreeMap<u64, u64>) {
        let (mut ids_model, mut recent_model) = (BTreeMap::new(), BTreeMap::new());
        for (round, (batch, drains)) in rounds.iter().enumerate() {
            let seq_base = round as u64 * 1_000_000;
            let entries: Vec<(u64, u64)> = batch.iter().map(|(k, v)| (*k, seq_base + v)).collect();
            let txn = db.begin_write().expect("write");
            if *drains {
                drain(&txn, &entries, seq_base, seq_base).expect("drain");
                ids_model.append(&mut recent_model);
                ids_model.extend(entries);
            } else {
                let mut recent = txn.open_table(IDS_RECENT).expect("table");
                let before = check_tiling(&recent, IDS_RECENT_NAME).expect("tiled");
                merge_into(&mut recent, IDS_RECENT_NAME, &entries, seq_base).expect("merge");
                let after = check_tiling(&recent, IDS_RECENT_NAME).expect("tiled after a merge");
                // A page none of whose keys came is not rewritten.
                for page in &before {
                    let (key, end) = (page.0, page.1);
                    let untouched = !entries
                        .iter()
                        .any(|(k, _)| *k >= key && end.is_none_or(|end| *k < end));
                    if untouched {
                        assert!(after.contains(page), "page {key:#x} was rewritten");
                    }
                }
                recent_model.extend(entries);
            }
            for (table, name) in [(IDS, IDS_NAME), (IDS_RECENT, IDS_RECENT_NAME)] {
                let table = txn.open_table(table).expect("table");
                check_tiling(&table, name).expect("tiled after each round");
            }
            txn.commit().expect("commit");
        }
        (ids_model, recent_model)
    }

    /// Rounds of random batches for [`file_rounds`] (seqs below 1,000,000).
    fn rounds(
        keys: u64,
        batch_max: usize,
        rounds_max: usize,
    ) -> impl Strategy<Value = Vec<(BTreeMap<u64, u64>, bool)>> {
        proptest::collection::vec(
            (
                proptest::collection::btree_map(0..keys, 0u64..1_000_000, 0..batch_max),
                proptest::bool::ANY,
            ),
            1..rounds_max,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Batches of random keys merged into the paged table one transaction at a time give
        /// the same answers as a map: every key finds its latest seq, absent keys find
        /// nothing, a range holds a key iff the map has one in it and `keys_in` lists the
        /// map's keys in it; the pages tile the key space after every merge, stay within the
        /// maximum, and a merge rewrites only the pages its keys fall in.
        #[test]
        fn merged_batches_answer_like_a_map(
            batches in proptest::collection::vec(
                proptest::collection::btree_map(0u64..5_000, 0u64..1_000_000, 0..700), 1..6),
            probes in proptest::collection::vec(0u64..5_200, 50),
            ranges in proptest::collection::vec((0u64..5_200, 0u64..40), 50),
        ) {
            let db = initialized();
            let rounds: Vec<(BTreeMap<u64, u64>, bool)> =
                batches.into_iter().map(|batch| (batch, false)).collect();
            let (_, model) = file_rounds(&db, &rounds);
            let txn = redb::ReadableDatabase::begin_read(&db).expect("read");
            let table = txn.open_table(IDS_RECENT).expect("table");
            for key in model.keys().chain(&probes) {
                prop_assert_eq!(
                    lookup(&table, IDS_RECENT_NAME, *key).expect("lookup"),
                    model.get(key).copied()
                );
            }
            for (start, len) in &ranges {
                let keys = *start..=start + len;
                prop_assert_eq!(
                    holds_key_in(&table, IDS_RECENT_NAME, keys.clone()).expect("range read"),
                    model.range(keys.clone()).next().is_some(),
                    "{:?}", keys
                );
                prop_assert_eq!(
                    keys_in(&table, IDS_RECENT_NAME, keys.clone()).expect("range read"),
                    model.range(keys.clone()).map(|(key, _)| *key).collect::<Vec<_>>(),
                    "{:?}", keys
                );
            }
            prop_assert_eq!(
                stored_entries(&table, IDS_RECENT_NAME),
                model.into_iter().collect::<Vec<_>>()
            );
        }

        /// Batches filed into `ids-recent`, drained into `ids` after the batches chosen, give
        /// the same answers as a map when a lookup reads `ids-recent` first: a key refiled
        /// later wins wherever each of its entries is, a drain leaves `ids-recent` one empty
        /// page, and both tables tile the key space after every round.
        #[test]
        fn recent_then_drained_answers_like_a_map(
            rounds in rounds(3_000, 500, 6),
            probes in proptest::collection::vec(0u64..3_200, 50),
        ) {
            let db = initialized();
            let (ids_model, recent_model) = file_rounds(&db, &rounds);
            let mut model = ids_model.clone();
            model.extend(recent_model.iter().map(|(k, v)| (*k, *v)));
            let txn = redb::ReadableDatabase::begin_read(&db).expect("read");
            let recent = txn.open_table(IDS_RECENT).expect("table");
            let ids = txn.open_table(IDS).expect("table");
            prop_assert!(txn.open_table(IDS_NEXT).is_err(), "ids-next is gone after a drain");
            prop_assert_eq!(
                stored_entries(&ids, IDS_NAME),
                ids_model.into_iter().collect::<Vec<_>>()
            );
            prop_assert_eq!(
                stored_entries(&recent, IDS_RECENT_NAME),
                recent_model.into_iter().collect::<Vec<_>>()
            );
            // A drain writes full pages: each but the last would not take the first entry
            // of the next one.
            let pages = check_tiling(&ids, IDS_NAME).expect("tiled");
            for pair in pages.windows(2) {
                let mut fill = IdPageFill::new();
                pair[0].2.iter().for_each(|entry| fill.push(*entry));
                prop_assert!(!fill.fits(pair[1].2[0], ID_PAGE_LEN_MAX));
            }
            for key in model.keys().chain(&probes) {
                let found = match lookup(&recent, IDS_RECENT_NAME, *key).expect("lookup") {
                    Some(seq) => Some(seq),
                    None => lookup(&ids, IDS_NAME, *key).expect("lookup"),
                };
                prop_assert_eq!(found, model.get(key).copied());
            }
        }
    }

    /// Reads of `table` (named `name`, holding `model`) for `probes` and for the ranges
    /// between consecutive probes: each is the model's answer or an error. Returns the probes
    /// whose lookup was answered (not an error).
    fn right_or_error(
        table: &impl ReadableTable<u64, &'static [u8]>,
        name: &str,
        model: &BTreeMap<u64, u64>,
        probes: &[u64],
    ) -> Result<Vec<u64>, TestCaseError> {
        let mut answered = Vec::new();
        for key in probes {
            match lookup(table, name, *key) {
                Ok(found) => {
                    prop_assert_eq!(found, model.get(key).copied(), "key {:#x}", key);
                    answered.push(*key);
                }
                Err(error) => prop_assert!(error.contains("id page"), "{}", error),
            }
        }
        for pair in probes.windows(2) {
            let keys = pair[0].min(pair[1])..=pair[0].max(pair[1]);
            if let Ok(held) = holds_key_in(table, name, keys.clone()) {
                prop_assert_eq!(held, model.range(keys.clone()).next().is_some());
            }
            if let Ok(found) = keys_in(table, name, keys.clone()) {
                let expected: Vec<u64> = model.range(keys).map(|(key, _)| *key).collect();
                prop_assert_eq!(found, expected);
            }
        }
        Ok(answered)
    }

    /// Keys to probe in a page's coverage: every key it files, and the keys around each
    /// (absent ones among them), its first and its last.
    fn coverage_probes(page: &StoredPage) -> Vec<u64> {
        let (key, end, entries) = page;
        let mut probes = vec![*key, end.map_or(u64::MAX, |end| end - 1)];
        for (filed, _) in entries {
            probes.extend([filed.saturating_sub(1), *filed, filed.saturating_add(1)]);
        }
        probes.retain(|probe| *probe >= *key && end.is_none_or(|end| *probe < end));
        probes.sort_unstable();
        probes.dedup();
        probes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        /// Every single-bit flip of any stored page, in a table built by merges and drains,
        /// leaves every lookup of the keys the page covers (those it files and those around
        /// them) the right seq or an error, never a wrong seq or "absent"; so do range reads
        /// over them, and a merge into the damaged page is refused. (With the crc, each such
        /// read is an error.)
        #[test]
        fn bit_flips_in_a_page_never_answer_wrong(
            rounds in rounds(1 << 20, 200, 4),
            in_recent in proptest::bool::ANY,
            which in any::<proptest::sample::Index>(),
        ) {
            let db = initialized();
            let (ids_model, recent_model) = file_rounds(&db, &rounds);
            let (table_def, name, model) = if in_recent {
                (IDS_RECENT, IDS_RECENT_NAME, recent_model)
            } else {
                (IDS, IDS_NAME, ids_model)
            };
            let txn = db.begin_write().expect("write");
            let mut table = txn.open_table(table_def).expect("table");
            let pages = check_tiling(&table, name).expect("tiled");
            let page = which.get(&pages);
            let page_key = page.0;
            let good = table.get(page_key).expect("read").expect("stored").value().to_vec();
            let probes = coverage_probes(page);
            for bit in 0..good.len() * 8 {
                let mut flipped = good.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                table.insert(page_key, flipped.as_slice()).expect("damage");
                // Every probe at full cost is ~1,000 lookups a flip: a window of them moves
                // with the bit, so every probe is read under many flips.
                let window: Vec<u64> = (0..4)
                    .map(|at| probes[(bit * 4 + at) % probes.len()])
                    .chain([page_key])
                    .collect();
                let answered = right_or_error(&table, name, &model, &window)?;
                prop_assert!(answered.is_empty(), "bit {}: {:x?} answered", bit, answered);
                let first = page.2.first().map_or(page_key, |entry| entry.0);
                prop_assert!(merge_into(&mut table, name, &[(first, 0)], u64::MAX).is_err());
            }
            table.insert(page_key, good.as_slice()).expect("restore");
            prop_assert_eq!(right_or_error(&table, name, &model, &probes)?, probes);
        }

        /// A page removed from the table, re-inserted under another key, or swapped with
        /// another: lookups and range reads over the keys it covered are errors, never
        /// "absent" or a wrong seq, and every other read is right or an error.
        #[test]
        fn missing_moved_or_swapped_pages_are_errors(
            rounds in rounds(1 << 16, 1_500, 4),
            in_recent in proptest::bool::ANY,
            which in any::<proptest::sample::Index>(),
            other in any::<proptest::sample::Index>(),
            shift in 1u64..1_000,
        ) {
            let db = initialized();
            let (ids_model, recent_model) = file_rounds(&db, &rounds);
            let (table_def, name, model) = if in_recent {
                (IDS_RECENT, IDS_RECENT_NAME, recent_model)
            } else {
                (IDS, IDS_NAME, ids_model)
            };
            let read = redb::ReadableDatabase::begin_read(&db).expect("read");
            let pages = check_tiling(&read.open_table(table_def).expect("table"), name)
                .expect("tiled");
            drop(read);
            let (page, other) = (which.get(&pages), other.get(&pages));
            // The keys the damaged pages cover, and a tenth of the others.
            let sample: Vec<u64> = pages.iter().flat_map(coverage_probes).step_by(10).collect();
            for damage in ["removed", "moved", "swapped"] {
                let txn = db.begin_write().expect("write");
                let mut table = txn.open_table(table_def).expect("table");
                let bytes = |table: &Table<'_, u64, &'static [u8]>, key: u64| {
                    table.get(key).expect("read").expect("stored").value().to_vec()
                };
                let mut damaged = vec![page];
                match damage {
                    "removed" => {
                        table.remove(page.0).expect("remove");
                    }
                    "moved" => {
                        let value = bytes(&table, page.0);
                        table.remove(page.0).expect("remove");
                        let to = page.0.wrapping_add(shift);
                        table.insert(to, value.as_slice()).expect("insert");
                        // The page under that key, if any, is overwritten.
                        damaged.extend(pages.iter().filter(|p| p.0 == to));
                    }
                    _ => {
                        if other.0 == page.0 {
                            continue;
                        }
                        let (a, b) = (bytes(&table, page.0), bytes(&table, other.0));
                        table.insert(page.0, b.as_slice()).expect("insert");
                        table.insert(other.0, a.as_slice()).expect("insert");
                        damaged.push(other);
                    }
                }
                let mut probes: Vec<u64> =
                    damaged.iter().flat_map(|lost| coverage_probes(lost)).chain(sample.iter().copied()).collect();
                probes.sort_unstable();
                probes.dedup();
                let answered = right_or_error(&table, name, &model, &probes)?;
                for lost in &damaged {
                    let covered = coverage_probes(lost);
                    prop_assert!(
                        !answered.iter().any(|key| covered.contains(key)),
                        "{}: a key of page {:#x} answered", damage, lost.0
                    );
                    let (first, last) = (covered[0], covered[covered.len() - 1]);
                    prop_assert!(keys_in(&table, name, first..=last).is_err(), "{}", damage);
                    prop_assert!(holds_key_in(&table, name, first..=last).is_err(), "{}", damage);
                    prop_assert!(keys_in(&table, name, 0..=u64::MAX).is_err(), "{}", damage);
                }
                drop(table);
                txn.abort().expect("abort");
            }
        }
    }

    /// A drain refuses an entry past the records the tables describe, in `ids-recent` or in
    /// `ids`, instead of filing it where a lookup would trust it.
    #[test]
    fn drain_refuses_seqs_past_the_records() {
        let db = initialized();
        let txn = db.begin_write().expect("write");
        {
            let mut recent = txn.open_table(IDS_RECENT).expect("table");
            merge_into(&mut recent, IDS_RECENT_NAME, &[(7, 40)], 0).expect("merge");
            let mut ids = txn.open_table(IDS).expect("table");
            merge_into(&mut ids, IDS_NAME, &[(3, 20)], 0).expect("merge");
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

    /// A drain and a merge refuse `ids` pages that do not tile the key space (valid pages
    /// that overlap, or leave a gap, or a table without its first page), rather than writing
    /// their keys out of order under a valid checksum or filing a key where no page covers it.
    #[test]
    fn drain_and_merge_refuse_pages_that_do_not_tile() {
        let page = |key: u64, end: Option<u64>, entries: &[(u64, u64)]| {
            encode_id_page(IDS_NAME, key, end, entries)
        };
        // What is stored (page key, page), and the error a drain gives.
        type Case = (&'static str, Vec<(u64, Vec<u8>)>, &'static str);
        let cases: [Case; 4] = [
            (
                "overlapping",
                vec![
                    (0, page(0, Some(40), &[(10, 1), (30, 2)])),
                    (20, page(20, None, &[(20, 3)])),
                ],
                "is not where the pages before it end",
            ),
            (
                "a gap",
                vec![
                    (0, page(0, Some(15), &[(10, 1)])),
                    (20, page(20, None, &[(20, 3)])),
                ],
                "is not where the pages before it end",
            ),
            (
                "no page at 0",
                vec![(20, page(20, None, &[(20, 3)]))],
                "is not where the pages before it end",
            ),
            (
                "no last page",
                vec![(0, page(0, Some(20), &[(10, 1)]))],
                "the page after them is missing",
            ),
        ];
        for (what, pages, message) in cases {
            let db = initialized();
            let txn = db.begin_write().expect("write");
            {
                let mut ids = txn.open_table(IDS).expect("table");
                ids.remove(0).expect("remove");
                for (key, bytes) in &pages {
                    ids.insert(key, bytes.as_slice()).expect("insert");
                }
            }
            let error = drain(&txn, &[(5, 4)], 10, 10).expect_err(what);
            assert!(error.contains(message), "{what}: {error}");
            let mut ids = txn.open_table(IDS).expect("table");
            // Key 17 falls in the gap, key 5 before the first page, key 25 past the last.
            let key = match what {
                "no page at 0" => 5,
                "no last page" => 25,
                _ => 17,
            };
            if what != "overlapping" {
                let error = merge_into(&mut ids, IDS_NAME, &[(key, 4)], 10).expect_err(what);
                assert!(
                    error.contains("covers") || error.contains("covering"),
                    "{what}: {error}"
                );
                assert!(lookup(&ids, IDS_NAME, key).is_err(), "{what}");
            }
        }
    }

    /// A table without pages (damage: its first page lost) or a table read as the other
    /// table (its pages' crcs name another) answers every read with an error.
    #[test]
    fn empty_or_misnamed_tables_are_errors() {
        let db = initialized();
        let txn = db.begin_write().expect("write");
        let mut ids = txn.open_table(IDS).expect("table");
        merge_into(&mut ids, IDS_NAME, &[(3, 1), (9, 2)], 10).expect("merge");
        assert_eq!(lookup(&ids, IDS_NAME, 9), Ok(Some(2)));
        assert_eq!(lookup(&ids, IDS_NAME, 8), Ok(None));
        let error = lookup(&ids, IDS_RECENT_NAME, 9).expect_err("another table's pages");
        assert!(error.ends_with("checksum mismatch"), "{error}");
        ids.remove(0).expect("remove");
        for key in [0, 3, 8, u64::MAX] {
            assert!(lookup(&ids, IDS_NAME, key).is_err(), "{key}");
        }
        assert!(keys_in(&ids, IDS_NAME, 0..=10).is_err());
        assert!(holds_key_in(&ids, IDS_NAME, 0..=10).is_err());
        assert!(merge_into(&mut ids, IDS_NAME, &[(5, 3)], 10).is_err());
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
