// The write path against pi 1.6.0: the seeded random sequences of sequence.mjs (every kind of
// append, branch, resetLeaf, branchWithSummary, labels, context edits, reopens, forks and
// createBranchedSession, on pi's SessionManager and treelog's side by side, the files
// byte-identical after every step), the rule that nothing is written before the first user or
// assistant message, and createBranchedSession's labels.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { basename } from "node:path";
import { test } from "node:test";
import {
  clock, installFakeClock, installSeededUuids, pi, prng, restoreRandomUuids, sameJson, tempDir, treelog,
} from "./helpers.mjs";
import { runSequence, START_MS } from "./sequence.mjs";

for (const seed of [1, 2, 3, 4, 5, 6]) {
  test(`seeded sequence ${seed}: same bytes and answers as pi after every step`, () => {
    runSequence(seed, 160, "1.6.0");
  });
}

test("nothing is written before the first user or assistant message; then everything at once", () => {
  installFakeClock(START_MS);
  try {
    const dir = tempDir();
    const sm = treelog.SessionManager.create("/w", dir, { id: "s1" });
    sm.appendModelChange("faux", "m1");
    sm.appendThinkingLevelChange("high");
    sm.appendMessage({ role: "system", content: "be brief", timestamp: 1 });
    const logs = () => readdirSync(dir).filter((name) => name.endsWith(".jsonl"));
    assert.deepEqual(logs(), []);
    assert.equal(sm.getEntries().length, 3);
    sm.appendMessage({ role: "user", content: "hi", timestamp: 2 });
    assert.deepEqual(logs(), [basename(sm.getSessionFile())]);
    assert.equal(readFileSync(sm.getSessionFile(), "utf8").split("\n").length, 6);
    const memory = treelog.SessionManager.inMemory("/w");
    memory.appendMessage({ role: "user", content: "hi", timestamp: 2 });
    assert.equal(memory.isPersisted(), false);
    assert.equal(memory.getSessionFile(), undefined);
    assert.equal(memory.buildSessionContext().messages.length, 1);
  } finally {
    clock.stop();
  }
});

test("createBranchedSession writes what pi writes, but for the new session's id", () => {
  installFakeClock(START_MS);
  const ids = [prng(9), prng(9)];
  const run = (module, dir, which) => {
    installSeededUuids(ids[which]);
    const sm = module.SessionManager.create("/w", dir, { id: "s1" });
    const a = sm.appendMessage({ role: "user", content: "one", timestamp: 1 });
    sm.appendLabelChange(a, "first");
    const b = sm.appendMessage({ role: "assistant", content: [], provider: "p", model: "m", timestamp: 2 });
    sm.appendLabelChange(b, "second");
    sm.appendLabelChange(a, "first again");
    const c = sm.appendMessage({ role: "user", content: "two", timestamp: 3 });
    sm.appendMessage({ role: "user", content: "gone", timestamp: 4 });
    const file = sm.createBranchedSession(c);
    sm.appendMessage({ role: "assistant", content: [], provider: "p", model: "m", timestamp: 5 });
    return { sm, file };
  };
  try {
    const [dirPi, dirOurs] = [tempDir(), tempDir()];
    const expected = run(pi, dirPi, 0);
    const actual = run(treelog, dirOurs, 1);
    const masked = (text, sm) => text.replaceAll(sm.getSessionId(), "<id>").replaceAll(/"parentSession":"[^"]*"/g, "<parent>");
    assert.equal(masked(readFileSync(actual.file, "utf8"), actual.sm), masked(readFileSync(expected.file, "utf8"), expected.sm));
    for (const getter of ["getEntries", "getTree", "buildSessionContext", "getLeafId"]) {
      sameJson(actual.sm[getter](), expected.sm[getter](), getter);
    }
  } finally {
    restoreRandomUuids();
    clock.stop();
  }
});

