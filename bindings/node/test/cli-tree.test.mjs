// /tree in pi's terminal UI on treelog (treelog-pi, whose launcher lists the tree from the
// index: hook/replacements/tree-view.mjs) against pi's own bundled bin, under tmux at 120x40,
// on a pi-written session of 1,000 entries (and of 100,000 with TREELOG_TEST_BIG=1, as CI runs
// it). The index's listing is forced on at every size (TREELOG_PI_TREE_MIN_ENTRIES=0). Each
// side opens /tree, then moves (up, down, page, branch), switches filters, searches, picks an
// entry and backs out; after every key the screens of the two sides must be equal once times,
// ids and paths are normalised. Then /resume's list, twice, on a folder holding a session of
// over 1 MiB (whose summary treelog-pi keeps at the first list) and 1,000 small ones: the same
// screens on both sides.
//
// Needs tmux (skipped without it, unless CI is set: then it fails).
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { writeSmallSessions } from "../bench/cli-tree.mjs";
import {
  MODEL, MODEL_ARGS, command, copySession, hasTmux, makeAgentDir, piEnv, piSession, readJsonl, startFakeModel, startTmux, tempDir,
} from "./cli/fixture.mjs";

const SIDES = ["pi", "treelog-pi"];
const SIZES = process.env.TREELOG_TEST_BIG === "1" ? [1000, 100000] : [1000];
const tmuxMissing = !hasTmux() && !process.env.CI && "tmux is not installed (apt-get install tmux)";

let root;
let model;
let env;
let project;

