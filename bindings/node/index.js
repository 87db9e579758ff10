// treelog's Node package: pi-coding-agent's session-manager module (1.6.0's surface, which
// holds 0.73.1's), on treelog. Swap the import and nothing else changes:
//
//   import { SessionManager } from "treelog";   // was ".../pi-coding-agent/dist/core/session-manager.js"
//
// The native half (native.cjs, a napi-rs addon) holds one treelog session per manager and
// answers each query with one JSON string, parsed here. Ids and timestamps are drawn here,
// exactly as pi draws them (crypto.randomUUID().slice(0, 8), new Date().toISOString()), so a
// caller that injects its own clock or ids gets the same bytes from both.
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { basename, join, resolve as nodeResolve } from "node:path";

import { EMPTY_CONTEXT } from "./lib/context.js";
import { EntryCache } from "./lib/entries.js";
import { codedError, fsCall } from "./lib/errors.js";
import { findMostRecentSession, notSessionReason, readSessionHeader, sessionCwdMatches, sessionFileName, sessionHeader } from "./lib/files.js";
import { assertValidSessionId, drawUuid, generateId, now, optionalJson, uuidv7 } from "./lib/ids.js";
import { NativeSession } from "./lib/native.js";
import { getAgentDir, getDefaultSessionDir, getDefaultSessionDirPath, normalizePath, pathsEqual, resolvePath } from "./lib/paths.js";
import { mayExceed, messageSource, reportLargeEntry } from "./lib/entry-budget.js";
import { storeOptionsOf, tellNotice } from "./lib/store-options.js";
import {
  ALL_SESSION_LIST_PUBLISH_INTERVAL,
  MAX_CONCURRENT_SESSION_DISCOVERY_LOADS,
  buildSessionInfosWithConcurrency,
  listSessionsFromDir,
  mapWithConcurrency,
  sortSessionInfos,
} from "./lib/listing.js";

export {
  buildContextEntries,
  buildSessionContext,
  buildSessionProjection,
  migrateSessionEntries,
  projectContextEntry,
  sessionEntryToContextMessages,
} from "./lib/context.js";
export {
  CURRENT_SESSION_VERSION,
  findMostRecentSession,
  getLatestCompactionEntry,
  loadEntriesFromFile,
  parseSessionEntries,
} from "./lib/files.js";
export { assertValidSessionId } from "./lib/ids.js";
export { getDefaultSessionDir } from "./lib/paths.js";
export { reindexSearch, search } from "./lib/search.js";

// ---- the index's answers for pi's whole-history loops (hook/replace-*.mjs) ----

/** The native session of a manager of this module (undefined for any other object). */
let nativeOf;
/** The entry cache of a manager of this module (undefined for any other object). */
let cacheOf;

/**
 * How many entries of type `type` the manager's session holds, from the index's counts (no
 * entry is read); undefined for a manager that is not this module's or a type the index does
 * not count alone.
 */
export function indexedKindCount(manager, type) {
  return nativeOf(manager)?.kindCount(type) ?? undefined;
}

/**
 * pi's usage totals over every entry (its footer's sums) from the index: [input, output,
 * cacheRead, cacheWrite, cost, the last assistant message's input, cacheRead and cacheWrite,
 * 1 when there is one]; undefined for a manager that is not this module's, or when pi's own
 * loop must answer (an entry pi sums holds no usage of numbers).
 */
export function indexedUsageTotals(manager) {
  return nativeOf(manager)?.usageTotals() ?? undefined;
}

/**
 * pi's session statistics over every entry (AgentSession.getSessionStats' loop) from the
 * index: [user, assistant and tool result messages, all messages, tool calls, then the usage
 * sums of indexedUsageTotals]; undefined for a manager that is not this module's, or when pi's
 * own loop must answer.
 */
export function indexedSessionStats(manager) {
  return nativeOf(manager)?.sessionStats() ?? undefined;
}

/** How many records one read of the entries pi's /session sums takes at most. */
const USAGE_ENTRIES_PER_READ = 65536;

/**
 * The entries pi's /session sums read (getUsageCostBreakdown, computeCacheWaste), in file
 * order, each cut down to the fields those sums read (native usageEntries): what those
 * functions answer over getEntries() they answer over this array. Undefined for a manager that
 * is not this module's, or when pi's own code must read the entries.
 */
