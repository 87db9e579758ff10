//! The overlay: the records, ids, children, labels and tallies derived from lines not yet written to
//! redb. Plain data: filled by `index/apply.rs`, written out and emptied by `flush.rs`, read
//! first by `reads.rs` and `ids.rs`. It must not read redb or the log.

use std::collections::HashMap;

use crate::format::record::{LabelValue, Record};
use crate::index::fast_map::FastMap;
use crate::index::small_tables::CountBytes;

/// What line `seq` adds to the tally of `key`: a count and bytes.
pub(crate) struct TallyAdd {
    pub seq: u64,
    pub key: compact_str::CompactString,
    pub added: CountBytes,
}

/// Index content derived from lines not yet written to redb. Sequence numbers in
/// `records` are contiguous from `base_seq`.
#[derive(Default)]
pub(crate) struct Overlay {
    pub base_seq: u64,
    pub records: Vec<Record>,
    /// Id key (`format::id_index`) → the latest seq filed under it. Keys come from the log,
    /// so the map keeps a seeded hasher (foldhash: a quarter of SipHash's cost on u64 keys).
    pub ids: FastMap<u64, u64>,
    /// Ids whose key another id holds → their latest seq.
    pub id_collisions: HashMap<String, u64>,
    pub children: FastMap<u64, Vec<u64>>,
    /// `None` marks a label that was cleared.
    pub labels: HashMap<String, Option<LabelValue>>,
    /// What each line adds to the tallies (`small_tables::TALLIES`), in file order.
    pub tallies: Vec<TallyAdd>,
    pub base_len_bytes: u64,
    /// Keys of 8-hex ids handed out in increasing order by
    /// [`Store::reserved_entry_id`](super::Store::reserved_entry_id), which skips those the
    /// tables under this overlay hold (`reserved_held_keys`) and checks each against the
    /// overlay as it takes it. A new overlay (a flush, a reload) starts with none: the tables
    /// it sits on may hold more of them.
    pub reserved_id_keys: std::ops::Range<u64>,
    /// The keys in `reserved_id_keys` that the tables under this overlay file, largest first
    /// (the smallest is dropped once the run passes it): they are skipped.
    pub reserved_held_keys: Vec<u64>,
    /// [`Store::reserved_entry_id`](super::Store::reserved_entry_id) used up
    /// [`RESERVE_TRIES_MAX`](super::ids::RESERVE_TRIES_MAX) runs: it does not try again on
    /// this overlay (the caller draws random ids and looks each one up).
    pub reserve_failed: bool,
}
