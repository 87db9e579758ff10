//! Full-text search across every session of a directory, behind the cargo feature
//! `search` so that users of the core crate do not compile the engine.
//!
//! # Brief overview
//! [`search`] finds the entries of the logs under a directory (or of one log) that hold the
//! words of a [`ParsedQuery`] ([`parse`] reads the query syntax). The index is tantivy's, stored
//! in `DIR/.treelog-search/` or in an index directory ([`SearchOptions::index_dir`];
//! format-spec/search.md), and is a cache like the sidecar: every
//! search checks it against every log first ([`refresh`]: a grown log is caught up from where
//! the index stopped, a rewritten one read again, a deleted one dropped), and an index that
//! is missing, damaged, of another version or half-written is rebuilt from the logs, which
//! [`Progress::rebuilding`] announces. A lock file serializes the searches of one directory.
//! With index writes off ([`SearchOptions::index_write`]) nothing is written: a current index
//! is read as it is, and otherwise one is built in memory for the search.
//!
//! The index follows context edits: an entry removed from the model's view has no document
//! (no term, no stored text), a replaced one is indexed with its replacement's text and its
//! hit says so ([`Hit::edited`]). Each hit also says whether it stands on its session's active
//! path ([`Hit::active_path`]; [`Branches::Active`] keeps only those). On request
//! ([`SearchOptions::include_edited`]) the original text of removed and replaced entries is
//! searched too, read back from the logs at the places the catalog keeps ([`Hit::original`]).
//!
//! Modules: `extract` (the searchable text of a line, pure), `documents` (a log's lines
//! that hold text, from a position, with its context edits applied: what the index holds),
//! `branch` (the active path of the sessions hits come from), `query` (the syntax and the
//! engine query), `phrase` (a phrase query that skips documents that cannot reach the top
//! hits), `originals` (the original text of edited entries, from the logs), `top` (the top
//! hits, ties ordered by session and line), `store` (schema, catalog, lock, open/rebuild),
//! `refresh` (catch-up), `find` (the logs under a directory), `copies` (folders of local copies
//! searched in place of sessions kept elsewhere, and the addresses their hits are named by),
//! `openclaw` (OpenClaw's sessions copied from their rows into a cache folder, with the cargo
//! feature `openclaw`), `s3` (logs on an object store copied from their segments into a cache
//! folder, with the cargo feature `object-store`).

mod branch;
#[cfg(any(feature = "openclaw", feature = "object-store"))]
mod copies;
mod documents;
mod error;
mod extract;
mod find;
#[cfg(feature = "openclaw")]
mod openclaw;
mod originals;
mod phrase;
mod progress;
mod query;
mod refresh;
#[cfg(feature = "object-store")]
mod s3;
mod snippet;
mod store;
mod top;

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, ReloadPolicy, Searcher, TantivyDocument, Term};

pub use branch::Branches;
pub use error::SearchError;
pub use extract::{Extracted, context_edit, extract, header_version};
pub use find::{FoundLog, logs_under};
pub use progress::{Progress, Quiet, RebuildReason};
pub use query::{
    CLAUSES_MAX, Clause, Filters, ParsedQuery, matches_text, parse, roles_named, time_bound_ms,
};
pub use refresh::RefreshCounts;
pub use store::{CATALOG_FORMAT, INDEX_DIR_NAME, index_path, tokens};

use branch::ActivePaths;
use snippet::{SNIPPET_CHARS, read_line, snippet_of};
use store::{Fields, SearchStore, analyzer};

/// The order of hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortOrder {
    /// Best match first (BM25).
    #[default]
    Score,
    /// Latest timestamp first.
    Newest,
}

/// How to search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    pub filters: Filters,
    /// Hits returned at most.
    pub limit: usize,
    pub sort: SortOrder,
    /// Keep the index in this directory (`search-<key>/`, [`index_path`]) instead of in the
    /// searched directory; as `SessionOptions::index_dir` does for sidecars.
    pub index_dir: Option<PathBuf>,
    /// Whether the index may be created or updated on disk. Without, nothing is written: a
    /// current index is read, and otherwise one is built in memory (same hits, slower).
    pub index_write: bool,
    /// Which branches' entries are hits (default: all).
    pub branches: Branches,
    /// Also search the original text of the entries that context edits remove or replace,
    /// read back from the logs (the index never holds it); such hits say so
    /// ([`Hit::original`]).
    pub include_edited: bool,
}

