// pi's terminal UI on treelog (treelog-pi) against pi's own bundled bin, under tmux at 120x40:
// resume a pi-written session of 1,000 entries (and of 100,000 with TREELOG_TEST_BIG=1, as CI
// runs it), send a prompt (answered by the fake model on 127.0.0.1), show /session, open /tree,
// quit. The footer (usage totals) is on every screen, and the resume's "Session compacted N
// times" on the first; treelog-pi runs its replacements of pi's whole-history loops
// (hook/replacements.mjs). Each step waits for the screen to settle; the screens of the
// two sides must be equal once times, ids and the sides' own paths are normalised, and so
// must the turn each appended to its copy of the session.
//
// Needs tmux (skipped without it, unless CI is set: then it fails).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  ANSWER, MODEL, MODEL_ARGS, command, copySession, hasTmux, makeAgentDir, piEnv, piSession, readJsonl, startFakeModel, startTmux,
  stripVolatile, tempDir,
} from "./cli/fixture.mjs";
import { pi, sameJson, treelog } from "./helpers.mjs";

const SIDES = ["pi", "treelog-pi"];
const SIZES = process.env.TREELOG_TEST_BIG === "1" ? [1000, 100000] : [1000];
const tmuxMissing = !hasTmux() && !process.env.CI && "tmux is not installed (apt-get install tmux)";

let root;
let model;
let env;
let project;

before(async () => {
  root = tempDir("treelog-tui-");
  model = await startFakeModel();
  project = join(root, "project");
  mkdirSync(project);
  env = piEnv(root, makeAgentDir(root, model.baseUrl), { TERM: "xterm-256color", LANG: "C.UTF-8", LC_ALL: "C.UTF-8" });
});

