//! Reading OpenClaw's SQLite session store (OpenClaw 2026.8 and later), strictly read-only.
//!
//! OpenClaw keeps each agent's sessions in `$STATE/agents/<agent>/agent/openclaw-agent.sqlite`
//! (WAL mode, STRICT tables), registered in `$STATE/state/openclaw.sqlite`'s
//! `agent_databases`. A session's JSONL lines are the rows of `transcript_events` in `seq`
//! order: `event_json` as text, or, for long lines, `event_zstd` (zstd) with `event_json` NULL.
//! Its importer (`openclaw doctor --session-sqlite import`) moved the JSONL originals to
//! `agents/<agent>/session-sqlite-import-archive/` and wrote a manifest per run in
//! `session-sqlite-migration-runs/`. format-spec/openclaw.md describes all of it.
//!
//! Databases are opened with `SQLITE_OPEN_READ_ONLY` and `query_only`: nothing here writes,
//! checkpoints or locks anything OpenClaw could wait on but a WAL read mark. The cargo feature
//! `openclaw` brings rusqlite (with a bundled SQLite), zstd and sha2.
//!
//! - `db.rs`: one agent's database, its sessions and their rows (zstd rows decoded).
//! - `state.rs`: the agents of a state directory, and `openclaw://` addresses.
//! - `scope.rs`: the addresses of many sessions (an agent's, a state directory's), for `search`.
//! - `storage.rs`: a session's rows as a `LogStorage` that refuses writes, for
//!   `Session::open_storage`.
//! - `archive.rs`: the importer's manifests and the originals they archived.
//! - `compare.rs`: an original's lines matched to rows modulo OpenClaw's rewrites.
//! - `verify.rs`: that comparison over a state directory, and the lines to recover.
//! - `error.rs`: [`OpenClawError`].

mod archive;
mod compare;
mod db;
mod error;
mod scope;
mod state;
mod storage;
mod verify;

pub use archive::{ArchivedTranscript, archived_transcripts};
pub use compare::{LineProblem, ProblemKind, compare as compare_lines};
pub use db::{AgentDb, Row, SessionSummary};
pub use error::{OpenClawError, Result};
pub use scope::Scope;
pub use state::{
    Address, Agent, SCHEME, agent, agent_db_path, agents, default_state_dir, session_bytes,
};
pub use storage::{ReadOnlyLines, load_session};
pub use verify::{SessionReport, SessionSource, recover_lines, sha256_hex, verify_state_dir};
