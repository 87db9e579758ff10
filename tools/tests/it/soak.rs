//! A bounded soak test: for `TREELOG_SOAK_SECS` seconds (default 5), several writers append to one
//! log at once while several readers read it, and random processes are killed with SIGKILL and
//! started again:
//!
//! - `treelog append --on-conflict follow` processes, fed message lines, with a random
//!   `--sync` policy, a third of them killed at a random moment;
//! - library writers in processes of their own (this test binary again, with
//!   `TREELOG_SOAK_ROLE=writer`): a `Session` with `OnConflict::FollowTip` appending messages,
//!   labels and branches, reopened now and then, killed at a random moment;
//! - a library writer thread in the test process (reopening its session now and then);
//! - a foreign writer appending raw pi-style lines with `O_APPEND`, one `write` per line, no
//!   lock (as pi does);
//! - readers: `treelog path`, `context`, `tree --json` and `info --json` processes, a sixth of
//!   them killed.
//!
//! Every writer records what was acknowledged (the ids `treelog append` and the library
//! writers printed, the lines whose `write` returned). At the end:
//!
//! - every acknowledged entry is in the log exactly once, byte for byte;
//! - each reader that finished answered exactly as a replay of a prefix of the log it could
//!   have seen: the answer names the prefix (the leaf of `path` and `info`, the last message
//!   of `context`, the count of `tree` rows), that prefix must lie between the log's length
//!   before the reader started and after it ended, and an index-free replay of it must print
//!   the same bytes;
//! - no process printed a panic, and every reader and appender not killed exited with 0;
//! - `treelog verify --full` reports nothing but the fragments killed writers left (lines that
//!   are not JSON), and the lines whose parent the foreign writer glued onto such a fragment
//!   (it writes no `\n` first, as pi does not: not treelog's promise).
//!
//! `TREELOG_SOAK_SECS=N` runs longer; `TREELOG_SOAK_SEED=S` fixes the random choices (not the
//! timing). Run with `--nocapture` to see the figures.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use treelog::storage::{FileIdentity, LogStorage};
use treelog::{OnConflict, Session, SessionOptions};
use treelog_testkit::rng::Rng;

/// The soak test's name as the test harness knows it: its module path inside the test binary,
/// without the crate's name (`soak::soak_of_concurrent_writers_and_readers`).
fn test_name() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    if module.is_empty() {
        "soak_of_concurrent_writers_and_readers".to_owned()
    } else {
        format!("{module}::soak_of_concurrent_writers_and_readers")
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
}

/// What the run saw and did, shared by its threads.
#[derive(Default)]
struct Shared {
    /// Acknowledged messages by id (treelog append and the library writers): id -> message.
    acked_messages: Mutex<HashMap<String, (String, &'static str)>>,
    /// Acknowledged label entries: id -> target.
    acked_labels: Mutex<HashMap<String, String>>,
    /// Lines the foreign writer's `write` returned for.
    foreign_lines: Mutex<Vec<String>>,
    reads: Mutex<Vec<ReaderRun>>,
    /// Problems seen while running (a panic printed, an unexpected exit code).
    problems: Mutex<Vec<String>>,
    kills: Mutex<BTreeMap<&'static str, u64>>,
    runs: Mutex<BTreeMap<&'static str, u64>>,
}

impl Shared {
    fn count(map: &Mutex<BTreeMap<&'static str, u64>>, what: &'static str) {
        *map.lock().unwrap().entry(what).or_default() += 1;
    }

    fn problem(&self, problem: String) {
        self.problems.lock().unwrap().push(problem);
    }

    /// Records a problem if a process printed a panic.
    fn check_stderr(&self, who: &str, stderr: &str) {
        if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
            self.problem(format!("{who} printed a panic: {stderr}"));
        }
    }
}

/// One reader process: what it printed, and the log's length before it started and after it
/// ended.
struct ReaderRun {
    command: &'static str,
    before: u64,
    after: u64,
    stdout: String,
}

fn log_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |meta| meta.len())
}

