//! pi 1.6's context functions (`buildSessionContext`, `buildContextEntries`,
//! `buildSessionProjection`; pi 0.73.1's with [`PiCompat::V0_73`]), reading only what the answer
//! needs: the leaf's record names the latest compaction, model and thinking-level entries on its
//! path, so the walk stops at the compaction's first kept entry instead of the root. The context
//! edits that apply are among the entries that walk reads, so no index of edits exists.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use compact_str::CompactString;

use crate::error::Result;
use crate::format::json_scan;
use crate::format::json_string::push_json_string;
use crate::format::line::{EntryKind, json_text_str, role_code, with_field, without_field};
use crate::format::message::{message_content_present, message_role};
use crate::format::pi_json::{self, Replacement};
use crate::format::record::{Record, SEQ_NONE};
use crate::format::time::parse_iso_ms;
use crate::index::Store;
use crate::line_reads::LineTexts;
use crate::tree::ancestor_at_depth;

pub(crate) mod plan;

/// The context for one leaf: `{"messages":[...],"thinkingLevel":...,"model":...}`.
#[derive(Clone, Debug)]
pub struct Context {
    /// Each message as JSON, stored ones byte for byte.
    pub messages: Vec<JsonText>,
    pub thinking_level: JsonText,
    /// `{"provider":...,"modelId":...}` or `None` (JSON null).
    pub model: Option<JsonText>,
}

/// A JSON value as text. Values copied from the log are byte for byte what the log holds
/// (the line parsed as JSON when it was indexed, and its crc32 still matches); values built
/// here are assembled from such values and JSON strings.
#[derive(Clone)]
pub struct JsonText(Text);

#[derive(Clone)]
enum Text {
    Owned(String),
    /// A range of lines read for a context, shared by the values cut out of them.
    Shared(Arc<String>, Range<usize>),
}

impl JsonText {
    pub fn get(&self) -> &str {
        match &self.0 {
            Text::Owned(text) => text,
            Text::Shared(text, range) => &text[range.clone()],
        }
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.get() == other.get()
    }
}

impl Eq for JsonText {}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("JsonText").field(&self.get()).finish()
    }
}

impl Context {
    /// The context as one JSON object, keys in pi's order.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"messages\":");
        push_array(&mut out, &self.messages);
        push_settings(&mut out, &self.thinking_level, self.model.as_ref());
        out
    }
}

fn raw(json: String) -> JsonText {
    JsonText(Text::Owned(json))
}

/// Which pi's context rule [`crate::Session::build_context`] follows. The two agree on every
/// file pi 0.73.1 writes in the ordinary way; they differ on the same file where 1.6 added
/// rules (format-spec/log.md §7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PiCompat {
    /// pi 1.6 (`@earendil-works/pi-coding-agent`): context edits, compaction system messages,
    /// system messages left out of a compaction's kept range, missing contents filled in.
    #[default]
    Current,
    /// pi 0.73.1 (`@mariozechner/pi-coding-agent`), the last release under that name.
    V0_73,
}

/// pi 1.6's `buildSessionProjection` for one leaf: each context entry (`buildContextEntries`)
/// with the messages it contributes, and the settings of the path.
#[derive(Clone, Debug)]
pub struct Projection {
    pub entries: Vec<ProjectedEntry>,
    pub thinking_level: JsonText,
    pub model: Option<JsonText>,
}

/// One context entry and what it contributes to the model's context.
#[derive(Clone, Debug)]
pub struct ProjectedEntry {
    pub id: String,
    /// The entry's line as stored (pi's `sourceEntry`); empty when the projection was built
    /// for the messages only.
    pub source: JsonText,
    pub messages: Vec<JsonText>,
}

