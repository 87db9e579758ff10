//! Model test of the session API: random sequences of appends, branches, reopens, lost
//! sidecars, appends by "other processes" written straight to the file (as pi writes them, with
//! no lock), torn writes and unknown lines. After every step the live handle and a freshly
//! opened session must give exactly the answers of a naive reference model
//! (`treelog_testkit::model`, which the `operations` fuzz target shares), which re-reads the
//! log line by line with `serde_json::Value` and applies the rules of format-spec/log.md and
//! pi's `buildSessionContext`. The model uses nothing of treelog but its public API.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::{Map, Value, json};
use treelog::{Error, OnConflict, Session, SessionOptions, Verify, sidecar_path};
use treelog_testkit::model::handle::{Append, Handle};
use treelog_testkit::model::{IdTarget, Model, iso_ms};

// ---------------------------------------------------------------------------------------------
// Operations.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum FirstKept {
    OnPath(usize),
    Any(usize),
    Missing,
}

#[derive(Clone, Debug)]
enum ParentChoice {
    Entry(usize),
    Opaque(usize),
    Null,
    Absent,
    Dangling,
}

#[derive(Clone, Copy, Debug)]
enum After {
    Nothing,
    Refresh,
    Reopen,
}

/// How a line written without its `\n` is ended.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// The other process writes the `\n`.
    Newline,
    /// The other process appends its next line without a separator (pi 0.73.1): one invalid
    /// line of both. The handle then refreshes, or (`true`) appends without a refresh.
    Glued(bool),
    /// The handle appends, which writes the `\n` first.
    HandleAppends,
}

#[derive(Clone, Debug)]
enum Foreign {
    /// An entry of a type treelog does not know, with an id and a parent.
    UnknownType(ParentChoice),
    /// An OpenClaw `leaf` row naming some id.
    LeafRow(ParentChoice, usize),
    /// A line that is not an entry at all.
    Garbage(usize),
}

#[derive(Clone, Debug)]
enum Op {
    User(usize),
    Assistant(usize, usize),
    Thinking(usize),
    ModelChange(usize, usize),
    Compaction(FirstKept, u32),
    BranchSummary(Option<usize>, usize),
    Custom(bool),
    CustomMessage(bool, bool),
    Label(usize, Option<usize>),
    SessionInfo(usize),
    Branch(usize),
    ResetLeaf,
    Refresh,
    Reopen(bool),
    DeleteSidecar,
    Sync,
    /// Another process appends a message: parent, timestamp, kind (0 user, 1 assistant,
    /// 2 an OpenClaw `appendMode:"side"` assistant row), then what the handle does.
    ExternalAppend(ParentChoice, usize, u8, After),
    ExternalForeign(Foreign, After),
    /// Another process writes a message line without its `\n` (parent), then the handle does
    /// what `After` says, then the line is ended as [`Ending`] says.
    ExternalUnterminated(ParentChoice, Ending, After),
    TornThenAppend(u8),
    Batch(u8),
}

const TEXTS: [&str; 5] = [
    "hi",
    "naïve \"quoted\" \\ back\tslash",
    "",
    "emoji 🦀 and \u{2028} separator",
    "x",
];
const PROVIDERS: [&str; 3] = ["anthropic", "openai", "p\"q"];
const MODELS: [&str; 3] = ["claude", "gpt", "m/1"];
const LEVELS: [&str; 4] = ["off", "low", "high", "xhigh"];
const NAMES: [&str; 4] = ["  my session  ", "", "second", "  "];
const LABELS: [&str; 3] = ["checkpoint", "", "bookmark ✓"];
/// Timestamps for lines written by other processes: in the past, far future, invalid.
const TIMESTAMPS: [&str; 4] = [
    "2025-01-01T00:00:00.000Z",
    "2099-12-31T23:59:59.999Z",
    "not a date",
    "2025-01-01T00:00:00.000Z",
];
const GARBAGE: [&str; 7] = [
    "not json at all",
    "[1,2,3]",
    r#"{"type":"message","parentId":null}"#,
    r#"{"type":"session","version":3,"id":"another-header"}"#,
    "   \t ",
    r#"{"no":"type"}"#,
    "\"just a string\"\r",
];

fn parent_choice() -> impl Strategy<Value = ParentChoice> {
    prop_oneof![
        6 => any::<usize>().prop_map(ParentChoice::Entry),
        1 => any::<usize>().prop_map(ParentChoice::Opaque),
        1 => Just(ParentChoice::Null),
        1 => Just(ParentChoice::Absent),
        1 => Just(ParentChoice::Dangling),
    ]
}

