//! Logs on an S3-compatible object store (`treelog::object_store`), against a real store on
//! the loopback interface: `scripts/seaweedfs start DIR` starts SeaweedFS and prints the
//! settings to export, and these tests run when `TREELOG_S3_TEST_ENDPOINT` is set (each is
//! skipped, with a notice on stderr, otherwise). An endpoint on any host but 127.0.0.1 is
//! refused: nothing here reaches another address.

use treelog_testkit as common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use treelog::object_store::{
    ObjectStoreError, Remote, S3Address, SegmentStorage, StoreConfig, open_session, pull, push,
};
use treelog::storage::{LogStorage, is_append_raced};
use treelog::{Error, IndexState, OnConflict, Session, SessionOptions};

/// The bucket the tests write to, named by `TREELOG_S3_TEST_BUCKET` (scripts/seaweedfs
/// creates it).
fn bucket() -> String {
    std::env::var("TREELOG_S3_TEST_BUCKET").unwrap_or_else(|_| "treelog-test".into())
}

/// Whether the store is there; prints why a test is skipped when it is not.
fn store_ready(test: &str) -> bool {
    let Ok(endpoint) = std::env::var("TREELOG_S3_TEST_ENDPOINT") else {
        eprintln!(
            "{test}: skipped: TREELOG_S3_TEST_ENDPOINT is unset (run `scripts/seaweedfs start DIR` \
             and export what it prints)"
        );
        return false;
    };
    assert!(
        endpoint.starts_with("http://127.0.0.1:"),
        "the tests reach 127.0.0.1 only, not {endpoint}"
    );
    assert_eq!(
        std::env::var("AWS_ENDPOINT_URL").ok().as_deref(),
        Some(endpoint.as_str()),
        "AWS_ENDPOINT_URL must be the test endpoint (export what scripts/seaweedfs prints)"
    );
    true
}

/// A log address no other test or run uses.
fn fresh_address(name: &str) -> S3Address {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let text = format!(
        "s3://{}/tests/{}-{nanos}-{}/{name}",
        bucket(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    S3Address::parse(&text).unwrap().unwrap()
}

fn remote() -> Arc<Remote> {
    Arc::new(Remote::connect(&StoreConfig::from_env().unwrap(), &bucket()).unwrap())
}

fn cached(dir: &Path) -> SessionOptions {
    SessionOptions {
        index_dir: Some(dir.to_path_buf()),
        ..SessionOptions::default()
    }
}

/// Asserts two sessions' answers are equal, naming the field that differs (not printing both).
fn assert_same(got: &common::Answers, expected: &common::Answers, what: &str) {
    let fields = [
        ("leaf", got.leaf == expected.leaf),
        ("path", got.path == expected.path),
        ("context", got.context == expected.context),
        ("tree", got.tree == expected.tree),
        ("labels", got.labels == expected.labels),
        ("name", got.name == expected.name),
        ("entries", got.entries == expected.entries),
        ("opaque", got.opaque == expected.opaque),
        ("header", got.header == expected.header),
    ];
    for (field, same) in fields {
        assert!(same, "{what}: {field} differs");
    }
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

const MESSAGE: &str = r#"{"role":"user","content":"hello","timestamp":1}"#;

fn message(text: &str) -> String {
    format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#)
}

#[test]
fn an_s3_session_answers_as_the_same_log_in_a_file() {
    if !store_ready("an_s3_session_answers_as_the_same_log_in_a_file") {
        return;
    }
    for name in [
        "pi16-demo.jsonl",
        "pi16-sample-300.jsonl",
        "pi-sample-200.jsonl",
        "pi073-gen-a.jsonl",
    ] {
        let local = data(name);
        let address = fresh_address(name);
        let pushed = push(&local, &address).unwrap();
        assert_eq!(pushed.len_bytes, std::fs::metadata(&local).unwrap().len());
        let expected = common::replay(&local);
        let cache = tempfile::tempdir().unwrap();
        let cold = open_session(&address, cached(cache.path())).unwrap();
        assert!(
            matches!(cold.index_state(), IndexState::Rebuilt { .. }),
            "{name}: {:?}",
            cold.index_state()
        );
        assert_same(
            &common::answers(&cold).unwrap(),
            &expected,
            &format!("{name}, cold"),
        );
        drop(cold);
        let warm = open_session(&address, cached(cache.path())).unwrap();
        assert_eq!(warm.index_state(), &IndexState::Fresh, "{name}");
        assert_same(
            &common::answers(&warm).unwrap(),
            &expected,
            &format!("{name}, from the cache"),
        );
        let no_index = SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        };
        let replayed = open_session(&address, no_index).unwrap();
        assert_same(
            &common::answers(&replayed).unwrap(),
            &expected,
            &format!("{name}, replayed"),
        );
        // Pulled back, byte for byte.
        let out = cache.path().join("pulled.jsonl");
        pull(&address, &out, false).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&local).unwrap());
    }
}