impl Projection {
    /// pi's `{entries: [{sourceEntry, messages}], messages, thinkingLevel, model}` as JSON.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"entries\":[");
        for (index, entry) in self.entries.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            out.push_str("{\"sourceEntry\":");
            out.push_str(entry.source.get());
            out.push_str(",\"messages\":");
            push_array(&mut out, &entry.messages);
            out.push('}');
        }
        out.push_str("],\"messages\":");
        push_array(
            &mut out,
            self.entries.iter().flat_map(|entry| &entry.messages),
        );
        push_settings(&mut out, &self.thinking_level, self.model.as_ref());
        out
    }

    /// The context these entries make: their messages in order, and the settings.
    pub fn into_context(self) -> Context {
        Context {
            messages: self
                .entries
                .into_iter()
                .flat_map(|entry| entry.messages)
                .collect(),
            thinking_level: self.thinking_level,
            model: self.model,
        }
    }
}

/// `,"thinkingLevel":...,"model":...}`: the settings that end a context and a projection.
fn push_settings(out: &mut String, thinking_level: &JsonText, model: Option<&JsonText>) {
    out.push_str(",\"thinkingLevel\":");
    out.push_str(thinking_level.get());
    out.push_str(",\"model\":");
    out.push_str(model.map_or("null", |model| model.get()));
    out.push('}');
}

fn push_array<'a>(out: &mut String, values: impl IntoIterator<Item = &'a JsonText>) {
    out.push('[');
    for (index, value) in values.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(value.get());
    }
    out.push(']');
}

/// What a context build reads of a session: its index and its lines, each checked against its
/// record. The session implements it (`session/context_queries.rs`): this module never names
/// the session, so the two do not import each other.
pub(crate) trait IndexedLines {
    /// The index the context is read from.
    fn store(&self) -> &Store;
    /// The line of `record`, checked against its crc32.
    fn read_line(&self, record: &Record) -> Result<String>;
    /// The lines of `records` (in file order), each checked, in one shared buffer.
    fn read_lines(&self, records: &[&Record]) -> Result<LineTexts>;
}

/// The context of `leaf_seq` by `compat`'s rule. Reads only the lines that contribute.
pub(crate) fn build(
    session: &impl IndexedLines,
    leaf_seq: u64,
    compat: PiCompat,
) -> Result<Context> {
    let assembled = assemble(session, leaf_seq, compat, Reads::Contributing)?;
    Ok(Context {
        messages: assembled.messages,
        thinking_level: assembled.thinking_level,
        model: assembled.model,
    })
}

/// pi 1.6's projection of `leaf_seq`, every context entry's line read.
pub(crate) fn build_projection(session: &impl IndexedLines, leaf_seq: u64) -> Result<Projection> {
    let assembled = assemble(session, leaf_seq, PiCompat::Current, Reads::All)?;
    let mut start = 0;
    let entries = assembled
        .entries
        .into_iter()
        .map(|entry| {
            let messages = assembled.messages[start..entry.messages_end].to_vec();
            start = entry.messages_end;
            ProjectedEntry {
                id: entry.id.into_string(),
                source: entry.source.unwrap_or_else(|| raw(String::new())),
                messages,
            }
        })
        .collect();
    Ok(Projection {
        entries,
        thinking_level: assembled.thinking_level,
        model: assembled.model,
    })
}

/// The context entries of `leaf_seq` (pi 1.6's `buildContextEntries`), as sequence numbers.
pub(crate) fn context_entry_seqs(session: &impl IndexedLines, leaf_seq: u64) -> Result<Vec<u64>> {
    let assembled = assemble(session, leaf_seq, PiCompat::Current, Reads::NotOwn)?;
    Ok(assembled.entries.iter().map(|entry| entry.seq).collect())
}

/// The context part of a path, assembled: every message in order in one vector (a context
/// build allocates nothing per entry), and where each context entry's messages end.
struct Assembled {
    entries: Vec<AssembledEntry>,
    messages: Vec<JsonText>,
    thinking_level: JsonText,
    model: Option<JsonText>,
}

struct AssembledEntry {
    seq: u64,
    /// Inline for pi's ids: no allocation.
    id: CompactString,
    /// The entry's line, when every line was read (the projection).
    source: Option<JsonText>,
    /// The end of this entry's messages in [`Assembled::messages`].
    messages_end: usize,
    /// The entry's one message is its own `message` object as stored: not filled in, not
    /// migrated, not edited.
    own_message: bool,
}