fn after() -> impl Strategy<Value = After> {
    prop_oneof![
        Just(After::Nothing),
        Just(After::Refresh),
        Just(After::Reopen)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let first_kept = prop_oneof![
        3 => any::<usize>().prop_map(FirstKept::OnPath),
        1 => any::<usize>().prop_map(FirstKept::Any),
        1 => Just(FirstKept::Missing),
    ];
    let foreign = prop_oneof![
        parent_choice().prop_map(Foreign::UnknownType),
        (parent_choice(), any::<usize>()).prop_map(|(p, t)| Foreign::LeafRow(p, t)),
        any::<usize>().prop_map(Foreign::Garbage),
    ];
    prop_oneof![
        8 => any::<usize>().prop_map(Op::User),
        6 => (any::<usize>(), any::<usize>()).prop_map(|(p, m)| Op::Assistant(p, m)),
        1 => any::<usize>().prop_map(Op::Thinking),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(p, m)| Op::ModelChange(p, m)),
        2 => (first_kept, any::<u32>()).prop_map(|(f, t)| Op::Compaction(f, t)),
        1 => (proptest::option::of(any::<usize>()), any::<usize>())
            .prop_map(|(f, s)| Op::BranchSummary(f, s)),
        1 => any::<bool>().prop_map(Op::Custom),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(d, e)| Op::CustomMessage(d, e)),
        2 => (any::<usize>(), proptest::option::of(any::<usize>()))
            .prop_map(|(t, l)| Op::Label(t, l)),
        1 => any::<usize>().prop_map(Op::SessionInfo),
        3 => any::<usize>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        1 => Just(Op::Refresh),
        2 => any::<bool>().prop_map(Op::Reopen),
        1 => Just(Op::DeleteSidecar),
        1 => Just(Op::Sync),
        4 => (parent_choice(), any::<usize>(), 0u8..3, after())
            .prop_map(|(p, t, a, w)| Op::ExternalAppend(p, t, a, w)),
        2 => (foreign, after()).prop_map(|(f, w)| Op::ExternalForeign(f, w)),
        2 => (
            parent_choice(),
            prop_oneof![
                Just(Ending::Newline),
                any::<bool>().prop_map(Ending::Glued),
                Just(Ending::HandleAppends)
            ],
            after()
        )
            .prop_map(|(p, e, w)| Op::ExternalUnterminated(p, e, w)),
        1 => (1u8..100).prop_map(Op::TornThenAppend),
        1 => (0u8..4).prop_map(Op::Batch),
    ]
}

/// The type of a written line, then its keys in order with their expected values.
type LineExpectation = (&'static str, Vec<(&'static str, Option<Value>)>);

/// One API call that appends, with what the written line must hold.
#[derive(Clone, Debug)]
enum Call {
    Message(String),
    Thinking(String),
    ModelChange(String, String),
    Compaction(String, String, String),
    BranchSummary(Option<String>, String),
    Custom(Option<String>),
    CustomMessage(String, bool, Option<String>),
    Label(String, Option<String>),
    SessionInfo(String),
    /// `append_many`: messages appended as one chain, in one write.
    Batch(Vec<String>),
}

