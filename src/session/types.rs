//! The values the session API hands out and takes: options and policies, entries, tree
//! nodes, opaque records, counts, stamps. Plain data with small accessors; nothing here
//! reads the log or the index.

use std::borrow::Cow;
use std::path::PathBuf;

use serde_json::value::RawValue;

use crate::context::PiCompat;
use crate::format::json_scan;
use crate::format::line::{EntryKind, json_text_str, top_level_fields};
use crate::format::time::iso_ms_text;
use crate::index::Verify;

/// When appended bytes are made durable (fsync of the log). The index is never fsynced per
/// append: it is a cache, rebuilt from the log after a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync after every append, before it returns: an acknowledged entry survives a crash of
    /// the process and of the machine.
    EveryAppend,
    /// fsync after every `n`th append and on [`Session::sync`] / [`Session::close`]: a process
    /// crash loses nothing acknowledged; a machine crash may lose the appends since the last
    /// fsync (at most `n - 1`).
    Batched(u32),
    /// Never fsync on its own (only [`Session::sync`], on request); the kernel writes back. A
    /// process crash loses nothing acknowledged; a machine crash may lose any append not yet
    /// written back.
    None,
}

/// What an append does when another writer appended a child of this handle's leaf since the
/// handle last looked (it would otherwise silently start a sibling branch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnConflict {
    /// Return [`Error::Conflict`] and write nothing.
    #[default]
    Fail,
    /// Move this handle's leaf to the log's current leaf and append there.
    FollowTip,
    /// Append at this handle's own leaf whatever the other writer did, as pi does: the other
    /// writer's entries become a side branch, and nothing of either writer is lost.
    Branch,
}

/// How a session is opened.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub durability: Durability,
    pub on_conflict: OnConflict,
    pub verify: Verify,
    /// Rebuild the index from the log even if it looks valid.
    pub rebuild_index: bool,
    /// Use a sidecar index (false replays the log into memory, as the reference tools do).
    pub use_index: bool,
    /// Which pi's context rule `build_context` follows (format-spec/log.md §7).
    pub pi_compat: PiCompat,
    /// Where the sidecar index lives: `None` beside the log (`<log>.treelog`); `Some(dir)` in
    /// that directory, under a name derived from the log's canonical path
    /// ([`crate::sidecar_in_dir`]), for session folders that are shared or synced. The
    /// directory is created when an index is first written there.
    pub index_dir: Option<PathBuf>,
    /// Whether the index may be created or written. `false` (read-only) never creates,
    /// catches up on disk or rebuilds a sidecar: a valid one is read (lines appended after it
    /// are read from the log into memory), and without one the log is replayed into memory.
    /// Appends to the log still work.
    pub index_write: bool,
    /// A counter for a progress bar: while the session is opened (and when it rebuilds or
    /// catches up its index later), it is raised after every chunk read to the number of log
    /// bytes indexed so far, and an open leaves it at least at the bytes its index covers (the
    /// log's length, unless it ends in a torn line). It is never lowered (a rebuild after a
    /// failed catch-up counts from where the counter is), so it can be shared by the caller
    /// and read from another thread at any time. `None`: no counting.
    pub progress_bytes: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            durability: Durability::None,
            on_conflict: OnConflict::Fail,
            verify: Verify::Quick,
            rebuild_index: false,
            use_index: true,
            pi_compat: PiCompat::Current,
            index_dir: None,
            index_write: true,
            progress_bytes: None,
        }
    }
}

/// One entry of the session.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub id: String,
    pub kind: EntryKind,
    /// `parentId` as written (`None` for null or absent); it may name no entry.
    pub parent_id: Option<String>,
    /// The entry's parent in the tree (`None` for a root), by the rules of format-spec/log.md.
    pub tree_parent_id: Option<String>,
    pub timestamp: String,
    pub depth: u32,
    pub offset_bytes: u64,
    /// The line as stored (invalid UTF-8 replaced by U+FFFD).
    pub json: String,
}

impl Entry {
    /// The entry's `type` as written (for [`EntryKind::Other`], the type this version does
    /// not know).
    pub fn type_name(&self) -> Cow<'_, str> {
        match self.kind {
            EntryKind::Other => json_scan::scan(&self.json, &["type"])
                .ok()
                .and_then(|found| found.fields[0])
                .and_then(json_text_str)
                .unwrap_or(Cow::Borrowed("other")),
            kind => Cow::Borrowed(kind.as_str()),
        }
    }

    /// A top-level field of the entry as raw JSON (the last one, if a key repeats).
    pub fn field(&self, name: &str) -> Option<Box<RawValue>> {
        top_level_fields(&self.json)
            .ok()?
            .remove(name.as_bytes())
            .map(|raw| raw.to_owned())
    }
}

/// Entries as the index alone knows them, column by column (one allocation per column, none
/// per entry): what a caller hands out before it reads their lines. A *plain* entry (a
/// message entry in pi's layout, see `Record::plain`) is known whole but for its timestamp and
/// message; any other entry's line must be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexedEntries {
    /// The entries' sequence numbers (their places among the log's lines, which never change).
    pub seqs: Vec<u64>,
    /// A plain entry's role code (`format::line::role_code`), or [`NOT_PLAIN`].
    pub roles: Vec<u8>,
    /// Every entry's id, joined by `\n`; empty for an id that holds a `\n` itself (such an
    /// entry, and an entry whose parent has such an id, is not plain).
    pub ids: String,
    /// Where a plain entry's `parentId` is: the index in this batch of the entry it names,
    /// [`PARENT_NULL`] for null, or [`PARENT_LISTED`]: the next of `parents`. Other entries:
    /// [`PARENT_NULL`].
    pub parent_at: Vec<i32>,
    /// The parent ids of the plain entries whose parent is not in the batch, in order, each
    /// after a `\n`.
    pub parents: String,
    /// The plain entries' timestamps, in order, each of [`TIMESTAMP_LEN`] bytes (a plain
    /// entry's timestamp is as `toISOString()` writes it).
    pub timestamps: String,
}

