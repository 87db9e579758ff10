//! Session directories: where sessions live, finding the most recent one, and atomic file
//! replacement.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::storage::sync_parent_dir;

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
    let file = std::fs::File::open(path).ok()?;
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

/// Replaces (or creates) `path` with `bytes` atomically: a temporary file in the same
/// directory, fsync, rename, fsync of the directory. A crash leaves either the old file or the
/// new one, never a mix.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        sync_parent_dir(path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(|e| Error::io(path, "replace the file", e))
}
