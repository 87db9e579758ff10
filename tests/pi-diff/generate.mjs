// Writes session transcripts through pi's own public SessionManager API, driven by a seeded
// PRNG, so that every byte of a transcript is pi's: what treelog must read is what pi writes.
//
//   node generate.mjs --pi 1.6|0.73 --seed S --entries N --out FILE [--profile compact|full]
//   node generate.mjs --vectors [--data DIR]   regenerates the committed vectors and oracles
//
// Run it with Node 24 (bindings/node/node_modules/.bin/node): pi 1.6.0 needs Node >= 22.19.
// The clock and pi's id source are replaced by seeded ones (common.mjs), so a (pi, seed,
// entries, profile) tuple always gives the same file.
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import {
  clock,
  hashSeed,
  installFakeClock,
  installSeededUuids,
  loadPi,
  parseArgs,
  prng,
  restoreRandomUuids,
  runMain,
  seededUuidV7,
} from "./common.mjs";
import { computeOracle, oracleAgreement, writeOracle } from "./oracle.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/**
 * The committed vectors: small enough to keep in git (tests/data), each covering every entry
 * kind its pi version writes. `parentSession` gives one header that optional key.
 */
export const VECTORS = [
  { name: "pi16-gen-a", pi: "1.6", seed: 16001, entries: 600 },
  { name: "pi16-gen-b", pi: "1.6", seed: 16003, entries: 260, parentSession: true },
  { name: "pi073-gen-a", pi: "0.73", seed: 73001, entries: 450 },
];

/**
 * Vectors written elsewhere and copied into tests/data with their pi 1.6.0 oracle
 * (pi16-sample-300 comes from the project's shared reference vectors); only pi 0.73.1's
 * answers for them are made here.
 */
const COPIED_VECTORS = ["pi16-sample-300"];

const CWD = "/home/dev/project";
// 2025-01-01T09:00:00.007Z, as in the shared sample vectors.
const START_MS = Date.UTC(2025, 0, 1, 9, 0, 0, 7);

// --- content --------------------------------------------------------------------------------

const WORDS = (
  "the a index leaf branch tree session entry log append compaction summary context model " +
  "tool call result read write edit bash grep file path crate test build cargo lock redb " +
  "token cache usage parent child label rename fix error warning return value line byte " +
  "offset sidecar open close flush fsync rebuild catch up journal"
).split(" ");
// Text that JSON escaping and UTF-8 handling must carry through unchanged.
const ODD = ["é", "naïve", "日本語", "🦀", "Ünïcödé", '"quoted"', "back\\slash", "tab\there", "line\nbreak", "<tag/>", "\u2028"];

function text(rng, low, high) {
  const count = rng.int(low, high);
  const words = [];
  for (let i = 0; i < count; i++) words.push(rng.chance(0.04) ? rng.pick(ODD) : rng.pick(WORDS));
  return words.join(" ");
}

const TOOLS = ["read", "bash", "edit", "write", "grep"];
const PROVIDERS = [
  { provider: "anthropic", api: "anthropic-messages", models: ["claude-sonnet-4-5", "claude-opus-4-1"] },
  { provider: "openai", api: "openai-responses", models: ["gpt-5", "gpt-5-mini"] },
  { provider: "google", api: "google-generative-ai", models: ["gemini-2.5-pro"] },
];
const THINKING = ["off", "minimal", "low", "medium", "high", "xhigh"];

function usage(rng) {
  const input = rng.int(10, 20000);
  const output = rng.int(1, 4000);
  const cacheRead = rng.chance(0.5) ? rng.int(0, 50000) : 0;
  const cacheWrite = rng.chance(0.3) ? rng.int(0, 8000) : 0;
  const cost = {
    input: input * 3e-6,
    output: output * 15e-6,
    cacheRead: cacheRead * 3e-7,
    cacheWrite: cacheWrite * 3.75e-6,
  };
  cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
}

function toolDeclaration(rng, name) {
  return {
    name,
    description: `${name}: ${text(rng, 2, 8)}`,
    parameters: {
      type: "object",
      properties: { path: { type: "string", description: text(rng, 1, 4) } },
      required: ["path"],
    },
  };
}

// --- the driver ------------------------------------------------------------------------------

