//! The checks behind each fuzz target, shared by the libFuzzer targets (fuzz_targets/*.rs)
//! and by the plain replay of the committed corpus (tests/it/fuzz_corpus.rs), so that `cargo test`
//! runs every committed input through exactly what the fuzzer ran.
//!
//! No dependency beyond treelog, serde, serde_json and tempfile: inputs are decoded by hand
//! from the raw bytes instead of with `arbitrary`, so the root crate needs no extra
//! dev-dependency.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use treelog::format::id_index::{IdPageView, encode_id_page, id_page_crc};
use treelog::format::json_scan;
use treelog::format::line::{Line, OpaqueReason, classify, classify_with_serde};
use treelog::format::page::{PageView, encode_page};
use treelog::storage::{FileIdentity, LogStorage};
use treelog::{Error, Session, SessionOptions, sidecar_path};

// ---- running under libFuzzer ----

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs one check under libFuzzer. libfuzzer-sys aborts on every panic, even one the library
/// catches on purpose (redb panics on some corrupt files; the index store turns those into
/// errors at its boundary). So the hook only records the message, and only a panic that
/// escapes the check aborts, which libFuzzer reports as a crash.
pub fn fuzz_one(data: &[u8], check: fn(&[u8])) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let mut message = format!("{info}");
            if std::env::var_os("TREELOG_FUZZ_TRACE").is_some() {
                message.push_str(&format!("\n{}", std::backtrace::Backtrace::force_capture()));
            }
            LAST_PANIC.with(|last| *last.borrow_mut() = Some(message));
        }))
    });
    if std::panic::catch_unwind(|| check(data)).is_err() {
        let message = LAST_PANIC
            .with(|last| last.borrow_mut().take())
            .unwrap_or_default();
        eprintln!("check panicked: {}", message.replace('\n', " | "));
        std::process::abort();
    }
}

// ---- line_parser ----

/// `classify` on arbitrary bytes (as lossy UTF-8) with each flag combination: never panics,
/// answers exactly as `classify_with_serde` (the serde_json reading that its one-pass scanner
/// replaced), and agrees with a plain `serde_json::Value` reading wherever that reading
/// succeeds. The scanner's verdict on the text is serde_json's own.
pub fn line_parser(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    assert_eq!(
        json_scan::is_valid(&text),
        serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(),
        "validity: {text:?}"
    );
    let value: Option<serde_json::Value> = serde_json::from_str(&text).ok();
    for legacy_v1 in [false, true] {
        for allow_header in [false, true] {
            let line = classify(&text, legacy_v1, allow_header);
            assert_eq!(
                line,
                classify_with_serde(&text, legacy_v1, allow_header),
                "classify({text:?}, {legacy_v1}, {allow_header})"
            );
            let blank = text
                .bytes()
                .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
            assert_eq!(matches!(line, Line::Blank), blank, "blank: {text:?}");
            if blank {
                continue;
            }
            // Text that is not JSON is never an entry or a header, whichever reading found
            // it (a key read as bytes once let a control byte through).
            if !json_scan::is_valid(&text) {
                assert!(
                    matches!(&line, Line::Opaque(opaque) if matches!(opaque.reason, OpaqueReason::InvalidJson(_))),
                    "invalid JSON read as {line:?}: {text:?}"
                );
            }
            let Some(value) = &value else {
                // serde_json refuses it (not JSON, nested past its recursion limit, or a lone
                // surrogate escape, which JSON.parse accepts): only "no panic" is checked.
                continue;
            };
            check_against_value(&text, value, &line, legacy_v1, allow_header);
        }
    }
}

