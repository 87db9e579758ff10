//! Append throughput with index maintenance:
//! `cargo run --release --example append_timing [N] [BATCH] [LOG]` (BATCH entries per
//! append_many). With LOG, the appends go to that existing log (pass a copy: it grows), to
//! see the rate on a long history; without it, to a new log in a temporary directory.
use std::time::Instant;

use serde_json::value::RawValue;

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let batch: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1);
    let existing = std::env::args().nth(3).map(std::path::PathBuf::from);
    let dir = std::env::temp_dir().join(format!("treelog-append-{}", std::process::id()));
    let path = match &existing {
        Some(path) => path.clone(),
        None => {
            std::fs::create_dir_all(&dir).expect("temp dir");
            let path = dir.join("append.jsonl");
            // Create the log first, so that the timed session keeps a sidecar index.
            let mut first =
                treelog::Session::open(&path, treelog::SessionOptions::default()).expect("create");
            first
                .append_message(r#"{"role":"user","content":"start","timestamp":0}"#)
                .expect("first append");
            first.close().expect("close");
            path
        }
    };
    let mut session =
        treelog::Session::open(&path, treelog::SessionOptions::default()).expect("open");
    assert!(!matches!(
        session.index_state(),
        treelog::IndexState::Unindexed { .. }
    ));
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
        session.append_many(entries).expect("append");
        slowest = slowest.max(call.elapsed());
        done += batch;
    }
    session.close().expect("close");
    let elapsed = start.elapsed();
    println!(
        "{done} appends in batches of {batch} in {elapsed:?}: {:.0} appends/s, slowest call {slowest:?}",
        done as f64 / elapsed.as_secs_f64()
    );
    if existing.is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
}
