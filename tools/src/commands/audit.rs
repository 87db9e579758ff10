//! `treelog audit`: what each compaction and branch summary took out of the context, and
//! whether a summarizer was given it (the library's `treelog::audit` decides; this prints).

use std::path::PathBuf;

use serde_json::{Value, json};
use treelog::audit::{Audit, AuditEvent, AuditScope, EventKind, FIX_DATE, FIX_VERSION, LeftClass};

use super::human_bytes;
use crate::exit::{CliError, print_error};
use crate::files::{Found, Log, collect_logs, nothing_found};
use crate::out::Out;

/// Find what the agent forgot: the messages each compaction let go unsummarized.
///
/// For each compaction on the active branch (every branch with --all-branches): the entries
/// that were in the context just before it and are not after it, classed by the range a
/// summarizer was given. summarized: inside the range every pi gives (from after the previous
/// compaction to the first kept entry). at risk: inside the range pi >= 0.63.1 gives (from the
/// previous compaction's first kept entry) but not the one older pis gave: lost without a trace
/// if an older pi made the compaction (pi's fix came out on 2026-03-27; each compaction's
/// timestamp is shown against it). dropped: inside neither. The same for branch summaries
/// (left by /tree with a summary), whose summarizer is given the old branch below the branch
/// point. `treelog export FILE --dropped` writes the at-risk and dropped messages back out.
///
/// Exit codes: 0 nothing at risk or dropped, 1 something is, 2 a file could not be audited.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Session logs (.jsonl), directories to search for *.jsonl, s3://BUCKET/KEY logs, or
    /// OpenClaw sessions: openclaw://[STATE_DIR#]AGENT/SESSION_ID.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Audit every compaction and branch summary of the session, not only those on the
    /// active branch.
    #[arg(long)]
    pub all_branches: bool,
    /// Print one JSON object per session: {"path", "events": [{"kind" (compaction or
    /// branch_summary), "id", "timestamp", "beforeFix" (stamped on or before the fix's
    /// release day), "onActivePath", "beforeLeaf", "oldLeafInferred", "counts"
    /// {"summarized"|"atRisk"|"dropped": {"entries", "bytes"}}, "left": [{"id", "type",
    /// "role", "bytes", "class"}]}], "atRisk", "dropped"}; a session that could not be
    /// audited is {"path", "kind": "failed", "message"}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let found = logs(&args.paths);
    if found.is_empty() {
        crate::terminal::eprint_line(&nothing_found(&args.paths));
        return Ok(());
    }
    let scope = if args.all_branches {
        AuditScope::AllBranches
    } else {
        AuditScope::ActivePath
    };
    let (mut lost, mut failed) = (0, 0);
    for found in found {
        let result = found.and_then(|log| {
            let session = super::open_default(&log.path)?;
            Ok((log, session.audit(scope)?))
        });
        match result {
            Ok((log, audit)) => {
                lost += audit.lost_count();
                if args.json {
                    out.line(&to_json(&log.path, &audit).to_string())?;
                } else {
                    print_human(&log.path, &audit, out)?;
                }
            }
            Err(error) => {
                failed += 1;
                if args.json {
                    let line = json!({"path": error.path().map(|path| path.display().to_string()),
                        "kind": "failed", "message": error.to_string()});
                    out.line(&line.to_string())?;
                } else {
                    print_error(&error);
                }
            }
        }
    }
    if failed > 0 {
        return Err(CliError::SomeFailed { count: failed });
    }
    if lost > 0 {
        return Err(CliError::ProblemsFound { count: lost });
    }
    Ok(())
}

/// The logs named: as `collect_logs` finds them, OpenClaw addresses passed through.
fn logs(paths: &[PathBuf]) -> Vec<Found> {
    let mut found = Vec::new();
    for path in paths {
        if path
            .to_str()
            .is_some_and(|text| text.starts_with("openclaw://"))
        {
            found.push(Ok(Log {
                path: path.clone(),
                bytes: 0,
            }));
        } else {
            found.extend(super::foreign::refuse_found(collect_logs(
                std::slice::from_ref(path),
            )));
        }
    }
    found
}

fn class_counts(event: &AuditEvent) -> Value {
    let tally = |class| {
        let (entries, bytes) = event.tally(class);
        json!({"entries": entries, "bytes": bytes})
    };
    json!({
        "summarized": tally(LeftClass::Summarized),
        "atRisk": tally(LeftClass::AtRisk),
        "dropped": tally(LeftClass::Dropped),
    })
}

