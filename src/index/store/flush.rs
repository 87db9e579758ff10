//! The flush: writes the overlay to redb in one transaction (record pages, ids, the small
//! tables, block hashes, then the snapshot and state), unless another handle moved the index
//! to a state this overlay does not extend. The only writer of committed tables besides
//! `rebuild.rs`'s reset and id merge; it never reads the log.

use std::path::Path;

use redb::{ReadableTable, ReadableTableMetadata};

use super::handle::{Db, DropGuarded, guarded, index_error, open_database, writer};
use super::ids::RESERVED_IDS_LEN;
use super::overlay::Overlay;
use super::schema::{BLOCKS, META, META_SNAPSHOT, META_STATE, RECORDS, seal_block, stored_counts};
use super::{Lag, Store};
use crate::error::{Error, Result};
use crate::format::page::{PageBuilder, PageView};
use crate::format::record::{DecodeError, Snapshot};
use crate::index::id_table::{self, IDS, IDS_NAME, IDS_RECENT, IDS_RECENT_NAME};
use crate::index::small_tables::SmallWriter;
use crate::limits::{FLUSH_BYTES_MAX, FLUSH_ENTRIES_MAX};
use crate::storage::{FileIdentity, LogStorage};

/// A reader writes what it caught up once it is at least this many lines or bytes.
const READER_FLUSH_RECORDS_MIN: usize = 256;
const READER_FLUSH_BYTES_MIN: u64 = 1024 * 1024;

impl Store {
    /// True when the overlay is big enough to be written out. A rebuild flushes as often as
    /// appends do: its commits are not durable and its ids go to runs (`id_index::push_run`),
    /// so a flush touches few pages, and an overlay of 32,768 records keeps its id map in the
    /// core's cache; larger flushes make a rebuild slower and larger
    /// (docs/decisions/parallel-rebuild.md).
    fn flush_due(&self) -> bool {
        #[cfg(test)]
        if self.build_mode
            && let Some(entries_max) = super::tests::rebuild_flush_entries_max()
        {
            return self.overlay.records.len() >= entries_max;
        }
        self.overlay.records.len() >= FLUSH_ENTRIES_MAX
            || self.indexed_len_bytes - self.overlay.base_len_bytes >= FLUSH_BYTES_MAX
    }

    /// Writes the overlay to redb if it lags the log by at least `lag`.
    pub fn flush_if(&mut self, storage: &dyn LogStorage, lag: Lag) -> Result<()> {
        let pending_records = self.overlay.records.len();
        let pending_bytes = self.indexed_len_bytes - self.committed.indexed_len_bytes;
        let big_enough = match lag {
            Lag::Any => pending_bytes > 0,
            Lag::Reader => {
                pending_records >= READER_FLUSH_RECORDS_MIN
                    || pending_bytes >= READER_FLUSH_BYTES_MIN
            }
            Lag::Due => self.flush_due(),
        };
        if self.db.is_some()
            && !self.read_only
            && self.write_failure.is_none()
            && ((pending_bytes > 0 && big_enough) || self.identity_outdated)
        {
            match self.flush(storage) {
                // The log is the truth and already holds every line: an index that cannot be
                // written must not fail the append that triggered the flush. This handle keeps
                // answering from its overlay; the next open rebuilds the index.
                Err(Error::Index { reason, .. }) => self.write_failure = Some(reason),
                other => other?,
            }
        }
        Ok(())
    }

    /// Writes the overlay to redb in one transaction. If another handle changed the index
    /// since this one last looked, nothing is written: this handle keeps answering from its
    /// overlay, and the other handle's flush already covers the log it saw.
    pub fn flush(&mut self, storage: &dyn LogStorage) -> Result<()> {
        let Some(sidecar) = self.sidecar_path.clone() else {
            return Ok(());
        };
        if self.read_only {
            return Ok(());
        }
        let identity = storage
            .identity()
            .map_err(|e| Error::io(storage.path(), "look at the log", e))?;
        guarded(&sidecar, || self.write_overlay(&sidecar, identity))
    }

