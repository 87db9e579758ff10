//! `SessionOptions::progress_bytes`: the counter a progress bar reads moves with the bytes indexed,
//! chunk by chunk within one log, never goes back, and ends at the log's length, for a rebuild, a
//! catch-up and a replay without index.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use treelog::{Session, SessionOptions};
use treelog_testkit::hooked_storage::HookedStorage;

/// A pi-shaped log of `entries` messages, each about 300 bytes: several scan chunks (1 MiB).
fn log_bytes(entries: usize) -> Vec<u8> {
    let mut log = String::from(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    log.push('\n');
    log.push_str(&message_lines("a", entries));
    log.into_bytes()
}

/// `count` message lines in a chain, their ids starting with `prefix`, the first a root.
fn message_lines(prefix: &str, count: usize) -> String {
    let mut lines = String::new();
    let mut parent = String::from("null");
    for index in 0..count {
        let id = format!("{prefix}{index:07x}");
        lines.push_str(&format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"message {index}: {}","timestamp":1}}}}"#,
            "x".repeat(160)
        ));
        lines.push('\n');
        parent = format!("\"{id}\"");
    }
    lines
}

fn with_progress(progress: &Arc<AtomicU64>) -> SessionOptions {
    SessionOptions {
        progress_bytes: Some(progress.clone()),
        ..SessionOptions::default()
    }
}

/// Within one multi-chunk log the counter takes several values between 0 and the log's
/// length, in order, and ends at the length.
#[test]
fn progress_moves_chunk_by_chunk() {
    let bytes = log_bytes(20_000);
    let len = bytes.len() as u64;
    assert!(len > 5 * 1024 * 1024, "{len} bytes: at least 5 chunks");
    let progress = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    // What a bar drawing between chunks would show: the counter before each read.
    let storage = HookedStorage::new("/w/s.jsonl", bytes).before_each_read({
        let (progress, seen) = (progress.clone(), seen.clone());
        move || seen.lock().unwrap().push(progress.load(Ordering::Relaxed))
    });
    let session = Session::open_storage(Box::new(storage), with_progress(&progress)).unwrap();
    assert_eq!(session.entry_count().unwrap(), 20_000);
    assert_eq!(progress.load(Ordering::Relaxed), len);
    let seen = seen.lock().unwrap().clone();
    assert!(seen.windows(2).all(|pair| pair[0] <= pair[1]), "{seen:?}");
    let inside: std::collections::BTreeSet<u64> = seen
        .iter()
        .copied()
        .filter(|&value| value > 0 && value < len)
        .collect();
    assert!(
        inside.len() >= 3,
        "the counter moved within the log only at {inside:?} of {len} bytes"
    );
}

/// Opening a log file: a rebuild of its new sidecar, then a catch-up after other bytes were
/// appended, then a fresh open each leave the counter at the log's length; a thread reading
/// it meanwhile never sees it go back.
#[test]
fn rebuild_and_catch_up_end_at_the_log_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let bytes = log_bytes(20_000);
    std::fs::write(&path, &bytes).unwrap();

    let open_watched = |path: &Path| -> (Vec<u64>, u64) {
        let progress = Arc::new(AtomicU64::new(0));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let (progress, done) = (progress.clone(), done.clone());
            std::thread::spawn(move || {
                let mut values = Vec::new();
                while !done.load(Ordering::Relaxed) {
                    values.push(progress.load(Ordering::Relaxed));
                    std::thread::yield_now();
                }
                values
            })
        };
        let session = Session::open(path, with_progress(&progress)).unwrap();
        done.store(true, Ordering::Relaxed);
        drop(session);
        (watcher.join().unwrap(), progress.load(Ordering::Relaxed))
    };

    let (values, last) = open_watched(&path);
    assert!(values.windows(2).all(|pair| pair[0] <= pair[1]));
    assert_eq!(last, bytes.len() as u64, "after the rebuild");

    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    io::Write::write_all(&mut file, message_lines("b", 4_000).as_bytes()).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let (values, last) = open_watched(&path);
    assert!(values.windows(2).all(|pair| pair[0] <= pair[1]));
    assert_eq!(last, len, "after the catch-up");

    let (_, last) = open_watched(&path);
    assert_eq!(last, len, "a fresh index covers the whole log");
}
