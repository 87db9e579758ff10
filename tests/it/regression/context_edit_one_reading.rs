//! Regression (found by trying the release CLI as an attacker who writes a log would): search
//! and context read a `context_edit` line with two parsers. The context read it as
//! `JSON.parse` does (`json_scan`), search with serde_json, which refuses a lone surrogate
//! escape (`"\ud800"`), nesting deeper than 128 and a number beyond f64, and skipped a line
//! whose `type` is written with a `\u` escape. On such an edit the context removed a message
//! (say a password) that search still found. Now both read every line with
//! `format::pi_json`, and a deleted or rewritten log leaves none of its text in the index's
//! files.

use std::path::Path;

use proptest::prelude::*;
use treelog::search::{self, Branches, Filters, SearchOptions, SortOrder};
use treelog::{Session, SessionOptions};
use treelog_testkit::search_index::index_holds;

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2025-03-01T00:00:00.000Z","cwd":"/w"}"#;

/// A message line `id` under `parent` of role `role` whose content is the raw JSON `content`.
fn message(id: &str, parent: Option<&str>, role: &str, content: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |parent| format!("\"{parent}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-03-01T00:00:01.000Z","message":{{"role":"{role}","content":{content}}}}}"#
    )
}

/// Extra members that `JSON.parse` reads and serde_json refuses or reads otherwise.
fn hostile_members() -> Vec<(&'static str, String)> {
    vec![
        ("lone surrogate", r#""note":"\ud800""#.to_owned()),
        (
            "nesting 200 deep",
            format!(r#""note":{}1{}"#, "[".repeat(200), "]".repeat(200)),
        ),
        ("number beyond f64", r#""note":1e400"#.to_owned()),
        ("lone surrogate key", r#""\udc00":1"#.to_owned()),
    ]
}

fn options() -> SearchOptions {
    SearchOptions {
        filters: Filters::default(),
        limit: 100,
        sort: SortOrder::Score,
        index_dir: None,
        index_write: true,
        branches: Branches::All,
        include_edited: false,
    }
}

fn hits(dir: &Path, word: &str) -> usize {
    search::search(
        dir,
        &search::parse(word).unwrap(),
        &options(),
        &search::Quiet,
    )
    .unwrap()
    .len()
}

/// The context of the log's leaf, as JSON.
fn context(log: &Path) -> String {
    let session = Session::open(log, SessionOptions::default()).unwrap();
    session.build_context(None).unwrap().to_json()
}

/// A log whose user message holds a secret, removed (or replaced) by an edit that carries
/// `extra` members: the context and the search index both leave the secret out, and the
/// index's files do not hold it.
fn check_removed(name: &str, edit: &str, replacement_word: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let lines = [
        HEADER.to_owned(),
        message("m1", None, "user", r#""my password is hunter2secret""#),
        message(
            "m2",
            Some("m1"),
            "assistant",
            r#"[{"type":"text","text":"noted"}]"#,
        ),
        edit.to_owned(),
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let context = context(&log);
    assert!(
        !context.contains("hunter2secret"),
        "{name}: context {context}"
    );
    assert_eq!(hits(dir.path(), "hunter2secret"), 0, "{name}: search");
    assert!(
        !index_holds(&dir.path().join(search::INDEX_DIR_NAME), "hunter2secret"),
        "{name}: index files"
    );
    if let Some(word) = replacement_word {
        assert!(context.contains(word), "{name}: context {context}");
        assert_eq!(hits(dir.path(), word), 1, "{name}: search {word}");
    }
}

/// A removal carrying each hostile member, and a replacement carrying it.
#[test]
fn hostile_edits_remove_for_search_as_for_context() {
    for (name, extra) in hostile_members() {
        let removal = format!(
            r#"{{"type":"context_edit","id":"e1","parentId":"m2","timestamp":"2025-03-01T00:00:02.000Z","targetId":"m1","replacement":null,{extra}}}"#
        );
        check_removed(name, &removal, None);
        let replacement = format!(
            r#"{{"type":"context_edit","id":"e1","parentId":"m2","timestamp":"2025-03-01T00:00:02.000Z",{extra},"targetId":"m1","replacement":{{"content":"redactedword"}}}}"#
        );
        check_removed(name, &replacement, Some("redactedword"));
    }
}

/// Repeated keys count by their last value, and a `type` written with escapes is read.
#[test]
fn repeated_keys_and_escaped_type() {
    check_removed(
        "repeated keys",
        r#"{"type":"context_edit","id":"e1","parentId":"m2","timestamp":"t","targetId":"m2","targetId":"m1","replacement":{"content":"secretkept"},"replacement":null}"#,
        None,
    );
    check_removed(
        "escaped type",
        r#"{"type":"context\u005fedit","id":"e1","parentId":"m2","timestamp":"t","targetId":"m1","replacement":null}"#,
        None,
    );
}

/// A replacement without `content` removes the content of a message that serde_json
/// cannot read (the context kept it, search dropped it), and a message entry of role
/// `custom` is replaced for search as for the context.
#[test]
fn replacements_apply_to_every_message_the_context_edits() {
    for (role, content) in [
        ("user", r#""hunter2secret \ud800""#),
        ("custom", r#""hunter2secret""#),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let lines = [
            HEADER.to_owned(),
            message("m1", None, role, content),
            r#"{"type":"context_edit","id":"e1","parentId":"m1","timestamp":"t","targetId":"m1","replacement":{"content":"gentleword"},"replacement":{}}"#.to_owned(),
        ];
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
        let context = context(&log);
        assert!(!context.contains("hunter2secret"), "{role}: {context}");
        assert_eq!(hits(dir.path(), "hunter2secret"), 0, "{role}");
    }
}

/// A log deleted, or rewritten without the secret, leaves none of its text in the index's
/// files after the next search (its segments are rewritten and the old files deleted). Each
/// change shares a segment with an append to another log, so that the segment holding the
/// old text keeps documents and is not simply dropped whole.
#[test]
fn deleted_and_rewritten_logs_leave_no_text_in_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.jsonl");
    let secret = dir.path().join("secret.jsonl");
    let line = |id: &str, parent: Option<&str>, word: &str| {
        message(id, parent, "user", &format!("\"{word}\"")) + "\n"
    };
    let append = |path: &Path, text: String| {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(text.as_bytes()).unwrap();
    };
    std::fs::write(&kept, format!("{HEADER}\n{}", line("k1", None, "ordinary"))).unwrap();
    assert_eq!(hits(dir.path(), "ordinary"), 1);
    append(&kept, line("k2", Some("k1"), "ordinarytwo"));
    std::fs::write(
        &secret,
        format!("{HEADER}\n{}", line("m1", None, "hunter2secret")),
    )
    .unwrap();
    assert_eq!(hits(dir.path(), "hunter2secret"), 1);
    assert!(index_holds(
        &dir.path().join(search::INDEX_DIR_NAME),
        "hunter2secret"
    ));
    append(&kept, line("k3", Some("k2"), "ordinarythree"));
    std::fs::write(
        &secret,
        format!("{HEADER}\n{}", line("m1", None, "rewrittenword")),
    )
    .unwrap();
    assert_eq!(hits(dir.path(), "rewrittenword"), 1);
    assert!(
        !index_holds(&dir.path().join(search::INDEX_DIR_NAME), "hunter2secret"),
        "rewritten"
    );
    assert!(index_holds(
        &dir.path().join(search::INDEX_DIR_NAME),
        "rewrittenword"
    ));
    std::fs::remove_file(&secret).unwrap();
    assert_eq!(hits(dir.path(), "ordinarythree"), 1);
    assert!(
        !index_holds(&dir.path().join(search::INDEX_DIR_NAME), "rewrittenword"),
        "deleted"
    );
}

/// What a generated edit line adds: hostile members around the edit's own keys.
fn edit_line() -> impl Strategy<Value = (String, String)> {
    let member = prop_oneof![
        Just(r#""a":"\ud800""#.to_owned()),
        Just(r#""b":1e400"#.to_owned()),
        (1usize..300).prop_map(|depth| format!(
            r#""c":{}{}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )),
        Just(r#""targetId":"m2""#.to_owned()),
        Just(r#""replacement":{"content":"zzdecoy"}"#.to_owned()),
        Just(r#""replacement":null"#.to_owned()),
        Just(r#""\u0074argetId":"m1""#.to_owned()),
    ];
    let replacement = prop_oneof![
        Just("null"),
        Just(r#"{"content":"zzreplaced"}"#),
        Just(r#"{"content":[{"type":"text","text":"zzreplaced \ud83d"}]}"#),
        Just(r#"{}"#),
        Just(r#""zzstring""#),
        Just(r#"{"content":"zzfirst","content":"zzreplaced"}"#),
    ];
    let kind = prop_oneof![Just("context_edit"), Just(r"context\u005fedit")];
    (
        proptest::collection::vec(member.clone(), 0..3),
        proptest::collection::vec(member, 0..3),
        replacement,
        prop_oneof![Just("m1"), Just("m2"), Just("none")],
        kind,
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("toolResult"),
            Just("custom"),
            Just("bashExecution")
        ],
    )
        .prop_map(|(before, after, replacement, target, kind, role)| {
            let mut members = vec![
                format!(r#""type":"{kind}""#),
                r#""id":"e1""#.to_owned(),
                r#""parentId":"m2""#.to_owned(),
                r#""timestamp":"2025-03-01T00:00:02.000Z""#.to_owned(),
            ];
            members.extend(before);
            members.push(format!(r#""targetId":"{target}""#));
            members.push(format!(r#""replacement":{replacement}"#));
            members.extend(after);
            (format!("{{{}}}", members.join(",")), role.to_owned())
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// For generated edit lines, every word is in the context exactly when search finds it:
    /// what search considers removed is what the context removes, and a replacement's words
    /// are found exactly when the context shows them.
    #[test]
    fn search_finds_what_the_context_shows((edit, role) in edit_line()) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let target = match role.as_str() {
            "bashExecution" => r#"{"type":"message","id":"m1","parentId":null,"timestamp":"t","message":{"role":"bashExecution","command":"zzsecret","output":"","exitCode":0}}"#.to_owned(),
            role => message("m1", None, role, r#""zzsecret""#),
        };
        let lines = [
            HEADER.to_owned(),
            target,
            message("m2", Some("m1"), "assistant", r#""zzother""#),
            edit.clone(),
        ];
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
        let context = context(&log);
        for word in ["zzsecret", "zzother", "zzreplaced", "zzdecoy", "zzfirst", "zzstring"] {
            prop_assert_eq!(
                context.contains(word),
                hits(dir.path(), word) > 0,
                "{} in {}\nedit {}", word, context, edit
            );
        }
    }
}
