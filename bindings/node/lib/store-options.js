// How a manager keeps its sidecar and meets other writers: the factories' store options,
// checked here, and the notices an open gives.
import { codedError } from "./errors.js";
import { budgetOf } from "./entry-budget.js";
import { resolvePath } from "./paths.js";

const CONFLICT_POLICIES = new Set(["branch", "follow", "fail"]);

/**
 * The store options of a factory's `options` (beside pi's own keys, such as `id`):
 * `onConflict` ("branch", pi's rule and the default; "follow"; "fail"), `indexDir` (default
 * the environment's TREELOG_INDEX_DIR, else beside the log), `indexWrite` (default true), and
 * `onNotice(notice)`, called instead of process.emitWarning with what an open has to say
 * about the index, and `maxEntryBytes` (default the environment's TREELOG_MAX_ENTRY_BYTES,
 * else off; see entry-budget.js). Checked here, so a wrong value fails at the call that
 * passed it.
 */
export function storeOptionsOf(options) {
  const { onConflict = "branch", indexDir = process.env.TREELOG_INDEX_DIR || undefined, indexWrite = true, onNotice, maxEntryBytes } = options ?? {};
  if (!CONFLICT_POLICIES.has(onConflict)) {
    throw codedError("TREELOG_INVALID_INPUT", `onConflict must be "branch", "follow" or "fail", not ${JSON.stringify(onConflict)}`);
  }
  if (indexDir !== undefined && typeof indexDir !== "string") throw codedError("TREELOG_INVALID_INPUT", "indexDir must be a string");
  if (typeof indexWrite !== "boolean") throw codedError("TREELOG_INVALID_INPUT", "indexWrite must be a boolean");
  if (onNotice !== undefined && typeof onNotice !== "function") throw codedError("TREELOG_INVALID_INPUT", "onNotice must be a function");
  const native = { onConflict, indexDir: indexDir === undefined ? undefined : resolvePath(indexDir), indexWrite };
  return { native, onNotice, maxEntryBytes: budgetOf(maxEntryBytes) };
}

/** Notices already given in this process: each is said once. */
const noticesGiven = new Set();

/** Says what the open of `session` found about its index, once per process and notice. */
export function tellNotice(session, store) {
  const notice = session.takeNotice();
  if (notice === null || notice === undefined) return;
  if (store.onNotice) {
    store.onNotice(notice);
    return;
  }
  if (noticesGiven.has(notice.message)) return;
  noticesGiven.add(notice.message);
  process.emitWarning(notice.message, { code: notice.code });
}

