//! Opens many small sessions in a row: `cargo run --release --example many_opens DIR [N]`.
use std::time::Instant;

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: many_opens DIR [N]"));
    let count: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    std::fs::create_dir_all(&dir).expect("dir");
    for index in 0..count {
        let path = dir.join(format!("s{index:04}.jsonl"));
        if !path.exists() {
            let mut session = treelog::Session::open(&path, Default::default()).expect("create");
            session
                .append_message(r#"{"role":"user","content":"hello there","timestamp":1}"#)
                .expect("append");
            session
                .append_message(
                    r#"{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}"#,
                )
                .expect("append");
            session.close().expect("close");
            drop(treelog::Session::open(&path, Default::default()).expect("index"));
        }
    }
    for _ in 0..3 {
        let start = Instant::now();
        let mut messages = 0;
        for index in 0..count {
            let path = dir.join(format!("s{index:04}.jsonl"));
            let mut session = treelog::Session::open(&path, Default::default()).expect("open");
            messages += session.stats().expect("stats").counts_by_kind[0].1;
        }
        println!(
            "{count} opens in {:?} ({messages} messages)",
            start.elapsed()
        );
    }
}
