//! Encoding of new lines in exactly the key order pi and OpenClaw write (`JSON.stringify` of
//! their object literals), so that lines treelog appends are indistinguishable from theirs.
//! Payloads given as raw JSON are copied byte for byte, never re-serialised.
//!
//! The encoder notes where each indexed field lies in the line it wrote, so that a handle
//! indexes its own appends from those spans (`line::classify_written`) instead of scanning the
//! line again; the answer is the one `line::classify` gives for the same bytes.

use serde_json::value::RawValue;

pub use super::json_string::push_json_string;
use super::line::{EntryKind, FIELD_NAMES, FieldSpans};

/// A new entry's content, before an id, parent and timestamp are assigned.
///
/// Raw payloads are trusted to be one valid JSON value each, as a `RawValue` that serde_json
/// built is (`RawValue::from_string`, `serde_json::from_str`, `to_raw_value`, or
/// [`single_line_raw`], which the `Session::append_*` helpers use): they are copied into the
/// line unchecked, and the appending handle indexes the line from where it wrote each field,
/// without reading it again. A `RawValue` forged through serde's private representation by
/// another `Deserializer` is outside that contract: its line would read differently once the
/// log is re-read, and `treelog verify` reports the difference.
#[derive(Clone, Debug)]
pub enum NewEntry {
    Message {
        message: Box<RawValue>,
    },
    ThinkingLevelChange {
        thinking_level: String,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    Compaction {
        summary: String,
        /// `None`: the compaction's own id, as pi 1.6 writes `firstKeptEntryId ?? id` (nothing
        /// before the compaction is kept).
        first_kept_entry_id: Option<String>,
        tokens_before: Box<RawValue>,
        details: Option<Box<RawValue>>,
        /// pi 1.6: the usage of the call that wrote the summary.
        usage: Option<Box<RawValue>>,
        from_hook: Option<bool>,
        /// pi 1.6: the system message in force (`format::system_message`), which leads the
        /// context after the compaction. Its `timestamp` is written as the compaction's own.
        system_message: Option<Box<RawValue>>,
    },
    BranchSummary {
        from_id: String,
        summary: String,
        details: Option<Box<RawValue>>,
        /// pi 1.6: the usage of the call that wrote the summary.
        usage: Option<Box<RawValue>>,
        from_hook: Option<bool>,
    },
    /// pi 1.6: model-attributed usage outside the context.
    Usage {
        kind: String,
        provider: String,
        model: String,
        usage: Box<RawValue>,
        /// Written only when not empty (pi writes `...(note ? { note } : {})`).
        note: Option<String>,
    },
    /// pi 1.6: a branch-local edit of an earlier entry's context content; `replacement` is
    /// `{"content":...}` or `null` (removes the entry from the context).
    ContextEdit {
        target_id: String,
        replacement: Box<RawValue>,
    },
    Custom {
        custom_type: String,
        data: Option<Box<RawValue>>,
    },
    CustomMessage {
        custom_type: String,
        content: Box<RawValue>,
        display: bool,
        details: Option<Box<RawValue>>,
    },
    Label {
        target_id: String,
        label: Option<String>,
    },
    SessionInfo {
        name: String,
    },
}

impl NewEntry {
    pub fn kind(&self) -> EntryKind {
        match self {
            NewEntry::Message { .. } => EntryKind::Message,
            NewEntry::ThinkingLevelChange { .. } => EntryKind::ThinkingLevelChange,
            NewEntry::ModelChange { .. } => EntryKind::ModelChange,
            NewEntry::Compaction { .. } => EntryKind::Compaction,
            NewEntry::BranchSummary { .. } => EntryKind::BranchSummary,
            NewEntry::Custom { .. } => EntryKind::Custom,
            NewEntry::CustomMessage { .. } => EntryKind::CustomMessage,
            NewEntry::Label { .. } => EntryKind::Label,
            NewEntry::SessionInfo { .. } => EntryKind::SessionInfo,
            NewEntry::Usage { .. } => EntryKind::Usage,
            NewEntry::ContextEdit { .. } => EntryKind::ContextEdit,
        }
    }

