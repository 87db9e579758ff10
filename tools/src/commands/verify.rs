//! `treelog verify`: reports what is wrong with logs and their indexes.

use std::path::{Path, PathBuf};

use serde_json::json;
use treelog::verify::{Report, verify_log_with};

use crate::exit::{CliError, print_error};
use crate::files::{collect_logs, nothing_found, total_bytes};
use crate::index_state;
use crate::out::Out;
use crate::parallel::for_each_ordered;
use crate::progress;

/// Check logs and their indexes; exit 1 if anything is wrong.
///
/// A raw scan of each log, independent of the index, reports header problems (missing,
/// corrupt, recovered, old version), a torn tail (bytes after the last newline that are not a
/// complete JSON line),
/// unparseable and opaque lines, invalid UTF-8, duplicate ids, dangling parents, self-parents
/// and parent cycles, and compactions whose firstKeptEntryId is not on their path. Then every
/// answer of the index (entries, opaque lines, leaf, path, labels, name, tree) is compared
/// with a fresh replay of the log. A damaged index is a problem of its own (kind
/// indexDamaged): it is rebuilt from the log, or left as it is with --no-index-write. Each
/// problem is printed as
/// `treelog: FILE:LINE: what is wrong (byte OFFSET)`.
///
/// Several logs are checked at once (one per core); reports come in the order of the files.
/// A summary line ends the run on stderr (`verified N file(s): ...`, or `no sessions found
/// under DIR`). Exit codes: 0 clean, 1 problems found, 2 a file could not be checked.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log files, or directories to search for *.jsonl.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Also re-hash the whole log against the index's block hashes when opening it.
    #[arg(long)]
    pub full: bool,
    /// One JSON line per problem {"path", "line", "offset", "kind", "message"}, and per file
    /// that could not be checked {"path", "kind": "failed", "message"}, in the order of the
    /// files; then always a last line {"summary": {"files", "clean", "withProblems",
    /// "problems", "failed", "bytes"}}.
    #[arg(long)]
    pub json: bool,
}

/// What the run found, for the summary.
#[derive(Default)]
struct Tally {
    files: u64,
    clean: u64,
    with_problems: u64,
    problems: u64,
    failed: u64,
    bytes: u64,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let found = collect_logs(&args.paths);
    let bar = progress::bytes(total_bytes(&found));
    let mut tally = Tally::default();
    let outcome = for_each_ordered(
        &found,
        |found| {
            found
                .as_ref()
                .ok()
                .map(|log| match super::push_pull::address_of(&log.path) {
                    Some(address) => address.and_then(|address| {
                        super::push_pull::verify(&address, args.full, &crate::sidecars::options())
                    }),
                    None if super::foreign::detect_file(&log.path).is_some() => {
                        super::foreign::verify(&log.path)
                    }
                    None => verify_log_with(&log.path, args.full, &crate::sidecars::options())
                        .map_err(CliError::from),
                })
        },
        |found, report| {
            tally.files += 1;
            let log = match found {
                Ok(log) => log,
                Err(error) => {
                    tally.failed += 1;
                    return bar.suspend(|| report_failure(error.path(), error, args.json, out));
                }
            };
            let report = report.expect("every log found is verified");
            // A log on an object store has its size once it is read.
            let bytes = match &report {
                Ok(report) if log.bytes == 0 => report.log_len_bytes,
                _ => log.bytes,
            };
            bar.inc(bytes);
            tally.bytes += bytes;
            match &report {
                Ok(report) if report.is_clean() => tally.clean += 1,
                Ok(report) => {
                    tally.with_problems += 1;
                    tally.problems += report.problems.len() as u64;
                }
                Err(_) => tally.failed += 1,
            }
            bar.suspend(|| match &report {
                Ok(report) => print_report(&log.path, report, args.json, out),
                Err(error) => report_failure(Some(&log.path), error, args.json, out),
            })
        },
    );
    bar.finish_and_clear();
    outcome?;
    print_summary(&tally, &args.paths, args.json, out)?;
    if tally.failed > 0 {
        return Err(CliError::SomeFailed {
            count: tally.failed,
        });
    }
    if tally.problems > 0 {
        return Err(CliError::ProblemsFound {
            count: tally.problems,
        });
    }
    Ok(())
}

/// A file that could not be checked: a line on stderr, or a JSON line with --json.
fn report_failure(
    path: Option<&Path>,
    error: &dyn std::fmt::Display,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    if !json {
        print_error(&error);
        return Ok(());
    }
    let line = json!({
        "path": path.map(|path| path.display().to_string()),
        "kind": "failed",
        "message": error.to_string(),
    });
    out.line(&line.to_string())
}

/// The last word: a JSON line with --json, and always one line on stderr.
fn print_summary(
    tally: &Tally,
    paths: &[PathBuf],
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    if json {
        let line = json!({"summary": {
            "files": tally.files,
            "clean": tally.clean,
            "withProblems": tally.with_problems,
            "problems": tally.problems,
            "failed": tally.failed,
            "bytes": tally.bytes,
        }});
        out.line(&line.to_string())?;
    }
    out.flush()?;
    if tally.files == 0 {
        print_error(&nothing_found(paths));
    } else {
        print_error(&format!(
            "verified {} file(s), {}: {} clean, {} with problems ({} problem(s) in all), {} could not be checked",
            tally.files,
            progress::human_bytes(tally.bytes),
            tally.clean,
            tally.with_problems,
            tally.problems,
            tally.failed
        ));
    }
    Ok(())
}

fn print_report(path: &Path, report: &Report, json: bool, out: &mut Out) -> Result<(), CliError> {
    for problem in &report.problems {
        if json {
            let line = json!({
                "path": path.display().to_string(),
                "line": problem.line,
                "offset": problem.offset_bytes,
                "kind": problem.kind.as_str(),
                "message": problem.message,
            });
            out.line(&line.to_string())?;
            continue;
        }
        let location = match problem.line {
            Some(line) => format!("{}:{line}", path.display()),
            None => path.display().to_string(),
        };
        let offset = problem
            .offset_bytes
            .map_or(String::new(), |offset| format!(" (byte {offset})"));
        out.line(&format!("treelog: {location}: {}{offset}", problem.message))?;
    }
    if !json && report.is_clean() {
        out.line(&format!(
            "{}: ok ({} lines, {} entries, {}; index {})",
            path.display(),
            report.line_count,
            report.entry_count,
            progress::human_bytes(report.log_len_bytes),
            index_state::human_name(&report.index_state)
        ))?;
    }
    Ok(())
}
