//! pi 1.6's `/tree` selector over the index (`tree_view.rs` holds its rules): the facts each
//! entry gives the selector, read from the index's records and, for assistant messages (their
//! text and stop reason decide whether they are listed) and searches, from their lines; a
//! window of rows as JSON; the tool call a tool result row names. Nothing here writes.

use std::collections::HashMap;

use super::Session;
use crate::error::Result;
use crate::format::js_text::{js_slice_units, js_trim};
use crate::format::json_scan;
use crate::format::line::{EntryKind, json_text_str};
use crate::format::record::{Record, SEQ_NONE, TIMESTAMP_NONE};
use crate::tree_view::{NONE, TreeFilter, TreeNodeFacts, TreeOrder, TreeSelector, flags};

/// How many lines one read takes at most while scanning.
const LINES_PER_READ: usize = 4096;
/// pi's `extractContent`: the first 200 UTF-16 units of a content's text.
const CONTENT_UNITS: usize = 200;
/// The role code of an assistant message (`format::message::ROLES`).
const ASSISTANT: u8 = 2;

impl Session {
    /// pi's `/tree` selector of this session with `leaf_id` the current leaf, its rows those
    /// of pi's default filter; `None` when the session holds a line that is not an entry
    /// (pi's selector would list what the index does not describe).
    pub fn tree_selector(&self, leaf_id: Option<&str>) -> Result<Option<TreeSelector>> {
        self.answering(|session| session.tree_selector_unguarded(leaf_id))
    }

    fn tree_selector_unguarded(&self, leaf_id: Option<&str>) -> Result<Option<TreeSelector>> {
        let store = self.store();
        let count = store.record_count();
        let mut node_of_seq = vec![NONE; count as usize];
        let mut facts = Vec::new();
        let mut seqs = Vec::new();
        let mut assistants: Vec<(u32, Record)> = Vec::new();
        let mut tool_calls: Vec<(Box<str>, u32)> = Vec::new();
        let mut seq = 0;
        while seq < count {
            for record in store.records_from(seq)? {
                let Some(kind) = record.kind else {
                    return Ok(None);
                };
                let node = facts.len() as u32;
                node_of_seq[seq as usize] = node;
                let parent = match record.parent_seq {
                    SEQ_NONE => NONE,
                    parent => node_of_seq.get(parent as usize).copied().unwrap_or(NONE),
                };
                let flags = match kind {
                    EntryKind::Usage => flags::USAGE,
                    EntryKind::Label
                    | EntryKind::ContextEdit
                    | EntryKind::Custom
                    | EntryKind::ModelChange
                    | EntryKind::ThinkingLevelChange
                    | EntryKind::SessionInfo => flags::SETTINGS,
                    EntryKind::Message if record.role == 1 => flags::USER,
                    EntryKind::Message if record.role == 3 => flags::TOOL_RESULT,
                    _ => 0,
                };
                let timestamp_ms =
                    (record.timestamp_ms != TIMESTAMP_NONE).then_some(record.timestamp_ms);
                if kind == EntryKind::Message && record.role == ASSISTANT {
                    assistants.push((node, record));
                    if assistants.len() == LINES_PER_READ {
                        self.scan_assistants(&mut assistants, &mut facts, &mut tool_calls)?;
                    }
                }
                facts.push(TreeNodeFacts {
                    parent,
                    timestamp_ms,
                    flags,
                });
                seqs.push(seq);
                seq += 1;
            }
        }
        // The batch's nodes are all below `facts.len()`, so each finds its slot.
        self.scan_assistants(&mut assistants, &mut facts, &mut tool_calls)?;
        for (target, _) in store.labels()? {
            if let Some(target_seq) = self.entry_seq(&target)?
                && let Some(&node) = node_of_seq.get(target_seq as usize)
                && node != NONE
            {
                facts[node as usize].flags |= flags::LABELED;
            }
        }
        drop(node_of_seq);
        let leaf = match leaf_id {
            Some(id) => self.node_of(&seqs, id)?,
            None => NONE,
        };
        let order = TreeOrder::new(facts, leaf);
        // pi's map of tool calls is filled in its listing order: the last one listed wins.
        let mut by_id: HashMap<Box<str>, u32> = HashMap::with_capacity(tool_calls.len());
        for (id, node) in tool_calls {
            let position = order.position(node);
            by_id
                .entry(id)
                .and_modify(|kept| {
                    if order.position(*kept) < position {
                        *kept = node;
                    }
                })
                .or_insert(node);
        }
        let rows = order.rows(TreeFilter::Default, |_| true, &[]);
        Ok(Some(TreeSelector {
            order,
            seqs,
            tool_calls: by_id,
            rows,
        }))
    }

