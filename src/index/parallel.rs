//! Catch-up of a long stretch of log on two threads: while the calling thread applies the
//! lines of one chunk to the index (tree rules, overlay, redb writes: inherently in order),
//! a worker decodes and classifies the lines of the next chunk (UTF-8, JSON validation, crc32:
//! pure work on bytes) and then hashes the chunk being applied (blake3 of the indexed prefix,
//! in order: the previous chunk was hashed by the previous worker). Used for rebuilds and large
//! catch-ups; a few lines go through the plain scan in `store.rs`.
//!
//! Classifying ahead is sound because `classify` depends on the index state only through two
//! flags, and both are settled once the first non-blank line is indexed
//! (`Store::settled_legacy_v1`): this path starts only after that.

use super::apply::{classify_bytes, owned_line};
use super::store::Store;
use crate::error::{Error, Result};
use crate::format::line::Line;
use crate::storage::LogStorage;

/// A chunk without a line end is read again this many times larger, up to
/// `Tuning::chunk_len_max`; past that the rest of the log goes through the plain scan.
const CHUNK_GROWTH: usize = 4;

/// When and how a catch-up runs on two threads (tests shrink the sizes to exercise every path
/// on small logs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tuning {
    /// Below this many bytes to read, a catch-up is not worth a second thread.
    pub min_bytes: u64,
    /// Bytes read and classified per step.
    pub chunk_len: usize,
    pub chunk_len_max: usize,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            min_bytes: 16 * 1024 * 1024,
            chunk_len: 4 * 1024 * 1024,
            chunk_len_max: 64 * 1024 * 1024,
        }
    }
}

/// One line of a chunk, classified.
struct Classified {
    offset_bytes: u64,
    len_bytes: u64,
    crc32: u32,
    line: Line<'static>,
}

/// Complete lines read from the log: `bytes` starts at `offset_bytes` and ends with `\n`.
struct Chunk {
    offset_bytes: u64,
    bytes: Vec<u8>,
}

/// Indexes the complete lines in `[store.indexed_len_bytes, end_bytes)` chunk by chunk, the
/// next chunk classified on a worker thread while this one is applied. Stops early (leaving
/// the rest to the caller's plain scan) at a line longer than `tuning.chunk_len_max` or at the last
/// partial line. `after_chunk` runs after each chunk is applied and hashed (flushing is the
/// caller's).
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
    let Some(first) = read_chunk(
        storage,
        store.indexed_len_bytes,
        end_bytes,
        tuning,
        Vec::new(),
    )?
    else {
        return Ok(());
    };
    // The buffer of the chunk last applied, read into again: a new 4 MiB buffer per chunk
    // costs a page fault per 4 KiB page, which was a sixth of this thread's time.
    let mut spare = Vec::new();
    let mut current = (classify_chunk(&first, legacy_v1), first);
    loop {
        let (lines, chunk) = current;
        let next_offset = chunk.offset_bytes + chunk.bytes.len() as u64;
        // Reading is done here, not on the worker: a read from the page cache is a small part
        // of the work, and the worker has the larger share already.
        let next = read_chunk(
            storage,
            next_offset,
            end_bytes,
            tuning,
            std::mem::take(&mut spare),
        )?;
        // The worker hashes a copy of the hasher, installed once both threads are done: a
        // failed apply or a panicked worker leaves the store's hasher as it was.
        let mut hasher = store.hasher.clone();
        let work = |hasher: &mut crate::index::hashing::PrefixHasher| {
            let classified = next.as_ref().map(|chunk| classify_chunk(chunk, legacy_v1));
            hasher.update(&chunk.bytes);
            classified
        };
        let (applied, worker) = std::thread::scope(|scope| {
            let worker = std::thread::Builder::new().spawn_scoped(scope, || work(&mut hasher));
            let applied = apply_chunk(store, lines);
            (applied, worker.map(|worker| worker.join()))
        });
        // Where no thread could be started, this thread does the worker's part.
        let worker = worker.unwrap_or_else(|_| Ok(work(&mut hasher)));
        applied?;
        let Ok(classified) = worker else {
            store.hasher.update(&chunk.bytes);
            after_chunk(store)?;
            return Err(Error::Index {
                path: storage.path().to_path_buf(),
                reason: "the line classifier thread panicked".into(),
            });
        };
        store.hasher = hasher;
        after_chunk(store)?;
        spare = chunk.bytes;
        match (next, classified) {
            (Some(next), Some(lines)) => current = (lines, next),
            _ => return Ok(()),
        }
    }
}

fn apply_chunk(store: &mut Store, lines: Vec<Classified>) -> Result<()> {
    for line in lines {
        store.apply_classified_ahead(line.offset_bytes, line.len_bytes, line.crc32, line.line)?;
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
        bytes.clear();
        bytes.resize(len, 0);
        match crate::storage::read_exact_at(storage, offset_bytes, &mut bytes) {
            Ok(()) => {}
            // The log shrank since its length was read: stop here, as the plain scan does at
            // the end of the file (the next open sees the change).
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(error) => return Err(Error::io(storage.path(), "read", error)),
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

fn classify_chunk(chunk: &Chunk, legacy_v1: bool) -> Vec<Classified> {
    let mut out = Vec::with_capacity(chunk.bytes.len() / 512);
    let mut line_start = 0;
    for line_end in memchr::memchr_iter(b'\n', &chunk.bytes) {
        let bytes = &chunk.bytes[line_start..line_end];
        out.push(Classified {
            offset_bytes: chunk.offset_bytes + line_start as u64,
            len_bytes: bytes.len() as u64,
            crc32: crc32fast::hash(bytes),
            line: owned_line(classify_bytes(bytes, legacy_v1, false)),
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

    /// The bundled pi transcript indexes the same on two threads as on one.
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
        ) {
            let header = match (headerless, v1) {
                (true, _) => "",
                (false, true) => r#"{"type":"session","id":"s1","timestamp":"t"}"#,
                (false, false) => r#"{"type":"session","version":3,"id":"s3","cwd":"/w"}"#,
            };
            let log = log_of(header, &templates, torn_tail);
            let tuning = Tuning { min_bytes: 0, chunk_len, chunk_len_max: chunk_len * 5 };
            prop_assert_eq!(index_of(&log, tuning), index_of(&log, sequential()));
        }
    }
}
