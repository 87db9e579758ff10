//! The native half of `search` / `reindexSearch`: `treelog search` and
//! `treelog reindex --search` on a libuv worker thread, so that neither holds the event loop
//! while an index is built or caught up.
//!
//! Each call takes its whole request as one JSON string and answers with one JSON string
//! (parsed in JS, as every answer of this package is): `{"hits": [hit, ...]}` (each hit
//! exactly the CLI's `--json` object, [`treelog::search::Hit::to_json`]), `{"reindexed": ...}`,
//! or `{"error": {"code", "message"}}`, whose code comes from [`crate::errors::search_code_of`]. A
//! rejected task could only carry napi's own status codes, so failures travel in the answer.
//! The request's option values are checked here, in the CLI's words, so that every code of a
//! search comes from the Rust side.
//!
//! While it works, a call sends events to an optional JS function on the event loop, each
//! one JSON string: `{"notice": {"indexDir", "reason", "message"}}` when an index is rebuilt,
//! `{"progress": {"plannedBytes", "indexedBytes"}}` while logs are read (at most one every
//! [`PROGRESS_INTERVAL`], plus the last). The answer says how many events were sent
//! (`"events"`), so that the JS side delivers them all before its promise settles.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{AsyncTask, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, Task};
use napi_derive::napi;
use serde_json::{Map, Value, json};
use treelog::search::{
    Branches, Filters, Progress, RebuildReason, SearchError, SearchOptions, SortOrder,
};

/// The JS function that hears a call's events (one JSON string each).
pub type EventSink = ThreadsafeFunction<String, Unknown<'static>, String, Status, false>;

/// Hits of a search when the caller sets no `limit` (the CLI's default).
const LIMIT_DEFAULT: u64 = 20;
/// The largest `limit` a JS number holds exactly.
const LIMIT_MAX: u64 = (1 << 53) - 1;
/// Progress events are sent at most this often (the last one always).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// A failure in the caller's terms: a stable code and a message.
struct Failure {
    code: &'static str,
    message: String,
}

impl From<SearchError> for Failure {
    fn from(error: SearchError) -> Failure {
        Failure {
            code: crate::errors::search_code_of(&error),
            message: error.to_string(),
        }
    }
}

fn invalid(message: String) -> Failure {
    Failure {
        code: "TREELOG_INVALID_INPUT",
        message,
    }
}

/// What a search asks for, checked.
struct SearchRequest {
    query: String,
    paths: Vec<PathBuf>,
    options: SearchOptions,
}

/// Reads `{"query", "paths", "options"}`: `paths` null for the current directory, `options`
/// the keys `role`, `type`, `since`, `until`, `limit`, `sort`, `branch`, `includeEdited`,
/// `indexDir` and `indexWrite`, each optional.
fn search_request(request: &str) -> Result<SearchRequest, Failure> {
    let request: Value = serde_json::from_str(request)
        .map_err(|error| invalid(format!("search: the request is not JSON: {error}")))?;
    let query = match request.get("query") {
        Some(Value::String(query)) => query.clone(),
        other => {
            return Err(invalid(format!(
                "search: the query must be a string, got {}",
                shown(other)
            )));
        }
    };
    let paths = match request.get("paths") {
        None | Some(Value::Null) => vec![PathBuf::from(".")],
        Some(Value::Array(paths)) => paths
            .iter()
            .map(|path| match path {
                Value::String(path) if !path.is_empty() => Ok(PathBuf::from(path)),
                other => Err(invalid(format!(
                    "search: each path must be a non-empty string, got {}",
                    shown(Some(other))
                ))),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(invalid(format!(
                "search: paths must be a string or an array of strings, got {}",
                shown(other)
            )));
        }
    };
    let empty = Map::new();
    let options = match request.get("options") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(options)) => options,
        other => {
            return Err(invalid(format!(
                "search: options must be an object, got {}",
                shown(other)
            )));
        }
    };
    Ok(SearchRequest {
        query,
        paths,
        options: search_options(options)?,
    })
}

