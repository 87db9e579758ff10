use super::*;
// The items of the job files these tests reach into.
use super::ids::RESERVE_TRIES_MAX;
use super::rebuild::compaction_worth_it;
use crate::format::record::SEQ_NONE;
use crate::index::id_table::{self, IDS_NAME, IDS_RECENT_NAME};
use redb::ReadOnlyTable;
use std::cell::Cell;

thread_local! {
    static REBUILD_FLUSH_ENTRIES: Cell<Option<usize>> = const { Cell::new(None) };
    static RESERVED_ID_STARTS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    static RESERVED_IDS_LEN_FORCED: Cell<Option<u64>> = const { Cell::new(None) };
    static FAIL_TABLE_READS: Cell<bool> = const { Cell::new(false) };
}

/// Whether reading the committed tables fails, as set by the test on this thread.
pub(super) fn fail_table_reads() -> bool {
    FAIL_TABLE_READS.with(Cell::get)
}

/// Compaction runs for a fifth of slack or more in a file that is more than a twentieth of
/// its log: a small log's index (mostly redb's fixed tables) is trimmed, the 2-4% indexes
/// of the 100k and 1M bench logs are not, nor a file with little slack.
#[test]
fn compaction_worth_it_by_size_and_slack() {
    const MB: u64 = 1_000_000;
    let cases = [
        // (file bytes, used bytes, log bytes, compact?)
        // 1M generated entries: 13% slack, the file 2.7% of the log.
        (35_655_680, 30_851_072, 1_299_569_947, false),
        // 100k: 28% slack, but the file is 3.4% of the log.
        (4_460_544, 3_227_648, 130_024_346, false),
        // 1,000 entries: redb's fixed tables, 40% slack, 12% of the log.
        (143_360, 86_016, 1_227_000, true),
        // A file a sixth of its log, more than a fifth of it slack; just under a fifth
        // (pi-shaped entries before schema 7) is not worth it.
        (18 * MB, 14 * MB, 104 * MB, true),
        (17_829_888, 14_303_232, 104 * MB, false),
        // Large slack in a file that is a large part of its log.
        (142_600_000, 101_300_000, 1_000 * MB, true),
        // Little slack, whatever the file's share of the log.
        (20 * MB, 18_900_000, 100 * MB, false),
        (1_100 * MB, 979 * MB, 10_000 * MB, false),
        (0, 0, 0, false),
    ];
    for (file_bytes, used_bytes, log_bytes, expected) in cases {
        assert_eq!(
            compaction_worth_it(file_bytes, used_bytes, log_bytes),
            expected,
            "{file_bytes} bytes, {used_bytes} used, log {log_bytes}"
        );
    }
}

/// A flush whose commit succeeds but whose tables cannot be read back fails, and the
/// store answers as before it (every record, id and child, from its old tables and its
/// overlay) instead of as an empty index; ids it holds are not handed out again.
#[test]
fn flush_that_cannot_read_its_tables_keeps_answering() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("log.jsonl");
    let log = repeating_ids_log();
    let half = log[..log.len() / 2]
        .iter()
        .rposition(|byte| *byte == b'\n')
        .expect("a line ends there")
        + 1;
    std::fs::write(&path, &log[..half]).expect("write half");
    let sidecar = crate::index::sidecar_path(&path);
    let storage = crate::storage::FileStorage::open(&path).expect("open log");
    let (mut store, _) =
        Store::open(&storage, &sidecar, Verify::Quick, true, &None).expect("build");
    std::fs::write(&path, &log).expect("write the rest");
    store.catch_up(&storage).expect("catch up");
    assert!(!store.overlay.records.is_empty());
    let before = dump(&store);

    FAIL_TABLE_READS.with(|cell| cell.set(true));
    let flushed = store.flush(&storage);
    FAIL_TABLE_READS.with(|cell| cell.set(false));
    assert!(matches!(flushed, Err(Error::Index { .. })), "{flushed:?}");
    assert_eq!(dump(&store), before);
    let taken = store
        .existing_record(store.next_seq - 1)
        .expect("record")
        .id;
    assert!(store.seq_of(&taken).expect("lookup").is_some());
}

