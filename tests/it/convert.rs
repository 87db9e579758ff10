//! `treelog::agents::to_pi`: Claude Code sessions and Codex rollouts carried over to pi. The
//! sessions the real clients wrote (tests/data/claude-code/, tests/data/codex/) convert to
//! files that treelog's pi reader opens with no opaque line and whose context is the source's
//! conversation; small hand-written sources pin each rule of format-spec/convert.md (one
//! `check` per rule: the pi entries as a digest, and the kinds listed as not carried).

use std::path::{Path, PathBuf};

use serde_json::Value;
use treelog::agents::to_pi::{ConvertError, Converted, Options, to_pi};
use treelog::{Session, SessionOptions};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn claude_file(name: &str) -> PathBuf {
    data().join(format!(
        "claude-code/projects/-tmp-treelog-agents-fixtures-project/{name}.jsonl"
    ))
}

fn codex_file(name: &str) -> PathBuf {
    data().join(format!("codex/sessions/2026/12/07/{name}.jsonl"))
}

const CODEX_MAIN: &str = "rollout-2026-12-07T20-53-24-01a25248-5e34-7973-8abe-997cfd142baa";
const CODEX_SECOND: &str = "rollout-2026-12-07T20-53-34-01a25248-871e-7193-9ce1-bf6ec5f0549f";

fn options(all_branches: bool) -> Options {
    Options {
        all_branches,
        session_id: "01900000-0000-7000-8000-000000000001".into(),
        fallback_cwd: "/fallback".into(),
    }
}

fn convert(bytes: &[u8], all_branches: bool) -> Converted {
    to_pi(bytes, &options(all_branches)).expect("converts")
}

/// The parsed lines of a converted session, header first.
fn lines(converted: &Converted) -> Vec<Value> {
    assert!(converted.text.ends_with('\n'), "every line ends in \\n");
    converted
        .text
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// A message as `role:detail`: a user's text (cut), an assistant's blocks, a tool result's
/// tool name and text (cut).
fn message_digest(message: &Value) -> String {
    let cut = |text: &str| text.chars().take(24).collect::<String>();
    let text_of = |content: &Value| match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("|"),
        _ => String::new(),
    };
    match message["role"].as_str().unwrap_or("?") {
        "user" => format!("user:{}", cut(&text_of(&message["content"]))),
        "assistant" => {
            let blocks: Vec<String> = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| match b["type"].as_str() {
                    Some("toolCall") => format!("toolCall:{}", b["name"].as_str().unwrap_or("")),
                    Some("text") => format!("text:{}", cut(b["text"].as_str().unwrap_or(""))),
                    other => other.unwrap_or("?").to_owned(),
                })
                .collect();
            format!("assistant:{}", blocks.join(","))
        }
        "toolResult" => format!(
            "toolResult:{}:{}",
            message["toolName"].as_str().unwrap_or(""),
            cut(&text_of(&message["content"]))
        ),
        role => role.to_owned(),
    }
}

/// Each entry as `kind:detail^parent`, the parent as its index among the entries (`-` for a
/// root); a compaction names its first kept entry's index after `kept`.
fn digest(converted: &Converted) -> Vec<String> {
    let lines = lines(converted);
    let ids: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    let index_of = |id: &Value| {
        id.as_str()
            .and_then(|id| ids.iter().position(|&i| i == id))
            .map_or("-".to_owned(), |i| i.to_string())
    };
    lines[1..]
        .iter()
        .map(|line| {
            let detail = match line["type"].as_str().unwrap() {
                "message" => message_digest(&line["message"]),
                "model_change" => format!(
                    "model_change:{}/{}",
                    line["provider"].as_str().unwrap(),
                    line["modelId"].as_str().unwrap()
                ),
                "compaction" => format!(
                    "compaction:{} kept {}",
                    line["summary"].as_str().unwrap(),
                    index_of(&line["firstKeptEntryId"])
                ),
                "session_info" => format!("session_info:{}", line["name"].as_str().unwrap()),
                other => other.to_owned(),
            };
            format!("{detail}^{}", index_of(&line["parentId"]))
        })
        .collect()
}

