//! `treelog context`: the context pi would send to the model for a leaf.

use std::path::PathBuf;

use treelog::{PiCompat, SessionOptions};

use crate::exit::CliError;
use crate::out::Out;

/// Print the model context for a leaf as one JSON line.
///
/// The line is {"messages":[...],"thinkingLevel":...,"model":...}, as pi's
/// buildSessionContext builds it: the latest compaction (its system message, then its
/// summary), the entries it kept from its first kept entry, the entries after it, branch
/// summaries and custom messages, each entry's latest context edit applied.
///
/// --entries prints pi's buildContextEntries instead (a JSON array of the entries' lines);
/// --projection prints pi's buildSessionProjection
/// ({"entries":[{"sourceEntry":...,"messages":[...]}],"messages":[...],"thinkingLevel":...,"model":...}).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl), or an OpenClaw session in its SQLite store:
    /// openclaw://[STATE_DIR#]AGENT/SESSION_ID (read-only; see `treelog openclaw --help`).
    pub file: PathBuf,
    /// Build the context for this entry instead of the session's leaf.
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Print the context entries (pi's buildContextEntries) instead of the messages.
    #[arg(long, conflicts_with = "projection")]
    pub entries: bool,
    /// Print each context entry with the messages it contributes (buildSessionProjection).
    #[arg(long)]
    pub projection: bool,
    /// Whose context rule: the current pi (1.6) or pi 0.73.1, which ignores context edits
    /// and compaction system messages and keeps system messages in a compaction's kept range.
    #[arg(long, value_enum, value_name = "VERSION", default_value_t = Compat::Current)]
    pub pi_compat: Compat,
}

/// A pi version whose context rule `--pi-compat` selects.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compat {
    /// pi 1.6 (@earendil-works/pi-coding-agent).
    Current,
    /// pi 0.73.1 (@mariozechner/pi-coding-agent).
    #[value(name = "0.73")]
    V0_73,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    if let Some(format) = super::foreign::detect_file(&args.file) {
        if args.leaf.is_some()
            || args.entries
            || args.projection
            || args.pi_compat != Compat::Current
        {
            return Err(CliError::input(
                args.file.display().to_string(),
                format!(
                    "a {} session: --leaf, --entries, --projection and --pi-compat are pi's; \
                     its context is the one its own client sends next",
                    format.display_name()
                ),
            ));
        }
        let foreign = super::foreign::load(&args.file)?;
        return super::foreign::context(&foreign, out);
    }
    if args.pi_compat == Compat::V0_73 && (args.entries || args.projection) {
        return Err(CliError::input(
            "--pi-compat 0.73",
            "--entries and --projection are pi 1.6's views; pi 0.73.1 has neither",
        ));
    }
    let options = SessionOptions {
        pi_compat: match args.pi_compat {
            Compat::Current => PiCompat::Current,
            Compat::V0_73 => PiCompat::V0_73,
        },
        ..crate::sidecars::options()
    };
    let session = super::open_session(&args.file, options)?;
    let leaf = args.leaf.as_deref();
    if args.entries {
        let mut json = String::from("[");
        for (index, entry) in session.context_entries(leaf)?.iter().enumerate() {
            if index > 0 {
                json.push(',');
            }
            json.push_str(&entry.json);
        }
        json.push(']');
        return out.line(&json);
    }
    if args.projection {
        return out.line(&session.build_projection(leaf)?.to_json());
    }
    out.line(&session.build_context(leaf)?.to_json())
}
