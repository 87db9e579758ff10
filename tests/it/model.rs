//! Model test of the session API: random sequences of appends, branches, reopens, lost
//! sidecars, appends by "other processes" written straight to the file (as pi writes them, with
//! no lock), torn writes and unknown lines. After every step the live handle and a freshly
//! opened session must give exactly the answers of a naive reference model, which re-reads the
//! log line by line with `serde_json::Value` and applies the rules of format-spec/log.md and
//! pi's `buildSessionContext`. The model uses nothing of treelog but its public API.

use std::collections::{BTreeMap, HashMap};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::{Map, Value, json};
use treelog::{Error, OnConflict, Session, SessionOptions, Verify, sidecar_path};

// ---------------------------------------------------------------------------------------------
// The reference model: a pure function of the log's bytes.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct ModelEntry {
    id: String,
    kind: String,
    value: Map<String, Value>,
    line: String,
    offset: usize,
    /// Tree parent: an index into `Model::entries`.
    parent: Option<usize>,
    depth: u32,
    timestamp: String,
    timestamp_ms: Option<i64>,
}

#[derive(Clone, Copy, Debug)]
enum IdTarget {
    Entry(usize),
    /// A parent-linked opaque record, standing for the entry its own parent resolved to.
    Opaque(Option<usize>),
}

#[derive(Clone, Debug, Default)]
struct Model {
    header_id: Option<String>,
    /// A line that is JSON was read: it decided the header (`header_id` when it is one).
    decided: bool,
    recovered: bool,
    entries: Vec<ModelEntry>,
    ids: HashMap<String, IdTarget>,
    log_leaf: Option<usize>,
    labels: BTreeMap<String, (String, String)>,
    name: Option<String>,
    opaque_offsets: Vec<usize>,
    /// End of the last complete line (the last `\n`).
    complete_len: usize,
    /// End of the lines read: `complete_len`, or `file_len` when the bytes after the last
    /// `\n` are a line without its `\n` (not blank, whole JSON: log.md §1, as pi reads them).
    read_len: usize,
    file_len: usize,
}

/// Epoch milliseconds of `YYYY-MM-DDTHH:mm:ss.sssZ` (the only form the test writes), else
/// `None` (JavaScript's NaN).
fn iso_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 24 || &text[4..5] != "-" || &text[7..8] != "-" || &text[10..11] != "T" {
        return None;
    }
    if &text[13..14] != ":" || &text[16..17] != ":" || &text[19..20] != "." || &text[23..] != "Z" {
        return None;
    }
    let n = |r: std::ops::Range<usize>| text[r].parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, s, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
    // Howard Hinnant's days_from_civil.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((((days * 24 + h) * 60 + mi) * 60 + s) * 1000 + ms)
}

/// The order V8's `Array.prototype.sort` gives a list sorted with pi's comparator
/// (`new Date(a).getTime() - new Date(b).getTime()`, NaN read as 0), `None` standing for NaN.
/// Written here from V8's rules for lists under 64 items (one natural run, reversed when
/// strictly descending, then binary insertion: `< 0` goes left, anything else right); longer
/// lists with NaN, which the model's logs never grow, use treelog's full TimSort.
fn js_sort_order(keys: &[Option<i64>]) -> Vec<usize> {
    let less = |a: usize, b: usize| matches!((keys[a], keys[b]), (Some(a), Some(b)) if a < b);
    let mut order: Vec<usize> = (0..keys.len()).collect();
    if keys.iter().all(Option::is_some) {
        order.sort_by_key(|index| keys[*index]);
        return order;
    }
    if keys.len() >= 64 {
        return treelog::format::js_sort::v8_sort_order(keys.len(), |a, b| {
            treelog::format::js_sort::compare_timestamps(keys[a], keys[b])
        });
    }
    if keys.len() < 2 {
        return order;
    }
    let descending = less(1, 0);
    let mut run = 2;
    while run < keys.len() && less(run, run - 1) == descending {
        run += 1;
    }
    if descending {
        order[..run].reverse();
    }
    for start in run..keys.len() {
        let pivot = order[start];
        let (mut left, mut right) = (0, start);
        while left < right {
            let middle = (left + right) / 2;
            if less(pivot, order[middle]) {
                right = middle;
            } else {
                left = middle + 1;
            }
        }
        order[left..=start].rotate_right(1);
    }
    order
}

