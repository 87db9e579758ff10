//! Bringing the search index up to date with its logs, on every search: a log that grew is
//! caught up from where the index stopped (a cost in proportion to the appended bytes,
//! whoever appended them), a log rewritten or replaced is read again, a deleted log is
//! dropped. The documents and the catalog are committed together, in one tantivy commit.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tantivy::{IndexWriter, TantivyDocument, Term};

use super::documents::{
    DocumentSink, Edits, LineDocument, LogPosition, read_documents, read_edits,
};
use super::error::SearchError;
use super::find::FoundLog;
use super::progress::Progress;
use super::store::{Fields, LogState, SearchStore, engine};
use crate::format::time::parse_iso_ms;

/// Bytes hashed at each end of a log's indexed prefix to recognise it again.
const PREFIX_SAMPLE_BYTES: u64 = 64 << 10;
/// Searchable segments above which a search waits for the merges its commit started, so that
/// many small catch-ups do not leave a query opening ever more segments.
const SEGMENTS_BEFORE_MERGE_WAIT: usize = 12;

/// What a refresh did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefreshCounts {
    /// Logs found unchanged.
    pub fresh: u64,
    /// Logs that grew and were caught up.
    pub caught_up: u64,
    /// Logs read from their start: new, rewritten or replaced.
    pub read_whole: u64,
    /// Logs gone from the directory, dropped from the index.
    pub dropped: u64,
    /// Log bytes read and indexed.
    pub indexed_bytes: u64,
}

impl RefreshCounts {
    /// The counts as `treelog reindex --search --json` prints them for `dir`, which took
    /// `seconds`: exactly the keys `path`, `fresh`, `caughtUp`, `readWhole`, `dropped`,
    /// `bytes` and `seconds` (the Node package's `reindexSearch` answers the same object).
    pub fn to_json(&self, dir: &Path, seconds: f64) -> String {
        serde_json::json!({
            "path": dir.display().to_string(),
            "fresh": self.fresh,
            "caughtUp": self.caught_up,
            "readWhole": self.read_whole,
            "dropped": self.dropped,
            "bytes": self.indexed_bytes,
            "seconds": seconds,
        })
        .to_string()
    }
}

/// The work one log needs.
enum Plan {
    Fresh,
    /// Unchanged bytes with a new size/mtime stamp to record.
    Restamp(LogState),
    /// Index the bytes after the ones already indexed.
    Append(LogState),
    /// Index from the start (`replace`: the log's old documents are deleted first).
    Whole {
        replace: bool,
    },
}

