//! What a session of another agent is, in a few fields: its id, working directory, title,
//! first and last time, and counts; what `treelog info` and `treelog list` show. Pure code over
//! the file's bytes and its [`Transcript`].
//!
//! The title is the one the client's own resume picker shows (format-spec/claude-code.md §7,
//! format-spec/codex.md §7): Claude Code's last `custom-title`, else its last `last-prompt`'s
//! prompt, else its first user prompt; Codex's first user prompt (the first `item_completed`
//! event of a `UserMessage`, else the first `user` message that is not the client's own
//! `<...>` context).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::lines::{object, string};
use super::transcript::{Format, Transcript};

/// A session's identity and shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The session's id: Claude Code's `sessionId`, Codex's `session_meta.payload.id`.
    pub session_id: Option<String>,
    /// The working directory the session ran in.
    pub cwd: Option<String>,
    /// The title the client's resume picker shows (see the module comment).
    pub title: Option<String>,
    /// The earliest `timestamp` of a line, as written.
    pub created: Option<String>,
    /// The latest `timestamp` of a line, as written: the session's last activity.
    pub last_activity: Option<String>,
    /// Lines by `type`.
    pub counts_by_type: BTreeMap<String, u64>,
    /// `user` and `assistant` messages (Claude Code) or `response_item` messages (Codex).
    pub message_count: u64,
}

/// The summary of a session read as `transcript` from `bytes`.
pub fn summarize(bytes: &[u8], transcript: &Transcript) -> Summary {
    let mut summary = Summary::default();
    let mut custom_title = None;
    let mut last_prompt = None;
    let mut first_prompt = None;
    let mut first_user_message = None;
    for line in &transcript.lines {
        *summary.counts_by_type.entry(line.kind.clone()).or_insert(0) += 1;
        let Some(map) = bytes
            .get(line.offset..line.offset + line.len)
            .and_then(object)
        else {
            continue;
        };
        if let Some(time) = string(&map, "timestamp") {
            if summary.created.as_deref().is_none_or(|t| time < t) {
                summary.created = Some(time.to_owned());
            }
            if summary.last_activity.as_deref().is_none_or(|t| time > t) {
                summary.last_activity = Some(time.to_owned());
            }
        }
        match transcript.format {
            Format::ClaudeCode => {
                if summary.session_id.is_none() {
                    summary.session_id = string(&map, "sessionId").map(str::to_owned);
                }
                if summary.cwd.is_none() {
                    summary.cwd = string(&map, "cwd").map(str::to_owned);
                }
                match line.kind.as_str() {
                    "custom-title" => custom_title = string(&map, "customTitle").map(owned),
                    "last-prompt" => last_prompt = string(&map, "lastPrompt").map(owned),
                    "user" | "assistant" => {
                        summary.message_count += 1;
                        if line.kind == "user"
                            && first_prompt.is_none()
                            && map.get("isMeta") != Some(&Value::Bool(true))
                            && map.get("isSidechain") != Some(&Value::Bool(true))
                        {
                            first_prompt = map
                                .get("message")
                                .and_then(|m| m.get("content"))
                                .and_then(Value::as_str)
                                .map(owned);
                        }
                    }
                    _ => {}
                }
            }
            Format::Codex => {
                let payload = match map.get("payload") {
                    Some(Value::Object(payload)) => payload,
                    _ => continue,
                };
                match line.kind.as_str() {
                    "session_meta" => {
                        summary.session_id = string(payload, "id").map(owned);
                        summary.cwd = string(payload, "cwd").map(owned);
                    }
                    "response_item" if string(payload, "type") == Some("message") => {
                        summary.message_count += 1;
                        if first_user_message.is_none() && string(payload, "role") == Some("user") {
                            first_user_message =
                                first_text(payload).filter(|text| !text.starts_with('<'));
                        }
                    }
                    "event_msg" if first_prompt.is_none() => {
                        if string(payload, "type") == Some("item_completed")
                            && let Some(Value::Object(item)) = payload.get("item")
                            && string(item, "type") == Some("UserMessage")
                        {
                            first_prompt = first_text(item);
                        }
                    }
                    _ => {}
                }
            }
            Format::Pi => {}
        }
    }
    summary.title = match transcript.format {
        Format::ClaudeCode => custom_title.or(last_prompt).or(first_prompt),
        _ => first_prompt.or(first_user_message),
    };
    summary
}

fn owned(text: &str) -> String {
    text.to_owned()
}

/// The first `text` of an object's `content` blocks.
fn first_text(object: &Map<String, Value>) -> Option<String> {
    match object.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .find_map(|b| b.get("text").and_then(Value::as_str))
            .map(owned),
        _ => None,
    }
}
