//! The listing summary of a big session file ([`pi_summary`]), kept between listings in a
//! cache folder, so that listing a folder that holds a session of a million entries costs
//! what its new lines cost, not a read of the whole file each time.
//!
//! What is kept, per file of at least [`CACHED_FILE_LEN_MIN`] bytes: its identity (inode,
//! length, modification time), where its last complete line ends, a crc32 of the bytes just
//! before that, the summary of the lines up to there (the state [`SummaryBuilder`] resumes
//! from) and the answer for the whole file. A file with the same identity is answered from
//! the cache; a file that only grew (same inode, the checked bytes unchanged: pi only
//! appends) is read from where the kept lines end; anything else is read in full. A cache
//! that cannot be read or written is ignored: it is an optimisation only.
//!
//! One JSON file per session, `<dir>/summary-<hash of the path>.json`, written to a temporary
//! name and renamed. Nothing here writes the session file.

use std::hash::{Hash, Hasher};
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::pi_summary::{SessionSummary, Summary, SummaryBuilder, Texts};
use crate::error::{Error, Result};
use crate::fs_safe;

/// Files shorter than this are read in full: a cache file costs a read too.
pub const CACHED_FILE_LEN_MIN: u64 = 1 << 20;
/// How many bytes before the kept end are checked before a grown file is read from there.
const TAIL_CHECK_LEN: u64 = 4096;
/// The layout of a cache file.
const FORMAT: u64 = 1;

/// What identifies one version of a file.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Identity {
    inode: u64,
    len: u64,
    modified_ns: u64,
}

fn identity_of(metadata: &std::fs::Metadata) -> Identity {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(metadata);
    #[cfg(not(unix))]
    let inode = 0;
    let modified_ns = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos() as u64);
    Identity {
        inode,
        len: metadata.len(),
        modified_ns,
    }
}

/// The cache file of `path` in `dir`.
fn cache_file(dir: &Path, path: &Path) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut hasher);
    dir.join(format!("summary-{:016x}.json", hasher.finish()))
}

/// [`pi_summary::summarize_file`](super::pi_summary::summarize_file) with the eager fields
/// only ([`Texts::Skip`]), through the cache in `dir` for a big file.
pub fn summarize_file_cached(path: &Path, dir: &Path) -> Result<Summary> {
    let io = |operation: &'static str| {
        move |source| Error::Io {
            path: path.to_path_buf(),
            operation,
            source,
        }
    };
    let mut file = std::fs::File::open(path).map_err(io("open"))?;
    let identity = identity_of(&file.metadata().map_err(io("look at"))?);
    if identity.len < CACHED_FILE_LEN_MIN {
        return Ok(read_lines(&mut file, 0, SummaryBuilder::new(Texts::Skip))
            .map_err(io("read"))?
            .0);
    }
    let cache = cache_file(dir, path);
    let kept = std::fs::read(&cache)
        .ok()
        .and_then(|bytes| Kept::decode(&bytes, path));
    let (answer, state) = match kept {
        Some(kept) if kept.identity == identity => return Ok(Summary::Session(kept.answer)),
        Some(kept)
            if kept.identity.inode == identity.inode
                && kept.end <= identity.len
                && kept.identity.len <= identity.len
                && tail_crc(&mut file, kept.end).ok() == Some(kept.tail_crc) =>
        {
            let builder = SummaryBuilder::resumed(Texts::Skip, kept.state);
            read_lines(&mut file, kept.end, builder).map_err(io("read"))?
        }
        _ => read_lines(&mut file, 0, SummaryBuilder::new(Texts::Skip)).map_err(io("read"))?,
    };
    if let (Summary::Session(answer), Some((end, state))) = (&answer, state)
        && let Ok(crc) = tail_crc(&mut file, end)
    {
        let kept = Kept {
            identity,
            end,
            tail_crc: crc,
            state,
            answer: answer.clone(),
        };
        write_cache(dir, &cache, path, &kept.encode(path));
    }
    Ok(answer)
}