export function indexedUsageEntries(manager) {
  const native = nativeOf(manager);
  if (!native) return undefined;
  const entries = [];
  for (let from = 0; from !== null; ) {
    const text = native.usageEntries(from, USAGE_ENTRIES_PER_READ);
    if (text === null) return undefined;
    const [next, batch] = JSON.parse(text);
    for (const entry of batch) entries.push(entry);
    from = next;
  }
  return entries;
}

/**
 * The part of getBranch() from the latest compaction on it (that compaction first), the same
 * entry values getBranch() holds; the whole branch when it has no compaction. Undefined for a
 * manager that is not this module's.
 */
export function indexedBranchSinceCompaction(manager) {
  const native = nativeOf(manager);
  const cache = cacheOf(manager);
  if (!native || !cache) return undefined;
  return cache.load(native.pathSinceCompactionSeqs());
}

// ---- the manager ----

/** Where the launcher's replacements of pi's code find a manager's native session. */
const NATIVE_SESSION = Symbol.for("treelog.nativeSession");

/** Only the static factories construct a manager (pi's constructor is private). */
const CONSTRUCT = Symbol("SessionManager construction");

const hasConversationRole = (message) => message?.role === "user" || message?.role === "assistant";

/**
 * pi's SessionManager: an append-only tree of entries in a JSONL file, here a treelog
 * session (the log plus its sidecar index, `<file>.treelog`).
 */
