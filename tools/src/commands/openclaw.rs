//! `treelog openclaw`: OpenClaw's SQLite session store (2026.8 and later), read-only: list its
//! sessions, export one, check what its JSONL importer lost, write the lost lines back out.
//! Also opens `openclaw://` addresses for the commands that read a session.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use treelog::format::time::format_iso_ms;
use treelog::openclaw::{
    self, Address, AgentDb, LineProblem, OpenClawError, SessionReport, SessionSource,
};
use treelog::{Session, SessionOptions, path_component};

use crate::exit::CliError;
use crate::out::Out;

/// Runs of problems listed per session in the text output of `verify` (`--json` lists all).
const PROBLEMS_SHOWN_MAX: usize = 10;

/// OpenClaw's SQLite session store, read-only.
///
/// OpenClaw 2026.8 and later keeps sessions in one SQLite database per agent,
/// STATE_DIR/agents/AGENT/agent/openclaw-agent.sqlite, after its importer (`openclaw doctor
/// --session-sqlite import`) moved the JSONL files to session-sqlite-import-archive/. STATE_DIR
/// defaults to $OPENCLAW_STATE_DIR, else ~/.openclaw. treelog opens the databases read-only
/// and never writes them nor anything under STATE_DIR.
///
/// The commands that read a session (context, path, tree, info, export) take an OpenClaw
/// session as openclaw://[STATE_DIR#]AGENT/SESSION_ID, e.g.
/// `treelog tree openclaw://main/5f1c…` or `treelog info 'openclaw:///srv/oc#main/5f1c…'`:
/// they answer as for the same lines in a JSONL file (its index kept in memory).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    List(ListArgs),
    Export(ExportArgs),
    Verify(VerifyArgs),
    Recover(RecoverArgs),
}

/// Per agent, its sessions: id, key, rows, first and last time.
///
/// Rows are the session's lines; the times are the `created_at` of its first and last rows.
#[derive(clap::Args, Debug)]
struct ListArgs {
    /// OpenClaw's state directory (default: $OPENCLAW_STATE_DIR, else ~/.openclaw).
    state_dir: Option<PathBuf>,
    /// One JSON document: {"stateDir", "agents": [{"agent", "database", "sessions": [{"id",
    /// "key", "rows", "first", "last", "address"}]}]}.
    #[arg(long)]
    json: bool,
}

/// Write a session as JSONL, from its original when possible.
///
/// The original file, byte for byte, when the importer's archive still holds it and its SHA-256 is the manifest's; else the rows' lines in seq order (which
/// OpenClaw rewrote: escapes, numbers, assistant content, the header's id). Says which.
#[derive(clap::Args, Debug)]
struct ExportArgs {
    /// openclaw://[STATE_DIR#]AGENT/SESSION_ID, or AGENT/SESSION_ID in the default state
    /// directory.
    session: String,
    /// The JSONL file to write (refused if it exists).
    file: PathBuf,
}

/// Check the migration: what the importer lost.
///
/// Every original (archived by the importer, or a JSONL still in a sessions folder) against
/// its rows. Reports lines missing (line number and id), dropped
/// duplicate ids, lines changed beyond OpenClaw's rewrites, sessions imported empty, and
/// sessions it could not check (an original gone, a row that does not decode). Exit status 1
/// when anything was lost or could not be checked.
#[derive(clap::Args, Debug)]
struct VerifyArgs {
    /// OpenClaw's state directory (default: $OPENCLAW_STATE_DIR, else ~/.openclaw).
    state_dir: Option<PathBuf>,
    /// One JSON document: {"stateDir", "sessions": [{"agent", "session", "key", "original",
    /// "source" (archive, live), "sha256Matches", "originalLines", "rows", "importedEmpty",
    /// "unchecked", "problems": [{"kind" (missing, dropped-duplicate, changed), "line", "id",
    /// "detail"}]}], "lostLines", "sessionsWithLosses", "sessionsUnchecked"}.
    #[arg(long)]
    json: bool,
}

/// Write the lines the importer lost back out as JSONL that pi can open.
///
/// One file per session with losses, OUT_DIR/AGENT/SESSION_ID.jsonl: the original's header, then each lost or
/// changed line as the original holds it, in file order. Never touches the database.
#[derive(clap::Args, Debug)]
struct RecoverArgs {
    /// OpenClaw's state directory.
    state_dir: PathBuf,
    /// Where to write (created if missing; not inside STATE_DIR).
    out_dir: PathBuf,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    match args.command {
        Command::List(args) => list(args, out),
        Command::Export(args) => export(args, out),
        Command::Verify(args) => verify(args, out),
        Command::Recover(args) => recover(args, out),
    }
}

