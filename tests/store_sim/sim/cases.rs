//! The races found by reading the protocol interleaving by interleaving, each as a scripted
//! schedule over the simulated store (one thread; hooks run the other actors at the chosen
//! request). Each fails on the code before its fix.

use std::sync::Arc;
use std::time::Duration;

use treelog::object_store::{
    CompactOptions, GRACE_MIN, ObjectStoreError, SegmentStorage, compact_on, push_on,
};
use treelog::storage::{LogStorage, is_append_raced};

use super::world::{Fault, World};
use super::{log, remote, true_log};

const SECOND: i64 = 1_000_000_000;

fn options() -> CompactOptions {
    CompactOptions {
        grace: GRACE_MIN,
        at_rest: false,
    }
}

/// A log of `lines` two-byte segments (`a\n`, `b\n`, ...) written by actor `actor`.
fn segments(world: &Arc<World>, actor: usize, lines: usize) -> SegmentStorage {
    let mut storage = SegmentStorage::open(remote(world, actor), &log()).unwrap();
    for line in 0..lines {
        storage.len_bytes().unwrap();
        storage.append(&[b'a' + line as u8, b'\n']).unwrap();
    }
    storage
}

fn object_count(world: &World, key_part: &str) -> usize {
    world
        .lock()
        .objects
        .keys()
        .filter(|k| k.contains(key_part))
        .count()
}

/// A writer whose listing is older than the grace period: a compactor covered and deleted the
/// segment at the end it listed, so the key is free again; its create would succeed and its
/// append be hidden inside the covering segment. It lists again first, and finds the log
/// moved on (an `AppendRaced`: the engine catches up and tries again). A grace period under
/// the minimum is refused with the reason.
#[test]
fn a_writer_on_an_old_listing_lists_again_before_it_creates() {
    let world = World::new(1000);
    let (w1, w2, compactor) = (
        world.add_actor("w1", 0),
        world.add_actor("w2", 0),
        world.add_actor("compactor", 0),
    );
    let mut writer2 = segments(&world, w2, 1);
    let mut writer1 = SegmentStorage::open(remote(&world, w1), &log()).unwrap();
    assert_eq!(writer1.len_bytes().unwrap(), 2);
    for line in [b"b\n", b"c\n", b"d\n"] {
        writer2.len_bytes().unwrap();
        writer2.append(line).unwrap();
    }
    let compactor = remote(&world, compactor);
    let short = CompactOptions {
        grace: Duration::ZERO,
        at_rest: false,
    };
    let refused = compact_on(&compactor, &log(), &short).unwrap_err();
    assert!(
        matches!(&refused, ObjectStoreError::Refused { reason, .. }
            if reason.contains("a grace period of 0 s is under the 600 s minimum")),
        "{refused}"
    );
    compact_on(&compactor, &log(), &options()).unwrap();
    world.advance(GRACE_MIN.as_secs() as i64 * SECOND + SECOND);
    let pass = compact_on(&compactor, &log(), &options()).unwrap();
    assert_eq!(pass.deleted, 3, "{pass:?}");
    assert_eq!(object_count(&world, "seg-00000000000000000002"), 0);
    let before = true_log(&world).unwrap();
    let error = writer1.append(b"x\n").unwrap_err();
    assert!(is_append_raced(&error), "{error}");
    assert_eq!(
        object_count(&world, "seg-00000000000000000002"),
        0,
        "no key re-used"
    );
    assert_eq!(true_log(&world).unwrap(), before);
    // Caught up, the append lands at the end.
    assert_eq!(writer1.len_bytes().unwrap(), 8);
    assert_eq!(writer1.append(b"x\n").unwrap(), 10);
    assert_eq!(true_log(&world).unwrap(), b"a\nb\nc\nd\nx\n");
}

