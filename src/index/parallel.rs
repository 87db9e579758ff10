//! Catch-up of a long stretch of log on several threads. A reader thread reads the log chunk
//! by chunk and hands the chunks in turn to [`LANES`] lane threads, which decode and classify
//! each chunk's lines (UTF-8, JSON validation, crc32: pure work on bytes) a few chunks ahead;
//! the calling thread takes the chunks back in order, applies the classified lines to the
//! index (tree rules, overlay, redb writes: inherently in order), hashes each chunk (blake3 of
//! the indexed prefix, in order) and flushes. Hashing stays on the calling thread: it brings
//! each chunk into that core's cache just ahead of the lines being applied (see
//! `apply_steps`), and the lanes, two on a two-core machine, already take the other core. Used
//! for rebuilds and large catch-ups; a few lines go through the plain scan in `store/catch_up.rs`.
//!
//! Classifying ahead is sound because `classify` depends on the index state only through two
//! flags, and both are settled once the first non-blank line is indexed
//! (`Store::settled_legacy_v1`): this path starts only after that.

use std::sync::mpsc;

use super::classify::classify_bytes;
use super::store::Store;
use super::tuning::Tuning;
use crate::error::{Error, Result};
use crate::format::line::Line;
use crate::limits::HASH_BLOCK_LEN;
use crate::storage::LogStorage;

/// A chunk without a line end is read again this many times larger, up to
/// `Tuning::chunk_len_max`; past that the rest of the log goes through the plain scan.
const CHUNK_GROWTH: usize = 4;

/// Chunks are classified on this many lane threads in turn (chunk `i` on lane `i % LANES`):
/// enough that the calling thread, which applies the lines in order, is the busy one, rather
/// than a single thread that reads and classifies (docs/decisions/parallel-rebuild.md).
const LANES: usize = 2;

/// Classified chunks waiting for the calling thread on each lane, besides the one each lane
/// is classifying, the one being read and the one the calling thread is applying: at most
/// six chunks are in memory at once. More would let the lanes go on through a whole flush,
/// but longer queues buy no speed for their memory (docs/decisions/parallel-rebuild.md).
const CHUNKS_AHEAD_PER_LANE: usize = 1;

/// One line of a chunk, classified; its text borrows the chunk's bytes.
struct Classified<'chunk> {
    offset_bytes: u64,
    len_bytes: u64,
    crc32: u32,
    line: Line<'chunk>,
}

type ClassifiedLines<'chunk> = Vec<Classified<'chunk>>;

/// Complete lines read from the log: `bytes` starts at `offset_bytes` and ends with `\n`.
struct Chunk {
    offset_bytes: u64,
    bytes: Vec<u8>,
}

self_cell::self_cell!(
    /// A chunk and its classified lines, which borrow its bytes: sent between threads as one
    /// value, so that the lines' text is never copied (copies cost three allocations a line,
    /// freed on the other thread: a sixth of the classifying thread's time).
    struct ClassifiedChunk {
        owner: Chunk,
        #[covariant]
        dependent: ClassifiedLines,
    }
);

