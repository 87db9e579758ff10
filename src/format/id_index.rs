//! The pure parts of the id index (format-spec/index.md, "Ids"): the fixed-width key an id is
//! filed under, and the pages of `(key, seq)` entries the `ids` table holds.
//!
//! Why pages of fixed-width keys: pi draws every id at random (treelog's own appends take
//! theirs from reserved runs at random starts, `index/store/ids.rs`), so a batch of new ids
//! lands all over the table. Pages of 400 to 700 sorted entries (frame of reference: 6 to 11
//! bytes each) cost one redb insert per page touched, where a B-tree of one string key per id
//! costs one per id, and a lookup is one range read plus a binary search.

use super::record::DecodeError;
use super::{read_le, width_of};

/// Set in the key of an id that is not 8 lowercase hex digits (its key is then a hash).
pub const ID_KEY_HASHED: u64 = 1 << 63;
/// Bytes of a full id page: one 4 KiB redb page with its overhead (key, value length and
/// leaf header).
pub const ID_PAGE_LEN_MAX: usize = 4068;
/// At most this many entries share a page (a bound for decoding: the page length, not the
/// count, closes pages; strictly increasing keys and distinct seqs take 2 bytes an entry at
/// least).
pub const ID_PAGE_ENTRIES_MAX: usize = 2048;
/// Entries in a full page of pi's ids (6 to 7 bytes each) in a table of 100k to 1M of them:
/// what a flush's new ids are counted as in pages, to decide a drain.
pub const ID_PAGE_ENTRIES_TYPICAL: usize = 600;

/// Marks a byte that is not a lowercase hex digit in [`HEX_NIBBLE`].
const NOT_HEX: u8 = 0x80;

/// Each byte's value as a lowercase hex digit, or [`NOT_HEX`].
const HEX_NIBBLE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut digit = 0;
    while digit < 16 {
        table[b"0123456789abcdef"[digit] as usize] = digit as u8;
        digit += 1;
    }
    table
};

/// The key `id` is filed under. An id of pi's shape, 8 lowercase hex digits, is its own value
/// (below 2^32), so two such ids share a key only if they are equal. Any other id is filed
/// under the first 8 bytes of its blake3 hash (little-endian) with the top bit set, and may
/// share that key with another id ([`is_exact_key`] is false): readers then check the id.
pub fn id_key(id: &str) -> u64 {
    if let Some(value) = hex8_value(id) {
        return u64::from(value);
    }
    let bytes = id.as_bytes();
    #[cfg(test)]
    if let Some(keys) = tests::hashed_keys_max() {
        // Tests squeeze hashed ids into a few keys so that collisions are common.
        return ID_KEY_HASHED | (hashed(bytes) % keys);
    }
    ID_KEY_HASHED | hashed(bytes)
}

/// The id of pi's shape whose value is `value`: its 8 lowercase hex digits (the inverse of
/// [`hex8_value`]). Written out by hand rather than with `format!`, which costs an allocation
/// and a formatter on every append.
pub fn hex8_digits(value: u32) -> [u8; 8] {
    let mut digits = [0; 8];
    for (place, digit) in digits.iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[(value >> (28 - 4 * place) & 0x0f) as usize];
    }
    digits
}

/// [`hex8_digits`] as a `String`.
pub fn hex8_id(value: u32) -> String {
    hex8_digits(value)
        .iter()
        .map(|&digit| char::from(digit))
        .collect()
}

/// The value of an id of pi's shape, 8 lowercase hex digits; `None` for any other id.
pub fn hex8_value(id: &str) -> Option<u32> {
    let digits = <[u8; 8]>::try_from(id.as_bytes()).ok()?;
    // A table instead of a branch per digit: digits and letters mix at random in these ids,
    // and the mispredicted branches made this a twentieth of a rebuild's main thread.
    let mut value = 0u32;
    let mut invalid = 0u8;
    for digit in digits {
        let nibble = HEX_NIBBLE[usize::from(digit)];
        invalid |= nibble;
        value = value << 4 | u32::from(nibble & 0x0f);
    }
    (invalid & NOT_HEX == 0).then_some(value)
}

