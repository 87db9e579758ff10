//! The search index against a brute-force scan of the same logs: every hit and only the hits the
//! query's slow reading finds, after builds, appends by treelog and by a plain file append,
//! rewrites, deletions, and every kind of index that must be rebuilt.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use treelog::search::{self, Branches, Filters, ParsedQuery, Progress, SearchOptions, SortOrder};
use treelog_testkit::rng::Rng;
use treelog_testkit::search_index::index_holds;
use treelog_testkit::search_texts::{EntryText, entry_texts, followed_entry_texts};

/// Every hit a test can see: (log path, line, id).
type HitSet = BTreeSet<(PathBuf, u64, String)>;

/// Remembers the rebuild notices.
#[derive(Default)]
struct Notices(Mutex<Vec<String>>);

impl Progress for Notices {
    fn rebuilding(&self, _index_dir: &Path, reason: &search::RebuildReason) {
        self.0.lock().unwrap().push(reason.to_string());
    }
}

impl Notices {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// A directory holding copies of the bundled transcripts (one in a subdirectory) and a few
/// generated ones.
fn corpus() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("nested")).unwrap();
    let mut bundled: Vec<_> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    bundled.sort();
    for (n, path) in bundled.iter().enumerate() {
        let into = if n % 2 == 0 {
            dir.path().to_path_buf()
        } else {
            dir.path().join("nested")
        };
        std::fs::copy(path, into.join(path.file_name().unwrap())).unwrap();
    }
    let mut rng = Rng(21);
    for n in 0..4 {
        std::fs::write(
            dir.path().join(format!("gen-{n}.jsonl")),
            generated(&mut rng, 60),
        )
        .unwrap();
    }
    // A version-1 log: entries without ids are read, as pi reads them.
    std::fs::write(
        dir.path().join("nested/v1.jsonl"),
        concat!(
            r#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#, "\n",
            r#"{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"alpha build lock"}}"#, "\n",
        ),
    )
    .unwrap();
    dir
}

const WORDS: &[&str] = &[
    "alpha", "alphabet", "beta", "build", "builder", "cache", "caching", "delta", "Écrire",
    "écrit", "straße", "tokio", "lock", "LOCKED", "p50", "naïve", "数据", "index", "indexer",
];

/// A pi-shaped transcript of `entries` entries drawing its text from [`WORDS`].
fn generated(rng: &mut Rng, entries: usize) -> String {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    text.push('\n');
    let mut parent = "null".to_owned();
    for n in 0..entries {
        let sentence: Vec<&str> = (0..1 + rng.below(8)).map(|_| *rng.pick(WORDS)).collect();
        let words = sentence.join(if rng.below(3) == 0 { ", " } else { " " });
        let id = format!("e{n:07}");
        let time = format!("2025-01-{:02}T00:00:{:02}.000Z", 1 + n / 60, n % 60);
        let line = match rng.below(7) {
            0 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"user","content":"{words}"}}}}"#
            ),
            1 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"{words}"}},{{"type":"toolCall","id":"c{n}","name":"bash","arguments":{{"command":"{words}"}}}}]}}}}"#
            ),
            2 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{{"type":"text","text":"{words}"}}]}}}}"#
            ),
            3 => format!(
                r#"{{"type":"compaction","id":"{id}","parentId":{parent},"timestamp":"{time}","summary":"{words}","firstKeptEntryId":"e0000000","tokensBefore":5}}"#
            ),
            4 => format!(
                r#"{{"type":"label","id":"{id}","parentId":{parent},"timestamp":"{time}","targetId":"e0000000","label":"{words}"}}"#
            ),
            5 => format!(
                r#"{{"type":"model_change","id":"{id}","parentId":{parent},"timestamp":"{time}","provider":"alpha","modelId":"beta"}}"#
            ),
            _ => "not json at all alpha".to_owned(),
        };
        text.push_str(&line);
        text.push('\n');
        parent = format!("\"{id}\"");
    }
    text
}

/// The hits of `query` among `entries`, found by reading each entry's text.
fn brute_force_in(entries: &[EntryText], query: &ParsedQuery) -> HitSet {
    entries
        .iter()
        .filter(|entry| search::matches_text(query, &entry.text))
        .map(|entry| (entry.path.clone(), entry.line, entry.id.clone()))
        .collect()
}

/// The hits of `query` in the logs under `dir`, found by reading every line.
fn brute_force(dir: &Path, query: &ParsedQuery) -> HitSet {
    brute_force_in(&followed_entry_texts(dir), query)
}

fn options(limit: usize) -> SearchOptions {
    SearchOptions {
        filters: Filters::default(),
        limit,
        sort: SortOrder::Score,
        index_dir: None,
        index_write: true,
        branches: Branches::All,
        include_edited: false,
    }
}

fn indexed(dir: &Path, query: &ParsedQuery, notices: &Notices) -> HitSet {
    search::search(dir, query, &options(100_000), notices)
        .unwrap()
        .into_iter()
        .map(|hit| (hit.session, hit.line, hit.id))
        .collect()
}

/// Asserts that the index answers `query` as the brute-force scan does.
fn check(dir: &Path, text: &str, notices: &Notices) {
    let query = search::parse(text).unwrap();
    let expected = brute_force(dir, &query);
    let got = indexed(dir, &query, notices);
    assert_eq!(
        got, expected,
        "query {text:?}: index (left) vs brute force (right)"
    );
}