#[test]
fn appends_write_one_segment_each_and_read_back_as_a_file() {
    if !store_ready("appends_write_one_segment_each_and_read_back_as_a_file") {
        return;
    }
    let address = fresh_address("new.jsonl");
    let cache = tempfile::tempdir().unwrap();
    let mut session = open_session(&address, cached(cache.path())).unwrap();
    let first = session.append_message(MESSAGE).unwrap();
    let second = session.append_message(&message("again")).unwrap();
    session.close().unwrap();
    let storage = SegmentStorage::open(remote(), &address).unwrap();
    // The header and the first entry in one segment, then one segment per append.
    assert_eq!(storage.segments().len(), 2);
    let out = cache.path().join("pulled.jsonl");
    pull(&address, &out, false).unwrap();
    let local = Session::open(&out, common::no_index()).unwrap();
    assert_eq!(local.path_ids(None).unwrap(), vec![first, second]);
}

#[test]
fn a_reader_with_another_cache_catches_up() {
    if !store_ready("a_reader_with_another_cache_catches_up") {
        return;
    }
    let address = fresh_address("shared.jsonl");
    push(&data("pi16-demo.jsonl"), &address).unwrap();
    let (cache_a, cache_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut writer = open_session(&address, cached(cache_a.path())).unwrap();
    let mut reader = open_session(&address, cached(cache_b.path())).unwrap();
    let added = writer.append_message(&message("from A")).unwrap();
    reader.refresh().unwrap();
    assert_eq!(reader.leaf_id().unwrap().as_deref(), Some(added.as_str()));
    drop(reader);
    let more = writer.append_message(&message("from A, later")).unwrap();
    writer.close().unwrap();
    let reopened = open_session(&address, cached(cache_b.path())).unwrap();
    assert!(
        matches!(reopened.index_state(), IndexState::CaughtUp { .. }),
        "{:?}",
        reopened.index_state()
    );
    assert_eq!(reopened.leaf_id().unwrap().as_deref(), Some(more.as_str()));
}

#[test]
fn a_conditional_create_lets_one_writer_extend_a_prefix() {
    if !store_ready("a_conditional_create_lets_one_writer_extend_a_prefix") {
        return;
    }
    let address = fresh_address("raced.jsonl");
    push(&data("pi16-demo.jsonl"), &address).unwrap();
    let mut first = SegmentStorage::open(remote(), &address).unwrap();
    let mut second = SegmentStorage::open(remote(), &address).unwrap();
    let end = first.len_bytes().unwrap();
    assert_eq!(first.append(b"one\n").unwrap(), end + 4);
    let raced = second.append(b"two\n").unwrap_err();
    assert!(is_append_raced(&raced), "{raced}");
    assert!(
        raced.to_string().contains(&address.segment_key(end)),
        "the error names the object: {raced}"
    );
    // Nothing of the loser was written; after a catch-up it extends the new end.
    assert_eq!(second.len_bytes().unwrap(), end + 4);
    assert_eq!(second.append(b"two\n").unwrap(), end + 8);
}

/// Two writers append to one session at once, each with its own cache: every acknowledged
/// entry is in the log once, each segment holds whole lines of one writer, and a writer that
/// finds the other's entry on its leaf gets the engine's conflict error, then retries after a
/// refresh.
#[test]
fn two_writers_racing_lose_nothing_and_never_share_a_segment() {
    if !store_ready("two_writers_racing_lose_nothing_and_never_share_a_segment") {
        return;
    }
    const APPENDS: usize = 15;
    let address = fresh_address("race.jsonl");
    push(&data("pi16-demo.jsonl"), &address).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|writer| {
            let address = address.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let cache = tempfile::tempdir().unwrap();
                let options = SessionOptions {
                    on_conflict: OnConflict::Fail,
                    ..cached(cache.path())
                };
                let mut session = open_session(&address, options).unwrap();
                barrier.wait();
                let (mut acknowledged, mut conflicts) = (Vec::new(), 0);
                for i in 0..APPENDS {
                    loop {
                        match session.append_message(&message(&format!("{writer}-{i}"))) {
                            Ok(id) => {
                                acknowledged.push(id);
                                break;
                            }
                            Err(Error::Conflict { .. }) => {
                                conflicts += 1;
                                session.refresh().unwrap();
                            }
                            Err(error) => panic!("writer {writer}: {error}"),
                        }
                    }
                }
                session.close().unwrap();
                (writer, acknowledged, conflicts)
            })
        })
        .collect();
    let results: Vec<_> = writers.into_iter().map(|t| t.join().unwrap()).collect();
    let cache = tempfile::tempdir().unwrap();
    let out = cache.path().join("race.jsonl");
    pull(&address, &out, false).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    for (writer, acknowledged, conflicts) in &results {
        eprintln!(
            "writer {writer}: {} appends, {conflicts} conflict(s)",
            acknowledged.len()
        );
        for id in acknowledged {
            assert_eq!(
                text.matches(&format!("\"id\":\"{id}\"")).count(),
                1,
                "writer {writer}'s entry {id} is in the log once"
            );
        }
    }
    // Every segment holds whole lines, all written by one writer.
    let storage = SegmentStorage::open(remote(), &address).unwrap();
    for segment in storage.segments().iter().skip(1) {
        let lines = &bytes[segment.start as usize..segment.end() as usize];
        assert_eq!(
            lines.last(),
            Some(&b'\n'),
            "{} ends at a line end",
            segment.key
        );
        let lines = String::from_utf8(lines.to_vec()).unwrap();
        let from_a = lines.contains("\"content\":\"a-");
        let from_b = lines.contains("\"content\":\"b-");
        assert!(
            from_a != from_b,
            "{} holds lines of one writer: {lines}",
            segment.key
        );
    }
    // The log is one chain: each writer appended at the log's leaf (a refresh after a
    // conflict follows it), so the active path holds every acknowledged entry.
    let session = Session::open(&out, common::no_index()).unwrap();
    let path = session.path_ids(None).unwrap();
    for (_, acknowledged, _) in &results {
        assert!(acknowledged.iter().all(|id| path.contains(id)));
    }
}

