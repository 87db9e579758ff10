// The entries /session sums over (its cost per model and its cache re-billing), cut down by
// the native half to the fields those sums read, instead of every entry of the file made a
// value and every assistant message's line read for its provider, model and usage.
export const name = "session-usage";
export const replaces =
  "InteractiveMode.handleSessionCommand (modes/interactive/interactive-mode.js): the getEntries() it hands to computeCacheWaste and getUsageCostBreakdown";
export const why =
  "pi's computeCacheWaste (core/cache-stats.js) and getUsageCostBreakdown (core/usage-totals.js) read every assistant message's provider, model and usage, every tool result's, usage entry's, compaction's and branch summary's usage over getEntries(); treelog hands them the same entries in file order cut down to those fields, read in native code, and pi's own functions sum them";

const BEFORE = "entries=";
const CALL = "this.sessionManager.getEntries()";
const AFTER = ",cacheWaste=computeCacheWaste(entries,this.session.modelRuntime),usageBreakdown=getUsageCostBreakdown(entries),";

export const find = BEFORE + CALL + AFTER;
export const replace = `${BEFORE}__treelog_sessionUsage(__treelog,this.sessionManager)${AFTER}`;

/**
 * The entries pi's /session sums read, in file order: cut down from the index
 * (treelog.indexedUsageEntries), or every entry (pi's getEntries()) when the index cannot
 * answer or the manager is not treelog's.
 */
export function run(treelog, sessionManager) {
  return treelog.indexedUsageEntries?.(sessionManager) ?? sessionManager.getEntries();
}
