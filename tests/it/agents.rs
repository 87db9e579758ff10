//! `treelog::agents` over the sessions the real Claude Code 2.1.337 and Codex CLI 0.171.0 wrote
//! (tests/data/claude-code/, tests/data/codex/, made by tests/agents/make-fixtures.mjs), checked
//! against what the clients themselves sent (their `expected.json`), and over hostile lines
//! the tests write.

use std::path::{Path, PathBuf};

use serde_json::Value;
use treelog::agents::{Format, ProblemKind, Transcript, claude_code, codex, detect};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn claude_project() -> PathBuf {
    data().join("claude-code/projects/-tmp-treelog-agents-fixtures-project")
}

const MAIN: &str = "c0de0001-0000-4000-8000-000000000001";
const SECOND: &str = "c0de0002-0000-4000-8000-000000000002";

fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn line_json(bytes: &[u8], transcript: &Transcript, entry: usize) -> Value {
    let line = transcript.line_of(entry);
    serde_json::from_slice(&bytes[line.offset..line.offset + line.len]).unwrap()
}

/// A user entry's prompt text (its string content, or its last text block).
fn user_text(value: &Value) -> Option<String> {
    let content = value.get("message")?.get("content")?;
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .rev()
            .find_map(|b| b.get("text").and_then(Value::as_str))
            .map(str::to_owned),
        _ => None,
    }
}

/// Every file the clients wrote is detected as its agent's, and every pi session under
/// tests/data as pi's.
#[test]
fn detect_names_each_agent() {
    let claude = files_under(&data().join("claude-code"), "jsonl");
    assert_eq!(claude.len(), 3, "two sessions and a subagent: {claude:?}");
    for path in &claude {
        assert_eq!(
            detect(&std::fs::read(path).unwrap()),
            Some(Format::ClaudeCode),
            "{path:?}"
        );
    }
    let rollouts = files_under(&data().join("codex"), "jsonl");
    assert_eq!(rollouts.len(), 2, "{rollouts:?}");
    for path in &rollouts {
        assert_eq!(
            detect(&std::fs::read(path).unwrap()),
            Some(Format::Codex),
            "{path:?}"
        );
    }
    let mut pi = 0;
    for entry in std::fs::read_dir(data()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            assert_eq!(
                detect(&std::fs::read(&path).unwrap()),
                Some(Format::Pi),
                "{path:?}"
            );
            pi += 1;
        }
    }
    assert!(pi >= 5, "pi fixtures found: {pi}");
}

/// Only whole lines decide: a head cut inside its only line, bytes that are no JSON, and JSON
/// of no agent's shape decide nothing; a decided line after undecided ones still counts.
#[test]
fn detect_reads_whole_lines_only() {
    let codex_line = br#"{"timestamp":"t","ordinal":0,"type":"session_meta","payload":{"id":"x"}}"#;
    assert_eq!(detect(&codex_line[..40]), None);
    assert_eq!(detect(b"\x00\x01garbage\n{not json\n"), None);
    assert_eq!(
        detect(b"{\"type\":\"message\",\"id\":\"a\"}\n[1,2]\n"),
        None
    );
    let mut late = b"{\"hello\":1}\n\n".to_vec();
    late.extend_from_slice(codex_line);
    late.push(b'\n');
    assert_eq!(detect(&late), Some(Format::Codex));
}

