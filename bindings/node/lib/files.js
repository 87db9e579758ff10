// Session files read without a manager, as pi reads them: the header, why a file is not a
// session, the most recent session of a folder, every entry of a file.
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { join } from "node:path";

import { NativeSession } from "./native.js";
import { normalizePath, pathsEqual, resolvePath } from "./paths.js";

export const CURRENT_SESSION_VERSION = 3;

/** A session's header as pi writes it (`parentSession` undefined: left out of the line). */
export function sessionHeader(id, timestamp, cwd, parentSession) {
  return { type: "session", version: CURRENT_SESSION_VERSION, id, timestamp, cwd, parentSession };
}

/** Where pi puts a new session in `dir`: its start time (":" and "." made "-") and id. */
export function sessionFileName(dir, timestamp, id) {
  return join(dir, `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
}

/** The entries of JSONL text whose every line is an entry (the native half's `entriesJsonl`),
 * parsed line by line: in V8 that costs less than one JSON.parse of an array of them. */
export function parseEntryLines(text) {
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

export function parseLine(line) {
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
  try {
    if (session.headerRecovered()) return [];
    const entries = parseEntryLines(session.entriesJsonl());
    entries.unshift(JSON.parse(session.headerJson()));
    return entries;
  } finally {
    session.close();
  }
}

/** The header of a session file: its first JSON line, when that is a header; else null. */
export function readSessionHeader(filePath) {
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

/**
 * Why a file that has bytes is not a session, in the user's words: pi reads its first line
 * that parses as JSON as the header.
 */
export function notSessionReason(filePath) {
  let text;
  try {
    const fd = openSync(filePath, "r");
    try {
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      text = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    return `it cannot be read: ${error.message}`;
  }
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const entry = parseLine(lines[i]);
    if (entry === null) continue;
    if (typeof entry !== "object" || Array.isArray(entry)) return `its first JSON line (line ${i + 1}) is not an object`;
    if (entry.type !== "session") return `its first JSON line (line ${i + 1}) is not a session header: its type is ${JSON.stringify(entry.type)}`;
    if (typeof entry.id !== "string") return `its session header (line ${i + 1}) has no string id`;
    return `its session header (line ${i + 1}) cannot be read`;
  }
  return text.trim() === "" ? "it holds no JSON line" : "no line of its first MiB is valid JSON";
}

export function sessionCwdMatches(cwd, resolvedCwd) {
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

