// npm run bench -- cli [--entries 1000,100000] [--runs N] [--modes print,rpc,tui,soak,tree,resume] [--prompts N] [--json]
//
// pi's own CLI as users run it (`pi`: pi 1.6.0's bundled bin, dist/bundle/cli.js) against
// treelog-pi (bin/treelog-pi.mjs: the same pi's bundle on treelog's SessionManager), in
// the same run, on the pi-written session of each size in --entries (bench/.data/pi16-N.jsonl,
// written by measure.mjs `generate` when missing). Each side resumes its own copy (treelog's
// with its index built first, not measured), answered by a fake OpenAI-compatible model on
// 127.0.0.1, offline, from a private agent dir, HOME and cache folder:
//
//   print   `-p "..." --session FILE`: from the start to the answer on stdout (and to the exit)
//   rpc     `--mode rpc --session FILE`: from the start to the response to a get_state sent at once
//   tui     the terminal UI under tmux (120x40), `--session FILE`: from the start until the
//           editor and its footer are on the screen (polled every 20 ms); then, in the same
//           process, a prompt from its Enter to the answer on the screen below it, and
//           `/session` from its Enter to its "Session Info" on the screen
//   soak    treelog-pi only: the terminal UI, then --prompts (default 200) prompts one after
//           another in the one process; its RSS after the first answer and after the last
//   tree, resume  /tree and /resume's list in the terminal UI (bench/cli-tree.mjs)
//   RSS     each process's peak RSS (GNU time's %M when /usr/bin/time exists, else VmHWM)
//
// Every figure is the median of --runs (default 5) fresh processes per side and mode, the two
// sides taking turns, after one unmeasured run of each (which fills Node's compile caches:
// pi's bundle its own, treelog-pi treelog's). Print mode appends a turn per run to the copy.
// The ratio column is pi / treelog-pi: above 1x, treelog-pi is faster. Then the issue's
// targets, each met or missed.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import {
  ANSWER, MODEL, MODEL_ARGS, NODE, PI_ROOT, command, copySession, hasTmux, makeAgentDir, piEnv, run, startFakeModel, startTmux, tempDir,
} from "../test/cli/fixture.mjs";
import { TREE_MODES, measureTreeMode, treeTargets, writeSmallSessions } from "./cli-tree.mjs";
import { runHeader } from "./run-header.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const DATA = join(HERE, ".data");
const SIDES = ["pi", "treelog-pi"];

const argv = process.argv.slice(2).filter((arg, i) => !(i === 0 && arg === "cli"));
const options = { entries: "1000,100000", runs: "5", modes: "print,rpc,tui", prompts: "200", json: false };
for (let i = 0; i < argv.length; i++) {
  const name = argv[i].replace(/^--/, "");
  if (!argv[i].startsWith("--") || !(name in options)) {
    throw new Error(`unknown argument ${argv[i]} (--entries N,M --runs R --modes print,rpc,tui,soak --prompts N --json)`);
  }
  options[name] = name === "json" ? true : argv[++i];
}
const sizes = options.entries.split(",").map(Number);
const runs = Number(options.runs);
const modes = options.modes.split(",");
if (sizes.some((n) => !(n > 0)) || !(runs > 0)) throw new Error("--entries and --runs take positive numbers");
const prompts = Number(options.prompts);
if (modes.some((mode) => !["print", "rpc", "tui", "soak", ...TREE_MODES].includes(mode))) throw new Error("--modes: print, rpc, tui, soak, tree, resume");
if (!(prompts > 0)) throw new Error("--prompts takes a positive number");
if (modes.some((mode) => ["tui", "soak", ...TREE_MODES].includes(mode)) && !hasTmux()) throw new Error("the tui, soak, tree and resume modes need tmux (apt-get install tmux), or leave them out with --modes print,rpc");

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;

