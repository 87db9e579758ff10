//! Differential tests against pi itself, on transcripts pi wrote through its own API
//! (tests/pi-diff/generate.mjs) and pi's answers for them (tests/pi-diff/oracle.mjs).
//!
//! Every `tests/data/<name>.jsonl` with a `<name>.oracle.json` beside it whose oracle answers
//! per leaf (`leaves`; or, in the older single-leaf form of pi16-sample-300, `contextEntries`)
//! is a vector. pi-sample-200's oracle has neither and is tested by tests/it/oracle.rs. For each
//! vector, treelog must give pi's header, leaf, name, entry count, labels and tree, and for
//! every leaf of the oracle pi's path, context (`buildSessionContext`), context entries
//! (`buildContextEntries`) and projection (`buildSessionProjection`). The oracle's messages
//! may be stored once in `messageTable` and referred to by index (tests/pi-diff/README.md).
//! Differences are collected over all vectors and leaves and reported together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use treelog::{IndexState, PiCompat, Session, SessionOptions};

/// Differences listed in a failure message; the total is always given.
const DIFFERENCES_SHOWN_MAX: usize = 25;
/// The vectors this test must find (a lost file must fail the test, not shrink it).
const VECTORS_MIN: usize = 4;

/// What pi answers for one leaf.
struct LeafOracle {
    leaf_id: String,
    path: Vec<String>,
    context: Value,
    /// pi 1.6.0 only.
    context_entries: Option<Vec<String>>,
    /// pi 1.6.0 only: `{entries: [{id, messages}], messages, thinkingLevel, model}`.
    projection: Option<Value>,
}

/// What one pi version answers for one transcript.
struct Oracle {
    header: Value,
    leaf_id: Value,
    session_name: Value,
    entry_count: u64,
    labels: Value,
    label_timestamps: Option<Value>,
    tree: Value,
    leaves: Vec<LeafOracle>,
}

