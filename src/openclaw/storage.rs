//! A session's rows as a read-only log that `Session::open_storage` reads as it would the
//! same lines in a JSONL file (its index kept in memory, nothing written anywhere).

use std::io;
use std::path::{Path, PathBuf};

use super::db::AgentDb;
use super::error::Result;
use super::state::{Address, agent, session_bytes};
use crate::storage::{FileIdentity, LogStorage, read_bytes_at};

/// A log held in memory that refuses every write.
#[derive(Debug)]
pub struct ReadOnlyLines {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl ReadOnlyLines {
    /// `path` names the log in messages (an `openclaw://` address).
    pub fn new(path: impl Into<PathBuf>, bytes: Vec<u8>) -> ReadOnlyLines {
        ReadOnlyLines {
            path: path.into(),
            bytes,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn refuse(&self) -> io::Error {
        // Not `PermissionDenied`: its message would send the user to the file's permissions.
        io::Error::new(
            io::ErrorKind::Unsupported,
            "an OpenClaw session is read-only here (treelog never writes OpenClaw's database)",
        )
    }
}

impl LogStorage for ReadOnlyLines {
    fn path(&self) -> &Path {
        &self.path
    }

    fn identity(&self) -> io::Result<FileIdentity> {
        Ok(FileIdentity {
            len_bytes: self.bytes.len() as u64,
            ..FileIdentity::default()
        })
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        Ok(read_bytes_at(&self.bytes, offset, buf))
    }

    fn append(&mut self, _bytes: &[u8]) -> io::Result<u64> {
        Err(self.refuse())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn lock(&mut self) -> io::Result<()> {
        Err(self.refuse())
    }

    fn unlock(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The session `address` names, read from its agent's database into a read-only log named
/// by the address.
pub fn load_session(address: &Address) -> Result<ReadOnlyLines> {
    let agent = agent(&address.state_dir, &address.agent)?;
    let db = AgentDb::open(&agent.db_path)?;
    let rows = db.rows(&address.session)?;
    Ok(ReadOnlyLines::new(address.display(), session_bytes(&rows)))
}
