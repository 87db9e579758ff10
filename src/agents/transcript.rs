//! What every agent's session parses into: its lines in file order, the tree of its entries,
//! its leaf, and what was wrong with it. Plain data; the parsers fill it.

/// The agent whose session a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// pi-coding-agent's (and OpenClaw's) JSONL session, format-spec/log.md.
    Pi,
    /// Claude Code's session file, format-spec/claude-code.md.
    ClaudeCode,
    /// Codex CLI's rollout, format-spec/codex.md.
    Codex,
}

impl Format {
    /// The name `--agent` takes and JSON output writes: `pi`, `claude`, `codex`.
    pub fn agent_name(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::ClaudeCode => "claude",
            Format::Codex => "codex",
        }
    }

    /// The name people know the format by: `pi`, `Claude Code`, `Codex`.
    pub fn display_name(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::ClaudeCode => "Claude Code",
            Format::Codex => "Codex",
        }
    }
}

/// One JSON line of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Byte offset of the line's first byte (after any NUL padding) in the file.
    pub offset: usize,
    /// Its length in bytes, without the `\n`.
    pub len: usize,
    /// Its `type`.
    pub kind: String,
    /// What kind of `type` it is, where the format says: a `system` line's `subtype`, an
    /// `attachment`'s `attachment.type`, a Codex `payload.type`.
    pub subtype: Option<String>,
    /// The index in [`Transcript::entries`] when the line is a tree entry.
    pub entry: Option<usize>,
}

/// A node of the session's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The index of its line in [`Transcript::lines`].
    pub line: usize,
    /// Its id in the file (Claude Code's `uuid`); Codex lines have none.
    pub id: Option<String>,
    /// Its parent's index in [`Transcript::entries`]: always an earlier entry, so the tree has
    /// no cycles. `None` for a root.
    pub parent: Option<usize>,
    /// For a Claude Code compact boundary, the entry its `logicalParentUuid` names: the
    /// history it summarises. The context does not cross this link.
    pub logical_parent: Option<usize>,
    /// A subagent's entry (Claude Code's `isSidechain`).
    pub sidechain: bool,
}

/// What was wrong with a line; the line is skipped or read as far as it goes, never fatal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// The line is not a JSON object.
    NotJson,
    /// The object has no string `type`.
    NoType,
    /// NUL bytes stood before the line (a write torn at a crash); they were skipped.
    NulPadding,
    /// The parent it names is no earlier entry of the file: the entry is a root.
    MissingParent(String),
    /// Its id was already an entry's: the later line is an entry of its own, found by index
    /// only.
    DuplicateId(String),
    /// Codex's `ordinal` is not the line's count from 0 (a line lost or repeated).
    OrdinalMismatch {
        /// The line's count from 0.
        expected: u64,
        /// What the line says, or `None` when it has none.
        found: Option<u64>,
    },
}

/// A problem, where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Byte offset of the line in the file.
    pub offset: usize,
    /// What is wrong.
    pub kind: ProblemKind,
}

/// A session file read: every line, the entries' tree, the leaf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcript {
    /// The format it was read as.
    pub format: Format,
    /// Every JSON line with a `type`, in file order.
    pub lines: Vec<Line>,
    /// The tree's nodes, in file order.
    pub entries: Vec<Entry>,
    /// The entry the agent resumes at (by its own rule), `None` when there is no entry.
    pub leaf: Option<usize>,
    /// What was wrong, in file order.
    pub problems: Vec<Problem>,
}

impl Transcript {
    /// The entries from `entry` up to its root, root first: the path the context is read from.
    pub fn path_to(&self, entry: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = Some(entry);
        while let Some(index) = at {
            path.push(index);
            // A parent is always an earlier entry, so this ends.
            at = self.entries.get(index).and_then(|e| e.parent);
        }
        path.reverse();
        path
    }

    /// The entries whose parent is `entry`, in file order.
    pub fn children(&self, entry: usize) -> Vec<usize> {
        (entry + 1..self.entries.len())
            .filter(|&i| self.entries[i].parent == Some(entry))
            .collect()
    }

    /// The line of an entry.
    pub fn line_of(&self, entry: usize) -> &Line {
        &self.lines[self.entries[entry].line]
    }
}
