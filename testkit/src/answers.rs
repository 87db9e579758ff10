//! What a session answers, in one comparable value, and the opens and scratch directories the
//! tests compare them with.

use std::path::Path;

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
            "/../tests/data/pi-sample-200.jsonl"
        ),
        &path,
    )
    .expect("copy sample");
    drop(Session::open(&path, SessionOptions::default()).expect("build the index"));
    (dir, path)
}
