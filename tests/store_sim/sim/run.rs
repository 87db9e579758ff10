//! Seeded schedules of the protocol's actors over the simulated store, with the invariants
//! checked after every step:
//!
//! 1. the store's folder always tiles the log (no gap, no overlap): the log is readable;
//! 2. the log only grows: each step's log begins with the one before, byte for byte (so a
//!    compaction never changes its bytes, and nothing written is lost);
//! 3. every acknowledged append is in the log exactly once, each writer's in the order they
//!    were acknowledged; no append (acknowledged or not) is there twice;
//! 4. every read (a reader's long-lived handle, a pull) returns a beginning of the log;
//! 5. an operation in which no request failed does not fail (a handle's error clears on the
//!    next refresh when the log is readable), except a writer's conflict under
//!    `OnConflict::Fail` and a compaction that met another's deletions.
//!
//! Time passes only while requests wait (an actor's code between two requests takes none),
//! and a request that waited longer than the client's timeout fails unapplied: the model's
//! bound on how long a process may pause between a check and the request it guards.
//!
//! A seed picks, at each step, the actor whose request runs, the fault it carries (fails,
//! applied with its answer lost, a crash of the actor there), the time that passes, and which
//! actor stalls (passed over for 20 to 220 steps while others run), and names the schedule:
//! `run(seed, mix)` again runs the same one.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Mutex, Once};

use treelog::limits::STORE_REQUEST_TIMEOUT;
use treelog::object_store::{
    CLOCK_SKEW_MAX, CompactOptions, GRACE_MIN, SegmentStorage, compact_on, open_session_on,
    pull_on, verify_on,
};
use treelog::storage::LogStorage;
use treelog::{OnConflict, SessionOptions};

use super::world::{Crash, Fault, Status, World};
use super::{log, remote, true_log};

const SECOND: i64 = 1_000_000_000;

/// Who takes part in a schedule.
#[derive(Clone, Debug)]
pub struct Mix {
    pub name: &'static str,
    pub writers: Vec<OnConflict>,
    /// Each compactor's grace period (s) and clock skew (s, within `CLOCK_SKEW_MAX`).
    pub compactors: Vec<(u64, i64)>,
    pub readers: usize,
    pub pulls: usize,
    pub verifies: usize,
    /// Operations per actor.
    pub ops: usize,
    /// In a thousand steps, how many carry a fault.
    pub faults_per_mille: u64,
    /// Objects per listing page.
    pub page_size: usize,
}

/// The actor mixes the seeds cycle through.
pub fn mixes() -> Vec<Mix> {
    let grace = GRACE_MIN.as_secs();
    let skew = CLOCK_SKEW_MAX.as_secs() as i64;
    vec![
        Mix {
            name: "writers-and-compactors",
            writers: vec![OnConflict::FollowTip, OnConflict::Branch, OnConflict::Fail],
            compactors: vec![(grace, skew), (grace * 2, -skew)],
            readers: 1,
            pulls: 0,
            verifies: 0,
            ops: 6,
            faults_per_mille: 30,
            page_size: 3,
        },
        Mix {
            name: "readers-pull-verify",
            writers: vec![OnConflict::FollowTip],
            compactors: vec![(grace, 0)],
            readers: 2,
            pulls: 1,
            verifies: 1,
            ops: 5,
            faults_per_mille: 30,
            page_size: 2,
        },
        Mix {
            name: "no-faults",
            writers: vec![OnConflict::Branch, OnConflict::FollowTip],
            compactors: vec![(grace, skew / 2), (grace, -skew / 2)],
            readers: 1,
            pulls: 1,
            verifies: 0,
            ops: 6,
            faults_per_mille: 0,
            page_size: 1000,
        },
    ]
}

/// What the actors did, for the invariants.
#[derive(Default)]
struct Records {
    /// Appends acknowledged: the writer and the message's text, in order.
    acked: Vec<(usize, String)>,
    /// Every message text a writer tried to append.
    attempted: Vec<String>,
    /// Reads since the last check: who, and the bytes.
    reads: Vec<(String, Vec<u8>)>,
    /// Operations that failed although none of their requests did.
    unexplained: Vec<String>,
}

struct Ctx<'a> {
    world: &'a Arc<World>,
    actor: usize,
    records: &'a Mutex<Records>,
    dir: &'a std::path::Path,
}

