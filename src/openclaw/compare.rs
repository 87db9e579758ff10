//! Comparing a JSONL original with the rows OpenClaw's importer made of it, modulo the
//! rewrites the importer always makes (it stores `JSON.stringify(JSON.parse(line))`):
//! escapes resolved, numbers in JavaScript's form (`1.50` → `1.5`), key order, an
//! assistant's string content turned into `[{"type":"text","text":…}]`, and the header's id
//! replaced by the session's.

use std::collections::HashMap;

use serde_json::Value;

use super::db::Row;

/// How an original line fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// No row holds the line.
    Missing,
    /// The line reuses an earlier line's id with a different body: the importer kept the
    /// first and dropped it.
    DroppedDuplicate,
    /// A row holds the line's id with content that differs beyond the importer's rewrites.
    Changed,
}

impl ProblemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Missing => "missing",
            ProblemKind::DroppedDuplicate => "dropped-duplicate",
            ProblemKind::Changed => "changed",
        }
    }
}

/// An original line the rows lost or changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineProblem {
    pub kind: ProblemKind,
    /// 1-based line number in the original file.
    pub line: usize,
    /// The line's `id`, when it has one that could be read.
    pub id: Option<String>,
    /// What is wrong, for people (why it could not be imported, which field differs).
    pub detail: String,
}

/// The original's lines with their 1-based numbers: split at `\n`, blank lines left out (the
/// importer skips them too, and they hold nothing).
pub fn original_lines(original: &[u8]) -> Vec<(usize, &[u8])> {
    let mut lines: Vec<&[u8]> = original.split(|&byte| byte == b'\n').collect();
    if original.ends_with(b"\n") {
        lines.pop();
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(index, line)| (index + 1, line.strip_suffix(b"\r").unwrap_or(line)))
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .collect()
}

struct RowIndex {
    values: Vec<Option<Value>>,
    used: Vec<bool>,
    by_id: HashMap<String, Vec<usize>>,
}

impl RowIndex {
    fn new(rows: &[Row]) -> RowIndex {
        let values: Vec<Option<Value>> = rows.iter().map(|row| parse(&row.line).ok()).collect();
        let mut by_id: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, value) in values.iter().enumerate() {
            if let Some(id) = value.as_ref().and_then(|value| value["id"].as_str()) {
                by_id.entry(id.to_owned()).or_default().push(index);
            }
        }
        RowIndex {
            used: vec![false; values.len()],
            values,
            by_id,
        }
    }

    /// The first row not matched yet holding `id`.
    fn take_id(&mut self, id: &str) -> Option<&Value> {
        let index = *self
            .by_id
            .get(id)?
            .iter()
            .find(|&&index| !self.used[index])?;
        self.used[index] = true;
        self.values[index].as_ref()
    }

    /// The first row not matched yet equal to `value` modulo the rewrites.
    fn take_equal(&mut self, value: &Value) -> bool {
        let found = (0..self.values.len()).find(|&index| {
            !self.used[index]
                && self.values[index]
                    .as_ref()
                    .is_some_and(|row| difference(&normalise(value), &normalise(row)).is_none())
        });
        if let Some(index) = found {
            self.used[index] = true;
        }
        found.is_some()
    }
}

