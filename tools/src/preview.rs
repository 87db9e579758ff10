//! Short human previews of entries and messages (tree lines, listings, Markdown export).

use serde_json::Value;
use treelog::EntryKind;

/// Characters of text shown in a preview.
pub const PREVIEW_CHARS_MAX: usize = 72;

/// `text` on one line (runs of whitespace become one space), cut to `chars_max` characters
/// with an ellipsis.
pub fn one_line(text: &str, chars_max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
            count += 1;
        }
        for character in word.chars() {
            if count >= chars_max {
                out.push('…');
                return out;
            }
            out.push(character);
            count += 1;
        }
    }
    out
}

/// The text of a message `content`: a string, or the `text` of its text blocks joined by
/// newlines (images become `[image]`).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str) {
                            parts.push(text.to_string());
                        }
                    }
                    Some("image") => parts.push("[image]".into()),
                    _ => {}
                }
            }
            parts.join("\n")
        }
        _ => String::new(),
    }
}

/// The names of the tool calls in an assistant message's content.
pub fn tool_call_names(content: &Value) -> Vec<String> {
    let Some(blocks) = content.as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("toolCall"))
        .map(|block| {
            block
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

fn text_field(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A one-line preview of a message object: its role, then the first words of its text.
pub fn message_preview(message: &Value) -> String {
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("message");
    let content = message.get("content").unwrap_or(&Value::Null);
    let body = match role {
        "assistant" => {
            let mut text = content_text(content);
            let tools = tool_call_names(content);
            if !tools.is_empty() {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(&format!("→ {}", tools.join(", ")));
            }
            if text.is_empty()
                && let Some(error) = message.get("errorMessage").and_then(Value::as_str)
            {
                text = format!("error: {error}");
            }
            text
        }
        "toolResult" => {
            let error = if message.get("isError") == Some(&Value::Bool(true)) {
                " (error)"
            } else {
                ""
            };
            format!(
                "{}{error} {}",
                text_field(message, "toolName"),
                content_text(content)
            )
        }
        "bashExecution" => format!(
            "$ {} → exit {}",
            text_field(message, "command"),
            text_field(message, "exitCode")
        ),
        "custom" => format!(
            "{} {}",
            text_field(message, "customType"),
            content_text(content)
        ),
        _ => content_text(content),
    };
    format!("{role}: {}", one_line(&body, PREVIEW_CHARS_MAX))
}

/// A one-line preview of an entry (its line parsed as `value`), without id or type.
pub fn entry_preview(kind: EntryKind, value: &Value) -> String {
    let field = |key: &str| text_field(value, key);
    let text = match kind {
        EntryKind::Message => {
            return message_preview(value.get("message").unwrap_or(&Value::Null));
        }
        EntryKind::ThinkingLevelChange => field("thinkingLevel"),
        EntryKind::ModelChange => format!("{}/{}", field("provider"), field("modelId")),
        EntryKind::Compaction => format!(
            "keeps from {}: {}",
            field("firstKeptEntryId"),
            field("summary")
        ),
        EntryKind::BranchSummary => format!("from {}: {}", field("fromId"), field("summary")),
        EntryKind::Custom => field("customType"),
        EntryKind::CustomMessage => format!(
            "{}: {}",
            field("customType"),
            content_text(value.get("content").unwrap_or(&Value::Null))
        ),
        EntryKind::Label => match value.get("label").and_then(Value::as_str) {
            Some(label) if !label.is_empty() => format!("{} = {label:?}", field("targetId")),
            _ => format!("{} cleared", field("targetId")),
        },
        EntryKind::SessionInfo => format!("{:?}", field("name")),
        EntryKind::Usage => format!("{} {}/{}", field("kind"), field("provider"), field("model")),
        EntryKind::ContextEdit => match value.get("replacement") {
            Some(Value::Null) => format!("{} removed", field("targetId")),
            Some(replacement) => format!(
                "{} = {}",
                field("targetId"),
                content_text(replacement.get("content").unwrap_or(&Value::Null))
            ),
            None => field("targetId"),
        },
        EntryKind::Other => String::new(),
    };
    one_line(&text, PREVIEW_CHARS_MAX)
}
