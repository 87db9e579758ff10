//! The damage campaign (tests/it/damage_campaign.rs) through the real binary, on a smaller sample: a
//! bundled transcript's sidecar is damaged (one bit, 16 random bytes, a 4 KiB page zeroed, random
//! or copied from another page, a truncation), then `treelog context`, `path`, `tree --json`, `info
//! --json`, `verify` and again `path` run on it, in that order, as a user would run them one after
//! another. Each must exit as on a pristine copy, print what it prints there (`info` but its index
//! state and size), never print a panic (`panicked`, `RUST_BACKTRACE`) and finish within `TIMEOUT`.
//! `verify` may report the damaged index (exit 1, counted as "verify reported") if no command
//! before it repaired it; two of the bundled logs hold problems on purpose, which it reports
//! anyway.
//!
//! `TREELOG_DAMAGE_CLI_TRIALS=N` trials per mode (default 4, about 20 s in a debug build), `TREELOG_DAMAGE_SEED=S`,
//! `TREELOG_DAMAGE_REPORT_ONLY=1` prints the table without failing.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use treelog_testkit::rng::Rng;

const PAGE: usize = 4096;
const TIMEOUT: Duration = Duration::from_secs(20);
const MODES: [&str; 6] = [
    "bit-flip",
    "overwrite-16",
    "zero-page",
    "random-page",
    "copied-page",
    "truncated",
];
const COMMANDS: [&[&str]; 6] = [
    &["context"],
    &["path"],
    &["tree", "--json"],
    &["info", "--json"],
    &["verify"],
    &["path"],
];

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|value| {
        let value = value.trim();
        match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => value.parse().ok(),
        }
    })
}

