//! Raw pass over a log: newline scan, classify (parse of the indexed fields), blake3.
//! `cargo run -p treelog-dev --release --example parse_timing -- FILE`
//!
//! The lines are split (with memchr, as `scan.rs` does) and checked as UTF-8 once, outside the
//! timings; each rate is the file's size over the time of one pass over its lines, so the
//! `classify` and `serde IgnoredAny` rates of one run compare directly.
use std::time::Instant;

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "parse_timing",
    arguments: "FILE",
    about: "Three raw passes over FILE's lines: newline scan, UTF-8 checks, classify, serde_json and\n\
            blake3, each as MB/s of the whole file.",
};

fn main() {
    let args = PROBE.args(1);
    let path = PROBE.required(&args, 0, "FILE (a session log)");
    let bytes = PROBE.check(std::fs::read(&path), &format!("read {path}"));
    let mb = bytes.len() as f64 / 1e6;
    let rate = |start: Instant| mb / start.elapsed().as_secs_f64();
    for _ in 0..3 {
        let start = Instant::now();
        let line_count = memchr::memchr_iter(b'\n', &bytes).count();
        let scan = rate(start);
        let start = Instant::now();
        let lines: Vec<&str> = split_lines(&bytes)
            .map(|line| std::str::from_utf8(line).unwrap_or(""))
            .collect();
        let split_utf8 = rate(start);
        let start = Instant::now();
        let simd_lines = split_lines(&bytes)
            .filter(|line| treelog::format::utf8_str(line).is_some())
            .count();
        let split_simd_utf8 = rate(start);
        assert_eq!(
            simd_lines,
            lines.len(),
            "both validators accept the same lines"
        );
        let start = Instant::now();
        let mut entries = 0;
        for line in &lines {
            if let treelog::format::line::Line::Entry(_) =
                treelog::format::line::classify(line, false, false)
            {
                entries += 1;
            }
        }
        let classify = rate(start);
        let start = Instant::now();
        for line in &lines {
            let _ = serde_json::from_str::<serde::de::IgnoredAny>(line);
        }
        let ignored_any = rate(start);
        let start = Instant::now();
        let mut with_id = 0;
        for line in &lines {
            if let Ok(fields) = serde_json::from_str::<treelog::format::line::RawPassFields>(line) {
                with_id += usize::from(fields.id.is_some() && fields.kind.is_some());
                std::hint::black_box(&fields.parent_id);
            }
        }
        let three_fields = rate(start);
        let start = Instant::now();
        let hash = blake3::hash(&bytes);
        let hashed = rate(start);
        println!(
            "{line_count} lines, {entries} entries: scan {scan:.0} MB/s, split+utf8 {split_utf8:.0} MB/s (simdutf8 {split_simd_utf8:.0}), \
             classify {classify:.0} MB/s, serde IgnoredAny {ignored_any:.0} MB/s, \
             serde three borrowed fields {three_fields:.0} MB/s ({with_id} with id and type), blake3 {hashed:.0} MB/s ({})",
            &hash.to_hex()[..8]
        );
    }
}

/// The lines of `bytes` (the bytes between newlines, and after the last one).
fn split_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', bytes)
        .chain(std::iter::once(bytes.len()))
        .map(move |end| {
            let line = &bytes[start..end];
            start = end + 1;
            line
        })
}
