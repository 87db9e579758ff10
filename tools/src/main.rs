//! `treelog`: the command-line tool over the treelog library. Parsing is here; each command
//! is a module under `commands/`; exit codes are decided in `exit.rs` only.

mod commands;
mod exit;
mod files;
mod index_state;
mod out;
mod parallel;
mod preview;
mod progress;
mod sidecars;
mod signals;
mod terminal;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands::{
    append, audit, compact, completions, context, convert, demo, export, info, list, man, openclaw,
    path, push_pull, redact, reindex, repair, search, secrets, stats, tree, verify,
};
use crate::exit::{CliError, EXIT_CODES_HELP};
use crate::out::Out;

/// Inspect and maintain agent session transcripts.
///
/// A session is a pi / OpenClaw JSONL log (a header line, then one entry per line) plus a
/// redb sidecar index `<log>.treelog`, which is only a cache: it is checked on every open and
/// rebuilt from the log on any doubt. Every command reads the log through the index.
///
/// On a terminal, control characters from logs (escape sequences included; newline and tab
/// kept) are shown as \uXXXX; output to a pipe or a file is written byte for byte.
#[derive(Parser, Debug)]
#[command(name = "treelog", version, after_help = EXIT_CODES_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    index: sidecars::IndexArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    Context(context::Args),
    Path(path::Args),
    Tree(tree::Args),
    Info(info::Args),
    Append(append::Args),
    Reindex(reindex::Args),
    Search(search::Args),
    Verify(verify::Args),
    List(list::Args),
    Export(export::Args),
    Repair(repair::Args),
    Demo(demo::Args),
    Completions(completions::Args),
    Man(man::Args),
    Openclaw(openclaw::Args),
    Push(push_pull::PushArgs),
    Pull(push_pull::PullArgs),
    Compact(compact::Args),
    Audit(audit::Args),
    Stats(stats::Args),
    Secrets(secrets::Args),
    Redact(redact::Args),
    Convert(convert::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return exit::finish_parse(error),
    };
    exit::quiet_panics();
    sidecars::choose(cli.index);
    let mut out = Out::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(cli.command, &mut out).and_then(|()| out.flush())
    }));
    match result {
        Ok(result) => exit::finish(result),
        Err(_) => exit::internal_error(),
    }
}

fn run(command: Command, out: &mut Out) -> Result<(), CliError> {
    // The commands that may hold temporary folders remove them on a signal too.
    if matches!(
        command,
        Command::Demo(_) | Command::Verify(_) | Command::Search(_)
    ) {
        signals::remove_temp_dirs_on_signal();
    }
    match command {
        Command::Context(args) => context::run(args, out),
        Command::Path(args) => path::run(args, out),
        Command::Tree(args) => tree::run(args, out),
        Command::Info(args) => info::run(args, out),
        Command::Append(args) => append::run(args, out),
        Command::Reindex(args) => reindex::run(args, out),
        Command::Search(args) => search::run(args, out),
        Command::Verify(args) => verify::run(args, out),
        Command::List(args) => list::run(args, out),
        Command::Export(args) => export::run(args, out),
        Command::Repair(args) => repair::run(args, out),
        Command::Demo(args) => demo::run(args, out),
        Command::Completions(args) => completions::run(args, Cli::command(), out),
        Command::Man(args) => man::run(args, Cli::command(), out),
        Command::Openclaw(args) => openclaw::run(args, out),
        Command::Push(args) => push_pull::run_push(args, out),
        Command::Pull(args) => push_pull::run_pull(args, out),
        Command::Compact(args) => compact::run(args, out),
        Command::Audit(args) => audit::run(args, out),
        Command::Stats(args) => stats::run(args, out),
        Command::Secrets(args) => secrets::run(args, out),
        Command::Redact(args) => redact::run(args, out),
        Command::Convert(args) => convert::run(args, out),
    }
}
