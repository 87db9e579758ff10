//! `NativeSession`: one `treelog::Session` per pi `SessionManager`, a log on disk or one still
//! in memory (`crate::pending`). Each query answers with one JSON string, parsed on the JS
//! side: one string per call costs far less than objects built field by field.

use std::path::{Path, PathBuf};

use napi::bindgen_prelude::Function;
use napi_derive::napi;
use treelog::{EntryKind, Session, SessionOptions, TreeSelector};

use crate::errors::{Result, broken, closed, guarded, js_error, to_js};
use crate::open::{Notice, OpenOptions, notice_of, options};
use crate::pending::{State, has_conversation, memory_session};

/// What `NativeSession::branched_entries` answers.
#[napi(object)]
pub struct BranchedEntriesJs {
    /// The entry lines, when the native half did not write them.
    pub lines: Option<String>,
    /// Whether the native half wrote the session file.
    pub written: bool,
}

/// One session: a log on disk, or one still in memory.
#[napi]
pub struct NativeSession {
    pub(crate) state: State,
    pub(crate) options: SessionOptions,
    /// What the open has to tell the user about the index, until the JS side takes it.
    pub(crate) notice: Option<Notice>,
    /// pi's `/tree` selector while one is open on this session (`tree_selector_open`).
    pub(crate) tree: Option<TreeSelector>,
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

    pub(crate) fn session(&self) -> Result<&Session> {
        match &self.state {
            State::Pending { session, .. } | State::File(session) => Ok(session),
            State::Broken => Err(broken()),
            State::Closed => Err(closed()),
        }
    }

    pub(crate) fn session_mut(&mut self) -> Result<&mut Session> {
        match &mut self.state {
            State::Pending { session, .. } | State::File(session) => Ok(session),
            State::Broken => Err(broken()),
            State::Closed => Err(closed()),
        }
    }

    /// Runs a query, closing the handle if it panics.
    pub(crate) fn query<T>(
        &mut self,
        body: impl FnOnce(&Session) -> treelog::Result<T>,
    ) -> Result<T> {
        let session = self.session()?;
        let result = guarded(|| body(session));
        if let Err(error) = &result
            && error.status == "TREELOG_PANIC"
        {
            self.state = State::Broken;
        }
        result
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

    /// Releases the session now (its memory, its index handle) instead of when the JS object is
    /// collected: V8 does not see the native memory a session holds, so throwaway sessions (a
    /// context over an entry array) would pile up until a collection. Every later call fails.
    #[napi]
    pub fn close(&mut self) {
        self.state = State::Closed;
    }
}

/// The lines as one JSON array.
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
