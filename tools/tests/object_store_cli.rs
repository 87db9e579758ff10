//! The CLI on logs named `s3://BUCKET/KEY`, against a real store on the loopback interface
//! (`scripts/seaweedfs start DIR` prints the settings to export): the commands that read a
//! session answer as for the same log in a file (`reindex` checks and rebuilds its cached
//! index), `push` and `pull` copy byte for byte, two
//! `append` processes racing lose nothing, and the loser of a race with `--on-conflict fail`
//! gets the conflict (exit 1), and `list s3://BUCKET/PREFIX/` lists the sessions stored there
//! as `list DIR` lists the same files, a damaged one reported without hiding the others;
//! `compact` merges segments without changing an answer.
//! Skipped, with a notice, when `TREELOG_S3_TEST_ENDPOINT` is unset.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn store_ready(test: &str) -> bool {
    match std::env::var("TREELOG_S3_TEST_ENDPOINT") {
        Ok(endpoint) => {
            assert!(
                endpoint.starts_with("http://127.0.0.1:"),
                "the tests reach 127.0.0.1 only, not {endpoint}"
            );
            true
        }
        Err(_) => {
            eprintln!(
                "{test}: skipped: TREELOG_S3_TEST_ENDPOINT is unset (run `scripts/seaweedfs \
                 start DIR` and export what it prints)"
            );
            false
        }
    }
}