/// The options of a search, checked as the CLI checks its flags.
fn search_options(options: &Map<String, Value>) -> Result<SearchOptions, Failure> {
    const KNOWN: [&str; 10] = [
        "role",
        "type",
        "since",
        "until",
        "limit",
        "sort",
        "branch",
        "includeEdited",
        "indexDir",
        "indexWrite",
    ];
    if let Some(unknown) = options.keys().find(|key| !KNOWN.contains(&key.as_str())) {
        return Err(invalid(format!(
            "search: unknown option `{unknown}` (known: {})",
            KNOWN.join(", ")
        )));
    }
    let text = |key: &str| -> Result<Option<&str>, Failure> {
        match options.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            other => Err(invalid(format!(
                "search: {key} must be a string, got {}",
                shown(other)
            ))),
        }
    };
    let roles = match text("role")? {
        None => Vec::new(),
        Some(role) => treelog::search::roles_named(role).ok_or_else(|| {
            invalid(format!(
                "search: role {role:?} is not one of user, assistant, tool"
            ))
        })?,
    };
    let bound = |key: &str, end_of_day: bool| -> Result<Option<i64>, Failure> {
        text(key)?
            .map(|time| {
                treelog::search::time_bound_ms(time, end_of_day).ok_or_else(|| {
                    invalid(format!(
                        "search: {key} {time:?} is not an ISO time (e.g. 2025-01-31 or 2025-01-31T12:00:00Z)"
                    ))
                })
            })
            .transpose()
    };
    let limit = match options.get("limit") {
        None | Some(Value::Null) => LIMIT_DEFAULT,
        Some(Value::Number(number)) => number
            .as_u64()
            .or_else(|| {
                // JSON.stringify writes 20.0 as 20, but a JS number may arrive as a float.
                number
                    .as_f64()
                    .filter(|limit| limit.fract() == 0.0 && *limit >= 0.0)
                    .map(|limit| limit as u64)
            })
            .filter(|limit| (1..=LIMIT_MAX).contains(limit))
            .ok_or_else(|| {
                invalid(format!(
                    "search: limit must be a whole number of 1 or more, got {number}"
                ))
            })?,
        other => {
            return Err(invalid(format!(
                "search: limit must be a whole number of 1 or more, got {}",
                shown(other)
            )));
        }
    };
    let sort = match text("sort")? {
        None | Some("score") => SortOrder::Score,
        Some("newest") => SortOrder::Newest,
        Some(other) => {
            return Err(invalid(format!(
                "search: sort {other:?} is not one of score, newest"
            )));
        }
    };
    let branches = match text("branch")? {
        None | Some("all") => Branches::All,
        Some("active") => Branches::Active,
        Some(other) => {
            return Err(invalid(format!(
                "search: branch {other:?} is not one of all, active"
            )));
        }
    };
    Ok(SearchOptions {
        filters: Filters {
            roles,
            type_name: text("type")?.map(str::to_owned),
            since_ms: bound("since", false)?,
            until_ms: bound("until", true)?,
        },
        limit: usize::try_from(limit).unwrap_or(usize::MAX),
        sort,
        index_dir: index_dir("search", options)?,
        index_write: boolean("search", options, "indexWrite", true)?,
        branches,
        include_edited: boolean("search", options, "includeEdited", false)?,
    })
}

/// The option `key` of `call`, true or false (`default` when not given).
fn boolean(
    call: &str,
    options: &Map<String, Value>,
    key: &str,
    default: bool,
) -> Result<bool, Failure> {
    match options.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(value)) => Ok(*value),
        other => Err(invalid(format!(
            "{call}: {key} must be true or false, got {}",
            shown(other)
        ))),
    }
}

