//! What each compaction and branch summary took out of the context: the entries that were in
//! the context just before it and are not after it, each classed by whether a summarizer was
//! given it. The contexts are pi 1.6's (`context::context_entry_seqs`); this module adds no
//! context rule of its own, only the ranges pi's summarizers read:
//!
//! - A compaction's summarizer (pi's `prepareCompaction`) is given the path from a start to
//!   the new first kept entry. The fixed pi starts at the previous compaction's first kept
//!   entry (the start of the context part before it); pi before 0.63.1 started after the
//!   previous compaction entry, so the previous compaction's kept entries were neither kept
//!   nor summarized by it.
//! - A branch summary's summarizer (`collectEntriesForBranchSummary`) is given the old leaf's
//!   path below its branch point with the new position.
//!
//! Along one path, sequence numbers grow with depth (a parent precedes its child in the log),
//! so ranges on a path are ranges of sequence numbers. Reads the index and the lines of
//! compactions and branch summaries through [`IndexedLines`]; never writes.

use std::collections::HashSet;

use crate::context::{IndexedLines, context_entry_seqs};
use crate::error::Result;
use crate::format::json_scan;
use crate::format::line::{EntryKind, json_text_str};
use crate::format::message::ROLES;
use crate::format::record::{Record, SEQ_NONE, TIMESTAMP_NONE};
use crate::format::time::format_iso_ms;
use crate::tree::{common_ancestor, is_ancestor, path_to_root};

/// The first pi whose `prepareCompaction` starts at the previous compaction's first kept entry.
pub const FIX_VERSION: &str = "0.63.1";
/// Its release date (UTC).
pub const FIX_DATE: &str = "2026-03-27";
/// The first millisecond after the release day: a compaction stamped earlier may have been
/// made by a pi older than the fix.
const FIX_DAY_END_MS: i64 = 1_774_656_000_000;

/// Which summaries an audit looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditScope {
    /// Those on the path to the session's leaf.
    ActivePath,
    /// Every compaction and branch summary of the session, on any branch.
    AllBranches,
}

/// The audit of one session: one event per compaction or branch summary, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Audit {
    pub events: Vec<AuditEvent>,
}

/// What made entries leave the context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Compaction,
    BranchSummary,
}

/// One compaction or branch summary and the entries that left the context there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    pub kind: EventKind,
    pub id: String,
    pub seq: u64,
    /// The entry's timestamp as ISO text (`None` when absent or not a date).
    pub timestamp: Option<String>,
    /// Stamped on or before the fix's release day, [`FIX_DATE`] (`None`: no timestamp; always
    /// `Some(false)` for a branch summary, whose range did not change).
    pub before_fix: Option<bool>,
    /// Whether the entry is on the path to the session's leaf.
    pub on_active_path: bool,
    /// The leaf whose context held the entries just before: a compaction's parent, a branch
    /// summary's old leaf (`None` when no context is known).
    pub before_leaf: Option<String>,
    /// For a branch summary: its old leaf is the entry before it in the file, as the
    /// summary names only its new position (pi before 1.6).
    pub old_leaf_inferred: bool,
    /// The entries that were in the context just before and are not after, in path order.
    pub left: Vec<LeftEntry>,
}

/// An entry that left the context, and whether a summarizer was given it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftEntry {
    pub id: String,
    pub seq: u64,
    pub kind: EntryKind,
    /// The message role (`user`, `toolResult`...), `custom` for a custom message,
    /// `branchSummary` for a branch summary, `unknown` for a message without a known role.
    pub role: &'static str,
    /// The line's length in bytes.
    pub bytes: u64,
    pub class: LeftClass,
}

/// How an entry that left the context was treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeftClass {
    /// Inside the range every pi's summarizer was given.
    Summarized,
    /// Inside the range the fixed pi gives, outside the one pi before [`FIX_VERSION`] gave: lost
    /// without a trace if an older pi made the compaction.
    AtRisk,
    /// Inside no summarizer's range.
    Dropped,
}

impl LeftClass {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftClass::Summarized => "summarized",
            LeftClass::AtRisk => "atRisk",
            LeftClass::Dropped => "dropped",
        }
    }
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Compaction => "compaction",
            EventKind::BranchSummary => "branch_summary",
        }
    }
}

impl AuditEvent {
    /// The number and bytes of the entries of `class` that left here.
    pub fn tally(&self, class: LeftClass) -> (u64, u64) {
        self.left
            .iter()
            .filter(|entry| entry.class == class)
            .fold((0, 0), |(count, bytes), entry| {
                (count + 1, bytes + entry.bytes)
            })
    }
}

