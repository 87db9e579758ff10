//! The snapshot hash of the indexed log prefix: blake3 over fixed blocks of
//! [`HASH_BLOCK_LEN`] bytes. Full blocks are stored in the index; the last, partial block's
//! hash is in the snapshot. Because blocks are fixed, two indexes of the same bytes hold the
//! same hashes however their catch-ups were split.

use crate::limits::HASH_BLOCK_LEN;

#[derive(Clone)]
pub(crate) struct PrefixHasher {
    /// Start of the current, partial block.
    block_start_bytes: u64,
    /// Bytes hashed into the current block.
    block_fill_bytes: u64,
    hasher: blake3::Hasher,
    /// Full blocks finished since the last [`PrefixHasher::take_finished`], as (index, hash).
    finished: Vec<(u64, [u8; 32])>,
}

impl PrefixHasher {
    /// A hasher positioned at `block_start_bytes` (a block boundary) having seen `tail`.
    pub fn resume(block_start_bytes: u64, tail: &[u8]) -> PrefixHasher {
        debug_assert_eq!(block_start_bytes % HASH_BLOCK_LEN, 0);
        let mut hasher = PrefixHasher {
            block_start_bytes,
            block_fill_bytes: 0,
            hasher: blake3::Hasher::new(),
            finished: Vec::new(),
        };
        hasher.update(tail);
        hasher
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = (HASH_BLOCK_LEN - self.block_fill_bytes) as usize;
            let take = room.min(bytes.len());
            self.hasher.update(&bytes[..take]);
            self.block_fill_bytes += take as u64;
            bytes = &bytes[take..];
            if self.block_fill_bytes == HASH_BLOCK_LEN {
                let index = self.block_start_bytes / HASH_BLOCK_LEN;
                self.finished
                    .push((index, *self.hasher.finalize().as_bytes()));
                self.hasher.reset();
                self.block_start_bytes += HASH_BLOCK_LEN;
                self.block_fill_bytes = 0;
            }
        }
    }

    /// Bytes of the log hashed so far.
    pub fn hashed_len_bytes(&self) -> u64 {
        self.block_start_bytes + self.block_fill_bytes
    }

    pub fn tail_block_start_bytes(&self) -> u64 {
        self.block_start_bytes
    }

    pub fn tail_hash(&self) -> [u8; 32] {
        *self.hasher.finalize().as_bytes()
    }

    pub fn take_finished(&mut self) -> Vec<(u64, [u8; 32])> {
        std::mem::take(&mut self.finished)
    }

    pub fn finished(&self) -> &[(u64, [u8; 32])] {
        &self.finished
    }
}

/// blake3 of one block or tail, as stored.
pub(crate) fn block_hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}
