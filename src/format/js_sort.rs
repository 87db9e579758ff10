//! JavaScript's `Array.prototype.sort` as V8 runs it, for pi's children order.
//!
//! pi's `getTree()` sorts each node's children with
//! `(a, b) => new Date(a.entry.timestamp).getTime() - new Date(b.entry.timestamp).getTime()`.
//! When a timestamp does not parse, that difference is NaN, which the sort reads as 0
//! (`SortCompare`: "If v is NaN, return +0"): such an entry is "equal" to every other, the
//! comparator is no longer a consistent order, and the result is whatever the algorithm makes
//! of it. This module replays V8's algorithm step for step, so that the order is pi's for any
//! mix of valid and unparseable timestamps.
//!
//! The algorithm is V8's TimSort (`third_party/v8/builtins/array-sort.tq`, itself a port of
//! CPython's `listsort`), as run by Node 24 (V8 13.6): natural runs (a strictly descending run
//! is reversed), runs shorter than the minimum run length extended by binary insertion sort,
//! then merges with galloping under the same stack rules. Each comparison below is the one V8
//! makes, with the same arguments in the same order and the same test on its result (`order <
//! 0` or not); nothing else of the comparator's result is used. `tests/data/tree-order/
//! v8-sort.json` holds V8's own answers for generated lists, replayed by this module's tests.
//!
//! Pure code, no I/O; lengths are bounded by the caller's memory only (every index fits in a
//! `usize`, and no step recurses).

use std::cmp::Ordering;

/// A merge switches to galloping after this many wins in a row (V8's `kMinGallopWins`).
const MIN_GALLOP_WINS: usize = 7;

/// pi's comparator on two timestamps as epoch milliseconds, `None` standing for NaN: the sign
/// of their difference, and `Equal` (SortCompare's +0) when either is NaN.
pub fn compare_timestamps(a: Option<i64>, b: Option<i64>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => Ordering::Equal,
    }
}

/// Sorts `items` as pi's `getTree()` sorts a children list whose timestamps (epoch
/// milliseconds, `None` where JavaScript gets NaN) `timestamp_ms` gives. With every timestamp
/// valid that is a stable sort by timestamp; otherwise V8's exact order ([`v8_sort_order`]).
pub fn sort_like_pi_children<T>(items: &mut Vec<T>, timestamp_ms: impl Fn(&T) -> Option<i64>) {
    let keys: Vec<Option<i64>> = items.iter().map(&timestamp_ms).collect();
    if keys.iter().all(Option::is_some) {
        // A consistent comparator: every stable sort gives V8's answer.
        items.sort_by_key(|item| timestamp_ms(item));
        return;
    }
    let order = v8_sort_order(keys.len(), |a, b| compare_timestamps(keys[a], keys[b]));
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    items.extend(
        order
            .into_iter()
            .map(|index| slots[index].take().expect("an order is a permutation")),
    );
}

/// The order in which V8's `Array.prototype.sort` leaves the items `0..len`, given the sign
/// of the comparator's result for two items (`compare(x, y)` is `comparefn(x, y)`, with NaN
/// already read as `Equal`). Returns the items' original indexes, first to last.
pub fn v8_sort_order(len: usize, compare: impl FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut sort = TimSort {
        work: (0..len).collect(),
        runs: Vec::new(),
        min_gallop: MIN_GALLOP_WINS,
        compare,
    };
    sort.sort();
    sort.work
}

/// V8's `SortState`, for a work array of item indexes.
struct TimSort<F> {
    work: Vec<usize>,
    /// Pending runs (base, length), bottom of the stack first.
    runs: Vec<(usize, usize)>,
    min_gallop: usize,
    compare: F,
}

/// How a merge ends (the labels of V8's merge macros).
enum MergeEnd {
    /// `Succeed`: what is left of the copied-out run goes into the gap.
    Succeed,
    /// `CopyB` (merge low) or `CopyA` (merge high): one element of the copied-out run is left,
    /// and it belongs at the far end of the merge.
    LastCopied,
}

