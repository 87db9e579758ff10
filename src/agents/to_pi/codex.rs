//! A Codex rollout as pi entries (format-spec/convert.md, "Codex"): one chain. Consecutive
//! model-side response items (`reasoning`, `function_call`, an `assistant` message) become one
//! assistant message, closed by a tool output, a user message, a turn's start or end or a
//! compaction;
//! `function_call_output` becomes a `toolResult`; a `compacted` line becomes a `compaction`
//! with its summary; a turn's model, when it changes, a `model_change`.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::builder::{Builder, image, text_block, time_of, usage};
use super::types::{Converted, Options};
use crate::agents::codex;
use crate::agents::lines::object;
use crate::agents::transcript::Format;

/// The API pi names OpenAI's Responses API with.
const API: &str = "openai-responses";

pub(super) fn convert(bytes: &[u8], options: &Options) -> Converted {
    let transcript = codex::parse(bytes);
    let mut builder = Builder::new(&options.session_id, bytes);
    builder.problems(&transcript.problems);
    let mut walk = Walk {
        at: None,
        open: None,
        provider: "openai".to_owned(),
        model: None,
        tool_names: HashMap::new(),
        tokens_before: 0,
    };
    let mut cwd = None;
    let mut first_ms = None;
    let mut ms = 0;
    for line in &transcript.lines {
        let Some(map) = object(&bytes[line.offset..line.offset + line.len]) else {
            continue;
        };
        if let Some(time) = time_of(&map) {
            ms = time;
            first_ms = first_ms.or(Some(time));
        }
        let empty = Map::new();
        let payload = map
            .get("payload")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let subtype = line.subtype.as_deref().unwrap_or("");
        let offset = line.offset;
        match line.kind.as_str() {
            "session_meta" => {
                cwd = cwd.or(payload
                    .get("cwd")
                    .and_then(Value::as_str)
                    .map(str::to_owned));
                if let Some(provider) = payload.get("model_provider").and_then(Value::as_str) {
                    walk.provider = provider.to_owned();
                }
                builder.not_carried(
                    offset,
                    "session_meta".into(),
                    "the thread's header: its cwd and time make pi's header; its id, base instructions (pi sends its own system prompt), client and git state are not carried",
                );
            }
            "turn_context" => {
                walk.open = None;
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    walk.model = Some(model.to_owned());
                }
                builder.not_carried(
                    offset,
                    "turn_context".into(),
                    "the turn's settings (approval policy, sandbox, effort...): pi has none; its model is carried as a model_change",
                );
            }
            "response_item" => walk.item(&mut builder, payload, subtype, ms, offset),
            "compacted" => {
                walk.open = None;
                let summary = payload.get("message").and_then(Value::as_str).unwrap_or("");
                let mut fields = Map::new();
                fields.insert("summary".into(), json!(summary));
                fields.insert("firstKeptEntryId".into(), Value::Null);
                fields.insert("tokensBefore".into(), json!(walk.tokens_before));
                let index = builder.push("compaction", walk.at, ms, fields);
                let id = builder.entries[index].id.clone();
                builder.entries[index]
                    .fields
                    .insert("firstKeptEntryId".into(), json!(id));
                walk.at = Some(index);
                builder.not_carried(
                    offset,
                    "compacted.replacement_history".into(),
                    "the items Codex keeps after the summary (the earlier user prompts...): pi's compaction keeps the summary only",
                );
            }
            "event_msg" => {
                // A turn's start or end ends the model's reply (the compaction's request
                // has no `turn_context` of its own).
                if matches!(subtype, "task_started" | "task_complete" | "turn_aborted") {
                    walk.open = None;
                }
                if subtype == "token_count"
                    && let Some(tokens) = payload
                        .get("info")
                        .and_then(|i| i.get("last_token_usage"))
                        .and_then(|u| u.get("input_tokens"))
                        .and_then(Value::as_u64)
                {
                    walk.tokens_before = tokens;
                }
                builder.not_carried(
                    offset,
                    format!("event_msg:{subtype}"),
                    "an event the client showed or counted, not sent to the model",
                );
            }
            kind => builder.not_carried(
                offset,
                kind.to_owned(),
                "the client's own state or accounting, not the conversation",
            ),
        }
    }
    let cwd = cwd.unwrap_or_else(|| options.fallback_cwd.clone());
    builder.finish(Format::Codex, cwd, first_ms)
}

/// Where the walk is in the chain.
struct Walk {
    /// The entry the next one goes under.
    at: Option<usize>,
    /// The assistant message being filled, while model-side items follow one another.
    open: Option<usize>,
    provider: String,
    /// The model of the current turn (`turn_context`).
    model: Option<String>,
    /// Tool names by `call_id`, for the outputs.
    tool_names: HashMap<String, String>,
    /// The input tokens of the last model request (`token_count`), for a compaction.
    tokens_before: u64,
}