impl Audit {
    /// The entries at risk or dropped, over every event.
    pub fn lost_count(&self) -> u64 {
        self.lost().count() as u64
    }

    /// The entries at risk or dropped, each with the event it left at, in event order.
    pub fn lost(&self) -> impl Iterator<Item = (&AuditEvent, &LeftEntry)> {
        self.events.iter().flat_map(|event| {
            event
                .left
                .iter()
                .filter(|entry| entry.class != LeftClass::Summarized)
                .map(move |entry| (event, entry))
        })
    }
}

/// The audit of `session` with its leaf at `leaf_seq`.
pub(crate) fn audit(
    session: &impl IndexedLines,
    leaf_seq: u64,
    scope: AuditScope,
) -> Result<Audit> {
    let store = session.store();
    let active: Vec<(u64, Record)> = match leaf_seq {
        SEQ_NONE => Vec::new(),
        leaf => path_to_root(store, leaf)?,
    };
    let on_path: HashSet<u64> = active.iter().map(|(seq, _)| *seq).collect();
    let summaries = |record: &Record| {
        matches!(
            record.kind,
            Some(EntryKind::Compaction | EntryKind::BranchSummary)
        )
    };
    let mut targets: Vec<(u64, Record)> = match scope {
        AuditScope::ActivePath => active
            .into_iter()
            .filter(|(_, record)| summaries(record))
            .collect(),
        AuditScope::AllBranches => {
            let mut found = Vec::new();
            let mut seq = 0;
            while seq < store.record_count() {
                for record in store.records_from(seq)? {
                    if summaries(&record) {
                        found.push((seq, record));
                    }
                    seq += 1;
                }
            }
            found
        }
    };
    targets.sort_by_key(|(seq, _)| *seq);
    let mut events = Vec::with_capacity(targets.len());
    for (seq, record) in targets {
        let event = match record.kind {
            Some(EntryKind::Compaction) => compaction_event(session, seq, &record)?,
            _ => branch_summary_event(session, seq, &record)?,
        };
        events.push(AuditEvent {
            on_active_path: on_path.contains(&seq),
            ..event
        });
    }
    Ok(Audit { events })
}

/// The entries of `before` that are not in `after` and contributed messages, classed by
/// `class`. A compaction leaves system messages out of its kept range and carries them itself
/// (pi 1.6's `systemMessage`): with `system_carried`, they are not counted as left.
fn left_entries(
    session: &impl IndexedLines,
    before: &[u64],
    after: &[u64],
    system_carried: bool,
    class: impl Fn(u64) -> LeftClass,
) -> Result<Vec<LeftEntry>> {
    let store = session.store();
    let after: HashSet<u64> = after.iter().copied().collect();
    let mut left = Vec::new();
    for &seq in before {
        if after.contains(&seq) {
            continue;
        }
        let record = store.existing_record(seq)?;
        let role = match record.kind {
            Some(EntryKind::Message) => role_name(session, &record)?,
            Some(EntryKind::CustomMessage) => "custom",
            Some(EntryKind::BranchSummary) => "branchSummary",
            // Other entries carry nothing into the context; a compaction's summary leaves as the
            // previous summary a summarizer is always given.
            _ => continue,
        };
        if system_carried && role == "system" {
            continue;
        }
        left.push(LeftEntry {
            id: record.id.to_string(),
            seq,
            kind: record.kind.unwrap_or(EntryKind::Other),
            role,
            bytes: u64::from(record.len_bytes),
            class: class(seq),
        });
    }
    left.sort_by_key(|entry| entry.seq);
    Ok(left)
}

/// A message entry's role: from the index, or from its line when the index holds no known one.
fn role_name(session: &impl IndexedLines, record: &Record) -> Result<&'static str> {
    if let Some(role) = ROLES.get(usize::from(record.role).wrapping_sub(1)) {
        return Ok(role);
    }
    let line = session.read_line(record)?;
    let role = json_scan::scan(&line, &["message"])
        .ok()
        .and_then(|found| found.fields[0])
        .and_then(|message| json_scan::scan(message, &["role"]).ok())
        .and_then(|found| found.fields[0])
        .and_then(json_text_str);
    Ok(role
        .and_then(|role| ROLES.iter().find(|known| **known == role))
        .copied()
        .unwrap_or("unknown"))
}

