//! `treelog path`: the ids from the root to a leaf.

use std::path::PathBuf;

use crate::exit::CliError;
use crate::out::Out;

/// Print the ids on the path from the root to a leaf, root first, one per line.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl), or an OpenClaw session in its SQLite store:
    /// openclaw://[STATE_DIR#]AGENT/SESSION_ID (read-only; see `treelog openclaw --help`).
    pub file: PathBuf,
    /// End the path at this entry instead of the session's leaf.
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let session = super::open_default(&args.file)?;
    for id in session.path_id_list(args.leaf.as_deref())?.iter() {
        out.line(id)?;
    }
    Ok(())
}