    /// Reads the lines of the assistant messages `batch` (then empties it): marks those pi's
    /// selector hides (no text, neither failed nor aborted) and lists their tool calls' ids.
    fn scan_assistants(
        &self,
        batch: &mut Vec<(u32, Record)>,
        facts: &mut [TreeNodeFacts],
        tool_calls: &mut Vec<(Box<str>, u32)>,
    ) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let records: Vec<&Record> = batch.iter().map(|(_, record)| record).collect();
        let lines = self.read_lines(&records)?;
        for (index, (node, record)) in batch.iter().enumerate() {
            let message = message_text(record, lines.line(index));
            let quiet = !assistant_listed(message, |id| tool_calls.push((id.into(), *node)));
            if quiet && let Some(fact) = facts.get_mut(*node as usize) {
                fact.flags |= flags::QUIET_ASSISTANT;
            }
        }
        batch.clear();
        Ok(())
    }

    /// The node of the entry `id` in a selector whose nodes are the entries `seqs`.
    fn node_of(&self, seqs: &[u64], id: &str) -> Result<u32> {
        Ok(match self.entry_seq(id)? {
            Some(seq) => seqs.binary_search(&seq).map_or(NONE, |at| at as u32),
            None => NONE,
        })
    }

    /// The node of the entry `id` in `selector`, or [`NONE`].
    pub fn tree_selector_node(&self, selector: &TreeSelector, id: &str) -> Result<u32> {
        self.answering(|session| session.node_of(&selector.seqs, id))
    }

    /// Filters `selector` again (pi's `applyFilter`): `filter`, the search `tokens` (pi's
    /// query lowercased and split at white space; every one must be in an entry's searchable
    /// text, lowercased), and the entries `folded` (ids) whose descendants are not listed.
    pub fn tree_selector_filter(
        &self,
        selector: &mut TreeSelector,
        filter: TreeFilter,
        tokens: &[String],
        folded: &[String],
    ) -> Result<()> {
        let mut folded_nodes = Vec::with_capacity(folded.len());
        for id in folded {
            let node = self.tree_selector_node(selector, id)?;
            if node != NONE {
                folded_nodes.push(node);
            }
        }
        let matched = if tokens.is_empty() {
            None
        } else {
            Some(self.answering(|session| session.search_matches(selector, tokens))?)
        };
        selector.rows = selector.order.rows(
            filter,
            |node| {
                matched
                    .as_ref()
                    .is_none_or(|matched| matched[node as usize])
            },
            &folded_nodes,
        );
        Ok(())
    }

    /// For every node, whether its searchable text (pi's `getSearchableText`, lowercased)
    /// holds every token.
    fn search_matches(&self, selector: &TreeSelector, tokens: &[String]) -> Result<Vec<bool>> {
        let labels: HashMap<String, String> = self
            .store()
            .labels()?
            .into_iter()
            .map(|(target, value)| (target, value.label))
            .collect();
        let mut matched = vec![false; selector.seqs.len()];
        for (chunk_at, chunk) in selector.seqs.chunks(LINES_PER_READ).enumerate() {
            let records = self.store().records_at(chunk)?;
            let refs: Vec<&Record> = records.iter().collect();
            let lines = self.read_lines(&refs)?;
            for (index, record) in records.iter().enumerate() {
                let text =
                    searchable_text(record, lines.line(index), labels.get(record.id.as_str()));
                let text = text.to_lowercase();
                matched[chunk_at * LINES_PER_READ + index] =
                    tokens.iter().all(|token| text.contains(token.as_str()));
            }
        }
        Ok(matched)
    }

    /// Rows `start..end` of `selector` as a JSON array: for each its entry's `id`, the tree
    /// drawing before its text (`prefix`), whether it is on the path to the leaf (`active`),
    /// `foldable`, `folded`, whether it draws a connector (`connector`), and its `label` and
    /// `labelTimestamp` when it has one.
    pub fn tree_selector_rows_json(
        &self,
        selector: &TreeSelector,
        start: u32,
        end: u32,
    ) -> Result<String> {
        self.answering(|session| {
            let rows = &selector.rows;
            let end = end.min(rows.len() as u32);
            let start = start.min(end);
            let mut seqs: Vec<u64> = (start..end)
                .map(|row| selector.seqs[rows.node(row) as usize])
                .collect();
            seqs.sort_unstable();
            let records = session.store().records_at(&seqs)?;
            let mut out = String::from("[");
            for row in start..end {
                let node = rows.node(row);
                let seq = selector.seqs[node as usize];
                let at = seqs.binary_search(&seq).map_err(|_| {
                    session
                        .store()
                        .read_error(format!("record {seq} was not read"))
                })?;
                let id = records[at].id.as_str();
                if row > start {
                    out.push(',');
                }
                out.push_str("{\"id\":");
                out.push_str(&serde_json::to_string(id).unwrap_or_default());
                out.push_str(",\"prefix\":");
                out.push_str(&serde_json::to_string(&rows.prefix(row)).unwrap_or_default());
                for (name, value) in [
                    ("active", selector.order.is_active(node)),
                    ("foldable", rows.foldable(row)),
                    ("folded", rows.is_folded(row)),
                    ("connector", rows.shows_connector(row)),
                ] {
                    out.push_str(&format!(",\"{name}\":{value}"));
                }
                if let Some(label) = session.store().label(id)? {
                    out.push_str(",\"label\":");
                    out.push_str(&serde_json::to_string(&label.label).unwrap_or_default());
                    out.push_str(",\"labelTimestamp\":");
                    out.push_str(&serde_json::to_string(&label.timestamp).unwrap_or_default());
                }
                out.push('}');
            }
            out.push(']');
            Ok(out)
        })
    }

    /// The tool call pi's selector names a tool result with the call id `id` by: `{"name":
    /// NAME, "arguments": ARGUMENTS}` (raw JSON, absent ones left out) of the last block of
    /// that id in the last assistant message listed holding one; `None` when none does.
    pub fn tree_selector_tool_call(
        &self,
        selector: &TreeSelector,
        id: &str,
    ) -> Result<Option<String>> {
        let Some(&node) = selector.tool_calls.get(id) else {
            return Ok(None);
        };
        self.answering(|session| {
            let seq = selector.seqs[node as usize];
            let record = session.store().existing_record(seq)?;
            let lines = session.read_lines(&[&record])?;
            let message = message_text(&record, lines.line(0));
            let mut found = None;
            for block in content_blocks(message) {
                let Ok(scan) = json_scan::scan(block, &["type", "id", "name", "arguments"]) else {
                    continue;
                };
                if scan.is_object
                    && scan.fields[0].and_then(json_text_str).as_deref() == Some("toolCall")
                    && scan.fields[1].and_then(json_text_str).as_deref() == Some(id)
                {
                    let mut out = String::from("{");
                    if let Some(name) = scan.fields[2] {
                        out.push_str("\"name\":");
                        out.push_str(name);
                    }
                    if let Some(arguments) = scan.fields[3] {
                        if out.len() > 1 {
                            out.push(',');
                        }
                        out.push_str("\"arguments\":");
                        out.push_str(arguments);
                    }
                    out.push('}');
                    found = Some(out);
                }
            }
            Ok(found)
        })
    }
}

