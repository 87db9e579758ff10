// What pi's callers rely on besides values: the same entry object wherever an entry is handed
// out (pi's agent finds a message's entry by `entry.message === message`), arrays a caller
// mutates that never change later answers, and entries that stay valid after appends and
// moves of the leaf. Each step runs on pi 1.6.0's own SessionManager and on treelog's, over
// copies of one bundled transcript, and the answers must be equal JSON too.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  clock, copies, installFakeClock, installSeededUuids, pi, prng, restoreRandomUuids, sameJson, tempDir, treelog,
} from "./helpers.mjs";

/**
 * Runs `script` on pi's manager and treelog's over copies of `name`, each with the same clock
 * and id draws; returns both results.
 */
function both(name, script) {
  const { forPi, forTreelog } = copies(name);
  const run = (module, file) => {
    installFakeClock(Date.UTC(2026, 0, 1));
    installSeededUuids(prng(7));
    try {
      return script(module.SessionManager.open(file));
    } finally {
      restoreRandomUuids();
      clock.stop();
    }
  };
  return [run(pi, forPi), run(treelog, forTreelog)];
}

test("an entry is one object wherever it is handed out, as in pi", () => {
  const [expected, actual] = both("pi16-gen-a", (sm) => {
    const branch = sm.getBranch();
    const leaf = sm.getLeafEntry();
    const entries = sm.getEntries();
    const projection = sm.buildSessionProjection();
    const context = sm.buildSessionContext();
    const checks = {
      leafIsLastOfBranch: branch[branch.length - 1] === leaf,
      getEntryIsBranchEntry: branch.every((entry) => sm.getEntry(entry.id) === entry),
      entriesHoldBranchEntries: branch.every((entry) => entries.includes(entry)),
      sourceEntriesAreEntries: projection.entries.every((projected) => sm.getEntry(projected.sourceEntry.id) === projected.sourceEntry),
      // pi's own messages are the entries' message objects; summaries are new values.
      ownMessages: projection.entries.map((projected) => projected.messages.map((message) => message === projected.sourceEntry.message)),
      contextMessagesAreProjected: context.messages.every((message, i) => message === projection.messages[i]),
      contextEntriesAreEntries: sm.buildContextEntries().every((entry) => sm.getEntry(entry.id) === entry),
      childrenAreEntries: sm.getChildren(branch[0].id).every((entry) => sm.getEntry(entry.id) === entry),
      treeNodesHoldEntries: sm.getTree().every((node) => sm.getEntry(node.entry.id) === node.entry),
    };
    return { checks, branch, projection };
  });
  assert.ok(expected.checks.getEntryIsBranchEntry, "pi's own answer, as the test expects it");
  sameJson(actual.checks, expected.checks, "identity checks");
  sameJson(actual.branch, expected.branch, "getBranch");
  sameJson(actual.projection, expected.projection, "buildSessionProjection");
});

test("an appended message is the caller's object, found by identity on the branch", () => {
  const [expected, actual] = both("pi16-sample-300", (sm) => {
    const message = { role: "user", content: "find me by identity", timestamp: 1 };
    const id = sm.appendMessage(message);
    const found = [...sm.getBranch()].reverse().find((entry) => entry.type === "message" && entry.message === message);
    const projected = sm.buildSessionProjection().messages.includes(message);
    return { sameEntry: found === sm.getEntry(id), held: sm.getEntry(id).message === message, projected, foundId: found?.id === id };
  });
  assert.deepEqual(expected, { sameEntry: true, held: true, projected: true, foundId: true });
  assert.deepEqual(actual, expected);
});

