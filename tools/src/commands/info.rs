//! `treelog info`: what a log holds and what opening its index found.

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use treelog::{IndexState, Session};

use crate::exit::CliError;
use crate::out::Out;

/// Show a session's header, counts, sizes and index state.
///
/// Shows the header, leaf, name, entry counts by type, sizes (log, indexed prefix, torn tail)
/// and the state of its index as this open found it (fresh, caught up, rebuilt or unindexed,
/// and why).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl).
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
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
        print_human(&args.file, &info, out)
    }
}

/// The `{"state","reason","bytes","lines"}` object for an index state.
pub fn index_state_json(state: &IndexState) -> Value {
    let (name, reason, bytes, lines) = match state {
        IndexState::Fresh => ("fresh", None, None, None),
        IndexState::CaughtUp { bytes, lines } => ("caughtUp", None, Some(*bytes), Some(*lines)),
        IndexState::Rebuilt { reason, .. } => ("rebuilt", Some(reason.as_str()), None, None),
        IndexState::Unindexed { reason } => ("unindexed", Some(reason.as_str()), None, None),
    };
    json!({"state": name, "reason": reason, "bytes": bytes, "lines": lines})
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
        "index": index_state_json(session.index_state()),
        "indexStoredBytes": session.index_stored_bytes()?,
    }))
}

fn print_human(file: &std::path::Path, info: &Value, out: &mut Out) -> Result<(), CliError> {
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
    let index = &info["index"];
    let state = match index["state"].as_str().unwrap_or("?") {
        "fresh" => "fresh (covered the whole log)".to_string(),
        "caughtUp" => format!(
            "caught up ({} bytes, {} lines read after the indexed prefix)",
            text(&index["bytes"]),
            text(&index["lines"])
        ),
        "rebuilt" => format!("rebuilt: {}", text(&index["reason"])),
        other => format!("{other}: {}", text(&index["reason"])),
    };
    out.line(&format!("index:       {state}"))?;
    out.line(&format!(
        "index size:  {} bytes",
        text(&info["indexStoredBytes"])
    ))
}
