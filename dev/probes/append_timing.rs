//! Append throughput with index maintenance:
//! `cargo run -p treelog-dev --release --example append_timing -- [N] [BATCH] [LOG]` (BATCH entries per
//! append_many). With LOG, the appends go to that existing log (pass a copy: it grows), to
//! see the rate on a long history; without it, to a new log in a temporary directory.
use std::time::Instant;

use serde_json::value::RawValue;

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "append_timing",
    arguments: "[N] [BATCH] [LOG]",
    about: "Appends N entries (default 100000) of ~1 KB, BATCH per append_many (default 1), and\n\
            prints the rate and the slowest call. With LOG, to that existing log (pass a copy: it\n\
            grows); without, to a new log in a temporary directory.",
};

fn main() {
    let args = PROBE.args(3);
    let count = PROBE.number(&args, 0, "N", 100_000);
    let batch = PROBE.number(&args, 1, "BATCH", 1).max(1);
    let existing = args.get(2).map(std::path::PathBuf::from);
    let dir = std::env::temp_dir().join(format!("treelog-append-{}", std::process::id()));
    let path = match &existing {
        Some(path) => path.clone(),
        None => {
            PROBE.check(
                std::fs::create_dir_all(&dir),
                &format!("create {}", dir.display()),
            );
            let path = dir.join("append.jsonl");
            // Create the log first, so that the timed session keeps a sidecar index.
            let mut first = PROBE.check(
                treelog::Session::open(&path, treelog::SessionOptions::default()),
                "create",
            );
            PROBE.check(
                first.append_message(r#"{"role":"user","content":"start","timestamp":0}"#),
                "first append",
            );
            PROBE.check(first.close(), "close");
            path
        }
    };
    let mut session = PROBE.check(
        treelog::Session::open(&path, treelog::SessionOptions::default()),
        "open",
    );
    if let treelog::IndexState::Unindexed { reason, .. } = session.index_state() {
        PROBE.usage_error(format!(
            "{} has no index ({reason}): the rate would not include index maintenance",
            path.display()
        ));
    }
    // Validated once: each entry is a copy of it, as a caller holds its message already
    // (building and validating the JSON is the caller's cost, not the append's).
    let message = RawValue::from_string(format!(
        r#"{{"role":"user","content":"{}","timestamp":1}}"#,
        "x".repeat(900)
    ))
    .expect("valid JSON");
    let start = Instant::now();
    let mut done = 0;
    // The slowest call: one that flushes the index (every 32,768 entries) pays for it.
    let mut slowest = std::time::Duration::ZERO;
    while done < count {
        let entries = (0..batch)
            .map(|_| treelog::NewEntry::Message {
                message: message.clone(),
            })
            .collect();
        let call = Instant::now();
        PROBE.check(session.append_many(entries), "append");
        slowest = slowest.max(call.elapsed());
        done += batch;
    }
    PROBE.check(session.close(), "close");
    let elapsed = start.elapsed();
    println!(
        "{done} appends in batches of {batch} in {elapsed:?}: {:.0} appends/s, slowest call {slowest:?}",
        done as f64 / elapsed.as_secs_f64()
    );
    if existing.is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
}
