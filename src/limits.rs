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
