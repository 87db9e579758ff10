//! Fuzz target `operations`: a session's appends, branches, refreshes and reopens, with other
//! writers' lines between them, each checked against the reference model of the session API
//! (`crate::model`, which the model test shares): after every operation the handle answers as
//! the model of what it has read says.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use treelog::storage::{FileIdentity, LogStorage};
use treelog::{Error, OnConflict, Session, SessionOptions};

use super::input::Input;
use super::open_log::{answers, check_open_matches_replay};
use crate::model::Model;
use crate::model::handle::{Append, Handle};

/// A log in memory that the test can also write to directly, as another process would.
#[derive(Clone, Default)]
pub struct SharedLog {
    pub bytes: Arc<Mutex<Vec<u8>>>,
}

impl SharedLog {
    pub fn storage(&self) -> Box<dyn LogStorage> {
        Box::new(SharedStorage { log: self.clone() })
    }

    pub fn snapshot(&self) -> Vec<u8> {
        self.bytes.lock().expect("log lock").clone()
    }

    /// Appends `bytes`; returns the log's length just after them.
    fn push(&self, bytes: &[u8]) -> u64 {
        let mut log = self.bytes.lock().expect("log lock");
        log.extend_from_slice(bytes);
        log.len() as u64
    }
}

struct SharedStorage {
    log: SharedLog,
}

impl LogStorage for SharedStorage {
    fn path(&self) -> &Path {
        Path::new("/fuzz/operations.jsonl")
    }

