//! A seeded damage campaign against the sidecar index: the index is only a cache, so whatever
//! happens to it, the reads a command makes must answer as a replay of the log does, without an
//! error the user would have to act on, without a panic and without a hang.
//!
//! For the bundled transcripts (`tests/data/*.jsonl`) and two logs written here through the
//! API (branches, labels set and cleared, compactions, names, many roots, opaque lines,
//! repeated ids), the sidecar is built, then each trial copies log and sidecar into a new
//! directory, damages the sidecar in one of these ways (`Mode`):
//!
//! - `bit-flip`: one bit flipped;
//! - `overwrite-16`: 16 bytes overwritten with random bytes;
//! - `zero-page`: one 4 KiB page zeroed;
//! - `random-page`: one 4 KiB page overwritten with random bytes;
//! - `copied-page`: one 4 KiB page overwritten with another page of the same file;
//! - `truncated`: cut at a random length;
//! - `foreign`: the sidecar of another log (or, for pi16-sample-300, one of schema 7);
//! - `old-state`: the sidecar of this log at an earlier line, the rest then appended by a
//!   foreign writer (`O_APPEND`) on the same file,
//!
//! and makes every read a command makes (`Reads`) in a first open with default options, then
//! again in a second open (an error must not be sticky). Each answer is compared with an
//! index-free replay of the log (`use_index: false`). A trial runs on its own thread under a
//! timeout, inside `catch_unwind`, in a worker process (this test binary again, with
//! `TREELOG_DAMAGE_WORKER=START`): after a hang the worker exits (a stuck thread cannot be
//! stopped) and after an abort it is dead; the test starts a new one at the next trial. A
//! trial is classified:
//!
//! - `right`: every answer right, the index trusted (fresh or caught up);
//! - `rebuilt`: every answer right, and the session reported a rebuild (`IndexState::Rebuilt`
//!   or `Unindexed`, at open or after the reads);
//! - `errors`: a call returned `Err` (the user must act: an internal error);
//! - `wrong`: an answer differs from the replay (or the log was changed);
//! - `hangs`: the trial did not finish in `TRIAL_TIMEOUT`;
//! - `panics`: a panic escaped treelog (or the worker process died: an abort).
//!
//! `sticky` counts failed trials whose second open failed too (the damage stays until the
//! sidecar is deleted or rebuilt by hand). `caught` counts panics that treelog caught itself
//! (redb panics turned into `Error::Index`): they are not failures of the library, but the
//! default panic hook prints them to stderr, where a CLI user sees them.
//!
//! Environment: `TREELOG_DAMAGE_TRIALS=N` trials per mode (default 8: 64 trials, about a
//! minute in a debug build); `TREELOG_DAMAGE_SEED=S` the campaign seed (default fixed,
//! printed); `TREELOG_DAMAGE_ONLY=MODE[:TRIAL]` one mode, or one trial, with every failure
//! and panic printed in full; `TREELOG_DAMAGE_REPORT_ONLY=1` prints the table without failing
//! (for measuring). Run with `--nocapture` to see the table; each failure line names the
//! `TREELOG_DAMAGE_ONLY` value that replays it.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use serde_json::json;
use treelog::{IndexState, Session, SessionOptions, sidecar_path};
use treelog_testkit::rng::Rng;
use treelog_testkit::{no_index, scratch_dir};

/// redb's page size: the unit of the page modes.
const PAGE: usize = 4096;
/// A trial that takes longer is a hang.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(20);
const TRIALS_DEFAULT: usize = 8;
const SEED_DEFAULT: u64 = 0x7265_6c69_6162_6c65;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    BitFlip,
    Overwrite16,
    ZeroPage,
    RandomPage,
    CopiedPage,
    Truncated,
    Foreign,
    OldState,
}

const MODES: [Mode; 8] = [
    Mode::BitFlip,
    Mode::Overwrite16,
    Mode::ZeroPage,
    Mode::RandomPage,
    Mode::CopiedPage,
    Mode::Truncated,
    Mode::Foreign,
    Mode::OldState,
];

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::BitFlip => "bit-flip",
            Mode::Overwrite16 => "overwrite-16",
            Mode::ZeroPage => "zero-page",
            Mode::RandomPage => "random-page",
            Mode::CopiedPage => "copied-page",
            Mode::Truncated => "truncated",
            Mode::Foreign => "foreign",
            Mode::OldState => "old-state",
        }
    }
}

