//! Reads: records, walks toward the root, children, labels, the committed tables and their
//! checks. Overlay first, then the committed tables; every stored value is checked as it is
//! read, and damage is an [`Error::Index`](crate::Error::Index), never a wrong answer.
//! Nothing here writes.
//!
//! Records are stored in pages of consecutive lines that fill one redb page
//! (`format::page`), so a walk up a linear run of entries reads one B-tree value per page of
//! records, not one per hop.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};

use redb::{ReadableTable, ReadableTableMetadata};

use super::Store;
use super::handle::index_error;
use super::schema::{META, RECORDS, ReadTables, stored_counts};
use crate::error::Result;
use crate::format::page::{PageView, RecordRef};
use crate::format::record::{DecodeError, LabelValue, Record, SEQ_NONE, StoredCounts};
use crate::index::fast_map::FastMap;
use crate::index::id_table::{self, IDS, IDS_NAME, IDS_RECENT, IDS_RECENT_NAME};
use crate::index::links::Links;
use crate::index::small_tables::{self, CHILDREN, CountBytes, ID_COLLISIONS, LABELS, TALLIES};

const LINKS_CACHE_LEN_MAX: usize = 1 << 16;

/// A walk toward the root that leaves a page steps back through at most this many pages
/// before it looks its target up from the root of the B-tree instead.
const PAGES_SKIPPED_MAX: u32 = 2;

/// An encoded record page as redb hands it out.
type StoredPage<'a> = redb::AccessGuard<'a, &'static [u8]>;

/// An entry met on a walk toward the root, as [`Store::ancestor_entries`] hands it out.
#[derive(Clone, Debug)]
pub struct AncestorEntry {
    pub seq: u64,
    /// The role code of a plain message entry (`Record::plain`), `None` for any other.
    pub plain_role: Option<u8>,
    pub timestamp_ms: i64,
    pub id: compact_str::CompactString,
}

/// One record met on a walk toward the root: still in the overlay, or in a stored page.
pub(crate) enum Hop<'a> {
    Pending(&'a Record),
    Stored(RecordRef<'a, 'a>),
}

impl Hop<'_> {
    fn depth(&self) -> u64 {
        u64::from(match self {
            Hop::Pending(record) => record.depth,
            Hop::Stored(record) => record.depth(),
        })
    }

    /// The whole record: the overlay's copied, a stored one decoded.
    fn to_record(&self) -> std::result::Result<Record, DecodeError> {
        match self {
            Hop::Pending(record) => Ok((*record).clone()),
            Hop::Stored(record) => record.decode(),
        }
    }
}

impl Store {
    /// Whether the line `record` names, and the `\n` after it, lie inside the indexed prefix
    /// (a record from a damaged index could name any range); the unterminated last line ends
    /// where the prefix does.
    pub(crate) fn holds_line_of(&self, record: &Record) -> bool {
        record
            .offset_bytes
            .checked_add(u64::from(record.len_bytes))
            .is_some_and(|end| {
                end < self.indexed_len_bytes || (self.unterminated && end == self.indexed_len_bytes)
            })
    }

    pub(super) fn refresh_tables(&mut self) -> Result<()> {
        self.tables = self.read_tables()?;
        Ok(())
    }

    /// The committed tables, in a new read transaction (`None` without a database).
    pub(super) fn read_tables(&self) -> Result<Option<ReadTables>> {
        let path = self.sidecar_path.clone().unwrap_or_default();
        let Some(db) = &self.db else {
            return Ok(None);
        };
        #[cfg(test)]
        if super::tests::fail_table_reads() {
            return Err(index_error(&path, "test: reading the tables fails"));
        }
        let txn = db.begin_read().map_err(|e| index_error(&path, e))?;
        let counts = stored_counts(
            &txn.open_table(META).map_err(|e| index_error(&path, e))?,
            &path,
        )?;
        self.tables_in(txn, counts).map(Some)
    }