/// An [`OpenClawError`] as the CLI reports it: `LOCATION: what is wrong`.
pub fn cli_error(error: OpenClawError) -> CliError {
    let text = error.to_string();
    match text.split_once(": ") {
        Some((location, message)) => CliError::input(location, message),
        None => CliError::Usage(text),
    }
}

/// Opens the session `address` names as a read-only session for the reading commands.
pub fn open_address(address: &Address, options: SessionOptions) -> Result<Session, CliError> {
    let storage = openclaw::load_session(address).map_err(cli_error)?;
    Ok(Session::open_storage(Box::new(storage), options)?)
}

/// The state directory named, else the default one; an error naming it when it is not a
/// directory (a mistyped path must not read as a store without sessions).
fn state_dir_or_default(dir: Option<PathBuf>) -> Result<PathBuf, CliError> {
    let dir = dir.unwrap_or_else(openclaw::default_state_dir);
    match std::fs::metadata(&dir) {
        Ok(metadata) if metadata.is_dir() => Ok(dir),
        Ok(_) => Err(CliError::input(
            dir.display().to_string(),
            "not a directory (name OpenClaw's state directory, e.g. ~/.openclaw)",
        )),
        Err(error) => Err(CliError::io(dir, "open OpenClaw's state directory", error)),
    }
}

fn iso(ms: Option<i64>) -> Value {
    ms.map_or(Value::Null, |ms| Value::String(format_iso_ms(ms)))
}

fn list(args: ListArgs, out: &mut Out) -> Result<(), CliError> {
    let state_dir = state_dir_or_default(args.state_dir)?;
    let agents = openclaw::agents(&state_dir).map_err(cli_error)?;
    let mut listed = Vec::new();
    for agent in &agents {
        let db = AgentDb::open(&agent.db_path).map_err(cli_error)?;
        listed.push((agent, db.sessions().map_err(cli_error)?));
    }
    if args.json {
        let agents: Vec<Value> = listed
            .iter()
            .map(|(agent, sessions)| {
                let sessions: Vec<Value> = sessions
                    .iter()
                    .map(|session| {
                        let address = Address {
                            state_dir: state_dir.clone(),
                            agent: agent.id.clone(),
                            session: session.id.clone(),
                        };
                        json!({
                            "id": session.id,
                            "key": session.key,
                            "rows": session.rows,
                            "first": iso(session.first_ms),
                            "last": iso(session.last_ms),
                            "address": address.display(),
                        })
                    })
                    .collect();
                json!({"agent": agent.id, "database": agent.db_path, "sessions": sessions})
            })
            .collect();
        return out.line(&json!({"stateDir": state_dir, "agents": agents}).to_string());
    }
    if listed.is_empty() {
        crate::terminal::eprint_line(&format!(
            "no OpenClaw agent database under {}",
            state_dir.display()
        ));
        return Ok(());
    }
    for (agent, sessions) in &listed {
        out.line(&format!(
            "agent {} ({}): {} session(s)",
            agent.id,
            agent.db_path.display(),
            sessions.len()
        ))?;
        for session in sessions {
            let time = |ms: Option<i64>| ms.map_or_else(|| "-".to_owned(), format_iso_ms);
            out.line(&format!(
                "  {}  key {}  {} row(s)  {} .. {}",
                session.id,
                session.key.as_deref().unwrap_or("-"),
                session.rows,
                time(session.first_ms),
                time(session.last_ms)
            ))?;
        }
    }
    Ok(())
}

fn parse_session(text: &str) -> Result<Address, CliError> {
    let full = if text.starts_with(openclaw::SCHEME) {
        text.to_owned()
    } else {
        format!("{}{text}", openclaw::SCHEME)
    };
    match Address::parse(&full) {
        Some(parsed) => parsed.map_err(cli_error),
        None => Err(cli_error(OpenClawError::BadAddress(text.to_owned()))),
    }
}

/// Creates `file` (refusing to replace one) and writes `bytes` to it, synced.
fn write_new(file: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let mut handle = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)
        .map_err(|e| CliError::io(file, "create the file", e))?;
    handle
        .write_all(bytes)
        .and_then(|()| handle.sync_all())
        .map_err(|e| CliError::io(file, "write the file", e))
}

