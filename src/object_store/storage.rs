//! [`SegmentStorage`]: the engine's `LogStorage` over a log's segment objects
//! (format-spec/object-store.md §4). Its length is where the last listed segment ends, found
//! again on every `len_bytes` and `identity` (one listing of the keys after the last segment
//! known); reads are ranged gets of one segment, read ahead and kept; an append creates the
//! next segment only if no one has (`If-None-Match: *`), else fails with `AppendRaced` and
//! writes nothing. `lock` and `unlock` do nothing: the conditional create is what keeps two
//! writers from both extending the same prefix.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::address::S3Address;
use super::compact::LISTING_AGE_MAX;
use super::error::{ObjectStoreError, Result};
use super::layout::{Resolved, Segment, resolve, resolve_folder, segment_at};
use super::remote::{Created, Read, Remote};
use crate::storage::{AppendRaced, FileIdentity, LogStorage};

/// The most a read that continues the one before it fetches, within one segment, and keeps
/// for the reads after it (catch-ups and replays read the log in order).
const READ_AHEAD_BYTES: u64 = 4 << 20;

/// What a read that does not continue the one before fetches at least (an open's checks read
/// the header and the last block: a few KiB each).
const READ_MIN_BYTES: u64 = 64 << 10;

/// A log stored as segments on an object store.
pub struct SegmentStorage {
    address: S3Address,
    /// `s3://BUCKET/KEY`, the name messages give the log.
    path: PathBuf,
    remote: Arc<Remote>,
    state: Mutex<State>,
}

struct State {
    /// Contiguous from byte 0: the log is their concatenation.
    segments: Vec<Segment>,
    /// The objects inside covering segments, as listed from the start (at open, or after a
    /// compaction was found): not read.
    covered: Vec<Segment>,
    /// The bytes of the last [`FETCHES_KEPT`] fetches, each with the offset of its first byte,
    /// the latest last.
    fetched: Vec<(u64, Arc<Vec<u8>>)>,
    /// The end last told to the engine (`len_bytes`, `identity`, an append): the log it has
    /// read. An append extends that end or nothing, whatever a later listing (a re-list during
    /// a read) found after it.
    told_end: u64,
    /// When the last listing was asked for (the client's monotonic clock, ns): an append on an
    /// older listing lists again first (format-spec/object-store.md §4).
    listed_at_ns: u64,
}

/// Fetches kept for the reads after them: an open reads the header, then the last block, then
/// the header again.
const FETCHES_KEPT: usize = 2;

impl State {
    /// Where the bytes last fetched end: a read from there reads the log in order.
    fn fetched_end(&self) -> Option<u64> {
        self.fetched
            .last()
            .map(|(start, bytes)| start + bytes.len() as u64)
    }

    /// Copies into `buf` what a kept fetch holds at `offset`, if any.
    fn copy_kept(&self, offset: u64, buf: &mut [u8]) -> Option<usize> {
        let (start, bytes) = self
            .fetched
            .iter()
            .rev()
            .find(|(start, bytes)| offset >= *start && offset < start + bytes.len() as u64)?;
        let from = (offset - start) as usize;
        let count = buf.len().min(bytes.len() - from);
        buf[..count].copy_from_slice(&bytes[from..from + count]);
        Some(count)
    }
}

impl SegmentStorage {
    /// The log at `address`: its segments listed and checked (a gap, an overlap, an object
    /// that is not a segment is an error naming the object). No segment is an empty log,
    /// unless an object is stored under the log's own key: a JSONL file copied there as one
    /// object, which is refused rather than read as an empty session.
    pub fn open(remote: Arc<Remote>, address: &S3Address) -> Result<SegmentStorage> {
        let listed_at_ns = remote.monotonic_ns();
        let listed = remote.list_segments(address, None)?;
        let Resolved { segments, covered } = resolve_folder(address, listed)?;
        if segments.is_empty() && remote.exists(&address.key)? {
            return Err(ObjectStoreError::Layout {
                object: address.url(),
                reason: format!(
                    "a plain object, not a log stored as segments (no object under {}); \
                     `treelog push FILE {}` stores a log so that it can be appended to",
                    address.object_url(&address.segments_folder()),
                    address.url()
                ),
            });
        }
        Ok(SegmentStorage {
            path: PathBuf::from(address.url()),
            address: address.clone(),
            remote,
            state: Mutex::new(State {
                told_end: segments.last().map_or(0, Segment::end),
                segments,
                covered,
                fetched: Vec::new(),
                listed_at_ns,
            }),
        })
    }

    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    pub fn address(&self) -> &S3Address {
        &self.address
    }