impl<F: FnMut(usize, usize) -> Ordering> TimSort<F> {
    /// `order < 0` for `Compare(x, y)`.
    fn less(&mut self, x: usize, y: usize) -> bool {
        (self.compare)(x, y) == Ordering::Less
    }

    /// `ArrayTimSortImpl`.
    fn sort(&mut self) {
        let len = self.work.len();
        if len < 2 {
            return;
        }
        let mut remaining = len;
        let mut low = 0;
        let min_run = min_run_length(len);
        while remaining != 0 {
            let mut run = self.count_and_make_run(low, low + remaining);
            if run < min_run {
                let forced = min_run.min(remaining);
                self.binary_insertion_sort(low, low + run, low + forced);
                run = forced;
            }
            self.runs.push((low, run));
            self.merge_collapse();
            low += run;
            remaining -= run;
        }
        self.merge_force_collapse();
    }

    /// `BinaryInsertionSort`: `[low, start)` is sorted; inserts each of `[start, high)`.
    fn binary_insertion_sort(&mut self, low: usize, start: usize, high: usize) {
        let mut start = if low == start { start + 1 } else { start };
        while start < high {
            let (mut left, mut right) = (low, start);
            let pivot = self.work[start];
            while left < right {
                let mid = left + ((right - left) >> 1);
                if self.less(pivot, self.work[mid]) {
                    right = mid;
                } else {
                    left = mid + 1;
                }
            }
            self.work.copy_within(left..start, left + 1);
            self.work[left] = pivot;
            start += 1;
        }
    }

    /// `CountAndMakeRun`: the length of the run at `low_arg` (`< high`), reversed in place
    /// when it is strictly descending.
    fn count_and_make_run(&mut self, low_arg: usize, high: usize) -> usize {
        let low = low_arg + 1;
        if low == high {
            return 1;
        }
        let mut run = 2;
        let element_low = self.work[low];
        let descending = self.less(element_low, self.work[low - 1]);
        let mut previous = element_low;
        for index in low + 1..high {
            let current = self.work[index];
            let less = self.less(current, previous);
            if descending != less {
                break;
            }
            previous = current;
            run += 1;
        }
        if descending {
            self.work[low_arg..low_arg + run].reverse();
        }
        run
    }

    /// `MergeCollapse`: merges until the run-length invariants hold again.
    fn merge_collapse(&mut self) {
        while self.runs.len() > 1 {
            let mut n = self.runs.len() - 2;
            if !self.invariant_holds(n + 1) || !self.invariant_holds(n) {
                if self.runs[n - 1].1 < self.runs[n + 1].1 {
                    n -= 1;
                }
                self.merge_at(n);
            } else if self.runs[n].1 <= self.runs[n + 1].1 {
                self.merge_at(n);
            } else {
                break;
            }
        }
    }

    /// `RunInvariantEstablished`: run n - 2 is longer than runs n - 1 and n together.
    fn invariant_holds(&self, n: usize) -> bool {
        n < 2 || self.runs[n - 2].1 > self.runs[n - 1].1 + self.runs[n].1
    }

    /// `MergeForceCollapse`: merges every pending run.
    fn merge_force_collapse(&mut self) {
        while self.runs.len() > 1 {
            let mut n = self.runs.len() - 2;
            if n > 0 && self.runs[n - 1].1 < self.runs[n + 1].1 {
                n -= 1;
            }
            self.merge_at(n);
        }
    }

    /// `MergeAt`: merges the runs at stack indexes `i` and `i + 1`.
    fn merge_at(&mut self, i: usize) {
        let (mut base_a, mut len_a) = self.runs[i];
        let (base_b, mut len_b) = self.runs[i + 1];
        self.runs[i].1 = len_a + len_b;
        if i + 3 == self.runs.len() {
            self.runs[i + 1] = self.runs[i + 2];
        }
        self.runs.pop();

        let key_right = self.work[base_b];
        let k = self.gallop_right(Area::Work, key_right, base_a, len_a, 0);
        base_a += k;
        len_a -= k;
        if len_a == 0 {
            return;
        }
        let key_left = self.work[base_a + len_a - 1];
        len_b = self.gallop_left(Area::Work, key_left, base_b, len_b, len_b - 1);
        if len_b == 0 {
            return;
        }
        if len_a <= len_b {
            self.merge_low(base_a, len_a, base_b, len_b);
        } else {
            self.merge_high(base_a, len_a, base_b, len_b);
        }
    }

