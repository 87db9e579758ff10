//! `treelog::secrets`: the rule file (every built-in rule finds its examples and none of its
//! counterexamples), the findings' places (line, entry id, JSON path), and redaction: only the
//! matched text inside string values changes, structure fields are refused, the sidecar is
//! rebuilt, and a property test over random sessions and literals.

use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;
use treelog::secrets::{
    Matcher, SecretsError, check, redact_bytes, redact_file, rules, scan_file, scan_line,
};
use treelog::{Session, SessionOptions};

/// Each built-in rule finds each of its examples (the secret inside the example, not the
/// whole text) and none of its counterexamples, and every example holds one of its keywords
/// (the prefilter would skip it otherwise).
#[test]
fn every_built_in_rule_finds_its_examples_and_not_its_counterexamples() {
    let rules = rules::built_in();
    assert!(rules.len() >= 12, "{} rules", rules.len());
    for rule in &rules {
        assert!(!rule.examples.is_empty(), "rule {} has no example", rule.id);
        assert!(
            !rule.counterexamples.is_empty(),
            "rule {} has no counterexample",
            rule.id
        );
        for example in &rule.examples {
            assert!(
                rule.keywords
                    .iter()
                    .any(|keyword| example.contains(keyword)),
                "rule {}: example {example:?} holds no keyword",
                rule.id
            );
            let mut found = Vec::new();
            rule.find(example, &mut found);
            assert_eq!(found.len(), 1, "rule {} on {example:?}: {found:?}", rule.id);
            let matcher = Matcher::rules(vec![rule.clone()]);
            assert_eq!(matcher.find(example).len(), 1, "rule {}", rule.id);
        }
        for counterexample in &rule.counterexamples {
            let mut found = Vec::new();
            rule.find(counterexample, &mut found);
            assert!(
                found.is_empty(),
                "rule {} matched its counterexample {counterexample:?}: {found:?}",
                rule.id
            );
        }
    }
}

/// Rule files that cannot be used are refused with the line and the reason.
#[test]
fn bad_rule_files_name_the_line_and_the_reason() {
    let cases: &[(&str, usize, &str)] = &[
        ("keywords = x\n", 1, "before any `[rule]`"),
        ("[a]\nkeywords = x\nregex = (\n", 3, "bad regex"),
        ("[a]\nkeywords = x\n", 1, "has no regex"),
        ("[a]\nregex = x\n", 1, "has no keywords"),
        ("[a b]\n", 1, "letters, digits"),
        ("[a]\nkeywords = x\nregex = x\n[a]\n", 4, "defined twice"),
        ("[a]\ncolour = red\n", 2, "unknown key `colour`"),
        ("[a]\nentropy = -1\n", 2, "entropy"),
        ("[a]\nno equals sign\n", 2, "key = value"),
    ];
    for (text, line, reason) in cases {
        let error = rules::parse(text).expect_err(text);
        assert_eq!(error.line, *line, "{text:?}: {error}");
        assert!(error.reason.contains(reason), "{text:?}: {error}");
    }
}

/// The pi session every planting test starts from: it has every entry type pi writes.
fn sample() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pi16-gen-a.jsonl");
    std::fs::read_to_string(path)
        .expect("read the sample")
        .lines()
        .map(String::from)
        .collect()
}

/// Where secrets are planted in `sample()`: 1-based line, the JSON path `treelog` reports,
/// and the same path as JSON-pointer segments to plant it.
const SITES: &[(usize, &str, &[&str])] = &[
    (
        6,
        "message.content[0].text",
        &["message", "content", "0", "text"],
    ),
    (
        8,
        "message.content[0].text",
        &["message", "content", "0", "text"],
    ),
    (19, "content[0].text", &["content", "0", "text"]),
    (20, "message.output", &["message", "output"]),
    (30, "data.state", &["data", "state"]),
    (
        31,
        "replacement.content[0].text",
        &["replacement", "content", "0", "text"],
    ),
    (38, "summary", &["summary"]),
    (41, "label", &["label"]),
    (62, "summary", &["summary"]),
];

const KEY: &str = "AKIAQ3EGRZ7DKX5M7Q2X";

/// `line` with `text` appended to the string at `segments`.
fn plant(line: &str, segments: &[&str], text: &str) -> String {
    let mut value: Value = serde_json::from_str(line).expect("a JSON line");
    let mut at = &mut value;
    for segment in segments {
        at = match segment.parse::<usize>() {
            Ok(index) => &mut at[index],
            Err(_) => &mut at[*segment],
        };
    }
    let old = at.as_str().expect("a string").to_string();
    *at = Value::String(format!("{old} {text}"));
    serde_json::to_string(&value).expect("serialize")
}