export class SessionManager {
  #native;
  static {
    nativeOf = (manager) => (manager !== null && typeof manager === "object" && #native in manager ? manager.#native : undefined);
    cacheOf = (manager) => (manager !== null && typeof manager === "object" && #cache in manager ? manager.#cache : undefined);
  }
  #header = null;
  /** The entries as values: each entry parsed once, by sequence number (see EntryCache). */
  #cache = null;
  #cwd;
  #sessionDir;
  #sessionFile;
  #persist;
  /** The store options (storeOptionsOf) of the factory that made this manager. */
  #store;

  /** Use the static factories (create, open, continueRecent, inMemory, forkFrom). */
  constructor(cwd, sessionDir, sessionFile, persist, newSessionOptions, preloadedFileEntries, token, store) {
    if (token !== CONSTRUCT) throw new TypeError("SessionManager: use the static factories (create, open, ...)");
    this.#store = store ?? storeOptionsOf(undefined);
    this.#cwd = resolvePath(cwd);
    this.#sessionDir = normalizePath(sessionDir);
    this.#persist = persist;
    if (persist && this.#sessionDir && !existsSync(this.#sessionDir)) {
      fsCall("create the session folder", this.#sessionDir, () => mkdirSync(this.#sessionDir, { recursive: true }));
    }
    if (sessionFile) {
      this.#setSessionFile(sessionFile);
    } else if (preloadedFileEntries?.length) {
      this.#loadEntries(preloadedFileEntries, newSessionOptions);
    } else {
      this.newSession(newSessionOptions);
    }
  }

  /** Switch to a different session file (used for resume and branching) */
  setSessionFile(sessionFile) {
    this.#setSessionFile(sessionFile);
  }

  #setSessionFile(sessionFile) {
    const path = resolvePath(sessionFile);
    this.#sessionFile = path;
    if (!existsSync(path)) {
      this.newSession();
      this.#sessionFile = path;
      this.#bind(this.#headerLine(), path);
      return;
    }
    if (fsCall("look at", path, () => statSync(path)).size === 0) {
      // pi writes the header into an empty file at once.
      this.newSession();
      this.#sessionFile = path;
      fsCall("write the header of", path, () => writeFileSync(path, `${this.#headerLine()}\n`));
    }
    const session = NativeSession.open(path, this.#store.native);
    if (session.headerRecovered()) {
      throw codedError("TREELOG_NOT_A_SESSION", `Session file is not a valid pi session: ${path} (${notSessionReason(path)})`);
    }
    tellNotice(session, this.#store);
    this.#native = session;
    this.#header = null;
    this.#cache = new EntryCache(session);
  }

  /**
   * Picks up what other writers appended to the session file and moves this manager's leaf to
   * the newest entry (the last in the file). Until then, appends continue from this manager's
   * own leaf (the "branch" policy, pi's rule) or as `onConflict` says.
   */
  refresh() {
    this.#native.refresh();
  }

  newSession(options) {
    if (options?.id !== undefined) assertValidSessionId(options.id);
    const id = options?.id ?? uuidv7();
    const timestamp = now();
    this.#header = sessionHeader(id, timestamp, this.#cwd, options?.parentSession);
    if (this.#persist) this.#sessionFile = sessionFileName(this.getSessionDir(), timestamp, id);
    this.#bind(this.#headerLine(), this.#persist ? this.#sessionFile : null);
    return this.#sessionFile;
  }

  #headerLine() {
    return JSON.stringify(this.#header);
  }

  /** A session not written yet: it is written once it holds a user or assistant message. */
  #bind(headerLine, path, entryLines) {
    this.#native = NativeSession.pending(headerLine, path, entryLines ?? null, this.#store.native);
    this.#cache = new EntryCache(this.#native);
    this.#header = JSON.parse(headerLine);
  }

  #loadEntries(entries, options) {
    const header = entries.find((entry) => entry.type === "session");
    let lines = "";
    for (const entry of entries) if (entry.type !== "session") lines += `${JSON.stringify(entry)}\n`;
    if (header) {
      this.#bind(JSON.stringify(header), null, lines);
    } else {
      this.newSession(options);
      this.#bind(this.#headerLine(), null, lines);
    }
  }

  isPersisted() {
    return this.#persist;
  }

  getCwd() {
    return this.#cwd;
  }

  getSessionDir() {
    return this.#sessionDir;
  }

  usesDefaultSessionDir() {
    return pathsEqual(this.#sessionDir, getDefaultSessionDirPath(this.#cwd));
  }

  getSessionId() {
    return this.getHeader()?.id ?? "";
  }

  getSessionFile() {
    return this.#sessionFile;
  }

  // ---- appends ----

  /** The entry `id`, or pi's error for an unknown one. */
  #existing(id) {
    const entry = this.getEntry(id);
    if (entry === undefined) throw codedError("TREELOG_NOT_FOUND", `Entry ${id} not found`);
    return entry;
  }

  #id() {
    return generateId((id) => this.#native.idTaken(id));
  }

  /** Append a message as child of current leaf, then advance leaf. Returns entry id. */
  appendMessage(message) {
    const id = this.#id();
    const json = JSON.stringify(message);
    const appended = this.#appended(this.#native.appendMessage(id, now(), json, hasConversationRole(message)), message);
    this.#checkBudget(messageSource(message), json);
    return appended;
  }

  appendThinkingLevelChange(thinkingLevel) {
    const id = this.#id();
    return this.#appended(this.#native.appendThinkingLevelChange(id, now(), thinkingLevel));
  }

  appendModelChange(provider, modelId) {
    const id = this.#id();
    return this.#appended(this.#native.appendModelChange(id, now(), provider, modelId));
  }

  /** Returns the appended entry, as pi 1.6 does. */
  appendUsage(kind, provider, model, usage, note) {
    const id = this.#id();
    const timestamp = now();
    const parentId = this.getLeafId();
    const entry = { type: "usage", id, parentId, timestamp, kind, provider, model, usage, ...(note ? { note } : {}) };
    this.#appended(this.#native.appendUsage(id, timestamp, kind, provider, model, JSON.stringify(usage), note || null), undefined, entry);
    return entry;
  }

  appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook, usage) {
    const timestamp = now();
    const id = this.#id();
    return this.#appended(this.#native.appendCompaction(
      id,
      timestamp,
      summary,
      firstKeptEntryId ?? null,
      JSON.stringify(tokensBefore),
      optionalJson(details),
      fromHook ?? null,
      optionalJson(usage),
    ));
  }

  appendCustomEntry(customType, data) {
    const id = this.#id();
    const json = optionalJson(data);
    const appended = this.#appended(this.#native.appendCustomEntry(id, now(), customType, json));
    this.#checkBudget(`extension ${customType}`, json ?? "");
    return appended;
  }

