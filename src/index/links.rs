//! The numeric tree fields of a record: what indexing a line needs of the lines before it
//! (`index/apply.rs`), kept by the store for the records it looks up again. Plain data.

use crate::format::record::Record;

/// The numeric tree fields of a record: what indexing needs of an earlier line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Links {
    pub canonical: bool,
    pub parent_seq: u64,
    pub jump_seq: u64,
    pub depth: u32,
    pub compaction_seq: u64,
    pub model_seq: u64,
    pub thinking_seq: u64,
    pub model_origin_seq: u64,
}

impl From<&Record> for Links {
    fn from(record: &Record) -> Links {
        Links {
            canonical: record.kind.is_some(),
            parent_seq: record.parent_seq,
            jump_seq: record.jump_seq,
            depth: record.depth,
            compaction_seq: record.compaction_seq,
            model_seq: record.model_seq,
            thinking_seq: record.thinking_seq,
            model_origin_seq: record.model_origin_seq,
        }
    }
}