    /// The committed tables of `txn`, whose state records `counts` for the small tables.
    pub(super) fn tables_in(
        &self,
        txn: redb::ReadTransaction,
        counts: StoredCounts,
    ) -> Result<ReadTables> {
        let path = self.sidecar_path.clone().unwrap_or_default();
        Ok(ReadTables {
            counts,
            loaded_children: OnceCell::new(),
            loaded_labels: OnceCell::new(),
            loaded_id_collisions: OnceCell::new(),
            loaded_tallies: OnceCell::new(),
            records: txn.open_table(RECORDS).map_err(|e| index_error(&path, e))?,
            ids: txn.open_table(IDS).map_err(|e| index_error(&path, e))?,
            ids_recent: txn
                .open_table(IDS_RECENT)
                .map_err(|e| index_error(&path, e))?,
            id_collisions: txn
                .open_table(ID_COLLISIONS)
                .map_err(|e| index_error(&path, e))?,
            children: txn
                .open_table(CHILDREN)
                .map_err(|e| index_error(&path, e))?,
            labels: txn.open_table(LABELS).map_err(|e| index_error(&path, e))?,
            tallies: txn.open_table(TALLIES).map_err(|e| index_error(&path, e))?,
        })
    }

    // ---- reads: overlay first, then the committed tables ----

    pub fn record(&self, seq: u64) -> Result<Option<Record>> {
        self.guard(|| self.record_unguarded(seq))
    }

    /// Whether the record of `seq` (which must exist) has the id `id`, without decoding the
    /// rest of it.
    pub(super) fn record_has_id(&self, seq: u64, id: &str) -> Result<bool> {
        if seq >= self.overlay.base_seq {
            return match self
                .overlay
                .records
                .get((seq - self.overlay.base_seq) as usize)
            {
                Some(record) => Ok(record.id == id),
                None => Err(self.read_error(format!("record {seq} is missing"))),
            };
        }
        let Some((first, value)) = self.stored_page(seq)? else {
            return Err(self.read_error(format!("record {seq} is missing")));
        };
        let page = PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
        let record = page
            .get(seq)
            .ok_or_else(|| self.read_error(format!("record {seq} is missing")))?;
        Ok(record
            .id()
            .map_err(|error| self.read_error(error.0))?
            .as_str()
            == id)
    }

    fn record_unguarded(&self, seq: u64) -> Result<Option<Record>> {
        if seq >= self.overlay.base_seq {
            return Ok(self
                .overlay
                .records
                .get((seq - self.overlay.base_seq) as usize)
                .cloned());
        }
        // Every seq below the overlay's is in a stored page: one that is not was lost to
        // damage, never absent.
        let missing = || self.read_error(format!("record {seq} is missing"));
        let Some((first, value)) = self.stored_page(seq)? else {
            return Err(missing());
        };
        let page = PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
        page.get(seq)
            .ok_or_else(missing)?
            .decode()
            .map(Some)
            .map_err(|error| self.read_error(error.0))
    }

    /// The stored page that holds `seq` if any is: the one with the greatest first seq not
    /// above it (the caller checks that it reaches `seq`).
    fn stored_page(&self, seq: u64) -> Result<Option<(u64, StoredPage<'_>)>> {
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        match tables
            .records
            .range(..=seq)
            .map_err(|e| self.read_error(e))?
            .next_back()
        {
            None => Ok(None),
            Some(item) => {
                let (key, value) = item.map_err(|e| self.read_error(e))?;
                Ok(Some((key.value(), value)))
            }
        }
    }

    /// The records from `seq` (which must exist) to the end of the stored page or the overlay
    /// holding it, in order: a caller that reads every record (`entry_lines`) decodes each page
    /// once instead of looking each record up (a lookup and a page seal check per record).
    pub fn records_from(&self, seq: u64) -> Result<Vec<Record>> {
        self.guard(|| {
            let missing = || self.read_error(format!("record {seq} is missing"));
            if seq >= self.overlay.base_seq {
                let skip = (seq - self.overlay.base_seq) as usize;
                return match self.overlay.records.get(skip..) {
                    Some(records) if !records.is_empty() => Ok(records.to_vec()),
                    _ => Err(missing()),
                };
            }
            let Some((first, value)) = self.stored_page(seq)? else {
                return Err(missing());
            };
            let page =
                PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
            if page.get(seq).is_none() {
                return Err(missing());
            }
            let mut records = page
                .decode_all()
                .map_err(|error| self.read_error(error.0))?;
            records.drain(..(seq - first) as usize);
            // A stored page never reaches into the overlay; one that does is damage the
            // callers' checks meet, not records to hand out twice.
            records.truncate((self.overlay.base_seq - seq) as usize);
            Ok(records)
        })
    }