/// One command's outcome: exit code (None: killed after `TIMEOUT`), stdout, stderr.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(binary: &Path, args: &[&str], log: &Path) -> Outcome {
    let mut child = Command::new(binary)
        .args(args)
        .arg(log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn treelog");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + TIMEOUT;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Outcome {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// `info --json` without what depends on the index's state or the file's place.
fn info_without_index(stdout: &str) -> Value {
    let mut info: Value = serde_json::from_str(stdout).unwrap_or(Value::Null);
    if let Some(object) = info.as_object_mut() {
        object.remove("index");
        object.remove("indexStoredBytes");
        object.remove("indexFileBytes");
        object.remove("indexPath");
        // The copies lie in other directories.
        object.remove("path");
    }
    info
}

fn damage(mode: &str, sidecar: &[u8], rng: &mut Rng) -> (Vec<u8>, String) {
    let mut bytes = sidecar.to_vec();
    let len = bytes.len();
    let pages = len.div_ceil(PAGE).max(1);
    let range = |page: usize| page * PAGE..((page + 1) * PAGE).min(len);
    let described = match mode {
        "bit-flip" => {
            let (at, bit) = (rng.below(len), rng.below(8));
            bytes[at] ^= 1 << bit;
            format!("bit {bit} of byte {at}")
        }
        "overwrite-16" => {
            let at = rng.below(len.saturating_sub(16) + 1);
            for byte in &mut bytes[at..(at + 16).min(len)] {
                *byte = rng.next() as u8;
            }
            format!("16 bytes at {at}")
        }
        "zero-page" => {
            let page = rng.below(pages);
            bytes[range(page)].fill(0);
            format!("page {page} zeroed")
        }
        "random-page" => {
            let page = rng.below(pages);
            for byte in &mut bytes[range(page)] {
                *byte = rng.next() as u8;
            }
            format!("page {page} random")
        }
        "copied-page" => {
            let to = rng.below(pages);
            let from = (to + 1 + rng.below(pages.max(2) - 1)) % pages;
            let source = sidecar[range(from)].to_vec();
            let target = range(to);
            let n = source.len().min(target.len());
            bytes[target.start..target.start + n].copy_from_slice(&source[..n]);
            format!("page {to} overwritten by page {from}")
        }
        _ => {
            let at = rng.below(len);
            bytes.truncate(at);
            format!("cut at {at}")
        }
    };
    (bytes, described)
}

/// A bundled log: its name, bytes, sidecar, and what each command did on it.
type Pristine = (String, Vec<u8>, Vec<u8>, Vec<Outcome>);

#[derive(Default)]
struct Tally {
    trials: u64,
    right: u64,
    errors: u64,
    wrong: u64,
    hangs: u64,
    panics: u64,
    verify_reported: u64,
    examples: Vec<String>,
}

#[test]
fn damaged_sidecars_through_the_cli() {
    let trials = env_u64("TREELOG_DAMAGE_CLI_TRIALS").unwrap_or(4) as usize;
    let seed = env_u64("TREELOG_DAMAGE_SEED").unwrap_or(0x636c_6964_616d_6167);
    let report_only = std::env::var("TREELOG_DAMAGE_REPORT_ONLY").is_ok_and(|v| v != "0");
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    // A private copy: the shared target dir's binary may be relinked by another build.
    let binary = dir.path().join("treelog");
    std::fs::copy(env!("CARGO_BIN_EXE_treelog"), &binary).expect("copy the treelog binary");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let mut logs: Vec<Pristine> = Vec::new();
    for name in [
        "pi-sample-200.jsonl",
        "pi16-gen-a.jsonl",
        "pi073-gen-a.jsonl",
    ] {
        let log = dir.path().join(name);
        std::fs::copy(data.join(name), &log).unwrap();
        let pristine: Vec<Outcome> = COMMANDS
            .iter()
            .map(|args| run(&binary, args, &log))
            .collect();
        for (args, outcome) in COMMANDS.iter().zip(&pristine) {
            // verify reports the problems some bundled logs hold on purpose.
            let allowed: &[i32] = if args[0] == "verify" { &[0, 1] } else { &[0] };
            assert!(
                outcome.code.is_some_and(|code| allowed.contains(&code)),
                "{name}: {args:?}: {:?} {}",
                outcome.code,
                outcome.stderr
            );
        }
        let sidecar = std::fs::read(treelog::sidecar_path(&log)).unwrap();
        logs.push((name.into(), std::fs::read(&log).unwrap(), sidecar, pristine));
    }

    let started = Instant::now();
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    for (mode_index, mode) in MODES.into_iter().enumerate() {
        let tally = tallies.entry(mode).or_default();
        for trial in 0..trials {
            let trial_seed = Rng(seed ^ ((mode_index as u64) << 40) ^ trial as u64).next();
            let mut rng = Rng(trial_seed);
            let (name, log_bytes, sidecar, pristine) = &logs[trial % logs.len()];
            let trial_dir = dir.path().join(format!("{mode}-{trial}"));
            std::fs::create_dir(&trial_dir).unwrap();
            let log: PathBuf = trial_dir.join(name);
            std::fs::write(&log, log_bytes).unwrap();
            let (damaged, described) = damage(mode, sidecar, &mut rng);
            std::fs::write(treelog::sidecar_path(&log), damaged).unwrap();

            let mut failure: Option<(&str, String)> = None;
            for (args, expected) in COMMANDS.iter().zip(pristine) {
                let got = run(&binary, args, &log);
                let command = args.join(" ");
                let found = if got.code.is_none() {
                    Some(("hang", format!("{command}: no exit in {TIMEOUT:?}")))
                } else if got.stderr.contains("panicked") || got.stderr.contains("RUST_BACKTRACE") {
                    Some(("panic", format!("{command}: {}", got.stderr.trim())))
                } else if args[0] == "verify" {
                    // It may report the damaged index (one more problem than on a pristine
                    // copy) when no command before it repaired the index.
                    match got.code {
                        Some(0 | 1) => {
                            if got.stderr.lines().count() > expected.stderr.lines().count() {
                                tally.verify_reported += 1;
                            }
                            None
                        }
                        _ => Some(("error", format!("{command}: {}", got.stderr.trim()))),
                    }
                } else if got.code != Some(0) {
                    Some((
                        "error",
                        format!("{command}: exit {:?}: {}", got.code, got.stderr.trim()),
                    ))
                } else if (args[0] == "info"
                    && info_without_index(&got.stdout) != info_without_index(&expected.stdout))
                    || (args[0] != "info" && got.stdout != expected.stdout)
                {
                    Some((
                        "wrong",
                        format!("{command}: stdout differs from a pristine copy's"),
                    ))
                } else {
                    None
                };
                if let Some(found) = found {
                    failure.get_or_insert(found);
                }
            }
            tally.trials += 1;
            match failure {
                None => tally.right += 1,
                Some((class, detail)) => {
                    match class {
                        "hang" => tally.hangs += 1,
                        "panic" => tally.panics += 1,
                        "error" => tally.errors += 1,
                        _ => tally.wrong += 1,
                    }
                    if tally.examples.len() < 2 {
                        let detail: String = detail.chars().take(400).collect();
                        tally.examples.push(format!(
                            "{class}: {mode} trial {trial} (seed {trial_seed:#x}): {name}: \
                             {described}: {detail}"
                        ));
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&trial_dir);
        }
    }
    println!(
        "{:<13} {:>6} {:>6} {:>6} {:>6} {:>5} {:>6} {:>15}",
        "mode", "trials", "right", "errors", "wrong", "hangs", "panics", "verify reported"
    );
    let mut failures = 0;
    for (mode, t) in &tallies {
        println!(
            "{:<13} {:>6} {:>6} {:>6} {:>6} {:>5} {:>6} {:>15}",
            mode, t.trials, t.right, t.errors, t.wrong, t.hangs, t.panics, t.verify_reported
        );
        failures += t.errors + t.wrong + t.hangs + t.panics;
    }
    for tally in tallies.values() {
        for example in &tally.examples {
            println!("  {}", example.replace('\n', " | "));
        }
    }
    println!(
        "damage through the CLI: seed {seed:#x}, {:.1}s, {failures} failed trials",
        started.elapsed().as_secs_f64()
    );
    if !report_only {
        assert_eq!(
            failures, 0,
            "failed trials (seed {seed:#x}); see the table above"
        );
    }
}
