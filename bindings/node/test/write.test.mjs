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