/// The sample with `text` planted at every site, and the sample with `replacement` there.
fn planted(text: &str, replacement: &str) -> (String, String) {
    let mut with = sample();
    let mut expected = sample();
    for (line, _, segments) in SITES {
        with[line - 1] = plant(&with[line - 1], segments, text);
        expected[line - 1] = plant(&expected[line - 1], segments, replacement);
    }
    (with.join("\n") + "\n", expected.join("\n") + "\n")
}

/// A key planted in a user message, a tool result, a custom message, a bash execution's
/// output, a custom entry, a context edit's replacement, a compaction summary, a label and a
/// branch summary is found at each, with its line, entry id and JSON path, masked.
#[test]
fn scan_reports_line_entry_and_json_path_of_every_planted_key() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let (text, _) = planted(KEY, "[REDACTED]");
    std::fs::write(&log, &text).unwrap();
    let found = scan_file(&log, &Matcher::rules(rules::built_in())).unwrap();
    let places: Vec<(u64, String)> = found
        .iter()
        .map(|finding| (finding.line, finding.json_path.clone().unwrap()))
        .collect();
    let expected: Vec<(u64, String)> = SITES
        .iter()
        .map(|(line, path, _)| (*line as u64, path.to_string()))
        .collect();
    assert_eq!(places, expected);
    let lines: Vec<&str> = text.lines().collect();
    for finding in &found {
        assert_eq!(finding.rule, "aws-access-key-id");
        assert_eq!(finding.masked, "AKIA…7Q2X");
        let line: Value = serde_json::from_str(lines[finding.line as usize - 1]).unwrap();
        assert_eq!(finding.entry_id.as_deref(), line["id"].as_str());
    }
}

/// Redaction changes exactly the planted strings: the redacted log equals, byte for byte, the
/// sample with the replacement planted instead; every id, parent and type is where it was.
#[test]
fn redaction_changes_only_the_matched_text() {
    let (text, expected) = planted(KEY, "[REDACTED]");
    let mut found = Vec::new();
    let out = redact_bytes(
        Path::new("s.jsonl"),
        text.as_bytes(),
        &Matcher::literal(KEY).unwrap(),
        "[REDACTED]",
        1,
        0,
        &mut found,
    )
    .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    assert_eq!(found.len(), SITES.len());
}

/// A match in a key, an id (pi's `id`/`…Id`, other agents' `uuid`/`…Uuid`), a parent id, a
/// type, a role or a timestamp is refused, naming the line, the entry and the JSON path.
#[test]
fn matches_in_structure_fields_are_refused() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"type":"label","id":"abc12345","parentId":"p","label":"x"}"#,
            "abc12345",
            "id",
        ),
        (
            r#"{"type":"label","id":"i","parentId":"abc12345","label":"x"}"#,
            "abc12345",
            "parentId",
        ),
        (
            r#"{"type":"label","id":"i","targetId":"abc12345","label":"x"}"#,
            "abc12345",
            "targetId",
        ),
        (r#"{"type":"abc12345","id":"i"}"#, "abc12345", "type"),
        (
            r#"{"type":"m","id":"i","timestamp":"abc12345"}"#,
            "abc12345",
            "timestamp",
        ),
        (
            r#"{"type":"m","id":"i","message":{"role":"abc12345"}}"#,
            "abc12345",
            "message.role",
        ),
        (
            r#"{"type":"m","id":"i","data":{"abc12345":1}}"#,
            "abc12345",
            "data.abc12345",
        ),
        (
            r#"{"type":"m","id":"i","message":{"content":[{"type":"toolCall","id":"abc12345"}]}}"#,
            "abc12345",
            "message.content[0].id",
        ),
        (
            r#"{"type":"user","uuid":"abc12345","parentUuid":null}"#,
            "abc12345",
            "uuid",
        ),
        (
            r#"{"type":"user","uuid":"u","logicalParentUuid":"abc12345"}"#,
            "abc12345",
            "logicalParentUuid",
        ),
    ];
    for (line, literal, path) in cases {
        let text = format!("{line}\n");
        let error = redact_bytes(
            Path::new("s.jsonl"),
            text.as_bytes(),
            &Matcher::literal(literal).unwrap(),
            "[REDACTED]",
            1,
            0,
            &mut Vec::new(),
        )
        .expect_err(line);
        match &error {
            SecretsError::Refused {
                line: 1, json_path, ..
            } => assert_eq!(json_path, path, "{line}"),
            other => panic!("{line}: {other}"),
        }
        assert!(error.to_string().contains("nothing was written"), "{error}");
    }
}

