//! `treelog list` over Claude Code's and Codex's folders (`~/.claude/projects`,
//! `~/.codex/sessions`): their session files found at any depth, read whole (read-only), one
//! row each by last activity, titled as their clients' resume pickers title them.

use std::path::{Path, PathBuf};

use serde_json::json;
use treelog::agents::{Format, summarize};

use crate::exit::CliError;
use crate::out::Out;
use crate::preview;

/// Directory levels searched below the named one (Codex: `YYYY/MM/DD/`).
const DEPTH_MAX: usize = 8;

/// One session of another agent.
pub struct Row {
    pub path: PathBuf,
    pub format: Format,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub created: Option<String>,
    pub last_activity: Option<String>,
    pub message_count: u64,
    pub bytes: u64,
}

/// The Claude Code sessions and Codex rollouts under `dir`, by path. A session's own folder
/// (`<session>/subagents/`, `<session>/tool-results/`) holds parts of it, not sessions, and
/// folders whose name starts with `.` are not entered; links are not followed.
pub fn files_under(dir: &Path) -> Vec<(PathBuf, Format)> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((at, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                if depth < DEPTH_MAX
                    && !name.starts_with('.')
                    && name != "subagents"
                    && name != "tool-results"
                {
                    stack.push((path, depth + 1));
                }
            } else if file_type.is_file()
                && name.ends_with(".jsonl")
                && let Some(format) = super::foreign::detect_file(&path)
            {
                found.push((path, format));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The row of one session file.
pub fn read_row(path: &Path) -> Result<Row, CliError> {
    let foreign = super::foreign::load(path)?;
    let summary = summarize(&foreign.bytes, &foreign.transcript);
    Ok(Row {
        path: path.to_path_buf(),
        format: foreign.format(),
        session_id: summary.session_id,
        cwd: summary.cwd,
        title: summary.title,
        created: summary.created,
        last_activity: summary.last_activity,
        message_count: summary.message_count,
        bytes: foreign.bytes.len() as u64,
    })
}

/// Latest activity first; equal ones by path.
pub fn sort_by_activity(rows: &mut [Row]) {
    rows.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.path.cmp(&b.path))
    });
}

/// A size as Claude Code's resume picker writes it: KiB with one decimal, `263.4KB`.
pub fn picker_size(bytes: u64) -> String {
    format!("{:.1}KB", bytes as f64 / 1024.0)
}

/// Prints `rows`: one JSON object each, or a table with its header.
pub fn print(rows: &[Row], json_out: bool, out: &mut Out) -> Result<(), CliError> {
    if !json_out && !rows.is_empty() {
        out.line(&format!(
            "{:<24}  {:<6}  {:>9}  {:>6}  {:<48}  PATH",
            "LAST ACTIVITY", "AGENT", "SIZE", "MSGS", "TITLE"
        ))?;
    }
    for row in rows {
        if json_out {
            let line = json!({
                "path": row.path.display().to_string(),
                "agent": row.format.agent_name(),
                "id": row.session_id,
                "cwd": row.cwd,
                "title": row.title,
                "created": row.created,
                "modified": row.last_activity,
                "messageCount": row.message_count,
                "bytes": row.bytes,
                "size": picker_size(row.bytes),
            });
            out.line(&line.to_string())?;
        } else {
            out.line(&format!(
                "{:<24}  {:<6}  {:>9}  {:>6}  {:<48}  {}",
                row.last_activity.as_deref().unwrap_or("-"),
                row.format.agent_name(),
                picker_size(row.bytes),
                row.message_count,
                preview::one_line(row.title.as_deref().unwrap_or("-"), 46),
                row.path.display()
            ))?;
        }
    }
    Ok(())
}
