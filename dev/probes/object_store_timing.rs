//! Times a log on an S3-compatible object store (BENCHMARKS.md, "Logs on an object store"):
//! `cargo run -p treelog-dev --release --example object_store_timing -- FILE s3://BUCKET/PREFIX`
//! with the store's settings in the environment (`scripts/seaweedfs start DIR` prints them).
use std::time::{Duration, Instant};

use treelog::object_store::{S3Address, open_session, push};
use treelog::{NewEntry, SessionOptions};

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "object_store_timing",
    arguments: "FILE s3://BUCKET/PREFIX",
    about: "Pushes FILE to PREFIX/<file name> and times, on that log: appends one at a time and in\n\
            batches of 64 (each a segment), a cold open with the local index and without it (the\n\
            log replayed through ranged reads), the first open that builds the index, and a\n\
            reader's catch-up over 1,000 entries another writer appended.",
};

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn message(i: usize) -> NewEntry {
    let text = format!(r#"{{"role":"user","content":"probe {i}","timestamp":1}}"#);
    NewEntry::Message {
        message: serde_json::value::RawValue::from_string(text).unwrap(),
    }
}

fn main() {
    let args = PROBE.args(2);
    let file = PROBE.existing_file(&args, 0, "FILE (a session log)");
    let prefix = PROBE.required(&args, 1, "s3://BUCKET/PREFIX");
    let name = file.file_name().unwrap().to_string_lossy();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let address = format!("{}/{stamp}/{name}", prefix.trim_end_matches('/'));
    let address = match S3Address::parse(&address) {
        Some(Ok(address)) => address,
        _ => PROBE.usage_error(format!("{prefix:?} is not s3://BUCKET/PREFIX")),
    };
    let temp = std::env::temp_dir().join(format!("treelog-s3-timing-{}", std::process::id()));
    let cache = |name: &str| SessionOptions {
        index_dir: Some(temp.join(name)),
        ..SessionOptions::default()
    };

    let start = Instant::now();
    let pushed = PROBE.check(push(&file, &address), "push");
    println!(
        "push: {} bytes in {} segment(s), {:?}",
        pushed.len_bytes,
        pushed.segments,
        start.elapsed()
    );

    let start = Instant::now();
    let built = PROBE.check(open_session(&address, cache("a")), "open");
    println!(
        "first open, index built: {:?} ({:?})",
        start.elapsed(),
        built.index_state()
    );
    drop(built);

    let start = Instant::now();
    let config = PROBE.check(treelog::object_store::StoreConfig::from_env(), "settings");
    let remote = PROBE.check(
        treelog::object_store::Remote::connect(&config, &address.bucket),
        "connect",
    );
    let connected = start.elapsed();
    let start = Instant::now();
    PROBE.check(remote.list_segments(&address, None), "list");
    println!(
        "a client: {connected:?} to set up, {:?} for its first listing",
        start.elapsed()
    );
    drop(remote);

    let mut opens = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let session = PROBE.check(open_session(&address, cache("a")), "open");
        opens.push(start.elapsed());
        drop(session);
    }
    println!(
        "cold open with the local index: median {:?} of 5",
        median(opens)
    );

    let start = Instant::now();
    let replayed = PROBE.check(
        open_session(
            &address,
            SessionOptions {
                use_index: false,
                ..SessionOptions::default()
            },
        ),
        "open without the index",
    );
    println!("open without an index (replay): {:?}", start.elapsed());
    drop(replayed);

    let mut writer = PROBE.check(open_session(&address, cache("a")), "open");
    let mut singles = Vec::new();
    for i in 0..200 {
        let start = Instant::now();
        PROBE.check(writer.append(message(i)), "append");
        singles.push(start.elapsed());
    }
    let total: Duration = singles.iter().sum();
    println!(
        "append one at a time: median {:?}, {:.0} appends/s over 200",
        median(singles),
        200.0 / total.as_secs_f64()
    );
    let start = Instant::now();
    for round in 0..20 {
        let batch = (0..64).map(|i| message(round * 64 + i)).collect();
        PROBE.check(writer.append_many(batch), "append a batch");
    }
    let elapsed = start.elapsed();
    println!(
        "append in batches of 64: {:?} per batch, {:.0} entries/s over 1,280",
        elapsed / 20,
        1280.0 / elapsed.as_secs_f64()
    );

    let mut reader = PROBE.check(open_session(&address, cache("b")), "open the reader");
    for round in 0..10 {
        let batch = (0..100).map(|i| message(round * 100 + i)).collect();
        PROBE.check(writer.append_many(batch), "append a batch");
    }
    let start = Instant::now();
    PROBE.check(reader.refresh(), "catch up");
    println!(
        "catch-up of a reader over 1,000 entries in 10 segments: {:?}",
        start.elapsed()
    );
    drop(reader);
    let batch = (0..100).map(message).collect();
    PROBE.check(writer.append_many(batch), "append a batch");
    let start = Instant::now();
    let reopened = PROBE.check(open_session(&address, cache("b")), "open");
    println!(
        "the reader's next open, 100 entries later: {:?} ({:?})",
        start.elapsed(),
        reopened.index_state()
    );
    let _ = std::fs::remove_dir_all(&temp);
}
