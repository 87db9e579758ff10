// The agent's checks of context usage and compaction, handed the part of the branch from its
// latest compaction on instead of the whole branch (getBranch(): every entry from the root).
export const name = "branch-since-compaction";
export const replaces =
  "AgentSession.getContextUsage, ._exceedsCompactionThreshold and ._checkCompaction (core/agent-session.js): the branch they scan";
export const why =
  "pi hands getBranch() (every entry of the path, made values) to getLatestCompactionEntry and estimateProjectedContextTokens on every footer change and every turn; what those look for (the latest compaction, the latest compaction or context edit, the entries after it, the last usage's entry) lies after the latest compaction, whose place the index keeps in every record";

/** Each text of pi 1.6's bundle replaced, and its replacement. */
const SITES = [
  [
    "let projection=this.sessionManager.buildSessionProjection(),branch=this.sessionManager.getBranch(),latestCompaction=getLatestCompactionEntry(branch);",
    "let projection=this.sessionManager.buildSessionProjection(),branch=__treelog_branchSinceCompaction(__treelog,this.sessionManager),latestCompaction=getLatestCompactionEntry(branch);",
  ],
  [
    "shouldCompact(estimateProjectedContextTokens(projection,this.sessionManager.getBranch()).tokens",
    "shouldCompact(estimateProjectedContextTokens(projection,__treelog_branchSinceCompaction(__treelog,this.sessionManager)).tokens",
  ],
  [
    "compactionEntry=getLatestCompactionEntry(this.sessionManager.getBranch());",
    "compactionEntry=getLatestCompactionEntry(__treelog_branchSinceCompaction(__treelog,this.sessionManager));",
  ],
];

/** `source` with every site replaced, or undefined when any is not there exactly once. */
export function patch(source) {
  for (const [find, replace] of SITES) {
    const at = source.indexOf(find);
    if (at < 0 || source.indexOf(find, at + 1) >= 0) return undefined;
    source = source.slice(0, at) + replace + source.slice(at + find.length);
  }
  return source;
}

/** The branch from its latest compaction on (treelog.indexedBranchSinceCompaction), else pi's getBranch(). */
export function run(treelog, sessionManager) {
  return treelog.indexedBranchSinceCompaction?.(sessionManager) ?? sessionManager.getBranch();
}
