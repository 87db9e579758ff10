//! Logs that pi, OpenClaw or a crash can leave behind, and logs nobody should write: torn and
//! unterminated last lines, missing or misplaced headers, garbage, CRLF, unknown types, leaf
//! rows, duplicate ids, cycles, dangling and missing parents, v1/v2 files, invalid UTF-8, NUL
//! bytes, deep nesting, huge lines. For each: no panic, no byte of the log changed by opening
//! it, the answers format-spec/log.md defines (the same with and without index), and an
//! append through treelog that keeps every earlier byte and lands where it should.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use treelog::{IndexState, Session, SessionOptions};
use treelog_testkit::{Answers, answers, no_index, open, replay, scratch_dir};

const HEADER: &str = r#"{"type":"session","version":3,"id":"01942117-de87-73f5-8d57-ac533bb5be51","timestamp":"2025-01-01T09:00:00.007Z","cwd":"/home/dev/project"}"#;

/// A `message` line; `parent` is the raw JSON of `parentId`, or `None` to leave the key out.
fn message(id: &str, parent: Option<&str>, role: &str, second: u32) -> String {
    let mut line = serde_json::Map::new();
    line.insert("type".into(), json!("message"));
    line.insert("id".into(), json!(id));
    if let Some(parent) = parent {
        line.insert("parentId".into(), serde_json::from_str(parent).unwrap());
    }
    line.insert(
        "timestamp".into(),
        json!(format!("2025-01-01T09:00:{second:02}.000Z")),
    );
    let message = if role == "assistant" {
        json!({"role": "assistant", "content": [{"type": "text", "text": format!("reply {id}")}], "provider": "anthropic", "model": "claude", "timestamp": second})
    } else {
        json!({"role": role, "content": format!("text of {id}"), "timestamp": second})
    };
    line.insert("message".into(), message);
    Value::Object(line).to_string()
}

fn user(id: &str, parent: &str, second: u32) -> String {
    let parent = if parent.is_empty() {
        "null".to_string()
    } else {
        json!(parent).to_string()
    };
    message(id, Some(&parent), "user", second)
}

/// The lines joined, each ended by `\n`.
fn log(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|line| line.bytes().chain(std::iter::once(b'\n')))
        .collect()
}

fn write_log(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = scratch_dir();
    let path = dir.path().join("session.jsonl");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// What a case must answer.
struct Expect {
    /// Entry ids in file order.
    entries: &'static [&'static str],
    leaf: Option<&'static str>,
    path: &'static [&'static str],
    opaque: usize,
    recovered: bool,
    /// `role` of each context message.
    roles: &'static [&'static str],
}

struct Case {
    name: &'static str,
    log: Vec<u8>,
    expect: Expect,
}

/// Opens `path` with and without index, and again: no panic, the same answers each time, no
/// byte of the log changed. Returns the answers.
fn open_all_ways(path: &Path, name: &str) -> Answers {
    let before = std::fs::read(path).unwrap_or_default();
    let indexed = answers(&open(path)).unwrap_or_else(|error| panic!("{name}: {error}"));
    let replayed = replay(path);
    assert_eq!(indexed, replayed, "{name}: index and replay differ");
    let again = open(path);
    if !before.is_empty() {
        // A last line without its `\n` is never stored in the index: each open reads it.
        let last = &before[before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |at| at + 1)..];
        let expected = if treelog::format::line::is_complete_last_line(last) {
            IndexState::CaughtUp {
                bytes: last.len() as u64,
                lines: 1,
            }
        } else {
            IndexState::Fresh
        };
        assert_eq!(*again.index_state(), expected, "{name}");
    }
    assert_eq!(answers(&again).unwrap(), indexed, "{name}: reopen differs");
    drop(again);
    assert_eq!(
        std::fs::read(path).unwrap_or_default(),
        before,
        "{name}: opening changed the log"
    );
    indexed
}

