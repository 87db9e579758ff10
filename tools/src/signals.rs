//! What the CLI does on SIGINT, SIGTERM and SIGHUP while a command may hold temporary folders
//! (`demo`, `verify` and `search` of logs kept elsewhere): it removes them
//! ([`treelog::fs_safe::remove_temp_dirs`], as a drop would) and then ends as the signal's
//! default action does, so the exit status still says which signal ended it. The handler runs on
//! a thread of its own (signal-hook's iterator), never inside the signal handler itself, where
//! removing files is not allowed. It holds no engine logic.

use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Installs the handler: called once, before a command that may create temporary folders. A
/// handler that cannot be installed leaves the default action (the folders stay, as after
/// `kill -9`, until the next temporary folder of their kind removes them).
pub fn remove_temp_dirs_on_signal() {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("treelog-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                treelog::fs_safe::remove_temp_dirs();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
    drop(spawned);
}
