//! Compaction of a log on an object store (format-spec/object-store.md §6): runs of small
//! segments merged into covering segments `KEY.d/seg-{start:020}-{end:020}` holding their
//! concatenation, the log's bytes unchanged; the covered segments deleted once a grace period
//! has passed since the covering segment was written.
//!
//! A pass lists the folder, writes a covering segment for each run (read, hashed, created with
//! a conditional create, read back and hashed again), lists the folder again, and deletes the
//! objects inside each covering segment older than the grace period, after checking that the
//! covering segment holds their bytes. It never covers the last segment, so it never moves
//! the end an append is named by.

use std::time::Duration;

use super::address::S3Address;
use super::error::{ObjectStoreError, Result};
use super::layout::{Resolved, Segment, resolve_folder, tiling};
use super::remote::{Created, Remote, connect};

/// A plain segment smaller than this is small: compaction merges it with its neighbours.
pub const SMALL_SEGMENT_BYTES: u64 = 1 << 20;

/// The largest covering segment a compaction writes.
pub const COVERING_MAX_BYTES: u64 = 8 << 20;

/// The fewest segments a covering segment replaces: fewer would save no request.
pub const RUN_SEGMENTS_MIN: usize = 2;

/// The grace period `treelog compact` waits by default before it deletes covered segments.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3600);

/// The shortest grace period a compaction accepts (format-spec/object-store.md §6.4): longer
/// than a writer's oldest listing ([`LISTING_AGE_MAX`]), its create's request
/// ([`crate::limits::STORE_REQUEST_TIMEOUT`]) and the clock difference allowed
/// ([`CLOCK_SKEW_MAX`]) together, so that no create made on a listing from before a covering
/// segment was written arrives after the segments it covers are deleted.
pub const GRACE_MIN: Duration = Duration::from_secs(600);

/// How far a compactor's clock may be ahead of the store's: a pass that finds its clock
/// further ahead (against the Last-Modified of a covering segment it just wrote) deletes
/// nothing.
pub const CLOCK_SKEW_MAX: Duration = Duration::from_secs(60);

/// The oldest listing a writer creates a segment on; past it, the writer lists again first.
/// Half of what [`GRACE_MIN`] leaves after a request and the clock difference.
pub const LISTING_AGE_MAX: Duration = Duration::from_secs(
    (GRACE_MIN.as_secs()
        - crate::limits::STORE_REQUEST_TIMEOUT.as_secs()
        - CLOCK_SKEW_MAX.as_secs())
        / 2,
);

/// The oldest covering segment a pass takes back after an error: until then no pass may be
/// deleting the segments it covers (their grace period is not over by any clock within
/// [`CLOCK_SKEW_MAX`]), so they still hold its bytes.
const UNDO_AGE_MAX: Duration = Duration::from_secs(
    GRACE_MIN.as_secs() - crate::limits::STORE_REQUEST_TIMEOUT.as_secs() - CLOCK_SKEW_MAX.as_secs(),
);

/// How a compaction runs.
#[derive(Clone, Debug)]
pub struct CompactOptions {
    /// How long after a covering segment was written the segments it covers are deleted
    /// (measured from its Last-Modified as listed, against this machine's clock): at least
    /// [`GRACE_MIN`], unless `at_rest`.
    pub grace: Duration,
    /// The log is at rest: no writer appends to it and no other compaction runs while this
    /// pass does, so a grace period under [`GRACE_MIN`] (0: delete at once) loses nothing.
    pub at_rest: bool,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            grace: DEFAULT_GRACE,
            at_rest: false,
        }
    }
}

/// A covering segment a compaction wrote (or found already written with the same bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Covering {
    /// `KEY.d/seg-{start:020}-{end:020}`.
    pub key: String,
    /// `s3://BUCKET/` and the key.
    pub object: String,
    pub start: u64,
    pub end: u64,
    /// The segments it replaces for a reader.
    pub segments: usize,
    /// blake3 of its bytes: the concatenation of the segments it covers.
    pub blake3: String,
    /// Whether this pass created it (`false`: another compaction had, with the same bytes).
    pub created: bool,
}

