//! treelog: a storage engine for the conversation transcripts of AI agents.
//!
//! # Brief overview
//! A session is an append-only JSONL file (the canonical log, readable and writable by
//! pi-coding-agent and OpenClaw unchanged) plus a redb sidecar index that caches what an open
//! needs. [`Session`] is the API: open, append, branch, query the tree, build the context.
//! The index is only a cache: it is checked against the log on every open and rebuilt from it
//! on any doubt.
//!
//! ```
//! let mut session = treelog::Session::in_memory("/work");
//! let user = session.append_message(r#"{"role":"user","content":"hi","timestamp":1}"#).unwrap();
//! session.append_message(r#"{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}"#).unwrap();
//! assert_eq!(session.path_ids(None).unwrap().first(), Some(&user));
//! let context = session.build_context(None).unwrap().to_json();
//! assert!(context.ends_with(r#""thinkingLevel":"off","model":{"provider":"p","modelId":"m"}}"#));
//! ```

pub mod agents;
pub mod audit;
mod context;
pub mod directory;
mod entry_lines;
mod error;
/// The on-disk codecs (lines, records, pages, id pages, seals): public for the benches, the
/// fuzzer and the Node binding's internals, not part of the API users build on.
#[doc(hidden)]
pub mod format;
pub mod fs_safe;
mod index;
pub mod limits;
mod line_reads;
pub mod listing;
#[cfg(feature = "object-store")]
pub mod object_store;
#[cfg(feature = "openclaw")]
pub mod openclaw;
pub mod path_component;
pub mod quiet_panics;
pub mod repair;
mod scan;
#[cfg(feature = "search")]
pub mod search;
pub mod secrets;
mod session;
pub mod stats;
pub mod storage;
mod tree;
mod tree_view;
pub mod verify;

pub use context::plan::{PlannedEntry, ProjectionPlan};
pub use context::{Context, JsonText, PiCompat, ProjectedEntry, Projection};
pub use error::{Error, Result, io_reason};
pub use format::line::{EntryKind, ROLES as MESSAGE_ROLES};
pub use format::write::NewEntry;
pub use index::{
    IndexState, SCHEMA_CHANGED_REASON, SCHEMA_VERSION, SIDECAR_SUFFIX, Verify, sidecar_for,
    sidecar_in_dir, sidecar_path,
};
pub use session::{
    BranchedEntries, Durability, Entry, Header, IndexedEntries, MESSAGE_HEAD_KEYS, NOT_PLAIN,
    OnConflict, OpaqueRecord, PARENT_LISTED, PARENT_NULL, Session, SessionOptions, Stamp, Stats,
    TIMESTAMP_LEN, TreeNode, TreeWalk,
};
pub use tree::PathIds;
pub use tree_view::{TreeFilter, TreeSelector};
