//! The SQLite FTS5 side, built for the same job as `treelog::search`: one row per document of
//! [`treelog::search::read_documents`], a catalog of the logs to catch up a grown log from
//! where the index stopped, and a query that checks every log first.
//!
//! Schema (in `DIR/.treelog-fts5/index.sqlite`, WAL, `synchronous=NORMAL`):
//! - `logs`: one row per log: its key, the bytes, lines and version it was read to, and the
//!   size and mtime it had (unchanged, it is not read).
//! - `entries`: what a hit reports besides the text, keyed by `doc` = log id << 32 | line.
//! - `texts`: a contentless FTS5 table (`content=''`, `contentless_delete=1` so that a
//!   rewritten or deleted log's rows can be deleted without their text), tokenizer `unicode61
//!   remove_diacritics 2`, rowid = `doc`. Like tantivy's index it does not store the text:
//!   snippets are read back from the logs (so `snippet()`/`highlight()` are not used; an
//!   external-content table would allow them at the price of storing the text once more).
//!
//! A build inserts every document in one transaction (extraction on a second thread), then
//! merges the FTS5 b-trees (`optimize`) and checkpoints the WAL, as tantivy's build waits for
//! its merges. Not done, unlike tantivy's refresh: the hash of a grown log's indexed prefix
//! (to see a rewrite that kept or grew the length) and the lock file.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::UNIX_EPOCH;

use rusqlite::{Connection, Transaction, params};
use treelog::search::{
    DocumentSink, FoundLog, LineDocument, LogPosition, ParsedQuery, extract, logs_under,
    read_documents,
};

use crate::{CompareError, Found};

/// The index directory's name inside the searched directory.
pub const INDEX_DIR_NAME: &str = ".treelog-fts5";
const DATABASE_FILE_NAME: &str = "index.sqlite";
/// A document's rowid is its log's id shifted by this many bits, plus its line number.
const LINE_BITS: u32 = 32;
/// Documents sent from the extraction thread to the SQLite thread at a time.
const BATCH_DOCUMENTS: usize = 1024;
/// Characters of text around the first matched word in a snippet (as tantivy's side).
const SNIPPET_CHARS: usize = 160;
/// A line longer than this is not read back for a snippet.
const SNIPPET_LINE_BYTES_MAX: usize = 64 << 20;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS logs(
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    indexed_bytes INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    legacy_v1 INTEGER,
    size_bytes INTEGER NOT NULL,
    modified_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS entries(
    doc INTEGER PRIMARY KEY,
    offset_bytes INTEGER NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    role TEXT,
    timestamp TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(
    text,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
";

fn sqlite(path: &Path) -> impl Fn(rusqlite::Error) -> CompareError + '_ {
    move |source| CompareError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

fn database_path(dir: &Path) -> PathBuf {
    dir.join(INDEX_DIR_NAME).join(DATABASE_FILE_NAME)
}

fn open(dir: &Path) -> Result<Connection, CompareError> {
    let index_dir = dir.join(INDEX_DIR_NAME);
    std::fs::create_dir_all(&index_dir)
        .map_err(|error| CompareError::io(&index_dir, "create directory", error))?;
    let path = database_path(dir);
    let connection = Connection::open(&path).map_err(sqlite(&path))?;
    connection
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA cache_size = -65536; PRAGMA busy_timeout = 10000;",
        )
        .map_err(sqlite(&path))?;
    connection.execute_batch(SCHEMA).map_err(sqlite(&path))?;
    Ok(connection)
}

/// Indexes every log under `dir` from scratch.
pub fn build(dir: &Path) -> Result<(), CompareError> {
    let index_dir = dir.join(INDEX_DIR_NAME);
    match std::fs::remove_dir_all(&index_dir) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(CompareError::io(&index_dir, "remove directory", error));
        }
        _ => {}
    }
    let mut connection = open(dir)?;
    let path = database_path(dir);
    let logs = logs_under(dir)?;
    let work: Vec<(FoundLog, Option<LogRow>)> = logs.into_iter().map(|log| (log, None)).collect();
    let transaction = connection.transaction().map_err(sqlite(&path))?;
    index_logs(&transaction, &path, &work)?;
    transaction.commit().map_err(sqlite(&path))?;
    connection
        .execute_batch(
            "INSERT INTO texts(texts) VALUES('optimize'); PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .map_err(sqlite(&path))?;
    Ok(())
}

/// A log as the catalog knows it.
#[derive(Clone, Debug)]
struct LogRow {
    id: i64,
    position: LogPosition,
    size_bytes: u64,
    modified_ns: i64,
}

/// What the extraction thread sends: documents of the log at an index of the work list, then
/// the log's end position, size and mtime once it is read whole.
enum Message {
    Documents(usize, Vec<LineDocument>),
    Done(usize, LogPosition, u64, i64),
    Failed(CompareError),
}

struct BatchSender<'a> {
    log_index: usize,
    batch: Vec<LineDocument>,
    send: &'a SyncSender<Message>,
}

