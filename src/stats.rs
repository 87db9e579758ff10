//! Where a session's bytes are: counts and line bytes by entry type, message role, tool,
//! extension (`customType`), the images inside messages, the largest entries, and the share
//! of the log on the active path and in the current context. Everything comes from the index:
//! types, roles and sizes from its records, tool and extension names, unknown types and roles
//! and images from its tallies (`format::size_facts`); only the largest entries' lines are
//! read, for their detail. Reads through [`IndexedLines`]; never writes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::context::{IndexedLines, context_entry_seqs};
use crate::error::Result;
use crate::format::line::{EntryKind, KIND_CODE_END, Line, classify};
use crate::format::message::ROLES;
use crate::format::record::{Record, SEQ_NONE};
use crate::format::size_facts::{BASH_EXECUTION_NAME, IMAGES_KEY, NameGroup};
use crate::tree::path_to_root;

/// The largest entries a [`SessionStats`] lists.
pub const LARGEST_COUNT: usize = 10;
/// The key of the lines that are not entries (opaque records).
pub const OPAQUE_KEY: &str = "(not an entry)";
/// The tool key of `bashExecution` messages (commands the user ran with `!`).
pub const BASH_EXECUTION_KEY: &str = BASH_EXECUTION_NAME;

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
    // Per kind code and per role code: what the records say without their lines.
    let mut by_kind = [Tally::default(); KIND_CODE_END];
    let mut opaque = Tally::default();
    let mut by_role = [Tally::default(); ROLES.len() + 1];
    let mut seq = 0;
    while seq < store.record_count() {
        for record in store.records_from(seq)? {
            let bytes = u64::from(record.len_bytes);
            // Of equal sizes, the later entries stay.
            if largest.len() < LARGEST_COUNT {
                largest.push(Reverse((bytes, seq)));
            } else if largest
                .peek()
                .is_some_and(|Reverse(least)| (bytes, seq) > *least)
            {
                largest.pop();
                largest.push(Reverse((bytes, seq)));
            }
            stats.lines.add(bytes);
            match record.kind {
                None => opaque.add(bytes),
                Some(kind) => by_kind[kind as usize].add(bytes),
            }
            if record.kind == Some(EntryKind::Message) {
                let known = usize::from(record.role);
                if (1..=ROLES.len()).contains(&known) {
                    by_role[known].add(bytes);
                }
            }
            seq += 1;
        }
    }
    if opaque.count > 0 {
        stats.by_type.insert(OPAQUE_KEY.to_string(), opaque);
    }
    for kind in EntryKind::ALL {
        let tally = by_kind[kind as usize];
        if tally.count > 0 && kind != EntryKind::Other {
            stats.by_type.insert(kind.as_str().to_string(), tally);
        }
    }
    for (code, role) in ROLES.iter().enumerate() {
        let tally = by_role[code + 1];
        if tally.count > 0 {
            stats.by_role.insert(role.to_string(), tally);
        }
    }
    for (key, (count, bytes)) in store.tallies()? {
        let tally = Tally { count, bytes };
        if key == IMAGES_KEY {
            stats.images = tally;
            continue;
        }
        let mut chars = key.chars();
        let (Some(prefix), Some(':')) = (chars.next(), chars.next()) else {
            continue;
        };
        let name = chars.as_str().to_string();
        let map = match NameGroup::from_prefix(prefix) {
            Some(NameGroup::Tool) => &mut stats.by_tool,
            Some(NameGroup::Extension) => &mut stats.by_custom_type,
            Some(NameGroup::EntryType) => &mut stats.by_type,
            Some(NameGroup::Role) => &mut stats.by_role,
            None => continue,
        };
        map.entry(name).or_default().merge(tally);
    }

    let mut largest: Vec<(u64, u64)> = largest.into_iter().map(|Reverse(pair)| pair).collect();
    largest.sort_by_key(|&(bytes, seq)| (Reverse(bytes), seq));
    for (bytes, seq) in largest {
        let record = store.existing_record(seq)?;
        let line = session.read_line(&record)?;
        stats.largest.push(LargeEntry {
            id: record.id.to_string(),
            kind: record.kind.map_or(OPAQUE_KEY, EntryKind::as_str),
            detail: detail(&record, &line),
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

/// What one of the largest entries is, beyond its type: its tool, extension or role, or the
/// type an unknown entry names, as the line says (`format::size_facts`).
fn detail(record: &Record, line: &str) -> Option<String> {
    record.kind?;
    let Line::Entry(entry) = classify(line, true, false) else {
        return None;
    };
    if let Some((_, name)) = entry.size_facts.name {
        return Some(name.into_owned());
    }
    ROLES
        .get(usize::from(record.role).wrapping_sub(1))
        .filter(|_| record.kind == Some(EntryKind::Message))
        .map(|role| role.to_string())
}
