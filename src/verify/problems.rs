//! The problems `treelog verify` reports: their kinds (with their stable JSON names), and the
//! bounded list both checks add to. Plain data; below the scan and the comparison.

/// Problems kept per log; past this one more problem says how many were left out.
pub const PROBLEMS_MAX: usize = 10_000;

/// What kind of problem a [`Problem`] is; [`ProblemKind::as_str`] is its stable JSON name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The header is missing, unreadable, or not first.
    Header,
    /// The session is in an older format version (v1 or v2), which pi migrates on load.
    LegacyVersion,
    /// Bytes after the last newline: an unfinished or torn write.
    TornTail,
    /// A line that is not valid JSON (or too long to parse).
    Unparseable,
    /// A line that is kept verbatim but is not an entry (unknown type, no id, ...).
    Opaque,
    /// A line that is not valid UTF-8, or a byte order mark opening the log (pi 1.6.0 refuses it).
    Encoding,
    /// An id used by an earlier line too.
    DuplicateId,
    /// A `parentId` that names no earlier line.
    DanglingParent,
    /// An entry that is its own parent.
    SelfParent,
    /// Entries whose `parentId`s form a loop (pi loops forever on them).
    Cycle,
    /// A compaction whose `firstKeptEntryId` is not on its path.
    CompactionFirstKept,
    /// An entry `timestamp` that is missing or not an ISO time: pi sorts children and dates
    /// summaries with `NaN`, OpenClaw refuses to build the context.
    Timestamp,
    /// An answer given through the index differs from a replay of the log.
    Index,
    /// The index was damaged (a checksum, a count or a layout check failed, or redb could not
    /// read it) and was rebuilt from the log, or left as it is when index writes are off: the
    /// log is fine.
    IndexDamaged,
    /// More problems were found than are reported.
    Truncated,
}

impl ProblemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Header => "header",
            ProblemKind::LegacyVersion => "legacyVersion",
            ProblemKind::TornTail => "tornTail",
            ProblemKind::Unparseable => "unparseable",
            ProblemKind::Opaque => "opaque",
            ProblemKind::Encoding => "encoding",
            ProblemKind::DuplicateId => "duplicateId",
            ProblemKind::DanglingParent => "danglingParent",
            ProblemKind::SelfParent => "selfParent",
            ProblemKind::Cycle => "cycle",
            ProblemKind::CompactionFirstKept => "compactionFirstKept",
            ProblemKind::Timestamp => "timestamp",
            ProblemKind::Index => "index",
            ProblemKind::IndexDamaged => "indexDamaged",
            ProblemKind::Truncated => "truncated",
        }
    }
}

/// One problem, located by 1-based line number and byte offset where it has a place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub line: Option<u64>,
    pub offset_bytes: Option<u64>,
    pub message: String,
}

/// Problems collected so far, bounded by [`PROBLEMS_MAX`].
#[derive(Default)]
pub(super) struct Problems {
    list: Vec<Problem>,
    left_out: u64,
}

impl Problems {
    pub(super) fn push(
        &mut self,
        kind: ProblemKind,
        line: Option<u64>,
        offset: Option<u64>,
        message: String,
    ) {
        if self.list.len() < PROBLEMS_MAX {
            self.list.push(Problem {
                kind,
                line,
                offset_bytes: offset,
                message,
            });
        } else {
            self.left_out += 1;
        }
    }

    pub(super) fn finish(mut self) -> Vec<Problem> {
        self.list.sort_by_key(|problem| {
            (
                problem.line.unwrap_or(u64::MAX),
                problem.offset_bytes.unwrap_or(u64::MAX),
            )
        });
        if self.left_out > 0 {
            self.list.push(Problem {
                kind: ProblemKind::Truncated,
                line: None,
                offset_bytes: None,
                message: format!("{} more problems not shown", self.left_out),
            });
        }
        self.list
    }
}