/// What `JSON.parse` makes of the line decides what it is (as in pi and OpenClaw).
fn check_against_value(
    text: &str,
    value: &serde_json::Value,
    line: &Line<'_>,
    legacy_v1: bool,
    allow_header: bool,
) {
    let serde_json::Value::Object(object) = value else {
        assert!(
            matches!(line, Line::Opaque(opaque) if opaque.reason == OpaqueReason::NotAnObject),
            "{text:?} is JSON but not an object: {line:?}"
        );
        return;
    };
    let kind = object.get("type").and_then(|v| v.as_str());
    let id = object.get("id").and_then(|v| v.as_str());
    match (kind, line) {
        (None, Line::Opaque(opaque)) => {
            assert_eq!(opaque.reason, OpaqueReason::MissingType, "{text:?}")
        }
        (Some("session"), Line::Header(header)) => {
            assert!(allow_header, "{text:?}: a header where none is allowed");
            assert_eq!(Some(header.id.as_ref()), id, "{text:?}");
        }
        (Some("session"), Line::Opaque(opaque)) => {
            assert_eq!(opaque.reason, OpaqueReason::ExtraHeader, "{text:?}");
            assert!(
                !allow_header || id.is_none(),
                "{text:?}: a header was refused"
            );
        }
        (Some("leaf"), Line::Opaque(opaque)) => {
            assert_eq!(opaque.reason, OpaqueReason::LeafControl, "{text:?}")
        }
        (Some(kind), Line::Entry(entry)) => {
            assert_eq!(
                entry.kind,
                treelog::EntryKind::from_type_str(kind),
                "{text:?}"
            );
            assert_eq!(
                entry.id.as_deref(),
                id.filter(|id| !id.is_empty()),
                "{text:?}"
            );
            assert!(
                legacy_v1 || entry.id.is_some(),
                "{text:?}: an entry without id"
            );
        }
        (Some(kind), Line::Opaque(opaque)) => match &opaque.reason {
            OpaqueReason::MissingId => {
                assert!(!legacy_v1 && id.is_none_or(str::is_empty), "{text:?}")
            }
            other => panic!("{text:?}: a JSON object of type {kind:?} is opaque for {other}"),
        },
        (_, other) => panic!("{text:?}: JSON object of type {kind:?} classified as {other:?}"),
    }
}

// ---- index_pages ----

/// Input: a first seq (8 bytes, little-endian), then bytes read as a stored record page and as
/// a stored id page of `ids` under that key (format-spec/index.md §2), as they are and sealed
/// with the crc they would need, so that the fuzzer reaches the checks behind the crc.
/// Whatever the bytes, reading either gives records, entries or errors, never a panic;
/// records that decode re-encode to a page that decodes to them again, and so do id entries.
pub fn index_pages(data: &[u8]) {
    let Some((first, bytes)) = data.split_first_chunk::<8>() else {
        return;
    };
    let first_seq = u64::from_le_bytes(*first);
    if let Ok(page) = PageView::new(first_seq, bytes) {
        for slot in 0..page.len() as u64 {
            let record = page
                .get(first_seq.wrapping_add(slot))
                .expect("a slot below the count is in the page");
            let _ = (record.parent_seq(), record.depth());
            let _ = record.id().map(|id| id.as_str().len());
        }
        assert!(
            page.get(first_seq.wrapping_add(page.len() as u64))
                .is_none()
        );
        if let Ok(records) = page.decode_all() {
            let again = encode_page(first_seq, &records);
            let decoded = PageView::new(first_seq, &again).and_then(|page| page.decode_all());
            assert_eq!(
                decoded.as_ref(),
                Ok(&records),
                "a re-encoded page decodes differently"
            );
        }
    }
    let page_key = first_seq;
    let _ = IdPageView::new("ids", page_key, bytes);
    let mut sealed = bytes.to_vec();
    sealed.extend_from_slice(&id_page_crc("ids", page_key, bytes).to_le_bytes());
    if let Ok(page) = IdPageView::new("ids", page_key, &sealed) {
        assert!(
            IdPageView::new("ids-recent", page_key, &sealed).is_err(),
            "the crc covers the table's name"
        );
        let entries: Vec<(u64, u64)> = page.entries().collect();
        for (key, _) in &entries {
            assert!(page.covers(*key), "a stored key is in the page's coverage");
        }
        for (key, seq) in &entries {
            assert_eq!(page.get(*key), Some(*seq), "a stored key is found");
            assert!(page.holds_key_in(*key..=*key));
        }
        // Keys between two stored ones, and before the first or after the last, are absent.
        for pair in entries.windows(2) {
            let (low, high) = (pair[0].0, pair[1].0);
            if high - low > 1 {
                assert_eq!(page.get(low + 1), None, "a key between two is absent");
                assert!(!page.holds_key_in(low + 1..=high - 1));
            }
        }
        if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
            if first.0 > 0 {
                assert_eq!(page.get(first.0 - 1), None);
                assert!(!page.holds_key_in(0..=first.0 - 1));
            }
            if last.0 < u64::MAX {
                assert_eq!(page.get(last.0 + 1), None);
                assert!(!page.holds_key_in(last.0 + 1..=u64::MAX));
            }
        }
        let again = encode_id_page("ids", page_key, page.end(), &entries);
        let decoded: Vec<(u64, u64)> = IdPageView::new("ids", page_key, &again)
            .expect("an encoded id page decodes")
            .entries()
            .collect();
        assert_eq!(decoded, entries, "a re-encoded id page decodes differently");
    }
}