/// The latest compaction on a path and where its kept range starts.
struct KeptRange {
    /// The compaction and its line, if the path has one.
    compaction: Option<(u64, String)>,
    /// The first entry of the context part of the path: the first kept entry when it is an
    /// ancestor of the compaction, else the compaction; `SEQ_NONE` (the root) without one.
    stop_seq: u64,
}

fn kept_range(session: &impl IndexedLines, leaf: &Record) -> Result<KeptRange> {
    let store = session.store();
    if leaf.compaction_seq == SEQ_NONE {
        return Ok(KeptRange {
            compaction: None,
            stop_seq: SEQ_NONE,
        });
    }
    let compaction = store.existing_record(leaf.compaction_seq)?;
    let line = read(session, &compaction)?;
    let mut first_kept = field(&line, "firstKeptEntryId")
        .and_then(|raw| json_text_str(raw.get()).map(Cow::into_owned));
    if first_kept.is_none() && store.state.header_version < 2 && !store.state.header_recovered {
        // v1 compactions name the first kept entry by its index among the parsed records,
        // the header being record 0 (pi's v1 -> v2 migration): entry `index - 1` here.
        let index =
            field(&line, "firstKeptEntryIndex").and_then(|raw| raw.get().parse::<u64>().ok());
        if let Some(seq) = index
            .and_then(|index| index.checked_sub(1))
            .filter(|seq| *seq < store.record_count())
        {
            let record = store.existing_record(seq)?;
            if record.kind.is_some() {
                first_kept = Some(record.id.into_string());
            }
        }
    }
    // Entries before the compaction are kept only from the first kept one, and only if it is
    // on the path; otherwise the context part starts at the compaction itself (so does a
    // compaction that names itself, as pi 1.6 writes one given no first kept entry).
    let mut stop_seq = leaf.compaction_seq;
    if let Some(first_kept) = first_kept
        && let Some(kept_seq) = store.seq_of(&first_kept)?
    {
        let kept = store.existing_record(kept_seq)?;
        if kept.kind.is_some()
            && kept.depth < compaction.depth
            && ancestor_at_depth(store, leaf.compaction_seq, kept.depth)? == Some(kept_seq)
        {
            stop_seq = kept_seq;
        } else if let Some(seq) = ancestor_with_id(store, compaction.parent_seq, &first_kept)? {
            // The id repeats: the ids table names its latest line, and an earlier line with
            // it is on the path. This walk runs only when the latest is not an ancestor.
            stop_seq = seq;
        }
    }
    Ok(KeptRange {
        compaction: Some((leaf.compaction_seq, line)),
        stop_seq,
    })
}

/// The entries whose lines a context reads: those that can contribute messages, and under
/// pi 1.6 the edits (the latest compaction's line is read on its own, before the walk).
fn contributes(kind: Option<EntryKind>, compat: PiCompat) -> bool {
    matches!(
        kind,
        Some(EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary)
    ) || (compat == PiCompat::Current && kind == Some(EntryKind::ContextEdit))
}

/// Which lines a context assembly reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reads {
    /// Every context entry's line: the projection hands each one out as its source.
    All,
    /// The lines of the entries that contribute messages: a context's text.
    Contributing,
    /// As `Contributing`, but for plain message entries (`Record::plain`) that no context
    /// edit targets: their message is their own, unchanged, which a caller holding the
    /// entries as values has already (a plan), and their role is in the index.
    NotOwn,
}