/// The `indexDir` option of `call` (the CLI's `--index-dir`): where the search index is kept
/// instead of beside the sessions; `None` when not given.
fn index_dir(call: &str, options: &Map<String, Value>) -> Result<Option<PathBuf>, Failure> {
    match options.get("indexDir") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(dir)) if !dir.is_empty() => Ok(Some(PathBuf::from(dir))),
        other => Err(invalid(format!(
            "{call}: indexDir must be a non-empty string, got {}",
            shown(other)
        ))),
    }
}

/// A JSON value as the caller wrote it, for an error message.
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "nothing".into(),
        Some(value) => value.to_string(),
    }
}

/// Sends a call's notices and progress to its JS function, counting what it sent.
struct Events {
    sink: Option<EventSink>,
    state: Mutex<EventState>,
}

#[derive(Default)]
struct EventState {
    sent: u64,
    planned_bytes: u64,
    indexed_bytes: u64,
    last_progress: Option<Instant>,
}

impl Events {
    fn new(sink: Option<EventSink>) -> Events {
        Events {
            sink,
            state: Mutex::new(EventState::default()),
        }
    }

    /// Sends `event` (with the state locked, so that events arrive in the order made).
    fn send(&self, state: &mut EventState, event: Value) {
        if let Some(sink) = &self.sink
            && sink.call(event.to_string(), ThreadsafeFunctionCallMode::Blocking) == Status::Ok
        {
            state.sent += 1;
        }
    }

    fn send_progress(&self, state: &mut EventState) {
        state.last_progress = Some(Instant::now());
        let event = json!({ "progress": {
            "plannedBytes": state.planned_bytes,
            "indexedBytes": state.indexed_bytes,
        }});
        self.send(state, event);
    }

    fn sent(&self) -> u64 {
        self.state.lock().map_or(0, |state| state.sent)
    }
}

impl Progress for Events {
    fn rebuilding(&self, index_dir: &Path, reason: &RebuildReason) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let event = json!({ "notice": {
            "indexDir": index_dir.display().to_string(),
            "reason": reason.to_string(),
            // The CLI's line on stderr, word for word.
            "message": reason.notice(index_dir),
        }});
        self.send(&mut state, event);
    }

    fn planned(&self, bytes: u64) {
        if let Ok(mut state) = self.state.lock() {
            state.planned_bytes = state.indexed_bytes + bytes;
            self.send_progress(&mut state);
        }
    }

    fn indexed(&self, bytes: u64) {
        if let Ok(mut state) = self.state.lock() {
            state.indexed_bytes += bytes;
            let due = state
                .last_progress
                .is_none_or(|last| last.elapsed() >= PROGRESS_INTERVAL);
            if due || state.indexed_bytes >= state.planned_bytes {
                self.send_progress(&mut state);
            }
        }
    }
}

/// Runs `work`, a panic becoming a `TREELOG_PANIC` failure: it must not cross into libuv.
fn caught(work: impl FnOnce() -> Result<String, Failure>) -> Result<String, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|_| {
        Err(Failure {
            code: "TREELOG_PANIC",
            message: "treelog panicked during a search".into(),
        })
    })
}

