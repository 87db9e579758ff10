//! pi writes nothing until a session holds a user or assistant message. Until then a session
//! bound to a file lives in memory ([`State::Pending`], a treelog session over a memory log);
//! the append that brings the first such message writes the whole log to the file in one
//! write (created exclusively, as pi's `"wx"`), and the handle continues on the file.

use std::path::{Path, PathBuf};

use treelog::format::json_scan;
use treelog::format::line::json_text_str;
use treelog::storage::MemoryStorage;
use treelog::{EntryKind, Session, SessionOptions, Stamp};

use crate::errors::{closed_error, panicked_error};

pub(crate) enum State {
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

pub(crate) fn memory_session(
    path: &Path,
    text: String,
    options: &SessionOptions,
) -> treelog::Result<Session> {
    Session::open_storage(
        Box::new(MemoryStorage::new(path, text.into_bytes())),
        options.clone(),
    )
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

/// Whether the session holds a user or assistant message (pi's `_hasConversation`).
pub(crate) fn has_conversation(session: &Session) -> treelog::Result<bool> {
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
pub(crate) fn append_in(
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
