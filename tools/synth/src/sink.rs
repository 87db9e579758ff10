//! Where generated entries go: the session API (each chain appended with `append_many`) or
//! the bulk writer (each line encoded by the library's encoder, written through one buffer).
//! Knows nothing of what the entries say.

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use treelog::{NewEntry, Session, SessionOptions};

use crate::error::Error;

/// Where the generator's entries go.
pub(super) trait Sink {
    /// Appends `entries` as a chain from the leaf (each the child of the one before); the last
    /// becomes the leaf. Returns their ids.
    fn append_many(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>, Error>;
    /// Moves the leaf to `id`.
    fn branch(&mut self, id: &str) -> Result<(), Error>;
    /// Ends the writing; returns the time spent indexing afterwards.
    fn finish(self: Box<Self>) -> Result<Duration, Error>;
}

impl Sink for Session {
    fn append_many(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>, Error> {
        Ok(Session::append_many(self, entries)?)
    }

    fn branch(&mut self, id: &str) -> Result<(), Error> {
        Ok(Session::branch(self, id)?)
    }

    fn finish(self: Box<Self>) -> Result<Duration, Error> {
        self.close()?;
        Ok(Duration::ZERO)
    }
}

/// Lines encoded as `Session::append` encodes them, written through one buffer.
pub(super) struct BulkSink<'a> {
    pub(super) path: &'a Path,
    pub(super) file: BufWriter<std::fs::File>,
    pub(super) ids: HashSet<String>,
    pub(super) leaf: Option<String>,
    pub(super) line: Vec<u8>,
    /// How the finished log is opened to index it.
    pub(super) sessions: &'a SessionOptions,
}

impl Sink for BulkSink<'_> {
    fn append_many(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>, Error> {
        let mut ids = Vec::with_capacity(entries.len());
        let timestamp = treelog::format::time::format_iso_ms(now_ms());
        for entry in entries {
            let id = treelog::format::ids::new_entry_id(|candidate| self.ids.contains(candidate));
            let line = entry.encode(&id, self.leaf.as_deref(), &timestamp);
            self.line.clear();
            self.line.extend_from_slice(line.as_bytes());
            self.line.push(b'\n');
            self.file
                .write_all(&self.line)
                .map_err(|e| Error::io(self.path, "write the log", e))?;
            self.ids.insert(id.clone());
            self.leaf = Some(id.clone());
            ids.push(id);
        }
        Ok(ids)
    }

    fn branch(&mut self, id: &str) -> Result<(), Error> {
        self.leaf = Some(id.to_string());
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Duration, Error> {
        let path = self.path;
        self.file
            .into_inner()
            .map_err(|e| Error::io(path, "write the log", e.into_error()))?;
        // One open indexes the whole file.
        let started = Instant::now();
        let session = Session::open(path, self.sessions.clone())?;
        session.close()?;
        Ok(started.elapsed())
    }
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