impl Call {
    fn run(&self, session: &mut Session) -> treelog::Result<Vec<String>> {
        if let Call::Batch(messages) = self {
            let entries = messages
                .iter()
                .map(|message| treelog::NewEntry::Message {
                    message: serde_json::value::RawValue::from_string(message.clone()).unwrap(),
                })
                .collect();
            return session.append_many(entries);
        }
        let id =
            match self {
                Call::Message(message) => session.append_message(message),
                Call::Thinking(level) => session.append_thinking_level_change(level),
                Call::ModelChange(provider, model) => session.append_model_change(provider, model),
                Call::Compaction(summary, first_kept, tokens) => {
                    session.append_compaction(summary, Some(first_kept), tokens, None, None, None)
                }
                Call::BranchSummary(from, summary) => session.branch_with_summary(
                    from.as_deref(),
                    summary,
                    Some(r#"{"f":[1]}"#),
                    None,
                    None,
                ),
                Call::Custom(data) => session.append_custom_entry("ext.state", data.as_deref()),
                Call::CustomMessage(content, display, details) => session
                    .append_custom_message_entry("ext.note", content, *display, details.as_deref()),
                Call::Label(target, label) => session.append_label_change(target, label.as_deref()),
                Call::SessionInfo(name) => session.append_session_info(name),
                Call::Batch(_) => unreachable!("handled above"),
            };
        id.map(|id| vec![id])
    }

    /// What each written line must hold (see [`Call::expected`]).
    fn expected_lines(&self) -> Vec<LineExpectation> {
        match self {
            Call::Batch(messages) => messages
                .iter()
                .map(|message| Call::Message(message.clone()).expected())
                .collect(),
            call => vec![call.expected()],
        }
    }

    /// The type, then every key of the written line in order with its expected value
    /// (`None`: any value; the base keys are checked separately).
    fn expected(&self) -> LineExpectation {
        let base = |rest: Vec<(&'static str, Option<Value>)>| {
            let mut keys = vec![("id", None), ("parentId", None), ("timestamp", None)];
            keys.extend(rest);
            keys
        };
        let parse = |json: &str| Some(serde_json::from_str::<Value>(json).unwrap());
        match self {
            Call::Message(message) => ("message", base(vec![("message", parse(message))])),
            Call::Thinking(level) => (
                "thinking_level_change",
                base(vec![("thinkingLevel", Some(json!(level)))]),
            ),
            Call::ModelChange(provider, model) => (
                "model_change",
                base(vec![
                    ("provider", Some(json!(provider))),
                    ("modelId", Some(json!(model))),
                ]),
            ),
            Call::Compaction(summary, first_kept, tokens) => (
                "compaction",
                base(vec![
                    ("summary", Some(json!(summary))),
                    ("firstKeptEntryId", Some(json!(first_kept))),
                    ("tokensBefore", parse(tokens)),
                ]),
            ),
            Call::BranchSummary(_, summary) => (
                "branch_summary",
                base(vec![
                    // The leaf being left, which only the step knows (it fills this in).
                    ("fromId", None),
                    ("summary", Some(json!(summary))),
                    ("details", Some(json!({"f": [1]}))),
                ]),
            ),
            Call::Custom(data) => {
                let mut keys = vec![("customType", Some(json!("ext.state")))];
                if let Some(data) = data {
                    keys.push(("data", parse(data)));
                }
                keys.extend([("id", None), ("parentId", None), ("timestamp", None)]);
                ("custom", keys)
            }
            Call::CustomMessage(content, display, details) => {
                let mut keys = vec![
                    ("customType", Some(json!("ext.note"))),
                    ("content", parse(content)),
                    ("display", Some(json!(display))),
                ];
                if let Some(details) = details {
                    keys.push(("details", parse(details)));
                }
                keys.extend([("id", None), ("parentId", None), ("timestamp", None)]);
                ("custom_message", keys)
            }
            Call::Label(target, label) => {
                let mut keys = vec![("targetId", Some(json!(target)))];
                if let Some(label) = label.as_deref().filter(|label| !label.is_empty()) {
                    keys.push(("label", Some(json!(label))));
                }
                ("label", base(keys))
            }
            Call::Batch(_) => unreachable!("a batch has one expectation per line"),
            Call::SessionInfo(name) => (
                "session_info",
                base(vec![("name", Some(json!(name.trim())))]),
            ),
        }
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    path: PathBuf,
    options: SessionOptions,
    session: Option<Session>,
    handle: Handle,
    next_foreign_id: u32,
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

/// Whether `bytes` hold a line that is JSON (complete or not): the line that decides the
/// header (log.md §2).
fn has_first_line(bytes: &[u8]) -> bool {
    bytes
        .split(|byte| *byte == b'\n')
        .any(|line| serde_json::from_str::<Value>(&String::from_utf8_lossy(line)).is_ok())
}

fn is_entry_id(id: &str) -> bool {
    (id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))) || id.len() == 36
}

impl Harness {
    fn new(on_conflict: OnConflict) -> Harness {
        let dir = treelog_testkit::scratch_dir();
        let options = SessionOptions {
            on_conflict,
            ..SessionOptions::default()
        };
        let session = Session::create(dir.path(), "/work/project", options.clone()).unwrap();
        Harness {
            path: session.log_path().to_path_buf(),
            _dir: dir,
            options,
            session: Some(session),
            handle: Handle::created(),
            next_foreign_id: 0,
        }
    }

    fn session(&mut self) -> &mut Session {
        self.session.as_mut().unwrap()
    }

    fn now(&self) -> Model {
        Model::parse(&read(&self.path))
    }

    fn view(&self) -> Model {
        self.handle.view(&read(&self.path))
    }

    fn foreign_id(&mut self, prefix: char) -> String {
        self.next_foreign_id += 1;
        if self.next_foreign_id.is_multiple_of(5) {
            // Full uuids, as OpenClaw's gateway writes them.
            format!(
                "{prefix}0000000-0000-4000-8000-{:012x}",
                self.next_foreign_id
            )
        } else {
            format!("{prefix}{:07x}", self.next_foreign_id)
        }
    }

    fn reopen(&mut self, use_index: bool) {
        self.session = None;
        let options = SessionOptions {
            use_index,
            ..self.options.clone()
        };
        self.session = Some(Session::open(&self.path, options).unwrap());
        self.handle = Handle::opened(&read(&self.path));
    }

