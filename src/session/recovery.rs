//! A damaged index never answers (format-spec/index.md §3, "Damage found by a read").
//!
//! Opening checks what an open can check cheaply; the rest of the index is checked as it is
//! read (sealed values, tiled id pages, counted small tables). A read that finds damage
//! returns [`Error::Index`] from the store; the session then rebuilds the index from the log
//! and answers the same call again from the new one, so the caller sees the answer a replay of
//! the log gives, and the damaged sidecar is replaced on disk (the next open does not meet it).
//!
//! Queries hold `&self`, and may hold borrows of the store (a tree walk), so the rebuilt
//! store goes into a cell beside the old one, which stays alive until the next `&mut self`
//! call moves the new one in. A handle recovers once this way: damage found again (a rebuild
//! cannot produce it) is returned as the error it is.

use super::{Recovered, Session};
use crate::error::{Error, Result};
use crate::index::{IndexState, Store, Verify};

impl Session {
    /// Runs `query`; if it finds the index damaged, rebuilds the index from the log and runs
    /// it again against the new one.
    pub(super) fn answering<T>(&self, query: impl Fn(&Session) -> Result<T>) -> Result<T> {
        match query(self) {
            Err(Error::Index { reason, .. }) if self.recover(&reason) => query(self),
            answer => answer,
        }
    }

    /// Rebuilds the index into `recovered` after a read found it damaged (`reason`). False
    /// when this handle cannot: it has no sidecar, or it recovered once already.
    pub(super) fn recover(&self, reason: &str) -> bool {
        if self.recovered.get().is_some() {
            return false;
        }
        match self.rebuilt_store(reason) {
            Some(recovered) => self.recovered.set(recovered).is_ok(),
            None => false,
        }
    }

    /// [`Session::recover`] for a call that holds `&mut self`: the rebuilt store replaces the
    /// damaged one at once. Fails with the original error when no rebuild is possible.
    pub(super) fn recover_now(&mut self, damage: Error) -> Result<()> {
        self.settle_recovered();
        let Error::Index { reason, .. } = &damage else {
            return Err(damage);
        };
        match self.rebuilt_store(reason) {
            Some(recovered) => {
                self.store = recovered.store;
                self.index_state = recovered.index_state;
                Ok(())
            }
            None => Err(damage),
        }
    }

    /// Moves a store rebuilt by a query into place (calls that hold `&mut self` start here).
    pub(super) fn settle_recovered(&mut self) {
        if let Some(recovered) = self.recovered.take() {
            self.store = recovered.store;
            self.index_state = recovered.index_state;
        }
    }

    /// A new index built from the whole log, replacing the sidecar on disk (the damaged file is
    /// renamed over, so neither this handle nor the next open reads it again). The new store
    /// has read the whole log, as a `refresh` would (this handle's leaf does not move).
    fn rebuilt_store(&self, reason: &str) -> Option<Recovered> {
        if !self.options.use_index || !self.persistent {
            return None;
        }
        let sidecar = self.sidecar_location();
        let (store, state) = if self.options.index_write {
            Store::open(
                self.storage.as_ref(),
                &sidecar,
                Verify::Quick,
                true,
                &self.options.progress_bytes,
            )
            .ok()?
        } else {
            // Read-only: the damaged sidecar is left as it is; the log is replayed into memory.
            let reason = format!("{reason}; not rebuilt: index writes are off");
            Store::replayed(
                self.storage.as_ref(),
                reason,
                true,
                &self.options.progress_bytes,
            )
            .ok()?
        };
        // A read found the sidecar damaged, whatever became of it.
        let index_state = match state {
            IndexState::Rebuilt { .. } => IndexState::Rebuilt {
                reason: reason.to_string(),
                damaged: true,
            },
            // Could not be written (a read-only directory): the log was replayed into memory.
            IndexState::Unindexed { reason, .. } => IndexState::Unindexed {
                reason,
                damaged: true,
            },
            other => other,
        };
        Some(Recovered { store, index_state })
    }
}
