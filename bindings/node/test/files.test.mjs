// The file and directory side of pi's session-manager module against pi 1.6.0 and 0.73.1:
// default directories and file names, finding sessions (continueRecent, findMostRecentSession,
// findById), switching files (setSessionFile, newSession, open with sessionDir and
// cwdOverride), inMemory, and the errors thrown. Each scenario runs on every side in its own
// directory with the same clock and ids; answers are compared with each side's directory
// written as "<root>". Where 0.73.1 differs from 1.6.0, treelog answers as 1.6.0 does, and the
// test says so. Also: every export and public method of both pis exists in the package.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  clock, copies, installFakeClock, installSeededUuids, pi, pi073, prng, restoreRandomUuids, sameJson, tempDir, thrown,
  treelog,
} from "./helpers.mjs";

const START_MS = Date.UTC(2025, 4, 6, 7, 8, 9, 10);
const SIDES = { "1.6.0": pi, "0.73.1": pi073, treelog };

/**
 * Runs `body(module, root, name)` on each side named in `names` with the same fake clock, ids
 * and PI_CODING_AGENT_DIR (under its own root); returns each side's answer as JSON with its
 * root written "<root>". A throw is answered as { threw: message }.
 */
function onSides(body, names = Object.keys(SIDES)) {
  const answers = {};
  const savedAgentDir = process.env.PI_CODING_AGENT_DIR;
  try {
    for (const name of names) {
      const root = tempDir("treelog-files-");
      installFakeClock(START_MS);
      installSeededUuids(prng(42));
      process.env.PI_CODING_AGENT_DIR = join(root, "agent");
      let answer;
      try {
        answer = body(SIDES[name], root, name);
      } catch (error) {
        answer = { threw: error.message };
      }
      answers[name] = JSON.parse(JSON.stringify(answer ?? null).replaceAll(root, "<root>"));
    }
  } finally {
    restoreRandomUuids();
    clock.stop();
    if (savedAgentDir === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = savedAgentDir;
  }
  return answers;
}

/** A session's id with uuidv7's random part (drawn by each side its own way) masked. */
const maskedSessionIds = (text) => text.replaceAll(/([0-9a-f]{8}-[0-9a-f]{4})-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}/g, "$1-7<random>");

/** A session file written by hand: a header for `cwd` (or `headerLine`), one user message. */
function sessionFile(path, { id, cwd, mtimeS, headerLine }) {
  mkdirSync(join(path, ".."), { recursive: true });
  const header = headerLine ?? JSON.stringify({ type: "session", version: 3, id, timestamp: "2025-01-01T00:00:00.000Z", cwd });
  const entry = JSON.stringify({ type: "message", id: "m1", parentId: null, timestamp: "2025-01-01T00:00:01.000Z", message: { role: "user", content: `hi from ${id}`, timestamp: 1 } });
  writeFileSync(path, `${header}\n${entry}\n`);
  if (mtimeS !== undefined) utimesSync(path, mtimeS, mtimeS);
  return path;
}

/**
 * A session directory holding sessions of two cwds at known mtimes, the newest of all a file
 * without a valid header, and a file that is not .jsonl.
 */
function populate(dir) {
  sessionFile(join(dir, "a-old.jsonl"), { id: "a-old", cwd: "/work/a", mtimeS: 1000 });
  sessionFile(join(dir, "a-new.jsonl"), { id: "a-new", cwd: "/work/a", mtimeS: 2000 });
  sessionFile(join(dir, "b-newer.jsonl"), { id: "b-newer", cwd: "/work/b", mtimeS: 3000 });
  sessionFile(join(dir, "broken.jsonl"), { id: "broken", headerLine: "not json", mtimeS: 4000 });
  sessionFile(join(dir, "notes.txt"), { id: "notes", cwd: "/work/a", mtimeS: 5000 });
}

/** What a manager says about where it lives and what it holds. */
function describe(sm) {
  return {
    cwd: sm.getCwd(), dir: sm.getSessionDir(), file: sm.getSessionFile() ?? null, id: sm.getSessionId(),
    persisted: sm.isPersisted(), entries: sm.getEntries().length, written: sm.getSessionFile() ? existsSync(sm.getSessionFile()) : false,
    usesDefault: typeof sm.usesDefaultSessionDir === "function" ? sm.usesDefaultSessionDir() : "(no such method)",
  };
}

/** treelog's answer is 1.6.0's; and 0.73.1's too unless `differs` (then it is not). */
function agree(answers, what, { differs = false } = {}) {
  sameJson(answers.treelog, answers["1.6.0"], `${what}: treelog and 1.6.0`);
  if (!("0.73.1" in answers)) return;
  if (differs) assert.notDeepEqual(answers["0.73.1"], answers["1.6.0"], `${what}: 0.73.1 was expected to differ`);
  else sameJson(answers["0.73.1"], answers["1.6.0"], `${what}: 0.73.1 and 1.6.0`);
}

