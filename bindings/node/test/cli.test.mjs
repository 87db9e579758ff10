// treelog-pi (bin/treelog-pi.mjs) and `node --import treelog/pi-hook`: pi 1.6.0's own CLI on
// treelog's SessionManager, against pi's own bundled bin (dist/bundle/cli.js, what `pi` runs),
// each on its own copy of the same pi-written session, both answered by the same fake model on
// 127.0.0.1 (test/cli/fixture.mjs). Print mode with --session and with --continue, RPC mode,
// the hook without the launcher, and the version check. The terminal UI is in cli-tui.test.mjs.
//
// TREELOG_TEST_BIG=1 (as CI runs them) adds print and RPC mode on a session of 100,000
// entries (bench/.data's when present, else written by pi's own SessionManager first: seconds).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  ANSWER, MODEL_ARGS, NODE, PACKAGE, PI_ROOT, TREELOG_PI, command, copySession, makeAgentDir, piEnv, piSession, readJsonl, run,
  startFakeModel, startRpc, stripVolatile, tempDir,
} from "./cli/fixture.mjs";
import { DATA as TEST_DATA, pi, sameJson, treelog } from "./helpers.mjs";
import { findBundledSessionManager } from "../hook/pi.mjs";

const BIG = process.env.TREELOG_TEST_BIG === "1";
const SIDES = ["pi", "treelog-pi"];

let root;
let model;
let agentDir;
let project;
let env;

before(async () => {
  root = tempDir("treelog-cli-");
  model = await startFakeModel();
  agentDir = makeAgentDir(root, model.baseUrl);
  project = join(root, "project");
  mkdirSync(project);
  env = piEnv(root, agentDir);
});

