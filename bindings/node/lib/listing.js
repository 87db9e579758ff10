// pi 1.6.0's session listing (SessionManager.list / listAll): the same SessionInfo values, the
// same onProgress calls, the same concurrency and order. What differs is how one file is read:
// pi JSON.parses every line; here the native half reads the file on a libuv worker and finds
// only what the listing needs (treelog::listing::pi_summary), and `allMessagesText`, which
// needs every text of the session, is built the first time it is read.
//
// A file whose lines make pi's loop throw or need JavaScript's own rules (the native half says
// "irregular") is answered by pi's own loop, below, over the file's text.
import { existsSync, readFileSync, statSync } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";

import { native } from "./native.js";

/** The folder where big files' summaries are kept between listings (none: not kept). */
let summaryCache = null;

/**
 * Keeps the listing summaries of big session files in `dir` (treelog::listing::summary_cache),
 * so that a later listing reads only what such a file gained since: what treelog-pi turns on,
 * in treelog's cache folder. null turns it off.
 */
export function keepSummaries(dir) {
  summaryCache = dir ?? null;
}

const MAX_CONCURRENT_SESSION_INFO_LOADS = 10;
const CURRENT_SESSION_LIST_PUBLISH_INTERVAL = 10;
export const MAX_CONCURRENT_SESSION_DISCOVERY_LOADS = 64;
export const ALL_SESSION_LIST_PUBLISH_INTERVAL = 100;

// ---- pi's own loop, for the files the native half does not answer ----

