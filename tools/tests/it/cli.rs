//! End-to-end tests of the `treelog` binary: each runs it on a private copy of the bundled
//! pi transcript (or a file made for the test) in its own temporary directory.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(name)
}

fn oracle() -> Value {
    let text = std::fs::read_to_string(data("pi-sample-200.oracle.json")).expect("oracle");
    serde_json::from_str(&text).expect("oracle is JSON")
}

/// A private copy of the sample transcript (sidecars are written next to it).
fn sample_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sample.jsonl");
    std::fs::copy(data("pi-sample-200.jsonl"), &path).expect("copy sample");
    (dir, path)
}

/// Runs treelog with `args` and `stdin`, returning its output.
fn treelog(args: &[&str], stdin: &str) -> Output {
    treelog_env(args, stdin, &[])
}

/// Runs treelog with `args`, `stdin` and extra environment variables.
fn treelog_env(args: &[&str], stdin: &str, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_treelog"));
    for (key, value) in env {
        command.env(key, value);
    }
    treelog_testkit::process::output_with_stdin(command.args(args), stdin)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing stderr when it differs.
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "expected exit {code}, got {:?}; stderr:\n{}",
        output.status,
        stderr(output)
    );
}

fn run_ok(args: &[&str]) -> String {
    let output = treelog(args, "");
    assert_exit(&output, 0);
    stdout(&output)
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// `context` prints exactly the context pi built for its own transcript.
#[test]
fn context_matches_oracle() {
    let (_dir, path) = sample_copy();
    let text = run_ok(&["context", arg(&path)]);
    assert!(text.ends_with('\n') && text.lines().count() == 1);
    let context: Value = serde_json::from_str(&text).expect("context is JSON");
    assert_eq!(context, oracle()["context"]);
}

/// `path` prints pi's root-to-leaf ids, one per line, and `--leaf` ends it elsewhere.
#[test]
fn path_matches_oracle() {
    let (_dir, path) = sample_copy();
    let ids: Vec<Value> = run_ok(&["path", arg(&path)])
        .lines()
        .map(|id| Value::String(id.into()))
        .collect();
    assert_eq!(Value::Array(ids.clone()), oracle()["path"]);
    let third = ids[2].as_str().expect("id");
    let short = run_ok(&["path", arg(&path), "--leaf", third]);
    assert_eq!(short.lines().count(), 3);
}

/// `tree --json` prints pi's tree, node for node, in pi's order.
#[test]
fn tree_json_matches_oracle() {
    let (_dir, path) = sample_copy();
    let nodes: Vec<Value> = run_ok(&["tree", arg(&path), "--json"])
        .lines()
        .map(|line| serde_json::from_str(line).expect("tree line is JSON"))
        .collect();
    assert_eq!(Value::Array(nodes), oracle()["tree"]);
}

/// `info --json` reports pi's header, leaf, name and entry count, and the index state.
#[test]
fn info_json_matches_oracle() {
    let (_dir, path) = sample_copy();
    let oracle = oracle();
    let first: Value = serde_json::from_str(&run_ok(&["info", arg(&path), "--json"])).unwrap();
    for key in ["header", "leafId", "sessionName", "entryCount"] {
        assert_eq!(first[key], oracle[key], "key {key}");
    }
    assert_eq!(first["index"]["state"], "rebuilt");
    assert_eq!(first["tornTailBytes"], 0);
    assert_eq!(first["headerRecovered"], false);
    let total: u64 = first["countsByType"]
        .as_object()
        .expect("counts object")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(Value::from(total), oracle["entryCount"]);
    let second: Value = serde_json::from_str(&run_ok(&["info", arg(&path), "--json"])).unwrap();
    assert_eq!(second["index"]["state"], "fresh");
}

/// The drawn tree marks the leaf on the active path and shows labels.
#[test]
fn tree_drawing_marks_active_path() {
    let (_dir, path) = sample_copy();
    let text = run_ok(&["tree", arg(&path)]);
    let leaf = oracle()["leafId"].as_str().expect("leaf").to_string();
    let leaf_line = text
        .lines()
        .find(|line| line.contains(&leaf))
        .expect("leaf drawn");
    assert!(leaf_line.starts_with('*') && leaf_line.ends_with("← leaf"));
    assert!(text.contains("[branch-2]"));
    assert!(text.contains("more entries"));
}

/// Ids printed by `append` are on the session's path afterwards, in order, at its end.
#[test]
fn append_ids_appear_in_path() {
    let (_dir, path) = sample_copy();
    let input = concat!(
        r#"{"role":"user","content":"hello","timestamp":1}"#,
        "\n\n",
        r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"p","model":"m","timestamp":2}"#,
        "\n"
    );
    let output = treelog(&["append", arg(&path)], input);
    assert_exit(&output, 0);
    let ids: Vec<String> = stdout(&output).lines().map(String::from).collect();
    assert_eq!(ids.len(), 2);
    let path_ids: Vec<String> = run_ok(&["path", arg(&path)])
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(path_ids[path_ids.len() - 2..], ids[..]);
}

