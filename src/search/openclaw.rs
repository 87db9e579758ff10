//! Searching OpenClaw's sessions (`openclaw://` addresses, [`crate::openclaw::Scope`]): each
//! session's rows, in `seq` order, are copied as its JSONL lines into a cache folder, and that
//! folder is searched as any folder of logs, so that a session answers as its lines in a JSONL
//! file do; hits are then named by the session's address.
//!
//! The cache folder is `openclaw-<16 hex digits of blake3(the agent database's full path)>/`
//! in the index directory when one is named (`SearchOptions::index_dir`), else in
//! `$XDG_CACHE_HOME/treelog/` (or `$HOME/.cache/treelog/`, or `.treelog-cache/`): never beside
//! OpenClaw's database, which is only read. It holds one `<session id>.jsonl` per session
//! (`%<hex of the id>.jsonl` for an id that is not a plain file name), the folder's search
//! index and the sessions' sidecars. Every search compares each copy with the rows read now:
//! a copy that holds them is left alone, one that holds a beginning of them grows (the index
//! catches up from where it stopped), and any other is replaced with the folder's search
//! index and the copy's sidecar deleted, so that both are rebuilt from the new lines; a copy
//! whose session is gone is deleted.
//!
//! Without index writes nothing is written to the cache: a cache that holds the rows as they
//! are is searched read-only, and otherwise the rows are copied into a temporary folder,
//! indexed in memory and deleted after the search.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::fs_safe;
use crate::openclaw::{self, AgentDb, OpenClawError, Scope};

use super::copies::{Materialized, Prepared, remove_if_present, temporary_dir};
use super::error::SearchError;
use super::store::INDEX_DIR_NAME;

/// Hex digits of the database's hash in the cache folder's name.
const CACHE_KEY_HEX_LEN: usize = 16;

/// One session of an agent: its id and its lines as a JSONL file holds them.
struct SessionLines {
    id: String,
    bytes: Vec<u8>,
}

/// Reads the sessions `text` names (`None` when it is not an `openclaw://` address) and brings
/// their copies up to date for a search with `index_dir` and `index_write`.
pub(crate) fn prepare(
    text: &str,
    index_dir: Option<&Path>,
    index_write: bool,
) -> Option<Result<Materialized, SearchError>> {
    let scope = Scope::parse(text)?;
    let failed = |source: OpenClawError| SearchError::OpenClaw {
        address: text.to_owned(),
        source,
    };
    Some(
        scope
            .map_err(failed)
            .and_then(|scope| prepare_scope(text, &scope, index_dir, index_write)),
    )
}

fn prepare_scope(
    text: &str,
    scope: &Scope,
    index_dir: Option<&Path>,
    index_write: bool,
) -> Result<Materialized, SearchError> {
    let failed = |source: OpenClawError| SearchError::OpenClaw {
        address: text.to_owned(),
        source,
    };
    // (agent database, sessions read, the address prefix of each session, one session only)
    let mut agents: Vec<(PathBuf, Vec<SessionLines>, String, bool)> = Vec::new();
    match scope {
        Scope::Session(address) => {
            let agent = openclaw::agent(&address.state_dir, &address.agent).map_err(failed)?;
            let db = AgentDb::open(&agent.db_path).map_err(failed)?;
            let rows = db.rows(&address.session).map_err(failed)?;
            let prefix = text
                .strip_suffix(address.session.as_str())
                .unwrap_or(text)
                .to_owned();
            let lines = SessionLines {
                id: address.session.clone(),
                bytes: openclaw::session_bytes(&rows),
            };
            agents.push((agent.db_path, vec![lines], prefix, true));
        }
        Scope::Agent { state_dir, agent } => {
            let agent = openclaw::agent(state_dir, agent).map_err(failed)?;
            let lines = agent_sessions(&agent.db_path).map_err(failed)?;
            agents.push((agent.db_path, lines, format!("{text}/"), false));
        }
        Scope::StateDir(state_dir) => {
            if !state_dir.is_dir() {
                return Err(failed(OpenClawError::Io {
                    path: state_dir.clone(),
                    operation: "open OpenClaw's state directory",
                    reason: "no such directory".into(),
                }));
            }
            for agent in openclaw::agents(state_dir).map_err(failed)? {
                let lines = agent_sessions(&agent.db_path).map_err(failed)?;
                agents.push((agent.db_path, lines, format!("{text}{}/", agent.id), false));
            }
        }
    }
    let root = index_dir.map_or_else(default_cache_dir, Path::to_path_buf);
    let current = agents.iter().all(|(db_path, sessions, _, one)| {
        copies_current(&cache_folder(&root, db_path), sessions, *one)
    });
    let (root, temporary, write) = if index_write || !current {
        if index_write {
            (root, None, true)
        } else {
            let dir = temporary_dir("openclaw")?;
            (dir.path().to_path_buf(), Some(dir), false)
        }
    } else {
        (root, None, false)
    };
    let mut materialized = Materialized {
        searches: Vec::new(),
        temporary,
        lock: None,
    };
    for (db_path, sessions, prefix, one) in agents {
        let folder = cache_folder(&root, &db_path);
        if index_write || materialized.temporary.is_some() {
            update_copies(&folder, &sessions, one)?;
        }
        let addresses = sessions
            .iter()
            .map(|session| {
                let copy = folder.join(file_name(&session.id));
                (copy, format!("{prefix}{}", session.id))
            })
            .collect();
        let path = match (one, sessions.first()) {
            (true, Some(session)) => folder.join(file_name(&session.id)),
            _ => folder,
        };
        materialized.searches.push(Prepared {
            path,
            index_write: write,
            addresses,
        });
    }
    Ok(materialized)
}

