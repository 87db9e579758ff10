//! A line's values as pi's `JSON.parse` gives them, for every reader that interprets what a
//! line says beyond its indexed fields: the context (`context.rs`), the search index's text
//! (`search/extract.rs`) and the session listing. One reading, so that two readers never
//! disagree on a line an attacker wrote: [`json_scan`] accepts exactly the texts
//! `JSON.parse` accepts (any nesting depth, lone surrogate escapes, numbers of any magnitude),
//! a repeated key counts by its last value, and a string is decoded as JavaScript decodes it.
//! A `context_edit` line is read by [`context_edit`] alone.
//!
//! Pure code: no I/O, no recursion, no panic on any input.

use std::borrow::Cow;

use super::fields::json_text_str;
use super::json_scan;

/// The text of a raw JSON string value (quotes included) as UTF-8, as JavaScript writes the
/// string `JSON.parse` gives (`TextEncoder`, `Buffer.from`): escapes decoded, surrogate
/// pairs joined, and each lone surrogate written as U+FFFD. `None` for any other value.
/// For text that is shown or searched; an id is read with [`json_text_str`], which refuses
/// lone surrogates (two ids that differ only there are different ids).
pub fn string_lossy(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut high: Option<u32> = None;
    let mut at = 0;
    while at < bytes.len() {
        let next = memchr::memchr(b'\\', &bytes[at..]).map_or(bytes.len(), |found| at + found);
        if next > at {
            if high.take().is_some() {
                out.push(char::REPLACEMENT_CHARACTER);
            }
            // `at` and `next` are at ASCII bytes or the ends: character boundaries.
            out.push_str(inner.get(at..next)?);
            at = next;
            continue;
        }
        let escape = *bytes.get(at + 1)?;
        let unit = match escape {
            b'u' => hex4(bytes.get(at + 2..at + 6)?)?,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => u32::from(b'\n'),
            b'r' => u32::from(b'\r'),
            b't' => u32::from(b'\t'),
            b'"' | b'\\' | b'/' => u32::from(escape),
            _ => return None,
        };
        at += if escape == b'u' { 6 } else { 2 };
        match unit {
            0xD800..=0xDBFF => {
                if high.replace(unit).is_some() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
            }
            0xDC00..=0xDFFF => match high.take() {
                Some(high) => {
                    let scalar = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                    out.push(char::from_u32(scalar)?);
                }
                None => out.push(char::REPLACEMENT_CHARACTER),
            },
            _ => {
                if high.take().is_some() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
                out.push(char::from_u32(unit)?);
            }
        }
    }
    if high.is_some() {
        out.push(char::REPLACEMENT_CHARACTER);
    }
    Some(Cow::Owned(out))
}

/// The value of four hex digits.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0, |value, &digit| {
        Some(value << 4 | char::from(digit).to_digit(16)?)
    })
}

/// The raw values of the JSON object `raw`, as `Object.values` of `JSON.parse`'s object
/// holds them: a repeated key once, with its last value, where it first stood. `None` when
/// `raw` is not an object. Keys are compared decoded as [`string_lossy`] decodes them.
pub fn object_values(raw: &str) -> Option<Vec<&str>> {
    let members = json_scan::object_members(raw).ok()?;
    let mut values: Vec<&str> = Vec::with_capacity(members.len());
    let mut slots: std::collections::HashMap<Cow<'_, str>, usize> =
        std::collections::HashMap::with_capacity(members.len());
    for (key, value) in members {
        match slots.entry(string_lossy(key)?) {
            std::collections::hash_map::Entry::Occupied(slot) => values[*slot.get()] = value,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(values.len());
                values.push(value);
            }
        }
    }
    Some(values)
}

/// The raw value of the top-level key `name` of the JSON object `raw` (the last one, if the
/// key repeats); `None` when absent or when `raw` is not a valid JSON object.
pub fn field<'a>(raw: &'a str, name: &str) -> Option<&'a str> {
    let found = json_scan::scan(raw, &[name]).ok()?;
    found.fields[0].filter(|_| found.is_object)
}

