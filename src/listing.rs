//! Listing the sessions of a directory, as pi's `SessionManager.list()` describes them, read
//! through each session's index instead of parsing every file in full.

use std::path::{Path, PathBuf};

pub mod pi_summary;
pub mod summary_cache;

use crate::error::{Error, Result};
use crate::format::line::EntryKind;
use crate::format::{json_scan, pi_json};
use crate::session::{Session, SessionOptions};

/// What `treelog list` shows about one session.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    pub cwd: Option<String>,
    /// The name of the last `session_info` entry, unless empty.
    pub name: Option<String>,
    pub parent_session: Option<String>,
    /// The header's timestamp.
    pub created: Option<String>,
    /// The timestamp of the last entry in file order; the header's when there is no entry.
    /// (pi takes the latest user or assistant `message.timestamp`, which needs every line.)
    pub modified: Option<String>,
    /// `message` entries on every branch, as pi counts them.
    pub message_count: u64,
    /// The text of the first user message in file order, or `(no messages)`.
    pub first_message: String,
    /// The file's modification time in epoch milliseconds (the last sort key).
    pub file_modified_ms: i64,
    /// What reading the session found about its index (fresh, caught up, rebuilt and why).
    pub index_state: crate::IndexState,
}

/// pi's sessions directory: `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`.
pub fn default_sessions_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir).join("sessions"));
    }
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
    Some(PathBuf::from(home).join(".pi/agent/sessions"))
}

/// pi's directory for the sessions of `cwd` inside `sessions_dir`: `--<cwd>--`, with the
/// leading `/` or `\` dropped and every `/`, `\` and `:` turned into `-`
/// (`/home/a/proj` gives `--home-a-proj--`).
pub fn session_dir_for_cwd(sessions_dir: &Path, cwd: &str) -> PathBuf {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    let encoded: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    sessions_dir.join(format!("--{encoded}--"))
}

/// OpenClaw's gateway layout: `<state_dir>/agents/<agent>/sessions` (state_dir is
/// `$OPENCLAW_STATE_DIR` or `~/.openclaw`), holding `<session id>.jsonl` files.
pub fn openclaw_sessions_dir(state_dir: &Path, agent: &str) -> PathBuf {
    state_dir.join("agents").join(agent).join("sessions")
}

/// pi's `SessionManager.list(cwd, sessionDir?)`: the sessions of `cwd`, from `sessions_dir`
/// (default: pi's directory for that cwd), newest first.
pub fn list(cwd: &str, sessions_dir: Option<&Path>) -> Result<Listing> {
    let dir = match sessions_dir {
        Some(dir) => Some(dir.to_path_buf()),
        None => default_sessions_dir().map(|root| session_dir_for_cwd(&root, cwd)),
    };
    list_if_exists(dir, Some(cwd))
}

/// pi's `SessionManager.listAll()`: every session under `sessions_dir` (default: pi's
/// sessions directory), whatever its cwd, newest first.
pub fn list_all(sessions_dir: Option<&Path>) -> Result<Listing> {
    list_if_exists(
        sessions_dir
            .map(Path::to_path_buf)
            .or_else(default_sessions_dir),
        None,
    )
}

/// A directory that does not exist yet (or cannot be named) holds no sessions, as in pi.
fn list_if_exists(dir: Option<PathBuf>, cwd: Option<&str>) -> Result<Listing> {
    match dir {
        Some(dir) if dir.exists() => list_sessions(&dir, cwd),
        _ => Ok(Listing::default()),
    }
}

/// The `*.jsonl` files directly in `dir` and in its subdirectories (one level, as pi lays
/// sessions out: `sessions/--<cwd>--/<file>.jsonl`), in name order.
pub fn session_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in read_dir_sorted(dir)? {
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if file_type.is_dir() {
            // An unreadable subdirectory is skipped, as pi skips it.
            let Ok(children) = read_dir_sorted(&path) else {
                continue;
            };
            files.extend(
                children
                    .into_iter()
                    .map(|child| child.path())
                    .filter(|child| is_log(child)),
            );
        } else if is_log(&path) {
            files.push(path);
        }
    }
    Ok(files)
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list the directory", e))?;
    let mut entries: Vec<_> = entries.filter_map(std::result::Result::ok).collect();
    entries.sort_by_key(|entry| entry.file_name());
    Ok(entries)
}

fn is_log(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "jsonl")
        && std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
}

/// Describes the session at `path`, reading it through its index (which may be built or
/// caught up on the way, as any open does).
pub fn session_info(path: &Path) -> Result<SessionInfo> {
    session_info_with(path, &SessionOptions::default())
}

/// [`session_info`], opening the session with `options` (where its index lives, whether it
/// may be written).
pub fn session_info_with(path: &Path, options: &SessionOptions) -> Result<SessionInfo> {
    let mut session = Session::open(path, options.clone())?;
    let file_modified_ms = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_millis() as i64);
    describe(&mut session, path, file_modified_ms)
}

