//! The CLI on logs named `s3://BUCKET/KEY`, against a real store on the loopback interface
//! (`scripts/seaweedfs start DIR` prints the settings to export): the commands that read a
//! session answer as for the same log in a file, `push` and `pull` copy byte for byte, two
//! `append` processes racing lose nothing, and the loser of a race with `--on-conflict fail`
//! gets the conflict (exit 1). Skipped, with a notice, when `TREELOG_S3_TEST_ENDPOINT` is unset.

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