impl Model {
    fn parse(bytes: &[u8]) -> Model {
        let complete_len = bytes
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |at| at + 1);
        let tail = &bytes[complete_len..];
        let read_len = if serde_json::from_slice::<Value>(tail).is_ok() {
            bytes.len()
        } else {
            complete_len
        };
        let mut model = Model {
            complete_len,
            read_len,
            file_len: bytes.len(),
            ..Model::default()
        };
        let mut first = true;
        let mut offset = 0;
        while offset < read_len {
            let end = bytes[offset..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(read_len, |at| offset + at);
            let text = String::from_utf8_lossy(&bytes[offset..end]).into_owned();
            if !text.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                // The first line that is JSON decides the header (log.md §2).
                let json = serde_json::from_str::<Value>(&text).is_ok();
                model.line(offset, text, first);
                if json {
                    first = false;
                    model.decided = true;
                }
            }
            offset = end + 1;
        }
        // A log with bytes but no header line (only blank lines, a torn one, or no header).
        model.recovered = model.header_id.is_none() && !bytes.is_empty();
        model
    }

    fn resolve_id(&self, id: &str) -> Option<usize> {
        match self.ids.get(id)? {
            IdTarget::Entry(index) => Some(*index),
            IdTarget::Opaque(parent) => *parent,
        }
    }

    fn line(&mut self, offset: usize, text: String, first: bool) {
        let value: Option<Value> = serde_json::from_str(&text).ok();
        let object = value.and_then(|value| match value {
            Value::Object(object) => Some(object),
            _ => None,
        });
        if first
            && let Some(object) = &object
            && object.get("type") == Some(&json!("session"))
            && let Some(id) = object.get("id").and_then(Value::as_str)
        {
            self.header_id = Some(id.to_string());
            return;
        }
        let Some(object) = object else {
            self.opaque_offsets.push(offset);
            return;
        };
        let kind = object
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string);
        // Every string type is an entry's (as pi reads it), but a misplaced header and
        // OpenClaw's leaf control row.
        let known = kind
            .as_deref()
            .is_some_and(|kind| kind != "session" && kind != "leaf");
        let id = object
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_string);
        let parent = match object.get("parentId") {
            None => self.log_leaf,
            Some(Value::String(parent)) => self.resolve_id(parent),
            Some(_) => None,
        };
        let (Some(kind), true, Some(id)) = (kind.clone(), known, id.clone()) else {
            // Opaque. A canonical type without an id carries none; others stay parent-linked.
            if kind.as_deref() == Some("leaf")
                && let Some(target) = object.get("targetId").and_then(Value::as_str)
                && self.ids.contains_key(target)
            {
                self.log_leaf = self.resolve_id(target);
            }
            if !known
                && let Some(id) = id
                && !self.ids.contains_key(&id)
            {
                self.ids.insert(id, IdTarget::Opaque(parent));
            }
            self.opaque_offsets.push(offset);
            return;
        };
        let index = self.entries.len();
        let timestamp = object
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        match kind.as_str() {
            "label" => {
                if let Some(target) = object.get("targetId").and_then(Value::as_str) {
                    match object
                        .get("label")
                        .and_then(Value::as_str)
                        .filter(|label| !label.is_empty())
                    {
                        Some(label) => {
                            self.labels
                                .insert(target.into(), (label.into(), timestamp.clone()));
                        }
                        None => {
                            self.labels.remove(target);
                        }
                    }
                }
            }
            "session_info" => {
                self.name = object
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|name| !name.is_empty())
                    .map(str::to_string);
            }
            _ => {}
        }
        if object.get("appendMode") != Some(&json!("side")) {
            self.log_leaf = Some(index);
        }
        self.ids.insert(id.clone(), IdTarget::Entry(index));
        self.entries.push(ModelEntry {
            id,
            kind,
            timestamp_ms: iso_ms(&timestamp),
            timestamp,
            value: object,
            line: text,
            offset,
            parent,
            depth: parent.map_or(0, |parent| self.entries[parent].depth + 1),
        });
    }

    fn id(&self, index: Option<usize>) -> Option<String> {
        index.map(|index| self.entries[index].id.clone())
    }

    /// Root first.
    fn path(&self, leaf: Option<usize>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = leaf;
        while let Some(index) = at {
            path.push(index);
            at = self.entries[index].parent;
        }
        path.reverse();
        path
    }

    fn sorted_children(&self, parent: Option<usize>) -> Vec<usize> {
        let mut kids: Vec<usize> = (0..self.entries.len())
            .filter(|index| self.entries[*index].parent == parent)
            .collect();
        // pi's getTree: roots in file order, children by timestamp (stable).
        if parent.is_some() {
            let keys: Vec<Option<i64>> = kids
                .iter()
                .map(|index| self.entries[*index].timestamp_ms)
                .collect();
            kids = js_sort_order(&keys)
                .into_iter()
                .map(|at| kids[at])
                .collect();
        }
        kids
    }

    /// `(id, tree parent id, depth, label, label timestamp)` in depth-first pre-order.
    fn tree(&self) -> Vec<TreeRow> {
        let mut rows = Vec::new();
        let mut stack: Vec<usize> = self.sorted_children(None);
        stack.reverse();
        while let Some(index) = stack.pop() {
            let entry = &self.entries[index];
            let label = self.labels.get(&entry.id);
            rows.push((
                entry.id.clone(),
                self.id(entry.parent),
                entry.depth,
                label.map(|label| label.0.clone()),
                label.map(|label| label.1.clone()),
            ));
            let mut kids = self.sorted_children(Some(index));
            kids.reverse();
            stack.extend(kids);
        }
        rows
    }

    /// pi's `buildSessionContext`, literally.
    fn context(&self, leaf: Option<usize>) -> Value {
        let path = self.path(leaf);
        let mut thinking = json!("off");
        let mut model = Value::Null;
        let mut compaction = None;
        for (position, index) in path.iter().enumerate() {
            let entry = &self.entries[*index];
            let v = &entry.value;
            match entry.kind.as_str() {
                "thinking_level_change" => {
                    thinking = v.get("thinkingLevel").cloned().unwrap_or(Value::Null)
                }
                "model_change" => model = provider_model(v.get("provider"), v.get("modelId")),
                "message" if v["message"]["role"] == "assistant" => {
                    model = provider_model(v["message"].get("provider"), v["message"].get("model"))
                }
                "compaction" => compaction = Some(position),
                _ => {}
            }
        }
        let mut messages = Vec::new();
        match compaction {
            Some(at) => {
                let c = &self.entries[path[at]];
                let mut summary = Map::new();
                summary.insert("role".into(), json!("compactionSummary"));
                summary.insert("summary".into(), c.value["summary"].clone());
                if let Some(tokens) = c.value.get("tokensBefore") {
                    summary.insert("tokensBefore".into(), tokens.clone());
                }
                summary.insert("timestamp".into(), json!(c.timestamp_ms));
                messages.push(Value::Object(summary));
                let mut found = false;
                for index in &path[..at] {
                    if Some(self.entries[*index].id.as_str())
                        == c.value.get("firstKeptEntryId").and_then(Value::as_str)
                    {
                        found = true;
                    }
                    if found {
                        messages.extend(self.message(*index));
                    }
                }
                for index in &path[at + 1..] {
                    messages.extend(self.message(*index));
                }
            }
            None => {
                for index in &path {
                    messages.extend(self.message(*index));
                }
            }
        }
        json!({"messages": messages, "thinkingLevel": thinking, "model": model})
    }

    fn message(&self, index: usize) -> Option<Value> {
        let entry = &self.entries[index];
        let v = &entry.value;
        let mut out = Map::new();
        match entry.kind.as_str() {
            "message" => return v.get("message").cloned(),
            "custom_message" => {
                out.insert("role".into(), json!("custom"));
                for key in ["customType", "content", "display", "details"] {
                    if let Some(value) = v.get(key) {
                        out.insert(key.into(), value.clone());
                    }
                }
            }
            "branch_summary" => {
                let summary = v.get("summary")?;
                if matches!(summary, Value::Null | Value::Bool(false))
                    || summary == &json!("")
                    || summary == &json!(0)
                {
                    return None;
                }
                out.insert("role".into(), json!("branchSummary"));
                out.insert("summary".into(), summary.clone());
                if let Some(from) = v.get("fromId") {
                    out.insert("fromId".into(), from.clone());
                }
            }
            _ => return None,
        }
        out.insert("timestamp".into(), json!(entry.timestamp_ms));
        Some(Value::Object(out))
    }
}

type TreeRow = (String, Option<String>, u32, Option<String>, Option<String>);