    fn refresh(&mut self) {
        self.session().refresh().unwrap();
        self.handle.refresh(&read(&self.path));
    }

    fn after(&mut self, after: After) {
        match after {
            After::Nothing => {}
            After::Refresh => self.refresh(),
            After::Reopen => self.reopen(true),
        }
    }

    fn parent_value(&self, model: &Model, choice: &ParentChoice) -> Option<Value> {
        let opaque_ids: Vec<&String> = {
            let mut ids: Vec<&String> = model
                .ids
                .iter()
                .filter(|(_, target)| matches!(target, IdTarget::Opaque(_)))
                .map(|(id, _)| id)
                .collect();
            ids.sort();
            ids
        };
        match choice {
            ParentChoice::Entry(pick) if !model.entries.is_empty() => {
                Some(json!(model.entries[pick % model.entries.len()].id))
            }
            ParentChoice::Opaque(pick) if !opaque_ids.is_empty() => {
                Some(json!(opaque_ids[pick % opaque_ids.len()]))
            }
            ParentChoice::Absent => None,
            ParentChoice::Dangling => Some(json!("dangling")),
            _ => Some(Value::Null),
        }
    }

    /// A message line in pi's format as another process writes it (without `\n`): parent,
    /// timestamp, kind (0 user, 1 assistant, 2 an OpenClaw `appendMode:"side"` assistant row).
    fn external_message(
        &mut self,
        now: &Model,
        parent: &ParentChoice,
        timestamp: usize,
        kind: u8,
    ) -> String {
        let id = self.foreign_id('x');
        let mut line = Map::new();
        line.insert("type".into(), json!("message"));
        line.insert("id".into(), json!(id));
        if let Some(parent) = self.parent_value(now, parent) {
            line.insert("parentId".into(), parent);
        }
        line.insert(
            "timestamp".into(),
            json!(TIMESTAMPS[timestamp % TIMESTAMPS.len()]),
        );
        if kind == 2 {
            line.insert("appendMode".into(), json!("side"));
        }
        let message = if kind > 0 {
            json!({"role": "assistant", "content": [], "provider": "ext", "model": "ext-model", "timestamp": 3})
        } else {
            json!({"role": "user", "content": format!("external {id}"), "timestamp": 2})
        };
        line.insert("message".into(), message);
        Value::Object(line).to_string()
    }

