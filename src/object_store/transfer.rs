//! Sessions on an object store as the engine and the CLI use them: opening one with its index
//! in a local cache directory, `push` (a local log to segments) and `pull` (segments to a
//! local file), each copy checked by hashing both sides with blake3.

use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::address::S3Address;
use super::error::{ObjectStoreError, Result};
use super::layout::Segment;
use super::remote::{Created, Remote, StoreConfig, connect};
use super::storage::SegmentStorage;
use crate::{Session, SessionOptions};

/// The largest segment `push` writes: a log is pushed as segments of at most this many bytes.
const PUSH_SEGMENT_BYTES: usize = 8 << 20;

/// Hex digits of the hash that names a log's sidecar in the cache directory.
const CACHE_KEY_HEX_LEN: usize = 16;

/// What `push` or `pull` copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transferred {
    /// The log's length, and how many of its bytes were already on the other side.
    pub len_bytes: u64,
    pub already_there_bytes: u64,
    /// Segments written (`push`) or read (`pull`).
    pub segments: usize,
    /// blake3 of the log, the same on both sides.
    pub blake3: String,
}

/// Where the sidecars of logs on object stores are kept unless the caller names a directory:
/// `$XDG_CACHE_HOME/treelog`, else `$HOME/.cache/treelog`, else `.treelog-cache`.
pub fn default_cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return PathBuf::from(cache).join("treelog");
    }
    match var("HOME") {
        Some(home) => PathBuf::from(home).join(".cache").join("treelog"),
        None => PathBuf::from(".treelog-cache"),
    }
}

/// The sidecar of the log at `address` on `config`'s store, in the cache directory `dir`:
/// `<file name>-<16 hex digits of blake3(store, bucket, key)>.treelog`, so that two logs (or
/// one key on two stores) never share one.
pub fn sidecar_in_cache(dir: &Path, config: &StoreConfig, address: &S3Address) -> PathBuf {
    let mut hasher = blake3::Hasher::new();
    for part in [config.store_name().as_str(), &address.bucket, &address.key] {
        hasher.update(part.as_bytes());
        hasher.update(&[0]);
    }
    let key = &hasher.finalize().to_hex()[..CACHE_KEY_HEX_LEN];
    let file_name = address.key.rsplit('/').next().unwrap_or("log");
    dir.join(format!("{file_name}-{key}{}", crate::SIDECAR_SUFFIX))
}

/// Opens the session at `address` (an empty one when it has no segment yet: its first append
/// writes the first). With `options.use_index`, the index is the sidecar in
/// `options.index_dir` (else [`default_cache_dir`]), checked against the log's bytes on open
/// as for a local file, caught up or rebuilt; `options.index_write` off reads a valid one and
/// writes none.
pub fn open_session(address: &S3Address, options: SessionOptions) -> Result<Session> {
    open_session_on(connect(address)?, address, options)
}

/// [`open_session`] over `remote`.
pub fn open_session_on(
    remote: Arc<Remote>,
    address: &S3Address,
    options: SessionOptions,
) -> Result<Session> {
    let storage = SegmentStorage::open(remote.clone(), address)?;
    open_storage(storage, remote.config(), options)
}

/// The session over `storage`, a log on `config`'s store, with its index where
/// [`open_session`] keeps it.
pub(super) fn open_storage(
    storage: SegmentStorage,
    config: &StoreConfig,
    options: SessionOptions,
) -> Result<Session> {
    if !options.use_index {
        return Ok(Session::open_storage(Box::new(storage), options)?);
    }
    let dir = options.index_dir.clone().unwrap_or_else(default_cache_dir);
    let sidecar = sidecar_in_cache(&dir, config, storage.address());
    Ok(Session::open_storage_indexed(
        Box::new(storage),
        &sidecar,
        options,
    )?)
}

/// The segments of the log at `address`, listed and checked (contiguous from byte 0, nothing
/// but segments), each read through to check that it holds the bytes listed, and each covering
/// segment compared with the segments it covers while they are all still there; returns the
/// segments read with the blake3 of the log. The log is streamed: memory stays within a few
/// reads ([`STREAM_BYTES`]), whatever its size.
pub fn verify_layout(address: &S3Address) -> Result<(Vec<Segment>, String)> {
    verify_layout_on(connect(address)?, address)
}

/// [`verify_layout`] over `remote`.
pub fn verify_layout_on(
    remote: Arc<Remote>,
    address: &S3Address,
) -> Result<(Vec<Segment>, String)> {
    let storage = SegmentStorage::open(remote, address)?;
    let segments = storage.segments();
    let hash = checked_stream(&storage, |_| Ok(()))?;
    Ok((segments, hash))
}

/// [`verify_layout_on`], writing the log's bytes to `out` as they are read; returns their
/// blake3.
pub(super) fn verify_layout_into(
    remote: Arc<Remote>,
    address: &S3Address,
    out: &mut dyn Write,
    path: &Path,
) -> Result<String> {
    let storage = SegmentStorage::open(remote, address)?;
    checked_stream(&storage, |chunk| {
        out.write_all(chunk).map_err(|source| ObjectStoreError::Io {
            path: path.to_path_buf(),
            operation: "write the log read from the store",
            source,
        })
    })
}