/// The context part of the path of `leaf_seq`, in pi's order: the latest compaction first,
/// then its kept entries (under pi 1.6 without system messages), then the entries after it;
/// each with the messages it contributes, the latest context edit of it applied (pi 1.6).
/// The walk covers only that part of the path, so the cost is the context's, not the depth's:
/// an edit outside it does not apply (pi 1.6 looks for edits among the context entries).
fn assemble(
    session: &impl IndexedLines,
    leaf_seq: u64,
    compat: PiCompat,
    reads: Reads,
) -> Result<Assembled> {
    if leaf_seq == SEQ_NONE {
        return Ok(Assembled {
            entries: Vec::new(),
            messages: Vec::new(),
            thinking_level: raw("\"off\"".into()),
            model: None,
        });
    }
    let store = session.store();
    let leaf = store.existing_record(leaf_seq)?;
    let thinking_level = match leaf.thinking_seq {
        SEQ_NONE => raw("\"off\"".into()),
        seq => {
            let entry = read(session, &store.existing_record(seq)?)?;
            // `undefined` (a missing field) leaves the key out of JSON.stringify's output;
            // pi's default is "off" only when no change exists at all.
            field(&entry, "thinkingLevel").unwrap_or_else(|| raw("null".into()))
        }
    };
    let model = match leaf.model_seq {
        SEQ_NONE => None,
        seq => Some(model_of(session, &store.existing_record(seq)?)?),
    };

    let kept = kept_range(session, &leaf)?;
    let mut path = store.ancestors(leaf_seq, kept.stop_seq)?;
    path.reverse();
    let compaction_seq = kept.compaction.as_ref().map(|(seq, _)| *seq);
    let legacy = store.state.header_version < 3 && !store.state.header_recovered;
    let own_unread = |record: &Record| {
        reads == Reads::NotOwn && !legacy && record.plain_message_role().is_some()
    };
    let read_here = |seq: u64, record: &Record| {
        Some(seq) != compaction_seq
            && (reads == Reads::All || contributes(record.kind, compat))
            && !own_unread(record)
    };
    let to_read: Vec<&Record> = path
        .iter()
        .filter(|(seq, record)| read_here(*seq, record))
        .map(|(_, record)| record)
        .collect();
    let lines = session.read_lines(&to_read)?;
    let mut line_index = Vec::with_capacity(path.len());
    let mut next_line = 0;
    for (seq, record) in &path {
        line_index.push(read_here(*seq, record).then(|| {
            next_line += 1;
            next_line - 1
        }));
    }
    let line_at = |at: usize| line_index[at].map(|index| lines.line(index));

    // pi's order: the compaction, the kept entries before it, the entries after it.
    let split =
        compaction_seq.and_then(|compaction| path.iter().position(|(seq, _)| *seq == compaction));
    let order = match split {
        Some(split) => std::iter::once(split)
            .chain(0..split)
            .chain(split + 1..path.len())
            .collect(),
        None => (0..path.len()).collect::<Vec<usize>>(),
    };
    // pi 1.6 leaves system messages out of a compaction's kept range: the compaction carries
    // the system message that stood then.
    let left_out = |at: usize| -> bool {
        compat == PiCompat::Current
            && split.is_some_and(|split| at < split)
            && path[at].1.kind == Some(EntryKind::Message)
            && match line_at(at) {
                Some(line) => message_of_line(&path[at].1, line)
                    .is_some_and(|message| message_role(message).as_deref() == Some("system")),
                None => path[at].1.plain_message_role() == Some(role_code(Some("system"))),
            }
    };
    let order: Vec<usize> = order.into_iter().filter(|at| !left_out(*at)).collect();

    // The latest edit of each target among the context entries (pi 1.6).
    let mut edits: HashMap<Cow<'_, str>, Replacement<'_>> = HashMap::new();
    if compat == PiCompat::Current {
        for &at in &order {
            if path[at].1.kind != Some(EntryKind::ContextEdit) {
                continue;
            }
            if let Some(edit) = line_at(at).and_then(pi_json::context_edit) {
                edits.insert(edit.target, edit.replacement);
            }
        }
    }

    // Plain entries left unread whose message an edit changes are read now.
    let edited: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&at| {
            line_index[at].is_none()
                && own_unread(&path[at].1)
                && edits.contains_key(path[at].1.id.as_str())
        })
        .collect();
    let edited_lines =
        session.read_lines(&edited.iter().map(|&at| &path[at].1).collect::<Vec<_>>())?;

    let mut entries = Vec::with_capacity(order.len());
    let mut messages = Vec::with_capacity(order.len() + 1);
    for (position, &at) in order.iter().enumerate() {
        let (seq, record) = &path[at];
        let start = messages.len();
        let mut source = None;
        let mut own_message = false;
        if let Some((compaction, line)) = &kept.compaction
            && compaction == seq
        {
            // Only the latest compaction, standing first, contributes (an older one may stand
            // in its kept range).
            if position == 0 {
                compaction_messages(&mut messages, line, compat);
            }
            source = (reads == Reads::All).then(|| raw(line.clone()));
        } else if let Some(index) = line_index[at] {
            if contributes(record.kind, compat)
                && let Some((message, own)) = entry_message(record, &lines, index, legacy, compat)
            {
                messages.push(message);
                own_message = own;
            }
            source =
                (reads == Reads::All).then(|| shared(&lines, index, 0..lines.line(index).len()));
        } else if let Some(index) = edited.iter().position(|&edited| edited == at) {
            if let Some((message, own)) =
                entry_message(record, &edited_lines, index, legacy, compat)
            {
                messages.push(message);
                own_message = own;
            }
        } else if own_unread(record) {
            own_message = true;
        }
        if !edits.is_empty()
            && let Some(replacement) = edits.get(record.id.as_str())
        {
            apply_edit(&mut messages, start, *replacement);
            own_message = false;
        }
        entries.push(AssembledEntry {
            seq: *seq,
            id: record.id.clone(),
            source,
            messages_end: messages.len(),
            own_message,
        });
    }
    Ok(Assembled {
        entries,
        messages,
        thinking_level,
        model,
    })
}

