// pi's context functions over entry arrays (buildSessionContext(entries, leafId), ...),
// computed by the engine over a memory session of those entries.
import { CURRENT_SESSION_VERSION } from "./files.js";
import { generateId } from "./ids.js";
import { NativeSession } from "./native.js";

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

export const EMPTY_CONTEXT = () => ({ messages: [], thinkingLevel: "off", model: null });

/** `answer(session, leaf)` over a memory session of `entries`, released at once after. */
function over(entries, leafId, answer) {
  const session = sessionOf(entries);
  try {
    return answer(session, leafFor(session, entries, leafId));
  } finally {
    session.close();
  }
}

export function buildSessionContext(entries, leafId, _byId) {
  return over(entries, leafId, (session, leaf) => (leaf === null ? EMPTY_CONTEXT() : JSON.parse(session.contextJson(leaf))));
}

export function buildContextEntries(entries, leafId, _byId) {
  return over(entries, leafId, (session, leaf) => (leaf === null ? [] : JSON.parse(session.contextEntriesJson(leaf))));
}

export function buildSessionProjection(entries, leafId, _byId) {
  return over(entries, leafId, (session, leaf) =>
    leaf === null ? { entries: [], ...EMPTY_CONTEXT() } : JSON.parse(session.projectionJson(leaf)),
  );
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

