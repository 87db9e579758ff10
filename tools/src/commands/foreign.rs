//! Claude Code sessions and Codex rollouts in the reading commands: the format detected from
//! a file's first lines, the file read whole through `treelog::agents` (no sidecar is kept
//! for them: docs/agents.md), and `info`, `tree`, `context`, `export` and `verify` answered
//! from it. The writing commands refuse them ([`refuse`]); nothing here writes a byte.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use treelog::agents::{Format, Transcript, claude_code, codex, line_text, summarize};

use crate::exit::CliError;
use crate::out::Out;
use crate::preview;

/// Bytes of a file's start read first to tell its format: pi's header and Codex's
/// `session_meta` are the first line.
const HEAD_BYTES_FIRST: u64 = 4 << 10;
/// Bytes read at most when those do not decide: a Claude Code session may open with long
/// attachment lines.
const HEAD_BYTES_MAX: u64 = 1 << 20;

/// A Claude Code session or Codex rollout, read.
pub struct Foreign {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub transcript: Transcript,
    /// The offset of every `\n` in `bytes`, in order: line numbers by binary search.
    newlines: Vec<usize>,
}

/// The format of a local regular file when it is a Claude Code session or a Codex rollout;
/// `None` for a pi session, an address (`openclaw://`, `s3://`), or what cannot be read (the
/// pi path then reports it as it always has).
pub fn detect_file(path: &Path) -> Option<Format> {
    let text = path.to_str()?;
    if text.starts_with("openclaw://") || text.starts_with("s3://") {
        return None;
    }
    // Checked before the open: opening a FIFO would wait for a writer.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut head = Vec::new();
    let mut file = file.take(HEAD_BYTES_FIRST);
    file.read_to_end(&mut head).ok()?;
    let mut format = treelog::agents::detect(&head);
    if format.is_none() && head.len() as u64 == HEAD_BYTES_FIRST {
        file.set_limit(HEAD_BYTES_MAX - HEAD_BYTES_FIRST);
        file.read_to_end(&mut head).ok()?;
        format = treelog::agents::detect(&head);
    }
    format.filter(|format| *format != Format::Pi)
}

/// `found` with every Claude Code session and Codex rollout turned into [`refuse`]'s error:
/// for the commands that open each log as a pi session (which writes its sidecar).
pub fn refuse_found(found: Vec<crate::files::Found>) -> Vec<crate::files::Found> {
    found
        .into_iter()
        .map(|found| match found {
            Ok(log) => match detect_file(&log.path) {
                Some(format) => Err(refuse(&log.path, format)),
                None => Ok(log),
            },
            error => error,
        })
        .collect()
}

/// [`refuse`] when `path` is another agent's file.
pub fn refuse_other(path: &Path) -> Result<(), CliError> {
    match detect_file(path) {
        Some(format) => Err(refuse(path, format)),
        None => Ok(()),
    }
}

/// Reads a file [`detect_file`] named as `format`'s.
pub fn load(path: &Path) -> Result<Foreign, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::io(path, "read the session", e))?;
    let transcript = treelog::agents::read(&bytes).ok_or_else(|| {
        CliError::input(
            path.display().to_string(),
            "no longer a Claude Code or Codex session (the file changed while it was read)",
        )
    })?;
    let newlines = (0..bytes.len()).filter(|&i| bytes[i] == b'\n').collect();
    Ok(Foreign {
        path: path.to_path_buf(),
        bytes,
        transcript,
        newlines,
    })
}

/// The error of a command that writes, or reads only pi sessions, given another agent's file.
pub fn refuse(path: &Path, format: Format) -> CliError {
    CliError::input(
        path.display().to_string(),
        format!(
            "a {} session: treelog reads it (info, tree, context, export, verify, list, \
             search) but never writes it, and this command works on pi sessions only",
            format.display_name()
        ),
    )
}

impl Foreign {
    pub fn format(&self) -> Format {
        self.transcript.format
    }

    /// The bytes of a line of the transcript.
    fn line_bytes(&self, line: usize) -> &[u8] {
        let line = &self.transcript.lines[line];
        &self.bytes[line.offset..line.offset + line.len]
    }

    /// The 1-based line number of the byte at `offset`.
    pub fn line_number(&self, offset: usize) -> u64 {
        self.newlines.partition_point(|&newline| newline < offset) as u64 + 1
    }

    /// The entries on the path from the root to the leaf.
    fn active_path(&self) -> Vec<usize> {
        self.transcript
            .leaf
            .map(|leaf| self.transcript.path_to(leaf))
            .unwrap_or_default()
    }

