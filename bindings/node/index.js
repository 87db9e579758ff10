// treelog's Node package: pi-coding-agent's session-manager module (1.6.0's surface, which
// holds 0.73.1's), on treelog. Swap the import and nothing else changes:
//
//   import { SessionManager } from "treelog";   // was ".../pi-coding-agent/dist/core/session-manager.js"
//
// The native half (native.cjs, a napi-rs addon) holds one treelog session per manager and
// answers each query with one JSON string, parsed here. Ids and timestamps are drawn here,
// exactly as pi draws them (crypto.randomUUID().slice(0, 8), new Date().toISOString()), so a
// caller that injects its own clock or ids gets the same bytes from both.
import { randomUUID } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { readdir, stat } from "node:fs/promises";
import { basename, isAbsolute, join, posix, resolve as nodeResolve, win32 } from "node:path";
import { fileURLToPath } from "node:url";

import {
  ALL_SESSION_LIST_PUBLISH_INTERVAL,
  MAX_CONCURRENT_SESSION_DISCOVERY_LOADS,
  buildSessionInfosWithConcurrency,
  listSessionsFromDir,
  mapWithConcurrency,
  sortSessionInfos,
} from "./listing.js";

export { reindexSearch, search } from "./search.js";

const native = createRequire(import.meta.url)("./native.cjs");
const { NativeSession } = native;

export const CURRENT_SESSION_VERSION = 3;

// ---- errors ----

/** An Error with a stable `code`, as the native half throws them. */
function codedError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

// ---- paths, as pi resolves them ----

