//! `treelog reindex`: checks and brings up to date (or rebuilds) the index of many logs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use treelog::{IndexState, SessionOptions};

use crate::exit::{CliError, print_error};
use crate::files::{Found, collect_logs, nothing_found, total_bytes};
use crate::index_state;
use crate::out::Out;
use crate::parallel::for_each_ordered;
use crate::progress;

/// Bring the indexes of logs up to date, in parallel.
///
/// Opens each log (files as given, directories searched recursively for *.jsonl), which
/// checks its sidecar index and catches it up or rebuilds it as needed, then reads the whole
/// index and checks every value in it, rebuilding an index found damaged; --force rebuilds
/// every index. Several files are done at once (one per core); results come in the order of
/// the files. On a terminal a progress bar on stderr moves with the bytes indexed, within a
/// file and across files, with the throughput and the time left, and says when it is
/// checking the whole index, the last phase, which reads no log bytes (--quiet: none). Ends with a
/// summary line on stderr: how
/// many indexes were fresh, caught up, rebuilt (and why) or failed (`no sessions found under
/// DIR` when there were none). Exit 2 if any file failed.
///
/// With --search, builds or brings up to date the search index of each directory instead
/// (DIR/.treelog-search/, or D/search-<hash of DIR's path>/ with --index-dir D: what
/// `treelog search` uses; refused with --no-index-write), with a progress bar; --json then prints
/// one line per directory {"path","fresh","caughtUp","readWhole","dropped","bytes","seconds"}.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log files, or directories to search for *.jsonl.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Rebuild every index from its log even if it looks valid.
    #[arg(long)]
    pub force: bool,
    /// Build the search index of each directory (DIR/.treelog-search/, or in --index-dir)
    /// instead of sidecars.
    #[arg(long)]
    pub search: bool,
    /// Draw no progress bar (it is drawn only when stderr is a terminal anyway).
    #[arg(long, short)]
    pub quiet: bool,
    /// One JSON line per file, in the order of the files: {"path", "state" (fresh, caughtUp,
    /// rebuilt, unindexed, or failed), "reason" (why rebuilt, unindexed or failed; else null),
    /// "bytes" (the log's size), "entries"}; then a last line {"summary": {"files", "fresh",
    /// "caughtUp", "rebuilt", "rebuiltReasons" (reason -> count), "unindexed", "failed",
    /// "bytes", "seconds"}}.
    #[arg(long)]
    pub json: bool,
}

/// How often the progress bar reads the counters.
const PROGRESS_TICK: Duration = Duration::from_millis(100);

/// What happened to one file.
struct FileResult {
    path: PathBuf,
    bytes: u64,
    outcome: Result<(IndexState, u64), CliError>,
}