/// Random queries over the corpus's own tokens: words, phrases, prefixes and exclusions.
fn random_queries(dir: &Path, rng: &mut Rng, count: usize) -> Vec<String> {
    let mut texts = Vec::new();
    for log in search::logs_under(dir).unwrap() {
        for line in std::fs::read_to_string(&log.path)
            .unwrap_or_default()
            .lines()
        {
            if let Some(found) = search::extract(line, false) {
                texts.push(found.text);
            }
        }
    }
    let mut queries = Vec::new();
    while queries.len() < count {
        let tokens = search::tokens(rng.pick(&texts).as_str());
        if tokens.is_empty() {
            continue;
        }
        let at = rng.below(tokens.len());
        let word = &tokens[at].1;
        let other_tokens = search::tokens(rng.pick(&texts).as_str());
        let other = rng.pick(&other_tokens).clone();
        let query = match rng.below(6) {
            0 => word.clone(),
            1 => format!("{word} {}", other.1),
            2 if at + 1 < tokens.len() => format!("\"{word} {}\"", tokens[at + 1].1),
            3 => format!(
                "{}*",
                word.chars().take(1 + rng.below(3)).collect::<String>()
            ),
            4 => format!("{word} -{}", other.1),
            _ => word.to_uppercase(),
        };
        queries.push(query);
    }
    queries
}

/// Over the bundled and generated transcripts, many random queries find exactly the entries
/// (log, line, id) a brute-force scan finds.
#[test]
fn hits_equal_a_brute_force_scan() {
    let dir = corpus();
    let notices = Notices::default();
    let mut rng = Rng(2101);
    let entries = followed_entry_texts(dir.path());
    let mut nonempty = 0;
    for text in random_queries(dir.path(), &mut rng, 200) {
        let query = search::parse(&text).unwrap();
        let expected = brute_force_in(&entries, &query);
        nonempty += usize::from(!expected.is_empty());
        let got = indexed(dir.path(), &query, &notices);
        assert_eq!(
            got, expected,
            "query {text:?}: index (left) vs brute force (right)"
        );
    }
    assert!(
        nonempty > 150,
        "most random queries find something: {nonempty}"
    );
    assert_eq!(
        notices.take(),
        vec!["there is no search index yet".to_owned()]
    );
}

/// A search of one file finds its hits only and leaves the directory's other logs indexed.
#[test]
fn a_file_search_covers_that_file() {
    let dir = corpus();
    let notices = Notices::default();
    let file = dir.path().join("gen-1.jsonl");
    let query = search::parse("alpha").unwrap();
    let got = indexed(&file, &query, &notices);
    let expected: HitSet = brute_force(dir.path(), &query)
        .into_iter()
        .filter(|(path, _, _)| path == &file)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(got, expected);
}

