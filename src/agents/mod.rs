//! Other agents' session files, read-only: Claude Code's sessions (`~/.claude/projects/`) and
//! Codex CLI's rollouts (`~/.codex/sessions/`), as format-spec/claude-code.md and
//! format-spec/codex.md describe them. Pure code over bytes: no I/O, no clock; any bytes give a
//! [`Transcript`] (with its problems listed), never a panic. Nothing here writes their files.
//!
//! - `transcript.rs`: [`Format`], [`Transcript`] and its lines, entries and problems.
//! - `lines.rs`: a file's bytes as JSONL lines.
//! - `detect.rs`: [`detect`], the format from a file's first bytes.
//! - `claude_code.rs`: a Claude Code session as a tree, its leaf and its line classes.
//! - `codex.rs`: a Codex rollout as a chain, and the context Codex sends next.
//! - `summary.rs`: [`Summary`], a session's id, title, times and counts.
//! - `text.rs`: [`line_text`], the readable text of a line, as search and export read it.
//! - `to_pi/`: either carried over to a pi v3 session ([`to_pi::to_pi`]), with what pi has no
//!   place for listed.

pub mod claude_code;
pub mod codex;
mod detect;
mod lines;
mod summary;
mod text;
pub mod to_pi;
mod transcript;

pub use detect::{DETECT_LINES_MAX, detect};
pub use summary::{Summary, summarize};
pub use text::{LineText, line_text};
pub use transcript::{Entry, Format, Line, Problem, ProblemKind, Transcript};

/// A Claude Code session or a Codex rollout read from its bytes, or `None` when the bytes
/// are neither's ([`detect`] decides; a pi session is `None` too).
pub fn read(bytes: &[u8]) -> Option<Transcript> {
    match detect(bytes)? {
        Format::ClaudeCode => Some(claude_code::parse(bytes)),
        Format::Codex => Some(codex::parse(bytes)),
        Format::Pi => None,
    }
}
