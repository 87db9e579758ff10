//! The log's I/O, behind a small trait so that tests can inject faults (failed or short
//! writes, failed syncs, a full disk, lost unsynced bytes) without touching the engine.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::fs_safe::open_regular;

/// Identity and change times of the log file, used to notice a file replaced or rewritten
/// behind the index's back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileIdentity {
    pub device: u64,
    pub inode: u64,
    pub len_bytes: u64,
    pub modified_ns: i64,
    pub changed_ns: i64,
}

/// What the engine needs from the file holding a log.
///
/// Contract: `append` writes all of `bytes` at the end of the file and returns the offset
/// just past them, where this write ended (not the file's length, if another process has
/// appended right after them), or returns an error (after which some prefix of `bytes` may be in the
/// file), or an [`AppendRaced`] error when it wrote nothing because another writer extended
/// the log first; `sync` makes every appended byte durable or returns an error. A file that does not
/// exist yet has length 0 and is created by the first `append`.
pub trait LogStorage: Send + Sync {
    /// Path of the log, for error messages.
    fn path(&self) -> &Path;
    fn identity(&self) -> io::Result<FileIdentity>;
    /// The file's length: `identity().len_bytes`, for backends that can tell it more cheaply
    /// (a catch-up asks before every append, and almost always finds nothing new).
    fn len_bytes(&self) -> io::Result<u64> {
        Ok(self.identity()?.len_bytes)
    }
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (0 at the end).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    fn append(&mut self, bytes: &[u8]) -> io::Result<u64>;
    fn sync(&mut self) -> io::Result<()>;
    /// Takes the exclusive advisory lock that serialises appenders (blocking), after opening
    /// the file for appending (creating it if it does not exist): an error here means nothing
    /// can be appended.
    fn lock(&mut self) -> io::Result<()>;
    fn unlock(&mut self) -> io::Result<()>;
}

/// What `append` fails with when it wrote nothing because another writer extended the log
/// first: a backend with no lock whose appends are conditional (an object store, where each
/// append creates the next segment only if no one has). The engine then catches up and applies
/// the conflict rule again, as a local writer does that takes the lock after the other one
/// (format-spec/object-store.md).
#[derive(Debug)]
pub struct AppendRaced {
    /// What the backend tried and what it was answered, for the message.
    pub detail: String,
}

impl std::fmt::Display for AppendRaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "another writer extended the log first, nothing was written ({})",
            self.detail
        )
    }
}

impl std::error::Error for AppendRaced {}

/// Whether `error` is an [`AppendRaced`]: nothing was written, and the append may be tried
/// again after a catch-up.
pub fn is_append_raced(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<AppendRaced>())
}

/// Fills `buf` from `offset`, failing with `UnexpectedEof` if the log ends first.
pub fn read_exact_at(
    storage: &dyn LogStorage,
    mut offset: u64,
    mut buf: &mut [u8],
) -> io::Result<()> {
    while !buf.is_empty() {
        match storage.read_at(offset, buf)? {
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the log ends before the indexed bytes",
                ));
            }
            read => {
                offset += read as u64;
                buf = &mut buf[read..];
            }
        }
    }
    Ok(())
}

/// Whether the log, `log_len` bytes long, holds nothing but a UTF-8 byte order mark: an empty
/// log with a mark in front (format-spec/log.md §2), not a torn line.
pub fn holds_only_bom(storage: &dyn LogStorage, log_len: u64) -> io::Result<bool> {
    let mut bytes = [0; crate::format::BOM.len()];
    if log_len != bytes.len() as u64 {
        return Ok(false);
    }
    read_exact_at(storage, 0, &mut bytes)?;
    Ok(bytes == crate::format::BOM)
}

/// A log in a real file. Writes use `O_APPEND`, so lines appended by other processes (which
/// may not take treelog's lock) are never overwritten.
pub struct FileStorage {
    path: PathBuf,
    /// Unset while no file exists; set by the first append, or by the first read after
    /// another process created the file.
    file: OnceLock<File>,
    /// Set while `file` is opened for reading only, as every log is until its first append
    /// (so that a log on a read-only file system, or that this user may not write, is read):
    /// `lock` and `append` then open it for appending, and return that open's error
    /// (permission denied, read-only file system) instead of writing to a read-only
    /// descriptor ("bad file descriptor").
    read_only: OnceLock<()>,
    /// Whether the file was created by this handle and its directory entry still needs an fsync.
    created_unsynced: bool,
}

