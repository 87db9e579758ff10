// The errors of pi 1.6.0's session manager, thrown by treelog's where pi throws them: each
// refused call below is refused by both (and 0.73.1 where it has the method), with pi's message
// at the start of treelog's, a stable `code` on treelog's, and nothing written by either.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  clock, installFakeClock, installSeededUuids, pi, pi073, prng, restoreRandomUuids, tempDir, thrown, treelog,
} from "./helpers.mjs";

const assistant = { role: "assistant", content: [{ type: "text", text: "a" }], provider: "faux", model: "m1", timestamp: 2 };

/** A session with a conversation, a branch left behind and a label: [manager, ids]. */
function session(module, dir) {
  const sm = module.SessionManager.create("/work/project", dir);
  sm.newSession({ id: "errors" });
  const user = sm.appendMessage({ role: "user", content: "q", timestamp: 1 });
  const answer = sm.appendMessage(assistant);
  const model = sm.appendModelChange("faux", "m2");
  sm.branch(user);
  const other = sm.appendMessage(assistant);
  return [sm, { user, answer, model, other }];
}

/** Each call pi 1.6.0 refuses, given a fresh session and its ids. */
const REFUSED = {
  "branch(unknown)": (sm) => sm.branch("unknown"),
  "branchWithSummary(unknown)": (sm) => sm.branchWithSummary("unknown", "s"),
  "appendLabelChange(unknown)": (sm) => sm.appendLabelChange("unknown", "l"),
  "createBranchedSession(unknown)": (sm) => sm.createBranchedSession("unknown"),
  "appendContextEdit(unknown)": (sm) => sm.appendContextEdit("unknown", null),
  "appendContextEdit(off the branch)": (sm, ids) => sm.appendContextEdit(ids.answer, null),
  "appendContextEdit(not editable)": (sm, ids) => (sm.branch(ids.model), sm.appendContextEdit(ids.model, null)),
  "appendContextEdit(bad replacement)": (sm, ids) => sm.appendContextEdit(ids.other, { text: "no content key" }),
  "appendContextEdit(number content)": (sm, ids) => sm.appendContextEdit(ids.other, { content: 3 }),
  "newSession({ id: '' })": (sm) => sm.newSession({ id: "" }),
  "newSession({ id: '-a' })": (sm) => sm.newSession({ id: "-a" }),
  "create(cwd, dir, { id: 'a/b' })": (_sm, _ids, module, dir) => module.SessionManager.create("/w", dir, { id: "a/b" }),
  "forkFrom(missing)": (_sm, _ids, module, dir) => module.SessionManager.forkFrom(join(dir, "missing.jsonl"), "/w", dir),
  "open(not a session)": (_sm, _ids, module, dir) => module.SessionManager.open(join(dir, "garbage.jsonl")),
  "setSessionFile(not a session)": (sm, _ids, _module, dir) => sm.setSessionFile(join(dir, "garbage.jsonl")),
};
/** Calls 0.73.1 has and refuses too (the rest it lacks, or accepts: pi073.test.mjs, files.test.mjs). */
const REFUSED_BY_073 = new Set(["branch(unknown)", "branchWithSummary(unknown)", "appendLabelChange(unknown)", "createBranchedSession(unknown)", "forkFrom(missing)"]);

/** Every file under `dir` with its bytes. */
function snapshot(dir) {
  return Object.fromEntries(readdirSync(dir, { recursive: true }).filter((name) => name.endsWith(".jsonl")).map((name) => [name, readFileSync(join(dir, name), "utf8")]));
}

for (const [name, call] of Object.entries(REFUSED)) {
  test(`${name}: refused as pi refuses it, nothing written`, () => {
    const outcome = {};
    for (const [side, module] of [["1.6.0", pi], ["0.73.1", pi073], ["treelog", treelog]]) {
      if (side === "0.73.1" && !REFUSED_BY_073.has(name)) continue;
      installFakeClock(Date.UTC(2025, 0, 2));
      installSeededUuids(prng(5));
      try {
        const dir = tempDir("treelog-errors-");
        const [sm, ids] = session(module, dir);
        writeFileSync(join(dir, "garbage.jsonl"), "garbage\n");
        const before = snapshot(dir);
        const error = thrown(() => call(sm, ids, module, dir));
        outcome[side] = { error, before, after: snapshot(dir) };
      } finally {
        restoreRandomUuids();
        clock.stop();
      }
    }
    for (const [side, { error, before, after }] of Object.entries(outcome)) {
      assert.ok(error, `${side} accepted ${name}`);
      assert.deepEqual(Object.keys(after).sort(), Object.keys(before).sort(), `${side}: files`);
      for (const file of Object.keys(before)) assert.equal(after[file], before[file], `${side}: ${file} changed`);
    }
    const ours = outcome.treelog.error;
    const theirs = outcome["1.6.0"].error;
    assert.ok(ours.message.startsWith(theirs.message.replace(/:.*$/, "")), `treelog "${ours.message}" / pi "${theirs.message}"`);
    if (!/Session id must be/.test(theirs.message)) assert.match(ours.code ?? "", /^TREELOG_/, ours.message);
  });
}

test("the constructor: pi's (private in its .d.ts) can be called from JS, treelog's refuses with a TypeError naming the factories", () => {
  const theirs = new pi.SessionManager("/work/project", "", undefined, false);
  assert.equal(theirs.isPersisted(), false);
  const error = thrown(() => new treelog.SessionManager("/work/project", "", undefined, false));
  assert.ok(error instanceof TypeError);
  assert.match(error.message, /use the static factories/);
});
