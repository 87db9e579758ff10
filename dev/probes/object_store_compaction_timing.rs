//! Times a cold read of a log on an S3-compatible object store before and after compaction
//! (BENCHMARKS.md, "Logs on an object store"):
//! `cargo run -p treelog-dev --release --example object_store_compaction_timing -- FILE s3://BUCKET/PREFIX [LINES]`
//! with the store's settings in the environment (`scripts/seaweedfs start DIR` prints them).
use std::time::{Duration, Instant};

use treelog::SessionOptions;
use treelog::object_store::{
    CompactOptions, Remote, S3Address, SegmentStorage, StoreConfig, compact, open_session,
};

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "object_store_compaction_timing",
    arguments: "FILE s3://BUCKET/PREFIX [LINES]",
    about: "Stores FILE under PREFIX/<file name> as one segment per LINES lines (default 100), as\n\
            that many appends of LINES entries leave it, and times a cold open without an index\n\
            (the log replayed through ranged reads; median of 3) before and after one compaction\n\
            pass with no grace period (timed too).",
};

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let args = PROBE.args(3);
    let file = PROBE.existing_file(&args, 0, "FILE (a session log)");
    let prefix = PROBE.required(&args, 1, "s3://BUCKET/PREFIX");
    let lines = PROBE.number(&args, 2, "LINES", 100).max(1);
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
    let config = PROBE.check(StoreConfig::from_env(), "settings");
    let remote =
        std::sync::Arc::new(PROBE.check(Remote::connect(&config, &address.bucket), "connect"));
    let bytes = PROBE.check(std::fs::read(&file), "read FILE");

    let start = Instant::now();
    let mut offset = 0;
    let mut segments = 0;
    for chunk in bytes
        .split_inclusive(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .chunks(lines)
    {
        let piece = chunk.concat();
        PROBE.check(
            remote.create(&address.segment_key(offset), &piece),
            "create a segment",
        );
        offset += piece.len() as u64;
        segments += 1;
    }
    println!(
        "stored: {} bytes as {segments} segment(s) of {lines} line(s), {:?}",
        bytes.len(),
        start.elapsed()
    );

    let cold = |what: &str| {
        let mut times = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            let session = PROBE.check(
                open_session(
                    &address,
                    SessionOptions {
                        use_index: false,
                        ..SessionOptions::default()
                    },
                ),
                "open without the index",
            );
            times.push(start.elapsed());
            drop(session);
        }
        let read = PROBE
            .check(SegmentStorage::open(remote.clone(), &address), "list")
            .segments()
            .len();
        println!(
            "{what}: cold open without an index (replay), {read} segment(s) read: median {:?} of 3",
            median(times)
        );
    };
    cold("before compaction");

    let start = Instant::now();
    let pass = PROBE.check(
        compact(
            &address,
            &CompactOptions {
                grace: Duration::ZERO,
                at_rest: true,
            },
        ),
        "compact",
    );
    println!(
        "compaction pass: {:?}; {} covering segment(s) written, {} segment(s) deleted; {} -> {} segment(s) read",
        start.elapsed(),
        pass.written.len(),
        pass.deleted,
        pass.segments_before,
        pass.segments_after
    );
    cold("after compaction");
}
