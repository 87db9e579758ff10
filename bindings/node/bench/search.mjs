// npm run bench:search -- DIR [--runs R]
//
// search and reindexSearch in process: reindexSearch(DIR) first (the
// first build when DIR has no index yet: its bytes, wall time and the process's CPU time),
// then each query of dev/search-bench as search(query, DIR) (default limit 20), the
// median and minimum of R awaited calls (default 21) on the index as it is then, and the
// catch-up as dev/search-bench measures it: search("tokio", DIR) after 1 MiB of whole
// lines is appended to DIR/zz-catchup/c.jsonl, against the same search with nothing appended
// (medians of 7 rounds each). DIR is written (its index, and zz-catchup/): run it on a copy
// of a corpus.
import { appendFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { reindexSearch, search } from "../index.js";

const args = process.argv.slice(2);
const dir = args.find((arg, index) => !arg.startsWith("--") && args[index - 1] !== "--runs");
const runsAt = args.indexOf("--runs");
const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 21;
if (!dir || !(runs >= 1)) {
  console.error("usage: npm run bench:search -- DIR [--runs R]");
  process.exit(2);
}
/** The queries of dev/search-bench, so that the figures compare with the CLI's. */
const QUERIES = ["tokio", "fsync torn", '"build lock"', "comp*", "lock -tokio", "qqqzzz"];

const cpuBefore = process.cpuUsage();
const started = performance.now();
const built = await reindexSearch(dir);
const buildMs = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
const megabytes = built.bytes / 1e6;
console.log(
  `reindexSearch: ${megabytes.toFixed(1)} MB read in ${buildMs.toFixed(0)} ms (${(megabytes / (buildMs / 1000)).toFixed(1)} MB/s), ` +
    `CPU ${(cpu.user / 1e6).toFixed(2)} s user ${(cpu.system / 1e6).toFixed(2)} s sys`,
);
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
for (const query of QUERIES) {
  const times = [];
  let hits = [];
  for (let run = 0; run < runs; run++) {
    const begun = performance.now();
    hits = await search(query, dir);
    times.push(performance.now() - begun);
  }
  console.log(`search(${JSON.stringify(query)}): median ${median(times).toFixed(2)} ms, min ${Math.min(...times).toFixed(2)} ms, ${hits.length} hits`);
}

/** The logs under `path`, sorted by path (dev/search-bench's corpus_logs order). */
function logsUnder(path) {
  return readdirSync(path, { withFileTypes: true })
    .filter((entry) => !entry.name.startsWith("."))
    .flatMap((entry) => (entry.isDirectory() ? logsUnder(join(path, entry.name)) : entry.name.endsWith(".jsonl") ? [join(path, entry.name)] : []))
    .sort();
}
const CATCH_UP_BYTES = 1 << 20;
const logs = logsUnder(dir);
const first = readFileSync(logs[0]);
const second = readFileSync(logs[1]);
const body = second.subarray(second.indexOf(10) + 1);
const chunk = body.subarray(0, body.lastIndexOf(10, CATCH_UP_BYTES) + 1);
mkdirSync(join(dir, "zz-catchup"), { recursive: true });
const catchUpLog = join(dir, "zz-catchup/c.jsonl");
writeFileSync(catchUpLog, first.subarray(0, first.lastIndexOf(10, 64 << 10) + 1));
await search("tokio", dir);
/** [wall ms, CPU ms of the whole process (every thread)] of one search. */
const timedSearch = async () => {
  const cpuBegun = process.cpuUsage();
  const begun = performance.now();
  await search("tokio", dir);
  const cpuUsed = process.cpuUsage(cpuBegun);
  return [performance.now() - begun, (cpuUsed.user + cpuUsed.system) / 1000];
};
const quiet = [];
const grown = [];
for (let round = 0; round < 7; round++) {
  quiet.push(await timedSearch());
  appendFileSync(catchUpLog, chunk);
  grown.push(await timedSearch());
}
const wallMs = (runs) => median(runs.map(([wall]) => wall));
const cpuMs = (runs) => median(runs.map(([, cpu]) => cpu));
console.log(
  `catch-up: search("tokio") ${wallMs(grown).toFixed(1)} ms (CPU ${cpuMs(grown).toFixed(1)} ms) after ${chunk.length} bytes appended, ` +
    `${wallMs(quiet).toFixed(1)} ms (CPU ${cpuMs(quiet).toFixed(1)} ms) with none: ${(wallMs(grown) - wallMs(quiet)).toFixed(1)} ms of catch-up`,
);
