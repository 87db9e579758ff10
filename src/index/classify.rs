//! Classifying a line's bytes, as indexing reads them: invalid UTF-8 is read as JavaScript's
//! decoder reads it. Shared by the catch-up, its lanes (`parallel.rs`) and the open's check of
//! the last record; pure, below everything else of the index.

use std::borrow::Cow;

use crate::format::line::{EntryLine, HeaderLine, Line, OpaqueLine, ParentRef, classify};
use crate::format::size_facts::SizeFacts;

/// Classifies a line's bytes. Invalid UTF-8 is read as JavaScript's decoder reads it, with
/// U+FFFD replacements, so a line pi keeps is kept here too; the fields of such a line are
/// copied out of the repaired text, whose offsets are not the file's, so it gets no message
/// span.
pub(crate) fn classify_bytes(bytes: &[u8], legacy_v1: bool, first_line: bool) -> Line<'_> {
    match crate::format::utf8_str(bytes) {
        Some(text) => classify(text, legacy_v1, first_line),
        None => match classify(&String::from_utf8_lossy(bytes), legacy_v1, first_line) {
            Line::Entry(entry) => Line::Entry(EntryLine {
                message_span: None,
                ..owned_entry(entry)
            }),
            other => owned_line(other),
        },
    }
}

fn owned(text: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(text.into_owned())
}

fn owned_parent(parent: ParentRef<'_>) -> ParentRef<'static> {
    match parent {
        ParentRef::Absent => ParentRef::Absent,
        ParentRef::Root => ParentRef::Root,
        ParentRef::Id(id) => ParentRef::Id(owned(id)),
    }
}

/// The line with its borrowed text copied, so it can leave the chunk it was read from.
fn owned_line(line: Line<'_>) -> Line<'static> {
    match line {
        Line::Blank => Line::Blank,
        Line::Header(header) => Line::Header(HeaderLine {
            id: owned(header.id),
            version: header.version,
            cwd: header.cwd.map(owned),
            timestamp: header.timestamp.map(owned),
            parent_session: header.parent_session.map(owned),
        }),
        Line::Entry(entry) => Line::Entry(owned_entry(entry)),
        Line::Opaque(opaque) => Line::Opaque(OpaqueLine {
            reason: opaque.reason,
            id: opaque.id.map(owned),
            parent: owned_parent(opaque.parent),
            target_id: opaque.target_id.map(owned),
        }),
    }
}

fn owned_entry(entry: EntryLine<'_>) -> EntryLine<'static> {
    EntryLine {
        kind: entry.kind,
        id: entry.id.map(owned),
        parent: owned_parent(entry.parent),
        timestamp: entry.timestamp.map(owned),
        side: entry.side,
        assistant: entry.assistant,
        role: entry.role,
        pi_layout: entry.pi_layout,
        target_id: entry.target_id.map(owned),
        label: entry.label.map(owned),
        name: entry.name.map(owned),
        message_span: entry.message_span,
        model_key: entry.model_key.map(owned),
        usage: entry.usage,
        tool_calls: entry.tool_calls,
        size_facts: SizeFacts {
            name: entry
                .size_facts
                .name
                .map(|(group, name)| (group, owned(name))),
            ..entry.size_facts
        },
    }
}
