//! Times an open (and a context build) of one log:
//! `cargo run -p treelog-dev --release --example open_timing -- FILE [--no-index]`.
use std::time::Instant;

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "open_timing",
    arguments: "FILE [--no-index]",
    about: "Opens FILE (with its index, or replaying the log with --no-index), builds its context and\n\
            walks its path (PATH_ROUNDS times, default 3), printing each time and the sidecar's size.",
};

fn main() {
    let args = PROBE.args(2);
    let path = PROBE.existing_file(&args, 0, "FILE (a session log)");
    let use_index = match args.get(1).map(String::as_str) {
        None => true,
        Some("--no-index") => false,
        Some(other) => PROBE.usage_error(format!("unknown option {other:?}")),
    };
    let start = Instant::now();
    let session = treelog::Session::open(
        &path,
        treelog::SessionOptions {
            use_index,
            ..Default::default()
        },
    );
    let session = PROBE.check(session, "open");
    let opened = start.elapsed();
    let start = Instant::now();
    let context = PROBE.check(session.build_context(None), "build the context");
    let built = start.elapsed();
    println!(
        "open {opened:?} ({:?}), context {built:?} ({} messages)",
        session.index_state(),
        context.messages.len()
    );
    let rounds: usize = std::env::var("PATH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    for round in 0..rounds {
        let start = Instant::now();
        let path_ids = PROBE.check(session.path_id_list(None), "walk the path");
        let walked = start.elapsed();
        println!(
            "path round {round}: {} hops, {:.0} ns/hop",
            path_ids.len(),
            walked.as_nanos() as f64 / path_ids.len().max(1) as f64
        );
    }
    let sidecar = std::fs::metadata(treelog::sidecar_path(&path)).map_or(0, |meta| meta.len());
    let log = std::fs::metadata(&path).map_or(0, |meta| meta.len());
    println!(
        "log {log} bytes, sidecar {sidecar} bytes ({:.1}%), index tables hold {} bytes",
        100.0 * sidecar as f64 / log.max(1) as f64,
        session.index_stored_bytes().unwrap_or(0)
    );
}