    /// The records of `seqs` (ascending), in order: each stored page is read once and only the
    /// records asked for are decoded, so a few records spread over many pages (the entries off
    /// the path) cost a record each, not a page each.
    pub fn records_at(&self, seqs: &[u64]) -> Result<Vec<Record>> {
        let mut out = Vec::with_capacity(seqs.len());
        self.guard(|| {
            self.visit_records_at(seqs, |_, hop| {
                out.push(hop.to_record().map_err(|error| self.read_error(error.0))?);
                Ok(())
            })
        })?;
        Ok(out)
    }

    /// For each of `seqs` (ascending), the model origin of an assistant message's record
    /// (`Record::model_origin_seq`), SEQ_NONE for other records: read from each stored page
    /// once, without decoding the rest of its records.
    pub fn model_origins(&self, seqs: &[u64]) -> Result<Vec<u64>> {
        let mut out = Vec::with_capacity(seqs.len());
        self.guard(|| {
            self.visit_records_at(seqs, |seq, hop| {
                let (assistant, origin) = match hop {
                    Hop::Pending(record) => (record.assistant, record.model_origin_seq),
                    Hop::Stored(record) => (record.assistant(), record.model_origin_seq()),
                };
                out.push(if !assistant {
                    SEQ_NONE
                } else if origin != SEQ_NONE && origin > seq {
                    return Err(self.read_error(format!("record {seq} names a later model origin")));
                } else {
                    origin
                });
                Ok(())
            })
        })?;
        Ok(out)
    }