    /// Runs one appending call and checks the outcome and the written bytes against the model.
    fn api(&mut self, call: Call) {
        let before = read(&self.path);
        let view = self.view();
        let now = Model::parse(&before);
        let canonical = |id: &str| {
            matches!(view.ids.get(id), Some(IdTarget::Entry(_))).then(|| view.resolve_id(id))
        };
        if let Call::Label(target, _) = &call
            && canonical(target).is_none()
        {
            let result = call.run(self.session());
            assert!(
                matches!(result, Err(Error::EntryNotFound { .. })),
                "{result:?}"
            );
            assert_eq!(read(&self.path), before);
            return;
        }
        // pi 1.6's `fromId`: the handle's leaf before the summary moves it.
        let left_leaf = view.id(self.handle.leaf);
        if let Call::BranchSummary(from, _) = &call {
            match from {
                Some(from) => match canonical(from) {
                    Some(index) => self.handle.leaf = index,
                    None => {
                        let result = call.run(self.session());
                        assert!(
                            matches!(result, Err(Error::EntryNotFound { .. })),
                            "{result:?}"
                        );
                        assert_eq!(read(&self.path), before);
                        return;
                    }
                },
                None => self.handle.leaf = None,
            }
        }
        // The conflict rule and following the log's leaf.
        match self.handle.before_append(&before, self.options.on_conflict) {
            Append::Conflict { .. } => {
                let result = call.run(self.session());
                assert!(matches!(result, Err(Error::Conflict { .. })), "{result:?}");
                assert_eq!(read(&self.path), before, "a conflict writes nothing");
                return;
            }
            Append::Refused => {
                // No header pi reads first: pi would not read the entry, so nothing is written.
                let result = call.run(self.session());
                assert!(
                    matches!(result, Err(Error::AppendRefused { .. })),
                    "{result:?}"
                );
                assert_eq!(read(&self.path), before, "a refused append writes nothing");
                return;
            }
            Append::Writes => {}
        }
        let ids = call.run(self.session()).unwrap();
        assert!(ids.iter().all(|id| is_entry_id(id)), "{ids:?}");
        let after = read(&self.path);
        assert!(
            after.starts_with(&before),
            "appends never change earlier bytes"
        );
        let mut written = &after[before.len()..];
        if now.complete_len < before.len() {
            assert_eq!(written.first(), Some(&b'\n'), "a torn tail is ended first");
            written = &written[1..];
        }
        let text = std::str::from_utf8(written).unwrap();
        let mut lines: Vec<&str> = text.strip_suffix('\n').unwrap().split('\n').collect();
        // A log without a line that is JSON gets the handle's header, after the `\n` that
        // ends a torn line (log.md §2: the header is never lost).
        if !now.decided {
            let header: Map<String, Value> = serde_json::from_str(lines.remove(0)).unwrap();
            let keys: Vec<&str> = header.keys().map(String::as_str).collect();
            assert_eq!(keys, ["type", "version", "id", "timestamp", "cwd"]);
            assert_eq!(header["type"], "session");
            assert_eq!(header["version"], 3);
            assert_eq!(header["id"], self.session.as_ref().unwrap().session_id());
        }
        let mut expected_lines = call.expected_lines();
        if let Call::BranchSummary(..) = &call {
            for (key, value) in &mut expected_lines[0].1 {
                if *key == "fromId" {
                    *value = Some(json!(left_leaf.as_deref().unwrap_or("root")));
                }
            }
        }
        assert_eq!(
            lines.len(),
            expected_lines.len(),
            "one line per entry: {text:?}"
        );
        assert_eq!(ids.len(), expected_lines.len());
        let mut parent = now.id(self.handle.leaf).map_or(Value::Null, Value::String);
        for ((line, (kind, expected)), id) in lines.iter().zip(expected_lines).zip(&ids) {
            let line: Map<String, Value> = serde_json::from_str(line).unwrap();
            let mut keys = vec!["type"];
            keys.extend(expected.iter().map(|(key, _)| *key));
            assert_eq!(line.keys().map(String::as_str).collect::<Vec<_>>(), keys);
            assert_eq!(line["type"], kind);
            for (key, value) in expected {
                if let Some(value) = value {
                    assert_eq!(line[key], value, "{key}");
                }
            }
            assert_eq!(line["id"], id.as_str());
            assert_eq!(
                line["parentId"], parent,
                "each entry is the child of the one before"
            );
            assert!(iso_ms(line["timestamp"].as_str().unwrap()).is_some());
            parent = Value::String(id.clone());
        }
        let after_model = Model::parse(&after);
        let last = after_model.entries.len() - 1;
        assert_eq!(&after_model.entries[last].id, ids.last().unwrap());
        self.handle.appended(&after);
    }