/// Checks every log of `logs` against the catalog and updates the index; with
/// `drop_missing`, catalog logs absent from `logs` are dropped (a directory search; a search
/// of named files leaves the others alone).
pub fn refresh(
    store: &mut SearchStore,
    logs: &[FoundLog],
    drop_missing: bool,
    merge_fully: bool,
    progress: &dyn Progress,
) -> Result<RefreshCounts, SearchError> {
    let mut counts = RefreshCounts::default();
    let mut jobs = Vec::new();
    let mut restamped = Vec::new();
    let mut dropped = Vec::new();
    for log in logs {
        match plan(store, log)? {
            (Plan::Fresh, _) => counts.fresh += 1,
            (Plan::Restamp(state), _) => {
                counts.fresh += 1;
                restamped.push((log.key.clone(), state));
            }
            (plan, size) => jobs.push((log, plan, size)),
        }
    }
    if drop_missing {
        dropped.extend(missing_keys(store, logs).cloned());
    }
    // A store that is not written to disk keeps its old stamps: the documents are the same.
    if jobs.is_empty() && dropped.is_empty() && (restamped.is_empty() || !store.writable()) {
        return Ok(counts);
    }
    let planned_bytes = jobs
        .iter()
        .map(|(_, plan, size)| match plan {
            Plan::Append(state) => size - state.indexed_bytes,
            _ => *size,
        })
        .sum();
    progress.planned(planned_bytes);
    // An empty catalog means an empty index: every log is read whole.
    let bulk = store.catalog.logs.is_empty();
    let mut writer = store.writer(bulk, planned_bytes)?;
    for key in &dropped {
        writer.delete_term(Term::from_field_text(store.fields.session, key));
        store.catalog.logs.remove(key);
        counts.dropped += 1;
    }
    for (log, plan, _) in &jobs {
        if let Plan::Whole { replace: true } = plan {
            writer.delete_term(Term::from_field_text(store.fields.session, &log.key));
        }
    }
    for (key, state) in restamped {
        store.catalog.logs.insert(key, state);
    }
    let results = index_all(&writer, store.fields, &jobs, progress, &store.dir)?;
    let mut edited = false;
    for ((log, plan, _), (state, bytes, has_edits)) in jobs.iter().zip(results) {
        edited |= has_edits;
        match plan {
            Plan::Append(_) => counts.caught_up += 1,
            _ => counts.read_whole += 1,
        }
        counts.indexed_bytes += bytes;
        store.catalog.logs.insert(log.key.clone(), state);
    }
    commit(store, &mut writer)?;
    // A dropped or re-read log's old documents, like an edited entry's, are only marked
    // deleted by the commit: their text stays in the segments until they are rewritten.
    let deleted = !dropped.is_empty()
        || jobs
            .iter()
            .any(|(_, plan, _)| matches!(plan, Plan::Whole { replace: true }));
    if edited || deleted {
        purge_deleted(store, writer)?;
        return Ok(counts);
    }
    let segments = store
        .index
        .searchable_segment_ids()
        .map_or(0, |ids| ids.len());
    if merge_fully || segments > SEGMENTS_BEFORE_MERGE_WAIT {
        writer
            .wait_merging_threads()
            .map_err(|error| engine(&store.dir, error))?;
    }
    Ok(counts)
}

/// Whether a refresh of `store` against `logs` would change its documents (a log to read, to
/// catch up or to drop; a new size/mtime stamp alone does not count).
pub fn documents_change(
    store: &SearchStore,
    logs: &[FoundLog],
    drop_missing: bool,
) -> Result<bool, SearchError> {
    for log in logs {
        if let (Plan::Append(_) | Plan::Whole { .. }, _) = plan(store, log)? {
            return Ok(true);
        }
    }
    Ok(drop_missing && missing_keys(store, logs).next().is_some())
}

/// The catalog's logs that are not among `logs` (gone from the directory).
fn missing_keys<'a>(store: &'a SearchStore, logs: &[FoundLog]) -> impl Iterator<Item = &'a String> {
    let present: std::collections::HashSet<&str> =
        logs.iter().map(|log| log.key.as_str()).collect();
    store
        .catalog
        .logs
        .keys()
        .filter(move |key| !present.contains(key.as_str()))
}

/// Rewrites every segment that holds deleted documents without them, waits for every merge,
/// and deletes the files of the segments no longer in the index: a document an edit removed,
/// or a deleted or rewritten log's, leaves no term, position or norm behind in the index's files (a deleted document stays in
/// its segment until a merge, and a segment's files until a collection that no writer of the
/// refresh still pins).
fn purge_deleted(store: &SearchStore, mut writer: IndexWriter) -> Result<(), SearchError> {
    let metas = store
        .index
        .searchable_segment_metas()
        .map_err(|error| engine(&store.dir, error))?;
    let with_deletes: Vec<_> = metas
        .iter()
        .filter(|meta| meta.has_deletes())
        .map(|meta| meta.id())
        .collect();
    drop(metas);
    if !with_deletes.is_empty() {
        writer
            .merge(&with_deletes)
            .wait()
            .map_err(|error| engine(&store.dir, error))?;
    }
    writer
        .wait_merging_threads()
        .map_err(|error| engine(&store.dir, error))?;
    let collector = store.writer(false, 0)?;
    collector
        .garbage_collect_files()
        .wait()
        .map_err(|error| engine(&store.dir, error))?;
    Ok(())
}

