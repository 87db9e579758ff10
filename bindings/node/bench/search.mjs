// npm run bench:search -- DIR [--runs R]
//
// search and reindexSearch in process (issue 21, item 4): reindexSearch(DIR) first (the
// first build when DIR has no index yet: its bytes, wall time and the process's CPU time),
// then each query of scripts/search-bench as search(query, DIR) (default limit 20), the
// median and minimum of R awaited calls (default 21) on the index as it is then. DIR's index
// (DIR/.treelog-search) is written: run it on a copy of a corpus.
import { reindexSearch, search } from "../index.js";

const args = process.argv.slice(2);
const dir = args.find((arg, index) => !arg.startsWith("--") && args[index - 1] !== "--runs");
const runsAt = args.indexOf("--runs");
const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 21;
if (!dir || !(runs >= 1)) {
  console.error("usage: npm run bench:search -- DIR [--runs R]");
  process.exit(2);
}
/** The queries of scripts/search-bench, so that the figures compare with the CLI's. */
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