    /// Bytes of the caller's payload: an estimate of the encoded line's length (escapes and
    /// keys come on top).
    fn payload_len_bytes(&self) -> usize {
        let raw_len = |raw: &Option<Box<RawValue>>| raw.as_ref().map_or(0, |raw| raw.get().len());
        match self {
            NewEntry::Message { message } => message.get().len(),
            NewEntry::ThinkingLevelChange { thinking_level } => thinking_level.len(),
            NewEntry::ModelChange { provider, model_id } => provider.len() + model_id.len(),
            NewEntry::Compaction {
                summary,
                details,
                usage,
                system_message,
                ..
            } => summary.len() + raw_len(details) + raw_len(usage) + raw_len(system_message),
            NewEntry::BranchSummary {
                summary,
                details,
                usage,
                ..
            } => summary.len() + raw_len(details) + raw_len(usage),
            NewEntry::Usage { usage, .. } => usage.get().len() + 64,
            NewEntry::ContextEdit { replacement, .. } => replacement.get().len(),
            NewEntry::Custom { data, .. } => raw_len(data),
            NewEntry::CustomMessage {
                content, details, ..
            } => content.get().len() + raw_len(details),
            NewEntry::Label { label, .. } => label.as_ref().map_or(0, String::len),
            NewEntry::SessionInfo { name } => name.len(),
        }
    }

    /// The line for this entry, without the trailing `\n`.
    pub fn encode(&self, id: &str, parent_id: Option<&str>, timestamp: &str) -> String {
        let mut line = String::new();
        self.encode_into(&mut line, id, parent_id, timestamp);
        line
    }

    /// Appends [`NewEntry::encode`]'s line to `out`, and returns where the values of the keys
    /// `line::classify` reads lie in the line (from its first byte), for
    /// [`super::line::classify_written`].
    pub(crate) fn encode_into(
        &self,
        out: &mut String,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
    ) -> FieldSpans {
        // One allocation for the common case: the payload plus room for the keys and ids.
        out.reserve(self.payload_len_bytes() + 192);
        let mut out = JsonObject::start(out);
        out.string("type", self.kind().as_str());
        match self {
            // custom and custom_message put their own fields before the common ones.
            NewEntry::Custom { custom_type, data } => {
                out.string("customType", custom_type);
                out.optional_raw("data", data.as_deref());
                out.base(id, parent_id, timestamp);
            }
            NewEntry::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => {
                out.string("customType", custom_type);
                out.raw("content", content.get());
                out.raw("display", if *display { "true" } else { "false" });
                out.optional_raw("details", details.as_deref());
                out.base(id, parent_id, timestamp);
            }
            NewEntry::Message { message } => {
                out.base(id, parent_id, timestamp);
                out.raw("message", message.get());
            }
            NewEntry::ThinkingLevelChange { thinking_level } => {
                out.base(id, parent_id, timestamp);
                out.string("thinkingLevel", thinking_level);
            }
            NewEntry::ModelChange { provider, model_id } => {
                out.base(id, parent_id, timestamp);
                out.string("provider", provider);
                out.string("modelId", model_id);
            }
            NewEntry::Compaction {
                summary,
                first_kept_entry_id,
                tokens_before,
                details,
                usage,
                from_hook,
                system_message,
            } => {
                out.base(id, parent_id, timestamp);
                out.string("summary", summary);
                out.string(
                    "firstKeptEntryId",
                    first_kept_entry_id.as_deref().unwrap_or(id),
                );
                out.raw("tokensBefore", tokens_before.get());
                out.optional_raw("details", details.as_deref());
                out.optional_raw("usage", usage.as_deref());
                out.optional_bool("fromHook", *from_hook);
                if let Some(system_message) = system_message {
                    // pi writes `{ ...systemMessage, timestamp: new Date(timestamp).getTime() }`:
                    // the compaction's own time, the key kept where it stands or added last.
                    let millis = super::time::parse_iso_ms(timestamp)
                        .map_or_else(|| "null".to_string(), |millis| millis.to_string());
                    let stamped =
                        super::line::with_field(system_message.get(), "timestamp", &millis);
                    out.raw(
                        "systemMessage",
                        stamped.as_deref().unwrap_or(system_message.get()),
                    );
                }
            }
            NewEntry::BranchSummary {
                from_id,
                summary,
                details,
                usage,
                from_hook,
            } => {
                out.base(id, parent_id, timestamp);
                out.string("fromId", from_id);
                out.string("summary", summary);
                out.optional_raw("details", details.as_deref());
                out.optional_raw("usage", usage.as_deref());
                out.optional_bool("fromHook", *from_hook);
            }
            NewEntry::Usage {
                kind,
                provider,
                model,
                usage,
                note,
            } => {
                out.base(id, parent_id, timestamp);
                out.string("kind", kind);
                out.string("provider", provider);
                out.string("model", model);
                out.raw("usage", usage.get());
                if let Some(note) = note.as_deref().filter(|note| !note.is_empty()) {
                    out.string("note", note);
                }
            }
            NewEntry::ContextEdit {
                target_id,
                replacement,
            } => {
                out.base(id, parent_id, timestamp);
                out.string("targetId", target_id);
                out.raw("replacement", replacement.get());
            }
            NewEntry::Label { target_id, label } => {
                out.base(id, parent_id, timestamp);
                out.string("targetId", target_id);
                if let Some(label) = label {
                    out.string("label", label);
                }
            }
            NewEntry::SessionInfo { name } => {
                out.base(id, parent_id, timestamp);
                out.string("name", name);
            }
        }
        out.finish()
    }
}

/// The header line (`type, version, id, timestamp, cwd[, parentSession]`), without `\n`.
pub fn encode_header(
    session_id: &str,
    timestamp: &str,
    cwd: &str,
    parent_session: Option<&str>,
) -> String {
    let mut line = String::with_capacity(256);
    let mut out = JsonObject::start(&mut line);
    out.string("type", "session");
    out.raw("version", &crate::format::CURRENT_VERSION.to_string());
    out.string("id", session_id);
    out.string("timestamp", timestamp);
    out.string("cwd", cwd);
    if let Some(parent) = parent_session {
        out.string("parentSession", parent);
    }
    out.finish();
    line
}

/// Makes caller-supplied raw JSON safe to embed in one line: checks that it is valid JSON and
/// turns line breaks (which valid JSON can only hold as whitespace between tokens) into
/// spaces. The JSON value is unchanged.
pub fn single_line_raw(json: &str) -> Result<Box<RawValue>, serde_json::Error> {
    let raw: Box<RawValue> = serde_json::from_str(json)?;
    if memchr::memchr2(b'\n', b'\r', raw.get().as_bytes()).is_none() {
        return Ok(raw);
    }
    let flattened = raw.get().replace(['\n', '\r'], " ");
    RawValue::from_string(flattened)
}

/// Appends `"key":value` pairs in call order.
struct JsonObject<'out> {
    /// The object is appended to this text, from `start`.
    text: &'out mut String,
    start: usize,
    /// Where the values of the keys in `FIELD_NAMES` were written, from `start`. Each key is
    /// written at most once: every `NewEntry` variant writes a fixed set of distinct keys.
    spans: FieldSpans,
}

