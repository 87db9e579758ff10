//! The errors of reading OpenClaw's store.

use std::path::PathBuf;

/// What went wrong reading OpenClaw's store: each names the file, and the session, row or
/// line concerned.
#[derive(Debug, thiserror::Error)]
pub enum OpenClawError {
    #[error("{path}: cannot {operation}: {reason}")]
    Io {
        path: PathBuf,
        operation: &'static str,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Sqlite { path: PathBuf, reason: String },
    #[error("{path}: session {session}, row seq {seq}: {reason}")]
    BadRow {
        path: PathBuf,
        session: String,
        seq: i64,
        reason: String,
    },
    #[error("{path}: no session {session} in this agent's database")]
    NoSession { path: PathBuf, session: String },
    #[error("{state_dir}: no agent {agent} (no agents/{agent}/agent/openclaw-agent.sqlite)")]
    NoAgent { state_dir: PathBuf, agent: String },
    #[error("{path}: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("{0}: not an openclaw:// address; write openclaw://[STATE_DIR#]AGENT/SESSION_ID")]
    BadAddress(String),
}

pub type Result<T> = std::result::Result<T, OpenClawError>;