/// A line that is not JSON but holds the text is refused (its strings cannot be told apart);
/// one that does not hold it is left alone.
#[test]
fn a_line_that_is_not_json_is_refused_only_when_it_holds_the_text() {
    let matcher = Matcher::literal("hunter2").unwrap();
    let run = |text: &str| {
        redact_bytes(
            Path::new("s.jsonl"),
            text.as_bytes(),
            &matcher,
            "x",
            1,
            0,
            &mut Vec::new(),
        )
    };
    let error = run("{\"a\":\"ok\"}\n{\"a\": hunter2\n").expect_err("refused");
    assert!(
        matches!(error, SecretsError::NotJson { line: 2, .. }),
        "{error}"
    );
    assert_eq!(
        run("{\"a\":\"ok\"}\nnot json\n").unwrap(),
        b"{\"a\":\"ok\"}\nnot json\n"
    );
}

/// Text a JSON writer escapes (`\u` escapes, `\n`, quotes) is found and replaced as the string
/// reads, not as its raw bytes.
#[test]
fn escaped_spellings_are_found_and_replaced() {
    let cases: &[(&str, &str, &str)] = &[
        (r#"{"t":"k\u0065y-123"}"#, "key-123", r#"{"t":"X"}"#),
        (r#"{"t":"a\nsecret\"q"}"#, "secret\"q", r#"{"t":"a\nX"}"#),
        (r#"{"t":"p\/w-123"}"#, "p/w-123", r#"{"t":"X"}"#),
    ];
    for (line, literal, expected) in cases {
        let mut found = Vec::new();
        let out = redact_bytes(
            Path::new("s.jsonl"),
            format!("{line}\n").as_bytes(),
            &Matcher::literal(literal).unwrap(),
            "X",
            1,
            0,
            &mut found,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{expected}\n"),
            "{line}"
        );
        assert_eq!(found.len(), 1);
        let mut scanned = Vec::new();
        scan_line(
            line.as_bytes(),
            &Matcher::literal(literal).unwrap(),
            1,
            0,
            &mut scanned,
        );
        assert_eq!(scanned.len(), 1, "{line}");
    }
}

/// `redact_file` on a log with a sidecar: the log is replaced keeping its mode, the sidecar
/// is rebuilt, the session opens with the same entries, leaf and labels, and no byte of the
/// folder spells the key any more.
#[test]
fn redact_file_rewrites_the_log_and_its_sidecar() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let (text, expected) = planted(KEY, "[REDACTED]");
    std::fs::write(&log, &text).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = Session::open(&log, SessionOptions::default()).unwrap();
    let (entries, leaf, labels) = (
        before.entry_count().unwrap(),
        before.leaf_id().unwrap(),
        before.labels().unwrap().len(),
    );
    drop(before);
    assert!(treelog::sidecar_for(&log, None).exists());

    let dry = redact_file(
        &log,
        &Matcher::literal(KEY).unwrap(),
        "[REDACTED]",
        true,
        &SessionOptions::default(),
    )
    .unwrap();
    assert_eq!((dry.findings.len(), dry.written), (SITES.len(), false));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), text);

    let done = redact_file(
        &log,
        &Matcher::literal(KEY).unwrap(),
        "[REDACTED]",
        false,
        &SessionOptions::default(),
    )
    .unwrap();
    assert_eq!(
        (done.findings.len(), done.written, done.sidecar_rebuilt),
        (SITES.len(), true, true)
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), expected);
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    let after = Session::open(&log, SessionOptions::default()).unwrap();
    assert_eq!(after.entry_count().unwrap(), entries);
    assert_eq!(after.leaf_id().unwrap(), leaf);
    assert_eq!(after.labels().unwrap().len(), labels);
    let needles = check::spellings([KEY]);
    assert_eq!(
        check::files_holding(dir.path(), &needles).unwrap(),
        Vec::<std::path::PathBuf>::new()
    );
    // Nothing left to do: a second run writes nothing.
    let again = redact_file(
        &log,
        &Matcher::literal(KEY).unwrap(),
        "[REDACTED]",
        false,
        &SessionOptions::default(),
    )
    .unwrap();
    assert!(again.findings.is_empty() && !again.written);
}

