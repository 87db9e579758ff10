//! Every bound the engine enforces, in one place so the fuzzers and tests use the same values.

/// A line longer than this is kept as an opaque record without being parsed, so memory per
/// line stays bounded. pi cannot read a line this long either (its whole file must fit in one
/// 512 MiB string).
pub const LINE_LEN_MAX: usize = 256 * 1024 * 1024;

/// Size of the blocks whose blake3 hashes make up the snapshot of the indexed prefix. A quick
/// check on open re-reads at most one block of the log.
pub const HASH_BLOCK_LEN: u64 = 64 * 1024;

/// Read size when scanning the log.
pub const SCAN_CHUNK_LEN: usize = 1024 * 1024;

/// Entries kept in memory before they are written to the index in one transaction: each commit
/// costs fsyncs and copies the B-tree pages it touches, so fewer, larger commits make appends
/// cheaper (docs/decisions/append-path.md).
pub const FLUSH_ENTRIES_MAX: usize = 32768;

/// Log bytes covered by unflushed index entries before a flush.
pub const FLUSH_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// The most bytes one read of an object on a store fetches: `push`, `pull`, `verify` and
/// compaction stream an object through pieces of this size, so their memory stays bounded
/// whatever size a listing claims.
pub const OBJECT_READ_CHUNK_BYTES: u64 = 8 * 1024 * 1024;

/// The longest one request to an object store may take, its retries included.
pub const STORE_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// The most pages one listing of an object store may have (S3 gives up to 1000 keys a
/// page): a listing that goes on is an error, not a loop.
pub const LISTING_PAGES_MAX: usize = 2000;

/// The most objects (and folders) one listing may hold.
pub const LISTED_OBJECTS_MAX: usize = 2_000_000;

/// The longest one listing of an object store may take, all its pages together.
pub const LISTING_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);
