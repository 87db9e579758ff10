//! Regression: a complete, valid JSON line at the end of the log without its final `\n` was a torn
//! tail for treelog, never an entry, so `treelog path` left out the last entry that pi and OpenClaw
//! read (pi 1.6.0 parses the final unterminated piece and keeps it when `JSON.parse` accepts it;
//! 0.73.1 splits `content.trim()` on `\n`). Such a line is now the log's last line
//! (format-spec/log.md §1), read by every open and never written to the index; a writer that glues
//! bytes onto it instead of its `\n` (pi 0.73.1 appends without a separator) makes it another line,
//! which a live handle notices at its next catch-up and answers as a fresh replay does. An
//! unparseable fragment is still a torn tail.

use std::io::Write;
use std::path::{Path, PathBuf};

use treelog::{IndexState, Session, SessionOptions};
use treelog_testkit::{Answers, answers, no_index, replay, scratch_dir};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}"#;
const ONE: &str = r#"{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}"#;
const TWO: &str = r#"{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"two","timestamp":2}}"#;
const THREE: &str = r#"{"type":"message","id":"cccccccc","parentId":"bbbbbbbb","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"three","timestamp":3}}"#;

/// pi's answer for `HEADER\nONE\nTWO` (no `\n` after TWO), from pi 1.6.0's and pi 0.73.1's
/// `SessionManager.open` on a copy of the file: leaf, path and context messages.
const PI_LEAF: &str = "bbbbbbbb";
const PI_PATH: [&str; 2] = ["aaaaaaaa", "bbbbbbbb"];
const PI_CONTEXT: &str = r#"{"messages":[{"role":"user","content":"one","timestamp":1},{"role":"user","content":"two","timestamp":2}],"thinkingLevel":"off","model":null}"#;

fn write_log(dir: &Path, bytes: &[u8]) -> PathBuf {
    let path = dir.join("s.jsonl");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

/// `HEADER\nONE\nTWO`: the last line complete, its `\n` missing.
fn unterminated_log() -> Vec<u8> {
    format!("{HEADER}\n{ONE}\n{TWO}").into_bytes()
}

fn assert_reads_the_last_line(session: &mut Session, what: &str) {
    assert_eq!(
        session.leaf_id().unwrap().as_deref(),
        Some(PI_LEAF),
        "{what}: leaf"
    );
    assert_eq!(session.path_ids(None).unwrap(), PI_PATH, "{what}: path");
    assert_eq!(
        session.build_context(None).unwrap().to_json(),
        PI_CONTEXT,
        "{what}: context"
    );
    let tree: Vec<String> = session
        .tree()
        .unwrap()
        .map(|node| node.unwrap().id)
        .collect();
    assert_eq!(tree, PI_PATH, "{what}: tree");
    assert_eq!(session.entry_count().unwrap(), 2, "{what}: entry count");
    assert!(
        session.entry("bbbbbbbb").unwrap().is_some(),
        "{what}: entry"
    );
    assert_eq!(
        session.stats().unwrap().torn_tail_bytes,
        0,
        "{what}: no torn tail"
    );
}

/// The last line is read as pi reads it by an open without index, a cold open (no sidecar), a
/// warm one (sidecar built with the line present) and one that catches up a sidecar built
/// before the line was written; the sidecar never stores it, so every open reads it again.
#[test]
fn every_open_reads_the_last_line() {
    let dir = scratch_dir();
    let path = write_log(dir.path(), &unterminated_log());

    let mut plain = Session::open(&path, no_index()).unwrap();
    assert_reads_the_last_line(&mut plain, "no index");
    let mut cold = Session::open(&path, SessionOptions::default()).unwrap();
    assert!(matches!(cold.index_state(), IndexState::Rebuilt { .. }));
    assert_reads_the_last_line(&mut cold, "cold");
    // A handle writes its index out on sync: never the line without its newline.
    cold.sync().unwrap();
    drop(cold);
    let mut warm = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(
        *warm.index_state(),
        IndexState::CaughtUp {
            bytes: TWO.len() as u64,
            lines: 1
        },
        "the line without its newline is read again, not stored"
    );
    assert_reads_the_last_line(&mut warm, "warm");
    drop(warm);

    let dir = scratch_dir();
    let path = write_log(dir.path(), format!("{HEADER}\n{ONE}\n").as_bytes());
    let mut live = Session::open(&path, SessionOptions::default()).unwrap();
    append_raw(&path, TWO.as_bytes());
    let mut caught_up = Session::open(&path, SessionOptions::default()).unwrap();
    assert_reads_the_last_line(&mut caught_up, "caught up");
    live.refresh().unwrap();
    assert_reads_the_last_line(&mut live, "live handle after refresh");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        unterminated_log(),
        "opening never writes"
    );
}