fn provider_model(provider: Option<&Value>, model_id: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(provider) = provider {
        out.insert("provider".into(), provider.clone());
    }
    if let Some(model_id) = model_id {
        out.insert("modelId".into(), model_id.clone());
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// Comparing a session with the model.
// ---------------------------------------------------------------------------------------------

/// Every answer of `session` (whose leaf should be `leaf`) equals the model's.
fn check_session(what: &str, session: &mut Session, model: &Model, leaf: Option<usize>) {
    let ids = |indexes: Vec<usize>| -> Vec<String> {
        indexes
            .into_iter()
            .map(|index| model.entries[index].id.clone())
            .collect()
    };
    assert_eq!(session.leaf_id().unwrap(), model.id(leaf), "{what}: leaf");
    assert_eq!(
        session.log_leaf_id().unwrap(),
        model.id(model.log_leaf),
        "{what}: log leaf"
    );
    assert_eq!(
        session.path_ids(None).unwrap(),
        ids(model.path(leaf)),
        "{what}: path"
    );
    let context: Value =
        serde_json::from_str(&session.build_context(None).unwrap().to_json()).unwrap();
    assert_eq!(
        serde_json::to_string(&context).unwrap(),
        serde_json::to_string(&model.context(leaf)).unwrap(),
        "{what}: context"
    );
    let tree: Vec<TreeRow> = session
        .tree()
        .unwrap()
        .map(|node| {
            let node = node.unwrap();
            (
                node.id,
                node.parent_id,
                node.depth,
                node.label,
                node.label_timestamp,
            )
        })
        .collect();
    assert_eq!(tree, model.tree(), "{what}: tree");
    let labels: Vec<(String, String, String)> = model
        .labels
        .iter()
        .map(|(target, (label, ts))| (target.clone(), label.clone(), ts.clone()))
        .collect();
    assert_eq!(session.labels().unwrap(), labels, "{what}: labels");
    assert_eq!(session.session_name().unwrap(), model.name, "{what}: name");
    let entries: Vec<_> = session
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let type_name = entry.type_name().into_owned();
            (
                entry.id,
                type_name,
                entry.parent_id,
                entry.tree_parent_id,
                entry.depth,
                entry.timestamp,
                entry.offset_bytes,
                entry.json,
            )
        })
        .collect();
    let expected: Vec<_> = model
        .entries
        .iter()
        .map(|entry| {
            (
                entry.id.clone(),
                entry.kind.clone(),
                entry
                    .value
                    .get("parentId")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                model.id(entry.parent),
                entry.depth,
                entry.timestamp.clone(),
                entry.offset as u64,
                entry.line.clone(),
            )
        })
        .collect();
    assert_eq!(entries, expected, "{what}: entries");
    let opaque: Vec<u64> = session
        .opaque_records()
        .unwrap()
        .into_iter()
        .map(|record| record.offset_bytes)
        .collect();
    let expected_opaque: Vec<u64> = model.opaque_offsets.iter().map(|at| *at as u64).collect();
    assert_eq!(opaque, expected_opaque, "{what}: opaque records");
    for (index, entry) in model.entries.iter().enumerate() {
        let kids: Vec<String> = session
            .children(&entry.id)
            .unwrap()
            .into_iter()
            .map(|child| child.id)
            .collect();
        assert_eq!(
            kids,
            ids(model.sorted_children(Some(index))),
            "{what}: children of {}",
            entry.id
        );
        let got = session
            .entry(&entry.id)
            .unwrap()
            .map(|entry| entry.offset_bytes);
        assert_eq!(got, Some(entry.offset as u64), "{what}: entry {}", entry.id);
        if let Some(leaf) = leaf {
            let on_path = model.path(Some(leaf)).contains(&index);
            assert_eq!(
                session
                    .is_ancestor(&entry.id, &model.entries[leaf].id)
                    .unwrap(),
                on_path,
                "{what}: is_ancestor({}, leaf)",
                entry.id
            );
            let leaf_path = model.path(Some(leaf));
            let common = model
                .path(Some(index))
                .into_iter()
                .zip(leaf_path)
                .take_while(|(a, b)| a == b)
                .last()
                .map(|(a, _)| a);
            assert_eq!(
                session
                    .common_ancestor(&entry.id, &model.entries[leaf].id)
                    .unwrap(),
                model.id(common),
                "{what}: common_ancestor({}, leaf)",
                entry.id
            );
        }
    }
    assert!(session.entry("no-such-id").unwrap().is_none());
    let stats = session.stats().unwrap();
    assert_eq!(
        (stats.entry_count, stats.opaque_count),
        (
            model.entries.len() as u64,
            model.opaque_offsets.len() as u64
        ),
        "{what}: counts"
    );
}

// ---------------------------------------------------------------------------------------------
// Operations.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum FirstKept {
    OnPath(usize),
    Any(usize),
    Missing,
}

#[derive(Clone, Debug)]
enum ParentChoice {
    Entry(usize),
    Opaque(usize),
    Null,
    Absent,
    Dangling,
}

#[derive(Clone, Copy, Debug)]
enum After {
    Nothing,
    Refresh,
    Reopen,
}

/// How a line written without its `\n` is ended.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// The other process writes the `\n`.
    Newline,
    /// The other process appends its next line without a separator (pi 0.73.1): one invalid
    /// line of both. The handle then refreshes, or (`true`) appends without a refresh.
    Glued(bool),
    /// The handle appends, which writes the `\n` first.
    HandleAppends,
}

#[derive(Clone, Debug)]
enum Foreign {
    /// An entry of a type treelog does not know, with an id and a parent.
    UnknownType(ParentChoice),
    /// An OpenClaw `leaf` row naming some id.
    LeafRow(ParentChoice, usize),
    /// A line that is not an entry at all.
    Garbage(usize),
}

#[derive(Clone, Debug)]
enum Op {
    User(usize),
    Assistant(usize, usize),
    Thinking(usize),
    ModelChange(usize, usize),
    Compaction(FirstKept, u32),
    BranchSummary(Option<usize>, usize),
    Custom(bool),
    CustomMessage(bool, bool),
    Label(usize, Option<usize>),
    SessionInfo(usize),
    Branch(usize),
    ResetLeaf,
    Refresh,
    Reopen(bool),
    DeleteSidecar,
    Sync,
    /// Another process appends a message: parent, timestamp, kind (0 user, 1 assistant,
    /// 2 an OpenClaw `appendMode:"side"` assistant row), then what the handle does.
    ExternalAppend(ParentChoice, usize, u8, After),
    ExternalForeign(Foreign, After),
    /// Another process writes a message line without its `\n` (parent), then the handle does
    /// what `After` says, then the line is ended as [`Ending`] says.
    ExternalUnterminated(ParentChoice, Ending, After),
    TornThenAppend(u8),
    Batch(u8),
}

const TEXTS: [&str; 5] = [
    "hi",
    "naïve \"quoted\" \\ back\tslash",
    "",
    "emoji 🦀 and \u{2028} separator",
    "x",
];
const PROVIDERS: [&str; 3] = ["anthropic", "openai", "p\"q"];
const MODELS: [&str; 3] = ["claude", "gpt", "m/1"];
const LEVELS: [&str; 4] = ["off", "low", "high", "xhigh"];
const NAMES: [&str; 4] = ["  my session  ", "", "second", "  "];
const LABELS: [&str; 3] = ["checkpoint", "", "bookmark ✓"];
/// Timestamps for lines written by other processes: in the past, far future, invalid.
const TIMESTAMPS: [&str; 4] = [
    "2025-01-01T00:00:00.000Z",
    "2099-12-31T23:59:59.999Z",
    "not a date",
    "2025-01-01T00:00:00.000Z",
];
const GARBAGE: [&str; 7] = [
    "not json at all",
    "[1,2,3]",
    r#"{"type":"message","parentId":null}"#,
    r#"{"type":"session","version":3,"id":"another-header"}"#,
    "   \t ",
    r#"{"no":"type"}"#,
    "\"just a string\"\r",
];

fn parent_choice() -> impl Strategy<Value = ParentChoice> {
    prop_oneof![
        6 => any::<usize>().prop_map(ParentChoice::Entry),
        1 => any::<usize>().prop_map(ParentChoice::Opaque),
        1 => Just(ParentChoice::Null),
        1 => Just(ParentChoice::Absent),
        1 => Just(ParentChoice::Dangling),
    ]
}