/// `append` writes pi 1.6's entries from `{"type":...}` lines, and `context` answers with
/// pi 1.6's rule: the compaction's stored system message leads, the system message of the
/// kept range is left out, the edit replaces the assistant's content with one text part, a
/// null edit removes the user message, and `--pi-compat 0.73` ignores all of that.
#[test]
fn append_pi16_entries_and_context_rules() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let messages = concat!(
        r#"{"role":"system","content":"be brief","timestamp":1}"#,
        "\n",
        r#"{"role":"user","content":"hello","timestamp":2}"#,
        "\n",
        r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"p","model":"m","timestamp":3}"#,
        "\n",
        r#"{"role":"user","content":"secret","timestamp":4}"#,
        "\n",
    );
    let output = treelog(&["append", arg(&path)], messages);
    assert_exit(&output, 0);
    let ids: Vec<String> = stdout(&output).lines().map(String::from).collect();
    let (system, assistant, secret) = (&ids[0], &ids[2], &ids[3]);
    let entries = format!(
        "{}\n{}\n{}\n{}\n",
        json!({"type": "context_edit", "targetId": assistant, "replacement": {"content": "edited"}}),
        json!({"type": "context_edit", "targetId": secret, "replacement": null}),
        json!({"type": "usage", "kind": "cache_warm", "provider": "p", "model": "m", "usage": {"input": 1}}),
        json!({"type": "compaction", "summary": "sum", "firstKeptEntryId": system, "tokensBefore": 10}),
    );
    let output = treelog(&["append", arg(&path)], &entries);
    assert_exit(&output, 0);
    let log = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines[5]["replacement"],
        json!({"content": [{"type": "text", "text": "edited"}]}),
        "a string replacement of an assistant is stored as one text part"
    );
    assert_eq!(lines[7]["type"], "usage");
    let compaction = &lines[8];
    let compaction_ms =
        treelog::format::time::parse_iso_ms(compaction["timestamp"].as_str().unwrap()).unwrap();
    assert_eq!(
        compaction["systemMessage"],
        json!({"role": "system", "content": "be brief", "timestamp": compaction_ms})
    );
    let context: Value = serde_json::from_str(&run_ok(&["context", arg(&path)])).unwrap();
    assert_eq!(
        context["messages"],
        json!([
            {"role": "system", "content": "be brief", "timestamp": compaction_ms},
            {"role": "compactionSummary", "summary": "sum", "tokensBefore": 10, "timestamp": compaction_ms},
            {"role": "user", "content": "hello", "timestamp": 2},
            {"role": "assistant", "content": [{"type": "text", "text": "edited"}], "provider": "p", "model": "m", "timestamp": 3},
        ])
    );
    let old: Value =
        serde_json::from_str(&run_ok(&["context", arg(&path), "--pi-compat", "0.73"])).unwrap();
    let roles: Vec<&str> = old["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["compactionSummary", "system", "user", "assistant", "user"]
    );
    assert_eq!(
        old["messages"][3]["content"],
        json!([{"type": "text", "text": "hi"}])
    );
    let entry_ids: Vec<String> =
        serde_json::from_str::<Vec<Value>>(&run_ok(&["context", arg(&path), "--entries"]))
            .unwrap()
            .iter()
            .map(|entry| entry["id"].as_str().unwrap().to_string())
            .collect();
    assert_eq!(entry_ids[0], compaction["id"].as_str().unwrap());
    assert!(
        !entry_ids.contains(system),
        "the kept system message is left out"
    );
    assert_eq!(
        entry_ids.len(),
        1 + 3 + 3,
        "compaction, kept user/assistant/secret, two edits and the usage"
    );
    let refused = treelog(
        &["append", arg(&path)],
        &format!(
            "{}\n",
            json!({"type": "context_edit", "targetId": system, "replacement": null})
        ),
    );
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("does not contribute editable model content"),
        "{}",
        stderr(&refused)
    );
}

/// A message without a string `role` is refused with its stdin line, as a plain message and
/// inside a `{"type":"message"}` entry, and nothing is written: pi cannot place such a
/// message in a context.
#[test]
fn append_refuses_a_message_without_a_role() {
    let (_dir, path) = sample_copy();
    let before = std::fs::read(&path).unwrap();
    for input in [
        "{\"content\":\"no role\",\"timestamp\":1}\n",
        "{\"role\":7,\"content\":\"x\"}\n",
        "{\"type\":\"message\",\"message\":{\"content\":\"x\"}}\n",
    ] {
        let output = treelog(&["append", arg(&path)], input);
        assert_exit(&output, 2);
        assert!(
            stderr(&output).starts_with("treelog: <stdin>:1: a message needs a string \"role\""),
            "{input}: {}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(&path).unwrap(), before, "{input}");
    }
}

/// An invalid stdin line stops `append` with exit 2 and its line number; earlier ids stay.
#[test]
fn append_stops_at_invalid_line() {
    let (_dir, path) = sample_copy();
    let input = "{\"role\":\"user\",\"content\":\"a\",\"timestamp\":1}\n\nnot json\n{\"role\":\"user\",\"content\":\"b\",\"timestamp\":2}\n";
    let output = treelog(&["append", arg(&path), "--sync", "none"], input);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).starts_with("treelog: <stdin>:3: not valid JSON"),
        "{}",
        stderr(&output)
    );
    let ids = stdout(&output);
    assert_eq!(ids.lines().count(), 1);
    let last = run_ok(&["path", arg(&path)]);
    assert_eq!(last.lines().last(), ids.lines().next());
}

/// A missing file is an error naming it, with exit 2.
#[test]
fn missing_file_is_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.jsonl");
    let output = treelog(&["info", arg(&missing)], "");
    assert_exit(&output, 2);
    assert!(stderr(&output).starts_with(&format!("treelog: {}: ", missing.display())));
}

/// When the reader of stdout goes away early (`treelog tree --json | head -1`), the exit
/// code is 0 and nothing is printed on stderr.
#[test]
fn broken_pipe_exits_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.jsonl");
    let message = "{\"role\":\"user\",\"content\":\"hello there\",\"timestamp\":1}\n";
    let output = treelog(
        &["append", arg(&path), "--sync", "none"],
        &message.repeat(3000),
    );
    assert_exit(&output, 0);
    for command in [
        &["tree", arg(&path), "--json"][..],
        &["path", arg(&path)][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_treelog"))
            .args(command)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn treelog");
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        reader.read_line(&mut first).expect("first line");
        drop(reader);
        let output = child.wait_with_output().expect("wait");
        assert_exit(&output, 0);
        assert_eq!(stderr(&output), "");
    }
}