    /// `GallopLeft`: the offset in `0..=len` at which `key` belongs in the sorted `len`
    /// elements at `base`, left of any equal ones, searched from `hint`.
    fn gallop_left(
        &mut self,
        area: Area,
        key: usize,
        base: usize,
        len: usize,
        hint: usize,
    ) -> usize {
        let at = |sort: &Self, index: usize| sort.element(area, index);
        let (mut last_offset, mut offset);
        if self.less(at(self, base + hint), key) {
            // Gallop right, until a[base + hint + last_offset] < key <= a[base + hint + offset].
            let offset_max = len - hint;
            (last_offset, offset) = (0, 1);
            while offset < offset_max {
                if !self.less(at(self, base + hint + offset), key) {
                    break;
                }
                last_offset = offset;
                offset = next_offset(offset, offset_max);
            }
            offset = offset.min(offset_max);
            last_offset += hint;
            offset += hint;
            // Now a[base + last_offset] < key <= a[base + offset].
            last_offset += 1;
        } else {
            // Gallop left, until a[base + hint - offset] < key <= a[base + hint - last_offset].
            let offset_max = hint + 1;
            (last_offset, offset) = (0, 1);
            while offset < offset_max {
                if self.less(at(self, base + hint - offset), key) {
                    break;
                }
                last_offset = offset;
                offset = next_offset(offset, offset_max);
            }
            offset = offset.min(offset_max);
            // V8's `lastOfs = hint - offset` may be -1; the search starts one to its right.
            (last_offset, offset) = (hint + 1 - offset, hint - last_offset);
        }
        while last_offset < offset {
            let middle = last_offset + ((offset - last_offset) >> 1);
            if self.less(at(self, base + middle), key) {
                last_offset = middle + 1;
            } else {
                offset = middle;
            }
        }
        offset
    }

    /// `GallopRight`: as [`TimSort::gallop_left`], but right of any elements equal to `key`.
    fn gallop_right(
        &mut self,
        area: Area,
        key: usize,
        base: usize,
        len: usize,
        hint: usize,
    ) -> usize {
        let at = |sort: &Self, index: usize| sort.element(area, index);
        let (mut last_offset, mut offset);
        if self.less(key, at(self, base + hint)) {
            // Gallop left, until a[base + hint - offset] <= key < a[base + hint - last_offset].
            let offset_max = hint + 1;
            (last_offset, offset) = (0, 1);
            while offset < offset_max {
                if !self.less(key, at(self, base + hint - offset)) {
                    break;
                }
                last_offset = offset;
                offset = next_offset(offset, offset_max);
            }
            offset = offset.min(offset_max);
            (last_offset, offset) = (hint + 1 - offset, hint - last_offset);
        } else {
            // Gallop right, until a[base + hint + last_offset] <= key < a[base + hint + offset].
            let offset_max = len - hint;
            (last_offset, offset) = (0, 1);
            while offset < offset_max {
                if self.less(key, at(self, base + hint + offset)) {
                    break;
                }
                last_offset = offset;
                offset = next_offset(offset, offset_max);
            }
            offset = offset.min(offset_max);
            last_offset += hint + 1;
            offset += hint;
        }
        while last_offset < offset {
            let middle = last_offset + ((offset - last_offset) >> 1);
            if self.less(key, at(self, base + middle)) {
                offset = middle;
            } else {
                last_offset = middle + 1;
            }
        }
        offset
    }

    fn element(&self, area: Area, index: usize) -> usize {
        match area {
            Area::Work => self.work[index],
            Area::Temp(temp) => temp[index],
        }
    }

