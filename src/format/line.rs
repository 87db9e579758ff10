//! Classification of one log line: blank, header, canonical entry or opaque record.
//!
//! Pure code: it sees the bytes of one line (without its `\n`) and nothing else. Only the
//! fields that indexing needs are decoded; payloads are skipped, in one pass of
//! [`json_scan`] that validates the line as serde_json would and nests without
//! recursion, so a payload nested 10,000 levels deep reads like a flat one.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

pub(crate) use super::fields::{KeyBytes, relink, top_level_fields, with_field, without_field};
pub use super::fields::{json_str, json_text_str, raw_field, trusted_field};
use super::json_scan;
pub use super::message::{ROLES, role_code};
use super::message::{content_kept, message_role_code};
use super::size_facts::SizeFacts;
use super::usage::{self, UsageOf};

/// The kinds of entry. The numeric codes are stored in index records
/// (format-spec/index.md) and must never be renumbered. Every line with a string `type` other
/// than `session`, and a non-empty string `id`, is an entry, as both pi versions read it: a
/// type this version does not know is [`EntryKind::Other`] (a node of the tree that carries
/// nothing into the context), so a type a later pi adds never drops out of paths and trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum EntryKind {
    Message = 1,
    ThinkingLevelChange = 2,
    ModelChange = 3,
    Compaction = 4,
    BranchSummary = 5,
    Custom = 6,
    CustomMessage = 7,
    Label = 8,
    SessionInfo = 9,
    /// pi 1.6: model-attributed usage (`kind, provider, model, usage[, note]`); no context.
    Usage = 10,
    /// pi 1.6: a branch-local edit (`targetId`, `replacement` of `{content}` or `null`) of an
    /// earlier entry's context content.
    ContextEdit = 11,
    /// Any other `type`; the line says which ([`crate::Entry::type_name`]).
    Other = 12,
}

/// One more than the largest kind code: the length of per-kind count arrays.
pub const KIND_CODE_END: usize = 13;

impl EntryKind {
    /// Every kind, in code order.
    pub const ALL: [EntryKind; 12] = [
        EntryKind::Message,
        EntryKind::ThinkingLevelChange,
        EntryKind::ModelChange,
        EntryKind::Compaction,
        EntryKind::BranchSummary,
        EntryKind::Custom,
        EntryKind::CustomMessage,
        EntryKind::Label,
        EntryKind::SessionInfo,
        EntryKind::Usage,
        EntryKind::ContextEdit,
        EntryKind::Other,
    ];

    /// The `type` string written in the log; `"other"` for [`EntryKind::Other`], whose own
    /// type is in its line.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Message => "message",
            EntryKind::ThinkingLevelChange => "thinking_level_change",
            EntryKind::ModelChange => "model_change",
            EntryKind::Compaction => "compaction",
            EntryKind::BranchSummary => "branch_summary",
            EntryKind::Custom => "custom",
            EntryKind::CustomMessage => "custom_message",
            EntryKind::Label => "label",
            EntryKind::SessionInfo => "session_info",
            EntryKind::Usage => "usage",
            EntryKind::ContextEdit => "context_edit",
            EntryKind::Other => "other",
        }
    }

    /// The kind of an entry line's `type` (never `session`, which is the header's).
    pub fn from_type_str(text: &str) -> EntryKind {
        EntryKind::ALL
            .into_iter()
            .find(|kind| *kind != EntryKind::Other && kind.as_str() == text)
            .unwrap_or(EntryKind::Other)
    }

    pub fn from_code(code: u8) -> Option<EntryKind> {
        EntryKind::ALL.into_iter().find(|kind| *kind as u8 == code)
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `parentId` field of a line, which the format allows to be absent (OpenClaw's gateway
/// omits it on linear files) as well as null.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParentRef<'a> {
    /// No `parentId` key: the entry continues from the current leaf.
    Absent,
    /// `null`, or a value that is not a string (which can name no entry): a root.
    Root,
    Id(Cow<'a, str>),
}

/// Why a line is kept as an opaque record instead of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpaqueReason {
    InvalidJson(String),
    NotAnObject,
    MissingType,
    MissingId,
    /// An OpenClaw `leaf` control row; its target moves the leaf when it names a known id.
    LeafControl,
    /// A `session` record that is not the first line.
    ExtraHeader,
    TooLong,
}

impl fmt::Display for OpaqueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpaqueReason::InvalidJson(detail) => write!(f, "not valid JSON ({detail})"),
            OpaqueReason::NotAnObject => f.write_str("not a JSON object"),
            OpaqueReason::MissingType => f.write_str("no string \"type\""),
            OpaqueReason::MissingId => f.write_str("no string \"id\""),
            OpaqueReason::LeafControl => f.write_str("leaf control row"),
            OpaqueReason::ExtraHeader => f.write_str("session header that is not the first line"),
            OpaqueReason::TooLong => write!(f, "longer than {} bytes", crate::limits::LINE_LEN_MAX),
        }
    }
}