/// The main session reads without a problem; its one compact boundary is a root linked
/// logically to the entry before the compaction; the leaf is the last `last-prompt`'s
/// `leafUuid`; the context path runs from the boundary through the summary to the last prompt.
#[test]
fn claude_code_compaction_and_context_path() {
    let bytes = std::fs::read(claude_project().join(format!("{MAIN}.jsonl"))).unwrap();
    let t = claude_code::parse(&bytes);
    assert_eq!(t.problems, vec![]);
    let boundaries: Vec<usize> = (0..t.entries.len())
        .filter(|&i| t.line_of(i).subtype.as_deref() == Some("compact_boundary"))
        .collect();
    assert_eq!(boundaries.len(), 1);
    let boundary = boundaries[0];
    assert_eq!(t.entries[boundary].parent, None);
    let before = t.entries[boundary]
        .logical_parent
        .expect("logicalParentUuid resolves");
    assert!(before < boundary);
    assert_eq!(
        line_json(&bytes, &t, boundary)["logicalParentUuid"],
        Value::String(t.entries[before].id.clone().unwrap())
    );

    let last_prompt: Value = bytes
        .split(|b| *b == b'\n')
        .rev()
        .find(|l| l.starts_with(br#"{"type":"last-prompt""#))
        .map(|l| serde_json::from_slice(l).unwrap())
        .unwrap();
    let leaf = t.leaf.unwrap();
    assert_eq!(
        Some(last_prompt["leafUuid"].as_str().unwrap()),
        t.entries[leaf].id.as_deref()
    );

    let path = claude_code::context_path(&t);
    assert_eq!(path.first(), Some(&boundary));
    assert_eq!(path.last(), Some(&leaf));
    assert_eq!(
        line_json(&bytes, &t, path[1])["isCompactSummary"],
        Value::Bool(true)
    );
    let prompts: Vec<String> = path
        .iter()
        .map(|&i| line_json(&bytes, &t, i))
        .filter(|v| v["type"] == "user")
        .filter_map(|v| user_text(&v))
        .collect();
    assert_eq!(
        prompts.last().map(String::as_str),
        Some("What did we do so far?")
    );
    assert!(
        !prompts.iter().any(|p| p.contains("THINK then RUN ls")),
        "{prompts:?}"
    );
    assert!(path.iter().all(|&i| !t.entries[i].sidechain));
}

/// Every line is kept and classed: the main session's lines are of the client's four classes,
/// the kinds treelog does not read among them.
#[test]
fn claude_code_keeps_every_line() {
    let bytes = std::fs::read(claude_project().join(format!("{MAIN}.jsonl"))).unwrap();
    let t = claude_code::parse(&bytes);
    let lines = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(t.lines.len(), lines);
    let class_of = |kind: &str| claude_code::class(kind);
    assert_eq!(class_of("attachment"), claude_code::LineClass::Transcript);
    assert_eq!(class_of("custom-title"), claude_code::LineClass::LastWins);
    assert_eq!(
        class_of("api-request-blob"),
        claude_code::LineClass::BoundaryCleared
    );
    assert_eq!(
        class_of("api-request-route"),
        claude_code::LineClass::Accumulate
    );
    for kind in [
        "api-request",
        "cost-state",
        "queue-operation",
        "last-prompt",
        "tools-used",
    ] {
        assert!(t.lines.iter().any(|l| l.kind == kind), "{kind} kept");
    }
    let entries = t.lines.iter().filter(|l| l.entry.is_some()).count();
    assert_eq!(entries, t.entries.len());
    assert!(t.lines.iter().all(|l| l.entry.is_some() == (class_of(&l.kind) == claude_code::LineClass::Transcript)));
}

/// The second session forks: `--resume-session-at` made a second child of the first reply,
/// and the leaf is on that new branch, not on the older second turn.
#[test]
fn claude_code_branch_from_resume_session_at() {
    let bytes = std::fs::read(claude_project().join(format!("{SECOND}.jsonl"))).unwrap();
    let t = claude_code::parse(&bytes);
    assert_eq!(t.problems, vec![]);
    let forks: Vec<usize> = (0..t.entries.len())
        .filter(|&i| t.children(i).len() > 1)
        .collect();
    assert_eq!(forks.len(), 1, "one branch point");
    assert_eq!(line_json(&bytes, &t, forks[0])["type"], "assistant");
    let prompts: Vec<String> = t
        .path_to(t.leaf.unwrap())
        .into_iter()
        .map(|i| line_json(&bytes, &t, i))
        .filter(|v| v["type"] == "user")
        .filter_map(|v| user_text(&v))
        .collect();
    assert_eq!(
        prompts,
        ["hello from a second session", "a turn on a new branch"]
    );
}

/// The subagent's file is a sidechain tree of its own, tied to the parent session by the
/// meta file's `toolUseId` and the tool result's `agentId`; the large tool output the session
/// refers to is the file beside it.
#[test]
fn claude_code_subagent_and_tool_result_files() {
    let main = std::fs::read_to_string(claude_project().join(format!("{MAIN}.jsonl"))).unwrap();
    let subagents = files_under(&claude_project().join(MAIN).join("subagents"), "jsonl");
    assert_eq!(subagents.len(), 1);
    let bytes = std::fs::read(&subagents[0]).unwrap();
    let t = claude_code::parse(&bytes);
    assert_eq!(t.problems, vec![]);
    assert!(!t.entries.is_empty() && t.entries.iter().all(|e| e.sidechain));
    assert_eq!(t.entries[0].parent, None);
    assert_eq!(
        user_text(&line_json(&bytes, &t, 0)).as_deref(),
        Some("SUBTASK: RUN wc -l notes.txt")
    );
    let agent_id = line_json(&bytes, &t, 0)["agentId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(subagents[0].ends_with(format!("agent-{agent_id}.jsonl")));
    assert!(main.contains(&format!(r#""agentId":"{agent_id}""#)));
    let meta: Value =
        serde_json::from_slice(&std::fs::read(subagents[0].with_extension("meta.json")).unwrap())
            .unwrap();
    assert!(main.contains(&format!(
        r#""id":"{}""#,
        meta["toolUseId"].as_str().unwrap()
    )));

    let results = files_under(&claude_project().join(MAIN).join("tool-results"), "txt");
    assert_eq!(results.len(), 1);
    let name = results[0].file_name().unwrap().to_str().unwrap();
    assert!(main.contains(&format!("/tool-results/{name}")));
    let size = std::fs::metadata(&results[0]).unwrap().len();
    assert!(main.contains(&format!(r#""persistedOutputSize":{size}"#)));
}

/// The Codex request digest of tests/agents/fake-openai.mjs: per input item its type (and
/// role) with the first 60 characters of its text, or its call id.
fn digest(item: &Value) -> String {
    let text = |content: &Value| -> String {
        content
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| {
                        matches!(
                            b["type"].as_str(),
                            Some("input_text" | "output_text" | "text")
                        )
                    })
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    match item["type"].as_str() {
        Some("message") => {
            let text = text(&item["content"]);
            // JavaScript's `slice(0, 60)` counts UTF-16 units.
            let units: Vec<u16> = text.encode_utf16().take(60).collect();
            let short = String::from_utf16_lossy(&units);
            format!("{}:{short}", item["role"].as_str().unwrap_or(""))
        }
        Some("function_call") => format!(
            "function_call:{}:{}",
            item["name"].as_str().unwrap(),
            item["call_id"].as_str().unwrap()
        ),
        Some("function_call_output") => {
            format!("function_call_output:{}", item["call_id"].as_str().unwrap())
        }
        Some(other) => other.to_owned(),
        None => String::new(),
    }
}

/// Each rollout is a clean chain (ordinals from 0, no problem), and its context, by Codex's
/// rule, is exactly the input Codex sent on its last request for that thread followed by the
/// reply, compaction included (the first rollout's last request followed the automatic
/// compaction).
#[test]
fn codex_context_is_what_codex_sent_last() {
    let expected: Value =
        serde_json::from_slice(&std::fs::read(data().join("codex/expected.json")).unwrap())
            .unwrap();
    let requests = expected["requests"].as_array().unwrap();
    let rollouts = files_under(&data().join("codex"), "jsonl");
    let mut compacted = 0;
    for path in &rollouts {
        let bytes = std::fs::read(path).unwrap();
        let t = codex::parse(&bytes);
        assert_eq!(t.problems, vec![], "{path:?}");
        assert_eq!(t.lines[0].kind, "session_meta");
        assert_eq!(t.leaf, Some(t.entries.len() - 1));
        assert!(
            t.entries
                .iter()
                .enumerate()
                .all(|(i, e)| e.parent == i.checked_sub(1))
        );
        compacted += t.lines.iter().filter(|l| l.kind == "compacted").count();
        let sent: Vec<Value> = codex::context(&bytes, &t)
            .iter()
            .map(|i| Value::String(digest(i)))
            .collect();
        // The last request that carried this rollout's last prompt.
        let last_prompt = sent
            .iter()
            .rev()
            .find(|d| d.as_str().is_some_and(|d| d.starts_with("user:")))
            .unwrap();
        let last = requests
            .iter()
            .rev()
            .find(|r| {
                r["sent"]
                    .as_array()
                    .is_some_and(|s| s.contains(last_prompt))
            })
            .unwrap_or_else(|| panic!("no request sent {last_prompt} ({path:?})"));
        // The context is that input followed by the reply to it.
        let last_sent = last["sent"].as_array().unwrap();
        assert_eq!(
            last_sent.as_slice(),
            &sent[..last_sent.len().min(sent.len())],
            "{path:?}"
        );
        let reply = &sent[last_sent.len()..];
        assert!(!reply.is_empty(), "{path:?}");
        assert!(
            reply
                .iter()
                .all(|d| d.as_str().is_some_and(|d| d.starts_with("assistant:"))),
            "{reply:?}"
        );
    }
    assert_eq!(compacted, 1);
}

/// Hostile Claude Code lines: a parent named after its child, a cycle, a reused id, NUL
/// padding, a line that is no JSON and one without a type. Each is a problem at its offset;
/// the tree stays acyclic and every line that parses is kept.
#[test]
fn claude_code_hostile_lines() {
    let text = concat!(
        r#"{"type":"user","uuid":"a","parentUuid":"b","sessionId":"s","message":{"role":"user","content":"x"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"b","parentUuid":"a","sessionId":"s","message":{"role":"assistant","content":[]}}"#,
        "\n\0\0\0",
        r#"{"type":"user","uuid":"a","parentUuid":"b","sessionId":"s","message":{"role":"user","content":"y"}}"#,
        "\n{\"type\":\n",
        r#"{"uuid":"c"}"#,
        "\n",
    );
    let t = claude_code::parse(text.as_bytes());
    assert_eq!(t.entries.len(), 3);
    assert_eq!(
        t.entries[0].parent, None,
        "a parent named later is no parent"
    );
    assert_eq!(t.entries[1].parent, Some(0));
    assert_eq!(t.entries[2].parent, Some(1));
    assert_eq!(t.path_to(2), vec![0, 1, 2]);
    let kinds: Vec<&ProblemKind> = t.problems.iter().map(|p| &p.kind).collect();
    assert_eq!(
        kinds,
        [
            &ProblemKind::MissingParent("b".into()),
            &ProblemKind::NulPadding,
            &ProblemKind::DuplicateId("a".into()),
            &ProblemKind::NotJson,
            &ProblemKind::NoType,
        ]
    );
    let nul = text.find('\0').unwrap();
    assert_eq!(t.problems[1].offset, nul + 3);
    assert_eq!(t.leaf, Some(2));
}

/// Hostile Codex lines: a lost line shows as an ordinal mismatch; a rollout without a
/// `session_meta` still reads, and its context is its response items.
#[test]
fn codex_hostile_lines() {
    let text = concat!(
        r#"{"timestamp":"t","ordinal":0,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
        "\n",
        r#"{"timestamp":"t","ordinal":2,"type":"event_msg","payload":{"type":"task_complete"}}"#,
        "\n",
    );
    let t = codex::parse(text.as_bytes());
    assert_eq!(t.problems.len(), 1);
    assert_eq!(
        t.problems[0].kind,
        ProblemKind::OrdinalMismatch {
            expected: 1,
            found: Some(2)
        }
    );
    assert_eq!(t.lines[1].subtype.as_deref(), Some("task_complete"));
    let context = codex::context(text.as_bytes(), &t);
    assert_eq!(context.len(), 1);
    assert_eq!(context[0]["role"], "user");
}
