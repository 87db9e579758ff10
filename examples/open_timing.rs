//! Times an open (and a context build) of one log: `cargo run --release --example open_timing FILE [--no-index]`.
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = std::path::PathBuf::from(args.next().expect("usage: open_timing FILE [--no-index]"));
    let use_index = args.next().as_deref() != Some("--no-index");
    let start = Instant::now();
    let session = treelog::Session::open(
        &path,
        treelog::SessionOptions {
            use_index,
            ..Default::default()
        },
    )
    .expect("open");
    let opened = start.elapsed();
    let start = Instant::now();
    let context = session.build_context(None).expect("context");
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
        let path_ids = session.path_id_list(None).expect("path");
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
