// The write path against pi 1.6.0: a seeded random sequence of every kind of append, branch,
// resetLeaf, branchWithSummary, labels, context edits, reopens and forks, run on pi's
// SessionManager and on treelog's side by side. Ids and timestamps are injected identically
// (the clock and crypto.randomUUID, which both draw from), so after every step the two files
// must be byte-identical (or both absent: nothing is written before the first user or
// assistant message), every getter must agree, and a refused operation must be refused by
// both.
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { test } from "node:test";
import {
  clock, installFakeClock, installSeededUuids, pi, prng, restoreRandomUuids, sameJson, tempDir, treelog,
} from "./helpers.mjs";

const START_MS = Date.UTC(2025, 0, 1, 9, 0, 0, 7);
const GETTERS = [
  "getLeafId", "getLeafEntry", "getHeader", "getSessionId", "getSessionName", "getEntryCount", "getEntries",
  "getTree", "getBranch", "buildSessionContext", "buildContextEntries", "buildSessionProjection", "isPersisted",
];

function message(rng, role, n) {
  const timestamp = Date.now();
  switch (role) {
    case "user":
      return { role, content: rng.chance(0.5) ? `question ${n} \u00e9\u2028"q"` : [{ type: "text", text: `q ${n}` }], timestamp };
    case "assistant":
      return {
        role, content: [{ type: "text", text: `answer ${n}` }], api: "faux", provider: rng.pick(["faux", "other"]),
        model: rng.pick(["m1", "m2"]), usage: { input: n, output: 2 * n, cacheRead: 0, cacheWrite: 0, totalTokens: 3 * n,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp,
      };
    case "toolResult":
      return { role, toolCallId: `call-${n}`, toolName: "bash", content: [{ type: "text", text: `out ${n}` }], isError: false, timestamp };
    case "system":
      return { role, content: `be brief ${n}`, timestamp };
    default:
      return { role: "bashExecution", command: "ls", output: "a\nb", exitCode: 0, cancelled: false, truncated: false, timestamp };
  }
}

/** One step: an operation chosen by `rng`, applied to a manager (the same choice on both). */
function chooseStep(rng, view, n) {
  const entries = view.getEntries();
  const branch = view.getBranch();
  const anyId = () => (entries.length ? rng.pick(entries).id : "none");
  const kind = rng.weighted({
    user: 6, assistant: 6, toolResult: 2, system: 1, bash: 1, thinking: 1, model: 1, usage: 1, compaction: 1,
    custom: 1, customMessage: 1, name: 1, label: 2, edit: 2, branch: 2, resetLeaf: 0.3, branchWithSummary: 1,
    reopen: 1, fork: 0.3, refused: 1,
  });
  switch (kind) {
    case "user": case "assistant": case "toolResult": case "system": case "bash": {
      const body = message(rng, kind === "bash" ? "bashExecution" : kind, n);
      return [kind, (sm) => sm.appendMessage(structuredClone(body))];
    }
    case "thinking": { const level = rng.pick(["off", "low", "high"]); return [kind, (sm) => sm.appendThinkingLevelChange(level)]; }
    case "model": { const model = rng.pick(["m1", "m2", "m3"]); return [kind, (sm) => sm.appendModelChange("faux", model)]; }
    case "usage": {
      const note = rng.pick([undefined, "", "warm"]);
      return [kind, (sm) => sm.appendUsage("cache_warm", "faux", "m1", { input: n, output: 1 }, note)];
    }
    case "compaction": {
      const kept = rng.pick([null, undefined, branch.length ? rng.pick(branch).id : null, "elsewhere"]);
      const details = rng.pick([undefined, { files: ["a"] }]);
      const fromHook = rng.pick([undefined, true, false]);
      const usage = rng.pick([undefined, { input: 3, output: 4 }]);
      return [kind, (sm) => sm.appendCompaction(`summary ${n}`, kept, 1000 + n, details, fromHook, usage)];
    }
    case "custom": { const data = rng.pick([undefined, { n }, null, "s"]); return [kind, (sm) => sm.appendCustomEntry("ext", data)]; }
    case "customMessage": {
      const content = rng.pick([`note ${n}`, [{ type: "text", text: `note ${n}` }]]);
      const details = rng.pick([undefined, { k: n }]);
      const display = rng.chance(0.5);
      return [kind, (sm) => sm.appendCustomMessageEntry("ext", content, display, details)];
    }
    case "name": { const name = rng.pick([`  name ${n}\n\nnext  `, "", "plain"]); return [kind, (sm) => sm.appendSessionInfo(name)]; }
    case "label": {
      const target = anyId();
      const label = rng.pick([`mark ${n}`, undefined, ""]);
      return [kind, (sm) => sm.appendLabelChange(target, label)];
    }
    case "edit": {
      const editable = branch.filter((entry) => entry.type === "custom_message" ||
        (entry.type === "message" && ["user", "assistant", "toolResult"].includes(entry.message.role)));
      const target = editable.length && rng.chance(0.9) ? rng.pick(editable).id : anyId();
      const replacement = rng.pick([null, { content: `edited ${n}` }, { content: [{ type: "text", text: `edited ${n}` }] }]);
      return [kind, (sm) => sm.appendContextEdit(target, replacement)];
    }
    case "branch": { const target = anyId(); return [kind, (sm) => sm.branch(target)]; }
    case "resetLeaf": return [kind, (sm) => sm.resetLeaf()];
    case "branchWithSummary": {
      const target = rng.chance(0.2) ? null : anyId();
      const details = rng.pick([undefined, { why: n }]);
      const fromHook = rng.pick([undefined, true]);
      return [kind, (sm) => sm.branchWithSummary(target, `left ${n}`, details, fromHook)];
    }
    case "refused": {
      const which = rng.pick(["branch", "label", "edit", "summary"]);
      return [`refused ${which}`, (sm) => {
        if (which === "branch") sm.branch("nope");
        else if (which === "label") sm.appendLabelChange("nope", "x");
        else if (which === "edit") sm.appendContextEdit("nope", null);
        else sm.branchWithSummary("nope", "s");
      }];
    }
    default:
      return [kind, null];
  }
}

function runSequence(seed, steps) {
  const rng = prng(seed);
  const idsForPi = prng(seed ^ 0x5eed);
  const idsForTreelog = prng(seed ^ 0x5eed);
  installFakeClock(START_MS);
  const dirs = { pi: tempDir(), treelog: tempDir() };
  // Paths of pi's side, as they appear on treelog's (a fork's parentSession names its source).
  const renames = [[dirs.pi, dirs.treelog]];
  const asOurs = (text) => renames.reduce((out, [from, to]) => out.replaceAll(from, to), text);
  const sessionId = `0194${rng.hex(4)}-aaaa-7bbb-8ccc-${rng.hex(12)}`;
  let managers = {
    pi: pi.SessionManager.create("/work/project", dirs.pi, { id: sessionId }),
    treelog: treelog.SessionManager.create("/work/project", dirs.treelog, { id: sessionId }),
  };
  const onEach = (body) => {
    installSeededUuids(idsForPi);
    let piResult, piError;
    try { piResult = body(managers.pi, "pi"); } catch (error) { piError = error; }
    installSeededUuids(idsForTreelog);
    let ourResult, ourError;
    try { ourResult = body(managers.treelog, "treelog"); } catch (error) { ourError = error; }
    return { piResult, piError, ourResult, ourError };
  };
  try {
    for (let n = 0; n < steps; n++) {
      clock.advance(rng.pick([0, 1, 7, 1000, 60000]));
      const [kind, body] = chooseStep(rng, managers.pi, n);
      const where = `seed ${seed}, step ${n} (${kind})`;
      if (kind === "reopen") {
        const file = { pi: managers.pi.getSessionFile(), treelog: managers.treelog.getSessionFile() };
        assert.equal(existsSync(file.pi), existsSync(file.treelog), `${where}: file exists on one side only`);
        if (!existsSync(file.pi)) continue;
        managers = { pi: pi.SessionManager.open(file.pi), treelog: treelog.SessionManager.open(file.treelog) };
      } else if (kind === "fork") {
        const file = { pi: managers.pi.getSessionFile(), treelog: managers.treelog.getSessionFile() };
        if (!existsSync(file.pi)) continue;
        const id = `0195${rng.hex(4)}-aaaa-7bbb-8ccc-${rng.hex(12)}`;
        const forkDirs = { pi: tempDir(), treelog: tempDir() };
        renames.push([forkDirs.pi, forkDirs.treelog], [file.pi, file.treelog]);
        managers = {
          pi: pi.SessionManager.forkFrom(file.pi, "/work/other", forkDirs.pi, { id }),
          treelog: treelog.SessionManager.forkFrom(file.treelog, "/work/other", forkDirs.treelog, { id }),
        };
        // The forked header names each side's own source.
        const header = (sm) => readFileSync(sm.getSessionFile(), "utf8").split("\n")[0];
        assert.equal(JSON.parse(header(managers.treelog)).parentSession, file.treelog, where);
      } else {
        const { piResult, piError, ourResult, ourError } = onEach(body);
        assert.equal(Boolean(ourError), Boolean(piError), `${where}: pi ${piError?.message ?? "accepted"} / treelog ${ourError?.message ?? "accepted"}`);
        if (ourError) assert.match(ourError.code ?? "", /^TREELOG_/, `${where}: ${ourError.message}`);
        sameJson(ourResult, piResult, `${where}: return value`);
      }
      const files = { pi: managers.pi.getSessionFile(), treelog: managers.treelog.getSessionFile() };
      assert.equal(basename(files.treelog), basename(files.pi), `${where}: file name`);
      assert.equal(existsSync(files.treelog), existsSync(files.pi), `${where}: written on one side only`);
      if (existsSync(files.pi)) {
        const [expected, actual] = [asOurs(readFileSync(files.pi, "utf8")), readFileSync(files.treelog, "utf8")];
        if (actual !== expected) {
          const lines = [expected.split("\n"), actual.split("\n")];
          const at = lines[0].findIndex((line, i) => line !== lines[1][i]);
          assert.fail(`${where}: files differ at line ${at + 1}:\npi      ${lines[0][at]}\ntreelog ${lines[1][at]}`);
        }
      }
      for (const getter of GETTERS) {
        const expected = managers.pi[getter]();
        sameJson(managers.treelog[getter](), expected === undefined ? undefined : JSON.parse(asOurs(JSON.stringify(expected))), `${where}: ${getter}`);
      }
    }
  } finally {
    restoreRandomUuids();
    clock.stop();
  }
  return dirs;
}

for (const seed of [1, 2, 3, 4, 5, 6]) {
  test(`seeded sequence ${seed}: same bytes and answers as pi after every step`, () => {
    runSequence(seed, 160);
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