after(async () => {
  await model?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A file's lines past the first `count`, parsed. */
const linesAfter = (file, count) => readJsonl(file).slice(count);
const lineCount = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean).length;

/**
 * pi's reopen of treelog-pi's file builds the context treelog's own reopen builds, and the
 * same as pi's reopen of pi's file but for the new turn's ids and timestamps.
 */
function sameReopenedContext(treelogFile, piFile) {
  const byPi = pi.SessionManager.open(treelogFile).buildSessionContext();
  const byTreelog = treelog.SessionManager.open(treelogFile).buildSessionContext();
  sameJson(byTreelog, byPi, "the context of treelog-pi's file, reopened by treelog and by pi");
  sameJson(stripVolatile(byPi), stripVolatile(pi.SessionManager.open(piFile).buildSessionContext()), "pi's reopened context of both files");
}

/** One print-mode turn by each side on its own copy of `source`; returns what each did. */
async function printTurnOnBoth(source, label, prompt, extraArgs = []) {
  const results = {};
  const lines = lineCount(source);
  for (const side of SIDES) {
    const file = join(root, label, side, "session.jsonl");
    await copySession(source, file, project);
    const [file0, args] = command(side, ["-p", prompt, ...MODEL_ARGS, "--session", file, ...extraArgs]);
    const result = await run(file0, args, { cwd: project, env });
    results[side] = { ...result, file, appended: linesAfter(file, lines) };
  }
  return results;
}

function checkPrintTurn(results, prompt) {
  for (const side of SIDES) {
    const { code, stdout, stderr } = results[side];
    assert.equal(code, 0, `${side} exits 0 (stderr: ${stderr})`);
    assert.equal(stdout, `${ANSWER}\n`, `${side} prints the answer`);
  }
  assert.equal(results["treelog-pi"].stderr, results.pi.stderr, "the same stderr");
  const [byPi, byTreelog] = SIDES.map((side) => results[side].appended);
  assert.ok(byPi.length >= 2, "pi appended the turn");
  const user = byTreelog.find((entry) => entry.type === "message" && entry.message.role === "user");
  assert.equal(user?.message.content[0]?.text ?? user?.message.content, prompt);
  const last = byTreelog.at(-1);
  assert.equal(last.message?.role, "assistant");
  assert.equal(last.message.content.find((part) => part.type === "text")?.text, ANSWER);
  sameJson(stripVolatile(byTreelog), stripVolatile(byPi), "the entries treelog-pi appended (but ids and times), against pi's");
  // The turn's parent links: a chain from the old leaf, the same shape on both sides.
  const shape = (entries) => entries.map((entry, i) => (i === 0 ? "root" : entry.parentId === entries[i - 1].id ? "chain" : "other"));
  assert.deepEqual(shape(byTreelog), shape(byPi));
  assert.ok(existsSync(`${results["treelog-pi"].file}.treelog`), "treelog-pi's copy has treelog's sidecar");
  assert.ok(!existsSync(`${results.pi.file}.treelog`), "pi's copy has none");
}

describe("treelog-pi, print mode", () => {
  test("-p --session on a pi-written session of 1,000 entries: pi's answer and turn", async () => {
    const source = await piSession(1000, root);
    const prompt = "What does the mock model say?";
    const results = await printTurnOnBoth(source, "print-1k", prompt);
    checkPrintTurn(results, prompt);
    // Both runs sent the model the same request (the whole context of the session).
    assert.equal(model.requests.length >= 2, true);
    sameJson(model.requests.at(-1), model.requests.at(-2), "the model's request from treelog-pi, against pi's");
    sameReopenedContext(results["treelog-pi"].file, results.pi.file);

    // A second turn on the same files: treelog-pi opens its sidecar, pi reads its file again;
    // treelog-pi now runs pi's unbundled CLI (TREELOG_PI_BUNDLE=0), the first turn its bundle.
    const again = {};
    for (const side of SIDES) {
      const { file } = results[side];
      const lines = lineCount(file);
      const [file0, args] = command(side, ["-p", "Once more.", ...MODEL_ARGS, "--session", file]);
      const turnEnv = side === "treelog-pi" ? { ...env, TREELOG_PI_BUNDLE: "0" } : env;
      again[side] = { ...(await run(file0, args, { cwd: project, env: turnEnv })), file, appended: linesAfter(file, lines) };
    }
    checkPrintTurn(again, "Once more.");
    sameReopenedContext(again["treelog-pi"].file, again.pi.file);
  });

  test("-p --continue --session-dir continues the most recent session of the folder", async () => {
    const source = await piSession(1000, root);
    const results = {};
    for (const side of SIDES) {
      const dir = join(root, "continue", side);
      const older = join(dir, "2026-01-01T00-00-00-000Z_older.jsonl");
      const newer = join(dir, "2026-01-02T00-00-00-000Z_newer.jsonl");
      await copySession(join(TEST_DATA, "pi16-gen-a.jsonl"), older, project);
      await copySession(source, newer, project);
      utimesSync(older, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
      const [olderLines, newerLines] = [lineCount(older), lineCount(newer)];
      const [file0, args] = command(side, ["-p", "Continue, please.", ...MODEL_ARGS, "--continue", "--session-dir", dir]);
      const result = await run(file0, args, { cwd: project, env });
      assert.equal(lineCount(older), olderLines, `${side} left the older session alone`);
      results[side] = { ...result, file: newer, appended: linesAfter(newer, newerLines) };
    }
    checkPrintTurn(results, "Continue, please.");
    sameReopenedContext(results["treelog-pi"].file, results.pi.file);
  });

  test("a session whose cwd is gone: the same refusal and exit code as pi's", async () => {
    const outcome = {};
    for (const side of SIDES) {
      const file = join(root, "gone", side, "session.jsonl");
      await copySession(join(TEST_DATA, "pi16-demo.jsonl"), file, join(root, "no-such-folder"));
      const [file0, args] = command(side, ["-p", "hello", ...MODEL_ARGS, "--session", file]);
      const { code, stdout, stderr } = await run(file0, args, { cwd: project, env });
      outcome[side] = { code, stdout, stderr: stderr.split(join(root, "gone", side)).join("<dir>") };
    }
    assert.equal(outcome.pi.code, 1);
    assert.deepEqual(outcome["treelog-pi"], outcome.pi);
  });

  test("node --import treelog/pi-hook <pi>/dist/cli.js: the hook without the launcher", async () => {
    const source = await piSession(1000, root);
    const file = join(root, "hook-only", "session.jsonl");
    await copySession(source, file, project);
    const lines = lineCount(file);
    // Run from the package's folder, where `treelog/pi-hook` resolves to this package.
    const { code, stdout, stderr } = await run(
      NODE,
      ["--import", "treelog/pi-hook", join(PI_ROOT, "dist/cli.js"), "-p", "Hooked?", ...MODEL_ARGS, "--session", file],
      { cwd: PACKAGE, env },
    );
    assert.equal(code, 0, stderr);
    assert.equal(stdout, `${ANSWER}\n`);
    assert.ok(existsSync(`${file}.treelog`), "treelog's sidecar: treelog's SessionManager wrote the turn");
    assert.equal(linesAfter(file, lines).at(-1).message.content[0].text, ANSWER);
    sameJson(pi.SessionManager.open(file).buildSessionContext(), treelog.SessionManager.open(file).buildSessionContext(), "reopened context");
  });

  test("an extension importing pi's package gets treelog's SessionManager (jiti's alias of pi's index)", async () => {
    const extensionAgentDir = makeAgentDir(join(root, "with-extension"), model.baseUrl);
    mkdirSync(join(extensionAgentDir, "extensions"));
    writeFileSync(join(extensionAgentDir, "extensions", "probe.ts"), [
      'import { SessionManager } from "@earendil-works/pi-coding-agent";',
      "export default function (pi: unknown) {",
      '  process.stderr.write(`probe: ${typeof (SessionManager as any).prototype.refresh === "function" ? "treelog" : "pi"}\\n`);',
      "}",
    ].join("\n"));
    const file = join(root, "extension", "session.jsonl");
    await copySession(join(TEST_DATA, "pi16-demo.jsonl"), file, project);
    const seen = {};
    for (const side of SIDES) {
      const [file0, args] = command(side, ["-p", "hi", ...MODEL_ARGS, "--session", file]);
      const result = await run(file0, args, { cwd: project, env: { ...env, PI_CODING_AGENT_DIR: extensionAgentDir } });
      assert.equal(result.code, 0, result.stderr);
      seen[side] = result.stderr.trim();
    }
    assert.deepEqual(seen, { pi: "probe: pi", "treelog-pi": "probe: treelog" });
  });

  test("100,000 entries (TREELOG_TEST_BIG=1)", { skip: !BIG && "set TREELOG_TEST_BIG=1", timeout: 30 * 60_000 }, async () => {
    const source = await piSession(100000, root);
    const prompt = "A big one.";
    const results = await printTurnOnBoth(source, "print-100k", prompt);
    checkPrintTurn(results, prompt);
    sameReopenedContext(results["treelog-pi"].file, results.pi.file);
    for (const side of SIDES) rmSync(join(root, "print-100k", side), { recursive: true, force: true });
  });
});

// ---- RPC mode ----

/**
 * One RPC session on `file`: get_state, a prompt (to agent_settled), get_entries, get_tree,
 * get_messages, get_last_assistant_text, switch_session to `other`, then get_state,
 * get_entries and get_tree again; the answers' data, the prompt's event types, and how pi
 * ended on SIGTERM.
 */
async function rpcSession(side, file, other) {
  const [file0, args] = command(side, ["--mode", "rpc", ...MODEL_ARGS, "--session", file]);
  const rpc = startRpc(file0, args, { cwd: project, env });
  const answers = [];
  const ask = async (commandObject) => {
    const response = await rpc.send(commandObject);
    // pi 1.6.0's own get_tree fails on a path deeper than about 2,200 entries (the JSON of
    // its nested tree overflows the stack): its failure is an answer to compare.
    if (commandObject.type === "get_tree" && !response.success) {
      answers.push([commandObject.type, { failed: response.error }]);
      return undefined;
    }
    assert.equal(response.success, true, `${side} ${commandObject.type}: ${response.error} ${rpc.stderr}`);
    answers.push([commandObject.type, response.data]);
    return response.data;
  };
  try {
    await ask({ type: "get_state" });
    const firstEvent = rpc.events.length;
    const accepted = await ask({ type: "prompt", message: "Hello over RPC." });
    assert.equal(accepted.disposition, "started");
    await rpc.waitFor((event) => event.type === "agent_settled");
    const eventTypes = rpc.events.slice(firstEvent).filter((event) => event.type !== "response").map((event) => event.type);
    await ask({ type: "get_entries" });
    await ask({ type: "get_tree" });
    await ask({ type: "get_messages" });
    const { text } = await ask({ type: "get_last_assistant_text" });
    assert.equal(text, ANSWER);
    await ask({ type: "switch_session", sessionPath: other });
    await ask({ type: "get_state" });
    await ask({ type: "get_entries" });
    await ask({ type: "get_tree" });
    rpc.child.kill("SIGTERM");
    const exit = await rpc.exited;
    return { answers, eventTypes, exit, stderr: rpc.stderr };
  } finally {
    rpc.child.kill("SIGKILL");
  }
}

/** JSON text of `value` with each of `from`'s strings turned into `to`'s. */
function renamed(value, from, to) {
  let text = JSON.stringify(value);
  from.forEach((name, i) => (text = text.split(name).join(to[i])));
  return JSON.parse(text);
}

/** `value` without the keys that hold times (timestamp, durationMs): they differ run to run. */
const withoutTimes = (value) => {
  if (Array.isArray(value)) return value.map(withoutTimes);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).filter(([key]) => key !== "timestamp" && key !== "durationMs").map(([key, inner]) => [key, withoutTimes(inner)]),
  );
};