/// One entry that holds the query's words.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The log, as found from the searched path (`DIR/sub/x.jsonl`, or the file as named).
    pub session: PathBuf,
    /// 1-based line number of the entry in the log.
    pub line: u64,
    pub id: String,
    /// The entry's `type`.
    pub type_name: String,
    /// A message's role, `None` for other entries.
    pub role: Option<String>,
    pub timestamp: Option<String>,
    pub timestamp_ms: Option<i64>,
    /// BM25 score of the entry for the query.
    pub score: f32,
    /// Text around the matched words, on one line.
    pub snippet: String,
    /// Byte ranges of `snippet` that matched words.
    pub highlights: Vec<Range<usize>>,
    /// A context edit replaced the entry's content: the hit and its snippet are the
    /// replacement's text.
    pub edited: bool,
    /// The entry is on its session's active path (from the leaf the session opens at).
    pub active_path: bool,
    /// With [`SearchOptions::include_edited`]: whether the hit is the entry's original text,
    /// which a context edit removed from the model's view or replaced (`Some(false)` for the
    /// index's hits); `None` when the search did not include edited entries.
    pub original: Option<bool>,
    /// The agent whose session the log is: `pi`, `claude` or `codex`
    /// ([`crate::agents::Format::agent_name`]).
    pub agent: &'static str,
}

impl Hit {
    /// The hit as `treelog search --json` prints it: exactly the keys `session`, `line`, `id`,
    /// `type`, `role` (null when none), `timestamp`, `score`, `snippet`, `edited`,
    /// `activePath` and `agent`, and `original` after them when the search included edited
    /// entries.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::json!({
            "session": self.session.display().to_string(),
            "line": self.line,
            "id": self.id,
            "type": self.type_name,
            "role": self.role,
            "timestamp": self.timestamp,
            "score": self.score,
            "snippet": self.snippet,
            "edited": self.edited,
            "activePath": self.active_path,
            "agent": self.agent,
        });
        if let (Some(original), Some(object)) = (self.original, json.as_object_mut()) {
            object.insert("original".into(), original.into());
        }
        json.to_string()
    }
}

/// What a search covers: a directory's logs, or one log in its directory's index.
struct Target {
    /// The directory whose index is used.
    dir: PathBuf,
    /// Set for one file: hits are limited to it and other logs are left alone.
    only_key: Option<String>,
    /// How hit paths are written: the searched path joined with the key, or the file.
    base: PathBuf,
}

impl Target {
    /// The path of the log `key` as hits name it.
    fn session_of(&self, key: &str) -> PathBuf {
        match &self.only_key {
            Some(_) => self.base.clone(),
            None => key
                .split('/')
                .fold(self.base.clone(), |path, part| path.join(part)),
        }
    }

    /// The logs this search covers, with their sizes and mtimes now. Called with the index's
    /// lock held, so that no other search changes the catalog between this look and the
    /// refresh that compares the two.
    fn logs(&self) -> Result<Vec<FoundLog>, SearchError> {
        match &self.only_key {
            None => logs_under(&self.dir),
            Some(key) => Ok(vec![find::log_at(&self.base, key.clone())?]),
        }
    }
}

fn target(path: &Path) -> Result<Target, SearchError> {
    let metadata = std::fs::metadata(path).map_err(|error| SearchError::io(path, "open", error))?;
    if metadata.is_dir() {
        return Ok(Target {
            dir: path.to_path_buf(),
            only_key: None,
            base: path.to_path_buf(),
        });
    }
    // A FIFO, a device or a socket is not a log: refused without being opened.
    crate::fs_safe::check_regular(&metadata)
        .map_err(|error| SearchError::io(path, "open", error))?;
    let key = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| {
            SearchError::io(
                path,
                "open",
                io::Error::other("not a file name treelog can index"),
            )
        })?
        .to_owned();
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok(Target {
        dir,
        only_key: Some(key),
        base: path.to_path_buf(),
    })
}

