//! Ids: the seq an id names (overlay, a rebuild's id runs, `ids-recent`, then `ids`; hashed
//! keys checked against the record), filing a new line's id, and the reservation of new entry
//! ids in runs. The paged tables themselves are `index/id_table.rs`.

use super::Store;
use crate::error::Result;
use crate::format::id_index::{id_key, is_exact_key};
use crate::index::id_table::{self, IDS_NAME, IDS_RECENT_NAME};

/// How many consecutive 8-hex ids [`Store::reserved_entry_id`] reserves at once: more than an
/// overlay takes, so that the ids a flush of appends files lie in one narrow key range and go
/// straight into `ids`, rewriting a page or two of it (format-spec/index.md, "Ids"). The ids
/// the tables already hold in the run (~15 at 1M ids) are skipped.
pub(super) const RESERVED_IDS_LEN: u64 = 1 << 16;
const _: () = assert!(
    RESERVED_IDS_LEN >= crate::limits::FLUSH_ENTRIES_MAX as u64,
    "one run lasts an overlay of appends"
);
/// Runs used up (every one of their 65,536 ids held or refused) before falling back to random
/// ids looked up one by one: in practice only when nearly all 2^32 values are taken.
pub(super) const RESERVE_TRIES_MAX: usize = 8;

impl Store {
    pub fn seq_of(&self, id: &str) -> Result<Option<u64>> {
        self.guard(|| self.seq_of_unguarded(id))
    }

    fn seq_of_unguarded(&self, id: &str) -> Result<Option<u64>> {
        let key = id_key(id);
        let owner = self.id_owner(key)?;
        if is_exact_key(key) {
            return Ok(owner);
        }
        // A hashed key is held by the first id filed under it: another id with the same key is
        // among the collisions.
        let Some(owner) = owner else {
            return Ok(None);
        };
        if self.record_has_id(owner, id)? {
            return Ok(Some(owner));
        }
        if let Some(seq) = self.overlay.id_collisions.get(id) {
            return Ok(Some(*seq));
        }
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        Ok(self.stored_id_collisions(tables)?.get(id).copied())
    }

    /// A new 8-hex entry id that no indexed line holds and `taken` does not refuse, or `None`
    /// when [`RESERVE_TRIES_MAX`] runs were used up (a log dense with ids: the caller then
    /// draws random ids and looks each one up). Ids come in increasing order from a run of
    /// [`RESERVED_IDS_LEN`] values at a random start, skipping the keys the tables file in it
    /// (read once for the whole run, a few range reads per table) and those in the overlay,
    /// so that an append looks its new id up in memory only, never in redb
    /// (docs/decisions/reserved-id-runs.md).
    pub fn reserved_entry_id(&mut self, taken: impl Fn(&str) -> bool) -> Result<Option<String>> {
        debug_assert!(
            self.id_runs.is_empty(),
            "id runs exist only inside a rebuild, which never appends"
        );
        if self.overlay.reserve_failed {
            return Ok(None);
        }
        for tries in 0.. {
            let overlay = &mut self.overlay;
            for key in overlay.reserved_id_keys.by_ref() {
                let held = &mut overlay.reserved_held_keys;
                while held.last().is_some_and(|held_key| *held_key < key) {
                    held.pop();
                }
                if held.last() == Some(&key) {
                    continue;
                }
                // Reserved runs end at `ffffffff` at most (below): every key is a hex id's.
                let Ok(value) = u32::try_from(key) else {
                    continue;
                };
                let id = crate::format::id_index::hex8_id(value);
                if !overlay.ids.contains_key(&key) && !taken(&id) {
                    return Ok(Some(id));
                }
            }
            if tries == RESERVE_TRIES_MAX {
                self.overlay.reserve_failed = true;
                break;
            }
            let run_len = RESERVED_IDS_LEN;
            #[cfg(test)]
            let run_len = super::tests::forced_reserved_ids_len().unwrap_or(run_len);
            // Any start from 0 to 2^32 - run_len: the run ends at `ffffffff` at most.
            let start = crate::format::ids::random_u64() % ((1 << 32) - run_len + 1);
            #[cfg(test)]
            let start = super::tests::forced_reserved_id_start().unwrap_or(start);
            let keys = start..start + run_len;
            let mut held = self.guard(|| self.tables_keys_in(keys.start..=keys.end - 1))?;
            held.sort_unstable_by(|a, b| b.cmp(a));
            self.overlay.reserved_id_keys = keys;
            self.overlay.reserved_held_keys = held;
        }
        Ok(None)
    }

    /// The keys the tables under the overlay (`ids-recent`, `ids`) file in `keys`.
    fn tables_keys_in(&self, keys: std::ops::RangeInclusive<u64>) -> Result<Vec<u64>> {
        let Some(tables) = &self.tables else {
            return Ok(Vec::new());
        };
        let mut found = id_table::keys_in(&tables.ids_recent, IDS_RECENT_NAME, keys.clone())
            .map_err(|e| self.read_error(e))?;
        found.extend(
            id_table::keys_in(&tables.ids, IDS_NAME, keys).map_err(|e| self.read_error(e))?,
        );
        Ok(found)
    }

    /// The latest seq filed under `key`: the overlay, then the runs of a rebuild newest
    /// first, then `ids-recent`, then `ids`.
    fn id_owner(&self, key: u64) -> Result<Option<u64>> {
        if let Some(seq) = self.overlay.ids.get(&key) {
            return Ok(Some(*seq));
        }
        for run in self.id_runs.iter().rev() {
            if let Ok(found) = run.binary_search_by_key(&key, |entry| entry.0) {
                return Ok(Some(run[found].1));
            }
        }
        let Some(tables) = &self.tables else {
            return Ok(None);
        };
        if let Some(seq) = id_table::lookup(&tables.ids_recent, IDS_RECENT_NAME, key)
            .map_err(|e| self.read_error(e))?
        {
            return Ok(Some(seq));
        }
        id_table::lookup(&tables.ids, IDS_NAME, key).map_err(|e| self.read_error(e))
    }

    /// Files `id` as the id of line `seq` (the latest line with it so far).
    pub(crate) fn note_id(&mut self, id: &str, seq: u64) -> Result<()> {
        let key = id_key(id);
        if !is_exact_key(key) {
            let held_by_other = self.guard(|| match self.id_owner(key)? {
                Some(owner) => Ok(!self.record_has_id(owner, id)?),
                None => Ok(false),
            })?;
            if held_by_other {
                self.overlay.id_collisions.insert(id.to_string(), seq);
                return Ok(());
            }
        }
        self.overlay.ids.insert(key, seq);
        Ok(())
    }
}
