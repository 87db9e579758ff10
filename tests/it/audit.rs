//! `Session::audit` against sessions that pi's own compaction code wrote
//! (`tests/data/audit/`, written by `tests/pi-diff/audit_fixtures.mjs` through pi 1.6.0, 0.73.1
//! and 0.63.0): what left the context at each compaction and branch summary is what that pi's
//! `buildSessionContext` shows before and not after, and what the audit calls summarized is
//! what that pi's summarizer was given. pi 0.63.0, the last pi before the fix of
//! `prepareCompaction`'s range, leaves holes that the audit reports as at risk; the fixed pis
//! leave none.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use treelog::audit::{AuditEvent, AuditScope, EventKind, LeftClass};
use treelog::{Session, SessionOptions};

fn fixture(name: &str) -> (tempfile::TempDir, PathBuf, Value) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/audit");
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join(format!("{name}.jsonl"));
    std::fs::copy(data.join(format!("{name}.jsonl")), &log).expect("copy the fixture");
    let expect = std::fs::read_to_string(data.join(format!("{name}.expect.json")))
        .expect("the fixture's expectations");
    (
        dir,
        log,
        serde_json::from_str(&expect).expect("expectations are JSON"),
    )
}

fn ids(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .expect("an id list")
        .iter()
        .map(|id| id.as_str().expect("an id").to_string())
        .collect()
}

fn class_ids(event: &AuditEvent, class: LeftClass) -> BTreeSet<String> {
    event
        .left
        .iter()
        .filter(|entry| entry.class == class)
        .map(|entry| entry.id.clone())
        .collect()
}

/// Checks the audit of fixture `name` against pi's answers; returns the at-risk ids per event.
fn check(name: &str) -> Vec<BTreeSet<String>> {
    let (_dir, log, expect) = fixture(name);
    let session = Session::open(&log, SessionOptions::default()).expect("open");
    let audit = session.audit(AuditScope::AllBranches).expect("audit");
    let expected = expect["events"].as_array().expect("events");
    assert_eq!(
        audit.events.len(),
        expected.len(),
        "{name}: one event per summary"
    );
    let mut at_risk = Vec::new();
    for (event, wanted) in audit.events.iter().zip(expected) {
        let label = format!("{name} {}", wanted["label"]);
        assert_eq!(event.id, wanted["id"].as_str().unwrap(), "{label}: id");
        let kind = match wanted["kind"].as_str() {
            Some("compaction") => EventKind::Compaction,
            _ => EventKind::BranchSummary,
        };
        assert_eq!(event.kind, kind, "{label}: kind");
        let after = ids(&wanted["after"]);
        let left: BTreeSet<String> = ids(&wanted["before"]).difference(&after).cloned().collect();
        let audited: BTreeSet<String> = event.left.iter().map(|entry| entry.id.clone()).collect();
        assert_eq!(audited, left, "{label}: what left pi's context");
        let given = ids(&wanted["given"]);
        let summarized = class_ids(event, LeftClass::Summarized);
        let risked = class_ids(event, LeftClass::AtRisk);
        if name == "pi063" {
            // The old range: what 0.63.0 summarized is exactly the audit's summarized class,
            // and the rest of what left is at risk.
            assert_eq!(
                summarized, given,
                "{label}: summarized is what 0.63.0 was given"
            );
            let hole: BTreeSet<String> = left.difference(&given).cloned().collect();
            assert_eq!(risked, hole, "{label}: at risk is what 0.63.0 dropped");
        } else {
            // The fixed range: summarized and at risk together are what the fixed pi was given.
            let fixed: BTreeSet<String> = summarized.union(&risked).cloned().collect();
            assert_eq!(
                fixed, given,
                "{label}: the fixed range is what pi was given"
            );
        }
        assert!(
            class_ids(event, LeftClass::Dropped).is_empty(),
            "{label}: nothing outside both ranges"
        );
        at_risk.push(class_ids(event, LeftClass::AtRisk));
    }
    at_risk
}