fn fresh_address(name: &str) -> String {
    let bucket = std::env::var("TREELOG_S3_TEST_BUCKET").unwrap_or_else(|_| "treelog-test".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("s3://{bucket}/cli/{}-{nanos}/{name}", std::process::id())
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(name)
}

fn treelog(args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn s3_logs_answer_as_files_and_copy_byte_for_byte() {
    if !store_ready("s3_logs_answer_as_files_and_copy_byte_for_byte") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("pi16-sample-300.jsonl");
    std::fs::copy(data("pi16-sample-300.jsonl"), &local).unwrap();
    let local = local.to_str().unwrap();
    let address = fresh_address("pi16-sample-300.jsonl");
    let pushed = treelog(&["push", local, &address], "");
    assert!(pushed.status.success(), "{}", text(&pushed.stderr));
    assert!(text(&pushed.stdout).contains("on both sides"));
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    for command in [
        vec!["context"],
        vec!["path"],
        vec!["tree", "--json"],
        vec!["export", "--format", "json"],
    ] {
        let from_file = treelog(
            &[command.clone(), vec!["--no-index-write", local]].concat(),
            "",
        );
        let from_store = treelog(
            &[vec!["--index-dir", cache], command.clone(), vec![&address]].concat(),
            "",
        );
        assert!(
            from_store.status.success(),
            "{command:?}: {}",
            text(&from_store.stderr)
        );
        assert_eq!(from_store.stdout, from_file.stdout, "{command:?}");
    }
    // reindex checks the cached index of the address (fresh: the commands above built it), and
    // --force rebuilds it from the segments; both count the entries the file holds.
    // The first line is the log's; a summary line may follow.
    let first_line = |out: &Output| -> Option<serde_json::Value> {
        serde_json::from_str(text(&out.stdout).lines().next()?).ok()
    };
    let entries = |out: &Output| -> serde_json::Value {
        assert!(out.status.success(), "{}", text(&out.stderr));
        first_line(out).expect("a JSON line")["entries"].clone()
    };
    let from_file = treelog(
        &["--no-index-write", "reindex", "--json", "--quiet", local],
        "",
    );
    for (flags, state) in [(vec![], "fresh"), (vec!["--force"], "rebuilt")] {
        let args = [
            vec!["--index-dir", cache, "reindex", "--json", "--quiet"],
            flags,
            vec![&address],
        ]
        .concat();
        let out = treelog(&args, "");
        let line =
            first_line(&out).unwrap_or_else(|| panic!("reindex {args:?}: {}", text(&out.stderr)));
        assert_eq!(line["state"], state, "{args:?}");
        assert_eq!(line["path"], address.as_str());
        assert_eq!(entries(&out), entries(&from_file));
    }
    let after = treelog(&["--index-dir", cache, "context", &address], "");
    let context_file = treelog(&["--no-index-write", "context", local], "");
    assert_eq!(after.stdout, context_file.stdout);
    // verify finds what it finds in the file (this sample holds problems pi's writer left).
    let verified = treelog(&["--index-dir", cache, "verify", &address], "");
    let verified_file = treelog(&["--no-index-write", "verify", local], "");
    assert_eq!(verified.status.code(), verified_file.status.code());
    assert_eq!(
        text(&verified.stdout).replace(&address, "LOG"),
        text(&verified_file.stdout).replace(local, "LOG")
    );
    let pulled = dir.path().join("pulled.jsonl");
    let out = treelog(&["pull", &address, pulled.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&pulled).unwrap(),
        std::fs::read(data("pi16-sample-300.jsonl")).unwrap()
    );
    // An existing file is not replaced without --force.
    let refused = treelog(&["pull", &address, pulled.to_str().unwrap()], "");
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("the file exists"));
}

#[test]
fn racing_append_processes_lose_nothing() {
    if !store_ready("racing_append_processes_lose_nothing") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let address = fresh_address("race.jsonl");
    let demo = data("pi16-demo.jsonl");
    let pushed = treelog(&["push", demo.to_str().unwrap(), &address], "");
    assert!(pushed.status.success(), "{}", text(&pushed.stderr));
    let run = |writer: &str, policy: &str| {
        let cache = dir.path().join(format!("cache-{writer}"));
        let input: String = (0..10)
            .map(|i| {
                format!("{{\"role\":\"user\",\"content\":\"{writer}-{i}\",\"timestamp\":1}}\n")
            })
            .collect();
        let address = address.clone();
        let policy = policy.to_string();
        std::thread::spawn(move || {
            treelog(
                &[
                    "--index-dir",
                    cache.to_str().unwrap(),
                    "append",
                    &address,
                    "--on-conflict",
                    &policy,
                ],
                &input,
            )
        })
    };
    let (a, b) = (run("a", "follow"), run("b", "follow"));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert!(
        a.status.success() && b.status.success(),
        "{} {}",
        text(&a.stderr),
        text(&b.stderr)
    );
    let pulled = dir.path().join("race.jsonl");
    assert!(
        treelog(&["pull", &address, pulled.to_str().unwrap()], "")
            .status
            .success()
    );
    let log = std::fs::read_to_string(&pulled).unwrap();
    let ids: Vec<String> = [&a, &b]
        .iter()
        .flat_map(|out| {
            text(&out.stdout)
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(ids.len(), 20);
    for id in &ids {
        assert_eq!(log.matches(&format!("\"id\":\"{id}\"")).count(), 1, "{id}");
    }

    // With the default policy, a writer that finds the other's entry on its leaf stops with
    // the conflict (exit 1), having written nothing more; nothing acknowledged is lost.
    let (a, b) = (run("c", "fail"), run("d", "fail"));
    let (c, d) = (a.join().unwrap(), b.join().unwrap());
    let pulled = dir.path().join("race2.jsonl");
    assert!(
        treelog(&["pull", &address, pulled.to_str().unwrap()], "")
            .status
            .success()
    );
    let log = std::fs::read_to_string(&pulled).unwrap();
    for out in [&c, &d] {
        match out.status.code() {
            Some(0) => {}
            Some(1) => assert!(
                text(&out.stderr).contains("another writer appended"),
                "{}",
                text(&out.stderr)
            ),
            code => panic!("exit {code:?}: {}", text(&out.stderr)),
        }
        for id in text(&out.stdout).lines() {
            assert_eq!(log.matches(&format!("\"id\":\"{id}\"")).count(), 1, "{id}");
        }
    }
}

#[test]
fn store_errors_name_the_object() {
    if !store_ready("store_errors_name_the_object") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap();
    let address = fresh_address("missing.jsonl");
    let missing = treelog(&["--index-dir", cache, "context", &address], "");
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("no such log: no segment under"),
        "{}",
        text(&missing.stderr)
    );
    let malformed = treelog(&["tree", "s3://only-a-bucket"], "");
    assert_eq!(malformed.status.code(), Some(2));
    assert!(
        text(&malformed.stderr)
            .starts_with("treelog: s3://only-a-bucket: expected s3://BUCKET/KEY")
    );
}

/// A client of the test store for `bucket`, for the tests that write objects the CLI never
/// would (a damaged session folder).
fn test_remote(bucket: &str) -> treelog::object_store::Remote {
    let endpoint = std::env::var("TREELOG_S3_TEST_ENDPOINT").unwrap();
    let config = treelog::object_store::StoreConfig {
        endpoint: Some(endpoint),
        access_key_id: std::env::var("AWS_ACCESS_KEY_ID").ok(),
        secret_access_key: std::env::var("AWS_SECRET_ACCESS_KEY").ok(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    treelog::object_store::Remote::connect(&config, bucket).unwrap()
}

/// The sessions of tests/data, each copied into `dir` (pi's layout: some in a `--<cwd>--`
/// subdirectory) and pushed to the same relative key under `prefix`.
fn plant_sessions(dir: &Path, prefix: &str) {
    for (name, sub) in [
        ("pi16-demo.jsonl", ""),
        ("pi16-sample-300.jsonl", ""),
        ("pi-sample-200.jsonl", ""),
        ("pi16-gen-a.jsonl", "--home-dev-project--/"),
        ("pi16-gen-b.jsonl", "--home-dev-project--/"),
        ("pi073-gen-a.jsonl", "--home-dev-project--/"),
    ] {
        let local = dir.join(sub).join(name);
        std::fs::create_dir_all(local.parent().unwrap()).unwrap();
        std::fs::copy(data(name), &local).unwrap();
        let pushed = treelog(
            &[
                "push",
                local.to_str().unwrap(),
                &format!("{prefix}{sub}{name}"),
            ],
            "",
        );
        assert!(pushed.status.success(), "{}", text(&pushed.stderr));
    }
}

#[test]
fn list_of_a_prefix_is_the_listing_of_its_files() {
    if !store_ready("list_of_a_prefix_is_the_listing_of_its_files") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("sessions");
    let prefix = fresh_address("sessions/");
    plant_sessions(&local, &prefix);
    let local_dir = format!("{}/", local.display());
    let cache_local = dir.path().join("cache-local");
    let cache_store = dir.path().join("cache-store");
    let list = |cache: &Path, place: &str, extra: &[&str]| {
        let args = [
            &["--index-dir", cache.to_str().unwrap(), "list"][..],
            extra,
            &[place],
        ]
        .concat();
        treelog(&args, "")
    };
    // Cold (the indexes built on the way), warm, as text, as JSON, and filtered by cwd.
    for extra in [
        &["--json"][..],
        &["--json"][..],
        &[][..],
        &["--cwd", "/home/dev/project"][..],
    ] {
        let from_files = list(&cache_local, &local_dir, extra);
        let from_store = list(&cache_store, &prefix, extra);
        assert!(from_files.status.success(), "{}", text(&from_files.stderr));
        assert!(
            from_store.status.success(),
            "{extra:?}: {}",
            text(&from_store.stderr)
        );
        assert_eq!(
            text(&from_store.stdout).replace(&prefix, "DIR/"),
            text(&from_files.stdout).replace(&local_dir, "DIR/"),
            "{extra:?}"
        );
        assert_eq!(
            text(&from_store.stderr).replace(&prefix, "DIR/"),
            text(&from_files.stderr).replace(&local_dir, "DIR/"),
            "{extra:?}"
        );
    }
    let rows = list(&cache_store, &prefix, &["--json"]);
    assert_eq!(text(&rows.stdout).lines().count(), 6);
    assert!(text(&rows.stderr).contains(&format!("listed 6 session(s) under {prefix}")));
    assert!(text(&rows.stdout).contains(&format!(
        "\"path\":\"{prefix}--home-dev-project--/pi16-gen-a.jsonl\""
    )));
    // The prefix without its trailing slash names the same folder.
    let bare = list(&cache_store, prefix.trim_end_matches('/'), &["--json"]);
    assert_eq!(bare.stdout, rows.stdout);
}

#[test]
fn list_of_a_prefix_without_sessions() {
    if !store_ready("list_of_a_prefix_without_sessions") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap();
    let prefix = fresh_address("empty/");
    let empty = treelog(&["--index-dir", cache, "list", &prefix], "");
    assert!(empty.status.success(), "{}", text(&empty.stderr));
    assert_eq!(text(&empty.stdout), "");
    assert_eq!(
        text(&empty.stderr),
        format!("treelog: no sessions found under {prefix}\n")
    );
    // A bucket that does not exist is an error naming the address and the store's answer.
    let missing = "s3://treelog-no-such-bucket/sessions/";
    let out = treelog(&["--index-dir", cache, "list", missing], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "treelog: {missing}: cannot list the folder: the store answered: "
        )),
        "{}",
        text(&out.stderr)
    );
    let malformed = treelog(&["list", "s3:///sessions/"], "");
    assert_eq!(malformed.status.code(), Some(2));
    assert!(text(&malformed.stderr).contains("the bucket is empty"));
}

#[test]
fn list_reports_a_damaged_session_and_lists_the_others() {
    if !store_ready("list_reports_a_damaged_session_and_lists_the_others") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let prefix = fresh_address("mixed/");
    for name in ["pi16-demo.jsonl", "pi16-gen-a.jsonl"] {
        let pushed = treelog(
            &[
                "push",
                data(name).to_str().unwrap(),
                &format!("{prefix}{name}"),
            ],
            "",
        );
        assert!(pushed.status.success(), "{}", text(&pushed.stderr));
    }
    let (bucket, key_prefix) = prefix
        .strip_prefix("s3://")
        .unwrap()
        .split_once('/')
        .unwrap();
    let remote = test_remote(bucket);
    let segment = |log: &str, start: u64| format!("{key_prefix}{log}.d/seg-{start:020}");
    // A gap before the first segment, an object that is not a segment, an empty segment, and
    // a JSONL file stored as one object.
    remote.overwrite(&segment("gap.jsonl", 5), b"{}\n").unwrap();
    remote
        .overwrite(&format!("{key_prefix}foreign.jsonl.d/notes.txt"), b"notes")
        .unwrap();
    remote.overwrite(&segment("empty.jsonl", 0), b"").unwrap();
    remote
        .overwrite(
            &format!("{key_prefix}plain.jsonl"),
            &std::fs::read(data("pi16-demo.jsonl")).unwrap(),
        )
        .unwrap();
    let out = treelog(&["--index-dir", cache, "list", "--json", &prefix], "");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let rows = text(&out.stdout);
    assert_eq!(rows.lines().count(), 2, "{rows}");
    assert!(rows.contains(&format!("{prefix}pi16-demo.jsonl")));
    assert!(rows.contains(&format!("{prefix}pi16-gen-a.jsonl")));
    let stderr = text(&out.stderr);
    for expected in [
        format!("treelog: {prefix}gap.jsonl.d/seg-00000000000000000005: missing segment"),
        format!(
            "treelog: {prefix}foreign.jsonl.d/notes.txt: not a segment of {prefix}foreign.jsonl"
        ),
        format!("treelog: {prefix}empty.jsonl.d/seg-00000000000000000000: empty segment"),
        format!("treelog: {prefix}plain.jsonl: a plain object, not a log stored as segments"),
        format!("treelog: listed 2 session(s) under {prefix}, 4 could not be read"),
    ] {
        assert!(stderr.contains(&expected), "{expected}\n{stderr}");
    }
}

/// `treelog compact`: small segments merged, the log unchanged for every command, the covered
/// segments deleted after the grace period; errors name the object (exit 2).
mod compact {
    use super::*;

    #[test]
    fn compact_merges_segments_and_changes_no_answer() {
        if !store_ready("compact_merges_segments_and_changes_no_answer") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let cache = cache.to_str().unwrap();
        let address = fresh_address("compact.jsonl");
        let demo = data("pi16-demo.jsonl");
        assert!(
            treelog(&["push", demo.to_str().unwrap(), &address], "")
                .status
                .success()
        );
        // One segment per append process.
        for i in 0..6 {
            let input = format!("{{\"role\":\"user\",\"content\":\"m{i}\",\"timestamp\":1}}\n");
            let out = treelog(&["--index-dir", cache, "append", &address], &input);
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        let answers = |cache: &str| {
            ["context", "tree", "path"].map(|command| {
                let out = treelog(&["--index-dir", cache, command, &address], "");
                assert!(out.status.success(), "{}", text(&out.stderr));
                out.stdout
            })
        };
        let before = answers(cache);
        let pulled_before = dir.path().join("before.jsonl");
        assert!(
            treelog(&["pull", &address, pulled_before.to_str().unwrap()], "")
                .status
                .success()
        );

        let first = treelog(&["compact", &address, "--json"], "");
        assert!(first.status.success(), "{}", text(&first.stderr));
        let report: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
        assert_eq!(report["segments_before"], 7, "{report}");
        assert_eq!(report["segments_after"], 2, "{report}");
        assert_eq!(report["deleted"], 0, "{report}");
        assert_eq!(report["waiting"], 6, "{report}");
        assert_eq!(report["grace_seconds"], 3600, "{report}");
        assert_eq!(report["written"][0]["segments"], 6, "{report}");
        assert!(
            report["written"][0]["object"]
                .as_str()
                .unwrap()
                .contains("compact.jsonl.d/seg-00000000000000000000-"),
            "{report}"
        );
        assert_eq!(answers(cache), before);
        let fresh_cache = dir.path().join("fresh-cache");
        assert_eq!(answers(fresh_cache.to_str().unwrap()), before);

        // A grace under the minimum is refused unless the log is said to be at rest.
        let refused = treelog(&["compact", &address, "--grace", "0"], "");
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
        assert!(
            text(&refused.stderr).contains("a grace period of 0 s is under the 600 s minimum"),
            "{}",
            text(&refused.stderr)
        );
        let second = treelog(&["compact", &address, "--grace", "0", "--at-rest"], "");
        assert!(second.status.success(), "{}", text(&second.stderr));
        assert!(
            text(&second.stdout).contains("in 2 segment(s), 2 before")
                && text(&second.stdout).contains("6 covered segment(s) deleted"),
            "{}",
            text(&second.stdout)
        );
        assert_eq!(answers(cache), before);
        let pulled_after = dir.path().join("after.jsonl");
        assert!(
            treelog(&["pull", &address, pulled_after.to_str().unwrap()], "")
                .status
                .success()
        );
        assert_eq!(
            std::fs::read(&pulled_after).unwrap(),
            std::fs::read(&pulled_before).unwrap()
        );
        let verified = treelog(&["--index-dir", cache, "verify", &address], "");
        assert_eq!(
            verified.status.code(),
            Some(0),
            "{}",
            text(&verified.stderr)
        );
    }

    #[test]
    fn compact_errors_name_the_object() {
        if !store_ready("compact_errors_name_the_object") {
            return;
        }
        let address = fresh_address("forged.jsonl");
        let demo = data("pi16-demo.jsonl");
        assert!(
            treelog(&["push", demo.to_str().unwrap(), &address], "")
                .status
                .success()
        );
        // A covering segment that ends inside the only segment: refused, named.
        let (bucket, key) = address
            .strip_prefix("s3://")
            .unwrap()
            .split_once('/')
            .unwrap();
        let forged = format!("{key}.d/seg-00000000000000000000-00000000000000000010");
        test_remote(bucket).create(&forged, b"0123456789").unwrap();
        let out = treelog(&["compact", &address], "");
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with("treelog: s3://")
                && stderr.contains(&forged)
                && stderr.contains("overlapping segment"),
            "{stderr}"
        );
        // Every log under a prefix: the damaged one reported, the other compacted.
        let prefix = address.strip_suffix("forged.jsonl").unwrap();
        let other = format!("{prefix}other.jsonl");
        assert!(
            treelog(&["push", demo.to_str().unwrap(), &other], "")
                .status
                .success()
        );
        for i in 0..3 {
            let input = format!("{{\"role\":\"user\",\"content\":\"m{i}\",\"timestamp\":1}}\n");
            let cache = tempfile::tempdir().unwrap();
            let out = treelog(
                &[
                    "--index-dir",
                    cache.path().to_str().unwrap(),
                    "append",
                    &other,
                ],
                &input,
            );
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        let all = treelog(
            &["compact", prefix, "--json", "--grace", "0", "--at-rest"],
            "",
        );
        assert_eq!(all.status.code(), Some(2), "{}", text(&all.stderr));
        assert!(text(&all.stderr).contains(&forged), "{}", text(&all.stderr));
        let report: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
        assert_eq!(report["log"], other.as_str(), "{report}");
        assert_eq!(
            (&report["segments_before"], &report["segments_after"]),
            (&serde_json::json!(4), &serde_json::json!(2)),
            "{report}"
        );
        assert_eq!(report["deleted"], 3, "{report}");
        let missing = treelog(&["compact", "s3://only-a-bucket"], "");
        assert_eq!(missing.status.code(), Some(2));
        let help = treelog(&["compact", "--help"], "");
        assert!(text(&help.stdout).contains("--grace <SECONDS>"));
    }
}

/// `treelog search` of `s3://` addresses: the hits of the same logs searched as local files,
/// after other writers append and after a compaction; errors name the object (exit 2).
mod search {
    use super::*;

    /// `search` run with the cache `cache` (and `extra` flags before the command).
    fn search(cache: &Path, extra: &[&str], args: &[&str]) -> Output {
        let all = [
            &["--index-dir", cache.to_str().unwrap()][..],
            extra,
            &["search"][..],
            args,
        ]
        .concat();
        treelog(&all, "")
    }

    /// Asserts the search of `on_store` answers as the search of `on_files` with the same
    /// arguments: the same exit code and output, the places named alike.
    fn assert_same_hits(
        files: (&Path, &str),
        store: (&Path, &str),
        args: &[&str],
        extra: &[&str],
    ) -> String {
        same_hits_and_notices(files, store, args, extra).0
    }

    /// [`assert_same_hits`], returning the hits and what the search of the store said on
    /// stderr.
    fn same_hits_and_notices(
        files: (&Path, &str),
        store: (&Path, &str),
        args: &[&str],
        extra: &[&str],
    ) -> (String, String) {
        let from_files = search(files.0, extra, &[args, &[files.1]].concat());
        let from_store = search(store.0, extra, &[args, &[store.1]].concat());
        assert!(
            from_files.status.code() == Some(0) || from_files.status.code() == Some(1),
            "{args:?}: {}",
            text(&from_files.stderr)
        );
        assert_eq!(
            from_store.status.code(),
            from_files.status.code(),
            "{args:?} {}: {}",
            store.1,
            text(&from_store.stderr)
        );
        let hits = text(&from_store.stdout).replace(store.1, "PLACE");
        assert_eq!(
            hits,
            text(&from_files.stdout).replace(files.1, "PLACE"),
            "{args:?} {}",
            store.1
        );
        assert!(!text(&from_store.stderr).contains("panicked"));
        (hits, text(&from_store.stderr))
    }

    #[test]
    fn search_of_s3_logs_answers_as_search_of_the_files() {
        if !store_ready("search_of_s3_logs_answers_as_search_of_the_files") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("sessions");
        let prefix = fresh_address("sessions/");
        plant_sessions(&local, &prefix);
        let local_dir = format!("{}/", local.display());
        let cache_files = dir.path().join("cache-files");
        let cache_store = dir.path().join("cache-store");
        let files = (cache_files.as_path(), local_dir.as_str());
        let store = (cache_store.as_path(), prefix.as_str());
        let queries: [&[&str]; 7] = [
            &["error", "--json", "--limit", "50"],
            &["error"],
            &["\"the file\"", "--json", "--sort", "newest", "--limit", "7"],
            &["build*", "--role", "user", "--json"],
            &["test -error", "--branch", "active", "--json"],
            &["function", "--include-edited", "--json"],
            &["zzyzxnotaword"],
        ];
        for query in queries {
            let hits = assert_same_hits(files, store, query, &[]);
            if query[0] != "zzyzxnotaword" {
                assert!(hits.contains("PLACE"), "{query:?}: no hit");
            }
        }
        // Every log below the prefix is searched, at any depth.
        let all = assert_same_hits(files, store, &["test", "--json", "--limit", "2000"], &[]);
        assert!(all.contains("\"session\":\"PLACE--home-dev-project--/pi16-gen-a.jsonl\""));
        assert!(all.contains("\"session\":\"PLACEpi16-demo.jsonl\""));
        // One log, in its prefix's folder as a file in its directory's index; a log in a
        // subfolder; the prefix without its slash.
        for name in ["pi16-demo.jsonl", "--home-dev-project--/pi16-gen-b.jsonl"] {
            let file = format!("{local_dir}{name}");
            let address = format!("{prefix}{name}");
            let hits = assert_same_hits(
                (files.0, file.as_str()),
                (store.0, address.as_str()),
                &["test", "--json", "--limit", "50"],
                &[],
            );
            assert!(hits.contains("\"session\":\"PLACE\""), "{hits}");
        }
        assert_same_hits(
            (files.0, local_dir.trim_end_matches('/')),
            (store.0, prefix.trim_end_matches('/')),
            &["test", "--json"],
            &[],
        );
        // Nothing is written with --no-index-write: a current cache is read as it is, and a
        // cache that does not exist is not created.
        assert_same_hits(files, store, &["error", "--json"], &["--no-index-write"]);
        let unwritten = dir.path().join("unwritten");
        assert_same_hits(
            files,
            (unwritten.as_path(), prefix.as_str()),
            &["error", "--json"],
            &["--no-index-write"],
        );
        assert!(!unwritten.exists());
        // A cache that cannot be written (a file where its directory would be) does not fail
        // the search: it runs as without index writes.
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, "").unwrap();
        assert_same_hits(
            files,
            (blocked.as_path(), prefix.as_str()),
            &["error", "--json"],
            &[],
        );
        assert_eq!(std::fs::read(&blocked).unwrap(), b"");

        // Another writer (another cache) appends to a log: the next search finds its entry,
        // answering as the log pulled into the directory does.
        let demo = format!("{prefix}pi16-demo.jsonl");
        for i in 0..3 {
            let input = format!(
                "{{\"role\":\"user\",\"content\":\"quokka{i} marmalade\",\"timestamp\":1795512700000}}\n"
            );
            let other = dir.path().join("writer-cache");
            let out = treelog(
                &["--index-dir", other.to_str().unwrap(), "append", &demo],
                &input,
            );
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        let demo_file = local.join("pi16-demo.jsonl");
        let pulled = treelog(&["pull", "--force", &demo, demo_file.to_str().unwrap()], "");
        assert!(pulled.status.success(), "{}", text(&pulled.stderr));
        // The copy and the folder's index are caught up, not rebuilt (no notice).
        let (appended, notices) =
            same_hits_and_notices(files, store, &["marmalade", "--json"], &[]);
        assert_eq!(appended.lines().count(), 3, "{appended}");
        assert_eq!(notices, "");
        assert_same_hits(files, store, &["error", "--json", "--limit", "50"], &[]);

        // A compaction writes covering segments (and, with no grace, deletes the covered
        // ones): the copies it no longer matches by name are checked and answer the same.
        for (grace, done) in [
            ("3600", "1 covering segment(s) written"),
            ("0", "3 covered segment(s) deleted"),
        ] {
            let out = treelog(&["compact", &demo, "--grace", grace, "--at-rest"], "");
            assert!(out.status.success(), "{}", text(&out.stderr));
            assert!(text(&out.stdout).contains(done), "{}", text(&out.stdout));
            let (after, notices) =
                same_hits_and_notices(files, store, &["marmalade", "--json"], &[]);
            assert_eq!(after, appended);
            assert_eq!(
                notices, "",
                "a compaction changes no byte: nothing is rebuilt"
            );
            assert_same_hits(files, store, &["error", "--json", "--limit", "50"], &[]);
        }

        // A log removed from the prefix, and its file from the directory: its hits are gone.
        let (bucket, key_prefix) = prefix
            .strip_prefix("s3://")
            .unwrap()
            .split_once('/')
            .unwrap();
        let gone = format!("{key_prefix}pi-sample-200.jsonl");
        let remote = test_remote(bucket);
        remote.delete(&format!("{gone}.d/seg-{:020}", 0)).unwrap();
        std::fs::remove_file(local.join("pi-sample-200.jsonl")).unwrap();
        let before_removal = all;
        let left = assert_same_hits(files, store, &["test", "--json", "--limit", "2000"], &[]);
        assert!(before_removal.contains("PLACEpi-sample-200.jsonl"));
        assert!(!left.contains("PLACEpi-sample-200.jsonl"), "{left}");
    }

    #[test]
    fn search_errors_name_the_object() {
        if !store_ready("search_errors_name_the_object") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let missing = fresh_address("missing.jsonl");
        let out = search(dir.path(), &[], &["error", &missing]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).starts_with(&format!(
                "treelog: {missing}: no such log: no segment under {missing}.d/"
            )),
            "{}",
            text(&out.stderr)
        );
        // An empty prefix is an empty directory: no hit.
        let empty = fresh_address("empty/");
        let out = search(dir.path(), &[], &["error", &empty]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let bucket = "s3://treelog-no-such-bucket/sessions/";
        let out = search(dir.path(), &[], &["error", bucket]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).starts_with(&format!(
                "treelog: {bucket}: cannot list the folder: the store answered: "
            )),
            "{}",
            text(&out.stderr)
        );
        let out = search(dir.path(), &[], &["error", "s3:///sessions/"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains("the bucket is empty"));
        // A damaged log below a prefix stops the search with its object's name.
        let prefix = fresh_address("damaged/");
        let pushed = treelog(
            &[
                "push",
                data("pi16-demo.jsonl").to_str().unwrap(),
                &format!("{prefix}ok.jsonl"),
            ],
            "",
        );
        assert!(pushed.status.success(), "{}", text(&pushed.stderr));
        let (bucket, key_prefix) = prefix
            .strip_prefix("s3://")
            .unwrap()
            .split_once('/')
            .unwrap();
        test_remote(bucket)
            .overwrite(&format!("{key_prefix}gap.jsonl.d/seg-{:020}", 5), b"{}\n")
            .unwrap();
        let out = search(dir.path(), &[], &["error", &prefix]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).starts_with(&format!(
                "treelog: {prefix}gap.jsonl.d/seg-00000000000000000005: missing segment"
            )),
            "{}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).contains("panicked"));
        let help = treelog(&["search", "--help"], "");
        assert!(text(&help.stdout).contains("s3://BUCKET/PREFIX/"));
    }
}
