//! Helpers shared by the integration tests: what a session answers, in one comparable value.

#![allow(dead_code)]

pub mod hooked_storage;
#[cfg(feature = "openclaw")]
pub mod openclaw_fixture;
pub mod rng;
#[cfg(feature = "search")]
pub mod search_texts;

use std::path::Path;

use treelog::format::record::Record;
use treelog::{Session, SessionOptions};

pub type TreeRow = (String, Option<String>, u32, Option<String>, Option<String>);

/// Everything a session answers about its log.
#[derive(Debug, PartialEq)]
pub struct Answers {
    pub leaf: Option<String>,
    pub path: Vec<String>,
    pub context: String,
    pub tree: Vec<TreeRow>,
    pub labels: Vec<(String, String, String)>,
    pub name: Option<String>,
    /// (id, tree parent, depth, offset, line)
    pub entries: Vec<(String, Option<String>, u32, u64, String)>,
    pub opaque: Vec<(u64, u8)>,
    /// (id, version, recovered, the header line when it is the log's own)
    pub header: (String, u32, bool, Option<String>),
}

pub fn answers(session: &Session) -> treelog::Result<Answers> {
    Ok(Answers {
        leaf: session.leaf_id()?,
        path: session.path_ids(None)?,
        context: session.build_context(None)?.to_json(),
        tree: session
            .tree()?
            .map(|node| {
                node.map(|node| {
                    (
                        node.id,
                        node.parent_id,
                        node.depth,
                        node.label,
                        node.label_timestamp,
                    )
                })
            })
            .collect::<treelog::Result<_>>()?,
        labels: session.labels()?,
        name: session.session_name()?,
        entries: session
            .entries()?
            .map(|entry| {
                entry.map(|entry| {
                    (
                        entry.id,
                        entry.tree_parent_id,
                        entry.depth,
                        entry.offset_bytes,
                        entry.json,
                    )
                })
            })
            .collect::<treelog::Result<_>>()?,
        opaque: session
            .opaque_records()?
            .into_iter()
            .map(|record| (record.offset_bytes, record.code))
            .collect(),
        header: {
            // A made-up header (empty or header-less log) carries the time of the open.
            let header = session.header();
            // A log on an object store (tests/object_store.rs) has no local file to look at.
            let remote = session.log_path().to_string_lossy().starts_with("s3://");
            let log_has_bytes =
                remote || std::fs::metadata(session.log_path()).is_ok_and(|meta| meta.len() > 0);
            let real = !header.recovered && log_has_bytes;
            // An empty log's header is a new session's, with a new UUIDv7 on every open (as
            // pi gives an empty file): its form is compared, not its value.
            let id = if log_has_bytes {
                header.id.clone()
            } else {
                assert_eq!(header.id.len(), 36, "{}", header.id);
                assert_eq!(&header.id[14..15], "7", "{}: a UUIDv7", header.id);
                "<a new UUIDv7>".into()
            };
            (
                id,
                header.version,
                header.recovered,
                real.then(|| header.json.clone()),
            )
        },
    })
}

pub fn no_index() -> SessionOptions {
    SessionOptions {
        use_index: false,
        ..SessionOptions::default()
    }
}

/// The answers of a replay of the log without index (what pi does on every open).
pub fn replay(path: &Path) -> Answers {
    answers(&Session::open(path, no_index()).unwrap()).unwrap()
}

pub fn open(path: &Path) -> Session {
    Session::open(path, SessionOptions::default()).unwrap()
}

/// A private directory, in memory where the machine has one (redb commits fsync, and these
/// tests are about answers, not durability).
pub fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

/// A copy of the bundled pi transcript (`tests/data/pi-sample-200.jsonl`) in a new directory,
/// with its index built by an open.
pub fn indexed_sample() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = scratch_dir();
    let path = dir.path().join("s.jsonl");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/pi-sample-200.jsonl"
        ),
        &path,
    )
    .expect("copy sample");
    drop(Session::open(&path, SessionOptions::default()).expect("build the index"));
    (dir, path)
}

/// Tables of the sidecar, for tests that damage it on purpose (format-spec/index.md).
/// `children` values are the key's seal (format-spec/index.md, "Checksums").
pub const CHILDREN: redb::TableDefinition<(u64, u64), u32> = redb::TableDefinition::new("children");
pub const RECORDS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("records");

/// Writes into the sidecar of `path` behind treelog's back, as a damaged disk could.
pub fn tamper(path: &Path, edit: impl FnOnce(&redb::WriteTransaction)) {
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .create(treelog::sidecar_path(path))
        .expect("open sidecar");
    let txn = db.begin_write().expect("write transaction");
    edit(&txn);
    txn.commit().expect("commit");
}

/// Replaces the stored page that holds record `seq` by `edit` of its bytes (format-spec/index.md:
/// pages keyed by their first seq).
pub fn tamper_page(txn: &redb::WriteTransaction, seq: u64, edit: impl FnOnce(u64, &mut Vec<u8>)) {
    use redb::ReadableTable;
    let mut records = txn.open_table(RECORDS).expect("records table");
    let (first, mut bytes) = {
        let (key, value) = records
            .range(..=seq)
            .expect("range")
            .next_back()
            .expect("a page holds the record")
            .expect("readable page");
        (key.value(), value.value().to_vec())
    };
    edit(first, &mut bytes);
    records.insert(first, bytes.as_slice()).expect("patch");
}

/// The tags field (kind, flags, opaque reason) of a record page (format-spec/index.md §2).
pub const FIELD_TAGS: usize = 6;

/// Overwrites the first stored byte of `field` in record `seq` with `byte`, leaving the rest of
/// its page as it was: damage that treelog's codec could not write. The field is located by
/// reading the page's descriptors as format-spec/index.md §2 lays them out (count, id mode,
/// 14 descriptors of width | base length << 4, the bases, then the records); the field must
/// be stored in at least one byte from a base of 0, so that `byte` is its code.
pub fn patch_stored_field(txn: &redb::WriteTransaction, seq: u64, field: usize, byte: u8) {
    tamper_page(txn, seq, |first, page| {
        let descriptors = &page[2..16];
        let (width, base_len) = (descriptors[field] & 0x0f, descriptors[field] >> 4);
        assert!(
            width >= 1 && base_len == 0,
            "field {field}: {descriptors:?}"
        );
        let bases: usize = descriptors.iter().map(|d| usize::from(d >> 4)).sum();
        let stride: usize = descriptors.iter().map(|d| usize::from(d & 0x0f)).sum();
        let before: usize = descriptors[..field]
            .iter()
            .map(|d| usize::from(d & 0x0f))
            .sum();
        let at = 16 + bases + (seq - first) as usize * stride + before;
        page[at] = byte;
    });
}

/// Changes record `seq` by `edit`, re-encoding its page with treelog's own codec: any value a
/// `Record` can hold, damaged ones included (a forward link, a wrong length), is stored as is.
pub fn patch_record(txn: &redb::WriteTransaction, seq: u64, edit: impl FnOnce(&mut Record)) {
    use treelog::format::page::{PageView, encode_page};
    tamper_page(txn, seq, |first, bytes| {
        let mut records = PageView::new(first, bytes)
            .and_then(|page| page.decode_all())
            .expect("a page treelog wrote decodes");
        edit(&mut records[(seq - first) as usize]);
        *bytes = encode_page(first, &records);
    });
}