#[derive(Default)]
struct Tally {
    fresh: u64,
    caught_up: u64,
    rebuilt: u64,
    unindexed: u64,
    failed: u64,
    bytes: u64,
    reasons: BTreeMap<String, u64>,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    if args.search {
        return reindex_search(&args, out);
    }
    let started = Instant::now();
    let found = super::foreign::refuse_found(collect_logs(&args.paths));
    let mut tally = Tally::default();
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        progress::bytes(total_bytes(&found))
    };
    let file_count = found.len();
    // One counter per log, raised by the library as it indexes (`progress_bytes`); the bar
    // shows their sum, so it moves within a file as well as across files.
    let items: Vec<(&Found, Arc<AtomicU64>)> = found
        .iter()
        .map(|found| (found, Arc::new(AtomicU64::new(0))))
        .collect();
    let position = || -> u64 {
        items
            .iter()
            .map(|(found, counter)| match found {
                Ok(log) => counter.load(Ordering::Relaxed).min(log.bytes),
                Err(_) => 0,
            })
            .sum()
    };
    let done = AtomicUsize::new(0);
    // Logs in their last phase, the whole-index check, which reads no log bytes: the bar sits
    // at their end meanwhile, and its message says what is going on.
    let checking = AtomicUsize::new(0);
    let message = || {
        let done = done.load(Ordering::Relaxed);
        match checking.load(Ordering::Relaxed) {
            0 => format!("{done}/{file_count} files"),
            _ => format!("{done}/{file_count} files, checking the index"),
        }
    };
    let phase = |checking_now: bool| {
        if checking_now {
            checking.fetch_add(1, Ordering::Relaxed);
        } else {
            checking.fetch_sub(1, Ordering::Relaxed);
        }
        if !bar.is_hidden() {
            bar.set_message(message());
            // A message alone is drawn at the bar's rate; suspend redraws at once, so that a
            // short check shows too.
            bar.suspend(|| {});
        }
    };
    let finished = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        if !bar.is_hidden() {
            scope.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    bar.set_position(position());
                    std::thread::sleep(PROGRESS_TICK);
                }
            });
        }
        let outcome = for_each_ordered(
            &items,
            |(found, counter)| {
                found
                    .as_ref()
                    .ok()
                    .map(|log| reindex_one(&log.path, args.force, counter, &phase))
            },
            |(found, counter), outcome| {
                done.fetch_add(1, Ordering::Relaxed);
                bar.set_message(message());
                let log = match found {
                    Ok(log) => log,
                    Err(error) => {
                        tally.failed += 1;
                        return bar.suspend(|| report_failure(error, None, args.json, out));
                    }
                };
                // A fresh index read nothing, a failed one stopped early: the file is done.
                counter.store(log.bytes, Ordering::Relaxed);
                bar.set_position(position());
                tally.bytes += log.bytes;
                let result = FileResult {
                    path: log.path.clone(),
                    bytes: log.bytes,
                    outcome: outcome.expect("every log found is reindexed"),
                };
                bar.suspend(|| print_result(&result, &mut tally, args.json, out))
            },
        );
        finished.store(true, Ordering::Relaxed);
        outcome
    });
    bar.finish_and_clear();
    outcome?;
    print_summary(
        &tally,
        &args.paths,
        started.elapsed().as_secs_f64(),
        args.json,
        out,
    )?;
    if tally.failed > 0 {
        return Err(CliError::SomeFailed {
            count: tally.failed,
        });
    }
    Ok(())
}

/// Opens (builds, catches up or rebuilds) and checks one log's index. `phase(true)` is called
/// when the whole-index check starts, `phase(false)` when it ends.
fn reindex_one(
    path: &std::path::Path,
    force: bool,
    progress_bytes: &Arc<AtomicU64>,
    phase: &(dyn Fn(bool) + Sync),
) -> Result<(IndexState, u64), CliError> {
    let options = SessionOptions {
        rebuild_index: force,
        progress_bytes: Some(progress_bytes.clone()),
        ..crate::sidecars::options()
    };
    let mut session = super::open_existing(path, options)?;
    // A quick open reads little of the index: the rest is read and checked here, so that
    // damage a query has not met yet is rebuilt now too.
    phase(true);
    let checked = session.check_index();
    phase(false);
    checked?;
    let entries = session.stats()?.entry_count;
    let state = session.index_state().clone();
    // Closing writes the index entries still pending.
    session.close()?;
    Ok((state, entries))
}

fn print_result(
    result: &FileResult,
    tally: &mut Tally,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (state, entries) = match &result.outcome {
        Ok(found) => found,
        Err(error) => {
            tally.failed += 1;
            return report_failure(error, Some(result), json, out);
        }
    };
    match state {
        IndexState::Fresh => tally.fresh += 1,
        IndexState::CaughtUp { .. } => tally.caught_up += 1,
        IndexState::Rebuilt { reason, .. } => {
            tally.rebuilt += 1;
            *tally.reasons.entry(reason.clone()).or_default() += 1;
        }
        IndexState::Unindexed { .. } => tally.unindexed += 1,
    }
    let reason = index_state::reason(state);
    if json {
        let line = json!({
            "path": result.path.display().to_string(),
            "state": index_state::json_name(state),
            "reason": reason,
            "bytes": result.bytes,
            "entries": entries,
        });
        out.line(&line.to_string())
    } else {
        let detail = reason.map_or(String::new(), |reason| format!(" ({reason})"));
        out.line(&format!(
            "{}: {}{detail}, {entries} entries, {}",
            result.path.display(),
            index_state::human_name(state),
            progress::human_bytes(result.bytes)
        ))
    }
}

