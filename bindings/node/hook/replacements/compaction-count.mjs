// The count of compactions pi shows on resume ("Session compacted N times"), from the index's
// per-kind entry counts instead of a filter over every entry.

export const name = "compaction-count";
export const replaces = "InteractiveMode.renderInitialMessages (modes/interactive/interactive-mode.js): its count of compaction entries";
export const why = "pi filters getEntries() (every entry of the file, each made a value) to count compactions; the index keeps a count per kind";
export const find = 'let compactionCount=this.sessionManager.getEntries().filter(e=>e.type==="compaction").length;';
export const replace = "let compactionCount=__treelog_compactionCount(__treelog,this.sessionManager);";

/**
 * How many compaction entries the session holds; `treelog` is this package's module. pi's own
 * count for a manager that is not treelog's.
 */
export function run(treelog, sessionManager) {
  return treelog.indexedKindCount(sessionManager, "compaction") ?? sessionManager.getEntries().filter((e) => e.type === "compaction").length;
}