/// What indexing needs from a canonical entry line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryLine<'a> {
    pub kind: EntryKind,
    /// `None` only in v1 files, whose entries carry no ids.
    pub id: Option<Cow<'a, str>>,
    pub parent: ParentRef<'a>,
    pub timestamp: Option<Cow<'a, str>>,
    /// `appendMode: "side"`: a transcript-only row that does not move the visible leaf.
    pub side: bool,
    /// A `message` entry whose message has `role: "assistant"` (it sets the model).
    pub assistant: bool,
    /// A `message` entry's role, as [`role_code`] numbers it (0: not a message, or no string
    /// role).
    pub role: u8,
    /// The line is exactly `{"type":"message","id":…,"parentId":…,"timestamp":…,"message":{…}}`,
    /// pi's layout of a message entry, with nothing else: a reader that knows its id, parent
    /// and role can hand the entry out before parsing the rest (its keys and their order are
    /// known).
    pub pi_layout: bool,
    /// `label`: the target id and the label (absent or empty clears it).
    pub target_id: Option<Cow<'a, str>>,
    pub label: Option<Cow<'a, str>>,
    /// `session_info`: the name.
    pub name: Option<Cow<'a, str>>,
    /// Where the raw JSON of the `message` field lies in the classified text (offset, length
    /// in bytes), so that a context can copy it later without scanning the line again.
    pub message_span: Option<(u32, u32)>,
    /// An assistant message's `provider` and `model` as raw JSON, joined by `\n` (an absent
    /// one is empty: no raw value is), when neither is an object or array: two messages with
    /// equal keys parse to equal values of both fields.
    pub model_key: Option<Cow<'a, str>>,
    /// What the entry adds to pi's usage totals (`format::usage`).
    pub usage: UsageOf,
    /// An assistant message's tool calls as pi's session statistics count them
    /// (`format::usage::tool_calls`; `None` when pi cannot count them); 0 for other lines.
    pub tool_calls: Option<u64>,
    /// The names and images `treelog stats` counts the line under (`format::size_facts`).
    pub size_facts: SizeFacts<'a>,
}

/// The header line's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderLine<'a> {
    pub id: Cow<'a, str>,
    /// `version`; a missing version means 1.
    pub version: u32,
    pub cwd: Option<Cow<'a, str>>,
    pub timestamp: Option<Cow<'a, str>>,
    pub parent_session: Option<Cow<'a, str>>,
}

/// A line that is kept verbatim and never interpreted as an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpaqueLine<'a> {
    pub reason: OpaqueReason,
    /// A string `id` and `parentId`, when present, so that entries appended after the
    /// record can be linked to its nearest canonical ancestor.
    pub id: Option<Cow<'a, str>>,
    pub parent: ParentRef<'a>,
    /// For a `leaf` control row: the target.
    pub target_id: Option<Cow<'a, str>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Blank,
    Header(HeaderLine<'a>),
    Entry(EntryLine<'a>),
    Opaque(OpaqueLine<'a>),
}

/// Classifies one line. `text` is the line without its `\n` (a trailing `\r` is JSON
/// whitespace and harmless). `legacy_v1` accepts canonical types without an id.
/// `allow_header` is true only for the first non-blank line.
///
/// One pass of [`json_scan::scan`] validates the line and finds the indexed fields; the answer
/// is always the one of [`classify_with_serde`], which reads the line with serde_json.
pub fn classify(text: &str, legacy_v1: bool, allow_header: bool) -> Line<'_> {
    if is_blank(text) {
        return Line::Blank;
    }
    let Ok(scan) = json_scan::scan(text, &FIELD_NAMES) else {
        // Not JSON: serde_json's reading says so too, with its error message for the reason.
        return classify_with_serde(text, legacy_v1, allow_header);
    };
    if !scan.is_object {
        return not_an_object();
    }
    let fields = FieldTexts::from_array(scan.fields);
    classify_fields(text, fields, is_assistant_message, legacy_v1, allow_header)
}

/// Where the fields [`classify`] reads lie in a line its writer built (see
/// [`classify_written`]): (offset, length) in bytes of each value's raw JSON, in the order of
/// [`FIELD_NAMES`].
pub(crate) type FieldSpans = [Option<(u32, u32)>; FIELD_COUNT];

/// How many top-level keys [`classify`] reads.
pub(crate) const FIELD_COUNT: usize = 13;

/// [`classify`] for a line that treelog's own encoder wrote (`format::write`), which knows
/// where each field's value lies: the same answer without scanning the line again. That
/// answer is `classify`'s (the encoder's proptest checks it for every entry type) as long as
/// the line is valid JSON with each of these keys at most once at the top level, which the
/// encoder guarantees (payloads are `RawValue`s, strings are escaped, keys are fixed).
pub(crate) fn classify_written<'a>(text: &'a str, spans: &FieldSpans, legacy_v1: bool) -> Line<'a> {
    let fields = spans.map(|span| {
        span.and_then(|(offset, len)| text.get(offset as usize..offset as usize + len as usize))
    });
    classify_fields(
        text,
        FieldTexts::from_array(fields),
        is_assistant_message,
        legacy_v1,
        false,
    )
}