    fn apply(&mut self, op: &Op) {
        let now = self.now();
        let view = self.view();
        let pick = |pick: usize, from: &[usize]| from.get(pick % from.len().max(1)).copied();
        let all: Vec<usize> = (0..now.entries.len()).collect();
        match op {
            Op::User(text) => {
                let message = if text % 7 == 3 {
                    // Line breaks between tokens are JSON whitespace.
                    "{\n  \"role\": \"user\",\n  \"content\": \"multi\",\n  \"timestamp\": 5\n}"
                        .to_string()
                } else {
                    json!({"role": "user", "content": TEXTS[text % TEXTS.len()], "timestamp": 1_700_000_000_000u64 + *text as u64 % 1000}).to_string()
                };
                self.api(Call::Message(message));
            }
            Op::Assistant(provider, model) => {
                let mut message = json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "x", "provider": PROVIDERS[provider % 3], "model": MODELS[model % 3], "stopReason": "stop", "timestamp": 1_700_000_000_001u64});
                if model % 5 == 4 {
                    message.as_object_mut().unwrap().remove("model");
                }
                self.api(Call::Message(message.to_string()));
            }
            Op::Thinking(level) => self.api(Call::Thinking(LEVELS[level % 4].into())),
            Op::ModelChange(provider, model) => self.api(Call::ModelChange(
                PROVIDERS[provider % 3].into(),
                MODELS[model % 3].into(),
            )),
            Op::Compaction(first_kept, tokens) => {
                let path = view.path(self.handle.leaf);
                let first = match first_kept {
                    FirstKept::OnPath(p) => pick(*p, &path),
                    FirstKept::Any(p) => pick(*p, &all),
                    FirstKept::Missing => None,
                };
                let first = now.id(first).unwrap_or_else(|| "nothere0".into());
                self.api(Call::Compaction(
                    format!("summary {tokens}"),
                    first,
                    tokens.to_string(),
                ));
            }
            Op::BranchSummary(from, summary) => {
                let from = from.and_then(|p| pick(p, &all));
                let summary = ["", "went elsewhere"][summary % 2];
                self.api(Call::BranchSummary(now.id(from), summary.into()));
            }
            Op::Custom(with_data) => self.api(Call::Custom(
                with_data.then(|| r#"{"k":[1,{"v":null}]}"#.into()),
            )),
            Op::CustomMessage(display, with_details) => self.api(Call::CustomMessage(
                r#"[{"type":"text","text":"note"}]"#.into(),
                *display,
                with_details.then(|| r#"{"d":1.5}"#.into()),
            )),
            Op::Label(target, label) => {
                let Some(target) = pick(*target, &all) else {
                    return;
                };
                self.api(Call::Label(
                    now.entries[target].id.clone(),
                    label.map(|l| LABELS[l % LABELS.len()].to_string()),
                ));
            }
            Op::SessionInfo(name) => self.api(Call::SessionInfo(NAMES[name % NAMES.len()].into())),
            Op::Branch(target) => {
                let Some(target) = pick(*target, &all) else {
                    return;
                };
                let id = now.entries[target].id.clone();
                let result = self.session().branch(&id);
                if target < view.entries.len() {
                    result.unwrap();
                    self.handle.leaf = Some(target);
                } else {
                    assert!(
                        matches!(result, Err(Error::EntryNotFound { .. })),
                        "{result:?}"
                    );
                }
            }
            Op::ResetLeaf => {
                self.session().reset_leaf();
                self.handle.leaf = None;
            }
            Op::Refresh => self.refresh(),
            Op::Reopen(use_index) => self.reopen(*use_index),
            Op::DeleteSidecar => match std::fs::remove_file(sidecar_path(&self.path)) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => panic!("{error}"),
            },
            Op::Sync => self.session().sync().unwrap(),
            Op::ExternalAppend(parent, timestamp, kind, after) => {
                let line = self.external_message(&now, parent, *timestamp, *kind);
                append_raw(&self.path, format!("{line}\n").as_bytes());
                self.after(*after);
            }
            Op::ExternalUnterminated(parent, ending, after) => {
                // A line without its `\n` (a write cut just before it, or still under way) is
                // read as a line all the same when it is whole JSON (log.md §1).
                let line = self.external_message(&now, parent, 0, 0);
                append_raw(&self.path, line.as_bytes());
                self.after(*after);
                match ending {
                    Ending::Newline => append_raw(&self.path, b"\n"),
                    Ending::Glued(then_append) => {
                        let now = self.now();
                        let glued = self.external_message(&now, &ParentChoice::Entry(0), 0, 1);
                        append_raw(&self.path, format!("{glued}\n").as_bytes());
                        self.check("after a line glued onto the last one", Fresh::None);
                        if *then_append {
                            self.api(Call::Message(
                                json!({"role": "user", "content": "after glued", "timestamp": 7})
                                    .to_string(),
                            ));
                        } else {
                            self.refresh();
                        }
                    }
                    Ending::HandleAppends => {
                        self.api(Call::Message(
                            json!({"role": "user", "content": "after unterminated", "timestamp": 6})
                                .to_string(),
                        ));
                        // A conflict wrote nothing: the other process ends its line.
                        if !read(&self.path).ends_with(b"\n") {
                            append_raw(&self.path, b"\n");
                        }
                    }
                }
            }
            Op::ExternalForeign(foreign, after) => {
                let line = match foreign {
                    Foreign::UnknownType(parent) => {
                        let mut line = Map::new();
                        line.insert("type".into(), json!("future_kind"));
                        line.insert("id".into(), json!(self.foreign_id('o')));
                        if let Some(parent) = self.parent_value(&now, parent) {
                            line.insert("parentId".into(), parent);
                        }
                        line.insert("timestamp".into(), json!(TIMESTAMPS[0]));
                        Value::Object(line).to_string()
                    }
                    Foreign::LeafRow(parent, target) => {
                        let mut known: Vec<String> = now.ids.keys().cloned().collect();
                        known.sort();
                        known.push("unknown-target".into());
                        let target = known[target % known.len()].clone();
                        let mut line = Map::new();
                        line.insert("type".into(), json!("leaf"));
                        line.insert("id".into(), json!(self.foreign_id('o')));
                        if let Some(parent) = self.parent_value(&now, parent) {
                            line.insert("parentId".into(), parent);
                        }
                        line.insert("timestamp".into(), json!(TIMESTAMPS[0]));
                        line.insert("targetId".into(), json!(target));
                        Value::Object(line).to_string()
                    }
                    Foreign::Garbage(which) => GARBAGE[which % GARBAGE.len()].to_string(),
                };
                append_raw(&self.path, format!("{line}\n").as_bytes());
                self.after(*after);
            }
            Op::Batch(0) => {
                // Nothing to append: nothing read, nothing written, nothing moves.
                let before = read(&self.path);
                assert_eq!(
                    Call::Batch(Vec::new()).run(self.session()).unwrap(),
                    Vec::<String>::new()
                );
                assert_eq!(read(&self.path), before);
            }
            Op::Batch(count) => {
                let messages = (0..*count)
                    .map(|n| {
                        json!({"role": "user", "content": format!("batch {n}"), "timestamp": n})
                            .to_string()
                    })
                    .collect();
                self.api(Call::Batch(messages));
            }
            Op::TornThenAppend(percent) => {
                let id = self.foreign_id('t');
                let line = json!({"type": "message", "id": id, "parentId": null, "timestamp": TIMESTAMPS[0], "message": {"role": "user", "content": "torn"}}).to_string();
                let cut = (line.len() * usize::from(*percent) / 100).clamp(1, line.len() - 1);
                append_raw(&self.path, &line.as_bytes()[..cut]);
                self.check("after a torn write", Fresh::Indexed);
                self.api(Call::Message(
                    json!({"role": "user", "content": "after torn", "timestamp": 4}).to_string(),
                ));
            }
        }
    }

