//! The Node binding of treelog: the native half of `index.js`, which gives pi-coding-agent's
//! `SessionManager` its exact shape. This half is thin: a [`NativeSession`] holds one
//! `treelog::Session` and answers each query with one JSON string (parsed on the JS side:
//! one string per call costs far less than objects built field by field), and every append
//! takes the id and timestamp the JS side drew, as pi draws them.
//!
//! pi writes nothing until a session holds a user or assistant message. Until then a session
//! bound to a file lives in memory (`State::Pending`, a treelog session over a memory
//! log); the append that brings the first such message writes the whole log to the file in
//! one write (created exclusively, as pi's `"wx"`), and the handle continues on the file.
//!
//! Errors reach JS as `Error`s whose `code` is stable (`TREELOG_*`, see [`code_of`] and
//! [`search_code_of`], the only places codes of the engine's errors are chosen); a
//! panic in the engine becomes a `TREELOG_PANIC` error and leaves the handle unusable, never
//! aborting the process.

pub mod listing;
pub mod search;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use napi::bindgen_prelude::{Function, Int32Array, Uint8Array, Uint32Array};
use napi_derive::napi;
use treelog::format::json_scan;
use treelog::format::line::json_text_str;
use treelog::storage::MemoryStorage;
use treelog::{
    Durability, EntryKind, NewEntry, OnConflict, Session, SessionOptions, Stamp, TreeFilter,
    TreeSelector,
};

/// What `NativeSession::branched_entries` answers.
#[napi(object)]
pub struct BranchedEntriesJs {
    /// The entry lines, when the native half did not write them.
    pub lines: Option<String>,
    /// Whether the native half wrote the session file.
    pub written: bool,
}

/// A JS error with a stable `code`.
type Result<T> = std::result::Result<T, napi::Error<String>>;

fn js_error(code: &str, message: impl Into<String>) -> napi::Error<String> {
    napi::Error::new(code.to_string(), message.into())
}

/// The stable code of a library error.
fn code_of(error: &treelog::Error) -> &'static str {
    match error {
        treelog::Error::Io { .. } => "TREELOG_IO",
        treelog::Error::Index { .. } => "TREELOG_INDEX",
        treelog::Error::LogChanged { .. } => "TREELOG_LOG_CHANGED",
        treelog::Error::EntryNotFound { .. } => "TREELOG_NOT_FOUND",
        treelog::Error::Conflict { .. } => "TREELOG_CONFLICT",
        treelog::Error::Poisoned { .. } => "TREELOG_POISONED",
        treelog::Error::InvalidInput { .. } => "TREELOG_INVALID_INPUT",
        _ => "TREELOG_ERROR",
    }
}

/// The stable code of a search error (`search.rs`); a log's own error keeps its code.
fn search_code_of(error: &treelog::search::SearchError) -> &'static str {
    use treelog::search::SearchError;
    match error {
        SearchError::BadQuery { .. } => "TREELOG_BAD_QUERY",
        SearchError::Io { .. } => "TREELOG_IO",
        SearchError::Log(error) => code_of(error),
        SearchError::Engine { .. } => "TREELOG_SEARCH_INDEX",
        _ => "TREELOG_ERROR",
    }
}

fn to_js(error: treelog::Error) -> napi::Error<String> {
    // pi's words lead where pi has words for the same failure, so code that matches on
    // them keeps working; the file follows.
    let message = match &error {
        treelog::Error::EntryNotFound { path, id } => {
            format!("Entry {id} not found ({})", path.display())
        }
        _ => error.to_string(),
    };
    js_error(code_of(&error), message)
}

/// Runs `body`, turning a library error into a coded JS error and a panic into
/// `TREELOG_PANIC`.
/// The error of a selector call without an open selector.
fn no_tree() -> napi::Error<String> {
    js_error(
        "TREELOG_INVALID_INPUT",
        "no tree selector is open on this session",
    )
}

fn guarded<T>(body: impl FnOnce() -> treelog::Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result.map_err(to_js),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(js_error(
                "TREELOG_PANIC",
                format!("treelog panicked: {what}; this session handle is closed"),
            ))
        }
    }
}

/// How the JS side opens a session: the `SessionManager` factories' options, checked there.
#[napi(object)]
#[derive(Clone, Default)]
pub struct OpenOptions {
    /// `"branch"` (pi's rule, the default), `"follow"` or `"fail"`: what an append does after
    /// another writer appended a child of this session's leaf.
    pub on_conflict: Option<String>,
    /// A directory for the sidecar index instead of beside the log.
    pub index_dir: Option<String>,
    /// `false`: never create or write a sidecar.
    pub index_write: Option<bool>,
}

/// The session options of `open`: pi writes with appendFileSync and never fsyncs.
fn options(open: &OpenOptions) -> Result<SessionOptions> {
    let on_conflict = match open.on_conflict.as_deref() {
        None | Some("branch") => OnConflict::Branch,
        Some("follow") => OnConflict::FollowTip,
        Some("fail") => OnConflict::Fail,
        Some(other) => {
            return Err(js_error(
                "TREELOG_INVALID_INPUT",
                format!("onConflict must be \"branch\", \"follow\" or \"fail\", not {other:?}"),
            ));
        }
    };
    Ok(SessionOptions {
        durability: Durability::None,
        on_conflict,
        index_dir: open.index_dir.as_ref().map(PathBuf::from),
        index_write: open.index_write.unwrap_or(true),
        ..SessionOptions::default()
    })
}