/// Entries appended by treelog and by a plain append of another writer (no sidecar update)
/// are found by the next search, at their line.
#[test]
fn appends_are_found_next_search() {
    let dir = corpus();
    let notices = Notices::default();
    check(dir.path(), "zebra", &notices);
    let log = dir.path().join("gen-0.jsonl");
    let mut session = treelog::Session::open(&log, treelog::SessionOptions::default()).unwrap();
    session
        .append_message(r#"{"role":"user","content":"a zebra crossing","timestamp":1}"#)
        .unwrap();
    session.close().unwrap();
    check(dir.path(), "zebra", &notices);
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    writeln!(
        file,
        r#"{{"type":"message","id":"zz000001","parentId":null,"timestamp":"2025-02-01T00:00:00.000Z","message":{{"role":"user","content":"zebra stripes, quagga"}}}}"#
    )
    .unwrap();
    // A torn tail is not an entry until its newline arrives.
    write!(file, r#"{{"type":"message","id":"zz000002","parentId":null,"timestamp":"2025-02-01T00:00:00.000Z","message":{{"role":"user","content":"quagga"}}}}"#).unwrap();
    check(dir.path(), "zebra", &notices);
    check(dir.path(), "quagga", &notices);
    assert_eq!(
        indexed(dir.path(), &search::parse("quagga").unwrap(), &notices).len(),
        1
    );
    writeln!(file).unwrap();
    assert_eq!(
        indexed(dir.path(), &search::parse("quagga").unwrap(), &notices).len(),
        2
    );
    assert_eq!(notices.take().len(), 1, "only the first build is a rebuild");
}

/// A log rewritten (same name, new bytes, even longer than before) is read again: its old
/// words are gone; a deleted log drops out.
#[test]
fn rewritten_and_deleted_logs() {
    let dir = corpus();
    let notices = Notices::default();
    let log = dir.path().join("gen-2.jsonl");
    check(dir.path(), "alpha", &notices);
    let old = std::fs::read_to_string(&log).unwrap();
    let rewritten =
        old.replace("alpha", "omega") + &generated(&mut Rng(7), 5).replace("alpha", "omega");
    std::fs::write(&log, rewritten).unwrap();
    check(dir.path(), "alpha", &notices);
    check(dir.path(), "omega", &notices);
    assert!(!indexed(dir.path(), &search::parse("omega").unwrap(), &notices).is_empty());
    std::fs::remove_file(&log).unwrap();
    check(dir.path(), "omega", &notices);
    assert!(indexed(dir.path(), &search::parse("omega").unwrap(), &notices).is_empty());
    check(dir.path(), "alpha", &notices);
}

/// A way to damage the index.
type Damage<'a> = Box<dyn Fn() + 'a>;

/// Each kind of unusable index (missing, damaged, another version, half-written, a damaged
/// segment file) is rebuilt with a notice, and the answers stay exact.
#[test]
fn unusable_indexes_are_rebuilt() {
    let dir = corpus();
    let notices = Notices::default();
    check(dir.path(), "build", &notices);
    notices.take();
    let index_dir = dir.path().join(search::INDEX_DIR_NAME);
    let meta = index_dir.join("meta.json");
    let damages: Vec<(&str, Damage)> = vec![
        (
            "missing",
            Box::new(|| std::fs::remove_dir_all(&index_dir).unwrap()),
        ),
        (
            "damaged",
            Box::new(|| std::fs::write(&meta, b"{\"segments\": [tr").unwrap()),
        ),
        (
            "other version",
            Box::new(|| {
                let text = std::fs::read_to_string(&meta).unwrap();
                let format = format!("\\\"format\\\":{}", search::CATALOG_FORMAT);
                let changed = text.replace(&format, "\\\"format\\\":99");
                assert_ne!(text, changed, "meta.json holds the catalog's format");
                std::fs::write(&meta, changed).unwrap();
            }),
        ),
        (
            "half-written",
            Box::new(|| {
                let mut value: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
                value["payload"] = serde_json::Value::Null;
                std::fs::write(&meta, value.to_string()).unwrap();
            }),
        ),
        (
            "zeroed segment files",
            Box::new(|| {
                for entry in std::fs::read_dir(&index_dir).unwrap() {
                    let path = entry.unwrap().path();
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    if name.ends_with(".idx") || name.ends_with(".term") || name.ends_with(".store")
                    {
                        let len = std::fs::metadata(&path).unwrap().len();
                        std::fs::write(&path, vec![0u8; len as usize]).unwrap();
                    }
                }
            }),
        ),
    ];
    for (name, damage) in damages {
        damage();
        check(dir.path(), "build", &notices);
        check(dir.path(), "\"build lock\"", &notices);
        let reasons = notices.take();
        assert_eq!(
            reasons.len(),
            1,
            "{name}: one rebuild notice, got {reasons:?}"
        );
    }
}

/// Filters and order: --role, --type, --since/--until and newest-first select what a scan of
/// the hits' own fields selects.
#[test]
fn filters_and_newest_order() {
    let dir = corpus();
    let notices = Notices::default();
    let query = search::parse("alpha").unwrap();
    let all = search::search(dir.path(), &query, &options(100_000), &notices).unwrap();
    let filters = Filters {
        roles: vec!["toolResult".into()],
        type_name: Some("message".into()),
        since_ms: Some(1_735_689_600_000 + 30_000),
        until_ms: Some(1_735_689_600_000 + 50_000),
    };
    let newest = SearchOptions {
        filters: filters.clone(),
        limit: 100_000,
        sort: SortOrder::Newest,
        index_dir: None,
        index_write: true,
        branches: Branches::All,
        include_edited: false,
    };
    let got = search::search(dir.path(), &query, &newest, &notices).unwrap();
    let expected: BTreeSet<_> = all
        .iter()
        .filter(|hit| {
            hit.role.as_deref() == Some("toolResult")
                && hit.type_name == "message"
                && hit.timestamp_ms.is_some_and(|ms| {
                    (filters.since_ms.unwrap()..=filters.until_ms.unwrap()).contains(&ms)
                })
        })
        .map(|hit| (hit.session.clone(), hit.line))
        .collect::<BTreeSet<_>>();
    assert!(!expected.is_empty());
    assert_eq!(
        got.iter()
            .map(|hit| (hit.session.clone(), hit.line))
            .collect::<BTreeSet<_>>(),
        expected
    );
    assert!(
        got.windows(2)
            .all(|pair| pair[0].timestamp_ms >= pair[1].timestamp_ms)
    );
    assert!(got.iter().all(|hit| hit.score > 0.0));
}

/// Every file of the index directory with its length and mtime.
fn index_files(dir: &Path) -> BTreeSet<(String, u64, std::time::SystemTime)> {
    std::fs::read_dir(dir.join(search::INDEX_DIR_NAME))
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let metadata = entry.metadata().unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                metadata.len(),
                metadata.modified().unwrap(),
            )
        })
        .collect()
}

/// A search of logs that have not changed since the last one writes nothing: the index
/// directory keeps the same files, lengths and mtimes (an append, by contrast, changes them).
#[test]
fn a_search_of_unchanged_logs_writes_nothing() {
    let dir = corpus();
    let notices = Notices::default();
    check(dir.path(), "alpha", &notices);
    let built = index_files(dir.path());
    for text in [
        "alpha",
        "\"build lock\"",
        "cach*",
        "build -alpha",
        "zzzabsent",
    ] {
        check(dir.path(), text, &notices);
        assert_eq!(index_files(dir.path()), built, "after {text:?}");
    }
    let log = dir.path().join("gen-0.jsonl");
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    writeln!(
        file,
        r#"{{"type":"message","id":"zz000003","parentId":null,"timestamp":"2025-02-01T00:00:00.000Z","message":{{"role":"user","content":"okapi"}}}}"#
    )
    .unwrap();
    check(dir.path(), "okapi", &notices);
    let caught_up = index_files(dir.path());
    assert_ne!(caught_up, built, "a catch-up commits");
    check(dir.path(), "okapi", &notices);
    assert_eq!(index_files(dir.path()), caught_up);
}