fn commit(store: &SearchStore, writer: &mut IndexWriter) -> Result<(), SearchError> {
    let payload = serde_json::to_string(&store.catalog).map_err(|error| SearchError::Engine {
        path: store.dir.clone(),
        reason: format!("could not encode the catalog: {error}"),
    })?;
    let mut prepared = writer
        .prepare_commit()
        .map_err(|error| engine(&store.dir, error))?;
    prepared.set_payload(&payload);
    prepared
        .commit()
        .map_err(|error| engine(&store.dir, error))?;
    Ok(())
}

/// The work `log` needs and its size when found.
fn plan(store: &SearchStore, log: &FoundLog) -> Result<(Plan, u64), SearchError> {
    let size = log.size_bytes;
    let modified_ns = log.modified_ns;
    let Some(state) = store.catalog.logs.get(&log.key) else {
        return Ok((Plan::Whole { replace: false }, size));
    };
    if state.size_bytes == size && state.modified_ns == modified_ns {
        return Ok((Plan::Fresh, size));
    }
    if size < state.indexed_bytes
        || prefix_hash(&log.path, state.indexed_bytes)? != state.prefix_hash
    {
        return Ok((Plan::Whole { replace: true }, size));
    }
    let mut state = state.clone();
    state.size_bytes = size;
    state.modified_ns = modified_ns;
    if size == state.indexed_bytes {
        return Ok((Plan::Restamp(state), size));
    }
    Ok((Plan::Append(state), size))
}

