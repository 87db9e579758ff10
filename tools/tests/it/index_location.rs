//! The CLI's choice of where sidecars live: with `--no-index-write` no command writes anything
//! beside the logs or in the index directory; with `--index-dir DIR` (or `TREELOG_INDEX_DIR`,
//! which the flag overrides) the session folder is left untouched and the indexes go to DIR.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data");

/// Runs `treelog ARGS` with `TREELOG_INDEX_DIR` set to `env_index_dir` or removed.
fn treelog(args: &[&str], env_index_dir: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_treelog"));
    command.args(args).env_remove("TREELOG_INDEX_DIR");
    if let Some(dir) = env_index_dir {
        command.env("TREELOG_INDEX_DIR", dir);
    }
    command.output().expect("run treelog")
}

fn run_ok(args: &[&str], env_index_dir: Option<&Path>) -> String {
    let output = treelog(args, env_index_dir);
    assert!(
        output.status.success(),
        "treelog {args:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every file under `dir` with its bytes (empty when `dir` does not exist).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.insert(path.clone(), std::fs::read(&path).expect("read"));
        }
    }
    files
}

/// A session folder holding two transcripts pi wrote, without sidecars.
fn session_folder() -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
    let root = tempfile::tempdir().expect("temp dir");
    let sessions = root.path().join("sessions");
    std::fs::create_dir_all(&sessions).expect("mkdir");
    let logs: Vec<PathBuf> = ["pi16-demo.jsonl", "pi-sample-200.jsonl"]
        .iter()
        .map(|name| {
            let log = sessions.join(name);
            std::fs::copy(Path::new(DATA).join(name), &log).expect("copy");
            log
        })
        .collect();
    (root, sessions, logs)
}

/// The reading commands, on the folder and on one log.
fn reading_commands<'a>(folder: &'a str, log: &'a str) -> Vec<Vec<&'a str>> {
    vec![
        vec!["list", folder],
        vec!["list", folder, "--json"],
        vec!["info", log],
        vec!["info", log, "--json"],
        vec!["context", log],
        vec!["path", log],
        vec!["tree", log],
        vec!["export", log],
        vec!["verify", folder],
        vec!["verify", log, "--full"],
    ]
}

fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// `--no-index-write`: none of the reading commands writes a byte, beside the logs or in the
/// index directory (which is not even created), with or without `--index-dir`; an append
/// changes the log and nothing else.
#[test]
fn no_index_write_writes_nothing() {
    let (root, sessions, logs) = session_folder();
    let index_dir = root.path().join("index");
    let before = snapshot(root.path());
    for extra in [vec![], vec!["--index-dir", text(&index_dir)]] {
        for command in reading_commands(text(&sessions), text(&logs[0])) {
            let args = [command.clone(), vec!["--no-index-write"], extra.clone()].concat();
            run_ok(&args, None);
            assert_eq!(snapshot(root.path()), before, "treelog {args:?} wrote");
        }
    }
    assert!(!index_dir.exists());

    let append = treelog_testkit::process::output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_treelog"))
            .args(["append", text(&logs[0]), "--no-index-write"])
            .env_remove("TREELOG_INDEX_DIR"),
        "{\"role\":\"user\",\"content\":\"one more\",\"timestamp\":1}\n",
    );
    assert!(
        append.status.success(),
        "append failed: {}",
        String::from_utf8_lossy(&append.stderr)
    );
    let after = snapshot(root.path());
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    assert!(after[&logs[0]].len() > before[&logs[0]].len());
    assert_eq!(after[&logs[1]], before[&logs[1]]);
}

