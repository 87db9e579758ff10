// npm run bench -- agent [--entries 1000,10000] [--runs N] [--prompts P] [--json]
//
// pi 1.6.0's own agent (createAgentSession from @earendil-works/pi-coding-agent, pi-ai's faux
// provider answering at once, offline) on pi 1.6.0's SessionManager and on treelog's, side by
// side, on a session pi wrote of each size in --entries (default 1000,10000; written once by
// measure.mjs's `generate` and cached under bench/.data as pi16-N.jsonl, the file bench.mjs
// uses). Each measurement is one fresh Node 24 process (agent-run.mjs) on a private copy of the
// session (treelog's copy has its index built by an open first, not measured):
//
//   resume     SessionManager.open(copy) + createAgentSession({ sessionManager, ... })
//   prompt     the median of P (--prompts, default 5) session.prompt() calls
//   compact    session.compact()
//   navigate   session.navigateTree(target, { summarize: true }), target 50 entries up the branch
//   peak RSS   of the process, sampled every 5 ms
//   per method every call pi's agent makes on the SessionManager instance: calls per step,
//              the first call's ms and the median of the later calls
//
// Figures are medians of --runs (default 1) processes per side; peak RSS is the largest. The
// agent runs with pi's default settings but for retries and cache warming (off) and a small
// keepRecentTokens; see agent-run.mjs.
//
// Correctness, in the same run: the agent runs on a fake clock (Date and performance.now(); the
// timings read the real performance.now()) with seeded ids, so the first run of each size must
// leave pi's copy and treelog's byte-identical, and pi's own SessionManager.open of each must
// build the same context. It prints "same answers: yes", or stops at the first difference with
// exit 1. The ratio column is pi / treelog: above 1x, treelog is faster.
import { execFileSync } from "node:child_process";
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { canonical, firstDifference } from "../../../tests/pi-diff/common.mjs";
import { runHeader } from "./run-header.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const DATA = join(HERE, ".data");
const IMPLS = ["pi-1.6.0", "treelog"];
const STEPS = ["resume", "prompt", "compact", "navigate"];
// A ceiling, not a reservation: pi's manager holds a whole 1M-entry session in its heap.
const NODE_FLAGS = ["--max-old-space-size=16384"];

// The arguments after `agent` (main.mjs passes them through).
const argv = process.argv.slice(2).filter((arg, i) => !(i === 0 && arg === "agent"));
const options = { entries: "1000,10000", runs: "1", prompts: "5", json: false };
for (let i = 0; i < argv.length; i++) {
  const name = argv[i].replace(/^--/, "");
  if (!argv[i].startsWith("--") || !(name in options)) {
    throw new Error(`unknown argument ${argv[i]} (--entries N,M --runs R --prompts P --json)`);
  }
  options[name] = name === "json" ? true : argv[++i];
}
const sizes = options.entries.split(",").map(Number);
const runs = Number(options.runs);
const prompts = Number(options.prompts);
if (sizes.some((n) => !(n > 0)) || !(runs > 0) || !(prompts > 0)) throw new Error("--entries, --runs and --prompts take positive numbers");

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
/** Runs a fresh Node 24 process; its stderr is shown, and a failure ends the bench (exit 1). */
function node(args, stdio = ["ignore", "pipe", "inherit"]) {
  try {
    return execFileSync(process.execPath, [...NODE_FLAGS, ...args], { stdio, maxBuffer: 1 << 28 });
  } catch (error) {
    console.log(`failed (exit ${error.status ?? error.signal}): node ${args.map((arg) => arg.replace(`${dirname(HERE)}/`, "")).join(" ")}`);
    process.exit(1);
  }
}

/** The cached pi-written session of `entries` entries (written under another name, then renamed). */
function sessionOf(entries) {
  const file = join(DATA, `pi16-${entries}.jsonl`);
  if (!existsSync(file)) {
    mkdirSync(DATA, { recursive: true });
    log(`writing ${entries} entries with pi 1.6.0 to ${file} ...`);
    node([join(HERE, "measure.mjs"), "generate", `${file}.partial`, String(entries)], "inherit");
    renameSync(`${file}.partial`, file);
  }
  return file;
}

