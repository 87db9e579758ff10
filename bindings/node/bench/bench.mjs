// npm run bench [-- --entries N] [-- --file F] [-- --runs R] [-- --sessions S]
//
// treelog's package, pi 1.6.0 and pi 0.73.1 side by side in one run, in process, on one
// pi-written transcript (written by pi 1.6.0's own SessionManager and cached under bench/.data
// unless --file names one). Each figure is the median of --runs fresh Node 24 processes (so
// one's heap does not slow the next):
//
//   open + buildSessionContext()   and the floor: JSON.parse of the context's own bytes
//   open + getEntries()            (getEntries() alone after the open in brackets)
//   open + getTree()               (getTree() alone after the open in brackets)
//   list                           SessionManager.list of a directory of --sessions copies of
//                                  the transcript (then every allMessagesText read, in brackets)
//
// treelog's opens find the index its first open built (once per file, not measured here).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const DATA = join(HERE, ".data");
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []),
);
const entries = Number(args.entries ?? 100000);
const runs = Number(args.runs ?? 3);
const sessionCount = Number(args.sessions ?? 4);
const file = args.file ?? join(DATA, `pi16-${entries}.jsonl`);

if (!existsSync(file)) {
  mkdirSync(dirname(file), { recursive: true });
  console.error(`writing ${entries} entries with pi 1.6.0 to ${file} ...`);
  execFileSync(process.execPath, [join(HERE, "measure.mjs"), "generate", file, String(entries)], { stdio: "inherit" });
}

const measureScript = join(HERE, "measure.mjs");
const run = (impl, target, what) =>
  JSON.parse(execFileSync(process.execPath, ["--expose-gc", measureScript, impl, target, what], { maxBuffer: 1 << 26 }).toString());

/** A private copy of the transcript per implementation (treelog's with its index built). */
function copyFor(impl) {
  const copy = join(DATA, `run-${impl}.jsonl`);
  rmSync(copy, { force: true });
  rmSync(`${copy}.treelog`, { force: true });
  copyFileSync(file, copy);
  if (impl === "treelog") run(impl, copy, "open");
  return copy;
}

/** A session directory of `sessionCount` copies (treelog's indexed, though list reads the files). */
function directoryFor(impl) {
  const dir = join(DATA, `list-${impl}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  for (let i = 0; i < sessionCount; i++) copyFileSync(file, join(dir, `2025-01-0${(i % 9) + 1}T00-00-00-000Z_s${i}.jsonl`));
  return dir;
}

const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
const impls = ["treelog", "pi-1.6.0", "pi-0.73.1"];
const WHATS = ["context", "entries", "tree", "list"];
const results = {};
for (const impl of impls) {
  const copy = copyFor(impl);
  const dir = directoryFor(impl);
  results[impl] = {};
  for (const what of WHATS) {
    const samples = [];
    for (let i = 0; i < runs; i++) samples.push(run(impl, what === "list" ? dir : copy, what));
    const summary = { peakRssMiB: Math.max(...samples.map((s) => s.peakRssMiB)), digest: samples[0].digest, samples };
    for (const key of ["ms", "callMs", "parseFloorMs", "textMs", "messages", "count", "contextBytes"]) {
      if (samples[0][key] !== undefined) summary[key] = median(samples.map((s) => s[key]));
    }
    results[impl][what] = summary;
  }
  rmSync(dir, { recursive: true, force: true });
}

const size = statSync(file).size;
const fixed = (value, digits = 1) => (value === undefined ? "" : value.toFixed(digits));
console.log(`transcript: ${file} (${(size / 1048576).toFixed(1)} MiB), node ${process.version}, median of ${runs} fresh processes`);
console.log(
  "impl        open+context ms  parse floor ms  RSS MiB  msgs | open+getEntries ms (call)  RSS | open+getTree ms (call)  RSS | list ms (texts)  RSS",
);
for (const impl of impls) {
  const { context, entries: all, tree, list } = results[impl];
  console.log(
    [
      impl.padEnd(11),
      fixed(context.ms, 2).padStart(15),
      fixed(context.parseFloorMs, 2).padStart(15),
      String(context.peakRssMiB).padStart(8),
      String(context.messages).padStart(5),
      "|",
      `${fixed(all.ms)} (${fixed(all.callMs)})`.padStart(25),
      String(all.peakRssMiB).padStart(4),
      "|",
      `${fixed(tree.ms)} (${fixed(tree.callMs)})`.padStart(22),
      String(tree.peakRssMiB).padStart(4),
      "|",
      `${fixed(list.ms)} (${fixed(list.textMs)})`.padStart(15),
      String(list.peakRssMiB).padStart(4),
    ].join(" "),
  );
}
const same = (what, impl) => results[impl][what].digest === results.treelog[what].digest;
for (const what of WHATS) {
  console.log(`${what}: same answer as pi 1.6.0: ${same(what, "pi-1.6.0")}; as pi 0.73.1: ${same(what, "pi-0.73.1")}`);
}
const t = results.treelog.context;
console.log(
  `open+context: pi 1.6.0 / treelog = ${(results["pi-1.6.0"].context.ms / t.ms).toFixed(0)}x, pi 0.73.1 / treelog = ${(results["pi-0.73.1"].context.ms / t.ms).toFixed(0)}x; treelog beyond JSON.parse of the context's ${(t.contextBytes / 1024).toFixed(0)} KiB: ${(t.ms - t.parseFloorMs).toFixed(2)} ms`,
);
for (const what of ["entries", "tree", "list"]) {
  const ratio = (impl) => (results[impl][what].ms / results.treelog[what].ms).toFixed(1);
  console.log(`${what}: pi 1.6.0 / treelog = ${ratio("pi-1.6.0")}x, pi 0.73.1 / treelog = ${ratio("pi-0.73.1")}x`);
}
if (args.json) console.log(JSON.stringify(results));
// The context is the one answer all three must give alike (getEntries/getTree/list may differ
// where the pi versions differ from each other; treelog follows 1.6.0).
if (!same("context", "pi-1.6.0") || !same("entries", "pi-1.6.0") || !same("tree", "pi-1.6.0") || !same("list", "pi-1.6.0")) {
  process.exitCode = 1;
}
