//! Where a session's bytes are: counts and line bytes by entry type, message role, tool,
//! extension (`customType`), the images inside messages, the largest entries, and the share
//! of the log on the active path and in the current context. Types, roles, sizes and the
//! path come from the index; the lines are read once, in file order, in chunks, only for what
//! the index does not hold (a tool's name, an extension's name, images). Reads through
//! [`IndexedLines`]; never writes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::context::{IndexedLines, context_entry_seqs};
use crate::error::Result;
use crate::format::json_scan;
use crate::format::line::{EntryKind, json_text_str};
use crate::format::message::ROLES;
use crate::format::record::{Record, SEQ_NONE};
use crate::tree::path_to_root;

/// The largest entries a [`SessionStats`] lists.
pub const LARGEST_COUNT: usize = 10;
/// The line bytes read together, at most (one line longer than this is read alone).
const CHUNK_BYTES: u64 = 8 << 20;
/// The key of the lines that are not entries (opaque records).
pub const OPAQUE_KEY: &str = "(not an entry)";
/// The tool key of `bashExecution` messages (commands the user ran with `!`).
pub const BASH_EXECUTION_KEY: &str = "bashExecution";

/// A count of lines and their bytes (each line without its newline).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    pub bytes: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
    }

    fn merge(&mut self, other: Tally) {
        self.count += other.count;
        self.bytes += other.bytes;
    }
}

/// One of the largest entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LargeEntry {
    pub id: String,
    /// The entry's type (`message`, `custom`...).
    pub kind: &'static str,
    /// Its role (a message), `customType` (custom entries) or tool, when it has one.
    pub detail: Option<String>,
    pub bytes: u64,
}

/// Where one session's bytes are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// The indexed bytes of the log (its header line and newlines included).
    pub log_bytes: u64,
    /// Every line but the header: entries and opaque records.
    pub lines: Tally,
    pub by_type: BTreeMap<String, Tally>,
    /// Message entries by their message's role.
    pub by_role: BTreeMap<String, Tally>,
    /// Tool results by `toolName`, and `bashExecution` messages under [`BASH_EXECUTION_KEY`].
    pub by_tool: BTreeMap<String, Tally>,
    /// `custom` and `custom_message` entries by `customType`.
    pub by_custom_type: BTreeMap<String, Tally>,
    /// Image blocks in message contents: how many, and the bytes of their data.
    pub images: Tally,
    /// The largest entries, largest first.
    pub largest: Vec<LargeEntry>,
    /// The entries on the path to the leaf.
    pub active_path: Tally,
    /// The entries of the current context (pi 1.6's context entries of the leaf).
    pub context: Tally,
}

impl SessionStats {
    /// Adds `other`'s counts (the largest entries of both, the largest kept).
    pub fn merge(&mut self, other: &SessionStats) {
        self.log_bytes += other.log_bytes;
        self.lines.merge(other.lines);
        for (mine, theirs) in [
            (&mut self.by_type, &other.by_type),
            (&mut self.by_role, &other.by_role),
            (&mut self.by_tool, &other.by_tool),
            (&mut self.by_custom_type, &other.by_custom_type),
        ] {
            for (key, tally) in theirs {
                mine.entry(key.clone()).or_default().merge(*tally);
            }
        }
        self.images.merge(other.images);
        self.active_path.merge(other.active_path);
        self.context.merge(other.context);
        self.largest.extend(other.largest.iter().cloned());
        self.largest.sort_by_key(|entry| Reverse(entry.bytes));
        self.largest.truncate(LARGEST_COUNT);
    }
}

/// The stats of a session whose leaf is `leaf_seq` (`SEQ_NONE`: no leaf).
pub(crate) fn session_stats(session: &impl IndexedLines, leaf_seq: u64) -> Result<SessionStats> {
    let store = session.store();
    let mut stats = SessionStats {
        log_bytes: store.indexed_len_bytes,
        ..SessionStats::default()
    };
    let mut largest: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut chunk: Vec<(u64, Record)> = Vec::new();
    let mut chunk_bytes = 0;
    let mut seq = 0;
    while seq < store.record_count() {
        for record in store.records_from(seq)? {
            let bytes = u64::from(record.len_bytes);
            largest.push(Reverse((bytes, seq)));
            if largest.len() > LARGEST_COUNT {
                largest.pop();
            }
            chunk_bytes += bytes;
            chunk.push((seq, record));
            seq += 1;
            if chunk_bytes >= CHUNK_BYTES {
                count_chunk(session, &chunk, &mut stats)?;
                chunk.clear();
                chunk_bytes = 0;
            }
        }
    }
    count_chunk(session, &chunk, &mut stats)?;

    let mut largest: Vec<(u64, u64)> = largest.into_iter().map(|Reverse(pair)| pair).collect();
    largest.sort_by_key(|&(bytes, seq)| (Reverse(bytes), seq));
    for (bytes, seq) in largest {
        let record = store.existing_record(seq)?;
        let line = session.read_line(&record)?;
        let facts = LineFacts::of(&record, &line);
        stats.largest.push(LargeEntry {
            id: record.id.to_string(),
            kind: record.kind.map_or(OPAQUE_KEY, EntryKind::as_str),
            detail: facts.detail(),
            bytes,
        });
    }

    if leaf_seq != SEQ_NONE {
        for (_, record) in path_to_root(store, leaf_seq)? {
            stats.active_path.add(u64::from(record.len_bytes));
        }
        let seqs = context_entry_seqs(session, leaf_seq)?;
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        for record in store.records_at(&sorted)? {
            stats.context.add(u64::from(record.len_bytes));
        }
    }
    Ok(stats)
}