/// `--index-dir DIR`: the session folder stays as it was (the reading commands, and
/// `reindex`), the sidecars are in DIR, and the next open finds them fresh.
#[test]
fn index_dir_leaves_the_session_folder_untouched() {
    let (root, sessions, logs) = session_folder();
    let index_dir = root.path().join("index");
    let before = snapshot(&sessions);
    for command in reading_commands(text(&sessions), text(&logs[0])) {
        let args = [command, vec!["--index-dir", text(&index_dir)]].concat();
        run_ok(&args, None);
        assert_eq!(
            snapshot(&sessions),
            before,
            "treelog {args:?} wrote beside the logs"
        );
    }
    run_ok(
        &["reindex", text(&sessions), "--index-dir", text(&index_dir)],
        None,
    );
    assert_eq!(snapshot(&sessions), before);
    let sidecars: Vec<PathBuf> = snapshot(&index_dir).into_keys().collect();
    assert_eq!(sidecars.len(), 2, "one sidecar per log: {sidecars:?}");
    for log in &logs {
        let name = log.file_name().unwrap().to_str().unwrap();
        assert!(
            sidecars.iter().any(|sidecar| {
                let sidecar = sidecar.file_name().unwrap().to_str().unwrap();
                sidecar.starts_with(&format!("{name}-")) && sidecar.ends_with(".treelog")
            }),
            "no sidecar for {name} in {sidecars:?}"
        );
    }
    let info = run_ok(
        &[
            "info",
            text(&logs[0]),
            "--json",
            "--index-dir",
            text(&index_dir),
        ],
        None,
    );
    let info: serde_json::Value = serde_json::from_str(&info).expect("JSON");
    assert_eq!(info["index"]["state"], "fresh", "{info}");
}

/// `TREELOG_INDEX_DIR` works as `--index-dir` does, and the flag wins over it.
#[test]
fn environment_variable_and_flag() {
    let (root, sessions, logs) = session_folder();
    let (from_env, from_flag) = (root.path().join("env"), root.path().join("flag"));
    let before = snapshot(&sessions);
    run_ok(&["info", text(&logs[1])], Some(&from_env));
    assert_eq!(snapshot(&from_env).len(), 1);
    run_ok(
        &["info", text(&logs[0]), "--index-dir", text(&from_flag)],
        Some(&from_env),
    );
    assert_eq!(snapshot(&from_flag).len(), 1, "the flag wins");
    assert_eq!(snapshot(&from_env).len(), 1);
    assert_eq!(snapshot(&sessions), before);
}

/// `demo` follows `--index-dir` as every command does (it opened its logs with the default
/// options, so their sidecars were written beside them while `gen`'s went to DIR): its folder
/// holds no sidecar, DIR holds one per log, the generated log's found fresh; a demo in
/// a scratch folder takes its sidecars in DIR away with the folder.
#[test]
fn demo_keeps_its_sidecars_in_the_index_dir() {
    let root = tempfile::tempdir().expect("temp dir");
    let (work, index_dir) = (root.path().join("work"), root.path().join("index"));
    let args = ["demo", "--entries", "300", "--dir", text(&work)];
    let shown = run_ok(
        &[&["--index-dir", text(&index_dir)][..], &args].concat(),
        None,
    );
    assert!(
        shown.contains(&format!("(kept in {})", index_dir.display())),
        "{shown}"
    );
    assert!(
        shown.contains("index fresh (the generator indexed it while writing)"),
        "the generated log's sidecar in DIR was not the one opened: {shown}"
    );
    let in_work: Vec<_> = snapshot(&work)
        .into_keys()
        .filter(|path| path.extension().is_some_and(|ext| ext == "treelog"))
        .collect();
    assert_eq!(in_work, Vec::<PathBuf>::new(), "sidecars beside the logs");
    let logs = ["pi16-demo.jsonl", "generated-300.jsonl"].map(|name| work.join(name));
    for log in &logs {
        assert!(treelog::sidecar_in_dir(&index_dir, log).exists(), "{log:?}");
    }

    let scratch_index_dir = root.path().join("scratch-index");
    std::fs::create_dir_all(&scratch_index_dir).expect("mkdir");
    run_ok(&["demo", "--entries", "300"], Some(&scratch_index_dir));
    assert_eq!(snapshot(&scratch_index_dir), BTreeMap::new(), "left behind");
}