/// Feeds the lines of `file` from `start` (the start of a line) to `builder`. Returns the
/// answer, and where the last complete line ends with the state after it (none once decided).
fn read_lines(
    file: &mut std::fs::File,
    start: u64,
    mut builder: SummaryBuilder,
) -> std::io::Result<(Summary, Option<(u64, SessionSummary)>)> {
    file.seek(SeekFrom::Start(start))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, &*file);
    let mut line = Vec::new();
    let mut end = start;
    let mut before_torn = None;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        let complete = line.ends_with(b"\n");
        if complete {
            end += read as u64;
        } else {
            // The bytes after the last `\n`: a line for pi now, the start of one later.
            before_torn = Some(builder.state());
        }
        builder.line(line.strip_suffix(b"\n").unwrap_or(&line));
        if builder.is_decided() {
            return Ok((builder.finish(), None));
        }
    }
    let state = before_torn.unwrap_or_else(|| builder.state());
    Ok((builder.finish(), state.map(|state| (end, state))))
}

/// crc32 of the up to [`TAIL_CHECK_LEN`] bytes before `end`.
fn tail_crc(file: &mut std::fs::File, end: u64) -> std::io::Result<u32> {
    let start = end.saturating_sub(TAIL_CHECK_LEN);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = vec![0; (end - start) as usize];
    file.read_exact(&mut bytes)?;
    Ok(crc32fast::hash(&bytes))
}

