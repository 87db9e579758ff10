// pi 1.6's `/tree` selector over treelog's index, for big sessions. pi's own
// (TreeSelectorComponent's TreeList, modes/interactive/components/tree-selector.js) builds a
// JS object per entry from getTree() and walks all of them five times (flattenTree,
// applyFilter, recalculateVisualStructure, buildActivePath, findNearestVisibleIndex), then
// draws each row's indentation a character at a time: about 2.5 s at 100k entries, and at 1M
// its process runs out of memory. This one asks the library for the same listing
// (treelog::TreeSelector: pi's order, filters and drawing as rules over the index) and makes
// objects only for the rows on screen; the text of each row is pi's own code
// (getEntryDisplayText, inherited from pi's TreeList).
//
// It takes over when the session holds at least TREELOG_PI_TREE_MIN_ENTRIES entries (default
// 5,000; 0 for every session), on treelog's SessionManager only, and when the session holds
// only entries (else pi's own selector runs). Imports nothing: the launcher loads this file
// before Node's compile cache is on; the native session is reached through the manager.

export const name = "tree-view";
export const replaces = "TreeSelectorComponent's TreeList (tree-selector.js) and getTree() in InteractiveMode.showTreeSelector";
export const why = "pi builds and walks a JS object per entry on every /tree; this lists the rows from the index and builds only those on screen";

const SHOW_TREE = "showTreeSelector(initialSelectedId){let tree=this.sessionManager.getTree(),";
const SHOW_TREE_REPLACED = "showTreeSelector(initialSelectedId){let tree=__treelog_treeView(\"tree\",this.sessionManager),";
const NEW_LIST = "this.treeList=new TreeList(tree,currentLeafId,maxVisibleLines,initialSelectedId,initialFilterMode)";
const NEW_LIST_REPLACED =
  "this.treeList=__treelog_treeView(\"list\",{TreeList,renderHorizontalViewport,theme,truncateToWidth,visibleWidth},tree,currentLeafId,maxVisibleLines,initialSelectedId,initialFilterMode)";

const once = (source, text) => {
  const at = source.indexOf(text);
  return at >= 0 && source.indexOf(text, at + 1) < 0;
};

/** pi's chunk with the two calls routed here, or undefined when either is not there once. */
export function patch(source) {
  if (!once(source, SHOW_TREE) || !once(source, NEW_LIST)) return undefined;
  return source.replace(SHOW_TREE, SHOW_TREE_REPLACED).replace(NEW_LIST, NEW_LIST_REPLACED);
}

/** The SessionManager's native session (index.js answers under this symbol). */
const NATIVE_SESSION = Symbol.for("treelog.nativeSession");
/** How many rows one native read hands back around the row asked for. */
const WINDOW_ROWS = 64;

/** What showTreeSelector gets in place of getTree() when the index lists the tree. */
class IndexedTree {
  constructor(manager, native, count) {
    this.manager = manager;
    this.native = native;
    // showTreeSelector and TreeSelectorComponent only ask whether the tree is empty.
    this.length = count;
  }
}

function minEntries() {
  const value = process.env.TREELOG_PI_TREE_MIN_ENTRIES;
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : 5000;
}

/**
 * run("tree", manager): getTree() of pi's showTreeSelector: an IndexedTree for a big session
 * on treelog's manager, else the manager's own getTree().
 * run("list", scope, tree, ...): the TreeList TreeSelectorComponent makes: pi's own for a tree
 * of objects (or a session the index does not list), else the indexed one.
 */
export function run(kind, ...args) {
  if (kind === "tree") {
    const [manager] = args;
    const native = typeof manager[NATIVE_SESSION] === "function" ? manager[NATIVE_SESSION]() : undefined;
    const count = native ? manager.getEntryCount() : 0;
    if (native && count > 0 && count >= minEntries()) return new IndexedTree(manager, native, count);
    return manager.getTree();
  }
  const [scope, tree, currentLeafId, maxVisibleLines, initialSelectedId, initialFilterMode] = args;
  if (!(tree instanceof IndexedTree)) return new scope.TreeList(tree, currentLeafId, maxVisibleLines, initialSelectedId, initialFilterMode);
  const rows = tree.native.treeSelectorOpen(currentLeafId ?? null, initialFilterMode ?? "default");
  if (rows < 0) return new scope.TreeList(tree.manager.getTree(), currentLeafId, maxVisibleLines, initialSelectedId, initialFilterMode);
  tree.rows = rows;
  return new (indexedTreeList(scope))(tree, currentLeafId, maxVisibleLines, initialSelectedId, initialFilterMode);
}

/** The state of an indexed list, kept under a symbol: pi's constructor calls the overrides first. */
const STATE = Symbol("indexed tree list");
const classes = new WeakMap();