/// A log, its sidecar as an open builds it, and what a replay knows about it.
struct Fixture {
    name: String,
    log: Arc<Vec<u8>>,
    sidecar: Vec<u8>,
    /// Offsets just after each `\n`: where an older state of the log may end.
    line_ends: Vec<usize>,
    /// Entry ids in file order.
    ids: Vec<String>,
    /// Entries without children.
    tree_leaves: Vec<String>,
    /// An index-free replay of the log.
    replay: Session,
    /// The replay's answers to `whole_session_reads`.
    expected_whole: Reads,
    _dir: tempfile::TempDir,
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn fixture(name: &str, log: Vec<u8>) -> Fixture {
    let dir = scratch_dir();
    let path = dir.path().join("pristine.jsonl");
    std::fs::write(&path, &log).unwrap();
    drop(Session::open(&path, SessionOptions::default()).expect("build the sidecar"));
    let sidecar = std::fs::read(sidecar_path(&path)).unwrap();
    let replay_path = dir.path().join("replay.jsonl");
    std::fs::write(&replay_path, &log).unwrap();
    let replay = Session::open(&replay_path, no_index()).unwrap();
    let entries: Vec<treelog::Entry> = replay
        .entries()
        .unwrap()
        .collect::<treelog::Result<_>>()
        .unwrap();
    let parents: std::collections::HashSet<&str> = entries
        .iter()
        .filter_map(|entry| entry.tree_parent_id.as_deref())
        .collect();
    let tree_leaves = entries
        .iter()
        .filter(|entry| !parents.contains(entry.id.as_str()))
        .map(|entry| entry.id.clone())
        .collect();
    let ids: Vec<String> = entries.iter().map(|entry| entry.id.clone()).collect();
    let expected_whole = whole_session_reads(&replay, ids.len() + 1).expect("the replay answers");
    let line_ends = log
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(at, _)| at + 1)
        .collect();
    Fixture {
        name: name.to_string(),
        log: Arc::new(log),
        sidecar,
        line_ends,
        ids,
        tree_leaves,
        replay,
        expected_whole,
        _dir: dir,
    }
}

fn message(role: &str, text: &str, n: u64) -> String {
    match role {
        "assistant" => json!({"role": "assistant", "content": [{"type": "text", "text": text}],
            "provider": "p", "model": "m", "timestamp": n})
        .to_string(),
        _ => json!({"role": role, "content": text, "timestamp": n}).to_string(),
    }
}

