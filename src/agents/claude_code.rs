//! A Claude Code session file as a tree (format-spec/claude-code.md): transcript lines
//! (`user`, `assistant`, `system`, `attachment`) are entries linked by `uuid`/`parentUuid`; a
//! compact boundary is a root whose `logicalParentUuid` names the history it summarises;
//! `isSidechain` marks a subagent's entries. Every other line is kept as a [`Line`] and
//! classed as the client's own loader classes it ([`class`]). The leaf is the last
//! `last-prompt` line's `leafUuid` when it names an entry, else the last entry outside a
//! sidechain.

use std::collections::HashMap;

use serde_json::Value;

use super::lines::{object, split, string};
use super::transcript::{Entry, Format, Line, Problem, ProblemKind, Transcript};

/// How Claude Code's loader treats a line type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineClass {
    /// A tree entry: `user`, `assistant`, `system`, `attachment`.
    Transcript,
    /// Session metadata whose last line holds the value (`custom-title`, `mode`, ...).
    LastWins,
    /// State a compact boundary resets (`last-prompt`, `api-request`, ...).
    BoundaryCleared,
    /// Everything else, kept as it comes (the class of every type the client does not name).
    Accumulate,
}

/// The types Claude Code 2.1.337's loader names as last-wins.
const LAST_WINS: &[&str] = &[
    "derived-from",
    "summary",
    "custom-title",
    "ended-by-model",
    "ai-title",
    "tag",
    "relocated",
    "agent-name",
    "agent-color",
    "agent-setting",
    "pr-link",
    "artifact-autoreact-ledger",
    "bridge-session",
    "history-suppression",
    "attribution-snapshot",
    "mode",
    "permission-mode",
    "isolation-latch",
    "session-owner",
    "dev-mods",
    "atis-latch",
    "denial-counts",
    "tools-used",
    "worktree-state",
    "cost-state",
    "queue-operation",
    "observer-ref",
    "repl-mode",
    "hybrid-organization",
];

/// The types Claude Code 2.1.337's loader names as cleared by a compact boundary.
const BOUNDARY_CLEARED: &[&str] = &[
    "progress",
    "file-history-snapshot",
    "file-history-delta",
    "last-prompt",
    "continued-in",
    "resume-head-vouch",
    "api-request-shape",
    "api-request-blob",
    "api-request",
    "api-request-resumed",
    "host-row",
];

/// The class of a line type, as the client's loader has it.
pub fn class(kind: &str) -> LineClass {
    match kind {
        "user" | "assistant" | "system" | "attachment" => LineClass::Transcript,
        _ if LAST_WINS.contains(&kind) => LineClass::LastWins,
        _ if BOUNDARY_CLEARED.contains(&kind) => LineClass::BoundaryCleared,
        _ => LineClass::Accumulate,
    }
}

/// Reads a Claude Code session file (or a subagent's file) from its bytes.
pub fn parse(bytes: &[u8]) -> Transcript {
    let mut transcript = Transcript {
        format: Format::ClaudeCode,
        lines: Vec::new(),
        entries: Vec::new(),
        leaf: None,
        problems: Vec::new(),
    };
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut leaf_named: Option<String> = None;
    for raw in split(bytes) {
        if raw.nul_padded {
            transcript.problems.push(Problem {
                offset: raw.offset,
                kind: ProblemKind::NulPadding,
            });
        }
        let Some(map) = object(raw.bytes) else {
            transcript.problems.push(Problem {
                offset: raw.offset,
                kind: ProblemKind::NotJson,
            });
            continue;
        };
        let Some(kind) = string(&map, "type") else {
            transcript.problems.push(Problem {
                offset: raw.offset,
                kind: ProblemKind::NoType,
            });
            continue;
        };
        let subtype = match kind {
            "system" => string(&map, "subtype").map(str::to_owned),
            "attachment" => map
                .get("attachment")
                .and_then(|a| a.get("type"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        };
        if kind == "last-prompt"
            && let Some(leaf) = string(&map, "leafUuid")
        {
            leaf_named = Some(leaf.to_owned());
        }
        let line_index = transcript.lines.len();
        let mut entry_index = None;
        if class(kind) == LineClass::Transcript
            && let Some(id) = string(&map, "uuid")
        {
            let lookup = |key: &str, problems: &mut Vec<Problem>| -> Option<usize> {
                let named = string(&map, key)?;
                let found = by_id.get(named).copied();
                if found.is_none() {
                    problems.push(Problem {
                        offset: raw.offset,
                        kind: ProblemKind::MissingParent(named.to_owned()),
                    });
                }
                found
            };
            let parent = lookup("parentUuid", &mut transcript.problems);
            let logical_parent = lookup("logicalParentUuid", &mut transcript.problems);
            let index = transcript.entries.len();
            if by_id.contains_key(id) {
                transcript.problems.push(Problem {
                    offset: raw.offset,
                    kind: ProblemKind::DuplicateId(id.to_owned()),
                });
            } else {
                by_id.insert(id.to_owned(), index);
            }
            transcript.entries.push(Entry {
                line: line_index,
                id: Some(id.to_owned()),
                parent,
                logical_parent,
                sidechain: map.get("isSidechain") == Some(&Value::Bool(true)),
            });
            entry_index = Some(index);
        }
        transcript.lines.push(Line {
            offset: raw.offset,
            len: raw.bytes.len(),
            kind: kind.to_owned(),
            subtype,
            entry: entry_index,
        });
    }
    transcript.leaf = leaf_named
        .and_then(|id| by_id.get(&id).copied())
        .or_else(|| transcript.entries.iter().rposition(|e| !e.sidechain));
    transcript
}

/// The entries of the context Claude Code reads from: the path from the leaf to its root (a
/// compact boundary or the first entry). Empty without a leaf.
pub fn context_path(transcript: &Transcript) -> Vec<usize> {
    transcript
        .leaf
        .map(|leaf| transcript.path_to(leaf))
        .unwrap_or_default()
}

/// The messages Claude Code assembles from the context path (format-spec/claude-code.md §5):
/// each `user` and `assistant` line's `message` in path order, consecutive lines of one role
/// one message (a string content becomes a `text` block). Attachments and `system` lines are
/// not messages; where the client places rendered attachments is not reproduced.
pub fn context(bytes: &[u8], transcript: &Transcript) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    for entry in context_path(transcript) {
        let line = transcript.line_of(entry);
        if line.kind != "user" && line.kind != "assistant" {
            continue;
        }
        let Some(map) = bytes
            .get(line.offset..line.offset + line.len)
            .and_then(object)
        else {
            continue;
        };
        let blocks = match map.get("message").and_then(|m| m.get("content")) {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => continue,
        };
        let same_role = messages
            .last()
            .is_some_and(|m| m.get("role").and_then(Value::as_str) == Some(line.kind.as_str()));
        if same_role
            && let Some(Value::Array(content)) =
                messages.last_mut().and_then(|m| m.get_mut("content"))
        {
            content.extend(blocks);
        } else {
            messages.push(serde_json::json!({"role": line.kind, "content": blocks}));
        }
    }
    messages
}