/** The cached pi-written session of `entries` entries (written under another name, then renamed). */
async function sessionOf(entries) {
  const file = join(DATA, `pi16-${entries}.jsonl`);
  if (!existsSync(file)) {
    mkdirSync(DATA, { recursive: true });
    log(`writing ${entries} entries with pi 1.6.0 to ${file} ...`);
    const { code, stderr } = await run(NODE, ["--max-old-space-size=16384", join(HERE, "measure.mjs"), "generate", `${file}.partial`, String(entries)], { timeoutMs: 3 * 3600_000 });
    if (code !== 0) throw new Error(`generate failed: ${stderr}`);
    renameSync(`${file}.partial`, file);
  }
  return file;
}

/** `file args` under GNU time (its %M into `rssFile`) when there is one. */
function wrapped(file, args, rssFile) {
  return TIME ? [TIME, ["-o", rssFile, "-f", "%M", file, ...args]] : [file, args];
}

/** Peak RSS in MiB: GNU time's report, else the last VmHWM read of `pid`. */
function peakOf(rssFile, lastHwmKiB) {
  if (TIME && existsSync(rssFile)) {
    const kib = Number(readFileSync(rssFile, "utf8").trim().split("\n").at(-1));
    rmSync(rssFile, { force: true });
    if (kib > 0) return kib / 1024;
  }
  return lastHwmKiB ? lastHwmKiB / 1024 : NaN;
}

/** The node process a tmux pane runs: the pane's own process, or its child under GNU time. */
function nodeOf(panePid) {
  try {
    if (readFileSync(`/proc/${panePid}/comm`, "utf8").trim() !== "time") return panePid;
    const children = readFileSync(`/proc/${panePid}/task/${panePid}/children`, "utf8").trim().split(/\s+/).map(Number);
    return children[0] || panePid;
  } catch {
    return panePid;
  }
}

/** VmRSS (MiB) of the process `pid` now (NaN when gone). */
function rssOf(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;
  } catch {
    return NaN;
  }
}

/** VmHWM (KiB) of the process `pid` now (0 when gone). */
function hwmOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Runs `file args` to its exit, timing the first stdout chunk that holds `marker`. */
function timedRun(file, args, { cwd, env, marker, stdinText, onSpawn }) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(file, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    onSpawn?.(child);
    let stdout = "";
    let stderr = "";
    let markerMs;
    let hwm = 0;
    const sampler = setInterval(() => (hwm = Math.max(hwm, hwmOf(child.pid))), 20);
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      stdout += chunk;
      if (markerMs === undefined && stdout.includes(marker)) {
        markerMs = performance.now() - start;
        hwm = Math.max(hwm, hwmOf(child.pid));
        if (stdinText !== undefined) child.stdin.end();
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    if (stdinText === undefined) child.stdin.end();
    else child.stdin.write(stdinText);
    child.on("error", reject);
    child.on("close", (code) => {
      clearInterval(sampler);
      resolve({ code, stdout, stderr, markerMs, exitMs: performance.now() - start, hwm });
    });
  });
}

