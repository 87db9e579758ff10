//! `treelog append`: appends messages read from stdin, printing each new id once appended.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;

use serde_json::value::RawValue;
use treelog::{Durability, OnConflict, Session, SessionOptions};

use crate::exit::CliError;
use crate::out::Out;

/// Append messages or entries read from stdin, printing each new id.
///
/// Reads one JSON object per stdin line (blank lines are skipped) and appends it on the
/// session's leaf. A message object (no "type" key) becomes a `message` entry. An object with
/// a "type" is an entry in the terms of pi's append* methods, its id, parentId and timestamp
/// given by treelog: {"type":"usage","kind","provider","model","usage"[,"note"]},
/// {"type":"context_edit","targetId","replacement":{"content":...}|null},
/// {"type":"compaction","summary"[,"firstKeptEntryId"],"tokensBefore"[,"details"][,"fromHook"][,"usage"]}
/// (the system message in force is stored with it, as pi 1.6 does),
/// {"type":"branch_summary","branchFromId":ID|null,"summary"[,"details"][,"fromHook"][,"usage"]},
/// {"type":"message","message"}, thinking_level_change {thinkingLevel}, model_change
/// {provider, modelId}, custom {customType[, data]}, custom_message {customType, content,
/// display[, details]}, label {targetId[, label]}, session_info {name}. Each new entry's id is printed on its own
/// line, flushed, only after its append returned; what a printed id guarantees depends on
/// --sync. A missing FILE becomes a new session (the header is written with the first entry).
///
/// The first invalid line stops the run (exit 2) with its stdin line number; the ids printed
/// before it are appended and stay valid.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl).
    pub file: PathBuf,
    /// When an appended entry is made durable before its id is printed.
    #[arg(long, value_enum, default_value_t = SyncPolicy::Always)]
    pub sync: SyncPolicy,
    /// What to do when another writer appended after the session's leaf meanwhile.
    #[arg(long, value_enum, default_value_t = ConflictPolicy::Fail)]
    pub on_conflict: ConflictPolicy,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync after every append: a printed id survives a crash of the machine.
    Always,
    /// fsync every 64 appends and at the end: a printed id is written to the OS (it survives
    /// a crash of treelog) but may not be on disk yet when the machine crashes.
    Batch,
    /// Never fsync: a printed id is written to the OS, which writes it back when it likes.
    None,
}

