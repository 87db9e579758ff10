//! A Claude Code session as pi entries (format-spec/convert.md, "Claude Code"). The tree is
//! kept: each carried entry hangs under the pi entry that stands for its source parent (a
//! compact boundary under its `logicalParentUuid`), an entry that is not carried stands for
//! its parent. Assistant lines of one API message (one `message.id`, each line a child of the
//! one before) become one assistant message; a `user` line's `tool_result` blocks become
//! `toolResult` messages; a compact boundary and its summary become one `compaction`.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::builder::{Builder, image, text_block, time_of, usage};
use super::types::{Converted, Options};
use crate::agents::claude_code::{self, LineClass, class};
use crate::agents::lines::object;
use crate::agents::transcript::{Format, Transcript};

/// The provider and API pi names Anthropic's Messages API with.
const PROVIDER: &str = "anthropic";
const API: &str = "anthropic-messages";

pub(super) fn convert(bytes: &[u8], options: &Options) -> Converted {
    let transcript = claude_code::parse(bytes);
    let mut builder = Builder::new(&options.session_id, bytes);
    builder.problems(&transcript.problems);
    let maps: Vec<Option<Map<String, Value>>> = transcript
        .lines
        .iter()
        .map(|line| object(&bytes[line.offset..line.offset + line.len]))
        .collect();
    let map_of = |entry: usize| maps[transcript.entries[entry].line].as_ref();
    // A subagent's own file (every entry a sidechain) is carried as a session of its own.
    let subagent_file = transcript.entries.iter().all(|e| e.sidechain);
    let leaf = match transcript.leaf {
        None if subagent_file => transcript.entries.len().checked_sub(1),
        leaf => leaf,
    };
    let selected = select(&transcript, leaf, options.all_branches, subagent_file);

    let mut state = State {
        pi_of: vec![None; transcript.entries.len()],
        consumed: vec![false; transcript.entries.len()],
        groups: HashMap::new(),
        tool_names: HashMap::new(),
        last_ms: None,
    };
    let by_uuid: HashMap<&str, usize> = transcript
        .entries
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| Some((entry.id.as_deref()?, index)))
        .collect();
    for (entry, &selection) in selected.iter().enumerate() {
        let line = transcript.line_of(entry);
        let up = up(&transcript, entry);
        let parent = up.and_then(|p| state.pi_of[p]);
        state.pi_of[entry] = parent;
        let Some(map) = map_of(entry) else { continue };
        if let Some(ms) = time_of(map) {
            state.last_ms = Some(ms);
        }
        match selection {
            Selected::Yes => {}
            Selected::No(kind, reason) => {
                builder.not_carried(line.offset, kind.to_owned(), reason);
                continue;
            }
        }
        if state.consumed[entry] {
            continue;
        }
        let ms = state.last_ms.unwrap_or(0);
        let carried = match (line.kind.as_str(), line.subtype.as_deref()) {
            ("user", _) => user(&mut builder, &mut state, map, parent, ms, line.offset),
            ("assistant", _) => assistant(
                &mut builder,
                &mut state,
                map,
                parent,
                (entry, up),
                ms,
                line.offset,
            ),
            ("system", Some("compact_boundary")) => {
                let summary = transcript.children(entry).into_iter().find(|&child| {
                    map_of(child).and_then(|m| m.get("isCompactSummary")) == Some(&json!(true))
                });
                let summary_text = summary.and_then(map_of).map(message_text);
                if summary_text.is_none() {
                    builder.not_carried(
                        line.offset,
                        "system:compact_boundary".into(),
                        "no compact summary follows the boundary: the compaction's summary is empty",
                    );
                }
                let index = compaction(
                    &mut builder,
                    &state,
                    map,
                    &by_uuid,
                    parent,
                    ms,
                    summary_text.unwrap_or_default(),
                );
                if let Some(summary) = summary {
                    state.consumed[summary] = true;
                    state.pi_of[summary] = Some(index);
                }
                Some(index)
            }
            ("system", subtype) => {
                builder.not_carried(
                    line.offset,
                    format!("system:{}", subtype.unwrap_or("")),
                    "the client's own note (turn duration, an API error shown...), not sent to the model",
                );
                None
            }
            ("attachment", subtype) => {
                let reason = if map.contains_key("rendered") {
                    "context the client adds to its request (environment, tools, date...): pi adds its own"
                } else {
                    "the client's state, not sent to the model"
                };
                builder.not_carried(
                    line.offset,
                    format!("attachment:{}", subtype.unwrap_or("")),
                    reason,
                );
                None
            }
            (kind, _) => {
                builder.not_carried(
                    line.offset,
                    kind.to_owned(),
                    "a line kind pi has no place for",
                );
                None
            }
        };
        if carried.is_some() {
            state.pi_of[entry] = carried;
        }
    }

    // The title is the last `custom-title`, else the last `ai-title`, as the client shows it.
    let (mut custom_title, mut ai_title) = (None, None);
    for (line, map) in transcript.lines.iter().zip(&maps) {
        if line.entry.is_some() {
            continue;
        }
        let Some(map) = map else { continue };
        match line.kind.as_str() {
            // The title is carried as pi's session name.
            "custom-title" => {
                custom_title = map
                    .get("customTitle")
                    .and_then(Value::as_str)
                    .or(custom_title);
            }
            "ai-title" => ai_title = map.get("aiTitle").and_then(Value::as_str).or(ai_title),
            // It names the leaf, which is carried as pi's leaf (the last entry).
            "last-prompt" => {}
            kind => {
                let reason = match class(kind) {
                    LineClass::LastWins => {
                        "the client's session metadata (mode, cost, tools used...): pi has no such entry"
                    }
                    LineClass::BoundaryCleared => {
                        "the client's record of its requests or file history, not the conversation"
                    }
                    _ => "a line kind pi has no place for",
                };
                builder.not_carried(line.offset, kind.to_owned(), reason);
            }
        }
    }

    if let Some(leaf) = leaf.and_then(|leaf| state.pi_of[leaf]) {
        builder.move_last(leaf);
    }
    if let Some(name) = custom_title.or(ai_title) {
        let mut fields = Map::new();
        fields.insert("name".into(), json!(name));
        let under = builder.entries.len().checked_sub(1);
        builder.push("session_info", under, state.last_ms.unwrap_or(0), fields);
    }
    let cwd = maps
        .iter()
        .flatten()
        .find_map(|map| map.get("cwd").and_then(Value::as_str))
        .unwrap_or(&options.fallback_cwd)
        .to_owned();
    let first_ms = maps.iter().flatten().find_map(time_of);
    builder.finish(Format::ClaudeCode, cwd, first_ms)
}