/// What a compaction pass did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The log's length: the same before and after.
    pub len_bytes: u64,
    /// The segments a reader reads, before and after the pass.
    pub segments_before: usize,
    pub segments_after: usize,
    pub written: Vec<Covering>,
    /// Covered objects deleted, their grace period over.
    pub deleted: usize,
    /// Covered objects kept until their grace period is over.
    pub waiting: usize,
}

/// One compaction pass over the log at `address` (see the module's documentation). The log
/// reads the same, byte for byte, before, during and after it, and after a crash at any point.
/// An error names the object and what the store answered, or what is wrong with it (a covering
/// segment whose bytes differ from those it covers is refused, and nothing it covers is
/// deleted).
pub fn compact(address: &S3Address, options: &CompactOptions) -> Result<Compacted> {
    compact_on(&*connect(address)?, address, options)
}

/// [`compact`] over `remote` (whose clock measures the grace period).
pub fn compact_on(
    remote: &Remote,
    address: &S3Address,
    options: &CompactOptions,
) -> Result<Compacted> {
    if options.grace < GRACE_MIN && !options.at_rest {
        return Err(ObjectStoreError::Refused {
            target: address.url(),
            reason: format!(
                "a grace period of {} s is under the {} s minimum: a writer may create a segment \
                 on a listing {} s old, its request may take {} s and clocks may differ by {} s, \
                 so deleting covered segments sooner could free the key of a segment such a \
                 writer then creates, and lose its append (a log at rest, with no writer and no \
                 other compaction, may use less)",
                options.grace.as_secs(),
                GRACE_MIN.as_secs(),
                LISTING_AGE_MAX.as_secs(),
                crate::limits::STORE_REQUEST_TIMEOUT.as_secs(),
                CLOCK_SKEW_MAX.as_secs()
            ),
        });
    }
    let before = list(remote, address)?;
    let len_bytes = before.segments.last().map_or(0, Segment::end);
    let mut written = Vec::new();
    // For each covering created: when (this client's wall and monotonic clocks) before its
    // create was sent.
    let mut created_at = Vec::new();
    for run in runs(&before.segments) {
        let sent = (remote.now_ns(), remote.monotonic_ns());
        match write_covering(remote, address, &run, &before.covered) {
            Ok(covering) => {
                created_at.push(sent);
                written.push(covering);
            }
            Err(error) => {
                undo(remote, &written, &created_at);
                return Err(error);
            }
        }
    }
    // A concurrent compaction that chose other runs (other thresholds) would cross this one:
    // readers refuse that, so this pass takes back what it wrote.
    // Grace periods are measured at the listing's start: what the listing shows is no newer
    // than that, however long it takes or the pass waits after it.
    let listed_ns = remote.now_ns();
    let after = match list(remote, address) {
        Ok(after) => after,
        Err(error) => {
            undo(remote, &written, &created_at);
            return Err(error);
        }
    };
    let end = after.segments.last().map_or(0, Segment::end);
    if end < len_bytes {
        return Err(ObjectStoreError::Layout {
            object: address.object_url(&address.segments_folder()),
            reason: format!(
                "the log's segments end at byte {end} after the compaction, {len_bytes} before: \
                 segments were deleted by another program"
            ),
        });
    }
    check_clock(address, &written, &created_at, &after)?;
    let (deleted, waiting) = delete_covered(remote, address, &after, listed_ns, options.grace)?;
    Ok(Compacted {
        len_bytes,
        segments_before: before.segments.len(),
        segments_after: after.segments.len(),
        written,
        deleted,
        waiting,
    })
}

