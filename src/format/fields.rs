//! Reading and editing the top-level fields of a JSON object line without the line's own
//! classification: a string value decoded, every field as a raw value, one field found by a
//! parse or by a structural scan of trusted text, one field replaced or added with every
//! other byte kept. Pure; below `line.rs`, which re-exports the public ones where the public
//! API has them (`format::line::raw_field`, ...).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::json_scan::{self, skip_whitespace};

/// Decodes a raw JSON value that is a string; `None` for any other value.
pub fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    json_text_str(raw.get())
}

/// Decodes JSON text that is a string value; `None` for any other value.
pub fn json_text_str(text: &str) -> Option<Cow<'_, str>> {
    if text.len() < 2 || !text.starts_with('"') || !text.ends_with('"') {
        return None;
    }
    if !text.contains('\\') {
        return Some(Cow::Borrowed(&text[1..text.len() - 1]));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// The top-level fields of a JSON object line, as raw values keyed by their decoded bytes
/// (the last one wins when a key repeats, as in `JSON.parse`); an error names what serde_json
/// found wrong. Look a field up with `name.as_bytes()`.
pub(crate) fn top_level_fields(
    json: &str,
) -> Result<std::collections::HashMap<KeyBytes<'_>, &RawValue>, serde_json::Error> {
    // Keys read as bytes skip a check that keys read as text make: a control byte inside the
    // key is let through. So the text must first be valid JSON as a whole (json_scan agrees
    // with serde_json on that; serde_json is asked again only for its error message).
    if !json_scan::is_valid(json) {
        serde_json::from_str::<IgnoredAny>(json)?;
        return Err(serde::de::Error::custom("not JSON"));
    }
    serde_json::from_str(json)
}

/// `json`, an object line, with its `parentId` (the last one, if the key repeats) set to
/// `parent_id`, or added at the end. Every other byte is kept, so a line with anything serde
/// cannot hold in a `String` (an unpaired surrogate escape) is relinked too. `None` if `json`
/// is not a JSON object.
pub(crate) fn relink(json: &str, parent_id: Option<&str>) -> Option<String> {
    let parent = match parent_id {
        Some(id) => super::json_string::json_string(id),
        None => "null".to_string(),
    };
    with_field(json, "parentId", &parent)
}

/// `json`, an object line, with the value of its top-level key `name` (the last one, if the
/// key repeats) replaced by `raw_value`, or the member added after the last one (where a
/// JavaScript assignment of a new key puts it). Every other byte is kept. `None` if `json` is
/// not a JSON object.
pub(crate) fn with_field(json: &str, name: &str, raw_value: &str) -> Option<String> {
    let found = json_scan::scan(json, &[name]).ok()?;
    if !found.is_object {
        return None;
    }
    Some(match found.fields[0] {
        Some(raw) if raw == raw_value => json.to_string(),
        Some(raw) => {
            // `raw` is a slice of `json` (json_scan returns subslices of its input).
            let start = raw.as_ptr() as usize - json.as_ptr() as usize;
            format!(
                "{}{raw_value}{}",
                &json[..start],
                &json[start + raw.len()..]
            )
        }
        None => {
            let body = json.trim_end_matches(json_scan::WHITESPACE);
            let body = body.strip_suffix('}')?;
            let separator = if body.trim_end_matches(json_scan::WHITESPACE).ends_with('{') {
                ""
            } else {
                ","
            };
            let key = super::json_string::json_string(name);
            format!("{body}{separator}{key}:{raw_value}}}")
        }
    })
}

/// `json`, an object, without its top-level key `name` (every occurrence: `JSON.stringify`
/// of `{...object, name: undefined}` writes none), the other members kept as written and
/// joined without whitespace. `None` if `json` is not a JSON object.
pub(crate) fn without_field(json: &str, name: &str) -> Option<String> {
    let members = json_scan::object_members(json).ok()?;
    let mut out = String::with_capacity(json.len());
    out.push('{');
    for (key, value) in members {
        if key_matches(key, name) {
            continue;
        }
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(key);
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    Some(out)
}

/// An object key as `JSON.parse` keeps it: serde_json reads a key as bytes without pairing
/// its surrogate escapes (a lone one is kept in WTF-8), where reading it as a string refuses
/// the whole object. Only ASCII names are looked up, so the encoding of a lone surrogate
/// never matters beyond making the key none of them.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct KeyBytes<'a>(pub(super) Cow<'a, [u8]>);

impl std::borrow::Borrow<[u8]> for KeyBytes<'_> {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for KeyBytes<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BytesVisitor;
        impl<'de> Visitor<'de> for BytesVisitor {
            type Value = KeyBytes<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_bytes<E>(self, bytes: &'de [u8]) -> Result<KeyBytes<'de>, E> {
                Ok(KeyBytes(Cow::Borrowed(bytes)))
            }
            fn visit_bytes<E>(self, bytes: &[u8]) -> Result<KeyBytes<'de>, E> {
                Ok(KeyBytes(Cow::Owned(bytes.to_vec())))
            }
            fn visit_byte_buf<E>(self, bytes: Vec<u8>) -> Result<KeyBytes<'de>, E> {
                Ok(KeyBytes(Cow::Owned(bytes)))
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<KeyBytes<'de>, E> {
                Ok(KeyBytes(Cow::Borrowed(text.as_bytes())))
            }
            fn visit_str<E>(self, text: &str) -> Result<KeyBytes<'de>, E> {
                Ok(KeyBytes(Cow::Owned(text.as_bytes().to_vec())))
            }
        }
        deserializer.deserialize_bytes(BytesVisitor)
    }
}

