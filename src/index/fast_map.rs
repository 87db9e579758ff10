//! The hash map of seqs and id keys used across the index.

use std::collections::HashMap;

/// A hash map keyed by seqs or id keys, with a hasher seeded per process.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
