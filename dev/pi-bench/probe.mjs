// One cold open of a transcript by pi's own SessionManager, in this fresh process, printed
// as the same JSON keys as `treelog-dev bench-probe`: open, buildSessionContext, the branch from
// the leaf to the root (pi's getBranch: whole entries, as pi has no ids-only walk), and the
// process's peak RSS after open + context.
//
// Usage: node probe.mjs FILE (FILE is opened as is: pass a copy, pi may rewrite a file it
// migrates or recovers). pi 0.73.1 is the one bindings/node pins (its test/pi-project.mjs).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

import { importPinned } from "../../bindings/node/test/pi-project.mjs";

const { SessionManager } = await importPinned("@mariozechner/pi-coding-agent");

function peakRssKb() {
  const line = readFileSync("/proc/self/status", "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmHWM:"));
  return line ? Number.parseInt(line.slice(6), 10) : 0;
}

const file = process.argv[2];
if (!file) {
  console.error("usage: node probe.mjs FILE");
  process.exit(2);
}
let start = performance.now();
const session = SessionManager.open(file);
const openMs = performance.now() - start;
start = performance.now();
const context = session.buildSessionContext();
const contextMs = performance.now() - start;
const rssKb = peakRssKb();
start = performance.now();
const branch = session.getBranch();
const pathMs = performance.now() - start;
console.log(
  JSON.stringify({
    openUs: openMs * 1000,
    contextUs: contextMs * 1000,
    messages: context.messages.length,
    pathUs: pathMs * 1000,
    pathLen: branch.length,
    entries: session.getEntries().length,
    rssKb,
  }),
);
