//! Regression: a log that starts with a UTF-8 byte order mark (EF BB BF) got a header made up in
//! memory, as if its first line were corrupt. pi 0.73.1 reads the header after the mark (its
//! `content.trim()` removes U+FEFF); pi 1.6.0 refuses the file. Observed under Node 24 on the log
//! of `log()` below, from a directory where both packages are installed, with `node probe_bom.mjs
//! old|new FILE`, where probe_bom.mjs is:
//! ```text
//! const pkg = process.argv[2] === "old" ? "@mariozechner/pi-coding-agent" : "@earendil-works/pi-coding-agent";
//! const { SessionManager } = await import(pkg);
//! try {
//!   const s = SessionManager.open(process.argv[3]);
//!   console.log(JSON.stringify({ id: s.getSessionId(), branch: s.getBranch().map((e) => e.id),
//!     context: s.buildSessionContext().messages.length }));
//! } catch (e) { console.log("throws:", e.message); }
//! ```
//! 0.73.1 answers session id
//! `00000000-0000-7000-8000-000000000005`, branch `["a1"]`, one context message, and leaves
//! the file unchanged; 1.6.0 throws `Session file is not a valid pi session: <file>`.
//!
//! treelog now reads the header after the mark, keeps the mark in the file byte for byte,
//! and every index answer, append, verify and repair agrees with that.

use std::path::{Path, PathBuf};

use treelog::verify::{ProblemKind, verify_log};
use treelog::{IndexState, Session, SessionOptions};

const BOM: &[u8] = b"\xEF\xBB\xBF";
const HEADER: &str = r#"{"type":"session","version":3,"id":"00000000-0000-7000-8000-000000000005","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}"#;
const ENTRY: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;

/// The probed log: the mark, the header, one user message.
fn log() -> Vec<u8> {
    [BOM, HEADER.as_bytes(), b"\n", ENTRY.as_bytes(), b"\n"].concat()
}

fn write(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn open(path: &Path) -> Session {
    Session::open(path, SessionOptions::default()).unwrap()
}

/// What a session answers, for comparing handles and reopens.
fn answers(session: &Session) -> (String, bool, Vec<String>, String, Vec<(String, u64)>) {
    (
        session.header().json.clone(),
        session.header().recovered,
        session.path_ids(None).unwrap(),
        session.build_context(None).unwrap().to_json(),
        session
            .entries()
            .unwrap()
            .map(|entry| entry.map(|entry| (entry.json, entry.offset_bytes)).unwrap())
            .collect(),
    )
}

/// The header after the mark is the session's, as pi 0.73.1 reads it; the entry after it is
/// read back whole, at its place in the file.
#[test]
fn header_after_the_mark_is_read() {
    let (_dir, path) = write(&log());
    let session = open(&path);
    assert!(!session.header().recovered);
    assert_eq!(session.header().json, HEADER);
    assert_eq!(session.session_id(), "00000000-0000-7000-8000-000000000005");
    assert_eq!(session.path_ids(None).unwrap(), ["a1"]);
    let entry = session.entry("a1").unwrap().unwrap();
    assert_eq!(entry.json, ENTRY);
    assert_eq!(entry.offset_bytes, (BOM.len() + HEADER.len() + 1) as u64);
    assert_eq!(
        session.build_context(None).unwrap().to_json(),
        r#"{"messages":[{"role":"user","content":"hi","timestamp":1}],"thinkingLevel":"off","model":null}"#
    );
    assert!(treelog::directory::read_header(&path).is_some_and(|header| header.json == HEADER));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        log(),
        "opening changes no byte"
    );
}