// createBranchedSession on pi 1.6.0 and treelog, side by side: each scenario builds a session
// with the same seeded ids and clock, branches, appends once more, and both sides must hold the
// same entries (files byte for byte where pi writes one), the same answers, and throw alike.
const user = (content, timestamp) => ({ role: "user", content, timestamp });
const answer = (timestamp) => ({ role: "assistant", content: [], provider: "p", model: "m", timestamp });
const branchScenarios = [
  {
    name: "a label cleared and set again moves last in pi's label map; one off the path is left out",
    persist: true,
    build(sm) {
      // Set a, b, c, d; clear and set b, then a: pi's map holds c, d, b, a (no id order does).
      const kept = [];
      for (let i = 0; i < 4; i++) kept.push(sm.appendMessage(i % 2 ? answer(i) : user(`message ${i}`, i)));
      kept.forEach((id, i) => sm.appendLabelChange(id, `label ${i}`));
      for (const i of [1, 0]) {
        sm.appendLabelChange(kept[i], undefined);
        sm.appendLabelChange(kept[i], `label ${i}, again`);
      }
      sm.appendLabelChange(kept[2], "label 2, renamed in place");
      const leaf = sm.appendMessage(user("last", 5));
      const off = sm.appendMessage(user("off the path", 6));
      sm.appendLabelChange(off, "not kept");
      return leaf;
    },
  },
  {
    name: "a compaction whose first kept entry is a dropped label keeps the entry after it",
    persist: true,
    build(sm) {
      const a = sm.appendMessage(user("one", 1));
      sm.appendMessage(answer(2));
      const label = sm.appendLabelChange(a, "mark");
      const b = sm.appendMessage(user("two", 3));
      sm.appendMessage(answer(4));
      sm.appendCompaction("summary", label, 1234);
      sm.appendCompaction("summary of itself", undefined, 99);
      return sm.appendMessage(user("three", 5));
    },
  },
  {
    name: "no user or assistant message kept: the file waits for the first one",
    persist: true,
    build(sm) {
      sm.appendModelChange("p", "m");
      const system = sm.appendMessage({ role: "system", content: "be brief", timestamp: 1 });
      sm.appendLabelChange(system, "start");
      sm.appendMessage(user("later", 2));
      return system;
    },
  },
  {
    name: "in memory, the leaf by default",
    persist: false,
    build(sm) {
      const a = sm.appendMessage(user("one", 1));
      sm.appendLabelChange(a, "first");
      sm.appendMessage(answer(2));
      return undefined;
    },
  },
  { name: "an unknown entry throws pi's words", persist: true, build: () => "nope" },
];

for (const scenario of branchScenarios) {
  test(`createBranchedSession as pi's: ${scenario.name}`, () => {
    installFakeClock(START_MS);
    const run = (module, dir) => {
      installSeededUuids(prng(11));
      const sm = scenario.persist ? module.SessionManager.create("/w", dir, { id: "s1" }) : module.SessionManager.inMemory("/w");
      const leaf = scenario.build(sm);
      let file;
      try {
        file = sm.createBranchedSession(leaf);
      } catch (error) {
        return { error: error.message };
      }
      const written = file !== undefined && readdirSync(dir).includes(basename(file));
      const before = written ? readFileSync(file, "utf8") : null;
      sm.appendMessage(answer(9));
      const after = file === undefined ? null : readFileSync(file, "utf8");
      return { sm, file, before, after };
    };
    try {
      const expected = run(pi, tempDir());
      const actual = run(treelog, tempDir());
      if (expected.error !== undefined || actual.error !== undefined) {
        assert.equal(actual.error, expected.error);
        return;
      }
      assert.equal(actual.file === undefined, expected.file === undefined, "a file returned");
      const masked = (text, side) =>
        text?.replaceAll(side.sm.getSessionId(), "<id>").replaceAll(/"parentSession":"[^"]*"/g, "<parent>") ?? null;
      assert.equal(masked(actual.before, actual), masked(expected.before, expected), "the file right after branching");
      assert.equal(masked(actual.after, actual), masked(expected.after, expected), "the file after the next message");
      for (const getter of ["getEntries", "getTree", "buildSessionContext", "getLeafId", "getHeader"]) {
        const strip = (value) => (getter === "getHeader" ? { ...value, id: "<id>", parentSession: value.parentSession && "<parent>" } : value);
        sameJson(strip(actual.sm[getter]()), strip(expected.sm[getter]()), getter);
      }
    } finally {
      restoreRandomUuids();
      clock.stop();
    }
  });
}
