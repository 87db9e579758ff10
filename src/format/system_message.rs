//! The system message a pi 1.6 compaction stores (`systemMessage`): pi-ai's
//! `getCurrentSystemMessage` over the context's messages, every system message replayed into
//! one. Pure code: message JSON in, message JSON out.
//!
//! The replay, as pi-ai 1.6 does it: the first system message's `timestamp` (the first that is
//! not null); each one's content text (a string, or its text parts joined by `\n`) appended when
//! not empty, the pieces joined by a blank line; `sections` patched by name (`null` removes
//! one); tools added and removed by name (`toolsAdded`, `toolsRemoved`). No timestamp and no
//! tool: no system message. The result's keys: `role, content[, sections][, toolsAdded],
//! timestamp`, the timestamp being the compaction's own (pi spreads it over the replay).

use serde_json::Value;
use serde_json::value::RawValue;

use super::json_scan;
use super::json_string::push_json_string;

/// The system message a compaction appended at `timestamp_ms` stores, given the messages of
/// the context it summarises (raw JSON each, in order); `None` when pi stores none.
pub fn current_system_message<'a>(
    messages: impl IntoIterator<Item = &'a str>,
    timestamp_ms: i64,
) -> Option<String> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Vec<(String, Value)> = Vec::new();
    // Tools by name (the name's raw JSON, `undefined` when absent), in Map insertion order.
    let mut tools: Vec<(String, &'a RawValue)> = Vec::new();
    let mut seen_timestamp = false;
    for message in messages {
        let Ok(found) = json_scan::scan(
            message,
            &[
                "role",
                "content",
                "sections",
                "toolsAdded",
                "toolsRemoved",
                "timestamp",
            ],
        ) else {
            continue;
        };
        let [role, text, patch, added, removed, timestamp] = found.fields;
        if role != Some("\"system\"") {
            continue;
        }
        // `timestamp ??= message.timestamp`.
        seen_timestamp |= timestamp.is_some_and(|timestamp| timestamp != "null");
        let text = text.map(content_text).unwrap_or_default();
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(patch) =
            patch.and_then(|raw| serde_json::from_str::<serde_json::Map<String, Value>>(raw).ok())
        {
            for (name, value) in js_key_order(patch.into_iter().collect()) {
                let at = sections.iter().position(|(held, _)| *held == name);
                match (value.is_null(), at) {
                    (true, Some(at)) => {
                        sections.remove(at);
                    }
                    (true, None) => {}
                    (false, Some(at)) => sections[at].1 = value,
                    (false, None) => sections.push((name, value)),
                }
            }
        }
        // `getCurrentTools`: per message, removals first, then additions.
        for name in raw_items(removed).map(tool_name) {
            tools.retain(|(held, _)| *held != name);
        }
        for tool in raw_items(added) {
            let name = tool_name(tool);
            match tools.iter_mut().find(|(held, _)| *held == name) {
                Some(held) => held.1 = tool,
                None => tools.push((name, tool)),
            }
        }
    }
    if !seen_timestamp && tools.is_empty() {
        return None;
    }
    let mut out = String::from("{\"role\":\"system\",\"content\":");
    push_json_string(&mut out, &content.join("\n\n"));
    if !sections.is_empty() {
        out.push_str(",\"sections\":{");
        for (index, (name, value)) in js_key_order(sections).into_iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            push_json_string(&mut out, &name);
            out.push(':');
            out.push_str(&value.to_string());
        }
        out.push('}');
    }
    if !tools.is_empty() {
        out.push_str(",\"toolsAdded\":[");
        for (index, (_, tool)) in tools.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            out.push_str(tool.get());
        }
        out.push(']');
    }
    out.push_str(",\"timestamp\":");
    out.push_str(&timestamp_ms.to_string());
    out.push('}');
    Some(out)
}

/// pi-ai's `contentText`: a string as it is; an array's `text` parts' texts joined by `\n`
/// (a missing text is empty, as `Array.join` writes it).
fn content_text(raw: &str) -> String {
    if let Ok(text) = serde_json::from_str::<String>(raw) {
        return text;
    }
    let Ok(parts) = serde_json::from_str::<Vec<Value>>(raw) else {
        return String::new();
    };
    parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
        .map(|part| part.get("text").and_then(Value::as_str).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The items of a raw JSON array (none for anything else), each as raw JSON.
fn raw_items(raw: Option<&str>) -> impl Iterator<Item = &RawValue> {
    raw.and_then(|raw| serde_json::from_str::<Vec<&RawValue>>(raw).ok())
        .unwrap_or_default()
        .into_iter()
}

/// The key a tool is held under: its `name`'s raw JSON, `undefined` without one.
fn tool_name(tool: &RawValue) -> String {
    json_scan::scan(tool.get(), &["name"])
        .ok()
        .and_then(|found| found.fields[0])
        .unwrap_or("undefined")
        .to_string()
}

/// Keys in the order a JavaScript object holds them: array indices (canonical integers below
/// 2^32 - 1) first, ascending, then the others in insertion order.
fn js_key_order(mut entries: Vec<(String, Value)>) -> Vec<(String, Value)> {
    let index = |key: &str| -> Option<u32> {
        let value: u32 = key.parse().ok()?;
        (value != u32::MAX && value.to_string() == key).then_some(value)
    };
    // A stable sort keeps the insertion order among the non-index keys.
    entries.sort_by_key(|(key, _)| index(key).map_or((1, 0), |value| (0, value)));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The replay of pi-ai 1.6: contents appended, sections patched by name (a null removes
    /// one, integer-like names come first as in a JavaScript object), tools added and removed
    /// by name, the compaction's timestamp; nothing without a timestamp or a tool.
    #[test]
    fn replays_system_messages() {
        let messages = [
            r#"{"role":"system","content":"base","sections":{"b":"B","a":"A","7":"seven"},"toolsAdded":[{"name":"read","x":1},{"name":"bash"}],"timestamp":5}"#,
            r#"{"role":"user","content":"hi","timestamp":6}"#,
            r#"{"role":"system","content":[{"type":"text","text":"more"},{"type":"image"},{"type":"text","text":"two"}],"sections":{"a":null,"c":"C","b":"B2"},"toolsRemoved":[{"name":"bash"}],"toolsAdded":[{"name":"read","x":2}],"timestamp":9}"#,
            r#"{"role":"system","content":"","timestamp":10}"#,
        ];
        assert_eq!(
            current_system_message(messages, 42).as_deref(),
            Some(
                r#"{"role":"system","content":"base\n\nmore\ntwo","sections":{"7":"seven","b":"B2","c":"C"},"toolsAdded":[{"name":"read","x":2}],"timestamp":42}"#
            )
        );
        assert_eq!(
            current_system_message([r#"{"role":"user","content":"x"}"#], 1),
            None
        );
        assert_eq!(
            current_system_message([r#"{"role":"system","content":"x"}"#], 1),
            None,
            "no timestamp and no tool"
        );
    }
}
