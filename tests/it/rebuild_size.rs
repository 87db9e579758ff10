//! A rebuilt sidecar of a small log carries little unused space: redb grows a small file by
//! doubling it, and a rebuild compacts the file when at least a fifth of it is unused and the
//! file is more than a twentieth of the log, as these small logs' sidecars are (mostly redb's
//! fixed tables; src/index/store/rebuild.rs, `compaction_worth_it`).

use std::io::Write;

use treelog::{Session, SessionOptions};

/// Bytes of the sidecar of `log` in use by redb's trees, and the sidecar's length.
fn used_and_file_bytes(log: &std::path::Path) -> (u64, u64) {
    let sidecar = treelog::sidecar_path(log);
    let file_bytes = std::fs::metadata(&sidecar).expect("sidecar").len();
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open(&sidecar)
        .expect("open sidecar");
    let txn = db.begin_write().expect("write transaction");
    let stats = txn.stats().expect("stats");
    txn.abort().expect("abort");
    (
        stats.allocated_pages() * stats.page_size() as u64,
        file_bytes,
    )
}

/// Rebuilds of logs of several sizes (among them ones whose uncompacted sidecar is a third
/// unused) leave at most a fifth of the sidecar unused, and answer as a replay does.
#[test]
fn rebuilt_sidecar_is_mostly_used() {
    let dir = treelog_testkit::scratch_dir();
    for entries in [200usize, 3_000, 8_000] {
        let log = dir.path().join(format!("log-{entries}.jsonl"));
        let mut text = String::from(r#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#);
        text.push('\n');
        for n in 0..entries {
            let parent = if n == 0 {
                "null".to_string()
            } else {
                format!("\"{:08x}\"", n - 1)
            };
            text.push_str(&format!(
                r#"{{"type":"message","id":"{n:08x}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{}"}}}}"#,
                "words ".repeat(40 + n % 50)
            ));
            text.push('\n');
        }
        std::fs::File::create(&log)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .expect("write log");
        let options = SessionOptions {
            rebuild_index: true,
            ..SessionOptions::default()
        };
        let session = Session::open(&log, options).expect("rebuild");
        let answers = treelog_testkit::answers(&session).expect("answers");
        drop(session);
        assert_eq!(answers, treelog_testkit::replay(&log), "{entries} entries");
        let (used_bytes, file_bytes) = used_and_file_bytes(&log);
        assert!(
            file_bytes.saturating_sub(used_bytes) * 5 <= file_bytes,
            "{entries} entries: {file_bytes} bytes of sidecar, {used_bytes} in use"
        );
    }
}