/// `--help` documents the exit codes; an unknown command is a usage error (2).
#[test]
fn help_and_usage_errors() {
    let help = run_ok(&["--help"]);
    assert!(help.contains("Exit codes:"));
    assert_exit(&treelog(&["no-such-command"], ""), 2);
}

/// Writes `lines` (each without `\n`) to `name` in `dir`, each followed by a newline.
fn write_lines(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&path, text).expect("write log");
    path
}

fn sample_lines() -> Vec<String> {
    std::fs::read_to_string(data("pi-sample-200.jsonl"))
        .expect("sample")
        .lines()
        .map(String::from)
        .collect()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// The shape of a tree: each node's depth and whether it is labelled, in walk order.
fn tree_shape(path: &Path) -> Vec<(u64, bool)> {
    json_lines(&run_ok(&["tree", arg(path), "--json"]))
        .iter()
        .map(|node| {
            (
                node["depth"].as_u64().unwrap_or(0),
                !node["label"].is_null(),
            )
        })
        .collect()
}

/// The generator (`treelog demo`'s, and `treelog-dev gen`'s) writes exactly N entries that
/// verify clean, the same seed gives the same tree shape and counts whichever writer is used,
/// and it refuses a file that exists.
#[test]
fn generator_is_deterministic_and_clean() {
    use treelog_synth::Writer;
    let dir = tempfile::tempdir().expect("temp dir");
    let via_session = dir.path().join("session.jsonl");
    let bulk = dir.path().join("bulk.jsonl");
    let options = |writer| treelog_synth::GenOptions {
        branch_rate: 0.05,
        compact_every: 100,
        payload_bytes: 300,
        ..crate::synth::options(400, 7, writer)
    };
    let summary = treelog_synth::generate(&via_session, &options(Writer::Session), |_| {}).unwrap();
    assert_eq!(summary.entries, 400);
    treelog_synth::generate(&bulk, &options(Writer::Bulk), |_| {}).unwrap();
    let info_bulk: Value = serde_json::from_str(&run_ok(&["info", arg(&bulk), "--json"])).unwrap();
    let info_session: Value =
        serde_json::from_str(&run_ok(&["info", arg(&via_session), "--json"])).unwrap();
    assert_eq!(info_bulk["entryCount"], 400);
    assert_eq!(info_bulk["countsByType"], info_session["countsByType"]);
    assert!(info_bulk["countsByType"]["compaction"].as_u64() >= Some(3));
    assert!(info_bulk["countsByType"]["branch_summary"].as_u64() >= Some(1));
    assert_eq!(tree_shape(&bulk), tree_shape(&via_session));
    run_ok(&["verify", arg(&bulk), arg(&via_session)]);
    let again = treelog_synth::generate(&bulk, &options(Writer::Bulk), |_| {});
    assert!(
        matches!(again, Err(treelog_synth::Error::Exists(_))),
        "{again:?}"
    );
}

/// `reindex` reports a rebuild for new sidecars, then fresh ones, as JSON lines and a summary.
#[test]
fn reindex_reports_states() {
    let (dir, _path) = sample_copy();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::copy(data("pi-sample-200.jsonl"), dir.path().join("sub/b.jsonl")).unwrap();
    let first = json_lines(&run_ok(&["reindex", arg(dir.path()), "--json"]));
    assert_eq!(first.len(), 3);
    for line in &first[..2] {
        assert_eq!(line["state"], "rebuilt");
        assert_eq!(line["entries"], 201);
    }
    assert_eq!(first[2]["summary"]["rebuilt"], 2);
    let second = json_lines(&run_ok(&["reindex", arg(dir.path()), "--json"]));
    assert!(second[..2].iter().all(|line| line["state"] == "fresh"));
    let forced = json_lines(&run_ok(&["reindex", arg(dir.path()), "--json", "--force"]));
    assert_eq!(forced[2]["summary"]["rebuilt"], 2);
}

/// `verify` exits 0 on pi's own transcript.
#[test]
fn verify_clean_sample() {
    let (_dir, path) = sample_copy();
    let output = treelog(&["verify", arg(&path), "--full"], "");
    assert_exit(&output, 0);
    assert!(stdout(&output).contains(": ok ("));
}

/// A torn tail is reported at the line after the last one, with its byte offset, exit 1.
#[test]
fn verify_torn_tail() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lines = sample_lines();
    let path = write_lines(dir.path(), "torn.jsonl", &lines);
    let offset = std::fs::metadata(&path).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"type":"message","id":"cut"#).unwrap();
    drop(file);
    let output = treelog(&["verify", arg(&path)], "");
    assert_exit(&output, 1);
    let expected = format!("treelog: {}:{}: torn tail", path.display(), lines.len() + 1);
    let text = stdout(&output);
    assert!(
        text.starts_with(&expected),
        "expected {expected:?}, got {text:?}"
    );
    assert!(text.contains(&format!("(byte {offset})")), "{text}");
}

