// `treelog search` and `treelog reindex --search` for Node: the same index
// (DIR/.treelog-search/), the same query syntax, filters and hits as the CLI. The work runs in
// the native half on a libuv worker thread (src/search.rs), so the event loop keeps running
// while an index is built or caught up. Each call sends its request as one JSON string and
// gets one JSON string back, parsed here; option values are checked on the native side, so
// every error code of a search is chosen in one place (src/errors.rs, search_code_of).
import { codedError } from "./errors.js";
import { native } from "./native.js";

/**
 * Hands a call's native events to the caller's `onNotice` / `onProgress` on the event loop.
 * A callback that throws does not stop the work: the first error it threw rejects the call's
 * promise once the work is done. `settled(count)` waits until `count` events were handed on,
 * so that every event of a call reaches the caller before its promise settles.
 */
function eventRelay(options) {
  const onNotice = options?.onNotice;
  const onProgress = options?.onProgress;
  for (const [name, callback] of [["onNotice", onNotice], ["onProgress", onProgress]]) {
    if (callback !== undefined && callback !== null && typeof callback !== "function") {
      throw codedError("TREELOG_INVALID_INPUT", `search: ${name} must be a function, got ${typeof callback}`);
    }
  }
  let received = 0;
  let callbackError;
  let waiting;
  const relay = {
    sink: onNotice || onProgress ? onEvent : undefined,
    async settled(count) {
      if (received < count) await new Promise((resolve) => (waiting = { count, resolve }));
      if (callbackError !== undefined) throw callbackError.error;
    },
  };
  function onEvent(json) {
    received++;
    try {
      const event = JSON.parse(json);
      if (event.notice !== undefined) onNotice?.(event.notice);
      else if (event.progress !== undefined) onProgress?.(event.progress);
    } catch (error) {
      callbackError ??= { error };
    }
    if (waiting !== undefined && received >= waiting.count) waiting.resolve();
  }
  return relay;
}

/** The result of a native answer, or its coded error, after every event was handed on. */
async function settle(answerPromise, relay, key) {
  const answer = JSON.parse(await answerPromise);
  await relay.settled(answer.events);
  if (answer.error !== undefined) throw codedError(answer.error.code, answer.error.message);
  return answer[key];
}

/** The caller's options without its callbacks: what the native half checks. */
function plainOptions(options) {
  if (options === undefined || options === null) return null;
  if (typeof options !== "object" || Array.isArray(options)) return options;
  const { onNotice: _onNotice, onProgress: _onProgress, ...plain } = options;
  return plain;
}

/**
 * The entries of the sessions under `paths` that hold the words of `query`, as
 * `treelog search --json QUERY PATH...` prints them (same keys, values and order).
 * `paths`: a session file or a directory searched recursively for *.jsonl, or an array of
 * them; required (a search writes its index into the folder it searches, so a library never
 * picks the process's current directory on its own: pass `process.cwd()` to mean it).
 * Rejects with a coded Error (see README.md).
 */
export async function search(query, paths, options) {
  if (paths === undefined || paths === null) {
    throw codedError("TREELOG_INVALID_INPUT", "search: name the sessions to search (a file, a directory, or an array of them), e.g. search(query, process.cwd())");
  }
  const relay = eventRelay(options);
  const request = JSON.stringify({
    query,
    paths: typeof paths === "string" ? [paths] : (paths ?? null),
    options: plainOptions(options),
  });
  return settle(native.searchJson(request, relay.sink), relay, "hits");
}

/**
 * Builds or brings up to date the search index of the directory `dir` ahead of time, as
 * `treelog [--index-dir D] reindex --search [--force] DIR` does; resolves to its `--json`
 * summary.
 */
export async function reindexSearch(dir, options) {
  const relay = eventRelay(options);
  const request = JSON.stringify({ dir, force: options?.force ?? false, indexDir: options?.indexDir ?? null });
  return settle(native.reindexSearchJson(request, relay.sink), relay, "reindexed");
}