after(async () => {
  await model?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A screen without what differs run to run or side to side: clock times, durations, ids, paths. */
function normalised(screen, side) {
  return screen
    .split(join(root, side)).join("<side>")
    .replace(/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?\b/g, "<date>")
    .replace(/\b\d{1,2}:\d{2}(:\d{2})?( ?[AP]M)?\b/g, "<time>")
    .replace(/\b\d+(\.\d+)?m?s\b/g, "<duration>")
    .replace(/\b[0-9a-f]{8}\b/g, "<id>");
}

const lineCount = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean).length;

for (const entries of SIZES) {
test(`the terminal UI under tmux on ${entries.toLocaleString("en")} entries: resume, prompt, /tree show pi's screens`, { skip: tmuxMissing, timeout: 600_000 }, async () => {
  const source = await piSession(entries, root);
  const lines = lineCount(source);
  // The resumed screen is whole once the session's last message shows (pi draws the editor and
  // footer first, the history after it).
  const lastMessage = readJsonl(source).findLast((entry) => entry.type === "message").message;
  const lastText = (typeof lastMessage.content === "string" ? lastMessage.content : lastMessage.content.find((part) => part.type === "text").text).slice(0, 40);
  const screens = {};
  const files = {};
  for (const side of SIDES) {
    const file = join(root, `${side}-${entries}`, "session.jsonl");
    await copySession(source, file, project);
    files[side] = file;
    const [file0, args] = command(side, [...MODEL_ARGS, "--session", file]);
    const tui = startTmux({ dir: root, name: `${side.replace("-", "")}${entries}`, file: file0, args, cwd: project, env });
    try {
      const shots = [];
      // Resumed: the session's last entries, the editor and the footer naming the model.
      const footer = (screen) => screen.split("\n").some((line) => line.endsWith(MODEL.id) && line.includes("/"));
      shots.push(await tui.waitFor((screen) => footer(screen) && screen.includes(lastText), { what: `${side}'s editor after the resume`, stableMs: 800, timeoutMs: 300_000 }));
      tui.type("Hello from tmux");
      await tui.waitFor((screen) => screen.includes("Hello from tmux"), { what: `${side}'s typed prompt` });
      tui.press("Enter");
      shots.push(await tui.waitFor((screen) => screen.includes(ANSWER) && footer(screen), { what: `${side}'s answer`, stableMs: 800 }));
      tui.type("/session");
      await tui.waitFor((screen) => screen.includes("/session"), { what: `${side}'s /session typed` });
      tui.press("Enter");
      shots.push(await tui.waitFor((screen) => screen.includes("Session Info") && footer(screen), { what: `${side}'s /session`, stableMs: 800 }));
      tui.type("/tree");
      await tui.waitFor((screen) => screen.includes("/tree"), { what: `${side}'s /tree typed` });
      tui.press("Enter");
      shots.push(await tui.waitFor((screen) => screen.includes("Session Tree") && screen.includes(`assistant: ${ANSWER}`), { what: `${side}'s /tree` }));
      // Leave the tree, then quit as a user does (ctrl+d on an empty editor).
      tui.press("Escape");
      await tui.waitFor((screen) => !screen.includes("Session Tree") && footer(screen), { what: `${side}'s editor after /tree` });
      tui.press("C-d");
      const deadline = Date.now() + 15_000;
      let status;
      while ((status = tui.exitStatus()) === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      screens[side] = { shots: shots.map((shot) => normalised(shot, `${side}-${entries}`)), status };
    } finally {
      tui.kill();
    }
  }
  const [byPi, byTreelog] = [screens.pi, screens["treelog-pi"]];
  assert.equal(byPi.status, 0, "pi quit with exit 0 on ctrl+d");
  assert.equal(byTreelog.status, byPi.status, "treelog-pi's exit status");
  ["after the resume", "after the prompt", "after /session", "in /tree"].forEach((step, i) => {
    assert.equal(byTreelog.shots[i], byPi.shots[i], `the screen ${step}`);
  });
  // The turns on disk, and pi's reopen of treelog-pi's file.
  const appended = (file) => readJsonl(file).slice(lines).map(stripVolatile);
  sameJson(appended(files["treelog-pi"]), appended(files.pi), "the entries the TUI turn appended");
  assert.ok(existsSync(`${files["treelog-pi"]}.treelog`));
  sameJson(
    pi.SessionManager.open(files["treelog-pi"]).buildSessionContext(),
    treelog.SessionManager.open(files["treelog-pi"]).buildSessionContext(),
    "the context of treelog-pi's file, reopened by treelog and by pi",
  );
});
}

/** A usage with its cost split as providers report it. */
const pricedUsage = (input, output, cacheRead, cacheWrite) => ({
  input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite,
  cost: { input: input * 3e-6, output: output * 15e-6, cacheRead: cacheRead * 3e-7, cacheWrite: cacheWrite * 3.75e-6, total: input * 3e-6 + output * 15e-6 + cacheRead * 3e-7 + cacheWrite * 3.75e-6 },
});

/**
 * A session pi's own manager writes whose /session shows a cost per model (responseModel, a
 * usage entry, tool and summary usage) and cache misses (partial, total, after a warm-up,
 * none after a compaction).
 */
function writeCostSession(file) {
  const writer = pi.SessionManager.open(file);
  writer.appendMessage({ role: "user", content: "hi", timestamp: 1735722000000 });
  const turn = (n, model, usage, extra = {}) =>
    writer.appendMessage({ role: "assistant", content: [{ type: "text", text: `answer ${n}` }], api: "faux", provider: "faux", model, usage, stopReason: "stop", timestamp: 1735722000000 + n * 60000, ...extra });
  turn(1, "m1", pricedUsage(100, 10, 0, 20000));
  turn(2, "m1", pricedUsage(50, 10, 20000, 200));
  turn(3, "m1", pricedUsage(100, 10, 0, 20300));
  turn(4, "m1", pricedUsage(5000, 10, 15000, 400));
  turn(5, "m2", pricedUsage(21000, 10, 0, 0), { responseModel: "m2-2025" });
  writer.appendMessage({ role: "toolResult", toolCallId: "c", toolName: "bash", content: [{ type: "text", text: "ok" }], isError: false, timestamp: 1735722400000, usage: pricedUsage(3, 4, 5, 6) });
  writer.appendUsage("cache_warm", "faux", "m1", pricedUsage(1, 0, 21000, 0));
  turn(6, "m1", pricedUsage(2000, 10, 0, 19000));
  writer.appendCompaction("summary", writer.getLeafId(), 1000, undefined, false, pricedUsage(11, 12, 13, 14));
  turn(7, "m1", pricedUsage(100, 10, 0, 5000));
  turn(8, "m1", pricedUsage(3000, 10, 0, 2100), { content: [{ type: "text", text: "the last answer" }] });
  writer.appendUsage("other", "faux2", "m9", pricedUsage(7, 7, 0, 0));
}

test("the terminal UI under tmux: /session's cost per model and cache re-billing are pi's", { skip: tmuxMissing, timeout: 300_000 }, async () => {
  const source = join(root, "cost-source.jsonl");
  writeCostSession(source);
  const shots = {};
  for (const side of SIDES) {
    const file = join(root, `${side}-cost`, "session.jsonl");
    await copySession(source, file, project);
    const [file0, args] = command(side, [...MODEL_ARGS, "--session", file]);
    const tui = startTmux({ dir: root, name: `${side.replace("-", "")}cost`, file: file0, args, cwd: project, env });
    try {
      const footer = (screen) => screen.split("\n").some((line) => line.endsWith(MODEL.id) && line.includes("/"));
      await tui.waitFor((screen) => footer(screen) && screen.includes("the last answer"), { what: `${side}'s editor after the resume`, stableMs: 800, timeoutMs: 120_000 });
      tui.type("/session");
      await tui.waitFor((screen) => screen.includes("/session"), { what: `${side}'s /session typed` });
      tui.press("Enter");
      shots[side] = normalised(
        await tui.waitFor((screen) => screen.includes("Cache Re-billed") && footer(screen), { what: `${side}'s /session`, stableMs: 800 }),
        `${side}-cost`,
      );
    } finally {
      tui.kill();
    }
  }
  for (const line of ["faux/m2-2025:", "faux/m1:", "Tools/summaries:", "faux2/m9:", "Cache Re-billed:"]) {
    assert.ok(shots.pi.includes(line), `pi's /session shows ${line}`);
  }
  assert.equal(shots["treelog-pi"], shots.pi, "the /session screen");
});