    /// The live handle agrees with the model of what it has seen; a fresh open (indexed, and
    /// sometimes not) agrees with the model of the whole log and changes no byte of it.
    fn check(&mut self, step: &str, fresh: Fresh) {
        let bytes = read(&self.path);
        let view = self.handle.view(&bytes);
        let leaf = self.handle.leaf;
        view.check_session(&format!("{step}: live"), self.session(), leaf);
        let now = Model::parse(&bytes);
        for (use_index, verify) in [
            (true, Verify::Quick),
            (false, Verify::Quick),
            (true, Verify::Full),
        ] {
            let wanted = match fresh {
                Fresh::None => false,
                Fresh::Indexed => use_index && verify == Verify::Quick,
                Fresh::Both => true,
            };
            if !wanted {
                continue;
            }
            let options = SessionOptions {
                use_index,
                verify,
                ..SessionOptions::default()
            };
            let mut fresh = Session::open(&self.path, options).unwrap();
            let what = format!("{step}: fresh (index {use_index}, {verify:?})");
            now.check_session(&what, &mut fresh, now.log_leaf);
            let view_has_first_line = has_first_line(&bytes[..self.handle.seen_len]);
            let log_has_first_line = has_first_line(&bytes[..now.read_len]);
            if !self.handle.header_pending && (view_has_first_line || !log_has_first_line) {
                // A handle that has read a non-empty log reports the log's header, made up
                // alike while all its lines are blank; a first non-blank line the handle has
                // not read yet decides a header it cannot know (log.md §2).
                let live = self.session.as_ref().unwrap();
                assert_eq!(live.session_id(), fresh.session_id(), "{what}: live header");
                assert_eq!(
                    live.header().recovered,
                    fresh.header().recovered,
                    "{what}: live header recovered"
                );
            }
            assert_eq!(
                fresh.header().recovered,
                now.recovered,
                "{what}: recovered header"
            );
            if let Some(id) = &now.header_id {
                assert_eq!(fresh.session_id(), id, "{what}: session id");
            }
            let stats = fresh.stats().unwrap();
            assert_eq!(
                stats.torn_tail_bytes as usize,
                now.file_len - now.read_len,
                "{what}: torn tail"
            );
            drop(fresh);
        }
        assert_eq!(read(&self.path), bytes, "{step}: opening changed the log");
    }
}

/// Which fresh sessions a check opens besides looking at the live handle.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fresh {
    None,
    Indexed,
    Both,
}

/// Runs `ops`, checking after each; `thorough` opens fresh sessions of both kinds every time.
fn run(ops: &[Op], on_conflict: OnConflict, thorough: bool) {
    let mut harness = Harness::new(on_conflict);
    harness.check("start", Fresh::Both);
    for (step, op) in ops.iter().enumerate() {
        harness.apply(op);
        // Fresh opens dominate the run time: the live handle is checked after every step, a
        // fresh indexed open after every other one, a replay without index every fourth.
        let fresh = if thorough || step + 1 == ops.len() || step % 4 == 3 {
            Fresh::Both
        } else if step % 2 == 1 {
            Fresh::Indexed
        } else {
            Fresh::None
        };
        harness.check(&format!("step {step} ({op:?})"), fresh);
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(Config {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    })]

    /// Random operation sequences keep every answer equal to the reference model's, for the
    /// live handle and for fresh opens, with either conflict policy.
    #[test]
    fn session_matches_model(ops in proptest::collection::vec(op(), 1..32), follow in any::<bool>()) {
        run(&ops, if follow { OnConflict::FollowTip } else { OnConflict::Fail }, false);
    }
}

