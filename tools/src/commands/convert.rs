//! `treelog convert`: a Claude Code session or a Codex rollout written out as a pi v3
//! session (the mapping is `treelog::agents::to_pi`'s), with what pi has no place for listed.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use treelog::agents::Format;
use treelog::agents::to_pi::{self, Converted, NotCarried, Options};
use treelog::format::ids::new_session_id;
use treelog::fs_safe;

use crate::exit::CliError;
use crate::out::Out;

/// Line numbers listed per kind in the text report (`--json` lists every item).
const LINES_SHOWN_MAX: usize = 6;

/// Carry a Claude Code session or a Codex rollout over to pi.
///
/// Writes a pi v3 session (format-spec/convert.md): the conversation's user, assistant and
/// tool result messages with their tool calls and thinking, model changes, compactions, and
/// Claude Code's title as the session name. By default the active branch; --all-branches
/// carries every branch of a Claude Code session, the active leaf last (pi's leaf). What pi
/// has no place for (attachments, the clients' metadata and events, other branches...) is
/// listed, each with its line and why. The source is only read.
///
/// The session goes to OUT, else into pi's sessions folder for the source's working
/// directory ($PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions), named as pi names
/// its files, so that `pi --resume` lists it. It gets a new session id and the source file's
/// permissions at most.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The Claude Code session (~/.claude/projects/…/ID.jsonl) or Codex rollout
    /// (~/.codex/sessions/…/rollout-….jsonl).
    file: PathBuf,
    /// The agent to convert to (only pi).
    #[arg(long, value_enum)]
    to: Target,
    /// Every branch, not only the active one.
    #[arg(long)]
    all_branches: bool,
    /// Where to write the session (`-` for standard output; the report then goes to stderr).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
    /// Replace OUT when it exists.
    #[arg(long)]
    force: bool,
    /// The report as one JSON document: {"output", "source", "sessionId", "entries", "leaf",
    /// "notCarried": [{"line", "offset", "kind", "reason"}]}.
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Target {
    Pi,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let Target::Pi = args.to;
    let bytes = read_source(&args.file)?;
    let fallback_cwd = std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let options = Options {
        all_branches: args.all_branches,
        session_id: new_session_id(now_ms),
        fallback_cwd,
    };
    let converted = to_pi::to_pi(&bytes, &options)
        .map_err(|error| CliError::input(args.file.display().to_string(), error.to_string()))?;
    let to_stdout = args.output.as_deref() == Some(Path::new("-"));
    let output = match &args.output {
        Some(path) => path.clone(),
        None => default_output(&converted, &options.session_id)?,
    };
    if to_stdout {
        std::io::stdout()
            .write_all(converted.text.as_bytes())
            .map_err(CliError::stdout)?;
    } else {
        let mode = fs_safe::mode_derived_from(&args.file);
        write_session(&output, converted.text.as_bytes(), mode, args.force)?;
    }
    let report = if args.json {
        vec![json_report(
            &converted,
            &output,
            &options.session_id,
            to_stdout,
        )]
    } else {
        text_report(&converted, &output, &args.file, to_stdout)
    };
    for line in report {
        if to_stdout {
            crate::terminal::eprint_line(&line);
        } else {
            out.line(&line)?;
        }
    }
    Ok(())
}

/// The source's bytes: a regular file only, never through a FIFO or a device.
fn read_source(path: &Path) -> Result<Vec<u8>, CliError> {
    let mut file = fs_safe::open_regular(path, OpenOptions::new().read(true))
        .map_err(|e| CliError::io(path, "open the session", e))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| CliError::io(path, "read the session", e))?;
    Ok(bytes)
}