/** One measured run of `impl` on a fresh copy of `file`; returns the copy and the figures. */
function measure(impl, file) {
  const copy = join(DATA, `agent-${impl}.jsonl`);
  rmSync(`${copy}.treelog`, { force: true });
  copyFileSync(file, copy);
  if (impl === "treelog") node([join(HERE, "measure.mjs"), impl, copy, "open"]);
  const out = node([join(HERE, "agent-run.mjs"), impl, copy, String(prompts)]).toString().trim().split("\n");
  return { copy, figures: JSON.parse(out.at(-1)) };
}

/** Where two files first differ: null, or the line number and each side's line (shortened). */
function fileDifference(a, b) {
  const [fa, fb] = [openSync(a), openSync(b)];
  const [bufA, bufB] = [Buffer.alloc(1 << 20), Buffer.alloc(1 << 20)];
  // Up to 160 bytes of the line either side of the first differing byte.
  const lineAt = (fd, at) => {
    const window = Buffer.alloc(320);
    const start = Math.max(0, at - 160);
    const bytes = window.subarray(0, readSync(fd, window, 0, window.length, start));
    const from = bytes.lastIndexOf(10, at - start - 1) + 1;
    const to = bytes.indexOf(10, at - start);
    return `${from === 0 && start > 0 ? "..." : ""}${bytes.subarray(from, to < 0 ? undefined : to).toString("utf8")}`;
  };
  try {
    for (let offset = 0, line = 1; ; ) {
      const na = readSync(fa, bufA, 0, bufA.length, offset);
      const nb = readSync(fb, bufB, 0, bufB.length, offset);
      let i = 0;
      while (i < na && i < nb && bufA[i] === bufB[i]) i++;
      for (let j = 0; j < i; j++) line += bufA[j] === 10 ? 1 : 0;
      if (i < na || i < nb) return { line, pi: lineAt(fa, offset + i), treelog: lineAt(fb, offset + i) };
      if (na === 0) return null;
      offset += na;
    }
  } finally {
    closeSync(fa);
    closeSync(fb);
  }
}

/** The correctness check of one size: the same bytes, and pi's reopen builds the same context. */
function check(entries, copies) {
  const fail = (what) => {
    console.log(`same answers: NO, at ${entries} entries: ${what}`);
    process.exit(1);
  };
  const difference = fileDifference(copies["pi-1.6.0"], copies.treelog);
  if (difference) fail(`the session files differ at line ${difference.line}:\n  pi      ${difference.pi}\n  treelog ${difference.treelog}`);
  const [piContext, treelogContext] = IMPLS.map((impl) => {
    const out = `${copies[impl]}.context.json`;
    node([join(HERE, "agent-run.mjs"), "reopen", copies[impl], out]);
    const context = JSON.parse(readFileSync(out, "utf8"));
    rmSync(out);
    return context;
  });
  if (canonical(piContext) !== canonical(treelogContext)) {
    fail(`pi's buildSessionContext() of the reopened files differs: ${firstDifference(piContext, treelogContext)}`);
  }
}

/** Medians over the runs, per side, and the per-method figures (call counts from the first run). */
function summarise(samples) {
  const sides = {};
  for (const impl of IMPLS) {
    const runs = samples[impl];
    const methods = {};
    for (const name of new Set(runs.flatMap((run) => Object.keys(run.methods)))) {
      const of = runs.map((run) => run.methods[name]).filter(Boolean);
      methods[name] = {
        calls: of[0].calls,
        firstMs: median(of.map((m) => m.ms[0])),
        repeatMs: of[0].ms.length > 1 ? median(of.map((m) => median(m.ms.slice(1)))) : null,
        totalMs: median(of.map((m) => m.ms.reduce((sum, ms) => sum + ms, 0))),
      };
    }
    sides[impl] = {
      resumeMs: median(runs.map((run) => run.resumeMs)),
      promptMs: median(runs.map((run) => median(run.promptMs))),
      compactMs: median(runs.map((run) => run.compactMs)),
      navigateMs: median(runs.map((run) => run.navigateMs)),
      peakRssMiB: Math.max(...runs.map((run) => run.peakRssMiB)),
      methods,
      samples: runs.map(({ methods: _, ...figures }) => figures),
    };
  }
  return sides;
}

// ---- the runs ----