    fn identity(&self) -> io::Result<FileIdentity> {
        Ok(FileIdentity {
            len_bytes: self.log.bytes.lock().expect("log lock").len() as u64,
            ..FileIdentity::default()
        })
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let bytes = self.log.bytes.lock().expect("log lock");
        Ok(treelog::storage::read_bytes_at(&bytes, offset, buf))
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        Ok(self.log.push(bytes))
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn lock(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn unlock(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Operations bounded per input, so one input never runs long.
const OPERATIONS_MAX: usize = 64;

/// Arbitrary operations on a session over a shared in-memory log, checked after each one
/// against the model; at the end the log is reopened without and with an index.
pub fn operations(data: &[u8]) {
    let mut input = Input { bytes: data };
    let log = SharedLog::default();
    let mut session =
        Session::open_storage(log.storage(), SessionOptions::default()).expect("open empty log");
    let mut handle = Handle::opened(&log.snapshot());
    let mut external_count = 0;
    let mut operation_count = 0;
    while !input.is_empty() && operation_count < OPERATIONS_MAX {
        operation_count += 1;
        let op = input.below(17);
        match op {
            // Appends of every type through the session.
            0..=8 => append(&mut session, &mut handle, &log, &mut input, op),
            9 => {
                let view = handle.view(&log.snapshot());
                if let Some(index) = pick_seen(&view, &mut input) {
                    session
                        .branch(&view.entries[index].id)
                        .expect("branch to an existing entry");
                    handle.leaf = Some(index);
                }
            }
            10 => {
                session.reset_leaf();
                handle.leaf = None;
            }
            11 => {
                session.refresh().expect("refresh");
                handle.refresh(&log.snapshot());
            }
            12 => {
                // Reopen: the handle starts at the log's leaf.
                drop(session);
                session = Session::open_storage(log.storage(), SessionOptions::default())
                    .expect("reopen");
                handle = Handle::opened(&log.snapshot());
            }
            13..=15 => external_append(&mut external_count, &log, &mut input),
            _ => append_batch(&mut session, &mut handle, &log, &mut input),
        }
        let bytes = log.snapshot();
        if std::env::var_os("TREELOG_FUZZ_TRACE").is_some() {
            eprintln!(
                "op {op}: leaf {:?} handle {handle:?} log {:?}",
                session.leaf_id(),
                String::from_utf8_lossy(&bytes)
            );
        }
        handle.view(&bytes).check_session(
            &format!("op {operation_count} ({op})"),
            &mut session,
            handle.leaf,
        );
    }
    drop(session);

    // Reopened in memory, then as a file with and without an index: all agree.
    let bytes = log.snapshot();
    if bytes.is_empty() {
        return;
    }
    let reopened = Session::open_storage(log.storage(), SessionOptions::default()).expect("reopen");
    let now = Model::parse(&bytes);
    assert_eq!(
        reopened.leaf_id().expect("leaf"),
        now.id(now.log_leaf),
        "leaf after reopen"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("operations.jsonl");
    std::fs::write(&path, &bytes).expect("write log");
    check_open_matches_replay(&path, &bytes);
    let on_disk = Session::open(&path, SessionOptions::default()).expect("open file");
    let in_memory = answers(&reopened, &bytes).replace("/fuzz/operations.jsonl", "");
    let from_file = answers(&on_disk, &bytes).replace(&path.display().to_string(), "");
    assert_eq!(
        in_memory, from_file,
        "a log in memory and in a file answer alike"
    );
}

/// Any entry of the log (what another writer, reading the whole file, may name).
fn pick(now: &Model, input: &mut Input<'_>) -> Option<String> {
    if now.entries.is_empty() {
        return None;
    }
    Some(now.entries[input.below(now.entries.len())].id.clone())
}

/// An entry the handle has read (`view`: the model of what it has read; entries appended by
/// others since are unknown to it), as its index there.
fn pick_seen(view: &Model, input: &mut Input<'_>) -> Option<usize> {
    if view.entries.is_empty() {
        return None;
    }
    Some(input.below(view.entries.len()))
}

fn message_json(input: &mut Input<'_>) -> String {
    let role = ["user", "assistant", "toolResult", "custom"][input.below(4)];
    let text = input.text(40);
    // Content that is JSON is used as it is; anything else becomes a string.
    let content = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(_) if !text.trim().is_empty() => text.clone(),
        _ => serde_json::to_string(&text).expect("a string serialises"),
    };
    format!(
        r#"{{"role":"{role}","content":{content},"provider":"p","model":"m{}","timestamp":{}}}"#,
        input.below(3),
        input.byte()
    )
}

/// An append through the session, its arguments already read from the input.
type Call = Box<dyn FnOnce(&mut Session) -> treelog::Result<String>>;

/// One append through the session (op 0..=8 picks the entry type).
fn append(
    session: &mut Session,
    handle: &mut Handle,
    log: &SharedLog,
    input: &mut Input<'_>,
    op: usize,
) {
    let before = log.snapshot();
    let view = handle.view(&before);
    let seen_id = |index: usize| view.entries[index].id.clone();
    // The arguments first (they read the input), then the model's prediction, then the call.
    let call: Call = match op {
        0 => {
            let message = message_json(input);
            Box::new(move |session| session.append_message(&message))
        }
        1 => {
            let level = ["off", "low", "high", ""][input.below(4)];
            Box::new(move |session| session.append_thinking_level_change(level))
        }
        2 => {
            let model_id = input.text(8);
            Box::new(move |session| session.append_model_change("p", &model_id))
        }
        3 => {
            let first_kept = pick_seen(&view, input).map_or_else(|| "missing".into(), seen_id);
            let summary = input.text(16);
            Box::new(move |session| {
                session.append_compaction(&summary, Some(&first_kept), "100", None, None, None)
            })
        }
        4 => {
            // branch_with_summary moves the leaf before it appends.
            let from = pick_seen(&view, input);
            handle.leaf = from;
            let from = from.map(seen_id);
            let summary = input.text(16);
            Box::new(move |session| {
                session.branch_with_summary(from.as_deref(), &summary, Some("{}"), Some(true), None)
            })
        }
        5 => {
            let custom_type = input.text(8);
            Box::new(move |session| session.append_custom_entry(&custom_type, Some(r#"{"n":1}"#)))
        }
        6 => {
            let display = input.byte().is_multiple_of(2);
            Box::new(move |session| {
                session.append_custom_message_entry("ext", r#""shown""#, display, None)
            })
        }
        7 => {
            let Some(target) = pick_seen(&view, input).map(seen_id) else {
                return;
            };
            let label = input.text(6);
            Box::new(move |session| session.append_label_change(&target, Some(&label)))
        }
        _ => {
            let name = input.text(12);
            Box::new(move |session| session.append_session_info(&name))
        }
    };
    // The append reads the log first: the conflict rule applies to what others wrote.
    let expected = handle.before_append(&before, OnConflict::Fail);
    let result = call(session);
    match (result, expected) {
        (Ok(id), Append::Writes) => {
            let after = log.snapshot();
            handle.appended(&after);
            let now = Model::parse(&after);
            assert_eq!(now.id(handle.leaf), Some(id), "the log's last entry");
        }
        (Err(Error::Conflict { their_id, .. }), Append::Conflict { their_id: expected }) => {
            assert_eq!(their_id, expected, "the conflicting entry");
            assert_eq!(log.snapshot(), before, "a conflict writes nothing");
        }
        (result, expected) => {
            panic!("append gave {result:?}, the model expected {expected:?}")
        }
    }
}

/// `append_many` of 1 to 4 messages built as `NewEntry` values, their raw JSON sometimes
/// spread over several lines (the encoder must keep each entry on one line).
fn append_batch(
    session: &mut Session,
    handle: &mut Handle,
    log: &SharedLog,
    input: &mut Input<'_>,
) {
    let count = 1 + input.below(4);
    let entries: Vec<treelog::NewEntry> = (0..count)
        .map(|_| {
            let mut json = message_json(input);
            if input.byte().is_multiple_of(3) {
                // Only between tokens: these spots are outside any string.
                json = json
                    .replacen("{\"role\":", "{\"role\"\r\n:", 1)
                    .replacen("\",\"content\":", "\",\n\"content\":", 1)
                    .replacen(",\"provider\":\"p\"", ",\n\"provider\":\"p\"", 1);
            }
            treelog::NewEntry::Message {
                message: serde_json::value::RawValue::from_string(json).expect("valid JSON"),
            }
        })
        .collect();
    let before = log.snapshot();
    let expected = handle.before_append(&before, OnConflict::Fail);
    let result = session.append_many(entries);
    match (result, expected) {
        (Ok(ids), Append::Writes) => {
            assert_eq!(ids.len(), count, "one id per entry");
            let after = log.snapshot();
            handle.appended(&after);
            let now = Model::parse(&after);
            let last: Vec<&str> = now.entries[now.entries.len() - count..]
                .iter()
                .map(|entry| entry.id.as_str())
                .collect();
            assert_eq!(last, ids, "the log's last entries");
        }
        (Err(Error::Conflict { their_id, .. }), Append::Conflict { their_id: expected }) => {
            assert_eq!(their_id, expected, "the conflicting entry");
            assert_eq!(log.snapshot(), before, "a conflict writes nothing");
        }
        (result, expected) => {
            panic!("append_many gave {result:?}, the model expected {expected:?}")
        }
    }
}

/// Another writer appends raw bytes: an entry line in pi's format, a garbage line, or a torn
/// tail (garbage lines and tails start with `#`, so they are never JSON). It writes only once
/// the log has its header.
fn external_append(external_count: &mut u64, log: &SharedLog, input: &mut Input<'_>) {
    let bytes = log.snapshot();
    if bytes.is_empty() {
        return;
    }
    match input.below(4) {
        0 | 1 => {
            *external_count += 1;
            let id = format!("ext{external_count}");
            let parent = match input.below(3) {
                0 => None,
                _ => pick(&Model::parse(&bytes), input),
            };
            let parent_json = parent
                .as_ref()
                .map_or("null".to_string(), |parent| format!("\"{parent}\""));
            let line = format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent_json},"timestamp":"2026-01-01T00:00:0{}.000Z","message":{}}}"#,
                input.below(10),
                message_json(input)
            );
            log.push(line.as_bytes());
            log.push(b"\n");
        }
        2 => {
            let mut garbage = b"#".to_vec();
            garbage.extend(input.take(20).iter().filter(|b| **b != b'\n'));
            garbage.push(b'\n');
            log.push(&garbage);
        }
        _ => {
            let mut torn = b"#".to_vec();
            torn.extend(input.take(20).iter().filter(|b| **b != b'\n'));
            log.push(&torn);
        }
    }
}