fn to_json(path: &std::path::Path, audit: &Audit) -> Value {
    let events: Vec<Value> = audit
        .events
        .iter()
        .map(|event| {
            let left: Vec<Value> = event
                .left
                .iter()
                .map(|entry| {
                    json!({"id": entry.id, "type": entry.kind.as_str(), "role": entry.role,
                        "bytes": entry.bytes, "class": entry.class.as_str()})
                })
                .collect();
            json!({
                "kind": event.kind.as_str(),
                "id": event.id,
                "timestamp": event.timestamp,
                "beforeFix": event.before_fix,
                "onActivePath": event.on_active_path,
                "beforeLeaf": event.before_leaf,
                "oldLeafInferred": event.old_leaf_inferred,
                "counts": class_counts(event),
                "left": left,
            })
        })
        .collect();
    let count = |class| {
        audit
            .lost()
            .filter(|(_, entry)| entry.class == class)
            .count()
    };
    json!({
        "path": path.display().to_string(),
        "events": events,
        "atRisk": count(LeftClass::AtRisk),
        "dropped": count(LeftClass::Dropped),
    })
}

fn print_human(path: &std::path::Path, audit: &Audit, out: &mut Out) -> Result<(), CliError> {
    out.line(&path.display().to_string())?;
    if audit.events.is_empty() {
        out.line("  no compaction or branch summary")?;
    }
    for event in &audit.events {
        let mut parts = Vec::new();
        for (class, name) in [
            (LeftClass::Summarized, "summarized"),
            (LeftClass::AtRisk, "at risk"),
            (LeftClass::Dropped, "dropped"),
        ] {
            let (entries, bytes) = event.tally(class);
            if entries > 0 {
                parts.push(format!("{entries} {name} ({})", human_bytes(bytes)));
            }
        }
        let stamp = event.timestamp.as_deref().unwrap_or("no timestamp");
        let left = if parts.is_empty() {
            "nothing left the context".to_string()
        } else {
            format!("{} left: {}", event.left.len(), parts.join(", "))
        };
        let off_path = if event.on_active_path {
            ""
        } else {
            " [other branch]"
        };
        out.line(&format!(
            "  {} {} {stamp}{off_path}: {left}",
            event.kind.as_str(),
            event.id
        ))?;
        if event.tally(LeftClass::AtRisk).0 > 0 {
            out.line(&format!("    {}", risk_note(event)))?;
        }
        if event.kind == EventKind::BranchSummary
            && event.old_leaf_inferred
            && !event.left.is_empty()
        {
            out.line(
                "    (the old leaf is the entry before the summary: this pi did not record it)",
            )?;
        }
        for entry in &event.left {
            if entry.class != LeftClass::Summarized {
                out.line(&format!(
                    "    {:<8} {}  {:<13} {}",
                    match entry.class {
                        LeftClass::AtRisk => "at risk",
                        _ => "dropped",
                    },
                    entry.id,
                    entry.role,
                    human_bytes(entry.bytes)
                ))?;
            }
        }
    }
    let (at_risk, dropped) =
        audit
            .lost()
            .fold((0, 0), |(risk, drop), (_, entry)| match entry.class {
                LeftClass::AtRisk => (risk + 1, drop),
                _ => (risk, drop + 1),
            });
    if at_risk + dropped > 0 {
        out.line(&format!(
            "  {at_risk} at risk, {dropped} dropped: `treelog export {} --dropped` writes them out",
            path.display()
        ))?;
    }
    Ok(())
}

/// What an at-risk entry means for this compaction, by its timestamp.
fn risk_note(event: &AuditEvent) -> String {
    match event.before_fix {
        Some(true) => format!(
            "made on or before {FIX_DATE}, when pi {FIX_VERSION} fixed the range: at risk = \
             likely dropped (neither kept nor summarized) if pi < {FIX_VERSION} made it"
        ),
        Some(false) => format!(
            "made after pi {FIX_VERSION} ({FIX_DATE}): at risk = dropped only if a pi older \
             than {FIX_VERSION} made it"
        ),
        None => format!("no timestamp: at risk = dropped if a pi older than {FIX_VERSION} made it"),
    }
}
