//! Tree queries over the index: paths, ancestors and the depth-first walk. Every query reads
//! only the records it returns or steps through, never the whole index.
//!
//! A path is handed out as [`PathIds`], its ids in one buffer. The ancestor of an entry at a
//! given depth, and so the common ancestor of two entries, is found by the records' skew-binary
//! jump pointers in O(log depth) steps; the depth-first walk streams the tree without holding
//! it.

use crate::error::Result;
use crate::format::js_sort;
use crate::format::record::{Record, SEQ_NONE, TIMESTAMP_NONE};
use crate::index::Store;

/// The ids of a path, root first, held in one buffer: a walk allocates once per path instead
/// of once per id (what `Session::path_id_list` returns; `Session::path_ids` gives a
/// `Vec<String>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathIds {
    /// The ids concatenated, **leaf first** (the order a walk meets them).
    text: String,
    /// Where each id ends in `text`, leaf first.
    ends: Vec<usize>,
}

impl PathIds {
    pub(crate) fn with_capacity(ids: usize) -> PathIds {
        PathIds {
            text: String::with_capacity(ids * 8),
            ends: Vec::with_capacity(ids),
        }
    }

    /// Adds the next id toward the root.
    pub(crate) fn push_toward_root(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The id at `index`, counted from the root (0 is the root).
    pub fn get(&self, index: usize) -> Option<&str> {
        let walked = self.ends.len().checked_sub(1)?.checked_sub(index)?;
        let start = if walked == 0 {
            0
        } else {
            self.ends[walked - 1]
        };
        Some(&self.text[start..self.ends[walked]])
    }

    /// The ids from the root to the leaf.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        (0..self.len()).map(|index| self.get(index).expect("every index below len names an id"))
    }

    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

/// Sequence numbers from the root to `leaf_seq`, root first. Parents always precede their
/// children in the log, so the walk ends after at most `depth + 1` steps.
pub(crate) fn path_to_root(store: &Store, leaf_seq: u64) -> Result<Vec<(u64, Record)>> {
    let mut path = store.ancestors(leaf_seq, SEQ_NONE)?;
    path.reverse();
    Ok(path)
}

/// The ancestor-or-self of `seq` at `depth`, in O(log depth) steps via jump pointers, or
/// `None` when `depth` is deeper than `seq`.
pub(crate) fn ancestor_at_depth(store: &Store, seq: u64, depth: u32) -> Result<Option<u64>> {
    let mut current = seq;
    let mut record = store.existing_record(current)?;
    if record.depth < depth {
        return Ok(None);
    }
    while record.depth > depth {
        let jump = store.existing_record(record.jump_seq)?;
        let next = if jump.depth >= depth {
            record.jump_seq
        } else {
            record.parent_seq
        };
        let next_record = if next == record.jump_seq {
            jump
        } else {
            store.existing_record(next)?
        };
        // Each step goes to a shallower entry; a damaged index must not loop forever.
        if next_record.depth >= record.depth || next >= current {
            return Err(store.read_error(format!(
                "record {current} links to record {next}, which is not a shallower ancestor"
            )));
        }
        current = next;
        record = next_record;
    }
    Ok(Some(current))
}

/// Whether `ancestor` is `descendant` or one of its ancestors.
pub(crate) fn is_ancestor(store: &Store, ancestor: u64, descendant: u64) -> Result<bool> {
    let depth = store.existing_record(ancestor)?.depth;
    Ok(ancestor_at_depth(store, descendant, depth)? == Some(ancestor))
}

/// The deepest common ancestor of two entries (their branch point), if they share a root.
pub(crate) fn common_ancestor(store: &Store, a: u64, b: u64) -> Result<Option<u64>> {
    let depth_a = store.existing_record(a)?.depth;
    let depth_b = store.existing_record(b)?.depth;
    let depth = depth_a.min(depth_b);
    let (Some(a), Some(b)) = (
        ancestor_at_depth(store, a, depth)?,
        ancestor_at_depth(store, b, depth)?,
    ) else {
        return Ok(None);
    };
    if a == b {
        return Ok(Some(a));
    }
    let at = |seq, depth| ancestor_at_depth(store, seq, depth);
    if at(a, 0)? != at(b, 0)? {
        return Ok(None);
    }
    // Invariant: the ancestors agree at depth `low` and differ at depth `high`.
    let (mut low, mut high) = (0, depth);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if at(a, middle)? == at(b, middle)? {
            low = middle;
        } else {
            high = middle;
        }
    }
    at(a, low)
}

/// Children of `parent_seq` in pi's `getTree()` order: ascending by timestamp, ties in file
/// order; with unparseable timestamps among them, the order V8's sort gives pi's comparator
/// (`format::js_sort`). The roots ([`SEQ_NONE`]) stay in file order, as pi leaves them. Opaque
/// records are never children.
pub(crate) fn sorted_children(store: &Store, parent_seq: u64) -> Result<Vec<(u64, Record)>> {
    let mut kids = Vec::new();
    for seq in store.children_of(parent_seq)? {
        let record = store.existing_record(seq)?;
        // A child comes after its parent and names it: checked so that a damaged index
        // cannot make the walk loop (and grow) forever.
        if record.parent_seq != parent_seq || (parent_seq != SEQ_NONE && seq <= parent_seq) {
            return Err(store.read_error(format!(
                "record {seq} is listed as a child of record {parent_seq} but is not"
            )));
        }
        if record.kind.is_some() {
            kids.push((seq, record));
        }
    }
    // The store lists children in file order; sorted anyway, since the order is the answer.
    kids.sort_unstable_by_key(|(seq, _)| *seq);
    if parent_seq != SEQ_NONE {
        js_sort::sort_like_pi_children(&mut kids, |(_, record)| {
            (record.timestamp_ms != TIMESTAMP_NONE).then_some(record.timestamp_ms)
        });
    }
    Ok(kids)
}

/// A depth-first pre-order walk that holds only the pending siblings of the current path,
/// never the whole tree.
pub(crate) struct Walk {
    /// Nodes still to visit; the top is next.
    stack: Vec<(u64, Record)>,
}

impl Walk {
    pub fn new(store: &Store) -> Result<Walk> {
        let mut stack = sorted_children(store, SEQ_NONE)?;
        stack.reverse();
        Ok(Walk { stack })
    }

    pub fn next(&mut self, store: &Store) -> Result<Option<(u64, Record)>> {
        let Some((seq, record)) = self.stack.pop() else {
            return Ok(None);
        };
        let mut kids = sorted_children(store, seq)?;
        kids.reverse();
        self.stack.extend(kids);
        Ok(Some((seq, record)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indexes count from the root; any index past the end, however large, is `None`.
    #[test]
    fn path_ids_indexing() {
        let mut ids = PathIds::with_capacity(2);
        ids.push_toward_root("leaf");
        ids.push_toward_root("root");
        assert_eq!(ids.iter().collect::<Vec<_>>(), ["root", "leaf"]);
        assert_eq!(
            (ids.get(0), ids.get(1), ids.get(2)),
            (Some("root"), Some("leaf"), None)
        );
        assert_eq!(ids.get(usize::MAX), None);
        assert_eq!(PathIds::default().get(0), None);
    }
}
