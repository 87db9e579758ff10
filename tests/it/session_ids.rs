//! Session ids as a user meets them: every new session, including one created by the first append
//! to an empty or missing log, gets a UUIDv7 as pi writes them; a log that has lines but no header
//! shows a UUIDv8 derived from its path, the same on every open.

use treelog::format::ids;
use treelog::{Session, SessionOptions};

fn user(text: &str) -> String {
    format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#)
}

/// The version nibble of `id`, after checking the RFC 9562 layout
/// (`treelog::format::ids::uuid_version`).
fn uuid_version(id: &str) -> u8 {
    ids::uuid_version(id).unwrap_or_else(|| panic!("not an RFC 9562 uuid: {id}"))
}

/// The id in the header line the log holds now.
fn written_header_id(path: &std::path::Path) -> String {
    let log = std::fs::read_to_string(path).unwrap();
    let header: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(header["type"], "session");
    header["id"].as_str().unwrap().to_string()
}

/// A missing log and an empty log both get a UUIDv7 header with their first append, whose
/// timestamp is the time of the open; the id shown before the append is the one written.
#[test]
fn first_append_writes_a_uuid_v7() {
    let dir = tempfile::tempdir().unwrap();
    for (name, exists) in [("missing.jsonl", false), ("empty.jsonl", true)] {
        let path = dir.path().join(name);
        if exists {
            std::fs::write(&path, "").unwrap();
        }
        let before_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let mut session = Session::open(&path, SessionOptions::default()).unwrap();
        let shown = session.session_id().to_string();
        assert_eq!(uuid_version(&shown), 7, "{name}");
        let timestamp_ms = u64::from_str_radix(&shown[..8], 16).unwrap() << 16
            | u64::from_str_radix(&shown[9..13], 16).unwrap();
        assert!(
            timestamp_ms >= before_ms && timestamp_ms < before_ms + 60_000,
            "{name}: {shown} carries {timestamp_ms}, the open was at {before_ms}"
        );
        session.append_message(&user("hello")).unwrap();
        assert_eq!(written_header_id(&path), shown, "{name}");
    }
}

/// Sessions created in a directory, forked or branched get UUIDv7 ids, each one new.
#[test]
fn created_sessions_get_uuid_v7() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/w", SessionOptions::default()).unwrap();
    let first = session.append_message(&user("one")).unwrap();
    session.append_message(&user("two")).unwrap();
    let branched = session.create_branched_session(&first).unwrap();
    let ids = [
        session.session_id().to_string(),
        written_header_id(&branched),
    ];
    for id in &ids {
        assert_eq!(uuid_version(id), 7, "{id}");
    }
    assert_ne!(ids[0], ids[1]);
}

/// A log with an entry but no header shows a UUIDv8 made from its path: the same on every
/// open, another for a log at another path.
#[test]
fn headerless_log_shows_a_stable_uuid_v8() {
    let dir = tempfile::tempdir().unwrap();
    let entry = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
    let first = dir.path().join("first.jsonl");
    let second = dir.path().join("second.jsonl");
    for path in [&first, &second] {
        std::fs::write(path, format!("{entry}\n")).unwrap();
    }
    let shown = |path: &std::path::Path| {
        let session = Session::open(path, SessionOptions::default()).unwrap();
        assert!(session.header().recovered);
        session.session_id().to_string()
    };
    let id = shown(&first);
    assert_eq!(uuid_version(&id), 8);
    assert_eq!(shown(&first), id, "a second open agrees");
    assert_ne!(shown(&second), id);
}