struct Vector {
    name: String,
    log: PathBuf,
    /// pi 1.6.0's answers (for a transcript pi 0.73.1 wrote: 0.73.1's, which 1.6.0 shares).
    current: Oracle,
    /// pi 0.73.1's answers, when known.
    v0_73: Option<Oracle>,
    /// Each entry's line as parsed, by id (the last line with that id, as pi's `byId`).
    lines_by_id: BTreeMap<String, Value>,
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Replaces message references (integers indexing `messageTable`) by the messages.
fn resolve_messages(messages: &Value, table: &[Value]) -> Value {
    let items = messages.as_array().expect("messages are an array");
    Value::Array(
        items
            .iter()
            .map(|item| match item.as_u64() {
                Some(index) => table[index as usize].clone(),
                None => item.clone(),
            })
            .collect(),
    )
}

fn ids(value: &Value) -> Vec<String> {
    value
        .as_array()
        .expect("an array of ids")
        .iter()
        .map(|id| id.as_str().expect("an id").to_string())
        .collect()
}

/// Reads an oracle in either form; `None` for one without per-leaf answers (pi-sample-200).
fn parse_oracle(value: &Value) -> Option<Oracle> {
    let table: Vec<Value> = value["messageTable"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let leaves = if let Some(leaves) = value["leaves"].as_array() {
        leaves
            .iter()
            .map(|leaf| {
                let mut context = leaf["context"].clone();
                context["messages"] = resolve_messages(&context["messages"], &table);
                let projection = leaf.get("projection").map(|projection| {
                    let entries: Vec<Value> = projection["entries"]
                        .as_array()
                        .expect("projection entries")
                        .iter()
                        .map(|item| json!({"id": item["id"], "messages": resolve_messages(&item["messages"], &table)}))
                        .collect();
                    json!({
                        "entries": entries,
                        "messages": resolve_messages(&projection["messages"], &table),
                        "thinkingLevel": projection["thinkingLevel"],
                        "model": projection["model"],
                    })
                });
                LeafOracle {
                    leaf_id: leaf["leafId"].as_str().expect("leafId").to_string(),
                    path: ids(&leaf["path"]),
                    context,
                    context_entries: leaf.get("contextEntries").map(ids),
                    projection,
                }
            })
            .collect()
    } else if value.get("contextEntries").is_some() {
        // The single-leaf form: answers for the file's leaf only.
        vec![LeafOracle {
            leaf_id: value["leafId"].as_str().expect("leafId").to_string(),
            path: ids(&value["path"]),
            context: value["context"].clone(),
            context_entries: Some(ids(&value["contextEntries"])),
            projection: None,
        }]
    } else {
        return None;
    };
    Some(Oracle {
        header: value["header"].clone(),
        leaf_id: value["leafId"].clone(),
        session_name: value["sessionName"].clone(),
        entry_count: value["entryCount"].as_u64().expect("entryCount"),
        labels: value["labels"].clone(),
        label_timestamps: value.get("labelTimestamps").cloned(),
        tree: value["tree"].clone(),
        leaves,
    })
}

/// Every vector under tests/data, by name.
fn vectors() -> Vec<Vector> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    logs.sort();
    let mut vectors = Vec::new();
    for log in logs {
        let name = log.file_stem().unwrap().to_string_lossy().into_owned();
        let oracle_path = data_dir().join(format!("{name}.oracle.json"));
        if !oracle_path.exists() {
            continue;
        }
        let raw = read_json(&oracle_path);
        let Some(current) = parse_oracle(&raw) else {
            continue;
        };
        // A transcript pi 0.73.1 wrote has one oracle both versions agree on
        // ("pi": ["0.73.1", "1.6.0"]); one pi 1.6.0 wrote may have 0.73.1's beside it.
        let written_by_0_73 = raw["pi"]
            .as_array()
            .is_some_and(|versions| versions.iter().any(|v| v == "0.73.1"));
        let v0_73_path = data_dir().join(format!("{name}.oracle-0.73.json"));
        let v0_73 = if written_by_0_73 {
            parse_oracle(&raw)
        } else if v0_73_path.exists() {
            parse_oracle(&read_json(&v0_73_path))
        } else {
            None
        };
        let mut lines_by_id = BTreeMap::new();
        for line in std::fs::read_to_string(&log).expect("log").lines() {
            if let Ok(value) = serde_json::from_str::<Value>(line)
                && let Some(id) = value["id"].as_str()
                && value["type"] != "session"
            {
                lines_by_id.insert(id.to_string(), value.clone());
            }
        }
        vectors.push(Vector {
            name,
            log,
            current,
            v0_73,
            lines_by_id,
        });
    }
    assert!(
        vectors.len() >= VECTORS_MIN,
        "found {} vectors under tests/data, expected at least {VECTORS_MIN}",
        vectors.len()
    );
    vectors
}

/// Where `actual` first differs from `expected` (JSON path, both values shortened).
fn json_difference(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    match (expected, actual) {
        (Value::Array(e), Value::Array(a)) => {
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                if let Some(inner) = json_difference(e, a, &format!("{path}[{i}]")) {
                    return Some(inner);
                }
            }
            Some(format!(
                "{path}: pi has {} items, treelog {}",
                e.len(),
                a.len()
            ))
        }
        (Value::Object(e), Value::Object(a)) => {
            for key in e.keys().chain(a.keys()) {
                match (e.get(key), a.get(key)) {
                    (Some(ev), Some(av)) => {
                        if let Some(inner) = json_difference(ev, av, &format!("{path}.{key}")) {
                            return Some(inner);
                        }
                    }
                    (Some(ev), None) => {
                        return Some(format!("{path}.{key}: pi {} / treelog lacks it", short(ev)));
                    }
                    (None, Some(av)) => {
                        return Some(format!("{path}.{key}: pi lacks it / treelog {}", short(av)));
                    }
                    (None, None) => unreachable!(),
                }
            }
            Some(format!("{path}: differs"))
        }
        _ => Some(format!(
            "{path}: pi {} / treelog {}",
            short(expected),
            short(actual)
        )),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// Differences found so far, each prefixed with the vector and the way it was opened.
struct Report {
    differences: Vec<String>,
}

impl Report {
    fn new() -> Report {
        Report {
            differences: Vec::new(),
        }
    }

    fn check(&mut self, context: &str, what: &str, expected: &Value, actual: &Value) {
        if let Some(difference) = json_difference(expected, actual, what) {
            self.differences.push(format!("{context}: {difference}"));
        }
    }

    fn check_result<T>(
        &mut self,
        context: &str,
        what: &str,
        expected: &Value,
        actual: treelog::Result<T>,
        to_json: impl FnOnce(T) -> Value,
    ) {
        match actual {
            Ok(actual) => self.check(context, what, expected, &to_json(actual)),
            Err(error) => self
                .differences
                .push(format!("{context}: {what}: treelog failed: {error}")),
        }
    }

    fn finish(self, test: &str) {
        if self.differences.is_empty() {
            return;
        }
        let shown: Vec<&str> = self
            .differences
            .iter()
            .take(DIFFERENCES_SHOWN_MAX)
            .map(String::as_str)
            .collect();
        panic!(
            "{test}: {} difference(s) from pi; the first {}:\n  {}",
            self.differences.len(),
            shown.len(),
            shown.join("\n  ")
        );
    }
}

fn parse(context: &str, json: &str) -> Value {
    serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("{context}: treelog printed invalid JSON: {e}"))
}

/// Which answers to compare: pi 0.73.1 has no context entries and no projection.
#[derive(Clone, Copy, PartialEq)]
enum Answers {
    Current,
    V0_73,
}

/// Compares everything `session` answers with `oracle`, adding differences to `report`.
fn compare(
    report: &mut Report,
    label: &str,
    vector: &Vector,
    oracle: &Oracle,
    session: &Session,
    answers: Answers,
) {
    let header: Value = parse(label, &session.header().json);
    report.check(label, "header", &oracle.header, &header);
    report.check_result(
        label,
        "leafId",
        &oracle.leaf_id,
        session.leaf_id(),
        |leaf| json!(leaf),
    );
    report.check_result(
        label,
        "sessionName",
        &oracle.session_name,
        session.session_name(),
        |name| json!(name),
    );
    report.check_result(
        label,
        "entryCount",
        &json!(oracle.entry_count),
        session.entry_count(),
        |count| json!(count),
    );
    match session.labels() {
        Ok(labels) => {
            let mut by_target = Map::new();
            let mut timestamps = Map::new();
            for (target, label_text, timestamp) in labels {
                by_target.insert(target.clone(), Value::String(label_text));
                timestamps.insert(target, Value::String(timestamp));
            }
            report.check(label, "labels", &oracle.labels, &Value::Object(by_target));
            if let Some(expected) = &oracle.label_timestamps {
                report.check(
                    label,
                    "labelTimestamps",
                    expected,
                    &Value::Object(timestamps),
                );
            }
        }
        Err(error) => report
            .differences
            .push(format!("{label}: labels: treelog failed: {error}")),
    }
    let tree: treelog::Result<Vec<Value>> = session.tree().and_then(|walk| {
        walk.map(|node| {
            node.map(|node| {
                json!({"id": node.id, "parentId": node.parent_id, "depth": node.depth, "label": node.label, "labelTimestamp": node.label_timestamp})
            })
        })
        .collect()
    });
    report.check_result(label, "tree", &oracle.tree, tree, Value::Array);

    for leaf in &oracle.leaves {
        let at = format!("{label} leaf {}", leaf.leaf_id);
        let id = Some(leaf.leaf_id.as_str());
        report.check_result(
            &at,
            "path",
            &json!(leaf.path),
            session.path_ids(id),
            |path| json!(path),
        );
        report.check_result(
            &at,
            "context",
            &leaf.context,
            session.build_context(id),
            |context| parse(&at, &context.to_json()),
        );
        if answers == Answers::V0_73 {
            continue;
        }
        if let Some(expected) = &leaf.context_entries {
            report.check_result(
                &at,
                "contextEntries",
                &json!(expected),
                session.context_entries(id),
                |entries| {
                    json!(
                        entries
                            .into_iter()
                            .map(|entry| entry.id)
                            .collect::<Vec<_>>()
                    )
                },
            );
        }
        if let Some(expected) = &leaf.projection {
            match session.build_projection(id) {
                Ok(projection) => compare_projection(
                    report,
                    &at,
                    vector,
                    expected,
                    &parse(&at, &projection.to_json()),
                ),
                Err(error) => report
                    .differences
                    .push(format!("{at}: projection: treelog failed: {error}")),
            }
        }
    }
}

/// A projection: the ids of the source entries and their messages, the flattened messages,
/// the settings; and each `sourceEntry` is the entry's line as stored.
fn compare_projection(
    report: &mut Report,
    at: &str,
    vector: &Vector,
    expected: &Value,
    actual: &Value,
) {
    let empty = Vec::new();
    let actual_entries = actual["entries"].as_array().unwrap_or(&empty);
    let reduced: Vec<Value> = actual_entries
        .iter()
        .map(|item| json!({"id": item["sourceEntry"]["id"], "messages": item["messages"]}))
        .collect();
    report.check(
        at,
        "projection.entries",
        &expected["entries"],
        &Value::Array(reduced),
    );
    for (i, item) in actual_entries.iter().enumerate() {
        let source = &item["sourceEntry"];
        if let Some(line) = source["id"]
            .as_str()
            .and_then(|id| vector.lines_by_id.get(id))
        {
            report.check(
                at,
                &format!("projection.entries[{i}].sourceEntry"),
                line,
                source,
            );
        }
    }
    for key in ["messages", "thinkingLevel", "model"] {
        report.check(
            at,
            &format!("projection.{key}"),
            &expected[key],
            &actual[key],
        );
    }
}

/// A private copy of a vector's log in a temp dir (no sidecar yet), so that opens write their
/// sidecar there.
fn fresh_copy(vector: &Vector) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(format!("{}.jsonl", vector.name));
    std::fs::copy(&vector.log, &path).expect("copy log");
    (dir, path)
}

