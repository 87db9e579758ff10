//! `treelog verify` for a log on an object store: the segments listed and checked (layout,
//! lengths), the log's bytes checked as a local log is (read into a private temporary
//! directory with a throwaway index there, [`PrivateTempDir`]), and the cached index checked
//! against the log on the store.

use std::io::Write;
use std::sync::Arc;

use super::address::S3Address;
use super::error::{ObjectStoreError, Result};
use super::remote::{Remote, connect};
use super::transfer::{open_session_on, verify_layout_into};
use crate::fs_safe::PrivateTempDir;
use crate::verify::{Problem, ProblemKind, Report, verify_log_with};
use crate::{IndexState, SessionOptions, Verify};

/// Verifies the log at `address` as [`crate::verify::verify_log_with`] verifies a file; its
/// `index_state` is the cached index's (where `options` say), checked against the store with
/// a full check when `full`. A layout error (a missing, overlapping or foreign object) is an
/// error, not a problem: the log cannot be read.
pub fn verify(address: &S3Address, full: bool, options: &SessionOptions) -> Result<Report> {
    verify_on(connect(address)?, address, full, options)
}

/// [`verify`] over `remote`. The log is streamed to the temporary copy: memory stays within a
/// few reads, whatever its size.
pub fn verify_on(
    remote: Arc<Remote>,
    address: &S3Address,
    full: bool,
    options: &SessionOptions,
) -> Result<Report> {
    let temp = PrivateTempDir::new("s3-verify").map_err(|source| ObjectStoreError::Io {
        path: std::env::temp_dir(),
        operation: "create a temporary directory",
        source,
    })?;
    let dir = temp.path().to_path_buf();
    let io = |operation: &'static str, source| ObjectStoreError::Io {
        path: dir.clone(),
        operation,
        source,
    };
    let file_name = address.key.rsplit('/').next().unwrap_or("log.jsonl");
    let local = dir.join(file_name);
    let checked = std::fs::File::create(&local)
        .map_err(|e| io("write the log read from the store", e))
        .and_then(|file| {
            let mut out = std::io::BufWriter::new(file);
            verify_layout_into(remote.clone(), address, &mut out, &local)?;
            out.flush()
                .map_err(|e| io("write the log read from the store", e))
        })
        .and_then(|()| {
            let local_options = SessionOptions {
                index_dir: Some(dir.join("index")),
                index_write: true,
                ..options.clone()
            };
            Ok(verify_log_with(&local, full, &local_options)?)
        });
    drop(temp);
    let mut report = checked?;
    let session = open_session_on(
        remote,
        address,
        SessionOptions {
            verify: if full { Verify::Full } else { Verify::Quick },
            use_index: true,
            ..options.clone()
        },
    )?;
    session.check_index()?;
    let index_state = session.index_state().clone();
    let damage = match &index_state {
        IndexState::Rebuilt {
            reason,
            damaged: true,
        } => Some(format!(
            "cached index damaged ({reason}); rebuilt from the log"
        )),
        IndexState::Unindexed {
            reason,
            damaged: true,
        } => Some(format!("cached index damaged ({reason})")),
        _ => None,
    };
    report
        .problems
        .retain(|problem| problem.kind != ProblemKind::IndexDamaged);
    if let Some(message) = damage {
        report.problems.push(Problem {
            kind: ProblemKind::IndexDamaged,
            line: None,
            offset_bytes: None,
            message,
        });
    }
    report.index_state = index_state;
    Ok(report)
}
