// The seeded random sequence of the write-path tests, run on a reference pi's SessionManager
// and on treelog's side by side: every kind of append, branch, resetLeaf, branchWithSummary,
// labels, context edits, reopens, forks and createBranchedSession. Ids and timestamps are injected identically (the
// clock and crypto.randomUUID, which both draw from), so after every step the two files must
// be byte-identical, every getter must agree, and a refused operation must be refused by both.
//
// The reference is pi 1.6.0 (write.test.mjs) or 0.73.1 (pi073.test.mjs). Against 0.73.1 the
// sequence keeps to 0.73.1's surface and leaves out what the two pis do differently, where
// treelog follows 1.6.0; each such difference has its own test in pi073.test.mjs:
// - 0.73.1 writes nothing until the first *assistant* message, 1.6.0 from the first user or
//   assistant message: treelog's file may exist alone while 0.73.1's manager holds no
//   assistant message, and must equal 0.73.1's as soon as 0.73.1 writes;
// - 0.73.1's branchWithSummary writes `fromId: branchFromId ?? "root"`, 1.6.0 the leaf it
//   leaves (left out here);
// - 0.73.1's appendSessionInfo only trims a name, 1.6.0 also folds line breaks (names here
//   have none);
// - 1.6.0's appendCompaction records the context's system messages as `systemMessage`,
//   0.73.1 knows no system messages (left out here);
// - 0.73.1's forkFrom takes no options: the fork's session id is drawn by each side, and
//   masked like a path (as createBranchedSession's, on either pi);
// - 0.73.1's createBranchedSession keeps parent ids that name dropped labels (left out here).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  clock, installFakeClock, installSeededUuids, pi, pi073, prng, restoreRandomUuids, sameJson, tempDir, treelog,
} from "./helpers.mjs";

export const START_MS = Date.UTC(2025, 0, 1, 9, 0, 0, 7);