#[test]
fn damaged_layouts_are_errors_naming_the_object() {
    if !store_ready("damaged_layouts_are_errors_naming_the_object") {
        return;
    }
    let remote = remote();
    let setup = |name: &str| {
        let address = fresh_address(name);
        push(&data("pi16-demo.jsonl"), &address).unwrap();
        let mut session = open_session(&address, common::no_index()).unwrap();
        session.append_message(MESSAGE).unwrap();
        session.append_message(&message("two")).unwrap();
        session.close().unwrap();
        let segments = SegmentStorage::open(remote.clone(), &address)
            .unwrap()
            .segments();
        assert_eq!(segments.len(), 3);
        (address, segments)
    };
    let open_error = |address: &S3Address| -> String {
        let cache = tempfile::tempdir().unwrap();
        match open_session(address, cached(cache.path())) {
            Ok(_) => panic!("{} opened", address.url()),
            Err(error) => error.to_string(),
        }
    };

    // A missing segment.
    let (address, segments) = setup("missing.jsonl");
    remote.delete(&segments[1].key).unwrap();
    let error = open_error(&address);
    assert!(error.contains("missing segment"), "{error}");
    assert!(error.contains(&segments[1].key), "{error}");

    // An overlapping one.
    let (address, segments) = setup("overlap.jsonl");
    remote
        .overwrite(&address.segment_key(segments[1].start + 1), b"x\n")
        .unwrap();
    let error = open_error(&address);
    assert!(error.contains("overlapping segment"), "{error}");

    // A foreign object in the log's folder.
    let (address, _) = setup("foreign.jsonl");
    let foreign = format!("{}notes.txt", address.segments_folder());
    remote.overwrite(&foreign, b"hello").unwrap();
    let error = open_error(&address);
    assert!(
        error.contains(&foreign) && error.contains("not a segment"),
        "{error}"
    );

    // A segment cut short: a gap before the next one.
    let (address, segments) = setup("short.jsonl");
    remote.overwrite(&segments[1].key, b"{}\n").unwrap();
    let error = open_error(&address);
    assert!(error.contains("missing segment"), "{error}");

    // A JSONL file copied as one object where a log is named.
    let address = fresh_address("plain.jsonl");
    remote
        .overwrite(
            &address.key,
            &std::fs::read(data("pi16-demo.jsonl")).unwrap(),
        )
        .unwrap();
    let error = open_error(&address);
    assert!(error.contains("a plain object"), "{error}");

    // A push over another log is refused, writing nothing.
    let (address, segments) = setup("other.jsonl");
    let refused = push(&data("pi16-sample-300.jsonl"), &address).unwrap_err();
    assert!(
        matches!(refused, ObjectStoreError::Refused { .. }),
        "{refused}"
    );
    let after = SegmentStorage::open(remote.clone(), &address)
        .unwrap()
        .segments();
    assert_eq!(after, segments);
}

#[test]
fn an_unreachable_store_is_an_error_naming_the_object() {
    if !store_ready("an_unreachable_store_is_an_error_naming_the_object") {
        return;
    }
    // A port on 127.0.0.1 nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let config = StoreConfig {
        endpoint: Some(format!("http://127.0.0.1:{port}")),
        ..StoreConfig::from_env().unwrap()
    };
    let remote = Arc::new(Remote::connect(&config, &bucket()).unwrap());
    let address = fresh_address("nowhere.jsonl");
    let error = match SegmentStorage::open(remote, &address) {
        Ok(_) => panic!("a store that is not there answered"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains(&address.segments_folder()), "{error}");
    assert!(error.contains("cannot list the log's segments"), "{error}");
}

/// A `SegmentStorage` that lets another writer append an entry (a child of `leaf`) just
/// before its own first append: the engine's write loses the conditional create, with nothing
/// written, and must catch up and apply the conflict rule as for a local file.
struct Interloper {
    inner: SegmentStorage,
    other: Option<(SegmentStorage, String)>,
}

