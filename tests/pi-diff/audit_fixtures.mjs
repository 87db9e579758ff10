// Writes tests/data/audit/pi{16,073,063}.jsonl: sessions compacted by the compaction code of
// pi 1.6.0, pi 0.73.1 and pi 0.63.0 (the last pi before the fix of prepareCompaction's range,
// which at a second compaction drops the first one's kept messages), and beside each a
// `.expect.json` with, for every compaction and branch summary, what that pi's own functions
// say: the entries whose messages `buildSessionContext` shows just before it (`before`) and
// just after it (`after`), and the entries whose messages its summarizer was given (`given`:
// `prepareCompaction`'s messagesToSummarize and turnPrefixMessages, or
// `collectEntriesForBranchSummary`'s entries). tests/it/audit.rs checks `treelog audit`
// against them. pi's clock and id source are seeded (common.mjs), so the same pi gives the
// same bytes. No model is called: the summaries are fixed text, and what a summarizer is
// given is what the preparation hands it.
//
//   (cd bindings/node && npm ci --ignore-scripts)
//   npm install --prefix /tmp/pi063 @mariozechner/pi-coding-agent@0.63.0   # or PI063_DIR=...
//   bindings/node/node_modules/.bin/node tests/pi-diff/audit_fixtures.mjs
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { resolvePinned } from "../../bindings/node/test/pi-project.mjs";
import { clock, hashSeed, installFakeClock, installSeededUuids, prng, runMain, seededUuidV7 } from "./common.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = resolve(HERE, "../data/audit");
const PI063_DIR = process.env.PI063_DIR ?? "/tmp/pi063/node_modules/@mariozechner/pi-coding-agent";

/** Each pi: where its package is, and when its sessions are stamped (0.63.0 before the fix). */
const PIS = [
  { name: "pi16", root: packageRoot("@earendil-works/pi-coding-agent"), startMs: Date.UTC(2026, 10, 2, 9) },
  { name: "pi073", root: packageRoot("@mariozechner/pi-coding-agent"), startMs: Date.UTC(2026, 5, 1, 9) },
  { name: "pi063", root: PI063_DIR, startMs: Date.UTC(2026, 2, 10, 9) },
];

function packageRoot(specifier) {
  // The index is dist/index.js under the package's root.
  return resolve(dirname(fileURLToPath(resolvePinned(specifier))), "..");
}

const SETTINGS = { enabled: true, reserveTokens: 1000, keepRecentTokens: 120 };

async function generate({ name, root, startMs }) {
  const pi = await import(pathToFileURL(join(root, "dist/index.js")).href);
  const compaction = await import(pathToFileURL(join(root, "dist/core/compaction/compaction.js")).href);
  const rng = prng(hashSeed(`audit-${name}`));
  installFakeClock(startMs);
  installSeededUuids(rng);
  const dir = mkdtempSync(join(tmpdir(), "treelog-audit-"));
  const sm = pi.SessionManager.create("/work/project", dir, { id: seededUuidV7(rng, startMs) });
  const step = () => clock.advance(1000 + Math.floor(rng.random() * 3000));
  let turnNumber = 0;

  const turn = () => {
    turnNumber += 1;
    const n = turnNumber;
    const words = `turn ${n}: ${"the session keeps every message it was given ".repeat(3)}`;
    step();
    sm.appendMessage({ role: "user", content: `Question ${n}. ${words}`, timestamp: clock.now() });
    step();
    sm.appendMessage({
      role: "assistant",
      content: [{ type: "toolCall", id: `call_${n}`, name: "read", arguments: { path: `src/file${n}.js` } }],
      api: "faux", provider: "faux", model: "faux-coder",
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "toolUse", timestamp: clock.now(),
    });
    step();
    sm.appendMessage({ role: "toolResult", toolCallId: `call_${n}`, toolName: "read", content: [{ type: "text", text: `contents of file ${n}. ${words}` }], isError: false, timestamp: clock.now() });
    step();
    sm.appendMessage({
      role: "assistant", content: [{ type: "text", text: `Answer ${n}. ${words}` }],
      api: "faux", provider: "faux", model: "faux-coder",
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "stop", timestamp: clock.now(),
    });
  };

  /** The ids of the entries whose messages pi's buildSessionContext gives for `leafId`. */
  const contextIds = (leafId) => {
    const entries = sm.getEntries();
    const { messages } = pi.buildSessionContext(entries, leafId);
    return messages.map((message) => idOfMessage(entries, message)).filter((id) => id !== null);
  };
  const events = [];

  const compact = (label) => {
    step();
    const leafId = sm.getLeafId();
    const preparation = compaction.prepareCompaction(sm.getBranch(), SETTINGS);
    if (!preparation) throw new Error(`${name}: nothing to compact at ${label}`);
    const entries = sm.getEntries();
    const given = [...preparation.messagesToSummarize, ...preparation.turnPrefixMessages]
      .map((message) => idOfMessage(entries, message))
      .filter((id) => id !== null);
    const before = contextIds(leafId);
    const id = sm.appendCompaction(`Summary ${label}.`, preparation.firstKeptEntryId, preparation.tokensBefore);
    events.push({ kind: "compaction", id, label, firstKeptEntryId: preparation.firstKeptEntryId, before, after: contextIds(id), given });
  };

  const navigateWithSummary = (targetId, label) => {
    step();
    const oldLeaf = sm.getLeafId();
    const { entries: collected } = pi.collectEntriesForBranchSummary(sm, oldLeaf, targetId);
    const given = collected.filter((entry) => entry.type === "message" || entry.type === "custom_message" || entry.type === "branch_summary").map((entry) => entry.id);
    const before = contextIds(oldLeaf);
    const id = sm.branchWithSummary(targetId, `Branch summary ${label}.`);
    events.push({ kind: "branch_summary", id, label, before, after: contextIds(id), given });
  };

  for (let i = 0; i < 4; i++) turn();
  compact("first");
  for (let i = 0; i < 3; i++) turn();
  compact("second");
  const afterSecond = sm.getLeafId();
  turn();
  turn();
  navigateWithSummary(afterSecond, "back to the second compaction");
  for (let i = 0; i < 3; i++) turn();
  compact("third");
  turn();

  const [file] = readdirSync(dir).filter((entry) => entry.endsWith(".jsonl"));
  mkdirSync(OUT, { recursive: true });
  copyFileSync(join(dir, file), join(OUT, `${name}.jsonl`));
  writeFileSync(join(OUT, `${name}.expect.json`), `${JSON.stringify({ pi: name, events }, null, 1)}\n`);
  rmSync(dir, { recursive: true, force: true });
  console.log(`wrote ${join(OUT, `${name}.jsonl`)}: ${events.length} events`);
}

/** The id of the message entry whose message is `message` (null for a summary message). */
function idOfMessage(entries, message) {
  if (message.role === "compactionSummary") return null;
  if (message.role === "branchSummary") {
    const found = entries.find((entry) => entry.type === "branch_summary" && entry.summary === message.summary && entry.fromId === message.fromId);
    return found ? found.id : null;
  }
  const text = JSON.stringify(message);
  const found = entries.find((entry) => entry.type === "message" && (entry.message === message || JSON.stringify(entry.message) === text));
  if (!found) throw new Error(`no entry holds the message ${text.slice(0, 80)}`);
  return found.id;
}

await runMain(async () => {
  for (const pi of PIS) await generate(pi);
});