/// Lines another program writes into the log: not entries (opaque), or entries treelog did not
/// write (one repeating an id).
fn foreign_lines(path: &Path, lines: &[String]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for line in lines {
        file.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
}

/// A log of `count` entries written through the API: every kind pi writes, branches, labels
/// set and cleared, compactions, session names, custom entries, context edits, new roots
/// every `root_every` entries, labels on every `label_every`th, and now and then lines of
/// another writer (opaque lines, a repeated id, a blank line).
fn generated(count: u64, root_every: u64, label_every: u64) -> Vec<u8> {
    let dir = scratch_dir();
    let mut session =
        Session::create(dir.path(), "/work/campaign", SessionOptions::default()).expect("create");
    let path = session.log_path().to_path_buf();
    let mut ids: Vec<String> = Vec::new();
    let mut last_message: Option<String> = None;
    for n in 0..count {
        if n > 0 && n % root_every == 0 {
            session.reset_leaf();
        }
        let id = match n % 41 {
            3 => session
                .append_model_change("provider", &format!("model-{}", n % 5))
                .unwrap(),
            5 => session
                .append_thinking_level_change(["low", "high", "off"][n as usize % 3])
                .unwrap(),
            9 if !ids.is_empty() => session
                .append_label_change(&ids[(n as usize * 7) % ids.len()], None)
                .unwrap(),
            11 if ids.len() > 3 => {
                let kept = ids[ids.len() - 3].clone();
                session
                    .append_compaction(
                        &format!("summary {n}"),
                        Some(&kept),
                        "1234",
                        None,
                        None,
                        None,
                    )
                    .unwrap()
            }
            17 if !ids.is_empty() => {
                session.branch(&ids[(n as usize * 13) % ids.len()]).unwrap();
                session
                    .append_message(&message("user", &format!("branch {n}"), n))
                    .unwrap()
            }
            19 if !ids.is_empty() => {
                let from = ids[(n as usize * 11) % ids.len()].clone();
                session
                    .branch_with_summary(Some(&from), &format!("left {n}"), None, None, None)
                    .unwrap()
            }
            23 => session.append_session_info(&format!("name {n}")).unwrap(),
            29 => session
                .append_custom_entry("ext", Some(&format!("{{\"n\":{n}}}")))
                .unwrap(),
            31 => session
                .append_custom_message_entry("note", &format!("\"note {n}\""), true, None)
                .unwrap(),
            37 => match last_message.clone() {
                Some(target) if session.leaf_id().unwrap().is_some() => session
                    .append_context_edit(&target, Some(r#"{"content":"edited"}"#))
                    .unwrap_or_else(|_| session.append_message(&message("user", "x", n)).unwrap()),
                _ => session.append_message(&message("user", "x", n)).unwrap(),
            },
            _ => {
                let role = if n % 2 == 0 { "user" } else { "assistant" };
                let id = session
                    .append_message(&message(role, &format!("text {n} ✓ \"quoted\""), n))
                    .unwrap();
                last_message = Some(id.clone());
                id
            }
        };
        if n % label_every == 0 {
            session
                .append_label_change(&id, Some(&format!("mark {n}")))
                .unwrap();
        }
        ids.push(id);
        if n % 97 == 50 {
            let leaf = session.leaf_id().unwrap();
            let repeated = &ids[(n as usize * 3) % ids.len()];
            foreign_lines(
                &path,
                &[
                    "not json at all".to_string(),
                    "[1,2,3]".to_string(),
                    r#"{"type":"message","parentId":null}"#.to_string(),
                    String::new(),
                    json!({"type": "message", "id": repeated, "parentId": leaf,
                        "timestamp": "2025-06-01T00:00:00.000Z",
                        "message": {"role": "user", "content": format!("repeat {n}")}})
                    .to_string(),
                ],
            );
            session.refresh().unwrap();
        }
    }
    drop(session);
    deterministic(&std::fs::read(&path).unwrap())
}

/// The log with the ids and times an append draws (random ids, the clock) replaced by ones
/// that depend only on their order, so that a seed names the same damage in every run.
fn deterministic(log: &[u8]) -> Vec<u8> {
    let mut text = String::from_utf8(log.to_vec()).unwrap();
    let mut ids: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Ok(serde_json::Value::Object(object)) = serde_json::from_str(line)
            && let Some(id) = object.get("id").and_then(|id| id.as_str())
            && !ids.iter().any(|seen| seen == id)
        {
            ids.push(id.to_string());
        }
    }
    for (n, id) in ids.iter().enumerate() {
        let new = if n == 0 {
            "01942117-0000-7000-8000-00000000cafe".to_string()
        } else {
            format!("{:08x}", (n as u32).wrapping_mul(0x9e37_79b1))
        };
        text = text.replace(&format!("\"{id}\""), &format!("\"{new}\""));
    }
    // ISO times, in file order: one second apart.
    let shape = b"dddd-dd-ddTdd:dd:dd.dddZ";
    let mut bytes = text.into_bytes();
    let (mut at, mut second) = (0, 0u32);
    while at + shape.len() <= bytes.len() {
        let fits = shape
            .iter()
            .zip(&bytes[at..])
            .all(|(want, got)| match want {
                b'd' => got.is_ascii_digit(),
                other => other == got,
            });
        if fits {
            let time = format!(
                "2025-03-{:02}T{:02}:{:02}:{:02}.000Z",
                1 + second / 86_400,
                second / 3600 % 24,
                second / 60 % 60,
                second % 60
            );
            bytes[at..at + shape.len()].copy_from_slice(time.as_bytes());
            second += 1;
            at += shape.len();
        } else {
            at += 1;
        }
    }
    bytes
}

fn fixtures() -> Vec<Fixture> {
    let mut fixtures = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    names.sort();
    for path in names {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        fixtures.push(fixture(&name, std::fs::read(&path).unwrap()));
    }
    fixtures.push(fixture("generated-branches", generated(900, 300, 9)));
    fixtures.push(fixture("generated-roots", generated(450, 6, 2)));
    fixtures
}

/// What a trial reads, drawn for it from the replay.
#[derive(Clone, Debug)]
struct Plan {
    path_leaves: Vec<String>,
    branch_leaf: Option<String>,
    /// Ids for `entry`, `children` and `label`: present ones and absent ones.
    sample: Vec<String>,
    /// Walks longer than this are cut (a damaged index could loop): the replay's count + 1.
    walk_max: usize,
}

fn plan(fixture: &Fixture, rng: &mut Rng) -> Plan {
    let mut sample: Vec<String> = (0..10)
        .filter(|_| !fixture.ids.is_empty())
        .map(|_| rng.pick(&fixture.ids).clone())
        .collect();
    sample.push(format!("{:08x}", rng.next() as u32));
    sample.push("zzzzzzzz".into());
    sample.push("01942117-de87-799b-8989-18e992a947f3".into());
    Plan {
        path_leaves: (0..3)
            .filter(|_| !fixture.ids.is_empty())
            .map(|_| rng.pick(&fixture.ids).clone())
            .collect(),
        branch_leaf: (!fixture.tree_leaves.is_empty())
            .then(|| rng.pick(&fixture.tree_leaves).clone()),
        sample,
        walk_max: fixture.ids.len() + 1,
    }
}

/// Every answer of a session, as (what was read, its `Debug` text).
type Reads = Vec<(String, String)>;

fn put<T: Debug>(out: &mut Reads, what: &str, answer: treelog::Result<T>) -> Result<(), String> {
    match answer {
        Ok(value) => {
            out.push((what.to_string(), format!("{value:?}")));
            Ok(())
        }
        Err(error) => Err(format!("{what}: {error}")),
    }
}

/// The reads a command makes, in order; the first `Err` stops them and is returned with the
/// name of the read. First those of the whole session, then those of the plan's entries.
fn reads(session: &Session, plan: &Plan) -> Result<Reads, String> {
    let mut out = whole_session_reads(session, plan.walk_max)?;
    out.extend(sampled_reads(session, plan)?);
    Ok(out)
}

/// The reads that do not depend on the plan (the replay's are computed once per log).
fn whole_session_reads(session: &Session, walk_max: usize) -> Result<Reads, String> {
    let mut out: Reads = Vec::new();
    put(&mut out, "leaf_id", session.leaf_id())?;
    put(&mut out, "path_ids", session.path_ids(None))?;
    put(
        &mut out,
        "build_context",
        session.build_context(None).map(|context| context.to_json()),
    )?;
    put(&mut out, "context_entries", session.context_entries(None))?;
    put(&mut out, "labels", session.labels())?;
    put(&mut out, "session_name", session.session_name())?;
    // Walks are cut one past the replay's length: a damaged index could make them endless.
    put(
        &mut out,
        "tree",
        session.tree().and_then(|walk| {
            walk.take(walk_max)
                .collect::<treelog::Result<Vec<treelog::TreeNode>>>()
        }),
    )?;
    put(
        &mut out,
        "entries",
        session.entries().and_then(|entries| {
            entries
                .take(walk_max)
                .collect::<treelog::Result<Vec<treelog::Entry>>>()
        }),
    )?;
    put(&mut out, "entry_lines", session.entry_lines())?;
    put(&mut out, "entry_count", session.entry_count())?;
    Ok(out)
}

fn sampled_reads(session: &Session, plan: &Plan) -> Result<Reads, String> {
    let mut out: Reads = Vec::new();
    for id in &plan.path_leaves {
        put(&mut out, &format!("path({id})"), session.path(Some(id)))?;
    }
    if let Some(leaf) = &plan.branch_leaf {
        put(
            &mut out,
            &format!("build_context({leaf})"),
            session
                .build_context(Some(leaf))
                .map(|context| context.to_json()),
        )?;
        put(
            &mut out,
            &format!("context_entries({leaf})"),
            session.context_entries(Some(leaf)),
        )?;
    }
    for id in &plan.sample {
        put(&mut out, &format!("entry({id})"), session.entry(id))?;
        put(&mut out, &format!("children({id})"), session.children(id))?;
        put(&mut out, &format!("label({id})"), session.label(id))?;
    }
    Ok(out)
}

/// One open of the damaged copy and its reads.
#[derive(Debug)]
struct OpenRun {
    state_at_open: Option<IndexState>,
    state_after_reads: Option<IndexState>,
    reads: Result<Reads, String>,
}

fn open_and_read(path: &Path, plan: &Plan) -> OpenRun {
    match Session::open(path, SessionOptions::default()) {
        Err(error) => OpenRun {
            state_at_open: None,
            state_after_reads: None,
            reads: Err(format!("open: {error}")),
        },
        Ok(session) => {
            let state_at_open = Some(session.index_state().clone());
            let reads = reads(&session, plan);
            let state_after_reads = Some(session.index_state().clone());
            drop(session);
            OpenRun {
                state_at_open,
                state_after_reads,
                reads,
            }
        }
    }
}

/// What the trial thread reports.
enum Run {
    Done {
        first: OpenRun,
        second: OpenRun,
        log_kept: bool,
    },
    Panicked(String),
}

/// The damaged sidecar for `mode`, and a description of the damage.
fn damage(mode: Mode, fixture: &Fixture, others: &[&Fixture], rng: &mut Rng) -> (Vec<u8>, String) {
    let mut bytes = fixture.sidecar.clone();
    let len = bytes.len();
    let pages = len.div_ceil(PAGE).max(1);
    let page_range = |page: usize| page * PAGE..((page + 1) * PAGE).min(len);
    let described = match mode {
        Mode::BitFlip => {
            let (at, bit) = (rng.below(len), rng.below(8));
            bytes[at] ^= 1 << bit;
            format!("bit {bit} of byte {at} (page {})", at / PAGE)
        }
        Mode::Overwrite16 => {
            let at = rng.below(len.saturating_sub(16) + 1);
            let end = (at + 16).min(len);
            rng.fill(&mut bytes[at..end]);
            format!("bytes {at}..{end} (page {})", at / PAGE)
        }
        Mode::ZeroPage => {
            let page = rng.below(pages);
            bytes[page_range(page)].fill(0);
            format!("page {page} of {pages} zeroed")
        }
        Mode::RandomPage => {
            let page = rng.below(pages);
            rng.fill(&mut bytes[page_range(page)]);
            format!("page {page} of {pages} random")
        }
        Mode::CopiedPage => {
            let to = rng.below(pages);
            let from = (to + 1 + rng.below(pages.max(2) - 1)) % pages;
            let source = fixture.sidecar[page_range(from)].to_vec();
            let target = page_range(to);
            let n = source.len().min(target.len());
            bytes[target.start..target.start + n].copy_from_slice(&source[..n]);
            format!("page {to} of {pages} overwritten by page {from}")
        }
        Mode::Truncated => {
            let at = rng.below(len);
            bytes.truncate(at);
            format!("cut at {at} of {len} bytes")
        }
        Mode::Foreign => {
            let schema7 = data_dir().join("pi16-sample-300.schema7.treelog");
            if fixture.name == "pi16-sample-300.jsonl" && rng.below(3) == 0 {
                bytes = std::fs::read(schema7).unwrap();
                "a sidecar of schema 7 for this log".into()
            } else {
                let other = rng.pick(others);
                bytes = other.sidecar.clone();
                format!("the sidecar of {}", other.name)
            }
        }
        Mode::OldState => unreachable!("built on the trial's own file"),
    };
    (bytes, described)
}

/// Writes the trial's files into `dir`: the log and its damaged sidecar, or for `OldState`, a
/// prefix of the log, its sidecar built by an open, then the rest appended as another writer
/// appends (`O_APPEND`, whole lines).
fn lay_out(
    dir: &Path,
    mode: Mode,
    fixture: &Fixture,
    others: &[&Fixture],
    rng: &mut Rng,
) -> (PathBuf, String) {
    let path = dir.join("session.jsonl");
    if mode == Mode::OldState {
        // An earlier state: any line end but the last (at least the header).
        let ends = &fixture.line_ends[..fixture.line_ends.len() - 1];
        let cut = *rng.pick(ends);
        std::fs::write(&path, &fixture.log[..cut]).unwrap();
        drop(Session::open(&path, SessionOptions::default()).expect("build the old sidecar"));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(&fixture.log[cut..]).unwrap();
        let described = format!(
            "sidecar of the first {cut} of {} bytes, the rest appended",
            fixture.log.len()
        );
        return (path, described);
    }
    let (sidecar, described) = damage(mode, fixture, others, rng);
    std::fs::write(&path, fixture.log.as_slice()).unwrap();
    std::fs::write(sidecar_path(&path), sidecar).unwrap();
    (path, described)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Right,
    Rebuilt,
    Error,
    Wrong,
    Hang,
    Panic,
}

#[derive(Default)]
struct Tally {
    trials: u64,
    counts: BTreeMap<Class, u64>,
    caught_panics: u64,
    /// Failed trials whose second open failed too.
    sticky: u64,
    /// The first failures of each class, for the report.
    examples: Vec<String>,
}

impl Tally {
    fn get(&self, class: Class) -> u64 {
        self.counts.get(&class).copied().unwrap_or(0)
    }
}

/// Panics seen by the hook while the campaign runs (on any thread), and the last message.
static PANICS: AtomicU64 = AtomicU64::new(0);
static CAMPAIGN_RUNNING: AtomicBool = AtomicBool::new(false);
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Counts panics instead of printing them while the campaign runs; otherwise (the test's own
/// assertions) the previous hook prints as usual.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CAMPAIGN_RUNNING.load(Ordering::SeqCst) {
                PANICS.fetch_add(1, Ordering::SeqCst);
                *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = info.to_string();
                // One trial replayed (TREELOG_DAMAGE_ONLY=MODE:TRIAL): show every panic.
                if std::env::var("TREELOG_DAMAGE_ONLY").is_ok_and(|only| only.contains(':')) {
                    previous(info);
                }
            } else {
                previous(info);
            }
        }));
    });
}