fn list(remote: &Remote, address: &S3Address) -> Result<Resolved> {
    resolve_folder(address, remote.list_segments(address, None)?)
}

/// Deletes the covering segments this pass created, after an error, while they are younger
/// than [`UNDO_AGE_MAX`]: no pass deletes what they cover before then, so a reader that listed
/// one reads the same bytes from the segments it covers. An older one stays (its bytes were
/// checked when read back): deleting it could leave neither it nor what it covers.
fn undo(remote: &Remote, written: &[Covering], created_at: &[(i64, u64)]) {
    for (covering, (_, sent)) in written.iter().zip(created_at) {
        let age = remote.monotonic_ns().saturating_sub(*sent);
        if covering.created && u128::from(age) < UNDO_AGE_MAX.as_nanos() {
            let _ = remote.delete(&covering.key);
        }
    }
}

/// Refuses to delete anything when this machine's clock is more than [`CLOCK_SKEW_MAX`] ahead
/// of the store's: a covering segment created by this pass was listed with a Last-Modified
/// before the time its create was sent, less the skew allowed. (A clock ahead shortens every
/// grace period it measures.)
fn check_clock(
    address: &S3Address,
    written: &[Covering],
    created_at: &[(i64, u64)],
    after: &Resolved,
) -> Result<()> {
    let skew_ns = i64::try_from(CLOCK_SKEW_MAX.as_nanos()).unwrap_or(i64::MAX);
    for (covering, (sent_ns, _)) in written.iter().zip(created_at) {
        let Some(listed) = after
            .segments
            .iter()
            .chain(&after.covered)
            .find(|s| s.key == covering.key)
        else {
            continue;
        };
        if covering.created && listed.modified_ns.saturating_add(skew_ns) < *sent_ns {
            return Err(ObjectStoreError::Refused {
                target: address.url(),
                reason: format!(
                    "this machine's clock is {} s ahead of the store's (the covering segment {} \
                     it just wrote is listed as modified before its create was sent), more than \
                     the {} s a grace period allows for; nothing was deleted",
                    (sent_ns - listed.modified_ns) / 1_000_000_000,
                    address.object_url(&covering.key),
                    CLOCK_SKEW_MAX.as_secs()
                ),
            });
        }
    }
    Ok(())
}

/// The runs of segments a compaction merges, in order: consecutive segments read, each small
/// (a plain segment under [`SMALL_SEGMENT_BYTES`]) or covering, together at most
/// [`COVERING_MAX_BYTES`], never the last segment of the log, at least [`RUN_SEGMENTS_MIN`] of
/// them. A run is taken as long as it fits, from the first segment on, so that two compactions
/// of one log choose runs that nest or follow each other (format-spec/object-store.md §6).
pub fn runs(segments: &[Segment]) -> Vec<Vec<Segment>> {
    let mut runs = Vec::new();
    let mut run: Vec<Segment> = Vec::new();
    let mut run_bytes = 0;
    let mut close = |run: &mut Vec<Segment>, run_bytes: &mut u64| {
        if run.len() >= RUN_SEGMENTS_MIN {
            runs.push(std::mem::take(run));
        }
        run.clear();
        *run_bytes = 0;
    };
    let candidates = &segments[..segments.len().saturating_sub(1)];
    for segment in candidates {
        if !(segment.is_covering() || segment.len < SMALL_SEGMENT_BYTES) {
            close(&mut run, &mut run_bytes);
            continue;
        }
        if run_bytes + segment.len > COVERING_MAX_BYTES {
            close(&mut run, &mut run_bytes);
        }
        run_bytes += segment.len;
        run.push(segment.clone());
    }
    close(&mut run, &mut run_bytes);
    runs
}

