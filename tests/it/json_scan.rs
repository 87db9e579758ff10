//! Differential tests of the one-pass scanner (`format::json_scan`) and of `classify`, which
//! uses it, against serde_json: the scanner's verdict must be serde_json's own
//! (`from_str::<IgnoredAny>`), and `classify` must answer exactly as `classify_with_serde`, the
//! serde_json reading it replaced. The lines are JSON-ish: valid objects with nested payloads,
//! repeated and escaped keys, escapes of every kind, lone and paired surrogate escapes,
//! numbers of every shape, then mutations and truncations of them, and random bytes. Last,
//! `format::pi_json` against the answers Node's `JSON.parse` gave (tests/data/json_parse/).

use proptest::prelude::*;
use proptest::test_runner::Config;
use treelog::format::json_scan;
use treelog::format::line::{classify, classify_with_serde};

/// One of the items of `list`, which are separated by whitespace.
fn one_of(list: &'static str) -> impl Strategy<Value = String> + Clone {
    prop::sample::select(list.split_whitespace().collect::<Vec<_>>()).prop_map(str::to_owned)
}

fn serde_valid(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The whole claim, for one line.
fn check_agreement(text: &str) {
    assert_eq!(
        json_scan::is_valid(text),
        serde_valid(text),
        "validity of {text:?}"
    );
    for legacy_v1 in [false, true] {
        for allow_header in [false, true] {
            assert_eq!(
                classify(text, legacy_v1, allow_header),
                classify_with_serde(text, legacy_v1, allow_header),
                "classify({text:?}, {legacy_v1}, {allow_header})"
            );
        }
    }
}

/// One piece of string content, raw JSON text (so it may be invalid).
fn string_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,12}",
        1 => "[a-zA-Z0-9 .,:;{}\\[\\]]{8,40}",
        1 => "[a-z ]{40,90}",
        // Runs that put the next piece at a 64-byte block boundary of the scanner.
        2 => (60usize..68).prop_map(|len| "x".repeat(len)),
        1 => one_of("é 日本語 🚀 Ωmega \u{7f} \u{2028}"),
        2 => one_of(r#"\" \\ \/ \b \f \n \r \t \u00e9 \u00E9 \u0041 \u0000 \uD83D\uDE80 \ud83d\ude80"#),
        // Surrogates as serde_json skips them (unpaired: accepted) and decodes them (refused).
        1 => one_of(r"\ud800 \udc00 \udbff \ud800\u0041 \ud800\ud800 \ud800\n \udc00\ud800"),
        // Invalid escapes and raw control characters.
        1 => one_of(r"\x \u12 \u12G4 \U0041 \'"),
        1 => prop::sample::select(vec!["\u{1}", "\t", "\n", "\r", "\u{1f}"]).prop_map(str::to_owned),
    ]
}

/// A string, often longer than the 64-byte blocks the scanner reads long strings in, at times
/// with an escape across the boundary of its first block.
fn string_text() -> impl Strategy<Value = String> {
    let pieces = prop::collection::vec(string_piece(), 0..12).prop_map(|pieces| pieces.concat());
    let across = (
        61usize..66,
        one_of(r#"\" \\ \n \q \u0041 \\\" \\\\ \ud800"#),
        prop::collection::vec(string_piece(), 0..4),
        prop::bool::ANY,
    )
        .prop_map(|(len, escape, rest, long)| {
            // `long`: the next block is whole too; otherwise the string ends in the tail.
            let filler = if long { "y".repeat(70) } else { String::new() };
            format!("{}{escape}{}{filler}", "x".repeat(len), rest.concat())
        });
    prop_oneof![4 => pieces, 1 => across].prop_map(|body| format!("\"{body}\""))
}

fn number() -> impl Strategy<Value = String> {
    let valid = (
        prop::bool::ANY,
        prop_oneof![Just("0".to_owned()), "[1-9][0-9]{0,25}"],
        prop::option::of("[0-9]{1,5}"),
        prop::option::of(("[eE]", "[+-]?", "[0-9]{1,4}")),
    )
        .prop_map(|(negative, int, fraction, exponent)| {
            let mut text = String::new();
            if negative {
                text.push('-');
            }
            text.push_str(&int);
            if let Some(fraction) = fraction {
                text.push('.');
                text.push_str(&fraction);
            }
            if let Some((e, sign, digits)) = exponent {
                text.push_str(&format!("{e}{sign}{digits}"));
            }
            text
        });
    let invalid = one_of("01 - -01 1. .5 1e 1e+ +1 1.e5 0x10 00 -.5 1E --1 NaN Infinity 1_000");
    prop_oneof![6 => valid, 1 => invalid]
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => string_text(),
        2 => number(),
        1 => one_of("true false null tru nul nulll True"),
    ]
}