impl Walk {
    /// A `response_item`.
    fn item(
        &mut self,
        builder: &mut Builder,
        payload: &Map<String, Value>,
        subtype: &str,
        ms: i64,
        offset: usize,
    ) {
        let role = payload.get("role").and_then(Value::as_str).unwrap_or("");
        match (subtype, role) {
            ("message", "user") => {
                self.open = None;
                let parts = self.parts(builder, payload.get("content"), offset, "message");
                let content = match parts.as_slice() {
                    [only] if only["type"] == "text" => only["text"].clone(),
                    _ => Value::Array(parts),
                };
                let message = json!({ "role": "user", "content": content, "timestamp": ms });
                self.at = Some(builder.message(self.at, ms, message));
            }
            ("message", "assistant") => {
                let parts = self.parts(builder, payload.get("content"), offset, "message");
                self.append(builder, parts, ms);
            }
            ("message", role) => builder.not_carried(
                offset,
                format!("response_item:message:{role}"),
                "Codex's own instructions to the model: pi sends its own system prompt",
            ),
            ("reasoning", _) => {
                let joined = |key: &str| {
                    payload
                        .get(key)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n\n")
                };
                let mut thinking = joined("summary");
                if thinking.is_empty() {
                    thinking = joined("content");
                }
                // pi's openai-responses provider keeps the whole reasoning item as the
                // signature, to send it back.
                let signature = Value::Object(payload.clone()).to_string();
                let block = json!({ "type": "thinking", "thinking": thinking, "thinkingSignature": signature });
                self.append(builder, vec![block], ms);
            }
            ("function_call", _) => {
                let id = payload.get("call_id").and_then(Value::as_str).unwrap_or("");
                let name = payload.get("name").and_then(Value::as_str).unwrap_or("");
                self.tool_names.insert(id.to_owned(), name.to_owned());
                let text = payload
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let arguments = match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(arguments)) => Value::Object(arguments),
                    _ => {
                        builder.not_carried(
                            offset,
                            "function_call.arguments".into(),
                            "the call's arguments are not a JSON object: carried as {}",
                        );
                        json!({})
                    }
                };
                let block =
                    json!({ "type": "toolCall", "id": id, "name": name, "arguments": arguments });
                self.append(builder, vec![block], ms);
            }
            ("function_call_output", _) => {
                self.open = None;
                let id = payload.get("call_id").and_then(Value::as_str).unwrap_or("");
                let name = self
                    .tool_names
                    .get(id)
                    .map_or("unknown", String::as_str)
                    .to_owned();
                let content = match payload.get("output") {
                    Some(Value::String(text)) => vec![text_block(text)],
                    Some(Value::Array(_)) => self.parts(
                        builder,
                        payload.get("output"),
                        offset,
                        "function_call_output",
                    ),
                    Some(other) => vec![text_block(&other.to_string())],
                    None => Vec::new(),
                };
                let message = json!({
                    "role": "toolResult",
                    "toolCallId": id,
                    "toolName": name,
                    "content": content,
                    "isError": false,
                    "timestamp": ms,
                });
                self.at = Some(builder.message(self.at, ms, message));
            }
            (other, _) => builder.not_carried(
                offset,
                format!("response_item:{other}"),
                "a Responses API item pi's messages have no shape for",
            ),
        }
    }

    /// Adds model-side blocks to the open assistant message, or opens one (after a
    /// `model_change` when the turn's model is not the one in force).
    fn append(&mut self, builder: &mut Builder, blocks: Vec<Value>, ms: i64) {
        let index = match self.open {
            Some(index) => index,
            None => {
                let model = self.model.clone().unwrap_or_default();
                let under = if model.is_empty() {
                    self.at
                } else {
                    builder.model_change(self.at, ms, &self.provider, &model)
                };
                let message = json!({
                    "role": "assistant",
                    "content": [],
                    "api": API,
                    "provider": self.provider,
                    "model": model,
                    "usage": usage(0, 0, 0, 0),
                    "stopReason": "stop",
                    "timestamp": ms,
                });
                let index = builder.message(under, ms, message);
                self.open = Some(index);
                self.at = Some(index);
                index
            }
        };
        let message = &mut builder.entries[index].fields["message"];
        if let Some(content) = message["content"].as_array_mut() {
            content.extend(blocks);
            let tool_use = content.last().is_some_and(|b| b["type"] == "toolCall");
            message["stopReason"] = json!(if tool_use { "toolUse" } else { "stop" });
        }
    }

    /// Message content items (`input_text`, `output_text`, `input_image`...) as pi blocks.
    fn parts(
        &self,
        builder: &mut Builder,
        content: Option<&Value>,
        offset: usize,
        kind: &str,
    ) -> Vec<Value> {
        let mut parts = Vec::new();
        for item in content.and_then(Value::as_array).into_iter().flatten() {
            let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
            match item.get("type").and_then(Value::as_str).unwrap_or("") {
                "input_text" | "output_text" | "text" => parts.push(text_block(text("text"))),
                "refusal" => parts.push(text_block(text("refusal"))),
                "input_image" => match data_url(text("image_url")) {
                    Some((mime_type, data)) => parts.push(image(data, mime_type)),
                    None => builder.not_carried(
                        offset,
                        format!("{kind}.input_image"),
                        "an image given by address, not as data",
                    ),
                },
                other => builder.not_carried(
                    offset,
                    format!("{kind}.{other}"),
                    "a content item pi's messages have no shape for",
                ),
            }
        }
        parts
    }
}

/// The media type and base64 data of a `data:<type>;base64,<data>` address.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (mime_type, data) = rest.split_once(";base64,")?;
    Some((mime_type, data))
}