    /// Calls `visit` with the record of each of `seqs` (ascending), in order: from the overlay,
    /// or from its stored page, each page read once for the records of `seqs` it holds.
    fn visit_records_at(
        &self,
        seqs: &[u64],
        mut visit: impl FnMut(u64, Hop<'_>) -> Result<()>,
    ) -> Result<()> {
        let missing = |seq: u64| self.read_error(format!("record {seq} is missing"));
        let mut at = 0;
        while at < seqs.len() {
            let seq = seqs[at];
            if seq >= self.overlay.base_seq {
                let record = self
                    .overlay
                    .records
                    .get((seq - self.overlay.base_seq) as usize)
                    .ok_or_else(|| missing(seq))?;
                visit(seq, Hop::Pending(record))?;
                at += 1;
                continue;
            }
            let (first, value) = self.stored_page(seq)?.ok_or_else(|| missing(seq))?;
            let page =
                PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
            if page.get(seq).is_none() {
                return Err(missing(seq));
            }
            while let Some(&seq) = seqs.get(at)
                && seq < self.overlay.base_seq
                && let Some(record) = page.get(seq)
            {
                visit(seq, Hop::Stored(record))?;
                at += 1;
            }
        }
        Ok(())
    }

    /// The record of `seq`, which the caller got from the index itself: a missing one means
    /// the index is inconsistent.
    pub fn existing_record(&self, seq: u64) -> Result<Record> {
        self.record(seq)?
            .ok_or_else(|| self.read_error(format!("record {seq} is missing")))
    }

    /// Records from `seq` up through its ancestors, nearest first, ending at a root or after
    /// `stop_seq`.
    pub fn ancestors(&self, seq: u64, stop_seq: u64) -> Result<Vec<(u64, Record)>> {
        let mut out = Vec::new();
        self.guard(|| {
            self.walk_up(seq, stop_seq, |seq, hop| {
                let record = hop.to_record().map_err(|error| self.read_error(error.0))?;
                out.push((seq, record));
                Ok(())
            })
        })?;
        Ok(out)
    }

    /// The ids of `seq` and its ancestors, nearest first: [`Store::ancestors`] without
    /// decoding whole records (the leaf-to-root walk of `path_ids`).
    pub fn ancestor_ids(&self, seq: u64) -> Result<crate::tree::PathIds> {
        let mut out = crate::tree::PathIds::default();
        self.guard(|| {
            self.walk_up(seq, SEQ_NONE, |_, hop| {
                if out.is_empty() {
                    // The depth says how many ids follow: one allocation instead of a doubling
                    // series (a damaged depth is bounded by the number of records).
                    out = crate::tree::PathIds::with_capacity(
                        hop.depth().saturating_add(1).min(self.next_seq) as usize,
                    );
                }
                match &hop {
                    Hop::Pending(record) => out.push_toward_root(&record.id),
                    Hop::Stored(record) => out.push_toward_root(
                        record
                            .id()
                            .map_err(|error| self.read_error(error.0))?
                            .as_str(),
                    ),
                }
                Ok(())
            })
        })?;
        Ok(out)
    }

    /// `seq` and its ancestors, nearest first, ending at a root or after `stop_seq`, each as
    /// its sequence number, the role code of a plain message entry (else `None`) and its id:
    /// [`Store::ancestors`] without decoding whole records (what a path handed out before its
    /// lines are read needs).
    pub fn ancestor_entries(&self, seq: u64, stop_seq: u64) -> Result<Vec<AncestorEntry>> {
        let mut out = Vec::new();
        self.guard(|| {
            self.walk_up(seq, stop_seq, |seq, hop| {
                if out.is_empty() {
                    out.reserve(hop.depth().saturating_add(1).min(self.next_seq) as usize);
                }
                out.push(match hop {
                    Hop::Pending(record) => AncestorEntry {
                        seq,
                        plain_role: record.plain_message_role(),
                        timestamp_ms: record.timestamp_ms,
                        id: record.id.clone(),
                    },
                    Hop::Stored(record) => AncestorEntry {
                        seq,
                        plain_role: record.plain_message_role(),
                        timestamp_ms: record.timestamp_ms(),
                        id: record
                            .id()
                            .map_err(|error| self.read_error(error.0))?
                            .as_str()
                            .into(),
                    },
                });
                Ok(())
            })
        })?;
        Ok(out)
    }

    /// Calls `visit` with the record of `seq` and of each ancestor, nearest first, ending at a
    /// root or after `stop_seq`. A linear run of the tree is usually a run of consecutive
    /// lines, so most hops stay inside the page already read: one B-tree lookup serves up to
    /// `PAGE_RECORDS_MAX` hops. Parents precede children, so a parent link that does not go back
    /// (a damaged index) is an error rather than a walk without end.
    fn walk_up(
        &self,
        seq: u64,
        stop_seq: u64,
        mut visit: impl FnMut(u64, Hop<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut wanted = seq;
        let mut pages = None;
        let mut skipped = 0;
        let mut fresh_range = false;
        let missing = |seq: u64| self.read_error(format!("record {seq} is missing"));
        let step = |wanted: u64, parent: u64| -> Result<Option<u64>> {
            if wanted == stop_seq || parent == SEQ_NONE {
                Ok(None)
            } else if parent >= wanted {
                Err(self.read_error(format!("record {wanted} names a later parent {parent}")))
            } else {
                Ok(Some(parent))
            }
        };
        loop {
            if wanted >= self.overlay.base_seq {
                let record = self
                    .overlay
                    .records
                    .get((wanted - self.overlay.base_seq) as usize)
                    .ok_or_else(|| missing(wanted))?;
                visit(wanted, Hop::Pending(record))?;
                match step(wanted, record.parent_seq)? {
                    Some(parent) => wanted = parent,
                    None => return Ok(()),
                }
                continue;
            }
            // Most walks step back page by page: the reverse range goes on from the page it
            // read last, and is restarted only when the walk jumps further back.
            let (first, value) = loop {
                let Some(range) = pages.as_mut() else {
                    let Some(tables) = &self.tables else {
                        return Err(missing(wanted));
                    };
                    pages = Some(
                        tables
                            .records
                            .range(..=wanted)
                            .map_err(|e| self.read_error(e))?,
                    );
                    skipped = 0;
                    fresh_range = true;
                    continue;
                };
                let (key, value) = range
                    .next_back()
                    .ok_or_else(|| missing(wanted))?
                    .map_err(|e| self.read_error(e))?;
                // A range just started at `wanted` hands out no key above it, unless redb's
                // B-tree is damaged: restarting it would loop forever.
                let first_of_range = std::mem::replace(&mut fresh_range, false);
                if key.value() <= wanted {
                    break (key.value(), value);
                }
                if first_of_range {
                    return Err(self.read_error(format!(
                        "the records table answers page {} for record {wanted}",
                        key.value()
                    )));
                }
                skipped += 1;
                if skipped > PAGES_SKIPPED_MAX {
                    pages = None;
                }
            };
            let page =
                PageView::new(first, value.value()).map_err(|error| self.read_error(error.0))?;
            loop {
                let record = page.get(wanted).ok_or_else(|| missing(wanted))?;
                let parent = record.parent_seq();
                visit(wanted, Hop::Stored(record))?;
                match step(wanted, parent)? {
                    Some(next) => wanted = next,
                    None => return Ok(()),
                }
                if wanted < first {
                    break;
                }
            }
        }
    }

    /// The tree fields of `seq`, which the caller got from the index itself.
    pub fn links(&self, seq: u64) -> Result<Links> {
        if seq >= self.overlay.base_seq {
            return match self
                .overlay
                .records
                .get((seq - self.overlay.base_seq) as usize)
            {
                Some(record) => Ok(Links::from(record)),
                None => Err(self.read_error(format!("record {seq} is missing"))),
            };
        }
        if let Some(links) = self.links_cache.borrow().get(&seq) {
            return Ok(*links);
        }
        let links = Links::from(&self.existing_record(seq)?);
        let mut cache = self.links_cache.borrow_mut();
        if cache.len() >= LINKS_CACHE_LEN_MAX {
            cache.clear();
        }
        cache.insert(seq, links);
        Ok(links)
    }

    /// Children of `parent_seq` ([`SEQ_NONE`] for the roots), in file order.
    pub fn children_of(&self, parent_seq: u64) -> Result<Vec<u64>> {
        self.guard(|| self.children_of_unguarded(parent_seq))
    }

    fn children_of_unguarded(&self, parent_seq: u64) -> Result<Vec<u64>> {
        let mut kids = Vec::new();
        // A child on the next line is not in the children table (format-spec/index.md): it
        // is the common case, and its record alone says it.
        if parent_seq != SEQ_NONE && parent_seq.saturating_add(1) < self.next_seq {
            let next = self.existing_record(parent_seq + 1)?;
            if next.kind.is_some() && next.parent_seq == parent_seq {
                kids.push(parent_seq + 1);
            }
        }
        if let Some(tables) = &self.tables {
            let listed = self.stored_children(tables)?;
            for &child in listed.get(&parent_seq).map_or(&[][..], Vec::as_slice) {
                // The next-line child is never stored (format-spec/index.md): listed, it would
                // be walked twice. Only a damaged index lists it. Tables committed by another
                // handle after this one's view may list later children: the overlay has them.
                if parent_seq != SEQ_NONE && child == parent_seq.saturating_add(1) {
                    return Err(self.read_error(format!(
                        "the children table lists record {child}, the next line after its parent"
                    )));
                }
                if child < self.overlay.base_seq {
                    kids.push(child);
                }
            }
        }
        if let Some(more) = self.overlay.children.get(&parent_seq) {
            kids.extend_from_slice(more);
        }
        Ok(kids)
    }

    pub fn label(&self, target_id: &str) -> Result<Option<LabelValue>> {
        self.guard(|| self.label_unguarded(target_id))
    }

    fn label_unguarded(&self, target_id: &str) -> Result<Option<LabelValue>> {
        if let Some(value) = self.overlay.labels.get(target_id) {
            return Ok(value.clone());
        }
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        Ok(self.stored_labels(tables)?.get(target_id).cloned())
    }

    /// The committed labels, read whole and checked once per committed state.
    fn stored_labels<'t>(
        &self,
        tables: &'t ReadTables,
    ) -> Result<&'t BTreeMap<String, LabelValue>> {
        self.small_table(&tables.loaded_labels, || {
            small_tables::load_labels(&tables.labels, tables.counts.labels)
        })
    }

