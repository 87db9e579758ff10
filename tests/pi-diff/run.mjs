// Live differential run: fresh transcripts written by pi 1.6.0 and 0.73.1, pi's answers
// computed in this process, treelog's from its command-line tool on copies of each file,
// opened cold (no index), warm (index fresh) and caught up (index of a prefix, the rest
// appended after it, as when pi appends to a file treelog has indexed).
//
//   node run.mjs [--treelog PATH] [--seeds 1,2|1-20] [--plan quick|full] [--files F,...]
//                [--leaves N] [--cold-leaves N] [--jobs N] [--keep DIR] [--show N]
//
// Defaults: target/debug/treelog, seed 1 (or $PI_DIFF_SEEDS), the quick plan (well under a
// minute), as many treelog processes at once as there are cores. --files compares existing
// transcripts instead of generating any. Prints `N passed, M failed` last; exits 1 on any
// difference not listed in KNOWN, 2 if it could not run. Run with Node 24
// (bindings/node/node_modules/.bin/node): pi 1.6.0 needs Node >= 22.19.
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { deepEqual, firstDifference, loadPi, parseArgs } from "./common.mjs";
import { generateTranscript } from "./generate.mjs";
import { computeOracle, oracleAgreement } from "./oracle.mjs";
import { checkTornFirstWrite } from "./torn_first_write.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/**
 * The transcripts each plan generates per seed: pi version, entries, payload profile. The
 * seed of each is the run's seed plus `seedOffset`, so one seed gives different shapes.
 */
const PLANS = {
  quick: [
    { pi: "1.6", entries: 400, profile: "compact", seedOffset: 0 },
    { pi: "1.6", entries: 2000, profile: "full", seedOffset: 1000 },
    { pi: "0.73", entries: 400, profile: "compact", seedOffset: 0 },
    { pi: "0.73", entries: 1500, profile: "full", seedOffset: 1000 },
  ],
  full: [
    { pi: "1.6", entries: 300, profile: "compact", seedOffset: 0 },
    { pi: "1.6", entries: 2000, profile: "compact", seedOffset: 1000 },
    { pi: "1.6", entries: 20000, profile: "full", seedOffset: 2000 },
    { pi: "0.73", entries: 300, profile: "compact", seedOffset: 0 },
    { pi: "0.73", entries: 10000, profile: "full", seedOffset: 1000 },
  ],
};

/**
 * Differences that are understood and documented, each `{reason, matches(failure)}`, where a
 * failure is {file, pi, mode, leaf, answer, detail}: they are counted and listed with their
 * reason, never silently dropped. Empty: on transcripts pi writes through its public API,
 * treelog is to answer exactly as pi does.
 */
const KNOWN = [];

let args;
let seeds;
try {
  args = parseArgs(process.argv.slice(2));
  seeds = parseSeeds(args.seeds ?? process.env.PI_DIFF_SEEDS ?? "1");
} catch (error) {
  fail(error.message);
}
const treelog = resolve(args.treelog ?? join(here, "../../target/debug/treelog"));
const plan = PLANS[args.plan ?? "quick"];
// Leaves asked about per transcript: tree leaves (sampled down to this), plus a couple of
// each interior kind.
const treeLeavesMax = Number(args.leaves ?? 12);
// Leaves whose queries also run cold and caught up (each cold query indexes its own copy).
const coldLeavesMax = Number(args["cold-leaves"] ?? 2);
const jobs = Number(args.jobs ?? availableParallelism());
const shownMax = Number(args.show ?? 20);

function parseSeeds(text) {
  return text.split(",").flatMap((part) => {
    const [low, high] = part.split("-").map(Number);
    if (!Number.isInteger(low) || (high !== undefined && !Number.isInteger(high))) {
      throw new Error(`bad seed list ${text}`);
    }
    return high === undefined ? [low] : Array.from({ length: high - low + 1 }, (_, i) => low + i);
  });
}

if (!plan) fail(`unknown plan ${args.plan} (quick or full)`);
if (!existsSync(treelog)) fail(`no treelog binary at ${treelog} (cargo build -p treelog-cli, or --treelog PATH)`);

function fail(message) {
  console.error(`run.mjs: ${message}`);
  process.exit(2);
}

// --- treelog ---------------------------------------------------------------------------------