// ---- open_log ----

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

// ---- operations ----

/// A log in memory that the test can also write to directly, as another process would.
#[derive(Clone, Default)]
pub struct SharedLog {
    pub bytes: Arc<Mutex<Vec<u8>>>,
}

impl SharedLog {
    pub fn storage(&self) -> Box<dyn LogStorage> {
        Box::new(SharedStorage { log: self.clone() })
    }

    pub fn snapshot(&self) -> Vec<u8> {
        self.bytes.lock().expect("log lock").clone()
    }

    /// Appends `bytes`; returns the log's length just after them.
    fn push(&self, bytes: &[u8]) -> u64 {
        let mut log = self.bytes.lock().expect("log lock");
        log.extend_from_slice(bytes);
        log.len() as u64
    }
}

struct SharedStorage {
    log: SharedLog,
}

impl LogStorage for SharedStorage {
    fn path(&self) -> &Path {
        Path::new("/fuzz/operations.jsonl")
    }

    fn identity(&self) -> io::Result<FileIdentity> {
        Ok(FileIdentity {
            len_bytes: self.log.bytes.lock().expect("log lock").len() as u64,
            ..FileIdentity::default()
        })
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let bytes = self.log.bytes.lock().expect("log lock");
        Ok(treelog::storage::read_bytes_at(&bytes, offset, buf))
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        Ok(self.log.push(bytes))
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn lock(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn unlock(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads the fuzz input as a stream of small numbers and strings; zeros once exhausted.
struct Input<'a> {
    bytes: &'a [u8],
}

impl Input<'_> {
    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((first, rest)) => {
                self.bytes = rest;
                *first
            }
            None => 0,
        }
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    fn take(&mut self, max_len: usize) -> &[u8] {
        let len = self.below(max_len + 1).min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        taken
    }

    fn text(&mut self, max_len: usize) -> String {
        String::from_utf8_lossy(self.take(max_len)).into_owned()
    }
}

/// One entry as the model knows it.
#[derive(Clone, Debug)]
struct ModelEntry {
    id: String,
    /// The tree parent.
    parent: Option<String>,
    line: Vec<u8>,
    /// `session_info`: the trimmed name.
    name: Option<String>,
}

/// What the log should hold and where the handle stands, kept by plain rules.
#[derive(Default, Debug)]
struct Model {
    entries: Vec<ModelEntry>,
    /// This handle's leaf.
    leaf: Option<String>,
    /// Entries other writers appended since the handle last read the log.
    unseen: Vec<ModelEntry>,
    /// The log's leaf as of the handle's last read.
    seen_log_leaf: Option<String>,
    /// After an append failed with a conflict: the entries it read and the log's leaf before
    /// them. Until a refresh, later appends check these again and a refresh follows from there.
    conflict_base: Option<(Vec<ModelEntry>, Option<String>)>,
    labels: std::collections::BTreeMap<String, String>,
    /// The log ends in a torn line (bytes after the last `\n`).
    torn: bool,
    /// The log has its header (written with the handle's first append).
    has_header: bool,
    external_count: u64,
}

impl Model {
    fn log_leaf(&self) -> Option<String> {
        self.entries.last().map(|entry| entry.id.clone())
    }

    fn path(&self, leaf: Option<&str>) -> Vec<String> {
        let mut path = Vec::new();
        let mut current = leaf.map(str::to_string);
        while let Some(id) = current {
            let entry = self
                .entries
                .iter()
                .find(|entry| entry.id == id)
                .expect("the model's parents exist");
            path.push(id);
            current = entry.parent.clone();
        }
        path.reverse();
        path
    }