/** One measurement of `mode` by `side` on its copy. */
async function measureOnce(mode, side, ctx) {
  if (TREE_MODES.includes(mode)) return measureTreeMode(mode, side, ctx, { command, wrapped, peakOf, startTmux, MODEL, MODEL_ARGS, TIME });
  const rssFile = join(ctx.root, `rss-${side}.txt`);
  const env = ctx.env;
  if (mode === "print") {
    const [file, args] = command(side, ["-p", "Say it.", ...MODEL_ARGS, "--session", ctx.copies[side]]);
    const [wrappedFile, wrappedArgs] = wrapped(file, args, rssFile);
    const result = await timedRun(wrappedFile, wrappedArgs, { cwd: ctx.project, env, marker: ANSWER });
    if (result.code !== 0 || result.markerMs === undefined) throw new Error(`${side} print: exit ${result.code}\n${result.stderr}`);
    return { ms: result.markerMs, exitMs: result.exitMs, rssMiB: peakOf(rssFile, result.hwm) };
  }
  if (mode === "rpc") {
    const [file, args] = command(side, ["--mode", "rpc", ...MODEL_ARGS, "--session", ctx.copies[side]]);
    const [wrappedFile, wrappedArgs] = wrapped(file, args, rssFile);
    const result = await timedRun(wrappedFile, wrappedArgs, {
      cwd: ctx.project, env, marker: '"command":"get_state"', stdinText: `${JSON.stringify({ id: "ready", type: "get_state" })}\n`,
    });
    if (result.code !== 0 || result.markerMs === undefined) throw new Error(`${side} rpc: exit ${result.code}\n${result.stderr}`);
    return { ms: result.markerMs, exitMs: result.exitMs, rssMiB: peakOf(rssFile, result.hwm) };
  }
  // tui: under tmux, until the editor's footer (the model's name at the end of a line) shows.
  const [file, args] = command(side, [...MODEL_ARGS, "--session", ctx.copies[side]]);
  const [wrappedFile, wrappedArgs] = wrapped(file, args, rssFile);
  const tui = startTmux({ dir: ctx.root, name: `bench${side.replace("-", "")}`, file: wrappedFile, args: wrappedArgs, cwd: ctx.project, env: ctx.tuiEnv });
  try {
    const ready = (screen) => screen.split("\n").some((line) => line.endsWith(MODEL.id) && line.includes("/"));
    /** Polls the screen every 20 ms from now until `accept`; the milliseconds from `since`. */
    const until = async (accept, since, what) => {
      const deadline = performance.now() + 600_000;
      for (;;) {
        if (accept(tui.capture())) return performance.now() - since;
        if (tui.exitStatus() !== undefined || performance.now() > deadline) throw new Error(`${side} tui: no ${what}; the screen:\n${tui.capture()}`);
        await sleep(20);
      }
    };
    const ms = await until(ready, tui.started, "editor");
    // Let the first screen settle before typing.
    await tui.waitFor(ready, { stableMs: 300, timeoutMs: 60_000 });
    const result = { ms };
    /** A prompt typed, then from its Enter until the answer shows below it (and the footer). */
    const prompt = async (text) => {
      tui.type(text);
      await tui.waitFor((screen) => screen.includes(text), { stableMs: 0, pollMs: 10, what: `${side}'s typed prompt` });
      const answered = (screen) => {
        const lines = screen.split("\n");
        const asked = lines.findLastIndex((line) => line.includes(text));
        return asked >= 0 && lines.findLastIndex((line) => line.includes(ANSWER)) > asked && ready(screen);
      };
      const start = performance.now();
      tui.press("Enter");
      return until(answered, start, `answer to ${text}`);
    };
    if (mode === "tui") {
      result.promptMs = await prompt("Say it once.");
      await tui.waitFor(ready, { stableMs: 200, timeoutMs: 60_000 });
      tui.type("/session");
      await tui.waitFor((screen) => screen.includes("/session"), { stableMs: 100, what: `${side}'s /session typed` });
      const start = performance.now();
      tui.press("Enter");
      result.sessionMs = await until((screen) => screen.includes("Session Info"), start, "/session");
      await tui.waitFor(ready, { stableMs: 200, timeoutMs: 60_000 });
    } else {
      // soak: prompts one after another; the RSS after the first answer and after the last.
      const node = nodeOf(tui.pid());
      result.promptMs = [];
      for (let n = 1; n <= prompts; n++) {
        result.promptMs.push(await prompt(`Say it, number ${n}.`));
        if (n === 1) result.firstRssMiB = rssOf(node);
      }
      await tui.waitFor(ready, { stableMs: 300, timeoutMs: 60_000 });
      result.lastRssMiB = rssOf(node);
    }
    // Quit as a user does (ctrl+d on an empty editor).
    tui.press("C-d");
    const quitBy = performance.now() + 60_000;
    while (tui.exitStatus() === undefined && performance.now() < quitBy) await sleep(50);
    if (tui.exitStatus() === undefined) throw new Error(`${side} tui: did not quit on ctrl+d`);
    for (let i = 0; i < 50 && TIME && !existsSync(rssFile); i++) await sleep(20);
    return { ...result, rssMiB: peakOf(rssFile, 0) };
  } finally {
    tui.kill();
  }
}

// ---- the runs ----

