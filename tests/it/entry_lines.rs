//! `Session::entry_lines` (and `entry_lines_jsonl`): every entry line in file order as one JSON
//! array (or as JSONL), read in one pass over the log. It must equal what a replay of the log
//! (no index) yields entry by entry, on pi's transcripts and on logs with opaque lines, blank
//! lines, invalid UTF-8 and a torn tail; a line that no longer matches its record is refused
//! (`LogChanged`), as every read of a line refuses it, and a damaged record rebuilds the index.

use std::path::{Path, PathBuf};

use treelog::{IndexState, Session, SessionOptions};

/// The replay's entry lines: the index-free session's entries, in file order.
fn replayed_lines(path: &Path) -> Vec<String> {
    let session = Session::open(path, treelog_testkit::no_index()).expect("index-free open");
    session
        .entries()
        .expect("entries")
        .map(|entry| entry.expect("entry").json)
        .collect()
}

/// The replay's answer as a JSON array.
fn replayed_array(path: &Path) -> String {
    format!("[{}]", replayed_lines(path).join(","))
}

/// The replay's answer as JSONL.
fn replayed_jsonl(path: &Path) -> String {
    replayed_lines(path)
        .iter()
        .map(|line| format!("{line}\n"))
        .collect()
}

fn bundled(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.jsonl"))
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn message(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
    )
}

/// Logs whose layout the in-place move must get right: (name, bytes).
fn edge_logs() -> Vec<(&'static str, Vec<u8>)> {
    let a = message("a", None, "one");
    let b = message("b", Some("a"), "two");
    let c = message("c", Some("b"), "three");
    let mut invalid_utf8 = format!("{HEADER}\n{a}\n").into_bytes();
    invalid_utf8.extend_from_slice(br#"{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"caf"#);
    invalid_utf8.extend_from_slice(&[0xC3, 0x28, 0xFF]);
    invalid_utf8.extend_from_slice(b"\",\"timestamp\":1}}\n");
    vec![
        ("header only", format!("{HEADER}\n").into_bytes()),
        ("one entry", format!("{HEADER}\n{a}\n").into_bytes()),
        ("unterminated last line", format!("{HEADER}\n{a}\n{b}").into_bytes()),
        (
            "blank lines between entries",
            format!("{HEADER}\n\n{a}\n   \n\n{b}\n\n").into_bytes(),
        ),
        (
            "opaque lines first, between and last",
            format!("not json\n{HEADER}\n[1,2]\n{a}\n{{\"no\":\"type\"}}\n{b}\n{c}\n{{\"type\":\"message\"}}\n")
                .into_bytes(),
        ),
        ("a second header", format!("{HEADER}\n{a}\n{HEADER}\n{b}\n").into_bytes()),
        ("torn tail", format!("{HEADER}\n{a}\n{b}\n{{\"type\":\"mess").into_bytes()),
        ("crlf line ends", format!("{HEADER}\r\n{a}\r\n{b}\r\n").into_bytes()),
        ("invalid utf-8 in a line", invalid_utf8),
    ]
}

/// On every bundled transcript, the indexed answer (index built, then found by a second open)
/// equals the replay's.
#[test]
fn bundled_transcripts_equal_the_replay() {
    for name in [
        "pi-sample-200",
        "pi16-gen-a",
        "pi16-gen-b",
        "pi073-gen-a",
        "pi16-sample-300",
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        std::fs::copy(bundled(name), &path).expect("copy transcript");
        let expected = replayed_array(&path);
        drop(treelog_testkit::open(&path));
        let session = treelog_testkit::open(&path);
        assert_eq!(session.index_state(), &IndexState::Fresh, "{name}");
        let got = session.entry_lines().expect("entry_lines");
        assert_eq!(got, expected, "{name}");
        let jsonl = session.entry_lines_jsonl().expect("entry_lines_jsonl");
        assert_eq!(jsonl, replayed_jsonl(&path), "{name}");
        let parsed: serde_json::Value = serde_json::from_str(&got).expect("a JSON array");
        assert_eq!(
            parsed.as_array().map(Vec::len),
            Some(session.entry_count().expect("count") as usize),
            "{name}"
        );
    }
}

/// Opaque and blank lines, a torn tail, CRLF and invalid UTF-8: the answer equals the replay's,
/// from a fresh index and from a memory session holding the same bytes.
#[test]
fn edge_layouts_equal_the_replay() {
    for (name, log) in edge_logs() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, &log).expect("write log");
        let expected = replayed_array(&path);
        let session = treelog_testkit::open(&path);
        assert_eq!(
            session.entry_lines().expect("entry_lines"),
            expected,
            "{name}"
        );
        let jsonl = session.entry_lines_jsonl().expect("entry_lines_jsonl");
        assert_eq!(jsonl, replayed_jsonl(&path), "{name}");
        let memory = Session::open_storage(
            Box::new(treelog::storage::MemoryStorage::new(&path, log)),
            SessionOptions::default(),
        )
        .expect("memory session");
        assert_eq!(
            memory.entry_lines().expect("entry_lines"),
            expected,
            "{name} (memory)"
        );
    }
}