/// The raw JSON of a message entry's `message`, from its line.
fn message_text<'a>(record: &Record, line: &'a str) -> &'a str {
    if let Some((offset, len)) = record.message_span
        && let Some(message) = line.get(offset as usize..offset as usize + len as usize)
    {
        return message;
    }
    json_scan::scan(line, &["message"])
        .ok()
        .and_then(|scan| scan.fields[0])
        .unwrap_or("null")
}

/// The raw items of a message's `content` when it is an array (none otherwise).
fn content_blocks(message: &str) -> Vec<&str> {
    json_scan::scan(message, &["content"])
        .ok()
        .and_then(|scan| scan.fields[0])
        .and_then(|content| json_scan::array_items(content).ok())
        .unwrap_or_default()
}

/// A JSON value JavaScript holds falsy: `null`, `false`, a zero, `""`.
fn is_falsy(raw: &str) -> bool {
    match raw {
        "null" | "false" | "\"\"" => true,
        _ => raw.parse::<f64>().is_ok_and(|number| number == 0.0),
    }
}

/// Whether pi's selector lists the assistant message `message` when it is not the leaf: it
/// has text (`hasTextContent`), or its `stopReason` is set and neither `stop` nor `toolUse`.
/// Calls `tool_call` with the id of each of its tool calls, in order.
fn assistant_listed(message: &str, mut tool_call: impl FnMut(&str)) -> bool {
    let Ok(scan) = json_scan::scan(message, &["content", "stopReason"]) else {
        return true;
    };
    let mut has_text = false;
    if let Some(content) = scan.fields[0] {
        if content.starts_with('"') {
            has_text = json_text_str(content).is_some_and(|text| !js_trim(&text).is_empty());
        } else if let Ok(blocks) = json_scan::array_items(content) {
            for block in blocks {
                let Ok(found) = json_scan::scan(block, &["type", "text", "id"]) else {
                    continue;
                };
                if !found.is_object {
                    continue;
                }
                match found.fields[0].and_then(json_text_str).as_deref() {
                    Some("text") => {
                        has_text |= found.fields[1]
                            .and_then(json_text_str)
                            .is_some_and(|text| !js_trim(&text).is_empty());
                    }
                    Some("toolCall") => {
                        if let Some(id) = found.fields[2].and_then(json_text_str) {
                            tool_call(&id);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let failed = scan.fields[1].is_some_and(|reason| {
        !is_falsy(reason) && !matches!(json_text_str(reason).as_deref(), Some("stop" | "toolUse"))
    });
    has_text || failed
}

/// A raw JSON value as `Array.prototype.join` writes it: a string decoded, `null` (and an
/// absent value) empty, an object `[object Object]`, anything else as written.
fn joined_value(raw: Option<&str>) -> String {
    match raw {
        None | Some("null") => String::new(),
        Some(raw) if raw.starts_with('"') => json_text_str(raw)
            .map(|text| text.into_owned())
            .unwrap_or_default(),
        Some(raw) if raw.starts_with('{') => "[object Object]".into(),
        Some(raw) => raw.to_string(),
    }
}

/// pi's `extractContent`: a string content itself, an array's text blocks' texts joined, the
/// first 200 UTF-16 units of that; a cut surrogate pair becomes a white space (its lone half
/// matches no token, and no token holds white space).
fn extracted_content(raw: Option<&str>) -> String {
    let full = match raw {
        Some(raw) if raw.starts_with('"') => json_text_str(raw)
            .map(|text| text.into_owned())
            .unwrap_or_default(),
        Some(raw) => match json_scan::array_items(raw) {
            Ok(blocks) => {
                let mut text = String::new();
                for block in blocks {
                    let Ok(found) = json_scan::scan(block, &["type", "text"]) else {
                        continue;
                    };
                    if found.is_object
                        && found.fields[0].and_then(json_text_str).as_deref() == Some("text")
                    {
                        text.push_str(
                            &found.fields[1]
                                .map_or_else(|| "undefined".into(), |raw| joined_value(Some(raw))),
                        );
                    }
                }
                text
            }
            Err(_) => String::new(),
        },
        None => String::new(),
    };
    let (kept, cut) = js_slice_units(&full, CONTENT_UNITS);
    let mut out = kept.to_string();
    if cut {
        out.push(' ');
    }
    out
}

/// pi's `getSearchableText` of the entry on `line` (its label, if any, first).
fn searchable_text(record: &Record, line: &str, label: Option<&String>) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(label) = label.filter(|label| !label.is_empty()) {
        parts.push(label.clone());
    }
    let field = |name: &str| -> Option<&str> {
        json_scan::scan(line, &[name])
            .ok()
            .and_then(|scan| scan.fields[0])
    };
    match record.kind {
        Some(EntryKind::Message) => {
            let message = message_text(record, line);
            if let Ok(scan) = json_scan::scan(message, &["role", "content", "command"]) {
                let role = joined_value(scan.fields[0]);
                parts.push(role.clone());
                if let Some(content) = scan.fields[1].filter(|raw| !is_falsy(raw)) {
                    parts.push(extracted_content(Some(content)));
                }
                if role == "bashExecution" && scan.fields[2].is_some_and(|raw| !is_falsy(raw)) {
                    parts.push(joined_value(scan.fields[2]));
                }
            }
        }
        Some(EntryKind::CustomMessage) => {
            parts.push(joined_value(field("customType")));
            let content = field("content");
            if content.is_some_and(|raw| raw.starts_with('"')) {
                parts.push(joined_value(content));
            } else {
                parts.push(extracted_content(
                    content.filter(|raw| raw.starts_with('[')),
                ));
            }
        }
        Some(EntryKind::Compaction) => parts.push("compaction".into()),
        Some(EntryKind::BranchSummary) => {
            parts.push("branch summary".into());
            parts.push(joined_value(field("summary")));
        }
        Some(EntryKind::SessionInfo) => {
            parts.push("title".into());
            if let Some(name) = field("name").filter(|raw| !is_falsy(raw)) {
                parts.push(joined_value(Some(name)));
            }
        }
        Some(EntryKind::ModelChange) => {
            parts.push("model".into());
            parts.push(joined_value(field("modelId")));
        }
        Some(EntryKind::ThinkingLevelChange) => {
            parts.push("thinking".into());
            parts.push(joined_value(field("thinkingLevel")));
        }
        Some(EntryKind::Custom) => {
            parts.push("custom".into());
            parts.push(joined_value(field("customType")));
        }
        Some(EntryKind::ContextEdit) => {
            parts.push("context edit".into());
            parts.push(
                if field("replacement") == Some("null") {
                    "omit"
                } else {
                    "replace"
                }
                .into(),
            );
            parts.push(joined_value(field("targetId")));
        }
        Some(EntryKind::Label) => {
            parts.push("label".into());
            parts.push(joined_value(field("label")));
        }
        _ => {}
    }
    parts.join(" ")
}