impl<'out> JsonObject<'out> {
    fn start(text: &'out mut String) -> Self {
        let start = text.len();
        text.push('{');
        JsonObject {
            text,
            start,
            spans: FieldSpans::default(),
        }
    }

    fn key(&mut self, key: &str) {
        if self.text.len() > self.start + 1 {
            self.text.push(',');
        }
        self.text.push('"');
        self.text.push_str(key);
        self.text.push_str("\":");
    }

    /// Notes where the value of `key`, written from `start` to the end of the text, lies.
    fn note_span(&mut self, key: &str, start: usize) {
        if let Some(field) = FIELD_NAMES.iter().position(|name| *name == key) {
            debug_assert!(self.spans[field].is_none(), "{key} written twice");
            // Spans are read only for lines up to LINE_LEN_MAX (256 MiB; longer ones are kept
            // as opaque records), so these conversions never saturate where it matters.
            let offset = u32::try_from(start - self.start).unwrap_or(u32::MAX);
            let len = u32::try_from(self.text.len() - start).unwrap_or(0);
            self.spans[field] = Some((offset, len));
        }
    }

    fn raw(&mut self, key: &str, raw_json: &str) {
        self.key(key);
        let start = self.text.len();
        // A `RawValue` built by the caller (`NewEntry` is public) may hold line breaks between
        // tokens; written as they are they would split the entry into broken lines. In valid
        // JSON they can only be whitespace, so a space keeps the value (see `single_line_raw`).
        if memchr::memchr2(b'\n', b'\r', raw_json.as_bytes()).is_some() {
            self.text.push_str(&raw_json.replace(['\n', '\r'], " "));
        } else {
            self.text.push_str(raw_json);
        }
        self.note_span(key, start);
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        let start = self.text.len();
        push_json_string(self.text, value);
        self.note_span(key, start);
    }