impl DocumentSink for BatchSender<'_> {
    fn document(&mut self, document: LineDocument) {
        self.batch.push(document);
        if self.batch.len() >= BATCH_DOCUMENTS {
            let batch = std::mem::take(&mut self.batch);
            // A closed channel means the SQLite side failed: its error is reported.
            let _ = self.send.send(Message::Documents(self.log_index, batch));
        }
    }
}

fn stamp(path: &Path) -> Result<(u64, i64), CompareError> {
    let metadata =
        std::fs::metadata(path).map_err(|error| CompareError::io(path, "read metadata", error))?;
    let modified_ns = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_nanos() as i64);
    Ok((metadata.len(), modified_ns))
}

/// Reads the documents of each log of `work` (from its catalog row's position when it has
/// one, else from the start) on a second thread and inserts them here, then records where
/// each log's read stopped.
fn index_logs(
    transaction: &Transaction<'_>,
    path: &Path,
    work: &[(FoundLog, Option<LogRow>)],
) -> Result<(), CompareError> {
    let (send, receive) = sync_channel::<Message>(8);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for (log_index, (log, row)) in work.iter().enumerate() {
                let from = row.as_ref().map_or(LogPosition::START, |row| row.position);
                let read = stamp(&log.path).and_then(|(size, modified_ns)| {
                    let mut sender = BatchSender {
                        log_index,
                        batch: Vec::with_capacity(BATCH_DOCUMENTS),
                        send: &send,
                    };
                    let end = read_documents(&log.path, from, size, &mut sender)?;
                    let _ = send.send(Message::Documents(log_index, sender.batch));
                    Ok(Message::Done(log_index, end, size, modified_ns))
                });
                let failed = read.is_err();
                let message = read.unwrap_or_else(Message::Failed);
                if send.send(message).is_err() || failed {
                    return;
                }
            }
        });
        insert_all(transaction, path, work, receive.iter())
    })
}

