//! pi's `buildSessionContext`, reading only what the answer needs: the leaf's record names
//! the latest compaction, model and thinking-level entries on its path, so the walk stops at
//! the compaction's first kept entry instead of the root.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use crate::error::Result;
use crate::format::json_scan;
use crate::format::line::{EntryKind, json_text_str};
use crate::format::record::{Record, SEQ_NONE};
use crate::format::write::push_json_string;
use crate::index::Store;
use crate::line_reads::LineTexts;
use crate::session::{Session, timestamp_ms};
use crate::tree::ancestor_at_depth;

/// The context for one leaf: `{"messages":[...],"thinkingLevel":...,"model":...}`.
#[derive(Clone, Debug)]
pub struct Context {
    /// Each message as JSON, stored ones byte for byte.
    pub messages: Vec<JsonText>,
    pub thinking_level: JsonText,
    /// `{"provider":...,"modelId":...}` or `None` (JSON null).
    pub model: Option<JsonText>,
}

/// A JSON value as text. Values copied from the log are byte for byte what the log holds
/// (the line parsed as JSON when it was indexed, and its crc32 still matches); values built
/// here are assembled from such values and JSON strings.
#[derive(Clone)]
pub struct JsonText(Text);

#[derive(Clone)]
enum Text {
    Owned(String),
    /// A range of lines read for a context, shared by the values cut out of them.
    Shared(Arc<String>, Range<usize>),
}

impl JsonText {
    pub fn get(&self) -> &str {
        match &self.0 {
            Text::Owned(text) => text,
            Text::Shared(text, range) => &text[range.clone()],
        }
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.get() == other.get()
    }
}

impl Eq for JsonText {}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("JsonText").field(&self.get()).finish()
    }
}

impl Context {
    /// The context as one JSON object, keys in pi's order.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"messages\":[");
        for (index, message) in self.messages.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            out.push_str(message.get());
        }
        out.push_str("],\"thinkingLevel\":");
        out.push_str(self.thinking_level.get());
        out.push_str(",\"model\":");
        out.push_str(self.model.as_ref().map_or("null", |model| model.get()));
        out.push('}');
        out
    }
}

fn raw(json: String) -> JsonText {
    JsonText(Text::Owned(json))
}

pub(crate) fn build(session: &Session, leaf_seq: u64) -> Result<Context> {
    if leaf_seq == SEQ_NONE {
        return Ok(Context {
            messages: Vec::new(),
            thinking_level: raw("\"off\"".into()),
            model: None,
        });
    }
    let store = session.store();
    let leaf = store.existing_record(leaf_seq)?;
    let thinking_level = match leaf.thinking_seq {
        SEQ_NONE => raw("\"off\"".into()),
        seq => {
            let entry = read(session, &store.existing_record(seq)?)?;
            // `undefined` (a missing field) leaves the key out of JSON.stringify's output;
            // pi's default is "off" only when no change exists at all.
            field(&entry, "thinkingLevel").unwrap_or_else(|| raw("null".into()))
        }
    };
    let model = match leaf.model_seq {
        SEQ_NONE => None,
        seq => Some(model_of(session, &store.existing_record(seq)?)?),
    };

    // The kept part of the path: from the first kept entry (or the root) to the leaf.
    let mut stop_seq = SEQ_NONE;
    let mut compaction_line = None;
    if leaf.compaction_seq != SEQ_NONE {
        let compaction = store.existing_record(leaf.compaction_seq)?;
        let line = read(session, &compaction)?;
        let mut first_kept = field(&line, "firstKeptEntryId")
            .and_then(|raw| json_text_str(raw.get()).map(Cow::into_owned));
        if first_kept.is_none() && store.state.header_version < 2 && !store.state.header_recovered {
            // v1 compactions name the first kept entry by its index among the parsed records,
            // the header being record 0 (pi's v1 -> v2 migration): entry `index - 1` here.
            let index =
                field(&line, "firstKeptEntryIndex").and_then(|raw| raw.get().parse::<u64>().ok());
            if let Some(seq) = index
                .and_then(|index| index.checked_sub(1))
                .filter(|seq| *seq < store.record_count())
            {
                let record = store.existing_record(seq)?;
                if record.kind.is_some() {
                    first_kept = Some(record.id.into_string());
                }
            }
        }
        // Entries before the compaction are kept only from the first kept one, and only if it
        // is on the path; otherwise the walk stops at the compaction itself.
        stop_seq = leaf.compaction_seq;
        if let Some(first_kept) = first_kept
            && let Some(kept_seq) = store.seq_of(&first_kept)?
        {
            let kept = store.existing_record(kept_seq)?;
            if kept.kind.is_some()
                && kept.depth < compaction.depth
                && ancestor_at_depth(store, leaf.compaction_seq, kept.depth)? == Some(kept_seq)
            {
                stop_seq = kept_seq;
            } else if let Some(seq) = ancestor_with_id(store, compaction.parent_seq, &first_kept)? {
                // The id repeats: the ids table names its latest line, and an earlier line with
                // it is on the path. This walk runs only when the latest is not an ancestor.
                stop_seq = seq;
            }
        }
        compaction_line = Some(line);
    }
    let mut path = store.ancestors(leaf_seq, stop_seq)?;
    path.reverse();

    let mut messages = Vec::with_capacity(path.len() + 1);
    if let Some(line) = &compaction_line {
        let mut out = String::from("{\"role\":\"compactionSummary\",\"summary\":");
        out.push_str(
            field(line, "summary")
                .map_or("null".into(), |raw| raw.get().to_string())
                .as_str(),
        );
        append_optional(&mut out, "tokensBefore", field(line, "tokensBefore"));
        append_timestamp(&mut out, line);
        out.push('}');
        messages.push(raw(out));
    }
    let legacy = store.state.header_version < 3 && !store.state.header_recovered;
    let contributing: Vec<&Record> = path
        .iter()
        .filter(|(seq, record)| {
            *seq != leaf.compaction_seq
                && matches!(
                    record.kind,
                    Some(EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary)
                )
        })
        .map(|(_, record)| record)
        .collect();
    let lines = session.read_lines(&contributing)?;
    for (index, record) in contributing.iter().enumerate() {
        if let Some(message) = message_of(record, &lines, index, legacy) {
            messages.push(message);
        }
    }
    Ok(Context {
        messages,
        thinking_level,
        model,
    })
}

