// The footer's usage totals (↑input ↓output Rcache Wcache $cost, and the cache hit rate of the
// last assistant message), from the sums the index keeps in its state, instead of a loop
// over every entry of the file each time the leaf or the entry count changes (every turn).
export const name = "footer-usage";
export const replaces = "FooterComponent.getSessionStats (modes/interactive/components/footer.js): its loop summing every entry's usage";
export const why = "pi sums the usage of every entry (getEntries(): every entry made a value, every assistant message's usage read) whenever the leaf or the entry count changes; the index keeps those sums, added in file order as pi adds them";

/** pi 1.6's loop, kept as the fallback the replaced code runs when the index cannot answer. */
const LOOP =
  'let usageTotals=createUsageTotals(),latestCacheHitRate;for(let entry of sessionManager.getEntries())if(entry.type==="usage")addUsageToTotals(usageTotals,entry.usage);else if(entry.type==="message"&&entry.message.role==="assistant"){addUsageToTotals(usageTotals,entry.message.usage);let latestPromptTokens=entry.message.usage.input+entry.message.usage.cacheRead+entry.message.usage.cacheWrite;latestCacheHitRate=latestPromptTokens>0?entry.message.usage.cacheRead/latestPromptTokens*100:void 0}else entry.type==="message"&&entry.message.role==="toolResult"&&entry.message.usage?addUsageToTotals(usageTotals,entry.message.usage):(entry.type==="branch_summary"||entry.type==="compaction")&&entry.usage&&addUsageToTotals(usageTotals,entry.usage);';
/** What follows it in the footer only (the agent's getSessionStats has a loop like it). */
const AFTER = "let contextUsage=this.session.getContextUsage();return this.sessionStats={session:this.session,";

export const find = LOOP + AFTER;
export const replace = `let{usageTotals,latestCacheHitRate}=__treelog_footerUsage(__treelog,sessionManager,()=>{${LOOP}return{usageTotals,latestCacheHitRate}});${AFTER}`;

/**
 * { usageTotals, latestCacheHitRate } as pi's loop computes them: from the index's totals
 * (treelog.indexedUsageTotals), or from `piLoop` (pi's own loop) when the index cannot answer
 * (a usage that is not numbers, a manager that is not treelog's).
 */
export function run(treelog, sessionManager, piLoop) {
  const totals = treelog.indexedUsageTotals?.(sessionManager);
  if (!totals) return piLoop();
  const [input, output, cacheRead, cacheWrite, cost, lastInput, lastCacheRead, lastCacheWrite, hasLast] = totals;
  let latestCacheHitRate;
  if (hasLast) {
    const latestPromptTokens = lastInput + lastCacheRead + lastCacheWrite;
    latestCacheHitRate = latestPromptTokens > 0 ? (lastCacheRead / latestPromptTokens) * 100 : undefined;
  }
  return { usageTotals: { input, output, cacheRead, cacheWrite, cost }, latestCacheHitRate };
}