const root = tempDir("treelog-bench-cli-");
const model = await startFakeModel();
const agentDir = makeAgentDir(root, model.baseUrl);
const project = join(root, "project");
mkdirSync(project);
const env = piEnv(root, agentDir);
const ctx = { root, project, env, tuiEnv: { ...env, TERM: "xterm-256color", LANG: "C.UTF-8", LC_ALL: "C.UTF-8" }, copies: {} };
const results = {};
try {
  for (const entries of sizes) {
    const source = await sessionOf(entries);
    results[entries] = { bytes: statSync(source).size, modes: {} };
    for (const side of SIDES) {
      const copy = join(root, side, "session.jsonl");
      log(`${entries} entries: copying the session for ${side} ...`);
      await copySession(source, copy, project);
      ctx.copies[side] = copy;
      if (modes.includes("resume")) writeSmallSessions(dirname(copy), source, project);
    }
    // treelog's index of its copy, built once (an open), not measured.
    const built = await run(NODE, ["--max-old-space-size=16384", join(HERE, "measure.mjs"), "treelog", ctx.copies["treelog-pi"], "open"], { timeoutMs: 3600_000 });
    if (built.code !== 0) throw new Error(`index build failed: ${built.stderr}`);
    results[entries].indexBuildMs = built.ms;
    for (const mode of modes) {
      if (mode === "soak") {
        log(`${entries} entries, soak: ${prompts} prompts in one treelog-pi ...`);
        results[entries].soak = await measureOnce("soak", "treelog-pi", ctx);
        continue;
      }
      const samples = { pi: [], "treelog-pi": [] };
      for (const side of SIDES) {
        log(`${entries} entries, ${mode}: warm-up run of ${side} ...`);
        await measureOnce(mode, side, ctx);
      }
      for (let i = 0; i < runs; i++) {
        const order = i % 2 === 0 ? SIDES : [...SIDES].reverse();
        for (const side of order) {
          log(`${entries} entries, ${mode}, run ${i + 1}/${runs}: ${side} ...`);
          samples[side].push(await measureOnce(mode, side, ctx));
        }
      }
      const medianOf = (side, key) => (samples[side][0][key] === undefined ? undefined : median(samples[side].map((s) => s[key])));
      results[entries].modes[mode] = Object.fromEntries(SIDES.map((side) => [side, {
        ms: median(samples[side].map((s) => s.ms)),
        exitMs: medianOf(side, "exitMs"),
        promptMs: medianOf(side, "promptMs"),
        sessionMs: medianOf(side, "sessionMs"),
        rssMiB: Math.max(...samples[side].map((s) => s.rssMiB)),
        failed: samples[side].find((s) => s.failed)?.failed,
        listed: samples[side][0].listed,
        samples: samples[side],
      }]));
    }
    for (const side of SIDES) rmSync(join(root, side), { recursive: true, force: true });
  }
} finally {
  await model.close();
  rmSync(root, { recursive: true, force: true });
}

// ---- the report ----

const piVersion = JSON.parse(readFileSync(join(PI_ROOT, "package.json"), "utf8")).version;
const header = {
  ...runHeader(),
  pi: piVersion,
  runs,
};

