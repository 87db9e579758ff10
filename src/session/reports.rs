//! The reports over a whole session: what compactions let go (`crate::audit`) and where the
//! bytes are (`crate::stats`). Both read through the handle as a context build does.

use super::Session;
use crate::audit::{self, Audit, AuditScope};
use crate::error::Result;
use crate::stats::{self, SessionStats};

impl Session {
    /// What each compaction and branch summary in `scope` took out of the context, and
    /// whether a summarizer was given it.
    pub fn audit(&self, scope: AuditScope) -> Result<Audit> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(None)?;
            audit::audit(session, leaf_seq, scope)
        })
    }

    /// Where the log's bytes are: by entry type, role, tool, extension, images, the largest
    /// entries, the active path and the context. One read of the log, in file order.
    pub fn size_stats(&self) -> Result<SessionStats> {
        self.answering(|session| {
            let leaf_seq = session.leaf_or(None)?;
            stats::session_stats(session, leaf_seq)
        })
    }
}