/// The top-level keys [`classify`] reads, in the order of the fields of [`FieldTexts`].
pub(crate) const FIELD_NAMES: [&str; FIELD_COUNT] = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "targetId",
    "label",
    "name",
    "appendMode",
    "version",
    "cwd",
    "parentSession",
    "message",
    "usage",
];

/// The three fields a serde_json baseline reads (`type`, `id`, `parentId`;
/// borrowed, owned where they hold escapes), the rest of the line skipped and so validated.
/// Not used by the engine: the benchmarks (`treelog-dev bench`, `examples/parse_timing`) time
/// this reading beside [`classify`].
#[doc(hidden)]
#[derive(Deserialize)]
pub struct RawPassFields<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", borrow)]
    pub parent_id: Option<Cow<'a, str>>,
}

/// [`classify`] by serde_json instead of [`json_scan`]: slower, same answers. Kept as the reference that the differential tests and the
/// fuzz check compare `classify` with, and used by `classify` for lines that are not JSON,
/// whose reason carries serde_json's error message.
#[doc(hidden)]
pub fn classify_with_serde(text: &str, legacy_v1: bool, allow_header: bool) -> Line<'_> {
    if is_blank(text) {
        return Line::Blank;
    }
    // serde's derived struct would also accept an array (by position): only objects are lines.
    let parsed = if text
        .trim_start_matches(json_scan::WHITESPACE)
        .starts_with('{')
    {
        serde_json::from_str(text)
    } else {
        Err(serde::de::Error::custom("not an object"))
    };
    // `JSON.parse` keeps the last of repeated keys, where serde's derive refuses the line.
    let parsed = parsed.or_else(|error| Fields::last_key_wins(text).ok_or(error));
    let fields: Fields<'_> = match parsed {
        Ok(fields) => fields,
        Err(error) => {
            if serde_json::from_str::<IgnoredAny>(text).is_ok() {
                return not_an_object();
            }
            return Line::Opaque(OpaqueLine {
                reason: OpaqueReason::InvalidJson(error.to_string()),
                id: None,
                parent: ParentRef::Root,
                target_id: None,
            });
        }
    };
    let fields = FieldTexts {
        kind: fields.kind.map(RawValue::get),
        id: fields.id.map(RawValue::get),
        parent_id: fields.parent_id.map(RawValue::get),
        timestamp: fields.timestamp.map(RawValue::get),
        target_id: fields.target_id.map(RawValue::get),
        label: fields.label.map(RawValue::get),
        name: fields.name.map(RawValue::get),
        append_mode: fields.append_mode.map(RawValue::get),
        version: fields.version.map(RawValue::get),
        cwd: fields.cwd.map(RawValue::get),
        parent_session: fields.parent_session.map(RawValue::get),
        message: fields.message.map(RawValue::get),
        usage: fields.usage.map(RawValue::get),
    };
    classify_fields(
        text,
        fields,
        is_assistant_message_with_serde,
        legacy_v1,
        allow_header,
    )
}

/// Whether `bytes`, found after a log's last `\n`, are read as its last line (format-spec/log.md
/// §1): they are not blank, fit [`crate::limits::LINE_LEN_MAX`] and are one JSON value, as
/// `JSON.parse` reads the final piece that pi splits off. Nothing a writer adds can turn such
/// a value into another valid line but whitespace or digits, so a line read this way stays
/// the line as long as the next byte written is its `\n`. Anything else after the last `\n`
/// is a torn tail: a write cut short, or one still under way.
pub fn is_complete_last_line(bytes: &[u8]) -> bool {
    if bytes.len() > crate::limits::LINE_LEN_MAX || bytes.contains(&b'\n') {
        return false;
    }
    let text = String::from_utf8_lossy(bytes);
    !is_blank(&text) && json_scan::is_valid(&text)
}

fn is_blank(text: &str) -> bool {
    text.bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

fn not_an_object<'a>() -> Line<'a> {
    Line::Opaque(OpaqueLine {
        reason: OpaqueReason::NotAnObject,
        id: None,
        parent: ParentRef::Root,
        target_id: None,
    })
}

/// The raw JSON text of the fields read from an object line (the last of repeated keys).
/// `parent_id` is `Some("null")` when present but null: absent and null mean different things.
struct FieldTexts<'a> {
    kind: Option<&'a str>,
    id: Option<&'a str>,
    parent_id: Option<&'a str>,
    timestamp: Option<&'a str>,
    target_id: Option<&'a str>,
    label: Option<&'a str>,
    name: Option<&'a str>,
    append_mode: Option<&'a str>,
    version: Option<&'a str>,
    cwd: Option<&'a str>,
    parent_session: Option<&'a str>,
    message: Option<&'a str>,
    usage: Option<&'a str>,
}

