//! `treelog info`: what a log holds and what opening its index found.

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use treelog::Session;

use crate::exit::CliError;
use crate::index_state;
use crate::out::Out;

/// Show a session's header, counts, sizes and index state.
///
/// Shows the header, leaf, name, entry counts by type, sizes (log, indexed prefix, torn tail),
/// the state of its index as this open found it (fresh, caught up, rebuilt or unindexed, and
/// why) and the index's size: the bytes its tables hold and the size of the sidecar file
/// (which also holds redb's free pages).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl), or an OpenClaw session in its SQLite store:
    /// openclaw://[STATE_DIR#]AGENT/SESSION_ID (read-only; see `treelog openclaw --help`).
    pub file: PathBuf,
    /// Print one JSON object instead of text: {"path", "header" (the header line's object;
    /// null for an empty log), "leafId", "sessionName", "entryCount", "countsByType" (entry
    /// type -> count), "opaqueCount", "logBytes", "indexedBytes", "tornTailBytes",
    /// "headerRecovered", "index" {"state" (fresh, caughtUp, rebuilt, unindexed), "reason",
    /// "bytes", "lines"}, "indexStoredBytes" (the tables' bytes), "indexFileBytes" (the
    /// sidecar file's size; null without one), "indexPath" (where the sidecar is: beside the
    /// log or under --index-dir; null when no index is used)}, and "empty": true for an empty log.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    if super::foreign::detect_file(&args.file).is_some() {
        let foreign = super::foreign::load(&args.file)?;
        return super::foreign::info(&foreign, args.json, out);
    }
    let mut session = super::open_default(&args.file)?;
    let empty = super::content(&mut session)? == super::Content::Empty;
    let mut info = collect(&mut session)?;
    if empty {
        // An empty log has no header yet: the one the handle made up (for its first append)
        // is not the log's, so none is shown.
        info["header"] = Value::Null;
        info["headerRecovered"] = Value::Bool(false);
        info["empty"] = Value::Bool(true);
    }
    if args.json {
        out.line(&info.to_string())
    } else {
        let state = index_state::human_detail(session.index_state());
        print_human(&args.file, &info, &state, out)
    }
}

/// The header line as a JSON object (as a string if it somehow is not one).
pub fn header_json(session: &Session) -> Value {
    serde_json::from_str(&session.header().json)
        .unwrap_or_else(|_| Value::String(session.header().json.clone()))
}

fn collect(session: &mut Session) -> Result<Value, CliError> {
    let stats = session.stats()?;
    let mut counts = Map::new();
    for (kind, count) in &stats.counts_by_kind {
        counts.insert(kind.as_str().to_string(), json!(count));
    }
    Ok(json!({
        "path": session.log_path().display().to_string(),
        "header": header_json(session),
        "leafId": session.leaf_id()?,
        "sessionName": session.session_name()?,
        "entryCount": stats.entry_count,
        "countsByType": counts,
        "opaqueCount": stats.opaque_count,
        "logBytes": stats.log_len_bytes,
        "indexedBytes": stats.indexed_len_bytes,
        "tornTailBytes": stats.torn_tail_bytes,
        "headerRecovered": session.header().recovered,
        "index": index_state::to_json(session.index_state()),
        "indexStoredBytes": session.index_stored_bytes()?,
        "indexFileBytes": session.index_file_bytes()?,
        "indexPath": session.sidecar().map(|path| path.display().to_string()),
    }))
}

fn print_human(
    file: &std::path::Path,
    info: &Value,
    index_state: &str,
    out: &mut Out,
) -> Result<(), CliError> {
    let text = |value: &Value| match value {
        Value::Null => "-".to_string(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let header = &info["header"];
    out.line(&format!("file:        {}", file.display()))?;
    if header.is_null() {
        out.line("session:     - (empty log: no header yet; the first append writes one)")?;
    } else {
        out.line(&format!(
            "session:     {} (version {}, cwd {})",
            text(&header["id"]),
            text(&header["version"]),
            text(&header["cwd"])
        ))?;
    }
    out.line(&format!("created:     {}", text(&header["timestamp"])))?;
    if !header["parentSession"].is_null() {
        out.line(&format!("parent:      {}", text(&header["parentSession"])))?;
    }
    out.line(&format!("name:        {}", text(&info["sessionName"])))?;
    out.line(&format!("leaf:        {}", text(&info["leafId"])))?;
    let mut by_type = Vec::new();
    if let Some(counts) = info["countsByType"].as_object() {
        for (kind, count) in counts {
            if count.as_u64() != Some(0) {
                by_type.push(format!("{kind} {count}"));
            }
        }
    }
    out.line(&format!(
        "entries:     {} ({})",
        text(&info["entryCount"]),
        by_type.join(", ")
    ))?;
    out.line(&format!(
        "opaque:      {} line(s) kept verbatim",
        text(&info["opaqueCount"])
    ))?;
    out.line(&format!(
        "log:         {} bytes (indexed {}, torn tail {})",
        text(&info["logBytes"]),
        text(&info["indexedBytes"]),
        text(&info["tornTailBytes"])
    ))?;
    let header_state = if header.is_null() {
        "none yet (empty log: the first append writes one)"
    } else if info["headerRecovered"] == Value::Bool(true) {
        "recovered: the log has no readable header; one was made up in memory"
    } else {
        "ok"
    };
    out.line(&format!("header:      {header_state}"))?;
    out.line(&format!("index:       {index_state}"))?;
    let index_path = match info["indexPath"].as_str() {
        Some(path) => path.to_string(),
        None => "none (no index is used)".into(),
    };
    out.line(&format!("index file:  {index_path}"))?;
    let file_bytes = match info["indexFileBytes"].as_u64() {
        Some(bytes) => format!("the sidecar file holds {bytes} bytes"),
        None => "no sidecar file".into(),
    };
    out.line(&format!(
        "index size:  {} bytes in its tables; {file_bytes}",
        text(&info["indexStoredBytes"])
    ))
}
