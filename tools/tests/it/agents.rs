//! The reading commands on the sessions the real Claude Code 2.1.337 and Codex CLI 0.171.0
//! wrote (tests/data/claude-code/, tests/data/codex/), over copies in a temporary folder:
//! `list` against the clients' own resume pickers (their `expected.json`), `info`, `tree`,
//! `context`, `export`, `verify` and `search` answers, the writing commands' refusals, and
//! that no command writes a byte among the clients' files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const CLAUDE_MAIN: &str = "c0de0001-0000-4000-8000-000000000001";
const CLAUDE_SECOND: &str = "c0de0002-0000-4000-8000-000000000002";
const CODEX_FOUR_TURNS: &str = "01a25248-5e34-7973-8abe-997cfd142baa";

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Copies of `~/.claude/projects` and `~/.codex/sessions` as the clients wrote them, and a
/// folder for indexes and caches apart from them.
struct Homes {
    _root: tempfile::TempDir,
    claude: PathBuf,
    codex: PathBuf,
    cache: PathBuf,
}

fn homes() -> Homes {
    let root = tempfile::tempdir().unwrap();
    let claude = root.path().join("claude-projects");
    let codex = root.path().join("codex-sessions");
    let cache = root.path().join("cache");
    copy_dir(&data().join("claude-code/projects"), &claude);
    copy_dir(&data().join("codex/sessions"), &codex);
    std::fs::create_dir(&cache).unwrap();
    Homes {
        _root: root,
        claude,
        codex,
        cache,
    }
}

impl Homes {
    fn claude_session(&self, id: &str) -> PathBuf {
        self.claude
            .join("-tmp-treelog-agents-fixtures-project")
            .join(format!("{id}.jsonl"))
    }