impl<'a> FieldTexts<'a> {
    /// The fields in the order of [`FIELD_NAMES`].
    fn from_array(fields: [Option<&'a str>; FIELD_COUNT]) -> FieldTexts<'a> {
        let [
            kind,
            id,
            parent_id,
            timestamp,
            target_id,
            label,
            name,
            append_mode,
            version,
            cwd,
            parent_session,
            message,
            usage,
        ] = fields;
        FieldTexts {
            kind,
            id,
            parent_id,
            timestamp,
            target_id,
            label,
            name,
            append_mode,
            version,
            cwd,
            parent_session,
            message,
            usage,
        }
    }
}

/// What an object line is, from its fields. `is_assistant` is asked about the message of a
/// `message` entry only.
fn classify_fields<'a>(
    text: &'a str,
    fields: FieldTexts<'a>,
    is_assistant: fn(&str) -> bool,
    legacy_v1: bool,
    allow_header: bool,
) -> Line<'a> {
    let id = fields.id.and_then(json_text_str);
    let parent = match fields.parent_id {
        None => ParentRef::Absent,
        Some(raw) => json_text_str(raw).map_or(ParentRef::Root, ParentRef::Id),
    };
    let opaque = |reason, id, parent, target_id| {
        Line::Opaque(OpaqueLine {
            reason,
            id,
            parent,
            target_id,
        })
    };
    let Some(kind_text) = fields.kind.and_then(json_text_str) else {
        return opaque(OpaqueReason::MissingType, id, parent, None);
    };
    if kind_text == "session" {
        return match (allow_header, id) {
            (true, Some(id)) => Line::Header(HeaderLine {
                id,
                version: fields
                    .version
                    // JavaScript compares the number (3.0 is 3); a missing version is 1.
                    .and_then(|raw| raw.parse::<f64>().ok())
                    .filter(|version| version.is_finite() && *version >= 0.0)
                    .map_or(1, |version| version.min(f64::from(u32::MAX)).floor() as u32),
                cwd: fields.cwd.and_then(json_text_str),
                timestamp: fields.timestamp.and_then(json_text_str),
                parent_session: fields.parent_session.and_then(json_text_str),
            }),
            (_, id) => opaque(OpaqueReason::ExtraHeader, id, parent, None),
        };
    }
    if kind_text == "leaf" {
        let target = fields.target_id.and_then(json_text_str);
        return opaque(OpaqueReason::LeafControl, id, parent, target);
    }
    let kind = EntryKind::from_type_str(&kind_text);
    if id.as_ref().is_none_or(|id| id.is_empty()) && !legacy_v1 {
        return opaque(OpaqueReason::MissingId, None, parent, None);
    }
    let side = fields
        .append_mode
        .and_then(json_text_str)
        .is_some_and(|mode| mode == "side");
    let assistant = kind == EntryKind::Message && fields.message.is_some_and(is_assistant);
    let role = match (kind, fields.message) {
        (EntryKind::Message, Some(message)) => message_role_code(message),
        _ => 0,
    };
    let (model_key, assistant_usage, tool_calls) = match fields.message.filter(|_| assistant) {
        Some(message) => {
            let (key, usage, content) = assistant_fields(message);
            (key, Some(usage), usage::tool_calls(content))
        }
        None => (None, None, Some(0)),
    };
    let usage = usage_of(kind, role, &fields, assistant_usage);
    let other_kind = kind == EntryKind::Other;
    Line::Entry(EntryLine {
        kind,
        id: id.filter(|id| !id.is_empty()),
        parent,
        timestamp: fields.timestamp.and_then(json_text_str),
        side,
        assistant,
        role,
        pi_layout: kind == EntryKind::Message
            && pi_message_layout(text, &fields)
            && fields
                .message
                .is_some_and(|message| content_kept(role, message)),
        target_id: fields.target_id.and_then(json_text_str),
        label: fields.label.and_then(json_text_str),
        name: fields.name.and_then(json_text_str),
        // Only an object is worth a span (a context copies it); serde's reading sees no field
        // at all where the value is null, so a null must not get one either.
        message_span: fields
            .message
            .filter(|message| message.starts_with('{'))
            .and_then(|message| span_in(text, message)),
        model_key,
        usage,
        tool_calls,
        size_facts: SizeFacts::of(text, fields.kind, fields.message, role, other_kind),
    })
}

