//! Finding the logs named on a command line: files as given, directories searched
//! recursively for `*.jsonl`.

use std::path::{Path, PathBuf};

use crate::exit::CliError;

/// Directory levels searched below a named directory.
const DIRECTORY_DEPTH_MAX: usize = 32;

/// The logs named by `paths`, each with its size, in a stable order (directories sorted by
/// name), and the paths that could not be read. Sidecar indexes are skipped.
pub fn collect_logs(paths: &[PathBuf]) -> (Vec<(PathBuf, u64)>, Vec<CliError>) {
    let mut logs = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_dir() => walk(path, 0, &mut logs, &mut errors),
            // A shell glob names the sidecars too: they are not logs, so they are skipped.
            Ok(_) if is_sidecar(path) => {}
            Ok(metadata) => logs.push((path.clone(), metadata.len())),
            Err(error) => errors.push(CliError::io(path, "open", error)),
        }
    }
    (logs, errors)
}

fn walk(dir: &Path, depth: usize, logs: &mut Vec<(PathBuf, u64)>, errors: &mut Vec<CliError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(CliError::io(dir, "list the directory", error));
            return;
        }
    };
    let mut children: Vec<_> = entries.filter_map(Result::ok).collect();
    children.sort_by_key(|entry| entry.file_name());
    for entry in children {
        let path = entry.path();
        // file_type does not follow symlinks: linked directories are not searched (no loops).
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            if depth < DIRECTORY_DEPTH_MAX {
                walk(&path, depth + 1, logs, errors);
            }
        } else if path.extension().is_some_and(|ext| ext == "jsonl")
            && let Ok(metadata) = std::fs::metadata(&path)
            && metadata.is_file()
        {
            logs.push((path, metadata.len()));
        }
    }
}

/// Whether `path` names a sidecar index (`<log>.treelog`) rather than a log.
pub fn is_sidecar(path: &Path) -> bool {
    path.as_os_str()
        .to_string_lossy()
        .ends_with(treelog::SIDECAR_SUFFIX)
}

/// The error for a sidecar named where a log is expected.
pub fn sidecar_error(path: &Path) -> CliError {
    CliError::input(
        path.display().to_string(),
        "this is a sidecar index, not a log; name the .jsonl file",
    )
}
