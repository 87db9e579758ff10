//! A local copy of a log on a store, kept caught up with its segments (format-spec/object-store.md
//! §7.1): the file holds a prefix of the log's bytes, and a record beside it,
//! `<copy>.segments.json`, names the segments it was read from and the copy's length and mtime
//! once written.
//!
//! A catch-up lists the log's segments. When the record's segments begin the listing and the
//! copy is as the record left it, only the bytes after the copy (the segments appended since)
//! are read and appended to it. Anything else is a doubt (a compaction wrote covering segments,
//! the log was deleted and written again, the record is missing or names other segments, the
//! copy changed since): the copy's bytes are compared with the log's bytes at the same offsets,
//! read from the store, beyond the leading segments the record and the listing share. A copy
//! that is a prefix of the log is kept and grows; any other is replaced by the whole log,
//! written beside it and renamed over it. Nothing is assumed of the copy that was not read. A
//! log without segments (deleted; a store may still list its empty folder) has no copy.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use super::address::S3Address;
use super::error::{ObjectStoreError, Result};
use super::layout::Segment;
use super::remote::Remote;
use super::storage::SegmentStorage;

/// What the record's file name adds to the copy's.
pub const COPY_RECORD_SUFFIX: &str = ".segments.json";

/// The mode of a copy and its record: a log on a store is not a local file whose permissions
/// could be followed, so only this user reads its copy.
const COPY_FILE_MODE: u32 = 0o600;

/// Bytes read from the store (and from the copy, to compare) at a time.
const CHUNK_BYTES: usize = 4 << 20;

/// What a catch-up did to the copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyChange {
    /// The copy held the log's bytes already.
    Unchanged,
    /// The copy held a beginning of the log; the bytes after it were appended.
    Grown,
    /// There was no copy: it was written whole.
    Created,
    /// The copy held other bytes than a beginning of the log: it was replaced by the log.
    Replaced,
    /// The log has no segment (it was deleted, or never written): there is no copy (one there
    /// was deleted, with its record).
    Absent,
}

/// What [`update_copy`] did, and what it read from the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyUpdate {
    pub change: CopyChange,
    /// The log's length: the copy's, now.
    pub len_bytes: u64,
    /// Bytes of the log read from the store: only the appended ones when the record's
    /// segments begin the listing; the copy's bytes beyond the segments both name too after
    /// a doubt (compared, not assumed).
    pub read_bytes: u64,
}

/// The record beside a copy (JSON, one object).
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
struct Record {
    /// `s3://BUCKET/KEY` and the store (`StoreConfig::store_name`) the copy is of.
    log: String,
    store: String,
    /// The copy's length and mtime (ns since the Unix epoch) once written.
    len_bytes: u64,
    modified_ns: u128,
    /// The segments whose concatenation the copy holds, as listed.
    segments: Vec<RecordedSegment>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
struct RecordedSegment {
    key: String,
    start: u64,
    len: u64,
    e_tag: Option<String>,
    modified_ns: i64,
}

impl RecordedSegment {
    fn of(segment: &Segment) -> RecordedSegment {
        RecordedSegment {
            key: segment.key.clone(),
            start: segment.start,
            len: segment.len,
            e_tag: segment.e_tag.clone(),
            modified_ns: segment.modified_ns,
        }
    }