/// Reads `run`, creates the covering segment of its bytes unless one exists, and reads it back:
/// its blake3 must be the concatenation's. A covering segment in the run is first compared with
/// the segments it covers (in `covered`) while they are all still there.
fn write_covering(
    remote: &Remote,
    address: &S3Address,
    run: &[Segment],
    covered: &[Segment],
) -> Result<Covering> {
    let start = run.first().map_or(0, |s| s.start);
    let end = run.last().map_or(0, Segment::end);
    // A run holds at most COVERING_MAX_BYTES as listed, and each segment is read checked
    // against its listed size: the bytes held stay within that bound.
    let mut bytes = Vec::with_capacity(
        (end - start).min(COVERING_MAX_BYTES.min(crate::limits::OBJECT_READ_CHUNK_BYTES)) as usize,
    );
    for segment in run {
        let from = bytes.len();
        read_whole(remote, address, segment, &mut bytes)?;
        if segment.is_covering() {
            let held = blake3::hash(&bytes[from..]).to_hex().to_string();
            check_covering(remote, address, segment, &held, covered)?;
        }
    }
    let hash = blake3::hash(&bytes).to_hex().to_string();
    let key = address.covering_key(start, end);
    let object = address.object_url(&key);
    let created = match remote.create(&key, &bytes)? {
        Created::Written { .. } => true,
        Created::Exists => false,
    };
    let back = Segment {
        key: key.clone(),
        start,
        len: end - start,
        e_tag: None,
        modified_ns: 0,
    };
    let (back_len, back_hash) = hash_whole(remote, address, &back)?;
    if back_hash != hash {
        // Readers read a covering segment instead of what it covers: one with other bytes is
        // deleted at once (the segments it covers, just read whole, hold the log's bytes, and
        // no pass deletes them while it fails its check).
        let _ = remote.delete(&key);
        return Err(ObjectStoreError::Layout {
            object,
            reason: format!(
                "covering segment {}: blake3 {back_hash} ({} bytes), the segments it covers \
                 {hash} ({} bytes); it was deleted, and nothing it covers",
                if created {
                    "read back other bytes than written"
                } else {
                    "already there, with other bytes than the segments it covers"
                },
                back_len,
                bytes.len()
            ),
        });
    }
    Ok(Covering {
        key,
        object,
        start,
        end,
        segments: run.len(),
        blake3: hash,
        created,
    })
}

/// Appends the whole segment to `bytes`; it must hold the bytes listed.
fn read_whole(
    remote: &Remote,
    address: &S3Address,
    segment: &Segment,
    bytes: &mut Vec<u8>,
) -> Result<()> {
    let there = remote.each_chunk(address, segment, |chunk| {
        bytes.extend_from_slice(chunk);
        Ok(())
    })?;
    if !there {
        return Err(deleted_while_read(address, segment));
    }
    Ok(())
}

/// The length and blake3 of the whole segment, read in pieces; it must hold the bytes listed.
fn hash_whole(remote: &Remote, address: &S3Address, segment: &Segment) -> Result<(u64, String)> {
    let mut hasher = blake3::Hasher::new();
    let there = remote.each_chunk(address, segment, |chunk| {
        hasher.update(chunk);
        Ok(())
    })?;
    if !there {
        return Err(deleted_while_read(address, segment));
    }
    Ok((segment.len, hasher.finalize().to_hex().to_string()))
}

fn deleted_while_read(address: &S3Address, segment: &Segment) -> ObjectStoreError {
    ObjectStoreError::Layout {
        object: address.object_url(&segment.key),
        reason: "the segment was deleted or replaced while read: another compaction ran".into(),
    }
}