fn after() -> impl Strategy<Value = After> {
    prop_oneof![
        Just(After::Nothing),
        Just(After::Refresh),
        Just(After::Reopen)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let first_kept = prop_oneof![
        3 => any::<usize>().prop_map(FirstKept::OnPath),
        1 => any::<usize>().prop_map(FirstKept::Any),
        1 => Just(FirstKept::Missing),
    ];
    let foreign = prop_oneof![
        parent_choice().prop_map(Foreign::UnknownType),
        (parent_choice(), any::<usize>()).prop_map(|(p, t)| Foreign::LeafRow(p, t)),
        any::<usize>().prop_map(Foreign::Garbage),
    ];
    prop_oneof![
        8 => any::<usize>().prop_map(Op::User),
        6 => (any::<usize>(), any::<usize>()).prop_map(|(p, m)| Op::Assistant(p, m)),
        1 => any::<usize>().prop_map(Op::Thinking),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(p, m)| Op::ModelChange(p, m)),
        2 => (first_kept, any::<u32>()).prop_map(|(f, t)| Op::Compaction(f, t)),
        1 => (proptest::option::of(any::<usize>()), any::<usize>())
            .prop_map(|(f, s)| Op::BranchSummary(f, s)),
        1 => any::<bool>().prop_map(Op::Custom),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(d, e)| Op::CustomMessage(d, e)),
        2 => (any::<usize>(), proptest::option::of(any::<usize>()))
            .prop_map(|(t, l)| Op::Label(t, l)),
        1 => any::<usize>().prop_map(Op::SessionInfo),
        3 => any::<usize>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        1 => Just(Op::Refresh),
        2 => any::<bool>().prop_map(Op::Reopen),
        1 => Just(Op::DeleteSidecar),
        1 => Just(Op::Sync),
        4 => (parent_choice(), any::<usize>(), 0u8..3, after())
            .prop_map(|(p, t, a, w)| Op::ExternalAppend(p, t, a, w)),
        2 => (foreign, after()).prop_map(|(f, w)| Op::ExternalForeign(f, w)),
        2 => (
            parent_choice(),
            prop_oneof![
                Just(Ending::Newline),
                any::<bool>().prop_map(Ending::Glued),
                Just(Ending::HandleAppends)
            ],
            after()
        )
            .prop_map(|(p, e, w)| Op::ExternalUnterminated(p, e, w)),
        1 => (1u8..100).prop_map(Op::TornThenAppend),
        1 => (0u8..4).prop_map(Op::Batch),
    ]
}

/// The type of a written line, then its keys in order with their expected values.
type LineExpectation = (&'static str, Vec<(&'static str, Option<Value>)>);

/// One API call that appends, with what the written line must hold.
#[derive(Clone, Debug)]
enum Call {
    Message(String),
    Thinking(String),
    ModelChange(String, String),
    Compaction(String, String, String),
    BranchSummary(Option<String>, String),
    Custom(Option<String>),
    CustomMessage(String, bool, Option<String>),
    Label(String, Option<String>),
    SessionInfo(String),
    /// `append_many`: messages appended as one chain, in one write.
    Batch(Vec<String>),
}

impl Call {
    fn run(&self, session: &mut Session) -> treelog::Result<Vec<String>> {
        if let Call::Batch(messages) = self {
            let entries = messages
                .iter()
                .map(|message| treelog::NewEntry::Message {
                    message: serde_json::value::RawValue::from_string(message.clone()).unwrap(),
                })
                .collect();
            return session.append_many(entries);
        }
        let id =
            match self {
                Call::Message(message) => session.append_message(message),
                Call::Thinking(level) => session.append_thinking_level_change(level),
                Call::ModelChange(provider, model) => session.append_model_change(provider, model),
                Call::Compaction(summary, first_kept, tokens) => {
                    session.append_compaction(summary, Some(first_kept), tokens, None, None, None)
                }
                Call::BranchSummary(from, summary) => session.branch_with_summary(
                    from.as_deref(),
                    summary,
                    Some(r#"{"f":[1]}"#),
                    None,
                    None,
                ),
                Call::Custom(data) => session.append_custom_entry("ext.state", data.as_deref()),
                Call::CustomMessage(content, display, details) => session
                    .append_custom_message_entry("ext.note", content, *display, details.as_deref()),
                Call::Label(target, label) => session.append_label_change(target, label.as_deref()),
                Call::SessionInfo(name) => session.append_session_info(name),
                Call::Batch(_) => unreachable!("handled above"),
            };
        id.map(|id| vec![id])
    }

    /// What each written line must hold (see [`Call::expected`]).
    fn expected_lines(&self) -> Vec<LineExpectation> {
        match self {
            Call::Batch(messages) => messages
                .iter()
                .map(|message| Call::Message(message.clone()).expected())
                .collect(),
            call => vec![call.expected()],
        }
    }

    /// The type, then every key of the written line in order with its expected value
    /// (`None`: any value; the base keys are checked separately).
    fn expected(&self) -> LineExpectation {
        let base = |rest: Vec<(&'static str, Option<Value>)>| {
            let mut keys = vec![("id", None), ("parentId", None), ("timestamp", None)];
            keys.extend(rest);
            keys
        };
        let parse = |json: &str| Some(serde_json::from_str::<Value>(json).unwrap());
        match self {
            Call::Message(message) => ("message", base(vec![("message", parse(message))])),
            Call::Thinking(level) => (
                "thinking_level_change",
                base(vec![("thinkingLevel", Some(json!(level)))]),
            ),
            Call::ModelChange(provider, model) => (
                "model_change",
                base(vec![
                    ("provider", Some(json!(provider))),
                    ("modelId", Some(json!(model))),
                ]),
            ),
            Call::Compaction(summary, first_kept, tokens) => (
                "compaction",
                base(vec![
                    ("summary", Some(json!(summary))),
                    ("firstKeptEntryId", Some(json!(first_kept))),
                    ("tokensBefore", parse(tokens)),
                ]),
            ),
            Call::BranchSummary(_, summary) => (
                "branch_summary",
                base(vec![
                    // The leaf being left, which only the step knows (it fills this in).
                    ("fromId", None),
                    ("summary", Some(json!(summary))),
                    ("details", Some(json!({"f": [1]}))),
                ]),
            ),
            Call::Custom(data) => {
                let mut keys = vec![("customType", Some(json!("ext.state")))];
                if let Some(data) = data {
                    keys.push(("data", parse(data)));
                }
                keys.extend([("id", None), ("parentId", None), ("timestamp", None)]);
                ("custom", keys)
            }
            Call::CustomMessage(content, display, details) => {
                let mut keys = vec![
                    ("customType", Some(json!("ext.note"))),
                    ("content", parse(content)),
                    ("display", Some(json!(display))),
                ];
                if let Some(details) = details {
                    keys.push(("details", parse(details)));
                }
                keys.extend([("id", None), ("parentId", None), ("timestamp", None)]);
                ("custom_message", keys)
            }
            Call::Label(target, label) => {
                let mut keys = vec![("targetId", Some(json!(target)))];
                if let Some(label) = label.as_deref().filter(|label| !label.is_empty()) {
                    keys.push(("label", Some(json!(label))));
                }
                ("label", base(keys))
            }
            Call::Batch(_) => unreachable!("a batch has one expectation per line"),
            Call::SessionInfo(name) => (
                "session_info",
                base(vec![("name", Some(json!(name.trim())))]),
            ),
        }
    }
}

/// What this handle has seen of the log, in model terms.
struct HandleModel {
    leaf: Option<usize>,
    /// The log prefix this handle has indexed (complete lines).
    seen_len: usize,
    /// The prefix the conflict rule compares against: `seen_len`, except after a conflict,
    /// which stays (a retry checks the same lines) until `refresh` or an append succeeds.
    base_len: usize,
    /// Opened on an empty log: its first append writes the header if the log is still empty.
    header_pending: bool,
}

struct Harness {
    _dir: tempfile::TempDir,
    path: PathBuf,
    options: SessionOptions,
    session: Option<Session>,
    handle: HandleModel,
    next_foreign_id: u32,
}

/// A private directory, in memory where the machine has one: redb commits fsync, and the test
/// is about answers, not durability.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

/// Whether `bytes` hold a line that is JSON (complete or not): the line that decides the
/// header (log.md §2).
fn has_first_line(bytes: &[u8]) -> bool {
    bytes
        .split(|byte| *byte == b'\n')
        .any(|line| serde_json::from_str::<Value>(&String::from_utf8_lossy(line)).is_ok())
}

fn is_entry_id(id: &str) -> bool {
    (id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))) || id.len() == 36
}

