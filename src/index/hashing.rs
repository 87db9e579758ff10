//! The snapshot hash of the indexed log prefix: blake3 over fixed blocks of
//! [`HASH_BLOCK_LEN`] bytes. Full blocks are stored in the index; the last, partial block's
//! hash is in the snapshot. Because blocks are fixed, two indexes of the same bytes hold the
//! same hashes however their catch-ups were split.

use crate::limits::HASH_BLOCK_LEN;

/// Updates shorter than this are gathered into whole blocks before they are hashed (see
/// `PrefixHasher::pending`); longer ones are hashed as they come.
const GATHER_LEN_MAX: usize = 16 * 1024;

#[derive(Clone)]
pub(crate) struct PrefixHasher {
    /// Start of the current, partial block.
    block_start_bytes: u64,
    /// Bytes hashed into the current block.
    block_fill_bytes: u64,
    hasher: blake3::Hasher,
    /// Short updates of the current block not yet given to `hasher`: blake3 hashes many 1 KiB
    /// chunks at once with SIMD only when it is given them at once, and appends come a line at
    /// a time (hashing each ~1 KB line on its own ran at a fifth of the speed). They are given
    /// to it a whole block at a time: blake3 keeps the last 1 KiB chunk of each update back
    /// (it may be the input's last) and compresses it alone, so gathering 16 KiB at a time
    /// left a sixteenth of the bytes to that slow path, a third of the hashing of single
    /// appends (perf: 6.8% of an append, 4.0% with whole blocks). Long updates (a catch-up's
    /// chunks) skip the copy.
    pending: Vec<u8>,
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
            pending: Vec::new(),
            finished: Vec::new(),
        };
        hasher.update(tail);
        hasher
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = (HASH_BLOCK_LEN - self.block_fill_bytes) as usize;
            let take = room.min(bytes.len());
            if take >= GATHER_LEN_MAX {
                if !self.pending.is_empty() {
                    self.hasher.update(&self.pending);
                    self.pending.clear();
                }
                self.hasher.update(&bytes[..take]);
            } else {
                self.pending.extend_from_slice(&bytes[..take]);
            }
            self.block_fill_bytes += take as u64;
            bytes = &bytes[take..];
            if self.block_fill_bytes == HASH_BLOCK_LEN {
                self.hasher.update(&self.pending);
                self.pending.clear();
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
        if self.pending.is_empty() {
            return *self.hasher.finalize().as_bytes();
        }
        let mut hasher = self.hasher.clone();
        hasher.update(&self.pending);
        *hasher.finalize().as_bytes()
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// However the bytes are split into updates (short ones gathered, long ones hashed as
        /// they come, mixtures of both straddling block ends), the finished blocks and the
        /// tail hash are the blake3 of each fixed block.
        #[test]
        fn splits_do_not_change_hashes(
            len in 0usize..(3 * HASH_BLOCK_LEN as usize + 100),
            cuts in proptest::collection::vec(
                prop_oneof![1usize..20_000, 60_000usize..200_000],
                1..60,
            ),
        ) {
            let bytes: Vec<u8> = (0..len).map(|at| (at * 31 % 251) as u8).collect();
            let mut hasher = PrefixHasher::resume(0, &[]);
            let (mut at, mut cut) = (0, 0);
            while at < len {
                let take = cuts[cut % cuts.len()].min(len - at);
                hasher.update(&bytes[at..at + take]);
                at += take;
                cut += 1;
            }
            let block = HASH_BLOCK_LEN as usize;
            let expected: Vec<(u64, [u8; 32])> = bytes
                .chunks_exact(block)
                .enumerate()
                .map(|(index, chunk)| (index as u64, block_hash(chunk)))
                .collect();
            prop_assert_eq!(hasher.finished(), &expected[..]);
            let tail_start = len / block * block;
            prop_assert_eq!(hasher.tail_block_start_bytes(), tail_start as u64);
            prop_assert_eq!(hasher.tail_hash(), block_hash(&bytes[tail_start..]));
            prop_assert_eq!(hasher.hashed_len_bytes(), len as u64);
        }
    }
}
