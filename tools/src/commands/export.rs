//! `treelog export`: the active branch as a Markdown conversation, or the context as JSON.

use std::path::PathBuf;

use serde_json::Value;
use treelog::audit::{AuditScope, LeftClass};
use treelog::{EntryKind, JsonText, Session};

use crate::exit::CliError;
use crate::out::Out;
use crate::preview::content_text;

/// Export the active branch as Markdown, or its context as JSON.
///
/// Markdown: every entry from the root to the leaf as a conversation: `## User`,
/// `## Assistant` (thinking quoted, tool calls as fenced JSON), tool results and bash runs as
/// fenced text, compaction and branch summaries, model and thinking-level changes in italics.
/// JSON: the context for the leaf, as `treelog context` prints it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl), or an OpenClaw session in its SQLite store:
    /// openclaw://[STATE_DIR#]AGENT/SESSION_ID (read-only; see `treelog openclaw --help`).
    pub file: PathBuf,
    /// Export the branch ending at this entry instead of the session's leaf.
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
    /// Export only the messages `treelog audit` finds at risk or dropped, as the context held
    /// them just before the compaction or branch summary they left at: Markdown, one section
    /// per compaction, or JSON {"sessionId", "entries": [{"id", "class", "leftAt",
    /// "messages"}], "messages"} (every message in order, to hand back to an agent).
    #[arg(long, conflicts_with = "leaf")]
    pub dropped: bool,
    /// With --dropped: audit every branch, not only the active one.
    #[arg(long, requires = "dropped")]
    pub all_branches: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A readable conversation.
    Markdown,
    /// The context JSON ({"messages","thinkingLevel","model"}).
    Json,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    if let Some(format) = super::foreign::detect_file(&args.file) {
        if args.leaf.is_some() || args.dropped {
            return Err(CliError::input(
                args.file.display().to_string(),
                format!(
                    "a {} session: --leaf and --dropped are for pi sessions",
                    format.display_name()
                ),
            ));
        }
        let foreign = super::foreign::load(&args.file)?;
        return super::foreign::export(&foreign, args.format == Format::Json, out);
    }
    let mut session = super::open_default(&args.file)?;
    if super::content(&mut session)? == super::Content::Empty {
        return Err(CliError::input(
            args.file.display().to_string(),
            "empty log: nothing to export yet (no session header and no entry)",
        ));
    }
    // Everything is computed before the first byte is written, so an error (an unknown
    // --leaf) leaves no half document on stdout.
    if args.dropped {
        let scope = if args.all_branches {
            AuditScope::AllBranches
        } else {
            AuditScope::ActivePath
        };
        let document = dropped(&session, scope, args.format)?;
        return out.text_block(&document);
    }
    match args.format {
        Format::Json => {
            let json = session.build_context(args.leaf.as_deref())?.to_json();
            out.line(&json)
        }
        Format::Markdown => {
            let document = markdown(&session, args.leaf.as_deref())?;
            out.text_block(&document)
        }
    }
}

/// The Markdown document for the branch ending at `leaf`, each line ended by `\n`.
fn markdown(session: &Session, leaf: Option<&str>) -> Result<String, CliError> {
    let path = session.path(leaf)?;
    let header = session.header();
    let title = session
        .session_name()?
        .unwrap_or_else(|| format!("Session {}", header.id));
    let mut document = format!("# {title}\n\n- session: `{}`\n", header.id);
    if let Some(cwd) = &header.cwd {
        document.push_str(&format!("- cwd: `{cwd}`\n"));
    }
    if let Some(created) = &header.timestamp {
        document.push_str(&format!("- created: {created}\n"));
    }
    let leaf_id = match leaf {
        Some(id) => Some(id.to_string()),
        None => session.leaf_id()?,
    };
    if let Some(id) = &leaf_id {
        document.push_str(&format!("- leaf: `{id}`\n"));
    }
    for entry in path {
        let value: Value = serde_json::from_str(&entry.json).unwrap_or(Value::Null);
        let text = render_entry(entry.kind, &value);
        if !text.is_empty() {
            document.push('\n');
            document.push_str(&text);
            if !text.ends_with('\n') {
                document.push('\n');
            }
        }
    }
    Ok(document)
}

/// The messages the audit finds at risk or dropped, each as the context just before its
/// compaction or branch summary held it (edits applied).
fn dropped(session: &Session, scope: AuditScope, format: Format) -> Result<String, CliError> {
    let audit = session.audit(scope)?;
    let header = session.header();
    let mut markdown = format!(
        "# What the compactions let go\n\n- session: `{}`\n- at risk or dropped: {} message \
         entries (`treelog audit` lists them)\n",
        header.id,
        audit.lost_count()
    );
    let mut entries = Vec::new();
    let mut all = Vec::new();
    for event in &audit.events {
        let lost: Vec<_> = event
            .left
            .iter()
            .filter(|entry| entry.class != LeftClass::Summarized)
            .collect();
        if lost.is_empty() {
            continue;
        }
        let projection = session.build_projection(event.before_leaf.as_deref())?;
        markdown.push_str(&format!(
            "\n# Left at {} `{}` ({})\n",
            event.kind.as_str(),
            event.id,
            event.timestamp.as_deref().unwrap_or("no timestamp")
        ));
        for entry in lost {
            let messages: Vec<&JsonText> = projection
                .entries
                .iter()
                .filter(|projected| projected.id == entry.id)
                .flat_map(|projected| &projected.messages)
                .collect();
            let values: Vec<Value> = messages
                .iter()
                .map(|message| serde_json::from_str(message.get()).unwrap_or(Value::Null))
                .collect();
            for value in &values {
                markdown.push_str(&format!(
                    "\n*{} `{}`*\n\n{}\n",
                    if entry.class == LeftClass::AtRisk {
                        "at risk"
                    } else {
                        "dropped"
                    },
                    entry.id,
                    render_message(value).trim_end()
                ));
            }
            all.extend(values.iter().cloned());
            entries.push(
                serde_json::json!({"id": entry.id, "class": entry.class.as_str(),
                "leftAt": event.id, "messages": values}),
            );
        }
    }
    Ok(match format {
        Format::Markdown => markdown,
        Format::Json => serde_json::json!({"sessionId": header.id, "entries": entries,
            "messages": all})
        .to_string(),
    })
}