impl LogStorage for Interloper {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn identity(&self) -> std::io::Result<treelog::storage::FileIdentity> {
        self.inner.identity()
    }
    fn len_bytes(&self) -> std::io::Result<u64> {
        self.inner.len_bytes()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read_at(offset, buf)
    }
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<u64> {
        if let Some((mut other, line)) = self.other.take() {
            other.len_bytes()?;
            other.append(line.as_bytes())?;
        }
        self.inner.append(bytes)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.inner.sync()
    }
    fn lock(&mut self) -> std::io::Result<()> {
        self.inner.lock()
    }
    fn unlock(&mut self) -> std::io::Result<()> {
        self.inner.unlock()
    }
}

#[test]
fn a_lost_create_is_the_engines_conflict_and_nothing_is_lost() {
    if !store_ready("a_lost_create_is_the_engines_conflict_and_nothing_is_lost") {
        return;
    }
    let leaf = "ad4e8d8b";
    let theirs = format!(
        "{{\"type\":\"message\",\"id\":\"0bad0001\",\"parentId\":\"{leaf}\",\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"message\":{}}}\n",
        message("theirs")
    );
    for policy in [OnConflict::Fail, OnConflict::FollowTip] {
        let address = fresh_address("interloper.jsonl");
        push(&data("pi16-demo.jsonl"), &address).unwrap();
        let storage = Interloper {
            inner: SegmentStorage::open(remote(), &address).unwrap(),
            other: Some((
                SegmentStorage::open(remote(), &address).unwrap(),
                theirs.clone(),
            )),
        };
        let options = SessionOptions {
            on_conflict: policy,
            ..SessionOptions::default()
        };
        let mut session = Session::open_storage(Box::new(storage), options).unwrap();
        assert_eq!(session.leaf_id().unwrap().as_deref(), Some(leaf));
        let result = session.append_message(&message("mine"));
        match policy {
            OnConflict::Fail => {
                match result {
                    Err(Error::Conflict { their_id, .. }) => assert_eq!(their_id, "0bad0001"),
                    other => panic!("expected the conflict error, got {other:?}"),
                }
                // The handle is not poisoned: after a refresh it appends after their entry.
                session.refresh().unwrap();
                let mine = session.append_message(&message("mine")).unwrap();
                assert_eq!(
                    session.path_ids(None).unwrap()[session.path_ids(None).unwrap().len() - 2..],
                    ["0bad0001".to_string(), mine]
                );
            }
            _ => {
                let mine = result.unwrap();
                let path = session.path_ids(None).unwrap();
                assert_eq!(path[path.len() - 2..], ["0bad0001".to_string(), mine]);
            }
        }
        let storage = SegmentStorage::open(remote(), &address).unwrap();
        assert_eq!(storage.segments().len(), 3, "push, theirs, mine");
    }
}

/// Compaction (format-spec/object-store.md §6): covering segments written in place of runs of
/// small ones, read as the same log by every reader, during and after.
mod compaction {
    use super::*;
    use std::time::Duration;
    use treelog::object_store::{CompactOptions, Compacted, compact, verify_layout};

    fn options(grace_seconds: u64) -> CompactOptions {
        // A grace under the minimum is for a log at rest: each test's passes run one at a time.
        CompactOptions {
            grace: Duration::from_secs(grace_seconds),
            at_rest: grace_seconds < treelog::object_store::GRACE_MIN.as_secs(),
        }
    }

    /// The local log `file` stored at `address` as one segment per `lines` lines (as that many
    /// appends leave it); returns the segments' keys.
    fn store_in_pieces(file: &Path, address: &S3Address, lines: usize) -> Vec<String> {
        let remote = remote();
        let bytes = std::fs::read(file).unwrap();
        let mut keys = Vec::new();
        let mut start = 0;
        for chunk in bytes
            .split_inclusive(|&b| b == b'\n')
            .collect::<Vec<_>>()
            .chunks(lines)
        {
            let piece: Vec<u8> = chunk.concat();
            let key = address.segment_key(start);
            remote.create(&key, &piece).unwrap();
            start += piece.len() as u64;
            keys.push(key);
        }
        keys
    }

    fn blake3_of(file: &Path) -> String {
        blake3::hash(&std::fs::read(file).unwrap())
            .to_hex()
            .to_string()
    }

