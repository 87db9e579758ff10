//! How a long catch-up runs on several threads (`parallel.rs`): a setting the store keeps, so
//! that tests can shrink the sizes to exercise every path on small logs. Plain data.

/// When and how a catch-up runs on several threads (tests shrink the sizes to exercise every
/// path on small logs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tuning {
    /// Below this many bytes to read, a catch-up is not worth starting threads for.
    pub min_bytes: u64,
    /// Bytes read and classified per step.
    pub chunk_len: usize,
    pub chunk_len_max: usize,
    /// How far hashing runs ahead of the line being applied (see `apply_steps`).
    pub hash_ahead_bytes: usize,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            min_bytes: 16 * 1024 * 1024,
            chunk_len: 4 * 1024 * 1024,
            chunk_len_max: 64 * 1024 * 1024,
            hash_ahead_bytes: 64 * 1024,
        }
    }
}