impl Harness {
    fn new(on_conflict: OnConflict) -> Harness {
        let dir = scratch_dir();
        let options = SessionOptions {
            on_conflict,
            ..SessionOptions::default()
        };
        let session = Session::create(dir.path(), "/work/project", options.clone()).unwrap();
        Harness {
            path: session.log_path().to_path_buf(),
            _dir: dir,
            options,
            session: Some(session),
            handle: HandleModel {
                leaf: None,
                seen_len: 0,
                base_len: 0,
                header_pending: true,
            },
            next_foreign_id: 0,
        }
    }

    fn session(&mut self) -> &mut Session {
        self.session.as_mut().unwrap()
    }

    fn now(&self) -> Model {
        Model::parse(&read(&self.path))
    }

    fn view(&self) -> Model {
        Model::parse(&read(&self.path)[..self.handle.seen_len])
    }

    fn foreign_id(&mut self, prefix: char) -> String {
        self.next_foreign_id += 1;
        if self.next_foreign_id.is_multiple_of(5) {
            // Full uuids, as OpenClaw's gateway writes them.
            format!(
                "{prefix}0000000-0000-4000-8000-{:012x}",
                self.next_foreign_id
            )
        } else {
            format!("{prefix}{:07x}", self.next_foreign_id)
        }
    }

    fn reopen(&mut self, use_index: bool) {
        self.session = None;
        let options = SessionOptions {
            use_index,
            ..self.options.clone()
        };
        self.session = Some(Session::open(&self.path, options).unwrap());
        let now = self.now();
        self.handle = HandleModel {
            leaf: now.log_leaf,
            seen_len: now.read_len,
            base_len: now.read_len,
            header_pending: now.file_len == 0,
        };
    }

    /// The model of the prefix the conflict rule compares against.
    fn base(&self) -> Model {
        Model::parse(&read(&self.path)[..self.handle.base_len])
    }

    /// The handle's leaf once it has caught up with `now`: an entry it had read that is no
    /// longer one (a line read without its `\n`, onto which another writer then glued bytes)
    /// gives way to the log's leaf.
    fn leaf_after_catch_up(&self, view: &Model, now: &Model) -> Option<usize> {
        match self.handle.leaf {
            Some(index)
                if now.entries.get(index).map(|entry| entry.offset)
                    != Some(view.entries[index].offset) =>
            {
                now.log_leaf
            }
            leaf => leaf,
        }
    }

    fn refresh(&mut self) {
        let base = self.base();
        let now = self.now();
        self.handle.leaf = self.leaf_after_catch_up(&self.view(), &now);
        self.session().refresh().unwrap();
        if self.handle.leaf == base.log_leaf {
            self.handle.leaf = now.log_leaf;
        }
        self.handle.seen_len = now.read_len;
        self.handle.base_len = now.read_len;
        self.handle.header_pending &= now.file_len == 0;
    }

    fn after(&mut self, after: After) {
        match after {
            After::Nothing => {}
            After::Refresh => self.refresh(),
            After::Reopen => self.reopen(true),
        }
    }

    fn parent_value(&self, model: &Model, choice: &ParentChoice) -> Option<Value> {
        let opaque_ids: Vec<&String> = {
            let mut ids: Vec<&String> = model
                .ids
                .iter()
                .filter(|(_, target)| matches!(target, IdTarget::Opaque(_)))
                .map(|(id, _)| id)
                .collect();
            ids.sort();
            ids
        };
        match choice {
            ParentChoice::Entry(pick) if !model.entries.is_empty() => {
                Some(json!(model.entries[pick % model.entries.len()].id))
            }
            ParentChoice::Opaque(pick) if !opaque_ids.is_empty() => {
                Some(json!(opaque_ids[pick % opaque_ids.len()]))
            }
            ParentChoice::Absent => None,
            ParentChoice::Dangling => Some(json!("dangling")),
            _ => Some(Value::Null),
        }
    }

    /// A message line in pi's format as another process writes it (without `\n`): parent,
    /// timestamp, kind (0 user, 1 assistant, 2 an OpenClaw `appendMode:"side"` assistant row).
    fn external_message(
        &mut self,
        now: &Model,
        parent: &ParentChoice,
        timestamp: usize,
        kind: u8,
    ) -> String {
        let id = self.foreign_id('x');
        let mut line = Map::new();
        line.insert("type".into(), json!("message"));
        line.insert("id".into(), json!(id));
        if let Some(parent) = self.parent_value(now, parent) {
            line.insert("parentId".into(), parent);
        }
        line.insert(
            "timestamp".into(),
            json!(TIMESTAMPS[timestamp % TIMESTAMPS.len()]),
        );
        if kind == 2 {
            line.insert("appendMode".into(), json!("side"));
        }
        let message = if kind > 0 {
            json!({"role": "assistant", "content": [], "provider": "ext", "model": "ext-model", "timestamp": 3})
        } else {
            json!({"role": "user", "content": format!("external {id}"), "timestamp": 2})
        };
        line.insert("message".into(), message);
        Value::Object(line).to_string()
    }