/// The next start of a run of reserved ids set by the test on this thread, if any.
pub(super) fn forced_reserved_id_start() -> Option<u64> {
    RESERVED_ID_STARTS.with(|starts| starts.borrow_mut().pop())
}

/// Makes the next runs of reserved ids start at `starts`, in order, on this thread.
fn force_reserved_id_starts(starts: &[u64]) {
    RESERVED_ID_STARTS.with(|cell| *cell.borrow_mut() = starts.iter().rev().copied().collect());
}

const SESSION_HEADER_LINE: &str =
    "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/w\"}\n";

/// The line of a user message with the 8-hex id `id`, child of `parent`.
fn message_line(id: u64, parent: Option<u64>) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p:08x}\""));
    format!(
        r#"{{"type":"message","id":"{id:08x}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"x"}}}}"#
    ) + "\n"
}

/// The length of the runs of reserved ids set by the test on this thread, if any.
pub(super) fn forced_reserved_ids_len() -> Option<u64> {
    RESERVED_IDS_LEN_FORCED.with(Cell::get)
}

/// The ids `reserved_entry_id` hands out never include one the tables or the overlay hold
/// or one the caller refuses: a run skips the ids stored in it (in `ids` or `ids-recent`),
/// those in the overlay (a line another writer appended meanwhile) and refused ones; a
/// flush drops the run; and after [`RESERVE_TRIES_MAX`] runs used up the caller is told to
/// fall back.
#[test]
fn reserved_ids_skip_every_held_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("log.jsonl");
    let entry = message_line;
    let mut log = SESSION_HEADER_LINE.to_string();
    log += &entry(0x200, None);
    std::fs::write(&path, &log).expect("write log");
    let sidecar = crate::index::sidecar_path(&path);
    let storage = crate::storage::FileStorage::open(&path).expect("open log");
    let (mut store, _) =
        Store::open(&storage, &sidecar, Verify::Quick, true, &None).expect("build");
    // 0x200 is in the tables; 0x204 comes into the overlay from a line appended later.
    std::fs::write(&path, log.clone() + &entry(0x204, Some(0x200))).expect("append");
    store.catch_up(&storage).expect("catch up");
    assert!(store.overlay.ids.contains_key(&0x204));

    let refused = |id: &str| id == "00000203";
    let next = |store: &mut Store| store.reserved_entry_id(refused).expect("reserve");
    force_reserved_id_starts(&[0x1fe]);
    let ids: Vec<_> = (0..5).map(|_| next(&mut store)).collect();
    let expected = ["000001fe", "000001ff", "00000201", "00000202", "00000205"];
    assert_eq!(ids, expected.map(|id| Some(id.to_string())));

    // A flush drops the run: the tables under the new overlay hold 0x204 now (in `ids`
    // itself: a flush's ids in one narrow key range go there directly), and a run over it
    // skips it as it skips 0x200.
    store.flush(&storage).expect("flush");
    let (recent, ids) = tables(&store);
    assert_eq!(
        id_table::lookup(ids, IDS_NAME, 0x204).expect("read"),
        Some(1)
    );
    assert_eq!(
        id_table::lookup(recent, IDS_RECENT_NAME, 0x204).expect("read"),
        None
    );
    assert!(store.overlay.ids.is_empty());
    force_reserved_id_starts(&[0x200]);
    let ids: Vec<_> = (0..4).map(|_| next(&mut store)).collect();
    let expected = ["00000201", "00000202", "00000205", "00000206"];
    assert_eq!(ids, expected.map(|id| Some(id.to_string())));

    // Runs whose every id is held or refused are used up: after the maximum the caller
    // falls back to random ids, and the store does not try again until its next overlay.
    store.flush(&storage).expect("flush");
    RESERVED_IDS_LEN_FORCED.with(|len| len.set(Some(1)));
    force_reserved_id_starts(&[0x200; RESERVE_TRIES_MAX + 1]);
    assert_eq!(next(&mut store), None);
    assert_eq!(
        forced_reserved_id_start(),
        Some(0x200),
        "tried exactly the maximum"
    );
    force_reserved_id_starts(&[0x6000]);
    assert_eq!(next(&mut store), None);
    store.flush(&storage).expect("flush");
    assert_eq!(next(&mut store).as_deref(), Some("00006000"));
    RESERVED_IDS_LEN_FORCED.with(|len| len.set(None));
}