/// The raw value of the top-level field `name` of a JSON object line (the last one, if the key
/// repeats, as in `JSON.parse`); `None` when the line is not a JSON object or has no such
/// field. Other fields are skipped unparsed, and keys without escapes are not copied.
pub fn raw_field<'a>(json: &'a str, name: &str) -> Option<&'a RawValue> {
    struct FieldVisitor<'n> {
        name: &'n str,
    }
    impl<'de> Visitor<'de> for FieldVisitor<'_> {
        type Value = Option<&'de RawValue>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<KeyBytes<'de>>()? {
                if *key.0 == *self.name.as_bytes() {
                    found = Some(map.next_value::<&'de RawValue>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    // Keys read as bytes let a control byte through, and the visitor stops at the object's
    // end: the whole text is checked first, as `top_level_fields` does.
    if !json_scan::is_valid(json) {
        return None;
    }
    let mut deserializer = serde_json::Deserializer::from_str(json);
    deserializer
        .deserialize_map(FieldVisitor { name })
        .ok()
        .flatten()
}

#[cfg(test)]
mod raw_field_tests {
    use super::raw_field;

    /// A top-level field is found (the last of repeated keys), nested ones are not.
    #[test]
    fn finds_top_level_fields_only() {
        let line = r#"{"a":{"m":1},"m":[1, 2],"x\u0041":3,"m":"last"}"#;
        assert_eq!(raw_field(line, "m").map(|raw| raw.get()), Some(r#""last""#));
        assert_eq!(
            raw_field(line, "a").map(|raw| raw.get()),
            Some(r#"{"m":1}"#)
        );
        assert_eq!(raw_field(line, "xA").map(|raw| raw.get()), Some("3"));
        assert!(raw_field(line, "missing").is_none());
        assert!(raw_field("[1]", "m").is_none());
        assert!(raw_field("{not json", "m").is_none());
    }

    /// Lines that `JSON.parse` reads give their field, lines it refuses give none: a key with
    /// an unpaired surrogate escape elsewhere does not hide the field (it did when keys were
    /// read as strings), and text after the object or a control byte in a key makes the line
    /// invalid (the first was let through when the object's end ended the reading).
    #[test]
    fn answers_as_json_parse_reads_the_line() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"\udc00":1,"m":2}"#, Some("2")),
            (r#"{"m":2,"\ud800\u0041":1}"#, Some("2")),
            ("{\"m\":2} \t\r\n", Some("2")),
            (r#"{"m":2} x"#, None),
            (r#"{"m":2}{"m":3}"#, None),
            ("{\"k\u{1}\":1,\"m\":2}", None),
            (r#"{"m\u0000":1}"#, None),
        ];
        for (line, expected) in cases {
            assert_eq!(
                raw_field(line, "m").map(|raw| raw.get()),
                *expected,
                "{line}"
            );
        }
    }
}

/// The text of the top-level field `name` of a JSON object already known to be valid JSON (a
/// line that parsed when it was indexed and whose crc32 still matches), found by a structural
/// scan that jumps over strings and nested values without validating them: several times
/// faster than a parse, which matters when a context copies thousands of messages. The last
/// occurrence wins, as in `JSON.parse`. `None` when absent or when the text is not an object;
/// on text that is not valid JSON the answer is unspecified but never a panic.
pub fn trusted_field<'a>(json: &'a str, name: &str) -> Option<&'a str> {
    let bytes = json.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut found = None;
    loop {
        at = skip_whitespace(bytes, at);
        match bytes.get(at)? {
            b'}' => return found,
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(bytes, at)?;
        let key = &json[at..key_end];
        at = skip_whitespace(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_whitespace(bytes, at + 1);
        let value_end = value_end(bytes, at)?;
        if key_matches(key, name) {
            found = Some(json.get(at..value_end)?);
        }
        at = skip_whitespace(bytes, value_end);
        match bytes.get(at)? {
            b',' => at += 1,
            b'}' => return found,
            _ => return None,
        }
    }
}

/// The index just after the string that starts (with its quote) at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    // Most strings in a transcript line are short keys and values: a plain loop over the first
    // bytes beats setting up a vector search.
    let mut search = at + 1;
    let short_end = (search + 32).min(bytes.len());
    while search < short_end {
        match bytes[search] {
            b'"' => return Some(search + 1),
            b'\\' => search += 2,
            _ => search += 1,
        }
    }
    loop {
        let found = search + memchr::memchr2(b'"', b'\\', bytes.get(search..)?)?;
        if bytes[found] == b'\\' {
            search = found + 2;
        } else {
            return Some(found + 1);
        }
    }
}

/// The index just after the value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    let (open, close) = match bytes.get(at)? {
        b'"' => return string_end(bytes, at),
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        _ => {
            // A number, true, false or null: up to the next separator.
            let rest = bytes.get(at..)?;
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
                .unwrap_or(rest.len());
            return Some(at + len);
        }
    };
    // Valid JSON nests brackets properly, so counting only this value's kind of bracket
    // (outside strings) finds its end.
    let mut depth = 0usize;
    let mut search = at;
    loop {
        let found = search + memchr::memchr3(b'"', open, close, bytes.get(search..)?)?;
        match bytes[found] {
            b'"' => search = string_end(bytes, found)?,
            byte if byte == open => {
                depth += 1;
                search = found + 1;
            }
            _ => {
                depth = depth.checked_sub(1)?;
                search = found + 1;
                if depth == 0 {
                    return Some(search);
                }
            }
        }
    }
}

/// Whether the quoted key `raw_key` (quotes included) names `name`.
fn key_matches(raw_key: &str, name: &str) -> bool {
    let inner = &raw_key[1..raw_key.len() - 1];
    if !inner.contains('\\') {
        return inner == name;
    }
    serde_json::from_str::<String>(raw_key).is_ok_and(|key| key == name)
}

#[cfg(test)]
mod relink_tests {
    use super::*;

    /// `parentId` is replaced in place (the last one when it repeats), or added at the end;
    /// every other byte is kept, an unpaired surrogate escape included.
    #[test]
    fn relink_replaces_or_adds_parent_id_only() {
        for (line, parent, expected) in [
            (
                r#"{"id":"b","parentId":"a","x":1}"#,
                Some("z"),
                r#"{"id":"b","parentId":"z","x":1}"#,
            ),
            (
                r#"{"id":"b","parentId":"a"}"#,
                Some("a"),
                r#"{"id":"b","parentId":"a"}"#,
            ),
            (
                r#"{"id":"b","parentId":"a"}"#,
                None,
                r#"{"id":"b","parentId":null}"#,
            ),
            (
                r#"{"id":"b" } "#,
                Some("a"),
                r#"{"id":"b" ,"parentId":"a"}"#,
            ),
            (r#"{ }"#, None, r#"{ "parentId":null}"#),
            (
                r#"{"parentId":"x","id":"b","parentId":"y"}"#,
                Some("z"),
                r#"{"parentId":"x","id":"b","parentId":"z"}"#,
            ),
            (
                r#"{"id":"b","\ud800":"\udc00","parentId":"a"}"#,
                Some("q\"r"),
                r#"{"id":"b","\ud800":"\udc00","parentId":"q\"r"}"#,
            ),
        ] {
            assert_eq!(relink(line, parent).as_deref(), Some(expected), "{line}");
        }
        for not_an_object in ["[1]", "\"x\"", "{", ""] {
            assert_eq!(relink(not_an_object, None), None, "{not_an_object}");
        }
    }
}

#[cfg(test)]
mod trusted_field_tests {
    use super::{raw_field, trusted_field};

    /// On valid JSON the structural scan agrees with a full parse, for every field.
    #[test]
    fn agrees_with_a_parse() {
        let lines = [
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"a } ] \" \\ {"}],"n":[1,[2,{"x":"]"}]]}}"#,
            r#" { "k" : 1.5e3 , "s" : "x\"y" , "b":true,"z":null,"arr":[ "}" , {"a":[]} ] , "k":-2 } "#,
            r#"{"\u0061bc":"escaped key","deep":[[[[{"a":{"b":[{}]}}]]]]}"#,
        ];
        for line in lines {
            for name in [
                "type", "id", "parentId", "message", "k", "s", "b", "z", "arr", "abc", "deep",
                "missing",
            ] {
                assert_eq!(
                    trusted_field(line, name),
                    raw_field(line, name).map(|raw| raw.get()),
                    "{name} in {line}"
                );
            }
        }
    }

    /// Text that is not an object, or is cut short, gives None rather than a panic.
    #[test]
    fn malformed_text_is_none() {
        for text in [
            "",
            "[1]",
            "{",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":\"x",
            "{\"a\":[1,",
            "{\"a\":1 \"b\":2}",
            "\"s\"",
        ] {
            assert_eq!(trusted_field(text, "a"), None, "{text}");
        }
    }
}
