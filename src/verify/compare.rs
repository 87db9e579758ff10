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
    let mut left = indexed.entries()?;
    let mut right = replay.entries()?;
    loop {
        match (left.next().transpose()?, right.next().transpose()?) {
            (None, None) => break,
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                report(
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
                );
                break;
            }
            (Some(a), None) => {
                report(
                    Some(a.offset_bytes),
                    format!("has entry {} beyond the replay's last", quoted(&a.id)),
                );
                break;
            }
            (None, Some(b)) => {
                report(
                    Some(b.offset_bytes),
                    format!("lacks entry {}", quoted(&b.id)),
                );
                break;
            }
        }
    }
    let (a, b) = (indexed.opaque_records()?, replay.opaque_records()?);
    if a != b {
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
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
    let (a, b) = (indexed.leaf_id()?, replay.leaf_id()?);
    if a != b {
        report(
            None,
            format!(
                "leaf {}, the replay's is {}",
                quoted_or(a.as_deref(), "none"),
                quoted_or(b.as_deref(), "none")
            ),
        );
    }
    let (a, b) = (indexed.path_ids(None)?, replay.path_ids(None)?);
    if a != b {
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
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
    let (a, b) = (indexed.session_name()?, replay.session_name()?);
    if a != b {
        report(
            None,
            format!(
                "session name {}, the replay's is {}",
                quoted_or(a.as_deref(), "none"),
                quoted_or(b.as_deref(), "none")
            ),
        );
    }
    let mut left = indexed.tree()?;
    let mut right = replay.tree()?;
    let mut position = 0u64;
    loop {
        position += 1;
        match (left.next().transpose()?, right.next().transpose()?) {
            (None, None) => break,
            (Some(a), Some(b)) if a == b => {}
            (a, b) => {
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
                break;
            }
        }
    }
    Ok(())
}
