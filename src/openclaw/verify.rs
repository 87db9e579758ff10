//! Checking a state directory's migration: each JSONL original (archived by the importer,
//! or still in a `sessions/` folder) against the rows the importer made of it.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::archive::archived_transcripts;
use super::compare::{LineProblem, compare, original_lines};
use super::db::{AgentDb, Row, SessionSummary};
use super::error::{OpenClawError, Result};
use super::state::agents;

/// Where a session's original was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionSource {
    /// Moved by the importer to `session-sqlite-import-archive/`; whether its SHA-256 is the
    /// manifest's (`None` when the manifest records none).
    Archive {
        path: PathBuf,
        sha256_matches: Option<bool>,
    },
    /// Still in the agent's `sessions/` folder.
    Live { path: PathBuf },
}

impl SessionSource {
    pub fn path(&self) -> &Path {
        match self {
            SessionSource::Archive { path, .. } | SessionSource::Live { path } => path,
        }
    }
}

/// One session's comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionReport {
    pub agent: String,
    pub session: String,
    pub key: Option<String>,
    pub source: SessionSource,
    /// Non-blank lines in the original.
    pub original_lines: usize,
    /// Rows the database holds for the session.
    pub rows: usize,
    /// Lines lost or changed, in file order.
    pub problems: Vec<LineProblem>,
    /// Why the session could not be checked (the original is gone, the agent has no readable
    /// database, a row cannot be decoded); such a session is a problem too.
    pub unchecked: Option<String>,
}

impl SessionReport {
    /// The session has lines but the database holds none of them.
    pub fn imported_empty(&self) -> bool {
        self.unchecked.is_none() && self.rows == 0 && self.original_lines > 0
    }

    /// Whether the session could not be checked.
    pub fn is_unchecked(&self) -> bool {
        self.unchecked.is_some()
    }

    /// Whether the importer lost anything of this session.
    pub fn lost(&self) -> bool {
        !self.problems.is_empty()
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| OpenClawError::Io {
        path: path.to_path_buf(),
        operation: "read the original",
        reason: crate::io_reason(&e),
    })
}

/// Every original in `state_dir` compared with its rows, sorted by agent then session.
pub fn verify_state_dir(state_dir: &Path) -> Result<Vec<SessionReport>> {
    let mut dbs: Vec<(String, AgentDb, Vec<SessionSummary>)> = Vec::new();
    // Agents whose database cannot be read, and why: their sessions are reported unchecked.
    let mut unreadable: Vec<(String, String)> = Vec::new();
    for agent in agents(state_dir)? {
        match AgentDb::open(&agent.db_path).and_then(|db| Ok((db.sessions()?, db))) {
            Ok((sessions, db)) => dbs.push((agent.id, db, sessions)),
            Err(error) => unreadable.push((agent.id, error.to_string())),
        }
    }
    let mut reports = Vec::new();
    for archived in archived_transcripts(state_dir)? {
        let db = dbs.iter().find(|(id, ..)| *id == archived.agent);
        let stem = archived.file_session_id().unwrap_or_default();
        let session = db
            .and_then(|(_, _, sessions)| {
                let by_id = sessions.iter().find(|s| s.id == stem);
                by_id.or_else(|| {
                    let key = archived.session_key.as_deref()?;
                    sessions.iter().find(|s| s.key.as_deref() == Some(key))
                })
            })
            .map_or(stem, |found| found.id.clone());
        let source = |sha256_matches| SessionSource::Archive {
            path: archived.archive_path.clone(),
            sha256_matches,
        };
        let Some((_, db, sessions)) = db else {
            let reason = unreadable
                .iter()
                .find(|(agent, _)| *agent == archived.agent)
                .map_or_else(
                    || "the agent has no database".to_owned(),
                    |(_, error)| format!("the agent's database cannot be read: {error}"),
                );
            reports.push(unchecked(&archived.agent, session, source(None), &reason));
            continue;
        };
        let original = match std::fs::read(&archived.archive_path) {
            Ok(bytes) => bytes,
            Err(error) => {
                let reason = format!(
                    "the archived original cannot be read: {}",
                    crate::io_reason(&error)
                );
                reports.push(unchecked(&archived.agent, session, source(None), &reason));
                continue;
            }
        };
        let matches = archived
            .sha256
            .as_ref()
            .map(|sha| *sha == sha256_hex(&original));
        let key = archived.session_key.clone();
        reports.push(check(
            db,
            sessions,
            &archived.agent,
            session,
            key,
            source(matches),
            &original,
        )?);
    }
    for (agent, db, sessions) in &dbs {
        for path in live_originals(state_dir, agent)? {
            let Some(session) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                continue;
            };
            // A JSONL the importer has not taken yet still holds everything.
            if !sessions.iter().any(|s| s.id == session) {
                continue;
            }
            let original = read(&path)?;
            let key = sessions
                .iter()
                .find(|s| s.id == session)
                .and_then(|s| s.key.clone());
            let source = SessionSource::Live { path };
            reports.push(check(db, sessions, agent, session, key, source, &original)?);
        }
    }
    reports.sort_by(|a, b| (&a.agent, &a.session).cmp(&(&b.agent, &b.session)));
    Ok(reports)
}

fn unchecked(agent: &str, session: String, source: SessionSource, reason: &str) -> SessionReport {
    SessionReport {
        agent: agent.to_owned(),
        session,
        key: None,
        source,
        original_lines: 0,
        rows: 0,
        problems: Vec::new(),
        unchecked: Some(reason.to_owned()),
    }
}

fn check(
    db: &AgentDb,
    sessions: &[SessionSummary],
    agent: &str,
    session: String,
    key: Option<String>,
    source: SessionSource,
    original: &[u8],
) -> Result<SessionReport> {
    let rows: Vec<Row> = if sessions.iter().any(|s| s.id == session) {
        match db.rows(&session) {
            Ok(rows) => rows,
            // A damaged row: this session cannot be compared, the others still are.
            Err(error) => {
                let mut report = unchecked(agent, session, source, &error.to_string());
                report.key = key;
                return Ok(report);
            }
        }
    } else {
        Vec::new()
    };
    Ok(SessionReport {
        agent: agent.to_owned(),
        session,
        key,
        source,
        original_lines: original_lines(original).len(),
        rows: rows.len(),
        problems: compare(original, &rows),
        unchecked: None,
    })
}

/// The `*.jsonl` files in `agents/<agent>/sessions/`, sorted.
fn live_originals(state_dir: &Path, agent: &str) -> Result<Vec<PathBuf>> {
    let dir = state_dir.join("agents").join(agent).join("sessions");
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(OpenClawError::Io {
                path: dir,
                operation: "list the sessions folder",
                reason: crate::io_reason(&error),
            });
        }
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl") && path.is_file())
        .collect();
    found.sort();
    Ok(found)
}

/// The lines `problems` name, as a JSONL that pi can open: the original's header line first
/// (when it has one), then each lost or changed line as the original holds it, byte for
/// byte, in file order.
pub fn recover_lines(original: &[u8], problems: &[LineProblem]) -> Vec<u8> {
    let lines = original_lines(original);
    let mut out = Vec::new();
    let header = lines.first().filter(|(_, bytes)| {
        serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v["type"] == "session")
    });
    if let Some((number, bytes)) = header
        && !problems.iter().any(|problem| problem.line == *number)
    {
        out.extend_from_slice(bytes);
        out.push(b'\n');
    }
    for (number, bytes) in &lines {
        if problems.iter().any(|problem| problem.line == *number) {
            out.extend_from_slice(bytes);
            out.push(b'\n');
        }
    }
    out
}