fn export(args: ExportArgs, out: &mut Out) -> Result<(), CliError> {
    let address = parse_session(&args.session)?;
    let agent = openclaw::agent(&address.state_dir, &address.agent).map_err(cli_error)?;
    let db = AgentDb::open(&agent.db_path).map_err(cli_error)?;
    let rows = db.rows(&address.session).map_err(cli_error)?;
    let archived = openclaw::archived_transcripts(&address.state_dir).map_err(cli_error)?;
    let original = archived.iter().rev().find(|found| {
        found.agent == address.agent
            && found.file_session_id().as_deref() == Some(address.session.as_str())
    });
    let mut why_not = String::new();
    if let Some(original) = original {
        match std::fs::read(&original.archive_path) {
            Ok(bytes) => {
                let sha256 = openclaw::sha256_hex(&bytes);
                if original.sha256.as_deref() == Some(sha256.as_str()) {
                    write_new(&args.file, &bytes)?;
                    return out.line(&format!(
                        "{}: copied the original byte for byte from {} ({} bytes, sha256 {sha256} as the migration manifest records)",
                        args.file.display(),
                        original.archive_path.display(),
                        bytes.len()
                    ));
                }
                why_not = format!(
                    " (the archived original {} has sha256 {sha256}, not the manifest's {})",
                    original.archive_path.display(),
                    original.sha256.as_deref().unwrap_or("(none)")
                );
            }
            Err(error) => {
                why_not = format!(
                    " (the archived original {} cannot be read: {})",
                    original.archive_path.display(),
                    treelog::io_reason(&error)
                );
            }
        }
    }
    write_new(&args.file, &openclaw::session_bytes(&rows))?;
    out.line(&format!(
        "{}: wrote the {} row(s) of {} in seq order; OpenClaw rewrote these lines when it imported them (JSON.stringify of each parsed line), so they may differ from the original file{why_not}",
        args.file.display(),
        rows.len(),
        address.display()
    ))
}

fn verify(args: VerifyArgs, out: &mut Out) -> Result<(), CliError> {
    let state_dir = state_dir_or_default(args.state_dir)?;
    let reports = openclaw::verify_state_dir(&state_dir).map_err(cli_error)?;
    let lost_lines: usize = reports.iter().map(|report| report.problems.len()).sum();
    let with_losses = reports.iter().filter(|report| report.lost()).count();
    let unchecked = reports
        .iter()
        .filter(|report| report.is_unchecked())
        .count();
    if args.json {
        let sessions: Vec<Value> = reports.iter().map(report_json).collect();
        out.line(
            &json!({
                "stateDir": state_dir,
                "sessions": sessions,
                "lostLines": lost_lines,
                "sessionsWithLosses": with_losses,
                "sessionsUnchecked": unchecked,
            })
            .to_string(),
        )?;
    } else {
        for report in &reports {
            report_text(report, out)?;
        }
        let not_checked = if unchecked == 0 {
            String::new()
        } else {
            format!("; {unchecked} session(s) could not be checked")
        };
        out.line(&format!(
            "{} session(s) checked under {}: {}{not_checked}",
            reports.len(),
            state_dir.display(),
            if with_losses == 0 {
                "nothing lost".to_owned()
            } else {
                format!("{lost_lines} line(s) lost or changed in {with_losses} session(s)")
            }
        ))?;
    }
    if with_losses > 0 || unchecked > 0 {
        out.flush()?;
        return Err(CliError::ProblemsFound {
            count: (lost_lines + unchecked) as u64,
        });
    }
    Ok(())
}

fn source_json(source: &SessionSource) -> (&'static str, Value) {
    match source {
        SessionSource::Archive { sha256_matches, .. } => ("archive", json!(sha256_matches)),
        SessionSource::Live { .. } => ("live", Value::Null),
    }
}

fn problem_json(problem: &LineProblem) -> Value {
    json!({
        "kind": problem.kind.as_str(),
        "line": problem.line,
        "id": problem.id,
        "detail": problem.detail,
    })
}

fn report_json(report: &SessionReport) -> Value {
    let (source, sha256_matches) = source_json(&report.source);
    json!({
        "agent": report.agent,
        "session": report.session,
        "key": report.key,
        "original": report.source.path(),
        "source": source,
        "sha256Matches": sha256_matches,
        "originalLines": report.original_lines,
        "rows": report.rows,
        "importedEmpty": report.imported_empty(),
        "unchecked": report.unchecked,
        "problems": report.problems.iter().map(problem_json).collect::<Vec<_>>(),
    })
}