/// A search limited to N hits returns the first N of the same search unlimited, with the same
/// scores, over entries where a few words recur in every length and order, in one index
/// segment and then in several (each catch-up adds one): skipping documents that cannot reach
/// the top (block-max WAND for words; for a phrase, search/phrase.rs's count bounds and the
/// threshold it carries from one segment to the next) changes no answer.
#[test]
fn top_hits_are_the_first_of_all_hits() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(4242);
    let words = ["build", "lock", "tokio", "cache"];
    for n in 0..3 {
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        );
        text.push('\n');
        for entry in 0..1500 {
            let sentence: Vec<&str> = (0..1 + rng.below(12)).map(|_| *rng.pick(&words)).collect();
            text.push_str(&format!(
                r#"{{"type":"message","id":"e{entry:07}","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{}"}}}}"#,
                sentence.join(" ")
            ));
            text.push('\n');
        }
        std::fs::write(dir.path().join(format!("top-{n}.jsonl")), text).unwrap();
    }
    let notices = Notices::default();
    let ranked = |text: &str, limit: usize| -> Vec<(PathBuf, u64, u32)> {
        let query = search::parse(text).unwrap();
        search::search(dir.path(), &query, &options(limit), &notices)
            .unwrap()
            .into_iter()
            .map(|hit| (hit.session, hit.line, hit.score.to_bits()))
            .collect()
    };
    for round in 0..3 {
        for text in [
            "tokio",
            "build lock",
            "\"build lock\"",
            "\"lock lock\"",
            "\"tokio cache build\"",
            "cach*",
            "build -tokio",
        ] {
            let all = ranked(text, 100_000);
            assert!(all.len() > 100, "{text}: {} hits", all.len());
            for limit in [1, 3, 10, 50] {
                assert_eq!(
                    ranked(text, limit),
                    all[..limit],
                    "{text} limited to {limit}, round {round}"
                );
            }
        }
        // More entries in another log: the next search's catch-up indexes them in a segment
        // of their own.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(format!("top-{round}.jsonl")))
            .unwrap();
        for entry in 0..400 {
            let sentence: Vec<&str> = (0..1 + rng.below(12)).map(|_| *rng.pick(&words)).collect();
            writeln!(
                file,
                r#"{{"type":"message","id":"r{round}{entry:06}","parentId":null,"timestamp":"2025-01-02T00:00:00.000Z","message":{{"role":"user","content":"{}"}}}}"#,
                sentence.join(" ")
            )
            .unwrap();
        }
    }
    let segments = std::fs::read_dir(dir.path().join(".treelog-search"))
        .unwrap()
        .filter(|file| {
            file.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|ext| ext == "idx")
        })
        .count();
    assert!(segments > 1, "{segments} segment(s)");
}

/// A hit's snippet is read back from its line however long the line is: a word at the end of
/// a 200 KiB entry (read in growing chunks) is in the snippet and highlighted.
#[test]
fn snippets_come_from_long_lines() {
    let dir = corpus();
    let notices = Notices::default();
    let filler = "lorem ipsum dolor ".repeat(200 << 10 >> 4);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("gen-3.jsonl"))
        .unwrap();
    writeln!(
        file,
        r#"{{"type":"message","id":"zz000004","parentId":null,"timestamp":"2025-02-01T00:00:00.000Z","message":{{"role":"user","content":"{filler} wombat"}}}}"#
    )
    .unwrap();
    let query = search::parse("wombat").unwrap();
    let hits = search::search(dir.path(), &query, &options(10), &notices).unwrap();
    assert_eq!(hits.len(), 1);
    let hit = &hits[0];
    assert_eq!(hit.id, "zz000004");
    assert_eq!(
        hit.highlights
            .iter()
            .map(|range| &hit.snippet[range.clone()])
            .collect::<Vec<_>>(),
        vec!["wombat"],
        "snippet {:?}",
        hit.snippet
    );
}

