// node bench/methods.mjs FILE [pi-1.6.0|treelog]: every SessionManager method pi's code calls,
// timed on FILE (a private copy is made; treelog's copy has its index built first, not timed),
// in one fresh process per implementation: open, then each method's first call and the median
// of 5 repeat calls, in the order pi's agent meets them (resume, turn, compaction, tree). Prints
// one JSON object per implementation when run with one; without, runs both and prints a table.
import { execFileSync } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const [file, impl] = process.argv.slice(2);

if (impl === undefined) {
  const rows = {};
  for (const side of ["pi-1.6.0", "treelog"]) {
    rows[side] = JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=16384", fileURLToPath(import.meta.url), file, side], { maxBuffer: 1 << 26 }).toString());
  }
  console.log(`node bench/methods.mjs ${file}; ${new Date().toISOString()}`);
  console.log(`${"method".padEnd(26)}${"pi first".padStart(12)}${"pi repeat".padStart(12)}${"tl first".padStart(12)}${"tl repeat".padStart(12)}`);
  const f = (v) => (v === undefined ? "" : v < 10 ? v.toFixed(2) : v.toFixed(1));
  for (const method of Object.keys(rows.treelog)) {
    const [p, t] = [rows["pi-1.6.0"][method], rows.treelog[method]];
    console.log(`${method.padEnd(26)}${f(p.first).padStart(12)}${f(p.repeat).padStart(12)}${f(t.first).padStart(12)}${f(t.repeat).padStart(12)}`);
  }
  process.exit(0);
}

const copy = join(dirname(file), `methods-${impl}.jsonl`);
rmSync(copy, { force: true });
rmSync(`${copy}.treelog`, { force: true });
copyFileSync(file, copy);
const module = impl === "treelog"
  ? await import(pathToFileURL(join(HERE, "../index.js")).href)
  : await import(pathToFileURL(join(HERE, "../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js")).href);
if (impl === "treelog") module.SessionManager.open(copy);

const out = {};
const time = (name, body, repeats = 5) => {
  let start = performance.now();
  const value = body();
  const first = performance.now() - start;
  const later = [];
  for (let i = 0; i < repeats; i++) {
    start = performance.now();
    body();
    later.push(performance.now() - start);
  }
  later.sort((a, b) => a - b);
  out[name] = { first, repeat: repeats ? later[Math.floor(repeats / 2)] : undefined };
  return value;
};
const sm = time("open", () => module.SessionManager.open(copy), 0);
time("buildSessionContext", () => sm.buildSessionContext());
const branch = time("getBranch", () => sm.getBranch());
// pi's agent's scans over the branch: the role of every message, the last thinking change.
time("branch role scan", () => branch.flatMap((e) => (e.type === "message" && e.message.role === "system" ? [e.message] : [])));
time("buildSessionProjection", () => sm.buildSessionProjection());
time("buildContextEntries", () => sm.buildContextEntries());
time("getLeafId", () => sm.getLeafId());
time("getLeafEntry", () => sm.getLeafEntry());
const middle = branch[Math.floor(branch.length / 2)].id;
time("getEntry", () => sm.getEntry(middle));
time("getLabel", () => sm.getLabel(middle));
time("getChildren", () => sm.getChildren(middle));
time("getEntryCount", () => sm.getEntryCount());
time("getEntries", () => sm.getEntries());
time("getTree", () => sm.getTree());
time("getBranch(other)", () => sm.getBranch(middle));
time("appendMessage", () => sm.appendMessage({ role: "user", content: "one more", timestamp: 1 }));
time("getBranch after append", () => sm.getBranch(), 0);
time("appendLabelChange", () => sm.appendLabelChange(middle, "here"), 0);
time("branch", () => sm.branch(middle), 0);
time("getBranch after branch", () => sm.getBranch(), 0);
time("branchWithSummary", () => sm.branchWithSummary(middle, "summary"), 0);
time("resetLeaf", () => sm.resetLeaf(), 0);
process.stdout.write(JSON.stringify(out));
rmSync(copy, { force: true });
rmSync(`${copy}.treelog`, { force: true });