/// Indexes the complete lines in `[store.indexed_len_bytes, end_bytes)` chunk by chunk, the
/// chunks read and classified ahead on other threads. Stops early (leaving the rest
/// to the caller's plain scan) at a line longer than `tuning.chunk_len_max`, at the last
/// partial line, or where no thread can be started. `after_chunk` runs after each chunk is
/// applied and hashed (flushing is the caller's).
pub(crate) fn catch_up_parallel(
    store: &mut Store,
    storage: &dyn LogStorage,
    end_bytes: u64,
    tuning: Tuning,
    mut after_chunk: impl FnMut(&mut Store) -> Result<()>,
) -> Result<()> {
    let Some(legacy_v1) = store.settled_legacy_v1() else {
        return Ok(());
    };
    let start_bytes = store.indexed_len_bytes;
    let (spares, spares_receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        let mut to_lanes = Vec::with_capacity(LANES);
        let mut from_lanes = Vec::with_capacity(LANES);
        let mut workers = Vec::with_capacity(LANES + 1);
        for _ in 0..LANES {
            // A rendezvous: the reader hands a chunk over only when the lane takes it.
            let (to_lane, raw) = mpsc::sync_channel(0);
            let (classified_sender, classified) = mpsc::sync_channel(CHUNKS_AHEAD_PER_LANE);
            let lane = std::thread::Builder::new().spawn_scoped(scope, move || {
                classify_lane(raw, classified_sender, legacy_v1)
            });
            let Ok(lane) = lane else {
                // No more threads: the plain scan indexes the rest. Returning drops the
                // senders, which stops the lanes already started.
                return Ok(());
            };
            workers.push(lane);
            to_lanes.push(to_lane);
            from_lanes.push(classified);
        }
        let reader = std::thread::Builder::new().spawn_scoped(scope, move || {
            read_ahead(
                storage,
                (start_bytes, end_bytes),
                tuning,
                to_lanes,
                spares_receiver,
            )
        });
        let Ok(reader) = reader else {
            return Ok(());
        };
        workers.push(reader);
        let applied = apply_steps(store, &from_lanes, spares, tuning, &mut after_chunk);
        // Dropping the receivers stops the lanes at their next send, and then the reader.
        drop(from_lanes);
        // Every thread is joined, not only up to the first that panicked: `thread::scope`
        // itself panics at its end if a panicked thread was left unjoined.
        let panicked = workers
            .into_iter()
            .map(|worker| worker.join())
            .fold(false, |panicked, joined| panicked | joined.is_err());
        applied?;
        if panicked {
            return Err(Error::Index {
                path: storage.path().to_path_buf(),
                reason: "a catch-up thread (reader or line classifier) panicked".into(),
            });
        }
        Ok(())
    })
}

/// The reader: reads chunks in order and hands chunk `i` to lane `i % LANES`, until the end
/// of the complete lines, a read error (handed on in the failed chunk's place) or a hang-up.
fn read_ahead(
    storage: &dyn LogStorage,
    (mut offset_bytes, end_bytes): (u64, u64),
    tuning: Tuning,
    to_lanes: Vec<mpsc::SyncSender<Result<Chunk>>>,
    spares: mpsc::Receiver<Vec<u8>>,
) {
    for to_lane in to_lanes.iter().cycle() {
        // A buffer the calling thread is done with (a fresh 4 MiB buffer costs a page fault
        // per 4 KiB page, a large part of a chunk's reading and classifying), unless it
        // was grown for a long line: kept in circulation, a few of those would hold up to
        // `chunk_len_max` each for the rest of the catch-up.
        let spare = spares
            .try_recv()
            .ok()
            .filter(|spare| spare.capacity() <= tuning.chunk_len)
            .unwrap_or_default();
        let chunk = match read_chunk(storage, offset_bytes, end_bytes, tuning, spare) {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return,
            Err(error) => {
                let _ = to_lane.send(Err(error));
                return;
            }
        };
        offset_bytes = chunk.offset_bytes + chunk.bytes.len() as u64;
        if to_lane.send(Ok(chunk)).is_err() {
            return;
        }
    }
}

/// A lane: classifies the chunks it is handed, in the order handed, until the reader stops or
/// the calling thread hangs up.
fn classify_lane(
    raw: mpsc::Receiver<Result<Chunk>>,
    classified: mpsc::SyncSender<Result<ClassifiedChunk>>,
    legacy_v1: bool,
) {
    for chunk in raw {
        let step = chunk
            .map(|chunk| ClassifiedChunk::new(chunk, |chunk| classify_chunk(chunk, legacy_v1)));
        if classified.send(step).is_err() {
            return;
        }
    }
}