/// Every session of the agent whose database is `db_path`, with its lines.
fn agent_sessions(db_path: &Path) -> openclaw::Result<Vec<SessionLines>> {
    let db = AgentDb::open(db_path)?;
    let mut found = Vec::new();
    for summary in db.sessions()? {
        let rows = db.rows(&summary.id)?;
        found.push(SessionLines {
            id: summary.id,
            bytes: openclaw::session_bytes(&rows),
        });
    }
    Ok(found)
}

/// `$XDG_CACHE_HOME/treelog`, else `$HOME/.cache/treelog`, else `.treelog-cache`.
fn default_cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return PathBuf::from(cache).join("treelog");
    }
    match var("HOME") {
        Some(home) => PathBuf::from(home).join(".cache").join("treelog"),
        None => PathBuf::from(".treelog-cache"),
    }
}

/// The folder of the copies of one agent database's sessions, below `root`.
fn cache_folder(root: &Path, db_path: &Path) -> PathBuf {
    let full = fs::canonicalize(db_path).unwrap_or_else(|_| db_path.to_path_buf());
    let hash = blake3::hash(full.as_os_str().as_encoded_bytes());
    root.join(format!("openclaw-{}", &hash.to_hex()[..CACHE_KEY_HEX_LEN]))
}

/// The copy's file name: the id when it is a plain file name, else `%` and its hex.
fn file_name(session: &str) -> OsString {
    format!("{}.jsonl", crate::path_component::encode(session)).into()
}

/// Whether the copies in `folder` hold the sessions' lines as they are (and, for a whole
/// agent, no copy of a session that is gone).
fn copies_current(folder: &Path, sessions: &[SessionLines], one: bool) -> bool {
    let held = sessions.iter().all(|session| {
        fs::read(folder.join(file_name(&session.id))).is_ok_and(|bytes| bytes == session.bytes)
    });
    held && (one || stale_copies(folder, sessions).is_ok_and(|stale| stale.is_empty()))
}

/// The copies in `folder` of sessions not in `sessions`.
fn stale_copies(folder: &Path, sessions: &[SessionLines]) -> io::Result<Vec<PathBuf>> {
    let wanted: Vec<OsString> = sessions.iter().map(|s| file_name(&s.id)).collect();
    let mut stale = Vec::new();
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(stale),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let name = entry?.file_name();
        if name.to_str().is_some_and(|name| name.ends_with(".jsonl")) && !wanted.contains(&name) {
            stale.push(folder.join(name));
        }
    }
    Ok(stale)
}

/// Brings the copies in `folder` to the sessions' lines (module doc).
fn update_copies(folder: &Path, sessions: &[SessionLines], one: bool) -> Result<(), SearchError> {
    // The copies of a database are not local files of their own: 0600 in a 0700 folder.
    fs_safe::create_owned_dir(folder, 0o700)
        .map_err(|error| SearchError::io(folder, "create the cache folder", error))?;
    fs_safe::remove_leftovers(folder, fs_safe::partial_pid);
    let mut rebuild = false;
    for session in sessions {
        let file = folder.join(file_name(&session.id));
        rebuild |= update_copy(&file, &session.bytes)?;
    }
    if !one {
        let stale = stale_copies(folder, sessions)
            .map_err(|error| SearchError::io(folder, "read the directory", error))?;
        for file in stale {
            remove_if_present(&file)?;
            remove_if_present(&crate::sidecar_path(&file))?;
        }
    }
    if rebuild {
        let index = folder.join(INDEX_DIR_NAME);
        match fs::remove_dir_all(&index) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                return Err(SearchError::io(&index, "delete the stale index", error));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Brings the copy `file` to `bytes`, written whole to a file of this process and renamed
/// over the copy (two searches at once never interleave their writes); true when the copy
/// held other lines than a beginning of `bytes` (its sidecar is deleted then, and the
/// folder's index must be).
fn update_copy(file: &Path, bytes: &[u8]) -> Result<bool, SearchError> {
    let old = match fs::read(file) {
        Ok(old) => Some(old),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(SearchError::io(file, "read the cached copy", error)),
    };
    if old.as_deref() == Some(bytes) {
        return Ok(false);
    }
    let replaced = old.is_some_and(|old| !bytes.starts_with(&old));
    if replaced {
        remove_if_present(&crate::sidecar_path(file))?;
    }
    let mut partial = file.as_os_str().to_owned();
    partial.push(format!(".{}.partial", std::process::id()));
    let partial = PathBuf::from(partial);
    fs_safe::create_own_file(&partial, 0o600)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|error| SearchError::io(&partial, "write the cached copy", error))?;
    fs::rename(&partial, file)
        .map_err(|error| SearchError::io(file, "write the cached copy", error))?;
    Ok(replaced)
}
