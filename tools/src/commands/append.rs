//! `treelog append`: appends messages read from stdin, printing each new id once appended.

use std::io::BufRead;
use std::path::PathBuf;

use treelog::{Durability, OnConflict, Session, SessionOptions};

use crate::exit::CliError;
use crate::out::Out;

/// Append messages read from stdin, printing each new id.
///
/// Reads one JSON message object per stdin line (blank lines are skipped) and appends each
/// as a `message` entry on the session's leaf. Each new entry's id is printed on its own
/// line, flushed, only after its append returned; what a printed id guarantees depends on
/// --sync. A missing FILE becomes a new session (the header is written with the first entry).
///
/// The first invalid line stops the run (exit 2) with its stdin line number; the ids printed
/// before it are appended and stay valid.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl).
    pub file: PathBuf,
    /// When an appended entry is made durable before its id is printed.
    #[arg(long, value_enum, default_value_t = SyncPolicy::Always)]
    pub sync: SyncPolicy,
    /// What to do when another writer appended after the session's leaf meanwhile.
    #[arg(long, value_enum, default_value_t = ConflictPolicy::Fail)]
    pub on_conflict: ConflictPolicy,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync after every append: a printed id survives a crash of the machine.
    Always,
    /// fsync every 64 appends and at the end: a printed id is written to the OS (it survives
    /// a crash of treelog) but may not be on disk yet when the machine crashes.
    Batch,
    /// Never fsync: a printed id is written to the OS, which writes it back when it likes.
    None,
}

impl SyncPolicy {
    fn durability(self) -> Durability {
        match self {
            SyncPolicy::Always => Durability::EveryAppend,
            SyncPolicy::Batch => Durability::Batched(64),
            SyncPolicy::None => Durability::None,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConflictPolicy {
    /// Stop with exit code 1 and write nothing more.
    Fail,
    /// Move to the log's newest leaf and append there.
    Follow,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let options = SessionOptions {
        durability: args.sync.durability(),
        on_conflict: match args.on_conflict {
            ConflictPolicy::Fail => OnConflict::Fail,
            ConflictPolicy::Follow => OnConflict::FollowTip,
        },
        ..SessionOptions::default()
    };
    if let Ok(metadata) = std::fs::metadata(&args.file)
        && !metadata.is_file()
    {
        return Err(CliError::input(
            args.file.display().to_string(),
            "not a regular file",
        ));
    }
    let mut session = Session::open(&args.file, options)?;
    let stdin = std::io::stdin();
    let result = append_lines(&mut session, &mut stdin.lock(), out);
    // Close even after an error, so that the appends already acknowledged are synced.
    let closed = session.close().map_err(CliError::from);
    result.and(closed)
}

/// Appends each non-blank line of `input` as a message and prints its id.
fn append_lines(
    session: &mut Session,
    input: &mut impl BufRead,
    out: &mut Out,
) -> Result<(), CliError> {
    let mut line = Vec::new();
    let mut line_number = 0u64;
    loop {
        line.clear();
        let read = input
            .read_until(b'\n', &mut line)
            .map_err(|e| CliError::io("<stdin>", "read", e))?;
        if read == 0 {
            return Ok(());
        }
        line_number += 1;
        let location = || format!("<stdin>:{line_number}");
        let Ok(text) = std::str::from_utf8(&line) else {
            return Err(CliError::input(location(), "not valid UTF-8"));
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        check_message(text).map_err(|message| CliError::input(location(), message))?;
        let id = session.append_message(text)?;
        out.line(&id)?;
        out.flush()?;
    }
}

/// A message must be one JSON object (checked without building it in memory).
fn check_message(text: &str) -> Result<(), String> {
    match serde_json::from_str::<&serde_json::value::RawValue>(text) {
        Ok(raw) if raw.get().starts_with('{') => Ok(()),
        Ok(_) => Err("a message must be a JSON object".into()),
        Err(error) => Err(format!("not valid JSON: {error}")),
    }
}
