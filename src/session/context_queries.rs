//! The context builds of the session API (pi's `buildSessionContext`,
//! `buildContextEntries`, `buildSessionProjection`): `context.rs` computes them, reading the
//! index and the lines through [`IndexedLines`], which the handle implements here.

use super::{Entry, Session};
use crate::context::plan::ProjectionPlan;
use crate::context::{self, Context, Projection};
use crate::error::Result;
use crate::format::record::Record;
use crate::index::Store;
use crate::line_reads::LineTexts;

impl Session {
    /// pi's `buildSessionContext` for `leaf` (default: this handle's leaf). Reads only the
    /// entries from the latest compaction's first kept entry to the leaf.
    pub fn build_context(&self, leaf: Option<&str>) -> Result<Context> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::build(session, leaf_seq, session.options.pi_compat)
        })
    }

    /// pi 1.6's `buildContextEntries` for `leaf` (default: this handle's leaf): the latest
    /// compaction on the path, its kept entries but system messages, then the entries after
    /// it; without a compaction, the whole path.
    pub fn context_entries(&self, leaf: Option<&str>) -> Result<Vec<Entry>> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::context_entry_seqs(session, leaf_seq)?
                .into_iter()
                .map(|seq| session.entry_at(seq))
                .collect()
        })
    }

    /// pi 1.6's `buildSessionProjection` for `leaf` (default: this handle's leaf): each
    /// context entry with the messages it contributes, edits applied.
    pub fn build_projection(&self, leaf: Option<&str>) -> Result<Projection> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::build_projection(session, leaf_seq)
        })
    }
}

impl Session {
    /// [`Session::build_projection`] for a caller that holds the entries as values already,
    /// keyed by sequence number ([`Session::entry_seq`]): see [`ProjectionPlan`].
    pub fn projection_plan(&self, leaf: Option<&str>) -> Result<ProjectionPlan> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::plan::projection_plan(session, leaf_seq)
        })
    }

    /// [`Session::context_entries`] as sequence numbers.
    pub fn context_entry_seqs(&self, leaf: Option<&str>) -> Result<Vec<u64>> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(leaf)?;
            context::context_entry_seqs(session, leaf_seq)
        })
    }
}

/// A context build reads the index and the lines through this handle (`context.rs` does not
/// name the session).
impl context::IndexedLines for Session {
    fn store(&self) -> &Store {
        Session::store(self)
    }

    fn read_line(&self, record: &Record) -> Result<String> {
        Session::read_line(self, record)
    }

    fn read_lines(&self, records: &[&Record]) -> Result<LineTexts> {
        Session::read_lines(self, records)
    }
}
