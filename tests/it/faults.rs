//! Fault injection below the session: failed and short writes, failed syncs, a full disk, and
//! machine crashes that lose every byte not made durable by a sync (the model of redb's
//! `crash_consistency` test).
//!
//! [`FaultyStorage`] keeps the bytes *written* (what a process crash leaves behind: the page
//! cache survives) apart from the bytes *durable* (what a machine crash leaves behind: the
//! prefix as of the last successful sync). Each scenario runs a seeded script of appends of
//! every entry type, injects one fault, checks that the handle is poisoned, then opens crash
//! images on a fresh storage and checks the promises documented on `Durability`:
//!
//! - every id acknowledged before the crash that the policy promises is present, byte for byte;
//! - the entries are exactly the complete lines of the image that are entries (a torn tail
//!   never is one; a last line cut just before its `\n` is one);
//! - the next append after reopening lands on a line of its own (it is never glued to a torn
//!   tail or to a last line without its `\n`), and everything before it is unchanged.
//!
//! Run with `--nocapture` to see how many scenarios and faults were exercised.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::value::RawValue;
use treelog::storage::{FileIdentity, LogStorage, read_bytes_at};
use treelog::{Durability, Error, NewEntry, Session, SessionOptions};
use treelog_testkit::rng::Rng;

// ---- the fault-injecting storage ----

/// Which faults to inject. Counters are 0-based: `fail_write: Some((0, _))` fails the first
/// write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Plan {
    /// Syncs after this many successful ones report success but make nothing durable: the
    /// machine lost power there while the process carried on, unaware.
    durable_syncs_max: Option<u64>,
    /// The nth write fails after writing the first `prefix_len` bytes of it (a short write).
    fail_write: Option<(u64, usize)>,
    /// The nth sync fails; what was written since the last good sync is not durable.
    fail_sync: Option<u64>,
    /// The disk holds this many bytes of log; a write past it writes what fits, then fails
    /// with ENOSPC.
    capacity_bytes: Option<usize>,
}

/// The state of the simulated disk, shared with the test so that it can be inspected after the
/// session is dropped.
#[derive(Debug, Default)]
struct Disk {
    /// Every byte written: what a process crash leaves.
    written: Vec<u8>,
    /// `written[..durable_len]` is what a machine crash leaves.
    durable_len: usize,
    writes: u64,
    /// Length of each write attempted, in order.
    write_lens: Vec<usize>,
    syncs: u64,
    plan: Plan,
    /// Faults that fired (a failed write, sync or full disk, or the power loss).
    faults_fired: u64,
    /// The machine lost power (a sync past `durable_syncs_max` was called).
    power_lost: bool,
}

impl Disk {
    fn with(bytes: Vec<u8>, plan: Plan) -> Arc<Mutex<Disk>> {
        Arc::new(Mutex::new(Disk {
            durable_len: bytes.len(),
            written: bytes,
            plan,
            ..Disk::default()
        }))
    }
}

struct FaultyStorage {
    disk: Arc<Mutex<Disk>>,
}

impl FaultyStorage {
    fn disk(&self) -> MutexGuard<'_, Disk> {
        self.disk
            .lock()
            .expect("no test thread panicked holding the disk")
    }
}

impl LogStorage for FaultyStorage {
    fn path(&self) -> &Path {
        Path::new("/faulty/session.jsonl")
    }