/// What the walk keeps between entries.
struct State {
    /// Per source entry, the pi entry that stands for it.
    pi_of: Vec<Option<usize>>,
    /// Source entries already carried by an earlier one (a compact summary).
    consumed: Vec<bool>,
    /// Per pi assistant message: its API `message.id` and the source entry merged last.
    groups: HashMap<usize, (String, usize)>,
    /// Tool names by `tool_use` id, for the results.
    tool_names: HashMap<String, String>,
    /// The last time read, for lines without one.
    last_ms: Option<i64>,
}

/// Whether an entry is carried, and why not.
#[derive(Clone, Copy)]
enum Selected {
    Yes,
    No(&'static str, &'static str),
}

/// The entry's parent in the whole tree: `parentUuid`, or for a compact boundary its
/// `logicalParentUuid`.
fn up(transcript: &Transcript, entry: usize) -> Option<usize> {
    let entry = &transcript.entries[entry];
    entry.parent.or(entry.logical_parent)
}

/// Which entries are carried: the active branch (from the leaf up, across compact
/// boundaries), or every branch but what descends from the leaf (pi's leaf is the last entry,
/// so nothing can be written under it); a subagent's entries only in its own file.
fn select(
    transcript: &Transcript,
    leaf: Option<usize>,
    all_branches: bool,
    subagent_file: bool,
) -> Vec<Selected> {
    let count = transcript.entries.len();
    let mut selected = vec![
        Selected::No(
            "branch",
            "on a branch other than the active one (--all-branches carries it)"
        );
        count
    ];
    if all_branches {
        let mut under_leaf = vec![false; count];
        for entry in 0..count {
            let parent = up(transcript, entry);
            under_leaf[entry] = parent.is_some_and(|p| Some(p) == leaf || under_leaf[p]);
            selected[entry] = if under_leaf[entry] {
                Selected::No(
                    "after-leaf",
                    "continues past the active leaf: pi's leaf is the session's last entry",
                )
            } else {
                Selected::Yes
            };
        }
    } else {
        let mut at = leaf;
        while let Some(entry) = at {
            selected[entry] = Selected::Yes;
            at = up(transcript, entry);
        }
    }
    for (entry, selected) in selected.iter_mut().enumerate() {
        if transcript.entries[entry].sidechain && !subagent_file {
            *selected = Selected::No(
                "sidechain",
                "a subagent's entry: its transcript is a session of its own (convert its file)",
            );
        }
    }
    selected
}