    /// The handle reads the log (as an append or a refresh does): returns the id of an entry
    /// another writer appended below the handle's leaf, which makes an append a conflict.
    fn catch_up(&mut self) -> Option<String> {
        let (mut since, leaf_before) = self
            .conflict_base
            .take()
            .unwrap_or((Vec::new(), self.seen_log_leaf.clone()));
        since.append(&mut self.unseen);
        self.seen_log_leaf = self.log_leaf();
        let conflict = since
            .iter()
            .find(|entry| entry.parent == self.leaf)
            .map(|entry| entry.id.clone());
        if conflict.is_some() {
            // Until a refresh, the same lines are checked again: a retry fails too.
            self.conflict_base = Some((since, leaf_before));
        } else if !since.is_empty() && self.leaf == leaf_before {
            self.leaf = self.log_leaf();
        }
        conflict
    }

    /// `Session::refresh`: a handle at the log's leaf follows it, whatever was appended.
    fn refresh(&mut self) {
        let leaf_before = match self.conflict_base.take() {
            Some((_, leaf_before)) => leaf_before,
            None => self.seen_log_leaf.clone(),
        };
        if self.leaf == leaf_before {
            self.leaf = self.log_leaf();
        }
        self.unseen.clear();
        self.seen_log_leaf = self.log_leaf();
    }

    fn appended(&mut self, id: String, line: Vec<u8>, name: Option<String>) {
        self.entries.push(ModelEntry {
            id: id.clone(),
            parent: self.leaf.clone(),
            line,
            name,
        });
        self.leaf = Some(id);
        self.seen_log_leaf = self.leaf.clone();
        self.has_header = true;
        self.torn = false;
    }
}

/// The last line of `bytes` (which end in `\n`).
fn last_line(bytes: &[u8]) -> Vec<u8> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let start = body
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    body[start..].to_vec()
}

/// Operations bounded per input, so one input never runs long.
const OPERATIONS_MAX: usize = 64;

/// Arbitrary operations on a session over a shared in-memory log, checked after each one
/// against a small model; at the end the log is reopened without and with an index.
pub fn operations(data: &[u8]) {
    let mut input = Input { bytes: data };
    let log = SharedLog::default();
    let mut session =
        Session::open_storage(log.storage(), SessionOptions::default()).expect("open empty log");
    let mut model = Model::default();
    let mut operation_count = 0;
    while !input.is_empty() && operation_count < OPERATIONS_MAX {
        operation_count += 1;
        let op = input.below(17);
        match op {
            // Appends of every type through the session.
            0..=8 => append(&mut session, &mut model, &log, &mut input, op),
            9 => {
                if let Some(id) = pick_seen(&model, &mut input) {
                    session.branch(&id).expect("branch to an existing entry");
                    model.leaf = Some(id);
                }
            }
            10 => {
                session.reset_leaf();
                model.leaf = None;
            }
            11 => {
                session.refresh().expect("refresh");
                model.refresh();
            }
            12 => {
                // Reopen: the handle starts at the log's leaf.
                drop(session);
                session = Session::open_storage(log.storage(), SessionOptions::default())
                    .expect("reopen");
                model.leaf = model.log_leaf();
                model.unseen.clear();
                model.conflict_base = None;
                model.seen_log_leaf = model.log_leaf();
            }
            13..=15 => external_append(&mut model, &log, &mut input),
            _ => append_batch(&mut session, &mut model, &log, &mut input),
        }
        if std::env::var_os("TREELOG_FUZZ_TRACE").is_some() {
            eprintln!(
                "op {op}: leaf {:?} model leaf {:?} unseen {:?} log {:?}",
                session.leaf_id(),
                model.leaf,
                model.unseen.iter().map(|e| &e.id).collect::<Vec<_>>(),
                String::from_utf8_lossy(&log.snapshot())
            );
        }
        check(&session, &model);
    }
    drop(session);

    // Reopened in memory, then as a file with and without an index: all agree.
    let bytes = log.snapshot();
    if bytes.is_empty() {
        return;
    }
    let reopened = Session::open_storage(log.storage(), SessionOptions::default()).expect("reopen");
    assert_eq!(
        reopened.leaf_id().expect("leaf"),
        model.log_leaf(),
        "leaf after reopen"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("operations.jsonl");
    std::fs::write(&path, &bytes).expect("write log");
    check_open_matches_replay(&path, &bytes);
    let on_disk = Session::open(&path, SessionOptions::default()).expect("open file");
    let in_memory = answers(&reopened, &bytes).replace("/fuzz/operations.jsonl", "");
    let from_file = answers(&on_disk, &bytes).replace(&path.display().to_string(), "");
    assert_eq!(
        in_memory, from_file,
        "a log in memory and in a file answer alike"
    );
}

/// Any entry of the log (what another writer, reading the whole file, may name).
fn pick(model: &Model, input: &mut Input<'_>) -> Option<String> {
    if model.entries.is_empty() {
        return None;
    }
    Some(model.entries[input.below(model.entries.len())].id.clone())
}

/// An entry the handle has read (entries appended by others since are unknown to it).
fn pick_seen(model: &Model, input: &mut Input<'_>) -> Option<String> {
    let seen: Vec<&ModelEntry> = model
        .entries
        .iter()
        .filter(|entry| !model.unseen.iter().any(|unseen| unseen.id == entry.id))
        .collect();
    if seen.is_empty() {
        return None;
    }
    Some(seen[input.below(seen.len())].id.clone())
}

fn message_json(input: &mut Input<'_>) -> String {
    let role = ["user", "assistant", "toolResult", "custom"][input.below(4)];
    let text = input.text(40);
    // Content that is JSON is used as it is; anything else becomes a string.
    let content = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(_) if !text.trim().is_empty() => text.clone(),
        _ => serde_json::to_string(&text).expect("a string serialises"),
    };
    format!(
        r#"{{"role":"{role}","content":{content},"provider":"p","model":"m{}","timestamp":{}}}"#,
        input.below(3),
        input.byte()
    )
}