/// Hits of equal score (or equal time, newest first) come in (session, line) order, and a
/// limit cuts such a run at the same place, whatever the index's segments: an index built by
/// one catch-up per log, last log first (so its segments hold the logs in reverse order),
/// answers exactly as one built from all the logs at once, for every limit and both orders.
#[test]
fn equal_scores_keep_one_order_whatever_the_segments() {
    let sentences = [
        "deploy the build",
        "deploy the build",
        "the build cache is warm",
        "deploy now",
        "deploy the build cache",
    ];
    let names = [
        "tie-a.jsonl",
        "tie-b.jsonl",
        "sub/tie-c.jsonl",
        "tie-d.jsonl",
    ];
    let mut rng = Rng(77);
    let logs: Vec<(&str, String)> = names
        .iter()
        .map(|name| {
            let mut text = String::from(
                r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
            );
            text.push('\n');
            for entry in 0..60 {
                // Three times only, so that many entries share one.
                let time = format!("2025-01-0{}T00:00:00.000Z", 1 + rng.below(3));
                text.push_str(&format!(
                    r#"{{"type":"message","id":"e{entry:04}","parentId":null,"timestamp":"{time}","message":{{"role":"user","content":"{}"}}}}"#,
                    rng.pick(&sentences)
                ));
                text.push('\n');
            }
            (*name, text)
        })
        .collect();
    let write = |dir: &Path, (name, text): &(&str, String)| {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let notices = Notices::default();
    let warm_up = search::parse("deploy").unwrap();
    // One catch-up per log, the last log first.
    let by_catch_ups = tempfile::tempdir().unwrap();
    for log in logs.iter().rev() {
        write(by_catch_ups.path(), log);
        search::search(by_catch_ups.path(), &warm_up, &options(1), &notices).unwrap();
    }
    // All the logs, then one build.
    let at_once = tempfile::tempdir().unwrap();
    for log in &logs {
        write(at_once.path(), log);
    }
    search::search(at_once.path(), &warm_up, &options(1), &notices).unwrap();

    let ranked = |dir: &Path, text: &str, limit: usize, sort: SortOrder| {
        let query = search::parse(text).unwrap();
        let options = SearchOptions {
            sort,
            ..options(limit)
        };
        search::search(dir, &query, &options, &notices)
            .unwrap()
            .into_iter()
            .map(|hit| {
                let session = hit.session.strip_prefix(dir).unwrap().to_path_buf();
                (hit.score.to_bits(), hit.timestamp_ms, session, hit.line)
            })
            .collect::<Vec<_>>()
    };
    for text in ["deploy", "\"the build\"", "build -cache", "dep*", "warm"] {
        for sort in [SortOrder::Score, SortOrder::Newest] {
            for limit in [1, 5, 17, 40, 1000] {
                let expected = ranked(at_once.path(), text, limit, sort);
                assert!(!expected.is_empty(), "{text}");
                assert_eq!(
                    ranked(by_catch_ups.path(), text, limit, sort),
                    expected,
                    "{text}, {sort:?}, limit {limit}"
                );
                let in_order = expected.windows(2).all(|pair| {
                    let (a, b) = (&pair[0], &pair[1]);
                    let key_order = match sort {
                        SortOrder::Score => f32::from_bits(b.0).total_cmp(&f32::from_bits(a.0)),
                        SortOrder::Newest => b.1.cmp(&a.1),
                    };
                    key_order
                        .then_with(|| (&a.2, a.3).cmp(&(&b.2, b.3)))
                        .is_le()
                });
                assert!(in_order, "{text}, {sort:?}, limit {limit}: {expected:?}");
            }
        }
    }
}

/// A limit far beyond the number of documents (the CLI takes any u64, the Node package up to
/// 2^53 - 1) returns every hit; it once made the engine allocate room for that many and
/// abort the process.
#[test]
fn a_huge_limit_returns_every_hit() {
    let dir = corpus();
    let notices = Notices::default();
    let query = search::parse("alpha").unwrap();
    let all = search::search(dir.path(), &query, &options(100_000), &notices).unwrap();
    assert!(!all.is_empty());
    for limit in [(1usize << 53) - 1, usize::MAX] {
        let got = search::search(dir.path(), &query, &options(limit), &notices).unwrap();
        assert_eq!(got.len(), all.len(), "limit {limit}");
    }
    assert!(
        notices.take().len() <= 1,
        "the index was never taken for damaged"
    );
}

/// One line of a hand-written log: a message `id` under `parent` saying `text`.
fn message_line(id: &str, parent: Option<&str>, role: &str, text: &str) -> String {
    serde_json::json!({
        "type": "message", "id": id, "parentId": parent,
        "timestamp": "2025-03-01T00:00:00.000Z",
        "message": {"role": role, "content": text},
    })
    .to_string()
}

/// A `context_edit` line: `replacement` `None` removes `target` from the model's view.
fn edit_line(id: &str, parent: &str, target: &str, replacement: Option<&str>) -> String {
    serde_json::json!({
        "type": "context_edit", "id": id, "parentId": parent,
        "timestamp": "2025-03-01T00:00:01.000Z", "targetId": target,
        "replacement": replacement.map(|text| serde_json::json!({"content": text})),
    })
    .to_string()
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2025-03-01T00:00:00.000Z","cwd":"/w"}"#;

fn append_lines(log: &Path, lines: &[String]) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
}

fn hits_of(dir: &Path, text: &str) -> Vec<search::Hit> {
    let options = options(100);
    search::search(
        dir,
        &search::parse(text).unwrap(),
        &options,
        &Notices::default(),
    )
    .unwrap()
}

/// Context edits, each case a log, lines appended after a first search, and what the next
/// search finds: a removed message has no hit and leaves no trace in the index's files (even
/// when its log shares segments with others), a replaced one is found by its replacement's
/// words only and marked edited, and an edit appended after a search applies at the next
/// search's catch-up; the latest edit of an entry in file order wins.
#[test]
fn context_edits_are_followed() {
    struct Case {
        name: &'static str,
        log: Vec<String>,
        appended: Vec<String>,
        /// (word, hits expected, each edited) after the append.
        expect: Vec<(&'static str, usize, bool)>,
        /// Words that must not be anywhere in the index after the append.
        absent: Vec<&'static str>,
    }
    let base = || {
        vec![
            HEADER.to_owned(),
            message_line("m1", None, "user", "my password is hunter2zebra"),
            message_line("m2", Some("m1"), "assistant", "noted alpaca"),
        ]
    };
    let with = |mut lines: Vec<String>, more: &[String]| {
        lines.extend_from_slice(more);
        lines
    };
    let cases = vec![
        Case {
            name: "removed in the log from the start",
            log: with(base(), &[edit_line("e1", "m2", "m1", None)]),
            appended: vec![],
            expect: vec![("hunter2zebra", 0, false), ("alpaca", 1, false)],
            absent: vec!["hunter2zebra", "password"],
        },
        Case {
            name: "removed by an edit appended after a search",
            log: base(),
            appended: vec![edit_line("e1", "m2", "m1", None)],
            expect: vec![("hunter2zebra", 0, false), ("alpaca", 1, false)],
            absent: vec!["hunter2zebra"],
        },
        Case {
            name: "replaced by an edit appended after a search",
            log: base(),
            appended: vec![edit_line("e1", "m2", "m1", Some("redacted llama"))],
            expect: vec![
                ("hunter2zebra", 0, false),
                ("llama", 1, true),
                ("alpaca", 1, false),
            ],
            absent: vec!["hunter2zebra"],
        },
        Case {
            name: "replaced, then removed on another branch: the latest edit wins",
            log: with(
                base(),
                &[edit_line("e1", "m2", "m1", Some("redacted llama"))],
            ),
            appended: vec![edit_line("e2", "m1", "m1", None)],
            expect: vec![("hunter2zebra", 0, false), ("llama", 0, false)],
            absent: vec!["hunter2zebra", "llama"],
        },
        Case {
            name: "removed, then replaced: the replacement is found",
            log: with(base(), &[edit_line("e1", "m2", "m1", None)]),
            appended: vec![edit_line("e2", "e1", "m1", Some("gnu words"))],
            expect: vec![("hunter2zebra", 0, false), ("gnu", 1, true)],
            absent: vec!["hunter2zebra"],
        },
    ];
    for case in cases {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        append_lines(&log, &case.log);
        // Another log, indexed in the same build: its segment may hold the edited one's words.
        append_lines(
            &dir.path().join("b.jsonl"),
            &[
                HEADER.to_owned(),
                message_line("x1", None, "user", "unrelated alpaca"),
            ],
        );
        hits_of(dir.path(), "alpaca");
        append_lines(&log, &case.appended);
        for (word, count, edited) in &case.expect {
            let hits: Vec<_> = hits_of(dir.path(), word)
                .into_iter()
                .filter(|hit| hit.session == log)
                .collect();
            assert_eq!(hits.len(), *count, "{}: {word}: {hits:?}", case.name);
            for hit in &hits {
                assert_eq!(hit.edited, *edited, "{}: {word}", case.name);
                assert!(hit.snippet.contains(word), "{}: {hit:?}", case.name);
            }
        }
        for word in &case.absent {
            assert!(
                !index_holds(&dir.path().join(search::INDEX_DIR_NAME), word),
                "{}: {word} is in the index",
                case.name
            );
        }
    }
}

/// `--branch active` keeps exactly the hits on the path from the leaf the session opens at (its
/// last entry), computed here from the lines' `parentId`s alone; every hit says whether it is
/// on that path.
#[test]
fn active_branch_hits_equal_the_path_from_the_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    let mut lines = vec![HEADER.to_owned()];
    let mut ids: Vec<String> = Vec::new();
    for at in 0..60 {
        let id = format!("b{at:07}");
        // Mostly continue the latest entry; sometimes branch off an earlier one.
        let parent = match ids.len() {
            0 => None,
            len if rng.below(4u64) == 0 => Some(ids[rng.below(len)].clone()),
            len => Some(ids[len - 1].clone()),
        };
        let role = if at % 2 == 0 { "user" } else { "assistant" };
        lines.push(message_line(
            &id,
            parent.as_deref(),
            role,
            &format!("okapi step {at}"),
        ));
        ids.push(id);
    }
    let log = dir.path().join("tree.jsonl");
    append_lines(&log, &lines);

    // The path from the leaf (the last entry), by parentId.
    let parents: std::collections::HashMap<String, Option<String>> = lines[1..]
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                value["id"].as_str().unwrap().to_owned(),
                value["parentId"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let mut on_path = BTreeSet::new();
    let mut at = ids.last().cloned();
    while let Some(id) = at {
        at = parents[&id].clone();
        on_path.insert(id);
    }
    assert!(on_path.len() < ids.len(), "the log has side branches");

    let query = search::parse("okapi").unwrap();
    let all = search::search(dir.path(), &query, &options(1000), &Notices::default()).unwrap();
    assert_eq!(all.len(), ids.len());
    for hit in &all {
        assert_eq!(hit.active_path, on_path.contains(&hit.id), "{hit:?}");
    }
    for limit in [1, 3, 1000] {
        let active = SearchOptions {
            branches: Branches::Active,
            ..options(limit)
        };
        let hits = search::search(dir.path(), &query, &active, &Notices::default()).unwrap();
        let found: BTreeSet<String> = hits.iter().map(|hit| hit.id.clone()).collect();
        assert_eq!(hits.len(), limit.min(on_path.len()), "limit {limit}");
        assert!(found.is_subset(&on_path), "limit {limit}");
        // The same hits, in the same order, as the first of all hits that are on the path.
        let expected: Vec<String> = all
            .iter()
            .filter(|hit| on_path.contains(&hit.id))
            .take(limit)
            .map(|hit| hit.id.clone())
            .collect();
        let got: Vec<String> = hits.iter().map(|hit| hit.id.clone()).collect();
        assert_eq!(got, expected, "limit {limit}");
    }
}

/// With `include_edited`, the original text of a removed or a replaced message is found,
/// read back from the log and marked `original`; without it, it is not found; either way the
/// index's files never hold it. The edited lines stay known across a catch-up without edits
/// and are found again after one with an edit, and the filters apply to originals too.
#[test]
fn include_edited_finds_originals_from_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.jsonl");
    append_lines(
        &log,
        &[
            HEADER.to_owned(),
            message_line("m1", None, "user", "my password is hunter2zebra"),
            message_line("m2", Some("m1"), "assistant", "noted alpaca"),
            message_line("m3", Some("m2"), "user", "keep gecko"),
            edit_line("e1", "m3", "m1", None),
            edit_line("e2", "e1", "m2", Some("redacted llama")),
        ],
    );
    append_lines(
        &dir.path().join("b.jsonl"),
        &[
            HEADER.to_owned(),
            message_line("x1", None, "user", "unrelated alpaca"),
        ],
    );
    let with_edited = |text: &str, filters: Filters| {
        let options = SearchOptions {
            include_edited: true,
            filters,
            ..options(100)
        };
        search::search(
            dir.path(),
            &search::parse(text).unwrap(),
            &options,
            &Notices::default(),
        )
        .unwrap()
    };
    let originals = |hits: &[search::Hit]| -> Vec<(u64, String)> {
        hits.iter()
            .filter(|hit| hit.original == Some(true))
            .map(|hit| (hit.line, hit.snippet.clone()))
            .collect()
    };
    for round in [
        "first build",
        "after an append without edits",
        "after an edit",
    ] {
        match round {
            "after an append without edits" => {
                append_lines(
                    &log,
                    &[message_line("m4", Some("e2"), "user", "more gecko")],
                );
            }
            "after an edit" => {
                append_lines(&log, &[edit_line("e3", "m4", "m3", None)]);
            }
            _ => {}
        }
        assert!(hits_of(dir.path(), "hunter2zebra").is_empty(), "{round}");
        let hits = with_edited("hunter2zebra", Filters::default());
        assert_eq!(
            originals(&hits),
            [(2, "my password is hunter2zebra".to_owned())],
            "{round}"
        );
        assert!(!hits[0].edited && hits[0].score > 0.0, "{round}");
        assert_eq!(hits[0].id, "m1");
        // The replaced message: its old words are an original, its new ones the index's hit.
        let alpaca = with_edited("alpaca", Filters::default());
        assert_eq!(
            originals(&alpaca),
            [(3, "noted alpaca".to_owned())],
            "{round}"
        );
        assert_eq!(alpaca.len(), 2, "{round}: {alpaca:?}");
        assert!(
            alpaca
                .iter()
                .all(|hit| hit.original == Some(hit.session == log)),
            "{round}"
        );
        let llama = with_edited("llama", Filters::default());
        assert_eq!(llama.len(), 1, "{round}");
        assert!(
            llama[0].edited && llama[0].original == Some(false),
            "{round}"
        );
        // Phrases, prefixes, exclusions and filters read originals as the index reads text.
        assert_eq!(with_edited("\"password is\"", Filters::default()).len(), 1);
        assert_eq!(with_edited("\"is password\"", Filters::default()).len(), 0);
        assert_eq!(with_edited("hunter2*", Filters::default()).len(), 1);
        assert_eq!(
            with_edited("password -hunter2zebra", Filters::default()).len(),
            0
        );
        let assistant = Filters {
            roles: vec!["assistant".into()],
            ..Filters::default()
        };
        assert_eq!(with_edited("hunter2zebra", assistant.clone()).len(), 0);
        assert_eq!(originals(&with_edited("alpaca", assistant)).len(), 1);
        // Newest first puts originals among the index's hits by time, then place.
        let newest = search::search(
            dir.path(),
            &search::parse("alpaca").unwrap(),
            &SearchOptions {
                include_edited: true,
                sort: SortOrder::Newest,
                ..options(100)
            },
            &Notices::default(),
        )
        .unwrap();
        let places = |hits: &[search::Hit]| -> BTreeSet<(PathBuf, u64)> {
            hits.iter()
                .map(|hit| (hit.session.clone(), hit.line))
                .collect()
        };
        assert_eq!(places(&newest), places(&alpaca), "{round}");
        assert_eq!(
            newest[0].session, log,
            "{round}: same time, `a.jsonl` first"
        );
        let gecko = with_edited("gecko", Filters::default());
        let removed_gecko = round == "after an edit";
        assert_eq!(
            originals(&gecko),
            if removed_gecko {
                vec![(4, "keep gecko".to_owned())]
            } else {
                vec![]
            },
            "{round}"
        );
        for word in ["hunter2zebra", "password", "noted"] {
            assert!(
                !index_holds(&dir.path().join(search::INDEX_DIR_NAME), word),
                "{round}: {word} is in the index"
            );
        }
    }
    // An index built in memory (no index writes, none in the index directory) knows the
    // same edited lines; a file searched alone has its originals.
    let elsewhere = tempfile::tempdir().unwrap();
    let options = SearchOptions {
        include_edited: true,
        index_write: false,
        index_dir: Some(elsewhere.path().to_path_buf()),
        ..options(100)
    };
    let hits = search::search(
        &log,
        &search::parse("hunter2zebra").unwrap(),
        &options,
        &Notices::default(),
    )
    .unwrap();
    assert_eq!(
        originals(&hits),
        [(2, "my password is hunter2zebra".to_owned())]
    );
    assert_eq!(hits[0].session, log);
}

/// With `include_edited`, random queries over the words of the entries edits removed or
/// replaced find exactly what a brute-force scan of the followed texts and of those entries'
/// original texts finds, and every hit marked original is one of those originals.
#[test]
fn include_edited_hits_equal_a_brute_force_scan() {
    let dir = corpus();
    let followed = followed_entry_texts(dir.path());
    let kept: BTreeSet<(PathBuf, u64, &str)> = followed
        .iter()
        .map(|entry| (entry.path.clone(), entry.line, entry.text.as_str()))
        .collect();
    let originals: Vec<EntryText> = entry_texts(dir.path())
        .into_iter()
        .filter(|entry| !kept.contains(&(entry.path.clone(), entry.line, entry.text.as_str())))
        .collect();
    assert!(originals.len() > 10, "the corpus has edited entries");
    let options = SearchOptions {
        include_edited: true,
        ..options(100_000)
    };
    let mut rng = Rng(35);
    for _ in 0..80 {
        let words = search::tokens(&rng.pick(&originals).text);
        let at = rng.below(words.len());
        let word = &words[at].1;
        let text = match rng.below(4u64) {
            0 => word.clone(),
            1 if at + 1 < words.len() => format!("\"{word} {}\"", words[at + 1].1),
            2 => format!("{}*", word.chars().take(3).collect::<String>()),
            _ => format!("{word} -{}", rng.pick(&words).1),
        };
        let Ok(query) = search::parse(&text) else {
            continue;
        };
        let of_originals = brute_force_in(&originals, &query);
        let mut expected = brute_force_in(&followed, &query);
        expected.extend(of_originals.iter().cloned());
        let hits = search::search(dir.path(), &query, &options, &Notices::default()).unwrap();
        let got: HitSet = hits
            .iter()
            .map(|hit| (hit.session.clone(), hit.line, hit.id.clone()))
            .collect();
        assert_eq!(got, expected, "query {text:?}: index (left) vs brute force");
        for hit in hits.iter().filter(|hit| hit.original == Some(true)) {
            assert!(
                of_originals.contains(&(hit.session.clone(), hit.line, hit.id.clone())),
                "{text:?}: {hit:?}"
            );
        }
    }
}

/// On every bundled pi-written transcript, each hit says it is on the active path exactly when
/// pi's own answer for the session (its oracle: `leafId` and that leaf's root-to-leaf path, as
/// pi 1.6.0 / 0.73.1 computed them) holds the entry, and `--branch active` keeps only those.
#[test]
fn active_path_flags_equal_pis_path_on_the_vectors() {
    let (mut on, mut off) = (0, 0);
    for name in [
        "pi-sample-200",
        "pi073-gen-a",
        "pi16-demo",
        "pi16-gen-a",
        "pi16-gen-b",
        "pi16-sample-300",
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            data_dir().join(format!("{name}.jsonl")),
            dir.path().join(format!("{name}.jsonl")),
        )
        .unwrap();
        let oracle: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(data_dir().join(format!("{name}.oracle.json"))).unwrap(),
        )
        .unwrap();
        let leaf = oracle["leafId"].as_str().unwrap();
        let path = match oracle.get("leaves") {
            Some(leaves) => leaves
                .as_array()
                .unwrap()
                .iter()
                .find(|entry| entry["leafId"] == leaf)
                .map(|entry| entry["path"].clone())
                .unwrap(),
            None => oracle["path"].clone(),
        };
        let path: BTreeSet<String> = path
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        assert!(
            path.contains(leaf),
            "{name}: the oracle's path ends at its leaf"
        );
        for word in ["the", "test", "file", "log", "read", "ok"] {
            let query = search::parse(word).unwrap();
            let all =
                search::search(dir.path(), &query, &options(10_000), &Notices::default()).unwrap();
            for hit in &all {
                assert_eq!(
                    hit.active_path,
                    path.contains(&hit.id),
                    "{name} {word}: {hit:?}"
                );
                if hit.active_path {
                    on += 1;
                } else {
                    off += 1;
                }
            }
            let active = SearchOptions {
                branches: Branches::Active,
                ..options(10_000)
            };
            let kept = search::search(dir.path(), &query, &active, &Notices::default()).unwrap();
            let expected: Vec<&str> = all
                .iter()
                .filter(|hit| hit.active_path)
                .map(|hit| hit.id.as_str())
                .collect();
            let got: Vec<&str> = kept.iter().map(|hit| hit.id.as_str()).collect();
            assert_eq!(got, expected, "{name} {word}: --branch active");
        }
    }
    assert!(
        on > 50 && off > 50,
        "hits on ({on}) and off ({off}) the active paths"
    );
}