/// The messages of the latest compaction: its system message snapshot (pi 1.6) and a
/// `compactionSummary`.
fn compaction_messages(messages: &mut Vec<JsonText>, line: &str, compat: PiCompat) {
    if compat == PiCompat::Current
        && let Some(system) = field(line, "systemMessage").filter(is_truthy)
    {
        messages.push(system);
    }
    let mut out = String::from("{\"role\":\"compactionSummary\",\"summary\":");
    out.push_str(
        field(line, "summary")
            .map_or("null".into(), |raw| raw.get().to_string())
            .as_str(),
    );
    append_optional(&mut out, "tokensBefore", field(line, "tokensBefore"));
    append_timestamp(&mut out, line);
    out.push('}');
    messages.push(raw(out));
}

/// A value cut out of the shared buffer of `lines`: `range` of line `index`.
fn shared(lines: &LineTexts, index: usize, range: Range<usize>) -> JsonText {
    let start = lines.ranges[index].start;
    JsonText(Text::Shared(
        lines.text.clone(),
        start + range.start..start + range.end,
    ))
}

/// The raw message of a `message` entry's line.
fn message_of_line<'a>(record: &Record, line: &'a str) -> Option<&'a str> {
    match indexed_message(record, line) {
        Some(range) => line.get(range),
        None => json_scan::scan(line, &["message"]).ok()?.fields[0],
    }
}

/// The nearest ancestor-or-self of `seq` whose id is `id`.
fn ancestor_with_id(store: &Store, mut seq: u64, id: &str) -> Result<Option<u64>> {
    while seq != SEQ_NONE {
        let record = store.existing_record(seq)?;
        if record.id == id {
            return Ok(Some(seq));
        }
        if record.parent_seq != SEQ_NONE && record.parent_seq >= seq {
            return Err(store.read_error(format!("record {seq} names a later parent")));
        }
        seq = record.parent_seq;
    }
    Ok(None)
}