fn event(kind: EventKind, seq: u64, record: &Record, left: Vec<LeftEntry>) -> AuditEvent {
    let stamped = record.timestamp_ms != TIMESTAMP_NONE;
    AuditEvent {
        kind,
        id: record.id.to_string(),
        seq,
        timestamp: stamped.then(|| format_iso_ms(record.timestamp_ms)),
        before_fix: stamped
            .then_some(kind == EventKind::Compaction && record.timestamp_ms < FIX_DAY_END_MS),
        on_active_path: false,
        before_leaf: None,
        old_leaf_inferred: false,
        left,
    }
}

/// A compaction: what left the context between its parent and itself. The fixed range starts
/// where the context part before it starts (the previous compaction's kept range), the old one
/// after the previous compaction; both end at the first entry the compaction keeps (itself
/// when it keeps none on its path).
fn compaction_event(session: &impl IndexedLines, seq: u64, record: &Record) -> Result<AuditEvent> {
    if record.parent_seq == SEQ_NONE {
        return Ok(event(EventKind::Compaction, seq, record, Vec::new()));
    }
    let store = session.store();
    let parent = store.existing_record(record.parent_seq)?;
    let previous = parent.compaction_seq;
    let before = context_entry_seqs(session, record.parent_seq)?;
    let after = context_entry_seqs(session, seq)?;
    let fixed_start = match previous {
        SEQ_NONE => 0,
        previous => before
            .iter()
            .copied()
            .filter(|&at| at != previous)
            .min()
            .unwrap_or(previous + 1),
    };
    let old_start = match previous {
        SEQ_NONE => 0,
        previous => previous + 1,
    };
    let end = after
        .iter()
        .copied()
        .filter(|&at| at != seq)
        .min()
        .unwrap_or(seq);
    let left = left_entries(session, &before, &after, true, |at| {
        if at < fixed_start || at >= end {
            LeftClass::Dropped
        } else if at < old_start {
            LeftClass::AtRisk
        } else {
            LeftClass::Summarized
        }
    })?;
    Ok(AuditEvent {
        before_leaf: Some(parent.id.to_string()),
        ..event(EventKind::Compaction, seq, record, left)
    })
}

/// A branch summary: what left the context between the old leaf it names (`fromId`) and
/// itself. The summarizer was given the old leaf's path below its branch point with the
/// summary's parent (the whole path when they share no root).
fn branch_summary_event(
    session: &impl IndexedLines,
    seq: u64,
    record: &Record,
) -> Result<AuditEvent> {
    let store = session.store();
    let line = session.read_line(record)?;
    let from = json_scan::scan(&line, &["fromId"])
        .ok()
        .and_then(|found| found.fields[0])
        .and_then(json_text_str);
    // pi 1.6 names the old leaf; pi before it names the new position (the summary's parent)
    // or "root", and the old leaf is then the entry just before the summary in the file,
    // where the leaf was when the summary was appended, unless that entry is on the new path
    // (nothing left then). An id naming no earlier entry: nothing of a known context left.
    let named = match from {
        Some(id) => store.seq_of(&id)?.filter(|&at| at < seq),
        None => None,
    };
    let (from_seq, inferred) = match named {
        Some(at) if at != record.parent_seq => (Some(at), false),
        _ => (previous_leaf(store, seq)?, true),
    };
    let Some(from_seq) = from_seq else {
        return Ok(event(EventKind::BranchSummary, seq, record, Vec::new()));
    };
    let branch_point = match record.parent_seq {
        SEQ_NONE => None,
        parent => common_ancestor(store, from_seq, parent)?,
    };
    let before = context_entry_seqs(session, from_seq)?;
    let after = context_entry_seqs(session, seq)?;
    let left = left_entries(session, &before, &after, false, |at| match branch_point {
        Some(point) if at <= point => LeftClass::Dropped,
        _ => LeftClass::Summarized,
    })?;
    Ok(AuditEvent {
        before_leaf: Some(store.existing_record(from_seq)?.id.to_string()),
        old_leaf_inferred: inferred,
        ..event(EventKind::BranchSummary, seq, record, left)
    })
}

/// The entry on the line before `seq`, when it is canonical and not an ancestor of `seq`.
fn previous_leaf(store: &crate::index::Store, seq: u64) -> Result<Option<u64>> {
    let Some(previous) = seq.checked_sub(1) else {
        return Ok(None);
    };
    if store.existing_record(previous)?.kind.is_none() || is_ancestor(store, previous, seq)? {
        return Ok(None);
    }
    Ok(Some(previous))
}
