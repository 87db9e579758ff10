//! `treelog-dev gen`: writes a realistic synthetic transcript (the `treelog-synth` crate).

use std::io::IsTerminal;
use std::path::PathBuf;

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use treelog::SessionOptions;
use treelog_synth::{self as synth, GenOptions, Writer};

use crate::error::Error;
use crate::out::Out;

/// Write a synthetic transcript shaped like pi's, deterministic for a seed.
///
/// Starts with a model change, a thinking-level change and a session name, then user /
/// assistant (thinking, text, tool calls, usage) / tool-result turns, with occasional model
/// and thinking changes, labels, custom entries and renames, a compaction every K entries and
/// branches (some with a branch summary). The file must not exist. Prints a one-line summary.
///
/// Entries go through the session API (`Session::append_many` for each chain between
/// branch points, `Session::branch`; Durability::None); with --bulk, lines are encoded by the
/// library's own encoder, written through one buffer and indexed by one open afterwards. The
/// sidecar is written beside the log.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The new session log (.jsonl) to write.
    pub file: PathBuf,
    /// How many entries to write.
    #[arg(long, value_name = "N")]
    pub entries: u64,
    /// Seed of every choice and message timestamp.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Chance per entry of branching back to an earlier entry on the path (0 to 1).
    #[arg(long, value_name = "R", default_value_t = 0.01)]
    pub branch_rate: f64,
    /// A compaction every K entries (0: none).
    #[arg(long, value_name = "K", default_value_t = 5000)]
    pub compact_every: u64,
    /// Average payload bytes per message entry.
    #[arg(long, value_name = "B", default_value_t = 1024)]
    pub payload_bytes: usize,
    /// Chance per turn of a context edit of a recent entry (and a usage entry), as pi 1.6
    /// writes them (0 to 1).
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    pub edit_rate: f64,
    /// The cwd written in the header.
    #[arg(long, default_value = "/home/dev/project")]
    pub cwd: String,
    /// Write encoded lines in bulk and index the file afterwards, instead of appending
    /// through the session API.
    #[arg(long)]
    pub bulk: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), Error> {
    if !(0.0..=1.0).contains(&args.edit_rate) {
        return Err(Error::usage(format!(
            "--edit-rate must be between 0 and 1, not {}",
            args.edit_rate
        )));
    }
    if !(0.0..=1.0).contains(&args.branch_rate) {
        return Err(Error::usage(format!(
            "--branch-rate must be between 0 and 1, not {}",
            args.branch_rate
        )));
    }
    let options = GenOptions {
        entries: args.entries,
        seed: args.seed,
        branch_rate: args.branch_rate,
        compact_every: args.compact_every,
        payload_bytes: args.payload_bytes,
        edit_rate: args.edit_rate,
        cwd: args.cwd,
        writer: if args.bulk {
            Writer::Bulk
        } else {
            Writer::Session
        },
        sessions: SessionOptions::default(),
    };
    let bar = progress_bar(args.entries);
    let summary = synth::generate(&args.file, &options, |done| bar.set_position(done))?;
    bar.finish_and_clear();
    let seconds = summary.elapsed.as_secs_f64().max(1e-9);
    out.line(&format!(
        "wrote {} entries ({}) to {} in {:.2} s{} ({:.0} entries/s, {}/s): {} messages, {} branches, {} compactions, {} labels, {} context edits; seed {}",
        summary.entries,
        HumanBytes(summary.log_bytes),
        args.file.display(),
        seconds,
        if summary.index_elapsed.is_zero() {
            String::new()
        } else {
            format!(
                ", of which {:.2} s indexing",
                summary.index_elapsed.as_secs_f64()
            )
        },
        summary.entries as f64 / seconds,
        HumanBytes((summary.log_bytes as f64 / seconds) as u64),
        summary.messages,
        summary.branches,
        summary.compactions,
        summary.labels,
        summary.context_edits,
        args.seed,
    ))
}

/// A bar on stderr counting entries, hidden when stderr is not a terminal.
fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} entries ({per_sec}, ETA {eta})",
    ) {
        bar.set_style(style);
    }
    bar
}
