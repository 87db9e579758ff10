//! The second check of `treelog verify`: every answer the index gives compared with a fresh
//! replay of the log, and each compaction's first kept entry checked on the replay. Reads
//! through sessions only; never writes the log.

use super::problems::{ProblemKind, Problems};
use super::scan::ScanResult;
use crate::error::{Result, quoted, quoted_or};
use crate::session::Session;

/// Each compaction's first kept entry must be an earlier entry on its path, or the context
/// keeps nothing before the compaction.
pub(super) fn check_compactions(
    replay: &Session,
    scan: &ScanResult,
    problems: &mut Problems,
) -> Result<()> {
    for compaction in &scan.compactions {
        let (line, offset) = (Some(compaction.line), Some(compaction.offset_bytes));
        let Some(first_kept) = &compaction.first_kept else {
            problems.push(
                ProblemKind::CompactionFirstKept,
                line,
                offset,
                format!(
                    "compaction {} has no string firstKeptEntryId",
                    quoted(&compaction.id)
                ),
            );
            continue;
        };
        if replay.entry(first_kept)?.is_none() {
            problems.push(
                ProblemKind::CompactionFirstKept,
                line,
                offset,
                format!(
                    "compaction {}: firstKeptEntryId {} names no entry",
                    quoted(&compaction.id),
                    quoted(first_kept)
                ),
            );
            continue;
        }
        if replay.entry(&compaction.id)?.is_none() {
            continue;
        }
        if first_kept == &compaction.id || !replay.is_ancestor(first_kept, &compaction.id)? {
            problems.push(
                ProblemKind::CompactionFirstKept,
                line,
                offset,
                format!(
                    "compaction {}: firstKeptEntryId {} is not an earlier entry on its path (the context keeps nothing before the compaction)",
                    quoted(&compaction.id),
                    quoted(first_kept)
                ),
            );
        }
    }
    Ok(())
}

/// Compares what the index answers with what a replay of the log answers.
pub(super) fn compare_index(
    indexed: &Session,
    replay: &Session,
    scan: &ScanResult,
    problems: &mut Problems,
) -> Result<()> {
    let mut report = |offset: Option<u64>, message: String| {
        problems.push(
            ProblemKind::Index,
            offset.map(|offset| scan.line_of(offset)),
            offset,
            format!("index: {message}"),
        );
    };
    // Entries, field by field, in file order.
    match first_stream_difference(indexed.entries()?, replay.entries()?)? {
        Some((_, Some(a), Some(b))) => report(
            Some(b.offset_bytes),
            format!(
                "entry {} (parent {}, depth {}) differs from the replay's {} (parent {}, depth {})",
                quoted(&a.id),
                quoted_or(a.tree_parent_id.as_deref(), "none"),
                a.depth,
                quoted(&b.id),
                quoted_or(b.tree_parent_id.as_deref(), "none"),
                b.depth
            ),
        ),
        Some((_, Some(a), None)) => report(
            Some(a.offset_bytes),
            format!("has entry {} beyond the replay's last", quoted(&a.id)),
        ),
        Some((_, None, Some(b))) => report(
            Some(b.offset_bytes),
            format!("lacks entry {}", quoted(&b.id)),
        ),
        // Two streams that both ended are equal: not a difference.
        None | Some((_, None, None)) => {}
    }
    let (a, b) = (indexed.opaque_records()?, replay.opaque_records()?);
    if let Some(first) = first_difference(&a, &b) {
        let offset = b
            .get(first)
            .or(a.get(first))
            .map(|record| record.offset_bytes);
        report(
            offset,
            format!(
                "{} opaque records, the replay has {}; first difference at record {}",
                a.len(),
                b.len(),
                first + 1
            ),
        );
    }
    if let Some(message) = name_difference("leaf", indexed.leaf_id()?, replay.leaf_id()?) {
        report(None, message);
    }
    let (a, b) = (indexed.path_ids(None)?, replay.path_ids(None)?);
    if let Some(first) = first_difference(&a, &b) {
        report(
            None,
            format!(
                "path of {} entries differs from the replay's ({} entries) at position {}",
                a.len(),
                b.len(),
                first + 1
            ),
        );
    }
    let (a, b) = (indexed.labels()?, replay.labels()?);
    if a != b {
        report(
            None,
            format!(
                "{} labels, the replay has {} (or they differ)",
                a.len(),
                b.len()
            ),
        );
    }
    let name = name_difference(
        "session name",
        indexed.session_name()?,
        replay.session_name()?,
    );
    if let Some(message) = name {
        report(None, message);
    }
    if let Some((position, a, b)) = first_stream_difference(indexed.tree()?, replay.tree()?)? {
        let id = |node: &Option<crate::session::TreeNode>| {
            quoted_or(node.as_ref().map(|node| node.id.as_str()), "none")
        };
        report(
            None,
            format!(
                "tree node {position} is {}, the replay's is {}",
                id(&a),
                id(&b)
            ),
        );
    }
    Ok(())
}

/// The index of the first item where `a` and `b` differ (the shorter one's length when one is
/// a prefix of the other), or `None` when they are equal.
fn first_difference<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
    if a == b {
        return None;
    }
    Some(
        a.iter()
            .zip(b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len())),
    )
}

/// Where two streams first differ: the position (counted from 1) and what each has there.
type StreamDifference<T> = (u64, Option<T>, Option<T>);

/// The first position (counted from 1) where two streams of answers differ, with the item
/// each has there (`None`: that stream ended first), or `None` when they are equal. Reads
/// both streams only up to the difference.
fn first_stream_difference<T: PartialEq>(
    mut left: impl Iterator<Item = Result<T>>,
    mut right: impl Iterator<Item = Result<T>>,
) -> Result<Option<StreamDifference<T>>> {
    let mut position = 0u64;
    loop {
        position += 1;
        match (left.next().transpose()?, right.next().transpose()?) {
            (None, None) => return Ok(None),
            (Some(a), Some(b)) if a == b => {}
            (a, b) => return Ok(Some((position, a, b))),
        }
    }
}

/// "`what` X, the replay's is Y" when the index's and the replay's names differ.
fn name_difference(what: &str, indexed: Option<String>, replay: Option<String>) -> Option<String> {
    (indexed != replay).then(|| {
        format!(
            "{what} {}, the replay's is {}",
            quoted_or(indexed.as_deref(), "none"),
            quoted_or(replay.as_deref(), "none")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first difference is where two lists first disagree, or where the shorter one ends
    /// when it is a prefix of the other; equal lists have none.
    #[test]
    fn first_difference_is_the_first_disagreement_or_the_shorter_end() {
        let cases: &[(&[u8], &[u8], Option<usize>)] = &[
            (&[], &[], None),
            (&[1, 2, 3], &[1, 2, 3], None),
            (&[1, 2, 3], &[1, 9, 3], Some(1)),
            (&[9], &[1, 2], Some(0)),
            (&[1, 2], &[1, 2, 3], Some(2)),
            (&[1, 2, 3], &[], Some(0)),
        ];
        for &(a, b, expected) in cases {
            assert_eq!(first_difference(a, b), expected, "{a:?} vs {b:?}");
            let (left, right) = (a.iter().copied().map(Ok), b.iter().copied().map(Ok));
            let streamed = first_stream_difference(left, right).unwrap();
            let expected_stream = expected.map(|index| {
                (
                    index as u64 + 1,
                    a.get(index).copied(),
                    b.get(index).copied(),
                )
            });
            assert_eq!(streamed, expected_stream, "{a:?} vs {b:?} streamed");
        }
    }
}