/** RPC mode on both sides on a pi-written session of `entries` entries: the same answers. */
async function rpcOnBoth(entries) {
  const source = await piSession(entries, root);
  const lines = lineCount(source);
  const otherLines = lineCount(join(TEST_DATA, "pi16-gen-a.jsonl"));
  const outcome = {};
  for (const side of SIDES) {
    const dir = join(root, `rpc-${entries}`, side);
    const file = join(dir, "session.jsonl");
    const other = join(dir, "other.jsonl");
    await copySession(source, file, project);
    await copySession(join(TEST_DATA, "pi16-gen-a.jsonl"), other, project);
    const result = await rpcSession(side, file, other);
    // The new entries of both files (switching to `other` may append there: pi's model change).
    const newIds = [...linesAfter(file, lines), ...linesAfter(other, otherLines)].map((entry) => entry.id);
    outcome[side] = { ...result, dir, newIds };
  }
  const [byPi, byTreelog] = [outcome.pi, outcome["treelog-pi"]];
  assert.deepEqual(byTreelog.eventTypes, byPi.eventTypes, "the prompt's events");
  assert.ok(byPi.eventTypes.includes("agent_settled"));
  assert.deepEqual(byTreelog.exit, byPi.exit, "SIGTERM ends both alike");
  assert.equal(byTreelog.newIds.length, byPi.newIds.length, "the same number of new entries");
  assert.ok(byPi.newIds.length >= 2);
  // treelog-pi's answers with its new entries' ids turned into pi's, its folder into pi's.
  const comparable = renamed(byTreelog.answers, [byTreelog.dir, ...byTreelog.newIds], [byPi.dir, ...byPi.newIds]);
  assert.equal(comparable.length, byPi.answers.length);
  comparable.forEach(([type, data], i) => {
    assert.equal(type, byPi.answers[i][0]);
    sameJson(withoutTimes(data), withoutTimes(byPi.answers[i][1]), `${type} (answer ${i + 1}) of treelog-pi against pi's`);
  });
  assert.ok(existsSync(join(byTreelog.dir, "session.jsonl.treelog")));
  sameReopenedContext(join(byTreelog.dir, "session.jsonl"), join(byPi.dir, "session.jsonl"));
  for (const side of SIDES) rmSync(outcome[side].dir, { recursive: true, force: true });
}