/// The text of a `user` line's message (a string, or its text blocks joined).
fn message_text(map: &Map<String, Value>) -> String {
    match map.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A `user` line: its tool results, then its text and images as one user message.
fn user(
    builder: &mut Builder,
    state: &mut State,
    map: &Map<String, Value>,
    parent: Option<usize>,
    ms: i64,
    offset: usize,
) -> Option<usize> {
    let content = map.get("message").and_then(|m| m.get("content"));
    let blocks = match content {
        Some(Value::String(text)) => {
            let message = json!({ "role": "user", "content": text, "timestamp": ms });
            return Some(builder.message(parent, ms, message));
        }
        Some(Value::Array(blocks)) => blocks,
        _ => {
            builder.not_carried(
                offset,
                "user".into(),
                "a user line without a message content",
            );
            return None;
        }
    };
    let mut at = parent;
    let mut carried = None;
    let mut parts = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(text_block(
                block.get("text").and_then(Value::as_str).unwrap_or(""),
            )),
            Some("image") => match image_of(block) {
                Some(image) => parts.push(image),
                None => builder.not_carried(
                    offset,
                    "user.image".into(),
                    "an image not given as base64 data",
                ),
            },
            Some("tool_result") => {
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let name = state.tool_names.get(id).map_or("unknown", String::as_str);
                let content = tool_result_content(builder, block.get("content"), offset);
                let is_error = block.get("is_error") == Some(&json!(true));
                let message = json!({
                    "role": "toolResult",
                    "toolCallId": id,
                    "toolName": name,
                    "content": content,
                    "isError": is_error,
                    "timestamp": ms,
                });
                let index = builder.message(at, ms, message);
                at = Some(index);
                carried = Some(index);
            }
            other => builder.not_carried(
                offset,
                format!("user.{}", other.unwrap_or("?")),
                "a content block pi's user messages have no shape for",
            ),
        }
    }
    if !parts.is_empty() {
        let message = json!({ "role": "user", "content": parts, "timestamp": ms });
        carried = Some(builder.message(at, ms, message));
    }
    carried
}