/// The length of each timestamp of [`IndexedEntries::timestamps`].
pub const TIMESTAMP_LEN: usize = 24;

/// [`IndexedEntries::roles`] of an entry whose line must be read.
pub const NOT_PLAIN: u8 = u8::MAX;
/// [`IndexedEntries::parent_at`]: `parentId` is null.
pub const PARENT_NULL: i32 = -1;
/// [`IndexedEntries::parent_at`]: `parentId` is the next of [`IndexedEntries::parents`].
pub const PARENT_LISTED: i32 = -2;

impl IndexedEntries {
    pub(crate) fn with_capacity(entries: usize) -> IndexedEntries {
        IndexedEntries {
            seqs: Vec::with_capacity(entries),
            roles: Vec::with_capacity(entries),
            ids: String::with_capacity(entries * 9),
            parent_at: Vec::with_capacity(entries),
            parents: String::new(),
            timestamps: String::with_capacity(entries * TIMESTAMP_LEN),
        }
    }

    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// Adds an entry: `plain_role` for a plain entry, whose parent is `parent`.
    pub(crate) fn push(
        &mut self,
        seq: u64,
        id: &str,
        plain_role: Option<u8>,
        timestamp_ms: i64,
        parent: Parent,
    ) {
        let id_fits = !id.contains('\n');
        if !self.seqs.is_empty() {
            self.ids.push('\n');
        }
        if id_fits {
            self.ids.push_str(id);
        }
        let timestamp = plain_role.and_then(|_| iso_ms_text(timestamp_ms));
        let parent_at = match (timestamp.is_some() && id_fits, parent) {
            (true, Parent::Null) => Some(PARENT_NULL),
            (true, Parent::At(index)) => i32::try_from(index).ok(),
            (true, Parent::Listed(parent)) if !parent.contains('\n') => {
                self.parents.push('\n');
                self.parents.push_str(parent);
                Some(PARENT_LISTED)
            }
            _ => None,
        };
        self.seqs.push(seq);
        match (parent_at, plain_role, timestamp) {
            (Some(at), Some(role), Some(timestamp)) => {
                self.roles.push(role);
                self.parent_at.push(at);
                self.timestamps
                    .push_str(std::str::from_utf8(&timestamp).expect("the digits are ASCII"));
            }
            _ => {
                self.roles.push(NOT_PLAIN);
                self.parent_at.push(PARENT_NULL);
            }
        }
    }
}

/// Where the parent of an entry added to [`IndexedEntries`] is.
pub(crate) enum Parent<'a> {
    Null,
    /// The entry at this index of the batch.
    At(usize),
    /// Outside the batch: its id.
    Listed(&'a str),
}

/// The message fields `Session::message_heads` reads: those pi's scans over many messages
/// ask for (a role, a model, the model that answered, a stop reason), and the objects beside
/// them.
pub const MESSAGE_HEAD_KEYS: [&str; 15] = [
    "role",
    "api",
    "provider",
    "model",
    "responseModel",
    "stopReason",
    "timestamp",
    "toolCallId",
    "toolName",
    "isError",
    "errorMessage",
    "responseId",
    "content",
    "usage",
    "details",
];

/// A node of the depth-first tree walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeNode {
    pub id: String,
    pub parent_id: Option<String>,
    pub depth: u32,
    pub label: Option<String>,
    pub label_timestamp: Option<String>,
    pub kind: EntryKind,
    pub seq: u64,
}

/// A line kept verbatim that is not an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpaqueRecord {
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// A code for why (format-spec/index.md); [`OpaqueRecord::reason`] says it in words.
    pub code: u8,
}

impl OpaqueRecord {
    pub fn reason(&self) -> &'static str {
        match self.code {
            1 => "not valid JSON",
            2 => "not a JSON object",
            3 => "no string \"type\"",
            5 => "no string \"id\"",
            6 => "leaf control row",
            7 => "session header that is not the first line",
            8 => "line too long to parse",
            _ => "unknown reason",
        }
    }
}

/// Counts for `treelog info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    pub entry_count: u64,
    pub opaque_count: u64,
    pub counts_by_kind: Vec<(EntryKind, u64)>,
    pub log_len_bytes: u64,
    pub indexed_len_bytes: u64,
    /// Bytes after the last complete line (a torn or in-progress write).
    pub torn_tail_bytes: u64,
}

/// An id and a timestamp chosen by the caller for the next appended entry, instead of the
/// ones the handle draws. pi draws both itself (`crypto.randomUUID().slice(0, 8)` and
/// `new Date().toISOString()`); a binding that keeps pi's sources, so that a caller's
/// injected clock and ids apply as they do in pi, hands them over with
/// [`Session::stamp_next`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The entry's id: not taken by any id of the session, and without characters JSON must
    /// escape.
    pub id: String,
    /// The entry's `timestamp`, written as given (pi writes `toISOString()`), without
    /// characters JSON must escape.
    pub timestamp: String,
}

/// What a branched session holds besides its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchedEntries {
    /// The entry lines, in order, without their `\n`.
    pub lines: Vec<String>,
    /// Whether a kept entry is a user or assistant message: pi writes the new file at once
    /// only then (else with the first such message appended).
    pub has_conversation: bool,
}