fn kinds_not_carried(converted: &Converted) -> Vec<String> {
    converted
        .not_carried
        .iter()
        .map(|item| format!("{}@{}", item.kind, item.line))
        .collect()
}

/// Converts `source` (JSONL lines) and checks the entries' digest and what was not carried.
fn check(source: &[&str], all_branches: bool, entries: &[&str], not_carried: &[&str]) {
    let text = source.join("\n") + "\n";
    let converted = convert(text.as_bytes(), all_branches);
    assert_eq!(
        digest(&converted),
        entries,
        "entries of\n{}",
        converted.text
    );
    assert_eq!(kinds_not_carried(&converted), not_carried);
    assert_eq!(converted.entries, entries.len());
}

/// The converted text opened by treelog's pi reader: no opaque line, every entry read, the
/// last entry the leaf; returns the context's messages as digests.
fn open_as_pi(converted: &Converted) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("converted.jsonl");
    std::fs::write(&path, &converted.text).unwrap();
    let session = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(session.entry_count().unwrap(), converted.entries as u64);
    assert_eq!(session.leaf_id().unwrap(), converted.leaf);
    assert_eq!(session.header().version, 3);
    // A compaction that keeps nothing names itself as its first kept entry (pi 1.6's
    // `firstKeptEntryId ?? id`), which verify notes; nothing else may be found.
    let keeps_nothing: Vec<String> = lines(converted)
        .iter()
        .filter(|l| l["type"] == "compaction" && l["firstKeptEntryId"] == l["id"])
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect();
    let verify = treelog::verify::verify_log(&path, true).unwrap();
    for problem in &verify.problems {
        assert!(
            problem.kind == treelog::verify::ProblemKind::CompactionFirstKept
                && keeps_nothing
                    .iter()
                    .any(|id| problem.message.contains(id.as_str())),
            "verify: {problem:?}"
        );
    }
    session
        .build_context(None)
        .unwrap()
        .messages
        .iter()
        .map(|m| message_digest(&serde_json::from_str(m.get()).unwrap()))
        .collect()
}

// ---- the clients' own sessions ----

/// Claude Code's main fixture: the active branch runs across the compaction, so pi's context
/// is the summary, the preserved reply, the slash command's lines and the last turn, as the
/// client's request after the compaction (expected.json request 10) less its attachments.
#[test]
fn claude_code_session_converts_to_a_pi_session_with_its_compaction() {
    let bytes = std::fs::read(claude_file("c0de0001-0000-4000-8000-000000000001")).unwrap();
    let converted = convert(&bytes, false);
    assert_eq!(converted.cwd, "/tmp/treelog-agents-fixtures/project");
    assert_eq!(
        open_as_pi(&converted),
        [
            "compactionSummary",
            "assistant:text:The command printed: <pe",
            "user:<local-command-caveat>Th",
            "user:<command-name>/compact</",
            "user:<local-command-stdout>Co",
            "user:What did we do so far?",
            "assistant:text:You said: <local-command",
        ]
    );
    let entries = digest(&converted);
    // The first turn: thinking, text and the Bash call are one assistant message of three
    // lines, after the model's change; then the call's result.
    assert_eq!(
        entries[..4],
        [
            "user:THINK then RUN ls^-",
            "model_change:anthropic/claude-opus-5-5^0",
            "assistant:thinking,text:Running it.,toolCall:Bash^1",
            "toolResult:Bash:notes.txt^2",
        ]
    );
    let kinds = kinds_not_carried(&converted);
    for kind in [
        "attachment:environment@5",
        "api-request@18",
        "queue-operation@2",
    ] {
        assert!(
            kinds.contains(&kind.to_owned()),
            "{kind} listed in {kinds:?}"
        );
    }
    // Every source line is an entry carried or listed, once at most (lines of one API
    // message and a compact summary are carried by one entry).
    let listed: std::collections::HashSet<usize> =
        converted.not_carried.iter().map(|i| i.line).collect();
    let source_lines = bytes.iter().filter(|&&b| b == b'\n').count();
    assert!(listed.len() < source_lines);
}

