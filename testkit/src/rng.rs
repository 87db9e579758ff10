//! splitmix64, the seeded generator of the tests that draw their damage, scripts and kills:
//! small, and each draw follows from the seed alone, so a printed seed replays a run.

pub struct Rng(pub u64);

impl Rng {
    /// The next draw. A generator, not an `Iterator`: it never ends.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw below `n` (0 when `n` is 0), in the caller's integer type.
    pub fn below<N>(&mut self, n: N) -> N
    where
        N: TryInto<u64> + TryFrom<u64>,
    {
        let bound = n.try_into().unwrap_or(u64::MAX).max(1);
        let drawn = self.next() % bound;
        N::try_from(drawn).unwrap_or_else(|_| unreachable!("a draw below n fits n's type"))
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn fill(&mut self, bytes: &mut [u8]) {
        for byte in bytes {
            *byte = self.next() as u8;
        }
    }
}
