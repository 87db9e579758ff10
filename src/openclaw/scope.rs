//! What an `openclaw://` address names for a command that reads many sessions (`search`): one
//! session (`openclaw://[STATE_DIR#]AGENT/SESSION_ID`), every session of one agent
//! (`openclaw://[STATE_DIR#]AGENT`), or every session of every agent of a state directory
//! (`openclaw://STATE_DIR#`, or `openclaw://` for the default state directory).

use std::path::PathBuf;

use super::error::{OpenClawError, Result};
use super::state::{Address, SCHEME, default_state_dir};

/// The sessions an address names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// One session.
    Session(Address),
    /// Every session of one agent.
    Agent { state_dir: PathBuf, agent: String },
    /// Every session of every agent.
    StateDir(PathBuf),
}

impl Scope {
    /// Parses an address; `None` when `text` does not start with `openclaw://`.
    pub fn parse(text: &str) -> Option<Result<Scope>> {
        let rest = text.strip_prefix(SCHEME)?;
        if let Some(Ok(address)) = Address::parse(text) {
            return Some(Ok(Scope::Session(address)));
        }
        let (state_dir, names) = match rest.rsplit_once('#') {
            Some((dir, names)) => (PathBuf::from(dir), names),
            None => (default_state_dir(), rest),
        };
        let bad = || OpenClawError::BadAddress(text.to_owned());
        if state_dir.as_os_str().is_empty() {
            return Some(Err(bad()));
        }
        Some(match names {
            "" => Ok(Scope::StateDir(state_dir)),
            agent if !agent.contains('/') => Ok(Scope::Agent {
                state_dir,
                agent: agent.to_owned(),
            }),
            _ => Err(bad()),
        })
    }
}
