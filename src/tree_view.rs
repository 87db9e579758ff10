//! pi 1.6's session tree selector (`/tree` in its terminal UI, `TreeList` in
//! `modes/interactive/components/tree-selector.js`) as rules over compact arrays: the order it
//! lists entries in, which of them a filter shows, and each shown row's place in the drawing
//! (indent, connector, gutters, fold marks). pi builds all of it from a tree of JS objects, one
//! per entry; here one entry costs a few integers, so a million-entry session is listed in
//! the time pi takes for a hundred thousand, and a window of rows is drawn from the arrays.
//!
//! Pure code: the facts of each entry come from `session/tree_view.rs`, which reads them from
//! the index and the log; nothing here reads either.

use std::collections::HashMap;

use crate::format::js_sort;

/// "No node" or "no row" in an index field.
pub const NONE: u32 = u32::MAX;

/// What the selector's filters need to know of an entry (bit flags of [`TreeNodeFacts::flags`]).
pub mod flags {
    /// A `usage` entry: never shown.
    pub const USAGE: u8 = 1;
    /// A label, context edit, custom, model change, thinking level change or session info
    /// entry: hidden by the default and no-tools filters.
    pub const SETTINGS: u8 = 2;
    /// A message entry whose role is `user`.
    pub const USER: u8 = 4;
    /// A message entry whose role is `toolResult`.
    pub const TOOL_RESULT: u8 = 8;
    /// An assistant message without text that neither failed nor was aborted: hidden unless
    /// it is the leaf.
    pub const QUIET_ASSISTANT: u8 = 16;
    /// The entry has a label.
    pub const LABELED: u8 = 32;
}

/// One entry of the session, in file order.
#[derive(Clone, Copy, Debug)]
pub struct TreeNodeFacts {
    /// The tree parent's node (an earlier one), or [`NONE`] for a root.
    pub parent: u32,
    /// pi's `new Date(timestamp).getTime()`, `None` where that is NaN.
    pub timestamp_ms: Option<i64>,
    pub flags: u8,
}

/// The selector's filters, by the names pi's settings use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeFilter {
    Default,
    NoTools,
    UserOnly,
    LabeledOnly,
    All,
}

impl TreeFilter {
    /// pi's name of a filter (`default`, `no-tools`, `user-only`, `labeled-only`, `all`);
    /// pi's own default for any other.
    pub fn from_name(name: &str) -> TreeFilter {
        match name {
            "no-tools" => TreeFilter::NoTools,
            "user-only" => TreeFilter::UserOnly,
            "labeled-only" => TreeFilter::LabeledOnly,
            "all" => TreeFilter::All,
            _ => TreeFilter::Default,
        }
    }

    fn passes(self, flags: u8) -> bool {
        let settings = flags & flags::SETTINGS != 0;
        match self {
            TreeFilter::Default => !settings,
            TreeFilter::NoTools => !settings && flags & flags::TOOL_RESULT == 0,
            TreeFilter::UserOnly => flags & flags::USER != 0,
            TreeFilter::LabeledOnly => flags & flags::LABELED != 0,
            TreeFilter::All => true,
        }
    }
}

/// Row bits of [`TreeRows::row_bits`].
const SHOW_CONNECTOR: u8 = 1;
const IS_LAST: u8 = 2;
const VIRTUAL_ROOT_CHILD: u8 = 4;

/// The tree in the selector's order: built once per open of the selector (it depends on the
/// leaf only), filtered as often as the user changes the filter.
pub struct TreeOrder {
    facts: Vec<TreeNodeFacts>,
    /// The nodes in the order the selector lists them (its `flattenTree`).
    order: Vec<u32>,
    /// Each node's place in `order`.
    position: Vec<u32>,
    /// Whether each node is on the path from the root to the leaf.
    active: Vec<bool>,
    leaf: u32,
}

