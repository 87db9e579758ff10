//! Process crashes of a real writer: `treelog append FILE --sync always` is fed message lines
//! and killed with SIGKILL at a random moment (before it opened the log, while it checks or
//! writes the index, in the middle of a write of a multi-megabyte line, between appends).
//! After each kill the log is reopened and checked:
//!
//! - every id the child printed (an acknowledged append) is present with exactly the bytes
//!   it was given, and so is every id acknowledged in earlier rounds on the same file;
//! - the log opens, and its entries are exactly its entry lines: a torn tail is never an
//!   entry (a last line killed just before its `\n` is one, as pi reads it);
//! - the index answers (leaf, path, entry count, context) equal an index-free replay, even
//!   though the child may have been killed in the middle of an index commit.
//!
//! Rounds continue on the same file for a while, so every child also opens a log that a killed
//! child left behind and must not glue its first line onto a torn tail.
//!
//! `TREELOG_CRASH_ROUNDS` (default 200) sets the number of rounds; `TREELOG_CRASH_SEED` the
//! seed of the kill times and message sizes. Run with `--nocapture` to see the figures.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use treelog::{IndexState, Session, SessionOptions};
use treelog_testkit::rng::Rng;

/// Rounds on one file before starting a new one (bounds the file size and the check time).
const ROUNDS_PER_FILE: usize = 10;
/// Lines offered to one child; it is killed long before it could append them all.
const LINES_PER_CHILD_MAX: usize = 60;
/// Kill delays are drawn from 0..KILL_DELAY_MS_MAX (after the spawn or the first id).
const KILL_DELAY_MS_MAX: u64 = 40;

#[derive(Default)]
struct Figures {
    rounds: u64,
    acknowledged: u64,
    torn_tails: u64,
    killed_before_first_append: u64,
    exited_before_kill: u64,
    index_rebuilt: u64,
    rebuild_reasons: std::collections::BTreeMap<String, u64>,
    index_caught_up: u64,
    log_bytes_max: u64,
}

/// The message for line `index` of round `round`: unique text, now and then a large one (up
/// to 2.25 MiB), and in a big round only lines of 0.25 to 1.25 MiB, so that a kill can land in the
/// middle of a write.
fn message(rng: &mut Rng, round: usize, index: usize, big_round: bool) -> String {
    let padding = match rng.below(16) {
        _ if big_round => 256 * 1024 + rng.below(1024 * 1024) as usize,
        0 if rng.below(2) == 0 => 256 * 1024 + rng.below(2 * 1024 * 1024) as usize,
        1..=3 => rng.below(8 * 1024) as usize,
        _ => rng.below(64) as usize,
    };
    format!(
        r#"{{"role":"user","content":"round {round} line {index} {}","timestamp":{index}}}"#,
        "é".repeat(padding / 2)
    )
}

/// When a child is killed.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// This long after the spawn (it may still be starting or checking the index).
    AfterSpawn(Duration),
    /// This long after its first printed id.
    AfterFirstAck(Duration),
}

impl Kill {
    fn delay(self) -> Duration {
        match self {
            Kill::AfterSpawn(delay) | Kill::AfterFirstAck(delay) => delay,
        }
    }
}