    /// Writes the overlay's records from `write_from` on into record pages, extending the last
    /// stored page while it has room (format-spec/index.md).
    fn write_record_pages(
        &self,
        records: &mut redb::Table<'_, u64, &'static [u8]>,
        write_from: u64,
        path: &Path,
    ) -> Result<()> {
        let skipped = (write_from - self.overlay.base_seq) as usize;
        // Stored pages are rewritten only when records are added, after the last one's records
        // are checked: rewriting a page damaged on disk would give the damage a valid redb
        // checksum, which a full check could then no longer see.
        if skipped == self.overlay.records.len() {
            return Ok(());
        }
        let mut page = PageBuilder::new(write_from);
        let last = records
            .last()
            .map_err(|e| index_error(path, e))?
            .map(|(key, value)| {
                let first = key.value();
                let records = PageView::new(first, value.value())?.decode_all()?;
                let mut builder = PageBuilder::new(first);
                for (index, record) in records.iter().enumerate() {
                    // Wrapping, as the page's own seqs do: a damaged key near u64::MAX is
                    // refused below (its records do not end at `write_from`), not an overflow.
                    let seq = first.wrapping_add(index as u64);
                    if !record.links_point_back(seq) {
                        return Err(DecodeError(format!("record {seq} links forward")));
                    }
                    builder.push(record);
                }
                Ok(builder)
            })
            .transpose()
            .map_err(|error| index_error(path, error.0))?;
        match last {
            Some(builder)
                if builder.first_seq().checked_add(builder.len() as u64) == Some(write_from) =>
            {
                page = builder;
            }
            None if write_from == 0 => {}
            _ => {
                return Err(index_error(
                    path,
                    format!("the last record page does not end at record {write_from}"),
                ));
            }
        }
        for record in &self.overlay.records[skipped..] {
            if !page.try_push(record) {
                let first = page.first_seq();
                records
                    .insert(first, page.finish().as_slice())
                    .map_err(|e| index_error(path, e))?;
                page.push(record);
            }
        }
        if !page.is_empty() {
            let first = page.first_seq();
            records
                .insert(first, page.finish().as_slice())
                .map_err(|e| index_error(path, e))?;
        }
        Ok(())
    }