/// A bad line, a duplicate id and a dangling parent are reported at their line numbers.
#[test]
fn verify_reports_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut lines = sample_lines();
    lines.insert(10, "{\"type\":\"message\",\"id\":\"bad".into());
    lines.push(lines[5].clone());
    lines.push(r#"{"type":"message","id":"orphan1","parentId":"nowhere","timestamp":"2025-01-02T00:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}}"#.into());
    let path = write_lines(dir.path(), "bad.jsonl", &lines);
    let output = treelog(&["verify", arg(&path), "--json"], "");
    assert_exit(&output, 1);
    let mut problems = json_lines(&stdout(&output));
    // The last line is the summary.
    let summary = problems.pop().expect("a summary line");
    assert_eq!(summary["summary"]["problems"], 3);
    let found: Vec<(String, u64)> = problems
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap_or("").to_string(),
                p["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let count = lines.len() as u64;
    assert_eq!(
        found,
        vec![
            ("unparseable".to_string(), 11),
            ("duplicateId".to_string(), count - 1),
            ("danglingParent".to_string(), count),
        ]
    );
    assert_eq!(problems[0]["path"], arg(&path));
}

/// A log that cannot be read makes `verify` exit 2.
#[test]
fn verify_missing_file_is_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    assert_exit(
        &treelog(&["verify", arg(&dir.path().join("no.jsonl"))], ""),
        2,
    );
}

/// `list` finds sessions one directory level down in pi's default directory, newest first,
/// with pi's header fields, name, message count and first user message; --cwd filters.
#[test]
fn list_sessions_in_pi_dir() {
    let agent = tempfile::tempdir().expect("temp dir");
    let project = agent.path().join("sessions/--home-dev-project--");
    let other = agent.path().join("sessions/--other--");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(data("pi-sample-200.jsonl"), project.join("sample.jsonl")).unwrap();
    let newer = other.join("new.jsonl");
    let message = "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"fresh start\"}],\"timestamp\":1}\n";
    assert_exit(
        &treelog(&["append", arg(&newer), "--sync", "none"], message),
        0,
    );
    let env = [("PI_CODING_AGENT_DIR", agent.path())];
    let output = treelog_env(&["list", "--json"], "", &env);
    assert_exit(&output, 0);
    let sessions = json_lines(&stdout(&output));
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["path"], arg(&newer));
    assert_eq!(sessions[0]["firstMessage"], "fresh start");
    assert_eq!(sessions[0]["messageCount"], 1);
    let oracle = oracle();
    let sample = &sessions[1];
    assert_eq!(sample["id"], oracle["header"]["id"]);
    assert_eq!(sample["cwd"], oracle["header"]["cwd"]);
    assert_eq!(sample["created"], oracle["header"]["timestamp"]);
    assert_eq!(sample["name"], oracle["sessionName"]);
    assert_eq!(sample["messageCount"], 175);
    assert_eq!(sample["parentSession"], Value::Null);
    assert!(
        sample["firstMessage"]
            .as_str()
            .is_some_and(|text| !text.is_empty())
    );
    let filtered = treelog_env(&["list", "--json", "--cwd", "/home/dev/project"], "", &env);
    assert_eq!(json_lines(&stdout(&filtered)).len(), 1);
    let text = treelog_env(&["list"], "", &env);
    assert!(stdout(&text).contains("bench session seed=96 (renamed)"));
}

/// `export --format json` is the oracle's context; Markdown shows the conversation.
#[test]
fn export_formats() {
    let (_dir, path) = sample_copy();
    let json: Value =
        serde_json::from_str(&run_ok(&["export", arg(&path), "--format", "json"])).unwrap();
    assert_eq!(json, oracle()["context"]);
    let markdown = run_ok(&["export", arg(&path), "--format", "markdown"]);
    assert!(markdown.starts_with("# bench session seed=96 (renamed)\n"));
    for needle in [
        "## User",
        "## Assistant",
        "**Tool call**",
        "```json",
        "### Tool result",
        "## Compaction summary",
    ] {
        assert!(markdown.contains(needle), "missing {needle}");
    }
}

/// A cut-off tail: the dry run changes nothing; --apply cuts it, keeps a backup of the
/// original, deletes the sidecar, and the log then verifies clean.
#[test]
fn repair_cuts_torn_tail() {
    let (dir, path) = sample_copy();
    run_ok(&["info", arg(&path)]);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"type":"message","id":"cu"#).unwrap();
    drop(file);
    let original = std::fs::read(&path).unwrap();
    let dry = run_ok(&["repair", arg(&path)]);
    assert!(dry.contains("would fix: cut the torn tail"), "{dry}");
    assert_eq!(std::fs::read(&path).unwrap(), original);
    run_ok(&["repair", arg(&path), "--apply"]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(data("pi-sample-200.jsonl")).unwrap()
    );
    let backups: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("sample.jsonl.bak-")
        })
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(std::fs::read(backups[0].path()).unwrap(), original);
    assert!(!dir.path().join("sample.jsonl.treelog").exists());
    assert_exit(&treelog(&["verify", arg(&path)], ""), 0);
}

/// A complete last line without its newline is the last entry, as pi reads it (`treelog path`
/// ends with it, `verify` finds nothing wrong), and repair keeps it and ends it.
#[test]
fn repair_terminates_complete_tail() {
    let (_dir, path) = sample_copy();
    let leaf = oracle()["leafId"].as_str().unwrap().to_string();
    let line = format!(
        r#"{{"type":"message","id":"tail0001","parentId":"{leaf}","timestamp":"2025-01-02T00:00:00.000Z","message":{{"role":"user","content":"kept","timestamp":1}}}}"#
    );
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(line.as_bytes()).unwrap();
    drop(file);
    assert_eq!(
        run_ok(&["path", arg(&path)]).lines().last(),
        Some("tail0001")
    );
    assert_exit(&treelog(&["verify", arg(&path)], ""), 0);
    let report = run_ok(&["repair", arg(&path), "--apply"]);
    assert!(report.contains("fixed: end the last line"), "{report}");
    assert_eq!(
        run_ok(&["path", arg(&path)]).lines().last(),
        Some("tail0001")
    );
}