/** What a reference pi offers and how the sequence must call it. */
export const SURFACES = {
  "1.6.0": {
    module: pi,
    getters: [
      "getLeafId", "getLeafEntry", "getHeader", "getSessionId", "getSessionName", "getEntryCount", "getEntries",
      "getTree", "getBranch", "buildSessionContext", "buildContextEntries", "buildSessionProjection", "isPersisted",
    ],
    /** Kinds left out of the sequence (weight 0). */
    without: [],
    forkTakesOptions: true,
    /** Roles whose first append makes pi write the file. */
    writingRoles: ["user", "assistant"],
  },
  "0.73.1": {
    module: pi073,
    getters: [
      "getLeafId", "getLeafEntry", "getHeader", "getSessionId", "getSessionName", "getEntries", "getTree",
      "getBranch", "buildSessionContext", "isPersisted",
    ],
    without: ["system", "usage", "edit", "branchWithSummary", "refused edit", "branched"],
    forkTakesOptions: false,
    writingRoles: ["assistant"],
  },
};

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
function chooseStep(rng, view, n, version) {
  const entries = view.getEntries();
  const branch = view.getBranch();
  const anyId = () => (entries.length ? rng.pick(entries).id : "none");
  const old = version === "0.73.1";
  const weights = {
    user: 6, assistant: 6, toolResult: 2, system: 1, bash: 1, thinking: 1, model: 1, usage: 1, compaction: 1,
    custom: 1, customMessage: 1, name: 1, label: 2, edit: 2, branch: 2, resetLeaf: 0.3, branchWithSummary: 1,
    reopen: 1, fork: 0.3, refused: 1, branched: 0.5,
  };
  for (const kind of SURFACES[version].without) if (kind in weights) weights[kind] = 0;
  const kind = rng.weighted(weights);
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
      // 0.73.1 takes a kept id and no usage (its signature); 1.6.0 also null or undefined.
      const kept = old
        ? rng.pick([branch.length ? rng.pick(branch).id : "elsewhere", "elsewhere"])
        : rng.pick([null, undefined, branch.length ? rng.pick(branch).id : null, "elsewhere"]);
      const details = rng.pick([undefined, { files: ["a"] }]);
      const fromHook = rng.pick([undefined, true, false]);
      if (old) return [kind, (sm) => sm.appendCompaction(`summary ${n}`, kept, 1000 + n, details, fromHook)];
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
    case "name": {
      const name = rng.pick(old ? [`  name ${n}  `, "", "plain"] : [`  name ${n}\n\nnext  `, "", "plain"]);
      return [kind, (sm) => sm.appendSessionInfo(name)];
    }
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
    case "branched": { const target = anyId(); return [kind, (sm) => sm.createBranchedSession(target)]; }
    case "branchWithSummary": {
      const target = rng.chance(0.2) ? null : anyId();
      const details = rng.pick([undefined, { why: n }]);
      const fromHook = rng.pick([undefined, true]);
      return [kind, (sm) => sm.branchWithSummary(target, `left ${n}`, details, fromHook)];
    }
    case "refused": {
      const which = rng.pick(["branch", "label", "edit", "summary"].filter((name) => !SURFACES[version].without.includes(`refused ${name}`)));
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

/** Whether the reference pi would have written a session holding `entries` (its rule). */
function referenceWrites(entries, version) {
  const roles = SURFACES[version].writingRoles;
  return entries.some((entry) => entry.type === "message" && roles.includes(entry.message?.role));
}

/**
 * Runs `steps` seeded steps on the reference pi `version` and on treelog side by side and
 * fails at the first step where their files, return values, refusals or getters differ.
 */
export function runSequence(seed, steps, version = "1.6.0") {
  const surface = SURFACES[version];
  const reference = surface.module;
  const rng = prng(seed);
  const idsForPi = prng(seed ^ 0x5eed);
  const idsForTreelog = prng(seed ^ 0x5eed);
  installFakeClock(START_MS);
  const dirs = { pi: tempDir(), treelog: tempDir() };
  // What differs between pi's side and treelog's and is no difference: paths (a fork's
  // parentSession names its source) and session ids neither side lets the caller choose.
  const renames = [[dirs.pi, dirs.treelog]];
  const asOurs = (text) => renames.reduce((out, [from, to]) => out.replaceAll(from, to), text);
  const sessionId = `0194${rng.hex(4)}-aaaa-7bbb-8ccc-${rng.hex(12)}`;
  let managers;
  if (surface.forkTakesOptions) {
    managers = {
      pi: reference.SessionManager.create("/work/project", dirs.pi, { id: sessionId }),
      treelog: treelog.SessionManager.create("/work/project", dirs.treelog, { id: sessionId }),
    };
  } else {
    // 0.73.1's create takes no options; its newSession does.
    managers = {
      pi: reference.SessionManager.create("/work/project", dirs.pi),
      treelog: treelog.SessionManager.create("/work/project", dirs.treelog),
    };
    managers.pi.newSession({ id: sessionId });
    managers.treelog.newSession({ id: sessionId });
  }
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
      const [kind, body] = chooseStep(rng, managers.pi, n, version);
      const where = `pi ${version}, seed ${seed}, step ${n} (${kind})`;
      if (kind === "reopen") {
        const file = { pi: managers.pi.getSessionFile(), treelog: managers.treelog.getSessionFile() };
        if (!existsSync(file.pi)) continue;
        managers = { pi: reference.SessionManager.open(file.pi), treelog: treelog.SessionManager.open(file.treelog) };
      } else if (kind === "fork") {
        const file = { pi: managers.pi.getSessionFile(), treelog: managers.treelog.getSessionFile() };
        if (!existsSync(file.pi)) continue;
        const id = `0195${rng.hex(4)}-aaaa-7bbb-8ccc-${rng.hex(12)}`;
        const forkDirs = { pi: tempDir(), treelog: tempDir() };
        renames.push([forkDirs.pi, forkDirs.treelog], [file.pi, file.treelog]);
        const options = surface.forkTakesOptions ? { id } : undefined;
        managers = {
          pi: reference.SessionManager.forkFrom(file.pi, "/work/other", forkDirs.pi, options),
          treelog: treelog.SessionManager.forkFrom(file.treelog, "/work/other", forkDirs.treelog, options),
        };
        if (!surface.forkTakesOptions) renames.push([managers.pi.getSessionId(), managers.treelog.getSessionId()]);
        // The forked header names each side's own source.
        const header = (sm) => readFileSync(sm.getSessionFile(), "utf8").split("\n")[0];
        assert.equal(JSON.parse(header(managers.treelog)).parentSession, file.treelog, where);
      } else {
        const { piResult, piError, ourResult, ourError } = onEach(body);
        // A branched session's id is drawn by each side (uuidv7): masked like a path.
        if (kind === "branched" && !piError && !ourError) renames.push([managers.pi.getSessionId(), managers.treelog.getSessionId()]);
        assert.equal(Boolean(ourError), Boolean(piError), `${where}: pi ${piError?.message ?? "accepted"} / treelog ${ourError?.message ?? "accepted"}`);
        if (ourError) assert.match(ourError.code ?? "", /^TREELOG_/, `${where}: ${ourError.message}`);
        sameJson(ourResult, piResult === undefined ? undefined : JSON.parse(asOurs(JSON.stringify(piResult))), `${where}: return value`);
      }
      const files = { pi: managers.pi.getSessionFile(), treelog: managers.treelog.getSessionFile() };
      assert.equal(basename(files.treelog), asOurs(basename(files.pi)), `${where}: file name`);
      if (existsSync(files.treelog) && !existsSync(files.pi)) {
        // Only where treelog follows 1.6.0's rule and the reference has not written yet.
        assert.ok(!referenceWrites(managers.pi.getEntries(), version), `${where}: written by treelog only`);
        assert.ok(referenceWrites(managers.pi.getEntries(), "1.6.0"), `${where}: written by treelog without a conversation`);
      } else {
        assert.equal(existsSync(files.treelog), existsSync(files.pi), `${where}: written by pi only`);
      }
      if (existsSync(files.pi)) {
        const [expected, actual] = [asOurs(readFileSync(files.pi, "utf8")), readFileSync(files.treelog, "utf8")];
        if (actual !== expected) {
          const lines = [expected.split("\n"), actual.split("\n")];
          const at = lines[0].findIndex((line, i) => line !== lines[1][i]);
          assert.fail(`${where}: files differ at line ${at + 1}:\npi      ${lines[0][at]}\ntreelog ${lines[1][at]}`);
        }
      }
      for (const getter of surface.getters) {
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