before(async () => {
  root = tempDir("treelog-tree-");
  model = await startFakeModel();
  project = join(root, "project");
  mkdirSync(project);
  env = piEnv(root, makeAgentDir(root, model.baseUrl), {
    TERM: "xterm-256color", LANG: "C.UTF-8", LC_ALL: "C.UTF-8", TREELOG_PI_TREE_MIN_ENTRIES: "0",
  });
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

const footer = (screen) => screen.split("\n").some((line) => line.endsWith(MODEL.id) && line.includes("/"));
const counter = (screen) => /\(\d+\/\d+\)/.test(screen);

/**
 * The keys pressed in /tree, each [what, tmux keys...]: typed text is ["type", text]. The
 * screen after each is compared.
 */
const TREE_STEPS = [
  ["up", "Up"], ["up", "Up"], ["up", "Up"], ["down", "Down"],
  ["page up", "Left"], ["page down", "Right"],
  ["branch up", "C-Left"], ["branch down", "C-Right"], ["branch up again", "C-Left"],
  ["user only", "C-u"], ["up in user only", "Up"], ["all", "C-a"], ["no tools", "C-t"], ["default", "C-d"],
  ["search", "type", "question 9"], ["search narrower", "type", "9"], ["search backspace", "BSpace"],
  ["search cleared", "Escape"],
  ["up before picking", "Up"], ["pick", "Enter"],
  // pi draws the chat while it builds the selector again (seconds at 100k): the step is taken
  // once the tree is back.
  ["back to the tree", "Escape", undefined, (screen) => screen.includes("Session Tree") && counter(screen)],
];

for (const entries of SIZES) {
  test(`/tree on ${entries.toLocaleString("en")} entries: the same screens as pi's after every key`, { skip: tmuxMissing, timeout: 900_000 }, async () => {
    const source = await piSession(entries, root);
    const lastMessage = readJsonl(source).findLast((entry) => entry.type === "message").message;
    const lastText = (typeof lastMessage.content === "string" ? lastMessage.content : lastMessage.content.find((part) => part.type === "text").text).slice(0, 40);
    const shots = {};
    for (const side of SIDES) {
      const file = join(root, `${side}-tree-${entries}`, "session.jsonl");
      await copySession(source, file, project);
      const [program, args] = command(side, [...MODEL_ARGS, "--session", file]);
      const tui = startTmux({ dir: root, name: `tree${side.replace("-", "")}${entries}`, file: program, args, cwd: project, env });
      const taken = [];
      let last = "";
      // A key is answered once the screen changed and then held still; pi takes seconds a key
      // on 100k entries, so a screen that stays the same is taken after 20 s.
      const shot = async (what, accept = () => true) => {
        let screen;
        try {
          screen = await tui.waitFor((now) => now !== last && accept(now), { what: `${side}: ${what}`, stableMs: 500, timeoutMs: 20_000 });
        } catch {
          screen = await tui.waitFor(accept, { what: `${side}: ${what}`, stableMs: 2000, timeoutMs: 300_000 });
        }
        last = screen;
        taken.push([what, normalised(screen, `${side}-tree-${entries}`)]);
      };
      try {
        await tui.waitFor((screen) => footer(screen) && screen.includes(lastText), { what: `${side}'s editor after the resume`, stableMs: 500, timeoutMs: 300_000 });
        tui.type("/tree");
        await tui.waitFor((screen) => screen.includes("/tree"), { what: `${side}'s /tree typed` });
        tui.press("Enter");
        await shot("opened", (screen) => screen.includes("Session Tree") && counter(screen));
        for (const [what, key, text, accept] of TREE_STEPS) {
          if (key === "type") tui.type(text);
          else tui.press(key);
          await shot(what, accept);
        }
        tui.press("Escape");
        await shot("closed", (screen) => !screen.includes("Session Tree") && footer(screen));
      } finally {
        tui.kill();
      }
      shots[side] = taken;
    }
    assert.equal(shots["treelog-pi"].length, shots.pi.length);
    shots.pi.forEach(([what, screen], at) => {
      assert.equal(shots["treelog-pi"][at][1], screen, `the screen after ${what}`);
    });
  });
}

test("/resume's list of a folder with a big session and 1,000 small ones: pi's screens, twice", { skip: tmuxMissing, timeout: 900_000 }, async () => {
  // The 1k session is over 1 MiB: treelog-pi keeps its summary at the first list and answers
  // the second from it.
  const source = await piSession(1000, root);
  const shots = {};
  for (const side of SIDES) {
    const dir = join(root, `${side}-resume`);
    const file = join(dir, "session.jsonl");
    await copySession(source, file, project);
    writeSmallSessions(dir, source, project);
    const [program, args] = command(side, [...MODEL_ARGS, "--session", file]);
    const tui = startTmux({ dir: root, name: `resume${side.replace("-", "")}`, file: program, args, cwd: project, env });
    const taken = [];
    try {
      await tui.waitFor(footer, { what: `${side}'s editor`, stableMs: 500, timeoutMs: 300_000 });
      for (const round of ["first", "second"]) {
        tui.type("/resume");
        await tui.waitFor((screen) => screen.includes("/resume"), { what: `${side}'s /resume typed` });
        tui.press("Enter");
        const listed = (screen) => Number(/\(\d+\/(\d+)\)/.exec(screen)?.[1] ?? 0) > 1000 && !screen.includes("Loading");
        taken.push(normalised(await tui.waitFor(listed, { what: `${side}'s ${round} list`, stableMs: 800, timeoutMs: 300_000 }), `${side}-resume`));
        tui.press("Down");
        taken.push(normalised(await tui.waitFor((screen) => screen.includes("(2/"), { what: `${side}'s ${round} list, down`, stableMs: 500 }), `${side}-resume`));
        tui.press("Escape");
        await tui.waitFor((screen) => footer(screen) && !screen.includes("Loading"), { what: `${side}'s editor after the list`, stableMs: 500 });
      }
    } finally {
      tui.kill();
    }
    shots[side] = taken;
  }
  ["first list", "first list, down", "second list", "second list, down"].forEach((what, at) => {
    assert.equal(shots["treelog-pi"][at], shots.pi[at], `the screen of the ${what}`);
  });
  // treelog-pi kept the big session's summary (and only the big one's) in its cache folder.
  const kept = readdirSync(join(root, "cache", "treelog", "listing")).filter((name) => name.startsWith("summary-"));
  assert.equal(kept.length, 1, "one kept summary");
});