/// A `context_edit` line as pi 1.6 reads it (format-spec/log.md §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextEdit<'a> {
    /// The `targetId`, a string (an edit naming anything else names no entry).
    pub target: Cow<'a, str>,
    pub replacement: Replacement<'a>,
}

/// What an edit does to its target's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement<'a> {
    /// `replacement: null`: the target's messages leave the context.
    Remove,
    /// Any other `replacement`: the raw value of its `content` (the last one), `None` when
    /// it has none or is not an object (`replacement.content` is `undefined`: the key goes).
    Content(Option<&'a str>),
}

/// The edit a `context_edit` line makes: `None` when the line is not a JSON object, has no
/// string `targetId`, or has no `replacement` key (pi throws on that line; treelog reads it
/// as no edit, and an earlier edit of the same target still applies). The caller knows the
/// line is a `context_edit` entry (its classification says so).
pub fn context_edit(line: &str) -> Option<ContextEdit<'_>> {
    let found = json_scan::scan(line, &["targetId", "replacement"]).ok()?;
    let [Some(target), Some(replacement)] = found.fields else {
        return None;
    };
    let target = json_text_str(target)?;
    let replacement = if replacement == "null" {
        Replacement::Remove
    } else {
        Replacement::Content(field(replacement, "content"))
    };
    Some(ContextEdit {
        target,
        replacement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings decode as JavaScript writes them: pairs joined, lone surrogates as U+FFFD,
    /// every escape, and text between escapes kept.
    #[test]
    fn strings_decode_as_javascript_writes_them() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#""plain""#, Some("plain")),
            (r#""a\nb\t\"\\\/\b\f\r""#, Some("a\nb\t\"\\/\u{8}\u{c}\r")),
            (r#""\ud83d\ude00""#, Some("😀")),
            (r#""x\ud800y""#, Some("x\u{FFFD}y")),
            (r#""\udc00""#, Some("\u{FFFD}")),
            (r#""\ud800\ud800\ude00""#, Some("\u{FFFD}\u{10200}")),
            (r#""\ud800""#, Some("\u{FFFD}")),
            (r#""\u0041é""#, Some("Aé")),
            ("5", None),
            (r#""\q""#, None),
        ];
        for (raw, expected) in cases {
            assert_eq!(string_lossy(raw).as_deref(), *expected, "{raw}");
        }
    }

    /// A repeated key keeps its first place and its last value.
    #[test]
    fn object_values_keep_the_last_of_repeated_keys() {
        assert_eq!(
            object_values(r#"{"a":1,"b":"x","\u0061":3}"#),
            Some(vec!["3", "\"x\""])
        );
        assert_eq!(object_values("[1]"), None);
    }

    /// The edit of a line: the last of repeated keys, null removes, anything but an object
    /// with `content` removes the content, no `replacement` or no string target is no edit.
    #[test]
    fn context_edits_read_as_pi_reads_them() {
        fn read(line: &str) -> Option<(Cow<'_, str>, Replacement<'_>)> {
            context_edit(line).map(|edit| (edit.target, edit.replacement))
        }
        assert_eq!(
            read(r#"{"targetId":"a","replacement":null,"x":"\ud800"}"#),
            Some(("a".into(), Replacement::Remove))
        );
        assert_eq!(
            read(
                r#"{"targetId":"b","targetId":"a","replacement":{"content":"x"},"replacement":{"content":[1],"content":"y"}}"#
            ),
            Some(("a".into(), Replacement::Content(Some("\"y\""))))
        );
        assert_eq!(
            read(r#"{"targetId":"a","replacement":"text"}"#),
            Some(("a".into(), Replacement::Content(None)))
        );
        assert_eq!(read(r#"{"targetId":"a"}"#), None);
        assert_eq!(read(r#"{"targetId":7,"replacement":null}"#), None);
        let deep = format!(
            r#"{{"targetId":"a","replacement":null,"x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(read(&deep), Some(("a".into(), Replacement::Remove)));
    }
}