test("getDefaultSessionDir: the same directory under the agent dir, created; a relative cwd resolved by 1.6.0 and treelog only", () => {
  const absolute = onSides((module, root) => {
    const given = module.getDefaultSessionDir("/work/my project:1", join(root, "agent-x"));
    const fromEnv = module.getDefaultSessionDir("/work/p");
    return { given, fromEnv, created: existsSync(given) && existsSync(fromEnv) };
  });
  agree(absolute, "absolute cwd");
  assert.equal(absolute.treelog.given, "<root>/agent-x/sessions/--work-my project-1--");
  assert.equal(absolute.treelog.fromEnv, "<root>/agent/sessions/--work-p--");
  const relative = onSides((module, root) => module.getDefaultSessionDir("rel/dir", join(root, "agent-x")));
  agree(relative, "relative cwd", { differs: true });
});

test("create without a sessionDir: the default directory, pi's file name, nothing written yet", () => {
  const answers = onSides((module) => {
    const sm = module.SessionManager.create("/work/project");
    return { ...describe(sm), file: maskedSessionIds(sm.getSessionFile()), id: maskedSessionIds(sm.getSessionId()) };
  });
  // usesDefaultSessionDir is 1.6.0's only.
  agree(answers, "create", { differs: true });
  assert.match(answers.treelog.file, /^<root>\/agent\/sessions\/--work-project--\/2025-05-06T07-08-09-010Z_[0-9a-f-]+<random>\.jsonl$/);
  assert.equal(answers.treelog.written, false);
  assert.equal(answers.treelog.usesDefault, true);
  const { usesDefault, ...rest } = answers["0.73.1"];
  const { usesDefault: _, ...ours } = answers.treelog;
  sameJson(ours, rest, "create: treelog and 0.73.1 but usesDefaultSessionDir");
  assert.equal(usesDefault, "(no such method)");
});

test("findMostRecentSession: the newest valid .jsonl (of the cwd, when given); null for no directory", () => {
  const answers = onSides((module, root) => {
    const dir = join(root, "sessions");
    populate(dir);
    return {
      any: module.findMostRecentSession(dir),
      ofA: module.findMostRecentSession(dir, "/work/a"),
      missing: module.findMostRecentSession(join(root, "nowhere")),
      empty: (mkdirSync(join(root, "empty")), module.findMostRecentSession(join(root, "empty"))),
    };
  });
  // 0.73.1 takes no cwd: its `ofA` is the newest of any cwd.
  agree(answers, "findMostRecentSession", { differs: true });
  assert.deepEqual(answers.treelog, { any: "<root>/sessions/b-newer.jsonl", ofA: "<root>/sessions/a-new.jsonl", missing: null, empty: null });
  assert.equal(answers["0.73.1"].ofA, "<root>/sessions/b-newer.jsonl");
});

test("findMostRecentSession: a header line longer than 512 bytes is found by 1.6.0 and treelog, not by 0.73.1", () => {
  const answers = onSides((module, root) => {
    const dir = join(root, "sessions");
    sessionFile(join(dir, "long.jsonl"), { id: "long", cwd: `/work/${"x".repeat(600)}`, mtimeS: 2000 });
    sessionFile(join(dir, "short.jsonl"), { id: "short", cwd: "/work/a", mtimeS: 1000 });
    return module.findMostRecentSession(dir);
  });
  agree(answers, "long header", { differs: true });
  assert.equal(answers.treelog, "<root>/sessions/long.jsonl");
  assert.equal(answers["0.73.1"], "<root>/sessions/short.jsonl");
});

test("continueRecent: the newest session of this cwd in a sessionDir of its own (1.6.0, treelog), of any cwd in 0.73.1", () => {
  const answers = onSides((module, root) => {
    const dir = join(root, "sessions");
    populate(dir);
    return describe(module.SessionManager.continueRecent("/work/a", dir));
  });
  agree(answers, "continueRecent with a sessionDir", { differs: true });
  assert.equal(answers.treelog.file, "<root>/sessions/a-new.jsonl");
  assert.equal(answers.treelog.entries, 1);
  assert.equal(answers["0.73.1"].file, "<root>/sessions/b-newer.jsonl");
});