    /// Runs one appending call and checks the outcome and the written bytes against the model.
    fn api(&mut self, call: Call) {
        let before = read(&self.path);
        let view = self.view();
        let now = Model::parse(&before);
        let canonical = |id: &str| {
            matches!(view.ids.get(id), Some(IdTarget::Entry(_))).then(|| view.resolve_id(id))
        };
        if let Call::Label(target, _) = &call
            && canonical(target).is_none()
        {
            let result = call.run(self.session());
            assert!(
                matches!(result, Err(Error::EntryNotFound { .. })),
                "{result:?}"
            );
            assert_eq!(read(&self.path), before);
            return;
        }
        // pi 1.6's `fromId`: the handle's leaf before the summary moves it.
        let left_leaf = view.id(self.handle.leaf);
        if let Call::BranchSummary(from, _) = &call {
            match from {
                Some(from) => match canonical(from) {
                    Some(index) => self.handle.leaf = index,
                    None => {
                        let result = call.run(self.session());
                        assert!(
                            matches!(result, Err(Error::EntryNotFound { .. })),
                            "{result:?}"
                        );
                        assert_eq!(read(&self.path), before);
                        return;
                    }
                },
                None => self.handle.leaf = None,
            }
        }
        // The conflict rule and following the log's leaf.
        let base = self.base();
        self.handle.leaf = self.leaf_after_catch_up(&view, &now);
        let conflict = now
            .entries
            .iter()
            .filter(|entry| entry.offset >= self.handle.base_len)
            .any(|entry| entry.parent == self.handle.leaf);
        if conflict {
            if self.options.on_conflict == OnConflict::Fail {
                let result = call.run(self.session());
                assert!(matches!(result, Err(Error::Conflict { .. })), "{result:?}");
                assert_eq!(read(&self.path), before, "a conflict writes nothing");
                self.handle.seen_len = now.read_len;
                self.handle.header_pending &= before.is_empty();
                return;
            }
            self.handle.leaf = now.log_leaf;
        } else if self.handle.leaf == base.log_leaf {
            self.handle.leaf = now.log_leaf;
        }
        if now.decided && now.header_id.is_none() {
            // No header pi reads first: pi would not read the entry, so nothing is written.
            let result = call.run(self.session());
            assert!(
                matches!(result, Err(Error::AppendRefused { .. })),
                "{result:?}"
            );
            assert_eq!(read(&self.path), before, "a refused append writes nothing");
            // Unlike a conflict, a refusal leaves no base behind: the next append checks only
            // the lines written after this one.
            self.handle.seen_len = now.read_len;
            self.handle.base_len = now.read_len;
            self.handle.header_pending = false;
            return;
        }
        let ids = call.run(self.session()).unwrap();
        assert!(ids.iter().all(|id| is_entry_id(id)), "{ids:?}");
        let after = read(&self.path);
        assert!(
            after.starts_with(&before),
            "appends never change earlier bytes"
        );
        let mut written = &after[before.len()..];
        if now.complete_len < before.len() {
            assert_eq!(written.first(), Some(&b'\n'), "a torn tail is ended first");
            written = &written[1..];
        }
        let text = std::str::from_utf8(written).unwrap();
        let mut lines: Vec<&str> = text.strip_suffix('\n').unwrap().split('\n').collect();
        // A log without a line that is JSON gets the handle's header, after the `\n` that
        // ends a torn line (log.md §2: the header is never lost).
        if !now.decided {
            let header: Map<String, Value> = serde_json::from_str(lines.remove(0)).unwrap();
            let keys: Vec<&str> = header.keys().map(String::as_str).collect();
            assert_eq!(keys, ["type", "version", "id", "timestamp", "cwd"]);
            assert_eq!(header["type"], "session");
            assert_eq!(header["version"], 3);
            assert_eq!(header["id"], self.session.as_ref().unwrap().session_id());
        }
        let mut expected_lines = call.expected_lines();
        if let Call::BranchSummary(..) = &call {
            for (key, value) in &mut expected_lines[0].1 {
                if *key == "fromId" {
                    *value = Some(json!(left_leaf.as_deref().unwrap_or("root")));
                }
            }
        }
        assert_eq!(
            lines.len(),
            expected_lines.len(),
            "one line per entry: {text:?}"
        );
        assert_eq!(ids.len(), expected_lines.len());
        let mut parent = now.id(self.handle.leaf).map_or(Value::Null, Value::String);
        for ((line, (kind, expected)), id) in lines.iter().zip(expected_lines).zip(&ids) {
            let line: Map<String, Value> = serde_json::from_str(line).unwrap();
            let mut keys = vec!["type"];
            keys.extend(expected.iter().map(|(key, _)| *key));
            assert_eq!(line.keys().map(String::as_str).collect::<Vec<_>>(), keys);
            assert_eq!(line["type"], kind);
            for (key, value) in expected {
                if let Some(value) = value {
                    assert_eq!(line[key], value, "{key}");
                }
            }
            assert_eq!(line["id"], id.as_str());
            assert_eq!(
                line["parentId"], parent,
                "each entry is the child of the one before"
            );
            assert!(iso_ms(line["timestamp"].as_str().unwrap()).is_some());
            parent = Value::String(id.clone());
        }
        let after_model = Model::parse(&after);
        let last = after_model.entries.len() - 1;
        assert_eq!(&after_model.entries[last].id, ids.last().unwrap());
        self.handle = HandleModel {
            leaf: Some(last),
            seen_len: after_model.read_len,
            base_len: after_model.read_len,
            header_pending: false,
        };
    }