test("arrays a caller mutates never change later answers; held entries stay valid", () => {
  const [expected, actual] = both("pi16-gen-b", (sm) => {
    const branch = sm.getBranch();
    const before = branch[branch.length - 1];
    branch.reverse();
    branch.push({ type: "message", id: "intruder" });
    const entries = sm.getEntries();
    entries.length = 1;
    const projection = sm.buildSessionProjection();
    projection.messages.length = 0;
    const id = sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "after" }], timestamp: 2 });
    const after = {
      branch: sm.getBranch(),
      entries: sm.getEntries().length,
      messages: sm.buildSessionProjection().messages.length,
      heldStillThere: sm.getEntry(before.id) === before,
      newLeafParent: sm.getEntry(id).parentId === before.id,
    };
    // Move the leaf back, append there, reset, and ask for other leaves' paths.
    sm.branch(sm.getBranch()[3].id);
    sm.appendMessage({ role: "user", content: "side", timestamp: 3 });
    const sideBranch = sm.getBranch();
    const oldBranch = sm.getBranch(id);
    sm.resetLeaf();
    const reset = { branch: sm.getBranch(), leaf: sm.getLeafId(), unknown: sm.getBranch("no-such-id") };
    sm.appendMessage({ role: "user", content: "new root", timestamp: 4 });
    return { after, sideBranch, oldBranch, reset, rooted: sm.getBranch(), count: sm.getEntries().length };
  });
  assert.ok(expected.after.heldStillThere && expected.after.newLeafParent);
  sameJson(actual, expected, "answers after mutation, appends and moves of the leaf");
});

test("loadEntriesFromFile of an empty file returns [], as pi's does", () => {
  const dir = tempDir();
  const empty = join(dir, "empty.jsonl");
  writeFileSync(empty, "");
  const blank = join(dir, "blank.jsonl");
  writeFileSync(blank, "\n\n");
  for (const file of [empty, blank]) {
    assert.deepEqual(pi.loadEntriesFromFile(file), []);
    assert.deepEqual(treelog.loadEntriesFromFile(file), []);
  }
});

test("entries handed out before their line is read behave as the parsed line", () => {
  const [expected, actual] = both("pi16-gen-a", (sm) => {
    const branch = sm.getBranch();
    // pi's agent scans every message's role on resume: a stand-in answers it.
    const system = branch.flatMap((entry) => (entry.type === "message" && entry.message.role !== "user" ? [entry.message.role] : []));
    const heldEntry = branch.findLast((entry, i) => i < branch.length - 1 && entry.type === "message");
    const heldMessage = heldEntry.message;
    return {
      system,
      keys: branch.map((entry) => Object.keys(entry).join(",")),
      spread: branch.map((entry) => JSON.stringify({ ...entry })),
      json: JSON.stringify(branch),
      entries: Object.fromEntries(branch.map((entry) => [entry.id, Object.entries(entry).map(([key]) => key)])),
      // pi hands out one message object; treelog's stand-in, held from before the read, reads
      // as the entry's message after it (the entry's own is then a plain object).
      heldReads: JSON.stringify(heldEntry.message) === JSON.stringify(heldMessage),
      entryStays: sm.getEntry(heldEntry.id).message === heldEntry.message,
      heldJson: JSON.stringify(heldMessage),
      inKeys: "content" in heldMessage && Object.keys(heldMessage).join(","),
    };
  });
  assert.ok(expected.heldReads && expected.entryStays);
  sameJson(actual, expected, "entries read on use");
});

test("messages scanned before their line is read are the projection's, and clone as pi's", () => {
  const [expected, actual] = both("pi16-sample-300", (sm) => {
    const leaf = sm.getLeafEntry();
    // pi's agent scans every message's role on resume, builds the context, and clones it
    // (structuredClone) for its extensions before every model request.
    const roles = sm.getBranch().map((entry) => entry.type === "message" && entry.message.role);
    const held = leaf.message;
    const projection = sm.buildSessionProjection();
    const context = sm.buildSessionContext();
    return {
      roles,
      same: projection.messages.includes(sm.getLeafEntry().message),
      inContext: context.messages.includes(sm.getLeafEntry().message),
      cloned: JSON.stringify(structuredClone(projection.messages)),
      contextCloned: JSON.stringify(structuredClone(context.messages)),
      heldReads: JSON.stringify(held) === JSON.stringify(leaf.message),
      text: JSON.stringify(held),
      ts: leaf.timestamp,
    };
  });
  assert.ok(expected.same && expected.inContext && expected.heldReads);
  sameJson(actual, expected, "a held message");
});

test("a stand-in reads a scalar field alone, and an object with the whole line", () => {
  const [expected, actual] = both("pi16-gen-a", (sm) => {
    const messages = sm.getBranch().filter((entry) => entry.type === "message").map((entry) => entry.message);
    const scalars = messages.map((message) => [message.role, message.provider, message.model, message.stopReason, message.missing, typeof message.toString]);
    const objects = messages.map((message) => JSON.stringify(message.usage ?? message.content));
    const keys = messages.map((message) => Object.keys(message).join(","));
    return { scalars, objects, keys, json: JSON.stringify(messages) };
  });
  sameJson(actual, expected, "stand-in fields");
});