test("continueRecent: in the default directory, the newest valid session, whatever its cwd; a new unwritten one in an empty directory", () => {
  const answers = onSides((module, root) => {
    const dir = module.getDefaultSessionDir("/work/a");
    populate(dir);
    const found = describe(module.SessionManager.continueRecent("/work/a"));
    const fresh = module.SessionManager.continueRecent("/work/c");
    return { found, fresh: { ...describe(fresh), file: maskedSessionIds(fresh.getSessionFile()), id: "(drawn)", usesDefault: null } };
  });
  const withoutUsesDefault = (answer) => ({ ...answer, found: { ...answer.found, usesDefault: null } });
  sameJson(answers.treelog, answers["1.6.0"], "continueRecent in the default directory");
  sameJson(withoutUsesDefault(answers.treelog), withoutUsesDefault(answers["0.73.1"]), "continueRecent: 0.73.1");
  assert.equal(answers.treelog.found.file, "<root>/agent/sessions/--work-a--/b-newer.jsonl");
  assert.equal(answers.treelog.fresh.written, false);
  assert.equal(answers.treelog.fresh.entries, 0);
});

test("findById (1.6.0): the file whose header has the id; in a sessionDir of its own, only of this cwd", () => {
  const answers = onSides((module, root) => {
    const dir = join(root, "sessions");
    populate(dir);
    const defaultDir = module.getDefaultSessionDir("/work/a");
    sessionFile(join(defaultDir, "elsewhere.jsonl"), { id: "elsewhere", cwd: "/work/z" });
    return {
      found: module.SessionManager.findById("/work/a", "a-old", dir),
      otherCwd: module.SessionManager.findById("/work/a", "b-newer", dir),
      broken: module.SessionManager.findById("/work/a", "broken", dir),
      absent: module.SessionManager.findById("/work/a", "nope", dir),
      noDir: module.SessionManager.findById("/work/a", "a-old", join(root, "nowhere")),
      defaultDir: module.SessionManager.findById("/work/a", "elsewhere"),
    };
  }, ["1.6.0", "treelog"]);
  agree(answers, "findById");
  assert.deepEqual(answers.treelog, {
    found: "<root>/sessions/a-old.jsonl", defaultDir: "<root>/agent/sessions/--work-a--/elsewhere.jsonl",
  });
});

test("open: sessionDir and cwdOverride; a path that does not exist gives a new session on that path, unwritten", () => {
  const answers = onSides((module, root) => {
    const file = sessionFile(join(root, "sessions", "s.jsonl"), { id: "s", cwd: "/work/a" });
    const plain = describe(module.SessionManager.open(file));
    const moved = describe(module.SessionManager.open(file, join(root, "elsewhere"), "/work/override"));
    const fresh = module.SessionManager.open(join(root, "sessions", "new.jsonl"));
    return { plain, moved, fresh: { ...describe(fresh), id: "(drawn)" }, madeDir: existsSync(join(root, "elsewhere")) };
  });
  agree(answers, "open", { differs: true }); // usesDefaultSessionDir
  const noUsesDefault = (answer) => JSON.parse(JSON.stringify(answer).replaceAll(/"usesDefault":(false|true|"\(no such method\)")/g, '"usesDefault":null'));
  sameJson(noUsesDefault(answers.treelog), noUsesDefault(answers["0.73.1"]), "open: 0.73.1");
  assert.equal(answers.treelog.moved.cwd, "/work/override");
  assert.equal(answers.treelog.moved.dir, "<root>/elsewhere");
  assert.equal(answers.treelog.fresh.file, "<root>/sessions/new.jsonl");
  assert.equal(answers.treelog.fresh.written, false);
});

