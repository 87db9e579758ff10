//! Repeated context builds and path walks (ids in one buffer, as `treelog-dev bench` measures
//! them) on one open session (minimum of N runs):
//! `cargo run -p treelog-dev --release --example context_loop -- FILE [N]` (`SKIP_PATH=1`: context only).
use std::time::{Duration, Instant};

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "context_loop",
    arguments: "FILE [N]",
    about: "Builds the context of FILE's leaf and walks its path N times (default 20) on one open\n\
            session and prints the best time of each (SKIP_PATH=1: the context only).",
};

fn main() {
    let args = PROBE.args(2);
    let path = PROBE.existing_file(&args, 0, "FILE (a session log)");
    let runs = PROBE.number(&args, 1, "N", 20).max(1);
    let session = PROBE.check(treelog::Session::open(&path, Default::default()), "open");
    let mut context_best = Duration::MAX;
    let mut path_best = Duration::MAX;
    let mut messages = 0;
    let mut hops = 0;
    for _ in 0..runs {
        let start = Instant::now();
        messages = PROBE
            .check(session.build_context(None), "build the context")
            .messages
            .len();
        context_best = context_best.min(start.elapsed());
        if std::env::var_os("SKIP_PATH").is_some() {
            continue;
        }
        let start = Instant::now();
        hops = PROBE
            .check(session.path_id_list(None), "walk the path")
            .len();
        path_best = path_best.min(start.elapsed());
    }
    if std::env::var_os("SKIP_PATH").is_some() {
        println!("context {context_best:?} ({messages} messages)");
        return;
    }
    println!(
        "context {context_best:?} ({messages} messages), path {path_best:?} ({hops} hops, {:.0} ns/hop)",
        path_best.as_nanos() as f64 / hops.max(1) as f64
    );
}