    /// The id an entry is shown by: Claude Code's `uuid`, a Codex line's number.
    fn entry_id(&self, entry: usize) -> String {
        match &self.transcript.entries[entry].id {
            Some(id) => id.clone(),
            None => format!(
                "line {}",
                self.line_number(self.transcript.line_of(entry).offset)
            ),
        }
    }
}

/// `treelog info` of another agent's session.
pub fn info(foreign: &Foreign, json_out: bool, out: &mut Out) -> Result<(), CliError> {
    let summary = summarize(&foreign.bytes, &foreign.transcript);
    let leaf = foreign.transcript.leaf.map(|leaf| foreign.entry_id(leaf));
    let info = json!({
        "path": foreign.path.display().to_string(),
        "agent": foreign.format().agent_name(),
        "sessionId": summary.session_id,
        "cwd": summary.cwd,
        "title": summary.title,
        "created": summary.created,
        "lastActivity": summary.last_activity,
        "leafId": leaf,
        "lineCount": foreign.transcript.lines.len(),
        "entryCount": foreign.transcript.entries.len(),
        "messageCount": summary.message_count,
        "countsByType": summary.counts_by_type,
        "problemCount": foreign.transcript.problems.len(),
        "logBytes": foreign.bytes.len(),
        "index": null,
    });
    if json_out {
        return out.line(&info.to_string());
    }
    let text = |value: &Value| match value {
        Value::Null => "-".to_string(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let by_type: Vec<String> = summary
        .counts_by_type
        .iter()
        .map(|(kind, count)| format!("{kind} {count}"))
        .collect();
    out.line(&format!("file:        {}", foreign.path.display()))?;
    out.line(&format!(
        "agent:       {} (read-only)",
        foreign.format().display_name()
    ))?;
    out.line(&format!(
        "session:     {} (cwd {})",
        text(&info["sessionId"]),
        text(&info["cwd"])
    ))?;
    out.line(&format!("title:       {}", text(&info["title"])))?;
    out.line(&format!("created:     {}", text(&info["created"])))?;
    out.line(&format!("last active: {}", text(&info["lastActivity"])))?;
    out.line(&format!("leaf:        {}", text(&info["leafId"])))?;
    out.line(&format!(
        "lines:       {} ({}), {} tree entries, {} messages",
        foreign.transcript.lines.len(),
        by_type.join(", "),
        foreign.transcript.entries.len(),
        summary.message_count
    ))?;
    out.line(&format!(
        "problems:    {} (treelog verify lists them)",
        foreign.transcript.problems.len()
    ))?;
    out.line(&format!("log:         {} bytes", foreign.bytes.len()))?;
    out.line("index:       none (another agent's file is read whole; no sidecar is kept)")
}

/// `treelog context` of another agent's session: `{"agent","messages"}` (Claude Code's
/// messages from its leaf's path; Codex's Responses API input items).
pub fn context(foreign: &Foreign, out: &mut Out) -> Result<(), CliError> {
    let messages = match foreign.format() {
        Format::ClaudeCode => claude_code::context(&foreign.bytes, &foreign.transcript),
        _ => codex::context(&foreign.bytes, &foreign.transcript),
    };
    let line = json!({"agent": foreign.format().agent_name(), "messages": messages});
    out.line(&line.to_string())
}

/// `treelog tree` of another agent's session: with `json_out` one object per entry in file
/// order, else an indented drawing, depth first, the active path marked `*`.
pub fn tree(foreign: &Foreign, json_out: bool, out: &mut Out) -> Result<(), CliError> {
    let transcript = &foreign.transcript;
    let active: std::collections::HashSet<usize> = foreign.active_path().into_iter().collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); transcript.entries.len()];
    let mut roots = Vec::new();
    for (index, entry) in transcript.entries.iter().enumerate() {
        match entry.parent {
            Some(parent) => children[parent].push(index),
            None => roots.push(index),
        }
    }
    // Depth first with an explicit stack (no recursion over the tree); children in file order.
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((entry, depth)) = stack.pop() {
        let line = transcript.line_of(entry);
        let text = line_text(foreign.line_bytes(transcript.entries[entry].line));
        if json_out {
            let record = &transcript.entries[entry];
            let row = json!({
                "id": foreign.entry_id(entry),
                "parentId": record.parent.map(|p| foreign.entry_id(p)),
                "logicalParentId": record.logical_parent.map(|p| foreign.entry_id(p)),
                "line": foreign.line_number(line.offset),
                "type": line.kind,
                "subtype": line.subtype,
                "role": text.as_ref().and_then(|t| t.role.clone()),
                "depth": depth,
                "sidechain": record.sidechain,
                "activePath": active.contains(&entry),
            });
            out.line(&row.to_string())?;
        } else {
            let kind = match &line.subtype {
                Some(subtype) => format!("{}/{subtype}", line.kind),
                None => line.kind.clone(),
            };
            let role = text
                .as_ref()
                .and_then(|t| t.role.clone())
                .filter(|role| *role != line.kind)
                .map_or(String::new(), |role| format!(" {role}"));
            let preview = text.as_ref().map_or(String::new(), |t| {
                format!(": {}", preview::one_line(&t.text, 60))
            });
            out.line(&format!(
                "{}{}{kind}{role}{preview}",
                if active.contains(&entry) { "* " } else { "  " },
                "  ".repeat(depth)
            ))?;
        }
        // A child of the same single parent stays at its depth: linear runs do not indent.
        let kids = &children[entry];
        let child_depth = if kids.len() > 1 { depth + 1 } else { depth };
        stack.extend(kids.iter().rev().map(|&k| (k, child_depth)));
    }
    Ok(())
}

