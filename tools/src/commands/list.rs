//! `treelog list`: the sessions of a directory or of an `s3://` prefix, newest first.

use std::path::PathBuf;

use serde_json::json;
use treelog::listing::{
    SessionInfo, default_sessions_dir, session_files, session_info_with, sort_newest_first,
};

use super::list_store;

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
///
/// DIR may be an object-store prefix, s3://BUCKET/PREFIX/ (or s3://BUCKET, the whole bucket):
/// the sessions stored there as segment folders NAME.jsonl.d/ (and in its subfolders, one
/// level), each named by its s3:// address and opened with its index from the local cache
/// (--index-dir, else $XDG_CACHE_HOME/treelog; built on first use by reading the log once),
/// several at once. The store is named by the environment, as for push and pull.
///
/// A named DIR may hold Claude Code sessions (~/.claude/projects) or Codex rollouts
/// (~/.codex/sessions), at any depth: they are read whole (read-only, no index) and listed
/// after pi's sessions in a table of their own, latest activity first: last activity, agent,
/// size (KiB, as Claude Code's resume picker writes it), messages, title (the one the
/// client's resume picker shows) and path; with --json one object each: {"path", "agent",
/// "id", "cwd", "title", "created", "modified" (last activity), "messageCount", "bytes",
/// "size"}.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory to look in, or s3://BUCKET/PREFIX/.
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
    /// Only the sessions of this agent: pi, claude (Claude Code) or codex (Codex CLI).
    #[arg(long, value_enum)]
    pub agent: Option<Agent>,
}

/// An agent whose sessions `--agent` keeps.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Pi,
    Claude,
    Codex,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    if let Some(prefix) = args.dir.as_deref().and_then(list_store::prefix_of) {
        let prefix = prefix?;
        let read = list_store::read_sessions(&prefix)?;
        let mut found = Found {
            place: prefix.url(),
            logs: read.len(),
            sessions: Vec::with_capacity(read.len()),
            failed: Vec::new(),
        };
        for info in read {
            match info {
                Ok(info) => found.sessions.push(info),
                Err(error) => found.failed.push(error),
            }
        }
        return report(&args, found, out);
    }
    let explicit = args.dir.is_some();
    let dir = match args.dir.clone().or_else(default_sessions_dir) {
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
    let mut files = session_files(&dir)?;
    // Another agent's files are never read as pi sessions (which writes their sidecars).
    files.retain(|path| super::foreign::detect_file(path).is_none());
    if args.agent.is_some_and(|agent| agent != Agent::Pi) {
        files.clear();
    }
    let mut others = Vec::new();
    if explicit && args.agent != Some(Agent::Pi) {
        others = super::list_agents::files_under(&dir);
        others.retain(|(_, format)| match args.agent {
            Some(Agent::Claude) => *format == treelog::agents::Format::ClaudeCode,
            Some(Agent::Codex) => *format == treelog::agents::Format::Codex,
            _ => true,
        });
    }
    if !others.is_empty() {
        return report_with_others(&args, &dir, &files, &others, out);
    }
    let mut found = Found {
        place: dir.display().to_string(),
        logs: files.len(),
        sessions: Vec::with_capacity(files.len()),
        failed: Vec::new(),
    };
    for_each_ordered(
        &files,
        |path| session_info_with(path, &crate::sidecars::options()),
        |_, info| {
            match info {
                Ok(info) => found.sessions.push(info),
                Err(error) => found.failed.push(error.to_string()),
            }
            Ok(())
        },
    )?;
    report(&args, found, out)
}

/// Lists pi's sessions of `dir` (when it holds any) and then the other agents' `others`.
fn report_with_others(
    args: &Args,
    dir: &std::path::Path,
    files: &[PathBuf],
    others: &[(PathBuf, treelog::agents::Format)],
    out: &mut Out,
) -> Result<(), CliError> {
    let mut failed_pi = 0;
    if !files.is_empty() {
        let mut found = Found {
            place: dir.display().to_string(),
            logs: files.len(),
            sessions: Vec::with_capacity(files.len()),
            failed: Vec::new(),
        };
        for_each_ordered(
            files,
            |path| session_info_with(path, &crate::sidecars::options()),
            |_, info| {
                match info {
                    Ok(info) => found.sessions.push(info),
                    Err(error) => found.failed.push(error.to_string()),
                }
                Ok(())
            },
        )?;
        match report(args, found, out) {
            Err(CliError::SomeFailed { count }) => failed_pi = count,
            other => other?,
        }
    }
    let mut rows = Vec::with_capacity(others.len());
    let mut failed = 0;
    for_each_ordered(
        others,
        |(path, _)| super::list_agents::read_row(path),
        |_, row| {
            match row {
                Ok(row) => rows.push(row),
                Err(error) => {
                    failed += 1;
                    print_error(&error);
                }
            }
            Ok(())
        },
    )?;
    rows.retain(|row| {
        args.cwd
            .as_deref()
            .is_none_or(|cwd| row.cwd.as_deref() == Some(cwd))
    });
    super::list_agents::sort_by_activity(&mut rows);
    super::list_agents::print(&rows, args.json, out)?;
    out.flush()?;
    print_error(&format!(
        "listed {} Claude Code / Codex session(s) under {}, {failed} could not be read",
        rows.len(),
        dir.display()
    ));
    if failed + failed_pi > 0 {
        return Err(CliError::SomeFailed {
            count: failed + failed_pi,
        });
    }
    Ok(())
}

/// The sessions read under one place (a directory, an `s3://` prefix).
struct Found {
    /// The directory or prefix, as messages name it.
    place: String,
    /// Logs found there, read or not.
    logs: usize,
    sessions: Vec<SessionInfo>,
    /// Why each log that could not be read failed (each message names its log).
    failed: Vec<String>,
}

/// Prints the sessions of `found` whose cwd is `--cwd`'s, newest first, one row (or JSON
/// object) each; the logs that could not be read and the sidecars rebuilt on stderr.
fn report(args: &Args, found: Found, out: &mut Out) -> Result<(), CliError> {
    let Found {
        place,
        logs,
        mut sessions,
        failed,
    } = found;
    sessions.retain(|info| {
        args.cwd
            .as_deref()
            .is_none_or(|cwd| info.cwd.as_deref() == Some(cwd))
    });
    sort_newest_first(&mut sessions);
    for error in &failed {
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
        print_error(&format!("no sessions found under {place}"));
    } else {
        let matching = match &args.cwd {
            Some(cwd) => format!(" ({} with cwd {cwd})", sessions.len()),
            None => String::new(),
        };
        print_error(&format!(
            "listed {} session(s) under {place}{matching}, {} could not be read",
            logs - failed.len(),
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