/// Entries as the index knows them (`treelog::IndexedEntries`), in the columns the JS side
/// reads fastest: sequence numbers, role codes (`NOT_PLAIN`: the line must be read), every
/// entry's id joined by `\n`, where each plain entry's parentId is (`PARENT_NULL`,
/// `PARENT_LISTED`: the next of `parents`, else an index into this batch), the listed parent
/// ids, each after a `\n`, and the plain entries' timestamps.
#[napi(object)]
pub struct EntryBatch {
    /// For a path: how many entries of the path the caller holds stay.
    pub kept: u32,
    pub seqs: Uint32Array,
    pub roles: Uint8Array,
    pub ids: String,
    pub parent_at: Int32Array,
    pub parents: String,
    /// The plain entries' timestamps, each of `TIMESTAMP_LEN` characters.
    pub timestamps: String,
}

fn batch(
    session: &Session,
    kept: u64,
    entries: treelog::IndexedEntries,
) -> treelog::Result<EntryBatch> {
    Ok(EntryBatch {
        kept: seq32(session, kept)?,
        seqs: seqs32(session, entries.seqs)?,
        roles: Uint8Array::new(entries.roles),
        ids: entries.ids,
        parent_at: Int32Array::new(entries.parent_at),
        parents: entries.parents,
        timestamps: entries.timestamps,
    })
}

/// The codes of an [`EntryBatch`]: `[NOT_PLAIN, PARENT_NULL, PARENT_LISTED, TIMESTAMP_LEN]`.
#[napi]
pub fn entry_batch_codes() -> Vec<i32> {
    vec![
        i32::from(treelog::NOT_PLAIN),
        treelog::PARENT_NULL,
        treelog::PARENT_LISTED,
        treelog::TIMESTAMP_LEN as i32,
    ]
}

/// The message fields `messageHeadsJson` reads (`treelog::MESSAGE_HEAD_KEYS`).
#[napi]
pub fn message_head_keys() -> Vec<String> {
    treelog::MESSAGE_HEAD_KEYS
        .iter()
        .map(|key| key.to_string())
        .collect()
}

/// The role names of the role codes the index keeps (code `n` is `roles()[n - 1]`).
#[napi]
pub fn role_names() -> Vec<String> {
    treelog::format::line::ROLES
        .iter()
        .map(|role| role.to_string())
        .collect()
}

/// Installs the quiet panic hook when the addon loads: a panic the library catches (redb on a
/// damaged sidecar) must not print into the Node process's output.
#[napi_derive::module_init]
fn init() {
    treelog::quiet_panics::install();
}

enum State {
    /// Bound to a file that is not written yet (`path`), or to none (`inMemory`): the log
    /// lives in memory. `conversation`: it holds a user or assistant message.
    Pending {
        session: Session,
        path: Option<PathBuf>,
        conversation: bool,
    },
    /// On the file.
    File(Session),
    /// A panic left the handle in an unknown state.
    Broken,
    /// `close()` released it.
    Closed,
}

/// One session: a log on disk, or one still in memory.
#[napi]
pub struct NativeSession {
    state: State,
    options: SessionOptions,
    /// What the open has to tell the user about the index, until the JS side takes it.
    notice: Option<Notice>,
    /// pi's `/tree` selector while one is open on this session (`tree_selector_open`).
    tree: Option<TreeSelector>,
}

fn memory_session(path: &Path, text: String, options: &SessionOptions) -> treelog::Result<Session> {
    Session::open_storage(
        Box::new(MemoryStorage::new(path, text.into_bytes())),
        options.clone(),
    )
}

/// What an open has to say about its index: [`treelog::IndexState::notice`] and its code.
#[napi(object)]
pub struct Notice {
    /// `TREELOG_INDEX_REBUILT` (the index was rebuilt from the log) or
    /// `TREELOG_INDEX_UNWRITTEN` (the session reads the log into memory instead).
    pub code: String,
    pub message: String,
}

fn notice_of(session: &Session) -> Option<Notice> {
    let sidecar = session.sidecar().map_or_else(
        || treelog::sidecar_path(session.log_path()),
        Path::to_path_buf,
    );
    let state = session.index_state();
    let code = match state {
        treelog::IndexState::Rebuilt { .. } => "TREELOG_INDEX_REBUILT",
        _ => "TREELOG_INDEX_UNWRITTEN",
    };
    state.notice(&sidecar).map(|message| Notice {
        code: code.into(),
        message: format!("treelog: {message}"),
    })
}

/// The log of a session as text: its header line and every entry line.
fn log_text(session: &Session) -> treelog::Result<String> {
    let mut text = String::with_capacity(session.header().json.len() + 1);
    text.push_str(&session.header().json);
    text.push('\n');
    for entry in session.entries()? {
        text.push_str(&entry?.json);
        text.push('\n');
    }
    Ok(text)
}

fn entries_array<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for (index, line) in lines.enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(line);
    }
    out.push(']');
    out
}