/// The second fixture has two branches (a resume at the first reply): by default only the
/// active one is carried and the other listed; with all branches both are, the active leaf
/// last, and the title follows as the session name.
#[test]
fn claude_code_branches_active_or_all() {
    let bytes = std::fs::read(claude_file("c0de0002-0000-4000-8000-000000000002")).unwrap();
    let active = convert(&bytes, false);
    let all = convert(&bytes, true);
    let context = [
        "user:hello from a second sess",
        "assistant:text:You said: hello from a s",
        "user:a turn on a new branch",
        "assistant:text:You said: a turn on a ne",
    ];
    assert_eq!(open_as_pi(&active), context);
    assert_eq!(open_as_pi(&all), context);
    let branch_lines: Vec<usize> = active
        .not_carried
        .iter()
        .filter(|i| i.kind == "branch")
        .map(|i| i.line)
        .collect();
    assert_eq!(
        branch_lines,
        [24, 25, 34, 36, 37],
        "the other branch's entries"
    );
    assert!(!all.not_carried.iter().any(|i| i.kind == "branch"));
    assert_eq!(
        all.entries,
        active.entries + 2,
        "the other branch's prompt and reply"
    );
    let last = digest(&all);
    assert!(
        last.last().unwrap().starts_with("session_info:"),
        "{last:?}"
    );
    assert!(last.iter().any(|e| e.starts_with("user:a second turn")));
}

/// Codex's main rollout: reasoning and calls grouped into assistant messages, outputs as
/// tool results, the automatic compaction as pi's, the developer messages listed.
#[test]
fn codex_rollout_converts_with_its_compaction() {
    let bytes = std::fs::read(codex_file(CODEX_MAIN)).unwrap();
    let converted = convert(&bytes, false);
    assert_eq!(
        open_as_pi(&converted),
        [
            "compactionSummary",
            "user:What did we do so far?",
            "assistant:text:You said: What did we do",
        ]
    );
    let entries = digest(&converted);
    assert_eq!(
        entries[..6],
        [
            "user:<environment_context>\n  ^-",
            "user:RUN ls^0",
            "model_change:fake/fake-model^1",
            "assistant:thinking,toolCall:exec_command^2",
            "toolResult:exec_command:Chunk ID: 9c33ed\nWall ti^3",
            "assistant:text:The command printed: not^4",
        ]
    );
    let kinds = kinds_not_carried(&converted);
    for kind in [
        "session_meta@1",
        "response_item:message:developer@3",
        "compacted.replacement_history@55",
        "event_msg:token_count@16",
    ] {
        assert!(
            kinds.contains(&kind.to_owned()),
            "{kind} listed in {kinds:?}"
        );
    }
}

#[test]
fn codex_second_rollout_converts() {
    let bytes = std::fs::read(codex_file(CODEX_SECOND)).unwrap();
    let converted = convert(&bytes, false);
    let context = open_as_pi(&converted);
    assert_eq!(
        context.last().unwrap(),
        "assistant:text:You said: a second sessi"
    );
}

/// One source and session id give the same text: the ids are derived, not drawn.
#[test]
fn conversion_is_deterministic() {
    let bytes = std::fs::read(codex_file(CODEX_MAIN)).unwrap();
    assert_eq!(convert(&bytes, false).text, convert(&bytes, false).text);
}

