//! `treelog openclaw` and `openclaw://` addresses on the state directory OpenClaw 2026.9.6's
//! importer made (tests/data/openclaw/, see tests/openclaw/README.md): the exit codes, the
//! texts, the bytes written, and errors that name what is wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use treelog_testkit::openclaw_fixture;

/// The fixture unpacked into a fresh directory: returns (guard, state directory).
fn state_dir() -> (tempfile::TempDir, PathBuf) {
    openclaw_fixture::state_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/openclaw"),
    )
}

fn treelog(args: &[&str], state: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(args)
        .env("OPENCLAW_STATE_DIR", state)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn verify_lists_the_losses_and_exits_1() {
    let (_root, state) = state_dir();
    let out = treelog(&["openclaw", "verify"], &state);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("clean/s-clean (agent:clean:main): ok, 42 line(s), 42 row(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "bad-json/s-bad-json (agent:bad-json:main): LOST 304 of 504 line(s), 200 row(s)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("  line 201: missing: not JSON: "),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  lines 202–504 (ids j0200 … j0502): missing: no row holds this id (303 lines)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("  lines 450–503 (ids u0448 … u0501): missing: no row holds this id (54 lines)\n  line 504 (id u0502): missing: invalid UTF-8 at byte 139\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  line 32 (id d0009): dropped-duplicate: "),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(
            &("5 session(s) checked under ".to_owned()
                + state.to_str().unwrap()
                + ": 366 line(s) lost or changed in 4 session(s)\n")
        ),
        "{stdout}"
    );
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));

    let out = treelog(
        &["openclaw", "verify", "--json", state.to_str().unwrap()],
        &state,
    );
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["lostLines"], 366);
    let utf8 = &report["sessions"][1];
    assert_eq!(utf8["session"], "s-bad-utf8");
    let last = &utf8["problems"][54];
    assert_eq!(
        (last["line"].as_u64(), last["id"].as_str()),
        (Some(504), Some("u0502"))
    );
    assert_eq!(last["detail"], "invalid UTF-8 at byte 139");
}

#[test]
fn export_copies_the_archived_original_or_writes_the_rows() {
    let (root, state) = state_dir();
    let file = root.path().join("clean.jsonl");
    let out = treelog(
        &[
            "openclaw",
            "export",
            "clean/s-clean",
            file.to_str().unwrap(),
        ],
        &state,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(": copied the original byte for byte from "));
    let archive = state.join("agents/clean/session-sqlite-import-archive");
    let original = std::fs::read_dir(&archive)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_str().unwrap().contains("s-clean.jsonl"))
        .unwrap();
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(original).unwrap()
    );

    // The same file again is refused, not replaced.
    let again = treelog(
        &[
            "openclaw",
            "export",
            "clean/s-clean",
            file.to_str().unwrap(),
        ],
        &state,
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("cannot create the file"),
        "{}",
        text(&again.stderr)
    );

    let rows = root.path().join("dup.jsonl");
    let out = treelog(
        &[
            "openclaw",
            "export",
            "dup-id/s-dup-id",
            rows.to_str().unwrap(),
        ],
        &state,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("wrote the 31 row(s) of openclaw://"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&rows).unwrap().lines().count(), 31);
}

#[test]
fn reading_commands_take_openclaw_addresses() {
    let (_root, state) = state_dir();
    let address = format!("openclaw://{}#clean/s-clean", state.display());
    let out = treelog(&["path", &address], &state);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).ends_with("c0039\nc9000\n"));
    let out = treelog(&["info", "openclaw://clean/s-clean"], &state);
    assert!(
        text(&out.stdout).contains("leaf:        c9000"),
        "{}",
        text(&out.stdout)
    );
    let list = treelog(&["openclaw", "list"], &state);
    assert!(text(&list.stdout).contains("  s-clean  key agent:clean:main  42 row(s)  2026-09-01T10:00:00.000Z .. 2026-09-01T10:01:00.000Z"), "{}", text(&list.stdout));
}

#[test]
fn errors_name_the_database_the_session_or_the_address() {
    let (root, state) = state_dir();
    let inside = state.join("out");
    let cases: [(&[&str], &str); 6] = [
        (
            &["openclaw", "verify", "/nonexistent/state"],
            "treelog: /nonexistent/state: cannot open OpenClaw's state directory: no such file or directory\n",
        ),
        (
            &["tree", "openclaw://clean/nope"],
            "openclaw-agent.sqlite: no session nope in this agent's database\n",
        ),
        (
            &["tree", "openclaw://ghost/s"],
            ": no agent ghost (no agents/ghost/agent/openclaw-agent.sqlite)\n",
        ),
        (
            &["info", "openclaw://clean"],
            "treelog: openclaw://clean: not an openclaw:// address; write openclaw://[STATE_DIR#]AGENT/SESSION_ID\n",
        ),
        (
            &["append", "openclaw://clean/s-clean"],
            "an OpenClaw session is read-only here: treelog never writes OpenClaw's database\n",
        ),
        (
            &[
                "openclaw",
                "recover",
                state.to_str().unwrap(),
                inside.to_str().unwrap(),
            ],
            "inside OpenClaw's state directory",
        ),
    ];
    for (args, expected) in cases {
        let out = treelog(args, &state);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(expected) && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
    assert!(
        !state.join("out").exists()
            || std::fs::read_dir(state.join("out"))
                .unwrap()
                .next()
                .is_none()
    );
    let recovered = root.path().join("recovered");
    let out = treelog(
        &[
            "openclaw",
            "recover",
            state.to_str().unwrap(),
            recovered.to_str().unwrap(),
        ],
        &state,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).ends_with(
        &("4 session(s) with losses written under ".to_owned()
            + recovered.to_str().unwrap()
            + "\n")
    ));
    assert_eq!(
        std::fs::read_to_string(recovered.join("bad-json/s-bad-json.jsonl"))
            .unwrap()
            .lines()
            .count(),
        305
    );
}

/// A session id read from an agent's database that climbs (`../../escaped`) names a file
/// inside the output folder, encoded, and nothing is written outside it.
#[test]
fn recover_keeps_ids_from_the_database_inside_the_output_folder() {
    let (root, state) = state_dir();
    let db = state.join("agents/bad-json/agent/openclaw-agent.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    for table in ["session_windows", "transcript_events"] {
        conn.execute(
            &format!(
                "UPDATE {table} SET session_id = '../../escaped' WHERE session_id = 's-bad-json'"
            ),
            [],
        )
        .unwrap();
    }
    drop(conn);
    let out_dir = root.path().join("out/deep");
    let out = treelog(
        &[
            "openclaw",
            "recover",
            state.to_str().unwrap(),
            out_dir.to_str().unwrap(),
        ],
        &state,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!root.path().join("out/escaped.jsonl").exists());
    let inside = out_dir.join("bad-json/%2e2e2f2e2e2f65736361706564.jsonl");
    assert!(inside.is_file(), "{}", text(&out.stdout));
    let mut everything = vec![root.path().to_path_buf()];
    while let Some(dir) = everything.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            assert!(
                !path.to_string_lossy().contains("escaped") || path == inside,
                "{}",
                path.display()
            );
            if path.is_dir() {
                everything.push(path);
            }
        }
    }
}