#[napi]
impl NativeSession {
    /// Opens the log at `path`, which exists.
    #[napi(factory)]
    pub fn open(path: String, open: Option<OpenOptions>) -> Result<NativeSession> {
        let options = options(&open.unwrap_or_default())?;
        let session = guarded(|| Session::open(Path::new(&path), options.clone()))?;
        Ok(NativeSession {
            notice: notice_of(&session),
            tree: None,
            state: State::File(session),
            options,
        })
    }

    /// What the open found worth telling the user about the index (once; then null).
    #[napi]
    pub fn take_notice(&mut self) -> Option<Notice> {
        self.notice.take()
    }

    /// A session not yet written: `header` is its header line; `path` the file it is written
    /// to once it holds a user or assistant message (none: never written); `entries` lines
    /// it already holds (JSONL, each line ending in `\n`).
    #[napi(factory)]
    pub fn pending(
        header: String,
        path: Option<String>,
        entries: Option<String>,
        open: Option<OpenOptions>,
    ) -> Result<NativeSession> {
        let options = options(&open.unwrap_or_default())?;
        let bound = path.clone().unwrap_or_else(|| "<memory>".into());
        let mut text = header;
        text.push('\n');
        text.push_str(entries.as_deref().unwrap_or_default());
        let session = guarded(|| memory_session(Path::new(&bound), text, &options))?;
        let conversation = guarded(|| has_conversation(&session))?;
        Ok(NativeSession {
            state: State::Pending {
                session,
                path: path.map(PathBuf::from),
                conversation,
            },
            options,
            notice: None,
            tree: None,
        })
    }

    fn session(&self) -> Result<&Session> {
        match &self.state {
            State::Pending { session, .. } | State::File(session) => Ok(session),
            State::Broken => Err(broken()),
            State::Closed => Err(closed()),
        }
    }

    fn session_mut(&mut self) -> Result<&mut Session> {
        match &mut self.state {
            State::Pending { session, .. } | State::File(session) => Ok(session),
            State::Broken => Err(broken()),
            State::Closed => Err(closed()),
        }
    }

    /// Runs a query, closing the handle if it panics.
    fn query<T>(&mut self, body: impl FnOnce(&Session) -> treelog::Result<T>) -> Result<T> {
        let session = self.session()?;
        let result = guarded(|| body(session));
        if let Err(error) = &result
            && error.status == "TREELOG_PANIC"
        {
            self.state = State::Broken;
        }
        result
    }

    /// Whether the log is on disk (false while pi would not have written it yet).
    #[napi]
    pub fn is_written(&self) -> bool {
        matches!(self.state, State::File(_))
    }

    /// The header line as stored.
    #[napi]
    pub fn header_json(&mut self) -> Result<String> {
        self.query(|session| Ok(session.header().json.clone()))
    }

    /// Whether the log has bytes but no readable header (pi 1.6 refuses such a file).
    #[napi]
    pub fn header_recovered(&mut self) -> Result<bool> {
        self.query(|session| Ok(session.header().recovered))
    }

    #[napi]
    pub fn leaf_id(&mut self) -> Result<Option<String>> {
        self.query(|session| session.leaf_id())
    }

    #[napi]
    pub fn entry_json(&mut self, id: String) -> Result<Option<String>> {
        self.query(|session| Ok(session.entry(&id)?.map(|entry| entry.json)))
    }

    #[napi]
    pub fn id_taken(&mut self, id: String) -> Result<bool> {
        self.query(|session| session.id_taken(&id))
    }

    /// pi's `getChildren`: the entries whose tree parent is `id`, in file order.
    #[napi]
    pub fn children_json(&mut self, id: String) -> Result<String> {
        self.query(|session| {
            let mut children = session.children(&id)?;
            children.sort_by_key(|entry| entry.offset_bytes);
            Ok(entries_array(
                children.iter().map(|entry| entry.json.as_str()),
            ))
        })
    }

    /// pi's `getChildren`, as sequence numbers in file order.
    #[napi]
    pub fn children_seqs(&mut self, id: String) -> Result<Uint32Array> {
        self.query(|session| {
            let mut children = session.children(&id)?;
            children.sort_by_key(|entry| entry.offset_bytes);
            let mut seqs = Vec::with_capacity(children.len());
            for child in &children {
                if let Some(seq) = session.entry_seq(&child.id)? {
                    seqs.push(seq);
                }
            }
            seqs32(session, seqs)
        })
    }

    /// Opens pi's `/tree` selector on this session (`Session::tree_selector`), the entry
    /// `leaf` its current leaf, filtered by pi's filter `filter`: its row count, or -1 when
    /// the session holds lines that are not entries (pi's own selector is then the one to use).
    #[napi]
    pub fn tree_selector_open(&mut self, leaf: Option<String>, filter: String) -> Result<i32> {
        let built = self.query(|session| {
            let Some(mut selector) = session.tree_selector(leaf.as_deref())? else {
                return Ok(None);
            };
            let filter = TreeFilter::from_name(&filter);
            if filter != TreeFilter::Default {
                session.tree_selector_filter(&mut selector, filter, &[], &[])?;
            }
            Ok(Some(selector))
        })?;
        self.tree = built;
        Ok(self
            .tree
            .as_ref()
            .map_or(-1, |tree| tree.row_count() as i32))
    }

