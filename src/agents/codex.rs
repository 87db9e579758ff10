//! A Codex CLI rollout as a chain (format-spec/codex.md): every line is an entry whose parent
//! is the line before it; the first is `session_meta`, the leaf the last. [`context`] is what
//! Codex sends the model next: the base instructions as a `developer` message, then the last
//! `compacted` line's `replacement_history` (or every `response_item` from the start), then
//! the `response_item`s after it.

use serde_json::{Map, Value, json};

use super::lines::{object, split, string};
use super::transcript::{Entry, Format, Line, Problem, ProblemKind, Transcript};

/// Reads a Codex rollout from its bytes.
pub fn parse(bytes: &[u8]) -> Transcript {
    let mut transcript = Transcript {
        format: Format::Codex,
        lines: Vec::new(),
        entries: Vec::new(),
        leaf: None,
        problems: Vec::new(),
    };
    let mut count: u64 = 0;
    for raw in split(bytes) {
        let Some(map) = object(raw.bytes) else {
            transcript.problems.push(Problem {
                offset: raw.offset,
                kind: ProblemKind::NotJson,
            });
            count += 1;
            continue;
        };
        let ordinal = map.get("ordinal").and_then(Value::as_u64);
        if ordinal != Some(count) {
            transcript.problems.push(Problem {
                offset: raw.offset,
                kind: ProblemKind::OrdinalMismatch {
                    expected: count,
                    found: ordinal,
                },
            });
        }
        count += 1;
        let Some(kind) = string(&map, "type") else {
            transcript.problems.push(Problem {
                offset: raw.offset,
                kind: ProblemKind::NoType,
            });
            continue;
        };
        let subtype = map
            .get("payload")
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let index = transcript.entries.len();
        transcript.entries.push(Entry {
            line: transcript.lines.len(),
            id: None,
            parent: index.checked_sub(1),
            logical_parent: None,
            sidechain: false,
        });
        transcript.lines.push(Line {
            offset: raw.offset,
            len: raw.bytes.len(),
            kind: kind.to_owned(),
            subtype,
            entry: Some(index),
        });
    }
    transcript.leaf = transcript.entries.len().checked_sub(1);
    transcript
}

/// The Responses API input items Codex sends next, read from the rollout's bytes with its
/// parse: see the module comment. Lines that no longer parse are left out.
pub fn context(bytes: &[u8], transcript: &Transcript) -> Vec<Value> {
    let payload = |line: &Line| -> Option<Map<String, Value>> {
        let map = object(bytes.get(line.offset..line.offset + line.len)?)?;
        match map.get("payload") {
            Some(Value::Object(payload)) => Some(payload.clone()),
            _ => None,
        }
    };
    let mut items = Vec::new();
    if let Some(meta) = transcript
        .lines
        .first()
        .filter(|l| l.kind == "session_meta")
        && let Some(text) = payload(meta).and_then(|p| {
            p.get("base_instructions")?
                .get("text")?
                .as_str()
                .map(str::to_owned)
        })
    {
        items.push(json!({
            "type": "message",
            "role": "developer",
            "content": [{ "type": "input_text", "text": text }],
        }));
    }
    let base = items.len();
    for line in &transcript.lines {
        match line.kind.as_str() {
            "response_item" => {
                if let Some(p) = payload(line) {
                    items.push(Value::Object(p));
                }
            }
            "compacted" => {
                if let Some(Value::Array(history)) =
                    payload(line).and_then(|mut p| p.remove("replacement_history"))
                {
                    items.truncate(base);
                    items.extend(history);
                }
            }
            _ => {}
        }
    }
    items
}
