//! The session API beyond what the oracle and model tests cover: ancestor queries against a
//! naive path walk, forks and branched sessions (no dangling parents), continue_recent.

use std::collections::HashSet;

use proptest::prelude::*;
use treelog::{Session, SessionOptions};

fn user(text: &str) -> String {
    format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#)
}

/// Builds a random tree in memory: each step appends to the leaf or first branches to a random
/// earlier entry.
fn random_tree(steps: &[(bool, usize)]) -> (Session, Vec<String>) {
    let mut session = Session::in_memory("/w");
    let mut ids = Vec::new();
    for (index, (branch, pick)) in steps.iter().enumerate() {
        if *branch && !ids.is_empty() {
            let target: &String = &ids[pick % ids.len()];
            session.branch(target).expect("branch to a known id");
        }
        ids.push(
            session
                .append_message(&user(&format!("m{index}")))
                .expect("append"),
        );
    }
    (session, ids)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// is_ancestor, common_ancestor and branch_difference agree with a walk over full paths.
    #[test]
    fn ancestor_queries_match_paths(steps in proptest::collection::vec((proptest::bool::weighted(0.3), 0usize..1000), 1..120), picks in proptest::collection::vec((0usize..1000, 0usize..1000), 1..20)) {
        let (session, ids) = random_tree(&steps);
        for (a, b) in picks {
            let (a, b) = (&ids[a % ids.len()], &ids[b % ids.len()]);
            let path_a = session.path_ids(Some(a)).unwrap();
            let path_b = session.path_ids(Some(b)).unwrap();
            prop_assert_eq!(session.is_ancestor(a, b).unwrap(), path_b.contains(a));
            let common = path_a.iter().zip(&path_b).take_while(|(x, y)| x == y).last().map(|(x, _)| x.clone());
            prop_assert_eq!(session.common_ancestor(a, b).unwrap(), common.clone());
            let shared = common.map_or(0, |id| path_a.iter().position(|x| *x == id).unwrap() + 1);
            let (only_a, only_b) = session.branch_difference(a, b).unwrap();
            prop_assert_eq!(only_a, path_a[shared..].to_vec());
            prop_assert_eq!(only_b, path_b[shared..].to_vec());
        }
    }
}

/// write_fork writes the caller's header, then every entry line as stored, into a new file, and
/// refuses a path that exists (leaving it as it was).
#[test]
fn write_fork_copies_every_entry_under_the_given_header() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/w", SessionOptions::default()).unwrap();
    let first = session.append_message(&user("one")).unwrap();
    session.append_label_change(&first, Some("l")).unwrap();
    session.append_message(&user("two")).unwrap();
    let target = dir.path().join("fork.jsonl");
    let header = r#"{"type":"session","version":3,"id":"f","timestamp":"t","cwd":"/x"}"#;
    session.write_fork(&target, header).unwrap();
    let source = std::fs::read_to_string(session.log_path()).unwrap();
    let entries = source.split_once('\n').unwrap().1;
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        format!("{header}\n{entries}")
    );
    std::fs::write(&target, "kept").unwrap();
    assert!(session.write_fork(&target, header).is_err());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
}

