// The write path against pi 0.73.1 (@mariozechner/pi-coding-agent, the last release under that
// name): the seeded sequences of sequence.mjs on the files 0.73.1 writes, and one test per
// behaviour where 0.73.1 and 1.6.0 differ, each showing what 0.73.1 does, what 1.6.0 does,
// and that treelog does what 1.6.0 does (the package README's "pi 0.73.1" section lists them).
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  clock, installFakeClock, installSeededUuids, pi, pi073, prng, restoreRandomUuids, sameJson, tempDir, thrown, treelog,
} from "./helpers.mjs";
import { runSequence, START_MS } from "./sequence.mjs";

for (const seed of [11, 12, 13, 14]) {
  test(`pi 0.73.1, seeded sequence ${seed}: same bytes and answers after every step`, () => {
    runSequence(seed, 160, "0.73.1");
  });
}

const MODULES = { "0.73.1": pi073, "1.6.0": pi, treelog };

/**
 * Runs `script(module, dir)` on 0.73.1, 1.6.0 and treelog, each in its own directory, with the
 * same clock and ids; returns what each gave back.
 */
function onAll(script) {
  const results = {};
  installFakeClock(START_MS);
  try {
    for (const [name, module] of Object.entries(MODULES)) {
      installSeededUuids(prng(7));
      clock.advance(0);
      const dir = tempDir();
      results[name] = { dir, ...script(module, dir) };
      installFakeClock(START_MS);
    }
  } finally {
    restoreRandomUuids();
    clock.stop();
  }
  return results;
}

const assistant = (text, timestamp) => ({
  role: "assistant", content: [{ type: "text", text }], provider: "faux", model: "m1", timestamp,
});
const jsonlIn = (dir) => readdirSync(dir).filter((name) => name.endsWith(".jsonl"));

test("a user message alone: 0.73.1 writes nothing yet, 1.6.0 and treelog write the file", () => {
  const results = onAll((module, dir) => {
    const sm = module.SessionManager.create("/work/project", dir);
    sm.newSession({ id: "s1" });
    sm.appendMessage({ role: "user", content: "hi", timestamp: 1 });
    const afterUser = jsonlIn(dir).length;
    sm.appendMessage(assistant("hello", 2));
    return { afterUser, text: readFileSync(sm.getSessionFile(), "utf8") };
  });
  assert.equal(results["0.73.1"].afterUser, 0);
  assert.equal(results["1.6.0"].afterUser, 1);
  assert.equal(results.treelog.afterUser, 1);
  // Once the assistant answers, all three hold the same bytes.
  assert.equal(results.treelog.text, results["1.6.0"].text);
  assert.equal(results.treelog.text, results["0.73.1"].text);
});

test("a file without a valid header: 0.73.1 truncates and rewrites it, 1.6.0 and treelog refuse it and keep its bytes", () => {
  const garbage = "not a header\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n";
  const outcome = {};
  for (const [name, module] of Object.entries(MODULES)) {
    const file = join(tempDir(), "broken.jsonl");
    writeFileSync(file, garbage);
    const error = thrown(() => module.SessionManager.open(file));
    outcome[name] = { error, text: readFileSync(file, "utf8") };
  }
  assert.equal(outcome["0.73.1"].error, undefined);
  assert.notEqual(outcome["0.73.1"].text, garbage);
  assert.equal(JSON.parse(outcome["0.73.1"].text.split("\n")[0]).type, "session");
  assert.match(outcome["1.6.0"].error?.message ?? "", /not a valid .* session/);
  assert.equal(outcome["1.6.0"].text, garbage);
  assert.equal(outcome.treelog.error?.code, "TREELOG_NOT_A_SESSION");
  assert.match(outcome.treelog.error.message, /not a valid pi session: .*broken\.jsonl/);
  assert.equal(outcome.treelog.text, garbage);
});

test("branchWithSummary's fromId: 0.73.1 names the target, 1.6.0 and treelog the leaf it leaves", () => {
  const results = onAll((module, dir) => {
    const sm = module.SessionManager.create("/work/project", dir);
    sm.newSession({ id: "s1" });
    const first = sm.appendMessage({ role: "user", content: "one", timestamp: 1 });
    sm.appendMessage(assistant("two", 2));
    const left = sm.appendMessage({ role: "user", content: "three", timestamp: 3 });
    const summary = sm.branchWithSummary(first, "went back");
    const root = sm.branchWithSummary(null, "from the root");
    return { first, left, summary: sm.getEntry(summary), root: sm.getEntry(root), text: readFileSync(sm.getSessionFile(), "utf8") };
  });
  const { first, left } = results["1.6.0"];
  assert.equal(results["0.73.1"].summary.fromId, first);
  assert.equal(results["0.73.1"].root.fromId, "root");
  assert.equal(results["1.6.0"].summary.fromId, left);
  assert.equal(results["1.6.0"].root.fromId, results["1.6.0"].summary.id);
  assert.equal(results.treelog.text, results["1.6.0"].text);
  assert.notEqual(results.treelog.text, results["0.73.1"].text);
});