fn is_rebuilt(state: &Option<IndexState>) -> bool {
    matches!(
        state,
        Some(IndexState::Rebuilt { .. } | IndexState::Unindexed { .. })
    )
}

/// The first read whose answer differs, both answers shown around their first difference.
fn first_difference(got: &Reads, expected: &Reads) -> Option<String> {
    let around = |text: &str, at: usize| -> String {
        let mut start = at.saturating_sub(120);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + 180).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        format!("…{}…", &text[start..end])
    };
    for (index, (what, answer)) in expected.iter().enumerate() {
        match got.get(index) {
            Some((got_what, got_answer)) if got_what == what && got_answer == answer => {}
            Some((_, got_answer)) => {
                let at = got_answer
                    .bytes()
                    .zip(answer.bytes())
                    .position(|(a, b)| a != b)
                    .unwrap_or(got_answer.len().min(answer.len()));
                return Some(format!(
                    "{what}: got {} expected {}",
                    around(got_answer, at),
                    around(answer, at)
                ));
            }
            None => return Some(format!("{what}: missing")),
        }
    }
    (got.len() != expected.len()).then(|| "more reads than expected".into())
}

/// The class of a trial, what went wrong, and whether the second open still failed (an error
/// or a wrong answer that stays until the sidecar is deleted).
fn classify(run: Option<Run>, expected: &Reads) -> (Class, String, bool) {
    let Some(run) = run else {
        return (
            Class::Hang,
            format!("no answer in {TRIAL_TIMEOUT:?}"),
            false,
        );
    };
    let (first, second, log_kept) = match run {
        Run::Panicked(message) => return (Class::Panic, message, false),
        Run::Done {
            first,
            second,
            log_kept,
        } => (first, second, log_kept),
    };
    if !log_kept {
        return (Class::Wrong, "the log was changed".into(), false);
    }
    let judge = |which: &str, open: &OpenRun| -> Option<(Class, String)> {
        match &open.reads {
            Ok(got) => first_difference(got, expected).map(|difference| {
                (
                    Class::Wrong,
                    format!(
                        "{which} ({:?} / {:?}): {difference}",
                        open.state_at_open, open.state_after_reads
                    ),
                )
            }),
            Err(message) => Some((
                Class::Error,
                format!("{which} ({:?}): {message}", open.state_at_open),
            )),
        }
    };
    let (in_first, in_second) = (judge("first open", &first), judge("second open", &second));
    let sticky = in_second.is_some();
    // A wrong answer in either open outweighs an error in the other.
    let worst = match (in_first, in_second) {
        (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
        (a, b) => a.or(b),
    };
    if let Some((class, detail)) = worst {
        return (class, detail, sticky);
    }
    if is_rebuilt(&first.state_at_open) || is_rebuilt(&first.state_after_reads) {
        (
            Class::Rebuilt,
            format!("{:?}", first.state_after_reads),
            false,
        )
    } else {
        (Class::Right, String::new(), false)
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|value| {
        let value = value.trim();
        match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => value.parse().ok(),
        }
    })
}