/// The nearest ancestor-or-self of `seq` whose id is `id`.
fn ancestor_with_id(store: &Store, mut seq: u64, id: &str) -> Result<Option<u64>> {
    while seq != SEQ_NONE {
        let record = store.existing_record(seq)?;
        if record.id == id {
            return Ok(Some(seq));
        }
        if record.parent_seq != SEQ_NONE && record.parent_seq >= seq {
            return Err(store.read_error(format!("record {seq} names a later parent")));
        }
        seq = record.parent_seq;
    }
    Ok(None)
}

/// What an entry contributes to the context, if anything.
fn message_of(record: &Record, lines: &LineTexts, index: usize, legacy: bool) -> Option<JsonText> {
    let line = lines.line(index);
    match record.kind {
        Some(EntryKind::Message) => {
            // pi pushes `entry.message` even when it is missing: JSON.stringify writes null.
            let message = indexed_message(record, line)
                .map(|range| {
                    let start = lines.ranges[index].start;
                    JsonText(Text::Shared(
                        lines.text.clone(),
                        start + range.start..start + range.end,
                    ))
                })
                .or_else(|| field(line, "message"))
                .unwrap_or_else(|| raw("null".into()));
            if legacy {
                return Some(migrate_hook_message(message));
            }
            Some(message)
        }
        Some(EntryKind::CustomMessage) => {
            let mut out = String::from("{\"role\":\"custom\"");
            for key in ["customType", "content", "display", "details"] {
                append_optional(&mut out, key, field(line, key));
            }
            append_timestamp(&mut out, line);
            out.push('}');
            Some(raw(out))
        }
        Some(EntryKind::BranchSummary) => {
            let summary = field(line, "summary");
            if !summary.as_ref().is_some_and(is_truthy) {
                return None;
            }
            let mut out = String::from("{\"role\":\"branchSummary\"");
            append_optional(&mut out, "summary", summary);
            append_optional(&mut out, "fromId", field(line, "fromId"));
            append_timestamp(&mut out, line);
            out.push('}');
            Some(raw(out))
        }
        _ => None,
    }
}

/// `{provider, modelId}` from a model change, or from an assistant message's `provider` and
/// `model`.
fn model_of(session: &Session, record: &Record) -> Result<JsonText> {
    let line = read(session, record)?;
    let (provider, model_id) = if record.kind == Some(EntryKind::ModelChange) {
        (field(&line, "provider"), field(&line, "modelId"))
    } else {
        let message = field(&line, "message");
        let get = |key: &str| {
            message
                .as_ref()
                .and_then(|message| field(message.get(), key))
        };
        (get("provider"), get("model"))
    };
    let mut out = String::from("{");
    append_optional(&mut out, "provider", provider);
    append_optional(&mut out, "modelId", model_id);
    if out.len() > 1 {
        out.remove(1);
    }
    out.push('}');
    Ok(raw(out))
}

/// v1/v2 files: a `hookMessage` role is read as `custom` (pi's v2 to v3 migration).
fn migrate_hook_message(message: JsonText) -> JsonText {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(message.get()) else {
        return message;
    };
    match value.get_mut("role") {
        Some(role) if role == "hookMessage" => *role = serde_json::Value::String("custom".into()),
        _ => return message,
    }
    serde_json::to_string(&value).map_or(message, raw)
}