impl Ctx<'_> {
    fn faults(&self) -> u64 {
        self.world.lock().actors[self.actor].faults
    }

    fn aborted(&self) -> bool {
        self.world.lock().aborted
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs one operation; a crash is caught (the actor's handles are dropped by the caller);
    /// an error with no fault during it is recorded unless `allowed` says it may happen.
    fn op(
        &self,
        what: &str,
        allowed: impl Fn(&str) -> bool,
        work: impl FnOnce() -> Result<(), String>,
    ) -> Option<bool> {
        let before = self.faults();
        match catch_unwind(AssertUnwindSafe(work)) {
            Ok(Ok(())) => Some(true),
            Ok(Err(error)) => {
                if self.faults() == before && !allowed(&error) {
                    self.records()
                        .unexplained
                        .push(format!("actor {} {what}: {error}", self.actor));
                }
                Some(false)
            }
            Err(panic) if panic.is::<Crash>() => None,
            Err(panic) => resume_unwind(panic),
        }
    }
}

/// An error a stalled actor meets by design: a listing read over longer than its deadline
/// (`RequestBounds::listing_deadline`) is refused.
fn stalled(error: &str) -> bool {
    error.contains("did not end within")
}

fn writer(ctx: &Ctx, policy: OnConflict, ops: usize) {
    let mut session = None;
    for n in 0..ops {
        if ctx.aborted() {
            return;
        }
        let text = format!("w{}-{n}", ctx.actor);
        ctx.records().attempted.push(text.clone());
        let mut acked = false;
        let done = ctx.op(
            "append",
            |error| {
                policy == OnConflict::Fail && error.contains("another writer appended")
                    || stalled(error)
            },
            || {
                if session.is_none() {
                    let options = SessionOptions {
                        on_conflict: policy,
                        use_index: false,
                        ..SessionOptions::default()
                    };
                    session = Some(
                        open_session_on(remote(ctx.world, ctx.actor), &log(), options)
                            .map_err(|e| e.to_string())?,
                    );
                }
                let message = format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#);
                let session = session.as_mut().expect("opened");
                session
                    .append_message(&message)
                    .map_err(|e| e.to_string())?;
                acked = true;
                Ok(())
            },
        );
        if acked {
            ctx.records().acked.push((ctx.actor, text));
        }
        if done != Some(true) {
            session = None;
        }
    }
}

fn compactor(ctx: &Ctx, grace: u64, ops: usize) {
    let options = CompactOptions {
        grace: std::time::Duration::from_secs(grace),
        at_rest: false,
    };
    for _ in 0..ops {
        if ctx.aborted() {
            return;
        }
        let client = remote(ctx.world, ctx.actor);
        ctx.op(
            "compact",
            // Another pass deleted what this one read: it stops, nothing written stays wrong.
            |error| error.contains("deleted or replaced while read") || stalled(error),
            || {
                compact_on(&client, &log(), &options)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            },
        );
    }
}

fn reader(ctx: &Ctx, ops: usize) {
    let mut handle: Option<SegmentStorage> = None;
    for _ in 0..ops {
        if ctx.aborted() {
            return;
        }
        let mut read = Vec::new();
        let done = ctx.op("read", stalled, || {
            if handle.is_none() {
                handle = Some(
                    SegmentStorage::open(remote(ctx.world, ctx.actor), &log())
                        .map_err(|e| e.to_string())?,
                );
            }
            let handle = handle.as_ref().expect("opened");
            let end = handle.len_bytes().map_err(|e| e.to_string())?;
            let mut buf = vec![0; 4096];
            while (read.len() as u64) < end {
                let count = handle
                    .read_at(read.len() as u64, &mut buf)
                    .map_err(|e| e.to_string())?;
                if count == 0 {
                    return Err(format!("the log ended at {} before {end}", read.len()));
                }
                read.extend_from_slice(&buf[..count]);
            }
            Ok(())
        });
        match done {
            Some(true) => ctx
                .records()
                .reads
                .push((format!("reader {}", ctx.actor), read)),
            // A crash drops the handle; an error keeps it (it must clear on refresh).
            None => handle = None,
            Some(false) => {}
        }
    }
}

fn puller(ctx: &Ctx, ops: usize) {
    let file = ctx.dir.join(format!("pulled-{}", ctx.actor));
    for _ in 0..ops {
        if ctx.aborted() {
            return;
        }
        let mut read = None;
        ctx.op(
            "pull",
            |error| error.contains("no log there") || stalled(error),
            || {
                pull_on(remote(ctx.world, ctx.actor), &log(), &file, true)
                    .map_err(|e| e.to_string())?;
                read = Some(std::fs::read(&file).map_err(|e| e.to_string())?);
                Ok(())
            },
        );
        if let Some(read) = read {
            ctx.records()
                .reads
                .push((format!("pull {}", ctx.actor), read));
        }
    }
}

fn verifier(ctx: &Ctx, ops: usize) {
    let options = SessionOptions {
        index_dir: Some(ctx.dir.join(format!("cache-{}", ctx.actor))),
        ..SessionOptions::default()
    };
    for _ in 0..ops {
        if ctx.aborted() {
            return;
        }
        ctx.op("verify", stalled, || {
            if true_log(ctx.world).is_ok_and(|log| log.is_empty()) {
                return Ok(());
            }
            let report = verify_on(remote(ctx.world, ctx.actor), &log(), false, &options)
                .map_err(|e| e.to_string())?;
            match report.problems.first() {
                None => Ok(()),
                Some(problem) => Err(format!("verify found: {}", problem.message)),
            }
        });
    }
}

/// A small fast random source (splitmix64): the seed is the whole schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What an actor does, given its context.
type Role = Box<dyn Fn(&Ctx) + Send + Sync>;

/// What a schedule ran.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub steps: u64,
    /// FNV-1a of the trace: each step's actor, request and fault.
    pub trace_hash: u64,
    pub acked: usize,
}