/// Searches the logs under `path` (a directory, searched recursively for `*.jsonl`, or one
/// log), bringing its index up to date first. With the cargo feature `openclaw`, `path` may
/// be an `openclaw://` address too (`openclaw://[STATE_DIR#]AGENT/SESSION_ID`, one agent's
/// sessions `openclaw://[STATE_DIR#]AGENT`, or every agent's `openclaw://STATE_DIR#`): the
/// sessions' rows are searched as their lines in a JSONL file, and hits name them by their
/// address written as `path` writes it (module `openclaw`). With the cargo feature
/// `object-store`, `path` may be a log on an object store, `s3://BUCKET/KEY`, or a prefix,
/// `s3://BUCKET/PREFIX/` (every log below it): local copies of the logs, caught up from the
/// segments appended since the last search, are searched as files, and hits name the logs by
/// their `s3://` address (module `s3`).
pub fn search(
    path: &Path,
    query: &ParsedQuery,
    options: &SearchOptions,
    progress: &dyn Progress,
) -> Result<Vec<Hit>, SearchError> {
    #[cfg(feature = "openclaw")]
    if let Some(prepared) = path
        .to_str()
        .and_then(|text| openclaw::prepare(text, options.index_dir.as_deref(), options.index_write))
    {
        return search_copies(&prepared?, query, options, progress);
    }
    #[cfg(feature = "object-store")]
    if let Some(prepared) = path
        .to_str()
        .and_then(|text| s3::prepare(text, options.index_dir.as_deref(), options.index_write))
    {
        return search_copies(&prepared?, query, options, progress);
    }
    search_logs(path, query, options, progress)
}

/// Searches the copies an address was prepared into, and names each hit by its session's
/// address.
#[cfg(any(feature = "openclaw", feature = "object-store"))]
fn search_copies(
    prepared: &copies::Materialized,
    query: &ParsedQuery,
    options: &SearchOptions,
    progress: &dyn Progress,
) -> Result<Vec<Hit>, SearchError> {
    let mut hits = Vec::new();
    for folder in &prepared.searches {
        let inner = SearchOptions {
            index_dir: None,
            index_write: folder.index_write,
            ..options.clone()
        };
        for mut hit in search_logs(&folder.path, query, &inner, progress)? {
            if let Some(address) = folder.addresses.get(&hit.session) {
                hit.session = PathBuf::from(address);
            }
            hits.push(hit);
        }
    }
    if prepared.searches.len() > 1 {
        merge(&mut hits, options);
    }
    Ok(hits)
}

/// The hits of several searches in one order (`options.sort`; equal ones keep their order),
/// cut to `options.limit`.
fn merge(hits: &mut Vec<Hit>, options: &SearchOptions) {
    match options.sort {
        SortOrder::Score => hits.sort_by(|a, b| b.score.total_cmp(&a.score)),
        SortOrder::Newest => hits.sort_by_key(|hit| std::cmp::Reverse(hit.timestamp_ms)),
    }
    hits.truncate(options.limit);
}

/// [`search`] of a directory of logs or of one log.
fn search_logs(
    path: &Path,
    query: &ParsedQuery,
    options: &SearchOptions,
    progress: &dyn Progress,
) -> Result<Vec<Hit>, SearchError> {
    let target = target(path)?;
    let index_dir = index_path(&target.dir, options.index_dir.as_deref());
    let (opened, found_logs) = if options.index_write {
        match SearchStore::open(index_dir.clone()) {
            Ok(opened) => (opened, None),
            // The index is a cache: one that cannot be written (a read-only folder, a file
            // where its directory should be) must not fail the search. It runs as with
            // --no-index-write, and says why.
            Err(error @ SearchError::Io { .. }) => {
                let ((store, _), found_logs) = open_without_writing(&target, index_dir)?;
                let reason = RebuildReason::Unwritable(error.to_string());
                ((store, Some(reason)), found_logs)
            }
            Err(other) => return Err(other),
        }
    } else {
        open_without_writing(&target, index_dir)?
    };
    with_store(opened, found_logs, &target, false, progress, |store| {
        run_query(store, &target, query, options)
    })
    .map(|(hits, _)| hits)
}

/// Searches each of `paths` as [`search`] does; the hits of several paths are put in one
/// order (`options.sort`; equal ones keep the order of `paths`) and cut to `options.limit`.
pub fn search_paths(
    paths: &[PathBuf],
    query: &ParsedQuery,
    options: &SearchOptions,
    progress: &dyn Progress,
) -> Result<Vec<Hit>, SearchError> {
    let mut hits = Vec::new();
    for path in paths {
        hits.extend(search(path, query, options, progress)?);
    }
    if paths.len() > 1 {
        merge(&mut hits, options);
    }
    Ok(hits)
}

