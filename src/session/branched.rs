//! The entries of a session branched off at one entry, as pi 1.6's `createBranchedSession`
//! writes them: the path from the root to that entry without its label entries, each entry
//! re-linked to the previous one kept, a compaction's `firstKeptEntryId` re-pointed from a
//! dropped label to the entry that followed it, then one new label entry per label of a kept
//! entry, in the order pi's label map holds them.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::{BranchedEntries, Session};
use crate::error::Result;
use crate::format::fields::with_field;
use crate::format::ids::entry_id_from_draws;
use crate::format::json_scan;
use crate::format::json_string::json_string;
use crate::format::line::{self, EntryKind, Line, json_text_str, relink};
use crate::format::record::{LabelValue, Record};
use crate::format::write::NewEntry;
use crate::tree;

impl Session {
    /// The entries of a new session holding the path from the root to `leaf_id`
    /// ([`BranchedEntries`]). New label entries take ids drawn from `draw_uuid` as pi's
    /// `generateId` draws them from `crypto.randomUUID`: the first 8 characters of a uuid not
    /// taken by a kept entry or an earlier new label, else after 100 draws a whole uuid.
    pub fn branched_entries(
        &self,
        leaf_id: &str,
        draw_uuid: impl FnMut() -> String,
    ) -> Result<BranchedEntries> {
        let draw_uuid = RefCell::new(draw_uuid);
        self.answering(|session| {
            session.branched_entries_once(leaf_id, &mut *draw_uuid.borrow_mut())
        })
    }

    fn branched_entries_once(
        &self,
        leaf_id: &str,
        draw_uuid: &mut dyn FnMut() -> String,
    ) -> Result<BranchedEntries> {
        let leaf_seq = self.require_seq(leaf_id)?;
        let path = tree::path_to_root(self.store(), leaf_seq)?;
        let mut lines = Vec::with_capacity(path.len());
        let mut kept: HashSet<String> = HashSet::with_capacity(path.len());
        // A dropped label's id, to the id of the entry after it on the path.
        let mut replaced_label: HashMap<String, String> = HashMap::new();
        let mut pending_labels = Vec::new();
        let mut previous: Option<String> = None;
        let mut has_conversation = false;
        for (_, record) in &path {
            let id = record.id.to_string();
            if record.kind == Some(EntryKind::Label) {
                pending_labels.push(id);
                continue;
            }
            for label_id in pending_labels.drain(..) {
                replaced_label.insert(label_id, id.clone());
            }
            let mut json = self.with_id(self.read_line(record)?, record)?;
            if record.kind == Some(EntryKind::Compaction) {
                json = self.repointed_first_kept(json, &id, &replaced_label, record)?;
            }
            lines.push(
                relink(&json, previous.as_deref()).ok_or_else(|| self.not_an_object(record))?,
            );
            has_conversation |= record.kind == Some(EntryKind::Message)
                && matches!(
                    line::ROLES.get(usize::from(record.role).wrapping_sub(1)),
                    Some(&("user" | "assistant"))
                );
            kept.insert(id.clone());
            previous = Some(id);
        }
        let mut parent = previous.filter(|id| !id.is_empty());
        for (target_id, value) in self.labels_in_map_order()? {
            if !kept.contains(&target_id) {
                continue;
            }
            let id = entry_id_from_draws(&mut *draw_uuid, |candidate| kept.contains(candidate));
            let entry = NewEntry::Label {
                target_id,
                label: Some(value.label),
            };
            lines.push(entry.encode(&id, parent.as_deref(), &value.timestamp));
            kept.insert(id.clone());
            parent = Some(id);
        }
        Ok(BranchedEntries {
            lines,
            has_conversation,
        })
    }

    /// The current labels in the order of pi's label map: a label set first (or set again
    /// after a clear) goes last; setting it again keeps its place.
    fn labels_in_map_order(&self) -> Result<Vec<(String, LabelValue)>> {
        let mut order: Vec<Option<(String, LabelValue)>> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        if self.store().state.kind_counts[EntryKind::Label as usize] == 0 {
            return Ok(Vec::new());
        }
        let count = self.store().record_count();
        let mut seq = 0;
        while seq < count {
            let records = self.store().records_from(seq)?;
            if records.is_empty() {
                break;
            }
            seq += records.len() as u64;
            for record in records.iter().filter(|r| r.kind == Some(EntryKind::Label)) {
                let json = self.read_line(record)?;
                let Line::Entry(entry) = line::classify(&json, false, false) else {
                    continue;
                };
                let Some(target) = entry.target_id else {
                    continue;
                };
                let label = entry.label.filter(|label| !label.is_empty());
                match label {
                    Some(label) => {
                        let value = LabelValue {
                            label: label.into_owned(),
                            timestamp: entry.timestamp.as_deref().unwrap_or_default().to_string(),
                        };
                        match at.get(target.as_ref()) {
                            Some(&slot) => order[slot] = Some((target.into_owned(), value)),
                            None => {
                                at.insert(target.to_string(), order.len());
                                order.push(Some((target.into_owned(), value)));
                            }
                        }
                    }
                    None => {
                        if let Some(slot) = at.remove(target.as_ref()) {
                            order[slot] = None;
                        }
                    }
                }
            }
        }
        Ok(order.into_iter().flatten().collect())
    }

    /// A compaction's line with its `firstKeptEntryId` moved from a dropped label to the
    /// entry kept after it (pi: `firstKeptEntryId === id ? id : replaced ?? firstKeptEntryId`).
    fn repointed_first_kept(
        &self,
        json: String,
        id: &str,
        replaced_label: &HashMap<String, String>,
        record: &Record,
    ) -> Result<String> {
        let first_kept = match json_scan::scan(&json, &["firstKeptEntryId"]) {
            Ok(found) if found.is_object => found.fields[0].and_then(json_text_str),
            _ => return Err(self.not_an_object(record)),
        };
        let Some(replacement) = first_kept
            .filter(|first_kept| first_kept != id)
            .and_then(|first_kept| replaced_label.get(first_kept.as_ref()))
        else {
            return Ok(json);
        };
        with_field(&json, "firstKeptEntryId", &json_string(replacement))
            .ok_or_else(|| self.not_an_object(record))
    }

    /// A line with its entry's id, as pi's migration gives a version 1 entry one (added last).
    fn with_id(&self, json: String, record: &Record) -> Result<String> {
        if self.store().state.header_version >= 2 || record.id.is_empty() {
            return Ok(json);
        }
        match json_scan::scan(&json, &["id"]) {
            Ok(found) if found.is_object && found.fields[0].is_some() => Ok(json),
            Ok(found) if found.is_object => with_field(&json, "id", &json_string(&record.id))
                .ok_or_else(|| self.not_an_object(record)),
            _ => Err(self.not_an_object(record)),
        }
    }
}