function parseSessionEntryLine(line) {
  if (!line.trim()) return null;
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

function isMessageWithContent(message) {
  return typeof message.role === "string" && "content" in message;
}

function extractTextContent(message) {
  const content = message.content;
  if (typeof content === "string") return content;
  return content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join(" ");
}

function getMessageActivityTime(entry) {
  const message = entry.message;
  if (!isMessageWithContent(message)) return undefined;
  if (message.role !== "user" && message.role !== "assistant") return undefined;
  if (typeof message.timestamp === "number") return message.timestamp;
  const time = new Date(entry.timestamp).getTime();
  return Number.isNaN(time) ? undefined : time;
}

/** pi's buildSessionInfo loop over a file's text (readline's lines: split at \r\n, \n, \r, U+2028, U+2029). */
function infoFromText(filePath, text, stats) {
  let header = null;
  let messageCount = 0;
  let firstMessage = "";
  const allMessages = [];
  let name;
  let lastActivityTime;
  for (const line of text.split(/\r\n|\n|\r|\u2028|\u2029/)) {
    const entry = parseSessionEntryLine(line);
    if (!entry) continue;
    if (!header) {
      if (entry.type !== "session") return null;
      header = entry;
      continue;
    }
    if (entry.type === "session_info") name = entry.name?.trim() || undefined;
    if (entry.type !== "message") continue;
    messageCount++;
    const activityTime = getMessageActivityTime(entry);
    if (typeof activityTime === "number") lastActivityTime = Math.max(lastActivityTime ?? 0, activityTime);
    const message = entry.message;
    if (!isMessageWithContent(message)) continue;
    if (message.role !== "user" && message.role !== "assistant") continue;
    const textContent = extractTextContent(message);
    if (!textContent) continue;
    allMessages.push(textContent);
    if (!firstMessage && message.role === "user") firstMessage = textContent;
  }
  if (!header) return null;
  return sessionInfo(filePath, header, lastActivityTime, stats, {
    name,
    messageCount,
    firstMessage: firstMessage || "(no messages)",
    allMessagesText: allMessages.join(" "),
  });
}

// ---- the listing entry ----

/** pi's SessionInfo, its keys in pi's order; `allMessagesText` a string or a getter. */
function sessionInfo(filePath, header, lastActivityTime, stats, found) {
  const cwd = typeof header.cwd === "string" ? header.cwd : "";
  const headerTime = typeof header.timestamp === "string" ? new Date(header.timestamp).getTime() : NaN;
  const modified =
    typeof lastActivityTime === "number" && lastActivityTime > 0
      ? new Date(lastActivityTime)
      : !Number.isNaN(headerTime)
        ? new Date(headerTime)
        : (stats ?? statSync(filePath)).mtime;
  const info = {
    path: filePath,
    id: header.id,
    cwd,
    name: found.name,
    parentSessionPath: header.parentSession,
    created: new Date(header.timestamp),
    modified,
    messageCount: found.messageCount,
    firstMessage: found.firstMessage,
    allMessagesText: found.allMessagesText,
  };
  if (found.allMessagesText === undefined) lazyAllMessagesText(info, filePath);
  return info;
}

/** Every user and assistant text of the session, joined: built when first read, then kept. */
function lazyAllMessagesText(info, filePath) {
  const settle = (target, value) =>
    Object.defineProperty(target, "allMessagesText", { value, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(info, "allMessagesText", {
    enumerable: true,
    configurable: true,
    get() {
      return settle(this, allMessagesTextOf(filePath)).allMessagesText;
    },
    set(value) {
      settle(this, value);
    },
  });
}

function allMessagesTextOf(filePath) {
  try {
    const text = native.summarizeSessionTexts(filePath);
    if (typeof text === "string") return text;
    // Irregular now (the file changed since it was listed): pi's own loop.
    return infoFromText(filePath, readFileSync(filePath, "utf8"))?.allMessagesText ?? "";
  } catch {
    return "";
  }
}

/** pi's buildSessionInfo: the listing entry of one file, or null when pi lists none. */
async function buildSessionInfo(filePath, signal, fileStats) {
  try {
    signal?.throwIfAborted();
    const summary = JSON.parse(await native.summarizeSession(filePath, summaryCache));
    signal?.throwIfAborted();
    if (summary === null) return null;
    if (summary.irregular !== undefined) {
      const stats = fileStats ?? (await stat(filePath));
      return infoFromText(filePath, await readFile(filePath, "utf8"), stats);
    }
    return sessionInfo(filePath, JSON.parse(summary.header), summary.lastActivity ?? undefined, fileStats, {
      name: summary.name ?? undefined,
      messageCount: summary.messageCount,
      firstMessage: summary.firstMessage ?? "(no messages)",
      allMessagesText: undefined,
    });
  } catch {
    signal?.throwIfAborted();
    return null;
  }
}

// ---- pi's concurrency and progress ----

export async function mapWithConcurrency(items, limit, map, signal) {
  const results = new Array(items.length);
  let nextIndex = 0;
  const worker = async () => {
    while (nextIndex < items.length) {
      signal?.throwIfAborted();
      const index = nextIndex++;
      results[index] = await map(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, () => worker()));
  return results;
}

export function sortSessionInfos(sessions) {
  return sessions.sort((a, b) => b.modified.getTime() - a.modified.getTime());
}

export function buildSessionInfosWithConcurrency(files, onLoaded, signal) {
  return mapWithConcurrency(
    files,
    MAX_CONCURRENT_SESSION_INFO_LOADS,
    async (file, index) => {
      const info = await buildSessionInfo(file.path, signal, file.stats);
      onLoaded(info, index);
      return info;
    },
    signal,
  );
}

/** pi's listSessionsFromDir: newest file name first, progress after each file. */
export async function listSessionsFromDir(dir, onProgress, signal) {
  signal?.throwIfAborted();
  if (!existsSync(dir)) return [];
  try {
    const dirEntries = await readdir(dir);
    const files = dirEntries
      .filter((file) => file.endsWith(".jsonl"))
      .sort((a, b) => b.localeCompare(a))
      .map((file) => ({ path: join(dir, file) }));
    const total = files.length;
    const partialSessions = [];
    let loaded = 0;
    const results = await buildSessionInfosWithConcurrency(
      files,
      (info) => {
        loaded++;
        if (info) partialSessions.push(info);
        const publishPartial = loaded === 1 || loaded % CURRENT_SESSION_LIST_PUBLISH_INTERVAL === 0 || loaded === files.length;
        onProgress?.(loaded, total, publishPartial ? sortSessionInfos([...partialSessions]) : undefined);
      },
      signal,
    );
    return results.filter((info) => info !== null);
  } catch {
    signal?.throwIfAborted();
    return [];
  }
}
