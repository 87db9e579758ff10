// Writes the tree-order vectors of tests/data/tree-order/ and pi's answers for them.
//
// pi 1.6.0's `getTree()` keeps its roots in file order and sorts every node's children with
// `(a, b) => new Date(a.entry.timestamp).getTime() - new Date(b.entry.timestamp).getTime()`.
// With an unparseable timestamp the comparator returns NaN, which the sort reads as 0, so the
// order is whatever V8's TimSort makes of an inconsistent comparator. This script writes logs
// that exercise both rules, opens each with pi's own SessionManager and records its tree, and
// records V8's own sort of many generated key lists with the same comparator.
//
// Usage (pi 1.6.0 needs Node 24: bindings/node/node_modules/.bin/node):
//   node tree_order.mjs [--pi PATH_TO_pi-coding-agent/dist/index.js] [--out DIR]
// Default module: "@earendil-works/pi-coding-agent" as bindings/node pins it (its
// test/pi-project.mjs); default out: ../../tests/data/tree-order. The output is
// deterministic (a seeded generator).
import { mkdirSync, mkdtempSync, copyFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { importPinned } from "../../bindings/node/test/pi-project.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const piModule = option("--pi", null);
const out = option("--out", join(here, "../../tests/data/tree-order"));
const pi = await (piModule ? import(pathToFileURL(piModule).href) : importPinned("@earendil-works/pi-coding-agent"));
const { SessionManager, VERSION } = pi;

// mulberry32: a small seeded generator, so that the vectors are the same on every run.
function generator(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Sort keys of one sibling list: an integer (seconds after the base time) or null (NaN).
function keys(pattern, n, random) {
  const nan = (p) => random() < p;
  switch (pattern) {
    case "random30":
      return Array.from({ length: n }, () => (nan(0.3) ? null : Math.floor(random() * n)));
    case "random70":
      return Array.from({ length: n }, () => (nan(0.7) ? null : Math.floor(random() * n)));
    case "ascending":
      return Array.from({ length: n }, (_, i) => (nan(0.2) ? null : i));
    case "descending":
      return Array.from({ length: n }, (_, i) => (nan(0.2) ? null : n - i));
    case "blocks": {
      // Ascending blocks of random lengths whose values interleave: merges that gallop.
      const result = [];
      while (result.length < n) {
        const len = Math.min(n - result.length, 1 + Math.floor(random() * 80));
        const start = Math.floor(random() * n);
        const step = random() < 0.5 ? 1 : 3;
        for (let i = 0; i < len; i++) result.push(nan(0.04) ? null : start + i * step);
      }
      return result;
    }
    case "ties":
      return Array.from({ length: n }, () => (nan(0.1) ? null : Math.floor(random() * 3)));
    case "allNaN":
      return Array.from({ length: n }, () => null);
    default:
      throw new Error(pattern);
  }
}

// pi's comparator, on the epoch milliseconds `new Date(timestamp).getTime()` gives.
const piCompare = (a, b) => a.ms - b.ms;
const v8Order = (list) =>
  list
    .map((key, index) => ({ index, ms: key === null ? NaN : key * 1000 }))
    .sort(piCompare)
    .map((item) => item.index);

const BASE_MS = Date.parse("2025-01-01T00:00:00.000Z");
// Timestamps that JavaScript reads as NaN, used in turn (a missing key too).
const NAN_TIMESTAMPS = ["not a date", "", "2025-13-01T00:00:00.000Z", undefined, "2025-01-01T25:00:00Z"];
let nanTurn = 0;
const timestampFor = (key) => {
  if (key !== null) return new Date(BASE_MS + key * 1000).toISOString();
  return NAN_TIMESTAMPS[nanTurn++ % NAN_TIMESTAMPS.length];
};
const entry = (id, parentId, timestamp) => {
  // A custom entry: canonical for pi and treelog, short, and never in the context.
  const line = { type: "custom", customType: "t", id, parentId };
  if (timestamp !== undefined) line.timestamp = timestamp;
  return JSON.stringify(line);
};
const header = (id) =>
  JSON.stringify({ type: "session", version: 3, id, timestamp: "2025-01-01T00:00:00.000Z", cwd: "/tmp" });

// roots.jsonl: roots of every kind pi knows (parentId null, a self-parent, a parentId naming
// no entry), in file order with timestamps that disagree with it, each with a few children.
function rootsLog() {
  const lines = [header("00000000-0000-7000-8000-000000000001")];
  const stamp = (seconds) => new Date(BASE_MS + seconds * 1000).toISOString();
  lines.push(entry("r1", null, stamp(50)));
  lines.push(entry("r1a", "r1", stamp(52)));
  lines.push(entry("r1b", "r1", stamp(51)));
  lines.push(entry("r2", "r2", stamp(10)));
  lines.push(entry("r3", "missing", stamp(30)));
  lines.push(entry("r3a", "r3", stamp(31)));
  lines.push(entry("r4", null, "not a date"));
  lines.push(entry("r5", null, stamp(5)));
  lines.push(entry("r1c", "r1", stamp(49)));
  lines.push(entry("r6", "gone", stamp(40)));
  lines.push(entry("r7", null, stamp(40)));
  return lines;
}

// spellings.jsonl: children whose timestamps are spelled in the forms `new Date()` reads
// besides toISOString()'s, and forms it reads as NaN, so that pi's order shows how it reads
// each (format-spec/log.md, "Timestamps").
const SPELLINGS = [
  ["2025-01-01T00:00:09Z", "2025-01-01 00:00:03", "2025-01-01T00:00:04+0000", "2025-01-01t00:00:02z"],
  ["+002025-01-01T00:00:01Z", "2024-12-31T24:00:00Z", "2025", "2025-01", "2025-01-01T01:00:08+01:00"],
  ["2024-12-32", "2025-01-01T00:00:05+24:00", "2025-01-01T00:00:06+01:60", "2024-02-30T00:00:00Z"],
  ["2025-01-01T00:00:07.999999Z", "2025-01-01T00:00:07.5Z", "2025-01-01 00:00:07.25Z", "2025-01-01T00:00"],
];
function spellingsLog() {
  const lines = [header("00000000-0000-7000-8000-000000000004")];
  SPELLINGS.forEach((group, g) => {
    lines.push(entry(`s${g}`, null, "2025-01-01T00:00:00.000Z"));
    group.forEach((timestamp, i) => lines.push(entry(`s${g}c${i}`, `s${g}`, timestamp)));
  });
  return lines;
}

// siblings.jsonl: one root; under it one parent per sibling list, whose children carry the
// list's timestamps (NaN ones among them), so that pi's tree shows V8's order of each list.
const SIBLING_SIZES_SMALL = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 31, 33, 63];
const SIBLING_SIZES_LARGE = [64, 65, 129, 260];
function siblingsLog(random) {
  const lines = [header("00000000-0000-7000-8000-000000000002"), entry("root", null, timestampFor(0))];
  let group = 0;
  const addGroup = (pattern, n) => {
    const parent = `g${String(group).padStart(3, "0")}`;
    lines.push(entry(parent, "root", timestampFor(group + 1)));
    keys(pattern, n, random).forEach((key, i) => {
      lines.push(entry(`${parent}c${i}`, parent, timestampFor(key)));
    });
    group += 1;
  };
  for (const n of SIBLING_SIZES_SMALL) for (const pattern of ["random30", "descending"]) addGroup(pattern, n);
  for (const n of SIBLING_SIZES_LARGE) for (const pattern of ["random30", "blocks"]) addGroup(pattern, n);
  addGroup("allNaN", 70);
  addGroup("ties", 40);
  return lines;
}

// v8-sort.json: key lists and the order V8's Array.prototype.sort gives them under pi's
// comparator, for the sort alone (`src/format/js_sort.rs` replays them).
function sortVectors(random) {
  const patterns = ["random30", "random70", "ascending", "descending", "blocks", "ties"];
  const sizes = [];
  for (let n = 0; n <= 70; n += 1) sizes.push(n);
  for (const n of [96, 127, 128, 129, 200, 255, 256, 257, 400, 600]) sizes.push(n);
  const result = [];
  for (const n of sizes) {
    const chosen =
      n < 71
        ? [patterns[n % patterns.length], patterns[(n + 3) % patterns.length]]
        : ["random30", "descending", "blocks"];
    for (const pattern of chosen) {
      const list = keys(pattern, n, random);
      result.push({ pattern, keys: list, order: v8Order(list) });
    }
  }
  return result;
}

// pi's tree as (id, depth) in depth-first pre-order, children in getTree's order.
function piTree(logPath) {
  const session = SessionManager.open(logPath);
  const rows = [];
  const stack = session
    .getTree()
    .map((node) => [node, 0])
    .reverse();
  while (stack.length > 0) {
    const [node, depth] = stack.pop();
    rows.push([node.entry.id, depth]);
    for (let i = node.children.length - 1; i >= 0; i -= 1) stack.push([node.children[i], depth + 1]);
  }
  return rows;
}

mkdirSync(out, { recursive: true });
const random = generator(20250101);
const logs = { "roots.jsonl": rootsLog(), "siblings.jsonl": siblingsLog(random), "spellings.jsonl": spellingsLog() };
const scratch = mkdtempSync(join(tmpdir(), "treelog-tree-order-"));
const trees = {};
try {
  for (const [name, lines] of Object.entries(logs)) {
    writeFileSync(join(out, name), lines.join("\n") + "\n");
    // pi may write to the file it opens: it reads a copy.
    copyFileSync(join(out, name), join(scratch, name));
    trees[name] = piTree(join(scratch, name));
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
const stamp = { generatedBy: "dev/pi-bench/tree_order.mjs", pi: VERSION ?? "unknown", node: process.version, v8: process.versions.v8 };
writeFileSync(
  join(out, "pi-trees.json"),
  JSON.stringify({ ...stamp, trees }) + "\n",
);
writeFileSync(join(out, "v8-sort.json"), JSON.stringify({ ...stamp, cases: sortVectors(random) }) + "\n");
console.log(`wrote ${Object.keys(logs).join(", ")}, pi-trees.json, v8-sort.json to ${out}`);