    /// Filters the open selector again (pi's `applyFilter`): pi's filter name, the search
    /// tokens (lowercased), the ids of folded entries. Its new row count.
    #[napi]
    pub fn tree_selector_filter(
        &mut self,
        filter: String,
        tokens: Vec<String>,
        folded: Vec<String>,
    ) -> Result<u32> {
        let mut tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| {
            session.tree_selector_filter(
                &mut tree,
                TreeFilter::from_name(&filter),
                &tokens,
                &folded,
            )
        });
        let count = tree.row_count();
        self.tree = Some(tree);
        result.map(|()| count)
    }

    /// Rows `start..end` of the open selector as JSON (`Session::tree_selector_rows_json`).
    #[napi]
    pub fn tree_selector_rows(&mut self, start: u32, end: u32) -> Result<String> {
        let tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| session.tree_selector_rows_json(&tree, start, end));
        self.tree = Some(tree);
        result
    }

    /// The row to select for the entry `id`: its own, its nearest listed ancestor's, else the
    /// last (pi's `findNearestVisibleIndex`).
    #[napi]
    pub fn tree_selector_nearest(&mut self, id: String) -> Result<u32> {
        let tree = self.tree.take().ok_or_else(no_tree)?;
        let result =
            self.query(|session| Ok(tree.nearest_row(session.tree_selector_node(&tree, &id)?)));
        self.tree = Some(tree);
        result
    }

    /// pi's `findBranchSegmentStart` from `row`, down or up.
    #[napi]
    pub fn tree_selector_segment(&mut self, row: u32, down: bool) -> Result<u32> {
        let tree = self.tree.as_ref().ok_or_else(no_tree)?;
        Ok(tree.branch_segment_start(row, down))
    }

    /// The `{name, arguments}` of the tool call `id` as pi's selector finds it, or null.
    #[napi]
    pub fn tree_selector_tool_call(&mut self, id: String) -> Result<Option<String>> {
        let tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| session.tree_selector_tool_call(&tree, &id));
        self.tree = Some(tree);
        result
    }

    /// Marks the entry `id` labeled or not in the open selector, for its next filter.
    #[napi]
    pub fn tree_selector_label(&mut self, id: String, labeled: bool) -> Result<()> {
        let mut tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| session.tree_selector_node(&tree, &id));
        if let Ok(node) = result {
            tree.set_labeled(node, labeled);
        }
        self.tree = Some(tree);
        result.map(|_| ())
    }

    /// Drops the open selector.
    #[napi]
    pub fn tree_selector_close(&mut self) {
        self.tree = None;
    }

    #[napi]
    pub fn label(&mut self, id: String) -> Result<Option<String>> {
        self.query(|session| session.label(&id))
    }

    #[napi]
    pub fn session_name(&mut self) -> Result<Option<String>> {
        self.query(|session| session.session_name())
    }

    #[napi]
    pub fn entry_count(&mut self) -> Result<f64> {
        self.query(|session| Ok(session.entry_count()? as f64))
    }

    /// How many entries of type `kind` the session holds, from the index's count per kind
    /// (no line is read); null for a type the index counts only among "any other type".
    #[napi]
    pub fn kind_count(&mut self, kind: String) -> Result<Option<f64>> {
        let kind = EntryKind::from_type_str(&kind);
        if kind == EntryKind::Other {
            return Ok(None);
        }
        self.query(|session| Ok(Some(session.entry_count_of_kind(kind)? as f64)))
    }

    /// pi's usage totals over every entry (`Session::usage_totals`): the sums of `input`,
    /// `output`, `cacheRead`, `cacheWrite` and `cost.total`, then the last assistant
    /// message's `input`, `cacheRead`, `cacheWrite` and 1 (0 and zeros without one); null
    /// when pi's own loop must answer.
    #[napi]
    pub fn usage_totals(&mut self) -> Result<Option<Vec<f64>>> {
        self.query(|session| {
            Ok(session.usage_totals()?.map(|totals| {
                let mut out = totals.values().to_vec();
                out.extend(totals.last_prompt.map(f64::from_bits));
                out.push(if totals.has_last { 1.0 } else { 0.0 });
                out
            }))
        })
    }

    /// pi's session statistics (`Session::session_stats`): the user, assistant and tool
    /// result messages, all messages, the tool calls, then the five usage sums; null when
    /// pi's own loop must answer.
    #[napi]
    pub fn session_stats(&mut self) -> Result<Option<Vec<f64>>> {
        self.query(|session| {
            Ok(session.session_stats()?.map(|(totals, messages)| {
                let mut out: Vec<f64> = totals.messages_by_role.map(|n| n as f64).to_vec();
                out.push(messages as f64);
                out.push(totals.tool_calls as f64);
                out.extend(totals.values());
                out
            }))
        })
    }

    /// The entries pi's `/session` sums read among the `max_records` records from `from`,
    /// cut down to what those sums read (`Session::usage_entries_json`), as the JSON text
    /// `[NEXT, [ENTRY, ...]]` where NEXT is the record to ask from next, or null after the
    /// last; null when pi's own code must read the entries.
    #[napi]
    pub fn usage_entries(&mut self, from: u32, max_records: u32) -> Result<Option<String>> {
        self.query(|session| {
            let Some((entries, next)) =
                session.usage_entries_json(u64::from(from), u64::from(max_records))?
            else {
                return Ok(None);
            };
            let next = if next < session.record_count() {
                next.to_string()
            } else {
                "null".to_string()
            };
            Ok(Some(format!("[{next},{entries}]")))
        })
    }

    /// The sequence numbers of the path to the handle's leaf from its nearest compaction on
    /// (`Session::path_since_compaction`); empty without a leaf.
    #[napi]
    pub fn path_since_compaction_seqs(&mut self) -> Result<Uint32Array> {
        self.query(|session| match session.leaf_seq() {
            None => Ok(Vec::new()),
            Some(leaf) => session
                .path_since_compaction(leaf)?
                .into_iter()
                .map(|seq| seq32(session, seq))
                .collect(),
        })
        .map(Uint32Array::from)
    }

    /// Every entry line in file order, each ending in `\n`: one sequential read of the log,
    /// each line checked against the index (`Session::entry_lines_jsonl`). JS parses it line by
    /// line (`getEntries`, `loadEntriesFromFile`) or copies it (a fork).
    #[napi]
    pub fn entries_jsonl(&mut self) -> Result<String> {
        self.query(|session| session.entry_lines_jsonl())
    }

    /// pi 1.6's `createBranchedSession` without its header: the entries of a session holding
    /// the path from the root to `leaf_id` (`Session::branched_entries`). New label ids come
    /// from `draw_uuid` (pi's `crypto.randomUUID`). When a kept entry is a user or assistant
    /// message, pi writes the new session at once: then `path` (if given) is written here with
    /// `header_line` and the entries (a JS string holds at most 512 MiB) and `written` is true;
    /// otherwise `lines` holds the entry lines, each ending in `\n`, for a session written
    /// later.
    #[napi(ts_return_type = "{ lines?: string; written: boolean }")]
    pub fn branched_entries(
        &mut self,
        leaf_id: String,
        draw_uuid: Function<(), String>,
        path: Option<String>,
        header_line: String,
    ) -> Result<BranchedEntriesJs> {
        let mut failed = None;
        let entries = self.query(|session| {
            session.branched_entries(&leaf_id, || match draw_uuid.call(()) {
                Ok(uuid) => uuid,
                Err(error) => {
                    failed.get_or_insert(error.reason.clone());
                    String::new()
                }
            })
        })?;
        if let Some(reason) = failed {
            return Err(js_error(
                "TREELOG_INVALID_INPUT",
                format!("drawing an entry id failed: {reason}"),
            ));
        }
        let mut lines = String::new();
        for line in &entries.lines {
            lines.push_str(line);
            lines.push('\n');
        }
        if let (true, Some(path)) = (entries.has_conversation, path) {
            // Replaced whole if it exists, as pi's rewrite does.
            let mut bytes = Vec::with_capacity(header_line.len() + 1 + lines.len());
            bytes.extend_from_slice(header_line.as_bytes());
            bytes.push(b'\n');
            bytes.extend_from_slice(lines.as_bytes());
            drop(lines);
            treelog::directory::write_file_atomically(Path::new(&path), &bytes).map_err(to_js)?;
            return Ok(BranchedEntriesJs {
                lines: None,
                written: true,
            });
        }
        Ok(BranchedEntriesJs {
            lines: Some(lines),
            written: false,
        })
    }

    /// pi's `forkFrom` body: a new file at `path` (which must not exist) holding `header_line`
    /// and every entry line of this session (`Session::write_fork`), written and synced here so
    /// that a log of any size forks (a JS string holds at most 512 MiB).
    #[napi]
    pub fn write_fork(&mut self, path: String, header_line: String) -> Result<()> {
        self.query(|session| session.write_fork(Path::new(&path), &header_line))
    }

    /// Whether `id` is on the handle's branch (the leaf or one of its ancestors).
    #[napi]
    pub fn is_on_branch(&mut self, id: String) -> Result<bool> {
        self.query(|session| match (session.entry(&id)?, session.leaf_id()?) {
            (Some(_), Some(leaf)) => session.is_ancestor(&id, &leaf),
            _ => Ok(false),
        })
    }

    /// The entries from the root to `leaf` (default: the handle's leaf); `[]` for an unknown
    /// leaf or none.
    #[napi]
    pub fn branch_json(&mut self, leaf: Option<String>) -> Result<String> {
        self.query(|session| {
            let leaf = match leaf {
                Some(id) if session.entry(&id)?.is_none() => return Ok("[]".into()),
                Some(id) => Some(id),
                None => match session.leaf_id()? {
                    Some(id) => Some(id),
                    None => return Ok("[]".into()),
                },
            };
            let path = session.path(leaf.as_deref())?;
            Ok(entries_array(path.iter().map(|entry| entry.json.as_str())))
        })
    }

    // ---- entries by sequence number: the JS side keeps each entry it parsed ----

    /// The sequence number of the handle's leaf, or null.
    #[napi]
    pub fn leaf_seq(&mut self) -> Result<Option<u32>> {
        self.query(|session| {
            session
                .leaf_seq()
                .map(|seq| seq32(session, seq))
                .transpose()
        })
    }

    /// The sequence number of the entry `id`, or null.
    #[napi]
    pub fn entry_seq(&mut self, id: String) -> Result<Option<u32>> {
        self.query(|session| {
            session
                .entry_seq(&id)?
                .map(|seq| seq32(session, seq))
                .transpose()
        })
    }

    /// The path to `leaf` (default: the handle's leaf) for a caller holding the path to
    /// `known_leaf_seq`: how many entries of the known path stay (`kept`), then the entries
    /// below them, root first. Null for an unknown `leaf`.
    #[napi]
    pub fn path_since(
        &mut self,
        leaf: Option<String>,
        known_leaf_seq: Option<u32>,
    ) -> Result<Option<EntryBatch>> {
        self.query(|session| {
            let leaf_seq = match &leaf {
                Some(id) => match session.entry_seq(id)? {
                    Some(seq) => Some(seq),
                    None => return Ok(None),
                },
                None => session.leaf_seq(),
            };
            let (kept, entries) = session.path_since(leaf_seq, known_leaf_seq.map(u64::from))?;
            batch(session, kept, entries).map(Some)
        })
    }

    /// The sequence numbers of the canonical entries from `from` on, in file order.
    #[napi]
    pub fn entry_seqs_from(&mut self, from: u32) -> Result<Uint32Array> {
        self.query(|session| seqs32(session, session.entry_seqs_from(u64::from(from))?))
    }

    /// The entries `seqs`, as the index knows them.
    #[napi]
    pub fn indexed_entries(&mut self, seqs: Uint32Array) -> Result<EntryBatch> {
        let seqs = seqs64(&seqs);
        self.query(|session| batch(session, 0, session.indexed_entries(&seqs)?))
    }

    /// For each of `seqs`, its message's head (`Session::message_heads`), or null: a JSON
    /// array.
    #[napi]
    pub fn message_heads_json(&mut self, seqs: Uint32Array) -> Result<String> {
        let seqs = seqs64(&seqs);
        self.query(|session| {
            let heads = session.message_heads(&seqs)?;
            let mut out = String::from("[");
            for (index, head) in heads.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(head.as_deref().unwrap_or("null"));
            }
            out.push(']');
            Ok(out)
        })
    }

    /// For each of `seqs`, its model origin (`Session::model_origins`), or 0xFFFFFFFF for none.
    #[napi]
    pub fn model_origins(&mut self, seqs: Uint32Array) -> Result<Uint32Array> {
        let seqs = seqs64(&seqs);
        self.query(|session| {
            let origins = session.model_origins(&seqs)?;
            seqs32(
                session,
                origins.into_iter().map(|origin| origin.unwrap_or(NO_SEQ)),
            )
        })
    }

    /// The lines of the entries `seqs` as one JSON array, in the order given: one
    /// `JSON.parse` of the whole batch costs less than one per line.
    #[napi]
    pub fn lines_json_array(&mut self, seqs: Uint32Array) -> Result<String> {
        let seqs = seqs64(&seqs);
        self.query(|session| session.lines_json_array(&seqs))
    }

    /// The lines of the entries `seqs`, as JSONL in the order given.
    #[napi]
    pub fn lines_jsonl(&mut self, seqs: Uint32Array) -> Result<String> {
        let seqs = seqs64(&seqs);
        self.query(|session| session.lines_jsonl(&seqs))
    }

    /// pi's `buildSessionProjection()` for the handle's leaf as a plan over the entries the
    /// JS side holds (`treelog::ProjectionPlan`).
    #[napi]
    pub fn projection_plan_json(&mut self) -> Result<String> {
        self.query(|session| Ok(session.projection_plan(None)?.to_json()))
    }

    /// pi's `buildContextEntries()` for the handle's leaf, as sequence numbers.
    #[napi]
    pub fn context_entry_seqs(&mut self) -> Result<Uint32Array> {
        self.query(|session| seqs32(session, session.context_entry_seqs(None)?))
    }

    /// pi's `buildSessionContext()` for `leaf` (default: the handle's leaf).
    #[napi]
    pub fn context_json(&mut self, leaf: Option<String>) -> Result<String> {
        self.query(|session| Ok(session.build_context(leaf.as_deref())?.to_json()))
    }

    /// pi's `buildContextEntries()` for the handle's leaf.
    #[napi]
    pub fn context_entries_json(&mut self, leaf: Option<String>) -> Result<String> {
        self.query(|session| {
            let entries = session.context_entries(leaf.as_deref())?;
            Ok(entries_array(
                entries.iter().map(|entry| entry.json.as_str()),
            ))
        })
    }

    /// pi's `buildSessionProjection()` for the handle's leaf.
    #[napi]
    pub fn projection_json(&mut self, leaf: Option<String>) -> Result<String> {
        self.query(|session| Ok(session.build_projection(leaf.as_deref())?.to_json()))
    }

    // ---- moving the leaf ----

    #[napi]
    pub fn branch(&mut self, id: String) -> Result<()> {
        let session = self.session_mut()?;
        guarded(|| session.branch(&id))
    }

    #[napi]
    pub fn reset_leaf(&mut self) -> Result<()> {
        self.session_mut()?.reset_leaf();
        Ok(())
    }

    /// Catches up with what other writers appended and moves the leaf to the log's newest
    /// entry (the last in file order, or a `leaf` row's target).
    #[napi]
    pub fn refresh(&mut self) -> Result<()> {
        let session = self.session_mut()?;
        guarded(|| {
            session.refresh()?;
            match session.log_leaf_id()? {
                Some(leaf) => session.branch(&leaf),
                None => Ok(()),
            }
        })
    }

    // ---- appends: each takes the id and timestamp the JS side drew ----

    /// Appends with `append`, stamped, then writes a pending log to its file when it now
    /// holds a conversation (`conversation`: the entry is a user or assistant message).
    fn appended(
        &mut self,
        id: String,
        timestamp: String,
        conversation: bool,
        append: impl FnOnce(&mut Session) -> treelog::Result<String>,
    ) -> Result<String> {
        let state = std::mem::replace(&mut self.state, State::Broken);
        let options = &self.options;
        let result = catch_unwind(AssertUnwindSafe(move || {
            append_in(state, options, id, timestamp, conversation, append)
        }));
        match result {
            Ok((state, result)) => {
                self.state = state;
                result.map_err(to_js)
            }
            Err(_) => Err(js_error(
                "TREELOG_PANIC",
                "treelog panicked during an append; this session handle is closed",
            )),
        }
    }

    #[napi]
    pub fn append_message(
        &mut self,
        id: String,
        timestamp: String,
        message: String,
        conversation: bool,
    ) -> Result<String> {
        self.appended(id, timestamp, conversation, |session| {
            session.append_message(&message)
        })
    }

    #[napi]
    pub fn append_thinking_level_change(
        &mut self,
        id: String,
        timestamp: String,
        thinking_level: String,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_thinking_level_change(&thinking_level)
        })
    }

    #[napi]
    pub fn append_model_change(
        &mut self,
        id: String,
        timestamp: String,
        provider: String,
        model_id: String,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_model_change(&provider, &model_id)
        })
    }

    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn append_usage(
        &mut self,
        id: String,
        timestamp: String,
        kind: String,
        provider: String,
        model: String,
        usage: String,
        note: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_usage(&kind, &provider, &model, &usage, note.as_deref())
        })
    }

    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn append_compaction(
        &mut self,
        id: String,
        timestamp: String,
        summary: String,
        first_kept_entry_id: Option<String>,
        tokens_before: String,
        details: Option<String>,
        from_hook: Option<bool>,
        usage: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_compaction(
                &summary,
                first_kept_entry_id.as_deref(),
                &tokens_before,
                details.as_deref(),
                from_hook,
                usage.as_deref(),
            )
        })
    }

    #[napi]
    pub fn append_custom_entry(
        &mut self,
        id: String,
        timestamp: String,
        custom_type: String,
        data: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_custom_entry(&custom_type, data.as_deref())
        })
    }

    #[napi]
    pub fn append_custom_message_entry(
        &mut self,
        id: String,
        timestamp: String,
        custom_type: String,
        content: String,
        display: bool,
        details: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_custom_message_entry(&custom_type, &content, display, details.as_deref())
        })
    }

    /// `name` as pi sanitises it (the JS side does that).
    #[napi]
    pub fn append_session_info(
        &mut self,
        id: String,
        timestamp: String,
        name: String,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append(NewEntry::SessionInfo { name })
        })
    }

    /// `label` as pi writes it: absent when undefined, kept when empty.
    #[napi]
    pub fn append_label_change(
        &mut self,
        id: String,
        timestamp: String,
        target_id: String,
        label: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            if session.entry(&target_id)?.is_none() {
                return Err(not_found(session, &target_id));
            }
            session.append(NewEntry::Label { target_id, label })
        })
    }

    #[napi]
    pub fn append_context_edit(
        &mut self,
        id: String,
        timestamp: String,
        target_id: String,
        replacement: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            session.append_context_edit(&target_id, replacement.as_deref())
        })
    }

    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn branch_with_summary(
        &mut self,
        id: String,
        timestamp: String,
        from_id: Option<String>,
        summary: String,
        details: Option<String>,
        from_hook: Option<bool>,
        usage: Option<String>,
    ) -> Result<String> {
        self.appended(id, timestamp, false, |session| {
            if let Some(from) = &from_id
                && session.entry(from)?.is_none()
            {
                return Err(not_found(session, from));
            }
            session.branch_with_summary(
                from_id.as_deref(),
                &summary,
                details.as_deref(),
                from_hook,
                usage.as_deref(),
            )
        })
    }

    /// Releases the session now (its memory, its index handle) instead of when the JS object is
    /// collected: V8 does not see the native memory a session holds, so throwaway sessions (a
    /// context over an entry array) would pile up until a collection. Every later call fails.
    #[napi]
    pub fn close(&mut self) {
        self.state = State::Closed;
    }

    /// Makes appended entries durable and writes the index out.
    #[napi]
    pub fn sync(&mut self) -> Result<()> {
        let session = self.session_mut()?;
        guarded(|| session.sync())
    }
}