fn read(session: &Session, record: &Record) -> Result<String> {
    session.read_line(record)
}

/// A top-level field of a line read through the index (crc32 checked, so valid JSON).
/// The message of a `message` entry where indexing found it, without scanning the line: the
/// line's crc32 matched, so it is the line that was indexed. The span is checked to start
/// right after pi's `"message":` key and to look like an object, so a damaged index falls
/// back to the scan rather than cutting the line anywhere.
fn indexed_message(record: &Record, line: &str) -> Option<Range<usize>> {
    let (offset, len) = record.message_span?;
    let (offset, len) = (offset as usize, len as usize);
    let range = offset..offset.checked_add(len)?;
    let message = line.get(range.clone())?;
    let key = line.get(offset.checked_sub(10)?..offset)?;
    (key == "\"message\":" && message.starts_with('{') && message.ends_with('}')).then_some(range)
}

fn field(line: &str, name: &str) -> Option<JsonText> {
    // The SWAR scanner of indexing is faster than a non-validating scan built on memchr, on
    // payloads full of escapes; a line that fails it (it passed at indexing and its crc32
    // matched) has no field.
    let scan = json_scan::scan(line, &[name]).ok()?;
    scan.fields[0].map(|text| raw(text.to_owned()))
}

/// `,"key":value` when the value exists (JSON.stringify drops undefined values).
fn append_optional(out: &mut String, key: &str, value: Option<JsonText>) {
    if let Some(value) = value {
        out.push(',');
        push_json_string(out, key);
        out.push(':');
        out.push_str(value.get());
    }
}

/// `,"timestamp":ms` from the entry's ISO timestamp (`null` where JavaScript gets NaN).
fn append_timestamp(out: &mut String, line: &str) {
    let millis = field(line, "timestamp")
        .and_then(|raw| json_text_str(raw.get()).and_then(|text| timestamp_ms(&text)));
    out.push_str(",\"timestamp\":");
    out.push_str(&millis.map_or("null".into(), |millis| millis.to_string()));
}

/// JavaScript truthiness of a JSON value: `null`, `false`, `""` and every number that
/// `JSON.parse` reads as zero (`0.00`, `-0e5`, and `1e-400`, which underflows) are falsy.
fn is_truthy(value: &JsonText) -> bool {
    let text = value
        .get()
        .trim_matches(crate::format::json_scan::WHITESPACE);
    match text.as_bytes().first() {
        None => false,
        // Every JSON number is a valid Rust float, rounded to nearest as JavaScript does.
        Some(b'-' | b'0'..=b'9') => !matches!(text.parse::<f64>(), Ok(number) if number == 0.0),
        Some(_) => !matches!(text, "null" | "false" | "\"\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Truthiness as JavaScript's `Boolean(JSON.parse(text))` gives it (checked with node 20):
    /// every spelling of zero is falsy, including one that underflows to zero.
    #[test]
    fn truthiness_matches_javascript() {
        for (text, truthy) in [
            ("0", false),
            ("-0", false),
            ("0.0", false),
            ("0.00", false),
            ("0e5", false),
            ("-0.0e-3", false),
            ("1e-400", false),
            ("-1e-324", false),
            ("4.9e-324", true),
            ("1e400", true),
            ("0.1", true),
            ("\"0\"", true),
            ("[]", true),
            ("{}", true),
            ("\"\"", false),
            ("null", false),
            ("false", false),
            ("true", true),
        ] {
            assert_eq!(is_truthy(&raw(text.to_string())), truthy, "{text}");
        }
    }

    /// A recorded message span is used only where it still frames pi's `"message":{...}`; any
    /// other span (a damaged index) gives way to the scan.
    #[test]
    fn message_span_is_checked() {
        let line = r#"{"type":"message","id":"a","message":{"role":"user","content":"}"},"x":1}"#;
        let start = line.find(r#"{"role""#).expect("message start") as u32;
        let len = r#"{"role":"user","content":"}"}"#.len() as u32;
        let record = |span| Record {
            jump_seq: 0,
            kind: Some(EntryKind::Message),
            message_span: span,
            id: "a".into(),
            ..Record::unlinked(0, line.len() as u32)
        };
        let scanned = field(line, "message").expect("the line has a message");
        let range = indexed_message(&record(Some((start, len))), line).expect("a valid span");
        assert_eq!(&line[range], scanned.get());
        for bad in [
            Some((start + 1, len - 1)),
            Some((start, len - 3)),
            Some((start, u32::MAX)),
            Some((u32::MAX - 1, 2)),
            Some((3, 4)),
            None,
        ] {
            assert_eq!(indexed_message(&record(bad), line), None, "{bad:?}");
        }
    }
}