impl TreeOrder {
    /// The selector's order of `facts` (file order, each parent before its children) with
    /// `leaf` the current leaf's node ([`NONE`] for none): depth first, each node's children
    /// in pi's `getTree()` order (by timestamp, `js_sort`) except that the child holding the
    /// leaf comes first; the roots in file order, the one holding the leaf first.
    pub fn new(facts: Vec<TreeNodeFacts>, leaf: u32) -> TreeOrder {
        let count = facts.len();
        let mut active = vec![false; count];
        let mut at = leaf;
        while at != NONE && (at as usize) < count && !active[at as usize] {
            active[at as usize] = true;
            at = facts[at as usize].parent;
        }
        // Children lists, file order (compressed: `starts[n]..starts[n + 1]` of `kids`).
        let mut starts = vec![0u32; count + 1];
        let mut roots = Vec::new();
        for (node, fact) in facts.iter().enumerate() {
            if fact.parent == NONE {
                roots.push(node as u32);
            } else {
                starts[fact.parent as usize + 1] += 1;
            }
        }
        for node in 0..count {
            starts[node + 1] += starts[node];
        }
        let mut kids = vec![0u32; starts[count] as usize];
        let mut filled = starts.clone();
        for (node, fact) in facts.iter().enumerate() {
            if fact.parent != NONE {
                let slot = &mut filled[fact.parent as usize];
                kids[*slot as usize] = node as u32;
                *slot += 1;
            }
        }
        let active_first = |list: &mut Vec<u32>| {
            if let Some(at) = list.iter().position(|&node| active[node as usize]) {
                let node = list.remove(at);
                list.insert(0, node);
            }
        };
        active_first(&mut roots);
        let mut order = Vec::with_capacity(count);
        let mut stack: Vec<u32> = roots.into_iter().rev().collect();
        let mut children = Vec::new();
        while let Some(node) = stack.pop() {
            order.push(node);
            let range = starts[node as usize] as usize..starts[node as usize + 1] as usize;
            if range.is_empty() {
                continue;
            }
            children.clear();
            children.extend_from_slice(&kids[range]);
            if children.len() > 1 {
                js_sort::sort_like_pi_children(&mut children, |&child| {
                    facts[child as usize].timestamp_ms
                });
                active_first(&mut children);
            }
            stack.extend(children.iter().rev());
        }
        let mut position = vec![NONE; count];
        for (at, &node) in order.iter().enumerate() {
            position[node as usize] = at as u32;
        }
        TreeOrder {
            facts,
            order,
            position,
            active,
            leaf,
        }
    }

    /// Whether `node` is on the path from the root to the leaf.
    pub fn is_active(&self, node: u32) -> bool {
        self.active.get(node as usize).copied().unwrap_or(false)
    }

    /// `node`'s place in the selector's order (for "the last one listed wins" rules).
    pub fn position(&self, node: u32) -> u32 {
        self.position.get(node as usize).copied().unwrap_or(NONE)
    }

    pub fn parent(&self, node: u32) -> u32 {
        self.facts
            .get(node as usize)
            .map_or(NONE, |fact| fact.parent)
    }

    /// The nodes in the selector's order.
    #[cfg(test)]
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// The rows `filter` shows (pi's `applyFilter`), `matches(node)` saying whether a node
    /// passes the search (pi asks only for nodes the filter passed), without the descendants
    /// of `folded`, with the drawing of each row (pi's `recalculateVisualStructure`).
    pub fn rows(
        &self,
        filter: TreeFilter,
        mut matches: impl FnMut(u32) -> bool,
        folded: &[u32],
    ) -> TreeRows {
        let count = self.facts.len();
        let mut is_folded = vec![false; if folded.is_empty() { 0 } else { count }];
        for &node in folded {
            if let Some(slot) = is_folded.get_mut(node as usize) {
                *slot = true;
            }
        }
        // Under a folded node: its proper descendants (parents come first in the order).
        let mut hidden_below = vec![false; is_folded.len()];
        let mut nodes = Vec::new();
        for &node in &self.order {
            let fact = self.facts[node as usize];
            if !is_folded.is_empty() && fact.parent != NONE {
                let parent = fact.parent as usize;
                hidden_below[node as usize] = is_folded[parent] || hidden_below[parent];
            }
            if fact.flags & flags::USAGE != 0 {
                continue;
            }
            if fact.flags & flags::QUIET_ASSISTANT != 0 && node != self.leaf {
                continue;
            }
            if !filter.passes(fact.flags) || !matches(node) {
                continue;
            }
            if !hidden_below.is_empty() && hidden_below[node as usize] {
                continue;
            }
            nodes.push(node);
        }
        TreeRows::new(self, nodes, is_folded)
    }
}

