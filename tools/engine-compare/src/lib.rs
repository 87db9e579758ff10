//! Measures SQLite FTS5 against treelog's own search (tantivy) on the same documents (issue 21,
//! item 3): both engines index exactly the documents of [`treelog::search::read_documents`]
//! (the library's line scanning and text extraction) and answer queries of the same syntax
//! ([`treelog::search::parse`]).
//!
//! # Brief overview
//! [`Engine`] names a side; [`build`] indexes a directory's logs from scratch and [`search`]
//! runs one query the way `treelog search` does (check every log, catch up the grown ones,
//! query, read the hits' lines back), returning each hit's session and line. The tantivy side
//! is the library's `treelog::search` itself ([`product`]), the FTS5 side a schema chosen for
//! the same job ([`fts5`]). `main.rs` runs each in its own process and times it.

pub mod fts5;
pub mod product;

use std::path::{Path, PathBuf};

use treelog::search::SearchError;

/// One of the two engines measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// SQLite FTS5 through rusqlite's bundled build.
    Fts5,
    /// tantivy, through `treelog::search` (the product).
    Tantivy,
}

impl Engine {
    pub const ALL: [Engine; 2] = [Engine::Fts5, Engine::Tantivy];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Fts5 => "fts5",
            Engine::Tantivy => "tantivy",
        }
    }

    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|engine| engine.name() == name)
    }

    /// The directory the engine keeps its index in, inside the searched directory.
    pub fn index_dir(self, dir: &Path) -> PathBuf {
        match self {
            Engine::Fts5 => dir.join(fts5::INDEX_DIR_NAME),
            Engine::Tantivy => dir.join(treelog::search::INDEX_DIR_NAME),
        }
    }
}

/// Why a build or a search failed.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The library's search failed (tantivy side), or a log could not be read (both sides).
    #[error(transparent)]
    Search(#[from] SearchError),
    /// SQLite failed on the database at `path`.
    #[error("{}: sqlite: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// A file or directory could not be read or written.
    #[error("{}: {operation}: {source}", path.display())]
    Io {
        path: PathBuf,
        operation: &'static str,
        source: std::io::Error,
    },
}

impl CompareError {
    fn io(path: &Path, operation: &'static str, source: std::io::Error) -> CompareError {
        CompareError::Io {
            path: path.to_path_buf(),
            operation,
            source,
        }
    }
}

/// One hit: the log's key (its `/`-separated path below the searched directory) and line.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub key: String,
    /// 1-based line number in the log.
    pub line: u64,
    /// The engine's BM25 score (higher is better on both sides).
    pub score: f64,
    /// Text around the match, read back from the log.
    pub snippet: String,
}

/// Indexes every log under `dir` from scratch (an existing index of `engine` is discarded).
pub fn build(engine: Engine, dir: &Path) -> Result<(), CompareError> {
    match engine {
        Engine::Fts5 => fts5::build(dir),
        Engine::Tantivy => product::build(dir),
    }
}

/// Runs `query` over the logs under `dir` as `treelog search` does, bringing the index up to
/// date first; returns at most `limit` hits, best first.
pub fn search(
    engine: Engine,
    dir: &Path,
    query: &str,
    limit: usize,
) -> Result<Vec<Found>, CompareError> {
    let parsed = treelog::search::parse(query)?;
    match engine {
        Engine::Fts5 => fts5::search(dir, &parsed, limit),
        Engine::Tantivy => product::search(dir, &parsed, limit),
    }
}

/// Bytes of the files under `path` (an index directory), 0 when it does not exist.
pub fn size_under(path: &Path) -> Result<u64, CompareError> {
    let mut total = 0;
    let mut pending = vec![path.to_path_buf()];
    while let Some(at) = pending.pop() {
        let entries = match std::fs::read_dir(&at) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(CompareError::io(&at, "read directory", error)),
        };
        for entry in entries {
            let entry = entry.map_err(|error| CompareError::io(&at, "read directory", error))?;
            let metadata = entry
                .metadata()
                .map_err(|error| CompareError::io(&entry.path(), "read metadata", error))?;
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                total += metadata.len();
            }
        }
    }
    Ok(total)
}