    fn identity(&self) -> io::Result<FileIdentity> {
        Ok(FileIdentity {
            len_bytes: self.disk().written.len() as u64,
            ..FileIdentity::default()
        })
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        Ok(read_bytes_at(&self.disk().written, offset, buf))
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        let mut disk = self.disk();
        let nth = disk.writes;
        disk.writes += 1;
        disk.write_lens.push(bytes.len());
        if let Some((fail_at, prefix_len)) = disk.plan.fail_write
            && fail_at == nth
        {
            disk.faults_fired += 1;
            disk.written
                .extend_from_slice(&bytes[..prefix_len.min(bytes.len())]);
            return Err(io::Error::other("injected write failure"));
        }
        if let Some(capacity) = disk.plan.capacity_bytes {
            let room = capacity.saturating_sub(disk.written.len());
            if bytes.len() > room {
                disk.faults_fired += 1;
                disk.written.extend_from_slice(&bytes[..room]);
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "injected ENOSPC: no space left on device",
                ));
            }
        }
        disk.written.extend_from_slice(bytes);
        Ok(disk.written.len() as u64)
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut disk = self.disk();
        let nth = disk.syncs;
        disk.syncs += 1;
        if disk.plan.fail_sync == Some(nth) {
            disk.faults_fired += 1;
            return Err(io::Error::other("injected fsync failure"));
        }
        if disk.plan.durable_syncs_max.is_some_and(|max| nth >= max) {
            if !disk.power_lost {
                disk.faults_fired += 1;
            }
            disk.power_lost = true;
        }
        if !disk.power_lost {
            disk.durable_len = disk.written.len();
        }
        Ok(())
    }

    fn lock(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn unlock(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn open_on(disk: &Arc<Mutex<Disk>>, durability: Durability) -> Session {
    let storage = FaultyStorage {
        disk: Arc::clone(disk),
    };
    let options = SessionOptions {
        durability,
        ..SessionOptions::default()
    };
    match Session::open_storage(Box::new(storage), options) {
        Ok(session) => session,
        Err(error) => panic!("opening a crash image failed: {error}"),
    }
}

// ---- a seeded script of appends ----

/// An append whose call returned `Ok`.
#[derive(Clone, Debug)]
struct Acked {
    id: String,
    /// The entry's line as found at the end of the written bytes when the append returned.
    line: Vec<u8>,
    /// The machine had not lost power yet when the append returned.
    before_crash: bool,
}

/// What a script left: the acknowledged appends and the error of the append that hit the fault.
struct Run {
    acked: Vec<Acked>,
    failure: Option<Error>,
}

fn message(rng: &mut Rng, step: usize) -> String {
    let text = match rng.below(5) {
        0 => format!("step {step}"),
        1 => "é\u{2028}\\n \\\"quoted\\\" 🦀".to_string(),
        2 => "x".repeat(1 + rng.below(5000)),
        3 => format!("line one\\nline two {step}"),
        _ => String::new(),
    };
    if rng.below(2) == 0 {
        format!(r#"{{"role":"user","content":"{text}","timestamp":{step}}}"#)
    } else {
        // Raw line breaks between tokens are legal JSON; the writer flattens them.
        format!(
            "{{\"role\":\"assistant\",\n\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"provider\":\"p\",\"model\":\"m{}\",\"timestamp\":{step}}}",
            rng.below(3)
        )
    }
}

/// One random operation that appends one entry. Label, branch and compaction targets are
/// picked among acknowledged ids.
fn append_one(
    session: &mut Session,
    rng: &mut Rng,
    step: usize,
    ids: &[String],
) -> Result<String, Error> {
    let any_id = |rng: &mut Rng| (!ids.is_empty()).then(|| rng.pick(ids).clone());
    match rng.below(12) {
        0 => session.append_thinking_level_change(rng.pick::<&str>(&["off", "low", "high"])),
        1 => session.append_model_change("p", rng.pick::<&str>(&["m1", "m2"])),
        2 => session.append_custom_entry("ext", *rng.pick(&[None, Some(r#"{"k":[1,2]}"#)])),
        3 => session.append_custom_message_entry("ext", r#""shown""#, rng.below(2) == 0, None),
        4 => match any_id(rng) {
            Some(target) => {
                session.append_label_change(&target, *rng.pick(&[Some("bookmark"), None]))
            }
            None => session.append_session_info("first"),
        },
        5 => session.append_session_info(rng.pick::<&str>(&["name", "  padded  ", ""])),
        6 => {
            let from = any_id(rng);
            session.branch_with_summary(
                from.as_deref(),
                "summary of the abandoned branch",
                None,
                None,
                None,
            )
        }
        7 => {
            let path = session.path_ids(None)?;
            match path.get(path.len() / 2) {
                Some(first_kept) => session.append_compaction(
                    "compacted",
                    Some(first_kept),
                    "1234",
                    Some("{}"),
                    Some(false),
                    None,
                ),
                None => session.append_message(&message(rng, step)),
            }
        }
        8 => {
            if let Some(id) = any_id(rng) {
                session.branch(&id)?;
            }
            session.append_message(&message(rng, step))
        }
        _ => session.append_message(&message(rng, step)),
    }
}

/// Runs `steps` appends (or until one fails) on a session over `disk`. After a failure, checks
/// that the handle refuses every further write and writes nothing more.
fn run_script(disk: &Arc<Mutex<Disk>>, durability: Durability, seed: u64, steps: usize) -> Run {
    let mut rng = Rng(seed);
    let mut session = open_on(disk, durability);
    let mut acked: Vec<Acked> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for step in 0..steps {
        let appended = if rng.below(8) == 0 {
            // A batch: one write, at most one fsync, one id per entry.
            let batch: Vec<NewEntry> = (0..1 + rng.below(4))
                .map(|index| NewEntry::Message {
                    message: RawValue::from_string(message(&mut rng, step * 10 + index))
                        .expect("test messages are JSON"),
                })
                .collect();
            session.append_many(batch)
        } else {
            append_one(&mut session, &mut rng, step, &ids).map(|id| vec![id])
        };
        match appended {
            Ok(new_ids) => {
                let disk = disk.lock().expect("disk lock");
                let lines: Vec<&[u8]> = disk.written[..disk.written.len() - 1]
                    .split(|byte| *byte == b'\n')
                    .collect();
                let lines = &lines[lines.len() - new_ids.len()..];
                for (id, line) in new_ids.into_iter().zip(lines) {
                    assert!(
                        contains(line, format!("\"id\":\"{id}\"").as_bytes()),
                        "seed {seed}: the line written for entry {id} is {}",
                        String::from_utf8_lossy(line)
                    );
                    acked.push(Acked {
                        id: id.clone(),
                        line: line.to_vec(),
                        before_crash: !disk.power_lost,
                    });
                    ids.push(id);
                }
            }
            Err(error) => {
                assert!(
                    matches!(error, Error::Io { .. }),
                    "seed {seed}: the fault should surface as an I/O error, got {error:?}"
                );
                assert_poisoned(&mut session, disk, seed);
                return Run {
                    acked,
                    failure: Some(error),
                };
            }
        }
    }
    Run {
        acked,
        failure: None,
    }
}

/// After a failed write or sync the handle refuses appends and syncs, and writes nothing.
fn assert_poisoned(session: &mut Session, disk: &Arc<Mutex<Disk>>, seed: u64) {
    let before = disk.lock().expect("disk lock").written.clone();
    let appended =
        session.append_message(r#"{"role":"user","content":"after the fault","timestamp":0}"#);
    assert!(
        matches!(appended, Err(Error::Poisoned { .. })),
        "seed {seed}: an append after a failed write or sync must be refused, got {appended:?}"
    );
    let synced = session.sync();
    assert!(
        matches!(synced, Err(Error::Poisoned { .. })),
        "seed {seed}: a sync after a failed write or sync must be refused, got {synced:?}"
    );
    let labelled = session.append_session_info("x");
    assert!(
        matches!(labelled, Err(Error::Poisoned { .. })),
        "seed {seed}: every kind of append is refused, got {labelled:?}"
    );
    assert_eq!(
        disk.lock().expect("disk lock").written,
        before,
        "seed {seed}: a poisoned handle wrote bytes"
    );
}

// ---- checking a crash image ----

fn last_line(bytes: &[u8]) -> &[u8] {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    match body.iter().rposition(|byte| *byte == b'\n') {
        Some(at) => &body[at + 1..],
        None => body,
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The entries of a log as an independent reading sees them: every line that is a JSON object
/// with a string `type` other than `session` and a string `id` (our writer writes nothing else
/// that is valid JSON), the bytes after the last `\n` included: as pi reads them, they are an
/// entry when they are whole JSON, and a torn tail otherwise.
fn oracle_entries(image: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut entries = Vec::new();
    for line in image.split(|byte| *byte == b'\n') {
        let Ok(serde_json::Value::Object(object)) = serde_json::from_slice(line) else {
            continue;
        };
        let kind = object.get("type").and_then(|value| value.as_str());
        let id = object.get("id").and_then(|value| value.as_str());
        if let (Some(kind), Some(id)) = (kind, id)
            && kind != "session"
        {
            entries.push((id.to_string(), line.to_vec()));
        }
    }
    entries
}

fn session_entries(session: &Session) -> Vec<(String, Vec<u8>)> {
    session
        .entries()
        .expect("entries")
        .map(|entry| {
            let entry = entry.expect("entry");
            (entry.id, entry.json.into_bytes())
        })
        .collect()
}

/// The length of the torn tail of `image`: the bytes after its last `\n`, unless they are
/// whole JSON (a last line without its `\n`, which is read as a line).
fn torn_len(image: &[u8]) -> usize {
    let tail = &image[image
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1)..];
    if serde_json::from_slice::<serde::de::IgnoredAny>(tail).is_ok() {
        0
    } else {
        tail.len()
    }
}

/// Whether the first line of `image` that parses as JSON (pi's `entries[0]`) exists and is
/// not a session header.
fn first_json_is_no_header(image: &[u8]) -> bool {
    let first = image
        .split(|byte| *byte == b'\n')
        .find_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok());
    first.is_some_and(|value| value["type"] != "session" || !value["id"].is_string())
}

/// Opens `image` as a crash left it and checks every promise; returns the torn tail's length.
fn check_image(image: &[u8], required: &[&Acked], what: &str) -> usize {
    let torn_len = torn_len(image);
    let disk = Disk::with(image.to_vec(), Plan::default());
    let mut session = open_on(&disk, Durability::EveryAppend);
    let expected = oracle_entries(image);
    assert_eq!(
        session_entries(&session),
        expected,
        "{what}: the entries after reopening are not the complete entry lines of the image"
    );
    for acked in required {
        let entry = session.entry(&acked.id).expect("lookup");
        assert_eq!(
            entry.map(|entry| entry.json.into_bytes()),
            Some(acked.line.clone()),
            "{what}: acknowledged entry {} is lost or changed",
            acked.id
        );
    }
    let stats = session.stats().expect("stats");
    assert_eq!(
        stats.torn_tail_bytes, torn_len as u64,
        "{what}: torn tail length"
    );

    // The next append is a line of its own, and nothing before it changes; unless the first
    // line of the image that is JSON is no header (a machine crash zeroed the header, its
    // entries survived): pi would not read an entry appended then, and the append is
    // refused, nothing written (format-spec/log.md §2).
    let appended =
        session.append_message(r#"{"role":"user","content":"after the crash","timestamp":9}"#);
    if first_json_is_no_header(image) {
        let error = appended.expect_err(what);
        assert!(
            matches!(error, treelog::Error::AppendRefused { .. }),
            "{what}: {error}"
        );
        drop(session);
        assert_eq!(
            disk.lock().expect("disk lock").written,
            image,
            "{what}: a refused append wrote"
        );
        return torn_len;
    }
    let next = appended
        .unwrap_or_else(|error| panic!("{what}: appending after reopening failed: {error}"));
    drop(session);
    let after = disk.lock().expect("disk lock").written.clone();
    assert_eq!(
        &after[..image.len()],
        image,
        "{what}: reopening changed existing bytes"
    );
    let next_line = last_line(&after).to_vec();
    assert!(
        next_line.starts_with(b"{\"type\":\"message\"") && after.ends_with(b"\n"),
        "{what}: the append after reopening is glued to the torn tail: {:?}",
        String::from_utf8_lossy(&after[image.len()..])
    );
    let reopened = open_on(
        &Disk::with(after.clone(), Plan::default()),
        Durability::None,
    );
    let entries = session_entries(&reopened);
    assert_eq!(
        entries,
        oracle_entries(&after),
        "{what}: entries after the next append"
    );
    assert_eq!(
        entries.last(),
        Some(&(next, next_line)),
        "{what}: the next append is not the last entry"
    );
    for acked in required {
        assert!(
            entries
                .iter()
                .any(|(id, line)| *id == acked.id && *line == acked.line),
            "{what}: acknowledged entry {} lost after the next append",
            acked.id
        );
    }
    torn_len
}

/// Machine-crash images: the durable prefix plus some of the bytes the kernel may have written
/// back (none, all, a random prefix, and a random prefix whose middle reads as zeros).
fn machine_crash_images(disk: &Disk, rng: &mut Rng) -> Vec<Vec<u8>> {
    let durable = &disk.written[..disk.durable_len];
    let rest = &disk.written[disk.durable_len..];
    let mut images = vec![durable.to_vec()];
    if !rest.is_empty() {
        images.push(disk.written.clone());
        let cut = rng.below(rest.len() + 1);
        images.push([durable, &rest[..cut]].concat());
        let mut holed = [durable, &rest[..cut]].concat();
        let hole_start = disk.durable_len + rng.below(cut + 1);
        let hole_end = hole_start + rng.below(holed.len() - hole_start + 1);
        holed[hole_start..hole_end].fill(0);
        images.push(holed);
    }
    images
}

// ---- scenarios ----

#[derive(Default)]
struct Tally {
    scenarios: u64,
    faults: u64,
    images: u64,
    torn_tails: u64,
}

impl Tally {
    fn image(&mut self, torn_len: usize) {
        self.images += 1;
        if torn_len > 0 {
            self.torn_tails += 1;
        }
    }

    fn report(&self, name: &str) {
        println!(
            "{name}: {} scenarios, {} faults injected, {} crash images reopened, {} with a torn tail",
            self.scenarios, self.faults, self.images, self.torn_tails
        );
    }
}

const STEPS: usize = 24;

/// A scenario with one fault: runs the script, checks poisoning, then a process crash (all
/// written bytes survive) and machine crashes (only durable bytes surely survive).
fn scenario(plan: Plan, durability: Durability, seed: u64, tally: &mut Tally) {
    let disk = Disk::with(Vec::new(), plan);
    let run = run_script(&disk, durability, seed, STEPS);
    let disk = disk.lock().expect("disk lock");
    tally.scenarios += 1;
    tally.faults += disk.faults_fired;
    let what = format!("{plan:?} {durability:?} seed {seed}");
    if plan != Plan::default() && plan.durable_syncs_max.is_none() {
        assert!(
            run.failure.is_some() || disk.faults_fired == 0,
            "{what}: a fault fired without an error"
        );
    }

    // A process crash loses nothing acknowledged, whatever the policy.
    let everything: Vec<&Acked> = run.acked.iter().collect();
    let torn = check_image(
        &disk.written,
        &everything,
        &format!("{what}, process crash"),
    );
    tally.image(torn);

    // A machine crash keeps what the policy promised.
    let mut rng = Rng(seed ^ 0x5eed);
    let before_crash: Vec<&Acked> = run
        .acked
        .iter()
        .filter(|acked| acked.before_crash)
        .collect();
    for (index, image) in machine_crash_images(&disk, &mut rng).iter().enumerate() {
        let what = format!("{what}, machine crash image {index}");
        let required: Vec<&Acked> = match durability {
            Durability::EveryAppend => before_crash.clone(),
            // At most n - 1 acknowledged appends since the last fsync may be lost, and only
            // the latest ones.
            Durability::Batched(every) => {
                let survivors = oracle_entries(image);
                let (kept, lost): (Vec<&Acked>, Vec<&Acked>) = before_crash
                    .iter()
                    .partition(|acked| survivors.iter().any(|(id, _)| *id == acked.id));
                let recent = before_crash.len().saturating_sub(every.max(1) as usize - 1);
                assert!(
                    lost.iter()
                        .all(|acked| before_crash[recent..].iter().any(|a| a.id == acked.id)),
                    "{what}: Batched({every}) lost {} acknowledged appends, not only among the last {}",
                    lost.len(),
                    every.max(1) - 1
                );
                kept
            }
            Durability::None => Vec::new(),
        };
        tally.image(check_image(image, &required, &what));
    }
}

/// A failed write (with 0, some or all but one of its bytes written) poisons the handle; no
/// acknowledged entry is lost; the partial line is never an entry.
#[test]
fn failed_and_short_writes() {
    let mut tally = Tally::default();
    for nth in 0..STEPS as u64 {
        for seed in 0..4u64 {
            let mut rng = Rng(seed * 1000 + nth);
            for prefix_len in [0, 1, 1 + rng.below(200), 10_000_000] {
                let plan = Plan {
                    fail_write: Some((nth, prefix_len)),
                    ..Plan::default()
                };
                scenario(plan, Durability::EveryAppend, seed, &mut tally);
            }
        }
    }
    assert!(
        tally.faults >= STEPS as u64 * 16,
        "some write faults never fired"
    );
    tally.report("failed_and_short_writes");
}

/// A short write that stops exactly before the `\n` leaves a complete JSON line without its
/// terminator: an entry (as pi reads it), not a torn tail, and the next append ends it first.
#[test]
fn write_cut_just_before_newline() {
    let mut tally = Tally::default();
    for seed in 0..16u64 {
        // Find the length of the 4th write on a clean run, then cut it one byte short.
        let clean = Disk::with(Vec::new(), Plan::default());
        run_script(&clean, Durability::EveryAppend, seed, 4);
        let fourth_len = clean.lock().expect("disk lock").write_lens[3];
        let plan = Plan {
            fail_write: Some((3, fourth_len - 1)),
            ..Plan::default()
        };
        let disk = Disk::with(Vec::new(), plan);
        let run = run_script(&disk, Durability::EveryAppend, seed, 4);
        assert!(
            run.failure.is_some(),
            "seed {seed}: the 4th write should fail"
        );
        let disk = disk.lock().expect("disk lock");
        let last = last_line(&disk.written);
        assert!(
            !disk.written.ends_with(b"\n")
                && serde_json::from_slice::<serde_json::Value>(last).is_ok_and(|v| v.is_object()),
            "seed {seed}: the tail should be a whole entry line without its newline"
        );
        let session = open_on(
            &Disk::with(disk.written.clone(), Plan::default()),
            Durability::None,
        );
        let last_id = serde_json::from_slice::<serde_json::Value>(last).expect("JSON")["id"]
            .as_str()
            .expect("an id")
            .to_string();
        assert!(
            session.entry(&last_id).expect("lookup").is_some(),
            "seed {seed}: the unterminated line is not an entry"
        );
        drop(session);
        let acked: Vec<&Acked> = run.acked.iter().collect();
        tally.image(check_image(&disk.written, &acked, &format!("seed {seed}")));
        tally.scenarios += 1;
        tally.faults += disk.faults_fired;
    }
    assert_eq!(
        tally.torn_tails, 0,
        "a whole line without its newline is no torn tail"
    );
    tally.report("write_cut_just_before_newline");
}

/// A failed fsync poisons the handle (it is never retried as if nothing happened) and a
/// machine crash afterwards keeps every entry acknowledged before it.
#[test]
fn failed_syncs() {
    let mut tally = Tally::default();
    for nth in 0..STEPS as u64 {
        for seed in 0..4u64 {
            let plan = Plan {
                fail_sync: Some(nth),
                ..Plan::default()
            };
            scenario(plan, Durability::EveryAppend, seed, &mut tally);
            scenario(plan, Durability::Batched(3), seed, &mut tally);
        }
    }
    tally.report("failed_syncs");
}

/// A full disk fails the write with ENOSPC after writing what fits, poisons the handle, and
/// loses nothing acknowledged; a session reopened on a disk with room again appends cleanly.
#[test]
fn disk_full() {
    let mut tally = Tally::default();
    for seed in 0..8u64 {
        let mut rng = Rng(seed);
        for _ in 0..8 {
            let capacity_bytes = rng.below(12_000);
            let plan = Plan {
                capacity_bytes: Some(capacity_bytes),
                ..Plan::default()
            };
            let disk = Disk::with(Vec::new(), plan);
            let run = run_script(&disk, Durability::EveryAppend, seed, STEPS);
            if let Some(Error::Io { source, .. }) = &run.failure {
                assert_eq!(source.kind(), io::ErrorKind::StorageFull, "seed {seed}");
            }
            // Still full: reopening works, the next append fails and poisons again.
            let full = disk.lock().expect("disk lock");
            if run.failure.is_some() {
                let still_full = Disk::with(full.written.clone(), plan);
                let mut session = open_on(&still_full, Durability::EveryAppend);
                let appended =
                    session.append_message(r#"{"role":"user","content":"x","timestamp":1}"#);
                assert!(
                    matches!(appended, Err(Error::Io { .. })),
                    "seed {seed}: an append on a full disk must fail, got {appended:?}"
                );
                assert_poisoned(&mut session, &still_full, seed);
            }
            drop(full);
            scenario(plan, Durability::EveryAppend, seed, &mut tally);
        }
    }
    tally.report("disk_full");
}

/// The machine loses power right after the Nth sync while the process carries on: with
/// `EveryAppend` every append acknowledged before that survives; with `Batched(n)` at most the
/// last n - 1 are lost; the images with part of the unsynced bytes written back still open.
#[test]
fn power_loss_after_nth_sync() {
    let mut tally = Tally::default();
    for good_syncs in 0..STEPS as u64 {
        for seed in 0..4u64 {
            let plan = Plan {
                durable_syncs_max: Some(good_syncs),
                ..Plan::default()
            };
            for durability in [
                Durability::EveryAppend,
                Durability::Batched(2),
                Durability::Batched(5),
                Durability::None,
            ] {
                scenario(plan, durability, seed, &mut tally);
            }
        }
    }
    tally.report("power_loss_after_nth_sync");
}

/// Power loss combined with a failed write or sync later on.
#[test]
fn power_loss_then_io_failure() {
    let mut tally = Tally::default();
    for seed in 0..24u64 {
        let mut rng = Rng(seed);
        let plan = Plan {
            durable_syncs_max: Some(rng.below(STEPS) as u64),
            fail_write: (seed % 2 == 0).then(|| (rng.below(STEPS) as u64, rng.below(300))),
            fail_sync: (seed % 2 == 1).then(|| rng.below(STEPS) as u64),
            capacity_bytes: None,
        };
        scenario(plan, Durability::EveryAppend, seed, &mut tally);
    }
    tally.report("power_loss_then_io_failure");
}

/// `Session::sync` makes every acknowledged append durable, whatever the policy; `close`
/// fsyncs unless the policy is `Durability::None`.
#[test]
fn explicit_sync_makes_appends_durable() {
    for durability in [Durability::Batched(100), Durability::None] {
        for seed in 0..8u64 {
            for close in [false, true] {
                let what = format!("{durability:?} seed {seed} close {close}");
                let disk = Disk::with(Vec::new(), Plan::default());
                let mut session = open_on(&disk, durability);
                let mut rng = Rng(seed);
                let mut acked = Vec::new();
                for step in 0..5 {
                    let id = session
                        .append_message(&message(&mut rng, step))
                        .expect("append");
                    let line = last_line(&disk.lock().expect("disk lock").written).to_vec();
                    acked.push(Acked {
                        id,
                        line,
                        before_crash: true,
                    });
                }
                assert_eq!(
                    disk.lock().expect("disk lock").durable_len,
                    0,
                    "{what}: synced before being asked"
                );
                let promised = if close {
                    session.close().expect("close");
                    durability != Durability::None
                } else {
                    session.sync().expect("sync");
                    drop(session);
                    true
                };
                let disk = disk.lock().expect("disk lock");
                let durable = disk.written[..disk.durable_len].to_vec();
                let required: Vec<&Acked> = if promised {
                    acked.iter().collect()
                } else {
                    assert_eq!(disk.durable_len, 0, "{what}: close fsynced under None");
                    Vec::new()
                };
                check_image(&durable, &required, &format!("{what}, then machine crash"));
            }
        }
    }
}

/// A reopened poisoned session works again (reopening is the way out of poisoning).
#[test]
fn reopening_clears_poisoning() {
    let plan = Plan {
        fail_sync: Some(2),
        ..Plan::default()
    };
    let disk = Disk::with(Vec::new(), plan);
    let run = run_script(&disk, Durability::EveryAppend, 7, STEPS);
    assert!(run.failure.is_some(), "the third sync should have failed");
    let mut session = open_on(&disk, Durability::EveryAppend);
    let id = session
        .append_message(r#"{"role":"user","content":"again","timestamp":1}"#)
        .expect("a reopened session appends");
    drop(session);
    let reopened = open_on(&disk, Durability::None);
    assert!(reopened.entry(&id).expect("lookup").is_some());
    for acked in &run.acked {
        assert!(reopened.entry(&acked.id).expect("lookup").is_some());
    }
}