    fn apply(&mut self, op: &Op) {
        let now = self.now();
        let view = self.view();
        let pick = |pick: usize, from: &[usize]| from.get(pick % from.len().max(1)).copied();
        let all: Vec<usize> = (0..now.entries.len()).collect();
        match op {
            Op::User(text) => {
                let message = if text % 7 == 3 {
                    // Line breaks between tokens are JSON whitespace.
                    "{\n  \"role\": \"user\",\n  \"content\": \"multi\",\n  \"timestamp\": 5\n}"
                        .to_string()
                } else {
                    json!({"role": "user", "content": TEXTS[text % TEXTS.len()], "timestamp": 1_700_000_000_000u64 + *text as u64 % 1000}).to_string()
                };
                self.api(Call::Message(message));
            }
            Op::Assistant(provider, model) => {
                let mut message = json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "x", "provider": PROVIDERS[provider % 3], "model": MODELS[model % 3], "stopReason": "stop", "timestamp": 1_700_000_000_001u64});
                if model % 5 == 4 {
                    message.as_object_mut().unwrap().remove("model");
                }
                self.api(Call::Message(message.to_string()));
            }
            Op::Thinking(level) => self.api(Call::Thinking(LEVELS[level % 4].into())),
            Op::ModelChange(provider, model) => self.api(Call::ModelChange(
                PROVIDERS[provider % 3].into(),
                MODELS[model % 3].into(),
            )),
            Op::Compaction(first_kept, tokens) => {
                let path = view.path(self.handle.leaf);
                let first = match first_kept {
                    FirstKept::OnPath(p) => pick(*p, &path),
                    FirstKept::Any(p) => pick(*p, &all),
                    FirstKept::Missing => None,
                };
                let first = now.id(first).unwrap_or_else(|| "nothere0".into());
                self.api(Call::Compaction(
                    format!("summary {tokens}"),
                    first,
                    tokens.to_string(),
                ));
            }
            Op::BranchSummary(from, summary) => {
                let from = from.and_then(|p| pick(p, &all));
                let summary = ["", "went elsewhere"][summary % 2];
                self.api(Call::BranchSummary(now.id(from), summary.into()));
            }
            Op::Custom(with_data) => self.api(Call::Custom(
                with_data.then(|| r#"{"k":[1,{"v":null}]}"#.into()),
            )),
            Op::CustomMessage(display, with_details) => self.api(Call::CustomMessage(
                r#"[{"type":"text","text":"note"}]"#.into(),
                *display,
                with_details.then(|| r#"{"d":1.5}"#.into()),
            )),
            Op::Label(target, label) => {
                let Some(target) = pick(*target, &all) else {
                    return;
                };
                self.api(Call::Label(
                    now.entries[target].id.clone(),
                    label.map(|l| LABELS[l % LABELS.len()].to_string()),
                ));
            }
            Op::SessionInfo(name) => self.api(Call::SessionInfo(NAMES[name % NAMES.len()].into())),
            Op::Branch(target) => {
                let Some(target) = pick(*target, &all) else {
                    return;
                };
                let id = now.entries[target].id.clone();
                let result = self.session().branch(&id);
                if target < view.entries.len() {
                    result.unwrap();
                    self.handle.leaf = Some(target);
                } else {
                    assert!(
                        matches!(result, Err(Error::EntryNotFound { .. })),
                        "{result:?}"
                    );
                }
            }
            Op::ResetLeaf => {
                self.session().reset_leaf();
                self.handle.leaf = None;
            }
            Op::Refresh => self.refresh(),
            Op::Reopen(use_index) => self.reopen(*use_index),
            Op::DeleteSidecar => match std::fs::remove_file(sidecar_path(&self.path)) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => panic!("{error}"),
            },
            Op::Sync => self.session().sync().unwrap(),
            Op::ExternalAppend(parent, timestamp, kind, after) => {
                let line = self.external_message(&now, parent, *timestamp, *kind);
                append_raw(&self.path, format!("{line}\n").as_bytes());
                self.after(*after);
            }
            Op::ExternalUnterminated(parent, ending, after) => {
                // A line without its `\n` (a write cut just before it, or still under way) is
                // read as a line all the same when it is whole JSON (log.md §1).
                let line = self.external_message(&now, parent, 0, 0);
                append_raw(&self.path, line.as_bytes());
                self.after(*after);
                match ending {
                    Ending::Newline => append_raw(&self.path, b"\n"),
                    Ending::Glued(then_append) => {
                        let now = self.now();
                        let glued = self.external_message(&now, &ParentChoice::Entry(0), 0, 1);
                        append_raw(&self.path, format!("{glued}\n").as_bytes());
                        self.check("after a line glued onto the last one", Fresh::None);
                        if *then_append {
                            self.api(Call::Message(
                                json!({"role": "user", "content": "after glued", "timestamp": 7})
                                    .to_string(),
                            ));
                        } else {
                            self.refresh();
                        }
                    }
                    Ending::HandleAppends => {
                        self.api(Call::Message(
                            json!({"role": "user", "content": "after unterminated", "timestamp": 6})
                                .to_string(),
                        ));
                        // A conflict wrote nothing: the other process ends its line.
                        if !read(&self.path).ends_with(b"\n") {
                            append_raw(&self.path, b"\n");
                        }
                    }
                }
            }
            Op::ExternalForeign(foreign, after) => {
                let line = match foreign {
                    Foreign::UnknownType(parent) => {
                        let mut line = Map::new();
                        line.insert("type".into(), json!("future_kind"));
                        line.insert("id".into(), json!(self.foreign_id('o')));
                        if let Some(parent) = self.parent_value(&now, parent) {
                            line.insert("parentId".into(), parent);
                        }
                        line.insert("timestamp".into(), json!(TIMESTAMPS[0]));
                        Value::Object(line).to_string()
                    }
                    Foreign::LeafRow(parent, target) => {
                        let mut known: Vec<String> = now.ids.keys().cloned().collect();
                        known.sort();
                        known.push("unknown-target".into());
                        let target = known[target % known.len()].clone();
                        let mut line = Map::new();
                        line.insert("type".into(), json!("leaf"));
                        line.insert("id".into(), json!(self.foreign_id('o')));
                        if let Some(parent) = self.parent_value(&now, parent) {
                            line.insert("parentId".into(), parent);
                        }
                        line.insert("timestamp".into(), json!(TIMESTAMPS[0]));
                        line.insert("targetId".into(), json!(target));
                        Value::Object(line).to_string()
                    }
                    Foreign::Garbage(which) => GARBAGE[which % GARBAGE.len()].to_string(),
                };
                append_raw(&self.path, format!("{line}\n").as_bytes());
                self.after(*after);
            }
            Op::Batch(0) => {
                // Nothing to append: nothing read, nothing written, nothing moves.
                let before = read(&self.path);
                assert_eq!(
                    Call::Batch(Vec::new()).run(self.session()).unwrap(),
                    Vec::<String>::new()
                );
                assert_eq!(read(&self.path), before);
            }
            Op::Batch(count) => {
                let messages = (0..*count)
                    .map(|n| {
                        json!({"role": "user", "content": format!("batch {n}"), "timestamp": n})
                            .to_string()
                    })
                    .collect();
                self.api(Call::Batch(messages));
            }
            Op::TornThenAppend(percent) => {
                let id = self.foreign_id('t');
                let line = json!({"type": "message", "id": id, "parentId": null, "timestamp": TIMESTAMPS[0], "message": {"role": "user", "content": "torn"}}).to_string();
                let cut = (line.len() * usize::from(*percent) / 100).clamp(1, line.len() - 1);
                append_raw(&self.path, &line.as_bytes()[..cut]);
                self.check("after a torn write", Fresh::Indexed);
                self.api(Call::Message(
                    json!({"role": "user", "content": "after torn", "timestamp": 4}).to_string(),
                ));
            }
        }
    }

    /// The live handle agrees with the model of what it has seen; a fresh open (indexed, and
    /// sometimes not) agrees with the model of the whole log and changes no byte of it.
    fn check(&mut self, step: &str, fresh: Fresh) {
        let bytes = read(&self.path);
        let view = Model::parse(&bytes[..self.handle.seen_len]);
        let leaf = self.handle.leaf;
        check_session(&format!("{step}: live"), self.session(), &view, leaf);
        let now = Model::parse(&bytes);
        for (use_index, verify) in [
            (true, Verify::Quick),
            (false, Verify::Quick),
            (true, Verify::Full),
        ] {
            let wanted = match fresh {
                Fresh::None => false,
                Fresh::Indexed => use_index && verify == Verify::Quick,
                Fresh::Both => true,
            };
            if !wanted {
                continue;
            }
            let options = SessionOptions {
                use_index,
                verify,
                ..SessionOptions::default()
            };
            let mut fresh = Session::open(&self.path, options).unwrap();
            let what = format!("{step}: fresh (index {use_index}, {verify:?})");
            check_session(&what, &mut fresh, &now, now.log_leaf);
            let view_has_first_line = has_first_line(&bytes[..self.handle.seen_len]);
            let log_has_first_line = has_first_line(&bytes[..now.read_len]);
            if !self.handle.header_pending && (view_has_first_line || !log_has_first_line) {
                // A handle that has read a non-empty log reports the log's header, made up
                // alike while all its lines are blank; a first non-blank line the handle has
                // not read yet decides a header it cannot know (log.md §2).
                let live = self.session.as_ref().unwrap();
                assert_eq!(live.session_id(), fresh.session_id(), "{what}: live header");
                assert_eq!(
                    live.header().recovered,
                    fresh.header().recovered,
                    "{what}: live header recovered"
                );
            }
            assert_eq!(
                fresh.header().recovered,
                now.recovered,
                "{what}: recovered header"
            );
            if let Some(id) = &now.header_id {
                assert_eq!(fresh.session_id(), id, "{what}: session id");
            }
            let stats = fresh.stats().unwrap();
            assert_eq!(
                stats.torn_tail_bytes as usize,
                now.file_len - now.read_len,
                "{what}: torn tail"
            );
            drop(fresh);
        }
        assert_eq!(read(&self.path), bytes, "{step}: opening changed the log");
    }
}