/// A narrow flush must not file into `ids` a key that `ids-recent` holds (older): the
/// lookup reads `ids-recent` first and would find the stale seq. And a run skips a key
/// held only in `ids-recent`. (Found missing in review: either check could be dropped
/// with every other test passing.)
#[test]
fn narrow_flush_never_shadowed_by_ids_recent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("log.jsonl");
    let entry = |id: u64| message_line(id, None);
    let mut log = SESSION_HEADER_LINE.to_string();
    log += &entry(0x200);
    std::fs::write(&path, &log).expect("write log");
    let sidecar = crate::index::sidecar_path(&path);
    let storage = crate::storage::FileStorage::open(&path).expect("open log");
    let (mut store, _) =
        Store::open(&storage, &sidecar, Verify::Quick, true, &None).expect("build");
    // A wide flush: 0x10_0000 (seq 1) goes to ids-recent.
    log += &entry(0x10_0000);
    log += &entry(0x9000_0000);
    std::fs::write(&path, &log).expect("append");
    store.catch_up(&storage).expect("catch up");
    store.flush(&storage).expect("flush");
    assert_eq!(
        id_table::lookup(tables(&store).0, IDS_RECENT_NAME, 0x10_0000).expect("read"),
        Some(1)
    );
    // A run over a key held only in ids-recent skips it.
    force_reserved_id_starts(&[0xf_ffff]);
    let ids: Vec<_> = (0..2)
        .map(|_| store.reserved_entry_id(|_| false).expect("reserve"))
        .collect();
    assert_eq!(ids, ["000fffff", "00100001"].map(|id| Some(id.to_string())));
    // A narrow flush re-filing 0x10_0000 (seq 3) next to a new id.
    log += &entry(0x10_0000);
    log += &entry(0x10_0001);
    std::fs::write(&path, &log).expect("append");
    store.catch_up(&storage).expect("catch up");
    assert_eq!(store.seq_of("00100000").expect("lookup"), Some(3));
    store.flush(&storage).expect("flush");
    assert_eq!(store.seq_of("00100000").expect("lookup"), Some(3));
}

type IdPagesTable = ReadOnlyTable<u64, &'static [u8]>;

/// The `ids-recent` and `ids` tables of an open store.
fn tables(store: &Store) -> (&IdPagesTable, &IdPagesTable) {
    let tables = store.tables.as_ref().expect("a sidecar is open");
    (&tables.ids_recent, &tables.ids)
}

/// A rebuild flush size set by the test on this thread, if any.
pub(super) fn rebuild_flush_entries_max() -> Option<usize> {
    REBUILD_FLUSH_ENTRIES.with(Cell::get)
}

/// Everything the store answers about `log`, after a rebuild with the given flush size.
fn rebuilt(dir: &Path, name: &str, log: &[u8], flush_entries: Option<usize>) -> String {
    let path = dir.join(name);
    std::fs::write(&path, log).expect("write log");
    REBUILD_FLUSH_ENTRIES.with(|cell| cell.set(flush_entries));
    let storage = crate::storage::FileStorage::open(&path).expect("open log");
    let sidecar = crate::index::sidecar_path(&path);
    let (store, state) =
        Store::open(&storage, &sidecar, Verify::Quick, true, &None).expect("rebuild");
    REBUILD_FLUSH_ENTRIES.with(|cell| cell.set(None));
    assert!(matches!(state, IndexState::Rebuilt { .. }), "{state:?}");
    dump(&store)
}

/// Everything a store answers, to compare two ways of building it: the indexed length,
/// state and hashes (the block hashes not yet written, all of them in a store without a
/// database); every record, what its id finds, its children; then a missing id, the
/// roots and the labels.
pub(crate) fn dump(store: &Store) -> String {
    let mut out = format!(
        "len {} next {} state {:?} hash {:?} tail {:?} blocks {:?}\n",
        store.indexed_len_bytes,
        store.next_seq,
        store.state,
        store.first_line_hash,
        store.hasher.tail_hash(),
        store.hasher.finished()
    );
    for seq in 0..store.next_seq {
        let record = store.existing_record(seq).expect("record");
        let found = store.seq_of(&record.id).expect("id lookup");
        let kids = store.children_of(seq).expect("children");
        out.push_str(&format!("{seq} {record:?} {found:?} {kids:?}\n"));
    }
    out.push_str(&format!(
        "{:?} {:?} {:?}\n",
        store.seq_of("no-such-id"),
        store.children_of(SEQ_NONE),
        store.labels()
    ));
    out
}