/// Streams the log of `storage` (as listed) through `sink`, hashing each covering segment's
/// bytes on the way, then compares each covering segment with the segments it covers that
/// are still listed, when they tile it; returns the log's blake3.
fn checked_stream(
    storage: &SegmentStorage,
    sink: impl FnMut(&[u8]) -> Result<()>,
) -> Result<String> {
    let coverings: Vec<Segment> = storage
        .segments()
        .into_iter()
        .filter(Segment::is_covering)
        .collect();
    let mut hashers: Vec<blake3::Hasher> =
        coverings.iter().map(|_| blake3::Hasher::new()).collect();
    let mut sink = sink;
    let end = storage.segments().last().map_or(0, Segment::end);
    let hash = stream(storage, end, |at, chunk| {
        let chunk_end = at + chunk.len() as u64;
        for (covering, hasher) in coverings.iter().zip(&mut hashers) {
            let (lo, hi) = (covering.start.max(at), covering.end().min(chunk_end));
            if lo < hi {
                hasher.update(&chunk[(lo - at) as usize..(hi - at) as usize]);
            }
        }
        sink(chunk)
    })?;
    let covered = storage.covered();
    for (covering, hasher) in coverings.iter().zip(hashers) {
        let held = hasher.finalize().to_hex().to_string();
        super::compact::check_covering(
            storage.remote(),
            storage.address(),
            covering,
            &held,
            &covered,
        )?;
    }
    Ok(hash)
}

/// Bytes read from a log on the store at a time by `push`, `pull` and `verify` (the storage
/// keeps at most two such reads besides).
pub const STREAM_BYTES: usize = 4 << 20;

