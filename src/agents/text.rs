//! The readable text of one line of a Claude Code session or a Codex rollout: what `search`
//! indexes and `export` prints, in pi's terms (format-spec/search.md §6). Pure code over one
//! line's bytes; a line that is no message, summary or title gives `None`.
//!
//! - Claude Code: a `user` or `assistant` line's `message` (text, thinking, tool calls by name
//!   and argument values, tool results) is a `message` of its role (`toolResult` for a `user`
//!   line that only answers tool calls); a compact summary (`isCompactSummary`) is a
//!   `compaction`; `custom-title`, `ai-title` and `summary` lines are `session_info`.
//! - Codex: a `response_item` `message` is a `message` of its role, `reasoning` and
//!   `function_call` are `assistant` messages, `function_call_output` a `toolResult`; a
//!   `compacted` line's `message` is a `compaction`. `event_msg` lines repeat what these hold
//!   and are left out.

use serde_json::{Map, Value};

use super::lines::{object, string};

/// Argument values nested deeper than this are not read (the walk uses an explicit stack).
const DEPTH_MAX: usize = 16;

/// One line's readable text and what a hit reports of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineText {
    /// pi's entry type the line stands for: `message`, `compaction` or `session_info`.
    pub type_name: &'static str,
    /// A message's role (`user`, `assistant`, `developer`, `toolResult`), `None` otherwise.
    pub role: Option<String>,
    /// The line's id: Claude Code's `uuid`; empty for Codex lines, which have none.
    pub id: String,
    /// The line's `timestamp` as written.
    pub timestamp: Option<String>,
    /// The text, parts separated by `\n`; never empty.
    pub text: String,
}

/// The readable text of a line of either format, or `None` when it holds none.
pub fn line_text(line: &[u8]) -> Option<LineText> {
    let map = object(line)?;
    let kind = string(&map, "type")?;
    let timestamp = string(&map, "timestamp").map(str::to_owned);
    let mut out = String::new();
    let (type_name, role, id) = match kind {
        "user" | "assistant" if map.contains_key("uuid") => {
            let message = map.get("message")?;
            let mut role = kind.to_owned();
            if let Some(Value::Array(blocks)) = message.get("content")
                && !blocks.is_empty()
                && blocks
                    .iter()
                    .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                role = "toolResult".into();
            }
            content_text(message.get("content"), &mut out);
            let type_name = if map.get("isCompactSummary") == Some(&Value::Bool(true)) {
                "compaction"
            } else {
                "message"
            };
            let id = string(&map, "uuid").unwrap_or_default().to_owned();
            (type_name, Some(role), id)
        }
        "custom-title" | "ai-title" | "summary" => {
            for key in ["customTitle", "aiTitle", "summary"] {
                push(string(&map, key), &mut out);
            }
            ("session_info", None, String::new())
        }
        "response_item" => {
            let payload = map.get("payload")?.as_object()?;
            let role = codex_item(payload, &mut out)?;
            ("message", Some(role), String::new())
        }
        "compacted" => {
            let payload = map.get("payload")?.as_object()?;
            push(string(payload, "message"), &mut out);
            ("compaction", None, String::new())
        }
        _ => return None,
    };
    if out.is_empty() {
        return None;
    }
    Some(LineText {
        type_name,
        role,
        id,
        timestamp,
        text: out,
    })
}

/// A Codex response item's text; returns its role, or `None` for an item type without text.
fn codex_item(payload: &Map<String, Value>, out: &mut String) -> Option<String> {
    match string(payload, "type")? {
        "message" => {
            content_text(payload.get("content"), out);
            Some(string(payload, "role").unwrap_or("assistant").to_owned())
        }
        "reasoning" => {
            content_text(payload.get("summary"), out);
            content_text(payload.get("content"), out);
            Some("assistant".into())
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            push(string(payload, "name"), out);
            for key in ["arguments", "input", "action"] {
                // `arguments` is JSON in a string: its values are read, not its keys.
                match payload.get(key) {
                    Some(Value::String(json)) => match serde_json::from_str::<Value>(json) {
                        Ok(value) => values_text(Some(&value), out),
                        Err(_) => push(Some(json), out),
                    },
                    other => values_text(other, out),
                }
            }
            Some("assistant".into())
        }
        "function_call_output" | "custom_tool_call_output" => {
            match payload.get("output") {
                Some(Value::String(text)) => push(Some(text), out),
                other => content_text(other, out),
            }
            Some("toolResult".into())
        }
        _ => None,
    }
}

/// The text of a message's `content`: a string, or blocks of `text`, `thinking`, `tool_use`
/// (name and argument values), `tool_result` (its content), `input_text`, `output_text`,
/// `summary_text`. Images and signatures are left out.
fn content_text(content: Option<&Value>, out: &mut String) {
    match content {
        Some(Value::String(text)) => push(Some(text), out),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        push(block.get("name").and_then(Value::as_str), out);
                        values_text(block.get("input"), out);
                    }
                    Some("tool_result") => match block.get("content") {
                        Some(Value::String(text)) => push(Some(text), out),
                        Some(Value::Array(inner)) => {
                            for part in inner {
                                push(part.get("text").and_then(Value::as_str), out);
                            }
                        }
                        _ => {}
                    },
                    Some("thinking") => push(block.get("thinking").and_then(Value::as_str), out),
                    _ => push(block.get("text").and_then(Value::as_str), out),
                }
            }
        }
        _ => {}
    }
}

/// Every string value under `value` (object keys left out), depth first, at most
/// [`DEPTH_MAX`] levels down.
fn values_text(value: Option<&Value>, out: &mut String) {
    let mut stack: Vec<(&Value, usize)> = value.into_iter().map(|v| (v, 0)).collect();
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::String(text) => push(Some(text), out),
            Value::Array(items) if depth < DEPTH_MAX => {
                stack.extend(items.iter().rev().map(|v| (v, depth + 1)));
            }
            Value::Object(map) if depth < DEPTH_MAX => {
                stack.extend(map.values().rev().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
}

fn push(text: Option<&str>, out: &mut String) {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return;
    };
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}