/// Runs one trial on its own thread; `None` if it did not finish in time (the thread is left
/// behind, and so is its directory).
fn run_trial(dir: tempfile::TempDir, path: PathBuf, plan: Plan, log: Arc<Vec<u8>>) -> Option<Run> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("damage trial".into())
        .stack_size(8 << 20)
        .spawn(move || {
            let run = panic::catch_unwind(AssertUnwindSafe(|| {
                let first = open_and_read(&path, &plan);
                let second = open_and_read(&path, &plan);
                let log_kept = std::fs::read(&path).is_ok_and(|bytes| bytes == *log);
                Run::Done {
                    first,
                    second,
                    log_kept,
                }
            }))
            .unwrap_or_else(|payload| {
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                Run::Panicked(format!(
                    "{message} ({})",
                    LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner())
                ))
            });
            let _ = send.send(run);
            drop(dir);
        })
        .expect("spawn a trial thread");
    receive.recv_timeout(TRIAL_TIMEOUT).ok()
}

/// The campaign's settings, from the environment.
struct Config {
    trials: usize,
    seed: u64,
    report_only: bool,
    /// `TREELOG_DAMAGE_ONLY`: one mode, or one trial of it (every failure then printed).
    only: Option<(Mode, Option<usize>)>,
}

impl Config {
    fn from_env() -> Config {
        let only = std::env::var("TREELOG_DAMAGE_ONLY").ok().map(|only| {
            let (mode, trial) = match only.split_once(':') {
                Some((mode, trial)) => (
                    mode.to_string(),
                    Some(
                        trial
                            .parse::<usize>()
                            .expect("TREELOG_DAMAGE_ONLY=MODE:TRIAL"),
                    ),
                ),
                None => (only.clone(), None),
            };
            let mode = MODES
                .into_iter()
                .find(|m| m.name() == mode)
                .unwrap_or_else(|| panic!("no damage mode {mode}"));
            (mode, trial)
        });
        Config {
            trials: env_number("TREELOG_DAMAGE_TRIALS").unwrap_or(TRIALS_DEFAULT as u64) as usize,
            seed: env_number("TREELOG_DAMAGE_SEED").unwrap_or(SEED_DEFAULT),
            report_only: std::env::var("TREELOG_DAMAGE_REPORT_ONLY").is_ok_and(|v| v != "0"),
            only,
        }
    }