/// A log whose ids repeat across ~6 MiB, with opaque lines carrying ids, branches and
/// pi's real sample in front: a flush happens at most once per 1 MiB scan chunk, so
/// this makes several flushes, and ids repeat across them.
fn repeating_ids_log() -> Vec<u8> {
    let mut log = include_bytes!("../../../tests/data/pi-sample-200.jsonl").to_vec();
    let padding = "x".repeat(1200);
    for n in 0..5000 {
        let id = format!("dup{}", n % 311);
        let parent = if n % 9 == 0 {
            "null".to_string()
        } else {
            format!("\"dup{}\"", (n + 5) % 311)
        };
        log.extend_from_slice(
            format!(r#"{{"type":"message","id":"{id}","parentId":{parent},"message":{{"role":"user","content":"{padding}"}}}}"#)
                .as_bytes(),
        );
        log.push(b'\n');
        if n % 11 == 0 {
            log.extend_from_slice(
                format!(r#"{{"type":"weird","id":"dup{}"}}"#, n % 400).as_bytes(),
            );
            log.push(b'\n');
            log.extend_from_slice(format!(r#"{{"type":"weird","id":"opaque{n}"}}"#).as_bytes());
            log.push(b'\n');
        }
    }
    log
}

/// Ids that share a hashed key (forced here: all of them into 3 keys) are told apart: a
/// rebuild in many runs, a rebuild in one, and an index caught up from half the log
/// (which merges into `ids` and writes `id-collisions`) all answer exactly as an index
/// whose ids never collide.
#[test]
fn colliding_id_keys_answer_as_distinct_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = repeating_ids_log();
    let expected = rebuilt(dir.path(), "plain.jsonl", &log, None);
    crate::format::id_index::tests::with_hashed_keys_max(3, || {
        assert_eq!(rebuilt(dir.path(), "runs.jsonl", &log, Some(7)), expected);
        assert_eq!(rebuilt(dir.path(), "one.jsonl", &log, None), expected);
        let half = log[..log.len() / 2]
            .iter()
            .rposition(|byte| *byte == b'\n')
            .expect("a line ends in the first half")
            + 1;
        rebuilt(dir.path(), "caught-up.jsonl", &log[..half], None);
        let path = dir.path().join("caught-up.jsonl");
        std::fs::write(&path, &log).expect("append the second half");
        let storage = crate::storage::FileStorage::open(&path).expect("open log");
        let sidecar = crate::index::sidecar_path(&path);
        let (mut store, state) =
            Store::open(&storage, &sidecar, Verify::Quick, false, &None).expect("catch up");
        assert!(matches!(state, IndexState::CaughtUp { .. }), "{state:?}");
        store.flush(&storage).expect("flush");
        assert_eq!(dump(&store), expected);
        drop(store);
        let (store, state) =
            Store::open(&storage, &sidecar, Verify::Quick, false, &None).expect("reopen");
        assert_eq!(state, IndexState::Fresh);
        assert_eq!(dump(&store), expected);
    });
}

/// An index caught up and flushed in many steps answers exactly as a rebuild, whether
/// flushes drain `ids-recent` into `ids` (every other one here) or never do: duplicate
/// ids, ids in both tables, opaque records, labels, branches.
#[test]
fn recent_ids_drained_or_not_answer_as_a_rebuild() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = repeating_ids_log();
    let expected = rebuilt(dir.path(), "plain.jsonl", &log, None);
    let line_ends: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(at, _)| at + 1)
        .collect();
    for (name, pages_min) in [("drained.jsonl", Some(1)), ("kept.jsonl", None)] {
        let path = dir.path().join(name);
        let sidecar = crate::index::sidecar_path(&path);
        crate::index::id_table::tests::set_recent_pages_min(pages_min);
        let step = line_ends.len() / 24;
        for end in line_ends.iter().step_by(step).chain(line_ends.last()) {
            std::fs::write(&path, &log[..*end]).expect("extend the log");
            let storage = crate::storage::FileStorage::open(&path).expect("open log");
            let (mut store, _) =
                Store::open(&storage, &sidecar, Verify::Quick, false, &None).expect("catch up");
            store.flush(&storage).expect("flush");
        }
        crate::index::id_table::tests::set_recent_pages_min(None);
        let storage = crate::storage::FileStorage::open(&path).expect("open log");
        let (store, state) =
            Store::open(&storage, &sidecar, Verify::Quick, false, &None).expect("reopen");
        assert_eq!(state, IndexState::Fresh, "{name}");
        assert_eq!(dump(&store), expected, "{name}");
        let tables = store.tables.as_ref().expect("a sidecar is open");
        let entries = |table, name| id_table::tests::stored_entries(table, name).len();
        match pages_min {
            // Every other flush drains (one page of new ids each, drained past one).
            Some(_) => assert!(entries(&tables.ids, IDS_NAME) > 0, "ids-recent was drained"),
            None => assert!(
                entries(&tables.ids, IDS_NAME) == 0
                    && entries(&tables.ids_recent, IDS_RECENT_NAME) > 0,
                "the ids stayed in ids-recent"
            ),
        }
    }
}

/// A flush that drains `ids-recent` after another handle has indexed part of its overlay
/// (so it writes only after that handle's lines) gives the index a rebuild gives: the
/// other handle's ids, already in `ids-recent`, and this one's all end in `ids`.
#[test]
fn drain_after_another_handle_flushed_part_of_the_overlay() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = repeating_ids_log();
    let line_end = |fraction: usize| {
        log[..log.len() * fraction / 4]
            .iter()
            .rposition(|byte| *byte == b'\n')
            .expect("a line ends there")
            + 1
    };
    let (first, second) = (line_end(1), line_end(2));
    let expected = rebuilt(dir.path(), "plain.jsonl", &log, None);
    let path = dir.path().join("shared.jsonl");
    let sidecar = crate::index::sidecar_path(&path);
    std::fs::write(&path, &log[..first]).expect("write the first quarter");
    let storage = crate::storage::FileStorage::open(&path).expect("open log");
    let (mut ahead, _) = Store::open(&storage, &sidecar, Verify::Quick, false, &None).expect("A");
    // B indexes up to the half and flushes, leaving its ids in `ids-recent`.
    std::fs::write(&path, &log[..second]).expect("extend to the half");
    let (mut behind, _) = Store::open(&storage, &sidecar, Verify::Quick, false, &None).expect("B");
    behind.flush(&storage).expect("B flushes");
    let recent_entries = |store: &Store| {
        let tables = store.tables.as_ref().expect("tables");
        id_table::tests::stored_entries(&tables.ids_recent, IDS_RECENT_NAME).len()
    };
    assert!(recent_entries(&behind) > 0, "B's ids are in ids-recent");
    // A, still on the first quarter's index, catches up with the whole log and flushes
    // with a drain: it writes only the lines after B's.
    std::fs::write(&path, &log).expect("the whole log");
    ahead.catch_up(&storage).expect("A catches up");
    crate::index::id_table::tests::set_recent_pages_min(Some(0));
    let flushed = ahead.flush(&storage);
    crate::index::id_table::tests::set_recent_pages_min(None);
    flushed.expect("A flushes");
    drop((ahead, behind));
    let (store, state) =
        Store::open(&storage, &sidecar, Verify::Quick, false, &None).expect("reopen");
    assert_eq!(state, IndexState::Fresh);
    assert_eq!(recent_entries(&store), 0, "the flush drained ids-recent");
    assert_eq!(dump(&store), expected);
}

/// A rebuild that writes its ids in many runs (a flush every 7 lines) and merges them
/// answers exactly as one that writes them in one go: duplicate ids (the latest line
/// wins), opaque records with ids (never shadowing an entry), labels, branches.
#[test]
fn id_runs_merge_to_the_same_index() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = repeating_ids_log();
    let many_runs = rebuilt(dir.path(), "runs.jsonl", &log, Some(7));
    let one_go = rebuilt(dir.path(), "one.jsonl", &log, None);
    assert_eq!(many_runs, one_go);
}