    /// The segments known, as last listed.
    pub fn segments(&self) -> Vec<Segment> {
        self.state().segments.clone()
    }

    /// The objects inside the covering segments known, as listed from the start (at open, or
    /// when a compaction was found): a reader does not read them.
    pub fn covered(&self) -> Vec<Segment> {
        self.state().covered.clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held left the list as it was: still a valid prefix.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lists the segments after the last one known and adds them; returns the log's end. When
    /// a compaction covered known segments, the folder is listed again from the start.
    pub fn refresh(&self) -> Result<u64> {
        let last = self.state().segments.last().cloned();
        let listed_at_ns = self.remote.monotonic_ns();
        let listed = self
            .remote
            .list_segments(&self.address, last.as_ref().map(|s| s.key.as_str()))?;
        let Some(new) = resolve(&self.address, last.as_ref(), listed)? else {
            return self.relist();
        };
        let mut state = self.state();
        state.listed_at_ns = state.listed_at_ns.max(listed_at_ns);
        // Another thread may have added some meanwhile: keep those that still continue it.
        let known_end = state.segments.last().map_or(0, Segment::end);
        state.segments.extend(
            new.segments
                .into_iter()
                .filter(|segment| segment.start >= known_end),
        );
        Ok(state.segments.last().map_or(0, Segment::end))
    }

    /// Lists the whole folder again and reads the log from the segments found: after a
    /// compaction, covering segments in place of those known. The log never shrinks: one
    /// shorter than the bytes known is an error naming the folder.
    fn relist(&self) -> Result<u64> {
        let listed_at_ns = self.remote.monotonic_ns();
        let listed = self.remote.list_segments(&self.address, None)?;
        let Resolved { segments, covered } = resolve_folder(&self.address, listed)?;
        let end = segments.last().map_or(0, Segment::end);
        let mut state = self.state();
        let known_end = state.segments.last().map_or(0, Segment::end);
        if end < known_end {
            return Err(ObjectStoreError::Layout {
                object: self.address.object_url(&self.address.segments_folder()),
                reason: format!(
                    "the log's segments end at byte {end}, before the {known_end} bytes read \
                     earlier: segments were deleted"
                ),
            });
        }
        // The same offsets hold the same bytes: what was fetched stays valid.
        state.listed_at_ns = state.listed_at_ns.max(listed_at_ns);
        state.segments = segments;
        state.covered = covered;
        Ok(end)
    }

    /// Reads the log's bytes at `offset` into `buf` (from one segment: fewer than asked at a
    /// segment's end, 0 at the log's end).
    pub(super) fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        match self.read_listed(offset, buf)? {
            Some(count) => Ok(count),
            None => {
                // The segment listed is gone: a compaction covered it and deleted it after its
                // grace period. The covering segment holds the same bytes.
                self.relist()?;
                match self.read_listed(offset, buf)? {
                    Some(count) => Ok(count),
                    None => Err(ObjectStoreError::Layout {
                        object: self.address.object_url(&self.address.segments_folder()),
                        reason: format!(
                            "the segment holding byte {offset} was deleted while read, and \
                             again after listing the folder anew"
                        ),
                    }),
                }
            }
        }
    }

    /// Reads at `offset` from the segment listed there; `None` when that object is gone.
    fn read_listed(&self, offset: u64, buf: &mut [u8]) -> Result<Option<usize>> {
        let (segment, in_order) = {
            let state = self.state();
            if let Some(count) = state.copy_kept(offset, buf) {
                return Ok(Some(count));
            }
            match segment_at(&state.segments, offset) {
                Some(index) => (
                    state.segments[index].clone(),
                    state.fetched_end() == Some(offset),
                ),
                None => return Ok(Some(0)),
            }
        };
        let ahead = if in_order {
            READ_AHEAD_BYTES
        } else {
            READ_MIN_BYTES
        };
        let wanted = (buf.len() as u64).max(ahead);
        let end = segment.end().min(offset.saturating_add(wanted));
        let range = (offset - segment.start)..(end - segment.start);
        let bytes = match self.remote.read_segment(&self.address, &segment, range)? {
            Read::Bytes(bytes) => bytes,
            Read::Gone => return Ok(None),
        };
        let count = buf.len().min(bytes.len());
        buf[..count].copy_from_slice(&bytes[..count]);
        let mut state = self.state();
        if state.fetched.len() == FETCHES_KEPT {
            state.fetched.remove(0);
        }
        state.fetched.push((offset, Arc::new(bytes)));
        Ok(Some(count))
    }