    fn no_index() -> SessionOptions {
        SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        }
    }

    /// The log at `address` reads as `file`: the same bytes (listed, read whole, pulled) and
    /// the same answers, replayed and through a fresh cache.
    fn assert_reads_as(address: &S3Address, file: &Path, what: &str) {
        let (_, hash) = verify_layout(address).unwrap();
        assert_eq!(hash, blake3_of(file), "{what}: blake3");
        let expected = common::replay(file);
        let replayed = open_session(address, no_index()).unwrap();
        assert_same(
            &common::answers(&replayed).unwrap(),
            &expected,
            &format!("{what}, replayed"),
        );
        let cache = tempfile::tempdir().unwrap();
        let cold = open_session(address, cached(cache.path())).unwrap();
        assert_same(
            &common::answers(&cold).unwrap(),
            &expected,
            &format!("{what}, cold with a cache"),
        );
        let out = cache.path().join("pulled.jsonl");
        pull(address, &out, false).unwrap();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(file).unwrap(),
            "{what}: pulled"
        );
    }

    #[test]
    fn compaction_keeps_every_byte_and_answer() {
        if !store_ready("compaction_keeps_every_byte_and_answer") {
            return;
        }
        let local = data("pi16-sample-300.jsonl");
        let address = fresh_address("compacted.jsonl");
        let pieces = store_in_pieces(&local, &address, 7);
        assert!(pieces.len() > 10);
        assert_reads_as(&address, &local, "before");
        // The covering segment is written; the covered ones wait for their grace period.
        let first = compact(&address, &options(3600)).unwrap();
        assert_eq!(first.segments_before, pieces.len());
        assert_eq!(first.segments_after, 2, "{first:?}");
        assert_eq!(first.written.len(), 1);
        assert!(first.written[0].created);
        assert_eq!(first.written[0].segments, pieces.len() - 1);
        assert_eq!((first.deleted, first.waiting), (0, pieces.len() - 1));
        assert_eq!(first.len_bytes, std::fs::metadata(&local).unwrap().len());
        assert_reads_as(&address, &local, "compacted, covered segments kept");
        // A second pass with no grace period deletes them: nothing else changes.
        let second = compact(&address, &options(0)).unwrap();
        assert_eq!(second.written, vec![]);
        assert_eq!((second.deleted, second.waiting), (pieces.len() - 1, 0));
        let storage = SegmentStorage::open(remote(), &address).unwrap();
        assert_eq!(storage.segments().len(), 2);
        assert!(storage.covered().is_empty());
        assert_reads_as(&address, &local, "compacted, covered segments deleted");
        // Nothing left to do.
        let third = compact(&address, &options(0)).unwrap();
        assert_eq!(
            (third.written.len(), third.deleted, third.segments_after),
            (0, 0, 2)
        );
    }

    #[test]
    fn a_reader_that_listed_before_the_compaction_reads_the_same_log() {
        if !store_ready("a_reader_that_listed_before_the_compaction_reads_the_same_log") {
            return;
        }
        let local = data("pi16-sample-300.jsonl");
        let bytes = std::fs::read(&local).unwrap();
        let address = fresh_address("listed-before.jsonl");
        let pieces = store_in_pieces(&local, &address, 5);
        let read_all = |storage: &SegmentStorage| {
            let mut out = vec![0; bytes.len() + 10];
            let mut at = 0;
            loop {
                let count = storage.read_at(at as u64, &mut out[at..]).unwrap();
                if count == 0 {
                    break;
                }
                at += count;
            }
            out.truncate(at);
            out
        };
        // Listed before the compaction; read during the grace period, then after the
        // segments it listed were deleted (it lists again and reads the covering segment).
        let during = SegmentStorage::open(remote(), &address).unwrap();
        let after = SegmentStorage::open(remote(), &address).unwrap();
        assert_eq!(during.segments().len(), pieces.len());
        compact(&address, &options(3600)).unwrap();
        assert_eq!(read_all(&during), bytes);
        compact(&address, &options(0)).unwrap();
        assert_eq!(read_all(&after), bytes);
        assert_eq!(after.segments().len(), 2);
        assert_eq!(after.len_bytes().unwrap(), bytes.len() as u64);
        // A session opened before the compaction appends after it, and the log holds both.
        let address = fresh_address("session-before.jsonl");
        store_in_pieces(&local, &address, 5);
        let cache = tempfile::tempdir().unwrap();
        let mut session = open_session(&address, cached(cache.path())).unwrap();
        compact(&address, &options(0)).unwrap();
        session.refresh().unwrap();
        let added = session.append_message(&message("after")).unwrap();
        session.close().unwrap();
        let reopened = open_session(&address, cached(cache.path())).unwrap();
        assert_eq!(reopened.leaf_id().unwrap().as_deref(), Some(added.as_str()));
        let (_, hash) = verify_layout(&address).unwrap();
        let out = cache.path().join("pulled.jsonl");
        pull(&address, &out, false).unwrap();
        assert_eq!(hash, blake3_of(&out));
        assert!(std::fs::read(&out).unwrap().starts_with(&bytes));
    }

    #[test]
    fn an_append_racing_compactions_loses_nothing() {
        if !store_ready("an_append_racing_compactions_loses_nothing") {
            return;
        }
        let address = fresh_address("racing.jsonl");
        push(&data("pi16-demo.jsonl"), &address).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        let (acknowledged, passes) = std::thread::scope(|scope| {
            let compactor = scope.spawn(|| {
                let mut passes: Vec<Compacted> = Vec::new();
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    passes.push(compact(&address, &options(0)).unwrap());
                }
                passes
            });
            let cache = tempfile::tempdir().unwrap();
            let mut session = open_session(&address, cached(cache.path())).unwrap();
            let mut acknowledged = Vec::new();
            for i in 0..40 {
                acknowledged.push(session.append_message(&message(&format!("m{i}"))).unwrap());
            }
            session.close().unwrap();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            (acknowledged, compactor.join().unwrap())
        });
        assert!(passes.iter().any(|pass| !pass.written.is_empty()));
        compact(&address, &options(0)).unwrap();
        // Every acknowledged entry is on the path, in order, read back in every way.
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("pulled.jsonl");
        pull(&address, &file, false).unwrap();
        let local = Session::open(&file, common::no_index()).unwrap();
        let path = local.path_ids(None).unwrap();
        assert_eq!(path[path.len() - acknowledged.len()..], acknowledged[..]);
        assert_reads_as(&address, &file, "after racing appends");
        assert!(
            SegmentStorage::open(remote(), &address)
                .unwrap()
                .segments()
                .len()
                <= 3
        );
    }

    #[test]
    fn a_half_done_compaction_reads_the_same() {
        if !store_ready("a_half_done_compaction_reads_the_same") {
            return;
        }
        let local = data("pi16-sample-300.jsonl");
        let address = fresh_address("half-done.jsonl");
        let pieces = store_in_pieces(&local, &address, 9);
        // Stopped after writing the covering segment: nothing deleted.
        compact(&address, &options(3600)).unwrap();
        assert_reads_as(&address, &local, "covering written, nothing deleted");
        // Stopped half-way through the deletions.
        let remote = remote();
        for key in pieces.iter().step_by(2).take(pieces.len() / 2) {
            remote.delete(key).unwrap();
        }
        let storage = SegmentStorage::open(remote.clone(), &address).unwrap();
        assert_eq!(storage.segments().len(), 2);
        assert_reads_as(&address, &local, "covered segments deleted in part");
        // The next pass deletes the rest.
        let next = compact(&address, &options(0)).unwrap();
        assert!(next.deleted > 0 && next.waiting == 0, "{next:?}");
        assert!(
            SegmentStorage::open(remote, &address)
                .unwrap()
                .covered()
                .is_empty()
        );
        assert_reads_as(&address, &local, "deletions finished");
    }

    #[test]
    fn forged_covering_segments_are_errors_never_another_log() {
        if !store_ready("forged_covering_segments_are_errors_never_another_log") {
            return;
        }
        let local = data("pi16-sample-300.jsonl");
        let bytes = std::fs::read(&local).unwrap();
        let remote = remote();
        let segments_of = |address: &S3Address| {
            SegmentStorage::open(remote.clone(), address)
                .unwrap()
                .segments()
        };

        // A covering segment whose range ends inside a segment: every reader refuses it.
        let address = fresh_address("crossing.jsonl");
        store_in_pieces(&local, &address, 10);
        let segments = segments_of(&address);
        let end = segments[2].start + 3;
        let forged = address.covering_key(0, end);
        remote.create(&forged, &bytes[..end as usize]).unwrap();
        let open_error = match open_session(&address, no_index()) {
            Ok(_) => panic!("a crossing covering segment was read"),
            Err(error) => error.to_string(),
        };
        assert!(
            open_error.contains(&segments[2].key)
                && open_error.contains(&forged)
                && open_error.contains("overlapping segment"),
            "{open_error}"
        );
        let compact_error = compact(&address, &options(0)).unwrap_err().to_string();
        assert!(compact_error.contains(&forged), "{compact_error}");
        assert!(verify_layout(&address).is_err());

        // A covering segment of the right range whose size is not its name's.
        let address = fresh_address("short-covering.jsonl");
        store_in_pieces(&local, &address, 10);
        let end = segments_of(&address)[3].start;
        let forged = address.covering_key(0, end);
        remote.create(&forged, &bytes[..end as usize - 1]).unwrap();
        let error = verify_layout(&address).unwrap_err().to_string();
        assert!(
            error.contains(&forged) && error.contains("holds"),
            "{error}"
        );

        // A covering segment of the right range and size with other bytes: compaction and
        // verify compare it with the segments it covers, and name it.
        let address = fresh_address("other-bytes.jsonl");
        store_in_pieces(&local, &address, 10);
        let cache = tempfile::tempdir().unwrap();
        drop(open_session(&address, cached(cache.path())).unwrap());
        let end = segments_of(&address)[3].start as usize;
        let mut other = bytes[..end].to_vec();
        let at = other.iter().position(|&b| b == b'"').unwrap() + 1;
        other[at] = if other[at] == b'x' { b'y' } else { b'x' };
        let forged = address.covering_key(0, end as u64);
        remote.create(&forged, &other).unwrap();
        for error in [
            verify_layout(&address).unwrap_err().to_string(),
            compact(&address, &options(0)).unwrap_err().to_string(),
        ] {
            assert!(
                error.contains(&forged) && error.contains("differ"),
                "{error}"
            );
        }
        // Nothing covered was deleted.
        assert!(
            !SegmentStorage::open(remote.clone(), &address)
                .unwrap()
                .covered()
                .is_empty()
        );
        // The cached index is not trusted for it: its identity changed, a full check found
        // other bytes, and the answers are the store's log's, never the index's.
        let reopened = open_session(&address, cached(cache.path())).unwrap();
        assert!(
            matches!(reopened.index_state(), IndexState::Rebuilt { .. }),
            "{:?}",
            reopened.index_state()
        );
        let replayed = open_session(&address, no_index()).unwrap();
        assert_same(
            &common::answers(&reopened).unwrap(),
            &common::answers(&replayed).unwrap(),
            "forged covering, cached against replayed",
        );
    }

    #[test]
    fn an_indexed_cache_reopened_after_compaction_answers_the_same() {
        if !store_ready("an_indexed_cache_reopened_after_compaction_answers_the_same") {
            return;
        }
        let local = data("pi16-sample-300.jsonl");
        let address = fresh_address("cached.jsonl");
        store_in_pieces(&local, &address, 6);
        let expected = common::replay(&local);
        let cache = tempfile::tempdir().unwrap();
        let cold = open_session(&address, cached(cache.path())).unwrap();
        assert_same(&common::answers(&cold).unwrap(), &expected, "cold");
        drop(cold);
        assert_eq!(
            open_session(&address, cached(cache.path()))
                .unwrap()
                .index_state(),
            &IndexState::Fresh
        );
        // Covering written: another identity, a full check that passes, the same answers.
        compact(&address, &options(3600)).unwrap();
        let after = open_session(&address, cached(cache.path())).unwrap();
        assert_eq!(after.index_state(), &IndexState::Fresh);
        assert_same(&common::answers(&after).unwrap(), &expected, "compacted");
        drop(after);
        // Covered segments deleted: the segments read are the same, so is the identity.
        compact(&address, &options(0)).unwrap();
        let again = open_session(&address, cached(cache.path())).unwrap();
        assert_eq!(again.index_state(), &IndexState::Fresh);
        assert_same(
            &common::answers(&again).unwrap(),
            &expected,
            "covered deleted",
        );
    }
}