/// An append adds bytes after the old ones, the mark untouched; the index written then is
/// trusted by the next open (no rebuild), agrees with a rebuild from the log, and verify finds
/// nothing but the mark itself, also with a full check of every hash block.
#[test]
fn append_index_and_verify_keep_the_mark() {
    let (_dir, path) = write(&log());
    let mut session = open(&path);
    let id = session
        .append_message(
            r#"{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}"#,
        )
        .unwrap();
    let live = answers(&session);
    drop(session);

    let bytes = std::fs::read(&path).unwrap();
    assert!(
        bytes.starts_with(&log()),
        "the old bytes, mark included, are kept"
    );
    assert!(bytes.ends_with(b"\n"));

    let reopened = open(&path);
    assert_eq!(reopened.index_state(), &IndexState::Fresh);
    assert_eq!(answers(&reopened), live);
    assert_eq!(reopened.path_ids(None).unwrap(), ["a1".to_string(), id]);
    drop(reopened);

    std::fs::remove_file(treelog::sidecar_path(&path)).unwrap();
    let rebuilt = open(&path);
    assert!(matches!(rebuilt.index_state(), IndexState::Rebuilt { .. }));
    assert_eq!(answers(&rebuilt), live);
    drop(rebuilt);

    for full in [false, true] {
        let report = verify_log(&path, full).unwrap();
        let kinds: Vec<_> = report.problems.iter().map(|problem| problem.kind).collect();
        assert_eq!(kinds, [ProblemKind::Encoding], "{:?}", report.problems);
        assert_eq!(report.problems[0].offset_bytes, Some(0));
    }
}

/// A first line that is an entry after the mark is read as an entry (with a header made up,
/// as without the mark), its text read back without the mark.
#[test]
fn entry_after_the_mark_is_an_entry() {
    let (_dir, path) = write(&[BOM, ENTRY.as_bytes(), b"\n"].concat());
    let session = open(&path);
    assert!(session.header().recovered);
    assert_eq!(session.entry("a1").unwrap().unwrap().json, ENTRY);
    assert_eq!(session.entry("a1").unwrap().unwrap().offset_bytes, 3);
}

/// A log holding only the mark is empty: the first append writes the header right after the
/// mark (no newline between them), and a reopen reads that header.
#[test]
fn append_to_a_mark_only_log_writes_the_header_after_it() {
    let (_dir, path) = write(BOM);
    let mut session = open(&path);
    let id = session
        .append_message(r#"{"role":"user","content":"x","timestamp":1}"#)
        .unwrap();
    let header = session.header().clone();
    assert!(!header.recovered);
    drop(session);
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(&[BOM, header.json.as_bytes(), b"\n"].concat()));
    let reopened = open(&path);
    assert!(!reopened.header().recovered);
    assert_eq!(reopened.session_id(), header.id);
    assert_eq!(reopened.path_ids(None).unwrap(), [id]);
}

/// Repair keeps the mark in front of the lines it rewrites (here a version 2 header migrated
/// to version 3), reports offsets in the original file, and plans nothing for a sound log.
#[test]
fn repair_keeps_the_mark() {
    let (_dir, path) = write(&log());
    assert!(
        treelog::repair::plan_repair(&path, &log(), "/tmp")
            .unwrap()
            .is_empty()
    );

    let v2 = [
        BOM,
        HEADER
            .replace(r#""version":3"#, r#""version":2"#)
            .as_bytes(),
        b"\n",
        ENTRY.as_bytes(),
        b"\n",
    ]
    .concat();
    let plan = treelog::repair::plan_repair(&path, &v2, "/tmp").unwrap();
    assert!(!plan.is_empty());
    assert_eq!(plan.original_len_bytes, v2.len() as u64);
    assert!(plan.content.starts_with(BOM));
    assert!(plan.content[BOM.len()..].starts_with(br#"{"type":"session","version":3,"#));
    assert!(plan.fixes.iter().all(|fix| fix.offset_bytes != Some(0)));
}

/// An index of schema version 7 was derived by the old rules (for this log: no header, the
/// first line an opaque record) and passes every check of the log's bytes, so only the
/// version tells it apart: it is rebuilt, and the answers are the new rules'.
#[test]
fn version_7_index_is_rebuilt() {
    let (_dir, path) = write(&log());
    drop(open(&path));
    {
        let db = redb::Database::open(treelog::sidecar_path(&path)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let meta: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
            let mut table = txn.open_table(meta).unwrap();
            let old = [b"treelog-idx\0".as_slice(), &7u32.to_le_bytes()].concat();
            table.insert("schema", old.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let session = open(&path);
    assert!(
        matches!(session.index_state(), IndexState::Rebuilt { reason, .. } if reason.contains("schema version")),
        "{:?}",
        session.index_state()
    );
    assert!(!session.header().recovered);
}
