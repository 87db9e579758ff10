//! The last check of a redaction: whether any byte of a file, or of the files under a folder,
//! still spells a redacted text, as it is or as a JSON string writes it. Reads only; never
//! follows a link.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes read at a time.
const CHUNK_LEN: usize = 4 << 20;
/// Folder levels looked into.
const DEPTH_MAX: usize = 32;

/// The byte sequences that spell `texts`: each text as it is and, where it differs, as the
/// inside of a JSON string.
pub fn spellings<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for text in texts {
        let json = crate::format::json_string::json_string(text);
        let escaped = json.as_bytes()[1..json.len() - 1].to_vec();
        for spelling in [text.as_bytes().to_vec(), escaped] {
            if !spelling.is_empty() && !out.contains(&spelling) {
                out.push(spelling);
            }
        }
    }
    out
}

/// Whether the regular file at `path` holds any of `needles` (a link or a missing file holds
/// nothing).
pub fn file_holds(path: &Path, needles: &[Vec<u8>]) -> std::io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(false),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    }
    let finders: Vec<memchr::memmem::Finder> =
        needles.iter().map(memchr::memmem::Finder::new).collect();
    let overlap = needles
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(1)
        .saturating_sub(1);
    let mut file = crate::fs_safe::open_regular(path, std::fs::OpenOptions::new().read(true))?;
    let mut buffer = vec![0u8; CHUNK_LEN + overlap];
    let mut kept = 0;
    loop {
        let read = file.read(&mut buffer[kept..])?;
        if read == 0 {
            return Ok(false);
        }
        let filled = kept + read;
        if finders
            .iter()
            .any(|finder| finder.find(&buffer[..filled]).is_some())
        {
            return Ok(true);
        }
        kept = overlap.min(filled);
        buffer.copy_within(filled - kept..filled, 0);
    }
}

/// The files under `folder` (at any depth, links not followed) that hold any of `needles`.
pub fn files_holding(folder: &Path, needles: &[Vec<u8>]) -> std::io::Result<Vec<PathBuf>> {
    let mut holding = Vec::new();
    let mut pending = vec![(folder.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() && depth < DEPTH_MAX {
                pending.push((path, depth + 1));
            } else if kind.is_file() && file_holds(&path, needles)? {
                holding.push(path);
            }
        }
    }
    holding.sort();
    Ok(holding)
}