/// `treelog export` of another agent's session: Markdown of the active path's messages, or
/// with `json_out` `{"agent","path","lines"}` with every line of the file as its object.
pub fn export(foreign: &Foreign, json_out: bool, out: &mut Out) -> Result<(), CliError> {
    if json_out {
        let lines: Vec<Value> = (0..foreign.transcript.lines.len())
            .filter_map(|line| serde_json::from_slice(foreign.line_bytes(line)).ok())
            .collect();
        let doc = json!({
            "agent": foreign.format().agent_name(),
            "path": foreign.path.display().to_string(),
            "lines": lines,
        });
        return out.line(&doc.to_string());
    }
    let summary = summarize(&foreign.bytes, &foreign.transcript);
    let title = summary.title.as_deref().unwrap_or("(untitled)");
    let mut doc = format!(
        "# {}\n\n{} session {}\n",
        preview::one_line(title, 200),
        foreign.format().display_name(),
        summary.session_id.as_deref().unwrap_or("-")
    );
    for entry in foreign.active_path() {
        let Some(text) = line_text(foreign.line_bytes(foreign.transcript.entries[entry].line))
        else {
            continue;
        };
        let heading = match (&text.role, text.type_name) {
            (Some(role), _) => role.clone(),
            (None, kind) => kind.to_owned(),
        };
        doc.push_str(&format!("\n## {heading}\n\n{}\n", text.text));
    }
    out.text_block(&doc)
}

/// `treelog verify` of another agent's session, as a report the verify command prints.
pub fn verify(path: &Path) -> Result<treelog::verify::Report, CliError> {
    use treelog::agents::ProblemKind as Found;
    use treelog::verify::{Problem, ProblemKind};
    let foreign = load(path)?;
    let problems = foreign
        .transcript
        .problems
        .iter()
        .map(|problem| {
            let (kind, message) = match &problem.kind {
                Found::NotJson => (ProblemKind::Unparseable, "not a JSON object".to_owned()),
                Found::NoType => (ProblemKind::Opaque, "no string `type`".to_owned()),
                Found::NulPadding => (
                    ProblemKind::TornTail,
                    "NUL bytes before the line (a write torn at a crash)".to_owned(),
                ),
                Found::MissingParent(id) => (
                    ProblemKind::DanglingParent,
                    format!("its parent {id} is no earlier entry of the file"),
                ),
                Found::DuplicateId(id) => (
                    ProblemKind::DuplicateId,
                    format!("the id {id} was an earlier entry's"),
                ),
                Found::OrdinalMismatch { expected, found } => (
                    ProblemKind::Opaque,
                    format!(
                        "ordinal {} where {expected} was due (a line lost or repeated)",
                        found.map_or("missing".to_owned(), |f| f.to_string())
                    ),
                ),
            };
            Problem {
                kind,
                line: Some(foreign.line_number(problem.offset)),
                offset_bytes: Some(problem.offset as u64),
                message: format!("{} session: {message}", foreign.format().display_name()),
            }
        })
        .collect();
    Ok(treelog::verify::Report {
        problems,
        index_state: treelog::IndexState::Unindexed {
            reason: format!(
                "a {} session, read whole: no sidecar is kept",
                foreign.format().display_name()
            ),
            damaged: false,
        },
        line_count: foreign.newlines.len() as u64
            + u64::from(foreign.bytes.last().is_some_and(|&b| b != b'\n')),
        entry_count: foreign.transcript.entries.len() as u64,
        log_len_bytes: foreign.bytes.len() as u64,
    })
}