/** Runs treelog; resolves to its stdout, rejects with its stderr. */
function treelogRun(argv) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(treelog, argv, { stdio: ["ignore", "pipe", "pipe"] });
    const out = [];
    const err = [];
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => err.push(chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`treelog ${argv[0]}: ${error.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise(Buffer.concat(out).toString("utf8"));
      else {
        const stderr = Buffer.concat(err).toString("utf8").trim().split("\n")[0] ?? "";
        reject(new Error(`treelog ${argv[0]} ${signal ? `killed by ${signal}` : `exited ${code}`}: ${stderr}`));
      }
    });
  });
}

/** Runs `tasks` (functions returning promises), at most `limit` at a time. */
async function pool(tasks, limit) {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}

/** The context views this treelog offers beyond `context`: checked once from its --help. */
function contextFeatures() {
  const help = spawnSync(treelog, ["context", "--help"], { encoding: "utf8" }).stdout ?? "";
  return {
    projection: help.includes("--projection"),
    entries: help.includes("--entries"),
    piCompat: help.includes("--pi-compat"),
  };
}

// --- the comparison ----------------------------------------------------------------------------

const results = { passed: 0, failed: [], known: [], notes: [] };
let sequence = 0;

function record(where, answer, expected, actual) {
  const detail = firstDifference(expected, actual, answer);
  if (!detail) {
    results.passed += 1;
    return true;
  }
  const failure = { ...where, answer, detail };
  const known = KNOWN.find((entry) => entry.matches(failure));
  if (known) results.known.push({ ...failure, reason: known.reason });
  else results.failed.push(failure);
  return false;
}

function recordError(where, answer, error) {
  results.failed.push({ ...where, answer, detail: `treelog failed: ${error.message}` });
}

/** Runs one query and compares; a treelog error is a failure of that answer. */
async function check(where, answer, expected, query) {
  let actual;
  try {
    actual = await query();
  } catch (error) {
    recordError(where, answer, error);
    return;
  }
  record(where, answer, expected, actual);
}

/** Byte-level note: treelog's JSON equals pi's as a value but not as JSON.stringify's text. */
function noteBytes(where, answer, expected, text) {
  const piText = JSON.stringify(expected);
  if (text !== piText) {
    let at = 0;
    while (at < text.length && text[at] === piText[at]) at += 1;
    results.notes.push({ ...where, answer, detail: `byte ${at}: pi …${piText.slice(at, at + 40)}… / treelog …${text.slice(at, at + 40)}…` });
  }
}

/** Each line of a file that parses as an entry, by id (the last one wins, as pi's byId). */
function linesById(file) {
  const map = new Map();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      const value = JSON.parse(line);
      if (value && value.type !== "session" && typeof value.id === "string") map.set(value.id, value);
    } catch {
      // Not an entry; pi skips it too.
    }
  }
  return map;
}

/** The queries of one leaf, each with what pi answers. */
function leafQueries(leaf, v073Leaf, features, lines) {
  const queries = [
    {
      answer: "path",
      expected: leaf.path,
      run: async (copy) => (await treelogRun(["path", copy, "--leaf", leaf.leafId])).split("\n").filter(Boolean),
    },
    {
      answer: "context",
      expected: leaf.context,
      run: async (copy, where) => {
        const text = (await treelogRun(["context", copy, "--leaf", leaf.leafId])).trimEnd();
        const value = JSON.parse(text);
        if (deepEqual(value, leaf.context)) noteBytes(where, "context", leaf.context, text);
        return value;
      },
    },
  ];
  if (features.entries && leaf.contextEntries) {
    queries.push({
      answer: "context --entries",
      expected: leaf.contextEntries.map((id) => lines.get(id) ?? id),
      run: async (copy) => JSON.parse(await treelogRun(["context", copy, "--leaf", leaf.leafId, "--entries"])),
    });
  }
  if (features.projection && leaf.projection) {
    queries.push({
      answer: "context --projection",
      // pi's sourceEntry is the entry as parsed from its line.
      expected: {
        entries: leaf.projection.entries.map((item) => ({ sourceEntry: lines.get(item.id) ?? item.id, messages: item.messages })),
        messages: leaf.projection.messages,
        thinkingLevel: leaf.projection.thinkingLevel,
        model: leaf.projection.model,
      },
      run: async (copy) => JSON.parse(await treelogRun(["context", copy, "--leaf", leaf.leafId, "--projection"])),
    });
  }
  if (features.piCompat && v073Leaf) {
    queries.push({
      answer: "context --pi-compat 0.73",
      expected: v073Leaf.context,
      run: async (copy) => JSON.parse(await treelogRun(["context", copy, "--leaf", leaf.leafId, "--pi-compat", "0.73"])),
    });
  }
  return queries;
}

function sessionQueries(oracle) {
  return [
    {
      answer: "info",
      expected: { header: oracle.header, leafId: oracle.leafId, sessionName: oracle.sessionName, entryCount: oracle.entryCount },
      run: async (copy) => {
        const value = JSON.parse(await treelogRun(["info", copy, "--json"]));
        return { header: value.header, leafId: value.leafId, sessionName: value.sessionName, entryCount: value.entryCount };
      },
    },
    {
      answer: "tree --json",
      expected: oracle.tree,
      run: async (copy) =>
        (await treelogRun(["tree", copy, "--json"]))
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line)),
    },
  ];
}

/** The index state `treelog info` reports for `copy` (an open of its own, which may change it). */
async function indexState(copy) {
  return JSON.parse(await treelogRun(["info", copy, "--json"])).index?.state;
}

/**
 * Compares treelog with pi's answers for one transcript. `oracle`: pi 1.6.0's answers;
 * `v073`: pi 0.73.1's for the same leaves (or null).
 */
async function compareFile(file, pi, oracle, v073, features, scratch) {
  const lines = linesById(file);
  const name = basename(file);
  // `seq` orders the report as the queries were planned, whatever order they finished in.
  const where = (mode, leaf = null) => ({ file: name, pi, mode, leaf, seq: sequence++ });
  const queriesOf = (leaves) =>
    leaves.flatMap((leaf) => {
      const i = oracle.leaves.indexOf(leaf);
      return leafQueries(leaf, v073?.leaves[i] ?? null, features, lines).map((query) => ({ query, leaf: leaf.leafId }));
    });
  const all = [...sessionQueries(oracle).map((query) => ({ query, leaf: null })), ...queriesOf(oracle.leaves)];
  // The file's own leaf comes first in the oracle; the cold and caught-up runs ask about it
  // and the next few.
  const some = [...sessionQueries(oracle).map((query) => ({ query, leaf: null })), ...queriesOf(oracle.leaves.slice(0, coldLeavesMax))];
  let copies = 0;
  const copyOf = () => {
    const copy = join(scratch, `${copies++}-${name}`);
    copyFileSync(file, copy);
    return copy;
  };
  const task = ({ query, leaf }, copy, mode) => {
    const at = where(mode, leaf);
    return () => check(at, query.answer, query.expected, () => query.run(copy, at));
  };

  // Cold: each query on a copy of its own, so that its open builds the index.
  const cold = copyOf();
  await pool(
    [() => check(where("cold"), "index state", "rebuilt", () => indexState(cold)), ...some.map((item) => task(item, copyOf(), "cold"))],
    jobs,
  );

  // An open that builds or catches up an index the next phase relies on; a failure is
  // reported and the phase skipped.
  const prepare = async (copy, mode) => {
    try {
      await treelogRun(["info", copy, "--json"]);
      return true;
    } catch (error) {
      recordError(where(mode), "indexing before the queries", error);
      return false;
    }
  };

  // Warm: one copy, indexed once; every query of every leaf, several at once.
  const warm = copyOf();
  if (await prepare(warm, "warm")) {
    await check(where("warm"), "index state", "fresh", () => indexState(warm));
    await pool(
      all.map((item) => task(item, warm, "warm")),
      jobs,
    );
  }

  // Caught up: the index of the first ~60% of the lines, then the rest appended by another
  // writer; the next open reads only the new lines.
  const text = readFileSync(file, "utf8");
  const cut = text.indexOf("\n", Math.floor(text.length * 0.6)) + 1;
  if (cut > 0 && cut < text.length) {
    const caught = join(scratch, `${copies++}-caught-${name}`);
    writeFileSync(caught, text.slice(0, cut));
    if (await prepare(caught, "caught up")) {
      appendFileSync(caught, text.slice(cut));
      await check(where("caught up"), "index state", "caughtUp", () => indexState(caught));
      await pool(
        some.map((item) => task(item, caught, "caught up")),
        jobs,
      );
    }
  }
}

// --- main ----------------------------------------------------------------------------------------

async function main() {
  // performance.now: the generator replaces Date's clock with a fake one.
  const started = performance.now();
  const features = contextFeatures();
  const pi16 = await loadPi("1.6");
  const pi073 = await loadPi("0.73");
  const scratch = args.keep ? resolve(args.keep) : mkdtempSync(join(tmpdir(), "pi-diff-run-"));
  mkdirSync(scratch, { recursive: true });
  console.log(`treelog: ${treelog}`);
  console.log(
    `context views compared besides the context: ${
      [features.entries && "--entries", features.projection && "--projection", features.piCompat && "--pi-compat 0.73"]
        .filter(Boolean)
        .join(", ") || "none (this treelog offers no --entries, --projection or --pi-compat: not compared)"
    }`,
  );
  try {
    const transcripts = [];
    if (args.files) {
      for (const file of args.files.split(",")) transcripts.push({ file: resolve(file), pi: "file", label: file });
    } else {
      for (const seed of seeds) {
        for (const spec of plan) {
          const file = join(scratch, `pi${spec.pi}-seed${seed + spec.seedOffset}-${spec.entries}-${spec.profile}.jsonl`);
          const made = await generateTranscript({ pi: spec.pi, seed: seed + spec.seedOffset, entries: spec.entries, out: file, profile: spec.profile });
          transcripts.push({ file, pi: spec.pi, label: `${basename(file)} (${made.entries} entries)` });
        }
      }
    }
    for (const { file, pi, label } of transcripts) {
      const before = results.failed.length;
      const oracle = computeOracle(file, pi16, { treeLeavesMax, perKind: 2, randomExtra: 4 });
      const leafIds = oracle.leaves.map((leaf) => leaf.leafId);
      const v073 = computeOracle(file, pi073, { leafIds });
      if (pi === "0.73") {
        // On what 0.73.1 writes the two versions agree, which is why treelog's default
        // answers are compared with 1.6.0's; a disagreement would void that.
        const disagreement = oracleAgreement(v073, oracle);
        if (disagreement) {
          results.failed.push({ file: basename(file), pi, mode: "pi", leaf: null, seq: sequence++, answer: "pi 0.73.1 = pi 1.6.0", detail: disagreement });
        }
      }
      const fileScratch = mkdtempSync(join(scratch, "copies-"));
      await compareFile(file, pi, oracle, v073, features, fileScratch);
      if (!args.keep) rmSync(fileScratch, { recursive: true, force: true });
      const failed = results.failed.length - before;
      console.log(`${label}: ${oracle.leaves.length} leaves, ${failed === 0 ? "same answers" : `${failed} difference(s)`}`);
    }
    // The first write of a new log cut at every byte, then a treelog append: both pi versions
    // read the file as it is, with its header and every acknowledged entry (log.md §2).
    if (!args.files) {
      const tornScratch = mkdtempSync(join(scratch, "torn-"));
      const torn = checkTornFirstWrite({ treelog, pis: [pi16, pi073], scratch: tornScratch });
      results.passed += torn.passed;
      for (const failure of torn.failures) {
        results.failed.push({
          file: "torn first write",
          pi: failure.pi,
          mode: `cut at byte ${failure.offset}`,
          leaf: null,
          seq: sequence++,
          answer: "acknowledged entries",
          detail: failure.detail,
        });
      }
      console.log(`torn first write: ${torn.offsets} cuts, ${torn.failures.length === 0 ? "every acknowledged entry read by both pi versions" : `${torn.failures.length} failure(s)`}`);
    }
  } finally {
    if (!args.keep) rmSync(scratch, { recursive: true, force: true });
  }
  report(started);
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function describe(item) {
  return `${item.file} [${item.mode}]${item.leaf ? ` leaf ${item.leaf}` : ""} ${item.answer}: ${item.detail}`;
}

function report(started) {
  for (const list of [results.failed, results.known, results.notes]) list.sort((a, b) => a.seq - b.seq);
  if (results.known.length > 0) {
    console.log(`\nknown differences (${results.known.length}, not failures):`);
    for (const item of results.known.slice(0, shownMax)) console.log(`  ${describe(item)}\n    reason: ${item.reason}`);
  }
  if (results.notes.length > 0) {
    console.log(
      `\nnotes: ${results.notes.length} context(s) equal to pi's as JSON values but not byte for byte to JSON.stringify's text (key order, number spelling); first:`,
    );
    for (const item of results.notes.slice(0, 3)) console.log(`  ${describe(item)}`);
  }
  if (results.failed.length > 0) {
    // Group by answer and mode so that one systematic difference reads as one line.
    const groups = new Map();
    for (const item of results.failed) {
      const key = `${item.answer} [${item.mode}]`;
      groups.set(key, (groups.get(key) ?? 0) + 1);
    }
    console.log(`\ndifferences by answer: ${[...groups].map(([key, n]) => `${key} ${n}`).join(", ")}`);
    console.log(`first ${Math.min(shownMax, results.failed.length)} difference(s):`);
    for (const item of results.failed.slice(0, shownMax)) console.log(`  ${clip(describe(item), 400)}`);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `\n${results.passed} passed, ${results.failed.length} failed${results.known.length ? `, ${results.known.length} known` : ""} (${
      args.files ? "given files" : `seeds ${seeds.join(",")}, plan ${args.plan ?? "quick"}`
    }, ${seconds} s)`,
  );
  process.exitCode = results.failed.length > 0 ? 1 : 0;
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exit(2);
}
