//! Session directories: where sessions live, finding the most recent one, and atomic file
//! replacement.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The most recently modified `*.jsonl` file in `dir` whose header is a session header (and,
/// with `cwd`, names that cwd). Reads each candidate's first line only, however long.
pub fn most_recent(dir: &Path, cwd: Option<&str>) -> Result<Option<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(Error::io(dir, "list the directory", error)),
    };
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, "list the directory", e))?;
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "jsonl") {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        let Ok(modified) = meta.modified() else {
            continue;
        };
        let Some(header) = read_header(&path) else {
            continue;
        };
        if let Some(cwd) = cwd
            && header.cwd.as_deref() != Some(cwd)
        {
            continue;
        }
        if best.as_ref().is_none_or(|(time, _)| modified > *time) {
            best = Some((modified, path));
        }
    }
    Ok(best.map(|(_, path)| path))
}

/// The parsed first line of a log, if it is a session header.
pub fn read_header(path: &Path) -> Option<crate::session::header::Header> {
    use std::io::{BufRead, Read};
    let file = crate::fs_safe::open_regular(path, std::fs::OpenOptions::new().read(true)).ok()?;
    let mut reader = std::io::BufReader::new(file).take(crate::limits::LINE_LEN_MAX as u64);
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line).ok()?;
    let text = String::from_utf8_lossy(&line[crate::format::bom_len(0, &line)..]);
    match crate::format::line::classify(text.trim_end_matches('\n'), false, true) {
        crate::format::line::Line::Header(header) => Some(crate::session::header::Header {
            json: text.trim_end_matches(['\n', '\r']).to_string(),
            id: header.id.into_owned(),
            version: header.version,
            timestamp: header.timestamp.map(Into::into),
            cwd: header.cwd.map(Into::into),
            parent_session: header.parent_session.map(Into::into),
            recovered: false,
        }),
        _ => None,
    }
}

/// Replaces (or creates) `path` with `bytes` atomically, at the end of its links and keeping
/// its mode and owner ([`crate::fs_safe::replace_file_keeping`]): a temporary file in the
/// same directory, fsync, rename, fsync of the directory. A crash leaves either the old file or
/// the new one, never a mix; the temporary files killed writers left are removed first.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let replaced = crate::fs_safe::resolve_links(path).and_then(|target| {
        if let (Some(dir), Some(name)) = (target.parent(), target.file_name()) {
            let prefix = format!(".{}{}", name.to_string_lossy(), crate::fs_safe::TMP_INFIX);
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            crate::fs_safe::remove_leftovers(dir, |entry| {
                crate::fs_safe::pid_after(entry, &prefix)
            });
        }
        crate::fs_safe::replace_file_keeping(&target, bytes)
    });
    replaced.map_err(|e| Error::io(path, "replace the file", e))
}