/// pi 1.6's rules for what a branched session holds: label entries dropped and the path
/// re-linked, a compaction's `firstKeptEntryId` moved from a dropped label to the entry after
/// it, and one new label per kept target in pi's label-map order (a label cleared and set again
/// goes last, one renamed keeps its place), each with the id drawn for it.
#[test]
fn branched_entries_follow_pi() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/w", SessionOptions::default()).unwrap();
    let kept: Vec<String> = (0..4)
        .map(|i| session.append_message(&user(&format!("m{i}"))).unwrap())
        .collect();
    let mark = session.append_label_change(&kept[0], Some("l0")).unwrap();
    for (i, id) in kept.iter().enumerate().skip(1) {
        session
            .append_label_change(id, Some(&format!("l{i}")))
            .unwrap();
    }
    for i in [1, 0] {
        session.append_label_change(&kept[i], None).unwrap();
        session
            .append_label_change(&kept[i], Some(&format!("l{i} again")))
            .unwrap();
    }
    session
        .append_label_change(&kept[2], Some("l2 renamed"))
        .unwrap();
    let after_label = session.append_message(&user("after the labels")).unwrap();
    let compaction = session
        .append_compaction("s", Some(&mark), "7", None, None, None)
        .unwrap();
    let leaf = session.append_message(&user("leaf")).unwrap();
    let off = session.append_message(&user("off the path")).unwrap();
    session.append_label_change(&off, Some("not kept")).unwrap();

    let mut draws = ["aaaaaaaa-0", "bbbbbbbb-1", "cccccccc-2", "dddddddd-3"].into_iter();
    let branched = session
        .branched_entries(&leaf, || draws.next().unwrap().to_string())
        .unwrap();
    assert!(branched.has_conversation);
    let values: Vec<serde_json::Value> = branched
        .lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let field = |value: &serde_json::Value, key: &str| value[key].as_str().map(str::to_string);
    let ids: Vec<_> = values.iter().map(|v| field(v, "id").unwrap()).collect();
    let mut expected_ids = kept.clone();
    expected_ids.extend([after_label.clone(), compaction.clone(), leaf.clone()]);
    expected_ids.extend(["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"].map(String::from));
    assert_eq!(ids, expected_ids);
    for (i, value) in values.iter().enumerate() {
        let parent = i.checked_sub(1).map(|p| ids[p].clone());
        assert_eq!(field(value, "parentId"), parent, "line {i} is re-linked");
    }
    // The labels sit on the path between kept[3] and after_label: the first kept after `mark`.
    assert_eq!(
        field(&values[5], "firstKeptEntryId"),
        Some(after_label.clone())
    );
    let labels: Vec<_> = values[7..]
        .iter()
        .map(|v| (field(v, "targetId").unwrap(), field(v, "label").unwrap()))
        .collect();
    assert_eq!(
        labels,
        [
            (kept[2].clone(), "l2 renamed".to_string()),
            (kept[3].clone(), "l3".to_string()),
            (kept[1].clone(), "l1 again".to_string()),
            (kept[0].clone(), "l0 again".to_string()),
        ]
    );
}

/// A branched session holds the path verbatim minus labels, re-linked, with labels re-created,
/// and names its parent session; its context equals the source's for that leaf.
#[test]
fn branched_session_has_no_dangling_parents() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/w", SessionOptions::default()).unwrap();
    let first = session.append_message(&user("one")).unwrap();
    session.append_label_change(&first, Some("start")).unwrap();
    session
        .append_message(
            r#"{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}"#,
        )
        .unwrap();
    let leaf = session.append_message(&user("three")).unwrap();
    let new_path = session.create_branched_session(&leaf).unwrap();
    let branched = Session::open(&new_path, SessionOptions::default()).unwrap();
    assert_eq!(
        branched.header().parent_session.as_deref(),
        Some(
            std::path::absolute(session.log_path())
                .unwrap()
                .to_str()
                .unwrap()
        )
    );
    assert_eq!(
        branched.build_context(None).unwrap().to_json(),
        session.build_context(Some(&leaf)).unwrap().to_json()
    );
    assert_eq!(branched.label(&first).unwrap().as_deref(), Some("start"));
    let ids: HashSet<String> = branched
        .entries()
        .unwrap()
        .map(|entry| entry.unwrap().id)
        .collect();
    for entry in branched.entries().unwrap() {
        let entry = entry.unwrap();
        if let Some(parent) = &entry.parent_id {
            assert!(
                ids.contains(parent),
                "{} has a dangling parent {parent}",
                entry.id
            );
        }
    }
}

/// fork_from copies every entry verbatim into a new session for another cwd, and
/// continue_recent finds the newest session of a cwd.
#[test]
fn fork_and_continue_recent() {
    let dir = tempfile::tempdir().unwrap();
    let mut source = Session::create(dir.path(), "/a", SessionOptions::default()).unwrap();
    source.append_message(&user("hello")).unwrap();
    source.sync().unwrap();
    let other_dir = dir.path().join("b");
    let fork = Session::fork_from(
        source.log_path(),
        "/b",
        &other_dir,
        SessionOptions::default(),
    )
    .unwrap();
    assert_eq!(fork.cwd(), Some("/b"));
    let source_lines: Vec<String> = source
        .entries()
        .unwrap()
        .map(|entry| entry.unwrap().json)
        .collect();
    let fork_lines: Vec<String> = fork
        .entries()
        .unwrap()
        .map(|entry| entry.unwrap().json)
        .collect();
    assert_eq!(source_lines, fork_lines);
    let recent = Session::continue_recent(&other_dir, "/b", SessionOptions::default()).unwrap();
    assert_eq!(recent.log_path(), fork.log_path());
    let fresh =
        Session::continue_recent(&other_dir, "/elsewhere", SessionOptions::default()).unwrap();
    assert_ne!(fresh.log_path(), fork.log_path());
}

