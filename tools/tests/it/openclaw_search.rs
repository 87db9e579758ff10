//! `treelog search` on `openclaw://` addresses, on the state directory OpenClaw 2026.9.6's
//! importer made (tests/data/openclaw/): the hits of the JSONL export, the names of the hits,
//! the files of OpenClaw left as they were, and the errors with their exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use treelog_testkit::openclaw_fixture;

/// The fixture unpacked into a fresh directory: returns (guard, state directory).
fn state_dir() -> (tempfile::TempDir, PathBuf) {
    openclaw_fixture::state_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/openclaw"),
    )
}

/// `treelog ARGS` with the fixture as the default state directory and a cache of its own.
fn treelog(args: &[&str], state: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(args)
        .env("OPENCLAW_STATE_DIR", state)
        .env("XDG_CACHE_HOME", state.parent().unwrap().join("cache"))
        .env_remove("TREELOG_INDEX_DIR")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `search --json` lines as (session, the hit without its session).
fn hits(out: &Output) -> Vec<(String, serde_json::Value)> {
    text(&out.stdout)
        .lines()
        .map(|line| {
            let mut hit: serde_json::Value = serde_json::from_str(line).unwrap();
            let session = hit["session"].as_str().unwrap().to_owned();
            hit.as_object_mut().unwrap().remove("session");
            (session, hit)
        })
        .collect()
}

/// For a session exported by `treelog openclaw export` (the archived original for `clean`,
/// the rows for `dup-id`), searching the session's address gives the export's hits (lines,
/// ids, scores, snippets, active path) for each query and flag, named by the address as
/// written; the files of the state directory are byte-identical afterwards (SQLite's reader
/// may add an empty `-wal` and a `-shm`, as for any reader).
#[test]
fn an_openclaw_session_has_the_hits_of_its_jsonl_export() {
    let (root, state) = state_dir();
    let before = openclaw_fixture::files(&state);
    let flag_sets: [&[&str]; 5] = [
        &[],
        &["--branch", "active"],
        &["--sort", "newest"],
        &["--role", "user", "--since", "2026-09-01T10:00:10Z"],
        &["--include-edited"],
    ];
    let mut with_hits = 0;
    for agent in ["clean", "dup-id"] {
        let folder = root.path().join("export").join(agent);
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("s.jsonl");
        let session = format!("{agent}/s-{agent}");
        let out = treelog(
            &["openclaw", "export", &session, file.to_str().unwrap()],
            &state,
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        for address in [
            format!("openclaw://{session}"),
            format!("openclaw://{}#{session}", state.display()),
        ] {
            for words in [
                "question",
                "answer",
                "lorem",
                "\"question 2\"",
                "quest* -lorem",
            ] {
                for flags in flag_sets {
                    let run = |path: &str| {
                        let mut args = vec!["search", words, path, "--json", "--limit", "100"];
                        args.extend_from_slice(flags);
                        treelog(&args, &state)
                    };
                    let from_db = run(&address);
                    let from_file = run(file.to_str().unwrap());
                    assert_eq!(
                        from_db.status.code(),
                        from_file.status.code(),
                        "{words} {flags:?}: {}",
                        text(&from_db.stderr)
                    );
                    let expected: Vec<_> = hits(&from_file).into_iter().map(|h| h.1).collect();
                    let found = hits(&from_db);
                    with_hits += usize::from(!expected.is_empty());
                    assert_eq!(
                        found.iter().map(|h| h.1.clone()).collect::<Vec<_>>(),
                        expected,
                        "{address} {words} {flags:?}"
                    );
                    assert!(found.iter().all(|(named, _)| *named == address));
                }
            }
        }
    }
    assert!(with_hits >= 70, "{with_hits}");
    let after = openclaw_fixture::files(&state);
    for (path, bytes) in &before {
        assert!(after.get(path) == Some(bytes), "{} changed", path.display());
    }
    for (path, bytes) in &after {
        let name = path.to_str().unwrap();
        assert!(
            before.contains_key(path)
                || name.ends_with(".sqlite-shm")
                || (name.ends_with(".sqlite-wal") && bytes.is_empty()),
            "{name} appeared"
        );
    }
}

/// An agent's address searches its sessions and a state directory's every agent's; each hit
/// is named `ADDRESS/SESSION_ID:LINE` after the address as written, `--limit` holds across
/// agents, and a search without hits exits 1.
#[test]
fn agents_and_state_directories_name_each_hit_by_its_session() {
    let (_root, state) = state_dir();
    let out = treelog(
        &["search", "question 2", "openclaw://clean", "--limit", "1"],
        &state,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(
            "openclaw://clean/s-clean:4  user  2026-09-01T10:00:02.000Z  question 2\n"
        ),
        "{}",
        text(&out.stdout)
    );
    let everywhere = format!("openclaw://{}#", state.display());
    let out = treelog(
        &[
            "search",
            "question",
            &everywhere,
            "--json",
            "--limit",
            "500",
        ],
        &state,
    );
    let sessions: std::collections::BTreeSet<String> =
        hits(&out).into_iter().map(|(session, _)| session).collect();
    let expected: std::collections::BTreeSet<String> = ["bad-json", "bad-utf8", "clean", "dup-id"]
        .iter()
        .map(|agent| format!("{everywhere}{agent}/s-{agent}"))
        .collect();
    assert_eq!(sessions, expected);
    let out = treelog(
        &["search", "question", "openclaw://", "--limit", "7"],
        &state,
    );
    assert_eq!(text(&out.stdout).lines().count(), 7);
    let out = treelog(
        &["search", "zzzunknownword", "openclaw://clean/s-clean"],
        &state,
    );
    assert_eq!(out.status.code(), Some(1));
}

/// A missing state directory, an unknown agent or session, a file that is not a database and
/// a malformed address each exit 2 with one line naming the address and what is wrong.
#[test]
fn bad_openclaw_addresses_exit_2_naming_the_address() {
    let (_root, state) = state_dir();
    std::fs::write(
        state.join("agents/dup-id/agent/openclaw-agent.sqlite"),
        b"not a database",
    )
    .unwrap();
    let cases = [
        (
            "openclaw:///nonexistent/state#",
            "treelog: openclaw:///nonexistent/state#: /nonexistent/state: cannot open OpenClaw's state directory: no such directory\n",
        ),
        (
            "openclaw://clean/nope",
            "openclaw-agent.sqlite: no session nope in this agent's database\n",
        ),
        (
            "openclaw://ghost/s",
            ": no agent ghost (no agents/ghost/agent/openclaw-agent.sqlite)\n",
        ),
        ("openclaw://dup-id/s-dup-id", "openclaw-agent.sqlite: "),
        ("openclaw://a/b/c", "not an openclaw:// address"),
    ];
    for (address, expected) in cases {
        let out = treelog(&["search", "lorem", address], &state);
        assert_eq!(out.status.code(), Some(2), "{address}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with(&format!("treelog: {address}: "))
                && stderr.contains(expected)
                && stderr.lines().count() == 1,
            "{address}: {stderr}"
        );
    }
}
