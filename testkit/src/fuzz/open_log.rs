//! Fuzz target `open_log`: a log and a sidecar from any bytes, opened with the index and
//! without; also the answers, as text, that the other checks compare.

use std::fmt::Write as _;
use std::path::Path;

use treelog::{Error, Session, SessionOptions, sidecar_path};

/// A log plus a sidecar, opened with the index must answer exactly as an index-free open.
///
/// Input layout: `mode` (1 byte), `split` (u16 LE), then a body cut at `split` into `a` and `b`.
/// - mode 0: the log is `a`, the sidecar holds the raw bytes `b` (none if empty);
/// - mode 1: an index is built for log `b`, then the log is rewritten in place as `a`;
/// - mode 2: an index is built for log `b`, then `a` is appended to it (the catch-up path);
/// - mode 3: an index is built for log `b`, then corrupted with `a` read as (u32 offset, xor)
///   pairs; see [`check_damaged_sidecar`] for what holds then.
pub fn open_log(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (split, body) = match rest {
        [low, high, body @ ..] => (usize::from(u16::from_le_bytes([*low, *high])), body),
        _ => (0, rest),
    };
    let (a, b) = body.split_at(split.min(body.len()));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("x.jsonl");
    let sidecar = sidecar_path(&path);
    let log: Vec<u8> = match mode % 4 {
        0 => {
            if !b.is_empty() {
                std::fs::write(&sidecar, b).expect("write sidecar");
            }
            a.to_vec()
        }
        1 => {
            build_index(&path, b);
            a.to_vec()
        }
        2 => {
            build_index(&path, b);
            [b, a].concat()
        }
        _ => {
            build_index(&path, b);
            corrupt(&sidecar, a);
            b.to_vec()
        }
    };
    std::fs::write(&path, &log).expect("write log");
    if mode % 4 == 3 {
        check_damaged_sidecar(&path, &log);
    } else {
        check_open_matches_replay(&path, &log);
    }
}