function normalizePath(input) {
  if (input === "~") return homedir();
  if (input.startsWith("~/")) return join(homedir(), input.slice(2));
  if (/^file:\/\//.test(input)) return fileURLToPath(input);
  return input;
}

function resolvePath(input, baseDir = process.cwd()) {
  const normalized = normalizePath(input);
  return isAbsolute(normalized) ? nodeResolve(normalized) : nodeResolve(normalizePath(baseDir), normalized);
}

function pathsEqual(left, right) {
  const api = process.platform === "win32" ? win32 : posix;
  const key = (path) => (api === win32 ? api.resolve(path).toLowerCase() : api.resolve(path));
  return key(left) === key(right);
}

function getAgentDir() {
  const envDir = process.env.PI_CODING_AGENT_DIR;
  return envDir ? normalizePath(envDir) : join(homedir(), ".pi", "agent");
}

function getDefaultSessionDirPath(cwd, agentDir = getAgentDir()) {
  const safePath = `--${resolvePath(cwd).replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
  return join(resolvePath(agentDir), "sessions", safePath);
}

export function getDefaultSessionDir(cwd, agentDir = getAgentDir()) {
  const sessionDir = getDefaultSessionDirPath(cwd, agentDir);
  if (!existsSync(sessionDir)) mkdirSync(sessionDir, { recursive: true });
  return sessionDir;
}

// ---- ids ----

export function assertValidSessionId(id) {
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(id)) {
    throw new Error(
      "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character",
    );
  }
}

/** A version 7 uuid: the clock's milliseconds, then random bits (from getRandomValues, as
 * pi-ai's; crypto.randomUUID, which entry ids come from, is not drawn). */
function uuidv7() {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  let time = Date.now();
  for (let index = 5; index >= 0; index--) {
    bytes[index] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes[6] = 0x70 | (bytes[6] & 0x0f);
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** pi's generateId: 8 hex characters not taken, after 100 tries a whole uuid. */
function generateId(taken) {
  for (let i = 0; i < 100; i++) {
    const id = randomUUID().slice(0, 8);
    if (!taken(id)) return id;
  }
  return randomUUID();
}

const now = () => new Date().toISOString();
const optionalJson = (value) => (value === undefined ? null : (JSON.stringify(value) ?? null));

// ---- reading session files without a manager ----

/** The entries of JSONL text whose every line is an entry (the native half's `entriesJsonl`),
 * parsed line by line: in V8 that costs less than one JSON.parse of an array of them. */
function parseEntryLines(text) {
  const entries = [];
  let start = 0;
  let newline = text.indexOf("\n");
  while (newline !== -1) {
    entries.push(JSON.parse(text.slice(start, newline)));
    start = newline + 1;
    newline = text.indexOf("\n", start);
  }
  return entries;
}

function parseLine(line) {
  if (!line.trim()) return null;
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

/** Exported for compaction.test.ts */
export function parseSessionEntries(content) {
  const entries = [];
  for (const line of content.trim().split("\n")) {
    const entry = parseLine(line);
    if (entry !== null) entries.push(entry);
  }
  return entries;
}

export function getLatestCompactionEntry(entries) {
  for (let i = entries.length - 1; i >= 0; i--) {
    if (entries[i].type === "compaction") return entries[i];
  }
  return null;
}

/** Exported for testing: every JSON line of the file; [] when its first is not a header. */
export function loadEntriesFromFile(filePath) {
  const path = normalizePath(filePath);
  // No JSON line at all (an empty file among them): pi returns [] before looking for a header.
  if (!existsSync(path) || readSessionHeader(path) === null) return [];
  let session;
  try {
    session = NativeSession.open(path);
  } catch {
    return [];
  }
  if (session.headerRecovered()) return [];
  const entries = parseEntryLines(session.entriesJsonl());
  entries.unshift(JSON.parse(session.headerJson()));
  return entries;
}

/** The header of a session file: its first JSON line, when that is a header; else null. */
function readSessionHeader(filePath) {
  const fd = openSync(filePath, "r");
  try {
    const buffer = Buffer.allocUnsafe(4096);
    let pending = "";
    let scanned = 0;
    while (scanned < 1024 * 1024) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      scanned += read;
      pending += buffer.subarray(0, read).toString("latin1");
      let newline = pending.indexOf("\n");
      while (newline !== -1) {
        const line = Buffer.from(pending.slice(0, newline), "latin1").toString("utf8");
        const entry = parseLine(line);
        if (entry !== null) return entry.type === "session" && typeof entry.id === "string" ? entry : null;
        pending = pending.slice(newline + 1);
        newline = pending.indexOf("\n");
      }
    }
    const entry = parseLine(Buffer.from(pending, "latin1").toString("utf8"));
    return entry !== null && entry.type === "session" && typeof entry.id === "string" ? entry : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

function sessionCwdMatches(cwd, resolvedCwd) {
  return typeof cwd === "string" && cwd !== "" && pathsEqual(resolvePath(cwd), resolvedCwd);
}

/** Exported for testing */
export function findMostRecentSession(sessionDir, cwd) {
  const dir = normalizePath(sessionDir);
  const resolvedCwd = cwd ? resolvePath(cwd) : undefined;
  try {
    const files = readdirSync(dir)
      .filter((file) => file.endsWith(".jsonl"))
      .map((file) => join(dir, file))
      .map((path) => ({ path, mtime: statSync(path).mtimeMs }))
      .sort((a, b) => b.mtime - a.mtime);
    for (const { path } of files) {
      const header = readSessionHeader(path);
      if (header && (!resolvedCwd || sessionCwdMatches(header.cwd, resolvedCwd))) return path;
    }
    return null;
  } catch {
    return null;
  }
}

// ---- context over entry arrays, through the engine ----

/** A memory session holding `entries` (pi's SessionEntry[], in order) under a made-up header. */
function sessionOf(entries) {
  const header = JSON.stringify({ type: "session", version: CURRENT_SESSION_VERSION, id: "entries", timestamp: "", cwd: "" });
  let lines = "";
  for (const entry of entries) lines += `${JSON.stringify(entry)}\n`;
  return NativeSession.pending(header, null, lines);
}

/** pi's leaf rule for entry arrays: null gives nothing; undefined or unknown, the last entry. */
function leafFor(session, entries, leafId) {
  if (leafId === null) return null;
  if (leafId && session.entryJson(leafId) !== null) return leafId;
  const last = entries[entries.length - 1];
  return last ? last.id : null;
}

const EMPTY_CONTEXT = () => ({ messages: [], thinkingLevel: "off", model: null });

export function buildSessionContext(entries, leafId, _byId) {
  const session = sessionOf(entries);
  const leaf = leafFor(session, entries, leafId);
  return leaf === null ? EMPTY_CONTEXT() : JSON.parse(session.contextJson(leaf));
}

export function buildContextEntries(entries, leafId, _byId) {
  const session = sessionOf(entries);
  const leaf = leafFor(session, entries, leafId);
  return leaf === null ? [] : JSON.parse(session.contextEntriesJson(leaf));
}

export function buildSessionProjection(entries, leafId, _byId) {
  const session = sessionOf(entries);
  const leaf = leafFor(session, entries, leafId);
  return leaf === null ? { entries: [], ...EMPTY_CONTEXT() } : JSON.parse(session.projectionJson(leaf));
}

/** Project one entry into the messages it gives the context (pi's own function). */
export function sessionEntryToContextMessages(entry) {
  return projectContextEntry(entry, undefined);
}

/** Project one entry into model-visible messages, applying `edit` (a context edit) if any. */
export function projectContextEntry(entry, edit) {
  const entries = [{ ...entry, parentId: null }];
  if (edit) {
    entries.push({ ...edit, id: entry.id === "edit" ? "edit-1" : "edit", parentId: entry.id, targetId: entry.id });
  }
  const projection = buildSessionProjection(entries, entries[entries.length - 1].id);
  return projection.entries[0]?.messages ?? [];
}

/** Exported for testing: brings v1 and v2 entries to version 3, in place (pi's migration). */
export function migrateSessionEntries(entries) {
  const header = entries.find((entry) => entry.type === "session");
  const version = header?.version ?? 1;
  if (version >= CURRENT_SESSION_VERSION) return;
  if (version < 2) {
    const ids = new Set();
    let previousId = null;
    for (const entry of entries) {
      if (entry.type === "session") {
        entry.version = 2;
        continue;
      }
      entry.id = generateId((id) => ids.has(id));
      entry.parentId = previousId;
      previousId = entry.id;
      if (entry.type === "compaction" && typeof entry.firstKeptEntryIndex === "number") {
        const target = entries[entry.firstKeptEntryIndex];
        if (target && target.type !== "session") entry.firstKeptEntryId = target.id;
        delete entry.firstKeptEntryIndex;
      }
    }
  }
  for (const entry of entries) {
    if (entry.type === "session") {
      entry.version = 3;
    } else if (entry.type === "message" && entry.message && entry.message.role === "hookMessage") {
      entry.message.role = "custom";
    }
  }
}

// ---- entries as values ----

/** How many entries one native read hands back at most: bounds the text held at once. */
const LINES_PER_READ = 4096;

/**
 * The entries of one session as JS values, each parsed once from its line and then kept, as
 * pi keeps every entry it parsed: the same object wherever an entry is handed out (getEntry,
 * getBranch, getEntries, the projection's sourceEntry, whose `message` is the projection's
 * message), so pi's callers that compare entries or messages by identity find them. An entry
 * is keyed by its sequence number, its place among the log's lines, which never changes.
 * Beside it, the active path and the entries in file order, kept and caught up with what
 * changed: a repeat call costs a copy of the array, an append or a move of the leaf costs
 * the entries it adds.
 */
class EntryCache {
  #native;
  /** Entry values by sequence number (a holey array: only the entries read so far). */
  #bySeq = [];
  /** The path from the root to #pathLeaf (a sequence number; null: empty). */
  #path = [];
  #pathLeaf = null;
  /** Every entry in file order, and the first sequence number not looked at yet. */
  #all = [];
  #allNext = 0;

  constructor(native) {
    this.#native = native;
  }

  /** Keeps `entry` as the value of `seq` (an entry this manager just appended). */
  remember(seq, entry) {
    this.#bySeq[seq] = entry;
  }

  at(seq) {
    return this.#bySeq[seq] ?? this.load([seq])[0];
  }

  /** The entries of `seqs` (an array-like of sequence numbers), reading the missing ones. */
  load(seqs) {
    const missing = [];
    for (let i = 0; i < seqs.length; i++) if (this.#bySeq[seqs[i]] === undefined) missing.push(seqs[i]);
    for (let start = 0; start < missing.length; start += LINES_PER_READ) {
      const batch = Uint32Array.from(missing.slice(start, start + LINES_PER_READ));
      const text = this.#native.linesJsonl(batch);
      let from = 0;
      for (let i = 0; i < batch.length; i++) {
        const end = text.indexOf("\n", from);
        this.#bySeq[batch[i]] ??= JSON.parse(text.slice(from, end));
        from = end + 1;
      }
    }
    const out = new Array(seqs.length);
    for (let i = 0; i < seqs.length; i++) out[i] = this.#bySeq[seqs[i]];
    return out;
  }

  byId(id) {
    const seq = this.#native.entrySeq(id);
    return seq === null ? undefined : this.at(seq);
  }

  /** The active path (the cached array itself: callers copy it). */
  path() {
    const leaf = this.#native.leafSeq();
    if (leaf !== this.#pathLeaf) {
      const since = this.#native.pathSince(null, this.#pathLeaf);
      this.#path.length = since[0];
      const tail = this.load(since.subarray(1));
      for (let i = 0; i < tail.length; i++) this.#path.push(tail[i]);
      this.#pathLeaf = leaf;
    }
    return this.#path;
  }

  /** The path from the root to `id`, or [] for an unknown id. */
  pathTo(id) {
    const path = this.path();
    const since = this.#native.pathSince(id, this.#pathLeaf);
    if (since === null) return [];
    const out = path.slice(0, since[0]);
    const tail = this.load(since.subarray(1));
    for (let i = 0; i < tail.length; i++) out.push(tail[i]);
    return out;
  }

  /** Every entry in file order (the cached array itself: callers copy it). */
  all() {
    if (this.#all.length !== this.#native.entryCount()) {
      const seqs = this.#native.entrySeqsFrom(this.#allNext);
      const added = this.load(seqs);
      for (let i = 0; i < added.length; i++) this.#all.push(added[i]);
      if (seqs.length > 0) this.#allNext = seqs[seqs.length - 1] + 1;
    }
    return this.#all;
  }
}

// ---- the manager ----

/** Only the static factories construct a manager (pi's constructor is private). */
const CONSTRUCT = Symbol("SessionManager construction");

const hasConversationRole = (message) => message?.role === "user" || message?.role === "assistant";

/**
 * pi's SessionManager: an append-only tree of entries in a JSONL file, here a treelog
 * session (the log plus its sidecar index, `<file>.treelog`).
 */
export class SessionManager {
  #native;
  #header = null;
  /** The entries as values: each entry parsed once, by sequence number (see EntryCache). */
  #cache = null;
  #cwd;
  #sessionDir;
  #sessionFile;
  #persist;

  /** Use the static factories (create, open, continueRecent, inMemory, forkFrom). */
  constructor(cwd, sessionDir, sessionFile, persist, newSessionOptions, preloadedFileEntries, token) {
    if (token !== CONSTRUCT) throw new TypeError("SessionManager: use the static factories (create, open, ...)");
    this.#cwd = resolvePath(cwd);
    this.#sessionDir = normalizePath(sessionDir);
    this.#persist = persist;
    if (persist && this.#sessionDir && !existsSync(this.#sessionDir)) mkdirSync(this.#sessionDir, { recursive: true });
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
    if (statSync(path).size === 0) {
      // pi writes the header into an empty file at once.
      this.newSession();
      this.#sessionFile = path;
      writeFileSync(path, `${this.#headerLine()}\n`);
    }
    const session = NativeSession.open(path);
    if (session.headerRecovered()) {
      throw codedError("TREELOG_NOT_A_SESSION", `Session file is not a valid pi session: ${path}`);
    }
    this.#native = session;
    this.#header = null;
    this.#cache = new EntryCache(session);
  }

  newSession(options) {
    if (options?.id !== undefined) assertValidSessionId(options.id);
    const id = options?.id ?? uuidv7();
    const timestamp = now();
    this.#header = {
      type: "session",
      version: CURRENT_SESSION_VERSION,
      id,
      timestamp,
      cwd: this.#cwd,
      parentSession: options?.parentSession,
    };
    if (this.#persist) {
      this.#sessionFile = join(this.getSessionDir(), `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
    }
    this.#bind(this.#headerLine(), this.#persist ? this.#sessionFile : null);
    return this.#sessionFile;
  }

  #headerLine() {
    return JSON.stringify(this.#header);
  }

  /** A session not written yet: it is written once it holds a user or assistant message. */
  #bind(headerLine, path, entryLines) {
    this.#native = NativeSession.pending(headerLine, path, entryLines ?? null);
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
    return this.#appended(this.#native.appendMessage(id, now(), JSON.stringify(message), hasConversationRole(message)), message);
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
    return this.#appended(this.#native.appendCustomEntry(id, now(), customType, optionalJson(data)));
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
    return this.#appended(this.#native.appendCustomMessageEntry(id, now(), customType, JSON.stringify(content), display, optionalJson(details)));
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
    if (this.#native.leafSeq() === null) return { entries: [], ...EMPTY_CONTEXT() };
    const plan = JSON.parse(this.#native.projectionPlanJson());
    const seqs = plan.entries.map((planned) => (typeof planned === "number" ? planned : planned[0]));
    const sources = this.#cache.load(seqs);
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
   * which this manager then continues. Returns its file, or undefined in memory.
   */
  createBranchedSession(leafId) {
    const previousSessionFile = this.#sessionFile;
    const path = this.getBranch(leafId);
    if (path.length === 0) throw codedError("TREELOG_NOT_FOUND", `Entry ${leafId} not found`);
    const kept = [];
    const replacementByLabelId = new Map();
    const pendingLabelIds = [];
    let parentId = null;
    for (const entry of path) {
      if (entry.type === "label") {
        pendingLabelIds.push(entry.id);
        continue;
      }
      for (const labelId of pendingLabelIds) replacementByLabelId.set(labelId, entry.id);
      pendingLabelIds.length = 0;
      kept.push(
        entry.type === "compaction"
          ? {
              ...entry,
              parentId,
              firstKeptEntryId:
                entry.firstKeptEntryId === entry.id
                  ? entry.id
                  : (replacementByLabelId.get(entry.firstKeptEntryId) ?? entry.firstKeptEntryId),
            }
          : { ...entry, parentId },
      );
      parentId = entry.id;
    }
    const id = uuidv7();
    const timestamp = now();
    const newSessionFile = join(this.getSessionDir(), `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
    const header = {
      type: "session",
      version: CURRENT_SESSION_VERSION,
      id,
      timestamp,
      cwd: this.#cwd,
      parentSession: this.#persist ? previousSessionFile : undefined,
    };
    // Labels of the kept entries, in the order pi's label map holds them (first set, or
    // set again after a clear), with their timestamps.
    const keptIds = new Set(kept.map((entry) => entry.id));
    const labels = new Map();
    for (const entry of this.getEntries()) {
      if (entry.type !== "label") continue;
      if (entry.label) {
        if (!labels.has(entry.targetId)) labels.set(entry.targetId, null);
        labels.set(entry.targetId, { label: entry.label, timestamp: entry.timestamp });
      } else {
        labels.delete(entry.targetId);
      }
    }
    const taken = new Set(keptIds);
    let labelParent = kept[kept.length - 1]?.id || null;
    const labelEntries = [];
    for (const [targetId, value] of labels) {
      if (!keptIds.has(targetId)) continue;
      const labelEntry = {
        type: "label",
        id: generateId((candidate) => taken.has(candidate)),
        parentId: labelParent,
        timestamp: value.timestamp,
        targetId,
        label: value.label,
      };
      taken.add(labelEntry.id);
      labelEntries.push(labelEntry);
      labelParent = labelEntry.id;
    }
    let lines = "";
    for (const entry of [...kept, ...labelEntries]) lines += `${JSON.stringify(entry)}\n`;
    const headerLine = JSON.stringify(header);
    if (this.#persist) {
      this.#sessionFile = newSessionFile;
      const conversation = kept.some((entry) => entry.type === "message" && hasConversationRole(entry.message));
      if (conversation) {
        writeFileSync(newSessionFile, `${headerLine}\n${lines}`);
        this.#native = NativeSession.open(newSessionFile);
        this.#header = null;
        this.#cache = new EntryCache(this.#native);
      } else {
        this.#bind(headerLine, newSessionFile, lines);
      }
      return newSessionFile;
    }
    this.#bind(headerLine, null, lines);
    return undefined;
  }

  // ---- static factories ----

  static create(cwd, sessionDir, options) {
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
    return new SessionManager(cwd, dir, undefined, true, options, undefined, CONSTRUCT);
  }

  static open(path, sessionDir, cwdOverride) {
    const resolvedPath = resolvePath(path);
    let header = null;
    if (cwdOverride === undefined && existsSync(resolvedPath)) header = readSessionHeader(resolvedPath);
    const cwd = cwdOverride ?? (typeof header?.cwd === "string" ? header.cwd : undefined) ?? process.cwd();
    const dir = sessionDir ? normalizePath(sessionDir) : nodeResolve(resolvedPath, "..");
    return new SessionManager(cwd, dir, resolvedPath, true, undefined, undefined, CONSTRUCT);
  }

  static continueRecent(cwd, sessionDir) {
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
    const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
    const mostRecent = findMostRecentSession(dir, filterCwd ? cwd : undefined);
    return new SessionManager(cwd, dir, mostRecent ?? undefined, true, undefined, undefined, CONSTRUCT);
  }

  static inMemory(cwd = process.cwd(), options, entries) {
    return new SessionManager(cwd, "", undefined, false, options, entries, CONSTRUCT);
  }

  static forkFrom(sourcePath, targetCwd, sessionDir, options) {
    const resolvedSourcePath = resolvePath(sourcePath);
    const resolvedTargetCwd = resolvePath(targetCwd);
    let source = null;
    if (existsSync(resolvedSourcePath) && statSync(resolvedSourcePath).size > 0) {
      source = NativeSession.open(resolvedSourcePath);
      if (source.headerRecovered()) source = null;
    }
    if (source === null) {
      throw codedError("TREELOG_NOT_A_SESSION", `Cannot fork: source session file is empty or invalid: ${resolvedSourcePath}`);
    }
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(resolvedTargetCwd);
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
    if (options?.id !== undefined) assertValidSessionId(options.id);
    const id = options?.id ?? uuidv7();
    const timestamp = now();
    const newSessionFile = join(dir, `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
    const header = {
      type: "session",
      version: CURRENT_SESSION_VERSION,
      id,
      timestamp,
      cwd: resolvedTargetCwd,
      parentSession: resolvedSourcePath,
    };
    writeFileSync(newSessionFile, `${JSON.stringify(header)}\n${source.entriesJsonl()}`, { flag: "wx" });
    return new SessionManager(resolvedTargetCwd, dir, newSessionFile, true, undefined, undefined, CONSTRUCT);
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