    fn optional_raw(&mut self, key: &str, raw: Option<&RawValue>) {
        if let Some(raw) = raw {
            self.raw(key, raw.get());
        }
    }

    fn optional_bool(&mut self, key: &str, value: Option<bool>) {
        if let Some(value) = value {
            self.raw(key, if value { "true" } else { "false" });
        }
    }

    /// `id, parentId, timestamp`, the fields every entry shares.
    fn base(&mut self, id: &str, parent_id: Option<&str>, timestamp: &str) {
        self.string("id", id);
        match parent_id {
            Some(parent) => self.string("parentId", parent),
            None => self.raw("parentId", "null"),
        }
        self.string("timestamp", timestamp);
    }

    fn finish(self) -> FieldSpans {
        self.text.push('}');
        self.spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_string()).expect("test JSON is valid")
    }

    /// Every entry type is encoded with the reference key order, byte for byte.
    #[test]
    fn key_order_matches_reference() {
        let cases: Vec<(NewEntry, &str)> = vec![
            (
                NewEntry::Message {
                    message: raw(r#"{"role":"user","content":"hé\n"}"#),
                },
                r#"{"type":"message","id":"i","parentId":"p","timestamp":"t","message":{"role":"user","content":"hé\n"}}"#,
            ),
            (
                NewEntry::ThinkingLevelChange {
                    thinking_level: "high".into(),
                },
                r#"{"type":"thinking_level_change","id":"i","parentId":"p","timestamp":"t","thinkingLevel":"high"}"#,
            ),
            (
                NewEntry::ModelChange {
                    provider: "a".into(),
                    model_id: "m".into(),
                },
                r#"{"type":"model_change","id":"i","parentId":"p","timestamp":"t","provider":"a","modelId":"m"}"#,
            ),
            (
                NewEntry::Compaction {
                    summary: "s".into(),
                    first_kept_entry_id: Some("k".into()),
                    tokens_before: raw("12"),
                    details: Some(raw("{}")),
                    usage: None,
                    from_hook: Some(true),
                    system_message: None,
                },
                r#"{"type":"compaction","id":"i","parentId":"p","timestamp":"t","summary":"s","firstKeptEntryId":"k","tokensBefore":12,"details":{},"fromHook":true}"#,
            ),
            (
                NewEntry::Compaction {
                    summary: "s".into(),
                    first_kept_entry_id: Some("k".into()),
                    tokens_before: raw("12"),
                    details: Some(raw("{}")),
                    usage: Some(raw(r#"{"input":1}"#)),
                    from_hook: Some(false),
                    system_message: Some(raw(r#"{"role":"system","content":"x","timestamp":3}"#)),
                },
                r#"{"type":"compaction","id":"i","parentId":"p","timestamp":"t","summary":"s","firstKeptEntryId":"k","tokensBefore":12,"details":{},"usage":{"input":1},"fromHook":false,"systemMessage":{"role":"system","content":"x","timestamp":null}}"#,
            ),
            (
                NewEntry::BranchSummary {
                    from_id: "f".into(),
                    summary: "s".into(),
                    details: None,
                    usage: None,
                    from_hook: None,
                },
                r#"{"type":"branch_summary","id":"i","parentId":"p","timestamp":"t","fromId":"f","summary":"s"}"#,
            ),
            (
                NewEntry::BranchSummary {
                    from_id: "f".into(),
                    summary: "s".into(),
                    details: Some(raw("1")),
                    usage: Some(raw("{}")),
                    from_hook: Some(true),
                },
                r#"{"type":"branch_summary","id":"i","parentId":"p","timestamp":"t","fromId":"f","summary":"s","details":1,"usage":{},"fromHook":true}"#,
            ),
            (
                NewEntry::Usage {
                    kind: "cache_warm".into(),
                    provider: "p".into(),
                    model: "m".into(),
                    usage: raw(r#"{"input":1}"#),
                    note: Some("n".into()),
                },
                r#"{"type":"usage","id":"i","parentId":"p","timestamp":"t","kind":"cache_warm","provider":"p","model":"m","usage":{"input":1},"note":"n"}"#,
            ),
            (
                NewEntry::Usage {
                    kind: "k".into(),
                    provider: "p".into(),
                    model: "m".into(),
                    usage: raw("{}"),
                    note: Some(String::new()),
                },
                r#"{"type":"usage","id":"i","parentId":"p","timestamp":"t","kind":"k","provider":"p","model":"m","usage":{}}"#,
            ),
            (
                NewEntry::ContextEdit {
                    target_id: "a".into(),
                    replacement: raw("null"),
                },
                r#"{"type":"context_edit","id":"i","parentId":"p","timestamp":"t","targetId":"a","replacement":null}"#,
            ),
            (
                NewEntry::Custom {
                    custom_type: "c".into(),
                    data: Some(raw("[1]")),
                },
                r#"{"type":"custom","customType":"c","data":[1],"id":"i","parentId":"p","timestamp":"t"}"#,
            ),
            (
                NewEntry::CustomMessage {
                    custom_type: "c".into(),
                    content: raw(r#""x""#),
                    display: false,
                    details: None,
                },
                r#"{"type":"custom_message","customType":"c","content":"x","display":false,"id":"i","parentId":"p","timestamp":"t"}"#,
            ),
            (
                NewEntry::Label {
                    target_id: "a".into(),
                    label: None,
                },
                r#"{"type":"label","id":"i","parentId":"p","timestamp":"t","targetId":"a"}"#,
            ),
            (
                NewEntry::SessionInfo {
                    name: "n\"q".into(),
                },
                r#"{"type":"session_info","id":"i","parentId":"p","timestamp":"t","name":"n\"q"}"#,
            ),
        ];
        for (entry, expected) in cases {
            assert_eq!(entry.encode("i", Some("p"), "t"), expected);
        }
        assert_eq!(
            NewEntry::SessionInfo { name: "x".into() }.encode("i", None, "t"),
            r#"{"type":"session_info","id":"i","parentId":null,"timestamp":"t","name":"x"}"#
        );
    }

    /// The header has the reference key order and omits an unset parentSession.
    #[test]
    fn header_encoding() {
        assert_eq!(
            encode_header("s", "t", "/w", None),
            r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#
        );
        assert!(
            encode_header("s", "t", "/w", Some("/p.jsonl"))
                .ends_with(r#""cwd":"/w","parentSession":"/p.jsonl"}"#)
        );
    }

    /// Raw payloads spanning lines become one line with the same JSON value; invalid JSON is refused.
    #[test]
    fn raw_payloads_fit_one_line() {
        let flattened = single_line_raw("{\r\n \"a\": \"x\\ny\"\n}").expect("valid JSON");
        assert!(!flattened.get().contains('\n'));
        let value: serde_json::Value = serde_json::from_str(flattened.get()).expect("still valid");
        assert_eq!(value, serde_json::json!({"a": "x\ny"}));
        assert!(single_line_raw("{\"a\":").is_err());
    }

    /// Control characters are escaped as JSON.stringify escapes them.
    #[test]
    fn string_escapes_match_javascript() {
        let mut out = String::new();
        push_json_string(&mut out, "\u{1}\u{8}\t\n\u{c}\r\"\\/\u{7f}é\u{2028}");
        assert_eq!(out, "\"\\u0001\\b\\t\\n\\f\\r\\\"\\\\/\u{7f}é\u{2028}\"");
    }

    /// Raw JSON payloads: messages with every shape of `role` that `classify` reads, other
    /// values, strings with escapes and unpaired surrogate escapes, line breaks between tokens
    /// (which the encoder turns into spaces) and whitespace around the value (which
    /// `RawValue::from_string` drops today; kept so that a serde_json that kept it is caught).
    fn raw_payload() -> impl proptest::strategy::Strategy<Value = Box<RawValue>> {
        use proptest::prelude::*;
        let role = prop::sample::select(vec![
            r#""assistant""#,
            r#""user""#,
            r#""assist\u0061nt""#,
            r#""\ud800""#,
            "1",
            "null",
        ]);
        let text = "(\\PC|[\"\\\\\\x00-\\x1f])*"
            .prop_map(|text| serde_json::to_string(&text).expect("a str"));
        (role, text, 0..8usize).prop_map(|(role, text, shape)| {
            let json = match shape {
                0 => format!(r#"{{"role":{role},"content":{text}}}"#),
                1 => format!(r#"{{"content":{text},"role":{role}}}"#),
                2 => format!("{{\n \"role\" : {role},\r\n\"role\":\"user\"}}"),
                3 => format!(r#"[{text},{{"role":{role}}}]"#),
                4 => text,
                5 => r#""\udc00 lone""#.to_string(),
                6 => format!(" \t{{\"role\":{role}}}\r\n "),
                _ => format!(r#"{{"a":{{"role":{role}}},"b":[1,2.5e3,true,null]}}"#),
            };
            RawValue::from_string(json).expect("the templates are valid JSON")
        })
    }

    fn new_entry() -> impl proptest::strategy::Strategy<Value = NewEntry> {
        use proptest::prelude::*;
        let text = || "(\\PC|[\"\\\\\\x00-\\x1f])*";
        prop_oneof![
            raw_payload().prop_map(|message| NewEntry::Message { message }),
            text().prop_map(|thinking_level| NewEntry::ThinkingLevelChange { thinking_level }),
            (text(), text())
                .prop_map(|(provider, model_id)| NewEntry::ModelChange { provider, model_id }),
            (
                text(),
                text(),
                proptest::option::of(raw_payload()),
                proptest::option::of(any::<bool>())
            )
                .prop_map(|(summary, first_kept_entry_id, details, from_hook)| {
                    NewEntry::Compaction {
                        summary,
                        first_kept_entry_id: Some(first_kept_entry_id),
                        tokens_before: RawValue::from_string("7".into()).expect("a number"),
                        details,
                        usage: None,
                        from_hook,
                        system_message: None,
                    }
                }),
            (text(), text(), proptest::option::of(raw_payload())).prop_map(
                |(from_id, summary, details)| NewEntry::BranchSummary {
                    from_id,
                    summary,
                    details,
                    usage: None,
                    from_hook: None,
                }
            ),
            (
                text(),
                text(),
                text(),
                raw_payload(),
                proptest::option::of(text())
            )
                .prop_map(|(kind, provider, model, usage, note)| NewEntry::Usage {
                    kind,
                    provider,
                    model,
                    usage,
                    note,
                }),
            (text(), raw_payload()).prop_map(|(target_id, replacement)| {
                NewEntry::ContextEdit {
                    target_id,
                    replacement,
                }
            }),
            (text(), proptest::option::of(raw_payload()))
                .prop_map(|(custom_type, data)| NewEntry::Custom { custom_type, data }),
            (
                text(),
                raw_payload(),
                any::<bool>(),
                proptest::option::of(raw_payload())
            )
                .prop_map(|(custom_type, content, display, details)| {
                    NewEntry::CustomMessage {
                        custom_type,
                        content,
                        display,
                        details,
                    }
                }),
            (text(), proptest::option::of(text()))
                .prop_map(|(target_id, label)| NewEntry::Label { target_id, label }),
            text().prop_map(|name| NewEntry::SessionInfo { name }),
        ]
    }

    proptest::proptest! {
        /// For every entry type and any payload, `classify_written` reading the spans the
        /// encoder noted answers as `classify` scanning the line: appends are indexed from
        /// the spans (`Store::apply_written`), rebuilds and other writers' lines by `classify`.
        #[test]
        fn written_spans_classify_as_the_line_does(
            entry in new_entry(),
            id in "(\\PC|[\"\\\\\\x00-\\x1f])*",
            parent in proptest::option::of("(\\PC|[\"\\\\\\x00-\\x1f])*"),
            timestamp in "(\\PC|[\"\\\\\\x00-\\x1f])*",
            legacy_v1 in proptest::bool::ANY,
        ) {
            // Encoded after other text, as a batch's second line is.
            let mut text = String::from("{\"before\":1}\n");
            let line_start = text.len();
            let spans = entry.encode_into(&mut text, &id, parent.as_deref(), &timestamp);
            let line = &text[line_start..];
            proptest::prop_assert_eq!(line, &entry.encode(&id, parent.as_deref(), &timestamp));
            proptest::prop_assert_eq!(
                super::super::line::classify_written(line, &spans, legacy_v1),
                super::super::line::classify(line, legacy_v1, false)
            );
        }

        /// The copy without escapes writes what serde_json writes, for any string, among them
        /// strings with a single `"`, `\` or control character.
        #[test]
        fn strings_are_written_as_serde_json_writes_them(value in "(\\PC|[\"\\\\\\x00-\\x1f])*") {
            let mut out = String::from("prefix");
            push_json_string(&mut out, &value);
            proptest::prop_assert_eq!(out, format!("prefix{}", serde_json::to_string(&value).expect("a str")));
        }
    }
}