/// A store just opened, with why it was rebuilt on opening (for the notice).
type Opened = (SearchStore, Option<RebuildReason>);

/// The index of `target` without writing anything: the one in `index_dir` when it exists and
/// describes the logs as they are, else an empty one in memory that the refresh fills (with a
/// notice, as for a rebuild). The logs found on the way are returned, so that the refresh
/// does not walk the directory a second time.
fn open_without_writing(
    target: &Target,
    index_dir: PathBuf,
) -> Result<(Opened, Option<Vec<FoundLog>>), SearchError> {
    let not_current = match SearchStore::open_read_only(index_dir.clone()) {
        Ok(store) => {
            let logs = target.logs()?;
            let stale = guarded(&store.dir, || {
                refresh::documents_change(&store, &logs, target.only_key.is_none())
            });
            match stale {
                Ok(false) => return Ok(((store, None), Some(logs))),
                Ok(true) => RebuildReason::Unusable("the search index is not up to date".into()),
                Err(SearchError::Engine { reason, .. }) => RebuildReason::damaged(reason),
                Err(other) => return Err(other),
            }
        }
        Err(reason) => reason,
    };
    Ok((
        (
            SearchStore::in_memory(index_dir),
            Some(RebuildReason::InMemory(not_current.to_string())),
        ),
        None,
    ))
}

/// Brings the index of the directory `dir` up to date ahead of time (`treelog reindex
/// --search`), with `force` discarding it first, and waits for the engine's merges. The index
/// is kept in `index_dir` when given ([`index_path`]).
pub fn reindex(
    dir: &Path,
    index_dir: Option<&Path>,
    force: bool,
    progress: &dyn Progress,
) -> Result<RefreshCounts, SearchError> {
    // An unreadable directory is refused before an index is created in it.
    std::fs::read_dir(dir).map_err(|error| SearchError::io(dir, "read the directory", error))?;
    let target = Target {
        dir: dir.to_path_buf(),
        only_key: None,
        base: dir.to_path_buf(),
    };
    let index_dir = index_path(dir, index_dir);
    let opened = if force {
        let (store, _) = SearchStore::open(index_dir)?;
        progress.rebuilding(&store.dir, &RebuildReason::Forced);
        // The emptied index is used as it is: reopened, it would read as half-written (no
        // catalog yet) and be announced and rebuilt a second time.
        (store.rebuild()?, None)
    } else {
        SearchStore::open(index_dir)?
    };
    with_store(opened, None, &target, true, progress, |_| Ok(())).map(|((), counts)| counts)
}

/// Refreshes an opened store (`rebuilt`: why it was rebuilt on opening) against the logs of
/// `target` (`found_logs` when they were just found, else looked for now) and runs `then`; an
/// index found damaged on the way (an engine error or panic) is rebuilt once (in memory for a
/// store not written to disk) and the whole attempt run again.
fn with_store<T>(
    (mut store, rebuilt): Opened,
    found_logs: Option<Vec<FoundLog>>,
    target: &Target,
    merge_fully: bool,
    progress: &dyn Progress,
    then: impl Fn(&SearchStore) -> Result<T, SearchError>,
) -> Result<(T, RefreshCounts), SearchError> {
    if let Some(reason) = rebuilt {
        progress.rebuilding(&store.dir, &reason);
    }
    let mut found_logs = found_logs;
    let mut attempt = |store: &mut SearchStore| -> Result<(T, RefreshCounts), SearchError> {
        let logs = match found_logs.take() {
            Some(logs) => logs,
            None => target.logs()?,
        };
        let counts = refresh::refresh(
            store,
            &logs,
            target.only_key.is_none(),
            merge_fully,
            progress,
        )?;
        // The index holds the text of every log: it is no more readable than the least
        // readable one (private when there is none).
        let shared_bits = logs.iter().map(|log| log.mode).reduce(|a, b| a & b);
        let mode = shared_bits.map_or(0o600, crate::fs_safe::mode_for_derived_bits);
        store.fit_modes(mode, target.only_key.is_none())?;
        Ok((then(store)?, counts))
    };
    match guarded(&store.dir.clone(), || attempt(&mut store)) {
        Err(SearchError::Engine { reason, .. }) => {
            progress.rebuilding(&store.dir, &RebuildReason::damaged(reason));
            let mut store = store.rebuild()?;
            guarded(&store.dir.clone(), || attempt(&mut store))
        }
        other => other,
    }
}