/// What `treelog list` shows about the open `session`, named `path`, whose log was last
/// modified at `file_modified_ms` (epoch milliseconds).
pub(crate) fn describe(
    session: &mut Session,
    path: &Path,
    file_modified_ms: i64,
) -> Result<SessionInfo> {
    let stats = session.stats()?;
    let message_count = stats
        .counts_by_kind
        .iter()
        .find(|(kind, _)| *kind == EntryKind::Message)
        .map_or(0, |(_, count)| *count);
    let header = session.header().clone();
    let modified = match session.log_leaf_id()? {
        Some(id) => session.entry(&id)?.map(|entry| entry.timestamp),
        None => None,
    }
    .filter(|timestamp| !timestamp.is_empty())
    .or_else(|| header.timestamp.clone());
    let first_message = if message_count == 0 {
        None
    } else {
        first_user_text(session)?
    };
    Ok(SessionInfo {
        path: path.to_path_buf(),
        id: header.id,
        cwd: header.cwd,
        name: session.session_name()?,
        parent_session: header.parent_session,
        created: header.timestamp,
        modified,
        message_count,
        first_message: first_message.unwrap_or_else(|| "(no messages)".into()),
        file_modified_ms,
        index_state: session.index_state().clone(),
    })
}

/// The text of the first `message` entry with role `user`, in file order.
fn first_user_text(session: &Session) -> Result<Option<String>> {
    for entry in session.entries()? {
        let entry = entry?;
        if entry.kind != EntryKind::Message {
            continue;
        }
        let Some(message) = entry.field("message") else {
            continue;
        };
        let message = message.get();
        if crate::format::message::message_role(message).as_deref() != Some("user") {
            continue;
        }
        return Ok(Some(user_text(pi_json::field(message, "content"))));
    }
    Ok(None)
}

/// A user message's text (read as the context reads it, [`pi_json`]): the string content, or
/// its text blocks joined by spaces.
fn user_text(content: Option<&str>) -> String {
    let Some(content) = content else {
        return String::new();
    };
    if let Some(text) = pi_json::string_lossy(content) {
        return text.into_owned();
    }
    json_scan::array_items(content)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|block| {
            let found = json_scan::scan(block, &["type", "text"]).ok()?;
            let [kind, text] = found.fields;
            (kind.and_then(pi_json::string_lossy).as_deref() == Some("text"))
                .then(|| text.and_then(pi_json::string_lossy))
                .flatten()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sessions of a directory, and the files that could not be read.
#[derive(Debug, Default)]
pub struct Listing {
    /// Newest first by `modified`, then by file modification time.
    pub sessions: Vec<SessionInfo>,
    pub failed: Vec<(PathBuf, Error)>,
}

/// Every session in `dir` (see [`session_files`]) whose header names `cwd` (when given).
pub fn list_sessions(dir: &Path, cwd: Option<&str>) -> Result<Listing> {
    let mut sessions = Vec::new();
    let mut failed = Vec::new();
    for path in session_files(dir)? {
        match session_info(&path) {
            Ok(info) => {
                if cwd.is_none_or(|cwd| info.cwd.as_deref() == Some(cwd)) {
                    sessions.push(info);
                }
            }
            Err(error) => failed.push((path, error)),
        }
    }
    sort_newest_first(&mut sessions);
    Ok(Listing { sessions, failed })
}

/// Sorts sessions newest first: by `modified`, then by the file's modification time.
pub fn sort_newest_first(sessions: &mut [SessionInfo]) {
    let key = |info: &SessionInfo| {
        (
            info.modified
                .as_deref()
                .and_then(crate::format::time::parse_iso_ms),
            info.file_modified_ms,
        )
    };
    sessions.sort_by_key(|info| std::cmp::Reverse(key(info)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi's directory names for a cwd, from its session-manager's rule.
    #[test]
    fn pi_directory_names() {
        let root = Path::new("/s");
        assert_eq!(
            session_dir_for_cwd(root, "/home/a/proj"),
            Path::new("/s/--home-a-proj--")
        );
        assert_eq!(
            session_dir_for_cwd(root, "C:\\work\\x"),
            Path::new("/s/--C--work-x--")
        );
        assert_eq!(
            openclaw_sessions_dir(Path::new("/o"), "main"),
            Path::new("/o/agents/main/sessions")
        );
    }

    /// list finds the sessions of one cwd in its pi directory; list_all finds every session.
    #[test]
    fn list_and_list_all() {
        let root = tempfile::tempdir().unwrap();
        for cwd in ["/a", "/b"] {
            let dir = session_dir_for_cwd(root.path(), cwd);
            let mut session =
                crate::Session::create(&dir, cwd, crate::SessionOptions::default()).unwrap();
            session
                .append_message(r#"{"role":"user","content":"hi","timestamp":1}"#)
                .unwrap();
            session.close().unwrap();
        }
        let listing = list("/a", Some(&session_dir_for_cwd(root.path(), "/a"))).unwrap();
        assert_eq!(listing.sessions.len(), 1);
        assert_eq!(listing.sessions[0].cwd.as_deref(), Some("/a"));
        assert_eq!(listing.sessions[0].first_message, "hi");
        assert_eq!(list_all(Some(root.path())).unwrap().sessions.len(), 2);
    }
}