/// An append after the line writes its `\n` first, then the new entry, a child of the line:
/// both entries survive, on the live handle and on every reopen.
#[test]
fn append_ends_the_line_first_and_both_survive() {
    for use_index in [true, false] {
        let dir = scratch_dir();
        let path = write_log(dir.path(), &unterminated_log());
        let options = SessionOptions {
            use_index,
            ..SessionOptions::default()
        };
        let mut session = Session::open(&path, options).unwrap();
        let id = session
            .append_message(r#"{"role":"user","content":"new","timestamp":9}"#)
            .unwrap();
        let after = std::fs::read(&path).unwrap();
        let written = &after[unterminated_log().len()..];
        assert!(
            written.starts_with(b"\n{\"type\":\"message\"") && written.ends_with(b"\n"),
            "the line is ended first: {:?}",
            String::from_utf8_lossy(written)
        );
        let expected_path = ["aaaaaaaa", "bbbbbbbb", id.as_str()];
        assert_eq!(session.path_ids(None).unwrap(), expected_path);
        assert_eq!(answers(&session).unwrap(), replay(&path), "live handle");
        session.close().unwrap();
        for (what, options) in [
            ("reopened", SessionOptions::default()),
            ("replay", no_index()),
        ] {
            let reopened = Session::open(&path, options).unwrap();
            assert_eq!(reopened.path_ids(None).unwrap(), expected_path, "{what}");
            assert_eq!(reopened.entry_count().unwrap(), 3, "{what}");
        }
    }
}

/// Another writer that ends the line and appends more lines after it is caught up like any
/// writer: by a live handle's refresh, and by opens of the sidecar it left.
#[test]
fn foreign_newline_and_lines_are_caught_up() {
    for use_index in [true, false] {
        let dir = scratch_dir();
        let path = write_log(dir.path(), &unterminated_log());
        let options = SessionOptions {
            use_index,
            ..SessionOptions::default()
        };
        let mut live = Session::open(&path, options).unwrap();
        append_raw(&path, b"\n");
        live.refresh().unwrap();
        assert_eq!(answers(&live).unwrap(), replay(&path), "after the newline");
        append_raw(&path, format!("{THREE}\n").as_bytes());
        live.refresh().unwrap();
        assert_eq!(
            live.path_ids(None).unwrap(),
            ["aaaaaaaa", "bbbbbbbb", "cccccccc"]
        );
        assert_eq!(
            answers(&live).unwrap(),
            replay(&path),
            "after the next line"
        );
        drop(live);
        let reopened = Session::open(&path, SessionOptions::default()).unwrap();
        assert_eq!(answers(&reopened).unwrap(), replay(&path), "reopened");
    }
}

/// The same as one appending write (`\n`, then a line), seen by a handle that last read the
/// line without its `\n`, and by a reader whose overlay held lines before it.
#[test]
fn foreign_append_in_one_write_is_caught_up() {
    let dir = scratch_dir();
    let path = write_log(dir.path(), format!("{HEADER}\n").as_bytes());
    let mut live = Session::open(&path, SessionOptions::default()).unwrap();
    append_raw(&path, format!("{ONE}\n{TWO}").as_bytes());
    live.refresh().unwrap();
    assert_eq!(live.path_ids(None).unwrap(), PI_PATH);
    append_raw(&path, format!("\n{THREE}\n").as_bytes());
    live.refresh().unwrap();
    assert_eq!(answers(&live).unwrap(), replay(&path));
    assert_eq!(live.leaf_id().unwrap().as_deref(), Some("cccccccc"));
}

/// Bytes glued onto the line instead of its `\n` (pi 0.73.1's `appendFileSync` of its next
/// entry) make one invalid line of both: a live handle that had read the line answers what a
/// fresh replay answers (no stale entry), its leaf follows the log's, and its next append is
/// a child of that leaf; the same whether it refreshes or appends first, with or without index.
#[test]
fn glued_bytes_give_the_replay_answer() {
    for use_index in [true, false] {
        for refresh_first in [true, false] {
            let what = format!("index {use_index}, refresh first {refresh_first}");
            let dir = scratch_dir();
            let path = write_log(dir.path(), format!("{HEADER}\n{ONE}\n").as_bytes());
            // A sidecar that holds ONE, so that the handle's store is a reloaded one.
            drop(Session::open(&path, SessionOptions::default()).unwrap());
            append_raw(&path, TWO.as_bytes());
            let options = SessionOptions {
                use_index,
                ..SessionOptions::default()
            };
            let mut live = Session::open(&path, options).unwrap();
            assert_eq!(
                live.leaf_id().unwrap().as_deref(),
                Some("bbbbbbbb"),
                "{what}"
            );
            // Writing the index out must not store the line: it is about to change.
            live.sync().unwrap();
            append_raw(&path, format!("{THREE}\n").as_bytes());
            let fresh = Session::open(&path, SessionOptions::default()).unwrap();
            assert_eq!(
                answers(&fresh).unwrap(),
                replay(&path),
                "{what}: fresh open"
            );
            drop(fresh);
            if refresh_first {
                live.refresh().unwrap();
                let expected: Answers = replay(&path);
                assert_eq!(answers(&live).unwrap(), expected, "{what}: after refresh");
                assert_eq!(
                    expected.path,
                    ["aaaaaaaa"],
                    "{what}: the glued line is opaque"
                );
                assert!(
                    live.entry("bbbbbbbb").unwrap().is_none(),
                    "{what}: stale entry"
                );
            }
            let id = live
                .append_message(r#"{"role":"user","content":"new","timestamp":9}"#)
                .unwrap();
            assert_eq!(
                live.path_ids(None).unwrap(),
                ["aaaaaaaa", id.as_str()],
                "{what}: the new entry is a child of the log's leaf"
            );
            assert_eq!(
                answers(&live).unwrap(),
                replay(&path),
                "{what}: after append"
            );
            drop(live);
            let reopened = Session::open(&path, SessionOptions::default()).unwrap();
            assert_eq!(
                answers(&reopened).unwrap(),
                replay(&path),
                "{what}: reopened"
            );
        }
    }
}

/// A fragment that does not parse is still a torn tail: not an entry, reported by `verify`,
/// and ended with a `\n` by the next append, which makes it an opaque line of its own.
#[test]
fn unparseable_fragment_is_still_a_torn_tail() {
    let dir = scratch_dir();
    let fragment = &TWO[..TWO.len() - 1];
    let path = write_log(
        dir.path(),
        format!("{HEADER}\n{ONE}\n{fragment}").as_bytes(),
    );
    let mut session = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(session.path_ids(None).unwrap(), ["aaaaaaaa"]);
    assert_eq!(
        session.stats().unwrap().torn_tail_bytes,
        fragment.len() as u64
    );
    let report = treelog::verify::verify_log(&path, false).unwrap();
    assert_eq!(
        report
            .problems
            .iter()
            .map(|problem| problem.kind.as_str())
            .collect::<Vec<_>>(),
        ["tornTail"]
    );
    let id = session
        .append_message(r#"{"role":"user","content":"new","timestamp":9}"#)
        .unwrap();
    drop(session);
    let after = replay(&path);
    assert_eq!(after.path, ["aaaaaaaa", id.as_str()]);
    assert_eq!(after.opaque.len(), 1, "the fragment is a line of its own");
}

/// `treelog verify` reads the line as a line (no problem at all, the index agrees with the
/// replay), and `treelog repair` only adds its `\n`.
#[test]
fn verify_and_repair_keep_the_line() {
    let dir = scratch_dir();
    let path = write_log(dir.path(), &unterminated_log());
    let report = treelog::verify::verify_log(&path, true).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.line_count, 3);
    assert_eq!(report.entry_count, 2);
    let plan = treelog::repair::plan_repair(&path, &unterminated_log(), "/tmp").unwrap();
    assert_eq!(plan.fixes.len(), 1, "{:?}", plan.fixes);
    assert!(plan.fixes[0].description.starts_with("end the last line"));
    let mut terminated = unterminated_log();
    terminated.push(b'\n');
    assert_eq!(plan.content, terminated);
}

/// A log that is only its header without a `\n` has that header (pi reads it too); an append
/// ends it and writes no second header, and bytes glued onto it leave a log whose first line
/// is no header, which a live handle then reports as a fresh open does.
#[test]
fn unterminated_header_is_the_header() {
    let dir = scratch_dir();
    let path = write_log(dir.path(), HEADER.as_bytes());
    let mut session = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(session.session_id(), "s1");
    assert!(!session.header().recovered);
    let id = session
        .append_message(r#"{"role":"user","content":"new","timestamp":9}"#)
        .unwrap();
    drop(session);
    let after = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(after.lines().count(), 2, "{after}");
    assert!(after.starts_with(&format!("{HEADER}\n")));
    let reopened = replay(&path);
    assert_eq!(reopened.header.0, "s1");
    assert_eq!(reopened.path, [id.as_str()]);

    let path = write_log(dir.path(), HEADER.as_bytes());
    let _ = std::fs::remove_file(treelog::sidecar_path(&path));
    let mut live = Session::open(&path, SessionOptions::default()).unwrap();
    append_raw(&path, format!("{ONE}\n").as_bytes());
    live.refresh().unwrap();
    assert!(live.header().recovered, "the glued first line is no header");
    let fresh = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(live.session_id(), fresh.session_id());
    assert_eq!(answers(&live).unwrap(), replay(&path));
}
