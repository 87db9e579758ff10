//! What a message payload's leading keys say without parsing it: its role, and whether it
//! has a content that is not null. pi writes `role` first (and a tool result's `toolCallId`
//! and `toolName` before `content`), so the common case is read from those keys. Pure.

use std::borrow::Cow;

use super::fields::json_text_str;
use super::json_scan;

/// The roles a message can have, numbered from 1 by [`role_code`]; 15 is any other string.
pub const ROLES: [&str; 8] = [
    "user",
    "assistant",
    "toolResult",
    "system",
    "custom",
    "bashExecution",
    "branchSummary",
    "compactionSummary",
];

/// The number of a message role: its place in [`ROLES`] plus one, 15 for another string, 0
/// for none.
pub fn role_code(role: Option<&str>) -> u8 {
    match role {
        None => 0,
        Some(role) => ROLES
            .iter()
            .position(|known| *known == role)
            .map_or(15, |at| at as u8 + 1),
    }
}

/// The decoded `role` of a raw message, if it is an object with a string role.
pub(crate) fn message_role(message: &str) -> Option<Cow<'_, str>> {
    if let Some(role) = message.strip_prefix("{\"role\":\"")
        && let Some(end) = role.find(['"', '\\'])
        && role.as_bytes()[end] == b'"'
    {
        return Some(Cow::Borrowed(&role[..end]));
    }
    let found = json_scan::scan(message, &["role"]).ok()?;
    found.fields[0].and_then(json_text_str)
}

/// The role code of a message payload (valid JSON): its top-level `role`, when a string.
pub(crate) fn message_role_code(message: &str) -> u8 {
    role_code(message_role(message).as_deref())
}

/// Whether pi 1.6's context hands out the message `message` (role code `role`) as stored: it
/// fills in a missing or null `content` of a user, assistant, tool result or system message
/// (`sessionEntryToContextMessages`), so such a message counts as kept only when its leading
/// keys show a content that is not null.
pub(crate) fn content_kept(role: u8, message: &str) -> bool {
    !matches!(role, 1..=4) || message_content_present(message) == Some(true)
}

/// Whether a message laid out as pi writes it has a `content` that is not null, read from its
/// leading keys: pi writes `role` first, and for a tool result `toolCallId` and `toolName`
/// before `content`. Leading keys are walked while their values are strings without escapes
/// (a line read through the index was valid JSON when indexed and its crc32 matched); `None`
/// for any other layout, which the caller scans. A tool result would otherwise be scanned
/// whole for each context build (a third of a context's time on pi's transcripts), and a
/// plain entry's message is known to keep its content from these keys alone.
pub(crate) fn message_content_present(message: &str) -> Option<bool> {
    let mut rest = message.strip_prefix('{')?;
    for _ in 0..4 {
        let key_and_rest = rest.strip_prefix('"')?;
        let key_end = key_and_rest.find(['"', '\\'])?;
        if key_and_rest.as_bytes()[key_end] != b'"' {
            return None;
        }
        let key = &key_and_rest[..key_end];
        let value = key_and_rest[key_end + 1..].strip_prefix(':')?;
        if key == "content" {
            return match value.as_bytes().first()? {
                b'n' => Some(false),
                b' ' | b'\t' | b'\r' | b'\n' => None,
                _ => Some(true),
            };
        }
        let text = value.strip_prefix('"')?;
        let end = text.find(['"', '\\'])?;
        if text.as_bytes()[end] != b'"' {
            return None;
        }
        rest = text[end + 1..].strip_prefix(',')?;
    }
    None
}