test("every assistant's provider and model, read before its line, are its own", () => {
  // Assistants of several models in turn, with the spellings that parse alike or differently:
  // an escaped model name, a repeated key (the last wins), an absent provider, a null, an
  // object-valued provider and one over the 256 bytes a head holds. Each answer must be the
  // message's own, whichever earlier message the index names as its model's origin.
  const dir = tempDir();
  const models = [
    '"provider":"a","model":"m1"', '"provider":"b","model":"m2"', '"provider":"a","model":"m1"',
    '"provider":"a","model":"m\\u0031"', '"provider":"a","model":"m2","model":"m1"', '"model":"m1"',
    '"provider":null,"model":"m1"', '"provider":{"name":"a"},"model":"m1"', `"provider":"${"p".repeat(300)}","model":"m1"`,
    '"provider":"b","model":"m2"', '"provider":"a","model":"m1"',
  ];
  const lines = [JSON.stringify({ type: "session", version: 3, id: "s1", timestamp: "2026-01-01T00:00:00.000Z", cwd: dir })];
  let parent = null;
  for (let n = 0; n < 60; n++) {
    const id = `e${String(n).padStart(7, "0")}`;
    const message = n % 2 === 0
      ? `{"role":"user","content":"q${n}","timestamp":${n}}`
      : `{"role":"assistant","content":[{"type":"text","text":"a${n}"}],"api":"x",${models[(n >> 1) % models.length]},"stopReason":"stop","timestamp":${n}}`;
    lines.push(`{"type":"message","id":"${id}","parentId":${parent === null ? "null" : `"${parent}"`},"timestamp":"2026-01-01T00:00:00.000Z","message":${message}}`);
    parent = id;
  }
  const file = join(dir, "models.jsonl");
  writeFileSync(file, `${lines.join("\n")}\n`);
  const scan = (module) => {
    const branch = module.SessionManager.open(file).getBranch();
    return branch.filter((entry) => entry.type === "message").map((entry) => [entry.message.provider, entry.message.model]);
  };
  const expected = scan(pi);
  // Twice: the first open builds the index, the second reads the stored origins.
  sameJson(scan(treelog), expected, "providers and models, first open");
  sameJson(scan(treelog), expected, "providers and models, from the index");
  assert.ok(new Set(expected.map((pair) => JSON.stringify(pair))).size >= 5, "the session holds several models");
});

test("a short object read before the line (pi's footer: usage) is the message's own after it", () => {
  const [expected, actual] = both("pi16-gen-a", (sm) => {
    // pi's footer: usage summed over every entry, the message's usage read alone.
    const messages = sm.getEntries().filter((entry) => entry.type === "message").map((entry) => entry.message);
    const usages = messages.map((message) => (message.role === "toolResult" ? message.usage ?? null : message.usage));
    const totals = usages.reduce((sum, usage) => sum + (usage?.input ?? 0) + (usage?.cacheRead ?? 0), 0);
    // Reading each whole message afterwards keeps the objects handed out, and their places.
    const json = JSON.stringify(messages);
    const same = messages.every((message, i) => message.usage === usages[i] || (usages[i] === null && message.usage === undefined));
    const keys = messages.map((message) => Object.keys(message).join(","));
    return { totals, json, same, keys, usages: JSON.stringify(usages) };
  });
  assert.ok(expected.same && expected.totals > 0);
  sameJson(actual, expected, "usage read alone, then the whole message");
});

test("an entry frozen before its line is read reads as pi's, and contexts still build", () => {
  const [expected, actual] = both("pi16-sample-300", (sm) => {
    const branch = sm.getBranch();
    const frozen = branch.filter((entry, i) => entry.type === "message" && i % 7 === 0).map((entry) => Object.freeze(entry));
    const context = sm.buildSessionContext();
    return {
      frozen: frozen.map((entry) => [Object.isFrozen(entry), JSON.stringify(entry)]),
      context: JSON.stringify(context),
      cloned: JSON.stringify(structuredClone(context.messages.filter((message) => !frozen.some((entry) => entry.message === message)))),
    };
  });
  assert.ok(expected.frozen.length > 10 && expected.frozen.every(([isFrozen]) => isFrozen));
  sameJson(actual, expected, "frozen entries");
});
