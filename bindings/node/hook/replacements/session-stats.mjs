// The agent's session statistics (what /session shows under Messages and Tokens, and the
// cost), from the counts and sums the index keeps in its state, instead of a loop over every
// entry that reads every assistant message whole to count its tool calls.
export const name = "session-stats";
export const replaces = "AgentSession.getSessionStats (core/agent-session.js): its loop over every entry";
export const why =
  "pi counts messages by role, the tool calls in every assistant message's content and sums every usage over getEntries(), so /session reads every assistant message whole; the index keeps those counts and sums, derived by pi's rules when each line is indexed";

/** pi 1.6's loop, kept as the fallback the replaced code runs when the index cannot answer. */
const LOOP =
  'let userMessages=0,assistantMessages=0,toolResults=0,totalMessages=0,toolCalls=0,usageTotals=createUsageTotals();for(let entry of this.sessionManager.getEntries()){if(entry.type==="usage"?addUsageToTotals(usageTotals,entry.usage):(entry.type==="branch_summary"||entry.type==="compaction")&&entry.usage&&addUsageToTotals(usageTotals,entry.usage),entry.type!=="message")continue;totalMessages++;let message=entry.message;if(message.role==="user")userMessages++;else if(message.role==="toolResult")toolResults++,message.usage&&addUsageToTotals(usageTotals,message.usage);else if(message.role==="assistant"){assistantMessages++;let assistantMsg=message;Array.isArray(assistantMsg.content)&&(toolCalls+=assistantMsg.content.filter(c=>c.type==="toolCall").length),addUsageToTotals(usageTotals,assistantMsg.usage)}}';
const BEFORE = "getSessionStats(){";
const AFTER = "return{sessionFile:this.sessionFile,sessionId:this.sessionId,userMessages,";

export const find = BEFORE + LOOP + AFTER;
export const replace = `${BEFORE}let{userMessages,assistantMessages,toolResults,totalMessages,toolCalls,usageTotals}=__treelog_sessionStats(__treelog,this.sessionManager,()=>{${LOOP}return{userMessages,assistantMessages,toolResults,totalMessages,toolCalls,usageTotals}});${AFTER}`;

/**
 * The counts and usage totals of pi's loop: from the index (treelog.indexedSessionStats), or
 * from `piLoop` (pi's own loop) when the index cannot answer.
 */
export function run(treelog, sessionManager, piLoop) {
  const stats = treelog.indexedSessionStats?.(sessionManager);
  if (!stats) return piLoop();
  const [userMessages, assistantMessages, toolResults, totalMessages, toolCalls, input, output, cacheRead, cacheWrite, cost] = stats;
  return { userMessages, assistantMessages, toolResults, totalMessages, toolCalls, usageTotals: { input, output, cacheRead, cacheWrite, cost } };
}
