//! Replays every committed fuzz input (fuzz/corpus/<target>/*) through the same checks the
//! fuzz targets run (fuzz/fuzz_targets/checks.rs), without libFuzzer, so that `cargo test`
//! keeps every input the fuzzers found interesting, and every crash they found, fixed.

use std::path::Path;

#[path = "../fuzz/fuzz_targets/checks.rs"]
mod checks;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no corpus committed", dir.display());
    for file in &files {
        let data = std::fs::read(file).expect("read corpus file");
        // Name the input before running it, so that a failure says which one.
        let result = std::panic::catch_unwind(|| check(&data));
        assert!(
            result.is_ok(),
            "{target}: input {} fails its check",
            file.display()
        );
    }
    println!("{target}: {} inputs replayed", files.len());
}

#[test]
fn line_parser_corpus() {
    replay("line_parser", checks::line_parser);
}

#[test]
fn open_log_corpus() {
    replay("open_log", checks::open_log);
}

#[test]
fn operations_corpus() {
    replay("operations", checks::operations);
}
