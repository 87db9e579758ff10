//! A state directory: its agents' databases, and the addresses of its sessions.

use std::path::{Path, PathBuf};

use super::db::{self, Row};
use super::error::{OpenClawError, Result};

/// The prefix of an address naming a session in OpenClaw's store.
pub const SCHEME: &str = "openclaw://";

/// The agent database's path below the state directory.
pub fn agent_db_path(state_dir: &Path, agent: &str) -> PathBuf {
    state_dir
        .join("agents")
        .join(agent)
        .join("agent")
        .join("openclaw-agent.sqlite")
}

/// OpenClaw's state directory when none is named: `$OPENCLAW_STATE_DIR`, else `~/.openclaw`.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPENCLAW_STATE_DIR").filter(|dir| !dir.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home).join(".openclaw")
}

/// A session named by `openclaw://[STATE_DIR#]AGENT/SESSION_ID`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    pub state_dir: PathBuf,
    pub agent: String,
    pub session: String,
}

impl Address {
    /// Parses an address; `None` when `text` does not start with `openclaw://`.
    pub fn parse(text: &str) -> Option<Result<Address>> {
        let rest = text.strip_prefix(SCHEME)?;
        let (state_dir, names) = match rest.rsplit_once('#') {
            Some((dir, names)) => (PathBuf::from(dir), names),
            None => (default_state_dir(), rest),
        };
        Some(match names.split_once('/') {
            Some((agent, session))
                if !agent.is_empty()
                    && !session.is_empty()
                    && !session.contains('/')
                    && !state_dir.as_os_str().is_empty() =>
            {
                Ok(Address {
                    state_dir,
                    agent: agent.to_owned(),
                    session: session.to_owned(),
                })
            }
            _ => Err(OpenClawError::BadAddress(text.to_owned())),
        })
    }

    /// The address in its full form, state directory included.
    pub fn display(&self) -> String {
        format!(
            "{SCHEME}{}#{}/{}",
            self.state_dir.display(),
            self.agent,
            self.session
        )
    }
}

/// One agent's database in a state directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    pub id: String,
    pub db_path: PathBuf,
}

/// The agents of a state directory that have a session database: those registered in
/// `state/openclaw.sqlite` (`agent_databases`) and those found under `agents/*/agent/`,
/// sorted by id.
pub fn agents(state_dir: &Path) -> Result<Vec<Agent>> {
    let mut found: Vec<Agent> = Vec::new();
    let registry = state_dir.join("state").join("openclaw.sqlite");
    if registry.is_file() {
        for (id, relative) in db::registered_agents(&registry)? {
            // A registered path that leaves the state directory, or an id that is no plain
            // folder name, names no agent of it.
            if !crate::path_component::is_contained(Path::new(&relative))
                || !crate::path_component::is_plain(&id)
            {
                continue;
            }
            let db_path = state_dir.join(relative);
            if db_path.is_file() {
                found.push(Agent { id, db_path });
            }
        }
    }
    let agents_dir = state_dir.join("agents");
    match std::fs::read_dir(&agents_dir) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let id = entry.file_name().to_string_lossy().into_owned();
                let db_path = agent_db_path(state_dir, &id);
                if db_path.is_file() && !found.iter().any(|agent| agent.db_path == db_path) {
                    found.push(Agent { id, db_path });
                }
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(OpenClawError::Io {
                path: agents_dir,
                operation: "list the agents",
                reason: crate::io_reason(&error),
            });
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.db_path.cmp(&b.db_path)));
    Ok(found)
}

/// The database of `agent` in `state_dir`.
pub fn agent(state_dir: &Path, agent: &str) -> Result<Agent> {
    agents(state_dir)?
        .into_iter()
        .find(|found| found.id == agent)
        .ok_or_else(|| OpenClawError::NoAgent {
            state_dir: state_dir.to_path_buf(),
            agent: agent.to_owned(),
        })
}

/// A session's lines as OpenClaw holds them, newline-terminated, in `seq` order.
pub fn session_bytes(rows: &[Row]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(rows.iter().map(|row| row.line.len() + 1).sum());
    for row in rows {
        bytes.extend_from_slice(row.line.as_bytes());
        bytes.push(b'\n');
    }
    bytes
}