/// What an entry other than the latest compaction contributes to the context (pi 1.6's
/// `sessionEntryToContextMessages`, or 0.73.1's `appendMessage`): at most one message, and
/// whether it is the entry's own `message` object, unchanged.
fn entry_message(
    record: &Record,
    lines: &LineTexts,
    index: usize,
    legacy: bool,
    compat: PiCompat,
) -> Option<(JsonText, bool)> {
    let line = lines.line(index);
    match record.kind {
        Some(EntryKind::Message) => {
            // pi pushes `entry.message` even when it is missing: JSON.stringify writes null.
            let stored = indexed_message(record, line)
                .map(|range| shared(lines, index, range))
                .or_else(|| field(line, "message"));
            let object = stored
                .as_ref()
                .is_some_and(|stored| stored.get().starts_with('{'));
            let stored = stored.unwrap_or_else(|| raw("null".into()));
            let length = stored.get().len();
            let message = if legacy {
                migrate_hook_message(stored)
            } else {
                stored
            };
            let message = match compat {
                PiCompat::Current => fill_missing_content(message),
                PiCompat::V0_73 => message,
            };
            // Filling in a missing content changes the message's length.
            let own = object && !legacy && message.get().len() == length;
            Some((message, own))
        }
        Some(EntryKind::CustomMessage) => {
            let mut out = String::from("{\"role\":\"custom\"");
            for key in ["customType", "content", "display", "details"] {
                let mut value = field(line, key);
                // pi 1.6 passes `entry.content ?? []`.
                if key == "content"
                    && compat == PiCompat::Current
                    && value.as_ref().is_none_or(|value| value.get() == "null")
                {
                    value = Some(raw("[]".into()));
                }
                append_optional(&mut out, key, value);
            }
            append_timestamp(&mut out, line);
            out.push('}');
            Some((raw(out), false))
        }
        Some(EntryKind::BranchSummary) => {
            let summary = field(line, "summary").filter(is_truthy)?;
            let mut out = String::from("{\"role\":\"branchSummary\"");
            append_optional(&mut out, "summary", Some(summary));
            append_optional(&mut out, "fromId", field(line, "fromId"));
            append_timestamp(&mut out, line);
            out.push('}');
            Some((raw(out), false))
        }
        _ => None,
    }
}

/// pi 1.6 gives a message whose `content` is null or missing an empty one: `""` for a system
/// message, `[]` for a user, assistant or tool result (`{...message, content}`: the key keeps
/// its place, or is added last).
fn fill_missing_content(message: JsonText) -> JsonText {
    let text = message.get();
    let empty = match message_role(text).as_deref() {
        Some("system") => "\"\"",
        Some("user" | "assistant" | "toolResult") => "[]",
        _ => return message,
    };
    if let Some(present) = message_content_present(text) {
        return match present {
            true => message,
            false => with_field(text, "content", empty).map_or(message, raw),
        };
    }
    let content = json_scan::scan(text, &["content"])
        .ok()
        .and_then(|found| found.fields[0]);
    if content.is_some_and(|content| content != "null") {
        return message;
    }
    with_field(text, "content", empty).map_or(message, raw)
}

/// pi 1.6's `projectContextEntry` with an edit: `replacement` null removes the entry's
/// messages; otherwise the content of each user, assistant, tool result or custom message
/// becomes the replacement's (a string one, for an assistant or a tool result, becomes one
/// text part), and other messages stay as they are.
/// The entry's messages are `messages[start..]`.
fn apply_edit(messages: &mut Vec<JsonText>, start: usize, replacement: Replacement<'_>) {
    let content = match replacement {
        Replacement::Remove => {
            messages.truncate(start);
            return;
        }
        Replacement::Content(content) => content,
    };
    for message in &mut messages[start..] {
        let edited = {
            let text = message.get();
            let role = message_role(text);
            let Some(role @ ("user" | "assistant" | "toolResult" | "custom")) = role.as_deref()
            else {
                continue;
            };
            match content {
                Some(content)
                    if matches!(role, "assistant" | "toolResult") && content.starts_with('"') =>
                {
                    with_field(
                        text,
                        "content",
                        &format!("[{{\"type\":\"text\",\"text\":{content}}}]"),
                    )
                }
                Some(content) => with_field(text, "content", content),
                // `content: undefined`: JSON.stringify leaves the key out.
                None => without_field(text, "content"),
            }
        };
        if let Some(edited) = edited {
            *message = raw(edited);
        }
    }
}