fn report_text(report: &SessionReport, out: &mut Out) -> Result<(), CliError> {
    let name = format!(
        "{}/{}{}",
        report.agent,
        report.session,
        report
            .key
            .as_ref()
            .map_or_else(String::new, |key| format!(" ({key})"))
    );
    let source = match &report.source {
        SessionSource::Archive {
            path,
            sha256_matches,
        } => format!(
            "archived original {}{}",
            path.display(),
            match sha256_matches {
                Some(true) => ", sha256 as the manifest records",
                Some(false) => ", sha256 NOT the manifest's",
                None => "",
            }
        ),
        SessionSource::Live { path } => format!("JSONL still in place {}", path.display()),
    };
    if let Some(reason) = &report.unchecked {
        return out.line(&format!("{name}: not checked: {reason} ({source})"));
    }
    let counts = format!(
        "{} line(s), {} row(s); {source}",
        report.original_lines, report.rows
    );
    if !report.lost() {
        return out.line(&format!("{name}: ok, {counts}"));
    }
    let what = if report.imported_empty() {
        "imported EMPTY, lost all".to_owned()
    } else {
        format!("LOST {} of", report.problems.len())
    };
    out.line(&format!("{name}: {what} {counts}"))?;
    let groups = runs(&report.problems);
    for group in groups.iter().take(PROBLEMS_SHOWN_MAX) {
        out.line(&group_text(group))?;
    }
    if groups.len() > PROBLEMS_SHOWN_MAX {
        out.line(&format!(
            "  … and {} more line(s) (--json lists them all)",
            groups[PROBLEMS_SHOWN_MAX..]
                .iter()
                .map(|group| group.len())
                .sum::<usize>()
        ))?;
    }
    Ok(())
}

/// `path` made absolute with symlinks resolved, as far as it exists (a directory not created
/// yet keeps its remaining components).
fn resolved(path: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(found) = std::fs::canonicalize(existing) {
            return Some(rest.iter().rev().fold(found, |dir, name| dir.join(name)));
        }
        rest.push(existing.file_name()?.to_owned());
        existing = match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
    }
}

fn recover(args: RecoverArgs, out: &mut Out) -> Result<(), CliError> {
    let state_dir = state_dir_or_default(Some(args.state_dir.clone()))?;
    if let (Some(out_dir), Some(state_dir)) = (resolved(&args.out_dir), resolved(&args.state_dir))
        && out_dir.starts_with(&state_dir)
    {
        return Err(CliError::input(
            args.out_dir.display().to_string(),
            format!(
                "inside OpenClaw's state directory {}; treelog writes nothing there, name another directory",
                args.state_dir.display()
            ),
        ));
    }
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| CliError::io(&args.out_dir, "create the directory", e))?;
    let reports = openclaw::verify_state_dir(&state_dir).map_err(cli_error)?;
    let mut written = 0;
    for report in reports.iter().filter(|report| report.lost()) {
        let original = std::fs::read(report.source.path())
            .map_err(|e| CliError::io(report.source.path(), "read the original", e))?;
        let bytes = openclaw::recover_lines(&original, &report.problems);
        // Ids read from the state directory name files only encoded: `../x` stays inside.
        let dir = args.out_dir.join(&*path_component::encode(&report.agent));
        std::fs::create_dir_all(&dir).map_err(|e| CliError::io(&dir, "create the directory", e))?;
        let file = dir.join(format!("{}.jsonl", path_component::encode(&report.session)));
        write_new(&file, &bytes)?;
        written += 1;
        out.line(&format!(
            "{}: {} lost or changed line(s) of {} (with its header line), in file order",
            file.display(),
            report.problems.len(),
            report.source.path().display()
        ))?;
    }
    out.line(&format!(
        "{written} session(s) with losses written under {}",
        args.out_dir.display()
    ))
}

/// `problems` cut into runs of consecutive lines with the same kind and detail (everything
/// after a bad line, typically), each run shown on one line.
fn runs(problems: &[LineProblem]) -> Vec<&[LineProblem]> {
    let mut groups = Vec::new();
    let mut start = 0;
    for at in 1..=problems.len() {
        let continues = at < problems.len() && {
            let (before, here) = (&problems[at - 1], &problems[at]);
            here.line == before.line + 1 && here.kind == before.kind && here.detail == before.detail
        };
        if !continues {
            groups.push(&problems[start..at]);
            start = at;
        }
    }
    groups
}

fn group_text(group: &[LineProblem]) -> String {
    let (first, last) = (&group[0], &group[group.len() - 1]);
    let kind = first.kind.as_str();
    if group.len() == 1 {
        let id = first
            .id
            .as_ref()
            .map_or_else(String::new, |id| format!(" (id {id})"));
        return format!("  line {}{id}: {kind}: {}", first.line, first.detail);
    }
    let ids = match (&first.id, &last.id) {
        (Some(a), Some(b)) => format!(" (ids {a} … {b})"),
        _ => String::new(),
    };
    format!(
        "  lines {}–{}{ids}: {kind}: {} ({} lines)",
        first.line,
        last.line,
        first.detail,
        group.len()
    )
}
