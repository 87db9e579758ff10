//! The entries pi's `/session` screen sums, cut down to the fields its sums read: pi 1.6's
//! `getUsageCostBreakdown` (`core/usage-totals.js`) and `computeCacheWaste`
//! (`core/cache-stats.js`) loop over every entry of the file and read, of an assistant
//! message, its `role`, `provider`, `model`, `responseModel` and `usage`; of a tool result its
//! `usage`; of a `usage` entry its `kind`, `provider`, `model` and `usage`; of a compaction or
//! branch summary its type (a cache reset) and `usage`; nothing of any other entry. Handing
//! those functions these cut-down entries in file order gives their answers over the whole
//! file without making a value of every entry. Each field is the raw JSON of the line (the
//! last of a repeated key, as `JSON.parse` keeps), so parsing it gives pi's value. Nothing
//! here writes.

use super::Session;
use crate::error::Result;
use crate::format::json_scan;
use crate::format::line::EntryKind;
use crate::format::record::Record;

/// How many lines one read takes at most.
const LINES_PER_READ: usize = 4096;
/// The role codes of an assistant message and a tool result (`format::message::ROLES`).
const ASSISTANT: u8 = 2;
const TOOL_RESULT: u8 = 3;

/// The fields kept of an assistant message, in the order written.
const ASSISTANT_FIELDS: [&str; 4] = ["provider", "model", "responseModel", "usage"];
/// The fields kept of a `usage` entry, in the order written.
const USAGE_ENTRY_FIELDS: [&str; 4] = ["kind", "provider", "model", "usage"];

impl Session {
    /// The entries among the `max_records` records from `from_seq` that pi's `/session` sums
    /// read, as the text of one JSON array of cut-down entries in file order (see the module
    /// comment; the entries it skips are left out), with the sequence number after the last
    /// record looked at (the record count once the index is done). `None` when the range
    /// holds a record pi may read otherwise: an opaque line, or a message entry whose
    /// `message` is not an object (pi's loop reads its `role`, and may throw).
    pub fn usage_entries_json(
        &self,
        from_seq: u64,
        max_records: u64,
    ) -> Result<Option<(String, u64)>> {
        self.answering(|session| session.usage_entries_unguarded(from_seq, max_records))
    }

    /// The number of records of the index (entries and opaque lines).
    pub fn record_count(&self) -> u64 {
        self.store().record_count()
    }

    fn usage_entries_unguarded(
        &self,
        from_seq: u64,
        max_records: u64,
    ) -> Result<Option<(String, u64)>> {
        let store = self.store();
        let until = from_seq
            .saturating_add(max_records)
            .min(store.record_count());
        let mut out = String::from("[");
        let mut batch: Vec<Record> = Vec::new();
        let mut seq = from_seq;
        while seq < until {
            for record in store.records_from(seq)? {
                if seq >= until {
                    break;
                }
                seq += 1;
                let Some(kind) = record.kind else {
                    return Ok(None);
                };
                let kept = match kind {
                    EntryKind::Message if record.message_span.is_none() => return Ok(None),
                    EntryKind::Message => matches!(record.role, ASSISTANT | TOOL_RESULT),
                    EntryKind::Usage | EntryKind::Compaction | EntryKind::BranchSummary => true,
                    _ => false,
                };
                if kept {
                    batch.push(record);
                    if batch.len() == LINES_PER_READ {
                        self.write_usage_entries(&mut batch, &mut out)?;
                    }
                }
            }
        }
        self.write_usage_entries(&mut batch, &mut out)?;
        out.push(']');
        Ok(Some((out, seq.max(from_seq))))
    }

    /// Reads the lines of `batch` (then empties it) and writes each one's cut-down entry.
    fn write_usage_entries(&self, batch: &mut Vec<Record>, out: &mut String) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let records: Vec<&Record> = batch.iter().collect();
        let lines = self.read_lines(&records)?;
        for (index, record) in batch.iter().enumerate() {
            cut_down(record, lines.line(index), out);
        }
        batch.clear();
        Ok(())
    }
}

/// Writes the cut-down entry of `record`'s `line` to `out` (preceded by a comma unless it is
/// the first), or nothing for a tool result without a `usage`.
fn cut_down(record: &Record, line: &str, out: &mut String) {
    let Some(kind) = record.kind else { return };
    let mut entry = String::new();
    match kind {
        EntryKind::Message => {
            let message = record
                .message_span
                .and_then(|(offset, len)| line.get(offset as usize..offset as usize + len as usize))
                .unwrap_or("{}");
            if record.role == ASSISTANT {
                entry.push_str(r#"{"type":"message","message":{"role":"assistant""#);
                write_fields(message, &ASSISTANT_FIELDS, &mut entry);
            } else {
                let usage = json_scan::scan(message, &["usage"])
                    .ok()
                    .and_then(|found| found.fields[0]);
                let Some(usage) = usage else { return };
                entry.push_str(r#"{"type":"message","message":{"role":"toolResult","usage":"#);
                entry.push_str(usage);
            }
            entry.push_str("}}");
        }
        EntryKind::Usage => {
            entry.push_str(r#"{"type":"usage""#);
            write_fields(line, &USAGE_ENTRY_FIELDS, &mut entry);
            entry.push('}');
        }
        _ => {
            entry.push_str(r#"{"type":""#);
            entry.push_str(kind.as_str());
            entry.push('"');
            write_fields(line, &["usage"], &mut entry);
            entry.push('}');
        }
    }
    if out.len() > 1 {
        out.push(',');
    }
    out.push_str(&entry);
}

/// Writes `,"NAME":RAW` for each of `names` present in the JSON object `object`.
fn write_fields<const N: usize>(object: &str, names: &[&str; N], out: &mut String) {
    let Ok(found) = json_scan::scan(object, names) else {
        return;
    };
    for (name, raw) in names.iter().zip(found.fields) {
        if let Some(raw) = raw {
            out.push_str(",\"");
            out.push_str(name);
            out.push_str("\":");
            out.push_str(raw);
        }
    }
}
