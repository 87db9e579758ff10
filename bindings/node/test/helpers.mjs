// Shared pieces of the package's tests: pi 1.6.0 (the reference), JSON comparison, and the
// seeded clock and id source of the repository's differential harness (tests/pi-diff).
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export * from "../../../tests/pi-diff/common.mjs";
import { canonical, firstDifference } from "../../../tests/pi-diff/common.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
/** A pi version's session-manager module itself (its package exports only the index). */
const sessionManagerModule = (name) =>
  import(pathToFileURL(join(HERE, "../node_modules", name, "dist/core/session-manager.js")).href);
export const pi = await sessionManagerModule("@earendil-works/pi-coding-agent");
export const pi073 = await sessionManagerModule("@mariozechner/pi-coding-agent");
export const treelog = await import("../index.js");

export const DATA = join(HERE, "../../../tests/data");
export const TRANSCRIPTS = ["pi-sample-200", "pi16-gen-a", "pi16-gen-b", "pi073-gen-a", "pi16-sample-300"];

export function tempDir(prefix = "treelog-node-") {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Two private copies of a bundled transcript: one for pi, one for treelog. */
export function copies(name) {
  const dir = tempDir();
  const forPi = join(dir, "pi.jsonl");
  const forTreelog = join(dir, "treelog.jsonl");
  copyFileSync(join(DATA, `${name}.jsonl`), forPi);
  copyFileSync(join(DATA, `${name}.jsonl`), forTreelog);
  return { dir, forPi, forTreelog };
}

/**
 * pi's answer and treelog's are the same JSON (a key holding undefined is the same as an
 * absent key, as on disk); the message says where they first differ.
 */
export function sameJson(actual, expected, what) {
  if (canonical(actual) === canonical(expected)) return;
  const toJson = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
  assert.fail(`${what}: ${firstDifference(toJson(expected), toJson(actual))}`);
}

/** Runs `body` and returns what it threw (undefined when it did not). */
export function thrown(body) {
  try {
    body();
  } catch (error) {
    return error;
  }
  return undefined;
}
