//! One handle's state in model terms, and the rules that move it: what it has read of the log,
//! where its leaf is, the conflict rule an append applies (format-spec/log.md §3), and what an
//! append, a refresh or an open leave behind. Every rule takes the log's bytes as they are.

use treelog::OnConflict;

use super::Model;

/// What a handle has seen of the log, in model terms.
#[derive(Clone, Debug)]
pub struct Handle {
    /// The handle's leaf: an index into the entries of the model of what it has read.
    pub leaf: Option<usize>,
    /// The log prefix this handle has indexed (complete lines).
    pub seen_len: usize,
    /// The prefix the conflict rule compares against: `seen_len`, except after a conflict,
    /// which stays (a retry checks the same lines) until `refresh` or an append succeeds.
    pub base_len: usize,
    /// Opened on an empty log: its first append writes the header if the log is still empty.
    pub header_pending: bool,
}

/// What an append does, as the model predicts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Append {
    /// Another writer appended a child of the handle's leaf, `their_id` the first in the log:
    /// `Error::Conflict`, nothing written.
    Conflict { their_id: String },
    /// The line that decides the header is not one (log.md §2): `Error::AppendRefused`, nothing
    /// written.
    Refused,
    /// The append writes its lines after the handle's leaf (`Handle::leaf`, as moved).
    Writes,
}

impl Handle {
    /// A handle that created a new, empty log.
    pub fn created() -> Handle {
        Handle {
            leaf: None,
            seen_len: 0,
            base_len: 0,
            header_pending: true,
        }
    }

    /// A handle just opened on a log holding `log`: at the log's leaf, everything read.
    pub fn opened(log: &[u8]) -> Handle {
        let now = Model::parse(log);
        Handle {
            leaf: now.log_leaf,
            seen_len: now.read_len,
            base_len: now.read_len,
            header_pending: now.file_len == 0,
        }
    }

    /// The model of what the handle has read of `log`.
    pub fn view(&self, log: &[u8]) -> Model {
        Model::parse(&log[..self.seen_len])
    }

    /// The model of the prefix the conflict rule compares against.
    pub fn base(&self, log: &[u8]) -> Model {
        Model::parse(&log[..self.base_len])
    }

    /// The handle's leaf once it has caught up with `now`: an entry it had read that is no
    /// longer one (a line read without its `\n`, onto which another writer then glued bytes)
    /// gives way to the log's leaf.
    pub fn leaf_after_catch_up(&self, view: &Model, now: &Model) -> Option<usize> {
        match self.leaf {
            Some(index)
                if now.entries.get(index).map(|entry| entry.offset)
                    != Some(view.entries[index].offset) =>
            {
                now.log_leaf
            }
            leaf => leaf,
        }
    }

    /// `Session::refresh` on a log holding `log`: a handle at the leaf of the prefix it last
    /// compared against follows the log's leaf, whatever was appended.
    pub fn refresh(&mut self, log: &[u8]) {
        let base = self.base(log);
        let now = Model::parse(log);
        self.leaf = self.leaf_after_catch_up(&self.view(log), &now);
        if self.leaf == base.log_leaf {
            self.leaf = now.log_leaf;
        }
        self.seen_len = now.read_len;
        self.base_len = now.read_len;
        self.header_pending &= now.file_len == 0;
    }

    /// An append is about to run on a log holding `log`: the handle reads the log, follows it
    /// as the rules say, and the model tells what the append does. On `Append::Writes` the
    /// caller calls [`Handle::appended`] with the log after the append.
    pub fn before_append(&mut self, log: &[u8], on_conflict: OnConflict) -> Append {
        assert_ne!(
            on_conflict,
            OnConflict::Branch,
            "the model knows `Fail` and `FollowTip`"
        );
        let view = self.view(log);
        let now = Model::parse(log);
        let base = self.base(log);
        self.leaf = self.leaf_after_catch_up(&view, &now);
        let conflict = now
            .entries
            .iter()
            .filter(|entry| entry.offset >= self.base_len)
            .find(|entry| entry.parent == self.leaf);
        if let Some(theirs) = conflict {
            if on_conflict == OnConflict::Fail {
                let their_id = theirs.id.clone();
                self.seen_len = now.read_len;
                self.header_pending &= log.is_empty();
                return Append::Conflict { their_id };
            }
            self.leaf = now.log_leaf;
        } else if self.leaf == base.log_leaf {
            self.leaf = now.log_leaf;
        }
        if now.decided && now.header_id.is_none() {
            // Unlike a conflict, a refusal leaves no base behind: the next append checks only
            // the lines written after this one.
            self.seen_len = now.read_len;
            self.base_len = now.read_len;
            self.header_pending = false;
            return Append::Refused;
        }
        Append::Writes
    }

    /// The append wrote its lines: the log now holds `log`, and its last entry is the leaf.
    pub fn appended(&mut self, log: &[u8]) {
        let after = Model::parse(log);
        *self = Handle {
            leaf: after.entries.len().checked_sub(1),
            seen_len: after.read_len,
            base_len: after.read_len,
            header_pending: false,
        };
    }
}