    fn write_overlay(&mut self, path: &Path, identity: FileIdentity) -> Result<()> {
        if self.unterminated {
            // The last line has no `\n` yet and may still change: nothing is written until
            // it has one (or a reload drops it), so the committed index ends at a `\n`.
            return Ok(());
        }
        self.check_applicable()?;
        self.ensure_writer()?;
        let db = writer(&self.db, path)?;
        // Kept until the snapshot check passes: if another handle changed the index, this
        // handle goes on reading the state its overlay extends (a newer state would overlap
        // the overlay and list its records twice).
        let tables = self.tables.take();
        // Every early return below gives the tables back: without them the handle would answer
        // as if the index were empty ("record N is missing"; found by the soak test, where a
        // write transaction failed to begin while other processes wrote).
        let begun = (|| {
            let mut txn = db.begin_write().map_err(|e| index_error(path, e))?;
            if self.build_mode {
                txn.set_durability(redb::Durability::None)
                    .map_err(|e| index_error(path, e))?;
            }
            let on_disk = {
                let meta = txn.open_table(META).map_err(|e| index_error(path, e))?;
                let value = meta.get(META_SNAPSHOT).map_err(|e| index_error(path, e))?;
                value.map(|value| Snapshot::decode(value.value()))
            };
            Ok((txn, on_disk))
        })();
        let (txn, on_disk) = match begun {
            Ok(begun) => begun,
            Err(error) => {
                self.tables = tables;
                return Err(error);
            }
        };
        // Where this flush starts writing records: after what the index already holds.
        let write_from = match on_disk {
            Some(Ok(disk)) if disk == self.committed => self.overlay.base_seq,
            // Another handle (a reader that caught up, say) indexed part of what this overlay
            // holds. The index of a log prefix does not depend on who built it, so the rest
            // is written after it; without this, a long-lived writer would never flush again.
            Some(Ok(disk))
                if disk.first_line_hash == self.first_line_hash
                    && disk.next_seq >= self.overlay.base_seq
                    && disk.next_seq <= self.next_seq
                    && disk.indexed_len_bytes >= self.overlay.base_len_bytes
                    && disk.indexed_len_bytes <= self.indexed_len_bytes =>
            {
                disk.next_seq
            }
            _ => {
                self.tables = tables;
                txn.abort().map_err(|e| index_error(path, e))?;
                return Ok(());
            }
        };
        // A rebuild writes each flush's ids as a run, merged once at the end: inserting random
        // keys among all the ids so far would rewrite most id pages at every flush.
        let write_run = self.build_mode;
        let snapshot = Snapshot {
            indexed_len_bytes: self.indexed_len_bytes,
            next_seq: self.next_seq,
            device: identity.device,
            inode: identity.inode,
            modified_ns: identity.modified_ns,
            changed_ns: identity.changed_ns,
            observed_len_bytes: identity.len_bytes.max(self.indexed_len_bytes),
            first_line_hash: self.first_line_hash,
            tail_block_start_bytes: self.hasher.tail_block_start_bytes(),
            tail_hash: self.hasher.tail_hash(),
        };
        // The tables this handle reads stay open until the commit succeeds: if anything fails
        // (a damaged page met while merging ids, a full disk), the handle goes on answering
        // from them and its overlay.
        let written = (|| -> Result<Vec<(u64, u64)>> {
            let mut new_run = Vec::new();
            {
                let mut records = txn.open_table(RECORDS).map_err(|e| index_error(path, e))?;
                self.write_record_pages(&mut records, write_from, path)?;
                let mut new_ids: Vec<(u64, u64)> = self
                    .overlay
                    .ids
                    .iter()
                    .filter(|(_, seq)| **seq >= write_from)
                    .map(|(key, seq)| (*key, *seq))
                    .collect();
                new_ids.sort_unstable();
                if write_run {
                    new_run = new_ids;
                } else {
                    // New ids spread over the key space (pi's, or another writer's caught up)
                    // go to the small `ids-recent`, which is drained into `ids` now and then:
                    // merging them into `ids` rewrote most of its pages at every flush once the
                    // log was long (format-spec/index.md, "Ids"). A narrow range goes to `ids`.
                    let pages = |table| -> Result<u64> {
                        let table = txn.open_table(table).map_err(|e| index_error(path, e))?;
                        table.len().map_err(|e| index_error(path, e))
                    };
                    // A flush of appends files ids from one reserved run: a narrow key range
                    // that `ids` holds a page or two of, filed there directly (unless
                    // `ids-recent` holds a key in it, which would shadow the new entry).
                    let narrow = match (new_ids.first(), new_ids.last()) {
                        (Some(&(first, _)), Some(&(last, _))) => {
                            last - first < 2 * RESERVED_IDS_LEN && {
                                let recent = txn
                                    .open_table(IDS_RECENT)
                                    .map_err(|e| index_error(path, e))?;
                                !id_table::holds_key_in(&recent, IDS_RECENT_NAME, first..=last)
                                    .map_err(|e| index_error(path, e))?
                            }
                        }
                        _ => false,
                    };
                    if narrow {
                        let mut ids = txn.open_table(IDS).map_err(|e| index_error(path, e))?;
                        id_table::merge_into(&mut ids, IDS_NAME, &new_ids, write_from)
                    } else if id_table::drain_due(pages(IDS_RECENT)?, new_ids.len(), pages(IDS)?) {
                        id_table::drain(&txn, &new_ids, write_from, write_from)
                    } else {
                        let mut recent = txn
                            .open_table(IDS_RECENT)
                            .map_err(|e| index_error(path, e))?;
                        id_table::merge_into(&mut recent, IDS_RECENT_NAME, &new_ids, write_from)
                    }
                    .map_err(|e| index_error(path, e))?;
                }
                // The small tables' counts move from those of the state on disk (whoever wrote
                // it), by what this flush adds or removes (`small_tables.rs`).
                let disk_counts = stored_counts(
                    &txn.open_table(META).map_err(|e| index_error(path, e))?,
                    path,
                )?;
                let mut small =
                    SmallWriter::open(&txn, disk_counts).map_err(|e| index_error(path, e))?;
                for (id, seq) in &self.overlay.id_collisions {
                    if *seq >= write_from {
                        small
                            .add_id_collision(id, *seq)
                            .map_err(|e| index_error(path, e))?;
                    }
                }
                let mut pairs: Vec<(u64, u64)> = self
                    .overlay
                    .children
                    .iter()
                    .flat_map(|(parent, kids)| kids.iter().map(move |kid| (*parent, *kid)))
                    .filter(|(_, kid)| *kid >= write_from)
                    .collect();
                pairs.sort_unstable();
                for (parent, child) in pairs {
                    small
                        .add_child(parent, child)
                        .map_err(|e| index_error(path, e))?;
                }
                for (target, value) in &self.overlay.labels {
                    small
                        .set_label(target, value.as_ref())
                        .map_err(|e| index_error(path, e))?;
                }
                let mut tallies: std::collections::BTreeMap<&str, (u64, u64)> =
                    std::collections::BTreeMap::new();
                for add in self
                    .overlay
                    .tallies
                    .iter()
                    .filter(|add| add.seq >= write_from)
                {
                    let tally = tallies.entry(add.key.as_str()).or_default();
                    tally.0 += add.added.0;
                    tally.1 += add.added.1;
                }
                for (key, added) in tallies {
                    small
                        .add_tally(key, added)
                        .map_err(|e| index_error(path, e))?;
                }
                let counts = small.counts;
                drop(small);
                let mut blocks = txn.open_table(BLOCKS).map_err(|e| index_error(path, e))?;
                for (index, hash) in self.hasher.finished() {
                    blocks
                        .insert(*index, seal_block(*index, hash).as_slice())
                        .map_err(|e| index_error(path, e))?;
                }
                let mut meta = txn.open_table(META).map_err(|e| index_error(path, e))?;
                meta.insert(META_SNAPSHOT, snapshot.encode().as_slice())
                    .map_err(|e| index_error(path, e))?;
                meta.insert(META_STATE, self.state.encode(counts).as_slice())
                    .map_err(|e| index_error(path, e))?;
            }
            txn.commit().map_err(|e| index_error(path, e))?;
            Ok(new_run)
        })();
        let new_run = match written {
            Ok(new_run) => new_run,
            Err(error) => {
                self.tables = tables;
                return Err(error);
            }
        };
        // The committed tables are read before the overlay is let go: without them this handle
        // would answer as if the index were empty (and every id looked free). If they cannot be
        // read, it keeps the state before the flush, whose answers are still right; its next
        // flush, if any, finds the index moved on and writes nothing.
        let new_tables = match self.read_tables() {
            Ok(new_tables) => new_tables,
            Err(error) => {
                self.tables = tables;
                return Err(error);
            }
        };
        drop(tables);
        if write_run {
            crate::format::id_index::push_run(&mut self.id_runs, new_run);
        }
        if let Some(writeback) = &self.writeback {
            writeback.request();
        }
        self.hasher.take_finished();
        self.committed = snapshot;
        self.identity_outdated = false;
        // The next overlay keeps this one's record and id buffers, emptied: freeing them at
        // every flush and faulting them back in as the next records arrive (a 4 MB record
        // buffer at 32,768 appends, ~30 MB in a rebuild) cost more than the records' own work.
        // A reload (`load`) starts from empty buffers.
        let mut records = std::mem::take(&mut self.overlay.records);
        records.clear();
        let mut ids = std::mem::take(&mut self.overlay.ids);
        ids.clear();
        self.overlay = Overlay {
            base_seq: self.next_seq,
            base_len_bytes: self.indexed_len_bytes,
            records,
            ids,
            ..Overlay::default()
        };
        self.tables = new_tables;
        Ok(())
    }

    /// Writes the overlay out if it is big enough and the hashes cover what it indexes.
    pub(super) fn flush_when_due(&mut self, identity: FileIdentity) -> Result<()> {
        // Called after every chunk a catch-up or a rebuild applies.
        self.report_progress();
        if self.db.is_some()
            && self.flush_due()
            && self.hasher.hashed_len_bytes() == self.indexed_len_bytes
        {
            let sidecar = self.sidecar_path.clone().unwrap_or_default();
            guarded(&sidecar, || self.write_overlay(&sidecar, identity))?;
        }
        Ok(())
    }

    /// Makes sure the read-write handle of the sidecar is open (it is opened on first use).
    /// Read transactions of the read-only handle stay valid: redb lets both handles share the
    /// file in this process.
    pub(super) fn ensure_writer(&mut self) -> Result<()> {
        if let Some(Db::ReadOnly(_)) = &self.db {
            let path = self.sidecar_path.clone().unwrap_or_default();
            if self.read_only {
                return Err(index_error(&path, "index writes are off (read-only)"));
            }
            self.db = Some(Db::Writer(DropGuarded::new(open_database(&path)?)));
        }
        Ok(())
    }
}