/// A `tool_result` block's content as pi's text and image blocks.
fn tool_result_content(
    builder: &mut Builder,
    content: Option<&Value>,
    offset: usize,
) -> Vec<Value> {
    match content {
        Some(Value::String(text)) => vec![text_block(text)],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| match block.get("type").and_then(Value::as_str) {
                Some("text") => Some(text_block(
                    block.get("text").and_then(Value::as_str).unwrap_or(""),
                )),
                Some("image") => {
                    let image = image_of(block);
                    if image.is_none() {
                        builder.not_carried(
                            offset,
                            "tool_result.image".into(),
                            "an image not given as base64 data",
                        );
                    }
                    image
                }
                other => {
                    builder.not_carried(
                        offset,
                        format!("tool_result.{}", other.unwrap_or("?")),
                        "a content block pi's tool results have no shape for",
                    );
                    None
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An Anthropic image block with a base64 source as pi's image block.
fn image_of(block: &Value) -> Option<Value> {
    let source = block.get("source")?;
    if source.get("type")?.as_str()? != "base64" {
        return None;
    }
    Some(image(
        source.get("data")?.as_str()?,
        source.get("media_type")?.as_str()?,
    ))
}

/// An `assistant` line: merged into the assistant message of its parent when both are lines
/// of one API message, else a new assistant message (after a `model_change` when the model
/// in force differs).
fn assistant(
    builder: &mut Builder,
    state: &mut State,
    map: &Map<String, Value>,
    parent: Option<usize>,
    (entry, source_parent): (usize, Option<usize>),
    ms: i64,
    offset: usize,
) -> Option<usize> {
    let message = map.get("message")?;
    let message_id = message.get("id").and_then(Value::as_str).unwrap_or("");
    let mut blocks = Vec::new();
    for block in message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => blocks.push(text_block(
                block.get("text").and_then(Value::as_str).unwrap_or(""),
            )),
            Some("thinking") => {
                let mut thinking = json!({
                    "type": "thinking",
                    "thinking": block.get("thinking").and_then(Value::as_str).unwrap_or(""),
                });
                if let Some(signature) = block.get("signature").and_then(Value::as_str) {
                    thinking["thinkingSignature"] = json!(signature);
                }
                blocks.push(thinking);
            }
            Some("redacted_thinking") => blocks.push(json!({
                "type": "thinking",
                "thinking": "",
                "thinkingSignature": block.get("data").and_then(Value::as_str).unwrap_or(""),
                "redacted": true,
            })),
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                state.tool_names.insert(id.to_owned(), name.to_owned());
                let arguments = match block.get("input") {
                    Some(Value::Object(input)) => Value::Object(input.clone()),
                    _ => {
                        builder.not_carried(
                            offset,
                            "tool_use.input".into(),
                            "the call's input is not a JSON object: carried as {}",
                        );
                        json!({})
                    }
                };
                blocks.push(
                    json!({ "type": "toolCall", "id": id, "name": name, "arguments": arguments }),
                );
            }
            other => builder.not_carried(
                offset,
                format!("assistant.{}", other.unwrap_or("?")),
                "a content block pi's assistant messages have no shape for",
            ),
        }
    }
    let stop = match message.get("stop_reason").and_then(Value::as_str) {
        Some("tool_use") => Some("toolUse"),
        Some("max_tokens") => Some("length"),
        Some(_) => Some("stop"),
        None => None,
    };
    let count = |key: &str| {
        message
            .get("usage")
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let usage = usage(
        count("input_tokens"),
        count("output_tokens"),
        count("cache_read_input_tokens"),
        count("cache_creation_input_tokens"),
    );
    let is_error = map.get("isApiErrorMessage") == Some(&json!(true));

    let merge = parent.filter(|&p| {
        !message_id.is_empty()
            && state
                .groups
                .get(&p)
                .is_some_and(|(id, last)| id == message_id && Some(*last) == source_parent)
    });
    let index = match merge {
        Some(index) => {
            let message = &mut builder.entries[index].fields["message"];
            if let Some(content) = message["content"].as_array_mut() {
                content.extend(blocks);
            }
            message["usage"] = usage;
            if let Some(stop) = stop {
                message["stopReason"] = json!(stop);
            }
            index
        }
        None => {
            let model = message.get("model").and_then(Value::as_str).unwrap_or("");
            let under = if model.is_empty() || model == "<synthetic>" {
                parent
            } else {
                builder.model_change(parent, ms, PROVIDER, model)
            };
            let mut pi_message = json!({
                "role": "assistant",
                "content": blocks,
                "api": API,
                "provider": PROVIDER,
                "model": model,
                "usage": usage,
                "stopReason": if is_error { "error" } else { stop.unwrap_or("stop") },
                "timestamp": ms,
            });
            if is_error {
                pi_message["errorMessage"] = json!(blocks_text(&pi_message["content"]));
            }
            builder.message(under, ms, pi_message)
        }
    };
    if !message_id.is_empty() {
        state.groups.insert(index, (message_id.to_owned(), entry));
    }
    Some(index)
}

/// The text blocks of a pi content array, joined.
fn blocks_text(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A compact boundary as pi's compaction: the summary, and as `firstKeptEntryId` the first
/// of the boundary's preserved messages that is carried on the compaction's branch (else the
/// compaction itself: nothing kept).
fn compaction(
    builder: &mut Builder,
    state: &State,
    map: &Map<String, Value>,
    by_uuid: &HashMap<&str, usize>,
    parent: Option<usize>,
    ms: i64,
    summary: String,
) -> usize {
    let metadata = map.get("compactMetadata");
    let tokens_before = metadata
        .and_then(|m| m.get("preTokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let kept = metadata
        .and_then(|m| m.get("preservedMessages"))
        .and_then(|p| p.get("uuids"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|uuid| by_uuid.get(uuid.as_str()?).copied())
        .find_map(|entry| state.pi_of[entry])
        .filter(|&kept| builder.is_ancestor_or_self(kept, parent));
    let mut fields = Map::new();
    fields.insert("summary".into(), json!(summary));
    fields.insert("firstKeptEntryId".into(), Value::Null);
    fields.insert("tokensBefore".into(), json!(tokens_before));
    let index = builder.push("compaction", parent, ms, fields);
    let kept_id = builder.entries[kept.unwrap_or(index)].id.clone();
    builder.entries[index]
        .fields
        .insert("firstKeptEntryId".into(), json!(kept_id));
    index
}