    /// `MergeLow`: merges the `len_a` elements at `base_a` with the `len_b` after them,
    /// front to back, with run A copied out (`len_a <= len_b`).
    fn merge_low(&mut self, base_a: usize, mut len_a: usize, base_b: usize, mut len_b: usize) {
        let temp: Vec<usize> = self.work[base_a..base_a + len_a].to_vec();
        let mut dest = base_a;
        let mut cursor_temp = 0;
        let mut cursor_b = base_b;
        self.work[dest] = self.work[cursor_b];
        dest += 1;
        cursor_b += 1;

        let end = 'merge: {
            len_b -= 1;
            if len_b == 0 {
                break 'merge MergeEnd::Succeed;
            }
            if len_a == 1 {
                break 'merge MergeEnd::LastCopied;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let mut wins_a = 0;
                let mut wins_b = 0;
                // One element at a time until one run wins min_gallop times in a row.
                loop {
                    if self.less(self.work[cursor_b], temp[cursor_temp]) {
                        self.work[dest] = self.work[cursor_b];
                        dest += 1;
                        cursor_b += 1;
                        wins_b += 1;
                        len_b -= 1;
                        wins_a = 0;
                        if len_b == 0 {
                            break 'merge MergeEnd::Succeed;
                        }
                        if wins_b >= min_gallop {
                            break;
                        }
                    } else {
                        self.work[dest] = temp[cursor_temp];
                        dest += 1;
                        cursor_temp += 1;
                        wins_a += 1;
                        len_a -= 1;
                        wins_b = 0;
                        if len_a == 1 {
                            break 'merge MergeEnd::LastCopied;
                        }
                        if wins_a >= min_gallop {
                            break;
                        }
                    }
                }
                // Galloping, until neither run wins MIN_GALLOP_WINS times in a row.
                min_gallop += 1;
                let mut first_iteration = true;
                while wins_a >= MIN_GALLOP_WINS || wins_b >= MIN_GALLOP_WINS || first_iteration {
                    first_iteration = false;
                    min_gallop = min_gallop.saturating_sub(1).max(1);
                    self.min_gallop = min_gallop;

                    let key = self.work[cursor_b];
                    wins_a = self.gallop_right(Area::Temp(&temp), key, cursor_temp, len_a, 0);
                    if wins_a > 0 {
                        self.work[dest..dest + wins_a]
                            .copy_from_slice(&temp[cursor_temp..cursor_temp + wins_a]);
                        dest += wins_a;
                        cursor_temp += wins_a;
                        len_a -= wins_a;
                        if len_a == 1 {
                            break 'merge MergeEnd::LastCopied;
                        }
                        // Impossible for a consistent comparator; pi's need not be one.
                        if len_a == 0 {
                            break 'merge MergeEnd::Succeed;
                        }
                    }
                    self.work[dest] = self.work[cursor_b];
                    dest += 1;
                    cursor_b += 1;
                    len_b -= 1;
                    if len_b == 0 {
                        break 'merge MergeEnd::Succeed;
                    }

                    let key = temp[cursor_temp];
                    wins_b = self.gallop_left(Area::Work, key, cursor_b, len_b, 0);
                    if wins_b > 0 {
                        self.work.copy_within(cursor_b..cursor_b + wins_b, dest);
                        dest += wins_b;
                        cursor_b += wins_b;
                        len_b -= wins_b;
                        if len_b == 0 {
                            break 'merge MergeEnd::Succeed;
                        }
                    }
                    self.work[dest] = temp[cursor_temp];
                    dest += 1;
                    cursor_temp += 1;
                    len_a -= 1;
                    if len_a == 1 {
                        break 'merge MergeEnd::LastCopied;
                    }
                }
                // Penalised for leaving galloping mode.
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };
        match end {
            MergeEnd::Succeed => {
                self.work[dest..dest + len_a]
                    .copy_from_slice(&temp[cursor_temp..cursor_temp + len_a]);
            }
            MergeEnd::LastCopied => {
                self.work.copy_within(cursor_b..cursor_b + len_b, dest);
                self.work[dest + len_b] = temp[cursor_temp];
            }
        }
    }

