//! The pi session being written: its entries with unique ids, in the order they are written,
//! and the list of what the source had that pi has no place for.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::types::{Converted, NotCarried};
use crate::agents::transcript::{Format, Problem, ProblemKind};
use crate::format::time::{format_iso_ms, parse_iso_ms};

/// One pi entry being built: its fields after `type,id,parentId,timestamp`.
pub(super) struct PiEntry {
    pub(super) kind: &'static str,
    pub(super) id: String,
    pub(super) parent: Option<usize>,
    pub(super) timestamp_ms: i64,
    pub(super) fields: Map<String, Value>,
    /// The model in force on this entry's branch after it (the last `model_change` above).
    pub(super) model: Option<String>,
}

/// The entries of the pi session in the order they are written, with ids unique in it.
pub(super) struct Builder {
    session_id: String,
    pub(super) entries: Vec<PiEntry>,
    ids: HashSet<String>,
    counter: u64,
    not_carried: Vec<NotCarried>,
    line_numbers: LineNumbers,
}

impl Builder {
    pub(super) fn new(session_id: &str, bytes: &[u8]) -> Builder {
        Builder {
            session_id: session_id.to_owned(),
            entries: Vec::new(),
            ids: HashSet::new(),
            counter: 0,
            not_carried: Vec::new(),
            line_numbers: LineNumbers::new(bytes),
        }
    }

    /// A new 8-hex-digit id, as pi draws them: the first 32 bits of blake3(session id,
    /// counter), so one source and session id always give the same ids; unique in the session.
    fn new_id(&mut self) -> String {
        loop {
            let mut hasher = blake3::Hasher::new();
            hasher.update(self.session_id.as_bytes());
            hasher.update(&self.counter.to_le_bytes());
            self.counter += 1;
            let hash = hasher.finalize();
            let id: String = hash.as_bytes()[..4]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            if self.ids.insert(id.clone()) {
                return id;
            }
        }
    }

    /// Adds an entry under `parent` (an index into the entries); returns its index.
    pub(super) fn push(
        &mut self,
        kind: &'static str,
        parent: Option<usize>,
        timestamp_ms: i64,
        fields: Map<String, Value>,
    ) -> usize {
        let id = self.new_id();
        let model = parent.and_then(|p| self.entries[p].model.clone());
        self.entries.push(PiEntry {
            kind,
            id,
            parent,
            timestamp_ms,
            fields,
            model,
        });
        self.entries.len() - 1
    }

    /// Adds a `message` entry.
    pub(super) fn message(
        &mut self,
        parent: Option<usize>,
        timestamp_ms: i64,
        message: Value,
    ) -> usize {
        let mut fields = Map::new();
        fields.insert("message".into(), message);
        self.push("message", parent, timestamp_ms, fields)
    }

    /// Adds a `model_change` entry under `parent` when the model in force there is not
    /// `model`; returns the entry the next one goes under.
    pub(super) fn model_change(
        &mut self,
        parent: Option<usize>,
        timestamp_ms: i64,
        provider: &str,
        model: &str,
    ) -> Option<usize> {
        let in_force = parent.and_then(|p| self.entries[p].model.as_deref());
        if in_force == Some(model) {
            return parent;
        }
        let mut fields = Map::new();
        fields.insert("provider".into(), json!(provider));
        fields.insert("modelId".into(), json!(model));
        let index = self.push("model_change", parent, timestamp_ms, fields);
        self.entries[index].model = Some(model.to_owned());
        Some(index)
    }

    /// Records a line (or part of one) that is not carried over.
    pub(super) fn not_carried(&mut self, offset: usize, kind: String, reason: impl Into<String>) {
        self.not_carried.push(NotCarried {
            line: self.line_numbers.at(offset),
            offset,
            kind,
            reason: reason.into(),
        });
    }

    /// Records the parser's problems (lines that are not JSON, no `type`...).
    pub(super) fn problems(&mut self, problems: &[Problem]) {
        for problem in problems {
            let (kind, reason) = match &problem.kind {
                ProblemKind::NotJson => ("invalid", "not a JSON object".to_owned()),
                ProblemKind::NoType => ("invalid", "no string `type`".to_owned()),
                // The line itself is read; the padding is no content.
                ProblemKind::NulPadding => continue,
                ProblemKind::MissingParent(id) => (
                    "orphan",
                    format!("its parent {id} is no earlier entry: carried over as a root"),
                ),
                ProblemKind::DuplicateId(id) => (
                    "duplicate-id",
                    format!("the id {id} was already an entry's: carried over as its own entry"),
                ),
                ProblemKind::OrdinalMismatch { expected, found } => (
                    "ordinal",
                    format!(
                        "ordinal {} where {expected} was expected: a line lost or repeated",
                        found.map_or("missing".to_owned(), |n| n.to_string())
                    ),
                ),
            };
            self.not_carried(problem.offset, kind.to_owned(), reason);
        }
    }

