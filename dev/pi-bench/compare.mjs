// Side by side, in the same run: cold opens of each transcript by `treelog-dev bench-probe`
// (with a fresh index) and by pi's own SessionManager (probe.mjs), alternating, in fresh
// processes; prints a markdown table of medians and checks that both find the same context
// and branch.
//
// Usage: node compare.mjs [--runs N] [--treelog PATH] [--treelog-dev PATH] FILE...
// pi opens a fresh copy of each file at each run (it may rewrite a file it migrates); files
// over pi's ~512 MiB ceiling are tried once and reported with pi's error. "Same context and
// branch" compares the number of context messages and the branch length of every run.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let runs = 5;
let treelog = join(here, "../../target/release/treelog");
let treelogDev = join(here, "../../target/release/treelog-dev");
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--runs") runs = Number(args[++i]);
  else if (args[i] === "--treelog") treelog = args[++i];
  else if (args[i] === "--treelog-dev") treelogDev = args[++i];
  else files.push(args[i]);
}
if (files.length === 0 || !(runs > 0)) {
  console.error("usage: node compare.mjs [--runs N] [--treelog PATH] [--treelog-dev PATH] FILE...");
  process.exit(2);
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
};
const ms = (us) => (us >= 100_000 ? `${(us / 1000).toFixed(0)} ms` : `${(us / 1000).toFixed(2)} ms`);

function probe(command, commandArgs) {
  const result = spawnSync(command, commandArgs, { encoding: "utf8", maxBuffer: 1 << 20 });
  if (result.status !== 0) {
    const message = (result.stderr || "").trim().split("\n").find((l) => /Error|error:/.test(l));
    return { error: message || `exit ${result.status}` };
  }
  return JSON.parse(result.stdout.trim().split("\n").pop());
}

console.log(
  "| entries | log | cold open: treelog / pi (ratio) | buildSessionContext: treelog / pi | leaf to root: treelog ids / pi getBranch | peak RSS: treelog / pi | same context and branch |",
);
console.log("|---|---|---|---|---|---|---|");
const scratch = mkdtempSync(join(tmpdir(), "treelog-pi-bench-"));
try {
  for (const file of files) {
    const bytes = statSync(file).size;
    execFileSync(treelog, ["reindex", file], { stdio: "ignore" });
    const copy = join(scratch, basename(file));
    const ours = [];
    const theirs = [];
    for (let run = 0; run < runs; run++) {
      const mine = probe(treelogDev, ["bench-probe", file]);
      if (mine.error) throw new Error(`treelog-dev bench-probe ${file}: ${mine.error}`);
      ours.push(mine);
      copyFileSync(file, copy);
      const pi = probe(process.execPath, ["--max-old-space-size=16384", join(here, "probe.mjs"), copy]);
      rmSync(copy);
      if (pi.error) {
        theirs.length = 0;
        theirs.push(pi);
        break;
      }
      theirs.push(pi);
    }
    const pick = (samples, key) => median(samples.map((s) => s[key]));
    const mib = `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    const entries = ours[0].entries;
    if (theirs[0].error) {
      console.log(
        `| ${entries} | ${mib} | ${ms(pick(ours, "openUs"))} / pi fails: ${theirs[0].error} | ${ms(pick(ours, "contextUs"))} / — | ${ms(pick(ours, "pathUs"))} / — | ${Math.round(pick(ours, "rssKb") / 1024)} MiB / — | — |`,
      );
      continue;
    }
    const same = ours.every((o) =>
      theirs.every((t) => o.messages === t.messages && o.pathLen === t.pathLen),
    );
    const ratio = (key) => {
      const times = pick(theirs, key) / pick(ours, key);
      return `${times < 10 ? times.toFixed(1) : Math.round(times)}x`;
    };
    console.log(
      `| ${entries} | ${mib} | ${ms(pick(ours, "openUs"))} / ${ms(pick(theirs, "openUs"))} (${ratio("openUs")}) | ${ms(pick(ours, "contextUs"))} / ${ms(pick(theirs, "contextUs"))} (${ratio("contextUs")}) | ${ms(pick(ours, "pathUs"))} / ${ms(pick(theirs, "pathUs"))} | ${Math.round(pick(ours, "rssKb") / 1024)} / ${Math.round(pick(theirs, "rssKb") / 1024)} MiB | ${same ? `yes (${ours[0].messages} messages, ${ours[0].pathLen} entries)` : "NO"} |`,
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