/// pi 1.6.0's compactions and branch summary: everything that left was given to a summarizer;
/// the previous compaction's kept entries are at risk (an older pi would have dropped them),
/// and the compactions are stamped after the fix's release.
#[test]
fn pi16_compactions_lose_nothing() {
    let at_risk = check("pi16");
    assert_eq!(
        at_risk.iter().map(BTreeSet::len).collect::<Vec<_>>(),
        [0, 4, 0, 4]
    );
    let (_dir, log, _) = fixture("pi16");
    let session = Session::open(&log, SessionOptions::default()).expect("open");
    let audit = session.audit(AuditScope::ActivePath).expect("audit");
    assert!(
        audit
            .events
            .iter()
            .all(|event| event.before_fix == Some(false))
    );
}

/// pi 0.73.1 (after the fix; it names the new position as a branch summary's `fromId`): the
/// same.
#[test]
fn pi073_compactions_lose_nothing() {
    let at_risk = check("pi073");
    assert_eq!(
        at_risk.iter().map(BTreeSet::len).collect::<Vec<_>>(),
        [0, 4, 0, 4]
    );
}

/// pi 0.63.0: at its second and third compactions the previous compaction's kept messages
/// left the context without reaching the summarizer; the audit finds each of them, at risk, and
/// the compactions are stamped before the fix's release.
#[test]
fn pi063_second_compaction_leaves_a_hole() {
    let at_risk = check("pi063");
    let counts: Vec<usize> = at_risk.iter().map(BTreeSet::len).collect();
    assert_eq!(counts, [0, 4, 0, 4], "at risk per event");
    let (_dir, log, _) = fixture("pi063");
    let session = Session::open(&log, SessionOptions::default()).expect("open");
    let audit = session.audit(AuditScope::ActivePath).expect("audit");
    assert_eq!(audit.lost_count(), 8);
    for event in &audit.events {
        if event.kind == EventKind::Compaction {
            assert_eq!(event.before_fix, Some(true), "stamped in March 2026");
        }
    }
}

/// The active path holds the compactions and the branch summary; a branch left behind without
/// a summary adds no event to it.
#[test]
fn active_path_scope_skips_abandoned_branches() {
    let (_dir, log, _) = fixture("pi16");
    let mut session = Session::open(&log, SessionOptions::default()).expect("open");
    let all = session.audit(AuditScope::AllBranches).expect("audit");
    assert!(all.events.iter().all(|event| event.on_active_path));
    // Move the leaf above the last compaction: it leaves the active path.
    let last = all.events.last().expect("an event").id.clone();
    let parent = session
        .entry(&last)
        .expect("read")
        .and_then(|entry| entry.tree_parent_id)
        .expect("a parent");
    session.branch(&parent).expect("branch");
    let active = session.audit(AuditScope::ActivePath).expect("audit");
    assert_eq!(active.events.len(), all.events.len() - 1);
    assert!(active.events.iter().all(|event| event.id != last));
}

/// pi 1.6 leaves system messages out of a compaction's kept range and the compaction carries
/// them: on pi 1.6's generated vectors (compactions after system messages, several per branch,
/// one reaching back over an older one) nothing is dropped, and a system message is never
/// counted as left at a compaction.
#[test]
fn pi16_vectors_drop_nothing() {
    for name in ["pi16-gen-a", "pi16-gen-b", "pi16-sample-300"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join(format!("{name}.jsonl"));
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        std::fs::copy(data.join(format!("{name}.jsonl")), &log).expect("copy");
        let session = Session::open(&log, SessionOptions::default()).expect("open");
        let audit = session.audit(AuditScope::AllBranches).expect("audit");
        assert!(audit.events.len() >= 4, "{name}: compactions and summaries");
        for event in &audit.events {
            assert!(
                class_ids(event, LeftClass::Dropped).is_empty(),
                "{name}: {} dropped {:?}",
                event.id,
                event.left
            );
            if event.kind == EventKind::Compaction {
                assert!(event.left.iter().all(|entry| entry.role != "system"));
            }
        }
    }
}
