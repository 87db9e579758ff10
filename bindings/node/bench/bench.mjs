// npm run bench [-- --entries N] [-- --file F] [-- --runs R]
//
// SessionManager.open + buildSessionContext() of one pi-written transcript, in process, for
// treelog's package, pi 1.6.0 and pi 0.73.1 side by side in one run; each measurement in a
// fresh Node 24 process (so one's heap does not slow the next), the median of --runs. The
// transcript is written by pi 1.6.0's own SessionManager (cached under bench/.data) unless
// --file names one. Also: getEntries() and getTree(), peak RSS, and the cost of JSON-parsing
// the context's own bytes (the floor of any in-process answer).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []),
);
const entries = Number(args.entries ?? 100000);
const runs = Number(args.runs ?? 3);
const file = args.file ?? join(HERE, ".data", `pi16-${entries}.jsonl`);

if (!existsSync(file)) {
  mkdirSync(dirname(file), { recursive: true });
  console.error(`writing ${entries} entries with pi 1.6.0 to ${file} ...`);
  execFileSync(process.execPath, [join(HERE, "measure.mjs"), "generate", file, String(entries)], { stdio: "inherit" });
}

function measure(impl, what) {
  const copy = join(HERE, ".data", `run-${impl}.jsonl`);
  rmSync(copy, { force: true });
  rmSync(`${copy}.treelog`, { force: true });
  copyFileSync(file, copy);
  if (impl === "treelog") {
    // The first open builds the index (once per file); the measured opens find it.
    execFileSync(process.execPath, [join(HERE, "measure.mjs"), impl, copy, "open"]);
  }
  const out = execFileSync(process.execPath, ["--expose-gc", join(HERE, "measure.mjs"), impl, copy, what], { maxBuffer: 1 << 26 });
  return JSON.parse(out.toString());
}

const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
const impls = ["treelog", "pi-1.6.0", "pi-0.73.1"];
const results = {};
for (const impl of impls) {
  const samples = [];
  for (let i = 0; i < runs; i++) samples.push(measure(impl, "context"));
  const first = samples[0];
  results[impl] = {
    openContextMs: median(samples.map((s) => s.openContextMs)),
    parseFloorMs: median(samples.map((s) => s.parseFloorMs)),
    peakRssMiB: Math.max(...samples.map((s) => s.peakRssMiB)),
    messages: first.messages,
    digest: first.digest,
  };
  const walk = measure(impl, "walk");
  results[impl].getEntriesMs = walk.getEntriesMs;
  results[impl].getTreeMs = walk.getTreeMs;
}

const size = statSync(file).size;
console.log(`transcript: ${file} (${(size / 1048576).toFixed(1)} MiB), node ${process.version}, median of ${runs} fresh processes`);
console.log("impl        open+context ms  parse floor ms  peak RSS MiB  messages  getEntries ms  getTree ms");
for (const impl of impls) {
  const r = results[impl];
  console.log(
    `${impl.padEnd(11)} ${r.openContextMs.toFixed(2).padStart(15)} ${r.parseFloorMs.toFixed(2).padStart(15)} ${String(r.peakRssMiB).padStart(13)} ${String(r.messages).padStart(9)} ${r.getEntriesMs.toFixed(1).padStart(14)} ${r.getTreeMs.toFixed(1).padStart(11)}`,
  );
}
const same = results["pi-1.6.0"].digest === results.treelog.digest;
console.log(`same messages as pi 1.6.0: ${same}; as pi 0.73.1: ${results["pi-0.73.1"].digest === results.treelog.digest}`);
const t = results.treelog.openContextMs;
console.log(
  `ratio: pi 1.6.0 / treelog = ${(results["pi-1.6.0"].openContextMs / t).toFixed(0)}x, pi 0.73.1 / treelog = ${(results["pi-0.73.1"].openContextMs / t).toFixed(0)}x; treelog beyond parsing the context's bytes: ${(t - results.treelog.parseFloorMs).toFixed(2)} ms`,
);
if (!same) process.exitCode = 1;
