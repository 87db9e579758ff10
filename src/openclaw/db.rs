//! One agent's `openclaw-agent.sqlite`, opened read-only.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::error::{OpenClawError, Result};

/// The largest line OpenClaw stores (its CHECK on `event_utf8_bytes`).
const LINE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// A session's summary in an agent's database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    /// The session key (`agent:main:main`) from `session_windows`, when the table has it.
    pub key: Option<String>,
    /// Rows in `transcript_events`: the session's lines.
    pub rows: u64,
    /// `created_at` of the first and last rows, epoch milliseconds.
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

/// One row of `transcript_events`: a line of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub seq: i64,
    pub created_ms: i64,
    /// The line, decompressed when OpenClaw stored it with zstd.
    pub line: String,
    /// Whether the row held it compressed (`event_zstd`).
    pub compressed: bool,
}

/// An agent database opened read-only.
#[derive(Debug)]
pub struct AgentDb {
    path: PathBuf,
    conn: Connection,
}

fn sqlite_error(path: &Path, doing: &str, error: rusqlite::Error) -> OpenClawError {
    OpenClawError::Sqlite {
        path: path.to_path_buf(),
        reason: format!("cannot {doing}: {error}"),
    }
}

/// Opens `path` read-only: never written, never checkpointed (a read-only connection cannot
/// checkpoint), writes refused by `query_only` as well.
fn open_read_only(path: &Path) -> Result<Connection> {
    if !path.is_file() {
        return Err(OpenClawError::Io {
            path: path.to_path_buf(),
            operation: "open the database",
            reason: "no such file".into(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| sqlite_error(path, "open the database read-only", e))?;
    conn.pragma_update(None, "query_only", true)
        .map_err(|e| sqlite_error(path, "set query_only", e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite_error(path, "set the busy timeout", e))?;
    Ok(conn)
}

/// `(agent id, path relative to the state directory)` from `agent_databases`.
pub fn registered_agents(registry: &Path) -> Result<Vec<(String, String)>> {
    let conn = open_read_only(registry)?;
    if !has_table(&conn, registry, "agent_databases")? {
        return Ok(Vec::new());
    }
    let mut statement = conn
        .prepare("SELECT agent_id, path FROM agent_databases ORDER BY agent_id, path")
        .map_err(|e| sqlite_error(registry, "read agent_databases", e))?;
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .map_err(|e| sqlite_error(registry, "read agent_databases", e))?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| sqlite_error(registry, "read agent_databases", e))
}

fn has_table(conn: &Connection, path: &Path, table: &str) -> Result<bool> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
    .map_err(|e| sqlite_error(path, "read the schema", e))
}

impl AgentDb {
    pub fn open(path: &Path) -> Result<AgentDb> {
        let conn = open_read_only(path)?;
        if !has_table(&conn, path, "transcript_events")? {
            return Err(OpenClawError::Sqlite {
                path: path.to_path_buf(),
                reason: "not an OpenClaw agent database: it has no transcript_events table".into(),
            });
        }
        Ok(AgentDb {
            path: path.to_path_buf(),
            conn,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every session with rows or a `session_windows` entry, sorted by id.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>> {
        let read = |e| sqlite_error(&self.path, "list the sessions", e);
        let tx = self.conn.unchecked_transaction().map_err(read)?;
        let mut sessions: Vec<SessionSummary> = Vec::new();
        {
            let mut statement = tx
                .prepare(
                    "SELECT session_id, count(*), min(created_at), max(created_at) \
                     FROM transcript_events GROUP BY session_id ORDER BY session_id",
                )
                .map_err(read)?;
            let rows = statement
                .query_map([], |row| {
                    Ok(SessionSummary {
                        id: row.get(0)?,
                        key: None,
                        rows: row.get::<_, i64>(1)?.max(0) as u64,
                        first_ms: row.get(2)?,
                        last_ms: row.get(3)?,
                    })
                })
                .map_err(read)?;
            for row in rows {
                sessions.push(row.map_err(read)?);
            }
        }
        if has_table(&tx, &self.path, "session_windows")? {
            let mut statement = tx
                .prepare("SELECT session_id, session_key FROM session_windows")
                .map_err(read)?;
            let rows = statement
                .query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(read)?;
            for row in rows {
                let (id, key) = row.map_err(read)?;
                match sessions.iter_mut().find(|session| session.id == id) {
                    Some(session) => session.key = Some(key),
                    None => sessions.push(SessionSummary {
                        id,
                        key: Some(key),
                        rows: 0,
                        first_ms: None,
                        last_ms: None,
                    }),
                }
            }
        }
        sessions.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(sessions)
    }

    /// The session's rows in `seq` order, zstd rows decompressed; an error naming the row for
    /// one that cannot be decoded, or when the session has neither rows nor a window.
    pub fn rows(&self, session: &str) -> Result<Vec<Row>> {
        let read = |e| sqlite_error(&self.path, "read the session's rows", e);
        let tx = self.conn.unchecked_transaction().map_err(read)?;
        let mut statement = tx
            .prepare(
                "SELECT seq, created_at, event_json, event_zstd, event_utf8_bytes \
                 FROM transcript_events WHERE session_id = ?1 ORDER BY seq",
            )
            .map_err(read)?;
        let mut rows = statement.query([session]).map_err(read)?;
        let mut found = Vec::new();
        while let Some(row) = rows.next().map_err(read)? {
            let seq: i64 = row.get(0).map_err(read)?;
            let created_ms: i64 = row.get(1).map_err(read)?;
            let text: Option<String> = row.get(2).map_err(read)?;
            let blob: Option<Vec<u8>> = row.get(3).map_err(read)?;
            let declared: Option<i64> = row.get(4).map_err(read)?;
            let bad = |reason: String| OpenClawError::BadRow {
                path: self.path.clone(),
                session: session.to_owned(),
                seq,
                reason,
            };
            let (line, compressed) = match (text, blob) {
                (Some(text), _) => (text, false),
                (None, Some(blob)) => (decode(&blob, declared).map_err(bad)?, true),
                (None, None) => return Err(bad("neither event_json nor event_zstd".into())),
            };
            if line.contains('\n') {
                return Err(bad("the line holds a raw newline".into()));
            }
            found.push(Row {
                seq,
                created_ms,
                line,
                compressed,
            });
        }
        if found.is_empty() && !self.has_window(&tx, session)? {
            return Err(OpenClawError::NoSession {
                path: self.path.clone(),
                session: session.to_owned(),
            });
        }
        Ok(found)
    }

    fn has_window(&self, conn: &Connection, session: &str) -> Result<bool> {
        if !has_table(conn, &self.path, "session_windows")? {
            return Ok(false);
        }
        conn.query_row(
            "SELECT 1 FROM session_windows WHERE session_id = ?1",
            [session],
            |_| Ok(()),
        )
        .optional()
        .map(|found| found.is_some())
        .map_err(|e| sqlite_error(&self.path, "read session_windows", e))
    }
}

/// A zstd row's line: decompressed, as long as `event_utf8_bytes` says, valid UTF-8.
fn decode(blob: &[u8], declared: Option<i64>) -> std::result::Result<String, String> {
    let declared = declared
        .and_then(|bytes| usize::try_from(bytes).ok())
        .filter(|bytes| *bytes <= LINE_BYTES_MAX)
        .ok_or("event_zstd without a valid event_utf8_bytes")?;
    let bytes = zstd::bulk::decompress(blob, declared)
        .map_err(|e| format!("event_zstd does not decompress: {e}"))?;
    if bytes.len() != declared {
        return Err(format!(
            "event_zstd decompresses to {} bytes, event_utf8_bytes says {declared}",
            bytes.len()
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "event_zstd decompresses to invalid UTF-8 at byte {}",
            e.utf8_error().valid_up_to()
        )
    })
}