  appendSessionInfo(name) {
    const id = this.#id();
    return this.#appended(this.#native.appendSessionInfo(id, now(), name.replace(/[\r\n]+/g, " ").trim()));
  }

  getSessionName() {
    return this.#native.sessionName()?.trim() || undefined;
  }

  appendCustomMessageEntry(customType, content, display, details) {
    const id = this.#id();
    const json = JSON.stringify(content);
    const detailsJson = optionalJson(details);
    const appended = this.#appended(this.#native.appendCustomMessageEntry(id, now(), customType, json, display, detailsJson));
    this.#checkBudget(`extension ${customType}`, json + (detailsJson ?? ""));
    return appended;
  }

  /**
   * The size budget per entry (lib/entry-budget.js): after an append whose payload may put its
   * line over the budget, the line's length is read back and a line over it is reported.
   */
  #checkBudget(source, payloadJson) {
    const budget = this.#store.maxEntryBytes;
    if (!mayExceed(budget, source, payloadJson)) return;
    const line = this.#native.linesJsonl(Uint32Array.of(this.#native.leafSeq()));
    reportLargeEntry(budget, source, Buffer.byteLength(line.endsWith("\n") ? line.slice(0, -1) : line));
  }

  appendContextEdit(targetId, replacement) {
    // pi's checks, in pi's order, all before an id is drawn.
    if (
      replacement !== null &&
      (typeof replacement !== "object" ||
        !("content" in replacement) ||
        (typeof replacement.content !== "string" && !Array.isArray(replacement.content)))
    ) {
      throw codedError("TREELOG_INVALID_INPUT", "Context edit replacement must be null or contain string/array content");
    }
    const target = this.#existing(targetId);
    if (!this.#native.isOnBranch(targetId)) {
      throw codedError("TREELOG_INVALID_INPUT", `Entry ${targetId} is not on the active branch`);
    }
    const editable =
      target.type === "custom_message" ||
      (target.type === "message" &&
        (target.message?.role === "user" || target.message?.role === "assistant" || target.message?.role === "toolResult"));
    if (!editable) {
      throw codedError("TREELOG_INVALID_INPUT", `Entry ${targetId} does not contribute editable model content`);
    }
    const id = this.#id();
    return this.#appended(this.#native.appendContextEdit(id, now(), targetId, replacement === null ? null : JSON.stringify(replacement)));
  }

  // ---- the tree ----

  /** The native session, for the launcher's replacements of pi's code (hook/replacements/). */
  [NATIVE_SESSION]() {
    return this.#native;
  }

  getLeafId() {
    return this.#native.leafId();
  }

  getLeafEntry() {
    const leaf = this.#native.leafSeq();
    return leaf === null ? undefined : this.#cache.at(leaf);
  }

  getEntry(id) {
    return this.#cache.byId(id);
  }

  getChildren(parentId) {
    return this.#cache.load(this.#native.childrenSeqs(parentId));
  }

  getLabel(id) {
    return this.#native.label(id) ?? undefined;
  }

  appendLabelChange(targetId, label) {
    this.#existing(targetId);
    const id = this.#id();
    return this.#appended(this.#native.appendLabelChange(id, now(), targetId, label ?? null));
  }

  getBranch(fromId) {
    if (fromId === undefined || fromId === null) return this.#cache.path().slice();
    return this.#cache.pathTo(fromId);
  }

  buildContextEntries() {
    return this.#cache.load(this.#native.contextEntrySeqs());
  }

  /**
   * pi's projection, its entries the kept values: an entry that contributes its own message
   * contributes the very `message` object getEntry() hands out, as in pi.
   */
  buildSessionProjection() {
    const leaf = this.#native.leafSeq();
    if (leaf === null) return { entries: [], ...EMPTY_CONTEXT() };
    // Parsed on every call: summaries and edited messages are new objects each time, as in pi.
    const plan = JSON.parse(this.#cache.planText(leaf));
    const seqs = plan.entries.map((planned) => (typeof planned === "number" ? planned : planned[0]));
    const sources = this.#cache.loadRead(seqs);
    const entries = new Array(sources.length);
    const messages = [];
    for (let i = 0; i < sources.length; i++) {
      const planned = plan.entries[i];
      const own = typeof planned === "number" ? [sources[i].message] : planned[1];
      entries[i] = { sourceEntry: sources[i], messages: own };
      for (const message of own) messages.push(message);
    }
    return { entries, messages, thinkingLevel: plan.thinkingLevel, model: plan.model };
  }

  buildSessionContext() {
    const { messages, thinkingLevel, model } = this.buildSessionProjection();
    return { messages, thinkingLevel, model };
  }

  getHeader() {
    this.#header ??= JSON.parse(this.#native.headerJson());
    return this.#header;
  }

  getEntryCount() {
    return this.#native.entryCount();
  }

  /** Every entry: a shallow copy of the kept array (pi's is a copy of its own, too). */
  getEntries() {
    return this.#cache.all().slice();
  }

  /**
   * Keeps the entry just appended as a value: `message`, when given, is the caller's own
   * object (pi's entry holds it, and pi's agent finds its messages' entries by identity);
   * `entry`, when given, is the whole value pi would hold.
   */
  #appended(id, message, entry) {
    const seq = this.#native.leafSeq();
    if (entry === undefined) {
      entry = JSON.parse(this.#native.linesJsonl(Uint32Array.of(seq)));
      if (message !== undefined) entry.message = message;
    }
    this.#cache.remember(seq, entry);
    return id;
  }

  /**
   * pi's getTree(), built from getEntries()'s entries exactly as pi builds it: a node per
   * entry with its label, children under their parent in file order, then each node's
   * children sorted by timestamp (a stable sort, so ties and unparsable times keep file
   * order); an entry whose parent is missing is a root. Building it here from the kept array
   * costs what pi's does; reading a tree from the native side cost each line a read and the
   * whole tree a second parse.
   */
  getTree() {
    const entries = this.getEntries();
    const labels = new Map();
    const labelTimestamps = new Map();
    for (const entry of entries) {
      if (entry.type !== "label") continue;
      if (entry.label) {
        labels.set(entry.targetId, entry.label);
        labelTimestamps.set(entry.targetId, entry.timestamp);
      } else {
        labels.delete(entry.targetId);
        labelTimestamps.delete(entry.targetId);
      }
    }
    const nodes = new Map();
    for (const entry of entries) {
      nodes.set(entry.id, { entry, children: [], label: labels.get(entry.id), labelTimestamp: labelTimestamps.get(entry.id) });
    }
    const roots = [];
    for (const entry of entries) {
      const node = nodes.get(entry.id);
      const parent = entry.parentId === null || entry.parentId === entry.id ? undefined : nodes.get(entry.parentId);
      if (parent) parent.children.push(node);
      else roots.push(node);
    }
    // pi's comparator, each entry's time computed once: the same comparisons, so the same order.
    const times = new Map();
    const timeOf = (node) => {
      let time = times.get(node);
      if (time === undefined) {
        time = new Date(node.entry.timestamp).getTime();
        times.set(node, time);
      }
      return time;
    };
    const stack = [...roots];
    while (stack.length > 0) {
      const node = stack.pop();
      if (node.children.length > 1) node.children.sort((a, b) => timeOf(a) - timeOf(b));
      for (const child of node.children) stack.push(child);
    }
    return roots;
  }

  // ---- branching ----

  branch(branchFromId) {
    this.#native.branch(branchFromId);
  }

  resetLeaf() {
    this.#native.resetLeaf();
  }

  branchWithSummary(branchFromId, summary, details, fromHook, usage) {
    if (branchFromId !== null) this.#existing(branchFromId);
    const id = this.#id();
    return this.#appended(this.#native.branchWithSummary(id, now(), branchFromId, summary, optionalJson(details), fromHook ?? null, optionalJson(usage)));
  }

  /**
   * A new session holding the path from the root to `leafId` (labels re-created after it),
   * which this manager then continues. Returns its file, or undefined in memory. The entries
   * are the library's (`Session::branched_entries`); the ids and the clock are drawn here, in
   * pi's order: the session id and time, then one id per label.
   */
  createBranchedSession(leafId) {
    const previousSessionFile = this.#sessionFile;
    const leaf = leafId ?? this.#native.leafId();
    if (leaf === null || this.#native.entrySeq(leaf) === null) throw codedError("TREELOG_NOT_FOUND", `Entry ${leafId} not found`);
    const id = uuidv7();
    const timestamp = now();
    const header = sessionHeader(id, timestamp, this.#cwd, this.#persist ? previousSessionFile : undefined);
    const headerLine = JSON.stringify(header);
    const newSessionFile = this.#persist ? sessionFileName(this.getSessionDir(), timestamp, id) : null;
    const { lines, written } = this.#native.branchedEntries(leaf, drawUuid, newSessionFile, headerLine);
    if (!this.#persist) {
      this.#bind(headerLine, null, lines);
      return undefined;
    }
    this.#sessionFile = newSessionFile;
    if (written) {
      // The branched path holds a conversation: the native half wrote the file.
      this.#native = NativeSession.open(newSessionFile, this.#store.native);
      this.#header = null;
      this.#cache = new EntryCache(this.#native);
    } else {
      this.#bind(headerLine, newSessionFile, lines);
    }
    return newSessionFile;
  }

  // ---- static factories ----

  static create(cwd, sessionDir, options) {
    const store = storeOptionsOf(options);
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
    return new SessionManager(cwd, dir, undefined, true, options, undefined, CONSTRUCT, store);
  }

  /** pi's open; `options` are the store options (see the package README). */
  static open(path, sessionDir, cwdOverride, options) {
    const store = storeOptionsOf(options);
    const resolvedPath = resolvePath(path);
    let header = null;
    if (cwdOverride === undefined && existsSync(resolvedPath)) header = readSessionHeader(resolvedPath);
    const cwd = cwdOverride ?? (typeof header?.cwd === "string" ? header.cwd : undefined) ?? process.cwd();
    const dir = sessionDir ? normalizePath(sessionDir) : nodeResolve(resolvedPath, "..");
    return new SessionManager(cwd, dir, resolvedPath, true, undefined, undefined, CONSTRUCT, store);
  }

  static continueRecent(cwd, sessionDir, options) {
    const store = storeOptionsOf(options);
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
    const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
    const mostRecent = findMostRecentSession(dir, filterCwd ? cwd : undefined);
    return new SessionManager(cwd, dir, mostRecent ?? undefined, true, undefined, undefined, CONSTRUCT, store);
  }

  static inMemory(cwd = process.cwd(), options, entries) {
    return new SessionManager(cwd, "", undefined, false, options, entries, CONSTRUCT);
  }

  static forkFrom(sourcePath, targetCwd, sessionDir, options) {
    const store = storeOptionsOf(options);
    const resolvedSourcePath = resolvePath(sourcePath);
    const resolvedTargetCwd = resolvePath(targetCwd);
    let source = null;
    if (existsSync(resolvedSourcePath) && fsCall("look at", resolvedSourcePath, () => statSync(resolvedSourcePath)).size > 0) {
      source = NativeSession.open(resolvedSourcePath, store.native);
      if (source.headerRecovered()) {
        source.close();
        source = null;
      }
    }
    if (source === null) {
      throw codedError("TREELOG_NOT_A_SESSION", `Cannot fork: source session file is empty or invalid: ${resolvedSourcePath}`);
    }
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(resolvedTargetCwd);
    if (!existsSync(dir)) fsCall("create the session folder", dir, () => mkdirSync(dir, { recursive: true }));
    if (options?.id !== undefined) assertValidSessionId(options.id);
    const id = options?.id ?? uuidv7();
    const timestamp = now();
    const newSessionFile = sessionFileName(dir, timestamp, id);
    const header = sessionHeader(id, timestamp, resolvedTargetCwd, resolvedSourcePath);
    try {
      source.writeFork(newSessionFile, JSON.stringify(header));
    } finally {
      source.close();
    }
    return new SessionManager(resolvedTargetCwd, dir, newSessionFile, true, undefined, undefined, CONSTRUCT, store);
  }

  /**
   * pi's list: the sessions of `cwd` (in `sessionDir`, default pi's directory for `cwd`;
   * filtered by cwd when `sessionDir` is another directory), newest activity first.
   * `onProgress(loaded, total, partialSessions?)` is called as pi calls it.
   */
  static async list(cwd, sessionDir, onProgress, signal) {
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
    const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
    const resolvedCwd = resolvePath(cwd);
    const includeSession = (session) => !filterCwd || sessionCwdMatches(session.cwd, resolvedCwd);
    const progress = onProgress
      ? (loaded, total, partialSessions) => onProgress(loaded, total, partialSessions?.filter(includeSession))
      : undefined;
    const sessions = (await listSessionsFromDir(dir, progress, signal)).filter(includeSession);
    return sortSessionInfos(sessions);
  }

  /**
   * pi's listAll: every session under pi's sessions directory (or `sessionDir`), newest
   * activity first. Takes pi 1.6's `(sessionDir?, onProgress?, signal?)` and 0.73.1's
   * `(onProgress?)`.
   */
  static async listAll(sessionDirOrOnProgress, onProgressOrSignal, signal) {
    const customSessionDir = typeof sessionDirOrOnProgress === "string" ? normalizePath(sessionDirOrOnProgress) : undefined;
    const progress =
      typeof sessionDirOrOnProgress === "function"
        ? sessionDirOrOnProgress
        : typeof onProgressOrSignal === "function"
          ? onProgressOrSignal
          : undefined;
    const abortSignal =
      typeof sessionDirOrOnProgress === "string" || typeof onProgressOrSignal === "function" ? signal : (onProgressOrSignal ?? signal);
    abortSignal?.throwIfAborted();
    if (customSessionDir) return sortSessionInfos(await listSessionsFromDir(customSessionDir, progress, abortSignal));
    const sessionsDir = join(getAgentDir(), "sessions");
    try {
      if (!existsSync(sessionsDir)) return [];
      const entries = await readdir(sessionsDir, { withFileTypes: true });
      const dirs = entries.filter((entry) => entry.isDirectory() || entry.isSymbolicLink()).map((entry) => join(sessionsDir, entry.name));
      const dirFiles = await mapWithConcurrency(
        dirs,
        MAX_CONCURRENT_SESSION_DISCOVERY_LOADS,
        async (dir) => {
          try {
            return (await readdir(dir)).filter((file) => file.endsWith(".jsonl")).map((file) => join(dir, file));
          } catch {
            return [];
          }
        },
        abortSignal,
      );
      const candidates = await mapWithConcurrency(
        dirFiles.flat(),
        MAX_CONCURRENT_SESSION_DISCOVERY_LOADS,
        async (path) => {
          try {
            return { path, stats: await stat(path) };
          } catch {
            return { path };
          }
        },
        abortSignal,
      );
      candidates.sort(
        (a, b) =>
          (b.stats?.mtimeMs ?? Number.NEGATIVE_INFINITY) - (a.stats?.mtimeMs ?? Number.NEGATIVE_INFINITY) ||
          basename(b.path).localeCompare(basename(a.path)),
      );
      const totalFiles = candidates.length;
      let loaded = 0;
      let firstCandidateLoaded = false;
      const partialSessions = [];
      const results = await buildSessionInfosWithConcurrency(
        candidates,
        (info, index) => {
          loaded++;
          if (index === 0) firstCandidateLoaded = true;
          if (info) partialSessions.push(info);
          const publishPartial =
            firstCandidateLoaded && (index === 0 || loaded % ALL_SESSION_LIST_PUBLISH_INTERVAL === 0 || loaded === totalFiles);
          progress?.(loaded, totalFiles, publishPartial ? sortSessionInfos([...partialSessions]) : undefined);
        },
        abortSignal,
      );
      return sortSessionInfos(results.filter((info) => info !== null));
    } catch {
      abortSignal?.throwIfAborted();
      return [];
    }
  }

  static findById(cwd, id, sessionDir) {
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
    const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
    const resolvedCwd = resolvePath(cwd);
    try {
      for (const file of readdirSync(dir)) {
        if (!file.endsWith(".jsonl")) continue;
        const path = join(dir, file);
        const header = readSessionHeader(path);
        if (header?.id !== id) continue;
        if (filterCwd && !sessionCwdMatches(header.cwd, resolvedCwd)) continue;
        return path;
      }
    } catch {
      // Best effort, as in pi.
    }
    return undefined;
  }
}

