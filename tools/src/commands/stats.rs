//! `treelog stats`: where a session's bytes are (the library's `treelog::stats` counts; this
//! prints).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value, json};
use treelog::stats::{SessionStats, Tally};

use super::human_bytes;
use crate::exit::{CliError, print_error};
use crate::files::{collect_logs, nothing_found};
use crate::out::Out;

/// Show where a session's bytes went: by entry type, role, tool, extension, images.
///
/// For each session: line counts and bytes by entry type, by message role, by tool (the
/// toolName of tool results; bashExecution for commands run with `!`), by extension (the
/// customType of custom and custom_message entries), the images inside messages and the bytes
/// of their data, the largest entries (id, type, bytes), and the share of the log on the active
/// branch and in the current context. Over several sessions (a directory), the sessions by
/// size, then the same split over all of them. All of it comes from the index, which keeps
/// these tallies as it indexes each line; only the largest entries' lines are read.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Session logs (.jsonl), directories to search for *.jsonl, or s3://BUCKET/KEY logs.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print one JSON object: {"sessions": [{"path", "logBytes", "lines", "byType",
    /// "byRole", "byTool", "byCustomType" (each key -> {"count", "bytes"}), "images"
    /// {"count", "bytes"}, "largest": [{"id", "type", "detail", "bytes"}], "activePath",
    /// "context" ({"count", "bytes"})}] largest first, "total" (the same over all of them,
    /// without "path"), "failed": [{"path", "message"}]}.
    #[arg(long)]
    pub json: bool,
    /// Rows shown per table in the text output.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub top: usize,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let found = super::foreign::refuse_found(collect_logs(&args.paths));
    if found.is_empty() {
        crate::terminal::eprint_line(&nothing_found(&args.paths));
        return Ok(());
    }
    let mut sessions = Vec::new();
    let mut failed = Vec::new();
    for found in found {
        let result = found.and_then(|log| {
            let session = super::open_default(&log.path)?;
            Ok((log.path, session.size_stats()?))
        });
        match result {
            Ok(done) => sessions.push(done),
            Err(error) => {
                if !args.json {
                    print_error(&error);
                }
                failed.push(error);
            }
        }
    }
    sessions.sort_by_key(|(_, stats)| std::cmp::Reverse(stats.log_bytes));
    let mut total = SessionStats::default();
    for (_, stats) in &sessions {
        total.merge(stats);
    }
    if args.json {
        let listed: Vec<Value> = sessions
            .iter()
            .map(|(path, stats)| {
                let mut value = to_json(stats);
                value["path"] = json!(path.display().to_string());
                value
            })
            .collect();
        let failures: Vec<Value> = failed
            .iter()
            .map(|error| json!({"path": error.path().map(|path| path.display().to_string()), "message": error.to_string()}))
            .collect();
        out.line(
            &json!({"sessions": listed, "total": to_json(&total), "failed": failures}).to_string(),
        )?;
    } else if sessions.len() == 1 {
        let (path, stats) = &sessions[0];
        out.line(&path.display().to_string())?;
        print_split(stats, args.top, out)?;
    } else if !sessions.is_empty() {
        out.line(&format!("{} sessions, largest first:", sessions.len()))?;
        for (path, stats) in &sessions {
            out.line(&format!(
                "  {:>10}  {:>9} lines  {:>3}% on the active branch  {:>3}% in context  {}",
                human_bytes(stats.log_bytes),
                stats.lines.count,
                percent(stats.active_path.bytes, stats.log_bytes),
                percent(stats.context.bytes, stats.log_bytes),
                path.display()
            ))?;
        }
        out.line("all of them:")?;
        print_split(&total, args.top, out)?;
    }
    if !failed.is_empty() {
        return Err(CliError::SomeFailed {
            count: failed.len() as u64,
        });
    }
    Ok(())
}

fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        0
    } else {
        (part as f64 * 100.0 / whole as f64).round() as u64
    }
}

fn tally_json(tally: Tally) -> Value {
    json!({"count": tally.count, "bytes": tally.bytes})
}

fn map_json(map: &BTreeMap<String, Tally>) -> Value {
    let mut rows: Vec<(&String, &Tally)> = map.iter().collect();
    rows.sort_by_key(|(_, tally)| std::cmp::Reverse(tally.bytes));
    let mut object = Map::new();
    for (key, tally) in rows {
        object.insert(key.clone(), tally_json(*tally));
    }
    Value::Object(object)
}

fn to_json(stats: &SessionStats) -> Value {
    let largest: Vec<Value> = stats
        .largest
        .iter()
        .map(|entry| json!({"id": entry.id, "type": entry.kind, "detail": entry.detail, "bytes": entry.bytes}))
        .collect();
    json!({
        "logBytes": stats.log_bytes,
        "lines": tally_json(stats.lines),
        "byType": map_json(&stats.by_type),
        "byRole": map_json(&stats.by_role),
        "byTool": map_json(&stats.by_tool),
        "byCustomType": map_json(&stats.by_custom_type),
        "images": tally_json(stats.images),
        "largest": largest,
        "activePath": tally_json(stats.active_path),
        "context": tally_json(stats.context),
    })
}

fn print_split(stats: &SessionStats, top: usize, out: &mut Out) -> Result<(), CliError> {
    let whole = stats.log_bytes;
    out.line(&format!(
        "  {} in {} lines; active branch {} ({}%), context {} ({}%)",
        human_bytes(whole),
        stats.lines.count,
        human_bytes(stats.active_path.bytes),
        percent(stats.active_path.bytes, whole),
        human_bytes(stats.context.bytes),
        percent(stats.context.bytes, whole)
    ))?;
    for (title, map) in [
        ("by type", &stats.by_type),
        ("by role", &stats.by_role),
        ("by tool", &stats.by_tool),
        ("by extension (customType)", &stats.by_custom_type),
    ] {
        if map.is_empty() {
            continue;
        }
        out.line(&format!("  {title}:"))?;
        let mut rows: Vec<(&String, &Tally)> = map.iter().collect();
        rows.sort_by_key(|(_, tally)| std::cmp::Reverse(tally.bytes));
        for (key, tally) in rows.iter().take(top) {
            out.line(&format!(
                "    {:<24} {:>9}  {:>10}  {:>3}%",
                key,
                tally.count,
                human_bytes(tally.bytes),
                percent(tally.bytes, whole)
            ))?;
        }
        if rows.len() > top {
            out.line(&format!("    ({} more)", rows.len() - top))?;
        }
    }
    if stats.images.count > 0 {
        out.line(&format!(
            "  images: {} ({} of data, {}%)",
            stats.images.count,
            human_bytes(stats.images.bytes),
            percent(stats.images.bytes, whole)
        ))?;
    }
    if !stats.largest.is_empty() {
        out.line("  largest entries:")?;
        for entry in stats.largest.iter().take(top) {
            out.line(&format!(
                "    {:<10} {:<16} {:<20} {:>10}",
                entry.id,
                entry.kind,
                entry.detail.as_deref().unwrap_or("-"),
                human_bytes(entry.bytes)
            ))?;
        }
    }
    Ok(())
}
