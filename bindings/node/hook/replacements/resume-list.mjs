// The partial lists /resume's session selector redraws while sessions load. pi's selector
// (SessionSelectorComponent in session-selector.js) takes every partial list the listing
// publishes (pi's listing: one every 10 files) and files each session of it again
// (setSessions -> buildSessionTree -> a realpathSync per session): for N sessions that is N²/10
// path lookups, 1.5 s of the 6 s /resume takes over 1,000 sessions. Here the selector gets a
// partial list at most every 250 ms (and the first one at once); the counter still moves with
// every file, and the full list at the end is the listing's own, as in pi.
//
// Imports nothing: the launcher loads this file before Node's compile cache is on.

export const name = "resume-list";
export const replaces = "the onProgress that InteractiveMode.showSessionSelector hands SessionManager.list/listAll";
export const why = "pi's selector re-files every session at every partial list (N²/10 realpathSync calls); fewer partial lists, the same final list";

const CALLS = [
  "SessionManager.list(this.sessionManager.getCwd(),this.sessionManager.getSessionDir(),onProgress,signal)",
  "SessionManager.listAll(onProgress,signal)",
  "SessionManager.listAll(this.sessionManager.getSessionDir(),onProgress,signal)",
];

const count = (source, text) => source.split(text).length - 1;

/** pi's chunk with the selector's onProgress throttled, or undefined when a call is not there once. */
export function patch(source) {
  if (CALLS.some((call) => count(source, call) !== 1)) return undefined;
  for (const call of CALLS) source = source.replace(call, call.replace("onProgress,signal", "__treelog_resumeList(onProgress),signal"));
  return source;
}

/** How often the selector gets a partial list at most. */
const PARTIAL_EVERY_MS = 250;

/** `onProgress` that passes on a partial list only every PARTIAL_EVERY_MS (the first at once). */
export function run(onProgress) {
  if (typeof onProgress !== "function") return onProgress;
  let last;
  return (loaded, total, partialSessions) => {
    if (partialSessions !== undefined) {
      const now = performance.now();
      if (last !== undefined && now - last < PARTIAL_EVERY_MS && loaded !== total) {
        partialSessions = undefined;
      } else {
        last = now;
      }
    }
    onProgress(loaded, total, partialSessions);
  };
}