    /// The committed listed children by parent, read whole and checked once per committed
    /// state.
    fn stored_children<'t>(&self, tables: &'t ReadTables) -> Result<&'t FastMap<u64, Vec<u64>>> {
        self.small_table(&tables.loaded_children, || {
            small_tables::load_children(&tables.children, tables.counts.children)
        })
    }

    /// The committed id collisions, read whole and checked once per committed state.
    pub(super) fn stored_id_collisions<'t>(
        &self,
        tables: &'t ReadTables,
    ) -> Result<&'t HashMap<String, u64>> {
        self.small_table(&tables.loaded_id_collisions, || {
            small_tables::load_id_collisions(&tables.id_collisions, tables.counts.id_collisions)
        })
    }

    /// A small table of `tables`, loaded by `load` on first use.
    fn small_table<'t, T>(
        &self,
        cell: &'t OnceCell<T>,
        load: impl FnOnce() -> std::result::Result<T, String>,
    ) -> Result<&'t T> {
        if let Some(loaded) = cell.get() {
            return Ok(loaded);
        }
        let loaded = load().map_err(|e| self.read_error(e))?;
        Ok(cell.get_or_init(|| loaded))
    }

    /// The committed tallies, read whole and checked once per committed state.
    fn stored_tallies<'t>(
        &self,
        tables: &'t ReadTables,
    ) -> Result<&'t BTreeMap<String, CountBytes>> {
        self.small_table(&tables.loaded_tallies, || {
            small_tables::load_tallies(&tables.tallies, tables.counts.tallies)
        })
    }

    /// Every tally of the indexed lines (`format::size_facts`), by key: a group's prefix
    /// letter, `:` and the name, or `small_tables::IMAGES_KEY`.
    pub fn tallies(&self) -> Result<BTreeMap<String, CountBytes>> {
        self.guard(|| {
            let mut all = match &self.tables {
                Some(tables) => self.stored_tallies(tables)?.clone(),
                None => BTreeMap::new(),
            };
            for add in &self.overlay.tallies {
                let tally = all.entry(add.key.to_string()).or_default();
                tally.0 += add.added.0;
                tally.1 += add.added.1;
            }
            Ok(all)
        })
    }

    /// Every label, as (target id, value), in target-id order.
    pub fn labels(&self) -> Result<Vec<(String, LabelValue)>> {
        self.guard(|| self.labels_unguarded())
    }

    fn labels_unguarded(&self) -> Result<Vec<(String, LabelValue)>> {
        let mut all = BTreeMap::new();
        if let Some(tables) = &self.tables {
            for (target, value) in self.stored_labels(tables)? {
                all.insert(target.clone(), Some(value.clone()));
            }
        }
        for (target, value) in &self.overlay.labels {
            all.insert(target.clone(), value.clone());
        }
        Ok(all
            .into_iter()
            .filter_map(|(target, value)| value.map(|value| (target, value)))
            .collect())
    }

    /// Reads every stored page of the records, ids and small tables and checks each as a read
    /// would (`treelog reindex` without `--force`): damage anywhere in them is an
    /// [`Error::Index`](crate::Error::Index), not only damage a query happens to read.
    pub fn check_stored(&self) -> Result<()> {
        self.guard(|| {
            let Some(tables) = &self.tables else {
                return Ok(());
            };
            let mut next = 0u64;
            for item in tables.records.iter().map_err(|e| self.read_error(e))? {
                let (key, value) = item.map_err(|e| self.read_error(e))?;
                let first = key.value();
                if first != next {
                    return Err(self.read_error(format!(
                        "the record page after record {next} starts at {first}"
                    )));
                }
                let page = PageView::new(first, value.value())
                    .and_then(|page| page.decode_all())
                    .map_err(|error| self.read_error(error.0))?;
                next = first.saturating_add(page.len() as u64);
            }
            if next < self.overlay.base_seq {
                return Err(self.read_error(format!(
                    "the record pages end at record {next}, before {}",
                    self.overlay.base_seq
                )));
            }
            for (table, name) in [
                (&tables.ids, IDS_NAME),
                (&tables.ids_recent, IDS_RECENT_NAME),
            ] {
                id_table::check_pages(table, name).map_err(|e| self.read_error(e))?;
            }
            self.stored_children(tables)?;
            self.stored_labels(tables)?;
            self.stored_id_collisions(tables)?;
            self.stored_tallies(tables)?;
            Ok(())
        })
    }

    /// Number of records (entries and opaque lines) indexed.
    pub fn record_count(&self) -> u64 {
        self.next_seq
    }

    /// Bytes of index data redb holds for the committed tables.
    pub fn stored_bytes(&self) -> Result<u64> {
        self.guard(|| self.stored_bytes_unguarded())
    }

    fn stored_bytes_unguarded(&self) -> Result<u64> {
        let Some(tables) = &self.tables else {
            return Ok(0);
        };
        let mut total = 0;
        total += tables
            .records
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        for ids in [&tables.ids, &tables.ids_recent] {
            total += ids.stats().map_err(|e| self.read_error(e))?.stored_bytes();
        }
        total += tables
            .id_collisions
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        total += tables
            .children
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        total += tables
            .tallies
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        total += tables
            .labels
            .stats()
            .map_err(|e| self.read_error(e))?
            .stored_bytes();
        Ok(total)
    }
}