/// A log without its header gets a version 3 header on top; every entry line is kept.
#[test]
fn repair_restores_missing_header() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lines = sample_lines();
    let path = write_lines(dir.path(), "headless.jsonl", &lines[1..]);
    assert_exit(&treelog(&["verify", arg(&path)], ""), 1);
    run_ok(&[
        "repair",
        arg(&path),
        "--apply",
        "--cwd",
        "/home/dev/project",
    ]);
    let repaired: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(repaired[1..], lines[1..]);
    let header: Value = serde_json::from_str(&repaired[0]).unwrap();
    assert_eq!(
        (header["type"].as_str(), header["version"].as_u64()),
        (Some("session"), Some(3))
    );
    assert_eq!(header["cwd"], "/home/dev/project");
    let path_ids: Vec<Value> = run_ok(&["path", arg(&path)])
        .lines()
        .map(|id| Value::String(id.into()))
        .collect();
    assert_eq!(Value::Array(path_ids), oracle()["path"]);
    assert_exit(&treelog(&["verify", arg(&path)], ""), 0);
}

/// A version 1 log is migrated as pi migrates it: ids, parents, firstKeptEntryId, roles.
#[test]
fn repair_migrates_v1() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lines: Vec<String> = [
        r#"{"type":"session","id":"sess-v1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"hookMessage","customType":"x","content":"hook","display":true,"timestamp":3}}"#,
        r#"{"type":"compaction","timestamp":"2025-01-01T00:00:04.000Z","summary":"sum","firstKeptEntryIndex":2,"tokensBefore":10}"#,
    ]
    .map(String::from)
    .to_vec();
    let path = write_lines(dir.path(), "v1.jsonl", &lines);
    let ids_before = run_ok(&["path", arg(&path)]);
    let report = run_ok(&["repair", arg(&path), "--apply"]);
    assert!(
        report.contains("migrate the log from version 1 to 3"),
        "{report}"
    );
    let repaired: Vec<Value> = json_lines(&std::fs::read_to_string(&path).unwrap());
    assert_eq!(repaired[0]["version"], 3);
    let ids: Vec<&str> = ids_before.lines().collect();
    assert_eq!(repaired[1]["id"], ids[0]);
    assert_eq!(repaired[1]["parentId"], Value::Null);
    assert_eq!(repaired[2]["parentId"], ids[0]);
    assert_eq!(repaired[3]["message"]["role"], "custom");
    assert_eq!(repaired[4]["firstKeptEntryId"], ids[1]);
    assert!(repaired[4].get("firstKeptEntryIndex").is_none());
    assert_eq!(run_ok(&["path", arg(&path)]), ids_before);
    assert_exit(&treelog(&["verify", arg(&path)], ""), 0);
}

/// `demo` runs end to end on the bundled pi 1.6 session and a small generated transcript:
/// each section shows, the `*` marker is explained, and every timing row either shows a
/// speed-up of at least 1.5x or names a reason that is explained under the table.
#[test]
fn demo_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = run_ok(&["demo", "--entries", "500", "--dir", arg(dir.path())]);
    for needle in [
        "pi16-demo.jsonl: a coding session pi 1.6.0 wrote through its own SDK",
        "== 1. Indexing",
        "== 2. The session's tree",
        "`*` marks the active path",
        "== 3. The context sent to the model",
        "messages:       9 of the 25 entries on the active path",
        "in order:       system compactionSummary assistant",
        "model:          faux/faux-coder",
        "== 4. Timings",
        "  build_context (9 messages)",
    ] {
        assert!(text.contains(needle), "missing {needle} in:\n{text}");
    }
    let rows: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("  open") || line.starts_with("  build_context"))
        .collect();
    assert_eq!(rows.len(), 6, "three rows per transcript:\n{text}");
    for row in rows {
        if let Some(before) = row.strip_suffix("x faster") {
            let ratio: f64 = before
                .rsplit(' ')
                .next()
                .and_then(|number| number.parse().ok())
                .unwrap_or_else(|| panic!("a ratio in {row:?}"));
            assert!(ratio >= 1.5, "a ratio below 1.5x printed: {row:?}");
        } else {
            let reason = row
                .rsplit_once('(')
                .and_then(|(_, reason)| reason.strip_suffix(')'))
                .unwrap_or_else(|| panic!("neither a speed-up nor a reason: {row:?}"));
            assert!(
                text.contains(&format!("\n{reason}: ")),
                "reason {reason:?} is not explained in:\n{text}"
            );
        }
    }
    assert!(dir.path().join("generated-500.jsonl").exists());
}

/// Starts `treelog append FILE extra...` with a piped stdin, returning the child.
fn spawn_append(path: &Path, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args([&["append", arg(path)][..], extra].concat())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn treelog append")
}