/// A sidecar damaged in place may pass the open checks (they cover the log, not every redb
/// page): answers may then fail with an error, but nothing panics, the log is untouched, and
/// a rebuild gives exactly the index-free answers.
pub fn check_damaged_sidecar(path: &Path, log: &[u8]) {
    let plain = Session::open(
        path,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("index-free open failed: {error}"));
    let expected = answers(&plain, log);
    drop(plain);
    // A quick check may trust a damaged page: answers may fail, but nothing panics.
    if let Ok(session) = Session::open(path, SessionOptions::default()) {
        let _ = answers(&session, log);
    }
    // A full check verifies every index page, so it never trusts a damaged one.
    let full = Session::open(
        path,
        SessionOptions {
            verify: treelog::Verify::Full,
            ..SessionOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("a fully checked open failed: {error}"));
    let got = answers(&full, log);
    drop(full);
    assert!(
        got == expected,
        "a fully checked open differs from the replay\n--- replay\n{expected}\n--- full check\n{got}"
    );
    let rebuilt = Session::open(
        path,
        SessionOptions {
            rebuild_index: true,
            ..SessionOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("a rebuilding open failed: {error}"));
    let got = answers(&rebuilt, log);
    drop(rebuilt);
    let plain = Session::open(
        path,
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("index-free open failed: {error}"));
    let expected = answers(&plain, log);
    drop(plain);
    assert!(
        got == expected,
        "rebuilt index differs from the replay\n--- replay\n{expected}\n--- rebuilt\n{got}"
    );
    assert_eq!(
        std::fs::read(path).expect("read log"),
        log,
        "opening modified the log"
    );
    // After the rebuild, the normal checks hold again.
    check_open_matches_replay(path, log);
}

fn build_index(path: &Path, log: &[u8]) {
    std::fs::write(path, log).expect("write log");
    let session = Session::open(path, SessionOptions::default())
        .unwrap_or_else(|error| panic!("opening a fresh log failed: {error}"));
    drop(session);
}

fn corrupt(sidecar: &Path, patches: &[u8]) {
    let Ok(mut bytes) = std::fs::read(sidecar) else {
        return;
    };
    if bytes.is_empty() {
        return;
    }
    for patch in patches.chunks_exact(5) {
        let offset = u32::from_le_bytes([patch[0], patch[1], patch[2], patch[3]]) as usize;
        let at = offset % bytes.len();
        bytes[at] ^= patch[4].max(1);
    }
    std::fs::write(sidecar, bytes).expect("write sidecar");
}

/// Opens `path` with its index (twice: cold, then warm) and without, and compares every answer.
/// The log must be left byte for byte as it was.
pub fn check_open_matches_replay(path: &Path, log: &[u8]) {
    let plain_options = SessionOptions {
        use_index: false,
        ..SessionOptions::default()
    };
    let plain = Session::open(path, plain_options)
        .unwrap_or_else(|error| panic!("index-free open failed: {error}"));
    let expected = answers(&plain, log);
    drop(plain);
    for round in ["cold", "warm"] {
        let indexed = Session::open(path, SessionOptions::default())
            .unwrap_or_else(|error| panic!("{round} indexed open failed: {error}"));
        let got = answers(&indexed, log);
        drop(indexed);
        if got != expected {
            panic!(
                "{round} indexed open differs from the index-free replay\n--- replay\n{expected}\n--- indexed\n{got}"
            );
        }
        assert_eq!(
            std::fs::read(path).expect("read log"),
            log,
            "opening modified the log"
        );
    }
}

/// Entries whose path and context are compared one by one (the rest only in bulk).
const ANSWER_ENTRIES_MAX: usize = 40;

/// Everything a session answers, as text (errors included, so that both sides must fail alike).
/// `log` is the log's content, to tell a header read from it from one made up by the open.
pub fn answers(session: &Session, log: &[u8]) -> String {
    let mut out = String::new();
    let header = session.header();
    // An empty log's header is a new session's, made up by each open with a fresh UUIDv7 as
    // pi makes one for an empty file: two opens agree on its shape, not on its id.
    let shown_id = if log.is_empty() {
        assert!(
            treelog::format::ids::uuid_version(&header.id) == Some(7),
            "an empty log's header id is not a UUIDv7: {}",
            header.id
        );
        "(new UUIDv7)"
    } else {
        header.id.as_str()
    };
    let _ = writeln!(
        out,
        "header id={} version={} recovered={} cwd={:?} parent={:?}",
        shown_id, header.version, header.recovered, header.cwd, header.parent_session
    );
    if log.starts_with(header.json.as_bytes()) {
        let _ = writeln!(out, "header json {}", header.json);
    }
    let _ = writeln!(out, "leaf {:?}", session.leaf_id().map_err(short));
    let _ = writeln!(out, "log leaf {:?}", session.log_leaf_id().map_err(short));
    let _ = writeln!(out, "name {:?}", session.session_name().map_err(short));
    let _ = writeln!(out, "path {:?}", session.path_ids(None).map_err(short));
    let _ = writeln!(
        out,
        "context {:?}",
        session
            .build_context(None)
            .map(|context| context.to_json())
            .map_err(short)
    );
    let _ = writeln!(out, "labels {:?}", session.labels().map_err(short));
    let _ = writeln!(out, "opaque {:?}", session.opaque_records().map_err(short));
    let mut ids = Vec::new();
    match session.entries() {
        Ok(entries) => {
            for entry in entries {
                match entry {
                    Ok(entry) => {
                        let _ = writeln!(out, "entry {entry:?}");
                        ids.push(entry.id);
                    }
                    Err(error) => {
                        let _ = writeln!(out, "entry error {}", short(error));
                    }
                }
            }
        }
        Err(error) => {
            let _ = writeln!(out, "entries error {}", short(error));
        }
    }
    let _ = writeln!(out, "entry count {}", ids.len());
    match session.tree() {
        Ok(walk) => {
            for node in walk {
                let _ = writeln!(out, "tree {:?}", node.map_err(short));
            }
        }
        Err(error) => {
            let _ = writeln!(out, "tree error {}", short(error));
        }
    }
    for id in ids.iter().take(ANSWER_ENTRIES_MAX) {
        let _ = writeln!(
            out,
            "at {id}: entry {:?} path {:?} children {:?} context {:?}",
            session
                .entry(id)
                .map(|entry| entry.map(|entry| entry.offset_bytes))
                .map_err(short),
            session.path_ids(Some(id)).map_err(short),
            session
                .children(id)
                .map(|children| children
                    .into_iter()
                    .map(|child| child.id)
                    .collect::<Vec<_>>())
                .map_err(short),
            session
                .build_context(Some(id))
                .map(|context| context.to_json())
                .map_err(short)
        );
    }
    out
}

fn short(error: Error) -> String {
    error.to_string()
}
