//! The redb handles of a sidecar: read-only until the store first writes, opened with the
//! cache sizes measured for each use, and the guards that turn a redb panic on a damaged file
//! into an [`Error::Index`]. Knows nothing of `Store`, records or the log.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use redb::{Database, ReadableDatabase};

use crate::error::{Error, Result};

/// The reason an [`Error::Index`] carries, without its path; other errors as they print.
pub(super) fn error_reason(error: &Error) -> String {
    match error {
        Error::Index { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

pub(super) fn index_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::Index {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// What a caught redb panic becomes: damage, in the user's words. redb's own text
/// ("internal error: entered unreachable code", "Invalid page type byte 0") names its code,
/// not the file, and is not repeated to the user.
pub(crate) const REDB_PANIC_REASON: &str = "redb could not read a damaged page of the sidecar";

/// Runs redb work at the boundary where a panic on a corrupted file must become an error.
pub(super) fn guarded<T>(path: &Path, work: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(_) => Err(index_error(path, REDB_PANIC_REASON)),
    }
}

/// The sidecar handle: read-only until this handle first writes, because a read-write open
/// of redb costs several fsyncs even when nothing is written, and most opens write nothing.
pub(super) enum Db {
    ReadOnly(DropGuarded<redb::ReadOnlyDatabase>),
    Writer(DropGuarded<Database>),
}

impl Db {
    pub(super) fn begin_read(
        &self,
    ) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::ReadOnly(db) => db.begin_read(),
            Db::Writer(db) => db.begin_read(),
        }
    }
}

/// A redb handle dropped where a panic is caught: redb's `Database::drop` unwraps a mutex that
/// an earlier redb panic (caught by `guarded` on a damaged sidecar) may have poisoned, so the
/// drop is guarded as every other redb call is (found by the `open_log` fuzz target).
pub(super) struct DropGuarded<T>(Option<T>);

impl<T> DropGuarded<T> {
    pub(super) fn new(inner: T) -> DropGuarded<T> {
        DropGuarded(Some(inner))
    }
}

impl<T> std::ops::Deref for DropGuarded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<T> std::ops::DerefMut for DropGuarded<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("present until dropped")
    }
}

impl<T> Drop for DropGuarded<T> {
    fn drop(&mut self) {
        let inner = self.0.take();
        let _ = catch_unwind(AssertUnwindSafe(move || drop(inner)));
    }
}

/// The read-write handle of `db`, after [`Store::ensure_writer`](super::Store::ensure_writer).
pub(super) fn writer<'a>(db: &'a Option<Db>, path: &Path) -> Result<&'a Database> {
    match db {
        Some(Db::Writer(db)) => Ok(db),
        _ => Err(index_error(path, "no writable index database is open")),
    }
}

/// redb's page cache for a read-only handle. redb's default (1 GiB) keeps every page a walk
/// reads, and on a long walk the fresh memory's page faults cost more than the cache saves.
/// Writers keep the default, whose non-durable commits' pages would otherwise spill to the
/// file and be read back; a rebuild sets its own (`rebuild.rs`). The figures are in
/// docs/decisions/rebuild-end.md.
const READ_CACHE_BYTES: usize = 64 * 1024 * 1024;

pub(super) fn open_database_read_only(path: &Path) -> Result<Db> {
    Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .set_cache_size(READ_CACHE_BYTES)
        .open_read_only(path)
        .map(|db| Db::ReadOnly(DropGuarded::new(db)))
        .map_err(|e| index_error(path, e))
}

/// A read-write handle whose open verifies the checksum of every page of the committed trees
/// (it reads the whole sidecar): a damaged file fails to open instead of being trusted.
pub(super) fn open_database_checked(path: &Path) -> Result<Db> {
    Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .set_check_integrity_on_open(true)
        .open(path)
        .map(|db| Db::Writer(DropGuarded::new(db)))
        .map_err(|e| index_error(path, e))
}

pub(super) fn open_database(path: &Path) -> Result<Database> {
    Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .create(path)
        .map_err(|e| index_error(path, e))
}