impl SyncPolicy {
    fn durability(self) -> Durability {
        match self {
            SyncPolicy::Always => Durability::EveryAppend,
            SyncPolicy::Batch => Durability::Batched(64),
            SyncPolicy::None => Durability::None,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConflictPolicy {
    /// Stop with exit code 1 and write nothing more.
    Fail,
    /// Move to the log's newest leaf and append there.
    Follow,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    super::foreign::refuse_other(&args.file)?;
    let options = SessionOptions {
        durability: args.sync.durability(),
        on_conflict: match args.on_conflict {
            ConflictPolicy::Fail => OnConflict::Fail,
            ConflictPolicy::Follow => OnConflict::FollowTip,
        },
        ..crate::sidecars::options()
    };
    if args
        .file
        .to_str()
        .is_some_and(|file| file.starts_with(treelog::openclaw::SCHEME))
    {
        return Err(CliError::input(
            args.file.display().to_string(),
            "an OpenClaw session is read-only here: treelog never writes OpenClaw's database",
        ));
    }
    if let Ok(metadata) = std::fs::metadata(&args.file)
        && !metadata.is_file()
    {
        return Err(CliError::input(
            args.file.display().to_string(),
            "not a regular file",
        ));
    }
    let mut session = match super::push_pull::address_of(&args.file) {
        Some(address) => super::push_pull::open_address(&address?, options, false)?,
        None => Session::open(&args.file, options)?,
    };
    let stdin = std::io::stdin();
    let result = append_lines(&mut session, &mut stdin.lock(), out);
    // Close even after an error, so that the appends already acknowledged are synced.
    let closed = session.close().map_err(CliError::from);
    result.and(closed)
}

/// Appends each non-blank line of `input` as a message and prints its id.
fn append_lines(
    session: &mut Session,
    input: &mut impl BufRead,
    out: &mut Out,
) -> Result<(), CliError> {
    let mut line = Vec::new();
    let mut line_number = 0u64;
    loop {
        line.clear();
        let read = input
            .read_until(b'\n', &mut line)
            .map_err(|e| CliError::io("<stdin>", "read standard input", e))?;
        if read == 0 {
            return Ok(());
        }
        line_number += 1;
        let location = || format!("<stdin>:{line_number}");
        let Ok(text) = std::str::from_utf8(&line) else {
            return Err(CliError::input(location(), "not valid UTF-8"));
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let fields = parse_object(text).map_err(|message| CliError::input(location(), message))?;
        let id = match fields.get("type") {
            None => {
                check_message(text).map_err(|message| CliError::input(location(), message))?;
                session.append_message(text)?
            }
            Some(kind) => {
                append_entry(session, kind.get(), &fields).map_err(|error| error.at(location()))?
            }
        };
        out.line(&id)?;
        out.flush()?;
    }
}

/// A stdin line's top-level fields, as raw JSON: it must be one JSON object.
fn parse_object(text: &str) -> Result<HashMap<String, &RawValue>, String> {
    match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) if raw.get().starts_with('{') => {}
        Ok(_) => return Err("a message must be a JSON object".into()),
        Err(error) => return Err(format!("not valid JSON: {error}")),
    }
    serde_json::from_str(text).map_err(|error| format!("not valid JSON: {error}"))
}

/// A message must have the shape pi 1.6's readers rely on, or pi would not read it back
/// as treelog does:
/// - a non-empty string `role`: every context is built from `message.role`;
/// - a numeric `timestamp` (epoch milliseconds, pi's `Date.now()`): pi-ai's context-size
///   estimate and pi's compaction compare message timestamps as numbers, and one that is
///   missing or a string makes them NaN;
/// - for `user`, `assistant`, `toolResult`, `system` and `custom` messages, a `content`
///   that is a string or an array of objects (`assistant` and `toolResult`: an array),
///   as pi writes it: pi's session list reads every user and assistant text with
///   `content.filter(block => block.type === "text")`, which throws on anything else (the
///   session then drops out of the list), and the providers walk an assistant's or a tool
///   result's content as an array of blocks.
fn check_message(message: &str) -> Result<(), String> {
    let fields: HashMap<String, &RawValue> =
        serde_json::from_str(message).map_err(|_| "a message must be a JSON object".to_string())?;
    let role = fields
        .get("role")
        .and_then(|role| serde_json::from_str::<String>(role.get()).ok())
        .filter(|role| !role.is_empty())
        .ok_or_else(|| {
            "a message needs a string \"role\" (user, assistant, toolResult, system, custom, ...)"
                .to_string()
        })?;
    let timestamp = fields
        .get("timestamp")
        .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok());
    if !timestamp.as_ref().is_some_and(|value| value.is_number()) {
        return Err(format!(
            "a {role} message needs a numeric \"timestamp\" (epoch milliseconds, as pi writes Date.now()){}",
            match timestamp {
                None => String::new(),
                Some(other) => format!(", not {}", clip(&other.to_string())),
            }
        ));
    }
    let needs_array = matches!(role.as_str(), "assistant" | "toolResult");
    if !needs_array && !matches!(role.as_str(), "user" | "system" | "custom") {
        return Ok(());
    }
    let content = fields
        .get("content")
        .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok());
    let fits = match &content {
        Some(serde_json::Value::String(_)) => !needs_array,
        Some(serde_json::Value::Array(blocks)) => blocks.iter().all(|block| block.is_object()),
        _ => false,
    };
    if fits {
        return Ok(());
    }
    let wanted = if needs_array {
        "an array of content blocks (objects such as {\"type\":\"text\",\"text\":...})"
    } else {
        "a string or an array of content blocks (objects such as {\"type\":\"text\",\"text\":...})"
    };
    Err(match content {
        None => format!("a {role} message needs a \"content\": {wanted}"),
        Some(other) => format!(
            "the \"content\" of a {role} message must be {wanted}, not {}",
            clip(&other.to_string())
        ),
    })
}

