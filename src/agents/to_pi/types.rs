//! What a conversion is asked for and what it gives.

use crate::agents::transcript::Format;

/// What the conversion is asked for.
#[derive(Clone, Debug)]
pub struct Options {
    /// Every branch of the source (Claude Code's rewinds), not only the active one.
    pub all_branches: bool,
    /// The pi session's id (the header's `id`); entry ids are derived from it.
    pub session_id: String,
    /// The header's `cwd` when the source names none.
    pub fallback_cwd: String,
}

/// A part of the source that the pi session does not carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotCarried {
    /// The source line's number, from 1.
    pub line: usize,
    /// The line's byte offset in the source.
    pub offset: usize,
    /// What it is: the line's `type`, with its subtype after a `:` where it has one
    /// (`attachment:environment`, `event_msg:token_count`), or a part of a line
    /// (`compacted.replacement_history`).
    pub kind: String,
    /// Why pi has no place for it.
    pub reason: String,
}

/// A pi session made from another agent's session.
#[derive(Clone, Debug)]
pub struct Converted {
    /// The format the source was read as.
    pub source: Format,
    /// The session's JSONL text: the header, then one entry a line, each ending in `\n`.
    pub text: String,
    /// The header's `cwd`.
    pub cwd: String,
    /// The header's `timestamp` (the source's first time, else the Unix epoch).
    pub timestamp: String,
    /// How many entries follow the header.
    pub entries: usize,
    /// The id of the last entry: pi's leaf, the source's active leaf.
    pub leaf: Option<String>,
    /// What was not carried over, in source order.
    pub not_carried: Vec<NotCarried>,
}

/// Why a file cannot be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The file is a pi session already.
    #[error("already a pi session: nothing to convert")]
    AlreadyPi,
    /// No line says which agent wrote the file.
    #[error(
        "not a Claude Code session nor a Codex rollout: no line of the first {0} says which agent wrote it"
    )]
    UnknownFormat(usize),
}