test("setSessionFile: an existing session, a new path, an empty file (header written at once), a file without a header (refused, kept)", () => {
  const answers = onSides((module, root, name) => {
    const dir = join(root, "sessions");
    const sm = module.SessionManager.create("/work/a", dir);
    const existing = sessionFile(join(dir, "existing.jsonl"), { id: "existing", cwd: "/work/a" });
    sm.setSessionFile(existing);
    const onExisting = describe(sm);
    sm.setSessionFile(join(dir, "new.jsonl"));
    const onNew = { ...describe(sm), id: "(drawn)" };
    const empty = join(dir, "empty.jsonl");
    writeFileSync(empty, "");
    sm.setSessionFile(empty);
    const onEmpty = { ...describe(sm), id: "(drawn)", bytes: maskedSessionIds(readFileSync(empty, "utf8")) };
    const broken = join(dir, "broken.jsonl");
    writeFileSync(broken, "garbage\n");
    const error = thrown(() => sm.setSessionFile(broken));
    const onBroken = { threw: Boolean(error), kept: readFileSync(broken, "utf8") === "garbage\n" };
    if (name === "treelog") assert.equal(error?.code, "TREELOG_NOT_A_SESSION");
    return { onExisting, onNew, onEmpty, onBroken };
  });
  sameJson(answers.treelog, answers["1.6.0"], "setSessionFile");
  assert.deepEqual(answers.treelog.onBroken, { threw: true, kept: true });
  assert.equal(answers.treelog.onEmpty.written, true);
  assert.match(answers.treelog.onEmpty.bytes, /^\{"type":"session","version":3,"id":"[^"]+","timestamp":"2025-05-06T07:08:09.010Z","cwd":"\/work\/a"\}\n$/);
  // 0.73.1 rewrites the header-less file (pi073.test.mjs) and has no usesDefaultSessionDir.
  assert.deepEqual(answers["0.73.1"].onBroken, { threw: false, kept: false });
});

test("newSession: its file name and header; an id pi 1.6.0 refuses is refused (0.73.1 takes any id)", () => {
  const answers = onSides((module, root) => {
    const sm = module.SessionManager.create("/work/a", join(root, "sessions"));
    const path = sm.newSession({ id: "chosen-id", parentSession: "/parent.jsonl" });
    const header = sm.getHeader();
    const refused = thrown(() => sm.newSession({ id: "no spaces" }));
    const memory = module.SessionManager.inMemory("/work/m").newSession({ id: "in-memory" });
    return { path, header, refused: refused?.message ?? null, memory: memory ?? null };
  });
  sameJson(answers.treelog, answers["1.6.0"], "newSession");
  assert.equal(answers.treelog.path, "<root>/sessions/2025-05-06T07-08-09-010Z_chosen-id.jsonl");
  assert.match(answers.treelog.refused, /^Session id must be non-empty/);
  const { refused, ...rest } = answers["0.73.1"];
  const { refused: _, ...ours } = answers.treelog;
  sameJson(ours, rest, "newSession: 0.73.1 but the refusal");
  assert.equal(refused, null);
});

test("inMemory: no file, no directory; 1.6.0's options and entries", () => {
  const { forPi } = copies("pi16-gen-a");
  const entries = pi.loadEntriesFromFile(forPi);
  const answers = onSides((module) => {
    const plain = module.SessionManager.inMemory("/work/m");
    // A copy each: pi keeps the caller's array as its own and appends to it.
    const given = module.SessionManager.inMemory("/work/m", { id: "mem" }, structuredClone(entries));
    given.appendMessage({ role: "user", content: "more", timestamp: 5 });
    return {
      plain: { ...describe(plain), id: "(drawn)" },
      given: { ...describe(given), header: given.getHeader(), context: given.buildSessionContext(), tree: given.getTree() },
    };
  }, ["1.6.0", "treelog"]);
  agree(answers, "inMemory");
  assert.equal(answers.treelog.plain.file, null);
  assert.equal(answers.treelog.plain.dir, "");
  assert.equal(answers.treelog.given.entries, entries.length); // less the header, plus the append
});

test("forkFrom: a missing, empty or header-less source is refused by every side", () => {
  const answers = onSides((module, root) => {
    const empty = join(root, "empty.jsonl");
    writeFileSync(empty, "");
    const broken = join(root, "broken.jsonl");
    writeFileSync(broken, "garbage\n");
    const outcome = (path) => {
      const error = thrown(() => module.SessionManager.forkFrom(path, "/work/t", join(root, "forks")));
      return error ? "refused" : "accepted";
    };
    const forks = () => (existsSync(join(root, "forks")) ? readdirSync(join(root, "forks")).length : 0);
    return { missing: outcome(join(root, "missing.jsonl")), empty: outcome(empty), broken: outcome(broken), forksWritten: forks() };
  });
  agree(answers, "forkFrom refusals");
  assert.deepEqual(answers.treelog, { missing: "refused", empty: "refused", broken: "refused", forksWritten: 0 });
});

test("every export and every public method of pi 1.6.0 and 0.73.1 exists in the package", () => {
  const notOffered = new Set(["_persist"]); // pi's internal write step, public only in its .d.ts
  const ours = {
    exports: new Set(Object.keys(treelog)),
    statics: new Set(Object.getOwnPropertyNames(treelog.SessionManager)),
    methods: new Set(Object.getOwnPropertyNames(treelog.SessionManager.prototype)),
  };
  const missing = [];
  for (const [version, module] of [["1.6.0", pi], ["0.73.1", pi073]]) {
    for (const name of Object.keys(module)) if (!ours.exports.has(name)) missing.push(`${version} export ${name}`);
    for (const name of Object.getOwnPropertyNames(module.SessionManager)) {
      if (typeof module.SessionManager[name] === "function" && !ours.statics.has(name)) missing.push(`${version} static ${name}`);
    }
    for (const name of Object.getOwnPropertyNames(module.SessionManager.prototype)) {
      if (name === "constructor" || notOffered.has(name)) continue;
      // pi's private methods (`private` in its .d.ts) are named with a leading underscore.
      if (name.startsWith("_")) continue;
      if (!ours.methods.has(name)) missing.push(`${version} method ${name}`);
    }
  }
  assert.deepEqual(missing, []);
});