    /// Every trial of the campaign, in the order they run: (mode, trial number).
    fn positions(&self) -> Vec<(Mode, usize)> {
        MODES
            .into_iter()
            .filter(|mode| self.only.is_none_or(|(only, _)| only == *mode))
            .flat_map(|mode| (0..self.trials).map(move |trial| (mode, trial)))
            .filter(|(_, trial)| {
                self.only
                    .is_none_or(|(_, only)| only.is_none_or(|only| only == *trial))
            })
            .collect()
    }
}

/// What a worker reports for one trial, one line on its stdout.
const RESULT_PREFIX: &str = "@@damage-trial";

/// The worker: builds the logs, runs the trials from position `start` on, printing one result
/// line each. After a hang it exits at once (the stuck thread cannot be stopped), and the
/// test starts a new worker at the next trial.
fn worker(config: &Config, start: usize) {
    let started = Instant::now();
    let fixtures = fixtures();
    println!(
        "damage campaign: {} logs ({}), built in {:.1}s",
        fixtures.len(),
        fixtures
            .iter()
            .map(|f| format!("{}: {} entries", f.name, f.ids.len()))
            .collect::<Vec<_>>()
            .join(", "),
        started.elapsed().as_secs_f64()
    );
    install_panic_hook();
    for (position, (mode, trial)) in config.positions().into_iter().enumerate().skip(start) {
        let mode_index = MODES.iter().position(|m| *m == mode).unwrap() as u64;
        let trial_seed = Rng(config.seed ^ (mode_index << 40) ^ trial as u64).next();
        let mut rng = Rng(trial_seed);
        let fixture = &fixtures[trial % fixtures.len()];
        let others: Vec<&Fixture> = fixtures
            .iter()
            .filter(|other| other.name != fixture.name)
            .collect();
        let dir = scratch_dir();
        let (path, described) = lay_out(dir.path(), mode, fixture, &others, &mut rng);
        let plan = plan(fixture, &mut rng);
        let mut expected = fixture.expected_whole.clone();
        expected.extend(sampled_reads(&fixture.replay, &plan).expect("the replay answers"));

        let trial_started = Instant::now();
        CAMPAIGN_RUNNING.store(true, Ordering::SeqCst);
        let panics_before = PANICS.load(Ordering::SeqCst);
        let run = run_trial(dir, path, plan, Arc::clone(&fixture.log));
        let panics = PANICS.load(Ordering::SeqCst) - panics_before;
        CAMPAIGN_RUNNING.store(false, Ordering::SeqCst);

        let (class, detail, sticky) = classify(run, &expected);
        let caught = panics.saturating_sub(u64::from(class == Class::Panic));
        let detail = format!(
            "{} trial {trial} (seed {trial_seed:#x}; TREELOG_DAMAGE_SEED={:#x} \
             TREELOG_DAMAGE_ONLY={}:{trial}): {}: {described}: {detail}",
            mode.name(),
            config.seed,
            mode.name(),
            fixture.name
        )
        .replace('\n', " ");
        println!(
            "{RESULT_PREFIX}\t{position}\t{class:?}\t{caught}\t{}\t{}\t{detail}",
            trial_started.elapsed().as_millis(),
            u8::from(sticky)
        );
        let _ = std::io::stdout().flush();
        if class == Class::Hang {
            std::process::exit(0);
        }
    }
}

