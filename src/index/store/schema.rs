//! What the sidecar holds: its tables, the keys of `meta`, the schema version, and how a
//! block hash is sealed. A change to a table, a layout or the rules that derive records bumps
//! [`SCHEMA_VERSION`] here (format-spec/index.md §6). No I/O beyond reading one state value, no
//! `Store`: every other file of the store reads its table definitions from here.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use redb::{ReadOnlyTable, ReadableTable, TableDefinition};

use super::handle::index_error;
use crate::error::Result;
use crate::format::record::{DecodeError, LabelValue, State, StoredCounts};
use crate::index::fast_map::FastMap;
use crate::index::small_tables::CountBytes;

/// Bumped whenever a table or a layout changes, or the rules that derive records from lines
/// (format-spec/index.md §6); an index of any other version is rebuilt.
pub const SCHEMA_VERSION: u32 = 15;

/// The rebuild reason ([`IndexState::Rebuilt`](super::IndexState::Rebuilt)) of an index of
/// another schema version.
pub const SCHEMA_CHANGED_REASON: &str = "index schema version differs";
pub(super) const SCHEMA_MAGIC: &[u8; 12] = b"treelog-idx\0";

pub(crate) const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");
pub(crate) const BLOCKS: TableDefinition<u64, &[u8]> = TableDefinition::new("blocks");
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

pub(super) const META_SCHEMA: &str = "schema";
pub(super) const META_SNAPSHOT: &str = "snapshot";
pub(super) const META_STATE: &str = "state";

/// Open read tables of the last committed index state.
pub(super) struct ReadTables {
    pub(super) records: ReadOnlyTable<u64, &'static [u8]>,
    pub(super) ids: ReadOnlyTable<u64, &'static [u8]>,
    pub(super) ids_recent: ReadOnlyTable<u64, &'static [u8]>,
    pub(super) id_collisions: ReadOnlyTable<&'static str, &'static [u8]>,
    pub(super) children: ReadOnlyTable<(u64, u64), u32>,
    pub(super) labels: ReadOnlyTable<&'static str, &'static [u8]>,
    pub(super) tallies: ReadOnlyTable<&'static str, &'static [u8]>,
    /// The key counts of the state committed with these tables (read in the same
    /// transaction): the small tables are checked against them when they are read whole.
    pub(super) counts: StoredCounts,
    /// The small tables, read whole and checked on first use (`small_tables.rs`).
    pub(super) loaded_children: OnceCell<FastMap<u64, Vec<u64>>>,
    pub(super) loaded_labels: OnceCell<BTreeMap<String, LabelValue>>,
    pub(super) loaded_id_collisions: OnceCell<HashMap<String, u64>>,
    pub(super) loaded_tallies: OnceCell<BTreeMap<String, CountBytes>>,
}

/// The key counts of the small tables that the state in `meta` records.
pub(super) fn stored_counts(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
) -> Result<StoredCounts> {
    let state = meta
        .get(META_STATE)
        .map_err(|e| index_error(path, e))?
        .ok_or_else(|| index_error(path, "the index has no state"))?;
    State::decode(state.value())
        .map(|(_, counts)| counts)
        .map_err(|error| index_error(path, error.0))
}

/// A block hash as stored: sealed under its block index (`format::seal`).
pub(super) fn seal_block(index: u64, hash: &[u8; 32]) -> Vec<u8> {
    crate::format::seal::seal(b"blocks", &index.to_le_bytes(), hash.to_vec())
}

pub(super) fn unseal_block(index: u64, stored: &[u8]) -> std::result::Result<&[u8], DecodeError> {
    crate::format::seal::unseal(b"blocks", &index.to_le_bytes(), stored, || {
        format!("the hash of block {index}")
    })
}