/// Local copies of logs (`object_store::update_copy`), what `search` of an `s3://` address
/// reads: caught up from the segments appended since, checked byte for byte on any doubt.
mod local_copies {
    use super::*;
    use std::time::Duration;
    use treelog::object_store::{
        CompactOptions, CopyChange, CopyUpdate, compact, copy_is_current, copy_record_path,
        update_copy,
    };

    fn pulled(address: &S3Address, dir: &Path) -> Vec<u8> {
        let out = dir.join(format!("pulled-{}.jsonl", unique()));
        pull(address, &out, false).unwrap();
        std::fs::read(&out).unwrap()
    }

    fn unique() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    fn append(address: &S3Address, cache: &Path, text: &str) {
        let mut session = open_session(address, cached(cache)).unwrap();
        session.append_message(&message(text)).unwrap();
    }

    #[test]
    fn a_copy_reads_only_the_segments_appended_since() {
        if !store_ready("a_copy_reads_only_the_segments_appended_since") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let writer_cache = dir.path().join("writer");
        let address = fresh_address("copied.jsonl");
        let local = data("pi16-demo.jsonl");
        let len = push(&local, &address).unwrap().len_bytes;
        let remote = remote();
        let copy = dir.path().join("copies/sub/copied.jsonl");
        assert!(!copy_is_current(&remote, &address, &copy).unwrap());
        let created = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!(
            created,
            CopyUpdate {
                change: CopyChange::Created,
                len_bytes: len,
                read_bytes: len
            }
        );
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            std::fs::read(&local).unwrap()
        );
        assert!(copy_is_current(&remote, &address, &copy).unwrap());
        let again = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!((again.change, again.read_bytes), (CopyChange::Unchanged, 0));