    /// The same object as listed: same key, bytes, ETag and modification time.
    fn is(&self, segment: &Segment) -> bool {
        self.key == segment.key
            && self.start == segment.start
            && self.len == segment.len
            && self.e_tag == segment.e_tag
            && self.modified_ns == segment.modified_ns
    }
}

/// The record file of the copy `copy`.
pub fn copy_record_path(copy: &Path) -> PathBuf {
    let mut name = copy.as_os_str().to_owned();
    name.push(COPY_RECORD_SUFFIX);
    PathBuf::from(name)
}

/// Whether the copy `copy` holds the log at `address` as it is now (for a log without
/// segments: whether there is no copy), by the record beside it and one listing of the log's
/// segments; nothing is written.
pub fn copy_is_current(remote: &Arc<Remote>, address: &S3Address, copy: &Path) -> Result<bool> {
    let storage = SegmentStorage::open(remote.clone(), address)?;
    let segments = storage.segments();
    if segments.is_empty() {
        return Ok(stamp(copy).is_ok_and(|stamp| stamp.is_none()));
    }
    Ok(trusted_record(remote, address, copy).is_some_and(|record| {
        record.segments.len() == segments.len()
            && record.segments.iter().zip(&segments).all(|(r, s)| r.is(s))
    }))
}

/// Brings the copy `copy` (a file, created with its folder if missing) to the log at
/// `address`, as the module's documentation says, and writes its record; a log without
/// segments has no copy. An error names the object and what the store answered, or the local
/// file.
pub fn update_copy(remote: &Arc<Remote>, address: &S3Address, copy: &Path) -> Result<CopyUpdate> {
    let storage = SegmentStorage::open(remote.clone(), address)?;
    let segments = storage.segments();
    if segments.is_empty() {
        for file in [copy.to_path_buf(), copy_record_path(copy)] {
            match fs::remove_file(&file) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    return Err(local(&file, "delete the copy of a log that is gone", error));
                }
                _ => {}
            }
        }
        return Ok(CopyUpdate {
            change: CopyChange::Absent,
            len_bytes: 0,
            read_bytes: 0,
        });
    }
    let end = segments.last().map_or(0, Segment::end);
    let record = trusted_record(remote, address, copy);
    // The leading segments the record and the listing share: the copy holds their bytes.
    let shared = record.as_ref().map_or(0, |record| {
        record
            .segments
            .iter()
            .zip(&segments)
            .take_while(|(r, s)| r.is(s))
            .count()
    });
    let known = segments[..shared].last().map_or(0, Segment::end);
    let held = match record.as_ref() {
        Some(record) if shared == record.segments.len() => Some(record.len_bytes),
        _ => None,
    };
    let mut read_bytes = 0;
    let change = match held {
        Some(held) if held == end => CopyChange::Unchanged,
        Some(held) => {
            read_bytes += append_from(&storage, held, end, copy)?;
            CopyChange::Grown
        }
        None => {
            let copy_len = match fs::metadata(copy) {
                Ok(metadata) => Some(metadata.len()),
                Err(error) if error.kind() == io::ErrorKind::NotFound => None,
                Err(error) => return Err(local(copy, "read the size of the copy", error)),
            };
            match copy_len {
                None => {
                    read_bytes += replace(&storage, end, copy)?;
                    CopyChange::Created
                }
                Some(copy_len) => {
                    let (prefix, compared) = is_prefix(&storage, known, copy_len, end, copy)?;
                    read_bytes += compared;
                    if !prefix {
                        read_bytes += replace(&storage, end, copy)?;
                        CopyChange::Replaced
                    } else if copy_len == end {
                        CopyChange::Unchanged
                    } else {
                        read_bytes += append_from(&storage, copy_len, end, copy)?;
                        CopyChange::Grown
                    }
                }
            }
        }
    };
    if change != CopyChange::Unchanged || held.is_none() {
        write_record(remote, address, copy, &segments)?;
    }
    Ok(CopyUpdate {
        change,
        len_bytes: end,
        read_bytes,
    })
}

/// The record of `copy` when it is one of the log at `address` on this store and the copy is
/// as it left it (same length and mtime); `None` otherwise, and when either cannot be read (a
/// doubt, never an error: the copy is then compared or replaced).
fn trusted_record(remote: &Remote, address: &S3Address, copy: &Path) -> Option<Record> {
    let text = fs::read(copy_record_path(copy)).ok()?;
    let record = serde_json::from_slice::<Record>(&text).ok()?;
    let (len_bytes, modified_ns) = stamp(copy).ok()??;
    let ends = record.segments.last().map_or(0, |s| s.start + s.len);
    let fits = record.log == address.url()
        && record.store == remote.config().store_name()
        && record.len_bytes == ends
        && (record.len_bytes, record.modified_ns) == (len_bytes, modified_ns);
    fits.then_some(record)
}

/// The copy's length and mtime, `None` when there is no copy.
fn stamp(copy: &Path) -> Result<Option<(u64, u128)>> {
    match fs::metadata(copy) {
        Ok(metadata) => {
            let modified_ns = metadata
                .modified()
                .ok()
                .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |elapsed| elapsed.as_nanos());
            Ok(Some((metadata.len(), modified_ns)))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(local(copy, "read the size of the copy", error)),
    }
}

/// Writes the record of `copy`, holding `segments`, beside it (written whole, then renamed).
fn write_record(
    remote: &Remote,
    address: &S3Address,
    copy: &Path,
    segments: &[Segment],
) -> Result<()> {
    let Some((len_bytes, modified_ns)) = stamp(copy)? else {
        return Err(local(
            copy,
            "read the size of the copy",
            io::ErrorKind::NotFound.into(),
        ));
    };
    let record = Record {
        log: address.url(),
        store: remote.config().store_name(),
        len_bytes,
        modified_ns,
        segments: segments.iter().map(RecordedSegment::of).collect(),
    };
    let path = copy_record_path(copy);
    let text = serde_json::to_vec(&record).map_err(|error| local(&path, "write", error.into()))?;
    let partial = partial_path(&path);
    crate::fs_safe::create_own_file(&partial, COPY_FILE_MODE)
        .and_then(|mut file| file.write_all(&text))
        .map_err(|error| local(&partial, "write the copy's record", error))?;
    fs::rename(&partial, &path).map_err(|error| local(&path, "write the copy's record", error))
}