/// A hash of the first `len_bytes` of a log, read at both ends (up to
/// [`PREFIX_SAMPLE_BYTES`] each) with the length: a log rewritten at either end of its
/// indexed prefix, or cut, no longer has it. A rewrite that keeps both ends and the length is
/// not seen (format-spec/search.md).
pub fn prefix_hash(path: &Path, len_bytes: u64) -> Result<String, SearchError> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).map_err(|error| SearchError::io(path, "open", error))?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&len_bytes.to_le_bytes());
    let head = len_bytes.min(PREFIX_SAMPLE_BYTES);
    let tail_start = len_bytes.saturating_sub(PREFIX_SAMPLE_BYTES).max(head);
    let mut buf = vec![0; PREFIX_SAMPLE_BYTES as usize];
    for (start, end) in [(0, head), (tail_start, len_bytes)] {
        let want = (end - start) as usize;
        file.read_exact_at(&mut buf[..want], start)
            .map_err(|error| SearchError::io(path, "read", error))?;
        hasher.update(&buf[..want]);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// A log's new state and the bytes read to reach it.
type JobResult = Result<(LogState, u64, bool), SearchError>;

/// Indexes every job on a few threads (one log at a time each), in any order; returns each
/// job's new state, the bytes it read and whether the log has context edits, in job order.
fn index_all(
    writer: &IndexWriter,
    fields: Fields,
    jobs: &[(&FoundLog, Plan, u64)],
    progress: &dyn Progress,
    dir: &Path,
) -> Result<Vec<(LogState, u64, bool)>, SearchError> {
    // Half the cores read and extract, the writer's threads (one per core) tokenize and
    // index: a byte costs the engine about twice what its extraction costs, and more reading
    // threads only wait on the writer's full queue. On 2 cores, one reading thread instead of
    // two cut a 1 GB build from ~22.4 to ~18.0 s of CPU at the same wall time.
    let threads = (std::thread::available_parallelism().map_or(1, usize::from) / 2)
        .clamp(1, 4)
        .min(jobs.len());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<JobResult>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some((log, plan, size)) = jobs.get(at) else {
                        break;
                    };
                    let result = index_log(writer, fields, log, plan, *size, progress, dir);
                    let failed = result.is_err();
                    if let Ok(mut slots) = results.lock() {
                        slots[at] = Some(result);
                    }
                    if failed {
                        // Stop handing out work: the refresh fails and commits nothing.
                        next.store(jobs.len(), Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let slots = results.into_inner().unwrap_or_default();
    let mut done = Vec::with_capacity(jobs.len());
    for slot in slots {
        match slot {
            Some(result) => done.push(result?),
            None => {
                return Err(SearchError::Engine {
                    path: dir.to_path_buf(),
                    reason: "a log was not indexed".into(),
                });
            }
        }
    }
    Ok(done)
}

fn index_log(
    writer: &IndexWriter,
    fields: Fields,
    log: &FoundLog,
    plan: &Plan,
    size: u64,
    progress: &dyn Progress,
    dir: &Path,
) -> Result<(LogState, u64, bool), SearchError> {
    let (mut from, modified_ns) = match plan {
        Plan::Append(state) => (
            LogPosition {
                offset_bytes: state.indexed_bytes,
                lines: state.lines,
                legacy_v1: Some(state.legacy_v1),
            },
            state.modified_ns,
        ),
        _ => (LogPosition::START, log.modified_ns),
    };
    // A context edit changes a line indexed before it: a catch-up that finds one reads the
    // whole log again, its old documents deleted first (format-spec/search.md §4).
    let mut edits: Edits = read_edits(&log.path, from, size)?;
    if from.offset_bytes > 0 && !edits.is_empty() {
        writer.delete_term(Term::from_field_text(fields.session, &log.key));
        from = LogPosition::START;
        edits = read_edits(&log.path, from, size)?;
    }
    let started_at = from.offset_bytes;
    // A catch-up without edits keeps the edited lines already known; a read from the start
    // finds them all again.
    let edited = match plan {
        Plan::Append(state) if from.offset_bytes > 0 => state.edited.clone(),
        _ => Vec::new(),
    };
    let mut sink = WriterSink {
        writer,
        fields,
        key: &log.key,
        progress,
        failure: None,
        edited,
    };
    let end = read_documents(&log.path, from, size, &edits, &mut sink)?;
    if let Some(error) = sink.failure {
        return Err(engine(dir, error));
    }
    let state = LogState {
        indexed_bytes: end.offset_bytes,
        lines: end.lines,
        size_bytes: size,
        modified_ns,
        legacy_v1: end.legacy_v1.unwrap_or(false),
        prefix_hash: prefix_hash(&log.path, end.offset_bytes)?,
        edited: sink.edited,
    };
    Ok((state, end.offset_bytes - started_at, !edits.is_empty()))
}

/// Adds each document of a log to the index writer.
struct WriterSink<'a> {
    writer: &'a IndexWriter,
    fields: Fields,
    key: &'a str,
    progress: &'a dyn Progress,
    /// The writer's first failure; the documents after it are dropped and the refresh fails.
    failure: Option<tantivy::TantivyError>,
    /// The log's lines that context edits remove or replace (`[line, offset]`).
    edited: Vec<[u64; 2]>,
}

impl DocumentSink for WriterSink<'_> {
    fn document(&mut self, found: LineDocument) {
        if self.failure.is_some() {
            return;
        }
        let LineDocument {
            line,
            offset_bytes,
            extracted: found,
            edited_at,
        } = found;
        let mut document = TantivyDocument::new();
        let fields = self.fields;
        document.add_text(fields.session, self.key);
        document.add_u64(fields.line, line);
        document.add_u64(fields.offset, offset_bytes);
        document.add_text(fields.id, &found.id);
        document.add_text(fields.type_name, &found.type_name);
        document.add_text(fields.role, found.role.as_deref().unwrap_or(""));
        if let Some(timestamp) = &found.timestamp {
            document.add_text(fields.timestamp, timestamp);
            if let Some(ms) = parse_iso_ms(timestamp) {
                document.add_i64(fields.timestamp_ms, ms);
            }
        }
        document.add_text(fields.text, &found.text);
        if let Some(edited_at) = edited_at {
            document.add_u64(fields.edited_at, edited_at);
        }
        if let Err(error) = self.writer.add_document(document) {
            self.failure = Some(error);
        }
    }

    fn read_bytes(&mut self, len_bytes: u64) {
        self.progress.indexed(len_bytes);
    }

    fn edited(&mut self, line: u64, offset_bytes: u64) {
        self.edited.push([line, offset_bytes]);
    }
}