// ---------------------------------------------------------------------------------------------
// Minimal sequences that once failed, one per bug.
// ---------------------------------------------------------------------------------------------

/// Bug: `sync` after another handle had flushed the shared sidecar made the live handle read
/// the newer committed tables under its own overlay, so `tree()` listed an entry twice.
#[test]
fn sync_after_another_handle_flushed_lists_each_entry_once() {
    run(
        &[
            Op::Assistant(0, 0),
            Op::Reopen(true),
            Op::CustomMessage(true, true),
            Op::Sync,
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: a handle opened before its log existed never saw the lines another process wrote to
/// the new file (`refresh` read nothing) until its own first append opened it.
#[test]
fn refresh_sees_a_log_another_process_created() {
    run(
        &[Op::ExternalAppend(ParentChoice::Null, 0, 0, After::Refresh)],
        OnConflict::Fail,
        true,
    );
}

/// Bug: after an append failed with `Error::Conflict`, the handle had read the log, so
/// `refresh` (which the error message recommends) did not follow the log's leaf, and a plain
/// retry silently started the sibling branch the conflict rule exists to prevent.
#[test]
fn conflict_stays_until_resolved() {
    run(
        &[
            Op::User(0),
            Op::ExternalAppend(ParentChoice::Entry(0), 0, 0, After::Nothing),
            Op::User(1),
            Op::User(2),
            Op::Refresh,
            Op::User(3),
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: an append refused (the log's first line is an entry, not a header) after an earlier
/// conflict kept that conflict's base, so a later append reported the old conflict again
/// instead of its own refusal (found by `session_matches_model`).
#[test]
fn refusal_after_a_conflict_leaves_no_base() {
    run(
        &[
            Op::ExternalForeign(Foreign::UnknownType(ParentChoice::Entry(0)), After::Nothing),
            Op::TornThenAppend(1),
            Op::Branch(1819359971),
            Op::Batch(2),
            Op::BranchSummary(None, 2897116736525546097),
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: a handle opened before its log existed kept the header it had made up after another
/// process created the log with its own header (`session_id()` named no session on disk).
#[test]
fn handle_adopts_the_header_another_process_wrote() {
    run(
        &[
            Op::ExternalForeign(Foreign::Garbage(3), After::Refresh),
            Op::User(0),
        ],
        OnConflict::Fail,
        true,
    );
}

/// Bug: another process wrote a blank line into the empty log, this handle read it (and made
/// a header up, the log having none yet), then the other process wrote a header: after a
/// refresh the handle still reported its made-up header, while a fresh open reported the
/// log's.
#[test]
fn header_after_an_indexed_blank_line_is_the_header() {
    run(
        &[
            Op::ExternalForeign(Foreign::Garbage(4), After::Refresh),
            Op::ExternalForeign(Foreign::Garbage(3), After::Nothing),
            Op::Refresh,
        ],
        OnConflict::Fail,
        true,
    );
}

/// An append to a log of blank lines writes the header first, whether or not the handle had
/// read the blank lines (before, only an empty log got one, and such a log stayed headerless,
/// which pi rewrites).
#[test]
fn append_to_a_blank_log_writes_the_header() {
    for after in [After::Refresh, After::Nothing] {
        run(
            &[Op::ExternalForeign(Foreign::Garbage(4), after), Op::User(0)],
            OnConflict::Fail,
            true,
        );
    }
}

/// A line another process wrote without its `\n` is read as a line; once that process glues
/// its next line onto it, a handle that had read it (and followed it as its leaf) answers as
/// a fresh replay does, after a refresh or an append, which goes to the log's leaf.
#[test]
fn line_glued_onto_an_unterminated_one() {
    for after in [After::Refresh, After::Reopen, After::Nothing] {
        for then_append in [false, true] {
            run(
                &[
                    Op::User(0),
                    Op::ExternalUnterminated(
                        ParentChoice::Entry(0),
                        Ending::Glued(then_append),
                        after,
                    ),
                    Op::User(1),
                ],
                OnConflict::Fail,
                true,
            );
        }
    }
}

/// An append after a line another process wrote without its `\n` ends that line first, and
/// another process that ends it itself is caught up like any writer.
#[test]
fn unterminated_line_ended_by_either_writer() {
    for ending in [Ending::HandleAppends, Ending::Newline] {
        for after in [After::Refresh, After::Reopen, After::Nothing] {
            for on_conflict in [OnConflict::Fail, OnConflict::FollowTip] {
                run(
                    &[
                        Op::User(0),
                        Op::ExternalUnterminated(ParentChoice::Entry(0), ending, after),
                        Op::User(1),
                    ],
                    on_conflict,
                    true,
                );
            }
        }
    }
}