fn options(pi_compat: PiCompat, use_index: bool) -> SessionOptions {
    SessionOptions {
        pi_compat,
        use_index,
        ..SessionOptions::default()
    }
}

/// A cold open (no sidecar: the open builds the index) answers as pi 1.6.0 does, for every
/// leaf, and leaves the log's bytes as they were.
#[test]
fn cold_open_matches_pi() {
    let mut report = Report::new();
    for vector in vectors() {
        let (_dir, path) = fresh_copy(&vector);
        let before = std::fs::read(&path).unwrap();
        let session = Session::open(&path, options(PiCompat::Current, true)).unwrap();
        let label = format!("{} [cold]", vector.name);
        if !matches!(session.index_state(), IndexState::Rebuilt { .. }) {
            report.differences.push(format!(
                "{label}: index state {:?}, expected a build",
                session.index_state()
            ));
        }
        compare(
            &mut report,
            &label,
            &vector,
            &vector.current,
            &session,
            Answers::Current,
        );
        drop(session);
        if std::fs::read(&path).unwrap() != before {
            report
                .differences
                .push(format!("{label}: opening changed the log"));
        }
    }
    report.finish("cold_open_matches_pi");
}

/// A warm open (the index the cold open built, found fresh) answers as pi 1.6.0 does, and so
/// does one that finds an index built under the 0.73 compatibility mode.
#[test]
fn warm_open_matches_pi() {
    let mut report = Report::new();
    for vector in vectors() {
        let (_dir, path) = fresh_copy(&vector);
        drop(Session::open(&path, options(PiCompat::Current, true)).unwrap());
        let session = Session::open(&path, options(PiCompat::Current, true)).unwrap();
        let label = format!("{} [warm]", vector.name);
        if session.index_state() != &IndexState::Fresh {
            report.differences.push(format!(
                "{label}: index state {:?}, expected fresh",
                session.index_state()
            ));
        }
        compare(
            &mut report,
            &label,
            &vector,
            &vector.current,
            &session,
            Answers::Current,
        );

        let (_dir, path) = fresh_copy(&vector);
        drop(Session::open(&path, options(PiCompat::V0_73, true)).unwrap());
        let session = Session::open(&path, options(PiCompat::Current, true)).unwrap();
        let label = format!("{} [warm, index built by a 0.73 open]", vector.name);
        compare(
            &mut report,
            &label,
            &vector,
            &vector.current,
            &session,
            Answers::Current,
        );
    }
    report.finish("warm_open_matches_pi");
}