/// Which fresh sessions a check opens besides looking at the live handle.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fresh {
    None,
    Indexed,
    Both,
}

/// Runs `ops`, checking after each; `thorough` opens fresh sessions of both kinds every time.
fn run(ops: &[Op], on_conflict: OnConflict, thorough: bool) {
    let mut harness = Harness::new(on_conflict);
    harness.check("start", Fresh::Both);
    for (step, op) in ops.iter().enumerate() {
        harness.apply(op);
        // Fresh opens dominate the run time: the live handle is checked after every step, a
        // fresh indexed open after every other one, a replay without index every fourth.
        let fresh = if thorough || step + 1 == ops.len() || step % 4 == 3 {
            Fresh::Both
        } else if step % 2 == 1 {
            Fresh::Indexed
        } else {
            Fresh::None
        };
        harness.check(&format!("step {step} ({op:?})"), fresh);
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(Config {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    })]

    /// Random operation sequences keep every answer equal to the reference model's, for the
    /// live handle and for fresh opens, with either conflict policy.
    #[test]
    fn session_matches_model(ops in proptest::collection::vec(op(), 1..32), follow in any::<bool>()) {
        run(&ops, if follow { OnConflict::FollowTip } else { OnConflict::Fail }, false);
    }
}

// ---------------------------------------------------------------------------------------------
// Minimal sequences that once failed, one per bug.
// ---------------------------------------------------------------------------------------------

/// Bug: `sync` after another handle had flushed the shared sidecar made the live handle read
/// the newer committed tables under its own overlay, so `tree()` listed an entry twice.
#[test]
fn sync_after_another_handle_flushed_lists_each_entry_once() {
    run(
        &[
            Op::Assistant(0, 0),
            Op::Reopen(true),
            Op::CustomMessage(true, true),
            Op::Sync,
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: a handle opened before its log existed never saw the lines another process wrote to
/// the new file (`refresh` read nothing) until its own first append opened it.
#[test]
fn refresh_sees_a_log_another_process_created() {
    run(
        &[Op::ExternalAppend(ParentChoice::Null, 0, 0, After::Refresh)],
        OnConflict::Fail,
        true,
    );
}

/// Bug: after an append failed with `Error::Conflict`, the handle had read the log, so
/// `refresh` (which the error message recommends) did not follow the log's leaf, and a plain
/// retry silently started the sibling branch the conflict rule exists to prevent.
#[test]
fn conflict_stays_until_resolved() {
    run(
        &[
            Op::User(0),
            Op::ExternalAppend(ParentChoice::Entry(0), 0, 0, After::Nothing),
            Op::User(1),
            Op::User(2),
            Op::Refresh,
            Op::User(3),
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: an append refused (the log's first line is an entry, not a header) after an earlier
/// conflict kept that conflict's base, so a later append reported the old conflict again
/// instead of its own refusal (found by `session_matches_model`).
#[test]
fn refusal_after_a_conflict_leaves_no_base() {
    run(
        &[
            Op::ExternalForeign(Foreign::UnknownType(ParentChoice::Entry(0)), After::Nothing),
            Op::TornThenAppend(1),
            Op::Branch(1819359971),
            Op::Batch(2),
            Op::BranchSummary(None, 2897116736525546097),
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: a handle opened before its log existed kept the header it had made up after another
/// process created the log with its own header (`session_id()` named no session on disk).
#[test]
fn handle_adopts_the_header_another_process_wrote() {
    run(
        &[
            Op::ExternalForeign(Foreign::Garbage(3), After::Refresh),
            Op::User(0),
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: another process wrote a blank line into the empty log, this handle read it (and made
/// a header up, the log having none yet), then the other process wrote a header: after a
/// refresh the handle still reported its made-up header, while a fresh open reported the
/// log's.
#[test]
fn header_after_an_indexed_blank_line_is_the_header() {
    run(
        &[
            Op::ExternalForeign(Foreign::Garbage(4), After::Refresh),
            Op::ExternalForeign(Foreign::Garbage(3), After::Nothing),
            Op::Refresh,
        ],
        OnConflict::Fail,
        true,
    );
}

/// An append to a log of blank lines writes the header first, whether or not the handle had
/// read the blank lines (before, only an empty log got one, and such a log stayed headerless,
/// which pi rewrites).
#[test]
fn append_to_a_blank_log_writes_the_header() {
    for after in [After::Refresh, After::Nothing] {
        run(
            &[Op::ExternalForeign(Foreign::Garbage(4), after), Op::User(0)],
            OnConflict::Fail,
            true,
        );
    }
}

/// A line another process wrote without its `\n` is read as a line; once that process glues
/// its next line onto it, a handle that had read it (and followed it as its leaf) answers as
/// a fresh replay does, after a refresh or an append, which goes to the log's leaf.
#[test]
fn line_glued_onto_an_unterminated_one() {
    for after in [After::Refresh, After::Reopen, After::Nothing] {
        for then_append in [false, true] {
            run(
                &[
                    Op::User(0),
                    Op::ExternalUnterminated(
                        ParentChoice::Entry(0),
                        Ending::Glued(then_append),
                        after,
                    ),
                    Op::User(1),
                ],
                OnConflict::Fail,
                true,
            );
        }
    }
}

/// An append after a line another process wrote without its `\n` ends that line first, and
/// another process that ends it itself is caught up like any writer.
#[test]
fn unterminated_line_ended_by_either_writer() {
    for ending in [Ending::HandleAppends, Ending::Newline] {
        for after in [After::Refresh, After::Reopen, After::Nothing] {
            for on_conflict in [OnConflict::Fail, OnConflict::FollowTip] {
                run(
                    &[
                        Op::User(0),
                        Op::ExternalUnterminated(ParentChoice::Entry(0), ending, after),
                        Op::User(1),
                    ],
                    on_conflict,
                    true,
                );
            }
        }
    }
}
