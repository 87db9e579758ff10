//! The decoding of a fuzz input: the raw bytes read as a stream of small numbers and strings,
//! so that the checks need no `arbitrary` and each byte the fuzzer changes changes one choice.

/// Reads the fuzz input as a stream of small numbers and strings; zeros once exhausted.
pub struct Input<'a> {
    pub bytes: &'a [u8],
}

impl Input<'_> {
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((first, rest)) => {
                self.bytes = rest;
                *first
            }
            None => 0,
        }
    }

    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    pub fn take(&mut self, max_len: usize) -> &[u8] {
        let len = self.below(max_len + 1).min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        taken
    }

    pub fn text(&mut self, max_len: usize) -> String {
        String::from_utf8_lossy(self.take(max_len)).into_owned()
    }
}