/// Another writer appending after this one's leaf is a conflict: exit 1 with
/// `--on-conflict fail` (the default), and the append follows the new tip with `follow`.
#[test]
fn append_conflict_policies() {
    for (policy, code) in [("fail", 1), ("follow", 0)] {
        let (_dir, path) = sample_copy();
        let mut child = spawn_append(&path, &["--on-conflict", policy]);
        let mut input = child.stdin.take().expect("stdin");
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        input
            .write_all(b"{\"role\":\"user\",\"content\":\"first\",\"timestamp\":1}\n")
            .unwrap();
        input.flush().unwrap();
        let mut first = String::new();
        reader.read_line(&mut first).expect("first id");
        // A second process appends a child of the first one's leaf meanwhile.
        let other = treelog(
            &["append", arg(&path)],
            "{\"role\":\"user\",\"content\":\"other\",\"timestamp\":2}\n",
        );
        assert_exit(&other, 0);
        let other_id = stdout(&other).trim().to_string();
        input
            .write_all(b"{\"role\":\"user\",\"content\":\"second\",\"timestamp\":3}\n")
            .unwrap();
        drop(input);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
        let output = child.wait_with_output().expect("wait");
        assert_exit(&output, code);
        let path_ids = run_ok(&["path", arg(&path)]);
        let tail: Vec<&str> = path_ids.lines().rev().take(3).collect();
        if policy == "fail" {
            // The refusal says what happened in the user's words, and how to go on (it read
            // `stale view: ... Some("c2fab1df")`, Rust debug text, before).
            let message = stderr(&output);
            assert!(
                message.contains(&format!(
                    "another writer appended entry {other_id} after this session's leaf {}",
                    first.trim()
                )) && message.contains("--on-conflict follow")
                    && !message.contains("Some("),
                "{message}"
            );
            assert_eq!(tail[0], other_id);
            assert!(rest.is_empty());
        } else {
            assert_eq!(tail, vec![rest.trim(), other_id.as_str(), first.trim()]);
        }
    }
}

/// `verify` on a directory checks every log (in parallel) and reports them in file order;
/// one broken log makes the exit code 1.
#[test]
fn verify_directory_in_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lines = sample_lines();
    for name in ["a.jsonl", "c.jsonl"] {
        write_lines(dir.path(), name, &lines);
    }
    let mut broken = lines.clone();
    broken.insert(3, "not json".into());
    write_lines(dir.path(), "b.jsonl", &broken);
    let output = treelog(&["verify", arg(dir.path())], "");
    assert_exit(&output, 1);
    let text = stdout(&output);
    let order: Vec<&str> = text
        .lines()
        .filter_map(|line| {
            ["a.jsonl", "b.jsonl", "c.jsonl"]
                .into_iter()
                .find(|name| line.contains(name))
        })
        .collect();
    assert_eq!(order, vec!["a.jsonl", "b.jsonl", "c.jsonl"], "{text}");
    assert!(text.contains("b.jsonl:4: not valid JSON"), "{text}");
    let summary = stderr(&output);
    assert!(summary.contains("1 with problems"), "{summary}");
}

/// Without sessions yet, pi's default directory is simply empty; a named missing one is an
/// error (exit 2).
#[test]
fn list_missing_dirs() {
    let agent = tempfile::tempdir().expect("temp dir");
    let env = [("PI_CODING_AGENT_DIR", agent.path())];
    let output = treelog_env(&["list"], "", &env);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "");
    let missing = agent.path().join("nowhere");
    assert_exit(&treelog(&["list", arg(&missing)], ""), 2);
}

/// `reindex --json` reports a log it cannot open as a `failed` line, then exits 2.
#[test]
fn reindex_failure_is_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("gone.jsonl");
    let output = treelog(&["reindex", arg(&missing), "--json"], "");
    assert_exit(&output, 2);
    let lines = json_lines(&stdout(&output));
    assert_eq!(lines[0]["state"], "failed");
    assert_eq!(lines[0]["path"], arg(&missing));
    assert_eq!(lines[1]["summary"]["failed"], 1);
}

/// The human forms of `info` and `tree --no-fold` show the leaf and every entry.
#[test]
fn human_info_and_unfolded_tree() {
    let (_dir, path) = sample_copy();
    let info = run_ok(&["info", arg(&path)]);
    assert!(info.contains("leaf:        c2fab1df"), "{info}");
    assert!(info.contains("entries:     201 ("), "{info}");
    let tree = run_ok(&["tree", arg(&path), "--no-fold"]);
    assert_eq!(tree.lines().count(), 201);
    assert!(!tree.contains("more entries"));
}

// --- Bad input gets a clear answer (format-spec/log.md §2, §6, §8) -------------------------

const USER: &str = "{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}\n";

/// Bytes that look like nothing: a fixed pseudo-random stream with a newline now and then.
fn random_bytes(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// `context`, `path`, `tree`, `info` and `export` refuse a file that holds neither a session
/// header nor an entry (random bytes, lines of other JSON, a torn first write) with exit 2
/// and "FILE: not a session log", instead of answering as if it were an empty session.
#[test]
fn reading_commands_refuse_what_is_not_a_session_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = [
        ("random.jsonl", random_bytes(100_000)),
        ("json.jsonl", b"[1,2,3]\n{\"a\":1}\n".to_vec()),
        ("torn.jsonl", b"{\"type\":\"session\",\"v".to_vec()),
    ];
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        for command in [
            &["context"][..],
            &["path"],
            &["tree"],
            &["tree", "--json"],
            &["info"],
            &["info", "--json"],
            &["export"],
            &["export", "--format", "json"],
        ] {
            let mut args = command.to_vec();
            args.insert(1, arg(&path));
            let output = treelog(&args, "");
            assert_exit(&output, 2);
            let expected = format!(
                "treelog: {}: not a session log: it holds neither a session header nor an entry (",
                path.display()
            );
            assert!(
                stderr(&output).starts_with(&expected),
                "{name} {command:?}: {}",
                stderr(&output)
            );
            assert!(stdout(&output).is_empty(), "{name} {command:?}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name}: changed");
    }
}