#[test]
fn pi_sessions_and_unknown_files_are_refused() {
    let pi = r#"{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
    assert_eq!(
        to_pi(pi.as_bytes(), &options(false)).unwrap_err(),
        ConvertError::AlreadyPi
    );
    assert!(matches!(
        to_pi(b"{\"a\":1}\nnot json\n", &options(false)),
        Err(ConvertError::UnknownFormat(_))
    ));
}

// ---- the rules, one small source each ----

const CC: &str = r#""sessionId":"s","cwd":"/p","timestamp":"2026-01-01T00:00:00.000Z""#;

fn cc_user(uuid: &str, parent: &str, content: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","parentUuid":{parent},{CC},"message":{{"role":"user","content":{content}}}}}"#
    )
}

fn cc_assistant(uuid: &str, parent: &str, id: &str, model: &str, block: &str) -> String {
    format!(
        r#"{{"type":"assistant","uuid":"{uuid}","parentUuid":"{parent}",{CC},"message":{{"id":"{id}","role":"assistant","model":"{model}","content":[{block}],"stop_reason":null}}}}"#
    )
}

#[test]
fn claude_code_rules() {
    // A thinking block keeps its signature; a tool call's result names its tool.
    let thinking = r#"{"type":"thinking","thinking":"hm","signature":"sig"}"#;
    let call = r#"{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}"#;
    let result = r#"[{"type":"tool_result","tool_use_id":"t1","content":"out","is_error":true},{"type":"text","text":"and then"}]"#;
    check(
        &[
            &cc_user("u1", "null", r#""hi""#),
            &cc_assistant("a1", "u1", "m1", "opus", thinking),
            &cc_assistant("a2", "a1", "m1", "opus", call),
            &cc_user("u2", r#""a2""#, result),
            &cc_assistant("a3", "u2", "m2", "sonnet", r#"{"type":"text","text":"ok"}"#),
        ],
        false,
        &[
            "user:hi^-",
            "model_change:anthropic/opus^0",
            "assistant:thinking,toolCall:Bash^1",
            "toolResult:Bash:out^2",
            "user:and then^3",
            "model_change:anthropic/sonnet^4",
            "assistant:text:ok^5",
        ],
        &[],
    );
    // Attachments, system notes, metadata lines, sidechains and lines that are not JSON are
    // listed with their line numbers; an entry not carried stands for its parent.
    check(
        &[
            r#"{"type":"mode","mode":"x","sessionId":"s"}"#,
            &cc_user("u1", "null", r#""hi""#),
            &format!(
                r#"{{"type":"attachment","uuid":"t1","parentUuid":"u1",{CC},"attachment":{{"type":"date"}},"rendered":[]}}"#
            ),
            &format!(
                r#"{{"type":"system","subtype":"turn_duration","uuid":"s1","parentUuid":"t1",{CC}}}"#
            ),
            "{not json",
            &format!(
                r#"{{"type":"user","uuid":"x1","parentUuid":null,"isSidechain":true,{CC},"message":{{"role":"user","content":"side"}}}}"#
            ),
            &cc_user("u2", r#""s1""#, r#""again""#),
        ],
        false,
        &["user:hi^-", "user:again^0"],
        &[
            "mode@1",
            "attachment:date@3",
            "system:turn_duration@4",
            "invalid@5",
            "sidechain@6",
        ],
    );
    // A compact boundary and its summary are one compaction under the boundary's logical
    // parent, keeping the first preserved message; the title is the session's name.
    let boundary = format!(
        r#"{{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"a1",{CC},"compactMetadata":{{"preTokens":99,"preservedMessages":{{"uuids":["a1"]}}}}}}"#
    );
    let summary = format!(
        r#"{{"type":"user","uuid":"c1","parentUuid":"b1","isCompactSummary":true,{CC},"message":{{"role":"user","content":"the summary"}}}}"#
    );
    check(
        &[
            &cc_user("u1", "null", r#""hi""#),
            &cc_assistant("a1", "u1", "m1", "opus", r#"{"type":"text","text":"yo"}"#),
            &boundary,
            &summary,
            &cc_user("u2", r#""c1""#, r#""next""#),
            r#"{"type":"custom-title","customTitle":"My title","sessionId":"s"}"#,
        ],
        false,
        &[
            "user:hi^-",
            "model_change:anthropic/opus^0",
            "assistant:text:yo^1",
            "compaction:the summary kept 2^2",
            "user:next^3",
            "session_info:My title^4",
        ],
        &[],
    );
    // Without a custom title, the last AI title names the session; a custom one wins.
    let ai = |t: &str| format!(r#"{{"type":"ai-title","aiTitle":"{t}","sessionId":"s"}}"#);
    check(
        &[
            &cc_user("u1", "null", r#""hi""#),
            &ai("first"),
            &ai("second"),
        ],
        false,
        &["user:hi^-", "session_info:second^0"],
        &[],
    );
    // Two branches: the active one (the last `last-prompt`'s leaf) alone, or both with that
    // leaf written last; what continues past the leaf cannot be carried.
    let branches = [
        cc_user("u1", "null", r#""root""#),
        cc_user("u2", r#""u1""#, r#""left""#),
        cc_user("u3", r#""u1""#, r#""right""#),
        cc_user("u4", r#""u2""#, r#""past the leaf""#),
        r#"{"type":"last-prompt","leafUuid":"u2","sessionId":"s"}"#.to_owned(),
    ];
    let branches: Vec<&str> = branches.iter().map(String::as_str).collect();
    check(
        &branches,
        false,
        &["user:root^-", "user:left^0"],
        &["branch@3", "branch@4"],
    );
    check(
        &branches,
        true,
        &["user:root^-", "user:right^0", "user:left^0"],
        &["after-leaf@4"],
    );
}

fn codex_line(ordinal: usize, kind: &str, payload: &str) -> String {
    format!(
        r#"{{"timestamp":"2026-01-01T00:00:0{}.000Z","ordinal":{ordinal},"type":"{kind}","payload":{payload}}}"#,
        ordinal % 10
    )
}

#[test]
fn codex_rules() {
    let lines = [
        codex_line(
            0,
            "session_meta",
            r#"{"id":"t","cwd":"/w","model_provider":"openai"}"#,
        ),
        codex_line(1, "turn_context", r#"{"model":"gpt-x"}"#),
        codex_line(
            2,
            "response_item",
            r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}"#,
        ),
        codex_line(
            3,
            "response_item",
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}"#,
        ),
        codex_line(
            4,
            "response_item",
            r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}]}"#,
        ),
        codex_line(
            5,
            "response_item",
            r#"{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}"#,
        ),
        codex_line(
            6,
            "response_item",
            r#"{"type":"function_call_output","call_id":"c1","output":"a.txt"}"#,
        ),
        codex_line(
            7,
            "response_item",
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#,
        ),
        codex_line(8, "event_msg", r#"{"type":"task_complete"}"#),
        codex_line(
            9,
            "compacted",
            r#"{"message":"short","replacement_history":[]}"#,
        ),
        codex_line(10, "turn_context", r#"{"model":"gpt-y"}"#),
        codex_line(
            11,
            "response_item",
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}"#,
        ),
        codex_line(11, "world_state", r#"{"full":true}"#),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    check(
        &lines,
        false,
        &[
            "user:do it^-",
            "model_change:openai/gpt-x^0",
            "assistant:thinking,toolCall:exec_command^1",
            "toolResult:exec_command:a.txt^2",
            "assistant:text:done^3",
            "compaction:short kept 5^4",
            "model_change:openai/gpt-y^5",
            "assistant:text:hello^6",
        ],
        &[
            "session_meta@1",
            "turn_context@2",
            "response_item:message:developer@3",
            "event_msg:task_complete@9",
            "compacted.replacement_history@10",
            "turn_context@11",
            "ordinal@13",
            "world_state@13",
        ],
    );
}