/** pi's TreeList with its listing, filter, navigation and drawing answered by the index. */
function indexedTreeList(scope) {
  let made = classes.get(scope.TreeList);
  if (made) return made;
  const { TreeList, renderHorizontalViewport, theme, truncateToWidth, visibleWidth } = scope;
  made = class IndexedTreeList extends TreeList {
    /** pi's flattenTree: nothing to flatten; the state is set up instead. */
    flattenTree(tree) {
      const state = { native: tree.native, manager: tree.manager, count: tree.rows, rows: new Map(), toolCalls: new Map(), filtered: false };
      this[STATE] = state;
      this.toolCallMap = {
        get: (id) => {
          if (typeof id !== "string") return undefined;
          if (!state.toolCalls.has(id)) {
            const json = state.native.treeSelectorToolCall(id);
            state.toolCalls.set(id, json === null ? undefined : JSON.parse(json));
          }
          return state.toolCalls.get(id);
        },
        clear() {},
      };
      return [];
    }

    /** The path to the leaf is marked row by row (see render). */
    buildActivePath() {}

    applyFilter() {
      const state = this[STATE];
      if (this.filteredNodes.length > 0) {
        this.lastSelectedId = this.filteredNodes[this.selectedIndex]?.node.entry.id ?? this.lastSelectedId;
      }
      const tokens = this.searchQuery.toLowerCase().split(/\s+/).filter(Boolean);
      // The selector was opened with the first filter; every later call filters again.
      if (state.filtered) state.count = state.native.treeSelectorFilter(this.filterMode, tokens, [...this.foldedNodes]);
      state.filtered = true;
      state.rows = new Map();
      this.filteredNodes = rowList(state);
      if (this.lastSelectedId) {
        this.selectedIndex = this.findNearestVisibleIndex(this.lastSelectedId);
      } else if (this.selectedIndex >= state.count) {
        this.selectedIndex = Math.max(0, state.count - 1);
      }
      if (state.count > 0) {
        this.lastSelectedId = this.filteredNodes[this.selectedIndex]?.node.entry.id ?? this.lastSelectedId;
      }
    }

    findNearestVisibleIndex(entryId) {
      const state = this[STATE];
      if (state.count === 0) return 0;
      return state.native.treeSelectorNearest(typeof entryId === "string" ? entryId : "");
    }

    isFoldable(entryId) {
      const selected = this.filteredNodes[this.selectedIndex];
      if (selected?.node.entry.id === entryId) return selected[STATE].foldable;
      const row = this.findNearestVisibleIndex(entryId);
      const found = this.filteredNodes[row];
      return found?.node.entry.id === entryId ? found[STATE].foldable : false;
    }

    findBranchSegmentStart(direction) {
      const state = this[STATE];
      if (this.selectedIndex >= state.count) return this.selectedIndex;
      return state.native.treeSelectorSegment(this.selectedIndex, direction === "down");
    }

    updateNodeLabel(entryId, label) {
      const state = this[STATE];
      state.native.treeSelectorLabel(entryId, Boolean(label));
      state.rows = new Map();
    }

    /** pi's render, each row's tree drawing (`prefix`) from the index. */
    render(width) {
      const state = this[STATE];
      const lines = [];
      if (state.count === 0) {
        lines.push(truncateToWidth(theme.fg("muted", "  No entries found"), width));
        lines.push(truncateToWidth(theme.fg("muted", `  (0/0)${this.getStatusLabels()}`), width));
        return lines;
      }
      const startIndex = Math.max(0, Math.min(this.selectedIndex - Math.floor(this.maxVisibleLines / 2), state.count - this.maxVisibleLines));
      const endIndex = Math.min(startIndex + this.maxVisibleLines, state.count);
      const renderedRows = [];
      for (let i = startIndex; i < endIndex; i++) {
        const flatNode = this.filteredNodes[i];
        const row = flatNode[STATE];
        const isSelected = i === this.selectedIndex;
        const cursor = isSelected ? theme.fg("accent", "› ") : "  ";
        const foldMarker = row.folded && !row.connector ? theme.fg("accent", "⊞ ") : "";
        const pathMarker = row.active ? theme.fg("accent", "• ") : "";
        const label = flatNode.node.label ? theme.fg("warning", `[${flatNode.node.label}] `) : "";
        const labelTimestamp = this.showLabelTimestamps && flatNode.node.label && flatNode.node.labelTimestamp
          ? theme.fg("muted", `${this.formatLabelTimestamp(flatNode.node.labelTimestamp)} `)
          : "";
        const content = this.getEntryDisplayText(flatNode.node, isSelected);
        const prefixPart = theme.fg("dim", row.prefix) + foldMarker + pathMarker;
        const anchorCol = visibleWidth(prefixPart);
        let gutter = cursor;
        let body = prefixPart + label + labelTimestamp + content;
        if (isSelected) {
          gutter = theme.bg("selectedBg", gutter);
          body = theme.bg("selectedBg", body);
        }
        renderedRows.push({ gutter, body, anchorCol, bodyWidth: visibleWidth(body), isSelected });
      }
      lines.push(...renderHorizontalViewport(renderedRows, width));
      lines.push(truncateToWidth(theme.fg("muted", `  (${this.selectedIndex + 1}/${state.count})${this.getStatusLabels()}`), width));
      return lines;
    }
  };
  classes.set(TreeList, made);
  return made;
}

/**
 * The rows as pi's filteredNodes: `length`, and a flat node for each index, read from the
 * index a window at a time and kept until the next filter. A flat node holds pi's tree node
 * (the entry, as the manager hands it out, its label and label time) and the row's drawing.
 */
function rowList(state) {
  const rowAt = (index) => {
    let row = state.rows.get(index);
    if (row === undefined) {
      const start = Math.max(0, index - WINDOW_ROWS / 2);
      const window = JSON.parse(state.native.treeSelectorRows(start, Math.min(state.count, start + WINDOW_ROWS)));
      window.forEach((data, at) => {
        const entry = state.manager.getEntry(data.id);
        state.rows.set(start + at, {
          node: { entry, children: [], label: data.label, labelTimestamp: data.labelTimestamp },
          indent: 0,
          showConnector: data.connector,
          isLast: false,
          gutters: [],
          isVirtualRootChild: false,
          [STATE]: data,
        });
      });
      row = state.rows.get(index);
    }
    return row;
  };
  return new Proxy([], {
    get(target, key, receiver) {
      if (key === "length") return state.count;
      if (typeof key === "string" && /^\d+$/.test(key)) {
        const index = Number(key);
        return index < state.count ? rowAt(index) : undefined;
      }
      return Reflect.get(target, key, receiver);
    },
  });
}