/// `{provider, modelId}` from a model change, or from an assistant message's `provider` and
/// `model`.
fn model_of(session: &impl IndexedLines, record: &Record) -> Result<JsonText> {
    let line = read(session, record)?;
    let (provider, model_id) = if record.kind == Some(EntryKind::ModelChange) {
        (field(&line, "provider"), field(&line, "modelId"))
    } else {
        let message = field(&line, "message");
        let get = |key: &str| {
            message
                .as_ref()
                .and_then(|message| field(message.get(), key))
        };
        (get("provider"), get("model"))
    };
    let mut out = String::from("{");
    append_optional(&mut out, "provider", provider);
    append_optional(&mut out, "modelId", model_id);
    if out.len() > 1 {
        out.remove(1);
    }
    out.push('}');
    Ok(raw(out))
}

/// v1/v2 files: a `hookMessage` role is read as `custom` (pi's v2 to v3 migration).
fn migrate_hook_message(message: JsonText) -> JsonText {
    if message_role(message.get()).as_deref() != Some("hookMessage") {
        return message;
    }
    with_field(message.get(), "role", "\"custom\"").map_or(message, raw)
}

fn read(session: &impl IndexedLines, record: &Record) -> Result<String> {
    session.read_line(record)
}

/// A top-level field of a line read through the index (crc32 checked, so valid JSON).
/// The message of a `message` entry where indexing found it, without scanning the line: the
/// line's crc32 matched, so it is the line that was indexed. The span is checked to start
/// right after pi's `"message":` key and to look like an object, so a damaged index falls
/// back to the scan rather than cutting the line anywhere.
fn indexed_message(record: &Record, line: &str) -> Option<Range<usize>> {
    let (offset, len) = record.message_span?;
    let (offset, len) = (offset as usize, len as usize);
    let range = offset..offset.checked_add(len)?;
    let message = line.get(range.clone())?;
    let key = line.get(offset.checked_sub(10)?..offset)?;
    (key == "\"message\":" && message.starts_with('{') && message.ends_with('}')).then_some(range)
}

fn field(line: &str, name: &str) -> Option<JsonText> {
    // The scanner of indexing finds the field; a line that fails it (it passed at indexing and
    // its crc32 matched) has no field.
    let scan = json_scan::scan(line, &[name]).ok()?;
    scan.fields[0].map(|text| raw(text.to_owned()))
}

/// `,"key":value` when the value exists (JSON.stringify drops undefined values).
fn append_optional(out: &mut String, key: &str, value: Option<JsonText>) {
    if let Some(value) = value {
        out.push(',');
        push_json_string(out, key);
        out.push(':');
        out.push_str(value.get());
    }
}

/// `,"timestamp":ms` from the entry's ISO timestamp (`null` where JavaScript gets NaN).
fn append_timestamp(out: &mut String, line: &str) {
    let millis = field(line, "timestamp")
        .and_then(|raw| json_text_str(raw.get()).and_then(|text| parse_iso_ms(&text)));
    out.push_str(",\"timestamp\":");
    out.push_str(&millis.map_or("null".into(), |millis| millis.to_string()));
}