/// A fenced code block whose fence is longer than any backtick run inside.
fn fenced(language: &str, body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for character in body.chars() {
        if character == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!(
        "{fence}{language}\n{}\n{fence}",
        body.trim_end_matches('\n')
    )
}

fn string(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn quoted(text: &str) -> String {
    text.lines()
        .map(|line| format!("> {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Markdown for one entry (empty for entries that are not part of the conversation).
fn render_entry(kind: EntryKind, value: &Value) -> String {
    match kind {
        EntryKind::Message => render_message(value.get("message").unwrap_or(&Value::Null)),
        EntryKind::ModelChange => format!(
            "*Model: {}/{}*",
            string(value, "provider"),
            string(value, "modelId")
        ),
        EntryKind::ThinkingLevelChange => {
            format!("*Thinking level: {}*", string(value, "thinkingLevel"))
        }
        EntryKind::Compaction => format!(
            "## Compaction summary\n\n*{} tokens before; kept from `{}`*\n\n{}",
            string(value, "tokensBefore"),
            string(value, "firstKeptEntryId"),
            string(value, "summary")
        ),
        EntryKind::BranchSummary => format!(
            "## Branch summary\n\n*from `{}`*\n\n{}",
            string(value, "fromId"),
            string(value, "summary")
        ),
        EntryKind::CustomMessage => format!(
            "## Custom message ({})\n\n{}",
            string(value, "customType"),
            content_text(value.get("content").unwrap_or(&Value::Null))
        ),
        EntryKind::SessionInfo => format!("*Session renamed: {}*", string(value, "name")),
        EntryKind::Usage => format!(
            "*Usage ({}): {}/{}*",
            string(value, "kind"),
            string(value, "provider"),
            string(value, "model")
        ),
        EntryKind::ContextEdit => match value.get("replacement") {
            Some(Value::Null) => format!(
                "*Context edit: `{}` removed from the context*",
                string(value, "targetId")
            ),
            _ => format!(
                "*Context edit: `{}` replaced in the context*",
                string(value, "targetId")
            ),
        },
        EntryKind::Custom | EntryKind::Label | EntryKind::Other => String::new(),
    }
}

fn render_message(message: &Value) -> String {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let content = message.get("content").unwrap_or(&Value::Null);
    match role {
        "user" => format!("## User\n\n{}", content_text(content)),
        "assistant" => render_assistant(message, content),
        "toolResult" => {
            let error = if message.get("isError") == Some(&Value::Bool(true)) {
                " (error)"
            } else {
                ""
            };
            format!(
                "### Tool result: {}{error}\n\n{}",
                string(message, "toolName"),
                fenced("", &content_text(content))
            )
        }
        "bashExecution" => format!(
            "## Bash\n\n{}\n\n*exit code {}*",
            fenced(
                "",
                &format!(
                    "$ {}\n{}",
                    string(message, "command"),
                    string(message, "output")
                )
            ),
            string(message, "exitCode")
        ),
        "custom" => format!(
            "## Custom message ({})\n\n{}",
            string(message, "customType"),
            content_text(content)
        ),
        "branchSummary" => format!("## Branch summary\n\n{}", string(message, "summary")),
        other => format!(
            "## {}\n\n{}",
            if other.is_empty() { "Message" } else { other },
            content_text(content)
        ),
    }
}

fn render_assistant(message: &Value, content: &Value) -> String {
    let model = string(message, "model");
    let mut parts = vec![if model.is_empty() {
        "## Assistant".to_string()
    } else {
        format!("## Assistant ({model})")
    }];
    match content {
        Value::String(text) => parts.push(text.clone()),
        Value::Array(blocks) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(string(block, "text")),
                    Some("thinking") => parts.push(quoted(&string(block, "thinking"))),
                    Some("toolCall") => {
                        let arguments = block
                            .get("arguments")
                            .and_then(|arguments| serde_json::to_string_pretty(arguments).ok())
                            .unwrap_or_default();
                        parts.push(format!(
                            "**Tool call** `{}` (`{}`)\n\n{}",
                            string(block, "name"),
                            string(block, "id"),
                            fenced("json", &arguments)
                        ));
                    }
                    Some("image") => parts.push("[image]".into()),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    if let Some(error) = message.get("errorMessage").and_then(Value::as_str) {
        parts.push(format!("*Error: {error}*"));
    }
    parts.join("\n\n")
}