/// Runs one child until the kill; returns the ids it printed (complete lines only) and whether
/// it exited by itself first.
fn run_child(binary: &Path, log: &Path, messages: Vec<String>, kill: Kill) -> (Vec<String>, bool) {
    let mut child = Command::new(binary)
        .arg("append")
        .arg(log)
        .args(["--sync", "always"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn treelog append");
    let mut stdin = child.stdin.take().expect("child stdin");
    let feeder = std::thread::spawn(move || {
        for message in messages {
            // Fails with a broken pipe once the child is dead.
            if stdin.write_all(message.as_bytes()).is_err() || stdin.write_all(b"\n").is_err() {
                return;
            }
        }
    });
    let stdout = child.stdout.take().expect("child stdout");
    let printed = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let printed = Arc::clone(&printed);
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    // A line cut by the kill is not an acknowledgment.
                    Ok(_) if !line.ends_with(b"\n") => return,
                    Ok(_) => printed
                        .lock()
                        .expect("printed ids")
                        .push(String::from_utf8_lossy(&line[..line.len() - 1]).into_owned()),
                }
            }
        })
    };
    // A kill during startup, or one a while after the first acknowledgment.
    let mut exited = false;
    if let Kill::AfterFirstAck(_) = kill {
        let give_up = Instant::now() + Duration::from_secs(10);
        while printed.lock().expect("printed ids").is_empty() && Instant::now() < give_up {
            if child.try_wait().expect("poll child").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let deadline = Instant::now() + kill.delay();
    while Instant::now() < deadline {
        if child.try_wait().expect("poll child").is_some() {
            exited = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if !exited {
        // std's Child::kill sends SIGKILL: no destructor, no flush, no close.
        let _ = child.kill();
    }
    child.wait().expect("reap child");
    reader.join().expect("stdout reader");
    feeder.join().expect("stdin feeder");
    let ids = printed.lock().expect("printed ids").clone();
    (ids, exited)
}

/// The entry lines of a log as an independent reading sees them: lines that are JSON objects
/// with a string `type` other than `session` and a string `id`, the bytes after the last `\n`
/// included (as pi reads them: a line when they are whole JSON, a torn tail otherwise).
fn oracle_ids(log: &[u8]) -> Vec<String> {
    log.split(|b| *b == b'\n')
        .filter_map(|line| {
            let serde_json::Value::Object(object) = serde_json::from_slice(line).ok()? else {
                return None;
            };
            let kind = object.get("type")?.as_str()?;
            let id = object.get("id")?.as_str()?;
            (kind != "session").then(|| id.to_string())
        })
        .collect()
}

/// The answers compared between an indexed open and an index-free replay.
fn answers(session: &Session) -> (Option<String>, Vec<String>, usize, String) {
    (
        session.leaf_id().expect("leaf"),
        session.path_ids(None).expect("path"),
        session.entries().expect("entries").count(),
        session.build_context(None).expect("context").to_json(),
    )
}

fn check_after_kill(
    path: &Path,
    acknowledged: &HashMap<String, String>,
    round: usize,
    figures: &mut Figures,
) {
    let log = std::fs::read(path).unwrap_or_default();
    figures.log_bytes_max = figures.log_bytes_max.max(log.len() as u64);
    let tail = &log[log.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1)..];
    let torn_len = if serde_json::from_slice::<serde_json::Value>(tail).is_ok() {
        0
    } else {
        tail.len()
    };
    if torn_len > 0 {
        figures.torn_tails += 1;
    }

    let plain = Session::open(
        path,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("round {round}: the log does not open: {error}"));
    let ids: Vec<String> = plain
        .entries()
        .expect("entries")
        .map(|entry| entry.expect("entry").id)
        .collect();
    assert_eq!(
        ids,
        oracle_ids(&log),
        "round {round}: the entries are not the complete entry lines (torn tail {torn_len} bytes)"
    );
    for (id, message) in acknowledged {
        let entry = plain
            .entry(id)
            .expect("lookup")
            .unwrap_or_else(|| panic!("round {round}: acknowledged id {id} is missing"));
        let stored = entry.field("message").map(|raw| raw.get().to_string());
        assert!(
            stored.as_deref() == Some(message.as_str()),
            "round {round}: acknowledged entry {id} does not hold the bytes it was given"
        );
    }

    let indexed = Session::open(path, SessionOptions::default())
        .unwrap_or_else(|error| panic!("round {round}: the log does not open indexed: {error}"));
    match indexed.index_state() {
        IndexState::Rebuilt { reason, .. } => {
            figures.index_rebuilt += 1;
            // Digits vary (offsets, lengths): count by the words.
            let kind: String = reason.chars().filter(|c| !c.is_ascii_digit()).collect();
            *figures.rebuild_reasons.entry(kind).or_default() += 1;
        }
        IndexState::CaughtUp { .. } => figures.index_caught_up += 1,
        _ => {}
    }
    assert_eq!(
        answers(&indexed),
        answers(&plain),
        "round {round}: the index answers differ from an index-free replay"
    );
}

#[test]
fn sigkill_during_appends() {
    let rounds: usize = std::env::var("TREELOG_CRASH_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("TREELOG_CRASH_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |elapsed| elapsed.as_nanos() as u64)
        });
    println!("crash test: {rounds} rounds, seed {seed} (TREELOG_CRASH_SEED={seed} repeats it)");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("temp dir");
    // A private copy: the shared target dir's binary may be relinked by another build meanwhile.
    let binary = dir.path().join("treelog");
    std::fs::copy(env!("CARGO_BIN_EXE_treelog"), &binary).expect("copy the treelog binary");
    let mut figures = Figures::default();
    let mut acknowledged: HashMap<String, String> = HashMap::new();
    let started = Instant::now();
    for round in 0..rounds {
        let path = dir
            .path()
            .join(format!("session-{}.jsonl", round / ROUNDS_PER_FILE));
        if round % ROUNDS_PER_FILE == 0 {
            acknowledged.clear();
        }
        let big_round = rng.below(8) == 0;
        let count = 1 + rng.below(if big_round {
            8
        } else {
            LINES_PER_CHILD_MAX as u64
        }) as usize;
        let messages: Vec<String> = (0..count)
            .map(|i| message(&mut rng, round, i, big_round))
            .collect();
        let delay = Duration::from_micros(rng.below(KILL_DELAY_MS_MAX * 1000));
        let kill = match rng.below(4) {
            0 => Kill::AfterSpawn(delay),
            _ => Kill::AfterFirstAck(delay),
        };
        let (ids, exited) = run_child(&binary, &path, messages.clone(), kill);
        assert!(
            ids.len() <= messages.len(),
            "round {round}: more ids than lines"
        );
        figures.rounds += 1;
        figures.acknowledged += ids.len() as u64;
        if exited {
            figures.exited_before_kill += 1;
        }
        if ids.is_empty() {
            figures.killed_before_first_append += 1;
        }
        // The child prints the id of line i as its i-th line.
        for (id, message) in ids.into_iter().zip(messages) {
            acknowledged.insert(id, message);
        }
        check_after_kill(&path, &acknowledged, round, &mut figures);
    }
    println!(
        "crash test: {} rounds in {:.1}s, {} acknowledged ids all present, {} torn tails seen, \
         {} kills before the first append, {} children finished before the kill, \
         index rebuilt {} times and caught up {} times, largest log {} bytes",
        figures.rounds,
        started.elapsed().as_secs_f64(),
        figures.acknowledged,
        figures.torn_tails,
        figures.killed_before_first_append,
        figures.exited_before_kill,
        figures.index_rebuilt,
        figures.index_caught_up,
        figures.log_bytes_max
    );
    for (reason, count) in &figures.rebuild_reasons {
        println!("crash test: index rebuilt {count} times: {reason}");
    }
    assert!(
        figures.acknowledged > 0,
        "no child ever acknowledged an append"
    );
}
