//! Raw pass over a log: newline scan, classify (parse of the indexed fields), blake3.
//! `cargo run --release --example parse_timing FILE`
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: parse_timing FILE");
    let bytes = std::fs::read(&path).expect("read");
    for _ in 0..3 {
        let start = Instant::now();
        let lines = memchr::memchr_iter(b'\n', &bytes).count();
        let scan = start.elapsed();
        let start = Instant::now();
        let mut entries = 0;
        for line in bytes.split(|b| *b == b'\n') {
            let text = std::str::from_utf8(line).unwrap_or("");
            if let treelog::format::line::Line::Entry(_) =
                treelog::format::line::classify(text, false, false)
            {
                entries += 1;
            }
        }
        let parse = start.elapsed();
        let start = Instant::now();
        let hash = blake3::hash(&bytes);
        let hashed = start.elapsed();
        let mb = bytes.len() as f64 / 1e6;
        println!("serde IgnoredAny {:.0} MB/s", ignored_any_rate(&bytes));
        println!(
            "{lines} lines, {entries} entries: scan {:.0} MB/s, classify {:.0} MB/s, blake3 {:.0} MB/s ({})",
            mb / scan.as_secs_f64(),
            mb / parse.as_secs_f64(),
            mb / hashed.as_secs_f64(),
            &hash.to_hex()[..8]
        );
    }
}

#[allow(dead_code)]
fn ignored_any_rate(bytes: &[u8]) -> f64 {
    let start = Instant::now();
    for line in bytes.split(|b| *b == b'\n') {
        let _ = serde_json::from_slice::<serde::de::IgnoredAny>(line);
    }
    bytes.len() as f64 / 1e6 / start.elapsed().as_secs_f64()
}