    /// `MergeHigh`: merges the `len_a` elements at `base_a` with the `len_b` after them,
    /// back to front, with run B copied out (`len_a > len_b`).
    ///
    /// V8's cursors may step to one before their run (-1 for a run at 0); here each cursor is
    /// kept one higher (`*_end`: the index after the next element to take), so none underflows.
    fn merge_high(&mut self, base_a: usize, mut len_a: usize, base_b: usize, mut len_b: usize) {
        let temp: Vec<usize> = self.work[base_b..base_b + len_b].to_vec();
        let mut dest_end = base_b + len_b;
        let mut temp_end = len_b;
        let mut a_end = base_a + len_a;
        dest_end -= 1;
        a_end -= 1;
        self.work[dest_end] = self.work[a_end];

        let end = 'merge: {
            len_a -= 1;
            if len_a == 0 {
                break 'merge MergeEnd::Succeed;
            }
            if len_b == 1 {
                break 'merge MergeEnd::LastCopied;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let mut wins_a = 0;
                let mut wins_b = 0;
                loop {
                    if self.less(temp[temp_end - 1], self.work[a_end - 1]) {
                        dest_end -= 1;
                        a_end -= 1;
                        self.work[dest_end] = self.work[a_end];
                        wins_a += 1;
                        len_a -= 1;
                        wins_b = 0;
                        if len_a == 0 {
                            break 'merge MergeEnd::Succeed;
                        }
                        if wins_a >= min_gallop {
                            break;
                        }
                    } else {
                        dest_end -= 1;
                        temp_end -= 1;
                        self.work[dest_end] = temp[temp_end];
                        wins_b += 1;
                        len_b -= 1;
                        wins_a = 0;
                        if len_b == 1 {
                            break 'merge MergeEnd::LastCopied;
                        }
                        if wins_b >= min_gallop {
                            break;
                        }
                    }
                }
                min_gallop += 1;
                let mut first_iteration = true;
                while wins_a >= MIN_GALLOP_WINS || wins_b >= MIN_GALLOP_WINS || first_iteration {
                    first_iteration = false;
                    min_gallop = min_gallop.saturating_sub(1).max(1);
                    self.min_gallop = min_gallop;

                    let key = temp[temp_end - 1];
                    let k = self.gallop_right(Area::Work, key, base_a, len_a, len_a - 1);
                    wins_a = len_a - k;
                    if wins_a > 0 {
                        dest_end -= wins_a;
                        a_end -= wins_a;
                        self.work.copy_within(a_end..a_end + wins_a, dest_end);
                        len_a -= wins_a;
                        if len_a == 0 {
                            break 'merge MergeEnd::Succeed;
                        }
                    }
                    dest_end -= 1;
                    temp_end -= 1;
                    self.work[dest_end] = temp[temp_end];
                    len_b -= 1;
                    if len_b == 1 {
                        break 'merge MergeEnd::LastCopied;
                    }

                    let key = self.work[a_end - 1];
                    let k = self.gallop_left(Area::Temp(&temp), key, 0, len_b, len_b - 1);
                    wins_b = len_b - k;
                    if wins_b > 0 {
                        dest_end -= wins_b;
                        temp_end -= wins_b;
                        self.work[dest_end..dest_end + wins_b]
                            .copy_from_slice(&temp[temp_end..temp_end + wins_b]);
                        len_b -= wins_b;
                        if len_b == 1 {
                            break 'merge MergeEnd::LastCopied;
                        }
                        // Impossible for a consistent comparator; pi's need not be one.
                        if len_b == 0 {
                            break 'merge MergeEnd::Succeed;
                        }
                    }
                    dest_end -= 1;
                    a_end -= 1;
                    self.work[dest_end] = self.work[a_end];
                    len_a -= 1;
                    if len_a == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };
        match end {
            MergeEnd::Succeed => {
                // The rest of run B (its first len_b elements) goes just before dest_end.
                self.work[dest_end - len_b..dest_end].copy_from_slice(&temp[..len_b]);
            }
            MergeEnd::LastCopied => {
                // The rest of run A moves up by one; run B's first element goes before it.
                dest_end -= len_a;
                a_end -= len_a;
                self.work.copy_within(a_end..a_end + len_a, dest_end);
                self.work[dest_end - 1] = temp[temp_end - 1];
            }
        }
    }
}

/// Where a gallop searches: the work array, or a merge's copy of one run.
#[derive(Clone, Copy)]
enum Area<'a> {
    Work,
    Temp(&'a [usize]),
}

/// The next galloping offset, `2 * offset + 1`, capped at `offset_max` (V8 caps it on Smi
/// overflow only, which no list that fits in memory reaches, and then caps it at the end).
fn next_offset(offset: usize, offset_max: usize) -> usize {
    offset
        .checked_mul(2)
        .and_then(|doubled| doubled.checked_add(1))
        .unwrap_or(offset_max)
}

/// `ComputeMinRunLength`: `len` below 64, else a length in 32..=64 such that `len / it` is
/// close to, and at most, a power of two.
fn min_run_length(len: usize) -> usize {
    let mut n = len;
    let mut carry = 0;
    while n >= 64 {
        carry |= n & 1;
        n >>= 1;
    }
    n + carry
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays the cases of a `v8-sort.json`: `{"cases":[{"keys":[int|null...],"order":[...]}]}`.
    /// Returns how many were checked.
    fn replay(text: &str) -> usize {
        let vectors: serde_json::Value = serde_json::from_str(text).unwrap();
        let cases = vectors["cases"].as_array().unwrap();
        for (number, case) in cases.iter().enumerate() {
            let keys: Vec<Option<i64>> = case["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(serde_json::Value::as_i64)
                .collect();
            let expected: Vec<usize> = case["order"]
                .as_array()
                .unwrap()
                .iter()
                .map(|index| index.as_u64().unwrap() as usize)
                .collect();
            let order = v8_sort_order(keys.len(), |a, b| compare_timestamps(keys[a], keys[b]));
            assert_eq!(
                order,
                expected,
                "case {number} ({}, {} keys): {keys:?}",
                case["pattern"],
                keys.len()
            );
        }
        cases.len()
    }

    /// Node 24's own `Array.prototype.sort` (V8 13.6), run with pi's comparator on generated
    /// key lists of 0 to 600 items (unparseable timestamps among them, runs that make the
    /// merges gallop), left every list in the order this module gives: the vectors were written
    /// by `node dev/pi-bench/tree_order.mjs` (see `tests/it/regression/tree_order.rs`).
    /// `TREELOG_V8_SORT_VECTORS` may name a further file of the same form to replay (12,000
    /// random lists of up to 3,000 items matched when this was written).
    #[test]
    fn same_order_as_v8() {
        let checked = replay(include_str!("../../tests/data/tree-order/v8-sort.json"));
        assert!(checked > 100);
        if let Ok(path) = std::env::var("TREELOG_V8_SORT_VECTORS") {
            replay(&std::fs::read_to_string(path).unwrap());
        }
    }

    proptest::proptest! {
        /// With every timestamp valid the comparator is consistent, and V8's order is the stable
        /// sort by timestamp: the shortcut `sort_like_pi_children` takes.
        #[test]
        fn valid_timestamps_sort_stably(keys in proptest::collection::vec(0i64..20, 0..300)) {
            let order = v8_sort_order(keys.len(), |a, b| keys[a].cmp(&keys[b]));
            let mut stable: Vec<usize> = (0..keys.len()).collect();
            stable.sort_by_key(|index| keys[*index]);
            proptest::prop_assert_eq!(order, stable);
        }

        /// Any mix of valid and unparseable timestamps gives a permutation (no item lost or
        /// repeated, no panic), and `sort_like_pi_children` applies that order.
        #[test]
        fn nan_timestamps_permute(
            keys in proptest::collection::vec(proptest::option::weighted(0.7, 0i64..50), 0..400)
        ) {
            let order = v8_sort_order(keys.len(), |a, b| compare_timestamps(keys[a], keys[b]));
            let mut seen = order.clone();
            seen.sort_unstable();
            proptest::prop_assert_eq!(seen, (0..keys.len()).collect::<Vec<_>>());
            let mut items: Vec<usize> = (0..keys.len()).collect();
            sort_like_pi_children(&mut items, |index| keys[*index]);
            proptest::prop_assert_eq!(items, order);
        }
    }
}
