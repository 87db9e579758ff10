//! Names read from data (an agent id, a session id, an object key's parts) as path
//! components: the one rule every caller uses before such a name becomes part of a path
//! treelog reads or writes, so that `../x`, `/`, an empty name or a hidden name never
//! leaves, or hides in, the folder it is joined to. Pure: no I/O.

use std::borrow::Cow;

/// Whether `name` is a plain component: non-empty, not starting with `.` (so neither `.`,
/// `..` nor a hidden file) nor `%` (the encoding's mark), and without `/`, `\` or any
/// control character. A plain name is joined as it is.
pub fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['.', '%'])
        && !name
            .chars()
            .any(|c| matches!(c, '/' | '\\') || c.is_control())
}

/// `name` as one path component: itself when it [is plain](is_plain), else `%` and the
/// lowercase hex of its UTF-8 bytes (`../x` is `%2e2e2f78`). Two names never give one
/// component: plain names do not start with `%`, and the hex is reversible.
pub fn encode(name: &str) -> Cow<'_, str> {
    if is_plain(name) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(1 + 2 * name.len());
    out.push('%');
    for byte in name.bytes() {
        out.push_str(&format!("{byte:02x}"));
    }
    Cow::Owned(out)
}

/// Whether `path`, a relative path read from data (a database's or a manifest's), stays
/// below the folder it is joined to: relative, and made of normal components only (no `..`,
/// no root, no prefix).
pub fn is_contained(path: &std::path::Path) -> bool {
    path.components()
        .all(|component| matches!(component, std::path::Component::Normal(_)))
        && path.components().next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain names stay; anything that could climb, hide or nest is encoded.
    #[test]
    fn names_that_could_leave_the_folder_are_encoded() {
        for (name, expected) in [
            ("main", "main"),
            ("s-1.2_x", "s-1.2_x"),
            ("..", "%2e2e"),
            (".", "%2e"),
            ("", "%"),
            ("../../x", "%2e2e2f2e2e2f78"),
            ("a/b", "%612f62"),
            (".hidden", "%2e68696464656e"),
            ("%41", "%253431"),
            ("é", "é"),
            ("a\\b", "%615c62"),
            ("a\u{1b}", "%611b"),
        ] {
            assert_eq!(encode(name), expected, "{name:?}");
        }
        assert!(is_contained(std::path::Path::new("agents/a/db.sqlite")));
        for path in ["../x", "/etc/passwd", "a/../../b", ""] {
            assert!(!is_contained(std::path::Path::new(path)), "{path}");
        }
    }
}