fn insert_all(
    transaction: &Transaction<'_>,
    path: &Path,
    work: &[(FoundLog, Option<LogRow>)],
    messages: impl Iterator<Item = Message>,
) -> Result<(), CompareError> {
    let error = sqlite(path);
    let mut ids: Vec<Option<i64>> = work
        .iter()
        .map(|(_, row)| row.as_ref().map(|row| row.id))
        .collect();
    let mut new_log = transaction
        .prepare("INSERT INTO logs(key, indexed_bytes, lines, size_bytes, modified_ns) VALUES (?1, 0, 0, 0, 0)")
        .map_err(&error)?;
    let mut entry = transaction
        .prepare(
            "INSERT INTO entries(doc, offset_bytes, id, type, role, timestamp) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(&error)?;
    let mut text = transaction
        .prepare("INSERT INTO texts(rowid, text) VALUES (?1, ?2)")
        .map_err(&error)?;
    let mut done = transaction
        .prepare(
            "UPDATE logs SET indexed_bytes = ?2, lines = ?3, legacy_v1 = ?4, size_bytes = ?5, \
             modified_ns = ?6 WHERE id = ?1",
        )
        .map_err(&error)?;
    let mut log_id = |log_index: usize| -> Result<i64, CompareError> {
        if let Some(id) = ids[log_index] {
            return Ok(id);
        }
        new_log
            .execute(params![work[log_index].0.key])
            .map_err(&error)?;
        let id = transaction.last_insert_rowid();
        ids[log_index] = Some(id);
        Ok(id)
    };
    for message in messages {
        match message {
            Message::Documents(log_index, documents) => {
                let id = log_id(log_index)?;
                for document in documents {
                    let doc = (id << LINE_BITS) | document.line as i64;
                    let found = &document.extracted;
                    entry
                        .execute(params![
                            doc,
                            document.offset_bytes as i64,
                            found.id,
                            found.type_name,
                            found.role,
                            found.timestamp
                        ])
                        .map_err(&error)?;
                    text.execute(params![doc, found.text]).map_err(&error)?;
                }
            }
            Message::Done(log_index, end, size, modified_ns) => {
                let id = log_id(log_index)?;
                done.execute(params![
                    id,
                    end.offset_bytes as i64,
                    end.lines as i64,
                    end.legacy_v1,
                    size as i64,
                    modified_ns
                ])
                .map_err(&error)?;
            }
            Message::Failed(failure) => return Err(failure),
        }
    }
    Ok(())
}

/// Deletes the documents of the log `id` (its text rows through contentless delete).
fn delete_documents(
    transaction: &Transaction<'_>,
    path: &Path,
    id: i64,
) -> Result<(), CompareError> {
    let first = id << LINE_BITS;
    let last = first | ((1 << LINE_BITS) - 1);
    transaction
        .execute(
            "DELETE FROM texts WHERE rowid IN \
             (SELECT doc FROM entries WHERE doc BETWEEN ?1 AND ?2)",
            params![first, last],
        )
        .and_then(|_| {
            transaction.execute(
                "DELETE FROM entries WHERE doc BETWEEN ?1 AND ?2",
                params![first, last],
            )
        })
        .map_err(sqlite(path))?;
    Ok(())
}

/// Checks every log under `dir` against the catalog and brings the index up to date: a grown
/// log is read from where its read stopped, a shrunk one from its start, a gone one dropped.
fn refresh(connection: &mut Connection, dir: &Path) -> Result<(), CompareError> {
    let path = database_path(dir);
    let logs = logs_under(dir)?;
    let mut known: HashMap<String, LogRow> = HashMap::new();
    {
        let mut rows = connection
            .prepare("SELECT id, key, indexed_bytes, lines, legacy_v1, size_bytes, modified_ns FROM logs")
            .map_err(sqlite(&path))?;
        let mapped = rows
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(1)?,
                    LogRow {
                        id: row.get(0)?,
                        position: LogPosition {
                            offset_bytes: row.get::<_, i64>(2)? as u64,
                            lines: row.get::<_, i64>(3)? as u64,
                            legacy_v1: row.get(4)?,
                        },
                        size_bytes: row.get::<_, i64>(5)? as u64,
                        modified_ns: row.get(6)?,
                    },
                ))
            })
            .map_err(sqlite(&path))?;
        for row in mapped {
            let (key, row) = row.map_err(sqlite(&path))?;
            known.insert(key, row);
        }
    }
    let mut work = Vec::new();
    let mut whole = Vec::new();
    for log in logs {
        let (size, modified_ns) = stamp(&log.path)?;
        match known.remove(&log.key) {
            Some(row) if row.size_bytes == size && row.modified_ns == modified_ns => {}
            Some(row) if size >= row.position.offset_bytes => work.push((log, Some(row))),
            Some(row) => {
                whole.push(row.id);
                let restart = LogRow {
                    position: LogPosition::START,
                    ..row
                };
                work.push((log, Some(restart)));
            }
            None => work.push((log, None)),
        }
    }
    if work.is_empty() && known.is_empty() {
        return Ok(());
    }
    let transaction = connection.transaction().map_err(sqlite(&path))?;
    for id in whole.iter().chain(known.values().map(|row| &row.id)) {
        delete_documents(&transaction, &path, *id)?;
    }
    for row in known.values() {
        transaction
            .execute("DELETE FROM logs WHERE id = ?1", params![row.id])
            .map_err(sqlite(&path))?;
    }
    index_logs(&transaction, &path, &work)?;
    transaction.commit().map_err(sqlite(&path))
}

