//! Repeated context builds and path walks (ids in one buffer, as `treelog bench` measures
//! them) on one open session (minimum of N runs):
//! `cargo run --release --example context_loop FILE [N]` (`SKIP_PATH=1`: context only).
use std::time::{Duration, Instant};

fn main() {
    let path = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: context_loop FILE [N]"),
    );
    let runs: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let session = treelog::Session::open(&path, Default::default()).expect("open");
    let mut context_best = Duration::MAX;
    let mut path_best = Duration::MAX;
    let mut messages = 0;
    let mut hops = 0;
    for _ in 0..runs {
        let start = Instant::now();
        messages = session.build_context(None).expect("context").messages.len();
        context_best = context_best.min(start.elapsed());
        if std::env::var_os("SKIP_PATH").is_some() {
            continue;
        }
        let start = Instant::now();
        hops = session.path_id_list(None).expect("path").len();
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