/** The targets, each { what, met, detail }. */
function targets() {
  const out = [];
  const at = (entries, mode) => results[entries]?.modes[mode];
  const label = (entries) => ({ 1000: "1k", 10000: "10k", 100000: "100k", 1000000: "1M" })[entries] ?? String(entries);
  for (const mode of modes.filter((m) => m !== "tui" && m !== "soak" && !TREE_MODES.includes(m))) {
    const small = at(1000, mode);
    if (small) {
      const ratio = small["treelog-pi"].ms / small.pi.ms;
      out.push({ what: `1k ${mode}: treelog-pi at most 10% slower than pi`, met: ratio <= 1.1, detail: `${Math.abs((ratio - 1) * 100).toFixed(0)}% ${ratio >= 1 ? "slower" : "faster"}` });
    }
    for (const entries of [100000, 1000000]) {
      const big = at(entries, mode);
      if (!big) continue;
      const label = entries === 100000 ? "100k" : "1M";
      if (small) {
        const own = big["treelog-pi"].ms / small["treelog-pi"].ms;
        out.push({ what: `${label} ${mode}: within 1.2x of treelog-pi's own 1k time`, met: own <= 1.2, detail: `${own.toFixed(2)}x` });
      }
      const speedup = big.pi.ms / big["treelog-pi"].ms;
      const wanted = entries === 100000 ? 2.5 : 10;
      out.push({ what: `${label} ${mode}: at least ${wanted}x faster than pi`, met: speedup >= wanted, detail: `${speedup.toFixed(2)}x` });
      if (entries === 1000000) {
        const memory = big["treelog-pi"].rssMiB / big.pi.rssMiB;
        out.push({ what: `1M ${mode}: at most a quarter of pi's memory`, met: memory <= 0.25, detail: `${(memory * 100).toFixed(0)}% of pi's peak RSS` });
      }
    }
  }
  // The terminal UI's: to the editor, a prompt to its answer, memory.
  const small = at(1000, "tui");
  if (small) {
    const ratio = small["treelog-pi"].ms / small.pi.ms;
    out.push({ what: "1k tui: to the editor no slower than pi", met: ratio <= 1, detail: `${small["treelog-pi"].ms.toFixed(0)} against ${small.pi.ms.toFixed(0)} ms (${ratio.toFixed(2)}x pi's time)` });
  }
  for (const [entries, ownMax, speedupMin] of [[100000, 1.3, 3], [1000000, 2, 12]]) {
    const big = at(entries, "tui");
    if (!big) continue;
    const mine = big["treelog-pi"];
    if (small) {
      const own = mine.ms / small["treelog-pi"].ms;
      out.push({ what: `${label(entries)} tui: to the editor within ${ownMax}x of treelog-pi's own 1k`, met: own <= ownMax, detail: `${mine.ms.toFixed(0)} ms, ${own.toFixed(2)}x` });
      const prompt = mine.promptMs / small["treelog-pi"].promptMs;
      out.push({ what: `${label(entries)} tui: a prompt to the answer within 1.5x of the 1k figure`, met: prompt <= 1.5, detail: `${mine.promptMs.toFixed(0)} against ${small["treelog-pi"].promptMs.toFixed(0)} ms, ${prompt.toFixed(2)}x` });
    }
    const speedup = big.pi.ms / mine.ms;
    out.push({ what: `${label(entries)} tui: to the editor at least ${speedupMin}x faster than pi`, met: speedup >= speedupMin, detail: `${speedup.toFixed(2)}x` });
    if (entries === 1000000) {
      const memory = mine.rssMiB / big.pi.rssMiB;
      out.push({ what: "1M tui: peak RSS at most 30% of pi's", met: memory <= 0.3, detail: `${mine.rssMiB.toFixed(0)} against ${big.pi.rssMiB.toFixed(0)} MiB, ${(memory * 100).toFixed(0)}%` });
    }
  }
  // /session: no slower than pi at 1k, faster at 100k and 1M.
  for (const [entries, word] of [[1000, "no slower than"], [100000, "faster than"], [1000000, "faster than"]]) {
    const sides = at(entries, "tui");
    if (!sides?.pi.sessionMs || !sides["treelog-pi"].sessionMs) continue;
    const ratio = sides.pi.sessionMs / sides["treelog-pi"].sessionMs;
    const met = entries === 1000 ? ratio >= 1 : ratio > 1;
    out.push({ what: `${label(entries)} tui: /session ${word} pi`, met, detail: `${sides["treelog-pi"].sessionMs.toFixed(0)} against ${sides.pi.sessionMs.toFixed(0)} ms, ${ratio.toFixed(2)}x` });
  }
  const soak = results[100000]?.soak;
  if (soak) {
    const growth = soak.lastRssMiB - soak.firstRssMiB;
    out.push({ what: `100k soak: after ${soak.promptMs.length} prompts, RSS at most 64 MiB above the first's`, met: growth <= 64, detail: `${soak.firstRssMiB.toFixed(0)} -> ${soak.lastRssMiB.toFixed(0)} MiB (+${growth.toFixed(0)})` });
  }
  out.push(...treeTargets(results, modes));
  return out;
}