/// A symlinked log stays a link; the file it points to is redacted.
#[test]
fn a_linked_log_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.jsonl");
    let link = dir.path().join("link.jsonl");
    let (text, expected) = planted(KEY, "[REDACTED]");
    std::fs::write(&real, &text).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    redact_file(
        &link,
        &Matcher::literal(KEY).unwrap(),
        "[REDACTED]",
        false,
        &SessionOptions::default(),
    )
    .unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&real).unwrap(), expected);
}

/// A random pi-shaped session: a header and entries whose text fields are drawn from a small
/// alphabet, so that random literals occur often, across escapes too.
fn session_strategy() -> impl Strategy<Value = Vec<String>> {
    let text = || proptest::string::string_regex("[qj\"\\\\\n/é~]{0,12}").unwrap();
    proptest::collection::vec((text(), text(), 0u8..4), 1..12).prop_map(|items| {
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"h-0","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#
                .to_string(),
        ];
        let mut parent = Value::Null;
        for (index, (first, second, kind)) in items.into_iter().enumerate() {
            let id = format!("e-{index}");
            let value = match kind {
                0 => serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-01-01T00:00:01.000Z",
                    "message":{"role":"user","content":[{"type":"text","text":first},{"type":"text","text":second}],"timestamp":1}}),
                1 => serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-01-01T00:00:01.000Z",
                    "message":{"role":"bashExecution","command":first,"output":second,"exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}}),
                2 => serde_json::json!({"type":"compaction","id":id,"parentId":parent,"timestamp":"2025-01-01T00:00:01.000Z",
                    "summary":first,"firstKeptEntryId":"e-0","tokensBefore":1,"details":{"note":second}}),
                _ => serde_json::json!({"type":"custom","customType":"x","data":{"a":first,"b":[second]},"id":id,"parentId":parent,"timestamp":"2025-01-01T00:00:01.000Z"}),
            };
            lines.push(serde_json::to_string(&value).unwrap());
            parent = Value::String(format!("e-{index}"));
        }
        lines
    })
}

/// Every string value of `value`, in order (the structure fields included).
fn strings_of(value: &Value, out: &mut Vec<String>) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => out.push(text.clone()),
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(members) => stack.extend(members.values().rev()),
            _ => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// For random sessions and literals: the redacted log has the same number of lines, each
    /// valid JSON with the same id, parentId and type, holds the literal in no string value,
    /// and its string values equal the originals with the literal replaced (serde_json's own
    /// reading of both is the oracle).
    #[test]
    fn redaction_keeps_lines_valid_and_ids_in_place(
        lines in session_strategy(),
        literal in proptest::string::string_regex("[qj\"\\\\\n/é~]{1,3}").unwrap(),
    ) {
        let text = lines.join("\n") + "\n";
        let mut found = Vec::new();
        let out = redact_bytes(Path::new("s.jsonl"), text.as_bytes(), &Matcher::literal(&literal).unwrap(), "#", 1, 0, &mut found);
        let out = match out {
            Ok(out) => out,
            // The literal is in a structure field (an id, type, key): refused, nothing to check.
            Err(SecretsError::Refused { .. }) => return Ok(()),
            Err(other) => panic!("{other}"),
        };
        let out = String::from_utf8(out).unwrap();
        let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (text.lines().collect(), out.lines().collect());
        prop_assert_eq!(old_lines.len(), new_lines.len());
        let mut occurrences = 0;
        for (old, new) in old_lines.iter().zip(&new_lines) {
            let old: Value = serde_json::from_str(old).unwrap();
            let new: Value = serde_json::from_str(new).unwrap();
            for field in ["id", "parentId", "type"] {
                prop_assert_eq!(&old[field], &new[field]);
            }
            let (mut old_strings, mut new_strings) = (Vec::new(), Vec::new());
            strings_of(&old, &mut old_strings);
            strings_of(&new, &mut new_strings);
            for (before, after) in old_strings.iter().zip(&new_strings) {
                occurrences += before.matches(literal.as_str()).count();
                prop_assert_eq!(after, &before.replace(literal.as_str(), "#"));
                prop_assert!(!after.contains(literal.as_str()));
            }
        }
        prop_assert_eq!(found.len(), occurrences);
    }
}
