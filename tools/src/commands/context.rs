//! `treelog context`: the context pi would send to the model for a leaf.

use std::path::PathBuf;

use crate::exit::CliError;
use crate::out::Out;

/// Print the model context for a leaf as one JSON line.
///
/// The line is {"messages":[...],"thinkingLevel":...,"model":...}, as pi's
/// buildSessionContext builds it: messages from the latest compaction's first kept entry,
/// with compaction and branch summaries.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl).
    pub file: PathBuf,
    /// Build the context for this entry instead of the session's leaf.
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let session = super::open_default(&args.file)?;
    let context = session.build_context(args.leaf.as_deref())?;
    out.line(&context.to_json())
}