    /// The session's text with its header, and what was not carried over in source order.
    pub(super) fn finish(
        mut self,
        source: Format,
        cwd: String,
        first_ms: Option<i64>,
    ) -> Converted {
        let timestamp = format_iso_ms(first_ms.unwrap_or(0));
        let mut header = Map::new();
        header.insert("type".into(), json!("session"));
        header.insert("version".into(), json!(3));
        header.insert("id".into(), json!(self.session_id));
        header.insert("timestamp".into(), json!(timestamp));
        header.insert("cwd".into(), json!(cwd));
        let mut text = line_text(&Value::Object(header));
        for entry in &self.entries {
            let mut line = Map::new();
            line.insert("type".into(), json!(entry.kind));
            line.insert("id".into(), json!(entry.id));
            let parent = entry.parent.map(|p| self.entries[p].id.clone());
            line.insert("parentId".into(), json!(parent));
            line.insert("timestamp".into(), json!(format_iso_ms(entry.timestamp_ms)));
            line.extend(entry.fields.clone());
            text.push_str(&line_text(&Value::Object(line)));
        }
        self.not_carried.sort_by_key(|item| item.offset);
        Converted {
            source,
            text,
            cwd,
            timestamp,
            entries: self.entries.len(),
            leaf: self.entries.last().map(|e| e.id.clone()),
            not_carried: self.not_carried,
        }
    }
}

/// One JSON line, as `JSON.stringify` writes it (serde_json's compact form is the same for
/// the values a source holds), with its `\n`.
fn line_text(value: &Value) -> String {
    let mut text = value.to_string();
    text.push('\n');
    text
}

/// Line numbers from byte offsets, for offsets asked in any order.
struct LineNumbers {
    /// The offset of each line's first byte.
    starts: Vec<usize>,
}

impl LineNumbers {
    pub(super) fn new(bytes: &[u8]) -> LineNumbers {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', bytes).map(|n| n + 1));
        LineNumbers { starts }
    }

    /// The number (from 1) of the line holding `offset`.
    fn at(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset)
    }
}

/// A source line's `timestamp` in epoch milliseconds, when it has one that reads.
pub(super) fn time_of(map: &Map<String, Value>) -> Option<i64> {
    map.get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_iso_ms)
}

/// The usage pi's assistant messages carry; the source's token counts where it has them.
pub(super) fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Value {
    json!({
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0 },
    })
}

/// A pi image block from a base64 payload and its media type.
pub(super) fn image(data: &str, mime_type: &str) -> Value {
    json!({ "type": "image", "data": data, "mimeType": mime_type })
}

/// A pi text block.
pub(super) fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

impl Builder {
    /// Whether `entry` is `at` or one of its ancestors.
    pub(super) fn is_ancestor_or_self(&self, entry: usize, at: Option<usize>) -> bool {
        let mut at = at;
        while let Some(index) = at {
            if index == entry {
                return true;
            }
            at = self.entries[index].parent;
        }
        false
    }

    /// Reorders the entries so that `leaf` is written after every entry but its own
    /// descendants (pi's leaf is the last entry in file order); parents stay before children.
    pub(super) fn move_last(&mut self, leaf: usize) {
        let count = self.entries.len();
        let mut under = vec![false; count];
        for index in 0..count {
            under[index] = index == leaf || self.entries[index].parent.is_some_and(|p| under[p]);
        }
        let order: Vec<usize> = (0..count)
            .filter(|&i| !under[i])
            .chain((0..count).filter(|&i| under[i]))
            .collect();
        let mut position = vec![0; count];
        for (new, &old) in order.iter().enumerate() {
            position[old] = new;
        }
        let mut old_entries: Vec<Option<PiEntry>> = std::mem::take(&mut self.entries)
            .into_iter()
            .map(Some)
            .collect();
        for &old in &order {
            let mut entry = old_entries[old].take().expect("each entry is moved once");
            entry.parent = entry.parent.map(|p| position[p]);
            self.entries.push(entry);
        }
    }
}
