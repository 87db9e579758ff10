// The `tree` and `resume` modes of `npm run bench -- cli` (bench/cli.mjs runs them; this file
// measures one run and names the targets):
//
//   tree    the terminal UI under tmux (120x40), `--session FILE`: once the editor is drawn,
//           `/tree` is typed; from its Enter until the selector's row counter is on screen
//   resume  the same, with 1,000 small sessions (30 entries each, pi-written lines) beside
//           FILE in its folder: `/resume`, from its Enter until the list is loaded (its row
//           counter shows every session, and no "Loading")
//
// Each is timed in a process of its own, which then quits; its peak RSS is measured as the
// other tui modes measure it. pi's process may die (at 1M entries it runs out of memory in
// /tree) or not answer within the mode's time limit: the run then counts as failed, its time
// as the limit, and the report says so.
import { closeSync, existsSync, mkdirSync, openSync, readSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The modes this file measures. */
export const TREE_MODES = ["tree", "resume"];
/** How many small sessions the resume mode puts beside the measured one. */
export const SMALL_SESSIONS = 1000;
/** How long a side may take to draw /tree or the /resume list before the run counts as failed. */
const LIMIT_MS = { tree: 180_000, resume: 300_000 };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first `count` lines of `file` (read from its start only). */
function firstLines(file, count) {
  const fd = openSync(file, "r");
  try {
    const buffer = Buffer.alloc(4 << 20);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    return buffer.subarray(0, read).toString("utf8").split("\n").slice(0, count);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the resume mode's small sessions into `dir` (once): each a header naming `cwd` and a
 * session id of its own, then the first 30 entries of the pi-written session `source`.
 */
export function writeSmallSessions(dir, source, cwd) {
  mkdirSync(dir, { recursive: true });
  const [header, ...entries] = firstLines(source, 31);
  const base = JSON.parse(header);
  for (let n = 0; n < SMALL_SESSIONS; n++) {
    const id = `0190a000-0000-7000-8000-${String(n).padStart(12, "0")}`;
    const timestamp = new Date(Date.parse("2025-01-01T00:00:00.000Z") + n * 60_000).toISOString();
    const file = join(dir, `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
    if (existsSync(file)) continue;
    writeFileSync(file, `${[JSON.stringify({ ...base, id, timestamp, cwd }), ...entries].join("\n")}\n`);
  }
}

/**
 * One run of `mode` by `side`: { ms, rssMiB, failed }. `tools` are bench/cli.mjs's helpers
 * (command, wrapped, peakOf, startTmux, MODEL, MODEL_ARGS, TIME).
 */
export async function measureTreeMode(mode, side, ctx, tools) {
  const { command, wrapped, peakOf, startTmux, MODEL, MODEL_ARGS, TIME } = tools;
  const rssFile = join(ctx.root, `rss-${side}-${mode}.txt`);
  const [file, args] = command(side, [...MODEL_ARGS, "--session", ctx.copies[side]]);
  const [wrappedFile, wrappedArgs] = wrapped(file, args, rssFile);
  const tui = startTmux({ dir: ctx.root, name: `${mode}${side.replace("-", "")}`, file: wrappedFile, args: wrappedArgs, cwd: ctx.project, env: ctx.tuiEnv });
  const footer = (screen) => screen.split("\n").some((line) => line.endsWith(MODEL.id) && line.includes("/"));
  try {
    await tui.waitFor(footer, { stableMs: 300, timeoutMs: 600_000, what: `${side}'s editor` });
    const command = mode === "tree" ? "/tree" : "/resume";
    tui.type(command);
    await tui.waitFor((screen) => screen.includes(command), { stableMs: 200, what: `${side}'s ${command} typed` });
    // The list is loaded once its counter shows at least the small sessions and "Loading" is
    // gone (pi leaves out a session whose texts joined pass V8's longest string: the 1M one).
    const listed = (screen) => Number(/\(\d+\/(\d+)\)/.exec(screen)?.[1] ?? 0);
    const drawn = mode === "tree"
      ? (screen) => screen.includes("Session Tree") && /\(\d+\/\d+\)/.test(screen)
      : (screen) => listed(screen) >= SMALL_SESSIONS && !screen.includes("Loading");
    const start = performance.now();
    tui.press("Enter");
    let ms;
    let failed = false;
    let count;
    for (;;) {
      const screen = tui.capture();
      if (drawn(screen)) {
        ms = performance.now() - start;
        count = mode === "resume" ? listed(screen) : undefined;
        break;
      }
      if (tui.exitStatus() !== undefined || performance.now() - start > LIMIT_MS[mode]) {
        failed = tui.exitStatus() !== undefined ? `exited (${tui.exitStatus()})` : `nothing after ${LIMIT_MS[mode] / 1000} s`;
        ms = performance.now() - start;
        break;
      }
      await sleep(20);
    }
    if (!failed) {
      // Leave the selector, then quit as a user does (ctrl+d on an empty editor).
      tui.press("Escape");
      await tui.waitFor(footer, { stableMs: 300, timeoutMs: 120_000, what: `${side}'s editor after ${command}` });
      tui.press("C-d");
      const until = performance.now() + 120_000;
      while (tui.exitStatus() === undefined && performance.now() < until) await sleep(50);
      for (let i = 0; i < 50 && TIME && !existsSync(rssFile); i++) await sleep(20);
    }
    return { ms, rssMiB: failed ? NaN : peakOf(rssFile, 0), failed, listed: count };
  } finally {
    tui.kill();
  }
}

/** The targets of the tree and resume modes, given bench/cli.mjs's results: [{ what, met, detail }]. */
export function treeTargets(results, modes) {
  const out = [];
  for (const [entries, { modes: measured }] of Object.entries(results)) {
    const label = Number(entries) >= 1e6 ? `${entries / 1e6}M` : `${entries / 1e3}k`;
    const tree = modes.includes("tree") && measured.tree;
    if (tree && Number(entries) === 100000) {
      const speedup = tree.pi.ms / tree["treelog-pi"].ms;
      out.push({ what: `${label} /tree: at least 3x faster than pi`, met: speedup >= 3, detail: `${speedup.toFixed(2)}x` });
    }
    if (tree && Number(entries) >= 1000000) {
      const own = tree["treelog-pi"];
      out.push({ what: `${label} /tree: drawn within 2 s`, met: !own.failed && own.ms <= 2000, detail: own.failed ? own.failed : `${Math.round(own.ms)} ms (pi: ${tree.pi.failed || `${Math.round(tree.pi.ms)} ms`})` });
    }
    const resume = modes.includes("resume") && measured.resume;
    if (resume && Number(entries) >= 1000000) {
      const speedup = resume.pi.ms / resume["treelog-pi"].ms;
      out.push({ what: `${label} + ${SMALL_SESSIONS} small: /resume's list at least 20x faster than pi`, met: speedup >= 20, detail: `${speedup.toFixed(2)}x${resume.pi.failed ? ` (pi ${resume.pi.failed}: a lower bound)` : ""}` });
    }
  }
  return out;
}

