//! Append throughput with index maintenance: `cargo run --release --example append_timing [N]`.
use std::time::Instant;

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("treelog-append-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("append.jsonl");
    let mut session =
        treelog::Session::open(&path, treelog::SessionOptions::default()).expect("open");
    let message = format!(
        r#"{{"role":"user","content":"{}","timestamp":1}}"#,
        "x".repeat(900)
    );
    let start = Instant::now();
    for _ in 0..count {
        session.append_message(&message).expect("append");
    }
    session.close().expect("close");
    let elapsed = start.elapsed();
    println!(
        "{count} appends in {elapsed:?}: {:.0} appends/s",
        count as f64 / elapsed.as_secs_f64()
    );
    std::fs::remove_dir_all(&dir).ok();
}
