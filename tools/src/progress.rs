//! Progress bars on stderr, only when stderr is a terminal (quiet in pipes, logs and tests).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar counting `total` items, or a hidden one when stderr is not a terminal.
pub fn items(total: u64, what: &str) -> ProgressBar {
    let bar = new_bar(total);
    let template = format!(
        "{{spinner}} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} {what} ({{per_sec}}, ETA {{eta}})"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// A bar counting `total` bytes, with a message slot for file counts.
pub fn bytes(total: u64) -> ProgressBar {
    let bar = new_bar(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, ETA {eta}) {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

fn new_bar(total: u64) -> ProgressBar {
    if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    }
}

/// Human bytes: `1.02 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    indicatif::HumanBytes(bytes).to_string()
}