/// The calling thread's part: applies each chunk's lines in order and hashes the chunk.
/// Chunk `i` comes from lane `i % LANES`; a lane that has hung up with nothing queued means
/// the reader stopped before chunk `i`, so no later chunk exists on any lane, or that the lane
/// panicked, which the caller's join turns into an error.
fn apply_steps(
    store: &mut Store,
    from_lanes: &[mpsc::Receiver<Result<ClassifiedChunk>>],
    spares: mpsc::Sender<Vec<u8>>,
    tuning: Tuning,
    after_chunk: &mut impl FnMut(&mut Store) -> Result<()>,
) -> Result<()> {
    for from_lane in from_lanes.iter().cycle() {
        let Ok(step) = from_lane.recv() else {
            return Ok(());
        };
        let mut chunk = step?;
        chunk.with_dependent_mut(|chunk, lines| {
            // The chunk is hashed a little ahead of the line being applied: hashing brings the
            // bytes into this core's cache in one streaming pass, and applying a line then
            // finds its id there instead of waiting on memory for it.
            // Each step ends at a hash block's edge where it can (`hashing.rs`: blake3 runs
            // fastest on whole blocks).
            let mut hashed = 0;
            lines.drain(..).try_for_each(|line| {
                let line_end = (line.offset_bytes - chunk.offset_bytes + line.len_bytes) as usize;
                if line_end >= hashed {
                    let ahead_bytes =
                        chunk.offset_bytes + (line_end + tuning.hash_ahead_bytes) as u64;
                    let block_end_bytes = ahead_bytes.next_multiple_of(HASH_BLOCK_LEN);
                    let until =
                        ((block_end_bytes - chunk.offset_bytes) as usize).min(chunk.bytes.len());
                    store.hasher.update(&chunk.bytes[hashed..until]);
                    hashed = until;
                }
                store.apply_classified_ahead(
                    line.offset_bytes,
                    line.len_bytes,
                    line.crc32,
                    line.line,
                )
            })?;
            store.hasher.update(&chunk.bytes[hashed..]);
            Ok::<_, Error>(())
        })?;
        after_chunk(store)?;
        // The reader may have stopped already; then the buffer is simply freed.
        let _ = spares.send(chunk.into_owner().bytes);
    }
    Ok(())
}

/// Reads whole lines from `offset_bytes` into `bytes` (a spare buffer): `None` at the end of
/// the complete lines, or when one line is longer than `tuning.chunk_len_max` (the plain scan
/// streams such lines).
fn read_chunk(
    storage: &dyn LogStorage,
    offset_bytes: u64,
    end_bytes: u64,
    tuning: Tuning,
    mut bytes: Vec<u8>,
) -> Result<Option<Chunk>> {
    let mut want = tuning.chunk_len;
    // Lines of a chunk are classified whole: no chunk may hold a line the plain scan would
    // refuse to parse (LINE_LEN_MAX); longer ones are left to it.
    let chunk_len_max = tuning.chunk_len_max.min(crate::limits::LINE_LEN_MAX);
    loop {
        let len = (end_bytes.saturating_sub(offset_bytes)).min(want as u64) as usize;
        if len == 0 {
            return Ok(None);
        }
        // Only grown, never cleared: zeroing 4 MiB per chunk that the read then overwrites
        // would cost this thread time for nothing.
        bytes.resize(len.max(bytes.len()), 0);
        bytes.truncate(len);
        match crate::storage::read_exact_at(storage, offset_bytes, &mut bytes) {
            Ok(()) => {}
            // The log shrank since its length was read: stop here, as the plain scan does at
            // the end of the file (the next open sees the change).
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(error) => return Err(Error::io(storage.path(), "read the log", error)),
        }
        if let Some(last_newline) = memchr::memrchr(b'\n', &bytes) {
            bytes.truncate(last_newline + 1);
            return Ok(Some(Chunk {
                offset_bytes,
                bytes,
            }));
        }
        if len < want || want >= chunk_len_max {
            // The log ends inside this line, or the line is too long to read whole here.
            return Ok(None);
        }
        want = (want * CHUNK_GROWTH).min(chunk_len_max);
    }
}

/// Tests make a lane panic on a chunk holding this text, to check that a panic becomes an
/// error (`classify` itself never panics on any bytes: fuzzed).
#[cfg(test)]
const TEST_PANIC_MARKER: &[u8] = b"treelog-test-lane-panic";

