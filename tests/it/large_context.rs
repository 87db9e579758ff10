//! Contexts of more than 1 MiB are gathered on two threads, split at a line near the middle
//! (src/line_reads.rs). These tests prove that the answer is still the log's own message text
//! byte for byte, in order, whichever half a line lands in; that a line changed behind the
//! index is refused with its offset in either half; and that invalid UTF-8 in one line
//! replaces only that line's bad bytes, as pi's decoder does.

use std::path::Path;

use serde_json::json;
use treelog::{Error, Session};

const MESSAGES: usize = 600;
/// ~3.6 MB of messages: well over the two-thread threshold.
const TEXT_BYTES: usize = 6_000;

/// Writes a v3 log of `MESSAGES` chained message entries and returns, per entry, its line's
/// byte offset and the exact JSON text of its message.
fn write_log(path: &Path) -> Vec<(u64, String)> {
    let mut log = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"large-context\",\"timestamp\":\"2026-11-30T00:00:00.000Z\",\"cwd\":\"/tmp\"}\n",
    );
    let mut messages = Vec::new();
    let mut parent = serde_json::Value::Null;
    for index in 0..MESSAGES {
        let id = format!("{index:08x}");
        // Non-ASCII every few dozen bytes, as real transcripts have.
        let text: String = format!("message {index}: naïve café Ωmega 🚀 ")
            .chars()
            .cycle()
            .take(TEXT_BYTES / 2)
            .collect();
        let message = json!({"role": if index % 2 == 0 { "user" } else { "assistant" },
                             "content": [{"type": "text", "text": text}]});
        let message_text = serde_json::to_string(&message).unwrap();
        let line = format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-11-30T00:00:00.000Z\",\"message\":{message_text}}}\n"
        );
        messages.push((log.len() as u64, message_text));
        log.push_str(&line);
        parent = json!(id);
    }
    std::fs::write(path, log).unwrap();
    messages
}

fn context_messages(session: &Session) -> treelog::Result<Vec<String>> {
    Ok(session
        .build_context(None)?
        .messages
        .iter()
        .map(|message| message.get().to_string())
        .collect())
}

/// Every message comes back byte for byte, indexed or replayed.
#[test]
fn large_context_is_the_logs_own_text() {
    let dir = treelog_testkit::scratch_dir();
    let path = dir.path().join("large.jsonl");
    let expected: Vec<String> = write_log(&path).into_iter().map(|(_, text)| text).collect();
    assert!(expected.iter().map(String::len).sum::<usize>() > 2 << 20);
    assert_eq!(
        context_messages(&treelog_testkit::open(&path)).unwrap(),
        expected
    );
    let replayed = Session::open(&path, treelog_testkit::no_index()).unwrap();
    assert_eq!(context_messages(&replayed).unwrap(), expected);
}

/// A byte changed behind the index, in a line of the first half, of the second half, or in
/// the last line, is refused with that line's offset, never answered.
#[test]
fn changed_line_in_either_half_is_refused() {
    for changed in [3, MESSAGES / 2 + 7, MESSAGES - 1] {
        let dir = treelog_testkit::scratch_dir();
        let path = dir.path().join("large.jsonl");
        let messages = write_log(&path);
        let session = treelog_testkit::open(&path);
        let (offset, _) = messages[changed];
        let mut bytes = std::fs::read(&path).unwrap();
        // A letter inside the message text: same length, still valid JSON.
        let at = offset as usize + 200;
        bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
        std::fs::write(&path, &bytes).unwrap();
        match context_messages(&session) {
            Err(Error::LogChanged { offset_bytes, .. }) => {
                assert_eq!(offset_bytes, offset, "entry {changed}")
            }
            other => panic!("entry {changed}: expected LogChanged, got {other:?}"),
        }
    }
}

/// A line with a byte that is not UTF-8 (written by another tool) is decoded on its own with
/// U+FFFD, and every other message stays byte for byte.
#[test]
fn invalid_utf8_in_one_line_replaces_only_its_bytes() {
    let dir = treelog_testkit::scratch_dir();
    let path = dir.path().join("large.jsonl");
    let messages = write_log(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    let bad = MESSAGES / 2 + 3;
    let (offset, _) = messages[bad];
    let line_end = bytes[offset as usize..]
        .iter()
        .position(|b| *b == b'\n')
        .unwrap();
    let line =
        String::from_utf8(bytes[offset as usize..offset as usize + line_end].to_vec()).unwrap();
    // Replace an ASCII letter of the text with 0xFF.
    let at = offset as usize + line.find("message ").unwrap() + 1;
    bytes[at] = 0xFF;
    std::fs::write(&path, &bytes).unwrap();

    let mut expected: Vec<String> = messages.iter().map(|(_, text)| text.clone()).collect();
    let bad_text = &mut expected[bad];
    let in_message = at - offset as usize - line.find("\"message\":").unwrap() - 10;
    bad_text.replace_range(in_message..in_message + 1, "\u{FFFD}");

    assert_eq!(
        context_messages(&treelog_testkit::open(&path)).unwrap(),
        expected
    );
    let replayed = Session::open(&path, treelog_testkit::no_index()).unwrap();
    assert_eq!(context_messages(&replayed).unwrap(), expected);
}
