//! A Claude Code session or a Codex rollout carried over to a pi v3 session
//! (format-spec/convert.md): the conversation as pi's entries (`message` with `user`,
//! `assistant` and `toolResult` messages, `model_change`, `compaction`, `session_info`),
//! linked by `parentId` as the source's tree links them, and a list of every line or part of
//! a line that pi has no place for. Pure code over bytes: no I/O, no clock; the caller gives
//! the session id, and writes the text.
//!
//! - `types.rs`: what a conversion is asked and what it gives.
//! - `builder.rs`: the pi entries being written, their ids, and the list of what is not carried.
//! - `claude.rs`: Claude Code's tree, its assistant lines merged per API message, its compact
//!   boundary as a compaction.
//! - `codex.rs`: Codex's chain, its response items grouped into pi messages, its `compacted`
//!   line as a compaction.

mod builder;
mod claude;
mod codex;
mod types;

use super::transcript::Format;

pub use types::{ConvertError, Converted, NotCarried, Options};

/// Converts a session file's bytes to a pi v3 session.
pub fn to_pi(bytes: &[u8], options: &Options) -> Result<Converted, ConvertError> {
    match super::detect(bytes) {
        Some(Format::ClaudeCode) => Ok(claude::convert(bytes, options)),
        Some(Format::Codex) => Ok(codex::convert(bytes, options)),
        Some(Format::Pi) => Err(ConvertError::AlreadyPi),
        None => Err(ConvertError::UnknownFormat(super::DETECT_LINES_MAX)),
    }
}