/// Waits for `child`, killing it with SIGKILL after `kill_after` if given; returns whether it
/// was killed, its stdout and stderr (read on threads, so a full pipe never blocks it).
fn finish(
    mut child: Child,
    kill_after: Option<Duration>,
    on_stdout_line: impl FnMut(&str) + Send + 'static,
) -> (bool, String, String, Option<i32>) {
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut on_line = on_stdout_line;
        let mut text = String::new();
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return text,
                Ok(_) => {
                    text.push_str(&line);
                    // A line cut by a kill is not an acknowledgment.
                    if let Some(complete) = line.strip_suffix('\n') {
                        on_line(complete);
                    }
                }
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let mut killed = false;
    if let Some(delay) = kill_after {
        let deadline = Instant::now() + delay;
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() >= deadline {
                // std's Child::kill sends SIGKILL.
                let _ = child.kill();
                killed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let status = child.wait().unwrap();
    let stdout = out_reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    (
        killed && status.code().is_none(),
        stdout,
        stderr,
        status.code(),
    )
}

fn message(writer: &str, n: u64, rng: &mut Rng) -> String {
    let padding = "p".repeat(match rng.below(8) {
        0 => rng.below(20_000) as usize,
        _ => rng.below(200) as usize,
    });
    json!({"role": "user", "content": format!("{writer} {n} {padding}"), "timestamp": n})
        .to_string()
}

/// `treelog append` processes, one after another, until `deadline`.
fn cli_appender(
    binary: &Path,
    log: &Path,
    name: &'static str,
    seed: u64,
    deadline: Instant,
    shared: &Arc<Shared>,
) {
    let mut rng = Rng(seed);
    let mut n = 0;
    while Instant::now() < deadline {
        let sync = ["none", "always", "batch"][rng.below(3) as usize];
        let messages: Vec<String> = (0..1 + rng.below(20))
            .map(|_| {
                n += 1;
                message(name, n, &mut rng)
            })
            .collect();
        let kill = (rng.below(3) == 0).then(|| Duration::from_micros(rng.below(40_000)));
        let mut child = Command::new(binary)
            .arg("append")
            .arg(log)
            .args(["--sync", sync, "--on-conflict", "follow"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn treelog append");
        let mut stdin = child.stdin.take().unwrap();
        let input = messages.clone();
        let feeder = std::thread::spawn(move || {
            for message in input {
                if writeln!(stdin, "{message}").is_err() {
                    return;
                }
            }
        });
        let printed = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&printed);
        let (killed, _, stderr, code) = finish(child, kill, move |line| {
            sink.lock().unwrap().push(line.to_string())
        });
        feeder.join().unwrap();
        Shared::count(&shared.runs, "treelog append");
        if killed {
            Shared::count(&shared.kills, "treelog append");
        } else if code != Some(0) {
            shared.problem(format!("treelog append exited with {code:?}: {stderr}"));
        }
        shared.check_stderr("treelog append", &stderr);
        // The i-th id printed is the i-th line's.
        let mut acked = shared.acked_messages.lock().unwrap();
        for (id, message) in printed.lock().unwrap().iter().zip(messages) {
            acked.insert(id.clone(), (message, "treelog append"));
        }
    }
}

/// The library writer's work, in a process of its own (`TREELOG_SOAK_ROLE=writer`) or on a
/// thread: appends through a `Session` until `deadline` or `appends_max`, printing
/// `ack\tID\tMESSAGE` or `label\tID\tTARGET` after each append returned. A call that fails is
/// reported as `error\tWHAT` and the session is opened again.
fn library_writer(
    log: &Path,
    name: &str,
    seed: u64,
    deadline: Instant,
    appends_max: u64,
    mut ack: impl FnMut(&str),
) {
    let mut rng = Rng(seed);
    let options = SessionOptions {
        on_conflict: OnConflict::FollowTip,
        ..SessionOptions::default()
    };
    let mut own: Vec<String> = Vec::new();
    let mut n = 0;
    while Instant::now() < deadline && n < appends_max {
        let mut session = match Session::open(log, options.clone()) {
            Ok(session) => session,
            Err(error) => {
                ack(&format!("error\topen: {error}"));
                n += 1;
                continue;
            }
        };
        for _ in 0..1 + rng.below(30) {
            n += 1;
            let done = match rng.below(12) {
                0 if !own.is_empty() => {
                    let target = own[rng.below(own.len() as u64) as usize].clone();
                    session
                        .append_label_change(&target, Some(&format!("{name} {n}")))
                        .map(|id| ack(&format!("label\t{id}\t{target}")))
                        .map_err(|error| format!("label: {error}"))
                }
                1 if !own.is_empty() => {
                    // Branch from one of its own earlier entries.
                    let from = own[rng.below(own.len() as u64) as usize].clone();
                    session
                        .branch(&from)
                        .map_err(|error| format!("branch: {error}"))
                }
                _ => {
                    let message = message(name, n, &mut rng);
                    session
                        .append_message(&message)
                        .map(|id| {
                            ack(&format!("ack\t{id}\t{message}"));
                            own.push(id);
                        })
                        .map_err(|error| format!("append: {error}"))
                }
            };
            if let Err(error) = done {
                ack(&format!("error\t{error}"));
                break;
            }
            std::thread::sleep(Duration::from_micros(rng.below(3000)));
        }
        if rng.below(2) == 0
            && let Err(error) = session.close()
        {
            ack(&format!("error\tclose: {error}"));
        }
    }
}

/// Library writer processes, one after another, each killed at a random moment.
fn library_writer_processes(log: &Path, seed: u64, deadline: Instant, shared: &Arc<Shared>) {
    let mut rng = Rng(seed);
    while Instant::now() < deadline {
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                test_name().as_str(),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TREELOG_SOAK_ROLE", "writer")
            .env("TREELOG_SOAK_LOG", log)
            .env("TREELOG_SOAK_SEED", rng.next().to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a library writer");
        let kill = Some(Duration::from_millis(20 + rng.below(400)));
        let sink = Arc::clone(shared);
        let (killed, _, stderr, code) = finish(child, kill, move |line| {
            record_ack(&sink, line, "library process")
        });
        Shared::count(&shared.runs, "library process");
        if killed {
            Shared::count(&shared.kills, "library process");
        } else if code != Some(0) {
            shared.problem(format!("a library writer exited with {code:?}: {stderr}"));
        }
        shared.check_stderr("a library writer", &stderr);
    }
}

fn record_ack(shared: &Shared, line: &str, kind: &'static str) {
    let mut fields = line.splitn(3, '\t');
    match (fields.next(), fields.next(), fields.next()) {
        (Some("ack"), Some(id), Some(message)) => {
            shared
                .acked_messages
                .lock()
                .unwrap()
                .insert(id.to_string(), (message.to_string(), kind));
        }
        (Some("label"), Some(id), Some(target)) => {
            shared
                .acked_labels
                .lock()
                .unwrap()
                .insert(id.to_string(), target.to_string());
        }
        (Some("error"), Some(what), rest) => {
            let what = match rest {
                Some(rest) => format!("{what}\t{rest}"),
                None => what.to_string(),
            };
            shared.problem(format!("{kind}: {what}"));
        }
        _ => {}
    }
}

/// Raw pi-style lines, one `write` each on an `O_APPEND` descriptor, no lock; each parented
/// on the foreign writer's previous line.
fn foreign_writer(log: &Path, seed: u64, deadline: Instant, shared: &Shared) {
    let mut rng = Rng(seed);
    let mut file = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    let mut parent: Option<String> = None;
    let mut n = 0u64;
    while Instant::now() < deadline {
        n += 1;
        let id = format!("x{n:07}");
        let line = json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": format!("foreign {n}"), "timestamp": n}})
        .to_string();
        let bytes = format!("{line}\n");
        let written = file.write(bytes.as_bytes()).expect("foreign write");
        assert_eq!(written, bytes.len(), "a short write");
        shared.foreign_lines.lock().unwrap().push(line);
        parent = Some(id);
        std::thread::sleep(Duration::from_micros(rng.below(8000)));
    }
}

/// Reader processes, one after another.
fn reader(binary: &Path, log: &Path, seed: u64, deadline: Instant, shared: &Arc<Shared>) {
    let mut rng = Rng(seed);
    while Instant::now() < deadline {
        let (command, args): (&'static str, &[&str]) = match rng.below(4) {
            0 => ("path", &["path"]),
            1 => ("context", &["context"]),
            2 => ("tree --json", &["tree", "--json"]),
            _ => ("info --json", &["info", "--json"]),
        };
        let kill = (rng.below(6) == 0).then(|| Duration::from_micros(rng.below(30_000)));
        let before = log_len(log);
        let child = Command::new(binary)
            .args(args)
            .arg(log)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a reader");
        let (killed, stdout, stderr, code) = finish(child, kill, |_| {});
        let after = log_len(log);
        Shared::count(&shared.runs, command);
        shared.check_stderr(command, &stderr);
        if killed {
            Shared::count(&shared.kills, command);
            continue;
        }
        if code != Some(0) {
            shared.problem(format!("treelog {command} exited with {code:?}: {stderr}"));
            continue;
        }
        shared.reads.lock().unwrap().push(ReaderRun {
            command,
            before,
            after,
            stdout,
        });
    }
}

/// The final log's bytes exposed up to a growing length, so that one index-free session can
/// replay each prefix in turn (`refresh` reads the new lines).
struct Prefix {
    bytes: Arc<Vec<u8>>,
    visible: Arc<AtomicU64>,
    path: PathBuf,
}

impl LogStorage for Prefix {
    fn path(&self) -> &Path {
        &self.path
    }

    fn identity(&self) -> std::io::Result<FileIdentity> {
        Ok(FileIdentity {
            len_bytes: self.visible.load(Ordering::SeqCst),
            ..FileIdentity::default()
        })
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let end = self.visible.load(Ordering::SeqCst) as usize;
        let start = (offset as usize).min(end);
        let count = buf.len().min(end - start);
        buf[..count].copy_from_slice(&self.bytes[start..start + count]);
        Ok(count)
    }

    fn append(&mut self, _: &[u8]) -> std::io::Result<u64> {
        Err(std::io::Error::other("read only"))
    }

    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn lock(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn unlock(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An entry line of the final log.
struct EntryLine {
    id: String,
    /// The offset just past its `\n`.
    end: u64,
    content: Option<String>,
    /// `parentId` as written.
    parent: Option<String>,
}

/// What a reader's output says about the prefix it read: the end of its last entry line.
/// For `context`, the last message names its entry, and so do the label entries whose parent
/// is that entry (or such a label): a leaf that is a label adds no message (a library writer
/// may branch back and label there). The answer names all of them; the one the reader's
/// window holds is taken.
fn prefix_named(
    read: &ReaderRun,
    entries: &[EntryLine],
    by_id: &HashMap<&str, usize>,
) -> Result<Vec<usize>, String> {
    let by_content = |content: &str| {
        entries
            .iter()
            .position(|entry| entry.content.as_deref() == Some(content))
    };
    let index = match read.command {
        "path" => {
            let leaf = read.stdout.lines().last().ok_or("an empty path")?;
            by_id.get(leaf).copied()
        }
        "tree --json" => read.stdout.lines().count().checked_sub(1),
        "context" => {
            let context: Value = serde_json::from_str(&read.stdout).map_err(|e| e.to_string())?;
            let last = context["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .ok_or("an empty context")?;
            let message = last["content"]
                .as_str()
                .and_then(by_content)
                .ok_or("the answer names no entry of the log")?;
            // The label entries that lead to it through labels only.
            let leads_to_message = |mut index: usize| {
                while entries[index].content.is_none() {
                    match entries[index].parent.as_deref().and_then(|p| by_id.get(p)) {
                        Some(parent) if *parent < index => index = *parent,
                        _ => return false,
                    }
                }
                index == message
            };
            let mut candidates = vec![message];
            candidates.extend(
                (message + 1..entries.len())
                    .filter(|index| entries[*index].content.is_none() && leads_to_message(*index)),
            );
            return Ok(candidates);
        }
        _ => {
            let info: Value = serde_json::from_str(&read.stdout).map_err(|e| e.to_string())?;
            let count = info["entryCount"].as_u64().ok_or("no entryCount")?;
            let index = (count as usize).checked_sub(1);
            if index.map(|index| entries[index].id.as_str()) != info["leafId"].as_str() {
                return Err(format!("leafId {} is not entry {count}", info["leafId"]));
            }
            index
        }
    };
    index
        .map(|index| vec![index])
        .ok_or_else(|| "the answer names no entry of the log".to_string())
}

/// What `treelog COMMAND` prints for the session replayed so far.
fn expected_output(command: &str, session: &Session) -> String {
    let mut out = String::new();
    match command {
        "path" => {
            for id in session.path_ids(None).unwrap() {
                out.push_str(&id);
                out.push('\n');
            }
        }
        "context" => {
            out.push_str(&session.build_context(None).unwrap().to_json());
            out.push('\n');
        }
        "tree --json" => {
            for node in session.tree().unwrap() {
                let node = node.unwrap();
                let line = json!({
                    "id": node.id,
                    "parentId": node.parent_id,
                    "depth": node.depth,
                    "label": node.label,
                    "labelTimestamp": node.label_timestamp,
                });
                out.push_str(&line.to_string());
                out.push('\n');
            }
        }
        _ => unreachable!(),
    }
    out
}

#[test]
fn soak_of_concurrent_writers_and_readers() {
    if std::env::var("TREELOG_SOAK_ROLE").as_deref() == Ok("writer") {
        let log = PathBuf::from(std::env::var("TREELOG_SOAK_LOG").unwrap());
        let seed = env_u64("TREELOG_SOAK_SEED").unwrap_or(1);
        let stdout = std::io::stdout();
        library_writer(
            &log,
            &format!("library-process-{seed:x}"),
            seed,
            Instant::now() + Duration::from_secs(3600),
            400,
            |line| {
                let mut out = stdout.lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            },
        );
        return;
    }
    let secs = env_u64("TREELOG_SOAK_SECS").unwrap_or(5);
    let seed = env_u64("TREELOG_SOAK_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |elapsed| elapsed.as_nanos() as u64)
    });
    println!("soak: {secs}s (TREELOG_SOAK_SECS), seed {seed} (TREELOG_SOAK_SEED)");
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    // A private copy: the shared target dir's binary may be relinked by another build.
    let binary = dir.path().join("treelog");
    std::fs::copy(env!("CARGO_BIN_EXE_treelog"), &binary).expect("copy the treelog binary");
    let log = dir.path().join("soak.jsonl");
    {
        let mut session = Session::open(&log, SessionOptions::default()).unwrap();
        session
            .append_message(
                &json!({"role": "user", "content": "first", "timestamp": 0}).to_string(),
            )
            .unwrap();
        session.close().unwrap();
    }

    let shared = Arc::new(Shared::default());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut rng = Rng(seed);
    let mut threads = Vec::new();
    for name in ["cli-a", "cli-b"] {
        let (binary, log, shared, seed) =
            (binary.clone(), log.clone(), Arc::clone(&shared), rng.next());
        threads.push(std::thread::spawn(move || {
            cli_appender(&binary, &log, name, seed, deadline, &shared)
        }));
    }
    {
        let (log, shared, seed) = (log.clone(), Arc::clone(&shared), rng.next());
        threads.push(std::thread::spawn(move || {
            library_writer_processes(&log, seed, deadline, &shared)
        }));
    }
    {
        let (log, shared, seed) = (log.clone(), Arc::clone(&shared), rng.next());
        threads.push(std::thread::spawn(move || {
            library_writer(&log, "library-thread", seed, deadline, u64::MAX, |line| {
                record_ack(&shared, line, "library thread")
            })
        }));
    }
    {
        let (log, shared, seed) = (log.clone(), Arc::clone(&shared), rng.next());
        threads.push(std::thread::spawn(move || {
            foreign_writer(&log, seed, deadline, &shared)
        }));
    }
    for _ in 0..2 {
        let (binary, log, shared, seed) =
            (binary.clone(), log.clone(), Arc::clone(&shared), rng.next());
        threads.push(std::thread::spawn(move || {
            reader(&binary, &log, seed, deadline, &shared)
        }));
    }
    for thread in threads {
        thread.join().expect("a soak thread failed");
    }
    let ran = started.elapsed();

    // The final log, read as an independent parser reads it.
    let bytes = Arc::new(std::fs::read(&log).unwrap());
    let mut entries: Vec<EntryLine> = Vec::new();
    let mut lines: HashMap<&[u8], u64> = HashMap::new();
    let mut fragments = Vec::new();
    let mut start = 0;
    for (number, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        start += line.len();
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        *lines.entry(text).or_default() += 1;
        match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(object)) => {
                if let (Some(kind), Some(id)) = (
                    object.get("type").and_then(Value::as_str),
                    object.get("id").and_then(Value::as_str),
                ) && kind != "session"
                {
                    entries.push(EntryLine {
                        id: id.to_string(),
                        end: start as u64,
                        content: object
                            .get("message")
                            .and_then(|message| message["content"].as_str())
                            .map(str::to_string),
                        parent: object
                            .get("parentId")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    });
                }
            }
            _ if text.is_empty() => {}
            _ => fragments.push((number + 1, text)),
        }
    }
    let mut id_counts: HashMap<&str, usize> = HashMap::new();
    for entry in &entries {
        *id_counts.entry(entry.id.as_str()).or_default() += 1;
    }
    let by_id: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| (entry.id.as_str(), index))
        .collect();

    let mut problems = shared.problems.lock().unwrap().clone();
    // Every acknowledged entry is there exactly once, byte for byte.
    let plain = Session::open(
        &log,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )
    .unwrap();
    let mut acked_by_kind: BTreeMap<&str, u64> = BTreeMap::new();
    for (id, (message, kind)) in shared.acked_messages.lock().unwrap().iter() {
        *acked_by_kind.entry(kind).or_default() += 1;
        if id_counts.get(id.as_str()) != Some(&1) {
            problems.push(format!(
                "acknowledged {id} ({kind}) is in the log {:?} times",
                id_counts.get(id.as_str())
            ));
            continue;
        }
        let stored = plain
            .entry(id)
            .unwrap()
            .and_then(|entry| entry.field("message"))
            .map(|raw| raw.get().to_string());
        if stored.as_deref() != Some(message.as_str()) {
            problems.push(format!(
                "acknowledged {id} ({kind}) does not hold its bytes"
            ));
        }
    }
    for (id, target) in shared.acked_labels.lock().unwrap().iter() {
        *acked_by_kind.entry("library label").or_default() += 1;
        let entry = plain.entry(id).unwrap();
        let stored = entry.as_ref().and_then(|entry| entry.field("targetId"));
        if id_counts.get(id.as_str()) != Some(&1)
            || stored.map(|raw| raw.get().to_string()) != Some(format!("\"{target}\""))
        {
            problems.push(format!("acknowledged label {id} is missing or wrong"));
        }
    }
    let foreign = shared.foreign_lines.lock().unwrap();
    acked_by_kind.insert("foreign writer", foreign.len() as u64);
    // The foreign writer, like pi, writes no `\n` before its line: one written right after a
    // killed writer's torn line is glued onto it (not treelog's promise: treelog's own appends
    // start with a `\n` there). Such a line is counted, and the lines naming it as parent
    // are roots for every reader.
    let mut glued: Vec<String> = Vec::new();
    for line in foreign.iter() {
        if lines.get(line.as_bytes()) == Some(&1) {
            continue;
        }
        let glued_once = !lines.contains_key(line.as_bytes())
            && fragments
                .iter()
                .filter(|(_, text)| text.ends_with(line.as_bytes()))
                .count()
                == 1;
        if glued_once {
            let value: Value = serde_json::from_str(line).unwrap();
            glued.push(value["id"].as_str().unwrap().to_string());
        } else {
            problems.push(format!(
                "the foreign line {line} is not in the log exactly once"
            ));
        }
    }

    // Each reader answered as a replay of a prefix it could have seen.
    let mut reads = std::mem::take(&mut *shared.reads.lock().unwrap());
    let mut checked: Vec<(usize, ReaderRun)> = Vec::new();
    for read in reads.drain(..) {
        match prefix_named(&read, &entries, &by_id) {
            Err(why) => problems.push(format!("treelog {}: {why}", read.command)),
            Ok(candidates) => {
                // The prefix it read ends after entry `index` and before the next one.
                let seen = candidates.iter().copied().find(|index| {
                    let end = entries[*index].end;
                    let next_end = entries.get(index + 1).map_or(u64::MAX, |next| next.end);
                    end <= read.after && next_end > read.before
                });
                match seen {
                    Some(index) => checked.push((index, read)),
                    None => problems.push(format!(
                        "treelog {} answered for the log up to byte {}, but the log held \
                         {}..{} bytes while it ran",
                        read.command, entries[candidates[0]].end, read.before, read.after
                    )),
                }
            }
        }
    }
    checked.sort_by_key(|(index, _)| *index);
    let visible = Arc::new(AtomicU64::new(0));
    let mut replay = Session::open_storage(
        Box::new(Prefix {
            bytes: Arc::clone(&bytes),
            visible: Arc::clone(&visible),
            path: log.clone(),
        }),
        SessionOptions::default(),
    )
    .unwrap();
    let mut reads_by_command: BTreeMap<&str, u64> = BTreeMap::new();
    let mut index_states: BTreeMap<String, u64> = BTreeMap::new();
    for (index, read) in &checked {
        *reads_by_command.entry(read.command).or_default() += 1;
        if read.command == "info --json" {
            let info: Value = serde_json::from_str(&read.stdout).unwrap();
            // Digits vary (offsets, lengths): count by the words.
            let state = format!(
                "{} {}",
                info["index"]["state"].as_str().unwrap_or("?"),
                info["index"]["reason"].as_str().unwrap_or("")
            );
            let state: String = state.chars().filter(|c| !c.is_ascii_digit()).collect();
            *index_states.entry(state.trim().to_string()).or_default() += 1;
            continue;
        }
        visible.store(entries[*index].end, Ordering::SeqCst);
        replay.refresh().unwrap();
        let expected = expected_output(read.command, &replay);
        if read.stdout != expected {
            problems.push(format!(
                "treelog {} differs from the replay of the log's first {} bytes",
                read.command, entries[*index].end
            ));
        }
    }

    // verify --full: only the fragments of killed writers.
    let verify = Command::new(&binary)
        .args(["verify", "--full", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    let verify_out = String::from_utf8_lossy(&verify.stdout);
    let verify_err = String::from_utf8_lossy(&verify.stderr);
    if verify_err.contains("panicked") || verify_err.contains("RUST_BACKTRACE") {
        problems.push(format!("treelog verify printed a panic: {verify_err}"));
    }
    let mut verify_problems = 0;
    for line in verify_out.lines() {
        let problem: Value = serde_json::from_str(line).unwrap();
        // The last line is the summary, not a problem.
        if problem.get("summary").is_some() {
            continue;
        }
        verify_problems += 1;
        let at_fragment = problem["line"]
            .as_u64()
            .is_some_and(|line| fragments.iter().any(|(number, _)| *number == line as usize));
        let kind = problem["kind"].as_str().unwrap_or("");
        let message = problem["message"].as_str().unwrap_or("");
        let names_glued = kind == "danglingParent"
            && glued
                .iter()
                .any(|id| message.contains(&format!("parent \"{id}\"")));
        if !(names_glued || at_fragment && matches!(kind, "unparseable" | "tornTail" | "encoding"))
        {
            problems.push(format!("verify --full: {line}"));
        }
    }
    if !matches!(verify.status.code(), Some(0) | Some(1))
        || (verify.status.code() == Some(1)) != (verify_problems > 0)
    {
        problems.push(format!(
            "verify --full exited with {:?}: {}",
            verify.status.code(),
            String::from_utf8_lossy(&verify.stderr)
        ));
    }

    println!(
        "soak: {:.1}s, log {} bytes, {} entries, {} fragments left by kills, {} foreign lines \
         glued onto one (verify --full: {} problems, all about them)",
        ran.as_secs_f64(),
        bytes.len(),
        entries.len(),
        fragments.len(),
        glued.len(),
        verify_problems
    );
    println!("soak: acknowledged appends: {acked_by_kind:?}");
    println!("soak: processes run: {:?}", shared.runs.lock().unwrap());
    println!("soak: processes killed: {:?}", shared.kills.lock().unwrap());
    println!("soak: reads checked against a replay: {reads_by_command:?}");
    println!("soak: index state seen by info readers: {index_states:?}");
    for problem in problems.iter().take(20) {
        println!("soak problem: {problem}");
    }
    assert!(
        problems.is_empty(),
        "{} problems (seed {seed})",
        problems.len()
    );
    assert!(
        acked_by_kind.values().all(|count| *count > 0) && !checked.is_empty(),
        "some writer or reader never got through: {acked_by_kind:?}, {} reads",
        checked.len()
    );
}
