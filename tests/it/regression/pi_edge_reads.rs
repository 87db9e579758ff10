//! Regressions on input pi reads one way and treelog read another (found by the bad-input
//! tests): a header `"version": 3.0` was read as version 1 (JavaScript compares the number, 3),
//! and a `message` entry without a `message` field was left out of the context, where pi
//! pushes `entry.message` (undefined, written as null by JSON.stringify); a branch summary
//! whose `summary` is a zero spelled `0.00` or `1e-400` (falsy in JavaScript) was put in the
//! context, which pi skips; a line with a key holding an unpaired surrogate escape
//! (`{"\udc00":1,...}`, valid JSON that `JSON.parse` reads) was an opaque record ("not a JSON
//! object"), where pi keeps it as an entry; a message role spelled with an escape
//! (`"assist\u0061nt"`) was not read as an assistant's, so the context lost its model.

use treelog::{Session, SessionOptions};

fn open(lines: &[&str]) -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let session = Session::open(&path, SessionOptions::default()).unwrap();
    (dir, session)
}

/// `"version": 3.0` is version 3: entries keep their own ids.
#[test]
fn fractional_version_is_read_as_the_number() {
    let (_dir, session) = open(&[
        r#"{"type":"session","version":3.0,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}"#,
    ]);
    assert_eq!(session.header().version, 3);
    assert_eq!(session.path_ids(None).unwrap(), ["a1"]);
}

/// A message entry without a message contributes null, as in pi's context.
#[test]
fn message_entry_without_message_is_null_in_context() {
    let (_dir, session) = open(&[
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z"}"#,
    ]);
    assert_eq!(
        session.build_context(None).unwrap().to_json(),
        r#"{"messages":[null],"thinkingLevel":"off","model":null}"#
    );
}

/// A branch summary whose summary is zero in any spelling is left out, as pi's
/// `entry.summary` test leaves it out; a non-zero number is kept.
#[test]
fn zero_summary_in_any_spelling_is_falsy() {
    for (summary, kept) in [
        ("0.00", false),
        ("1e-400", false),
        ("-0e3", false),
        ("0.5", true),
    ] {
        let (_dir, session) = open(&[
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}"#,
            &format!(
                r#"{{"type":"branch_summary","id":"b1","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z","fromId":"a1","summary":{summary}}}"#
            ),
        ]);
        let messages = session.build_context(None).unwrap().messages.len();
        assert_eq!(messages, if kept { 2 } else { 1 }, "summary {summary}");
    }
}

/// Keys with unpaired surrogate escapes, at the top level or inside the message, do not stop
/// a line from being an entry: the path, the context, the entries, `verify` and a branched
/// session read them as pi 0.73.1 does (observed on this log: branch a1 a2 a3 a4, 4
/// context messages).
#[test]
fn keys_with_unpaired_surrogates_are_read_as_pi_reads_them() {
    let (dir, session) = open(&[
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"assistant","content":"x"}}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"lone \ud800 in value"}}"#,
        r#"{"type":"message","id":"a3","parentId":"a2","\udc00":1,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"lone in key"}}"#,
        r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"assistant","\ud800x":"lone in nested key"}}"#,
    ]);
    assert_eq!(session.path_ids(None).unwrap(), ["a1", "a2", "a3", "a4"]);
    assert_eq!(session.build_context(None).unwrap().messages.len(), 4);
    let a3 = session.entry("a3").unwrap().expect("a3 is an entry");
    assert_eq!(a3.parent_id.as_deref(), Some("a2"));
    assert_eq!(
        a3.field("timestamp")
            .map(|raw| raw.get().to_string())
            .as_deref(),
        Some(r#""2025-01-01T00:00:01.000Z""#)
    );
    assert_eq!(
        session.entry("a4").unwrap().expect("a4").kind,
        treelog::EntryKind::Message
    );
    let report = treelog::verify::verify_log(&dir.path().join("s.jsonl"), true).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    let branched = session.create_branched_session("a4").unwrap();
    let copy = Session::open(&branched, SessionOptions::default()).unwrap();
    assert_eq!(copy.path_ids(None).unwrap(), ["a1", "a2", "a3", "a4"]);
    let copied = std::fs::read_to_string(&branched).unwrap();
    assert!(
        copied.contains(r#""\udc00":1"#),
        "the key is kept byte for byte: {copied}"
    );
}

/// A role spelled with an escape is the role it decodes to: the assistant message sets the
/// context's model, as in pi 0.73.1 (checked on this log).
#[test]
fn escaped_assistant_role_is_an_assistant() {
    let (_dir, session) = open(&[
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"assist\u0061nt","content":"x","provider":"p","model":"m"}}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}"#,
    ]);
    let context = session.build_context(None).unwrap().to_json();
    assert!(
        context.ends_with(r#""model":{"provider":"p","modelId":"m"}}"#),
        "{context}"
    );
}