/// One append through the session (op 0..=8 picks the entry type).
fn append(
    session: &mut Session,
    model: &mut Model,
    log: &SharedLog,
    input: &mut Input<'_>,
    op: usize,
) {
    let mut name = None;
    let result = match op {
        0 => session.append_message(&message_json(input)),
        1 => session.append_thinking_level_change(["off", "low", "high", ""][input.below(4)]),
        2 => session.append_model_change("p", &input.text(8)),
        3 => {
            let first_kept = pick_seen(model, input).unwrap_or_else(|| "missing".into());
            session.append_compaction(&input.text(16), Some(&first_kept), "100", None, None, None)
        }
        4 => {
            // branch_with_summary moves the leaf before it appends.
            let from = pick_seen(model, input);
            model.leaf = from.clone();
            session.branch_with_summary(
                from.as_deref(),
                &input.text(16),
                Some("{}"),
                Some(true),
                None,
            )
        }
        5 => session.append_custom_entry(&input.text(8), Some(r#"{"n":1}"#)),
        6 => session.append_custom_message_entry(
            "ext",
            r#""shown""#,
            input.byte().is_multiple_of(2),
            None,
        ),
        7 => match pick_seen(model, input) {
            Some(target) => {
                let label = input.text(6);
                let result = session.append_label_change(&target, Some(&label));
                if result.is_ok() {
                    if label.is_empty() {
                        model.labels.remove(&target);
                    } else {
                        model.labels.insert(target, label);
                    }
                }
                result
            }
            None => return,
        },
        _ => {
            let raw = input.text(12);
            name = Some(raw.trim().to_string());
            session.append_session_info(&raw)
        }
    };
    // The append reads the log first: the conflict rule applies to what others wrote.
    let conflict = model.catch_up();
    match (result, conflict) {
        (Ok(id), None) => {
            let line = last_line(&log.snapshot());
            model.appended(id, line, name);
        }
        (Err(Error::Conflict { their_id, .. }), Some(expected)) => {
            assert_eq!(their_id, expected, "the conflicting entry");
        }
        (result, conflict) => {
            panic!("append gave {result:?}, the model expected a conflict with {conflict:?}")
        }
    }
}

/// `append_many` of 1 to 4 messages built as `NewEntry` values, their raw JSON sometimes
/// spread over several lines (the encoder must keep each entry on one line).
fn append_batch(session: &mut Session, model: &mut Model, log: &SharedLog, input: &mut Input<'_>) {
    let count = 1 + input.below(4);
    let entries: Vec<treelog::NewEntry> = (0..count)
        .map(|_| {
            let mut json = message_json(input);
            if input.byte().is_multiple_of(3) {
                // Only between tokens: these spots are outside any string.
                json = json
                    .replacen("{\"role\":", "{\"role\"\r\n:", 1)
                    .replacen("\",\"content\":", "\",\n\"content\":", 1)
                    .replacen(",\"provider\":\"p\"", ",\n\"provider\":\"p\"", 1);
            }
            treelog::NewEntry::Message {
                message: serde_json::value::RawValue::from_string(json).expect("valid JSON"),
            }
        })
        .collect();
    let result = session.append_many(entries);
    let conflict = model.catch_up();
    match (result, conflict) {
        (Ok(ids), None) => {
            assert_eq!(ids.len(), count, "one id per entry");
            let bytes = log.snapshot();
            let lines: Vec<&[u8]> = bytes[..bytes.len() - 1].split(|b| *b == b'\n').collect();
            for (id, line) in ids.iter().zip(&lines[lines.len() - count..]) {
                model.appended(id.clone(), line.to_vec(), None);
            }
        }
        (Err(Error::Conflict { their_id, .. }), Some(expected)) => {
            assert_eq!(their_id, expected, "the conflicting entry");
        }
        (result, conflict) => {
            panic!("append_many gave {result:?}, the model expected a conflict with {conflict:?}")
        }
    }
}

/// Another writer appends raw bytes: an entry line in pi's format, a garbage line, or a torn
/// tail (garbage lines and tails start with `#`, so they are never JSON).
fn external_append(model: &mut Model, log: &SharedLog, input: &mut Input<'_>) {
    if !model.has_header {
        return;
    }
    match input.below(4) {
        0 | 1 => {
            model.external_count += 1;
            let id = format!("ext{}", model.external_count);
            let parent = match input.below(3) {
                0 => None,
                _ => pick(model, input),
            };
            let parent_json = parent
                .as_ref()
                .map_or("null".to_string(), |parent| format!("\"{parent}\""));
            let line = format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent_json},"timestamp":"2026-01-01T00:00:0{}.000Z","message":{}}}"#,
                input.below(10),
                message_json(input)
            );
            log.push(line.as_bytes());
            log.push(b"\n");
            if model.torn {
                // Glued onto the torn line: one garbage line, not an entry.
                model.torn = false;
                return;
            }
            let entry = ModelEntry {
                id,
                parent,
                line: line.into_bytes(),
                name: None,
            };
            model.entries.push(entry.clone());
            model.unseen.push(entry);
        }
        2 => {
            let mut garbage = b"#".to_vec();
            garbage.extend(input.take(20).iter().filter(|b| **b != b'\n'));
            garbage.push(b'\n');
            log.push(&garbage);
            model.torn = false;
        }
        _ => {
            let mut torn = b"#".to_vec();
            torn.extend(input.take(20).iter().filter(|b| **b != b'\n'));
            log.push(&torn);
            model.torn = true;
        }
    }
}