/// A file that could not be indexed: on stderr in text mode, as a JSON line with --json.
fn report_failure(
    error: &CliError,
    result: Option<&FileResult>,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    if !json {
        print_error(error);
        return Ok(());
    }
    let path = match (result, error) {
        (Some(result), _) => result.path.display().to_string(),
        (None, CliError::Io { path, .. }) => path.display().to_string(),
        (None, _) => String::new(),
    };
    let line = json!({
        "path": path,
        "state": "failed",
        "reason": error.to_string(),
        "bytes": result.map(|result| result.bytes),
        "entries": null,
    });
    out.line(&line.to_string())
}

/// The last word: a JSON line with --json, and always one line on stderr.
fn print_summary(
    tally: &Tally,
    paths: &[PathBuf],
    seconds: f64,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let files = tally.fresh + tally.caught_up + tally.rebuilt + tally.unindexed + tally.failed;
    if json {
        let line = json!({"summary": {
            "files": files,
            "fresh": tally.fresh,
            "caughtUp": tally.caught_up,
            "rebuilt": tally.rebuilt,
            "rebuiltReasons": tally.reasons,
            "unindexed": tally.unindexed,
            "failed": tally.failed,
            "bytes": tally.bytes,
            "seconds": seconds,
        }});
        out.line(&line.to_string())?;
    }
    out.flush()?;
    if files == 0 {
        print_error(&nothing_found(paths));
        return Ok(());
    }
    let reasons: Vec<String> = tally
        .reasons
        .iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    let rebuilt = if reasons.is_empty() {
        format!("{} rebuilt", tally.rebuilt)
    } else {
        format!("{} rebuilt ({})", tally.rebuilt, reasons.join("; "))
    };
    let unindexed = if tally.unindexed > 0 {
        format!(", {} unindexed", tally.unindexed)
    } else {
        String::new()
    };
    print_error(&format!(
        "reindexed {files} file(s), {} in {seconds:.2} s ({}/s): {} fresh, {} caught up, {rebuilt}{unindexed}, {} failed",
        progress::human_bytes(tally.bytes),
        progress::human_bytes((tally.bytes as f64 / seconds.max(1e-9)) as u64),
        tally.fresh,
        tally.caught_up,
        tally.failed
    ));
    Ok(())
}

/// `--search`: the search index of each directory, one summary line each.
fn reindex_search(args: &Args, out: &mut Out) -> Result<(), CliError> {
    let sidecars = crate::sidecars::options();
    if !sidecars.index_write {
        return Err(CliError::Usage(
            "--search builds the search index, which --no-index-write forbids (treelog search --no-index-write reads a current index, or indexes in memory)".into(),
        ));
    }
    for dir in &args.paths {
        let metadata = std::fs::metadata(dir).map_err(|error| CliError::io(dir, "open", error))?;
        if !metadata.is_dir() {
            return Err(CliError::input(
                dir.display().to_string(),
                "--search indexes a directory's sessions: name a directory",
            ));
        }
        let started = Instant::now();
        let notices = super::search::Notices::new(0);
        let counts =
            treelog::search::reindex(dir, sidecars.index_dir.as_deref(), args.force, &notices);
        notices.finish();
        let counts = counts?;
        let seconds = started.elapsed().as_secs_f64();
        let line = if args.json {
            counts.to_json(dir, seconds)
        } else {
            format!(
                "{}: search index: {} log(s) read whole, {} caught up, {} fresh, {} dropped; {} indexed in {seconds:.2} s ({}/s)",
                dir.display(),
                counts.read_whole,
                counts.caught_up,
                counts.fresh,
                counts.dropped,
                progress::human_bytes(counts.indexed_bytes),
                progress::human_bytes((counts.indexed_bytes as f64 / seconds.max(1e-9)) as u64),
            )
        };
        out.line(&line)?;
    }
    Ok(())
}