    /// The end the log had when the engine last looked, as told to it.
    fn tell(&self, end: u64) -> u64 {
        self.state().told_end = end;
        end
    }

    fn append_segment(&self, bytes: &[u8]) -> Result<std::result::Result<u64, AppendRaced>> {
        let (start, listed_at_ns) = {
            let state = self.state();
            (state.told_end, state.listed_at_ns)
        };
        // A create on an old listing could re-use the key of a segment a compaction covered
        // and deleted since (the key is free again): past the listing age bound, which the
        // smallest grace period outlasts, the folder is listed again first.
        let age_ns = self.remote.monotonic_ns().saturating_sub(listed_at_ns);
        if u128::from(age_ns) > LISTING_AGE_MAX.as_nanos() {
            self.refresh()?;
        }
        let listed_end = self.state().segments.last().map_or(0, Segment::end);
        if listed_end != start {
            // Bytes the engine has not read (listed since it looked): it catches up and
            // applies its conflict rule to them first.
            return Ok(Err(AppendRaced {
                detail: format!(
                    "{} ends at byte {listed_end}, not at {start} as last read: another writer \
                     extended it",
                    self.address.url()
                ),
            }));
        }
        let key = self.address.segment_key(start);
        match self.remote.create(&key, bytes)? {
            Created::Written { e_tag } => {
                let mut state = self.state();
                state.segments.push(Segment {
                    key,
                    start,
                    len: bytes.len() as u64,
                    e_tag,
                    modified_ns: 0,
                });
                state.told_end = start + bytes.len() as u64;
                Ok(Ok(state.told_end))
            }
            Created::Exists => {
                // A create retried after a lost answer finds its own object: the same bytes
                // are the same log, whoever wrote them.
                if self.remote.holds(&key, bytes)? {
                    self.refresh()?;
                    return Ok(Ok(self.tell(start + bytes.len() as u64)));
                }
                Ok(Err(AppendRaced {
                    detail: format!(
                        "{} already exists: the store refused the conditional create",
                        self.address.object_url(&key)
                    ),
                }))
            }
        }
    }
}

impl LogStorage for SegmentStorage {
    fn path(&self) -> &Path {
        &self.path
    }

    /// `device`: the store, bucket and key; `inode`: the first segment and the covering
    /// segments read (a log deleted and written again, or compacted, is another file: a full
    /// check); `changed_ns`: how many segments are read; `modified_ns` 0: segments are
    /// immutable.
    fn identity(&self) -> io::Result<FileIdentity> {
        let len_bytes = self.refresh().map_err(ObjectStoreError::into_io)?;
        self.tell(len_bytes);
        let state = self.state();
        let hash = |parts: &[&[u8]]| {
            let mut hasher = blake3::Hasher::new();
            for part in parts {
                hasher.update(part);
                hasher.update(&[0]);
            }
            let digest = hasher.finalize();
            u64::from_le_bytes(digest.as_bytes()[..8].try_into().expect("8 bytes")) | 1
        };
        let device = hash(&[
            self.remote.config().store_name().as_bytes(),
            self.address.bucket.as_bytes(),
            self.address.key.as_bytes(),
        ]);
        let inode = match state.segments.first() {
            Some(first) => {
                let first_len = first.len.to_le_bytes();
                let mut parts: Vec<&[u8]> = vec![first.key.as_bytes(), &first_len];
                parts.extend(
                    state
                        .segments
                        .iter()
                        .filter(|segment| segment.is_covering())
                        .map(|segment| segment.key.as_bytes()),
                );
                hash(&parts)
            }
            None => 0,
        };
        Ok(FileIdentity {
            device,
            inode,
            len_bytes,
            modified_ns: 0,
            changed_ns: state.segments.len() as i64,
        })
    }

    fn len_bytes(&self) -> io::Result<u64> {
        let end = self.refresh().map_err(ObjectStoreError::into_io)?;
        Ok(self.tell(end))
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.read(offset, buf).map_err(ObjectStoreError::into_io)
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        if bytes.is_empty() {
            return Ok(self.state().told_end);
        }
        match self.append_segment(bytes) {
            Ok(Ok(end)) => Ok(end),
            Ok(Err(raced)) => Err(io::Error::other(raced)),
            Err(error) => Err(error.into_io()),
        }
    }

    /// A segment is durable once the store acknowledged its create.
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
