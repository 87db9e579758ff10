//! Checking a log and its index: what `treelog verify` reports.
//!
//! Two independent checks. The first is a raw scan of the log, line by line, that does not
//! use the index at all: header, torn tail, unreadable or opaque lines, duplicate ids,
//! dangling parents, self-parents and parent cycles (as pi would resolve them), compactions
//! whose first kept entry is not on their path. The second opens the session through its
//! index and compares every answer the index gives (entries, opaque records, leaf, path,
//! labels, tree) with a fresh in-memory replay of the log.
//!
//! Architecture invariant: nothing here writes the log. Opening through the index may update
//! or rebuild the sidecar, as every open does.

use std::path::Path;

use crate::error::{Error, Result};
use crate::index::{IndexState, Verify};
use crate::session::{Session, SessionOptions};

mod compare;
mod problems;
mod scan;

pub use problems::{PROBLEMS_MAX, Problem, ProblemKind};

use compare::{check_compactions, compare_index};
use problems::Problems;
use scan::scan_raw;

/// The outcome of verifying one log.
#[derive(Clone, Debug)]
pub struct Report {
    pub problems: Vec<Problem>,
    /// What opening the index found (before it was compared with the replay).
    pub index_state: IndexState,
    /// Lines in the log (blank ones, and a complete last line without its `\n`, included).
    pub line_count: u64,
    pub entry_count: u64,
    pub log_len_bytes: u64,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies the log at `path`: a raw scan, then the index against a replay. With `full`,
/// the index is opened with [`Verify::Full`] (every hash block of the log is re-read).
///
/// A log that grows meanwhile (another process appending) is verified again, up to
/// [`ATTEMPTS_MAX`] times, so a half-written line or an entry one view has and the other has
/// not is never reported as a problem; a log that keeps growing is an error.
pub fn verify_log(path: &Path, full: bool) -> Result<Report> {
    verify_log_with(path, full, &SessionOptions::default())
}

/// [`verify_log`], opening the index where `options` say ([`SessionOptions::index_dir`]) and
/// as they allow: with [`SessionOptions::index_write`] off, a missing or damaged index is
/// reported but not built or rebuilt.
pub fn verify_log_with(path: &Path, full: bool, options: &SessionOptions) -> Result<Report> {
    let mut len_now = 0;
    for _ in 0..ATTEMPTS_MAX {
        let report = verify_once(path, full, options)?;
        len_now = std::fs::metadata(path)
            .map_err(|e| Error::io(path, "look at the log", e))?
            .len();
        if len_now == report.log_len_bytes {
            return Ok(report);
        }
    }
    Err(Error::LogChanged {
        path: path.to_path_buf(),
        offset_bytes: len_now,
        reason: format!(
            "the log grew during each of {ATTEMPTS_MAX} attempts to verify it (a writer is appending); try again when it is idle"
        ),
    })
}

/// Attempts at verifying a log that grows while it is verified.
pub const ATTEMPTS_MAX: usize = 3;

fn verify_once(path: &Path, full: bool, options: &SessionOptions) -> Result<Report> {
    let mut problems = Problems::default();
    let scan = scan_raw(path, &mut problems)?;
    let replay = Session::open(
        path,
        SessionOptions {
            use_index: false,
            ..options.clone()
        },
    )?;
    check_compactions(&replay, &scan, &mut problems)?;
    let indexed = Session::open(
        path,
        SessionOptions {
            verify: if full { Verify::Full } else { Verify::Quick },
            use_index: true,
            ..options.clone()
        },
    )?;
    compare_index(&indexed, &replay, &scan, &mut problems)?;
    // Comparing read the whole index: damage met on the way was rebuilt from the log (the
    // answers compared are the rebuilt index's), and is a problem found of its own.
    indexed.check_index()?;
    let index_state = indexed.index_state().clone();
    // Damage is reported alike whether the sidecar was rebuilt or, with index writes off, left
    // as it is (its reason says so).
    let damage = match &index_state {
        IndexState::Rebuilt {
            reason,
            damaged: true,
        } => Some(format!("index damaged ({reason}); rebuilt from the log")),
        IndexState::Unindexed {
            reason,
            damaged: true,
        } => Some(format!("index damaged ({reason})")),
        _ => None,
    };
    if let Some(message) = damage {
        problems.push(ProblemKind::IndexDamaged, None, None, message);
    }
    Ok(Report {
        problems: problems.finish(),
        index_state,
        line_count: scan.line_starts.len() as u64,
        entry_count: scan.entry_count,
        log_len_bytes: scan.log_len_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#;

    fn message(id: &str, parent: Option<&str>) -> String {
        let parent = parent.map_or("null".to_string(), |parent| format!("\"{parent}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
        )
    }

    /// Verifies a log made of `lines` and returns (kind, line) of each problem.
    fn problems(lines: &[String]) -> Vec<(ProblemKind, Option<u64>)> {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, format!("{}\n", lines.join("\n"))).expect("write log");
        verify_log(&path, true)
            .expect("verify runs")
            .problems
            .into_iter()
            .map(|problem| (problem.kind, problem.line))
            .collect()
    }

    /// A clean log has no problems.
    #[test]
    fn clean_log() {
        let lines = [
            HEADER.to_string(),
            message("a", None),
            message("b", Some("a")),
        ];
        assert_eq!(problems(&lines), vec![]);
    }

    /// Two entries naming each other as parents are a cycle (pi loops on it), reported once,
    /// besides the forward reference that makes one of them dangle.
    #[test]
    fn parent_cycle() {
        let lines = [
            HEADER.to_string(),
            message("a", Some("b")),
            message("b", Some("a")),
        ];
        assert_eq!(
            problems(&lines),
            vec![
                (ProblemKind::DanglingParent, Some(2)),
                (ProblemKind::Cycle, Some(2)),
            ]
        );
    }

    /// A compaction whose first kept entry is on another branch is reported at its line.
    #[test]
    fn compaction_first_kept_off_path() {
        let compaction = r#"{"type":"compaction","id":"c","parentId":"b","timestamp":"2025-01-01T00:00:02.000Z","summary":"s","firstKeptEntryId":"x","tokensBefore":1}"#;
        let lines = [
            HEADER.to_string(),
            message("a", None),
            message("x", Some("a")),
            message("b", Some("a")),
            compaction.to_string(),
        ];
        assert_eq!(
            problems(&lines),
            vec![(ProblemKind::CompactionFirstKept, Some(5))]
        );
    }

    /// An entry whose timestamp JavaScript cannot parse is reported.
    #[test]
    fn bad_timestamp() {
        let line = message("a", None).replace("2025-01-01T00:00:01.000Z", "yesterday");
        assert_eq!(
            problems(&[HEADER.to_string(), line]),
            vec![(ProblemKind::Timestamp, Some(2))]
        );
    }

    /// A missing header is reported at the first line; a blank line before it is no problem.
    #[test]
    fn missing_header() {
        let lines = [String::new(), message("a", None)];
        assert_eq!(problems(&lines), vec![(ProblemKind::Header, Some(2))]);
    }
}
