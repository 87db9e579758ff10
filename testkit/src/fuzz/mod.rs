//! The checks behind each fuzz target, shared by the libFuzzer targets (fuzz/fuzz_targets/*.rs)
//! and by the plain replay of the committed corpus (tests/it/fuzz_corpus.rs), so that `cargo test`
//! runs every committed input through exactly what the fuzzer ran.
//!
//! Inputs are decoded by hand from the raw bytes (`input.rs`) instead of with `arbitrary`.
//! `fuzz_one` runs a check under libFuzzer, `replay_corpus` runs it over the committed inputs.

mod context_edit;
mod index_pages;
mod input;
mod line_parser;
mod open_log;
mod operations;

use std::path::Path;

pub use context_edit::context_edit;
pub use index_pages::index_pages;
pub use line_parser::line_parser;
pub use open_log::open_log;
pub use operations::operations;

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs one check under libFuzzer. libfuzzer-sys aborts on every panic, even one the library
/// catches on purpose (redb panics on some corrupt files; the index store turns those into
/// errors at its boundary). So the hook only records the message, and only a panic that
/// escapes the check aborts, which libFuzzer reports as a crash.
pub fn fuzz_one(data: &[u8], check: fn(&[u8])) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let mut message = format!("{info}");
            if std::env::var_os("TREELOG_FUZZ_TRACE").is_some() {
                message.push_str(&format!("\n{}", std::backtrace::Backtrace::force_capture()));
            }
            LAST_PANIC.with(|last| *last.borrow_mut() = Some(message));
        }))
    });
    if std::panic::catch_unwind(|| check(data)).is_err() {
        let message = LAST_PANIC
            .with(|last| last.borrow_mut().take())
            .unwrap_or_default();
        eprintln!("check panicked: {}", message.replace('\n', " | "));
        std::process::abort();
    }
}

thread_local! {
    static REPLAY_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
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
                REPLAY_PANIC.with(|last| *last.borrow_mut() = Some(message));
            } else {
                previous(info);
            }
        }))
    });
}

/// Runs `check` on every committed input of `target` (fuzz/corpus/<target>/*), without
/// libFuzzer; panics naming the first input whose check fails.
pub fn replay_corpus(target: &str, check: fn(&[u8])) {
    quiet_caught_panics();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
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
            let message = REPLAY_PANIC
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