/// Writes `text` to `cache` through a temporary file; failures are ignored. The summary holds
/// the session's text (its name, its first message), so it is written as every derived file
/// is: in a folder of this user's that is no link (0700), to a temporary name created
/// exclusively with the mode derived from the session file `source`, then renamed.
fn write_cache(dir: &Path, cache: &Path, source: &Path, text: &str) {
    use std::io::Write;
    if fs_safe::create_owned_dir(dir, 0o700).is_err() {
        return;
    }
    let temp = cache.with_extension(format!("{}.tmp", std::process::id()));
    let written = fs_safe::create_own_file(&temp, fs_safe::mode_derived_from(source))
        .and_then(|mut file| file.write_all(text.as_bytes()));
    if written.is_err() || std::fs::rename(&temp, cache).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

/// One cache file's content.
struct Kept {
    identity: Identity,
    end: u64,
    tail_crc: u32,
    state: SessionSummary,
    answer: SessionSummary,
}

fn summary_json(summary: &SessionSummary) -> Value {
    json!({
        "header": summary.header_json,
        "messageCount": summary.message_count,
        "name": summary.name,
        "lastActivity": summary.last_activity_ms,
        "firstMessage": summary.first_user_text,
    })
}

fn summary_of(value: &Value) -> Option<SessionSummary> {
    let text = |name: &str| -> Option<Option<String>> {
        match value.get(name)? {
            Value::Null => Some(None),
            Value::String(text) => Some(Some(text.clone())),
            _ => None,
        }
    };
    Some(SessionSummary {
        header_json: text("header")??,
        message_count: value.get("messageCount")?.as_u64()?,
        name: text("name")?,
        last_activity_ms: match value.get("lastActivity")? {
            Value::Null => None,
            number => Some(number.as_f64()?),
        },
        first_user_text: text("firstMessage")?,
        all_texts: None,
    })
}

impl Kept {
    fn encode(&self, path: &Path) -> String {
        json!({
            "format": FORMAT,
            "path": path.to_string_lossy(),
            "inode": self.identity.inode,
            "len": self.identity.len,
            "modifiedNs": self.identity.modified_ns,
            "end": self.end,
            "tailCrc": self.tail_crc,
            "state": summary_json(&self.state),
            "answer": summary_json(&self.answer),
        })
        .to_string()
    }

    /// The cache file's content when it is well formed, of this layout and for `path`.
    fn decode(bytes: &[u8], path: &Path) -> Option<Kept> {
        let value: Value = serde_json::from_slice(bytes).ok()?;
        if value.get("format")?.as_u64()? != FORMAT
            || value.get("path")?.as_str()? != path.to_string_lossy()
        {
            return None;
        }
        let number = |name: &str| value.get(name).and_then(Value::as_u64);
        Some(Kept {
            identity: Identity {
                inode: number("inode")?,
                len: number("len")?,
                modified_ns: number("modifiedNs")?,
            },
            end: number("end")?,
            tail_crc: u32::try_from(number("tailCrc")?).ok()?,
            state: summary_of(value.get("state")?)?,
            answer: summary_of(value.get("answer")?)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

    fn user(text: &str, time: u64) -> String {
        format!(
            r#"{{"type":"message","message":{{"role":"user","content":"{text}","timestamp":{time}}}}}"#
        )
    }

    /// A big file is answered as pi's loop answers it: read in full, again from the cache,
    /// after it grew (read from the kept end), and with a torn last line and after it.
    #[test]
    fn cached_answers_are_the_full_reads() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let cache = dir.path().join("cache");
        let mut text = format!("{HEADER}\n");
        while (text.len() as u64) < CACHED_FILE_LEN_MIN {
            text.push_str(&user("padding padding padding padding", 5));
            text.push('\n');
        }
        let full = |log: &Path| super::super::pi_summary::summarize_file(log, Texts::Skip).unwrap();
        std::fs::write(&log, &text).unwrap();
        assert_eq!(summarize_file_cached(&log, &cache).unwrap(), full(&log));
        assert!(
            cache_file(&cache, &log).exists(),
            "a big file's summary is kept"
        );
        assert_eq!(summarize_file_cached(&log, &cache).unwrap(), full(&log));
        for tail in [
            format!("{}\n", user("later", 9)),
            user("torn", 11),
            "\n".to_string(),
        ] {
            text.push_str(&tail);
            std::fs::write(&log, &text).unwrap();
            assert_eq!(
                summarize_file_cached(&log, &cache).unwrap(),
                full(&log),
                "after {tail:?}"
            );
        }
    }

    /// The kept summary is no more readable than its session, and a cache folder that is a
    /// link is not written through (the answer is the full read all the same).
    #[test]
    fn kept_summaries_are_private_and_follow_no_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let mut text = format!("{HEADER}\n");
        while (text.len() as u64) < CACHED_FILE_LEN_MIN {
            text.push_str(&user("secret words", 5));
            text.push('\n');
        }
        std::fs::write(&log, &text).unwrap();
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
        let full = super::super::pi_summary::summarize_file(&log, Texts::Skip).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;

        let cache = dir.path().join("cache");
        assert_eq!(summarize_file_cached(&log, &cache).unwrap(), full);
        assert_eq!(mode(&cache), 0o700);
        assert_eq!(mode(&cache_file(&cache, &log)), 0o600);

        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let linked = dir.path().join("linked-cache");
        std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
        assert_eq!(summarize_file_cached(&log, &linked).unwrap(), full);
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    /// A file rewritten in place (the checked bytes differ) is read in full, not resumed.
    #[test]
    fn rewritten_files_are_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let cache = dir.path().join("cache");
        let body = |word: &str| {
            let mut text = format!("{HEADER}\n");
            while (text.len() as u64) < CACHED_FILE_LEN_MIN {
                text.push_str(&user(word, 5));
                text.push('\n');
            }
            text
        };
        std::fs::write(&log, body("first")).unwrap();
        summarize_file_cached(&log, &cache).unwrap();
        let mut second = body("other");
        second.push_str(&user("more", 6));
        second.push('\n');
        std::fs::write(&log, &second).unwrap();
        let Summary::Session(summary) = summarize_file_cached(&log, &cache).unwrap() else {
            panic!("a session");
        };
        assert_eq!(summary.first_user_text.as_deref(), Some("other"));
    }
}