/// The most steps a schedule may take: its actors' operations are finite, so more is a
/// livelock.
const STEPS_MAX: u64 = 50_000;

/// Runs the schedule `seed` of `mix`; an error is the first invariant broken, with the seed
/// and the last steps of the trace.
pub fn run(seed: u64, mix: &Mix) -> Result<Outcome, String> {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Crash>() {
                default(info);
            }
        }));
    });
    let world = World::new(mix.page_size);
    let mut rng = Rng(seed);
    let records = Mutex::new(Records::default());
    let dir = tempfile::tempdir().unwrap();
    let mut roles: Vec<(usize, Role)> = Vec::new();
    for &policy in &mix.writers {
        let actor = world.add_actor("writer", 0);
        let ops = mix.ops;
        roles.push((actor, Box::new(move |ctx| writer(ctx, policy, ops))));
    }
    for &(grace, skew) in &mix.compactors {
        let actor = world.add_actor("compactor", skew * SECOND);
        let ops = mix.ops;
        roles.push((actor, Box::new(move |ctx| compactor(ctx, grace, ops))));
    }
    for _ in 0..mix.readers {
        let actor = world.add_actor("reader", 0);
        let ops = mix.ops;
        roles.push((actor, Box::new(move |ctx| reader(ctx, ops))));
    }
    for _ in 0..mix.pulls {
        let actor = world.add_actor("pull", 0);
        roles.push((actor, Box::new(|ctx| puller(ctx, 2))));
    }
    for _ in 0..mix.verifies {
        let actor = world.add_actor("verify", 0);
        roles.push((actor, Box::new(|ctx| verifier(ctx, 2))));
    }
    world.lock().scheduled = true;
    let result = std::thread::scope(|scope| {
        for (actor, role) in &roles {
            let (world, records, dir) = (&world, &records, dir.path());
            let actor = *actor;
            scope.spawn(move || {
                let ctx = Ctx {
                    world,
                    actor,
                    records,
                    dir,
                };
                role(&ctx);
                world.done(actor);
            });
        }
        let result = schedule(&world, &records, &mut rng, mix);
        if result.is_err() {
            let mut state = world.lock();
            state.aborted = true;
            world.changed.notify_all();
        }
        result
    });
    result.map_err(|violation| {
        let state = world.lock();
        let shown = if std::env::var_os("TREELOG_SIM_TRACE").is_some() {
            usize::MAX
        } else {
            12
        };
        let tail: Vec<&String> = state.trace.iter().rev().take(shown).collect();
        format!(
            "seed {seed} ({}): step {}: {violation}\nlast steps, latest first:\n{}",
            mix.name,
            state.steps,
            tail.iter()
                .map(|s| format!("  {s}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

fn schedule(
    world: &Arc<World>,
    records: &Mutex<Records>,
    rng: &mut Rng,
    mix: &Mix,
) -> Result<Outcome, String> {
    let mut log_before: Vec<u8> = Vec::new();
    let mut trace_hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut stalled_until = vec![0u64; world.lock().actors.len()];
    loop {
        let mut state = world.lock();
        while state.granted.is_some() || state.actors.iter().any(|a| a.status == Status::Running) {
            state = world.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        let waiting: Vec<usize> = (0..state.actors.len())
            .filter(|&a| state.actors[a].status == Status::Waiting)
            .collect();
        drop(state);
        log_before = check(world, records, log_before)?;
        if waiting.is_empty() {
            let state = world.lock();
            return Ok(Outcome {
                steps: state.steps,
                trace_hash,
                acked: records.lock().unwrap().acked.len(),
            });
        }
        let mut state = world.lock();
        if state.steps >= STEPS_MAX {
            return Err(format!("no end after {STEPS_MAX} steps: a livelock"));
        }
        // A stalled actor (a slow machine, a long pause between two requests) is passed over
        // while others can run: the gaps between a listing and what is done on it.
        let runnable: Vec<usize> = waiting
            .iter()
            .copied()
            .filter(|&a| stalled_until[a] <= state.steps)
            .collect();
        let choices = if runnable.is_empty() {
            &waiting
        } else {
            &runnable
        };
        let actor = choices[rng.below(choices.len() as u64) as usize];
        if rng.below(100) < 3 {
            let stall = waiting[rng.below(waiting.len() as u64) as usize];
            stalled_until[stall] = state.steps + 20 + rng.below(200);
        }
        let roll = rng.below(1000);
        let fault = if roll >= mix.faults_per_mille {
            Fault::None
        } else {
            match roll % 4 {
                0 => Fault::FailBefore,
                1 => Fault::LoseAnswer,
                2 => Fault::Crash,
                _ => Fault::FailBefore,
            }
        };
        // Most steps take a moment; some a minute; a few long enough for grace periods.
        let pause = match rng.below(100) {
            0..=69 => rng.below(2 * SECOND as u64),
            70..=96 => rng.below(60 * SECOND as u64),
            _ => rng.below(1500 * SECOND as u64),
        };
        state.now_ns += pause as i64;
        // A request not answered within the client's timeout fails, and is not applied: the
        // model's bound on the time between a check and the request it guards.
        let fault = if state.now_ns - state.actors[actor].sent_ns
            > STORE_REQUEST_TIMEOUT.as_nanos() as i64
        {
            Fault::FailBefore
        } else {
            fault
        };
        if fault != Fault::None {
            state.actors[actor].faults += 1;
        }
        let line = format!(
            "{} {actor} ({}) {} {fault:?} +{}ms",
            state.steps,
            state.actors[actor].name,
            state.actors[actor].request,
            pause / 1_000_000
        );
        for byte in line.bytes().skip(line.find(' ').unwrap_or(0)) {
            trace_hash = (trace_hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
        state.trace.push(line);
        state.steps += 1;
        state.granted = Some((actor, fault));
        world.changed.notify_all();
    }
}

/// The invariants, between two steps (every actor parked); returns the log now.
fn check(world: &World, records: &Mutex<Records>, before: Vec<u8>) -> Result<Vec<u8>, String> {
    let log = true_log(world).map_err(|e| format!("the log is unreadable: {e}"))?;
    if !log.starts_with(&before) {
        return Err(format!(
            "the log changed: {} bytes before, {} now, not beginning with them",
            before.len(),
            log.len()
        ));
    }
    let mut records = records.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(unexplained) = records.unexplained.first() {
        return Err(format!("an operation failed with no fault: {unexplained}"));
    }
    let find = |text: &str| {
        let needle = format!("\"{text}\"");
        let positions: Vec<usize> = log
            .windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == needle.as_bytes())
            .map(|(at, _)| at)
            .collect();
        positions
    };
    let mut last_at: std::collections::HashMap<usize, usize> = Default::default();
    for (writer, text) in &records.acked {
        let found = find(text);
        if found.len() != 1 {
            return Err(format!(
                "acknowledged append {text} is in the log {} times",
                found.len()
            ));
        }
        if last_at.get(writer).is_some_and(|&at| at > found[0]) {
            return Err(format!(
                "acknowledged append {text} is before an earlier one"
            ));
        }
        last_at.insert(*writer, found[0]);
    }
    for text in &records.attempted {
        if find(text).len() > 1 {
            return Err(format!("append {text} is in the log twice"));
        }
    }
    for (who, read) in records.reads.drain(..) {
        if !log.starts_with(&read) {
            return Err(format!(
                "{who} read {} bytes that do not begin the log ({} bytes)",
                read.len(),
                log.len()
            ));
        }
    }
    Ok(log)
}