/// What a line of `kind` adds to pi's usage totals (`format::usage`), from its raw fields;
/// `assistant_usage` is an assistant message's usage field, when the message is one.
fn usage_of(
    kind: EntryKind,
    role: u8,
    fields: &FieldTexts<'_>,
    assistant_usage: Option<Option<&str>>,
) -> UsageOf {
    match kind {
        // pi reads `entry.message.role`: a missing or null message throws there.
        EntryKind::Message if fields.message.is_none_or(|message| message == "null") => {
            UsageOf::Unreadable
        }
        EntryKind::Message => match assistant_usage {
            Some(raw) => usage::required(raw),
            None if role == TOOL_RESULT => fields.message.map_or(UsageOf::Nothing, |message| {
                usage::optional(
                    json_scan::scan(message, &["usage"])
                        .ok()
                        .and_then(|found| found.fields[0]),
                )
            }),
            None => UsageOf::Nothing,
        },
        EntryKind::Usage => usage::required(fields.usage),
        EntryKind::Compaction | EntryKind::BranchSummary => usage::optional(fields.usage),
        _ => UsageOf::Nothing,
    }
}

/// The role code of a tool result.
const TOOL_RESULT: u8 = 3;
const _: () = assert!(matches!(
    super::message::ROLES[TOOL_RESULT as usize - 1].as_bytes(),
    b"toolResult"
));

/// The `model_key` of an assistant message payload (valid JSON), and its `usage` and
/// `content` fields.
fn assistant_fields(message: &str) -> (Option<Cow<'_, str>>, Option<&str>, Option<&str>) {
    let Ok(found) = json_scan::scan(message, &["provider", "model", "usage", "content"]) else {
        return (None, None, None);
    };
    let [provider, model, usage, content] = found.fields;
    let [provider, model] = [provider, model].map(|raw| raw.unwrap_or(""));
    let scalar = |raw: &str| !raw.starts_with(['{', '[']);
    let key =
        (scalar(provider) && scalar(model)).then(|| Cow::Owned(format!("{provider}\n{model}")));
    (key, usage, content)
}

/// Where `part`, a slice of `text`, lies in it: (offset, length) in bytes.
/// Whether `raw` (a JSON value) is a timestamp as JavaScript's `toISOString()` writes it, so
/// that the index's milliseconds give its text back (`format_iso_ms`).
fn canonical_timestamp(raw: &str) -> bool {
    let Some(text) = raw.strip_prefix('"').and_then(|raw| raw.strip_suffix('"')) else {
        return false;
    };
    super::time::parse_iso_ms(text)
        .and_then(super::time::iso_ms_text)
        .is_some_and(|canonical| canonical == text.as_bytes())
}

/// Whether `text` is exactly pi's layout of a message entry: `{"type":"message"`, then `"id"`
/// (a string), `"parentId"` (a string or null), `"timestamp"` (a string as `toISOString()`
/// writes it) and `"message"` (an object), in that order, without spaces and without any
/// other key. Each value is the field the scan found (the last of a repeated key), at the
/// place the layout puts it, so the line holds no other key.
fn pi_message_layout(text: &str, fields: &FieldTexts<'_>) -> bool {
    let (Some(kind), Some(id), Some(parent), Some(timestamp), Some(message)) = (
        fields.kind,
        fields.id,
        fields.parent_id,
        fields.timestamp,
        fields.message,
    ) else {
        return false;
    };
    // Ids without escapes: a reader takes the index's decoded id for the line's own, which an
    // escape (a lone surrogate above all) could make differ from JSON.parse's.
    if kind != "\"message\""
        || !id.starts_with('"')
        || id.contains('\\')
        || parent.contains('\\')
        || !(parent == "null" || parent.starts_with('"'))
        || !canonical_timestamp(timestamp)
        || !message.starts_with('{')
    {
        return false;
    }
    let mut at = 0;
    for (key, value) in [
        ("{\"type\":", kind),
        (",\"id\":", id),
        (",\"parentId\":", parent),
        (",\"timestamp\":", timestamp),
        (",\"message\":", message),
    ] {
        if !text[at..].starts_with(key) {
            return false;
        }
        at += key.len();
        match span_in(text, value) {
            Some((offset, len)) if offset as usize == at => at += len as usize,
            _ => return false,
        }
    }
    text.len() == at + 1 && text.ends_with('}')
}

fn span_in(text: &str, part: &str) -> Option<(u32, u32)> {
    let offset = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    if offset.checked_add(part.len())? > text.len() {
        return None;
    }
    Some((u32::try_from(offset).ok()?, u32::try_from(part.len()).ok()?))
}