/// Entries appended through the handle (held in the index's overlay, not yet flushed) are in
/// the answer, in file order.
#[test]
fn appended_entries_are_included() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("log.jsonl");
    std::fs::copy(bundled("pi16-gen-a"), &path).expect("copy transcript");
    let mut session = treelog_testkit::open(&path);
    session
        .append_message(r#"{"role":"user","content":"more","timestamp":5}"#)
        .expect("append");
    session.append_session_info("named").expect("append");
    assert_eq!(
        session.entry_lines().expect("entry_lines"),
        replayed_array(&path)
    );
}

/// How a test spoils an indexed log behind an open handle.
#[derive(Clone, Copy, Debug)]
enum Spoil {
    /// A letter of a line in the middle of the log rewritten in place (same length).
    RewriteLine,
    /// One bit of a stored record page flipped (its seal no longer holds).
    DamageRecordPage,
}

/// Which read a test makes.
#[derive(Clone, Copy, Debug)]
enum Read {
    EntryLines,
    Entries,
}

/// A line that differs from its record is the log rewritten behind the index: every read of
/// the lines (`entry_lines`, `entries`) refuses it with `LogChanged` at that line's offset and
/// rebuilds nothing (entry_lines rebuilt from the changed log, where the other reads refused);
/// a damaged record page is the index's damage: every read rebuilds it and answers with the
/// replay of the log.
#[test]
fn a_changed_line_is_refused_and_a_damaged_record_rebuilds() {
    for spoil in [Spoil::RewriteLine, Spoil::DamageRecordPage] {
        for read in [Read::EntryLines, Read::Entries] {
            let case = format!("{spoil:?}, {read:?}");
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("log.jsonl");
            std::fs::copy(bundled("pi16-sample-300"), &path).expect("copy transcript");
            drop(treelog_testkit::open(&path));
            let mut changed_line_offset = None;
            if let Spoil::DamageRecordPage = spoil {
                treelog_testkit::tamper(&path, |txn| {
                    treelog_testkit::tamper_page(txn, 10, |_, page| page[40] ^= 0x01)
                });
            }
            let session = treelog_testkit::open(&path);
            assert_eq!(session.index_state(), &IndexState::Fresh, "{case}");
            if let Spoil::RewriteLine = spoil {
                let mut log = std::fs::read(&path).expect("read log");
                let middle = log.len() / 2;
                let letter = middle
                    + log[middle..]
                        .iter()
                        .position(|byte| byte.is_ascii_lowercase())
                        .expect("a letter");
                log[letter] = if log[letter] == b'x' { b'y' } else { b'x' };
                std::fs::write(&path, &log).expect("rewrite log in place");
                let line_start = log[..letter].iter().rposition(|&b| b == b'\n').unwrap() + 1;
                changed_line_offset = Some(line_start as u64);
            }
            let got = match read {
                Read::EntryLines => session.entry_lines(),
                Read::Entries => session.entries().and_then(|entries| {
                    let lines: treelog::Result<Vec<String>> =
                        entries.map(|entry| entry.map(|entry| entry.json)).collect();
                    lines.map(|lines| format!("[{}]", lines.join(",")))
                }),
            };
            match (changed_line_offset, got) {
                (Some(expected), Err(treelog::Error::LogChanged { offset_bytes, .. })) => {
                    assert_eq!(offset_bytes, expected, "{case}");
                    assert_eq!(session.index_state(), &IndexState::Fresh, "{case}");
                }
                (None, Ok(got)) => {
                    assert_eq!(got, replayed_array(&path), "{case}");
                    assert!(
                        matches!(
                            session.index_state(),
                            IndexState::Rebuilt { damaged: true, .. }
                        ),
                        "{case}: {:?}",
                        session.index_state()
                    );
                }
                (_, other) => panic!("{case}: {other:?}"),
            }
        }
    }
}