/// An empty (0-byte) log is a new, empty session: the reading commands answer it as one,
/// `info` shows no made-up header ("none yet"), `export` says there is nothing to export,
/// `verify` finds it clean and `repair` has nothing to do, and `append` writes the header.
#[test]
fn empty_log_is_a_new_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("empty.jsonl");
    std::fs::write(&path, b"").unwrap();
    let p = arg(&path);
    assert_eq!(
        run_ok(&["context", p]),
        "{\"messages\":[],\"thinkingLevel\":\"off\",\"model\":null}\n"
    );
    assert_eq!(run_ok(&["path", p]), "");
    assert_eq!(run_ok(&["tree", p]), "(no entries)\n");
    let info: Value = serde_json::from_str(&run_ok(&["info", p, "--json"])).unwrap();
    assert_eq!(info["header"], Value::Null);
    assert_eq!(info["empty"], true);
    let text = run_ok(&["info", p]);
    assert!(
        text.contains("header:      none yet (empty log: the first append writes one)"),
        "{text}"
    );
    assert!(!text.contains("header:      ok"), "{text}");
    let output = treelog(&["export", p], "");
    assert_exit(&output, 2);
    assert_eq!(
        stderr(&output),
        format!(
            "treelog: {p}: empty log: nothing to export yet (no session header and no entry)\n"
        )
    );
    assert!(stdout(&output).is_empty());
    assert!(run_ok(&["verify", p]).contains(": ok ("));
    assert_eq!(run_ok(&["repair", p]), format!("{p}: nothing to repair\n"));
    let output = treelog(&["append", p], USER);
    assert_exit(&output, 0);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("{\"type\":\"session\",\"version\":3,"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2);
}

