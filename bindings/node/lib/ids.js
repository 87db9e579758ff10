// Ids and times, drawn exactly as pi draws them (crypto.randomUUID().slice(0, 8), a v7 uuid
// for sessions, new Date().toISOString()), so a caller that injects its own clock or ids gets
// the same bytes from both.
import { randomUUID } from "node:crypto";

export function assertValidSessionId(id) {
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(id)) {
    throw new Error(
      "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character",
    );
  }
}

/** A version 7 uuid: the clock's milliseconds, then random bits (from getRandomValues, as
 * pi-ai's; crypto.randomUUID, which entry ids come from, is not drawn). */
export function uuidv7() {
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

/** One draw of pi's entry-id source (live: a caller that replaces crypto.randomUUID is seen). */
export const drawUuid = () => randomUUID();

/** pi's generateId: 8 hex characters not taken, after 100 tries a whole uuid. */
export function generateId(taken) {
  for (let i = 0; i < 100; i++) {
    const id = randomUUID().slice(0, 8);
    if (!taken(id)) return id;
  }
  return randomUUID();
}

export const now = () => new Date().toISOString();
export const optionalJson = (value) => (value === undefined ? null : (JSON.stringify(value) ?? null));