/// A sequence number as JS holds it (a `u32`): a log of more than 2^32 lines (at least 12 GiB)
/// is refused rather than have two entries share a number.
/// "No entry" in a sequence number handed to JavaScript (`modelOrigins`): the caller then
/// takes the slower way, so a log whose line 2^32 - 1 has an origin loses nothing.
const NO_SEQ: u64 = u32::MAX as u64;

fn seq32(session: &Session, seq: u64) -> treelog::Result<u32> {
    u32::try_from(seq).map_err(|_| treelog::Error::InvalidInput {
        path: session.log_path().to_path_buf(),
        reason: "the Node package reads logs of at most 2^32 lines".into(),
    })
}

/// Sequence numbers from JavaScript, as the library takes them.
fn seqs64(seqs: &Uint32Array) -> Vec<u64> {
    seqs.iter().map(|&seq| u64::from(seq)).collect()
}

fn seqs32(session: &Session, seqs: impl IntoIterator<Item = u64>) -> treelog::Result<Uint32Array> {
    let seqs = seqs
        .into_iter()
        .map(|seq| seq32(session, seq))
        .collect::<treelog::Result<Vec<u32>>>()?;
    Ok(Uint32Array::new(seqs))
}

fn broken() -> napi::Error<String> {
    js_error(
        "TREELOG_PANIC",
        "this session handle was closed by an earlier panic; open the session again",
    )
}