test("treelog-pi --mode rpc: prompt, get_entries, get_tree, switch_session answer as pi's", () => rpcOnBoth(1000));

test("treelog-pi --mode rpc on 100,000 entries (TREELOG_TEST_BIG=1): the same answers as pi's", { skip: !BIG && "set TREELOG_TEST_BIG=1", timeout: 30 * 60_000 }, () =>
  rpcOnBoth(100000));

// ---- the version check and the hook, on fake pi packages ----

/**
 * A fake pi package of `version` in `dir`: its dist/cli.js prints what it was given (its
 * argv, and whether ./core/session-manager.js and ../dist/core/session-manager.js were
 * treelog's module: it exports `search`, pi's does not) and exits 7.
 */
function fakePi(dir, version, name = "@earendil-works/pi-coding-agent", engines = { node: ">=22.19.0" }) {
  mkdirSync(join(dir, "dist/core"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version, type: "module", engines }));
  writeFileSync(join(dir, "dist/core/session-manager.js"), "export const fake = true;\nexport class SessionManager {}\n");
  writeFileSync(join(dir, "dist/cli.js"), [
    'import * as near from "./core/session-manager.js";',
    'import * as far from "../dist/core/session-manager.js";',
    "const treelog = (m) => typeof m.search === 'function' && m.fake === undefined && typeof m.SessionManager.open === 'function';",
    "console.log(JSON.stringify({ argv: process.argv.slice(2), entry: process.argv[1], near: treelog(near), far: treelog(far) }));",
    "process.exitCode = 7;",
  ].join("\n"));
  return dir;
}

