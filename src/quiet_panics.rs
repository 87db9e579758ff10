//! The panic hook every front end installs (the CLI, the Node addon). The default hook prints
//! every panic, caught or not; the library turns a panic of redb on a damaged sidecar into an
//! error and rebuilds the index, so that text (`panicked at .../redb-.../btree.rs`, a
//! backtrace) would reach a user whose answers are right. This hook prints nothing and keeps
//! the last panic's message and place, for the front end to report a panic nothing caught.

use std::sync::Mutex;

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the process's panic hook with one that prints nothing and keeps the message.
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("panic");
        let place = info
            .location()
            .map(|location| format!(" at {}:{}", location.file(), location.line()))
            .unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!("{message}{place}"));
        }
    }));
}

/// The message and place of the last panic since the hook was installed, taken.
pub fn take_last() -> Option<String> {
    LAST_PANIC.lock().ok().and_then(|mut last| last.take())
}
