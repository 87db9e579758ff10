//! How a session is opened: the options of the `SessionManager` factories, and what an open
//! has to tell the user about its index.

use std::path::{Path, PathBuf};

use napi_derive::napi;
use treelog::{Durability, OnConflict, Session, SessionOptions};

use crate::errors::{Result, js_error};

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
pub(crate) fn options(open: &OpenOptions) -> Result<SessionOptions> {
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

/// What an open has to say about its index: [`treelog::IndexState::notice`] and its code.
#[napi(object)]
pub struct Notice {
    /// `TREELOG_INDEX_REBUILT` (the index was rebuilt from the log) or
    /// `TREELOG_INDEX_UNWRITTEN` (the session reads the log into memory instead).
    pub code: String,
    pub message: String,
}

pub(crate) fn notice_of(session: &Session) -> Option<Notice> {
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