fn hashed(bytes: &[u8]) -> u64 {
    let hash = blake3::hash(bytes);
    let mut first = [0; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(first) & !ID_KEY_HASHED
}

/// Whether only one id can have `key` (see [`id_key`]).
pub fn is_exact_key(key: u64) -> bool {
    key & ID_KEY_HASHED == 0
}

/// Bytes before a page's entries: `count u16`, key width, seq width, key base, seq base,
/// coverage end.
const ID_PAGE_HEAD_LEN: usize = 28;
/// Bytes of the crc32 after a page's entries.
const ID_PAGE_CRC_LEN: usize = 4;

/// Bytes of a page of `count` entries whose keys span `key_spread` and seqs `seq_spread`.
fn id_page_len(count: usize, key_spread: u64, seq_spread: u64) -> usize {
    ID_PAGE_HEAD_LEN + count * (width_of(key_spread) + width_of(seq_spread)) + ID_PAGE_CRC_LEN
}

/// The crc32 (crc32fast, IEEE) an id page ends with: over the name of its table (`ids` or
/// `ids-recent`), its key in the table (8 bytes, little-endian) and its bytes before the
/// crc. So a page copied under another key or into the other table fails it as a damaged one
/// does (format-spec/index.md §2, "Id page").
pub fn id_page_crc(table: &str, page_key: u64, body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(table.as_bytes());
    hasher.update(&page_key.to_le_bytes());
    hasher.update(body);
    hasher.finalize()
}

/// Whether sorted entries, added one by one, still fit one page of at most `len_max` bytes.
#[derive(Clone, Copy, Debug)]
pub struct IdPageFill {
    count: usize,
    first_key: u64,
    seq_min: u64,
    seq_max: u64,
}

impl IdPageFill {
    pub fn new() -> IdPageFill {
        IdPageFill {
            count: 0,
            first_key: 0,
            seq_min: u64::MAX,
            seq_max: 0,
        }
    }

    /// Whether the page takes `(key, seq)` (a key above every key so far) within `len_max`
    /// bytes; an empty page takes any entry.
    pub fn fits(&self, (key, seq): (u64, u64), len_max: usize) -> bool {
        self.count == 0
            || (self.count < ID_PAGE_ENTRIES_MAX
                && id_page_len(
                    self.count + 1,
                    key - self.first_key,
                    self.seq_max.max(seq) - self.seq_min.min(seq),
                ) <= len_max)
    }

    pub fn push(&mut self, (key, seq): (u64, u64)) {
        if self.count == 0 {
            self.first_key = key;
        }
        self.count += 1;
        self.seq_min = self.seq_min.min(seq);
        self.seq_max = self.seq_max.max(seq);
    }
}

impl Default for IdPageFill {
    fn default() -> Self {
        IdPageFill::new()
    }
}

/// Encodes the page stored under `page_key` in `table` (format-spec/index.md §2, "Id page"):
/// a header with the count, the widths, the bases and where the page's coverage ends (`end`,
/// exclusive; `None`: to the end of the key space, stored as 0), then each entry as its key's
/// distance from the smallest key and its seq's from the smallest seq, in the fewest bytes the
/// page needs, then the crc32 of [`id_page_crc`]. `entries` are sorted by key, without
/// repeats, 0 to `ID_PAGE_ENTRIES_MAX` of them, inside the coverage `page_key .. end`; a page
/// under a key other than 0 holds that key as its first entry.
pub fn encode_id_page(
    table: &str,
    page_key: u64,
    end: Option<u64>,
    entries: &[(u64, u64)],
) -> Vec<u8> {
    debug_assert!(entries.len() <= ID_PAGE_ENTRIES_MAX);
    debug_assert!(entries.windows(2).all(|pair| pair[0].0 < pair[1].0));
    debug_assert!(end.is_none_or(|end| end > page_key));
    debug_assert!(entries.first().map(|entry| entry.0) == Some(page_key) || page_key == 0);
    debug_assert!(
        entries
            .last()
            .is_none_or(|last| end.is_none_or(|end| last.0 < end))
    );
    let first_key = entries.first().map_or(0, |entry| entry.0);
    let last_key = entries.last().map_or(0, |entry| entry.0);
    let seq_min = entries.iter().map(|entry| entry.1).min().unwrap_or(0);
    let seq_max = entries.iter().map(|entry| entry.1).max().unwrap_or(0);
    let key_width = width_of(last_key - first_key);
    let seq_width = width_of(seq_max - seq_min);
    let mut out = Vec::with_capacity(id_page_len(
        entries.len(),
        last_key - first_key,
        seq_max - seq_min,
    ));
    // ID_PAGE_ENTRIES_MAX fits the u16 count.
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&[key_width as u8, seq_width as u8]);
    out.extend_from_slice(&first_key.to_le_bytes());
    out.extend_from_slice(&seq_min.to_le_bytes());
    out.extend_from_slice(&end.unwrap_or(0).to_le_bytes());
    for (key, seq) in entries {
        out.extend_from_slice(&(key - first_key).to_le_bytes()[..key_width]);
        out.extend_from_slice(&(seq - seq_min).to_le_bytes()[..seq_width]);
    }
    let crc = id_page_crc(table, page_key, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A stored page, checked (crc, shape, order, coverage) before use.
#[derive(Clone, Copy, Debug)]
pub struct IdPageView<'a> {
    entries: &'a [u8],
    count: usize,
    key_width: usize,
    seq_width: usize,
    /// The low `key_width` / `seq_width` bytes set: what an 8-byte load at a field keeps.
    key_mask: u64,
    seq_mask: u64,
    key_base: u64,
    seq_base: u64,
    /// The page's key in its table: where its coverage starts.
    page_key: u64,
    /// Where its coverage ends (exclusive); `None`: at the end of the key space.
    end: Option<u64>,
}

impl<'a> IdPageView<'a> {
    /// Checks that `bytes`, stored under `page_key` in `table`, is a page: its crc, then 0 to
    /// `ID_PAGE_ENTRIES_MAX` entries in increasing key order (a lookup binary-searches it,
    /// which is only right on sorted keys), inside its coverage `page_key .. end`, the first
    /// one at `page_key` unless that is 0.
    pub fn new(table: &str, page_key: u64, bytes: &'a [u8]) -> Result<IdPageView<'a>, DecodeError> {
        let bad = |what: &str| DecodeError(format!("id page {page_key:#x} of {table}: {what}"));
        let (body, crc) = bytes
            .split_last_chunk::<ID_PAGE_CRC_LEN>()
            .ok_or_else(|| bad("shorter than its checksum"))?;
        if u32::from_le_bytes(*crc) != id_page_crc(table, page_key, body) {
            return Err(bad("checksum mismatch"));
        }
        let (head, entries) = body
            .split_first_chunk::<ID_PAGE_HEAD_LEN>()
            .ok_or_else(|| bad("shorter than its header"))?;
        let count = usize::from(u16::from_le_bytes([head[0], head[1]]));
        let (key_width, seq_width) = (usize::from(head[2]), usize::from(head[3]));
        if count > ID_PAGE_ENTRIES_MAX {
            return Err(bad(&format!("holds {count} entries")));
        }
        if key_width > 8 || seq_width > 8 {
            return Err(bad(&format!("widths {key_width} and {seq_width}")));
        }
        if entries.len() != count * (key_width + seq_width) {
            return Err(bad(&format!("{} bytes for {count} entries", entries.len())));
        }
        let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
        let mask = |width: usize| match width {
            8 => u64::MAX,
            width => (1 << (8 * width)) - 1,
        };
        let end = match word(20) {
            0 => None,
            end if end > page_key => Some(end),
            end => return Err(bad(&format!("its coverage ends at {end:#x}, not after it"))),
        };
        let view = IdPageView {
            entries,
            count,
            key_width,
            seq_width,
            key_mask: mask(key_width),
            seq_mask: mask(seq_width),
            key_base: word(4),
            seq_base: word(12),
            page_key,
            end,
        };
        let Some(last) = view.last_key_if_in_order() else {
            if count == 0 {
                if page_key != 0 {
                    return Err(bad("empty, under a key other than 0"));
                }
                return Ok(view);
            }
            return Err(bad("keys out of order"));
        };
        let first = view.key(0);
        if first < page_key || (page_key != 0 && first != page_key) {
            return Err(bad(&format!("its first key is {first:#x}")));
        }
        if !view.covers(last) {
            return Err(bad(&format!("its key {last:#x} is past its coverage")));
        }
        Ok(view)
    }

    /// The largest key if the keys strictly increase (`None` for an empty page). Every lookup
    /// checks its page, so this loop is a good part of a lookup: it compares the stored
    /// distances, each read as a fixed-size value (one loop per key width, so each read is a
    /// single load), without a branch per entry. A key is the key base plus its distance:
    /// distances that increase give keys that increase unless the largest wraps past
    /// u64::MAX, which is refused too.
    fn last_key_if_in_order(&self) -> Option<u64> {
        fn increasing<const WIDTH: usize>(entries: &[u8], stride: usize) -> Option<u64> {
            let mut distances = entries.chunks_exact(stride).map(|entry| {
                let mut bytes = [0; 8];
                bytes[..WIDTH].copy_from_slice(&entry[..WIDTH]);
                u64::from_le_bytes(bytes)
            });
            let first = distances.next()?;
            let (last, in_order) = distances.fold((first, true), |(before, in_order), distance| {
                (distance, in_order & (before < distance))
            });
            in_order.then_some(last)
        }
        let stride = self.key_width + self.seq_width;
        let last = match (self.count, self.key_width) {
            (0, _) => return None,
            (1, _) => Some(self.field(0, self.key_width, self.key_mask)),
            (_, 1) => increasing::<1>(self.entries, stride),
            (_, 2) => increasing::<2>(self.entries, stride),
            (_, 3) => increasing::<3>(self.entries, stride),
            (_, 4) => increasing::<4>(self.entries, stride),
            (_, 5) => increasing::<5>(self.entries, stride),
            (_, 6) => increasing::<6>(self.entries, stride),
            (_, 7) => increasing::<7>(self.entries, stride),
            (_, 8) => increasing::<8>(self.entries, stride),
            // Width 0 with more than one entry: equal keys.
            _ => None,
        };
        self.key_base.checked_add(last?)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The page's key in its table, where its coverage starts.
    pub fn page_key(&self) -> u64 {
        self.page_key
    }

    /// Where the page's coverage ends (exclusive: the next page's key); `None`: it runs to
    /// the end of the key space.
    pub fn end(&self) -> Option<u64> {
        self.end
    }

    /// Whether `key` is in the page's coverage: the page files it if any page of the table
    /// does.
    pub fn covers(&self, key: u64) -> bool {
        key >= self.page_key && self.end.is_none_or(|end| key < end)
    }

    /// The stored distance at `at`: one 8-byte load and a mask where 8 bytes remain (all but
    /// the last entry or so), else a copy of `width` bytes. An open reads every key to check
    /// their order, so this is most of a lookup.
    fn field(&self, at: usize, width: usize, mask: u64) -> u64 {
        match self.entries.get(at..at + 8) {
            Some(word) => {
                u64::from_le_bytes(word.try_into().expect("a slice of 8 bytes is 8 bytes")) & mask
            }
            None => read_le(&self.entries[at..at + width]),
        }
    }

    fn key(&self, index: usize) -> u64 {
        let at = index * (self.key_width + self.seq_width);
        self.key_base
            .wrapping_add(self.field(at, self.key_width, self.key_mask))
    }

    fn seq(&self, index: usize) -> u64 {
        let at = index * (self.key_width + self.seq_width) + self.key_width;
        self.seq_base
            .wrapping_add(self.field(at, self.seq_width, self.seq_mask))
    }

    /// The index of the first entry whose key is at least `key` (`len()` if none): a binary
    /// search, the keys being in increasing order.
    fn first_at_or_after(&self, key: u64) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = (low + high) / 2;
            if self.key(middle) < key {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// The seq filed under `key` in this page.
    pub fn get(&self, key: u64) -> Option<u64> {
        let index = self.first_at_or_after(key);
        (index < self.len() && self.key(index) == key).then(|| self.seq(index))
    }

    /// Whether the page files any key in `keys`.
    pub fn holds_key_in(&self, keys: std::ops::RangeInclusive<u64>) -> bool {
        let index = self.first_at_or_after(*keys.start());
        index < self.len() && self.key(index) <= *keys.end()
    }

    /// The entries in key order.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.len()).map(|index| (self.key(index), self.seq(index)))
    }
}

/// `old` with `new` merged in (both sorted by key without repeats): a key in both takes its
/// `new` seq, as the later line with an id does.
pub fn merge_entries(old: &[(u64, u64)], new: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(old.len() + new.len());
    let (mut at_old, mut at_new) = (0, 0);
    // Without a branch on which side is smaller: with random keys it would be mispredicted
    // half the time (a rebuild merges each id ~log2(ids / 32,768) times).
    while let (Some(&from_old), Some(&from_new)) = (old.get(at_old), new.get(at_new)) {
        let old_first = from_old.0 < from_new.0;
        out.push(if old_first { from_old } else { from_new });
        at_old += usize::from(from_old.0 <= from_new.0);
        at_new += usize::from(!old_first);
    }
    out.extend_from_slice(old.get(at_old..).unwrap_or_default());
    out.extend_from_slice(new.get(at_new..).unwrap_or_default());
    out
}

/// Files `run` (sorted by key without repeats) as the newest of `runs`, oldest first, as a
/// rebuild keeps its ids (format-spec/index.md, section 4). Runs are merged much as a binary
/// counter carries: while the run before it is less than twice as long, the two become one (a
/// key in both takes the newer seq). So each run is at least twice the next newer one, and n
/// ids in runs of at least m are held in at most log2(n / m + 1) runs, which a lookup of an id
/// not yet filed (every new hashed id, every unknown parent) searches each; each id is moved
/// about that many times (16 bytes, sequentially). Flushes vary in size (they end with a chunk
/// of lines): a rule of "no longer than" left 14 runs at 10M entries.
pub fn push_run(runs: &mut Vec<Vec<(u64, u64)>>, mut run: Vec<(u64, u64)>) {
    while let Some(older) = runs.pop_if(|older| older.len() < 2 * run.len()) {
        run = merge_entries(&older, &run);
    }
    runs.push(run);
}

/// The union of `runs` (each sorted by key without repeats) in key order; a key in several
/// runs takes its largest seq (the latest line with the id).
pub fn merge_sorted_runs(runs: &[Vec<(u64, u64)>]) -> impl Iterator<Item = (u64, u64)> + '_ {
    use std::cmp::Reverse;
    // Smallest key first; for one key the seqs come in increasing order, the last one wins.
    let mut heap: std::collections::BinaryHeap<Reverse<(u64, u64, usize, usize)>> = runs
        .iter()
        .enumerate()
        .filter_map(|(run, entries)| {
            entries
                .first()
                .map(|(key, seq)| Reverse((*key, *seq, run, 0)))
        })
        .collect();
    let mut pending: Option<(u64, u64)> = None;
    std::iter::from_fn(move || {
        while let Some(Reverse((key, seq, run, index))) = heap.pop() {
            if let Some((next_key, next_seq)) = runs[run].get(index + 1) {
                heap.push(Reverse((*next_key, *next_seq, run, index + 1)));
            }
            match pending.replace((key, seq)) {
                Some((pending_key, _)) if pending_key == key => {}
                Some(done) => return Some(done),
                None => {}
            }
        }
        pending.take()
    })
}

/// How sorted entries are cut into pages: full pages when written in order (a rebuild, a
/// drain), and, when a merged page overflows, pages at most three quarters full (random
/// inserts then split it rarely). Pages are cut greedily, by their encoded length.
pub fn page_chunks(entries: &[(u64, u64)], in_order: bool) -> impl Iterator<Item = &[(u64, u64)]> {
    let fits_one = {
        let mut fill = IdPageFill::new();
        entries.iter().all(|entry| {
            let fits = fill.fits(*entry, ID_PAGE_LEN_MAX);
            fill.push(*entry);
            fits
        })
    };
    let len_max = if in_order || fits_one {
        ID_PAGE_LEN_MAX
    } else {
        ID_PAGE_LEN_MAX * 3 / 4
    };
    let mut rest = entries;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut fill = IdPageFill::new();
        let len = rest
            .iter()
            .take_while(|entry| {
                let fits = fill.fits(**entry, len_max);
                fill.push(**entry);
                fits
            })
            .count();
        let (page, after) = rest.split_at(len);
        rest = after;
        Some(page)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static HASHED_KEYS_MAX: Cell<Option<u64>> = const { Cell::new(None) };
    }

    pub(crate) fn hashed_keys_max() -> Option<u64> {
        HASHED_KEYS_MAX.with(Cell::get)
    }

    /// Runs `work` with hashed ids squeezed into `keys` keys on this thread.
    pub(crate) fn with_hashed_keys_max<T>(keys: u64, work: impl FnOnce() -> T) -> T {
        HASHED_KEYS_MAX.with(|cell| cell.set(Some(keys)));
        let out = work();
        HASHED_KEYS_MAX.with(|cell| cell.set(None));
        out
    }

    /// pi's ids are their own value; anything else (upper case, other lengths, uuids, the
    /// empty id) is hashed into the upper half, so the two kinds never share a key.
    #[test]
    fn keys_of_ids() {
        assert_eq!(id_key("0199dbf3"), 0x0199_dbf3);
        assert_eq!(id_key("ffffffff"), 0xffff_ffff);
        assert_eq!(id_key("00000000"), 0);
        for id in [
            "0199DBF3",
            "0199dbf",
            "0199dbf30",
            "0199dbfg",
            // The bytes around each digit range, and non-ASCII of the same length.
            "0199dbf/",
            "0199dbf:",
            "0199dbf`",
            "0199dbf@",
            "\u{e9}\u{e9}\u{e9}\u{e9}",
            "",
            "dup7",
            "a-b-c-d-",
        ] {
            let key = id_key(id);
            assert!(!is_exact_key(key), "{id}");
            assert_eq!(key, id_key(id), "stable: {id}");
        }
        assert_ne!(id_key("dup1"), id_key("dup2"));
        assert!(is_exact_key(id_key("abcdef01")));
    }

    /// A page round-trips; lookups find every key and nothing else; the layout is the spec's
    /// (header, entries, crc over the table's name, the page key and the bytes before it).
    #[test]
    fn page_round_trip() {
        let entries: Vec<(u64, u64)> = (0..600u64).map(|n| (n * 7 + 3, n * 1000)).collect();
        let bytes = encode_id_page("ids", 3, Some(5_000), &entries);
        // Keys span 4,193 (2 bytes), seqs 599,000 (3 bytes).
        assert_eq!(bytes.len(), 28 + 600 * 5 + 4);
        assert_eq!(&bytes[..4], &[88, 2, 2, 3]);
        assert_eq!(&bytes[4..12], &3u64.to_le_bytes());
        assert_eq!(&bytes[12..20], &0u64.to_le_bytes());
        assert_eq!(&bytes[20..28], &5_000u64.to_le_bytes());
        assert_eq!(&bytes[28 + 5..28 + 10], &[7, 0, 0xe8, 0x03, 0]);
        let mut crc = crc32fast::Hasher::new();
        crc.update(b"ids");
        crc.update(&3u64.to_le_bytes());
        crc.update(&bytes[..bytes.len() - 4]);
        assert_eq!(&bytes[bytes.len() - 4..], &crc.finalize().to_le_bytes());
        let view = IdPageView::new("ids", 3, &bytes).expect("valid page");
        assert_eq!(view.entries().collect::<Vec<_>>(), entries);
        assert_eq!((view.page_key(), view.end()), (3, Some(5_000)));
        assert!(view.covers(3) && view.covers(4_999) && !view.covers(2) && !view.covers(5_000));
        for (key, seq) in &entries {
            assert_eq!(view.get(*key), Some(*seq));
            assert_eq!(view.get(key + 1), None);
        }
        assert_eq!(view.get(0), None);
        let one = encode_id_page("ids-recent", 0, None, &[(u64::MAX, u64::MAX)]);
        assert_eq!(
            one.len(),
            32,
            "a single entry takes no bytes past the header"
        );
        let view = IdPageView::new("ids-recent", 0, &one).expect("valid page");
        assert_eq!(view.get(u64::MAX), Some(u64::MAX));
        assert!(view.covers(0) && view.covers(u64::MAX));
        let empty = encode_id_page("ids-recent", 0, None, &[]);
        assert_eq!(empty.len(), 32);
        let view = IdPageView::new("ids-recent", 0, &empty).expect("an empty page");
        assert!(view.is_empty() && view.covers(u64::MAX));
        assert_eq!(view.get(0), None);
    }

    /// Damaged pages are refused with a reason, never read (and never panic): a page whose
    /// bytes, key or table differ from those its crc was computed over, and, sealed with a
    /// valid crc, a page of any other malformed shape or outside its coverage.
    #[test]
    fn malformed_pages_are_refused() {
        let good = encode_id_page("ids", 1, Some(9), &[(1, 10), (2, 20)]);
        assert!(IdPageView::new("ids", 1, &good).is_ok());
        for (table, page_key) in [("ids-recent", 1), ("ids", 0), ("ids", 2)] {
            let error = IdPageView::new(table, page_key, &good).expect_err("moved");
            assert!(error.0.ends_with("checksum mismatch"), "{}", error.0);
        }
        let error = IdPageView::new("ids", 1, &good[..good.len() - 1]).expect_err("cut");
        assert_eq!(error.0, "id page 0x1 of ids: checksum mismatch");
        // The good page's bytes before its crc, changed, then sealed with a valid crc.
        let sealed = |change: &dyn Fn(&mut Vec<u8>)| {
            let mut page = good[..good.len() - 4].to_vec();
            change(&mut page);
            let crc = id_page_crc("ids", 1, &page);
            page.extend_from_slice(&crc.to_le_bytes());
            page
        };
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("header only, no entries", sealed(&|page| page.truncate(28))),
            ("short", sealed(&|page| page.truncate(page.len() - 1))),
            ("unsorted", sealed(&|page| page[28] = 5)),
            (
                "a key past u64::MAX",
                sealed(&|page| page[4..12].copy_from_slice(&u64::MAX.to_le_bytes())),
            ),
            (
                "count past the bytes",
                sealed(&|page| page[..2].copy_from_slice(&3u16.to_le_bytes())),
            ),
            (
                "count past the maximum",
                sealed(&|page| page[..2].copy_from_slice(&u16::MAX.to_le_bytes())),
            ),
            ("a width of 9", sealed(&|page| page[2] = 9)),
            ("first key below the page key", sealed(&|page| page[4] = 0)),
            ("first key above the page key", sealed(&|page| page[4] = 2)),
            ("a key at the coverage end", sealed(&|page| page[20] = 2)),
            (
                "coverage ending at the page key",
                sealed(&|page| page[20] = 1),
            ),
            (
                "empty under a key other than 0",
                sealed(&|page| {
                    page.truncate(28);
                    page[..2].copy_from_slice(&0u16.to_le_bytes());
                }),
            ),
        ];
        for (what, bytes) in &cases {
            assert!(IdPageView::new("ids", 1, bytes).is_err(), "{what}");
        }
        for len in 0..good.len() {
            assert!(
                IdPageView::new("ids", 1, &good[..len]).is_err(),
                "truncated to {len}"
            );
        }
        // Every single-bit flip fails the crc (crc32 detects them all).
        for bit in 0..good.len() * 8 {
            let mut flipped = good.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let error = IdPageView::new("ids", 1, &flipped).expect_err("flipped");
            assert!(
                error.0.ends_with("checksum mismatch"),
                "bit {bit}: {}",
                error.0
            );
        }
    }

    /// Merging keeps key order, and a key in both takes the new seq.
    #[test]
    fn merge_prefers_new_seqs() {
        let merged = merge_entries(&[(1, 10), (3, 30), (5, 50)], &[(0, 1), (3, 99), (6, 60)]);
        assert_eq!(merged, vec![(0, 1), (1, 10), (3, 99), (5, 50), (6, 60)]);
    }

    proptest::proptest! {
        /// Any 8 lowercase hex digits are their own value; any other 8 bytes of ASCII are
        /// hashed.
        #[test]
        fn hex_ids_are_their_value(value in 0u32.., byte in 0u8..128, at in 0usize..8) {
            let id = format!("{value:08x}");
            proptest::prop_assert_eq!(&hex8_id(value), &id);
            proptest::prop_assert_eq!(id_key(&id), u64::from(value));
            let mut other = id.into_bytes();
            other[at] = byte;
            let other = String::from_utf8(other).expect("ASCII");
            let hex = other.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            proptest::prop_assert_eq!(is_exact_key(id_key(&other)), hex);
            if hex {
                proptest::prop_assert_eq!(
                    id_key(&other),
                    u64::from_str_radix(&other, 16).expect("hex")
                );
            }
        }

        /// Merged runs are the union in key order, the largest seq winning a repeated key.
        #[test]
        fn merged_runs_are_the_union(
            runs in proptest::collection::vec(
                proptest::collection::btree_map(0u64..3_000, 0u64..1_000_000, 0..400), 0..6),
        ) {
            let mut model = std::collections::BTreeMap::new();
            for run in &runs {
                for (key, seq) in run {
                    let best = model.entry(*key).or_insert(*seq);
                    *best = (*best).max(*seq);
                }
            }
            let runs: Vec<Vec<(u64, u64)>> =
                runs.iter().map(|run| run.iter().map(|(k, v)| (*k, *v)).collect()).collect();
            let merged: Vec<(u64, u64)> = merge_sorted_runs(&runs).collect();
            proptest::prop_assert_eq!(merged, model.into_iter().collect::<Vec<_>>());
        }

        /// Runs filed by `push_run` hold the union of what was pushed (the latest push
        /// winning a key), each at least twice the next newer one, and so at most
        /// log2(entries held / shortest push + 1) of them.
        #[test]
        fn pushed_runs_halve_and_hold_the_union(
            pushes in proptest::collection::vec(
                proptest::collection::btree_map(0u64..20_000, 0u64..1_000, 20..60), 1..80),
        ) {
            let mut runs = Vec::new();
            let mut model = std::collections::BTreeMap::new();
            for push in &pushes {
                model.extend(push.iter().map(|(key, seq)| (*key, *seq)));
                push_run(&mut runs, push.iter().map(|(key, seq)| (*key, *seq)).collect());
            }
            for pair in runs.windows(2) {
                proptest::prop_assert!(pair[0].len() >= 2 * pair[1].len());
            }
            // Runs of at least `shortest`, each at least twice the next: R of them hold at
            // least shortest * (2^R - 1) entries.
            let shortest = pushes.iter().map(|push| push.len()).min().unwrap_or(1) as f64;
            let held: usize = runs.iter().map(Vec::len).sum();
            let bound = (held as f64 / shortest + 1.0).log2().floor() as usize;
            proptest::prop_assert!(runs.len() <= bound, "{} runs, bound {bound}", runs.len());
            let merged: Vec<(u64, u64)> = runs
                .iter()
                .fold(Vec::new(), |union, run| merge_entries(&union, run));
            proptest::prop_assert_eq!(merged, model.into_iter().collect::<Vec<_>>());
        }

        /// Merging two sorted runs is their union in key order, a key in both taking the
        /// new run's seq, whatever the overlap (keys drawn from a small range collide often).
        #[test]
        fn merge_entries_is_the_union_new_winning(
            old in proptest::collection::btree_map(0u64..600, 0u64..1_000, 0..300),
            new in proptest::collection::btree_map(0u64..600, 0u64..1_000, 0..300),
        ) {
            let mut model = old.clone();
            model.extend(new.iter().map(|(key, seq)| (*key, *seq)));
            let old: Vec<(u64, u64)> = old.into_iter().collect();
            let new: Vec<(u64, u64)> = new.into_iter().collect();
            proptest::prop_assert_eq!(
                merge_entries(&old, &new),
                model.into_iter().collect::<Vec<_>>()
            );
        }
    }

    /// In-order writes fill pages to their byte limit; an overflowing page splits into pages
    /// three quarters full at most; whatever fits one page stays one page.
    #[test]
    fn chunks_fit_pages() {
        // Keys 1 apart and seqs equal to them: 2 + 2 bytes an entry past 256 entries.
        let entries: Vec<(u64, u64)> = (0..3000).map(|n| (n, n)).collect();
        let full: Vec<usize> = page_chunks(&entries, true).map(<[_]>::len).collect();
        assert_eq!(full, vec![1009, 1009, 982]);
        assert_eq!(28 + 1009 * 4 + 4, ID_PAGE_LEN_MAX);
        let split: Vec<usize> = page_chunks(&entries[..1013], false)
            .map(<[_]>::len)
            .collect();
        assert_eq!(split, vec![754, 259]);
        assert_eq!(
            page_chunks(&entries[..1009], false).count(),
            1,
            "a full page stays whole"
        );
        for chunk in page_chunks(&entries, false) {
            let bytes = encode_id_page("ids", chunk[0].0, None, chunk);
            assert!(bytes.len() <= ID_PAGE_LEN_MAX * 3 / 4);
        }
    }

    proptest::proptest! {
        /// However keys and seqs spread, pages are cut at their byte limit: each fits, and
        /// each in-order page but the last would not take the next entry.
        #[test]
        fn chunks_are_cut_by_length(
            keys in proptest::collection::btree_set(proptest::prelude::any::<u64>(), 1..3000),
            seq_bits in 1u32..64,
        ) {
            let entries: Vec<(u64, u64)> = keys
                .iter()
                .map(|key| (*key, key.rotate_left(17) >> (64 - seq_bits)))
                .collect();
            let pages: Vec<&[(u64, u64)]> = page_chunks(&entries, true).collect();
            proptest::prop_assert_eq!(pages.concat(), entries.clone());
            for (index, page) in pages.iter().enumerate() {
                let bytes = encode_id_page("ids", page[0].0, None, page);
                proptest::prop_assert!(bytes.len() <= ID_PAGE_LEN_MAX);
                let view = IdPageView::new("ids", page[0].0, &bytes).expect("valid page");
                proptest::prop_assert_eq!(view.entries().collect::<Vec<_>>(), page.to_vec());
                if let Some(next) = pages.get(index + 1) {
                    let mut longer = page.to_vec();
                    longer.push(next[0]);
                    let bytes = encode_id_page("ids", longer[0].0, None, &longer);
                    proptest::prop_assert!(bytes.len() > ID_PAGE_LEN_MAX);
                }
            }
        }
    }
}