/// Runs `work`, turning a panic of the engine (on a damaged file of the index in `dir`) into
/// an engine error.
fn guarded<T>(dir: &Path, work: impl FnOnce() -> Result<T, SearchError>) -> Result<T, SearchError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|_| {
        Err(SearchError::Engine {
            path: dir.to_path_buf(),
            reason: "the engine stopped on a damaged file".into(),
        })
    })
}

fn engine_error(store: &SearchStore) -> impl Fn(tantivy::TantivyError) -> SearchError + '_ {
    move |error| store::engine(&store.dir, error)
}

fn run_query(
    store: &SearchStore,
    target: &Target,
    parsed: &ParsedQuery,
    options: &SearchOptions,
) -> Result<Vec<Hit>, SearchError> {
    if options.limit == 0 {
        return Ok(Vec::new());
    }
    let fields = store.fields;
    let mut engine_query = query::to_engine(parsed, &options.filters, &fields);
    if let Some(key) = &target.only_key {
        engine_query = Box::new(BooleanQuery::new(vec![
            (Occur::Must, engine_query),
            (
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(fields.session, key),
                    IndexRecordOption::Basic,
                )),
            ),
        ]));
    }
    let reader = store
        .index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(engine_error(store))?;
    let searcher = reader.searcher();
    let snippets = snippet_generator(parsed, fields);
    let mut active_paths = ActivePaths::new(options.index_dir.clone(), options.index_write);
    // Hits off the active path are left out after the engine ranks them: the top documents
    // are asked for in growing numbers until `limit` hits remain or none is left.
    let mut want = options.limit;
    let mut hits = loop {
        let top = top_documents(store, &searcher, engine_query.as_ref(), options.sort, want)?;
        let exhausted = top.len() < want;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let (key, hit) = hit(
                store,
                &searcher,
                target,
                &snippets,
                &mut active_paths,
                score,
                address,
            )?;
            if options.branches == Branches::All || hit.active_path {
                hits.push((key, hit));
            }
        }
        if hits.len() >= options.limit || exhausted || options.branches == Branches::All {
            hits.truncate(options.limit);
            break hits;
        }
        want = want.saturating_mul(4);
    };
    if options.include_edited {
        for (_, hit) in &mut hits {
            hit.original = Some(false);
        }
        let matcher = originals::Matcher {
            searcher: &searcher,
            text_field: fields.text,
            parsed,
            filters: &options.filters,
            snippets: &snippets,
        };
        for (key, state) in &store.catalog.logs {
            if state.edited.is_empty() || target.only_key.as_ref().is_some_and(|only| only != key) {
                continue;
            }
            let session = target.session_of(key);
            let found = originals::original_hits(key, &session, state, &matcher, &mut active_paths);
            hits.extend(
                found
                    .into_iter()
                    .filter(|found| options.branches == Branches::All || found.active_path)
                    .map(original_hit),
            );
        }
        // The index's hits are in this order already; the originals take their places in it.
        hits.sort_by(|(a_key, a), (b_key, b)| {
            let first = match options.sort {
                SortOrder::Score => b.score.total_cmp(&a.score),
                SortOrder::Newest => match (a.timestamp_ms, b.timestamp_ms) {
                    (Some(a_ms), Some(b_ms)) => b_ms.cmp(&a_ms),
                    // Entries without a time come last.
                    (a_ms, b_ms) => a_ms.is_none().cmp(&b_ms.is_none()),
                },
            };
            first
                .then_with(|| a_key.cmp(b_key))
                .then(a.line.cmp(&b.line))
        });
        hits.truncate(options.limit);
    }
    Ok(hits.into_iter().map(|(_, hit)| hit).collect())
}

/// The hit of an original text, with its log's key.
fn original_hit(found: originals::OriginalHit) -> (String, Hit) {
    let hit = Hit {
        session: found.session,
        line: found.line,
        id: found.extracted.id,
        type_name: found.extracted.type_name,
        role: found.extracted.role,
        timestamp: found.extracted.timestamp,
        timestamp_ms: found.timestamp_ms,
        score: found.score,
        snippet: found.snippet,
        highlights: found.highlights,
        edited: false,
        active_path: found.active_path,
        original: Some(true),
        agent: found.agent,
    };
    (found.key, hit)
}