/// The FTS5 query for `parsed`: each clause a quoted phrase (its last token a prefix when
/// asked), the kept ones ANDed, the excluded ones cut with NOT.
pub fn match_expression(parsed: &ParsedQuery) -> String {
    let phrase = |tokens: &[String], prefix: bool| {
        let quoted = tokens.join(" ").replace('"', "\"\"");
        format!("\"{quoted}\"{}", if prefix { "*" } else { "" })
    };
    let kept: Vec<String> = parsed
        .clauses
        .iter()
        .filter(|clause| !clause.exclude)
        .map(|clause| phrase(&clause.tokens, clause.prefix))
        .collect();
    let mut expression = kept.join(" AND ");
    for clause in parsed.clauses.iter().filter(|clause| clause.exclude) {
        expression = format!(
            "({expression}) NOT {}",
            phrase(&clause.tokens, clause.prefix)
        );
    }
    expression
}

/// Brings the index of `dir` up to date, then returns the best `limit` documents for
/// `parsed` by BM25, each with a snippet read back from its log.
pub fn search(dir: &Path, parsed: &ParsedQuery, limit: usize) -> Result<Vec<Found>, CompareError> {
    let path = database_path(dir);
    let mut connection = open(dir)?;
    refresh(&mut connection, dir)?;
    let mut statement = connection
        .prepare(
            "SELECT t.rowid, -t.rank, l.key, e.offset_bytes, coalesce(l.legacy_v1, 0) \
             FROM (SELECT rowid, rank FROM texts WHERE texts MATCH ?1 ORDER BY rank LIMIT ?2) t \
             JOIN entries e ON e.doc = t.rowid JOIN logs l ON l.id = t.rowid >> 32 \
             ORDER BY t.rank",
        )
        .map_err(sqlite(&path))?;
    let rows = statement
        .query_map(params![match_expression(parsed), limit as i64], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, f64>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, i64>(3)?,
                row.get::<_, bool>(4)?,
            ))
        })
        .map_err(sqlite(&path))?;
    let first_word = parsed
        .clauses
        .iter()
        .find(|clause| !clause.exclude)
        .and_then(|clause| clause.tokens.first().cloned())
        .unwrap_or_default();
    let mut found = Vec::new();
    for row in rows {
        let (doc, score, key, offset_bytes, legacy_v1) = row.map_err(sqlite(&path))?;
        let log = key
            .split('/')
            .fold(dir.to_path_buf(), |at, part| at.join(part));
        found.push(Found {
            snippet: snippet_at(&log, offset_bytes as u64, legacy_v1, &first_word),
            key,
            line: (doc & ((1 << LINE_BITS) - 1)) as u64,
            score,
        });
    }
    Ok(found)
}

/// Up to [`SNIPPET_CHARS`] characters of the entry's text starting a little before the first
/// place its lower-cased text holds `word`; empty when the line cannot be read back.
fn snippet_at(log: &Path, offset_bytes: u64, legacy_v1: bool, word: &str) -> String {
    let Some(line) = read_line(log, offset_bytes) else {
        return String::new();
    };
    let Some(found) = extract(&line, legacy_v1) else {
        return String::new();
    };
    let lower = found.text.to_lowercase();
    // Lower-casing can change byte lengths; count characters to map back.
    let start_chars = lower.find(word).map_or(0, |at| {
        lower[..at]
            .chars()
            .count()
            .saturating_sub(SNIPPET_CHARS / 4)
    });
    found
        .text
        .chars()
        .skip(start_chars)
        .take(SNIPPET_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The line starting at `offset_bytes` of `log`, without its `\n`.
fn read_line(log: &Path, offset_bytes: u64) -> Option<String> {
    let file = std::fs::File::open(log).ok()?;
    let mut line = Vec::new();
    let mut chunk = vec![0; 64 << 10];
    loop {
        let read = file
            .read_at(&mut chunk, offset_bytes + line.len() as u64)
            .ok()?;
        if read == 0 {
            return None;
        }
        if let Some(end) = chunk[..read].iter().position(|&byte| byte == b'\n') {
            line.extend_from_slice(&chunk[..end]);
            return String::from_utf8(line).ok();
        }
        line.extend_from_slice(&chunk[..read]);
        if line.len() > SNIPPET_LINE_BYTES_MAX {
            return None;
        }
    }
}