fn classify_chunk(chunk: &Chunk, legacy_v1: bool) -> ClassifiedLines<'_> {
    #[cfg(test)]
    if memchr::memmem::find(&chunk.bytes, TEST_PANIC_MARKER).is_some() {
        panic!("injected lane panic at byte {}", chunk.offset_bytes);
    }
    let mut out = Vec::with_capacity(chunk.bytes.len() / 512);
    let mut line_start = 0;
    for line_end in memchr::memchr_iter(b'\n', &chunk.bytes) {
        let bytes = &chunk.bytes[line_start..line_end];
        out.push(Classified {
            offset_bytes: chunk.offset_bytes + line_start as u64,
            len_bytes: bytes.len() as u64,
            crc32: crc32fast::hash(bytes),
            line: classify_bytes(bytes, legacy_v1, false),
        });
        line_start = line_end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;
    use proptest::prelude::*;

    /// Everything the store knows after indexing `log`, with the given tuning.
    fn index_of(log: &[u8], tuning: Tuning) -> String {
        let storage = MemoryStorage::new("/t/log.jsonl", log.to_vec());
        let mut store = Store::in_memory(storage.path());
        store.parallel = tuning;
        store
            .catch_up(&storage)
            .expect("catch-up of an in-memory log");
        crate::index::store::tests::dump(&store)
    }

    fn sequential() -> Tuning {
        Tuning {
            min_bytes: u64::MAX,
            ..Tuning::default()
        }
    }

    /// Tiny chunks: many chunks, lines longer than a chunk (grown reads) and longer than the
    /// largest chunk (left to the plain scan).
    fn tiny() -> Tuning {
        Tuning {
            min_bytes: 0,
            chunk_len: 300,
            chunk_len_max: 2000,
            hash_ahead_bytes: 70,
        }
    }

    /// Line templates: canonical entries of each shape, and every kind of bad line.
    fn line(template: usize, n: usize) -> Vec<u8> {
        let parent = if n == 0 {
            "null".to_string()
        } else {
            format!("\"e{}\"", n / 2 + n % 3)
        };
        match template % 13 {
            12 => br#"{"type":"message","timestamp":"t","message":{"role":"user"}}"#.to_vec(),
            0 => format!(r#"{{"type":"message","id":"e{n}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"assistant","content":"x"}}}}"#).into_bytes(),
            1 => format!(r#"{{"type":"message","id":"e{n}","timestamp":"t","message":{{"role":"user","content":"{}"}}}}"#, "long ".repeat(n % 700)).into_bytes(),
            2 => format!(r#"{{"type":"label","id":"e{n}","parentId":{parent},"targetId":"e{}","label":"l{n}"}}"#, n / 3).into_bytes(),
            3 => format!(r#"{{"type":"compaction","id":"e{n}","parentId":{parent},"summary":"s","firstKeptEntryId":"e1"}}"#).into_bytes(),
            4 => b"".to_vec(),
            5 => b"{\"type\":\"message\",\"id\":".to_vec(),
            6 => vec![b'{', 0xff, 0xfe, b'}'],
            7 => format!(r#"{{"type":"leaf","id":"l{n}","targetId":"e{}"}}"#, n / 4).into_bytes(),
            8 => format!(r#"{{"type":"message","id":"e{n}","parentId":{parent},"appendMode":"side","message":{{}}}}"#).into_bytes(),
            9 => format!(r#"{{"type":"session_info","id":"e{n}","parentId":{parent},"name":"n\u00e9{n}"}}"#).into_bytes(),
            10 => format!(r#"{{"type":"session","id":"again{n}","version":3}}"#).into_bytes(),
            _ => format!(r#"{{"type":"custom","id":"e{n}","parentId":{parent},"customType":"c","data":[{}1]}}"#, "[".repeat(n % 5)).into_bytes(),
        }
    }

    /// A v3 log of `count` entries of the first four templates (message, long message, label,
    /// compaction).
    fn entries_log(count: usize) -> Vec<u8> {
        let templates: Vec<usize> = (0..count).map(|n| n % 4).collect();
        log_of(
            r#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#,
            &templates,
            false,
        )
    }

    fn log_of(header: &str, templates: &[usize], torn_tail: bool) -> Vec<u8> {
        let mut log = header.as_bytes().to_vec();
        log.push(b'\n');
        for (n, template) in templates.iter().enumerate() {
            log.extend_from_slice(&line(*template, n));
            log.push(b'\n');
        }
        if torn_tail {
            log.extend_from_slice(br#"{"type":"message","id":"torn""#);
        }
        log
    }

    /// A log whose reads fail from `fail_from_bytes` on.
    struct FailingReads {
        log: MemoryStorage,
        fail_from_bytes: u64,
        /// Only the first read past `fail_from_bytes` fails: a reader that dropped its error
        /// would leave the rest to the plain scan, which would then succeed.
        failed: std::sync::atomic::AtomicBool,
    }

    impl LogStorage for FailingReads {
        fn path(&self) -> &std::path::Path {
            self.log.path()
        }
        fn identity(&self) -> std::io::Result<crate::storage::FileIdentity> {
            self.log.identity()
        }
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
            if offset + buf.len() as u64 > self.fail_from_bytes
                && !self.failed.swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                return Err(std::io::Error::other("injected read failure"));
            }
            self.log.read_at(offset, buf)
        }
        fn append(&mut self, bytes: &[u8]) -> std::io::Result<u64> {
            self.log.append(bytes)
        }
        fn sync(&mut self) -> std::io::Result<()> {
            self.log.sync()
        }
        fn lock(&mut self) -> std::io::Result<()> {
            self.log.lock()
        }
        fn unlock(&mut self) -> std::io::Result<()> {
            self.log.unlock()
        }
    }

    /// A read that fails once on the reader fails the catch-up with the log's path and the
    /// read, and leaves the store at the end of the last chunk read before it, hashed: nothing
    /// past the failure is indexed, nothing before it is lost (every chunk read before it is
    /// applied), and a second catch-up indexes the rest as one from scratch would.
    #[test]
    fn reader_read_error_is_the_callers() {
        let log = entries_log(200);
        let fail_from_bytes = log.len() as u64 / 2;
        let storage = FailingReads {
            log: MemoryStorage::new("/t/log.jsonl", log.clone()),
            fail_from_bytes,
            failed: std::sync::atomic::AtomicBool::new(false),
        };
        let mut store = Store::in_memory(storage.path());
        store.parallel = Tuning {
            min_bytes: 0,
            chunk_len: 1000,
            chunk_len_max: 4000,
            hash_ahead_bytes: 100,
        };
        let error = store.catch_up(&storage).expect_err("reads fail half way");
        let message = error.to_string();
        assert!(
            message.contains("/t/log.jsonl") && message.contains("injected read failure"),
            "{message}"
        );
        let indexed = store.indexed_len_bytes;
        assert!(
            indexed <= fail_from_bytes && indexed + 1000 > fail_from_bytes,
            "{indexed} of {fail_from_bytes}"
        );
        assert_eq!(log[indexed as usize - 1], b'\n', "stopped at a line end");
        assert_eq!(
            store.hasher.hashed_len_bytes(),
            indexed,
            "hashed as far as indexed"
        );
        // The same prefix indexed without faults gives the same index.
        let prefix = MemoryStorage::new("/t/log.jsonl", log[..indexed as usize].to_vec());
        let mut expected = Store::in_memory(prefix.path());
        expected.catch_up(&prefix).expect("catch-up of the prefix");
        assert_eq!(
            crate::index::store::tests::dump(&store),
            crate::index::store::tests::dump(&expected)
        );
        store.catch_up(&storage).expect("the read succeeds again");
        assert_eq!(
            crate::index::store::tests::dump(&store),
            index_of(&log, sequential())
        );
    }

    /// A line that fails to apply on the threaded path (its parent names a record that is
    /// missing) stops the store: the catch-up fails, and so does every later one, instead of
    /// going on after the failed line as if it were indexed.
    #[test]
    fn failed_apply_stops_the_store() {
        let mut log = entries_log(100);
        log.extend_from_slice(
            br#"{"type":"message","id":"f0000001","parentId":"0badc0de","message":{"role":"user"}}"#,
        );
        log.push(b'\n');
        for n in 100..200 {
            log.extend_from_slice(&line(n % 4, n));
            log.push(b'\n');
        }
        let storage = MemoryStorage::new("/t/log.jsonl", log);
        let mut store = Store::in_memory(storage.path());
        store.parallel = tiny();
        // The overlay files the parent's id under a record it does not hold.
        store
            .overlay
            .ids
            .insert(crate::format::id_index::id_key("0badc0de"), 1_000_000);
        let first = store.catch_up(&storage).expect_err("the parent is missing");
        assert!(
            first.to_string().contains("record 1000000 is missing"),
            "{first}"
        );
        let indexed = store.indexed_len_bytes;
        let again = store.catch_up(&storage).expect_err("still stopped");
        assert!(again.to_string().contains("indexing stopped"), "{again}");
        assert_eq!(
            store.indexed_len_bytes, indexed,
            "nothing indexed after the failure"
        );
    }

    /// A panic on a lane thread fails the catch-up with an error, whether one lane panics or
    /// both (regression: the join stopped at the first panicked thread, and `thread::scope`
    /// then panicked for the unjoined one, so the caller got a panic instead of an error).
    #[test]
    fn lane_panics_are_errors() {
        for every in [150, 1] {
            let mut log = entries_log(10);
            for n in 0..200 {
                if n % every == 0 {
                    log.extend_from_slice(
                        format!(r#"{{"type":"custom","id":"p{n}","customType":"treelog-test-lane-panic"}}"#)
                            .as_bytes(),
                    );
                } else {
                    log.extend_from_slice(&line(n % 4, n + 10));
                }
                log.push(b'\n');
            }
            let storage = MemoryStorage::new("/t/log.jsonl", log);
            let mut store = Store::in_memory(storage.path());
            store.parallel = tiny();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store.catch_up(&storage).map(drop)
            }));
            let error = caught
                .unwrap_or_else(|_| panic!("a lane panic escaped as a panic (every {every})"))
                .expect_err("a lane panicked");
            assert!(error.to_string().contains("panicked"), "{error}");
        }
    }

    /// Chunks of several hash blocks, whose hashing steps end at block edges inside them, give
    /// the plain scan's block and tail hashes, however far hashing runs ahead.
    #[test]
    fn block_edges_inside_chunks_same_as_sequential() {
        let log = entries_log(3000);
        assert!(
            log.len() > 8 * HASH_BLOCK_LEN as usize,
            "{} bytes",
            log.len()
        );
        let expected = index_of(&log, sequential());
        for hash_ahead_bytes in [0, 1000, 100_000] {
            let tuning = Tuning {
                min_bytes: 0,
                chunk_len: 300_000,
                chunk_len_max: 1_200_000,
                hash_ahead_bytes,
            };
            assert_eq!(index_of(&log, tuning), expected, "{hash_ahead_bytes}");
        }
    }

    /// The bundled pi transcript indexes the same on the threaded path as on the plain scan.
    #[test]
    fn pi_sample_same_as_sequential() {
        let log = include_bytes!("../../tests/data/pi-sample-200.jsonl");
        assert_eq!(index_of(log, tiny()), index_of(log, sequential()));
    }

    proptest! {
        /// Any mixture of entries, bad lines, long lines, v1 or v3 headers and torn tails
        /// indexes exactly as the plain scan indexes it, however it is cut into chunks.
        #[test]
        fn same_as_sequential(
            templates in proptest::collection::vec(0usize..13, 0..120),
            v1 in any::<bool>(),
            headerless in any::<bool>(),
            torn_tail in any::<bool>(),
            chunk_len in 50usize..900,
            hash_ahead_bytes in 0usize..400,
        ) {
            let header = match (headerless, v1) {
                (true, _) => "",
                (false, true) => r#"{"type":"session","id":"s1","timestamp":"t"}"#,
                (false, false) => r#"{"type":"session","version":3,"id":"s3","cwd":"/w"}"#,
            };
            let log = log_of(header, &templates, torn_tail);
            let tuning = Tuning {
                min_bytes: 0,
                chunk_len,
                chunk_len_max: chunk_len * 5,
                hash_ahead_bytes,
            };
            prop_assert_eq!(index_of(&log, tuning), index_of(&log, sequential()));
        }
    }
}