/// The first `want` documents of `engine_query` in the order of hits, with their scores.
fn top_documents(
    store: &SearchStore,
    searcher: &Searcher,
    engine_query: &dyn Query,
    sort: SortOrder,
    want: usize,
) -> Result<Vec<(f32, DocAddress)>, SearchError> {
    Ok(match sort {
        SortOrder::Score => {
            top::by_score(searcher, engine_query, want).map_err(engine_error(store))?
        }
        SortOrder::Newest => {
            let newest =
                top::by_newest(searcher, engine_query, want).map_err(engine_error(store))?;
            let mut scored = Vec::with_capacity(newest.len());
            for address in newest {
                let explained = engine_query
                    .explain(searcher, address)
                    .map_err(engine_error(store))?;
                scored.push((explained.value(), address));
            }
            scored
        }
    })
}

/// Snippets highlight the query's whole words (a prefix's completions are not highlighted).
fn snippet_generator(parsed: &ParsedQuery, fields: Fields) -> SnippetGenerator {
    let mut terms = BTreeMap::new();
    for clause in parsed.clauses.iter().filter(|clause| !clause.exclude) {
        let whole = clause.tokens.len() - usize::from(clause.prefix);
        for token in &clause.tokens[..whole] {
            terms.insert(token.clone(), 1.0);
        }
    }
    SnippetGenerator::new(terms, analyzer(), fields.text, SNIPPET_CHARS)
}

fn hit(
    store: &SearchStore,
    searcher: &Searcher,
    target: &Target,
    snippets: &SnippetGenerator,
    active_paths: &mut ActivePaths,
    score: f32,
    address: DocAddress,
) -> Result<(String, Hit), SearchError> {
    let fields = store.fields;
    let document: TantivyDocument = searcher.doc(address).map_err(engine_error(store))?;
    let text_of = |field| {
        document
            .get_first(field)
            .and_then(|value| value.as_str())
            .map(str::to_owned)
    };
    let number_of = |field| document.get_first(field).and_then(|value| value.as_u64());
    let damaged = |what: &str| SearchError::Engine {
        path: store.dir.clone(),
        reason: format!("a stored document has no {what}"),
    };
    let key = text_of(fields.session).ok_or_else(|| damaged("session"))?;
    let line = number_of(fields.line).ok_or_else(|| damaged("line"))?;
    let offset = number_of(fields.offset).ok_or_else(|| damaged("offset"))?;
    let session = target.session_of(&key);
    let legacy_v1 = store
        .catalog
        .logs
        .get(&key)
        .is_some_and(|state| state.legacy_v1);
    let edited_at = number_of(fields.edited_at);
    let (snippet, highlights) = snippet_at(&session, offset, edited_at, legacy_v1, snippets);
    let timestamp = text_of(fields.timestamp);
    let id = text_of(fields.id).unwrap_or_default();
    let active_path = active_paths.contains(&session, &id, offset);
    let agent = active_paths.format(&session).agent_name();
    let hit = Hit {
        agent,
        line,
        id,
        type_name: text_of(fields.type_name).unwrap_or_default(),
        role: text_of(fields.role).filter(|role| !role.is_empty()),
        timestamp_ms: timestamp
            .as_deref()
            .and_then(crate::format::time::parse_iso_ms),
        timestamp,
        score,
        snippet,
        highlights,
        edited: edited_at.is_some(),
        active_path,
        original: None,
        session,
    };
    Ok((key, hit))
}

/// The snippet of the entry at `offset` of the log, read back from the log (the index does
/// not store the text): from the replacement of the context edit at `edited_at` when the
/// entry was edited. Empty when the line can no longer be read or holds no text (the log
/// changed since the refresh).
fn snippet_at(
    log: &Path,
    offset: u64,
    edited_at: Option<u64>,
    legacy_v1: bool,
    snippets: &SnippetGenerator,
) -> (String, Vec<Range<usize>>) {
    let Some(text) = read_line(log, edited_at.unwrap_or(offset)) else {
        return (String::new(), Vec::new());
    };
    let found_text = match edited_at {
        Some(_) => context_edit(&text).and_then(|(_, replacement)| replacement),
        None => extract(&text, legacy_v1).map(|found| found.text),
    };
    match found_text {
        Some(found_text) => snippet_of(&found_text, snippets),
        None => (String::new(), Vec::new()),
    }
}