        // Two appends by another writer: only their bytes are read, and appended in place.
        append(&address, &writer_cache, "first");
        append(&address, &writer_cache, "second");
        assert!(!copy_is_current(&remote, &address, &copy).unwrap());
        let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&copy).unwrap());
        let grown = update_copy(&remote, &address, &copy).unwrap();
        let whole = pulled(&address, dir.path());
        assert_eq!(grown.change, CopyChange::Grown);
        assert_eq!(grown.len_bytes, whole.len() as u64);
        assert_eq!(grown.read_bytes, whole.len() as u64 - len);
        assert_eq!(std::fs::read(&copy).unwrap(), whole);
        assert_eq!(
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&copy).unwrap()),
            inode
        );
        assert!(copy_is_current(&remote, &address, &copy).unwrap());
    }

    #[test]
    fn a_copy_is_checked_after_a_compaction_and_replaced_when_not_a_prefix() {
        if !store_ready("a_copy_is_checked_after_a_compaction_and_replaced_when_not_a_prefix") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let writer_cache = dir.path().join("writer");
        let address = fresh_address("compacted-copy.jsonl");
        push(&data("pi16-demo.jsonl"), &address).unwrap();
        for i in 0..3 {
            append(&address, &writer_cache, &format!("m{i}"));
        }
        let remote = remote();
        let copy = dir.path().join("copy.jsonl");
        update_copy(&remote, &address, &copy).unwrap();
        let before = std::fs::read(&copy).unwrap();

        // A covering segment in place of those the copy was read from: the copy is compared
        // with the log (read), found a prefix, and kept.
        // A grace under the minimum is for a log at rest: nothing else writes it meanwhile.
        let options = |grace| CompactOptions {
            grace: Duration::from_secs(grace),
            at_rest: grace < treelog::object_store::GRACE_MIN.as_secs(),
        };
        let compacted = compact(&address, &options(3600)).unwrap();
        assert!(compacted.segments_after < compacted.segments_before);
        assert!(!copy_is_current(&remote, &address, &copy).unwrap());
        let checked = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!(checked.change, CopyChange::Unchanged);
        assert_eq!(checked.read_bytes, before.len() as u64);
        assert_eq!(std::fs::read(&copy).unwrap(), before);
        let again = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!((again.change, again.read_bytes), (CopyChange::Unchanged, 0));
        // The covered segments deleted: the segments read are the same, nothing is read.
        assert!(compact(&address, &options(0)).unwrap().deleted > 0);
        assert!(copy_is_current(&remote, &address, &copy).unwrap());
        let after = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!((after.change, after.read_bytes), (CopyChange::Unchanged, 0));
        // An append after the compaction: read alone.
        append(&address, &writer_cache, "after");
        let grown = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!(grown.change, CopyChange::Grown);
        let whole = pulled(&address, dir.path());
        assert_eq!(grown.read_bytes, (whole.len() - before.len()) as u64);
        assert_eq!(std::fs::read(&copy).unwrap(), whole);

        // A copy changed on disk (same length, another mtime) is compared and replaced.
        let mut damaged = whole.clone();
        damaged[10] ^= 0x20;
        std::fs::write(&copy, &damaged).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&copy).unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1))
            .unwrap();
        let repaired = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!(repaired.change, CopyChange::Replaced);
        assert_eq!(std::fs::read(&copy).unwrap(), whole);
        // Without its record, a copy that is a prefix is checked and kept.
        std::fs::remove_file(copy_record_path(&copy)).unwrap();
        let kept = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!(
            (kept.change, kept.read_bytes),
            (CopyChange::Unchanged, whole.len() as u64)
        );

        // The log deleted and another written under its address: the copy is replaced.
        for segment in SegmentStorage::open(remote.clone(), &address)
            .unwrap()
            .segments()
        {
            remote.delete(&segment.key).unwrap();
        }
        push(&data("pi16-gen-a.jsonl"), &address).unwrap();
        let replaced = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!(replaced.change, CopyChange::Replaced);
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            std::fs::read(data("pi16-gen-a.jsonl")).unwrap()
        );

        // The log deleted: no copy, no record.
        for segment in SegmentStorage::open(remote.clone(), &address)
            .unwrap()
            .segments()
        {
            remote.delete(&segment.key).unwrap();
        }
        assert!(!copy_is_current(&remote, &address, &copy).unwrap());
        let gone = update_copy(&remote, &address, &copy).unwrap();
        assert_eq!(gone.change, CopyChange::Absent);
        assert!(!copy.exists() && !copy_record_path(&copy).exists());
        assert!(copy_is_current(&remote, &address, &copy).unwrap());
    }

    /// `search::search` of an `s3://` address: the hits of the same log in a file, named by
    /// the address.
    #[cfg(feature = "search")]
    #[test]
    fn search_of_an_address_is_the_search_of_its_file() {
        use treelog::search::{Quiet, SearchOptions, parse, search};
        if !store_ready("search_of_an_address_is_the_search_of_its_file") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let address = fresh_address("searched.jsonl");
        push(&data("pi16-sample-300.jsonl"), &address).unwrap();
        let local = dir.path().join("local");
        std::fs::create_dir_all(&local).unwrap();
        let file = local.join("searched.jsonl");
        std::fs::copy(data("pi16-sample-300.jsonl"), &file).unwrap();
        let options = |index: &str| SearchOptions {
            filters: Default::default(),
            limit: 30,
            sort: Default::default(),
            index_dir: Some(dir.path().join(index)),
            index_write: true,
            branches: Default::default(),
            include_edited: false,
        };
        let query = parse("error").unwrap();
        let expected = search(&file, &query, &options("files"), &Quiet).unwrap();
        assert!(!expected.is_empty());
        let url = address.url();
        for round in ["cold", "warm"] {
            let hits = search(Path::new(&url), &query, &options("store"), &Quiet).unwrap();
            assert_eq!(hits.len(), expected.len(), "{round}");
            for (hit, want) in hits.iter().zip(&expected) {
                assert_eq!(hit.session, PathBuf::from(&url), "{round}");
                let mut renamed = hit.clone();
                renamed.session = want.session.clone();
                assert_eq!(&renamed, want, "{round}");
            }
        }
        let missing = fresh_address("nothing-here.jsonl");
        let error = search(Path::new(&missing.url()), &query, &options("store"), &Quiet)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!("{}: no such log", missing.url())),
            "{error}"
        );
    }
}