/// The rows a filter shows, in order, with what the selector draws of each.
pub struct TreeRows {
    /// Each row's node.
    nodes: Vec<u32>,
    /// Each node's row, or [`NONE`] when hidden.
    row_of: Vec<u32>,
    /// Each row's nearest shown ancestor's row, or [`NONE`].
    visible_parent: Vec<u32>,
    /// Each row's shown children (rows), compressed: `child_starts[r]..child_starts[r + 1]`.
    child_starts: Vec<u32>,
    children: Vec<u32>,
    indent: Vec<u32>,
    row_bits: Vec<u8>,
    /// Each row's gutters: the last of a chain in `gutters`, or [`NONE`].
    gutter_chain: Vec<u32>,
    /// Gutter chains: (position, shown, the previous gutter or [`NONE`]).
    gutters: Vec<(u32, bool, u32)>,
    is_folded: Vec<bool>,
    multiple_roots: bool,
}

impl TreeRows {
    fn new(order: &TreeOrder, nodes: Vec<u32>, is_folded: Vec<bool>) -> TreeRows {
        let count = order.facts.len();
        let mut row_of = vec![NONE; count];
        for (row, &node) in nodes.iter().enumerate() {
            row_of[node as usize] = row as u32;
        }
        // The nearest shown ancestor-or-self of every node, parents before children.
        let mut shown_at_or_above = vec![NONE; count];
        for &node in &order.order {
            let parent = order.facts[node as usize].parent;
            shown_at_or_above[node as usize] = if row_of[node as usize] != NONE {
                row_of[node as usize]
            } else if parent == NONE {
                NONE
            } else {
                shown_at_or_above[parent as usize]
            };
        }
        let visible_parent: Vec<u32> = nodes
            .iter()
            .map(|&node| {
                let parent = order.facts[node as usize].parent;
                if parent == NONE {
                    NONE
                } else {
                    shown_at_or_above[parent as usize]
                }
            })
            .collect();
        drop(shown_at_or_above);
        let rows = nodes.len();
        let mut child_starts = vec![0u32; rows + 1];
        let mut roots = Vec::new();
        for (row, &parent) in visible_parent.iter().enumerate() {
            if parent == NONE {
                roots.push(row as u32);
            } else {
                child_starts[parent as usize + 1] += 1;
            }
        }
        for row in 0..rows {
            child_starts[row + 1] += child_starts[row];
        }
        let mut children = vec![0u32; child_starts[rows] as usize];
        let mut filled = child_starts.clone();
        // Rows in order, so each list keeps the rows' order, as pi's does.
        for (row, &parent) in visible_parent.iter().enumerate() {
            if parent != NONE {
                let slot = &mut filled[parent as usize];
                children[*slot as usize] = row as u32;
                *slot += 1;
            }
        }
        let multiple_roots = roots.len() > 1;
        let mut indent = vec![0u32; rows];
        let mut row_bits = vec![0u8; rows];
        let mut gutter_chain = vec![NONE; rows];
        let mut gutters = Vec::new();
        // (row, indent, just branched, show connector, is last, gutters, virtual root child)
        let mut stack: Vec<(u32, u32, bool, bool, bool, u32, bool)> = Vec::new();
        for (at, &root) in roots.iter().enumerate().rev() {
            let is_last = at + 1 == roots.len();
            stack.push((
                root,
                u32::from(multiple_roots),
                multiple_roots,
                multiple_roots,
                is_last,
                NONE,
                multiple_roots,
            ));
        }
        while let Some((
            row,
            row_indent,
            just_branched,
            show_connector,
            is_last,
            chain,
            virtual_child,
        )) = stack.pop()
        {
            let r = row as usize;
            indent[r] = row_indent;
            let bit = |on: bool, bit: u8| if on { bit } else { 0 };
            row_bits[r] = bit(show_connector, SHOW_CONNECTOR)
                | bit(is_last, IS_LAST)
                | bit(virtual_child, VIRTUAL_ROOT_CHILD);
            gutter_chain[r] = chain;
            let kids = &children[child_starts[r] as usize..child_starts[r + 1] as usize];
            if kids.is_empty() {
                continue;
            }
            let multiple_children = kids.len() > 1;
            let child_indent = if multiple_children || (just_branched && row_indent > 0) {
                row_indent + 1
            } else {
                row_indent
            };
            let child_chain = if show_connector && !virtual_child {
                let display_indent = if multiple_roots {
                    row_indent.saturating_sub(1)
                } else {
                    row_indent
                };
                gutters.push((display_indent.saturating_sub(1), !is_last, chain));
                (gutters.len() - 1) as u32
            } else {
                chain
            };
            for (at, &kid) in kids.iter().enumerate().rev() {
                stack.push((
                    kid,
                    child_indent,
                    multiple_children,
                    multiple_children,
                    at + 1 == kids.len(),
                    child_chain,
                    false,
                ));
            }
        }
        TreeRows {
            nodes,
            row_of,
            visible_parent,
            child_starts,
            children,
            indent,
            row_bits,
            gutter_chain,
            gutters,
            is_folded,
            multiple_roots,
        }
    }