if (options.json) {
  console.log(JSON.stringify({ ...header, sizes: results, targets: targets() }));
} else {
  const fixed = (value) => (value === undefined || Number.isNaN(value) ? "" : value.toFixed(value < 10 ? 2 : 0));
  const row = (cells, widths) => cells.map((cell, i) => String(cell)[i === 0 ? "padEnd" : "padStart"](widths[i])).join("  ");
  console.log(`machine: ${header.machine}; node ${header.node}; ${header.date}`);
  console.log(`command: ${header.command}`);
  console.log(`pi ${piVersion}'s bundled bin (what \`pi\` runs) against treelog-pi on the same pi; fake model on 127.0.0.1;`);
  console.log(`median of ${runs} fresh processes per side and mode (after one warm-up run each); peak RSS is the largest`);
  const LABELS = {
    print: "print: to the answer (ms)", rpc: "rpc: to get_state (ms)", tui: "tui: to the editor (ms)",
    tree: "tui: /tree drawn (ms)", resume: "tui: /resume list (ms)",
  };
  if (modes.includes("tui")) console.log("the machine may be shared and noisy: compare the two sides of one run, not runs of different days");
  for (const [entries, { bytes, indexBuildMs, modes: measured, soak }] of Object.entries(results)) {
    console.log(`\n${Number(entries).toLocaleString("en")} entries (pi16-${entries}.jsonl, ${(bytes / 2 ** 20).toFixed(1)} MiB; treelog's index built first in ${fixed(indexBuildMs)} ms, not counted)`);
    const widths = [36, 10, 11, 11];
    console.log(row(["", "pi", "treelog-pi", "pi/treelog"], widths), "  (above 1x: treelog-pi is faster)");
    for (const [mode, sides] of Object.entries(measured)) {
      const [a, b] = [sides.pi, sides["treelog-pi"]];
      console.log(row([LABELS[mode], fixed(a.ms), fixed(b.ms), `${(a.ms / b.ms).toFixed(2)}x`], widths));
      for (const [side, sample] of [["pi", a], ["treelog-pi", b]]) if (sample.failed) console.log(`  ${mode}: ${side} ${sample.failed} (its time is the time it failed at)`);
      if (a.listed !== undefined) console.log(`  ${mode}: sessions listed: pi ${a.listed}, treelog-pi ${b.listed}`);
      if (a.exitMs !== undefined) console.log(row([`  ${mode}: to the exit (ms)`, fixed(a.exitMs), fixed(b.exitMs), `${(a.exitMs / b.exitMs).toFixed(2)}x`], widths));
      if (a.promptMs !== undefined) console.log(row([`  ${mode}: a prompt to the answer (ms)`, fixed(a.promptMs), fixed(b.promptMs), `${(a.promptMs / b.promptMs).toFixed(2)}x`], widths));
      if (a.sessionMs !== undefined) console.log(row([`  ${mode}: /session drawn (ms)`, fixed(a.sessionMs), fixed(b.sessionMs), `${(a.sessionMs / b.sessionMs).toFixed(2)}x`], widths));
      console.log(row([`  ${mode}: peak RSS (MiB)`, fixed(a.rssMiB), fixed(b.rssMiB), `${(a.rssMiB / b.rssMiB).toFixed(2)}x`], widths));
    }
    if (soak) {
      const ms = soak.promptMs;
      console.log(`soak, treelog-pi: ${ms.length} prompts in one process, each to its answer: first ${fixed(ms[0])} ms, median ${fixed(median(ms))} ms, last ${fixed(ms.at(-1))} ms; RSS ${fixed(soak.firstRssMiB)} MiB after the first, ${fixed(soak.lastRssMiB)} MiB after the last, peak ${fixed(soak.rssMiB)} MiB`);
    }
  }
  const list = targets();
  if (list.length) {
    console.log("\ntargets:");
    for (const { what, met, detail } of list) console.log(`  ${met ? "met   " : "MISSED"}  ${what}: ${detail}`);
  }
}
