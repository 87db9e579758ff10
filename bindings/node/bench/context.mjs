// node bench/context.mjs FILE: buildSessionContext() of treelog's manager on FILE in this
// process: the first call after open, the median of 20 repeat calls, and two floors, JSON.parse
// of the context's own text: in this process after the calls (a heap already grown: the
// median of 5), and as the first parse of a fresh process (what the first call competes with:
// its heap starts small too; the median of 5 processes). FILE is opened once before (its index
// built). BENCHMARKS.md's figure uses pi16-100000.jsonl with 880 messages appended by pi's own
// manager, so that the context holds 901 messages (1.1 MB).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [file] = process.argv.slice(2);
const { SessionManager } = await import("../index.js");
SessionManager.open(file);
const sm = SessionManager.open(file);
let start = performance.now();
const context = sm.buildSessionContext();
const first = performance.now() - start;
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const repeats = [];
for (let i = 0; i < 20; i++) {
  start = performance.now();
  sm.buildSessionContext();
  repeats.push(performance.now() - start);
}
const text = JSON.stringify(context);
const floors = [];
for (let i = 0; i < 5; i++) {
  start = performance.now();
  JSON.parse(text);
  floors.push(performance.now() - start);
}
const dir = mkdtempSync(join(tmpdir(), "treelog-context-"));
const freshFloors = [];
try {
  writeFileSync(join(dir, "context.json"), text);
  const child = `const t = require("fs").readFileSync(${JSON.stringify(join(dir, "context.json"))}, "utf8"); const s = performance.now(); JSON.parse(t); console.log(performance.now() - s);`;
  for (let i = 0; i < 5; i++) freshFloors.push(Number(execFileSync(process.execPath, ["-e", child]).toString()));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  JSON.stringify({
    messages: context.messages.length,
    bytes: text.length,
    firstMs: first,
    repeatMs: median(repeats),
    floorMs: median(floors),
    freshFloorMs: median(freshFloors),
  }),
);
