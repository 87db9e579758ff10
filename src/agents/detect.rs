//! Which agent wrote a session file, from its first lines (format-spec/claude-code.md §6,
//! format-spec/codex.md §6): pi's header `{"type":"session",...}`, Codex's
//! `{"type":"session_meta","payload":{...}}`, or a Claude Code line (a tree entry with
//! `uuid`, `parentUuid` and `sessionId`, or a metadata line with a top-level `sessionId`).

use super::lines::{object, split, string};
use super::transcript::Format;

/// How many lines [`detect`] reads before it gives up.
pub const DETECT_LINES_MAX: usize = 64;

/// The format of a file whose first bytes are `head` (a whole file, or its start: a line cut
/// at the end of `head` is not read), or `None` when no line of the first
/// [`DETECT_LINES_MAX`] decides.
pub fn detect(head: &[u8]) -> Option<Format> {
    let complete = match memchr::memrchr(b'\n', head) {
        Some(last) => &head[..=last],
        None => head,
    };
    for line in split(complete).iter().take(DETECT_LINES_MAX) {
        let Some(map) = object(line.bytes) else {
            continue;
        };
        let Some(kind) = string(&map, "type") else {
            continue;
        };
        if kind == "session" && map.contains_key("version") && map.contains_key("id") {
            return Some(Format::Pi);
        }
        if kind == "session_meta" && map.get("payload").is_some_and(|p| p.is_object()) {
            return Some(Format::Codex);
        }
        if map.contains_key("sessionId") && !map.contains_key("payload") {
            return Some(Format::ClaudeCode);
        }
    }
    None
}