/// Reads the log of `storage` from byte 0 to `end`, in pieces of at most [`STREAM_BYTES`],
/// handing each to `each` with its offset; returns the blake3 of the bytes read. A log that
/// ends before `end` is an error naming its folder.
fn stream(
    storage: &SegmentStorage,
    end: u64,
    mut each: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<String> {
    let mut buf = vec![0; STREAM_BYTES.min(usize::try_from(end).unwrap_or(usize::MAX))];
    let mut hasher = blake3::Hasher::new();
    let mut at = 0;
    while at < end {
        let want = buf
            .len()
            .min(usize::try_from(end - at).unwrap_or(usize::MAX));
        let count = storage.read(at, &mut buf[..want])?;
        if count == 0 {
            let address = storage.address();
            return Err(ObjectStoreError::Layout {
                object: address.object_url(&address.segments_folder()),
                reason: format!("the log's segments end at byte {at}, not at {end} as listed"),
            });
        }
        hasher.update(&buf[..count]);
        each(at, &buf[..count])?;
        at += count as u64;
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Copies the local log `file` to `address`, byte for byte, as segments written with
/// conditional creates, then reads the log back and compares blake3 hashes. A log already
/// there must be a prefix of `file` (the bytes after it are pushed: a log pushed again after
/// local appends); anything else is refused, and so is a push that races another writer (the
/// segments it wrote before the race stay: they begin the log, and the error counts them).
/// The file and the log are streamed: memory stays within one segment and a few reads.
pub fn push(file: &Path, address: &S3Address) -> Result<Transferred> {
    push_on(connect(address)?, file, address)
}

/// [`push`] over `remote`.
pub fn push_on(remote: Arc<Remote>, file: &Path, address: &S3Address) -> Result<Transferred> {
    let io = |operation: &'static str| {
        move |source| ObjectStoreError::Io {
            path: file.to_path_buf(),
            operation,
            source,
        }
    };
    let mut local = std::fs::File::open(file).map_err(io("read the log"))?;
    let local_len = local.metadata().map_err(io("read the log"))?.len();
    let storage = SegmentStorage::open(remote.clone(), address)?;
    let there = storage.segments().last().map_or(0, Segment::end);
    let mut source = blake3::Hasher::new();
    let refused = || ObjectStoreError::Refused {
        target: address.url(),
        reason: format!(
            "holds another log ({there} bytes that {} does not begin with); nothing was written",
            file.display()
        ),
    };
    if there > local_len {
        return Err(refused());
    }
    if there > 0 {
        let mut mine = Vec::new();
        let mut differs = false;
        stream(&storage, there, |_, chunk| {
            mine.resize(chunk.len(), 0);
            local.read_exact(&mut mine).map_err(io("read the log"))?;
            source.update(&mine);
            differs |= mine != chunk;
            Ok(())
        })?;
        if differs {
            return Err(refused());
        }
    }
    let mut start = there;
    let mut written = 0;
    let mut chunk =
        vec![0; PUSH_SEGMENT_BYTES.min(usize::try_from(local_len - there).unwrap_or(usize::MAX))];
    while start < local_len {
        let len = chunk
            .len()
            .min(usize::try_from(local_len - start).unwrap_or(usize::MAX));
        local
            .read_exact(&mut chunk[..len])
            .map_err(io("read the log"))?;
        source.update(&chunk[..len]);
        let key = address.segment_key(start);
        match remote.create(&key, &chunk[..len])? {
            Created::Written { .. } => {}
            Created::Exists => {
                return Err(ObjectStoreError::Refused {
                    target: address.object_url(&key),
                    reason: format!(
                        "already exists: another writer extended {} during the push (the store refused the conditional create); {written} segment(s) were written before it",
                        address.url()
                    ),
                });
            }
        }
        start += len as u64;
        written += 1;
    }
    let source_hash = source.finalize().to_hex().to_string();
    let check = SegmentStorage::open(remote, address)?;
    let copy_len = check.segments().last().map_or(0, Segment::end);
    let copy_hash = stream(&check, copy_len, |_, _| Ok(()))?;
    if copy_hash != source_hash {
        return Err(ObjectStoreError::Mismatch {
            target: address.url(),
            source_name: file.display().to_string(),
            copy_hash,
            copy_len,
            source_hash,
            source_len: local_len,
        });
    }
    Ok(Transferred {
        len_bytes: local_len,
        already_there_bytes: there,
        segments: written,
        blake3: copy_hash,
    })
}

/// Copies the log at `address` to the local file `file`, byte for byte (written to a
/// temporary file beside it, synced, renamed into place), then reads the file back and
/// compares blake3 hashes. An existing `file` is refused unless `overwrite`. The log is
/// streamed: memory stays within a few reads ([`STREAM_BYTES`]).
pub fn pull(address: &S3Address, file: &Path, overwrite: bool) -> Result<Transferred> {
    if !overwrite && std::fs::symlink_metadata(file).is_ok() {
        return Err(refused_existing(file));
    }
    pull_on(connect(address)?, address, file, overwrite)
}

fn refused_existing(file: &Path) -> ObjectStoreError {
    ObjectStoreError::Refused {
        target: file.display().to_string(),
        reason: "the file exists; nothing was written (--force replaces it)".into(),
    }
}

/// [`pull`] over `remote`.
pub fn pull_on(
    remote: Arc<Remote>,
    address: &S3Address,
    file: &Path,
    overwrite: bool,
) -> Result<Transferred> {
    if !overwrite && std::fs::symlink_metadata(file).is_ok() {
        return Err(refused_existing(file));
    }
    let storage = SegmentStorage::open(remote, address)?;
    let segments = storage.segments();
    if segments.is_empty() {
        return Err(ObjectStoreError::Refused {
            target: address.url(),
            reason: format!(
                "no log there (no segment under {})",
                address.object_url(&address.segments_folder())
            ),
        });
    }
    let len_bytes = segments.last().map_or(0, Segment::end);
    let io = |operation: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ObjectStoreError::Io {
            path,
            operation,
            source,
        }
    };
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = file
        .file_name()
        .map_or_else(|| "log".into(), |name| name.to_string_lossy().into_owned());
    let prefix = format!(".{file_name}.pull-");
    crate::fs_safe::remove_leftovers(&dir, |name| crate::fs_safe::pid_after(name, &prefix));
    let temp = dir.join(format!("{prefix}{}", std::process::id()));
    let written = (|| {
        // Never through a link; a copy of a log on a store is this user's only.
        let out = crate::fs_safe::create_own_file(&temp, 0o600)
            .map_err(io("write the pulled log", &temp))?;
        let mut out = std::io::BufWriter::with_capacity(STREAM_BYTES, out);
        let hash = stream(&storage, len_bytes, |_, chunk| {
            out.write_all(chunk)
                .map_err(io("write the pulled log", &temp))
        })?;
        let out = out
            .into_inner()
            .map_err(|error| io("write the pulled log", &temp)(error.into_error()))?;
        out.sync_all().map_err(io("write the pulled log", &temp))?;
        Ok(hash)
    })();
    let source_hash = match written {
        Ok(hash) => hash,
        Err(error) => {
            let _ = std::fs::remove_file(&temp);
            return Err(error);
        }
    };
    std::fs::rename(&temp, file).map_err(io("move the pulled log into place", file))?;
    crate::storage::sync_parent_dir(file).map_err(io("sync the directory", file))?;
    let (copy_len, copy_hash) = hash_file(file).map_err(io("read the pulled log back", file))?;
    if copy_hash != source_hash {
        return Err(ObjectStoreError::Mismatch {
            target: file.display().to_string(),
            source_name: address.url(),
            copy_hash,
            copy_len,
            source_hash,
            source_len: len_bytes,
        });
    }
    Ok(Transferred {
        len_bytes,
        already_there_bytes: 0,
        segments: segments.len(),
        blake3: copy_hash,
    })
}

/// The length and blake3 of the file at `path`, read in pieces of [`STREAM_BYTES`].
fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0; STREAM_BYTES];
    let mut len = 0;
    loop {
        let count = file.read(&mut buf)?;
        if count == 0 {
            return Ok((len, hasher.finalize().to_hex().to_string()));
        }
        hasher.update(&buf[..count]);
        len += count as u64;
    }
}
