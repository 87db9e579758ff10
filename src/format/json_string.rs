//! Strings written as JSON, the way `JSON.stringify` writes them. Pure; below both the line
//! reader (`line.rs`, which writes a field back) and the writer (`write.rs`), which re-exports
//! [`push_json_string`] where the public API has it.

/// `value` as a JSON string, written by [`push_json_string`].
pub(crate) fn json_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    push_json_string(&mut out, value);
    out
}

/// Writes `value` as a JSON string the way `JSON.stringify` does: raw UTF-8, escapes only for
/// `"`, `\` and control characters.
pub fn push_json_string(out: &mut String, value: &str) {
    // Ids and timestamps, written with every entry, need no escape: no allocation for them.
    if !value
        .bytes()
        .any(|byte| byte == b'"' || byte == b'\\' || byte < 0x20)
    {
        out.push('"');
        out.push_str(value);
        out.push('"');
        return;
    }
    // serde_json's escaping matches JSON.stringify for every Rust string (which cannot hold the
    // lone surrogates where the two differ).
    out.push_str(&serde_json::to_string(value).expect("serialising a &str to JSON cannot fail"));
}