/// Without an index (the log replayed into memory, as pi reads it) the answers are pi 1.6.0's.
#[test]
fn unindexed_open_matches_pi() {
    let mut report = Report::new();
    for vector in vectors() {
        let (_dir, path) = fresh_copy(&vector);
        let session = Session::open(&path, options(PiCompat::Current, false)).unwrap();
        let label = format!("{} [no index]", vector.name);
        compare(
            &mut report,
            &label,
            &vector,
            &vector.current,
            &session,
            Answers::Current,
        );
    }
    report.finish("unindexed_open_matches_pi");
}

/// With `PiCompat::V0_73` treelog answers as pi 0.73.1 does on the same file, cold, warm and
/// without an index (for files pi 1.6.0 wrote, 0.73.1 ignores context edits and compaction
/// system messages, and keeps the new entry types as plain tree nodes).
#[test]
fn v0_73_compat_matches_pi_0_73() {
    let mut report = Report::new();
    let mut checked = 0;
    for vector in vectors() {
        let Some(oracle) = &vector.v0_73 else {
            continue;
        };
        checked += 1;
        let (_dir, path) = fresh_copy(&vector);
        for (mode, use_index) in [("cold", true), ("warm", true), ("no index", false)] {
            let session = Session::open(&path, options(PiCompat::V0_73, use_index)).unwrap();
            let label = format!("{} [0.73, {mode}]", vector.name);
            compare(
                &mut report,
                &label,
                &vector,
                oracle,
                &session,
                Answers::V0_73,
            );
        }
    }
    assert!(
        checked >= 2,
        "only {checked} vectors have pi 0.73.1's answers"
    );
    report.finish("v0_73_compat_matches_pi_0_73");
}
