//! A log in memory with hooks: each read can be watched, every append made to fail. The one
//! `LogStorage` wrapper for tests that need no more than that (tests/it/faults.rs injects
//! countdown faults of its own).

use std::io;
use std::path::{Path, PathBuf};

use treelog::storage::{FileIdentity, LogStorage, MemoryStorage};

pub struct HookedStorage {
    inner: MemoryStorage,
    before_read: Box<dyn Fn() + Send + Sync>,
    append_error: Option<io::ErrorKind>,
}

impl HookedStorage {
    /// A log at `path` holding `bytes`, with no hooks yet: it behaves as `MemoryStorage`.
    pub fn new(path: impl Into<PathBuf>, bytes: Vec<u8>) -> HookedStorage {
        HookedStorage {
            inner: MemoryStorage::new(path, bytes),
            before_read: Box::new(|| {}),
            append_error: None,
        }
    }

    /// Calls `hook` before each read of the log.
    pub fn before_each_read(mut self, hook: impl Fn() + Send + Sync + 'static) -> HookedStorage {
        self.before_read = Box::new(hook);
        self
    }

    /// Makes every append fail with `error`, writing nothing.
    pub fn failing_appends(mut self, error: io::ErrorKind) -> HookedStorage {
        self.append_error = Some(error);
        self
    }
}

impl LogStorage for HookedStorage {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn identity(&self) -> io::Result<FileIdentity> {
        self.inner.identity()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        (self.before_read)();
        self.inner.read_at(offset, buf)
    }
    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        match self.append_error {
            Some(error) => Err(error.into()),
            None => self.inner.append(bytes),
        }
    }
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }
    fn lock(&mut self) -> io::Result<()> {
        self.inner.lock()
    }
    fn unlock(&mut self) -> io::Result<()> {
        self.inner.unlock()
    }
}