/// pi's file for the session: `<sessions>/--<cwd>--/<timestamp>_<id>.jsonl`, the timestamp's
/// `:` and `.` as `-` (pi's `SessionManager` names new files so). The folder is made private
/// when it does not exist; an existing one is taken as it is when it is this user's.
fn default_output(converted: &Converted, session_id: &str) -> Result<PathBuf, CliError> {
    let sessions = treelog::listing::default_sessions_dir().ok_or_else(|| {
        CliError::Usage(
            "no pi sessions folder: HOME and PI_CODING_AGENT_DIR are unset; give -o OUT".into(),
        )
    })?;
    let dir = treelog::listing::session_dir_for_cwd(&sessions, &converted.cwd);
    let exists =
        fs_safe::check_owned_dir(&dir).map_err(|e| CliError::io(&dir, "use the folder", e))?;
    if !exists {
        fs_safe::create_owned_dir(&dir, 0o700)
            .map_err(|e| CliError::io(&dir, "create the folder", e))?;
    }
    let stamp = converted.timestamp.replace([':', '.'], "-");
    Ok(dir.join(format!("{stamp}_{session_id}.jsonl")))
}

/// Writes the session: a new file (never an existing one, never through a link), or with
/// `force` a whole new file renamed over OUT.
fn write_session(path: &Path, bytes: &[u8], mode: u32, force: bool) -> Result<(), CliError> {
    let write = |target: &Path, create: fn(&Path, u32) -> std::io::Result<std::fs::File>| {
        let mut file = create(target, mode)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    if !force {
        return write(path, fs_safe::create_new_file).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                CliError::input(path.display().to_string(), "exists (--force replaces it)")
            } else {
                CliError::io(path, "write the session", e)
            }
        });
    }
    let name = path
        .file_name()
        .ok_or_else(|| CliError::input(path.display().to_string(), "names no file"))?;
    let mut partial = name.to_os_string();
    partial.push(format!(".{}.partial", std::process::id()));
    let partial = path.with_file_name(partial);
    let result =
        write(&partial, fs_safe::create_own_file).and_then(|()| std::fs::rename(&partial, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result.map_err(|e| CliError::io(path, "write the session", e))
}

fn source_name(format: Format) -> &'static str {
    match format {
        Format::ClaudeCode => "claude-code",
        Format::Codex => "codex",
        Format::Pi => "pi",
    }
}

fn json_report(converted: &Converted, output: &Path, session_id: &str, to_stdout: bool) -> String {
    let items: Vec<_> = converted
        .not_carried
        .iter()
        .map(|item| {
            json!({ "line": item.line, "offset": item.offset, "kind": item.kind, "reason": item.reason })
        })
        .collect();
    json!({
        "output": if to_stdout { "-".to_owned() } else { output.display().to_string() },
        "source": source_name(converted.source),
        "sessionId": session_id,
        "entries": converted.entries,
        "leaf": converted.leaf,
        "notCarried": items,
    })
    .to_string()
}

/// The text report: what was written, then what was not carried, one line per kind.
fn text_report(
    converted: &Converted,
    output: &Path,
    source: &Path,
    to_stdout: bool,
) -> Vec<String> {
    let agent = match converted.source {
        Format::ClaudeCode => "a Claude Code session",
        Format::Codex => "a Codex rollout",
        Format::Pi => "a pi session",
    };
    let target = if to_stdout {
        "standard output".to_owned()
    } else {
        output.display().to_string()
    };
    let mut lines = vec![format!(
        "wrote {target}: a pi session of {} entries from {agent}, {}",
        converted.entries,
        source.display()
    )];
    if converted.not_carried.is_empty() {
        lines.push("everything was carried over".into());
        return lines;
    }
    let mut kinds: BTreeMap<&str, Vec<&NotCarried>> = BTreeMap::new();
    for item in &converted.not_carried {
        kinds.entry(item.kind.as_str()).or_default().push(item);
    }
    lines.push(format!(
        "not carried over: {} items of {} kinds (--json lists each)",
        converted.not_carried.len(),
        kinds.len()
    ));
    for (kind, items) in kinds {
        let mut numbers: Vec<String> = items
            .iter()
            .take(LINES_SHOWN_MAX)
            .map(|item| item.line.to_string())
            .collect();
        if items.len() > LINES_SHOWN_MAX {
            numbers.push("…".into());
        }
        let word = if items.len() == 1 { "line" } else { "lines" };
        lines.push(format!(
            "  {kind} ×{} ({word} {}): {}",
            items.len(),
            numbers.join(", "),
            items[0].reason
        ));
    }
    lines
}
