//! Session logs on an S3-compatible object store (cargo feature `object-store`;
//! format-spec/object-store.md is normative).
//!
//! A log named `s3://BUCKET/KEY` is the concatenation, in order, of the segment objects
//! `KEY.d/seg-{start:020}` (or covering segments `seg-{start:020}-{end:020}` that a compaction
//! wrote in place of several): immutable, each starting where the one before ends, together byte
//! for byte the JSONL file pi would read. An append creates the next segment with a conditional
//! create (`If-None-Match: *`), so two writers never both extend the same prefix; the loser
//! wrote nothing, and the engine catches up and applies its conflict rule as for a local file.
//! The index stays local and disposable: a redb sidecar in a cache directory, checked against
//! the log's bytes on every open as for a local file.
//!
//! - `address.rs`: `s3://` addresses and the names of segment objects.
//! - `error.rs`: [`ObjectStoreError`], each variant naming the object and the store's answer.
//! - `layout.rs`: a listing checked into the contiguous segments of a log and the objects
//!   covering segments cover (pure).
//! - `remote.rs`: the store's client on a current-thread tokio runtime, with blocking calls.
//! - `storage.rs`: [`SegmentStorage`], the engine's `LogStorage` over the segments.
//! - `transfer.rs`: opening a session with its cached index, `push` and `pull`.
//! - `compact.rs`: [`compact`], runs of small segments merged into covering segments, the
//!   covered ones deleted after a grace period.
//! - `check.rs`: `verify` of a log on a store: its segments, its bytes, its cached index.
//! - `listing.rs`: the sessions under an `s3://BUCKET/PREFIX/`, found (for `list` and `search`)
//!   and described for `list`, several at once.
//! - `local_copy.rs`: a local copy of a log caught up from the segments appended since the last
//!   catch-up, checked byte for byte on any doubt (what `search` of an `s3://` address reads).

mod address;
mod check;
mod compact;
mod error;
mod layout;
mod listing;
mod local_copy;
mod remote;
mod storage;
mod transfer;

pub use address::{S3Address, S3Prefix, SCHEME, SEGMENT_PREFIX};
pub use check::{verify, verify_on};
pub use compact::{
    CLOCK_SKEW_MAX, COVERING_MAX_BYTES, CompactOptions, Compacted, Covering, DEFAULT_GRACE,
    GRACE_MIN, LISTING_AGE_MAX, RUN_SEGMENTS_MIN, SMALL_SEGMENT_BYTES, compact, compact_on,
};
pub use error::{ListingFault, ObjectStoreError, Result};
pub use layout::Segment;
pub use listing::{OPENED_AT_ONCE, describe_sessions, each_session, logs_under, session_addresses};
pub use local_copy::{
    COPY_RECORD_SUFFIX, CopyChange, CopyUpdate, copy_is_current, copy_record_path, update_copy,
};
pub use remote::{Clock, Read, Remote, RequestBounds, SegmentStore, StoreConfig, SystemClock};
pub use storage::SegmentStorage;
pub use transfer::{
    STREAM_BYTES, Transferred, default_cache_dir, open_session, open_session_on, pull, pull_on,
    push, push_on, sidecar_in_cache, verify_layout, verify_layout_on,
};
