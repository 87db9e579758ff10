//! The searchable text of one log line: what a person would look for, not the JSON around it. Pure
//! code, no I/O.
//!
//! Searchable: user and assistant text, thinking, tool-call names and argument values, tool
//! results, bash commands and their output, custom messages, compaction and branch summaries,
//! session names and labels. Never keys, ids, base64 images, usage numbers or signatures.

use std::borrow::Cow;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::format::line::{self, EntryKind, Line};

/// Argument values nested deeper than this are not searched (a bound on the walk, which uses
/// an explicit stack: no recursion over JSON payloads).
const ARGUMENT_DEPTH_MAX: usize = 16;

/// One entry's searchable text and the fields a hit reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extracted {
    pub kind: EntryKind,
    /// The entry's `type` as written (`message`, `compaction`, ...).
    pub type_name: String,
    pub id: String,
    /// A message's `role` (`user`, `assistant`, `toolResult`, `bashExecution`, ...), or `None`.
    pub role: Option<String>,
    /// The entry's `timestamp` as written, when it has one.
    pub timestamp: Option<String>,
    /// The text to index, parts separated by `\n`.
    pub text: String,
}

/// Whether the line is a session header, which holds nothing searchable but starts a log's
/// rules (its `version` decides whether entries without ids are read, as in pi's v1 files).
pub fn header_version(text: &str) -> Option<u32> {
    match line::classify(text, false, true) {
        Line::Header(header) => Some(header.version),
        _ => None,
    }
}

/// The searchable text of one line, or `None` when it holds none (a header, a model change,
/// an opaque or blank line, an entry whose text is empty). `legacy_v1` reads entries without
/// ids, as pi reads version-1 logs.
pub fn extract(text: &str, legacy_v1: bool) -> Option<Extracted> {
    let Line::Entry(entry) = line::classify(text, legacy_v1, false) else {
        return None;
    };
    let mut out = String::new();
    let mut role = None;
    // The typed, borrowed reading is the fast path; a line it cannot read (a duplicate key, a
    // field of an unexpected type) is read again as a `Value`, which keeps the last of
    // duplicate keys as pi's JSON.parse does.
    let type_name = match typed_text(text, entry.kind, &mut out, &mut role) {
        Some(type_name) => type_name,
        None => {
            out.clear();
            role = None;
            value_text(text, entry.kind, &mut out, &mut role)?
        }
    };
    if out.is_empty() {
        return None;
    }
    Some(Extracted {
        kind: entry.kind,
        type_name,
        id: entry.id.map(|id| id.into_owned()).unwrap_or_default(),
        role,
        timestamp: entry.timestamp.map(|timestamp| timestamp.into_owned()),
        text: out,
    })
}

/// What a `context_edit` line does to its target (`target_id`): `None` removes it from the
/// context; `Some(text)` replaces a user, assistant, tool result or custom message's content,
/// `text` being the replacement content's searchable text (empty for a replacement without
/// `content`, which removes the content). `None` for a line that is not an edit, names no
/// target, or has no `replacement` key (no edit, as format-spec/log.md §7 reads it).
pub fn context_edit(text: &str) -> Option<(String, Option<String>)> {
    let Line::Entry(entry) = line::classify(text, false, false) else {
        return None;
    };
    if entry.kind != EntryKind::ContextEdit {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let target = value.get("targetId")?.as_str()?.to_owned();
    let replacement = match value.get("replacement")? {
        Value::Null => None,
        replacement => {
            let mut out = String::new();
            if let Some(content) = replacement.get("content") {
                content_text(content, &mut out);
            }
            Some(out)
        }
    };
    Some((target, replacement))
}

/// Whether a context edit's replacement replaces the content of an entry extracted as
/// `found`: user, assistant and tool result messages and custom messages (pi 1.6 leaves the
/// other messages as they are).
pub fn replaceable(found: &Extracted) -> bool {
    match found.kind {
        EntryKind::CustomMessage => true,
        EntryKind::Message => matches!(
            found.role.as_deref(),
            Some("user" | "assistant" | "toolResult")
        ),
        _ => false,
    }
}

/// The fields of a line that hold searchable text, borrowed where no escape needs decoding.
#[derive(serde::Deserialize)]
struct TypedLine<'a> {
    #[serde(rename = "type", borrow)]
    type_name: Text<'a>,
    #[serde(borrow)]
    message: Option<TypedMessage<'a>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    summary: Option<Text<'a>>,
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    label: Option<Text<'a>>,
}

#[derive(serde::Deserialize)]
struct TypedMessage<'a> {
    #[serde(borrow)]
    role: Option<Text<'a>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    command: Option<Text<'a>>,
    #[serde(borrow)]
    output: Option<Text<'a>>,
    #[serde(borrow)]
    summary: Option<Text<'a>>,
}

