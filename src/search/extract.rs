//! The searchable text of one log line: what a person would look for, not the JSON around it. Pure
//! code, no I/O.
//!
//! Searchable: user and assistant text, thinking, tool-call names and argument values, tool
//! results, bash commands and their output, custom messages, compaction and branch summaries,
//! session names and labels. Never keys, ids, base64 images, usage numbers or signatures.
//! Lines of Claude Code sessions and Codex rollouts are read by `crate::agents::line_text`.

use crate::format::json_scan;
use crate::format::line::{self, EntryKind, Line};
use crate::format::message::message_role;
use crate::format::pi_json::{self, Replacement, string_lossy};

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
///
/// The line is read as the context reads it ([`crate::format::pi_json`]): whatever
/// `JSON.parse` accepts (lone surrogate escapes, any depth, numbers of any size) is read, a
/// repeated key counts by its last value, and the role is the context's
/// ([`message_role`]), so that the text indexed is the text a context shows.
pub fn extract(text: &str, legacy_v1: bool) -> Option<Extracted> {
    let Line::Entry(entry) = line::classify(text, legacy_v1, false) else {
        return other_agent(text);
    };
    if entry.kind == EntryKind::Other {
        return other_agent(text);
    }
    let found = json_scan::scan(
        text,
        &["type", "message", "content", "summary", "name", "label"],
    )
    .ok()?;
    let [type_name, message, content, summary, name, label] = found.fields;
    let mut out = String::new();
    let mut role = None;
    match entry.kind {
        EntryKind::Message => {
            let message = message?;
            role = message_role(message).map(|role| role.into_owned());
            message_text(message, role.as_deref(), &mut out);
        }
        EntryKind::CustomMessage => {
            if let Some(content) = content {
                content_text(content, &mut out);
            }
        }
        EntryKind::Compaction | EntryKind::BranchSummary => push_field(summary, &mut out),
        EntryKind::SessionInfo => push_field(name, &mut out),
        EntryKind::Label => push_field(label, &mut out),
        _ => {}
    }
    if out.is_empty() {
        return None;
    }
    Some(Extracted {
        kind: entry.kind,
        type_name: type_name
            .and_then(string_lossy)
            .unwrap_or_default()
            .into_owned(),
        id: entry.id.map(|id| id.into_owned()).unwrap_or_default(),
        role,
        timestamp: entry.timestamp.map(|timestamp| timestamp.into_owned()),
        text: out,
    })
}

/// The searchable text of a line of a Claude Code session or a Codex rollout (which pi reads
/// as opaque lines or entries of another type), read by [`crate::agents::line_text`].
fn other_agent(text: &str) -> Option<Extracted> {
    let found = crate::agents::line_text(text.as_bytes())?;
    Some(Extracted {
        kind: match found.type_name {
            "compaction" => EntryKind::Compaction,
            "session_info" => EntryKind::SessionInfo,
            _ => EntryKind::Message,
        },
        type_name: found.type_name.to_owned(),
        id: found.id,
        role: found.role,
        timestamp: found.timestamp,
        text: found.text,
    })
}

/// What a `context_edit` line does to its target (`target_id`): `None` removes it from the
/// context; `Some(text)` replaces a user, assistant, tool result or custom message's content,
/// `text` being the replacement content's searchable text (empty for a replacement without
/// `content`, which removes the content). `None` for a line that is not an edit, names no
/// target, or has no `replacement` key (no edit, as format-spec/log.md §7 reads it). The
/// edit is read by [`pi_json::context_edit`], the context's own reading.
pub fn context_edit(text: &str) -> Option<(String, Option<String>)> {
    let Line::Entry(entry) = line::classify(text, false, false) else {
        return None;
    };
    if entry.kind != EntryKind::ContextEdit {
        return None;
    }
    let edit = pi_json::context_edit(text)?;
    let replacement = match edit.replacement {
        Replacement::Remove => None,
        Replacement::Content(content) => {
            let mut out = String::new();
            if let Some(content) = content {
                content_text(content, &mut out);
            }
            Some(out)
        }
    };
    Some((edit.target.into_owned(), replacement))
}

/// Whether a context edit's replacement replaces the content of an entry extracted as
/// `found`: user, assistant, tool result and custom messages, and custom message entries, as
/// the context replaces them (pi 1.6 leaves the other messages as they are).
pub fn replaceable(found: &Extracted) -> bool {
    match found.kind {
        EntryKind::CustomMessage => true,
        EntryKind::Message => matches!(
            found.role.as_deref(),
            Some("user" | "assistant" | "toolResult" | "custom")
        ),
        _ => false,
    }
}