    fn codex_rollout(&self, id: &str) -> PathBuf {
        let day = self.codex.join("2026/12/07");
        std::fs::read_dir(&day)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(&format!("{id}.jsonl")))
            .unwrap()
    }

    /// Every file under both homes with its bytes.
    fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut stack = vec![self.claude.clone(), self.codex.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    files.insert(path.clone(), std::fs::read(&path).unwrap());
                }
            }
        }
        files
    }

    fn treelog(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_treelog"))
            .args(args)
            .env("XDG_CACHE_HOME", &self.cache)
            .env_remove("TREELOG_INDEX_DIR")
            .output()
            .unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn expected(agent: &str) -> Value {
    let path = data().join(agent).join("expected.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `list` over each client's folder gives its sessions latest first, titled as the client's
/// resume picker titles them: Claude Code's picker row (the one session typed into its
/// terminal UI) has the title and size the picker showed; Codex's picker rows are the
/// rollouts in the same order with the same titles.
#[test]
fn list_matches_the_clients_resume_pickers() {
    let homes = homes();
    let out = homes.treelog(&["list", "--json", s(&homes.claude)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = json_lines(&out);
    let titles: Vec<&str> = rows.iter().map(|r| r["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["second session", "What did we do so far?"]);
    assert!(rows.iter().all(|r| r["agent"] == "claude"));
    let picker = &expected("claude-code")["picker"][0];
    assert_eq!(rows[0]["title"], picker["title"]);
    assert_eq!(rows[0]["size"], picker["size"]);
    assert_eq!(rows[0]["id"], CLAUDE_SECOND);
    assert_eq!(rows[0]["messageCount"], 6);

    let out = homes.treelog(&["list", "--json", s(&homes.codex)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = json_lines(&out);
    let titles: Vec<&Value> = rows.iter().map(|r| &r["title"]).collect();
    let codex_expected = expected("codex");
    let picker: Vec<&Value> = codex_expected["picker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["title"])
        .collect();
    assert_eq!(titles, picker);
    assert!(rows.iter().all(|r| r["agent"] == "codex"));

    // Both at once, one agent kept; the text table names agent and title.
    let out = homes.treelog(&[
        "list",
        s(homes.claude.parent().unwrap()),
        "--agent",
        "codex",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(table.lines().nth(1).unwrap().contains("a second session"));
    assert!(!table.contains("claude"), "{table}");
}

/// `info` says whose session it is, its title, leaf and counts; `tree` has the file's entries
/// with the resumed branch's path marked; `verify` finds nothing wrong.
#[test]
fn info_tree_and_verify_read_both_formats() {
    let homes = homes();
    let second = homes.claude_session(CLAUDE_SECOND);
    let out = homes.treelog(&["info", "--json", s(&second)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info = &json_lines(&out)[0];
    assert_eq!(info["agent"], "claude");
    assert_eq!(info["title"], "second session");
    assert_eq!(info["leafId"], "ba32a3fd-6f1e-453e-90ef-88d068b036bd");
    assert_eq!(info["entryCount"], 22);
    assert_eq!(info["countsByType"]["user"], 3);
    assert_eq!(info["problemCount"], 0);

    let rollout = homes.codex_rollout(CODEX_FOUR_TURNS);
    let out = homes.treelog(&["info", "--json", s(&rollout)]);
    let info = &json_lines(&out)[0];
    assert_eq!(info["agent"], "codex");
    assert_eq!(info["title"], "RUN ls");
    assert_eq!(info["sessionId"], CODEX_FOUR_TURNS);
    assert_eq!(info["countsByType"]["compacted"], 1);
    assert_eq!(info["entryCount"], 67);

    // One root, 22 entries; the branch the third turn resumed from is off the path.
    let out = homes.treelog(&["tree", "--json", s(&second)]);
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 22);
    assert_eq!(rows.iter().filter(|r| r["parentId"].is_null()).count(), 1);
    let off_path: Vec<&str> = rows
        .iter()
        .filter(|r| r["activePath"] == false && r["role"] == "user")
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(off_path, ["197be9dc-ca0b-4a9b-9f3d-4dfe9214adc6"]);

    let out = homes.treelog(&["verify", s(&homes.claude), s(&homes.codex)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches(": ok (").count(), 5);
}

/// `context` is what the client sends next: Claude Code's messages from its leaf's path
/// (the resumed branch, not the abandoned turn); Codex's base instructions, then the
/// compaction's replacement history, then what came after it.
#[test]
fn context_follows_each_clients_rule() {
    let homes = homes();
    let out = homes.treelog(&["context", s(&homes.claude_session(CLAUDE_SECOND))]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let context = &json_lines(&out)[0];
    assert_eq!(context["agent"], "claude");
    let turns: Vec<(String, String)> = context["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"][0]["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want = [
        ("user", "hello from a second session"),
        ("assistant", "You said: hello from a second session"),
        ("user", "a turn on a new branch"),
        ("assistant", "You said: a turn on a new branch"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    assert_eq!(turns, want);

    let out = homes.treelog(&["context", s(&homes.codex_rollout(CODEX_FOUR_TURNS))]);
    let context = &json_lines(&out)[0];
    let items = context["messages"].as_array().unwrap();
    assert_eq!(items[0]["role"], "developer");
    let texts: Vec<&str> = items
        .iter()
        .filter(|i| i["role"] == "user")
        .filter_map(|i| i["content"][0]["text"].as_str())
        .collect();
    // The first prompts survive the compaction; their replies do not.
    assert!(
        texts.starts_with(&["RUN ls", "RUN wc -l notes.txt"]),
        "{texts:?}"
    );
    assert_eq!(texts.last(), Some(&"What did we do so far?"));
    let last = items.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(
        last["content"][0]["text"],
        "You said: What did we do so far?"
    );
    // pi's options are refused by name.
    let out = homes.treelog(&[
        "context",
        "--entries",
        s(&homes.codex_rollout(CODEX_FOUR_TURNS)),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a Codex session"));
}

/// `export` writes the active path as Markdown under the session's title, or every line as
/// JSON.
#[test]
fn export_writes_markdown_and_json() {
    let homes = homes();
    let second = homes.claude_session(CLAUDE_SECOND);
    let out = homes.treelog(&["export", s(&second)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let markdown = text(&out.stdout);
    assert!(markdown.starts_with("# second session\n"), "{markdown}");
    assert!(markdown.contains("## user\n\na turn on a new branch\n"));
    assert!(!markdown.contains("a second turn"), "the abandoned turn");
    let out = homes.treelog(&["export", "--format", "json", s(&second)]);
    let doc = &json_lines(&out)[0];
    assert_eq!(doc["agent"], "claude");
    assert_eq!(doc["lines"].as_array().unwrap().len(), 67);
}

/// One search over both homes finds each client's text, each hit naming its agent; --agent
/// keeps one; a Claude Code subagent's transcript is searched too. No file among the clients'
/// is written or added (the index is kept in --index-dir).
#[test]
fn search_names_each_hits_agent() {
    let homes = homes();
    let before = homes.files();
    let index = homes.cache.join("index");
    let search = |extra: &[&str]| {
        let mut args = vec![
            "--index-dir",
            s(&index),
            "search",
            "--json",
            "--limit",
            "100",
        ];
        args.extend_from_slice(extra);
        args.extend([s(&homes.claude), s(&homes.codex)]);
        homes.treelog(&args)
    };
    let out = search(&["notes.txt"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hits = json_lines(&out);
    let agents: std::collections::BTreeSet<&str> =
        hits.iter().map(|h| h["agent"].as_str().unwrap()).collect();
    assert_eq!(agents, ["claude", "codex"].into_iter().collect());
    assert!(
        hits.iter()
            .any(|h| h["session"].as_str().unwrap().contains("/subagents/")
                && h["role"] == "toolResult"
                && h["snippet"] == "3 notes.txt"),
        "{hits:?}"
    );
    let out = search(&["--agent", "codex", "second session"]);
    let hits = json_lines(&out);
    let found: Vec<(u64, &str)> = hits
        .iter()
        .map(|h| (h["line"].as_u64().unwrap(), h["role"].as_str().unwrap()))
        .collect();
    assert_eq!(found, [(8, "user"), (11, "assistant")]);
    assert!(hits.iter().all(|h| h["activePath"] == true));
    let out = search(&["--agent", "pi", "notes.txt"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(homes.files(), before);
}

/// The commands that write a log, or open every log as a pi session, refuse another agent's
/// file with an error naming the file and its format, and leave it as it was.
#[test]
fn writing_commands_refuse_other_agents_files() {
    let homes = homes();
    let before = homes.files();
    let claude = homes.claude_session(CLAUDE_MAIN);
    let codex = homes.codex_rollout(CODEX_FOUR_TURNS);
    let cases: Vec<(Vec<&str>, &Path, &str)> = vec![
        (vec!["append", s(&claude)], &claude, "a Claude Code session"),
        (
            vec!["repair", "--apply", s(&codex)],
            &codex,
            "a Codex session",
        ),
        (vec!["path", s(&claude)], &claude, "a Claude Code session"),
        (vec!["reindex", s(&codex)], &codex, "a Codex session"),
        (vec!["stats", s(&claude)], &claude, "a Claude Code session"),
        (
            vec!["redact", "--literal", "Bash", s(&claude)],
            &claude,
            "a Claude Code session",
        ),
        (
            vec!["redact", "--secrets", s(&codex)],
            &codex,
            "a Codex session",
        ),
    ];
    for (args, file, format) in cases {
        let out = homes.treelog(&args);
        let stderr = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(
            stderr.contains(s(file)) && stderr.contains(format) && stderr.contains("never writes"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(homes.files(), before);
}