/// A reader that listed a segment reads it with its ETag: a key deleted and created again
/// with other bytes since is read as gone (the folder listed again), never mixed in.
#[test]
fn a_listed_segment_is_read_only_as_listed() {
    let world = World::new(1000);
    let (w, reader, compactor) = (
        world.add_actor("w", 0),
        world.add_actor("reader", 0),
        world.add_actor("compactor", 0),
    );
    let _writer = segments(&world, w, 4);
    let handle = SegmentStorage::open(remote(&world, reader), &log()).unwrap();
    let mut buf = [0; 2];
    assert_eq!(handle.read_at(0, &mut buf).unwrap(), 2);
    let compactor = remote(&world, compactor);
    compact_on(&compactor, &log(), &options()).unwrap();
    world.advance(GRACE_MIN.as_secs() as i64 * SECOND + SECOND);
    compact_on(&compactor, &log(), &options()).unwrap();
    // A key freed by the deletion, written again with other bytes of the same length.
    compactor
        .overwrite("s.jsonl.d/seg-00000000000000000002", b"X\n")
        .unwrap();
    assert_eq!(handle.read_at(2, &mut buf).unwrap(), 2);
    assert_eq!(
        &buf, b"b\n",
        "the listed object's bytes, from the covering segment"
    );
}

/// A pass that fails after its covering segment's grace period has passed keeps it: another
/// pass may have deleted what it covers meanwhile, and deleting both would leave a gap.
#[test]
fn an_undo_keeps_a_covering_segment_older_than_its_bound() {
    let world = World::new(1000);
    let (w, p1, p2) = (
        world.add_actor("w", 0),
        world.add_actor("p1", 0),
        world.add_actor("p2", 0),
    );
    let _writer = segments(&world, w, 6);
    let expected = true_log(&world).unwrap();
    let pass2 = remote(&world, p2);
    let hook_world = world.clone();
    // P1 writes its covering segment, then its second listing waits past the grace period
    // (P2 deletes the covered segments) and fails.
    world.on(p1, "list s.jsonl.d/", Fault::None, || {});
    world.on(p1, "list s.jsonl.d/", Fault::FailBefore, move || {
        hook_world.advance(GRACE_MIN.as_secs() as i64 * SECOND + SECOND);
        let pass = compact_on(&pass2, &log(), &options()).unwrap();
        assert_eq!(pass.deleted, 5, "{pass:?}");
    });
    let failed = compact_on(&remote(&world, p1), &log(), &options());
    assert!(failed.is_err());
    assert_eq!(
        true_log(&world).unwrap(),
        expected,
        "the log still reads whole"
    );
}

/// A covering segment this pass wrote whose bytes read back differ from the segments it
/// covers is deleted at once: readers would read it instead of them.
#[test]
fn a_covering_segment_that_fails_its_check_is_deleted() {
    let world = World::new(1000);
    let (w, pass) = (world.add_actor("w", 0), world.add_actor("pass", 0));
    let _writer = segments(&world, w, 4);
    let expected = true_log(&world).unwrap();
    let damage = world.clone();
    let covering = "s.jsonl.d/seg-00000000000000000000-00000000000000000006";
    world.on(pass, &format!("get {covering}"), Fault::None, move || {
        let mut state = damage.lock();
        let obj = state.objects.get_mut(covering).unwrap();
        obj.bytes = bytes::Bytes::from_static(b"XXXXXX");
    });
    let error = compact_on(&remote(&world, pass), &log(), &options()).unwrap_err();
    assert!(error.to_string().contains("it was deleted"), "{error}");
    let coverings = world
        .lock()
        .objects
        .keys()
        .filter(|key| key.matches('-').count() == 2)
        .count();
    assert_eq!(coverings, 0, "no covering segment left");
    assert_eq!(true_log(&world).unwrap(), expected);
}