/// A message's text by role: bash commands and output, summaries, or its content.
fn message_text(message: &str, role: Option<&str>, out: &mut String) {
    let Ok(found) = json_scan::scan(message, &["content", "command", "output", "summary"]) else {
        return;
    };
    let [content, command, output, summary] = found.fields;
    match role {
        Some("bashExecution") => {
            push_field(command, out);
            push_field(output, out);
        }
        Some("branchSummary" | "compactionSummary") => push_field(summary, out),
        _ => {
            if let Some(content) = content {
                content_text(content, out);
            }
        }
    }
}

/// A `content` value: a string, or blocks of text, thinking and tool calls (images and
/// blocks that are not objects skipped).
fn content_text(content: &str, out: &mut String) {
    match content.as_bytes().first() {
        Some(b'"') => push_field(Some(content), out),
        Some(b'[') => {
            for block in json_scan::array_items(content).unwrap_or_default() {
                let Ok(found) =
                    json_scan::scan(block, &["type", "text", "thinking", "name", "arguments"])
                else {
                    continue;
                };
                let [kind, text, thinking, name, arguments] = found.fields;
                match kind.and_then(string_lossy).as_deref() {
                    Some("text") => push_field(text, out),
                    Some("thinking") => push_field(thinking, out),
                    Some("toolCall") => {
                        push_field(name, out);
                        if let Some(arguments) = arguments {
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

/// The string and number values of a tool call's arguments, never their keys; a number as
/// written in the line.
fn argument_values(arguments: &str, out: &mut String) {
    let mut stack = vec![(arguments, 0)];
    while let Some((value, depth)) = stack.pop() {
        let items = match value.as_bytes().first() {
            Some(b'"') => {
                push_field(Some(value), out);
                continue;
            }
            Some(b'-' | b'0'..=b'9') => {
                push(value, out);
                continue;
            }
            Some(b'[') if depth < ARGUMENT_DEPTH_MAX => json_scan::array_items(value).ok(),
            Some(b'{') if depth < ARGUMENT_DEPTH_MAX => pi_json::object_values(value),
            _ => None,
        };
        stack.extend(
            items
                .unwrap_or_default()
                .into_iter()
                .rev()
                .map(|item| (item, depth + 1)),
        );
    }
}

/// A raw value's text when it is a string.
fn push_field(raw: Option<&str>, out: &mut String) {
    if let Some(text) = raw.and_then(string_lossy) {
        push(&text, out);
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
            // Duplicate keys: the last one counts, as in pi's JSON.parse.
            (
                r#"{"type":"label","id":"b3","parentId":"b2","timestamp":"t","targetId":"a1","label":"old","label":"new"}"#,
                Some(("new", None)),
            ),
            // A block that is not an object is skipped, the others still read.
            (
                r#"{"type":"message","id":"b4","parentId":"b3","timestamp":"t","message":{"role":"user","content":[7,{"type":"text","text":"still here"}]}}"#,
                Some(("still here", Some("user"))),
            ),
            // What JSON.parse reads and serde_json refuses: a lone surrogate (written as
            // U+FFFD), nesting deeper than 128, a number beyond f64.
            (
                r#"{"type":"message","id":"c1","parentId":null,"timestamp":"t","message":{"role":"user","content":"pass\ud800word"}}"#,
                Some(("pass\u{FFFD}word", Some("user"))),
            ),
            (
                r#"{"type":"message","id":"c3","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","name":"n","arguments":{"big":1e400,"s":"x","s":"y"}}]}}"#,
                Some(("n\n1e400\ny", Some("assistant"))),
            ),
            ("not json", None),
        ];
        for (line, expected) in cases {
            let got = extract(line, false).map(|found| (found.text, found.role));
            let expected = expected.map(|(text, role)| (text.to_owned(), role.map(str::to_owned)));
            assert_eq!(got, expected, "line: {line}");
        }
    }

    /// A line nested deeper than serde_json reads still gives its text.
    #[test]
    fn deep_nesting_is_read() {
        let line = format!(
            r#"{{"type":"message","id":"c2","parentId":null,"timestamp":"t","x":{}{},"message":{{"role":"user","content":"deep"}}}}"#,
            "[".repeat(1000),
            "]".repeat(1000)
        );
        assert_eq!(
            extract(&line, false).map(|found| found.text).as_deref(),
            Some("deep")
        );
    }
}
