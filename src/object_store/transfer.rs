//! Sessions on an object store as the engine and the CLI use them: opening one with its index
//! in a local cache directory, `push` (a local log to segments) and `pull` (segments to a
//! local file), each copy checked by hashing both sides with blake3.

use std::io::Write;
use std::path::{Path, PathBuf};

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
    let remote = connect(address)?;
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
/// but segments), each read whole to check that it holds the bytes listed, and each covering
/// segment compared with the segments it covers while they are all still there; returns the
/// segments read with the blake3 of the log.
pub fn verify_layout(address: &S3Address) -> Result<(Vec<Segment>, String)> {
    let remote = connect(address)?;
    let storage = SegmentStorage::open(remote.clone(), address)?;
    let segments = storage.segments();
    let (bytes, hash) = read_all(&remote, address, &segments)?;
    check_coverings(&remote, &storage, &bytes)?;
    Ok((segments, hash))
}

/// [`verify_layout`], returning the log's bytes and their blake3.
pub(super) fn verify_layout_bytes(address: &S3Address) -> Result<(Vec<u8>, String)> {
    let remote = connect(address)?;
    let storage = SegmentStorage::open(remote.clone(), address)?;
    let (bytes, hash) = read_all(&remote, address, &storage.segments())?;
    check_coverings(&remote, &storage, &bytes)?;
    Ok((bytes, hash))
}

/// Compares each covering segment of `storage` (the log's `bytes`) with the segments it covers
/// that are still listed, when they tile it.
fn check_coverings(remote: &Remote, storage: &SegmentStorage, bytes: &[u8]) -> Result<()> {
    let covered = storage.covered();
    for covering in storage.segments().iter().filter(|s| s.is_covering()) {
        let held = &bytes[covering.start as usize..covering.end() as usize];
        super::compact::check_covering(remote, storage.address(), covering, held, &covered)?;
    }
    Ok(())
}

/// Reads every segment whole, checking each holds the bytes listed; returns the log's bytes
/// and their blake3.
fn read_all(
    remote: &Remote,
    address: &S3Address,
    segments: &[Segment],
) -> Result<(Vec<u8>, String)> {
    let mut bytes = Vec::with_capacity(segments.last().map_or(0, Segment::end) as usize);
    for segment in segments {
        let read = remote.get(&segment.key)?;
        if read.len() as u64 != segment.len {
            return Err(ObjectStoreError::Layout {
                object: address.object_url(&segment.key),
                reason: format!(
                    "the segment holds {} bytes but was listed with {}: it was replaced while read",
                    read.len(),
                    segment.len
                ),
            });
        }
        bytes.extend_from_slice(&read);
    }
    let hash = blake3::hash(&bytes).to_hex().to_string();
    Ok((bytes, hash))
}

/// Copies the local log `file` to `address`, byte for byte, as segments written with
/// conditional creates, then reads the log back and compares blake3 hashes. A log already
/// there must be a prefix of `file` (the bytes after it are pushed: a log pushed again after
/// local appends); anything else is refused, and so is a push that races another writer.
pub fn push(file: &Path, address: &S3Address) -> Result<Transferred> {
    let local = std::fs::read(file).map_err(|source| ObjectStoreError::Io {
        path: file.to_path_buf(),
        operation: "read the log",
        source,
    })?;
    let remote = connect(address)?;
    let storage = SegmentStorage::open(remote.clone(), address)?;
    let existing = storage.segments();
    let there = existing.last().map_or(0, Segment::end);
    if there > 0 {
        let (remote_bytes, _) = read_all(&remote, address, &existing)?;
        if there > local.len() as u64 || remote_bytes[..] != local[..there as usize] {
            return Err(ObjectStoreError::Refused {
                target: address.url(),
                reason: format!(
                    "holds another log ({there} bytes that {} does not begin with); nothing was written",
                    file.display()
                ),
            });
        }
    }
    let mut start = there;
    let mut written = 0;
    for chunk in local[there as usize..].chunks(PUSH_SEGMENT_BYTES) {
        let key = address.segment_key(start);
        match remote.create(&key, chunk)? {
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
        start += chunk.len() as u64;
        written += 1;
    }
    let source_hash = blake3::hash(&local).to_hex().to_string();
    let check = SegmentStorage::open(remote.clone(), address)?;
    let (copy, copy_hash) = read_all(&remote, address, &check.segments())?;
    if copy_hash != source_hash {
        return Err(ObjectStoreError::Mismatch {
            target: address.url(),
            source_name: file.display().to_string(),
            copy_hash,
            copy_len: copy.len() as u64,
            source_hash,
            source_len: local.len() as u64,
        });
    }
    Ok(Transferred {
        len_bytes: local.len() as u64,
        already_there_bytes: there,
        segments: written,
        blake3: copy_hash,
    })
}

/// Copies the log at `address` to the local file `file`, byte for byte (written to a
/// temporary file beside it, synced, renamed into place), then reads the file back and
/// compares blake3 hashes. An existing `file` is refused unless `overwrite`.
pub fn pull(address: &S3Address, file: &Path, overwrite: bool) -> Result<Transferred> {
    if !overwrite && std::fs::symlink_metadata(file).is_ok() {
        return Err(ObjectStoreError::Refused {
            target: file.display().to_string(),
            reason: "the file exists; nothing was written (--force replaces it)".into(),
        });
    }
    let remote = connect(address)?;
    let storage = SegmentStorage::open(remote.clone(), address)?;
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
    let (bytes, source_hash) = read_all(&remote, address, &segments)?;
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
    let temp = dir.join(format!(".{file_name}.pull-{}", std::process::id()));
    let written = (|| {
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(&bytes)?;
        out.sync_all()
    })()
    .map_err(io("write the pulled log", &temp));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    std::fs::rename(&temp, file).map_err(io("move the pulled log into place", file))?;
    crate::storage::sync_parent_dir(file).map_err(io("sync the directory", file))?;
    let copy = std::fs::read(file).map_err(io("read the pulled log back", file))?;
    let copy_hash = blake3::hash(&copy).to_hex().to_string();
    if copy_hash != source_hash {
        return Err(ObjectStoreError::Mismatch {
            target: file.display().to_string(),
            source_name: address.url(),
            copy_hash,
            copy_len: copy.len() as u64,
            source_hash,
            source_len: bytes.len() as u64,
        });
    }
    Ok(Transferred {
        len_bytes: bytes.len() as u64,
        already_there_bytes: 0,
        segments: segments.len(),
        blake3: copy_hash,
    })
}