/// `treelog search QUERY --json` on `folder` with `extra` flags: its hits (each hit's JSON
/// line, score included) in the order printed (best first, equal scores by session and line,
/// whatever the segments), and the notices on stderr.
fn search_hits(folder: &str, query: &str, extra: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["search", query, folder, "--json", "--limit", "1000"];
    args.extend_from_slice(extra);
    let output = treelog(&args, None);
    assert!(
        output.status.success(),
        "treelog {args:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let hits: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    (hits, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The queries the search tests compare: a word, a phrase, an exclusion and a prefix.
const SEARCH_QUERIES: [&str; 4] = ["the", "\"the tree\"", "file -the", "read*"];

/// `search --no-index-write` writes no byte anywhere (no `.treelog-search`, not even its lock
/// file) and finds exactly the hits of a normal search: first with no index at all (indexed in
/// memory), then beside a current index (read as it is, without rebuilding it).
#[test]
fn search_without_index_writes_finds_the_same_hits() {
    let (root, sessions, _) = session_folder();
    let folder = sessions.to_str().unwrap();
    let mut expected = Vec::new();
    {
        // The normal search's hits, from a copy so that this folder has no index yet.
        let (_copy_root, copy, _) = session_folder();
        for query in SEARCH_QUERIES {
            let (hits, _) = search_hits(copy.to_str().unwrap(), query, &[]);
            let hits: Vec<String> = hits
                .iter()
                .map(|hit| hit.replace(copy.to_str().unwrap(), folder))
                .collect();
            expected.push(hits);
        }
    }
    assert!(
        expected.iter().any(|hits| !hits.is_empty()),
        "no query hits"
    );
    let before = snapshot(root.path());
    for (query, expected) in SEARCH_QUERIES.iter().zip(&expected) {
        let (hits, notice) = search_hits(folder, query, &["--no-index-write"]);
        assert_eq!(&hits, expected, "in memory: {query}");
        assert!(
            notice.ends_with(
                "there is no search index yet and index writes are off; building it in memory \
                 from the logs, for this search only\n"
            ),
            "{notice}"
        );
    }
    assert_eq!(
        snapshot(root.path()),
        before,
        "search --no-index-write wrote"
    );

    run_ok(&["reindex", "--search", folder], None);
    let before = snapshot(root.path());
    assert!(sessions.join(".treelog-search").is_dir());
    for (query, expected) in SEARCH_QUERIES.iter().zip(&expected) {
        let (hits, notice) = search_hits(folder, query, &["--no-index-write"]);
        assert_eq!(&hits, expected, "read-only: {query}");
        assert_eq!(notice, "", "a current index is read as it is");
    }
    assert_eq!(
        snapshot(root.path()),
        before,
        "search --no-index-write wrote"
    );
}

/// With `--index-dir`, the search index goes to the index directory (`search-<key>/`), the
/// session folder is left untouched, and the next search finds the index (no rebuild
/// notice) and the same hits; a file PATH uses its directory's index there.
#[test]
fn search_index_in_the_index_dir() {
    let (root, sessions, logs) = session_folder();
    let index_dir = root.path().join("cache");
    let folder = sessions.to_str().unwrap();
    let flags = ["--index-dir", index_dir.to_str().unwrap()];
    let before = snapshot(&sessions);
    let (first, notice) = search_hits(folder, "the", &flags);
    assert!(notice.contains("no search index yet"), "{notice}");
    assert!(!first.is_empty());
    assert_eq!(snapshot(&sessions), before, "the session folder changed");
    // The search index, and the sidecars of the sessions with hits (opened to say which hits
    // are on their active path), go to the index directory.
    let all: Vec<String> = std::fs::read_dir(&index_dir)
        .expect("index dir")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        all.iter()
            .all(|name| name.starts_with("search-") || name.ends_with(".treelog")),
        "{all:?}"
    );
    let names: Vec<String> = all
        .into_iter()
        .filter(|name| name.starts_with("search-"))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        names[0].starts_with("search-") && names[0].len() == "search-".len() + 16,
        "{names:?}"
    );
    let (again, notice) = search_hits(folder, "the", &flags);
    assert_eq!(notice, "", "the index in the index dir was not found again");
    assert_eq!(again, first);
    let (_, notice) = search_hits(logs[0].to_str().unwrap(), "the", &flags);
    assert_eq!(notice, "", "a file PATH uses its directory's index");
    run_ok(
        &[
            "reindex",
            "--search",
            folder,
            "--index-dir",
            index_dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(snapshot(&sessions), before, "the session folder changed");
}

/// `reindex --search --no-index-write` asks for two contrary things: a usage error (exit 2)
/// that writes nothing.
#[test]
fn reindex_search_without_index_writes_is_refused() {
    let (root, sessions, _) = session_folder();
    let before = snapshot(root.path());
    let output = treelog(
        &[
            "reindex",
            "--search",
            sessions.to_str().unwrap(),
            "--no-index-write",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(2));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("--no-index-write"), "{message}");
    assert_eq!(snapshot(root.path()), before);
}