/**
 * Generates one transcript at `out`. Returns `{file, entries, counts}` (`counts`: entries
 * written per kind). `profile`: "compact" keeps payloads short (committed vectors), "full"
 * makes them about the size of real ones. The seeded clock and ids are in place only while
 * it runs.
 */
export async function generateTranscript(options) {
  const { module } = await loadPi(options.pi);
  // pi names the file itself (<timestamp>_<session id>.jsonl): it is written in a private
  // directory and copied to `out` at the end.
  const workDir = mkdtempSync(join(tmpdir(), "pi-diff-gen-"));
  installFakeClock(START_MS);
  installSeededUuids(prng(hashSeed(`ids:${options.seed}`)));
  try {
    const result = drive(module.SessionManager, workDir, options);
    copyFileSync(result.file, resolve(options.out));
    return { ...result, file: resolve(options.out) };
  } finally {
    clock.stop();
    restoreRandomUuids();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** Writes the transcript with `SessionManager` in `workDir`; returns where pi put it. */
function drive(SessionManager, workDir, { pi, seed, entries, profile = "compact", parentSession = false }) {
  const is16 = pi === "1.6";
  const rng = prng(seed);
  const scale = profile === "full" ? 5 : 1;

  const counts = {};
  const count = (kind) => {
    counts[kind] = (counts[kind] ?? 0) + 1;
  };
  let written = 0;
  const sessionId = seededUuidV7(rng, START_MS);
  let sm;
  if (is16) {
    sm = SessionManager.create(CWD, workDir, {
      id: sessionId,
      ...(parentSession ? { parentSession: `${CWD}/.pi/sessions/parent.jsonl` } : {}),
    });
  } else {
    // 0.73.1's create() takes no options; newSession() is its public way to set the id.
    sm = SessionManager.create(CWD, workDir);
    sm.newSession({ id: sessionId, ...(parentSession ? { parentSession: `${CWD}/.pi/sessions/parent.jsonl` } : {}) });
  }
  const file = sm.getSessionFile();

  // A mirror of what the generator needs to choose sensible targets: the active branch and
  // every entry, as {id, kind} (kind: the type, or "message/<role>").
  let branch = [];
  const all = [];
  const labelled = new Set();
  const editedTargets = new Set();
  let flushed = false; // whether pi has created the file yet
  const lastCompactionOnBranch = () => {
    for (let i = branch.length - 1; i >= 0; i--) if (branch[i].kind === "compaction") return i;
    return -1;
  };

  const kindOf = (entry) => (entry.type === "message" ? `message/${entry.message?.role}` : entry.type);
  const timeOf = new Map(); // entry id -> its timestamp in ms (the clock when it was appended)
  const record = (id, kind) => {
    const item = { id, kind };
    timeOf.set(id, clock.now());
    branch.push(item);
    all.push(item);
    count(kind);
    written += 1;
    if (kind === "message/user" || kind === "message/assistant") {
      // pi 1.6.0 writes the file at the first user or assistant message, 0.73.1 at the first
      // assistant one (its "lazy flush").
      if (is16 || kind === "message/assistant") flushed = true;
    }
    return id;
  };
  const refreshBranch = () => {
    branch = sm.getBranch().map((entry) => ({ id: entry.id, kind: kindOf(entry) }));
  };
  /**
   * The clock between two appends: mostly a human or model pace, sometimes the same
   * millisecond (siblings that tie in getTree's sort keep file order), rarely set back (a
   * later sibling that sorts first).
   */
  const tick = () => {
    const roll = rng.random();
    if (roll < 0.08) return;
    if (roll < 0.13) clock.advance(rng.int(1, 5));
    else if (roll < 0.145) clock.advance(-rng.int(1000, 90000));
    else clock.advance(rng.int(200, 6000));
  };

  let provider = rng.pick(PROVIDERS);
  let model = rng.pick(provider.models);

  const appendMessage = (message) => {
    tick();
    return record(sm.appendMessage({ ...message, timestamp: message.timestamp ?? clock.now() }), `message/${message.role}`);
  };

  const ops = {
    model() {
      tick();
      provider = rng.pick(PROVIDERS);
      model = rng.pick(provider.models);
      record(sm.appendModelChange(provider.provider, model), "model_change");
    },
    thinking() {
      tick();
      record(sm.appendThinkingLevelChange(rng.pick(THINKING)), "thinking_level_change");
    },
    rename(variant) {
      tick();
      // pi trims and turns line breaks into spaces; an empty name clears the session name.
      const name =
        variant === "clear" || rng.chance(0.1)
          ? ""
          : rng.chance(0.3)
            ? `  ${text(rng, 1, 4)}\n${text(rng, 1, 3)}  `
            : `session ${text(rng, 1, 5)} seed=${seed}`;
      record(sm.appendSessionInfo(name), "session_info");
    },
    /** A user prompt, then model steps: tool calls with their results, then a final answer. */
    turn(variant) {
      const userContent =
        rng.chance(0.6) || variant === "plain"
          ? text(rng, 3, 25 * scale)
          : [
              { type: "text", text: text(rng, 3, 20 * scale) },
              ...(rng.chance(0.2) ? [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }] : []),
            ];
      appendMessage({ role: "user", content: userContent });
      const steps = variant === "tools" ? 2 : rng.int(0, 3);
      for (let step = 0; step <= steps; step++) {
        const final = step === steps;
        const content = [];
        if (rng.chance(0.4)) {
          content.push({ type: "thinking", thinking: text(rng, 3, 20 * scale), thinkingSignature: rng.hex(16) });
        }
        if (final || rng.chance(0.5)) content.push({ type: "text", text: text(rng, 3, 40 * scale) });
        const calls = final ? [] : Array.from({ length: rng.int(1, 2) }, () => ({
          type: "toolCall",
          id: `toolu_${rng.hex(12)}`,
          name: rng.pick(TOOLS),
          arguments: { path: `src/${rng.pick(WORDS)}.rs`, ...(rng.chance(0.3) ? { limit: rng.int(1, 400) } : {}) },
        }));
        content.push(...calls);
        const stopRoll = rng.random();
        const stopReason = calls.length > 0 ? "toolUse" : stopRoll < 0.9 ? "stop" : stopRoll < 0.95 ? "length" : "error";
        appendMessage({
          role: "assistant",
          content,
          api: provider.api,
          provider: provider.provider,
          model,
          usage: usage(rng),
          stopReason,
          ...(stopReason === "error" ? { errorMessage: `overloaded: ${text(rng, 1, 4)}` } : {}),
        });
        for (const call of calls) {
          const isError = rng.chance(0.1);
          appendMessage({
            role: "toolResult",
            toolCallId: call.id,
            toolName: call.name,
            content: [{ type: "text", text: text(rng, 2, 30 * scale) }],
            ...(rng.chance(0.4) ? { details: { lines: rng.int(1, 500), truncated: rng.chance(0.2) } } : {}),
            isError,
          });
        }
      }
    },
    bash() {
      const output = rng.chance(0.85) ? text(rng, 0, 20 * scale) : "";
      const cancelled = rng.chance(0.1);
      appendMessage({
        role: "bashExecution",
        command: `cargo ${rng.pick(["test", "build", "clippy"])} ${rng.pick(WORDS)}`,
        output,
        exitCode: cancelled ? null : rng.pick([0, 0, 0, 1, 101]),
        cancelled,
        truncated: rng.chance(0.1),
        ...(rng.chance(0.1) ? { fullOutputPath: "/tmp/pi-bash-output.txt" } : {}),
        ...(rng.chance(0.2) ? { excludeFromContext: true } : {}),
      });
    },
    customMessage() {
      tick();
      const content = rng.chance(0.5) ? text(rng, 2, 15 * scale) : [{ type: "text", text: text(rng, 2, 15 * scale) }];
      const details = rng.chance(0.5) ? { source: rng.pick(["extension", "hook"]), n: rng.int(0, 9) } : undefined;
      record(
        sm.appendCustomMessageEntry(rng.pick(["reminder", "todo", "plan"]), content, rng.chance(0.7), details),
        "custom_message",
      );
    },
    custom() {
      tick();
      const data = rng.chance(0.8) ? { state: text(rng, 1, 5), step: rng.int(0, 20) } : undefined;
      record(sm.appendCustomEntry(rng.pick(["todo-state", "plan-mode"]), data), "custom");
    },
    /** pi 0.73.1's hook messages became `message` entries with role "custom" (v2 to v3). */
    customRoleMessage() {
      appendMessage({
        role: "custom",
        customType: "hook",
        content: text(rng, 2, 10),
        display: true,
      });
    },
    /** A system message: the prompt at the session start, later a patch of it. */
    system(variant) {
      const initial = variant === "initial";
      const message = { role: "system" };
      message.content =
        initial || rng.chance(0.6)
          ? initial
            ? `You are an expert coding assistant. ${text(rng, 5, 30 * scale)}`
            : rng.chance(0.7)
              ? text(rng, 2, 12 * scale)
              : ""
          : [{ type: "text", text: text(rng, 2, 12) }];
      if (initial || rng.chance(0.5)) {
        message.sections = {};
        message.sections["<environment>"] = `<environment>cwd: ${CWD} ${text(rng, 0, 3)}</environment>`;
        if (initial || rng.chance(0.5)) message.sections["<guidelines>"] = `<guidelines>${text(rng, 2, 10)}</guidelines>`;
        if (!initial && rng.chance(0.3)) message.sections["<guidelines>"] = null;
        // pi's docs warn against integer-like names (JSON objects reorder them); a user can
        // still write one, and treelog must keep it.
        if (rng.chance(0.15)) message.sections["2"] = `section two ${text(rng, 1, 3)}`;
      }
      if (initial || rng.chance(0.4)) {
        const names = initial ? TOOLS : [rng.pick(TOOLS), `mcp_${rng.pick(WORDS)}`];
        message.toolsAdded = names.map((name) => toolDeclaration(rng, name));
      }
      if (!initial && rng.chance(0.25)) message.toolsRemoved = [{ name: rng.pick(TOOLS) }];
      appendMessage(message);
    },
    usage() {
      tick();
      const note = rng.chance(0.4) ? text(rng, 1, 4) : undefined;
      const entry = sm.appendUsage(rng.pick(["cache_warm", "title", "summary_preview"]), provider.provider, model, usage(rng), note);
      record(entry.id, "usage");
    },
    /**
     * A context edit of an editable entry on the active branch: a string, an array or null
     * (removal). Variants pin the target kind or re-edit an already edited target.
     */
    edit(variant) {
      const editable = ["message/user", "message/assistant", "message/toolResult", "custom_message"];
      let candidates;
      if (variant === "again") candidates = branch.filter((item) => editedTargets.has(item.id));
      else if (variant && editable.includes(variant)) candidates = branch.filter((item) => item.kind === variant);
      else {
        const onBranch = branch.filter((item) => editable.includes(item.kind));
        // Mostly recent entries (what a user edits), sometimes anywhere on the branch.
        candidates = rng.chance(0.7) ? onBranch.slice(-40) : onBranch;
      }
      if (candidates.length === 0) return false;
      const target = rng.pick(candidates);
      const roll = rng.random();
      let replacement;
      if (roll < 0.25) replacement = null;
      else if (roll < 0.65) replacement = { content: text(rng, 1, 12 * scale) };
      else if (target.kind === "message/assistant") {
        replacement = { content: [{ type: "text", text: text(rng, 1, 12) }, ...(rng.chance(0.3) ? [{ type: "thinking", thinking: text(rng, 1, 5) }] : [])] };
      } else {
        replacement = { content: [{ type: "text", text: text(rng, 1, 12) }] };
      }
      tick();
      record(sm.appendContextEdit(target.id, replacement), "context_edit");
      editedTargets.add(target.id);
      return true;
    },
    /**
     * A compaction. Variants choose firstKeptEntryId: "recent" (a late entry of the branch, as
     * pi's own compaction does), "before-previous" (before the branch's previous compaction, so
     * that one falls inside the kept range), "undefined" and "null" (pi 1.6.0 then uses the
     * compaction's own id; 0.73.1 writes no key or null), "off-branch" (an id of another
     * branch: nothing is kept).
     */
    compaction(variant) {
      const choice =
        variant ??
        rng.weighted({ recent: 55, "before-previous": 15, undefined: 10, null: 10, "off-branch": 5, leaf: 5 });
      let firstKept;
      const previous = lastCompactionOnBranch();
      if (choice === "recent" && branch.length > 0) firstKept = branch[rng.int(Math.floor(branch.length * 0.6), branch.length - 1)].id;
      else if (choice === "before-previous" && previous > 0) firstKept = branch[rng.int(Math.max(0, previous - 15), previous - 1)].id;
      else if (choice === "null") firstKept = null;
      else if (choice === "off-branch") {
        const onBranch = new Set(branch.map((item) => item.id));
        const others = all.filter((item) => !onBranch.has(item.id));
        firstKept = others.length > 0 ? rng.pick(others).id : undefined;
      } else if (choice === "leaf" && branch.length > 0) firstKept = branch[branch.length - 1].id;
      else firstKept = undefined;
      tick();
      const details = rng.chance(0.7) ? { readFiles: [`src/${rng.pick(WORDS)}.rs`], modifiedFiles: rng.chance(0.5) ? [`src/${rng.pick(WORDS)}.rs`] : [] } : undefined;
      const fromHook = rng.chance(0.2) ? true : undefined;
      const summary = `## Goal\n${text(rng, 5, 30 * scale)}\n\n## Progress\n${text(rng, 5, 20 * scale)}`;
      const tokensBefore = rng.int(1000, 180000);
      const id = is16
        ? sm.appendCompaction(summary, firstKept, tokensBefore, details, fromHook, rng.chance(0.7) ? usage(rng) : undefined)
        : sm.appendCompaction(summary, firstKept, tokensBefore, details, fromHook);
      record(id, "compaction");
    },
    label(variant) {
      tick();
      if (variant === "clear" || (variant === undefined && labelled.size > 0 && rng.chance(0.3))) {
        if (labelled.size === 0) return false;
        const target = rng.pick([...labelled]);
        // Either way of clearing: no label, or an empty one.
        record(rng.chance(0.5) ? sm.appendLabelChange(target) : sm.appendLabelChange(target, ""), "label");
        labelled.delete(target);
        return true;
      }
      const pool = rng.chance(0.6) ? branch : all;
      if (pool.length === 0) return false;
      const target = rng.pick(pool).id;
      record(sm.appendLabelChange(target, rng.pick(["checkpoint", "good", "before refactor", "✓ tests pass", text(rng, 1, 3)])), "label");
      labelled.add(target);
      return true;
    },
      /**
     * Moves the leaf back (a re-edit or a /tree jump); the next append starts a sibling.
     * Sometimes the clock is then set back to just after the target's own time (a machine
     * with a wrong clock, a file continued elsewhere), so that the new sibling ties with or
     * sorts before the older ones in getTree.
     */
    branch() {
      const pool = rng.chance(0.7) ? branch.slice(0, -1) : all;
      if (pool.length === 0) return false;
      const target = rng.pick(pool).id;
      sm.branch(target);
      refreshBranch();
      if (rng.chance(0.12) && timeOf.has(target)) clock.advance(timeOf.get(target) + rng.int(0, 3) - clock.now());
      return true;
    },
    branchWithSummary(variant) {
      const pool = branch.slice(0, -1);
      const target =
        variant === "root" || pool.length === 0 || rng.chance(0.08) ? null : rng.pick(rng.chance(0.5) ? pool : all).id;
      tick();
      const summary = rng.chance(0.95) ? text(rng, 4, 30 * scale) : "";
      const details = rng.chance(0.6) ? { readFiles: [], modifiedFiles: [`src/${rng.pick(WORDS)}.rs`] } : undefined;
      const fromHook = rng.chance(0.2) ? true : undefined;
      const id = is16
        ? sm.branchWithSummary(target, summary, details, fromHook, rng.chance(0.7) ? usage(rng) : undefined)
        : sm.branchWithSummary(target, summary, details, fromHook);
      all.push({ id, kind: "branch_summary" });
      timeOf.set(id, clock.now());
      count("branch_summary");
      written += 1;
      refreshBranch();
    },
    /**
     * A new root: pi's resetLeaf before re-editing the first message. With "clock-back" (and
     * sometimes anyway) the clock is first set to before the session began: getTree sorts
     * children by time but keeps roots in file order, so this root still comes after the
     * older ones.
     */
    resetLeaf(variant) {
      sm.resetLeaf();
      branch = [];
      if (variant === "clock-back" || rng.chance(0.3)) clock.advance(START_MS - rng.int(1000, 600000) - clock.now());
    },
    /** Reopens the file: the leaf becomes the last entry in file order. */
    reopen() {
      if (!flushed) return false;
      sm = SessionManager.open(file);
      refreshBranch();
      return true;
    },
    /**
     * Lines of a type this pi does not know, appended as a newer pi would write them, then
     * the file reopened so that later appends hang off them.
     */
    unknownLines() {
      if (!flushed) return false;
      const ids = new Set(all.map((item) => item.id));
      const freshId = () => {
        let id;
        do id = rng.hex(8);
        while (ids.has(id));
        ids.add(id);
        return id;
      };
      const leaf = sm.getLeafId();
      const lines = [];
      tick();
      const first = { type: "future_kind", id: freshId(), parentId: leaf, timestamp: new Date().toISOString() };
      if (rng.chance(0.5)) first.payload = { note: text(rng, 1, 5), level: rng.int(0, 3) };
      lines.push(first);
      if (rng.chance(0.6)) {
        // A second one below the first, carrying a `message`-like field that is still no message.
        tick();
        lines.push({
          type: "future_checkpoint",
          id: freshId(),
          parentId: first.id,
          timestamp: new Date().toISOString(),
          message: { role: "user", content: "not a message entry", timestamp: clock.now() },
        });
      }
      if (rng.chance(0.3) && all.length > 2) {
        // One on another branch, which then is the last line and so the reopened leaf.
        tick();
        lines.push({ id: freshId(), type: "future_kind", parentId: rng.pick(all).id, timestamp: new Date().toISOString() });
      }
      appendFileSync(file, lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
      for (const line of lines) {
        all.push({ id: line.id, kind: line.type });
        timeOf.set(line.id, Date.parse(line.timestamp));
        count("unknown");
        written += 1;
      }
      sm = SessionManager.open(file);
      refreshBranch();
      return true;
    },
  };

  // A fixed opening that reaches every kind the pi version writes, whatever the seed; then
  // weighted random operations until the size is reached.
  const opening16 = [
    ["model"], ["thinking"], ["rename"], ["system", "initial"], ["turn", "tools"], ["turn", "tools"],
    ["customMessage"], ["bash"], ["usage"], ["turn"], ["custom"],
    ["edit", "message/user"], ["edit", "message/assistant"], ["edit", "message/toolResult"], ["edit", "custom_message"],
    ["edit", "again"], ["edit", "again"], ["system"], ["compaction", "recent"], ["turn"], ["label"], ["turn"],
    ["compaction", "before-previous"], ["turn", "tools"], ["system"], ["compaction", "undefined"], ["turn"],
    ["compaction", "null"], ["edit"], ["branch"], ["turn"], ["branchWithSummary"], ["turn"], ["label", "clear"],
    ["rename"], ["unknownLines"], ["turn"], ["branch"], ["turn"], ["thinking"], ["model"], ["turn"],
    ["compaction", "off-branch"], ["turn"], ["resetLeaf", "clock-back"], ["turn", "plain"], ["reopen"], ["turn"],
  ];
  const opening073 = [
    ["model"], ["thinking"], ["rename"], ["turn", "tools"], ["turn", "tools"], ["customMessage"], ["bash"],
    ["turn"], ["custom"], ["customRoleMessage"], ["compaction", "recent"], ["turn"], ["label"], ["turn"],
    ["compaction", "before-previous"], ["turn", "tools"], ["compaction", "undefined"], ["turn"],
    ["compaction", "null"], ["branch"], ["turn"], ["branchWithSummary"], ["turn"], ["label", "clear"],
    ["rename"], ["reopen"], ["turn"], ["branch"], ["turn"], ["thinking"], ["model"], ["turn"],
    ["compaction", "off-branch"], ["turn"], ["resetLeaf", "clock-back"], ["turn", "plain"], ["reopen"], ["turn"],
  ];
  const weights16 = {
    turn: 30, bash: 2, customMessage: 2, custom: 2, system: 2, usage: 3, edit: 6, compaction: 3, model: 1.5,
    thinking: 1.5, label: 3, rename: 0.7, branch: 7, branchWithSummary: 2, resetLeaf: 0.4, reopen: 0.8,
    unknownLines: 0.8,
  };
  const weights073 = {
    turn: 30, bash: 2, customMessage: 2, custom: 2, customRoleMessage: 0.5, compaction: 3, model: 1.5,
    thinking: 1.5, label: 3, rename: 0.7, branch: 7, branchWithSummary: 2, resetLeaf: 0.4, reopen: 0.8,
  };
  for (const [op, variant] of is16 ? opening16 : opening073) {
    if (written >= entries) break;
    ops[op](variant);
  }
  const weights = { ...(is16 ? weights16 : weights073) };
  // A reopen parses the whole file: past a few thousand entries they are made rarer, so that
  // generation stays linear in the size.
  const reopenScale = Math.min(1, 2000 / entries);
  weights.reopen *= reopenScale;
  if (weights.unknownLines) weights.unknownLines *= reopenScale;
  while (written < entries) ops[rng.weighted(weights)]();
  if (!flushed) throw new Error(`seed ${seed}: nothing was written (no user or assistant message)`);
  return { file, counts, entries: written };
}

// --- coverage ------------------------------------------------------------------------------

/**
 * What a committed vector must hold, read back from the file: names of the features it
 * lacks (empty when complete), so that a regeneration under another pi or seed cannot
 * silently lose one.
 */
export function missingFeatures(file, pi) {
  const lines = readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const entries = lines.slice(1);
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const has = new Set();
  const kindOf = (entry) => (entry.type === "message" ? `message/${entry.message.role}` : entry.type);
  const known = new Set(["message", "thinking_level_change", "model_change", "usage", "compaction", "branch_summary", "custom", "custom_message", "context_edit", "label", "session_info"]);
  const children = new Set(entries.map((entry) => entry.parentId));
  const editsPerTarget = new Map();
  let renames = 0;
  let previousRootMs = -Infinity;
  for (const entry of entries) {
    has.add(kindOf(entry));
    const parent = byId.get(entry.parentId);
    if (!known.has(entry.type)) has.add("unknown type");
    if (parent && !known.has(parent.type)) has.add("child of an unknown type");
    if (entry.parentId === null) {
      has.add(previousRootMs === -Infinity ? "a root" : "several roots");
      const ms = Date.parse(entry.timestamp);
      if (ms < previousRootMs) has.add("a root older than the one before it");
      previousRootMs = Math.max(previousRootMs, ms);
    }
    if (entry.type === "message" && entry.message.role === "system") {
      if (entry.message.sections) has.add("system with sections");
      if (entry.message.toolsAdded) has.add("system with toolsAdded");
    }
    if (entry.type === "usage" && entry.note) has.add("usage with a note");
    if (entry.type === "context_edit") {
      const replacement = entry.replacement;
      has.add(`edit to ${replacement === null ? "null" : typeof replacement.content === "string" ? "a string" : "an array"}`);
      has.add(`edit of ${kindOf(byId.get(entry.targetId))}`);
      editsPerTarget.set(entry.targetId, (editsPerTarget.get(entry.targetId) ?? 0) + 1);
    }
    if (entry.type === "compaction") {
      if (entry.firstKeptEntryId === entry.id) has.add("compaction keeping from itself");
      if (!("firstKeptEntryId" in entry)) has.add("compaction without firstKeptEntryId");
      if (entry.firstKeptEntryId === null) has.add("compaction with a null firstKeptEntryId");
      if (entry.systemMessage) has.add("compaction with a systemMessage");
      if (entry.usage) has.add("compaction with usage");
      // An older compaction on the same branch inside this one's kept range.
      const path = [];
      for (let at = parent; at; at = byId.get(at.parentId)) path.unshift(at);
      const kept = path.findIndex((item) => item.id === entry.firstKeptEntryId);
      if (kept >= 0 && path.slice(kept).some((item) => item.type === "compaction")) has.add("older compaction in a kept range");
    }
    if (entry.type === "branch_summary" && entry.usage) has.add("branch summary with usage");
    if (entry.type === "label") has.add(entry.label ? "label set" : "label cleared");
    if (entry.type === "session_info") renames += 1;
  }
  if ([...editsPerTarget.values()].some((n) => n > 1)) has.add("target edited several times");
  if (renames > 1) has.add("renamed");
  if (entries.filter((entry) => !children.has(entry.id)).length >= 10) has.add("10 leaves");
  const common = [
    "message/user", "message/assistant", "message/toolResult", "message/bashExecution", "custom", "custom_message",
    "compaction", "branch_summary", "model_change", "thinking_level_change", "label set", "label cleared", "renamed",
    "10 leaves", "several roots", "a root older than the one before it", "older compaction in a kept range",
  ];
  const required =
    pi === "1.6"
      ? [
          ...common, "message/system", "system with sections", "system with toolsAdded", "usage", "usage with a note",
          "context_edit", "edit to a string", "edit to an array", "edit to null", "edit of message/user",
          "edit of message/assistant", "edit of message/toolResult", "edit of custom_message",
          "target edited several times", "compaction keeping from itself", "compaction with a systemMessage",
          "compaction with usage", "branch summary with usage", "unknown type", "child of an unknown type",
        ]
      : [...common, "compaction without firstKeptEntryId", "compaction with a null firstKeptEntryId"];
  return required.filter((feature) => !has.has(feature));
}

// --- the committed vectors -------------------------------------------------------------------

/**
 * Regenerates every vector of VECTORS and its oracle(s) in `dataDir`. A pi 1.6.0 vector gets
 * `<name>.oracle.json` (pi 1.6.0) and `<name>.oracle-0.73.json` (pi 0.73.1 on the same file);
 * a 0.73.1 vector gets one oracle, after checking that both versions agree on it.
 */
export async function writeVectors(dataDir) {
  mkdirSync(dataDir, { recursive: true });
  const pi16 = await loadPi("1.6");
  const pi073 = await loadPi("0.73");
  for (const spec of VECTORS) {
    const file = join(dataDir, `${spec.name}.jsonl`);
    const result = await generateTranscript({ ...spec, out: file });
    const missing = missingFeatures(file, spec.pi);
    if (missing.length > 0) throw new Error(`${spec.name} lacks: ${missing.join(", ")} (change its seed or size)`);
    const byPi16 = computeOracle(file, pi16);
    const byPi073 = computeOracle(file, pi073, { leafIds: byPi16.leaves.map((leaf) => leaf.leafId) });
    if (spec.pi === "0.73") {
      const disagreement = oracleAgreement(byPi073, byPi16);
      if (disagreement) throw new Error(`${spec.name}: pi 0.73.1 and 1.6.0 disagree: ${disagreement}`);
      // One oracle: 0.73.1's answers, which 1.6.0 shares, plus 1.6.0's contextEntries and
      // projection.
      byPi073.pi = ["0.73.1", "1.6.0"];
      byPi073.leaves.forEach((leaf, i) => {
        leaf.contextEntries = byPi16.leaves[i].contextEntries;
        leaf.projection = byPi16.leaves[i].projection;
      });
      writeOracle(join(dataDir, `${spec.name}.oracle.json`), byPi073);
    } else {
      writeOracle(join(dataDir, `${spec.name}.oracle.json`), byPi16);
      writeOracle(join(dataDir, `${spec.name}.oracle-0.73.json`), byPi073);
    }
    const parents = new Set(byPi16.tree.map((row) => row.parentId));
    const leaves = byPi16.tree.filter((row) => !parents.has(row.id)).length;
    console.log(`${spec.name}: ${result.entries} entries, ${leaves} tree leaves, ${byPi16.leaves.length} leaves in the oracle; ${JSON.stringify(result.counts)}`);
  }
  for (const name of COPIED_VECTORS) {
    const file = join(dataDir, `${name}.jsonl`);
    if (!existsSync(file)) continue;
    writeOracle(join(dataDir, `${name}.oracle-0.73.json`), computeOracle(file, pi073));
    console.log(`${name}: pi 0.73.1's oracle`);
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2), ["vectors"]);
  if (args.vectors) {
    await writeVectors(resolve(args.data ?? join(here, "../data")));
    return;
  }
  if (!args.out) {
    console.error("usage: node generate.mjs --pi 1.6|0.73 --seed S --entries N --out FILE [--profile compact|full]\n       node generate.mjs --vectors [--data DIR]");
    process.exit(2);
  }
  const result = await generateTranscript({
    pi: args.pi ?? "1.6",
    seed: Number(args.seed ?? 1),
    entries: Number(args.entries ?? 500),
    out: args.out,
    profile: args.profile ?? "compact",
  });
  console.log(`${result.file}: ${result.entries} entries ${JSON.stringify(result.counts)}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runMain(main);
}