/// Counts the lines of `chunk`, read in one go.
fn count_chunk(
    session: &impl IndexedLines,
    chunk: &[(u64, Record)],
    stats: &mut SessionStats,
) -> Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    let records: Vec<&Record> = chunk.iter().map(|(_, record)| record).collect();
    let lines = session.read_lines(&records)?;
    for (index, record) in records.iter().enumerate() {
        let bytes = u64::from(record.len_bytes);
        let line = lines.line(index);
        stats.lines.add(bytes);
        let facts = LineFacts::of(record, line);
        let type_key = match record.kind {
            None => OPAQUE_KEY.to_string(),
            Some(EntryKind::Other) => facts.type_name.clone().unwrap_or_else(|| "other".into()),
            Some(kind) => kind.as_str().to_string(),
        };
        stats.by_type.entry(type_key).or_default().add(bytes);
        if let Some(role) = &facts.role {
            stats.by_role.entry(role.clone()).or_default().add(bytes);
        }
        if let Some(tool) = &facts.tool {
            stats.by_tool.entry(tool.clone()).or_default().add(bytes);
        }
        if let Some(custom_type) = &facts.custom_type {
            stats
                .by_custom_type
                .entry(custom_type.clone())
                .or_default()
                .add(bytes);
        }
        if memchr::memmem::find(line.as_bytes(), b"\"image\"").is_some() {
            count_images(record, line, &mut stats.images);
        }
    }
    Ok(())
}

/// What one line says of itself beyond its record.
#[derive(Default)]
struct LineFacts {
    type_name: Option<String>,
    role: Option<String>,
    tool: Option<String>,
    custom_type: Option<String>,
}

impl LineFacts {
    fn of(record: &Record, line: &str) -> LineFacts {
        let text = |raw: Option<&str>| raw.and_then(json_text_str).map(|text| text.into_owned());
        let mut facts = LineFacts::default();
        match record.kind {
            Some(EntryKind::Message) => {
                let known = ROLES.get(usize::from(record.role).wrapping_sub(1));
                let role = known.map(|role| role.to_string()).or_else(|| {
                    message_field(line, "role").map(|role| text(Some(role)).unwrap_or_default())
                });
                facts.tool = match role.as_deref() {
                    Some("toolResult") => Some(
                        text(message_field(line, "toolName")).unwrap_or_else(|| "(none)".into()),
                    ),
                    Some("bashExecution") => Some(BASH_EXECUTION_KEY.into()),
                    _ => None,
                };
                facts.role = Some(role.unwrap_or_else(|| "(none)".into()));
            }
            Some(EntryKind::Custom | EntryKind::CustomMessage) => {
                let found = json_scan::scan(line, &["customType"]).ok();
                facts.custom_type = Some(
                    text(found.and_then(|found| found.fields[0]))
                        .unwrap_or_else(|| "(none)".into()),
                );
            }
            Some(EntryKind::Other) => {
                let found = json_scan::scan(line, &["type"]).ok();
                facts.type_name = text(found.and_then(|found| found.fields[0]));
            }
            _ => {}
        }
        facts
    }

    fn detail(self) -> Option<String> {
        self.tool
            .or(self.custom_type)
            .or(self.role)
            .or(self.type_name)
    }
}

/// A field of the line's `message` object, raw.
fn message_field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let message = json_scan::scan(line, &["message"]).ok()?.fields[0]?;
    json_scan::scan(message, &[name]).ok()?.fields[0]
}

/// The image blocks of a message's content (or a custom message's): `{"type":"image",
/// "data":...}` objects in the content array, their data's length in bytes as stored.
fn count_images(record: &Record, line: &str, images: &mut Tally) {
    let content = match record.kind {
        Some(EntryKind::Message) => message_field(line, "content"),
        Some(EntryKind::CustomMessage) => json_scan::scan(line, &["content"])
            .ok()
            .and_then(|found| found.fields[0]),
        _ => None,
    };
    let Some(content) = content else {
        return;
    };
    let Ok(blocks) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(content) else {
        return;
    };
    for block in blocks {
        let Ok(found) = json_scan::scan(block.get(), &["type", "data"]) else {
            continue;
        };
        if found.fields[0] == Some("\"image\"") {
            images.add(found.fields[1].map_or(0, |data| data.len().saturating_sub(2) as u64));
        }
    }
}
