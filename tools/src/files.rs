//! Finding the logs named on a command line: files as given, directories searched
//! recursively for `*.jsonl`.

use std::path::{Path, PathBuf};

use crate::exit::CliError;

/// Directory levels searched below a named directory.
const DIRECTORY_DEPTH_MAX: usize = 32;

/// One log found on the command line, or a path that could not be read.
pub type Found = Result<Log, CliError>;

/// A log to work on and its size.
pub struct Log {
    pub path: PathBuf,
    pub bytes: u64,
}

/// The logs named by `paths` and the paths that could not be read, in argument order (a
/// directory's logs sorted by name, where the directory was named), so that a command reports
/// them in the order the user gave them. Sidecar indexes are skipped.
pub fn collect_logs(paths: &[PathBuf]) -> Vec<Found> {
    let mut found = Vec::new();
    for path in paths {
        // A log on an object store (`s3://BUCKET/KEY`): its size is not known before it is read.
        if path.to_str().is_some_and(|text| text.starts_with("s3://")) {
            found.push(Ok(Log {
                path: path.clone(),
                bytes: 0,
            }));
            continue;
        }
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_dir() => walk(path, 0, &mut found),
            // A shell glob names the sidecars too: they are not logs, so they are skipped.
            Ok(_) if is_sidecar(path) => {}
            Ok(metadata) => found.push(Ok(Log {
                path: path.clone(),
                bytes: metadata.len(),
            })),
            Err(error) => found.push(Err(CliError::io(path, "open", error))),
        }
    }
    found
}

/// The sum of the sizes of the logs found.
pub fn total_bytes(found: &[Found]) -> u64 {
    found.iter().flatten().map(|log| log.bytes).sum()
}

/// The line that says a search found nothing: `no sessions found under DIR` (several
/// paths are joined by commas).
pub fn nothing_found(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    format!("no sessions found under {}", names.join(", "))
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<Found>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            found.push(Err(CliError::io(dir, "list the directory", error)));
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
                walk(&path, depth + 1, found);
            }
        } else if path.extension().is_some_and(|ext| ext == "jsonl")
            && let Ok(metadata) = std::fs::metadata(&path)
            && metadata.is_file()
        {
            found.push(Ok(Log {
                path,
                bytes: metadata.len(),
            }));
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