/// Whitespace, mostly JSON's own, sometimes what serde_json does not count as whitespace.
fn space() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        12 => Just(""),
        2 => Just(" "),
        1 => prop::sample::select(vec!["\t", "\n", "\r", " \r\n "]),
        1 => prop::sample::select(vec!["\u{a0}", "\u{c}", "\u{feff}", "\u{b}"]),
    ]
}

/// Keys: the ones classify reads (plain and escaped), the message's `role`, and others.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => one_of(
            "type id parentId timestamp targetId label name appendMode version cwd parentSession \
             message role"
        )
        .prop_map(|key| format!("\"{key}\"")),
        2 => one_of(
            r"typ\u0065 \u0074ype i\u0064 parent\u0049d rol\u0065 r\u006fle \u0069\u0064 type\u0000
              typ\u00e9 \ud800 i\ud800d \udc00type \ud83d\ude80 ty\npe \/id"
        )
        .prop_map(|key| format!("\"{key}\"")),
        1 => string_text(),
        1 => Just("1".to_owned()),
    ]
}

/// A JSON-ish value of any kind, nested a few levels.
fn value() -> impl Strategy<Value = String> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec((space(), inner.clone(), space()), 0..5).prop_map(|items| {
                let items: Vec<String> = items
                    .into_iter()
                    .map(|(before, item, after)| format!("{before}{item}{after}"))
                    .collect();
                format!("[{}]", items.join(","))
            }),
            prop::collection::vec((key(), space(), inner), 0..5).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(key, space, value)| format!("{key}{space}:{space}{value}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// Values that classify reads in particular ways.
fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => one_of(
            r#""message" "label" "session_info" "session" "leaf" "custom" "compaction" "Message"
               "mess\u0061ge" "" "a1" "side" "x\ud800" "2026-01-01T00:00:00.000Z" null 3 3.0 2.9 -1
               1e400 4294967296 "3" [] {}"#
        ),
        // Messages: pi's prefix, and what only a reading of the object decides.
        2 => one_of(
            r#"{"role":"assistant","content":[]} {"role":"user"} {"content":1,"role":"assistant"}
               {"role":"assistant","role":"user"} {"role":"user","role":"assistant"}
               {"rol\u0065":"assistant"} {"role":"assist\u0061nt"} {"x\ud800":1,"role":"assistant"}
               {"role":"assistant","\udc00":1} {"role":["assistant"]} {"role":"assistant"
               ["assistant"] "assistant" {"role":"assistantX"} {"role"\t:"assistant"}"#
        ),
        1 => Just(r#"{ "role": "assistant" }"#.to_owned()),
        3 => value(),
    ]
}

/// An object line: members with the keys classify reads, repeated at times, among others.
fn object_line() -> impl Strategy<Value = String> {
    let member = (key(), space(), field_value(), space());
    (space(), prop::collection::vec(member, 0..9), space()).prop_map(|(lead, members, trail)| {
        let members: Vec<String> = members
            .into_iter()
            .map(|(key, before, value, after)| format!("{key}{before}:{after}{value}"))
            .collect();
        format!("{lead}{{{}}}{trail}", members.join(","))
    })
}

/// A line from an entry's typical fields, so that many lines are canonical entries.
fn entry_line() -> impl Strategy<Value = String> {
    (
        one_of("message label session_info session leaf custom model_change weird"),
        prop::option::of("[a-f0-9]{0,8}"),
        prop::option::of(prop_oneof![
            Just("null".to_owned()),
            "\"[a-f0-9]{8}\"",
            Just("7".to_owned())
        ]),
        field_value(),
        prop::collection::vec((key(), field_value()), 0..3),
    )
        .prop_map(|(kind, id, parent, message, extra)| {
            let mut members = vec![format!(r#""type":"{kind}""#)];
            if let Some(id) = id {
                members.push(format!(r#""id":"{id}""#));
            }
            if let Some(parent) = parent {
                members.push(format!(r#""parentId":{parent}"#));
            }
            members.push(format!(r#""message":{message}"#));
            members.extend(
                extra
                    .into_iter()
                    .map(|(key, value)| format!("{key}:{value}")),
            );
            format!("{{{}}}", members.join(","))
        })
}

/// A change to a line: cut it, or insert, delete or replace one character.
#[derive(Clone, Debug)]
enum Mutation {
    Truncate(usize),
    Insert(usize, char),
    Delete(usize),
    Replace(usize, char),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let chars = prop::sample::select(vec![
        '"', '\\', ',', ':', '{', '}', '[', ']', ' ', '\u{1}', '0', '-', '.', 'e', 'u', 'n', 'é',
        '\n', 'd', '8',
    ]);
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), chars.clone()).prop_map(|(at, c)| Mutation::Insert(at, c)),
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), chars).prop_map(|(at, c)| Mutation::Replace(at, c)),
    ]
}

fn mutate(text: &str, mutation: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let at = |index: usize, len: usize| if len == 0 { 0 } else { index % (len + 1) };
    match *mutation {
        Mutation::Truncate(index) => chars.truncate(at(index, chars.len())),
        Mutation::Insert(index, c) => chars.insert(at(index, chars.len()), c),
        Mutation::Delete(index) => {
            if !chars.is_empty() {
                chars.remove(index % chars.len());
            }
        }
        Mutation::Replace(index, c) => {
            if !chars.is_empty() {
                let index = index % chars.len();
                chars[index] = c;
            }
        }
    }
    chars.into_iter().collect()
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => object_line(),
        3 => entry_line(),
        1 => value(),
        3 => (prop_oneof![object_line(), entry_line()], prop::collection::vec(mutation(), 1..3))
            .prop_map(|(line, mutations)| {
                mutations.iter().fold(line, |line, mutation| mutate(&line, mutation))
            }),
        1 => prop::collection::vec(any::<u8>(), 0..48)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        1 => "[{}\\[\\]\",:0-9a-z\\\\ \\-.eE]{0,30}",
    ]
}

proptest! {
    #![proptest_config(Config { cases: 4000, ..Config::default() })]

    /// The scanner's verdict is serde_json's, and classify answers as the serde reading.
    #[test]
    fn scanner_and_classify_agree_with_serde(text in line()) {
        check_agreement(&text);
    }
}

/// Cases found or worth pinning: each is checked by the same rule.
#[test]
fn pinned_lines() {
    for text in [
        r#"{"type":"message","id":"a","message":{"role":"assistant"}}"#,
        r#"{"type":"message","id":"a","message":{"x\ud800":1,"role":"assistant"}}"#,
        r#"{"type":"message","id":"a","message":{ "role":"assistant","role":"user"}}"#,
        r#"{"type":"message","id":"a","\ud800":1}"#,
        r#"{"type":"message","id":"a","type":"label","\ud800":1}"#,
        r#"{"typ\u0065":"session","i\u0064":"s","version":3.7}"#,
        r#"{"type":"session","id":"s","version":1e999}"#,
        r#"{"type":"session","id":"s","version":-0}"#,
        r#"{"type":"message","id":"\ud800"}"#,
        r#"{"type":"message","id":"a","parentId":"\udc00"}"#,
        r#"{"type":"message","id":"a"} x"#,
        r#"{"type":"message","id":"a","type":"label"]"#,
        r#"["type","message"]"#,
        " \r",
        "{\"type\":\"message\",\"id\":\"a\u{1}\"}",
        "\u{feff}{}",
    ] {
        check_agreement(text);
    }
}

/// The items `array_items` cuts from `text`, or `None` where it finds no valid array.
fn our_items(text: &str) -> Option<Vec<String>> {
    json_scan::array_items(text)
        .ok()
        .map(|items| items.into_iter().map(str::to_string).collect())
}

/// serde_json's raw items of `text` read as an array.
fn serde_items(text: &str) -> Option<Vec<String>> {
    serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text)
        .ok()
        .map(|items| items.iter().map(|item| item.get().to_string()).collect())
}

proptest! {
    #![proptest_config(Config { cases: 1000, ..Config::default() })]

    /// `array_items` cuts an array into the raw items serde_json finds, and refuses what
    /// serde_json refuses as an array.
    #[test]
    fn array_items_agree_with_serde(items in prop::collection::vec(value(), 0..6), gap in space()) {
        let text = format!("{gap}[{gap}{}{gap}]{gap}", items.join(&format!("{gap},{gap}")));
        prop_assert_eq!(our_items(&text), serde_items(&text));
        let middle = text.len() / 2;
        if text.is_char_boundary(middle) {
            prop_assert_eq!(our_items(&text[..middle]), serde_items(&text[..middle]));
        }
    }
}

/// Arrays `array_items` must refuse or accept as serde_json does.
#[test]
fn pinned_arrays() {
    for text in [
        "[]",
        " [ ] ",
        "[1,]",
        "[,1]",
        "[1 2]",
        "{}",
        "[\"a]\",{\"b\":[1]}]",
        "[1]x",
        "[null, true ,\"\\u00e9\"]",
    ] {
        assert_eq!(our_items(text), serde_items(text), "{text}");
    }
}

/// `format::pi_json` reads each line of tests/data/json_parse/context-edits.json as pi's
/// `JSON.parse` did when Node 24 computed the file (make-vectors.mjs beside it): the same
/// verdict on validity (lone surrogates, 1,000 levels of nesting, numbers beyond f64 are
/// valid), and the same `context_edit`: target, removal and content text (lone surrogates
/// as U+FFFD, as Node writes them), the last of repeated keys, escaped keys decoded.
#[test]
fn pi_json_reads_context_edits_as_json_parse() {
    use treelog::format::pi_json::{self, Replacement};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/json_parse/context-edits.json");
    let vectors: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(vectors.len() > 20);
    let hex = |bytes: &[u8]| -> String { bytes.iter().map(|byte| format!("{byte:02x}")).collect() };
    for vector in &vectors {
        let line = vector["line"].as_str().unwrap();
        assert_eq!(
            json_scan::is_valid(line),
            vector["valid"].as_bool().unwrap(),
            "validity of {line}"
        );
        let got = pi_json::context_edit(line).map(|edit| {
            let content = match edit.replacement {
                Replacement::Remove | Replacement::Content(None) => "undefined".to_owned(),
                Replacement::Content(Some(raw)) => pi_json::string_lossy(raw)
                    .map_or("other".to_owned(), |text| hex(text.as_bytes())),
            };
            serde_json::json!({
                "target": hex(edit.target.as_bytes()),
                "remove": edit.replacement == Replacement::Remove,
                "content": content,
            })
        });
        assert_eq!(
            got.as_ref(),
            vector["edit"].as_object().map(|_| &vector["edit"]),
            "{line}"
        );
    }
}
