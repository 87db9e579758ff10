//! Several handles on one log at once, as an agent, the CLI and a UI would hold it: separate
//! opens (separate `flock` descriptions, as separate processes have), appending alternately or
//! from many threads, and readers opening while a writer appends. The conflict rule of
//! format-spec/log.md §8 holds, no append is lost or torn, and a reader always sees a
//! consistent prefix of the log.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use serde_json::Value;
use treelog::{Error, OnConflict, Session, SessionOptions};
use treelog_testkit::{answers, no_index, replay, scratch_dir};

fn options(on_conflict: OnConflict) -> SessionOptions {
    SessionOptions {
        on_conflict,
        ..SessionOptions::default()
    }
}

fn message(text: &str) -> String {
    serde_json::json!({"role": "user", "content": text, "timestamp": 1}).to_string()
}

/// A log with a header and one entry, written through the API.
fn new_log() -> (tempfile::TempDir, PathBuf, String) {
    let dir = scratch_dir();
    let mut session = Session::create(dir.path(), "/work", SessionOptions::default()).unwrap();
    let first = session.append_message(&message("first")).unwrap();
    let path = session.log_path().to_path_buf();
    (dir, path, first)
}

/// Every non-blank line of the log, each of which must be whole JSON. A blank line is
/// allowed: a writer that takes no lock can be seen mid-write (its line not yet ended), which
/// treelog must treat as a torn tail and end with a `\n` of its own before appending.
fn parse_log(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.ends_with(b"\n"), "the log ends with a whole line");
    bytes[..bytes.len() - 1]
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty() || only_treelog_writes(path))
        .map(|line| {
            serde_json::from_slice(line).unwrap_or_else(|error| {
                let shown = String::from_utf8_lossy(line);
                let shown: String = if shown.len() > 400 {
                    format!("{} ... {}", &shown[..200], &shown[shown.len() - 200..])
                } else {
                    shown.into_owned()
                };
                panic!("a line is not whole JSON ({error}): {shown}")
            })
        })
        .collect()
}

/// Logs that only treelog wrote (under its lock) never hold a blank line; the test with an
/// unlocked writer names its log `unlocked.jsonl`.
fn only_treelog_writes(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name != "unlocked.jsonl")
}

fn parent_of(lines: &[Value], id: &str) -> Option<String> {
    lines
        .iter()
        .find(|line| line["id"] == id && line["type"] != "session")
        .and_then(|line| line["parentId"].as_str().map(str::to_string))
}

