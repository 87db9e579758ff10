//! The snapshot hash of the indexed log prefix: blake3 over fixed blocks of
//! [`HASH_BLOCK_LEN`] bytes. Full blocks are stored in the index; the last, partial block's
//! hash is in the snapshot. Because blocks are fixed, two indexes of the same bytes hold the
//! same hashes however their catch-ups were split.

use crate::limits::HASH_BLOCK_LEN;

/// [`HASH_BLOCK_LEN`] as a length in memory.
const BLOCK_LEN: usize = HASH_BLOCK_LEN as usize;

#[derive(Clone)]
pub(crate) struct PrefixHasher {
    /// Start of the current, partial block.
    block_start_bytes: u64,
    /// The bytes of the current block seen so far (fewer than a block). Every block is hashed
    /// in one call, from the caller's bytes when one update holds it whole, or from here:
    /// blake3 hashes 16 of its 1 KiB chunks at once with AVX-512 only when it is given them
    /// at once, as a whole subtree. Updates cut elsewhere than at block edges (a catch-up's
    /// steps end at line ends) leave it subtrees of one or two chunks on each side of each
    /// cut, hashed a chunk at a time, markedly slower than whole blocks
    /// (docs/decisions/parallel-rebuild.md). Gathering a block's bytes costs a copy only for
    /// blocks that straddle an update's edge.
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
            pending: Vec::new(),
            finished: Vec::new(),
        };
        hasher.update(tail);
        hasher
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.pending.is_empty()
                && let Some(block) = bytes.first_chunk::<BLOCK_LEN>()
            {
                self.finish_block(block_hash(block));
                bytes = &bytes[BLOCK_LEN..];
                continue;
            }
            let take = (BLOCK_LEN - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() == BLOCK_LEN {
                let hash = block_hash(&self.pending);
                self.pending.clear();
                self.finish_block(hash);
            }
        }
    }

    fn finish_block(&mut self, hash: [u8; 32]) {
        self.finished
            .push((self.block_start_bytes / HASH_BLOCK_LEN, hash));
        self.block_start_bytes += HASH_BLOCK_LEN;
    }

    /// Bytes of the log hashed so far.
    pub fn hashed_len_bytes(&self) -> u64 {
        self.block_start_bytes + self.pending.len() as u64
    }

    pub fn tail_block_start_bytes(&self) -> u64 {
        self.block_start_bytes
    }

    pub fn tail_hash(&self) -> [u8; 32] {
        block_hash(&self.pending)
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
        /// However the bytes are split into updates (short ones gathered, whole blocks hashed
        /// where they lie, mixtures of both straddling block ends), the finished blocks and
        /// the tail hash are the blake3 of each fixed block.
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