/// A JSON value as shown in an error: at most 40 characters.
fn clip(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

/// Why an entry line could not be appended: a bad field (reported at its stdin line) or the
/// library's own error.
enum EntryError {
    Field(String),
    Session(treelog::Error),
}

impl EntryError {
    fn at(self, location: String) -> CliError {
        match self {
            EntryError::Field(message) => CliError::input(location, message),
            EntryError::Session(error) => error.into(),
        }
    }
}

impl From<treelog::Error> for EntryError {
    fn from(error: treelog::Error) -> Self {
        EntryError::Session(error)
    }
}

/// Appends the entry an object with a `type` describes, through the `Session::append_*` call
/// pi's own `append*` method maps to (ids, parents and timestamps are the session's).
fn append_entry(
    session: &mut Session,
    kind: &str,
    fields: &HashMap<String, &RawValue>,
) -> Result<String, EntryError> {
    let raw = |key: &str| fields.get(key).map(|value| value.get());
    let string = |key: &str| -> Result<String, EntryError> {
        raw(key)
            .and_then(|value| serde_json::from_str::<String>(value).ok())
            .ok_or_else(|| EntryError::Field(format!("\"{key}\" must be a string")))
    };
    let optional_string = |key: &str| -> Result<Option<String>, EntryError> {
        match raw(key) {
            None | Some("null") => Ok(None),
            Some(_) => string(key).map(Some),
        }
    };
    let required = |key: &str| -> Result<&str, EntryError> {
        raw(key).ok_or_else(|| EntryError::Field(format!("\"{key}\" is missing")))
    };
    let flag = |key: &str| -> Result<Option<bool>, EntryError> {
        match raw(key) {
            None | Some("null") => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(_) => Err(EntryError::Field(format!(
                "\"{key}\" must be true or false"
            ))),
        }
    };
    let kind: String = serde_json::from_str(kind)
        .map_err(|_| EntryError::Field("\"type\" must be a string".into()))?;
    Ok(match kind.as_str() {
        "message" => {
            let message = required("message")?;
            check_message(message).map_err(EntryError::Field)?;
            session.append_message(message)?
        }
        "thinking_level_change" => {
            session.append_thinking_level_change(&string("thinkingLevel")?)?
        }
        "model_change" => session.append_model_change(&string("provider")?, &string("modelId")?)?,
        "usage" => session.append_usage(
            &string("kind")?,
            &string("provider")?,
            &string("model")?,
            required("usage")?,
            optional_string("note")?.as_deref(),
        )?,
        "context_edit" => {
            let replacement = required("replacement")?;
            session.append_context_edit(
                &string("targetId")?,
                (replacement != "null").then_some(replacement),
            )?
        }
        "compaction" => session.append_compaction(
            &string("summary")?,
            optional_string("firstKeptEntryId")?.as_deref(),
            required("tokensBefore")?,
            raw("details"),
            flag("fromHook")?,
            raw("usage"),
        )?,
        "branch_summary" => session.branch_with_summary(
            optional_string("branchFromId")?.as_deref(),
            &string("summary")?,
            raw("details"),
            flag("fromHook")?,
            raw("usage"),
        )?,
        "custom" => session.append_custom_entry(&string("customType")?, raw("data"))?,
        "custom_message" => session.append_custom_message_entry(
            &string("customType")?,
            required("content")?,
            flag("display")?.unwrap_or(false),
            raw("details"),
        )?,
        "label" => session
            .append_label_change(&string("targetId")?, optional_string("label")?.as_deref())?,
        "session_info" => session.append_session_info(&string("name")?)?,
        other => {
            return Err(EntryError::Field(format!(
                "unknown entry type {} (message, thinking_level_change, model_change, \
                 usage, context_edit, compaction, branch_summary, custom, custom_message, \
                 label, session_info)",
                serde_json::Value::from(other)
            )));
        }
    })
}