/// With `OnConflict::Fail`, an append by a handle whose leaf another handle extended fails
/// and writes nothing; it keeps failing until `refresh`, which moves it to the log's leaf.
#[test]
fn second_writer_conflicts_until_refresh() {
    let (_dir, path, first) = new_log();
    let mut a = Session::open(&path, options(OnConflict::Fail)).unwrap();
    let mut b = Session::open(&path, options(OnConflict::Fail)).unwrap();
    let theirs = a.append_message(&message("a")).unwrap();
    let before = std::fs::read(&path).unwrap();
    for _ in 0..2 {
        match b.append_message(&message("b")) {
            Err(Error::Conflict { leaf, their_id, .. }) => {
                assert_eq!(leaf.as_deref(), Some(first.as_str()));
                assert_eq!(their_id, theirs);
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "a conflict writes nothing"
        );
    }
    b.refresh().unwrap();
    assert_eq!(b.leaf_id().unwrap().as_deref(), Some(theirs.as_str()));
    let mine = b.append_message(&message("b")).unwrap();
    assert_eq!(
        parent_of(&parse_log(&path), &mine).as_deref(),
        Some(theirs.as_str())
    );
}

/// With `OnConflict::Fail`, branching explicitly is the other way out: the append then makes
/// the sibling on purpose.
#[test]
fn second_writer_may_branch_explicitly() {
    let (_dir, path, first) = new_log();
    let mut a = Session::open(&path, options(OnConflict::Fail)).unwrap();
    let mut b = Session::open(&path, options(OnConflict::Fail)).unwrap();
    let theirs = a.append_message(&message("a")).unwrap();
    assert!(matches!(
        b.append_message(&message("b")),
        Err(Error::Conflict { .. })
    ));
    b.refresh().unwrap();
    b.branch(&first).unwrap();
    let sibling = b.append_message(&message("b")).unwrap();
    let lines = parse_log(&path);
    assert_eq!(parent_of(&lines, &sibling).as_deref(), Some(first.as_str()));
    assert_eq!(parent_of(&lines, &theirs).as_deref(), Some(first.as_str()));
}

/// Two handles appending alternately, under each policy: with `FollowTip` every append lands
/// on the other's last entry (one linear chain); with `Fail` every other append conflicts
/// until a refresh, after which the chain is linear too.
#[test]
fn two_writers_alternate() {
    for on_conflict in [OnConflict::FollowTip, OnConflict::Fail] {
        let (_dir, path, first) = new_log();
        let mut handles = [
            Session::open(&path, options(on_conflict)).unwrap(),
            Session::open(&path, options(on_conflict)).unwrap(),
        ];
        let mut chain = vec![first];
        for round in 0..20 {
            let handle = &mut handles[round % 2];
            let id = match handle.append_message(&message(&format!("round {round}"))) {
                Ok(id) => id,
                Err(Error::Conflict { their_id, .. }) if on_conflict == OnConflict::Fail => {
                    assert_eq!(&their_id, chain.last().unwrap());
                    handle.refresh().unwrap();
                    handle
                        .append_message(&message(&format!("round {round}")))
                        .unwrap()
                }
                Err(error) => panic!("{on_conflict:?}: {error}"),
            };
            let lines = parse_log(&path);
            assert_eq!(
                parent_of(&lines, &id).as_ref(),
                chain.last(),
                "{on_conflict:?} round {round}"
            );
            chain.push(id);
        }
        let fresh = replay(&path);
        assert_eq!(fresh.path, chain, "{on_conflict:?}: one linear chain");
        assert_eq!(answers(&treelog_testkit::open(&path)).unwrap(), fresh);
    }
}

/// Many threads, each with its own handle (`FollowTip`), appending at once: every returned id
/// is in the log exactly once, every line is whole JSON, the entries form one linear chain,
/// and the shared index agrees with a replay.
#[test]
fn many_writers_follow_the_tip() {
    const THREADS: usize = 4;
    const APPENDS: usize = 40;
    let (_dir, path, first) = new_log();
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let path = path.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut session = Session::open(&path, options(OnConflict::FollowTip)).unwrap();
                barrier.wait();
                (0..APPENDS)
                    .map(|n| {
                        // Some payloads larger than a pipe buffer, so writes are not tiny.
                        let text = if n % 10 == 0 {
                            "x".repeat(100_000)
                        } else {
                            format!("thread {thread} append {n}")
                        };
                        session.append_message(&message(&text)).unwrap()
                    })
                    .collect::<Vec<String>>()
            })
        })
        .collect();
    let mut returned: Vec<String> = workers
        .into_iter()
        .flat_map(|worker| worker.join().unwrap())
        .collect();
    returned.push(first);
    let lines = parse_log(&path);
    let mut in_log: Vec<String> = lines[1..]
        .iter()
        .map(|line| line["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(in_log.len(), THREADS * APPENDS + 1, "one line per append");
    in_log.sort();
    returned.sort();
    assert_eq!(in_log, returned, "every returned id, exactly once");
    let fresh = replay(&path);
    assert_eq!(fresh.path.len(), THREADS * APPENDS + 1, "one linear chain");
    assert_eq!(answers(&treelog_testkit::open(&path)).unwrap(), fresh);
}

/// Readers opening the log over and over while a writer appends (and refreshing a long-lived
/// handle) always see a consistent prefix: the leaf is the last entry they see, its path is
/// made of entries they see, the context builds, and the entry count never goes down.
#[test]
fn readers_see_a_consistent_prefix() {
    let (_dir, path, _first) = new_log();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let path = path.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            let mut session = Session::open(&path, options(OnConflict::FollowTip)).unwrap();
            for n in 0..150 {
                let text = if n % 25 == 0 {
                    "y".repeat(300_000)
                } else {
                    format!("append {n}")
                };
                session.append_message(&message(&text)).unwrap();
                if n % 40 == 39 {
                    session.branch(&session.path_ids(None).unwrap()[1]).unwrap();
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut live = Session::open(&path, no_index()).unwrap();
    let mut last_count = 0;
    let mut last_live_count = 0;
    let mut opens = 0;
    while !done.load(Ordering::SeqCst) || opens < 3 {
        let options = if opens % 2 == 0 {
            SessionOptions::default()
        } else {
            no_index()
        };
        let session = Session::open(&path, options).unwrap();
        let count = check_consistent(&session);
        assert!(
            count >= last_count,
            "entry count went down: {last_count} -> {count}"
        );
        last_count = count;
        live.refresh().unwrap();
        let live_count = check_consistent(&live);
        assert!(live_count >= last_live_count);
        last_live_count = live_count;
        opens += 1;
    }
    writer.join().unwrap();
    assert_eq!(replay(&path).entries.len(), 151);
}

/// The checks of one reader's view; returns its entry count.
fn check_consistent(session: &Session) -> usize {
    let entries: Vec<String> = session
        .entries()
        .unwrap()
        .map(|entry| entry.unwrap().id)
        .collect();
    let leaf = session.log_leaf_id().unwrap();
    assert_eq!(
        leaf.as_ref(),
        entries.last(),
        "the leaf is the last entry seen"
    );
    let path = session.path_ids(leaf.as_deref()).unwrap();
    for id in &path {
        assert!(
            entries.contains(id),
            "path entry {id} is one the reader sees"
        );
    }
    session.build_context(leaf.as_deref()).unwrap();
    entries.len()
}

/// treelog writers and a pi-like writer (one `O_APPEND` write per line, no lock) at once:
/// no line is torn or glued, every id returned by treelog is in the log once, and the index
/// agrees with a replay.
#[test]
fn treelog_and_unlocked_writers_interleave_whole_lines() {
    const APPENDS: usize = 40;
    let (_dir, created, first) = new_log();
    let path = created.with_file_name("unlocked.jsonl");
    std::fs::rename(&created, &path).unwrap();
    let barrier = Arc::new(Barrier::new(3));
    let mut workers: Vec<std::thread::JoinHandle<Vec<String>>> = (0..2)
        .map(|thread| {
            let path = path.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut session = Session::open(&path, options(OnConflict::FollowTip)).unwrap();
                barrier.wait();
                (0..APPENDS)
                    .map(|n| {
                        session
                            .append_message(&message(&format!("thread {thread} append {n}")))
                            .unwrap()
                    })
                    .collect()
            })
        })
        .collect();
    {
        let path = path.clone();
        let barrier = barrier.clone();
        let first = first.clone();
        workers.push(std::thread::spawn(move || {
            use std::io::Write;
            barrier.wait();
            let mut parent = first;
            for n in 0..APPENDS {
                let id = format!("pi{n:06}");
                let line = serde_json::json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "z".repeat(n * 997)}});
                let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                file.write_all(format!("{line}\n").as_bytes()).unwrap();
                parent = id;
            }
            Vec::new()
        }));
    }
    let mut returned: Vec<String> = workers
        .into_iter()
        .flat_map(|worker| worker.join().unwrap())
        .collect();
    let lines = parse_log(&path);
    assert_eq!(lines.len(), 1 + 1 + 3 * APPENDS, "no line lost or glued");
    let mut in_log: Vec<String> = lines[2..]
        .iter()
        .filter_map(|line| line["id"].as_str())
        .filter(|id| !id.starts_with("pi"))
        .map(str::to_string)
        .collect();
    in_log.sort();
    returned.sort();
    assert_eq!(in_log, returned);
    assert_eq!(
        answers(&treelog_testkit::open(&path)).unwrap(),
        replay(&path)
    );
}