#[derive(serde::Deserialize)]
struct TypedBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    #[serde(borrow)]
    text: Option<Text<'a>>,
    #[serde(borrow)]
    thinking: Option<Text<'a>>,
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// A JSON string, borrowed from the line when it holds no escape. (serde's own `Cow<str>`
/// inside an `Option` always copies: `#[serde(borrow)]` only borrows a bare `Cow`.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

impl Text<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

fn push_some(value: &Option<Text<'_>>, out: &mut String) {
    if let Some(value) = value {
        push(value.as_str(), out);
    }
}

/// The typed reading of [`extract`]: the entry's `type`, or `None` when the line does not
/// have the shape it expects.
fn typed_text(
    text: &str,
    kind: EntryKind,
    out: &mut String,
    role: &mut Option<String>,
) -> Option<String> {
    let line: TypedLine<'_> = serde_json::from_str(text).ok()?;
    match kind {
        EntryKind::Message => {
            let message = line.message?;
            *role = message.role.as_ref().map(|role| role.as_str().to_owned());
            match message.role.as_ref().map(Text::as_str) {
                Some("bashExecution") => {
                    push_some(&message.command, out);
                    push_some(&message.output, out);
                }
                Some("branchSummary" | "compactionSummary") => push_some(&message.summary, out),
                _ => {
                    if let Some(content) = message.content {
                        typed_content(content, out)?;
                    }
                }
            }
        }
        EntryKind::CustomMessage => {
            if let Some(content) = line.content {
                typed_content(content, out)?;
            }
        }
        EntryKind::Compaction | EntryKind::BranchSummary => push_some(&line.summary, out),
        EntryKind::SessionInfo => push_some(&line.name, out),
        EntryKind::Label => push_some(&line.label, out),
        _ => {}
    }
    Some(line.type_name.0.into_owned())
}

