//! Replays every committed fuzz input (fuzz/corpus/<target>/*) through the same checks the
//! fuzz targets run (fuzz/fuzz_targets/checks.rs), without libFuzzer, so that `cargo test`
//! keeps every input the fuzzers found interesting, and every crash they found, fixed.

use std::path::Path;

#[path = "../../fuzz/fuzz_targets/checks.rs"]
mod checks;

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// Whether this thread is replaying an input: the hook is quiet there only, since the other
    /// tests of the binary share it.
    static REPLAYING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Some inputs make redb panic inside the library, which catches it on purpose and returns an
/// error: the hook keeps the message quiet, and it is printed only if the check itself fails.
/// On threads that are not replaying, the previous hook prints as usual.
fn quiet_caught_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if REPLAYING.with(std::cell::Cell::get) {
                let message = format!("{info}");
                LAST_PANIC.with(|last| *last.borrow_mut() = Some(message));
            } else {
                previous(info);
            }
        }))
    });
}

fn replay(target: &str, check: fn(&[u8])) {
    quiet_caught_panics();
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
        REPLAYING.with(|replaying| replaying.set(true));
        let failed = std::panic::catch_unwind(|| check(&data)).is_err();
        REPLAYING.with(|replaying| replaying.set(false));
        if failed {
            let message = LAST_PANIC
                .with(|last| last.borrow_mut().take())
                .unwrap_or_default();
            // Printed by the previous hook: this thread no longer replays.
            panic!(
                "{target}: input {} fails its check: {message}",
                file.display()
            );
        }
    }
    println!("{target}: {} inputs replayed", files.len());
}

#[test]
fn line_parser_corpus() {
    replay("line_parser", checks::line_parser);
}

#[test]
fn index_pages_corpus() {
    replay("index_pages", checks::index_pages);
}

#[test]
fn open_log_corpus() {
    replay("open_log", checks::open_log);
}

#[test]
fn operations_corpus() {
    replay("operations", checks::operations);
}