    /// How many rows are shown.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The node of `row`.
    pub fn node(&self, row: u32) -> u32 {
        self.nodes[row as usize]
    }

    fn kids(&self, row: u32) -> &[u32] {
        &self.children
            [self.child_starts[row as usize] as usize..self.child_starts[row as usize + 1] as usize]
    }

    /// The row to select for `node` (pi's `findNearestVisibleIndex`): its own, else its
    /// nearest shown ancestor's, else the last row (0 without rows).
    pub fn nearest_row(&self, order: &TreeOrder, node: u32) -> u32 {
        if self.nodes.is_empty() {
            return 0;
        }
        let mut at = node;
        while at != NONE && (at as usize) < self.row_of.len() {
            if self.row_of[at as usize] != NONE {
                return self.row_of[at as usize];
            }
            at = order.parent(at);
        }
        self.nodes.len() as u32 - 1
    }

    /// Whether `row` can be folded (pi's `isFoldable`): it has shown children and is a root or
    /// the first row of a branch (its shown parent has several shown children).
    pub fn foldable(&self, row: u32) -> bool {
        if self.kids(row).is_empty() {
            return false;
        }
        let parent = self.visible_parent[row as usize];
        parent == NONE || self.kids(parent).len() > 1
    }

    /// Whether `row`'s node is folded.
    pub fn is_folded(&self, row: u32) -> bool {
        self.is_folded
            .get(self.nodes[row as usize] as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The row the selection moves to from `row` (pi's `findBranchSegmentStart`): `down`
    /// follows first children to the next branch point's first child (or the last row of the
    /// chain); up, the nearest start of a branch above `row` (or the root).
    pub fn branch_segment_start(&self, row: u32, down: bool) -> u32 {
        if row as usize >= self.nodes.len() {
            return row;
        }
        let mut current = row;
        if down {
            loop {
                let kids = self.kids(current);
                match kids.len() {
                    0 => return current,
                    1 => current = kids[0],
                    _ => return kids[0],
                }
            }
        }
        loop {
            let parent = self.visible_parent[current as usize];
            if parent == NONE {
                return current;
            }
            if self.kids(parent).len() > 1 && current < row {
                return current;
            }
            current = parent;
        }
    }

    /// The tree drawing before `row`'s text (pi's `render`: gutters, connector and fold
    /// mark, three columns a level), without its colours.
    pub fn prefix(&self, row: u32) -> String {
        let r = row as usize;
        let bits = self.row_bits[r];
        let display_indent = if self.multiple_roots {
            self.indent[r].saturating_sub(1)
        } else {
            self.indent[r]
        } as usize;
        let connector = bits & SHOW_CONNECTOR != 0 && bits & VIRTUAL_ROOT_CHILD == 0;
        let connector_level = if connector {
            display_indent.checked_sub(1)
        } else {
            None
        };
        // The first gutter at each level, root first, as pi's `gutters.find` takes it.
        let mut chain = Vec::new();
        let mut at = self.gutter_chain[r];
        while at != NONE {
            let (position, shown, previous) = self.gutters[at as usize];
            chain.push((position as usize, shown));
            at = previous;
        }
        let mut level_gutter: Vec<Option<bool>> = vec![None; display_indent];
        for &(position, shown) in chain.iter().rev() {
            if let Some(slot @ None) = level_gutter.get_mut(position) {
                *slot = Some(shown);
            }
        }
        let mut out = String::with_capacity(display_indent * 3);
        for (level, gutter) in level_gutter.iter().enumerate() {
            match gutter {
                Some(shown) => {
                    out.push(if *shown { '│' } else { ' ' });
                    out.push_str("  ");
                }
                None if connector_level == Some(level) => {
                    out.push(if bits & IS_LAST != 0 { '└' } else { '├' });
                    out.push(if self.is_folded(row) {
                        '⊞'
                    } else if self.foldable(row) {
                        '⊟'
                    } else {
                        '─'
                    });
                    out.push(' ');
                }
                None => out.push_str("   "),
            }
        }
        out
    }

    /// Whether `row` draws a connector (pi's `showConnector && !isVirtualRootChild`), where
    /// its fold mark goes instead of before its text.
    pub fn shows_connector(&self, row: u32) -> bool {
        let bits = self.row_bits[row as usize];
        bits & SHOW_CONNECTOR != 0 && bits & VIRTUAL_ROOT_CHILD == 0
    }
}

/// pi's `/tree` selector of one session, as `Session::tree_selector` builds it: the order,
/// the rows of the current filter, and where each tool call is.
pub struct TreeSelector {
    pub(crate) order: TreeOrder,
    /// Each node's sequence number (ascending: nodes are in file order).
    pub(crate) seqs: Vec<u64>,
    /// The node pi's selector takes each tool call id's name and arguments from.
    pub(crate) tool_calls: HashMap<Box<str>, u32>,
    pub(crate) rows: TreeRows,
}

impl TreeSelector {
    /// How many rows the current filter shows.
    pub fn row_count(&self) -> u32 {
        self.rows.len() as u32
    }

    /// The row to select for the node `node` ([`TreeRows::nearest_row`]).
    pub fn nearest_row(&self, node: u32) -> u32 {
        self.rows.nearest_row(&self.order, node)
    }

    /// Marks the node `node` labeled or not, for the next filter (pi's `updateNodeLabel`).
    pub fn set_labeled(&mut self, node: u32, labeled: bool) {
        if let Some(fact) = self.order.facts.get_mut(node as usize) {
            fact.flags = fact.flags & !flags::LABELED | if labeled { flags::LABELED } else { 0 };
        }
    }

    /// [`TreeRows::branch_segment_start`].
    pub fn branch_segment_start(&self, row: u32, down: bool) -> u32 {
        self.rows.branch_segment_start(row, down)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: u32, timestamp_ms: i64, flags: u8) -> TreeNodeFacts {
        TreeNodeFacts {
            parent,
            timestamp_ms: Some(timestamp_ms),
            flags,
        }
    }

    /// The child holding the leaf is listed first, whatever its time; other children by time.
    #[test]
    fn active_branch_first() {
        // 0 -> 1 (t=5), 0 -> 2 (t=3), 0 -> 3 (t=4); leaf 1.
        let facts = vec![
            node(NONE, 0, 0),
            node(0, 5, 0),
            node(0, 3, 0),
            node(0, 4, 0),
        ];
        let order = TreeOrder::new(facts, 1);
        assert_eq!(order.order(), [0, 1, 2, 3]);
        let rows = order.rows(TreeFilter::All, |_| true, &[]);
        assert_eq!(rows.len(), 4);
        // Three children of the root: each at indent 1 with a connector; the last one └.
        assert_eq!(rows.prefix(0), "");
        assert_eq!(rows.prefix(1), "├─ ");
        assert_eq!(rows.prefix(3), "└─ ");
        assert!(rows.foldable(0));
        assert_eq!(rows.branch_segment_start(0, true), 1);
    }

    /// Hidden entries hand their children to the nearest shown ancestor, and a folded row's
    /// descendants are not listed.
    #[test]
    fn hidden_and_folded() {
        // 0 user -> 1 settings -> 2 user, 2 -> 3 user, 2 -> 4 user.
        let facts = vec![
            node(NONE, 0, flags::USER),
            node(0, 1, flags::SETTINGS),
            node(1, 2, flags::USER),
            node(2, 3, flags::USER),
            node(2, 4, flags::USER),
        ];
        let order = TreeOrder::new(facts, 3);
        let rows = order.rows(TreeFilter::Default, |_| true, &[]);
        assert_eq!(
            (0..rows.len() as u32)
                .map(|r| rows.node(r))
                .collect::<Vec<_>>(),
            [0, 2, 3, 4]
        );
        assert_eq!(rows.nearest_row(&order, 1), 0);
        let folded = order.rows(TreeFilter::Default, |_| true, &[2]);
        assert_eq!(folded.len(), 2);
    }
}
