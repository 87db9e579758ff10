//! `treelog list`: the sessions of a directory, newest first.

use std::path::PathBuf;

use serde_json::json;
use treelog::listing::{default_sessions_dir, session_files, session_info_with, sort_newest_first};

use crate::exit::{CliError, print_error};
use crate::files::nothing_found;
use crate::index_state;
use crate::out::Out;
use crate::parallel::for_each_ordered;
use crate::preview;

/// List the sessions of a directory, newest first.
///
/// Looks at *.jsonl files in DIR and in its subdirectories (one level, pi's layout
/// `sessions/--<cwd>--/`). DIR defaults to pi's sessions directory:
/// $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions. Each session is read through its
/// index (built on first use): id, cwd, name, parent session, created (header timestamp),
/// modified (timestamp of the last entry), message count (every branch) and the first user
/// message, as pi's SessionManager.list() reports them. Several sessions are read at once.
/// A summary line ends the run on stderr (`N session(s) under DIR`, or `no sessions found
/// under DIR`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory to look in.
    pub dir: Option<PathBuf>,
    /// Only sessions whose header names this working directory.
    #[arg(long, value_name = "CWD")]
    pub cwd: Option<String>,
    /// One JSON object per session: {"path", "id", "cwd", "name", "parentSession",
    /// "created", "modified", "messageCount", "firstMessage", "index" {"state" (fresh,
    /// caughtUp, rebuilt, unindexed), "reason", "bytes", "lines"}: what reading the session
    /// found of its sidecar index, as in `info --json`}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let explicit = args.dir.is_some();
    let dir = match args.dir.or_else(default_sessions_dir) {
        Some(dir) => dir,
        None => {
            return Err(CliError::Usage(
                "no DIR given and neither $PI_CODING_AGENT_DIR nor $HOME is set".into(),
            ));
        }
    };
    // pi's directory not existing yet just means no sessions; a named one must exist.
    if !explicit && !dir.exists() {
        print_error(&nothing_found(std::slice::from_ref(&dir)));
        return Ok(());
    }
    let files = session_files(&dir)?;
    let mut sessions = Vec::with_capacity(files.len());
    let mut failed = Vec::new();
    for_each_ordered(
        &files,
        |path| session_info_with(path, &crate::sidecars::options()),
        |path, info| {
            match info {
                Ok(info) => {
                    if args
                        .cwd
                        .as_deref()
                        .is_none_or(|cwd| info.cwd.as_deref() == Some(cwd))
                    {
                        sessions.push(info);
                    }
                }
                Err(error) => failed.push((path.clone(), error)),
            }
            Ok(())
        },
    )?;
    sort_newest_first(&mut sessions);
    for (_, error) in &failed {
        print_error(error);
    }
    // A sidecar that had to be built or rebuilt is said so (on stderr, so that the listing
    // itself stays one row per session).
    for session in &sessions {
        if let treelog::IndexState::Rebuilt { reason, .. } = &session.index_state {
            print_error(&format!(
                "{}: index rebuilt ({reason})",
                session.path.display()
            ));
        }
    }
    if !args.json && !sessions.is_empty() {
        out.line(&format!(
            "{:<24}  {:>6}  {:<48}  PATH",
            "MODIFIED", "MSGS", "NAME / FIRST MESSAGE"
        ))?;
    }
    for session in &sessions {
        if args.json {
            let line = json!({
                "path": session.path.display().to_string(),
                "id": session.id,
                "cwd": session.cwd,
                "name": session.name,
                "parentSession": session.parent_session,
                "created": session.created,
                "modified": session.modified,
                "messageCount": session.message_count,
                "firstMessage": session.first_message,
                "index": index_state::to_json(&session.index_state),
            });
            out.line(&line.to_string())?;
        } else {
            let title = match &session.name {
                Some(name) => preview::one_line(name, 46),
                None => preview::one_line(&session.first_message, 46),
            };
            out.line(&format!(
                "{:<24}  {:>6}  {:<48}  {}",
                session.modified.as_deref().unwrap_or("-"),
                session.message_count,
                title,
                session.path.display()
            ))?;
        }
    }
    out.flush()?;
    if sessions.is_empty() && failed.is_empty() {
        print_error(&nothing_found(std::slice::from_ref(&dir)));
    } else {
        let matching = match &args.cwd {
            Some(cwd) => format!(" ({} with cwd {cwd})", sessions.len()),
            None => String::new(),
        };
        print_error(&format!(
            "listed {} session(s) under {}{matching}, {} could not be read",
            files.len() - failed.len(),
            dir.display(),
            failed.len()
        ));
    }
    if !failed.is_empty() {
        return Err(CliError::SomeFailed {
            count: failed.len() as u64,
        });
    }
    Ok(())
}