/// An idle handle whose last known segment was covered and deleted: its catch-up lists the
/// keys after it, which skip the covering segment (it sorts before); the gap it sees sends it
/// to list from the start, and it reads on.
#[test]
fn an_idle_handle_lists_again_on_a_gap() {
    let world = World::new(1000);
    let (w, reader, compactor) = (
        world.add_actor("w", 0),
        world.add_actor("reader", 0),
        world.add_actor("compactor", 0),
    );
    let mut writer = segments(&world, w, 2);
    let handle = SegmentStorage::open(remote(&world, reader), &log()).unwrap();
    assert_eq!(handle.len_bytes().unwrap(), 4);
    for line in [b"c\n", b"d\n", b"e\n"] {
        writer.len_bytes().unwrap();
        writer.append(line).unwrap();
    }
    let compactor = remote(&world, compactor);
    compact_on(&compactor, &log(), &options()).unwrap();
    world.advance(GRACE_MIN.as_secs() as i64 * SECOND + SECOND);
    compact_on(&compactor, &log(), &options()).unwrap();
    assert_eq!(handle.len_bytes().unwrap(), 10);
    let mut buf = [0; 2];
    handle.read_at(6, &mut buf).unwrap();
    assert_eq!(&buf, b"d\n");
}

/// A re-list during a read (a segment gone) finds another writer's segment after the end the
/// engine read: an append goes after what the engine read or nowhere, so the engine catches
/// up and applies its conflict rule (`OnConflict::Fail` never forks silently).
#[test]
fn an_append_extends_the_end_the_engine_read_or_nothing() {
    let world = World::new(1000);
    let (w1, w2, compactor) = (
        world.add_actor("w1", 0),
        world.add_actor("w2", 0),
        world.add_actor("compactor", 0),
    );
    let _ = segments(&world, w2, 2);
    let mut writer1 = SegmentStorage::open(remote(&world, w1), &log()).unwrap();
    assert_eq!(writer1.len_bytes().unwrap(), 4);
    let mut writer2 = SegmentStorage::open(remote(&world, w2), &log()).unwrap();
    writer2.len_bytes().unwrap();
    writer2.append(b"c\n").unwrap();
    let compactor = remote(&world, compactor);
    compact_on(&compactor, &log(), &options()).unwrap();
    world.advance(GRACE_MIN.as_secs() as i64 * SECOND + SECOND);
    compact_on(&compactor, &log(), &options()).unwrap();
    // The engine reads its head again: the segment is gone, the folder is listed anew.
    let mut buf = [0; 2];
    writer1.read_at(0, &mut buf).unwrap();
    let error = writer1.append(b"x\n").unwrap_err();
    assert!(is_append_raced(&error), "{error}");
    assert_eq!(true_log(&world).unwrap(), b"a\nb\nc\n");
}

/// A create answered 409 (a concurrent conditional request on the key) after which the key
/// holds nothing: a lost race, tried again, not an error that poisons the handle.
#[test]
fn a_409_with_nothing_there_is_a_lost_race() {
    let world = World::new(1000);
    let w = world.add_actor("w", 0);
    let mut writer = segments(&world, w, 1);
    world.on(
        w,
        "put s.jsonl.d/seg-00000000000000000002",
        Fault::Conflict,
        || {},
    );
    writer.len_bytes().unwrap();
    let error = writer.append(b"b\n").unwrap_err();
    assert!(is_append_raced(&error), "{error}");
    writer.len_bytes().unwrap();
    assert_eq!(writer.append(b"b\n").unwrap(), 4);
}

/// A push that loses a race half way has written the segments before it: they begin the log
/// (format-spec/object-store.md §7), and the error counts them.
#[test]
fn a_push_that_loses_a_race_half_way_says_what_it_wrote() {
    let world = World::new(1000);
    let (pusher, other) = (world.add_actor("push", 0), world.add_actor("other", 0));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let log_bytes = super::super::log_bytes(20 << 20);
    super::super::write_file(&file, &log_bytes);
    let second = format!("put s.jsonl.d/seg-{:020}", 8u64 << 20);
    let rival = remote(&world, other);
    let key = second["put ".len()..].to_string();
    world.on(pusher, &second, Fault::None, move || {
        rival.create(&key, b"other\n").unwrap();
    });
    let error = push_on(remote(&world, pusher), &file, &log()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("1 segment(s) were written before it"),
        "{error}"
    );
    assert_eq!(object_count(&world, "seg-"), 2);
}