fn closed() -> napi::Error<String> {
    js_error("TREELOG_INVALID_INPUT", "this session handle was closed")
}

fn closed_error() -> treelog::Error {
    treelog::Error::InvalidInput {
        path: PathBuf::from("<closed>"),
        reason: "this session handle was closed".into(),
    }
}

fn not_found(session: &Session, id: &str) -> treelog::Error {
    treelog::Error::EntryNotFound {
        path: session.log_path().to_path_buf(),
        id: id.into(),
    }
}

/// Whether the session holds a user or assistant message (pi's `_hasConversation`).
fn has_conversation(session: &Session) -> treelog::Result<bool> {
    for entry in session.entries()? {
        let entry = entry?;
        if entry.kind != EntryKind::Message {
            continue;
        }
        let role = entry.field("message").and_then(|message| {
            let found = json_scan::scan(message.get(), &["role"]).ok()?;
            found.fields[0]
                .and_then(json_text_str)
                .map(|role| role.into_owned())
        });
        if matches!(role.as_deref(), Some("user") | Some("assistant")) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// One stamped append on `state`; a pending log that now holds a conversation is written
/// to its file, and the handle continues there. If that write fails, the pending log is as
/// it was before the append.
fn append_in(
    state: State,
    options: &SessionOptions,
    id: String,
    timestamp: String,
    conversation: bool,
    append: impl FnOnce(&mut Session) -> treelog::Result<String>,
) -> (State, treelog::Result<String>) {
    match state {
        State::File(mut session) => {
            let result = stamped(&mut session, id, timestamp, append);
            (State::File(session), result)
        }
        State::Pending {
            mut session,
            path,
            conversation: had_conversation,
        } => {
            let flush_to = path.clone().filter(|_| had_conversation || conversation);
            let Some(file) = flush_to else {
                let result = stamped(&mut session, id, timestamp, append);
                let state = State::Pending {
                    session,
                    path,
                    conversation: had_conversation || (conversation && result.is_ok()),
                };
                return (state, result);
            };
            let before = match log_text(&session).and_then(|text| Ok((text, session.leaf_id()?))) {
                Ok(before) => before,
                Err(error) => {
                    return (
                        State::Pending {
                            session,
                            path,
                            conversation: had_conversation,
                        },
                        Err(error),
                    );
                }
            };
            let result = stamped(&mut session, id, timestamp, append).and_then(|new_id| {
                write_new_file(&file, &log_text(&session)?)?;
                Ok(new_id)
            });
            match result {
                Ok(new_id) => match Session::open(&file, options.clone()) {
                    Ok(mut opened) => {
                        let branched = opened.branch(&new_id).map(|_| new_id);
                        (State::File(opened), branched)
                    }
                    Err(error) => (State::Broken, Err(error)),
                },
                Err(error) => {
                    // Back to the log as it was before the append.
                    let (text, leaf) = before;
                    let restored = memory_session(&file, text, options).and_then(|mut restored| {
                        match leaf {
                            Some(leaf) => restored.branch(&leaf)?,
                            None => restored.reset_leaf(),
                        }
                        Ok(restored)
                    });
                    match restored {
                        Ok(restored) => (
                            State::Pending {
                                session: restored,
                                path,
                                conversation: had_conversation,
                            },
                            Err(error),
                        ),
                        Err(_) => (State::Broken, Err(error)),
                    }
                }
            }
        }
        State::Broken => (State::Broken, Err(panicked_error())),
        State::Closed => (State::Closed, Err(closed_error())),
    }
}

fn panicked_error() -> treelog::Error {
    treelog::Error::InvalidInput {
        path: PathBuf::from("<closed>"),
        reason: "this session handle was closed by an earlier panic".into(),
    }
}

fn stamped(
    session: &mut Session,
    id: String,
    timestamp: String,
    append: impl FnOnce(&mut Session) -> treelog::Result<String>,
) -> treelog::Result<String> {
    session.stamp_next(Stamp { id, timestamp })?;
    append(session)
}

/// Creates `path` exclusively (pi's `"wx"`) holding `text`.
fn write_new_file(path: &Path, text: &str) -> treelog::Result<()> {
    use std::io::Write;
    let io = |operation: &'static str| {
        move |source| treelog::Error::Io {
            path: path.to_path_buf(),
            operation,
            source,
        }
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io("create"))?;
    file.write_all(text.as_bytes()).map_err(io("write"))
}