/// One trial's result, as the test reads it from a worker.
struct TrialResult {
    class: Class,
    caught: u64,
    /// The second open failed too.
    sticky: bool,
    millis: u64,
    detail: String,
}

fn parse_result(line: &str) -> Option<(usize, TrialResult)> {
    let mut fields = line
        .strip_prefix(RESULT_PREFIX)?
        .trim_start()
        .splitn(6, '\t');
    let position = fields.next()?.parse().ok()?;
    let class = match fields.next()? {
        "Right" => Class::Right,
        "Rebuilt" => Class::Rebuilt,
        "Error" => Class::Error,
        "Wrong" => Class::Wrong,
        "Hang" => Class::Hang,
        "Panic" => Class::Panic,
        _ => return None,
    };
    let caught = fields.next()?.parse().ok()?;
    let millis = fields.next()?.parse().ok()?;
    let sticky = fields.next()? == "1";
    let detail = fields.next()?.to_string();
    Some((
        position,
        TrialResult {
            class,
            caught,
            sticky,
            millis,
            detail,
        },
    ))
}

/// The campaign test's name as the test harness knows it: its module path inside the test
/// binary, without the crate's name (`damage_campaign::damaged_sidecars_answer_as_the_log`).
fn campaign_test_name() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    if module.is_empty() {
        "damaged_sidecars_answer_as_the_log".to_owned()
    } else {
        format!("{module}::damaged_sidecars_answer_as_the_log")
    }
}

