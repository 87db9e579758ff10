//! `treelog::secrets::scan_file` over a log with the built-in rules, and with one literal.
//! `cargo run -p treelog-dev --release --example secrets_timing -- FILE [RUNS]`
//!
//! Each pass reads FILE from the page cache in chunks, runs the keyword prefilter over the raw
//! bytes and walks the string values of the lines it passes; the figure is FILE's size over
//! the median time of RUNS passes (default 5). BENCHMARKS.md compares it with `rg` given the
//! same regexes.
use std::time::Instant;

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "secrets_timing",
    arguments: "FILE [RUNS]",
    about: "Scans FILE for the built-in secret shapes, then for one literal, RUNS times each\n\
            (default 5), and prints the median time and MB/s of each and the findings.",
};

fn main() {
    let args = PROBE.args(2);
    let path = PROBE.existing_file(&args, 0, "FILE (a session log)");
    let runs = PROBE.number(&args, 1, "RUNS", 5).max(1);
    let size_mb = PROBE.check(std::fs::metadata(&path), "look at FILE").len() as f64 / 1e6;
    let matchers = [
        (
            "rules",
            treelog::secrets::Matcher::rules(treelog::secrets::rules::built_in()),
        ),
        (
            "literal",
            PROBE.check(
                treelog::secrets::Matcher::literal("AKIAQ3EGRZ7DKX5M7Q2X"),
                "build the literal",
            ),
        ),
    ];
    for (name, matcher) in matchers {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..runs {
            let start = Instant::now();
            found = PROBE
                .check(treelog::secrets::scan_file(&path, &matcher), "scan FILE")
                .len();
            times.push(start.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "{name}: {:.1} ms median of {runs}, {:.0} MB/s, {found} finding(s)",
            median * 1e3,
            size_mb / median
        );
    }
}