/// The answer of a call: its result (JSON text) under `key`, or its error, and the number of
/// events it sent.
fn answer(key: &str, result: Result<String, Failure>, events: &Events) -> String {
    let (key, value) = match result {
        Ok(json) => (key, json),
        Err(failure) => (
            "error",
            json!({ "code": failure.code, "message": failure.message }).to_string(),
        ),
    };
    format!(r#"{{"{key}":{value},"events":{}}}"#, events.sent())
}

/// One call off the event loop: `run` turns the request into the JSON answered under `key`
/// (`hits` or `reindexed`), telling `events` of notices and progress as it goes.
pub struct SearchTask {
    request: String,
    events: Events,
    key: &'static str,
    run: fn(&str, &Events) -> Result<String, Failure>,
}

impl SearchTask {
    fn new(
        request: String,
        on_event: Option<EventSink>,
        key: &'static str,
        run: fn(&str, &Events) -> Result<String, Failure>,
    ) -> AsyncTask<SearchTask> {
        AsyncTask::new(SearchTask {
            request,
            events: Events::new(on_event),
            key,
            run,
        })
    }
}

impl Task for SearchTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let result = caught(|| (self.run)(&self.request, &self.events));
        Ok(answer(self.key, result, &self.events))
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// `search`'s work: the hits as a JSON array.
fn run_search(request: &str, events: &Events) -> Result<String, Failure> {
    let request = search_request(request)?;
    let query = treelog::search::parse(&request.query)?;
    let hits = treelog::search::search_paths(&request.paths, &query, &request.options, events)?;
    // Each hit is already JSON; they are joined, never parsed here.
    let mut array = String::from("[");
    for (index, hit) in hits.iter().enumerate() {
        if index > 0 {
            array.push(',');
        }
        array.push_str(&hit.to_json());
    }
    array.push(']');
    Ok(array)
}

/// `treelog search` on a worker thread: `request` is `{"query", "paths", "options"}`;
/// `onEvent` hears notices and progress. The answer is described in this module's docs.
#[napi(ts_return_type = "Promise<string>")]
pub fn search_json(
    request: String,
    #[napi(ts_arg_type = "((event: string) => void) | undefined | null")] on_event: Option<
        EventSink,
    >,
) -> AsyncTask<SearchTask> {
    SearchTask::new(request, on_event, "hits", run_search)
}

/// What a reindex asks for, checked.
struct ReindexRequest {
    dir: PathBuf,
    /// `--force`: discard the index first.
    force: bool,
    /// `--index-dir`.
    index_dir: Option<PathBuf>,
}

/// Reads `{"dir", "force", "indexDir"}` (`force` default false, `indexDir` optional).
fn reindex_request(request: &str) -> Result<ReindexRequest, Failure> {
    let request: Map<String, Value> = serde_json::from_str(request)
        .map_err(|error| invalid(format!("reindexSearch: the request is not JSON: {error}")))?;
    let dir = match request.get("dir") {
        Some(Value::String(dir)) if !dir.is_empty() => PathBuf::from(dir),
        other => {
            return Err(invalid(format!(
                "reindexSearch: dir must be a non-empty string, got {}",
                shown(other)
            )));
        }
    };
    Ok(ReindexRequest {
        dir,
        force: boolean("reindexSearch", &request, "force", false)?,
        index_dir: index_dir("reindexSearch", &request)?,
    })
}

/// `reindexSearch`'s work: the object of `treelog reindex --search --json`.
fn run_reindex(request: &str, events: &Events) -> Result<String, Failure> {
    let ReindexRequest {
        dir,
        force,
        index_dir,
    } = reindex_request(request)?;
    let metadata = std::fs::metadata(&dir).map_err(|error| {
        Failure::from(SearchError::Io {
            path: dir.clone(),
            operation: "open",
            source: error,
        })
    })?;
    if !metadata.is_dir() {
        return Err(invalid(format!(
            "{}: reindexSearch indexes a directory's sessions: name a directory",
            dir.display()
        )));
    }
    let started = Instant::now();
    let counts = treelog::search::reindex(&dir, index_dir.as_deref(), force, events)?;
    Ok(counts.to_json(&dir, started.elapsed().as_secs_f64()))
}

/// `treelog reindex --search DIR` on a worker thread: `request` is `{"dir", "force",
/// "indexDir"}`;
/// `onEvent` hears notices and progress.
#[napi(ts_return_type = "Promise<string>")]
pub fn reindex_search_json(
    request: String,
    #[napi(ts_arg_type = "((event: string) => void) | undefined | null")] on_event: Option<
        EventSink,
    >,
) -> AsyncTask<SearchTask> {
    SearchTask::new(request, on_event, "reindexed", run_reindex)
}