fn roles(context: &str) -> Vec<String> {
    let context: Value = serde_json::from_str(context).unwrap();
    context["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn check_expect(got: &Answers, expect: &Expect, name: &str) {
    let ids: Vec<&str> = got.entries.iter().map(|entry| entry.0.as_str()).collect();
    assert_eq!(ids, expect.entries, "{name}: entries");
    assert_eq!(got.leaf.as_deref(), expect.leaf, "{name}: leaf");
    assert_eq!(got.path, expect.path, "{name}: path");
    assert_eq!(got.opaque.len(), expect.opaque, "{name}: opaque records");
    assert_eq!(got.header.2, expect.recovered, "{name}: recovered header");
    assert_eq!(roles(&got.context), expect.roles, "{name}: context roles");
}

/// Appends a message through treelog: every earlier byte is kept, a torn tail is ended first,
/// the new entry is a child of the leaf the open found and becomes the leaf on reopen.
fn check_append(path: &Path, name: &str, before_answers: &Answers) {
    let before = std::fs::read(path).unwrap_or_default();
    let mut session = open(path);
    let appended = session.append_message(r#"{"role":"user","content":"appended","timestamp":9}"#);
    // A log with a line of JSON that is no header, or in a version pi migrates, is refused:
    // pi would not read the entry as treelog would (format-spec/log.md §8).
    let (_, version, recovered, _) = &before_answers.header;
    let holds_lines = !before_answers.entries.is_empty() || !before_answers.opaque.is_empty();
    let refused = (*recovered && holds_lines) || (*version < 3 && !*recovered);
    if refused {
        let error = appended.expect_err(name).to_string();
        assert!(
            error.contains("nothing was written") && error.contains("treelog repair"),
            "{name}: {error}"
        );
        drop(session);
        assert_eq!(
            std::fs::read(path).unwrap(),
            before,
            "{name}: refused, yet written"
        );
        return;
    }
    let id = appended.unwrap_or_else(|error| panic!("{name}: append failed: {error}"));
    drop(session);
    let after = std::fs::read(path).unwrap();
    assert!(
        after.starts_with(&before),
        "{name}: the append changed earlier bytes"
    );
    let mut written = &after[before.len()..];
    let torn = !before.is_empty() && !before.ends_with(b"\n");
    if torn {
        assert_eq!(written[0], b'\n', "{name}: the torn tail was not ended");
        written = &written[1..];
    }
    let text = std::str::from_utf8(written).unwrap();
    let mut lines: Vec<&str> = text.strip_suffix('\n').unwrap().split('\n').collect();
    // A log without a non-blank line gets a header (log.md §2), unless a torn tail becomes
    // its first line.
    let all_blank = before
        .split(|byte| *byte == b'\n')
        .all(|line| line.iter().all(|byte| matches!(byte, b' ' | b'\t' | b'\r')));
    if all_blank && !torn {
        let header: Value = serde_json::from_str(lines.remove(0)).unwrap();
        assert_eq!(header["type"], "session", "{name}: header first");
    }
    assert_eq!(lines.len(), 1, "{name}: one line per append");
    let line: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(line["id"], id.as_str());
    assert_eq!(
        line["parentId"],
        before_answers
            .leaf
            .as_deref()
            .map_or(Value::Null, |leaf| json!(leaf)),
        "{name}: parent of the appended entry"
    );
    let after_answers = open_all_ways(path, name);
    assert_eq!(after_answers.leaf.as_deref(), Some(id.as_str()), "{name}");
    let mut path_expected = before_answers.path.clone();
    path_expected.push(id);
    assert_eq!(
        after_answers.path, path_expected,
        "{name}: path after append"
    );
}

fn cases() -> Vec<Case> {
    let long_id: &'static str = "i".repeat(100_000).leak();
    let u1 = user("u1", "", 1);
    let u2 = user("u2", "u1", 2);
    let a2 = message("a2", Some(r#""u1""#), "assistant", 2);
    let u3 = user("u3", "u2", 3);
    let none: &[&str] = &[];
    vec![
        Case {
            name: "torn last line",
            log: [log(&[HEADER, &u1]), u2.as_bytes()[..30].to_vec()].concat(),
            expect: Expect {
                entries: &["u1"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            // A complete last line is a line, its `\n` missing or not (log.md §1), as pi reads it.
            name: "valid last line without newline",
            log: [log(&[HEADER, &u1]), u2.as_bytes().to_vec()].concat(),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u1", "u2"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "missing header",
            log: log(&[&u1, &u2]),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u1", "u2"],
                opaque: 0,
                recovered: true,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "corrupt header",
            log: log(&[&HEADER[..40], &u1]),
            expect: Expect {
                entries: &["u1"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 1,
                recovered: true,
                roles: &["user"],
            },
        },
        Case {
            name: "header without a string id",
            log: log(&[r#"{"type":"session","version":3,"id":7}"#, &u1]),
            expect: Expect {
                entries: &["u1"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 1,
                recovered: true,
                roles: &["user"],
            },
        },
        Case {
            name: "header not first",
            log: log(&[&u1, HEADER, &u2]),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u1", "u2"],
                opaque: 1,
                recovered: true,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "empty file",
            log: Vec::new(),
            expect: Expect {
                entries: none,
                leaf: None,
                path: none,
                opaque: 0,
                recovered: false,
                roles: none,
            },
        },
        Case {
            name: "only blank lines",
            log: b"\n  \n\r\n\t\n".to_vec(),
            expect: Expect {
                entries: none,
                leaf: None,
                path: none,
                opaque: 0,
                recovered: true,
                roles: none,
            },
        },
        Case {
            name: "only garbage",
            log: log(&["garbage", "[1,2,3]", "\"a string\"", "{}", "{\"type\":5}", "}{"]),
            expect: Expect {
                entries: none,
                leaf: None,
                path: none,
                opaque: 6,
                recovered: true,
                roles: none,
            },
        },
        Case {
            name: "CRLF line endings",
            log: format!("{HEADER}\r\n{u1}\r\n{a2}\r\n").into_bytes(),
            expect: Expect {
                entries: &["u1", "a2"],
                leaf: Some("a2"),
                path: &["u1", "a2"],
                opaque: 0,
                recovered: false,
                roles: &["user", "assistant"],
            },
        },
        Case {
            name: "blank lines everywhere",
            log: format!("\n \n{HEADER}\n\n{u1}\n \t \n{a2}\n\n\n").into_bytes(),
            expect: Expect {
                entries: &["u1", "a2"],
                leaf: Some("a2"),
                path: &["u1", "a2"],
                opaque: 0,
                recovered: false,
                roles: &["user", "assistant"],
            },
        },
        Case {
            // Both pi versions read a line of any type with an id as an entry: a type a later pi
            // adds stays on the path, and carries nothing into the context.
            name: "unknown type mid-path: an entry on the path",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"future_kind","id":"f1","parentId":"u1","timestamp":"2025-01-01T09:00:02.000Z"}"#,
                &user("u2", "f1", 3),
            ]),
            expect: Expect {
                entries: &["u1", "f1", "u2"],
                leaf: Some("u2"),
                path: &["u1", "f1", "u2"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            // The line before u3 repeats the id u3 names: it is an entry, and the latest line
            // with an id is the one a parentId names (pi's `byId`).
            name: "unknown type repeating an entry's id just before a child of that id",
            log: log(&[
                HEADER,
                &u1,
                &u2,
                r#"{"type":"future_kind","id":"u1","parentId":"u2"}"#,
                &user("u3", "u1", 3),
            ]),
            expect: Expect {
                entries: &["u1", "u2", "u1", "u3"],
                leaf: Some("u3"),
                path: &["u1", "u2", "u1", "u3"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user", "user"],
            },
        },
        Case {
            name: "unknown type last: it is the leaf, as the last entry",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"future_kind","id":"f1","parentId":"u1"}"#,
            ]),
            expect: Expect {
                entries: &["u1", "f1"],
                leaf: Some("f1"),
                path: &["u1", "f1"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "chain of unknown types",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"x","id":"f1","parentId":"u1"}"#,
                r#"{"type":"y","id":"f2","parentId":"f1"}"#,
                &user("u2", "f2", 3),
            ]),
            expect: Expect {
                entries: &["u1", "f1", "f2", "u2"],
                leaf: Some("u2"),
                path: &["u1", "f1", "f2", "u2"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "OpenClaw leaf row moves the leaf back",
            log: log(&[
                HEADER,
                &u1,
                &u2,
                &u3,
                r#"{"type":"leaf","id":"l1","parentId":"u3","timestamp":"2025-01-01T09:00:04.000Z","targetId":"u1"}"#,
            ]),
            expect: Expect {
                entries: &["u1", "u2", "u3"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 1,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "leaf row naming an unknown id is ignored",
            log: log(&[
                HEADER,
                &u1,
                &u2,
                r#"{"type":"leaf","id":"l1","parentId":"u2","targetId":"nowhere"}"#,
            ]),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u1", "u2"],
                opaque: 1,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "side rows do not move the leaf",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"message","id":"s1","parentId":"u1","timestamp":"2025-01-01T09:00:02.000Z","appendMode":"side","message":{"role":"assistant","content":[]}}"#,
            ]),
            expect: Expect {
                entries: &["u1", "s1"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "duplicate ids: the later one is a child of the earlier",
            log: log(&[HEADER, &user("x", "", 1), &user("x", "x", 2)]),
            expect: Expect {
                entries: &["x", "x"],
                leaf: Some("x"),
                path: &["x", "x"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "self parent is a root",
            log: log(&[HEADER, &u1, &user("a", "a", 2)]),
            expect: Expect {
                entries: &["u1", "a"],
                leaf: Some("a"),
                path: &["a"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "2-cycle through duplicate ids",
            log: log(&[
                HEADER,
                &user("a", "b", 1),
                &user("b", "a", 2),
                &user("a", "b", 3),
            ]),
            expect: Expect {
                entries: &["a", "b", "a"],
                leaf: Some("a"),
                path: &["a", "b", "a"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user", "user"],
            },
        },
        Case {
            name: "dangling parent is a root",
            log: log(&[HEADER, &u1, &user("u2", "nowhere", 2)]),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u2"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "forward reference is a root",
            log: log(&[HEADER, &user("u1", "u2", 1), &user("u2", "", 2)]),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u2"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "36-character ids",
            log: log(&[
                HEADER,
                &user("0f8fad5b-d9cb-469f-a165-70867728950e", "", 1),
                &user(
                    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                    "0f8fad5b-d9cb-469f-a165-70867728950e",
                    2,
                ),
            ]),
            expect: Expect {
                entries: &[
                    "0f8fad5b-d9cb-469f-a165-70867728950e",
                    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                ],
                leaf: Some("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
                path: &[
                    "0f8fad5b-d9cb-469f-a165-70867728950e",
                    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                ],
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "missing parentId continues from the leaf",
            log: log(&[
                HEADER,
                &u1,
                &user("r2", "", 2),
                &message("u3", None, "user", 3),
            ]),
            expect: Expect {
                entries: &["u1", "r2", "u3"],
                leaf: Some("u3"),
                path: &["r2", "u3"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "canonical type without an id is opaque",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"message","parentId":"u1","message":{"role":"user","content":"no id"}}"#,
                r#"{"type":"message","id":"","parentId":"u1","message":{"role":"user","content":"empty id"}}"#,
            ]),
            expect: Expect {
                entries: &["u1"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 2,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "invalid UTF-8 inside a string",
            log: [
                log(&[HEADER]),
                br#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T09:00:01.000Z","message":{"role":"user","content":"bad "#.to_vec(),
                vec![0xff, 0xfe, 0xc3],
                b"\"}}\n".to_vec(),
            ]
            .concat(),
            expect: Expect {
                entries: &["u1"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "NUL bytes in lines",
            log: [
                log(&[HEADER, &u1]),
                b"\0\0\0\n".to_vec(),
                br#"{"type":"message","id":"n1","parentId":"u1","message":{"role":"user","content":"a"#.to_vec(),
                vec![0],
                b"b\"}}\n".to_vec(),
                u2.as_bytes().to_vec(),
                b"\n".to_vec(),
            ]
            .concat(),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u1", "u2"],
                opaque: 2,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            // A line of an unknown type is an entry now (see below); a misplaced header line
            // is still an opaque record with an id.
            name: "compaction whose first kept id names an opaque record",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"session","id":"f1","parentId":"u1"}"#,
                &user("u2", "f1", 2),
                r#"{"type":"compaction","id":"c","parentId":"u2","timestamp":"2025-01-01T09:00:03.000Z","summary":"s","firstKeptEntryId":"f1","tokensBefore":10}"#,
                &user("a", "c", 4),
            ]),
            expect: Expect {
                entries: &["u1", "u2", "c", "a"],
                leaf: Some("a"),
                path: &["u1", "u2", "c", "a"],
                opaque: 1,
                recovered: false,
                roles: &["compactionSummary", "user"],
            },
        },
        // The header after the mark is read, as pi 0.73.1 reads it (tests/it/regression/bom.rs).
        Case {
            // pi keeps the kept range from an entry of any type: the unknown one contributes
            // nothing, the messages after it do.
            name: "compaction whose first kept id names an entry of an unknown type",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"future_kind","id":"f1","parentId":"u1"}"#,
                &user("u2", "f1", 2),
                r#"{"type":"compaction","id":"c","parentId":"u2","timestamp":"2025-01-01T09:00:03.000Z","summary":"s","firstKeptEntryId":"f1","tokensBefore":10}"#,
                &user("a", "c", 4),
            ]),
            expect: Expect {
                entries: &["u1", "f1", "u2", "c", "a"],
                leaf: Some("a"),
                path: &["u1", "f1", "u2", "c", "a"],
                opaque: 0,
                recovered: false,
                roles: &["compactionSummary", "user", "user"],
            },
        },
        Case {
            name: "byte order mark before the header",
            log: [b"\xef\xbb\xbf".to_vec(), log(&[HEADER, &u1])].concat(),
            expect: Expect {
                entries: &["u1"],
                leaf: Some("u1"),
                path: &["u1"],
                opaque: 0,
                recovered: false,
                roles: &["user"],
            },
        },
        Case {
            name: "repeated keys: the last one wins, as in JSON.parse",
            log: log(&[
                HEADER,
                &u1,
                r#"{"type":"message","id":"zz","parentId":"nowhere","id":"u2","parentId":"u1","timestamp":"2025-01-01T09:00:02.000Z","message":{"role":"user","content":"dup"}}"#,
            ]),
            expect: Expect {
                entries: &["u1", "u2"],
                leaf: Some("u2"),
                path: &["u1", "u2"],
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
        Case {
            name: "a 100 KB id",
            log: log(&[HEADER, &u1, &user(long_id, "u1", 2)]),
            expect: Expect {
                entries: vec!["u1", long_id].leak(),
                leaf: Some(long_id),
                path: vec!["u1", long_id].leak(),
                opaque: 0,
                recovered: false,
                roles: &["user", "user"],
            },
        },
    ]
}

/// Every bad input opens without panic, answers as format-spec/log.md says (indexed and
/// replayed alike), is not modified by opening, and takes an append correctly.
#[test]
fn bad_inputs_open_and_append() {
    for case in cases() {
        let (_dir, path) = write_log(&case.log);
        let got = open_all_ways(&path, case.name);
        check_expect(&got, &case.expect, case.name);
        check_append(&path, case.name, &got);
    }
}

/// A torn fragment becomes an opaque line of its own when treelog appends after it: the new
/// entry is intact (pi would glue it onto the fragment and lose it).
#[test]
fn torn_fragment_becomes_its_own_line() {
    let fragment = &user("u2", "u1", 2)[..25];
    let (_dir, path) = write_log(&[log(&[HEADER, &user("u1", "", 1)]), fragment.into()].concat());
    let mut session = open(&path);
    let id = session
        .append_message(r#"{"role":"user","content":"new"}"#)
        .unwrap();
    drop(session);
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[2], fragment);
    let got = open_all_ways(&path, "torn");
    assert_eq!(
        got.opaque,
        vec![(lines[..2].join("\n").len() as u64 + 1, 1)]
    );
    let ids: Vec<&str> = got.entries.iter().map(|entry| entry.0.as_str()).collect();
    assert_eq!(ids, ["u1", id.as_str()]);
    assert_eq!(got.path, ["u1", id.as_str()]);
}

/// A complete last line without its `\n` survives an append, and so does the new entry (pi
/// would write `}{` and destroy both).
#[test]
fn unterminated_last_line_and_new_entry_both_survive() {
    let u2 = user("u2", "u1", 2);
    let (_dir, path) = write_log(&[log(&[HEADER, &user("u1", "", 1)]), u2.clone().into()].concat());
    let mut session = open(&path);
    let id = session
        .append_message(r#"{"role":"user","content":"new"}"#)
        .unwrap();
    // The handle read the line before it ended it.
    assert!(session.entry("u2").unwrap().is_some());
    drop(session);
    let got = open_all_ways(&path, "unterminated");
    let ids: Vec<&str> = got.entries.iter().map(|entry| entry.0.as_str()).collect();
    assert_eq!(ids, ["u1", "u2", id.as_str()]);
    assert_eq!(got.entries[1].4, u2);
    // The new entry was appended to the leaf the handle read, u2 (before the last line
    // without its `\n` was read, u1, and u2 became its sibling).
    assert_eq!(got.path, ["u1", "u2", id.as_str()]);
}

/// v1 files (no version, no ids) get deterministic ids, form a linear chain, and read the
/// same on every open; the file is not migrated on disk.
#[test]
fn v1_file_gets_stable_ids() {
    let lines = [
        r#"{"type":"session","id":"v1-session","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"one"}}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":"hook"}}"#,
        r#"{"type":"message","timestamp":"2024-01-01T00:00:03.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m"}}"#,
    ];
    let (_dir, path) = write_log(&log(&lines));
    let got = open_all_ways(&path, "v1");
    assert_eq!(got.header.1, 1);
    assert_eq!(got.entries.len(), 3);
    for (index, entry) in got.entries.iter().enumerate() {
        assert_eq!(entry.0.len(), 8, "{}", entry.0);
        assert!(entry.0.bytes().all(|b| b.is_ascii_hexdigit()));
        let previous = index.checked_sub(1).map(|p| got.entries[p].0.clone());
        assert_eq!(entry.1, previous, "a linear chain");
    }
    assert_eq!(roles(&got.context), ["user", "custom", "assistant"]);
    // Another copy of the same bytes at another path gets the same ids.
    let (_other_dir, other) = write_log(&log(&lines));
    assert_eq!(replay(&other).entries, got.entries);
}

/// v2 files: a `hookMessage` role enters the context as `custom`, nothing else changes.
#[test]
fn v2_hook_message_is_custom_in_context() {
    let (_dir, path) = write_log(&log(&[
        r#"{"type":"session","version":2,"id":"v2-session","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/p"}"#,
        &user("u1", "", 1),
        r#"{"type":"message","id":"h1","parentId":"u1","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"hook","display":true}}"#,
    ]));
    let got = open_all_ways(&path, "v2");
    let context: Value = serde_json::from_str(&got.context).unwrap();
    assert_eq!(
        context["messages"][1],
        json!({"role":"custom","customType":"x","content":"hook","display":true})
    );
    assert_eq!(roles(&got.context), ["user", "custom"]);
}

/// A message nested 10,000 levels deep is indexed, and the context returns it byte for byte.
#[test]
fn deeply_nested_message_is_returned_verbatim() {
    let depth = 10_000;
    let message = format!(
        r#"{{"role":"user","content":{}"deep"{},"timestamp":1}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let line = format!(
        r#"{{"type":"message","id":"d1","parentId":null,"timestamp":"2025-01-01T09:00:01.000Z","message":{message}}}"#
    );
    let (_dir, path) = write_log(&log(&[HEADER, &line]));
    let session = open(&path);
    let context = session.build_context(None).unwrap();
    assert_eq!(context.messages.len(), 1);
    assert_eq!(context.messages[0].get(), message);
    drop(session);
    let got = open_all_ways(&path, "deep");
    assert_eq!(got.path, ["d1"]);
    check_append(&path, "deep", &got);
}

/// A 20 MB line is indexed and returned whole, and appends after it work.
#[test]
fn twenty_megabyte_line() {
    let big = "x".repeat(20 * 1024 * 1024);
    let message = format!(r#"{{"role":"user","content":"{big}","timestamp":1}}"#);
    let line = format!(
        r#"{{"type":"message","id":"big","parentId":null,"timestamp":"2025-01-01T09:00:01.000Z","message":{message}}}"#
    );
    let bytes = log(&[HEADER, &line, &user("u2", "big", 2)]);
    let (_dir, path) = write_log(&bytes);
    let session = open(&path);
    let context = session.build_context(None).unwrap();
    assert_eq!(context.messages.len(), 2);
    assert_eq!(context.messages[0].get().len(), message.len());
    assert!(context.messages[0].get() == message);
    drop(session);
    let session = Session::open(&path, no_index()).unwrap();
    assert_eq!(session.path_ids(None).unwrap(), ["big", "u2"]);
    drop(session);
    assert!(
        std::fs::read(&path).unwrap() == bytes,
        "opening changed the log"
    );
    let mut session = Session::open(&path, SessionOptions::default()).unwrap();
    let id = session
        .append_message(r#"{"role":"user","content":"after"}"#)
        .unwrap();
    assert_eq!(session.path_ids(None).unwrap(), ["big", "u2", id.as_str()]);
}

/// Bug: a compaction's `firstKeptEntryId` was looked up as the latest line with that id; when
/// the id repeated later off the path, the kept entries before the compaction were dropped
/// from the context (pi keeps them from the path entry with that id).
#[test]
fn compaction_first_kept_id_repeated_later_off_the_path() {
    let (_dir, path) = write_log(&log(&[
        HEADER,
        &user("k", "", 1),
        &user("u", "k", 2),
        r#"{"type":"compaction","id":"c","parentId":"u","timestamp":"2025-01-01T09:00:03.000Z","summary":"s","firstKeptEntryId":"k","tokensBefore":10}"#,
        &user("a", "c", 4),
        &user("k", "", 5),
        &user("b", "a", 6),
    ]));
    let got = open_all_ways(&path, "repeated first kept id");
    assert_eq!(got.path, ["k", "u", "c", "a", "b"]);
    let context: Value = serde_json::from_str(&got.context).unwrap();
    let contents: Vec<&Value> = context["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message.get("content").unwrap_or(&message["summary"]))
        .collect();
    assert_eq!(
        contents,
        [
            &json!("s"),
            &json!("text of k"),
            &json!("text of u"),
            &json!("text of a"),
            &json!("text of b")
        ]
    );
}

/// Labels resolve in file order across branches: last write wins, an empty or absent label
/// clears, a label for an id that does not exist is kept (pi's rule).
#[test]
fn labels_last_write_wins_and_unknown_targets_are_kept() {
    let label = |id: &str, parent: &str, target: &str, label: Option<&str>, second: u32| {
        let mut line = json!({"type": "label", "id": id, "parentId": parent, "timestamp": format!("2025-01-01T09:00:{second:02}.000Z"), "targetId": target});
        if let Some(label) = label {
            line["label"] = json!(label);
        }
        line.to_string()
    };
    let (_dir, path) = write_log(&log(&[
        HEADER,
        &user("u1", "", 1),
        &label("l1", "u1", "u1", Some("first"), 2),
        &user("b1", "", 3),
        &label("l2", "b1", "u1", Some("second"), 4),
        &label("l3", "l2", "ghost", Some("kept"), 5),
        &label("l4", "l3", "b1", Some("gone"), 6),
        &label("l5", "l4", "b1", Some(""), 7),
        &label("l6", "l5", "b1", Some("again"), 8),
        &label("l7", "l6", "b1", None, 9),
    ]));
    let got = open_all_ways(&path, "labels");
    assert_eq!(
        got.labels,
        [
            (
                "ghost".to_string(),
                "kept".to_string(),
                "2025-01-01T09:00:05.000Z".to_string()
            ),
            (
                "u1".to_string(),
                "second".to_string(),
                "2025-01-01T09:00:04.000Z".to_string()
            ),
        ]
    );
    let u1 = got.tree.iter().find(|row| row.0 == "u1").unwrap();
    assert_eq!(u1.3.as_deref(), Some("second"));
    assert_eq!(
        got.leaf.as_deref(),
        Some("l7"),
        "a label entry becomes the leaf"
    );
}