const results = {};
for (const entries of sizes) {
  const file = sessionOf(entries);
  const samples = { "pi-1.6.0": [], treelog: [] };
  for (let run = 0; run < runs; run++) {
    // Alternate which side goes first, so that neither always runs on a warmer machine.
    const order = run % 2 === 0 ? IMPLS : [...IMPLS].reverse();
    const copies = {};
    for (const impl of order) {
      log(`${entries} entries, run ${run + 1}/${runs}: ${impl} ...`);
      const { copy, figures } = measure(impl, file);
      copies[impl] = copy;
      samples[impl].push(figures);
    }
    if (run === 0) check(entries, copies);
    if (run === runs - 1) for (const copy of Object.values(copies)) for (const path of [copy, `${copy}.treelog`]) rmSync(path, { force: true });
  }
  results[entries] = { file: basename(file), bytes: statSync(file).size, ...summarise(samples) };
}

// ---- the report ----

const header = {
  ...runHeader(),
  prompts,
  runs,
};
const fixed = (value) => (value === null || value === undefined ? "" : value.toFixed(value < 10 ? 2 : 1));
/** A table row: the first cell left-aligned, the others right-aligned, to `widths`. */
const row = (cells, widths) => cells.map((cell, i) => String(cell)[i === 0 ? "padEnd" : "padStart"](widths[i])).join("  ");
const FIGURES = [
  ["resume (ms)", "resumeMs"],
  ["prompt, median (ms)", "promptMs"],
  ["compact (ms)", "compactMs"],
  ["navigate + summary (ms)", "navigateMs"],
  ["peak RSS (MiB)", "peakRssMiB"],
];

/** Calls of a method in all (no step), or in one step (per prompt for the prompt step). */
const count = (calls = {}, step) =>
  step ? +((calls[step] ?? 0) / (step === "prompt" ? prompts : 1)).toFixed(1) : Object.values(calls).reduce((sum, n) => sum + n, 0);

if (options.json) {
  console.log(JSON.stringify({ ...header, sameAnswers: true, sizes: results }));
} else {
  console.log(`machine: ${header.machine}; node ${header.node}; ${header.date}`);
  console.log(`command: ${header.command}`);
  console.log(`pi 1.6.0's agent (createAgentSession, faux provider) on pi 1.6.0's SessionManager and treelog's;`);
  console.log(`${prompts} prompts; median of ${runs} fresh process(es) per side`);
  for (const [entries, { file, bytes, ...sides }] of Object.entries(results)) {
    const [pi, tl] = [sides["pi-1.6.0"], sides.treelog];
    console.log(`\n${Number(entries).toLocaleString("en")} entries (${file}, ${(bytes / 2 ** 20).toFixed(1)} MiB)`);
    const widths = [24, 10, 10, 11];
    console.log(row(["", "pi 1.6.0", "treelog", "pi/treelog"], widths), "  (above 1x: treelog is faster)");
    for (const [label, key] of FIGURES) {
      const show = key === "peakRssMiB" ? String : fixed;
      console.log(row([label, show(pi[key]), show(tl[key]), `${(pi[key] / tl[key]).toFixed(2)}x`], widths));
    }
    // Every method either side's agent called, the costliest on treelog first.
    const names = [...new Set([...Object.keys(pi.methods), ...Object.keys(tl.methods)])].sort(
      (a, b) => (tl.methods[b]?.totalMs ?? 0) - (tl.methods[a]?.totalMs ?? 0) || a.localeCompare(b),
    );
    const widthsOfMethods = [26, 7, 7, 7, 7, 7, 10, 10, 10, 10];
    console.log(`\nper method: calls in all and per step (resume, each prompt, compact, navigate; "pi|treelog" where`);
    console.log(`they differ), the first call's ms and the median ms of the later calls`);
    console.log(row(["method", "calls", "resume", "prompt", "compact", "navig.", "pi first", "pi repeat", "tl first", "tl repeat"], widthsOfMethods));
    for (const name of names) {
      const [p, t] = [pi.methods[name], tl.methods[name]];
      const counts = [undefined, ...STEPS].map((step) => {
        const [a, b] = [count(p?.calls, step), count(t?.calls, step)];
        return a === b ? a : `${a}|${b}`;
      });
      console.log(row([name, ...counts, fixed(p?.firstMs), fixed(p?.repeatMs), fixed(t?.firstMs), fixed(t?.repeatMs)], widthsOfMethods));
    }
  }
  console.log("\nsame answers: yes (the session files byte-identical, pi's reopened context equal, at every size)");
}