/// The session agrees with the model.
fn check(session: &Session, model: &Model) {
    assert_eq!(session.leaf_id().expect("leaf"), model.leaf, "handle leaf");
    assert_eq!(
        session.path_ids(None).expect("path"),
        model.path(model.leaf.as_deref()),
        "path to the handle's leaf"
    );
    let labels: Vec<(String, String)> = session
        .labels()
        .expect("labels")
        .into_iter()
        .map(|(target, label, _)| (target, label))
        .collect();
    let expected: Vec<(String, String)> = model.labels.clone().into_iter().collect();
    assert_eq!(labels, expected, "labels");
    // Entries the handle has read are in the model, byte for byte, in file order.
    let seen: Vec<(String, Vec<u8>)> = session
        .entries()
        .expect("entries")
        .map(|entry| {
            let entry = entry.expect("entry");
            (entry.id, entry.json.into_bytes())
        })
        .collect();
    let known: Vec<(String, Vec<u8>)> = model
        .entries
        .iter()
        .filter(|entry| !model.unseen.iter().any(|unseen| unseen.id == entry.id))
        .map(|entry| (entry.id.clone(), entry.line.clone()))
        .collect();
    assert_eq!(seen, known, "entries");
    let name = model
        .entries
        .iter()
        .filter(|entry| !model.unseen.iter().any(|unseen| unseen.id == entry.id))
        .rev()
        .find_map(|entry| entry.name.clone());
    assert_eq!(
        session.session_name().expect("name"),
        name.filter(|name| !name.is_empty()),
        "session name"
    );
}