/// JavaScript truthiness of a JSON value: `null`, `false`, `""` and every number that
/// `JSON.parse` reads as zero (`0.00`, `-0e5`, and `1e-400`, which underflows) are falsy.
fn is_truthy(value: &JsonText) -> bool {
    let text = value
        .get()
        .trim_matches(crate::format::json_scan::WHITESPACE);
    match text.as_bytes().first() {
        None => false,
        // Every JSON number is a valid Rust float, rounded to nearest as JavaScript does.
        Some(b'-' | b'0'..=b'9') => !matches!(text.parse::<f64>(), Ok(number) if number == 0.0),
        Some(_) => !matches!(text, "null" | "false" | "\"\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Truthiness as JavaScript's `Boolean(JSON.parse(text))` gives it (checked with node 20):
    /// every spelling of zero is falsy, including one that underflows to zero.
    #[test]
    fn truthiness_matches_javascript() {
        for (text, truthy) in [
            ("0", false),
            ("-0", false),
            ("0.0", false),
            ("0.00", false),
            ("0e5", false),
            ("-0.0e-3", false),
            ("1e-400", false),
            ("-1e-324", false),
            ("4.9e-324", true),
            ("1e400", true),
            ("0.1", true),
            ("\"0\"", true),
            ("[]", true),
            ("{}", true),
            ("\"\"", false),
            ("null", false),
            ("false", false),
            ("true", true),
        ] {
            assert_eq!(is_truthy(&raw(text.to_string())), truthy, "{text}");
        }
    }

    /// pi 1.6 fills a null or missing content (`""` for a system message, `[]` for a user,
    /// assistant or tool result; the key kept in place or added last) and leaves every other
    /// message as it is; the fast read of pi's layouts agrees with the scan.
    #[test]
    fn missing_content_is_filled_as_pi_1_6_fills_it() {
        for (message, filled) in [
            (
                r#"{"role":"user","content":"x"}"#,
                r#"{"role":"user","content":"x"}"#,
            ),
            (
                r#"{"role":"user","content":null}"#,
                r#"{"role":"user","content":[]}"#,
            ),
            (
                r#"{"role":"system","timestamp":1}"#,
                r#"{"role":"system","timestamp":1,"content":""}"#,
            ),
            (
                r#"{"role":"toolResult","toolCallId":"c","toolName":"t","content":null,"isError":false}"#,
                r#"{"role":"toolResult","toolCallId":"c","toolName":"t","content":[],"isError":false}"#,
            ),
            (
                r#"{"role":"toolResult","toolCallId":"c","toolName":"t","content":[{"type":"text","text":"n"}]}"#,
                r#"{"role":"toolResult","toolCallId":"c","toolName":"t","content":[{"type":"text","text":"n"}]}"#,
            ),
            (
                r#"{"role":"assistant","x":{"content":null},"content":null}"#,
                r#"{"role":"assistant","x":{"content":null},"content":[]}"#,
            ),
            (
                r#"{"role":"assistant", "content" : null}"#,
                r#"{"role":"assistant", "content" : []}"#,
            ),
            (
                r#"{"role":"bashExecution","command":"ls"}"#,
                r#"{"role":"bashExecution","command":"ls"}"#,
            ),
            (
                r#"{"role":"custom","content":null}"#,
                r#"{"role":"custom","content":null}"#,
            ),
        ] {
            assert_eq!(
                fill_missing_content(raw(message.into())).get(),
                filled,
                "{message}"
            );
        }
    }

    /// A recorded message span is used only where it still frames pi's `"message":{...}`; any
    /// other span (a damaged index) gives way to the scan.
    #[test]
    fn message_span_is_checked() {
        let line = r#"{"type":"message","id":"a","message":{"role":"user","content":"}"},"x":1}"#;
        let start = line.find(r#"{"role""#).expect("message start") as u32;
        let len = r#"{"role":"user","content":"}"}"#.len() as u32;
        let record = |span| Record {
            jump_seq: 0,
            kind: Some(EntryKind::Message),
            message_span: span,
            id: "a".into(),
            ..Record::unlinked(0, line.len() as u32)
        };
        let scanned = field(line, "message").expect("the line has a message");
        let range = indexed_message(&record(Some((start, len))), line).expect("a valid span");
        assert_eq!(&line[range], scanned.get());
        for bad in [
            Some((start + 1, len - 1)),
            Some((start, len - 3)),
            Some((start, u32::MAX)),
            Some((u32::MAX - 1, 2)),
            Some((3, 4)),
            None,
        ] {
            assert_eq!(indexed_message(&record(bad), line), None, "{bad:?}");
        }
    }
}