/// Bug: once another handle (a reader catching up, as `treelog info` does) had flushed part
/// of a writer's pending lines, the writer's flushes were all skipped for the rest of its
/// life: its in-memory overlay grew without bound and the next opener had to catch up
/// everything it appended. Now the writer writes what the index lacks after what it holds.
#[test]
fn writer_flushes_after_a_reader_flushed_part_of_its_lines() {
    let (_dir, path, _first) = new_log();
    let mut writer = Session::open(&path, SessionOptions::default()).unwrap();
    for n in 0..300 {
        writer.append_message(&message(&format!("a{n}"))).unwrap();
    }
    // A reader catches up 300 lines (at least the 256 that make a reader write them).
    let reader = Session::open(&path, SessionOptions::default()).unwrap();
    assert!(
        matches!(reader.index_state(), treelog::IndexState::CaughtUp { .. }),
        "{:?}",
        reader.index_state()
    );
    drop(reader);
    for n in 0..50 {
        writer.append_message(&message(&format!("b{n}"))).unwrap();
    }
    writer.sync().unwrap();
    let expected = answers(&writer).unwrap();
    drop(writer);
    let again = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(again.index_state(), &treelog::IndexState::Fresh);
    assert_eq!(answers(&again).unwrap(), expected);
    assert_eq!(answers(&again).unwrap(), replay(&path));
}