/// A `content` field read typed: a string or an array of blocks (`None`: another shape, left
/// to the `Value` reading).
fn typed_content(content: &RawValue, out: &mut String) -> Option<()> {
    match content.get().as_bytes().first()? {
        b'"' => {
            let text: Text<'_> = serde_json::from_str(content.get()).ok()?;
            push(text.as_str(), out);
        }
        b'[' => {
            let blocks: Vec<TypedBlock<'_>> = serde_json::from_str(content.get()).ok()?;
            for block in &blocks {
                match block.kind.as_ref().map(Text::as_str) {
                    Some("text") => push_some(&block.text, out),
                    Some("thinking") => push_some(&block.thinking, out),
                    Some("toolCall") => {
                        push_some(&block.name, out);
                        if let Some(arguments) = block.arguments {
                            let arguments: Value = serde_json::from_str(arguments.get()).ok()?;
                            argument_values(&arguments, out);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Some(())
}

/// The `Value` reading of [`extract`], for the lines the typed one cannot read.
fn value_text(
    text: &str,
    kind: EntryKind,
    out: &mut String,
    role: &mut Option<String>,
) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    match kind {
        EntryKind::Message => {
            let message = object.get("message")?;
            *role = message
                .get("role")
                .and_then(Value::as_str)
                .map(str::to_owned);
            message_text(message, out);
        }
        EntryKind::CustomMessage => {
            if let Some(content) = object.get("content") {
                content_text(content, out);
            }
        }
        EntryKind::Compaction | EntryKind::BranchSummary => push_field(object.get("summary"), out),
        EntryKind::SessionInfo => push_field(object.get("name"), out),
        EntryKind::Label => push_field(object.get("label"), out),
        _ => {}
    }
    Some(
        object
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    )
}

/// A message's text by role: bash commands and output, summaries, or its content blocks.
fn message_text(message: &Value, out: &mut String) {
    match message.get("role").and_then(Value::as_str) {
        Some("bashExecution") => {
            push_field(message.get("command"), out);
            push_field(message.get("output"), out);
        }
        Some("branchSummary" | "compactionSummary") => push_field(message.get("summary"), out),
        _ => {
            if let Some(content) = message.get("content") {
                content_text(content, out);
            }
        }
    }
}

/// A `content` field: a string, or blocks of text, thinking and tool calls (images skipped).
fn content_text(content: &Value, out: &mut String) {
    match content {
        Value::String(text) => push(text, out),
        Value::Array(blocks) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => push_field(block.get("text"), out),
                    Some("thinking") => push_field(block.get("thinking"), out),
                    Some("toolCall") => {
                        push_field(block.get("name"), out);
                        if let Some(arguments) = block.get("arguments") {
                            argument_values(arguments, out);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The string and number values of a tool call's arguments, never their keys.
fn argument_values(arguments: &Value, out: &mut String) {
    let mut stack = vec![(arguments, 0)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::String(text) => push(text, out),
            Value::Number(number) => push(&number.to_string(), out),
            Value::Array(items) if depth < ARGUMENT_DEPTH_MAX => {
                stack.extend(items.iter().rev().map(|item| (item, depth + 1)));
            }
            Value::Object(fields) if depth < ARGUMENT_DEPTH_MAX => {
                let values: Vec<_> = fields.values().map(|item| (item, depth + 1)).collect();
                stack.extend(values.into_iter().rev());
            }
            _ => {}
        }
    }
}

fn push_field(value: Option<&Value>, out: &mut String) {
    if let Some(Value::String(text)) = value {
        push(text, out);
    }
}

fn push(text: &str, out: &mut String) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text and role a line yields, or none.
    type Expected = Option<(&'static str, Option<&'static str>)>;

    /// Each kind of entry yields the text a person would search for and none of its keys,
    /// ids, base64 data or usage numbers.
    #[test]
    fn extracts_the_searchable_text_only() {
        let cases: &[(&str, Expected)] = &[
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"find the bug"},{"type":"image","data":"QUJDREVG","mimeType":"image/png"}]}}"#,
                Some(("find the bug", Some("user"))),
            ),
            (
                r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"c2ln"},{"type":"text","text":"ok"},{"type":"toolCall","id":"call_9","name":"bash","arguments":{"command":"ls -la","timeout":30}}],"usage":{"input":123}}}"#,
                Some(("hmm\nok\nbash\nls -la\n30", Some("assistant"))),
            ),
            (
                r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"toolResult","toolCallId":"call_9","toolName":"bash","content":[{"type":"text","text":"total 0"}],"isError":false}}"#,
                Some(("total 0", Some("toolResult"))),
            ),
            (
                r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"t","message":{"role":"bashExecution","command":"cargo test","output":"ok. 3 passed","exitCode":0}}"#,
                Some(("cargo test\nok. 3 passed", Some("bashExecution"))),
            ),
            (
                r#"{"type":"custom_message","id":"a5","parentId":"a4","timestamp":"t","customType":"note","content":"remember this","display":true}"#,
                Some(("remember this", None)),
            ),
            (
                r#"{"type":"compaction","id":"a6","parentId":"a5","timestamp":"t","summary":"we fixed it","firstKeptEntryId":"a2","tokensBefore":1000}"#,
                Some(("we fixed it", None)),
            ),
            (
                r#"{"type":"branch_summary","id":"a7","parentId":"a6","timestamp":"t","fromId":"a1","summary":"tried a branch"}"#,
                Some(("tried a branch", None)),
            ),
            (
                r#"{"type":"session_info","id":"a8","parentId":"a7","timestamp":"t","name":"refactor night"}"#,
                Some(("refactor night", None)),
            ),
            (
                r#"{"type":"label","id":"a9","parentId":"a8","timestamp":"t","targetId":"a1","label":"checkpoint"}"#,
                Some(("checkpoint", None)),
            ),
            (
                r#"{"type":"model_change","id":"b1","parentId":"a9","timestamp":"t","provider":"p","modelId":"m"}"#,
                None,
            ),
            (
                r#"{"type":"custom","id":"b2","parentId":"b1","timestamp":"t","customType":"x","data":{"k":"v"}}"#,
                None,
            ),
            (
                r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#,
                None,
            ),
            // Duplicate keys: the last one counts, as in pi's JSON.parse (the Value reading).
            (
                r#"{"type":"label","id":"b3","parentId":"b2","timestamp":"t","targetId":"a1","label":"old","label":"new"}"#,
                Some(("new", None)),
            ),
            // A block that is not an object is skipped, the others still read.
            (
                r#"{"type":"message","id":"b4","parentId":"b3","timestamp":"t","message":{"role":"user","content":[7,{"type":"text","text":"still here"}]}}"#,
                Some(("still here", Some("user"))),
            ),
            ("not json", None),
        ];
        for (line, expected) in cases {
            let got = extract(line, false).map(|found| (found.text, found.role));
            let expected = expected.map(|(text, role)| (text.to_owned(), role.map(str::to_owned)));
            assert_eq!(got, expected, "line: {line}");
        }
    }

    /// The typed fast path reads every line of the bundled transcripts exactly as the
    /// `Value` reading does (text, role and type).
    #[test]
    fn typed_reading_equals_value_reading() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut compared = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|ext| ext != "jsonl") {
                continue;
            }
            for text in std::fs::read_to_string(&path).unwrap().lines() {
                let Line::Entry(entry) = line::classify(text, false, false) else {
                    continue;
                };
                let (mut typed_out, mut typed_role) = (String::new(), None);
                let typed = typed_text(text, entry.kind, &mut typed_out, &mut typed_role);
                let (mut value_out, mut value_role) = (String::new(), None);
                let value = value_text(text, entry.kind, &mut value_out, &mut value_role);
                if typed.is_some() {
                    assert_eq!(
                        (typed, typed_out, typed_role),
                        (value, value_out, value_role),
                        "{text}"
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 1000, "{compared} lines compared");
    }
}