/// The fields read from every line. Every field is raw, so a field of an unexpected JSON type
/// never makes the whole line unreadable; unknown fields are skipped without recursion.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    /// Present-but-null is `Some("null")`: absent and null mean different things.
    #[serde(rename = "parentId", borrow, default, deserialize_with = "present")]
    parent_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "targetId", borrow, default)]
    target_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    label: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(rename = "appendMode", borrow, default)]
    append_mode: Option<&'a RawValue>,
    #[serde(borrow, default)]
    version: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cwd: Option<&'a RawValue>,
    #[serde(rename = "parentSession", borrow, default)]
    parent_session: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
}

impl<'a> Fields<'a> {
    /// The fields of an object with repeated keys, the last one winning (as in `JSON.parse`).
    fn last_key_wins(text: &'a str) -> Option<Fields<'a>> {
        let map = top_level_fields(text).ok()?;
        let get = |key: &str| map.get(key.as_bytes()).copied();
        Some(Fields {
            kind: get("type"),
            id: get("id"),
            parent_id: get("parentId"),
            timestamp: get("timestamp"),
            target_id: get("targetId"),
            label: get("label"),
            name: get("name"),
            append_mode: get("appendMode"),
            version: get("version"),
            cwd: get("cwd"),
            parent_session: get("parentSession"),
            message: get("message"),
            usage: get("usage"),
        })
    }
}

/// Whether a raw message payload (valid JSON) has `role: "assistant"`. pi writes `role`
/// first, so the common case is decided by its first key (a later repeated `role` key is not
/// looked for); any other object is scanned one level deep, as serde reads it: the last
/// `role` must decode to `assistant` (`"assist\u0061nt"` is, as in JavaScript; a key with an
/// unpaired surrogate escape is just another key).
fn is_assistant_message(message: &str) -> bool {
    if let Some(first_role) = first_role(message) {
        return first_role;
    }
    json_scan::scan(message, &["role"]).is_ok_and(|head| {
        head.is_object && head.fields[0].and_then(json_text_str).as_deref() == Some("assistant")
    })
}

/// The prefix check of [`is_assistant_message`]: `Some` when the payload starts with pi's
/// `{"role":"` and the role has no escape; `None` when the payload must be scanned.
fn first_role(message: &str) -> Option<bool> {
    let role = message.strip_prefix("{\"role\":\"")?;
    let end = role.find(['"', '\\'])?;
    (role.as_bytes()[end] == b'"').then(|| &role[..end] == "assistant")
}

/// [`is_assistant_message`] as serde_json reads it, for [`classify_with_serde`].
fn is_assistant_message_with_serde(message: &str) -> bool {
    if let Some(first_role) = first_role(message) {
        return first_role;
    }
    serde_json::from_str::<MessageHead>(message).is_ok_and(|head| head.assistant)
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// The one fact indexing needs from a message payload: whether it is an assistant message.
/// Accepts any JSON value (pi does), descending one level only.
struct MessageHead {
    assistant: bool,
}

impl<'de> Deserialize<'de> for MessageHead {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HeadVisitor;
        impl<'de> Visitor<'de> for HeadVisitor {
            type Value = MessageHead;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MessageHead, A::Error> {
                let mut assistant = false;
                while let Some(key) = map.next_key::<KeyBytes<'de>>()? {
                    if key.0.as_ref() == b"role" {
                        let role = map.next_value::<&RawValue>()?;
                        assistant = json_text_str(role.get()).as_deref() == Some("assistant");
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(MessageHead { assistant })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<MessageHead, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MessageHead { assistant: false })
            }
            fn visit_str<E>(self, _: &str) -> Result<MessageHead, E> {
                Ok(MessageHead { assistant: false })
            }
            fn visit_bool<E>(self, _: bool) -> Result<MessageHead, E> {
                Ok(MessageHead { assistant: false })
            }
            fn visit_i64<E>(self, _: i64) -> Result<MessageHead, E> {
                Ok(MessageHead { assistant: false })
            }
            fn visit_u64<E>(self, _: u64) -> Result<MessageHead, E> {
                Ok(MessageHead { assistant: false })
            }
            fn visit_f64<E>(self, _: f64) -> Result<MessageHead, E> {
                Ok(MessageHead { assistant: false })
            }
            fn visit_unit<E>(self) -> Result<MessageHead, E> {
                Ok(MessageHead { assistant: false })
            }
        }
        deserializer.deserialize_any(HeadVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A control byte inside a key is invalid JSON for both readings, although serde_json
    /// lets it through a key read as bytes (found by the crash tests: a line with a zeroed
    /// hole in a key was read as an entry). An unpaired surrogate escape in a key is valid.
    #[test]
    fn keys_read_as_bytes_stay_strict() {
        for text in [
            "{\"type\":\"message\",\"id\":\"a\",\"k\u{1}ey\":1}",
            "{\"type\":\"message\",\"id\":\"a\",\"tokensBef\0\0tamp\":1}",
        ] {
            for line in [
                classify(text, false, false),
                classify_with_serde(text, false, false),
            ] {
                assert!(
                    matches!(
                        &line,
                        Line::Opaque(OpaqueLine {
                            reason: OpaqueReason::InvalidJson(_),
                            ..
                        })
                    ),
                    "{text:?}: {line:?}"
                );
            }
            assert!(top_level_fields(text).is_err(), "{text:?}");
        }
        let text = r#"{"type":"message","id":"a","\ud800":1}"#;
        for line in [
            classify(text, false, false),
            classify_with_serde(text, false, false),
        ] {
            assert!(
                matches!(&line, Line::Entry(entry) if entry.id.as_deref() == Some("a")),
                "{line:?}"
            );
        }
    }

    /// The bytes after a log's last `\n` are its last line exactly when they are one JSON value
    /// and not blank (what `JSON.parse` accepts of pi's final piece): an entry, a header, an
    /// opaque value, with whitespace or invalid UTF-8 in a string; a cut-off line, blank bytes
    /// or two values are a torn tail.
    #[test]
    fn complete_last_line_is_one_json_value() {
        for (bytes, complete) in [
            (&br#"{"type":"message","id":"a","parentId":null}"#[..], true),
            (br#"{"type":"session","version":3,"id":"s"}"#, true),
            (br#"{"no":"type"}  "#, true),
            (b"[1,2]\r", true),
            (b"\"just a string\"", true),
            (b"12", true),
            (b"{\"type\":\"message\",\"s\":\"\xff\"}", true),
            (br#"{"type":"message","id":"a","parentId":null"#, false),
            (br#"{"type":"message","id":"a"}{"type""#, false),
            (br#"{"a":1}{"b":2}"#, false),
            (b"", false),
            (b"  \t\r", false),
            (b"{\"a\":1}\n", false),
        ] {
            assert_eq!(
                is_complete_last_line(bytes),
                complete,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    /// A line is plain (pi's layout of a message entry, nothing else) only when its bytes are
    /// exactly that layout; the role is read by its value wherever the key stands.
    #[test]
    fn pi_layout_and_role_are_read_from_the_line() {
        let cases = [
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                true,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"content":"x","role":"system"}}"#,
                true,
                4,
            ),
            // A role read by its value; an escaped one hides where the content stands.
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"assist\u0061nt","content":[]}}"#,
                false,
                2,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[]}}"#,
                true,
                3,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"bashExecution","command":"ls"}}"#,
                true,
                6,
            ),
            // pi's context fills in the missing or null content of these roles: the message is
            // not the one stored.
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":null}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"system"}}"#,
                false,
                4,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"assistant","usage":{},"content":[]}}"#,
                false,
                2,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"mine"}}"#,
                true,
                15,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":"p0","timestamp":"2025-01-01T00:00:00.000Z","message":{"content":[]}}"#,
                true,
                0,
            ),
            // Another order, a space, an extra key, a repeated key, an escaped id, a number
            // parent, a message that is not an object: the keys are not known without a parse.
            (
                r#"{"id":"a1","type":"message","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message", "id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"},"x":1}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","appendMode":"side","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"},"message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a\u0031","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":7,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":"hello"}"#,
                false,
                0,
            ),
            // A timestamp other than `toISOString()`'s: its text is not known from the index.
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-02-30T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01t00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"message","id":"a1","parentId":null,"timestamp":1735689600000,"message":{"role":"user","content":"x"}}"#,
                false,
                1,
            ),
            (
                r#"{"type":"custom","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}"#,
                false,
                0,
            ),
        ];
        for (line, plain, role) in cases {
            for classified in [
                classify(line, false, false),
                classify_with_serde(line, false, false),
            ] {
                let Line::Entry(entry) = classified else {
                    panic!("{line}: not an entry");
                };
                assert_eq!((entry.pi_layout, entry.role), (plain, role), "{line}");
            }
        }
    }

    /// The role decides "assistant" by its decoded value in both readings, whether or not the
    /// payload starts with pi's `{"role":"`.
    #[test]
    fn assistant_role_is_read_decoded() {
        for (message, assistant) in [
            (r#"{"role":"assistant","content":"x"}"#, true),
            (r#"{"role":"assist\u0061nt","content":"x"}"#, true),
            (r#"{"content":"x","role":"assist\u0061nt"}"#, true),
            (r#"{"role":"user","content":"x"}"#, false),
            (r#"{"role":"assistant\n","content":"x"}"#, false),
            (r#"{"role":"assistantX"}"#, false),
            (r#"{"content":"x"}"#, false),
        ] {
            assert_eq!(is_assistant_message(message), assistant, "{message}");
            assert_eq!(
                is_assistant_message_with_serde(message),
                assistant,
                "{message}"
            );
        }
    }

    fn entry(text: &str) -> EntryLine<'_> {
        match classify(text, false, false) {
            Line::Entry(entry) => entry,
            other => panic!("expected an entry for {text}, got {other:?}"),
        }
    }

    fn opaque_reason(text: &str) -> OpaqueReason {
        match classify(text, false, false) {
            Line::Opaque(opaque) => opaque.reason,
            other => panic!("expected an opaque record for {text}, got {other:?}"),
        }
    }

    /// Each canonical type is recognised with its indexed fields.
    #[test]
    fn canonical_entries() {
        let e = entry(
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"content":[{"role":"x"}],"role":"assistant"}}"#,
        );
        assert_eq!(
            (e.kind, e.id.as_deref(), &e.parent, e.assistant),
            (EntryKind::Message, Some("a1"), &ParentRef::Root, true)
        );
        let e = entry(
            r#"{"type":"label","id":"b","parentId":"a1","timestamp":"t","targetId":"a1","label":"x"}"#,
        );
        assert_eq!(
            (e.target_id.as_deref(), e.label.as_deref()),
            (Some("a1"), Some("x"))
        );
        assert_eq!(e.parent, ParentRef::Id("a1".into()));
        let e = entry(r#"{"type":"session_info","id":"c","timestamp":"t","name":"n\u00e9"}"#);
        assert_eq!(
            (e.parent, e.name.as_deref()),
            (ParentRef::Absent, Some("né"))
        );
        for kind in EntryKind::ALL {
            let line = format!(r#"{{"type":"{kind}","id":"x","parentId":"p"}}"#);
            assert_eq!(entry(&line).kind, kind);
        }
        // A type this version does not know is still an entry (a later pi's), as is pi 1.6's.
        for (line, kind) in [
            (
                r#"{"type":"future_kind","id":"f","parentId":"a1"}"#,
                EntryKind::Other,
            ),
            (r#"{"type":"","id":"f","parentId":null}"#, EntryKind::Other),
            (
                r#"{"type":"usage","id":"u","parentId":"a1"}"#,
                EntryKind::Usage,
            ),
            (
                r#"{"type":"context_edit","id":"e","targetId":"a1"}"#,
                EntryKind::ContextEdit,
            ),
        ] {
            assert_eq!(entry(line).kind, kind, "{line}");
        }
        assert_eq!(
            entry(r#"{"type":"context_edit","id":"e","targetId":"a1"}"#)
                .target_id
                .as_deref(),
            Some("a1")
        );
    }

    /// Lines that are not entries are opaque, with the reason a reader can report.
    #[test]
    fn opaque_lines() {
        assert!(matches!(
            opaque_reason("{\"type\":\"message\",\"id\":"),
            OpaqueReason::InvalidJson(_)
        ));
        assert_eq!(opaque_reason("[1,2]"), OpaqueReason::NotAnObject);
        assert_eq!(opaque_reason(r#"{"id":"a"}"#), OpaqueReason::MissingType);
        assert_eq!(
            opaque_reason(r#"{"type":"message","parentId":null}"#),
            OpaqueReason::MissingId
        );
        assert_eq!(
            opaque_reason(r#"{"type":"message","id":7}"#),
            OpaqueReason::MissingId
        );
        assert_eq!(
            opaque_reason(r#"{"type":"session","id":"s"}"#),
            OpaqueReason::ExtraHeader
        );
        assert_eq!(
            opaque_reason(r#"{"type":"leaf","id":"l","targetId":"a"}"#),
            OpaqueReason::LeafControl
        );
    }

    /// Whitespace-only lines, with or without CR, are blank.
    #[test]
    fn blank_lines() {
        for text in ["", " ", "\r", " \t\r"] {
            assert_eq!(classify(text, false, true), Line::Blank);
        }
    }

    /// A header is recognised only where allowed, with its version (default 1).
    #[test]
    fn headers() {
        let Line::Header(h) = classify(
            r#"{"type":"session","version":3,"id":"s","cwd":"/x"}"#,
            false,
            true,
        ) else {
            panic!("expected a header");
        };
        assert_eq!(
            (h.id.as_ref(), h.version, h.cwd.as_deref()),
            ("s", 3, Some("/x"))
        );
        let Line::Header(h) = classify(r#"{"type":"session","id":"s"}"#, false, true) else {
            panic!("expected a header");
        };
        assert_eq!(h.version, 1);
    }

    /// A payload nested far beyond serde_json's recursion limit still classifies.
    #[test]
    fn deep_payload() {
        let depth = 10_000;
        let line = format!(
            r#"{{"type":"message","id":"d","parentId":null,"message":{{"role":"user","content":{}{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_eq!(entry(&line).id.as_deref(), Some("d"));
    }

    /// In a v1 file, canonical types without ids are entries.
    #[test]
    fn legacy_entries_without_ids() {
        let Line::Entry(e) = classify(
            r#"{"type":"message","timestamp":"t","message":{}}"#,
            true,
            false,
        ) else {
            panic!("expected an entry");
        };
        assert_eq!(e.id, None);
    }
}