/// Reads the log's bytes `from..to` in order, handing each piece to `sink`; returns the bytes
/// read. A log that ends early is an error naming its folder.
fn read_log(
    storage: &SegmentStorage,
    from: u64,
    to: u64,
    mut sink: impl FnMut(&[u8]) -> Result<bool>,
) -> Result<u64> {
    let mut buf = vec![0u8; CHUNK_BYTES.min(usize::try_from(to - from).unwrap_or(CHUNK_BYTES))];
    let mut at = from;
    while at < to {
        let want = usize::try_from(to - at).map_or(buf.len(), |left| left.min(buf.len()));
        let count = storage.read(at, &mut buf[..want])?;
        if count == 0 {
            let address = storage.address();
            return Err(ObjectStoreError::Layout {
                object: address.object_url(&address.segments_folder()),
                reason: format!("the log's segments end at byte {at}, before byte {to} listed"),
            });
        }
        at += count as u64;
        if !sink(&buf[..count])? {
            break;
        }
    }
    Ok(at - from)
}

/// Whether the copy's `copy_len` bytes are the log's first ones, given that its first `known`
/// are; returns that and the bytes of the log read to tell.
fn is_prefix(
    storage: &SegmentStorage,
    known: u64,
    copy_len: u64,
    end: u64,
    copy: &Path,
) -> Result<(bool, u64)> {
    if copy_len > end {
        return Ok((false, 0));
    }
    let from = known.min(copy_len);
    let mut file = File::open(copy).map_err(|error| local(copy, "read the copy", error))?;
    file.seek(SeekFrom::Start(from))
        .map_err(|error| local(copy, "read the copy", error))?;
    let mut same = true;
    let mut held = Vec::new();
    let read = read_log(storage, from, copy_len, |piece| {
        held.resize(piece.len(), 0);
        file.read_exact(&mut held)
            .map_err(|error| local(copy, "read the copy", error))?;
        same = held == piece;
        Ok(same)
    })?;
    Ok((same, read))
}

/// Appends the log's bytes `from..to` to the copy (which holds `from` bytes).
fn append_from(storage: &SegmentStorage, from: u64, to: u64, copy: &Path) -> Result<u64> {
    let mut file = OpenOptions::new()
        .write(true)
        .open(copy)
        .map_err(|error| local(copy, "open the copy", error))?;
    // A copy longer than it was found (a torn earlier write) is cut back to what was checked.
    file.set_len(from)
        .and_then(|()| file.seek(SeekFrom::Start(from)).map(drop))
        .map_err(|error| local(copy, "write the copy", error))?;
    read_log(storage, from, to, |piece| {
        file.write_all(piece)
            .map_err(|error| local(copy, "write the copy", error))?;
        Ok(true)
    })
}

/// Writes the log's `end` bytes whole beside the copy and renames the file over it.
fn replace(storage: &SegmentStorage, end: u64, copy: &Path) -> Result<u64> {
    if let Some(folder) = copy.parent() {
        fs::create_dir_all(folder)
            .map_err(|error| local(folder, "create the copy's folder", error))?;
    }
    let partial = partial_path(copy);
    let written = (|| {
        let mut file = crate::fs_safe::create_own_file(&partial, COPY_FILE_MODE)
            .map_err(|error| local(&partial, "write the copy", error))?;
        read_log(storage, 0, end, |piece| {
            file.write_all(piece)
                .map_err(|error| local(&partial, "write the copy", error))?;
            Ok(true)
        })
    })();
    match written {
        Ok(read) => {
            fs::rename(&partial, copy).map_err(|error| local(copy, "write the copy", error))?;
            Ok(read)
        }
        Err(error) => {
            let _ = fs::remove_file(&partial);
            Err(error)
        }
    }
}

/// A file of this process beside `path`, renamed over it once written whole.
fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{}.partial", std::process::id()));
    PathBuf::from(name)
}

fn local(path: &Path, operation: &'static str, source: io::Error) -> ObjectStoreError {
    ObjectStoreError::Io {
        path: path.to_path_buf(),
        operation,
        source,
    }
}