impl FileStorage {
    /// Opens an existing log for reading, or, when none exists, a handle that creates the file
    /// at its first append. Only a regular file is a log: a FIFO, a device or a socket is
    /// refused without blocking ([`crate::fs_safe::open_regular`]).
    pub fn open(path: &Path) -> io::Result<FileStorage> {
        let storage = FileStorage {
            path: path.to_path_buf(),
            file: OnceLock::new(),
            read_only: OnceLock::new(),
            created_unsynced: false,
        };
        storage.existing_file()?;
        Ok(storage)
    }

    /// The file opened for appending: created if it does not exist, opened again for appending
    /// if it was opened for reading only (which fails when this user may not write it, or its
    /// file system is read-only). Called by `lock` first, so that the file it locks is the one
    /// appends write to.
    fn file_for_append(&mut self) -> io::Result<&mut File> {
        if self.read_only.get().is_some() {
            let file = open_regular(&self.path, OpenOptions::new().read(true).append(true))?;
            self.file = OnceLock::from(file);
            self.read_only = OnceLock::new();
        }
        if self.existing_file()?.is_none() {
            let file = open_regular(
                &self.path,
                OpenOptions::new().read(true).append(true).create(true),
            )?;
            let _ = self.file.set(file);
            self.created_unsynced = true;
        }
        Ok(self.file.get_mut().expect("the file was opened just above"))
    }

    /// The file, opened now if another process created it since this handle looked.
    fn existing_file(&self) -> io::Result<Option<&File>> {
        if let Some(file) = self.file.get() {
            return Ok(Some(file));
        }
        let file = match open_regular(&self.path, OpenOptions::new().read(true)) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        let _ = self.read_only.set(());
        let _ = self.file.set(file);
        Ok(self.file.get())
    }
}

impl LogStorage for FileStorage {
    fn path(&self) -> &Path {
        &self.path
    }

    fn identity(&self) -> io::Result<FileIdentity> {
        let Some(file) = self.existing_file()? else {
            return Ok(FileIdentity::default());
        };
        let meta = file.metadata()?;
        Ok(FileIdentity {
            device: meta.dev(),
            inode: meta.ino(),
            len_bytes: meta.len(),
            modified_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            changed_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
        })
    }

    /// One `lseek` instead of a `statx`. Reads use `pread` and writes `O_APPEND`, which puts
    /// the position at the end of what it wrote before `append` reads it back, so the position
    /// this moves is not read anywhere else.
    fn len_bytes(&self) -> io::Result<u64> {
        match self.existing_file()? {
            Some(mut file) => file.seek(SeekFrom::End(0)),
            None => Ok(0),
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        match self.existing_file()? {
            Some(file) => file.read_at(buf, offset),
            None => Ok(0),
        }
    }

    /// The end comes from the file position: an `O_APPEND` write moves it to the end of what
    /// it wrote, atomically with the write on local filesystems.
    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        let file = self.file_for_append()?;
        file.write_all(bytes)?;
        file.stream_position()
    }

    fn sync(&mut self) -> io::Result<()> {
        if let Some(file) = self.file.get() {
            file.sync_data()?;
        }
        if self.created_unsynced {
            sync_parent_dir(&self.path)?;
            self.created_unsynced = false;
        }
        Ok(())
    }

    fn lock(&mut self) -> io::Result<()> {
        self.file_for_append()?.lock()
    }

    fn unlock(&mut self) -> io::Result<()> {
        match self.file.get() {
            Some(file) => file.unlock(),
            None => Ok(()),
        }
    }
}

/// Makes a new or renamed directory entry durable.
pub fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

/// `read_at` over a log held in memory (for in-memory backends, including the tests'
/// fault-injecting ones): copies what `bytes` holds from `offset` on, 0 past the end.
pub fn read_bytes_at(bytes: &[u8], offset: u64, buf: &mut [u8]) -> usize {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let count = buf.len().min(bytes.len() - start);
    buf[..count].copy_from_slice(&bytes[start..start + count]);
    count
}

/// A log held in memory: used by in-memory sessions (which never touch the disk) and by
/// tests as the base of fault-injecting backends.
pub struct MemoryStorage {
    path: PathBuf,
    pub bytes: Vec<u8>,
}

impl MemoryStorage {
    pub fn new(path: impl Into<PathBuf>, bytes: Vec<u8>) -> MemoryStorage {
        MemoryStorage {
            path: path.into(),
            bytes,
        }
    }
}

impl LogStorage for MemoryStorage {
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

    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        self.bytes.extend_from_slice(bytes);
        Ok(self.bytes.len() as u64)
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn lock(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn unlock(&mut self) -> io::Result<()> {
        Ok(())
    }
}