test("pi's bundle: the one chunk declaring its SessionManager is found; any other layout is not", () => {
  const found = findBundledSessionManager(PI_ROOT);
  assert.ok(found, "pi 1.6.0's bundle declares its SessionManager once");
  assert.equal(found.cli, join(PI_ROOT, "dist/bundle/cli.js"));
  assert.match(readFileSync(found.chunk, "utf8"), /var SessionManager=class _SessionManager\{/);
  // A bundle laid out otherwise (the class twice, or not at all): the unbundled CLI runs.
  const layouts = { twice: "var SessionManager=class _SessionManager{};var SessionManager=class _SessionManager{};", none: "export class SessionManager{}" };
  for (const [name, chunk] of Object.entries(layouts)) {
    const dir = join(root, `bundle-${name}`, "dist/bundle");
    mkdirSync(join(dir, "chunks"), { recursive: true });
    writeFileSync(join(dir, "cli.js"), 'import "./cli-runtime.js";\n');
    writeFileSync(join(dir, "cli-runtime.js"), 'import{main}from"./chunks/chunk-A.js";main();\n');
    writeFileSync(join(dir, "chunks/chunk-A.js"), `${chunk}export function main(){}\n`);
    assert.equal(findBundledSessionManager(join(root, `bundle-${name}`)), undefined, name);
  }
});

describe("treelog-pi's version check and discovery", () => {
  const launch = (args, { piRoot, cwd = project, extra = {} } = {}) =>
    run(NODE, [TREELOG_PI, ...args], { cwd, env: { ...env, TREELOG_PI_ROOT: piRoot, ...extra } });

  test("pi 1.7.0 is refused in one line, exit 1", async () => {
    const fake = fakePi(join(root, "fake-1.7.0"), "1.7.0");
    const { code, stdout, stderr } = await launch(["-p", "hi"], { piRoot: fake });
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.equal(stderr.split("\n").filter(Boolean).length, 1, stderr);
    assert.match(stderr, /^treelog-pi: pi 1\.7\.0 .*not supported; supported: pi 1\.6\.x \(--unsupported-pi runs it anyway\)\n$/);
  });

  test("--unsupported-pi runs it anyway with one warning, and is not passed on", async () => {
    const fake = fakePi(join(root, "fake-1.7.0b"), "1.7.0");
    const { code, stdout, stderr } = await launch(["-p", "--unsupported-pi", "hi", "--", "--unsupported-pi"], { piRoot: fake });
    assert.equal(code, 7, "pi's exit code");
    assert.equal(stderr.split("\n").filter(Boolean).length, 1, stderr);
    assert.match(stderr, /warning: pi 1\.7\.0 is not a supported version \(1\.6\.x\)/);
    assert.deepEqual(JSON.parse(stdout), {
      argv: ["-p", "hi", "--", "--unsupported-pi"], entry: join(fake, "dist/cli.js"), near: true, far: true,
    });
  });

  test("a supported fake pi (1.6.9) runs silently; both hook kinds redirect every path to pi's module", async () => {
    const fake = fakePi(join(root, "fake-1.6.9"), "1.6.9");
    for (const hooks of ["sync", "async"]) {
      const { code, stdout, stderr } = await launch(["a", "b"], { piRoot: fake, extra: { TREELOG_PI_HOOKS: hooks } });
      assert.equal(code, 7, stderr);
      assert.equal(stderr, "");
      assert.deepEqual(JSON.parse(stdout), { argv: ["a", "b"], entry: join(fake, "dist/cli.js"), near: true, far: true }, hooks);
    }
  });

  test("not pi at TREELOG_PI_ROOT, or no pi at all: one line, exit 1", async () => {
    const other = fakePi(join(root, "not-pi"), "1.6.0", "some-other-package");
    let result = await launch([], { piRoot: other });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^treelog-pi: .*not-pi holds some-other-package, not pi \(@earendil-works\/pi-coding-agent\)\n$/);
    result = await launch([], { piRoot: join(root, "nothing-here") });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^treelog-pi: no pi at .*nothing-here/);
  });

  test("a Node older than pi's engines field: one line, exit 1", async () => {
    const fake = fakePi(join(root, "fake-future-node"), "1.6.3", undefined, { node: ">= 99.0.0" });
    const { code, stdout, stderr } = await launch([], { piRoot: fake });
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.match(stderr, /^treelog-pi: pi 1\.6\.3 needs Node >=99\.0\.0, and this is Node v\d+\.\d+\.\d+ \(.*\)\n$/);
  });

  test("without TREELOG_PI_ROOT: the project's node_modules, also through npm's bin link", async () => {
    const app = join(root, "app");
    const fake = fakePi(join(app, "node_modules/@earendil-works/pi-coding-agent"), "1.6.2");
    mkdirSync(join(app, "src/deep"), { recursive: true });
    mkdirSync(join(app, "node_modules/.bin"), { recursive: true });
    symlinkSync(TREELOG_PI, join(app, "node_modules/.bin/treelog-pi"));
    const cleanEnv = { ...env };
    delete cleanEnv.TREELOG_PI_ROOT;
    for (const launcher of [TREELOG_PI, join(app, "node_modules/.bin/treelog-pi")]) {
      const { code, stdout, stderr } = await run(NODE, [launcher, "x"], { cwd: join(app, "src/deep"), env: cleanEnv });
      assert.equal(code, 7, stderr);
      assert.equal(JSON.parse(stdout).entry, join(fake, "dist/cli.js"));
    }
  });

  test("the resolve cache: written, then used, and dropped when a package changes", async () => {
    const app = join(root, "cache-app");
    const fake = fakePi(join(app, "node_modules/@earendil-works/pi-coding-agent"), "1.6.4");
    writeFileSync(join(fake, "dist/cli.js"), 'import which from "dep";\nconsole.log(which);\n');
    const dep = (main, text) => {
      rmSync(join(app, "node_modules/dep"), { recursive: true, force: true });
      mkdirSync(join(app, "node_modules/dep"), { recursive: true });
      writeFileSync(join(app, "node_modules/dep/package.json"), JSON.stringify({ name: "dep", type: "module", main }));
      writeFileSync(join(app, "node_modules/dep", main), `export default ${JSON.stringify(text)};\n`);
    };
    const cache = join(root, "cache-test");
    const go = () => run(NODE, [TREELOG_PI], { cwd: app, env: { ...env, TREELOG_PI_ROOT: fake, XDG_CACHE_HOME: cache } });
    dep("one.js", "one");
    assert.equal((await go()).stdout, "one\n");
    const saved = readdirSync(join(cache, "treelog")).filter((name) => /^resolve-[0-9a-f]{16}\.json$/.test(name));
    assert.equal(saved.length, 1, "one resolve cache file");
    const entries = JSON.parse(readFileSync(join(cache, "treelog", saved[0]), "utf8")).entries;
    assert.ok(entries.some(([, , specifier]) => specifier === "dep"), "the import of dep is kept");
    assert.equal((await go()).stdout, "one\n", "the cached run");
    // A new version of dep (its package.json changed, its entry file another): not the old file.
    dep("two.js", "two");
    writeFileSync(join(app, "node_modules/dep/one.js"), 'export default "stale";\n');
    assert.equal((await go()).stdout, "two\n");
  });

  test("the hook alone: version check, flag taken out, pi's bundle refused", async () => {
    const fake = fakePi(join(root, "fake-hook"), "1.7.1");
    const hook = ["--import", "treelog/pi-hook"];
    let result = await run(NODE, [...hook, join(fake, "dist/cli.js"), "x"], { cwd: PACKAGE, env: { ...env, TREELOG_PI_ROOT: "" } });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^treelog\/pi-hook: pi 1\.7\.1 .*not supported; supported: pi 1\.6\.x/);
    result = await run(NODE, [...hook, join(fake, "dist/cli.js"), "x", "--unsupported-pi", "y"], { cwd: PACKAGE, env: { ...env, TREELOG_PI_ROOT: "" } });
    assert.equal(result.code, 7, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { argv: ["x", "y"], entry: join(fake, "dist/cli.js"), near: true, far: true });
    result = await run(NODE, [...hook, join(PI_ROOT, "dist/bundle/cli.js"), "--version"], { cwd: PACKAGE, env: { ...env, TREELOG_PI_ROOT: "" } });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /pi's bundle, which holds its own SessionManager; run .*dist\/cli\.js instead/);
  });
});