/// Checks that `covering` (whose bytes' blake3 is `held`) holds the bytes of the objects it
/// covers, when those still tile it; `Ok(false)` when they do not (some were deleted) and
/// nothing was compared.
pub(super) fn check_covering(
    remote: &Remote,
    address: &S3Address,
    covering: &Segment,
    held: &str,
    covered: &[Segment],
) -> Result<bool> {
    let Some(tiles) = tiling(covering, covered) else {
        return Ok(false);
    };
    let mut hasher = blake3::Hasher::new();
    for tile in &tiles {
        let there = remote.each_chunk(address, tile, |chunk| {
            hasher.update(chunk);
            Ok(())
        })?;
        if !there {
            // Deleted (or replaced) since listed: another compaction's deletion.
            return Ok(false);
        }
    }
    let theirs = hasher.finalize().to_hex().to_string();
    let ours = held;
    if theirs != ours {
        return Err(ObjectStoreError::Layout {
            object: address.object_url(&covering.key),
            reason: format!(
                "the covering segment's bytes differ from those of the {} segment(s) it covers \
                 ({} .. {}): blake3 {ours} against {theirs}; it was damaged or written by \
                 another program, and a reader reads it",
                tiles.len(),
                address.object_url(&tiles[0].key),
                address.object_url(&tiles[tiles.len() - 1].key)
            ),
        });
    }
    Ok(true)
}

/// Deletes the objects inside each covering segment read whose grace period was over when
/// `resolved` was listed (at `now_ns`, this client's clock), after
/// checking that it holds their bytes (while they still tile it); returns the objects deleted
/// and those kept for their grace period.
fn delete_covered(
    remote: &Remote,
    address: &S3Address,
    resolved: &Resolved,
    now_ns: i64,
    grace: Duration,
) -> Result<(usize, usize)> {
    let grace_ns = i64::try_from(grace.as_nanos()).unwrap_or(i64::MAX);
    let (mut deleted, mut waiting) = (0, 0);
    for covering in resolved.segments.iter().filter(|s| s.is_covering()) {
        let inside: Vec<&Segment> = resolved
            .covered
            .iter()
            .filter(|o| o.start >= covering.start && o.end() <= covering.end())
            .collect();
        if inside.is_empty() {
            continue;
        }
        if covering.modified_ns.saturating_add(grace_ns) > now_ns {
            waiting += inside.len();
            continue;
        }
        let (_, held) = hash_whole(remote, address, covering)?;
        check_covering(remote, address, covering, &held, &resolved.covered)?;
        // In key order: a pass stopped half-way leaves objects that still nest.
        for object in inside {
            remote.delete(&object.key)?;
            deleted += 1;
        }
    }
    Ok((deleted, waiting))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(address: &S3Address, start: u64, len: u64, covering: bool) -> Segment {
        Segment {
            key: if covering {
                address.covering_key(start, start + len)
            } else {
                address.segment_key(start)
            },
            start,
            len,
            e_tag: None,
            modified_ns: 0,
        }
    }

    #[test]
    fn runs_of_small_segments() {
        let address = S3Address::parse("s3://b/s.jsonl").unwrap().unwrap();
        let small = SMALL_SEGMENT_BYTES - 1;
        let big = SMALL_SEGMENT_BYTES;
        let mut at = 0;
        let mut next = |len: u64, covering: bool| {
            let s = segment(&address, at, len, covering);
            at += len;
            s
        };
        let segments = vec![
            next(small, false),
            next(small, false),
            next(big, false),
            next(small, false),
            next(6 * SMALL_SEGMENT_BYTES, true),
            next(small, false),
            next(small, false),
            next(small, false),
            next(small, false),
        ];
        let starts = |runs: Vec<Vec<Segment>>| -> Vec<Vec<u64>> {
            runs.into_iter()
                .map(|run| run.iter().map(|s| s.start).collect())
                .collect()
        };
        let found = starts(runs(&segments));
        // The big segment breaks a run; 8 MiB ends one; the last segment is never covered.
        assert_eq!(
            found,
            [
                vec![segments[0].start, segments[1].start],
                vec![segments[3].start, segments[4].start, segments[5].start],
                vec![segments[6].start, segments[7].start],
            ]
        );
        assert!(runs(&segments[..1]).is_empty());
        assert!(runs(&[]).is_empty());
    }
}
