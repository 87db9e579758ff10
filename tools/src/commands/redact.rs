//! `treelog redact`: replaces a text in logs' string values and then in every copy treelog
//! made of them (the sidecar, the search index), and checks that no file still holds it. The
//! library's `treelog::secrets` rewrites a log; this finds the copies and reports.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::json;
use treelog::secrets::{Redacted, check, redact_file};

use super::secrets::{matcher, print_finding};
use crate::exit::{CliError, print_error};
use crate::files::{Found, collect_logs, nothing_found};
use crate::out::Out;

/// Take text back: replace it in logs, rebuild their indexes, check that no copy holds it.
///
/// Replaces every occurrence of --literal TEXT, of --pattern REGEX, or of a likely secret
/// (--secrets: the shapes `treelog secrets` finds) inside the JSON string values of each log,
/// with --replacement (default `[REDACTED]`). Each line stays valid JSON; ids, parent ids,
/// types, roles, timestamps, keys and every byte outside the changed strings stay as they were,
/// so pi opens the log with the same entries, tree, leaf and labels. A match inside a key, an
/// id, a type, a role or a timestamp is refused (nothing is written to that log), and so is one
/// in a line that is not JSON.
///
/// Each log is rewritten under its writer lock into a new file renamed over it (its mode,
/// owner and link kept); lines another writer appends meanwhile are carried over. Then its
/// sidecar index is rebuilt, and every search index that covers it (DIR/.treelog-search/ of its
/// folder and the folders above, or the --index-dir's) drops and rewrites its documents and
/// deletes the old index files. Last, every log named, its sidecar and those search indexes
/// are read byte for byte for the text (as it is and as JSON writes it), and the result is
/// printed. Copies treelog did not make (backups, synced folders, other tools' caches, what an
/// agent remembers) are out of its reach.
///
/// Output: each replaced occurrence as `treelog secrets` prints a finding (masked), then a
/// summary and the check's result. With --dry-run nothing is written: the occurrences are
/// listed, and the check says where the text is now.
///
/// Exit codes: 0 the text is found nowhere afterwards (or nothing held it), 2 a log could not
/// be redacted (a refused match, an unreadable file) or bad options, 3 the final check found
/// the text in some file (with --dry-run: the text is there to redact).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Session logs (.jsonl) and directories to search for *.jsonl.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Replace this exact text (case-sensitive). May be repeated.
    #[arg(long, value_name = "TEXT")]
    pub literal: Vec<String>,
    /// Replace what this regular expression matches inside each string value (Rust regex
    /// syntax). May be repeated.
    #[arg(long, value_name = "REGEX")]
    pub pattern: Vec<String>,
    /// Replace the likely secrets `treelog secrets` lists.
    #[arg(long)]
    pub secrets: bool,
    /// What each occurrence becomes.
    #[arg(long, value_name = "TEXT", default_value = "[REDACTED]")]
    pub replacement: String,
    /// List what would be replaced; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON object per replaced occurrence, as `treelog secrets --json` prints a finding,
    /// then {"kind": "summary", "dryRun", "replaced", "logsRewritten", "bytesCarriedOver",
    /// "sidecarsRebuilt", "searchIndexesRewritten", "check": {"filesRead", "holding": [PATH]}};
    /// a log that could not be redacted is {"path", "kind": "failed", "message"}.
    #[arg(long)]
    pub json: bool,
}

/// What the run did, for the summary.
#[derive(Default)]
struct Tally {
    replaced: u64,
    logs_rewritten: u64,
    carried_bytes: u64,
    sidecars_rebuilt: u64,
    search_indexes: Vec<PathBuf>,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    if args.literal.is_empty() && args.pattern.is_empty() && !args.secrets {
        return Err(CliError::Usage(
            "say what to redact: --literal TEXT, --pattern REGEX or --secrets".into(),
        ));
    }
    let matcher = matcher(&args.literal, &args.pattern, args.secrets)?;
    if !matcher.find(&args.replacement).is_empty() {
        return Err(CliError::Usage(
            "the --replacement holds what is being redacted".into(),
        ));
    }
    for path in &args.paths {
        if let Some(text) = path.to_str()
            && (text.starts_with("s3://") || text.starts_with("openclaw://"))
        {
            return Err(CliError::input(
                text,
                if text.starts_with("openclaw://") {
                    "OpenClaw databases are read-only for treelog: nothing is changed there; export the session (`treelog openclaw export`), redact the export, and replace the session in OpenClaw with it"
                } else {
                    "redact does not rewrite logs on an object store yet (their segments are only ever replaced by a compaction): nothing was changed; `treelog pull` it to see where the text is with `treelog secrets`"
                },
            ));
        }
    }
    // Other agents' files are read-only for treelog: each is an error here, never rewritten.
    let found: Vec<Found> = super::foreign::refuse_found(collect_logs(&args.paths));
    if found.is_empty() {
        crate::terminal::eprint_line(&nothing_found(&args.paths));
        return Ok(());
    }
    let options = crate::sidecars::options();
    let mut tally = Tally::default();
    let mut texts: BTreeSet<String> = args.literal.iter().cloned().collect();
    let mut logs = Vec::new();
    let mut rewritten = Vec::new();
    let mut failed = 0u64;
    for log in found {
        let result = log.and_then(|log| {
            let redacted = redact_file(
                &log.path,
                &matcher,
                &args.replacement,
                args.dry_run,
                &options,
            )
            .map_err(CliError::from)?;
            Ok((log.path, redacted))
        });
        match result {
            Ok((path, redacted)) => {
                record(&path, &redacted, &mut tally, &mut texts, args.json, out)?;
                if redacted.written {
                    rewritten.push(path.clone());
                }
                logs.push(path);
            }
            Err(error) => {
                failed += 1;
                if args.json {
                    let line = json!({"path": error.path().map(|path| path.display().to_string()),
                        "kind": "failed", "message": error.to_string()});
                    out.line(&line.to_string())?;
                } else {
                    print_error(&error);
                }
            }
        }
    }
    let index_dir = options.index_dir.as_deref();
    tally.search_indexes = search_indexes_over(&logs, index_dir);
    if !args.dry_run {
        for folder in searched_folders_over(&rewritten, index_dir) {
            treelog::search::reindex(&folder, index_dir, false, &treelog::search::Quiet)?;
        }
    }
    let (files_read, holding) = final_check(&logs, &tally.search_indexes, &texts, &options)?;
    print_summary(&args, &tally, files_read, &holding, out)?;
    if failed > 0 {
        return Err(CliError::SomeFailed { count: failed });
    }
    if !holding.is_empty() {
        return Err(CliError::TextRemains {
            count: holding.len() as u64,
        });
    }
    Ok(())
}

