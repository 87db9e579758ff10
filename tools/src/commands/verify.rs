//! `treelog verify`: reports what is wrong with logs and their indexes.

use std::path::PathBuf;

use serde_json::json;
use treelog::verify::{Report, verify_log};

use crate::exit::{CliError, print_error};
use crate::files::collect_logs;
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
/// with a fresh replay of the log. Each problem is printed as
/// `treelog: FILE:LINE: what is wrong (byte OFFSET)`.
///
/// Several logs are checked at once (one per core); reports come in the order of the files.
/// Exit codes: 0 clean, 1 problems found, 2 a file could not be checked.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log files, or directories to search for *.jsonl.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Also re-hash the whole log against the index's block hashes when opening it.
    #[arg(long)]
    pub full: bool,
    /// One JSON object per problem: {"path","line","offset","kind","message"}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let (logs, errors) = collect_logs(&args.paths);
    let mut failed = errors.len() as u64;
    for error in &errors {
        print_error(error);
    }
    let bar = progress::bytes(logs.iter().map(|(_, bytes)| bytes).sum());
    let mut problem_count = 0u64;
    let mut files_with_problems = 0u64;
    let outcome = for_each_ordered(
        &logs,
        |(path, _)| verify_log(path, args.full),
        |(path, bytes), report| {
            bar.inc(*bytes);
            bar.suspend(|| match &report {
                Ok(report) => print_report(path, report, args.json, out),
                Err(error) => {
                    print_error(error);
                    Ok(())
                }
            })?;
            match report {
                Ok(report) if !report.is_clean() => {
                    files_with_problems += 1;
                    problem_count += report.problems.len() as u64;
                }
                Ok(_) => {}
                Err(_) => failed += 1,
            }
            Ok(())
        },
    );
    bar.finish_and_clear();
    outcome?;
    if !args.json && logs.len() > 1 {
        out.line(&format!(
            "verified {} file(s): {files_with_problems} with problems ({problem_count} in all), {failed} could not be checked",
            logs.len()
        ))?;
    }
    if failed > 0 {
        return Err(CliError::SomeFailed { count: failed });
    }
    if problem_count > 0 {
        return Err(CliError::ProblemsFound {
            count: problem_count,
        });
    }
    Ok(())
}

fn print_report(
    path: &std::path::Path,
    report: &Report,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
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
            super::info::index_state_json(&report.index_state)["state"]
                .as_str()
                .unwrap_or("?")
        ))?;
    }
    Ok(())
}
