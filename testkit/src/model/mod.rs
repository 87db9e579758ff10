//! The reference model of the session API, shared by the model test (tests/it/model.rs) and the
//! `operations` fuzz target: what a log's bytes mean, as a pure function of them
//! ([`Model::parse`]), written from format-spec/log.md and pi's own code with nothing of treelog
//! but its public API (and its V8 sort for long lists of NaN timestamps); `handle.rs` is the
//! state of one handle and the rules that move it (catch-up, the conflict rule, refresh);
//! `context.rs` pi's `buildSessionContext` over the model; `check.rs` compares every answer of
//! a session with the model's; `time.rs` pi's timestamps and V8's sort order.

mod check;
mod context;
pub mod handle;
mod time;

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

pub use time::iso_ms;
use time::js_sort_order;

use crate::TreeRow;

/// One entry as the model reads it from its line.
#[derive(Clone, Debug)]
pub struct ModelEntry {
    pub id: String,
    pub kind: String,
    pub value: Map<String, Value>,
    pub line: String,
    pub offset: usize,
    /// Tree parent: an index into `Model::entries`.
    pub parent: Option<usize>,
    pub depth: u32,
    pub timestamp: String,
    pub timestamp_ms: Option<i64>,
}

/// What an id names: an entry, or a parent-linked opaque record.
#[derive(Clone, Copy, Debug)]
pub enum IdTarget {
    Entry(usize),
    /// A parent-linked opaque record, standing for the entry its own parent resolved to.
    Opaque(Option<usize>),
}

/// What a log's bytes mean: its header, entries, tree, labels, name and opaque records.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub header_id: Option<String>,
    /// A line that is JSON was read: it decided the header (`header_id` when it is one).
    pub decided: bool,
    pub recovered: bool,
    pub entries: Vec<ModelEntry>,
    pub ids: HashMap<String, IdTarget>,
    pub log_leaf: Option<usize>,
    pub labels: BTreeMap<String, (String, String)>,
    pub name: Option<String>,
    pub opaque_offsets: Vec<usize>,
    /// End of the last complete line (the last `\n`).
    pub complete_len: usize,
    /// End of the lines read: `complete_len`, or `file_len` when the bytes after the last
    /// `\n` are a line without its `\n` (not blank, whole JSON: log.md §1, as pi reads them).
    pub read_len: usize,
    pub file_len: usize,
}

impl Model {
    /// The model of a log holding `bytes`.
    pub fn parse(bytes: &[u8]) -> Model {
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

    pub fn resolve_id(&self, id: &str) -> Option<usize> {
        match self.ids.get(id)? {
            IdTarget::Entry(index) => Some(*index),
            IdTarget::Opaque(parent) => *parent,
        }
    }

    pub fn line(&mut self, offset: usize, text: String, first: bool) {
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

    pub fn id(&self, index: Option<usize>) -> Option<String> {
        index.map(|index| self.entries[index].id.clone())
    }

    /// Root first.
    pub fn path(&self, leaf: Option<usize>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = leaf;
        while let Some(index) = at {
            path.push(index);
            at = self.entries[index].parent;
        }
        path.reverse();
        path
    }

    pub fn sorted_children(&self, parent: Option<usize>) -> Vec<usize> {
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
    pub fn tree(&self) -> Vec<TreeRow> {
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
}