fn record(
    path: &Path,
    redacted: &Redacted,
    tally: &mut Tally,
    texts: &mut BTreeSet<String>,
    as_json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    for finding in &redacted.findings {
        print_finding(path, finding, as_json, out)?;
        texts.insert(finding.text.clone());
    }
    tally.replaced += redacted.findings.len() as u64;
    tally.logs_rewritten += u64::from(redacted.written);
    tally.carried_bytes += redacted.carried_bytes;
    tally.sidecars_rebuilt += u64::from(redacted.sidecar_rebuilt);
    Ok(())
}

/// The folders whose search index covers one of `logs`: each log's folder and the folders
/// above it that have an index (in `index_dir` when given, else `.treelog-search/` in them).
fn searched_folders_over(logs: &[PathBuf], index_dir: Option<&Path>) -> BTreeSet<PathBuf> {
    let mut folders = BTreeSet::new();
    for log in logs {
        let Ok(absolute) = std::path::absolute(log) else {
            continue;
        };
        for folder in absolute.ancestors().skip(1) {
            if treelog::search::index_path(folder, index_dir).is_dir() {
                folders.insert(folder.to_path_buf());
            }
        }
    }
    folders
}

/// The search index folders that cover one of `logs`.
fn search_indexes_over(logs: &[PathBuf], index_dir: Option<&Path>) -> Vec<PathBuf> {
    searched_folders_over(logs, index_dir)
        .iter()
        .map(|folder| treelog::search::index_path(folder, index_dir))
        .collect()
}

/// Reads every log, its sidecar and the search indexes for `texts`: how many files were read
/// and the ones that hold a text.
fn final_check(
    logs: &[PathBuf],
    search_indexes: &[PathBuf],
    texts: &BTreeSet<String>,
    options: &treelog::SessionOptions,
) -> Result<(usize, Vec<PathBuf>), CliError> {
    let needles = check::spellings(texts.iter().map(String::as_str));
    if needles.is_empty() {
        return Ok((0, Vec::new()));
    }
    let mut holding = Vec::new();
    let mut read = 0;
    for log in logs {
        let sidecar = treelog::sidecar_for(log, options.index_dir.as_deref());
        for file in [log, &sidecar] {
            read += 1;
            if check::file_holds(file, &needles).map_err(|e| CliError::io(file, "read", e))? {
                holding.push(file.clone());
            }
        }
    }
    for folder in search_indexes {
        read += 1;
        holding.extend(
            check::files_holding(folder, &needles).map_err(|e| CliError::io(folder, "read", e))?,
        );
    }
    Ok((read, holding))
}

fn print_summary(
    args: &Args,
    tally: &Tally,
    files_read: usize,
    holding: &[PathBuf],
    out: &mut Out,
) -> Result<(), CliError> {
    if args.json {
        let line = json!({
            "kind": "summary",
            "dryRun": args.dry_run,
            "replaced": tally.replaced,
            "logsRewritten": tally.logs_rewritten,
            "bytesCarriedOver": tally.carried_bytes,
            "sidecarsRebuilt": tally.sidecars_rebuilt,
            "searchIndexesRewritten": if args.dry_run { 0 } else { tally.search_indexes.len() },
            "check": {
                "filesRead": files_read,
                "holding": holding.iter().map(|path| path.display().to_string()).collect::<Vec<_>>(),
            },
        });
        return out.line(&line.to_string());
    }
    let verb = if args.dry_run {
        "would replace"
    } else {
        "replaced"
    };
    out.line(&format!(
        "{verb} {} occurrence(s); {} log(s) rewritten, {} sidecar index(es) rebuilt, {} search index(es) rewritten{}",
        tally.replaced,
        tally.logs_rewritten,
        tally.sidecars_rebuilt,
        if args.dry_run { 0 } else { tally.search_indexes.len() },
        if tally.carried_bytes > 0 {
            format!(", {} byte(s) appended meanwhile carried over", tally.carried_bytes)
        } else {
            String::new()
        }
    ))?;
    if holding.is_empty() {
        out.line(&format!(
            "check: the text is found nowhere ({files_read} file(s) and folder(s) read: logs, sidecars, search indexes)"
        ))
    } else {
        out.line(&format!(
            "check: the text is still in {} file(s):",
            holding.len()
        ))?;
        for path in holding {
            out.line(&format!("  {}", path.display()))?;
        }
        Ok(())
    }
}