/// `export` computes before it writes: an unknown `--leaf` leaves stdout empty and says
/// which id is unknown, in both formats; a log with a header and no entry exports a
/// document without entries (it failed with "index: record 18446744073709551615 is missing").
#[test]
fn export_reports_before_writing() {
    let (_dir, path) = sample_copy();
    let p = arg(&path);
    for format in ["markdown", "json"] {
        let output = treelog(&["export", p, "--leaf", "zzz", "--format", format], "");
        assert_exit(&output, 2);
        assert!(stdout(&output).is_empty(), "{format}: {}", stdout(&output));
        assert_eq!(
            stderr(&output),
            format!("treelog: {p}: no entry has the id \"zzz\"\n"),
            "{format}"
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let header = sample_lines()[0].clone();
    let only_header = write_lines(dir.path(), "header.jsonl", &[header]);
    let markdown = run_ok(&["export", arg(&only_header)]);
    assert!(markdown.starts_with("# Session "), "{markdown}");
    assert!(!markdown.contains("## "), "{markdown}");
    assert_eq!(
        run_ok(&["export", arg(&only_header), "--format", "json"]),
        "{\"messages\":[],\"thinkingLevel\":\"off\",\"model\":null}\n"
    );
}

/// `verify` tells the user to run `treelog repair` exactly when `repair` has a fix to make:
/// an empty log and a torn tail that a later append ended with a newline need none (verify
/// does not advise it), a torn tail, a missing header and a version 1 log do.
#[test]
fn verify_advises_repair_only_when_repair_repairs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lines = sample_lines();
    let header = lines[0].clone();
    let entry = lines[1].clone();
    let torn_closed = dir.path().join("torn-closed.jsonl");
    std::fs::write(
        &torn_closed,
        format!("{header}\n{entry}\n{{\"type\":\"mess"),
    )
    .unwrap();
    assert_exit(&treelog(&["append", arg(&torn_closed)], USER), 0);
    let cases = [
        (dir.path().join("empty.jsonl"), String::new(), false),
        (torn_closed, String::new(), false),
        (
            dir.path().join("torn.jsonl"),
            format!("{header}\n{entry}\n{{\"type\":\"mess"),
            true,
        ),
        (
            dir.path().join("headerless.jsonl"),
            format!("{entry}\n"),
            true,
        ),
        (
            dir.path().join("v1.jsonl"),
            "{\"type\":\"session\",\"id\":\"v1\",\"timestamp\":\"2024-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n{\"type\":\"message\",\"timestamp\":\"2024-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"one\",\"timestamp\":1}}\n".into(),
            true,
        ),
    ];
    for (path, text, repairable) in cases {
        if !text.is_empty() || !path.exists() {
            std::fs::write(&path, &text).unwrap();
        }
        let p = arg(&path);
        let verify = treelog(&["verify", p], "");
        let advice = stdout(&verify).contains("treelog repair");
        let repair = run_ok(&["repair", p]);
        let nothing = repair == format!("{p}: nothing to repair\n");
        assert_eq!(advice, repairable, "{p}: verify said {}", stdout(&verify));
        assert_eq!(!nothing, repairable, "{p}: repair said {repair}");
        if !repairable {
            // What verify reports without advising repair is kept as it is (a line pi skips
            // too), or nothing at all.
            assert!(!stdout(&verify).contains("treelog repair"));
        }
    }
}

/// `append` refuses a message whose shape pi 1.6 would not read back (no numeric
/// `timestamp`, no `content` or one of the wrong kind), naming the stdin line, and writes
/// nothing.
#[test]
fn append_refuses_a_message_pi_cannot_read() {
    let (_dir, path) = sample_copy();
    let before = std::fs::read(&path).unwrap();
    for (input, message) in [
        (
            "{\"role\":\"user\",\"content\":\"x\"}",
            "a user message needs a numeric \"timestamp\" (epoch milliseconds, as pi writes Date.now())",
        ),
        (
            "{\"role\":\"user\",\"content\":\"x\",\"timestamp\":\"2025-01-01T00:00:00Z\"}",
            "a user message needs a numeric \"timestamp\" (epoch milliseconds, as pi writes Date.now()), not \"2025-01-01T00:00:00Z\"",
        ),
        (
            "{\"role\":\"user\",\"timestamp\":1}",
            "a user message needs a \"content\": a string or an array of content blocks (objects such as {\"type\":\"text\",\"text\":...})",
        ),
        (
            "{\"role\":\"user\",\"content\":7,\"timestamp\":1}",
            "the \"content\" of a user message must be a string or an array of content blocks (objects such as {\"type\":\"text\",\"text\":...}), not 7",
        ),
        (
            "{\"role\":\"user\",\"content\":[\"x\"],\"timestamp\":1}",
            "the \"content\" of a user message must be a string or an array of content blocks (objects such as {\"type\":\"text\",\"text\":...}), not [\"x\"]",
        ),
        (
            "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\",\"timestamp\":1}}",
            "the \"content\" of a assistant message must be an array of content blocks (objects such as {\"type\":\"text\",\"text\":...}), not \"hi\"",
        ),
    ] {
        let output = treelog(&["append", arg(&path)], &format!("{USER}{input}\n"));
        assert_exit(&output, 2);
        assert_eq!(
            stderr(&output),
            format!("treelog: <stdin>:2: {message}\n"),
            "{input}"
        );
        // The first line was appended (and acknowledged); the refused one was not.
        assert_eq!(stdout(&output).lines().count(), 1, "{input}");
        let after = std::fs::read(&path).unwrap();
        assert_eq!(after.len() - before.len(), {
            let text = String::from_utf8(after.clone()).unwrap();
            text.lines().last().unwrap().len() + 1
        });
        std::fs::write(&path, &before).unwrap();
        let _ = std::fs::remove_file(treelog::sidecar_path(&path));
    }
}

/// `append` to a version 1 log or to a log without a header is refused with exit 2 and a
/// pointer to `treelog repair` (it wrote a parentId that only the in-memory migration has,
/// or an entry pi would not read); after `repair --apply`, the append lands and the log
/// verifies clean.
#[test]
fn append_to_legacy_or_headerless_log_points_to_repair() {
    let dir = tempfile::tempdir().expect("temp dir");
    let entry = sample_lines()[1].clone();
    for (name, text, words) in [
        (
            "v1.jsonl",
            "{\"type\":\"session\",\"id\":\"v1\",\"timestamp\":\"2024-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n{\"type\":\"message\",\"timestamp\":\"2024-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"one\",\"timestamp\":1}}\n".to_string(),
            "the log is a version 1 session, which pi migrates on every load",
        ),
        (
            "headerless.jsonl",
            format!("{entry}\n"),
            "the log has no session header (its first line that is JSON, at byte 0, is not one)",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &text).unwrap();
        let p = arg(&path);
        let output = treelog(&["append", p], USER);
        assert_exit(&output, 2);
        let error = stderr(&output);
        assert!(error.starts_with(&format!("treelog: {p}: {words}")), "{error}");
        assert!(
            error.ends_with(&format!(
                "`treelog repair {p} --apply` {}; nothing was written\n",
                if name == "v1.jsonl" {
                    "migrates it to version 3 first"
                } else {
                    "writes a header first"
                }
            )),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(run_ok(&["repair", p, "--apply"]).contains("fix(es) applied"));
        let output = treelog(&["append", p], USER);
        assert_exit(&output, 0);
        let verify = treelog(&["verify", p, "--json"], "");
        assert_exit(&verify, 0);
    }
}

/// The header is never lost: the first write of a new log as treelog writes it (header and
/// first entry), cut at every byte offset, then `treelog append`: the file pi then reads has
/// a session header first (pi takes the first line that parses as JSON) and holds every
/// acknowledged entry. With TREELOG_PI_NODE set (a Node 24: bindings/node/node_modules/.bin/node
/// after `npm ci` there, which installs both pis too), pi 1.6.0 and 0.73.1 themselves check the
/// same (tests/pi-diff/torn_first_write.mjs).
#[test]
fn torn_first_write_keeps_every_acknowledged_entry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = dir.path().join("first.jsonl");
    let output = treelog(&["append", arg(&first)], USER);
    assert_exit(&output, 0);
    let first_id = stdout(&output).trim().to_string();
    let whole = std::fs::read(&first).unwrap();
    for offset in 0..=whole.len() {
        let path = dir.path().join(format!("cut-{offset}.jsonl"));
        std::fs::write(&path, &whole[..offset]).unwrap();
        let output = treelog(&["append", arg(&path)], USER);
        assert_exit(&output, 0);
        let mut acknowledged = vec![stdout(&output).trim().to_string()];
        if offset == whole.len() {
            acknowledged.push(first_id.clone());
        }
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            bytes.starts_with(&whole[..offset]),
            "cut at {offset}: rewritten"
        );
        // pi's reading (both versions): lines split on `\n`, blank ones skipped, the ones
        // that do not parse dropped; the first parsed value must be the header.
        let parsed: Vec<Value> = bytes
            .split(|b| *b == b'\n')
            .filter(|line| !String::from_utf8_lossy(line).trim().is_empty())
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect();
        assert_eq!(parsed[0]["type"], "session", "cut at {offset}");
        assert!(parsed[0]["id"].is_string(), "cut at {offset}");
        let info: Value = serde_json::from_str(&run_ok(&["info", arg(&path), "--json"])).unwrap();
        assert_eq!(info["header"]["id"], parsed[0]["id"], "cut at {offset}");
        assert_eq!(info["headerRecovered"], false, "cut at {offset}");
        for id in &acknowledged {
            assert!(
                parsed[1..].iter().any(|value| value["id"] == id.as_str()),
                "cut at {offset}: acknowledged entry {id} not read"
            );
        }
    }
    if let Some(node) = std::env::var_os("TREELOG_PI_NODE") {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/pi-diff/torn_first_write.mjs");
        let output = Command::new(node)
            .arg(script)
            .arg("--treelog")
            .arg(env!("CARGO_BIN_EXE_treelog"))
            .output()
            .expect("run node");
        assert!(
            output.status.success(),
            "pi's reading:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
