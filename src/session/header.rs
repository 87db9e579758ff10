//! The session header: the log's first line when it is one, or a header made up in memory for
//! a log that has none (OpenClaw's `recoveredCorruptHeader`), and the clock new headers and
//! stamps read. Reads the header line through the index; knows nothing of the handle.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::format::ids::{new_session_id, uuid_v8_from_name};
use crate::format::line::{Line, classify};
use crate::format::time::format_iso_ms;
use crate::format::write::encode_header;
use crate::index::Store;
use crate::storage::{LogStorage, read_exact_at};

/// The session header (first line of the log).
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The header line as stored, or as synthesised when the log has none.
    pub json: String,
    pub id: String,
    pub version: u32,
    pub timestamp: Option<String>,
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    /// The log has no readable header (missing, corrupt or not first); this one was made up in
    /// memory and the file was left as it is (OpenClaw's `recoveredCorruptHeader`).
    pub recovered: bool,
}

impl Header {
    pub(super) fn parse(json: String, recovered: bool) -> Option<Header> {
        let header = match classify(&json, false, true) {
            Line::Header(header) => Header {
                id: header.id.into_owned(),
                version: header.version,
                timestamp: header.timestamp.map(Cow::into_owned),
                cwd: header.cwd.map(Cow::into_owned),
                parent_session: header.parent_session.map(Cow::into_owned),
                json: String::new(),
                recovered,
            },
            _ => return None,
        };
        Some(Header { json, ..header })
    }

    /// The file name pi gives this session: `<timestamp with : and . as ->_<id>.jsonl`.
    pub fn file_name(&self) -> String {
        let timestamp = self.timestamp.as_deref().unwrap_or_default();
        format!("{}_{}.jsonl", timestamp.replace([':', '.'], "-"), self.id)
    }

    pub(super) fn new(
        id: String,
        cwd: &str,
        parent_session: Option<&str>,
        recovered: bool,
    ) -> Header {
        let timestamp = format_iso_ms(now_ms());
        let json = encode_header(&id, &timestamp, cwd, parent_session);
        Header::parse(json, recovered).expect("an encoded header parses as a header")
    }
}

/// The header a log of `log_len` bytes has: its first line's, or one made up in memory
/// (recovered when the log has bytes but no header; pending when it is empty).
pub(super) fn log_header(storage: &dyn LogStorage, store: &Store, log_len: u64) -> Result<Header> {
    let state = &store.state;
    let header = if state.first_line_is_header() {
        let mut bytes = vec![0; state.header_len_bytes as usize];
        read_exact_at(storage, state.header_offset_bytes, &mut bytes)
            .map_err(|e| Error::io(storage.path(), "read the log", e))?;
        Header::parse(String::from_utf8_lossy(&bytes).into_owned(), false)
    } else {
        None
    };
    Ok(match header {
        Some(header) => header,
        None => {
            let cwd = std::env::current_dir()
                .map(|dir| dir.to_string_lossy().into_owned())
                .unwrap_or_default();
            // An empty log gets a new session's header, written with its first append, as pi
            // writes one into an empty file: a fresh UUIDv7 (a handle that finds the log
            // written by another adopts that header). A log with bytes but no header gets an
            // id derived from its path, so that every open, and `treelog repair`'s header,
            // agree on it.
            let id = if log_len == 0 {
                new_session_id(now_ms())
            } else {
                uuid_v8_from_name(storage.path().as_os_str().as_encoded_bytes())
            };
            Header::new(id, &cwd, None, log_len > 0)
        }
    })
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or(0)
}
