//! `treelog-dev`: the developer tool beside the user-facing `treelog` CLI. It writes synthetic
//! transcripts (`gen`) and measures whole processes on them (`bench`, which runs `bench-probe`
//! in fresh processes); dev/README.md lists every other measuring tool and where it lives.
//! Errors print as `treelog-dev: what is wrong` and exit 2.

mod bench;
mod error;
mod generate;
mod out;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::out::Out;

/// treelog's developer tool: synthetic transcripts and whole-process benchmarks.
#[derive(Parser, Debug)]
#[command(name = "treelog-dev")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Gen(generate::Args),
    Bench(bench::Args),
    BenchProbe(bench::ProbeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Out::new();
    let result = match cli.command {
        Command::Gen(args) => generate::run(args, &mut out),
        Command::Bench(args) => bench::run(args, &mut out),
        Command::BenchProbe(args) => bench::run_probe(args, &mut out),
    }
    .and_then(|()| out.flush());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("treelog-dev: {error}");
            ExitCode::from(2)
        }
    }
}