/// Every original line that no row holds as the importer would have written it.
pub fn compare(original: &[u8], rows: &[Row]) -> Vec<LineProblem> {
    let mut index = RowIndex::new(rows);
    let mut problems = Vec::new();
    // The first occurrence of each id in the original, normalised.
    let mut seen: HashMap<String, Value> = HashMap::new();
    let mut header_done = false;
    let lines = original_lines(original);
    for (line, bytes) in lines {
        let problem = |kind, id: Option<&str>, detail: String| LineProblem {
            kind,
            line,
            id: id.map(str::to_owned),
            detail,
        };
        let (text, invalid_utf8) = match std::str::from_utf8(bytes) {
            Ok(text) => (std::borrow::Cow::Borrowed(text), None),
            Err(error) => (
                String::from_utf8_lossy(bytes),
                Some(format!("invalid UTF-8 at byte {}", error.valid_up_to() + 1)),
            ),
        };
        let value: Value = match parse(&text) {
            Ok(value) => value,
            Err(error) => {
                let detail = invalid_utf8.unwrap_or_else(|| format!("not JSON: {error}"));
                problems.push(problem(ProblemKind::Missing, None, detail));
                continue;
            }
        };
        let id = value["id"].as_str().map(str::to_owned);
        let is_header = !header_done && value["type"] == "session";
        header_done = true;
        if is_header {
            let row = index.values.first().cloned().flatten();
            match row.filter(|row| row["type"] == "session") {
                Some(row) => {
                    index.used[0] = true;
                    if let Some(field) = difference(&header_body(&value), &header_body(&row)) {
                        problems.push(problem(ProblemKind::Changed, id.as_deref(), field));
                    }
                }
                None => problems.push(problem(
                    ProblemKind::Missing,
                    id.as_deref(),
                    "the session header has no row".into(),
                )),
            }
            continue;
        }
        let Some(id) = id else {
            if !index.take_equal(&value) {
                let detail = invalid_utf8.unwrap_or_else(|| "no row holds this line".into());
                problems.push(problem(ProblemKind::Missing, None, detail));
            }
            continue;
        };
        let normalised = normalise(&value);
        if let Some(first) = seen.get(&id) {
            let same_body = difference(first, &normalised).is_none();
            match index.take_id(&id) {
                Some(row) => {
                    if let Some(field) = difference(&normalised, &normalise(row)) {
                        problems.push(problem(ProblemKind::Changed, Some(&id), field));
                    }
                }
                // The same line twice loses nothing.
                None if same_body => {}
                None => problems.push(problem(
                    ProblemKind::DroppedDuplicate,
                    Some(&id),
                    "reuses an earlier line's id with a different body; the importer kept the earlier line".into(),
                )),
            }
            continue;
        }
        seen.insert(id.clone(), normalised.clone());
        match index.take_id(&id) {
            Some(row) => {
                let row = normalise(row);
                if let Some(field) = difference(&normalised, &row) {
                    let detail = match invalid_utf8 {
                        Some(reason) => format!("{reason}, replaced; {field}"),
                        None => field,
                    };
                    problems.push(problem(ProblemKind::Changed, Some(&id), detail));
                }
            }
            None => {
                let detail = invalid_utf8.unwrap_or_else(|| "no row holds this id".into());
                problems.push(problem(ProblemKind::Missing, Some(&id), detail));
            }
        }
    }
    problems
}

/// A line parsed as JavaScript's `JSON.parse` would, as far as comparing needs: a lone
/// surrogate escape (`\ud800`), which JavaScript accepts and `JSON.stringify` writes back
/// while serde_json refuses it, reads as NUL then the escape's six characters, in the
/// original and in the row alike (so that two different ones still differ).
fn parse(text: &str) -> serde_json::Result<Value> {
    serde_json::from_str(text).or_else(|error| match without_lone_surrogates(text) {
        Some(text) => serde_json::from_str(&text),
        None => Err(error),
    })
}

/// `text` with each lone surrogate escape `\udXXX` replaced by `\u0000\\udxxx`; `None`
/// when it has none.
fn without_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let escape_at = |at: usize| -> Option<u16> {
        let hex = bytes.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut changed = false;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let Some(unit) = escape_at(at) else {
            // Any other escape: its two characters.
            at += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&unit);
        let paired = high && escape_at(at + 6).is_some_and(|next| (0xDC00..0xE000).contains(&next));
        if paired {
            at += 12;
        } else if (0xD800..0xE000).contains(&unit) {
            out.push_str(&text[copied..at]);
            out.push_str(&format!("\\u0000\\\\u{unit:04x}"));
            at += 6;
            copied = at;
            changed = true;
        } else {
            at += 6;
        }
    }
    changed.then(|| {
        out.push_str(&text[copied..]);
        out
    })
}

/// A header without its `id` (the importer sets it to the session's id).
fn header_body(value: &Value) -> Value {
    let mut value = normalise(value);
    if let Value::Object(map) = &mut value {
        map.shift_remove("id");
    }
    value
}

/// `value` as the importer writes it, where that differs from what parsing already gives:
/// an assistant message's string content becomes one text part.
fn normalise(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(message) = value.get_mut("message")
        && message["role"] == "assistant"
        && let Some(Value::String(text)) = message.get("content")
    {
        let part = serde_json::json!([{"type": "text", "text": text}]);
        message["content"] = part;
    }
    value
}

/// Where `a` and `b` first differ (`message.content[0].text differs`), or `None` when they
/// are equal as JavaScript values: numbers compared as doubles, objects regardless of key
/// order.
pub fn difference(a: &Value, b: &Value) -> Option<String> {
    walk(a, b, &mut String::new())
}

fn at(path: &str, what: &str) -> Option<String> {
    let at = if path.is_empty() { "the line" } else { path };
    Some(format!("{at} {what}"))
}

fn walk(a: &Value, b: &Value, path: &mut String) -> Option<String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return at(path, &format!("has {} items, the row {}", x.len(), y.len()));
            }
            for (index, (x, y)) in x.iter().zip(y).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{index}]"));
                let found = walk(x, y, path);
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::Object(x), Value::Object(y)) => {
            for (key, x_value) in x {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                let found = match y.get(key) {
                    Some(y_value) => walk(x_value, y_value, path),
                    None => at(path, "is missing in the row"),
                };
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            let extra = y.keys().find(|key| !x.contains_key(*key))?;
            at(path, &format!("has a key {extra} the original lacks"))
        }
        _ if a == b => None,
        _ => at(path, "differs"),
    }
}