test("appendSessionInfo: 0.73.1 only trims the name, 1.6.0 and treelog also fold its line breaks", () => {
  const results = onAll((module, dir) => {
    const sm = module.SessionManager.create("/work/project", dir);
    sm.appendSessionInfo("  two\r\nlines  ");
    return { entry: sm.getLeafEntry(), name: sm.getSessionName() };
  });
  assert.equal(results["0.73.1"].entry.name, "two\r\nlines");
  assert.equal(results["1.6.0"].entry.name, "two lines");
  sameJson(results.treelog.entry, results["1.6.0"].entry, "session_info entry");
  assert.equal(results.treelog.name, "two lines");
});

test("createBranchedSession: 0.73.1 keeps parent ids that point at dropped labels and waits for an assistant message; 1.6.0 and treelog re-link past them", () => {
  const results = onAll((module, dir) => {
    const sm = module.SessionManager.create("/work/project", dir);
    sm.newSession({ id: "s1" });
    const a = sm.appendMessage({ role: "user", content: "one", timestamp: 1 });
    const label = sm.appendLabelChange(a, "first");
    sm.appendCompaction("kept from the label", label, 10);
    const b = sm.appendMessage(assistant("two", 2));
    sm.appendLabelChange(b, "second");
    sm.appendLabelChange(a, "first again");
    const file = sm.createBranchedSession(b);
    const text = readFileSync(file, "utf8");
    // A branch of a user message only: written at once by 1.6.0, not by 0.73.1.
    const userOnly = sm.createBranchedSession(a);
    return { a, label, text, userOnlyWritten: existsSync(userOnly) };
  });
  const body = (text) => text.split("\n").slice(1).join("\n");
  const compaction = (text) => text.split("\n").filter(Boolean).map((line) => JSON.parse(line)).find((entry) => entry.type === "compaction");
  const old = results["0.73.1"];
  assert.equal(compaction(old.text).parentId, old.label, "0.73.1: the compaction's parent is the dropped label");
  assert.equal(compaction(old.text).firstKeptEntryId, old.label, "0.73.1: its kept id is the dropped label");
  const current = results["1.6.0"];
  assert.equal(compaction(current.text).parentId, current.a, "1.6.0: the compaction's parent is the message");
  assert.equal(compaction(current.text).firstKeptEntryId, compaction(current.text).id, "1.6.0: its kept id re-pointed");
  assert.equal(body(results.treelog.text), body(current.text));
  assert.equal(old.userOnlyWritten, false);
  assert.equal(current.userOnlyWritten, true);
  assert.equal(results.treelog.userOnlyWritten, true);
});

test("appendCompaction after a system message: 1.6.0 and treelog record it as systemMessage, 0.73.1 (no system messages) does not", () => {
  const results = onAll((module, dir) => {
    const sm = module.SessionManager.create("/work/project", dir);
    sm.newSession({ id: "s1" });
    sm.appendMessage({ role: "system", content: "be brief", timestamp: 1 });
    sm.appendMessage({ role: "user", content: "one", timestamp: 2 });
    sm.appendMessage(assistant("two", 3));
    const id = sm.appendCompaction("so far", null, 10);
    return { compaction: sm.getEntry(id), text: readFileSync(sm.getSessionFile(), "utf8") };
  });
  assert.equal(results["0.73.1"].compaction.systemMessage, undefined);
  assert.equal(results["1.6.0"].compaction.systemMessage?.content, "be brief");
  assert.equal(results.treelog.text, results["1.6.0"].text);
});

test("a relative cwd: 0.73.1 keeps it as given, 1.6.0 and treelog resolve it", () => {
  const results = onAll((module) => {
    const sm = module.SessionManager.inMemory("relative/dir");
    return { cwd: sm.getCwd(), headerCwd: sm.getHeader().cwd };
  });
  assert.equal(results["0.73.1"].cwd, "relative/dir");
  assert.equal(results["1.6.0"].cwd, join(process.cwd(), "relative/dir"));
  assert.equal(results.treelog.cwd, results["1.6.0"].cwd);
  assert.equal(results.treelog.headerCwd, results["1.6.0"].headerCwd);
});
