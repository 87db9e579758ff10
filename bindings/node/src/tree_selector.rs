//! pi's `/tree` selector on a session (`treelog::TreeSelector`): the rows the hook's
//! replacement of pi's tree view draws, computed here over the index.

use napi_derive::napi;
use treelog::TreeFilter;

use crate::errors::{Result, no_tree};
use crate::session::NativeSession;

#[napi]
impl NativeSession {
    /// Opens pi's `/tree` selector on this session (`Session::tree_selector`), the entry
    /// `leaf` its current leaf, filtered by pi's filter `filter`: its row count, or -1 when
    /// the session holds lines that are not entries (pi's own selector is then the one to use).
    #[napi]
    pub fn tree_selector_open(&mut self, leaf: Option<String>, filter: String) -> Result<i32> {
        let built = self.query(|session| {
            let Some(mut selector) = session.tree_selector(leaf.as_deref())? else {
                return Ok(None);
            };
            let filter = TreeFilter::from_name(&filter);
            if filter != TreeFilter::Default {
                session.tree_selector_filter(&mut selector, filter, &[], &[])?;
            }
            Ok(Some(selector))
        })?;
        self.tree = built;
        Ok(self
            .tree
            .as_ref()
            .map_or(-1, |tree| tree.row_count() as i32))
    }

    /// Filters the open selector again (pi's `applyFilter`): pi's filter name, the search
    /// tokens (lowercased), the ids of folded entries. Its new row count.
    #[napi]
    pub fn tree_selector_filter(
        &mut self,
        filter: String,
        tokens: Vec<String>,
        folded: Vec<String>,
    ) -> Result<u32> {
        let mut tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| {
            session.tree_selector_filter(
                &mut tree,
                TreeFilter::from_name(&filter),
                &tokens,
                &folded,
            )
        });
        let count = tree.row_count();
        self.tree = Some(tree);
        result.map(|()| count)
    }

    /// Rows `start..end` of the open selector as JSON (`Session::tree_selector_rows_json`).
    #[napi]
    pub fn tree_selector_rows(&mut self, start: u32, end: u32) -> Result<String> {
        let tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| session.tree_selector_rows_json(&tree, start, end));
        self.tree = Some(tree);
        result
    }

    /// The row to select for the entry `id`: its own, its nearest listed ancestor's, else the
    /// last (pi's `findNearestVisibleIndex`).
    #[napi]
    pub fn tree_selector_nearest(&mut self, id: String) -> Result<u32> {
        let tree = self.tree.take().ok_or_else(no_tree)?;
        let result =
            self.query(|session| Ok(tree.nearest_row(session.tree_selector_node(&tree, &id)?)));
        self.tree = Some(tree);
        result
    }

    /// pi's `findBranchSegmentStart` from `row`, down or up.
    #[napi]
    pub fn tree_selector_segment(&mut self, row: u32, down: bool) -> Result<u32> {
        let tree = self.tree.as_ref().ok_or_else(no_tree)?;
        Ok(tree.branch_segment_start(row, down))
    }

    /// The `{name, arguments}` of the tool call `id` as pi's selector finds it, or null.
    #[napi]
    pub fn tree_selector_tool_call(&mut self, id: String) -> Result<Option<String>> {
        let tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| session.tree_selector_tool_call(&tree, &id));
        self.tree = Some(tree);
        result
    }

    /// Marks the entry `id` labeled or not in the open selector, for its next filter.
    #[napi]
    pub fn tree_selector_label(&mut self, id: String, labeled: bool) -> Result<()> {
        let mut tree = self.tree.take().ok_or_else(no_tree)?;
        let result = self.query(|session| session.tree_selector_node(&tree, &id));
        if let Ok(node) = result {
            tree.set_labeled(node, labeled);
        }
        self.tree = Some(tree);
        result.map(|_| ())
    }

    /// Drops the open selector.
    #[napi]
    pub fn tree_selector_close(&mut self) {
        self.tree = None;
    }
}