/// Runs workers (this test binary, again, with `TREELOG_DAMAGE_WORKER=START`) until every
/// trial has a result. A worker that dies without reporting a trial (a crash, an abort)
/// counts that trial as a panic; one that is silent for too long is killed and its trial
/// counted as a hang.
fn run_workers(config: &Config) -> Vec<TrialResult> {
    use std::io::BufRead;
    let total = config.positions().len();
    let mut results: Vec<Option<TrialResult>> = (0..total).map(|_| None).collect();
    let mut next = 0;
    let mut announced = false;
    while next < total {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                campaign_test_name().as_str(),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TREELOG_DAMAGE_WORKER", next.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start a campaign worker");
        let (send, receive) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = child.stderr.take().unwrap();
        let stderr_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut text);
            text
        });
        // A worker builds its logs first: allow for that before its first result.
        let mut silence_max = TRIAL_TIMEOUT * 3 + Duration::from_secs(120);
        let mut killed = false;
        loop {
            match receive.recv_timeout(silence_max) {
                Ok(line) => {
                    if let Some((position, result)) = parse_result(&line) {
                        results[position] = Some(result);
                        next = position + 1;
                        silence_max = TRIAL_TIMEOUT * 3;
                    } else if line.starts_with("damage campaign:") && !announced {
                        println!("{line}");
                        announced = true;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    killed = true;
                    break;
                }
            }
        }
        let status = child.wait().expect("reap the worker");
        let stderr = stderr_reader.join().unwrap_or_default();
        if next < total && results[next].is_none() && (killed || !status.success()) {
            let class = if killed { Class::Hang } else { Class::Panic };
            let lines: Vec<&str> = stderr.lines().collect();
            let tail = lines[lines.len().saturating_sub(12)..].join(" | ");
            let (mode, trial) = config.positions()[next];
            results[next] = Some(TrialResult {
                class,
                caught: 0,
                sticky: false,
                millis: 0,
                detail: format!(
                    "{} trial {trial} (TREELOG_DAMAGE_SEED={:#x} TREELOG_DAMAGE_ONLY={}:{trial}): \
                     the worker died ({status}): {tail}",
                    mode.name(),
                    config.seed,
                    mode.name()
                ),
            });
            next += 1;
        } else if next < total && results[next].is_none() && status.success() {
            // A worker that stopped after a hang: continue after it.
            assert!(
                next > 0 && results[next - 1].is_some(),
                "a worker exited without running a trial: {stderr}"
            );
        }
    }
    results.into_iter().map(Option::unwrap).collect()
}

#[test]
fn damaged_sidecars_answer_as_the_log() {
    let config = Config::from_env();
    if let Some(start) = env_number("TREELOG_DAMAGE_WORKER") {
        worker(&config, start as usize);
        return;
    }
    let started = Instant::now();
    println!(
        "damage campaign: seed {:#x}, {} trials per mode (TREELOG_DAMAGE_TRIALS)",
        config.seed, config.trials
    );
    let results = run_workers(&config);
    let mut tallies: BTreeMap<Mode, Tally> = BTreeMap::new();
    let mut millis: BTreeMap<Mode, u64> = BTreeMap::new();
    for ((mode, _), result) in config.positions().into_iter().zip(results) {
        let tally = tallies.entry(mode).or_default();
        tally.trials += 1;
        *tally.counts.entry(result.class).or_default() += 1;
        tally.caught_panics += result.caught;
        tally.sticky += u64::from(result.sticky);
        *millis.entry(mode).or_default() += result.millis;
        let failed = matches!(
            result.class,
            Class::Error | Class::Wrong | Class::Hang | Class::Panic
        );
        // The first two failures of each class, or all of them for one mode.
        let shown = tally
            .examples
            .iter()
            .filter(|example| example.starts_with(&format!("{:?}:", result.class)))
            .count();
        if failed && (shown < 2 || config.only.is_some()) {
            tally
                .examples
                .push(format!("{:?}: {}", result.class, result.detail));
        }
    }

    println!(
        "{:<13} {:>6} {:>6} {:>7} {:>6} {:>6} {:>5} {:>6} {:>6} {:>6} {:>8}",
        "mode",
        "trials",
        "right",
        "rebuilt",
        "errors",
        "wrong",
        "hangs",
        "panics",
        "caught",
        "sticky",
        "time"
    );
    let mut totals = [0u64; 10];
    for (mode, tally) in &tallies {
        let row = [
            tally.trials,
            tally.get(Class::Right),
            tally.get(Class::Rebuilt),
            tally.get(Class::Error),
            tally.get(Class::Wrong),
            tally.get(Class::Hang),
            tally.get(Class::Panic),
            tally.caught_panics,
            tally.sticky,
            millis[mode],
        ];
        for (total, value) in totals.iter_mut().zip(row) {
            *total += value;
        }
        print_row(mode.name(), &row);
    }
    print_row("total", &totals);
    for tally in tallies.values() {
        for example in &tally.examples {
            println!("  {example}");
        }
    }
    println!(
        "damage campaign: {:.1}s in all (the time column: the trials' own, without setup)",
        started.elapsed().as_secs_f64()
    );
    let failures = totals[3] + totals[4] + totals[5] + totals[6];
    if config.report_only {
        println!(
            "damage campaign: report only (TREELOG_DAMAGE_REPORT_ONLY), {failures} failed trials"
        );
        return;
    }
    assert!(
        failures == 0,
        "{failures} of {} trials failed: {} errors, {} wrong, {} hangs, {} panics (seed {:#x}; \
         the first failures of each mode are printed above with --nocapture)",
        totals[0],
        totals[3],
        totals[4],
        totals[5],
        totals[6],
        config.seed
    );
}

fn print_row(name: &str, row: &[u64; 10]) {
    println!(
        "{:<13} {:>6} {:>6} {:>7} {:>6} {:>6} {:>5} {:>6} {:>6} {:>6} {:>7.1}s",
        name,
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        row[9] as f64 / 1000.0
    );
}