/// On a log of blank lines a handle's first append writes the header it made up, so the log
/// is not left headerless (pi rewrites such a log); a header another process writes first is
/// adopted; an entry another process writes first leaves the log headerless, and the handle
/// keeps the recovered header it made up (regression: a refresh made a new one, with a new
/// timestamp).
#[test]
fn blank_only_log_gets_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let append_line = |path: &std::path::Path, line: &str| {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).unwrap();
    };

    let path = dir.path().join("blank.jsonl");
    std::fs::write(&path, "\n  \n").unwrap();
    let mut session = Session::open(&path, SessionOptions::default()).unwrap();
    let made_up = session.header().clone();
    assert!(made_up.recovered, "a log of blank lines has no header yet");
    session.append_message(&user("first")).unwrap();
    let log = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        log.lines().nth(2),
        Some(made_up.json.as_str()),
        "the header follows the blank lines"
    );
    session.refresh().unwrap();
    assert_eq!(session.session_id(), made_up.id);
    assert!(!session.header().recovered);
    let fresh = Session::open(&path, SessionOptions::default()).unwrap();
    assert_eq!(fresh.header().json, made_up.json);
    assert!(!fresh.header().recovered);
    assert_eq!(fresh.entries().unwrap().count(), 1);

    let theirs = dir.path().join("blank-then-header.jsonl");
    std::fs::write(&theirs, "\n  \n").unwrap();
    let mut session = Session::open(&theirs, SessionOptions::default()).unwrap();
    append_line(
        &theirs,
        r#"{"type":"session","version":3,"id":"theirs","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    session.refresh().unwrap();
    assert_eq!(session.session_id(), "theirs");
    assert!(!session.header().recovered);

    let headerless = dir.path().join("blank-then-entry.jsonl");
    std::fs::write(&headerless, "\n  \n").unwrap();
    let mut session = Session::open(&headerless, SessionOptions::default()).unwrap();
    let made_up = session.header().clone();
    std::thread::sleep(std::time::Duration::from_millis(5));
    append_line(
        &headerless,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
    );
    session.refresh().unwrap();
    assert_eq!(session.header(), &made_up, "the made-up header is kept");
    // pi would not read an entry appended to a log whose first line is an entry: refused.
    let refused = session.append_message(&user("second")).unwrap_err();
    assert!(
        matches!(refused, treelog::Error::AppendRefused { .. }),
        "{refused}"
    );
    assert_eq!(session.header(), &made_up);
    assert_eq!(
        std::fs::read_to_string(&headerless)
            .unwrap()
            .matches("\"session\"")
            .count(),
        0,
        "no header after the first line"
    );
}

