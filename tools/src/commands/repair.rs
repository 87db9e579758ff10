//! `treelog repair`: plans explicit fixes of a log and applies them on request.

use std::path::PathBuf;

use treelog::repair::repair_file_with;

use crate::exit::CliError;
use crate::out::Out;

/// Plan (and with --apply, make) explicit fixes to a log; a dry run by default.
///
/// Fixes: a last line without its newline gets it when it is complete JSON (it is read as a
/// line already) and is cut as a torn tail otherwise; a
/// missing or corrupt header is restored (a later header moved up, an id added, or a
/// version 3 header inserted above every other line); a version 1 or 2 log is migrated to
/// version 3 as pi migrates it. A line that parses as JSON is never dropped, and unchanged
/// lines are copied byte for byte. --apply copies the log to FILE.bak-<unix-seconds> first,
/// replaces it atomically and deletes its sidecar index. Stop writers before --apply.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl).
    pub file: PathBuf,
    /// Make the fixes (default: only print them).
    #[arg(long)]
    pub apply: bool,
    /// The cwd of a header that has to be made up (default: the current directory).
    #[arg(long, value_name = "CWD")]
    pub cwd: Option<String>,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    super::foreign::refuse_other(&args.file)?;
    let metadata =
        std::fs::metadata(&args.file).map_err(|e| CliError::io(&args.file, "open the log", e))?;
    if !metadata.is_file() {
        return Err(CliError::input(
            args.file.display().to_string(),
            "not a regular file",
        ));
    }
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir()
            .map(|dir| dir.display().to_string())
            .unwrap_or_default(),
    };
    let outcome = repair_file_with(&args.file, args.apply, &cwd, &crate::sidecars::options())?;
    let plan = &outcome.plan;
    if plan.is_empty() {
        return out.line(&format!("{}: nothing to repair", args.file.display()));
    }
    let verb = if args.apply { "fixed" } else { "would fix" };
    for fix in &plan.fixes {
        let location = match fix.line {
            Some(line) => format!("{}:{line}", args.file.display()),
            None => args.file.display().to_string(),
        };
        let offset = fix
            .offset_bytes
            .map_or(String::new(), |offset| format!(" (byte {offset})"));
        out.line(&format!("{location}: {verb}: {}{offset}", fix.description))?;
    }
    match &outcome.backup {
        Some(backup) => out.line(&format!(
            "{}: {} fix(es) applied ({} -> {} bytes); the original is in {}; the index will be rebuilt on the next open",
            args.file.display(),
            plan.fixes.len(),
            plan.original_len_bytes,
            plan.content.len(),
            backup.display()
        )),
        None => out.line(&format!(
            "{}: dry run: {} fix(es) planned ({} -> {} bytes); run again with --apply to make them",
            args.file.display(),
            plan.fixes.len(),
            plan.original_len_bytes,
            plan.content.len()
        )),
    }
}