/// A stamp gives the next entry the caller's id and timestamp (a compaction's system message
/// takes the stamped time too); a taken id, or one needing a JSON escape, is refused with
/// nothing written, and the append after a stamped one draws its own again.
#[test]
fn stamped_appends_take_the_callers_id_and_timestamp() {
    use treelog::Stamp;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = Session::open(&path, SessionOptions::default()).unwrap();
    let stamp = |id: &str, timestamp: &str| Stamp {
        id: id.into(),
        timestamp: timestamp.into(),
    };
    session
        .stamp_next(stamp("0badcafe", "2025-01-01T09:00:00.007Z"))
        .unwrap();
    let first = session
        .append_message(r#"{"role":"system","content":"be brief","timestamp":1}"#)
        .unwrap();
    assert_eq!(first, "0badcafe");
    assert!(session.id_taken("0badcafe").unwrap());
    assert!(!session.id_taken("0badcaff").unwrap());
    for refused in [
        stamp("0badcafe", "2025-01-01T09:00:00.008Z"),
        stamp("", "2025-01-01T09:00:00.008Z"),
        stamp("a\"b", "2025-01-01T09:00:00.008Z"),
        stamp("feedf00d", "2025\n"),
    ] {
        let error = session.stamp_next(refused).unwrap_err();
        assert!(
            matches!(error, treelog::Error::InvalidInput { .. }),
            "{error}"
        );
    }
    session
        .stamp_next(stamp("feedf00d", "2025-01-01T09:00:01.000Z"))
        .unwrap();
    session
        .append_compaction("sum", None, "5", None, None, None)
        .unwrap();
    let drawn = session.append_thinking_level_change("high").unwrap();
    assert_ne!(drawn, "feedf00d");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(
        lines[1],
        r#"{"type":"message","id":"0badcafe","parentId":null,"timestamp":"2025-01-01T09:00:00.007Z","message":{"role":"system","content":"be brief","timestamp":1}}"#
    );
    assert_eq!(
        lines[2],
        r#"{"type":"compaction","id":"feedf00d","parentId":"0badcafe","timestamp":"2025-01-01T09:00:01.000Z","summary":"sum","firstKeptEntryId":"feedf00d","tokensBefore":5,"systemMessage":{"role":"system","content":"be brief","timestamp":1735722001000}}"#
    );
}

/// Every assistant's model origin is an assistant whose provider and model parse to the same
/// values, whether the records are in the handle's unflushed overlay or in stored pages of a
/// reopened index; other entries, and messages whose provider is an object, have none.
#[test]
fn model_origins_name_messages_of_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/w", SessionOptions::default()).unwrap();
    let models = [
        r#""provider":"a","model":"m1""#,
        r#""provider":"b","model":"m2""#,
        r#""provider":"a","model":"m\u0031""#,
        r#""model":"m1""#,
        r#""provider":{"name":"a"},"model":"m1""#,
        r#""provider":"a","model":"m2","model":"m1""#,
    ];
    let mut ids = Vec::new();
    for index in 0..600 {
        let message = if index % 3 == 0 {
            user(&format!("q{index}"))
        } else {
            let model = models[(index / 3 + index) % models.len()];
            format!(r#"{{"role":"assistant","content":[],{model},"timestamp":{index}}}"#)
        };
        ids.push(session.append_message(&message).unwrap());
    }
    let log = session.log_path().to_path_buf();
    let line = |session: &Session, seq: u64| -> serde_json::Value {
        serde_json::from_str(session.lines_jsonl(&[seq]).unwrap().trim_end()).unwrap()
    };
    let fields = |session: &Session, seq: u64| {
        let line = line(session, seq);
        (
            line["message"]["provider"].clone(),
            line["message"]["model"].clone(),
        )
    };
    let check = |session: &Session| {
        let seqs: Vec<u64> = ids
            .iter()
            .map(|id| session.entry_seq(id).unwrap().unwrap())
            .collect();
        // Asked out of order, as a reader may.
        let reversed: Vec<u64> = seqs.iter().rev().copied().collect();
        let origins = session.model_origins(&reversed).unwrap();
        let mut named = 0;
        for (&seq, origin) in reversed.iter().zip(&origins) {
            let (provider, _) = fields(session, seq);
            let assistant = line(session, seq)["message"]["role"] == "assistant";
            match origin {
                None => assert!(
                    !assistant || provider.is_object(),
                    "line {seq} has an origin"
                ),
                Some(origin) => {
                    assert!(assistant && *origin <= seq, "line {seq}: origin {origin}");
                    assert_eq!(fields(session, *origin), fields(session, seq), "line {seq}");
                    named += usize::from(*origin != seq);
                }
            }
        }
        assert!(named > 300, "most assistants name an earlier one: {named}");
    };
    check(&session);
    drop(session);
    check(&Session::open(&log, SessionOptions::default()).unwrap());
}

/// What the index alone hands out of an entry (`indexed_entries`, `path_since`) is what its
/// line says: every entry's id, and for a plain entry its parentId, timestamp and role, so a
/// binding can hand a plain entry out whole but for its message. Lines in another layout, with
/// another timestamp spelling, or with ids holding a line break are not plain; the log is read
/// back from its file and from a fresh index.
#[test]
fn indexed_entries_are_what_their_lines_say() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let t = |n: u32| format!("2025-03-0{}T10:00:0{}.{n:03}Z", 1 + n % 3, n % 10);
    let mut lines = vec![
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-03-01T10:00:00.000Z","cwd":"/w"}"#.to_string(),
        format!(r#"{{"type":"message","id":"a0","parentId":null,"timestamp":"{}","message":{{"role":"user","content":"q"}}}}"#, t(0)),
        format!(r#"{{"type":"message","id":"a1","parentId":"a0","timestamp":"{}","message":{{"role":"assistant","content":[]}}}}"#, t(1)),
        // Not plain: a timestamp toISOString() does not write, another key order, an escaped id.
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-03-01T10:00:00Z","message":{"role":"user","content":"q"}}"#.to_string(),
        r#"{"id":"a3","type":"message","parentId":"a2","timestamp":"2025-03-01T10:00:00.000Z","message":{"role":"user"}}"#.to_string(),
        r#"{"type":"message","id":"a\n4","parentId":"a3","timestamp":"2025-03-01T10:00:00.000Z","message":{"role":"user"}}"#.to_string(),
        r#"{"type":"custom","id":"a5","parentId":"a\n4","timestamp":"2025-03-01T10:00:00.000Z","customType":"x"}"#.to_string(),
        format!(r#"{{"type":"message","id":"a6","parentId":"a5","timestamp":"{}","message":{{"role":"toolResult","content":[]}}}}"#, t(6)),
        // A branch from a1, then back on the main line.
        format!(r#"{{"type":"message","id":"b7","parentId":"a1","timestamp":"{}","message":{{"role":"user","content":"side"}}}}"#, t(7)),
    ];
    for n in 8..40 {
        let parent = if n == 8 {
            "a6".to_string()
        } else {
            format!("a{}", n - 1)
        };
        lines.push(format!(r#"{{"type":"message","id":"a{n}","parentId":"{parent}","timestamp":"{}","message":{{"role":"user","content":"{n}"}}}}"#, t(n)));
    }
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();

    let check =
        |session: &Session, entries: &treelog::IndexedEntries, first_parent: Option<&str>| {
            let ids: Vec<&str> = entries.ids.split('\n').collect();
            let listed: Vec<&str> = entries.parents.split('\n').skip(1).collect();
            let (mut listed_at, mut plain) = (0, 0);
            for (index, &seq) in entries.seqs.iter().enumerate() {
                let line: serde_json::Value =
                    serde_json::from_str(session.lines_jsonl(&[seq]).unwrap().trim_end()).unwrap();
                let id = line["id"].as_str().unwrap();
                assert_eq!(
                    ids[index],
                    if id.contains('\n') { "" } else { id },
                    "line {seq}"
                );
                if entries.roles[index] == treelog::NOT_PLAIN {
                    continue;
                }
                let parent = match entries.parent_at[index] {
                    treelog::PARENT_NULL => None,
                    treelog::PARENT_LISTED => {
                        listed_at += 1;
                        Some(listed[listed_at - 1])
                    }
                    at => Some(ids[at as usize]),
                };
                assert_eq!(line["parentId"].as_str(), parent, "line {seq}");
                if index == 0 {
                    assert_eq!(parent, first_parent, "the first entry's parent");
                }
                let len = treelog::TIMESTAMP_LEN;
                let timestamp = &entries.timestamps[plain * len..(plain + 1) * len];
                assert_eq!(line["timestamp"].as_str(), Some(timestamp), "line {seq}");
                plain += 1;
                let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
                assert_eq!(
                    keys,
                    ["type", "id", "parentId", "timestamp", "message"],
                    "line {seq}"
                );
                assert!(
                    ["user", "assistant", "toolResult"]
                        .contains(&line["message"]["role"].as_str().unwrap())
                );
            }
            assert_eq!(
                (listed_at, plain * treelog::TIMESTAMP_LEN),
                (listed.len(), entries.timestamps.len())
            );
            plain
        };
    for rebuilt in [true, false] {
        let session = Session::open(&log, SessionOptions::default()).unwrap();
        let state = session.index_state();
        assert_eq!(
            matches!(state, treelog::IndexState::Rebuilt { .. }),
            rebuilt,
            "{state:?}"
        );
        let all = session
            .indexed_entries(&session.entry_seqs_from(0).unwrap())
            .unwrap();
        assert_eq!(all.len(), lines.len() - 1);
        assert_eq!(
            check(&session, &all, None),
            lines.len() - 1 - 4,
            "all but the four lines that are not plain"
        );
        let leaf = session.leaf_seq();
        let (kept, path) = session.path_since(leaf, None).unwrap();
        assert_eq!(
            (kept, path.len()),
            (0, lines.len() - 2),
            "the path leaves out b7"
        );
        check(&session, &path, None);
        // From the side branch's leaf: a0 and a1 stay, a2 on are handed out.
        let side = session.entry_seq("b7").unwrap();
        let (kept, tail) = session.path_since(leaf, side).unwrap();
        assert_eq!((kept, tail.len()), (2, lines.len() - 4));
        check(&session, &tail, Some("a1"));
    }
}
