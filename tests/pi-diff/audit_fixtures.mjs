// Writes tests/data/audit/pi{16,073,063}.jsonl: sessions compacted by the compaction code of
// pi 1.6.0, pi 0.73.1 and pi 0.63.0 (the last pi before the fix of prepareCompaction's range,
// which at a second compaction drops the first one's kept messages), and beside each a
// `.expect.json` with, for every compaction and branch summary, what that pi's own functions
// say: the entries whose messages `buildSessionContext` shows just before it (`before`) and
// just after it (`after`), and the entries whose messages its summarizer was given (`given`).
// A compaction's summary comes from pi's own `compact()` calling a model through pi-ai: the
// model is a provider registered here (pi 0.63.0's pi-ai has no faux provider) that answers
// with fixed text and keeps each request, and `given` is the entries whose messages that
// request holds, which must be `prepareCompaction`'s messagesToSummarize and
// turnPrefixMessages. A branch summary's `given` is `collectEntriesForBranchSummary`'s
// entries. tests/it/audit.rs checks `treelog audit` against them. pi's clock and id source
// are seeded (common.mjs), so the same pi gives the same bytes.
//
//   (cd bindings/node && npm ci --ignore-scripts)
//   npm install --prefix /tmp/pi063 @mariozechner/pi-coding-agent@0.63.0   # or PI063_DIR=...
//   bindings/node/node_modules/.bin/node tests/pi-diff/audit_fixtures.mjs
//
// CI (.ci/run) writes them to a temporary folder instead (`--out DIR`) and checks them
// (`--check TREELOG`): each session must be byte for byte the committed fixture, and
// `TREELOG audit --json --all-branches` must find, for each event, what left pi's context and
// class it by what each pi's summarizer was given, as tests/it/audit.rs does.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { resolvePinned } from "../../bindings/node/test/pi-project.mjs";
import { clock, hashSeed, installFakeClock, installSeededUuids, parseArgs, prng, runMain, seededUuidV7 } from "./common.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const COMMITTED = resolve(HERE, "../data/audit");
const ARGS = parseArgs(process.argv.slice(2));
const OUT = ARGS.out ? resolve(ARGS.out) : COMMITTED;
const PI063_DIR = process.env.PI063_DIR ?? "/tmp/pi063/node_modules/@mariozechner/pi-coding-agent";

/** Each pi: where its package is, and when its sessions are stamped (0.63.0 before the fix). */
const PIS = [
  { name: "pi16", root: packageRoot("@earendil-works/pi-coding-agent"), ai: "@earendil-works/pi-ai", startMs: Date.UTC(2026, 10, 2, 9) },
  { name: "pi073", root: packageRoot("@mariozechner/pi-coding-agent"), ai: "@mariozechner/pi-ai", startMs: Date.UTC(2026, 5, 1, 9) },
  { name: "pi063", root: PI063_DIR, ai: "@mariozechner/pi-ai", startMs: Date.UTC(2026, 2, 10, 9) },
];

function packageRoot(specifier) {
  // The index is dist/index.js under the package's root.
  return resolve(dirname(fileURLToPath(resolvePinned(specifier))), "..");
}

const SETTINGS = { enabled: true, reserveTokens: 1000, keepRecentTokens: 120 };

/** The folder of package `name` as the package at `root` resolves it (its node_modules, then
 * those of the folders above it). */
function dependencyRoot(root, name) {
  for (let dir = root; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dirname(dir) === dir) throw new Error(`${name} not found from ${root}`);
  }
}

/** The text of a summarizer request's messages. */
function requestText(context) {
  return context.messages
    .map((message) => (typeof message.content === "string" ? message.content : message.content.map((block) => block.text ?? "").join("\n")))
    .join("\n");
}

/** A model in the pi-ai that pi at `root` calls, which answers every request with `Summary.`
 * and keeps the request's text in `requests`: pi-ai's faux provider where it has one (0.73.1 in
 * `providers/faux.js`, 1.6.0 in `compat.js`), else (0.63.0) a provider registered here. */
async function capturingModel(root, aiName, requests) {
  const dir = dependencyRoot(root, aiName);
  for (const file of ["dist/compat.js", "dist/providers/faux.js"]) {
    if (!existsSync(join(dir, file))) continue;
    const faux = await import(pathToFileURL(join(dir, file)).href);
    if (typeof faux.registerFauxProvider !== "function") continue;
    const registration = faux.registerFauxProvider({ provider: "treelog-capture", models: [{ id: "capture", contextWindow: 1_000_000, maxTokens: 8192 }] });
    const answer = (context) => {
      requests.push(requestText(context));
      return faux.fauxAssistantMessage("Summary.");
    };
    return { model: registration.getModel(), ready: () => registration.setResponses(Array.from({ length: 8 }, () => answer)) };
  }
  const ai = await import(pathToFileURL(join(dir, "dist/index.js")).href);
  const api = "treelog-capture";
  const model = {
    id: "capture", name: "capture", api, provider: "treelog-capture", baseUrl: "http://127.0.0.1:9",
    reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 1_000_000, maxTokens: 8192,
  };
  const stream = (_model, context) => {
    requests.push(requestText(context));
    const events = ai.createAssistantMessageEventStream();
    const message = {
      role: "assistant", content: [{ type: "text", text: "Summary." }], api, provider: model.provider, model: model.id,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "stop", timestamp: 0,
    };
    queueMicrotask(() => {
      events.push({ type: "done", reason: "stop", message });
      events.end(message);
    });
    return events;
  };
  ai.registerApiProvider({ api, stream, streamSimple: stream }, "treelog-audit-fixtures");
  return { model, ready: () => {} };
}

async function generate({ name, root, ai, startMs }) {
  const pi = await import(pathToFileURL(join(root, "dist/index.js")).href);
  const compaction = await import(pathToFileURL(join(root, "dist/core/compaction/compaction.js")).href);
  const requests = [];
  const summarizer = await capturingModel(root, ai, requests);
  /** Entry id → a text only its message holds, as the summarizer's request shows it. */
  const markers = new Map();
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
    markers.set(sm.appendMessage({ role: "user", content: `Question ${n}. ${words}`, timestamp: clock.now() }), `Question ${n}.`);
    step();
    markers.set(sm.appendMessage({
      role: "assistant",
      content: [{ type: "toolCall", id: `call_${n}`, name: "read", arguments: { path: `src/file${n}.js` } }],
      api: "faux", provider: "faux", model: "faux-coder",
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "toolUse", timestamp: clock.now(),
    }), `src/file${n}.js`);
    step();
    markers.set(sm.appendMessage({ role: "toolResult", toolCallId: `call_${n}`, toolName: "read", content: [{ type: "text", text: `contents of file ${n}. ${words}` }], isError: false, timestamp: clock.now() }), `contents of file ${n}.`);
    step();
    markers.set(sm.appendMessage({
      role: "assistant", content: [{ type: "text", text: `Answer ${n}. ${words}` }],
      api: "faux", provider: "faux", model: "faux-coder",
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "stop", timestamp: clock.now(),
    }), `Answer ${n}.`);
  };

  /** The ids of the entries whose messages pi's buildSessionContext gives for `leafId`. */
  const contextIds = (leafId) => {
    const entries = sm.getEntries();
    const { messages } = pi.buildSessionContext(entries, leafId);
    return messages.map((message) => idOfMessage(entries, message)).filter((id) => id !== null);
  };
  const events = [];

  const compact = async (label) => {
    step();
    const leafId = sm.getLeafId();
    const preparation = compaction.prepareCompaction(sm.getBranch(), SETTINGS);
    if (!preparation) throw new Error(`${name}: nothing to compact at ${label}`);
    const entries = sm.getEntries();
    const prepared = [...preparation.messagesToSummarize, ...preparation.turnPrefixMessages]
      .map((message) => idOfMessage(entries, message))
      .filter((id) => id !== null);
    // What pi's own compact() sent the summarizer: the entries whose text its requests hold.
    requests.length = 0;
    summarizer.ready();
    await compaction.compact(preparation, summarizer.model, "no-key");
    if (requests.length === 0) throw new Error(`${name} ${label}: compact() sent no request`);
    const given = [...markers].filter(([, marker]) => requests.some((text) => text.includes(marker))).map(([id]) => id);
    if (JSON.stringify([...given].sort()) !== JSON.stringify([...prepared].sort())) {
      throw new Error(`${name} ${label}: the summarizer was given ${JSON.stringify(given)}, prepareCompaction says ${JSON.stringify(prepared)}`);
    }
    const before = contextIds(leafId);
    const id = sm.appendCompaction(`Summary ${label}.`, preparation.firstKeptEntryId, preparation.tokensBefore);
    events.push({ kind: "compaction", id, label, firstKeptEntryId: preparation.firstKeptEntryId, before, after: contextIds(id), given: prepared });
  };

  const navigateWithSummary = (targetId, label) => {
    step();
    const oldLeaf = sm.getLeafId();
    const { entries: collected } = pi.collectEntriesForBranchSummary(sm, oldLeaf, targetId);
    const given = collected.filter((entry) => entry.type === "message" || entry.type === "custom_message" || entry.type === "branch_summary").map((entry) => entry.id);
    const before = contextIds(oldLeaf);
    const id = sm.branchWithSummary(targetId, `Branch summary ${label}.`);
    markers.set(id, `Branch summary ${label}.`);
    events.push({ kind: "branch_summary", id, label, before, after: contextIds(id), given });
  };

  for (let i = 0; i < 4; i++) turn();
  await compact("first");
  for (let i = 0; i < 3; i++) turn();
  await compact("second");
  const afterSecond = sm.getLeafId();
  turn();
  turn();
  navigateWithSummary(afterSecond, "back to the second compaction");
  for (let i = 0; i < 3; i++) turn();
  await compact("third");
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

/** The ids of a list in `value`, as a sorted array. */
const sorted = (ids) => [...ids].sort();
const same = (a, b) => JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));

/** `treelog audit --json --all-branches` of `log`: exit 0 (nothing at risk) or 1 (some). */
function auditJson(treelog, log) {
  try {
    return execFileSync(treelog, ["audit", "--json", "--all-branches", log], { encoding: "utf8" });
  } catch (error) {
    if (error.status === 1 && error.stdout) return error.stdout;
    throw error;
  }
}

/** Checks a session written to OUT against the committed fixture and `treelog audit`. */
function check(name, treelog) {
  const failures = [];
  const log = join(OUT, `${name}.jsonl`);
  // pi 0.73.1 draws the session id itself, unseeded: the header's id is left out.
  const withoutSessionId = (file) => {
    const text = readFileSync(file, "utf8");
    const end = text.indexOf("\n");
    const { id: _, ...header } = JSON.parse(text.slice(0, end));
    return JSON.stringify(header) + text.slice(end);
  };
  if (withoutSessionId(log) !== withoutSessionId(join(COMMITTED, `${name}.jsonl`))) {
    failures.push(`${name}: the session differs from tests/data/audit/${name}.jsonl`);
  }
  const { events } = JSON.parse(readFileSync(join(OUT, `${name}.expect.json`), "utf8"));
  const audit = JSON.parse(auditJson(treelog, log));
  if (audit.events.length !== events.length) failures.push(`${name}: ${audit.events.length} events audited, pi made ${events.length}`);
  events.forEach((wanted, at) => {
    const event = audit.events[at] ?? { left: [] };
    const label = `${name} ${wanted.label}`;
    const of = (cls) => event.left.filter((entry) => entry.class === cls).map((entry) => entry.id);
    const left = wanted.before.filter((id) => !wanted.after.includes(id));
    if (event.id !== wanted.id || event.kind !== wanted.kind) failures.push(`${label}: audited ${event.kind} ${event.id}`);
    if (!same(event.left.map((entry) => entry.id), left)) failures.push(`${label}: what left pi's context differs`);
    if (name === "pi063") {
      // The old range: what 0.63.0 summarized is the summarized class, the rest is at risk.
      if (!same(of("summarized"), wanted.given)) failures.push(`${label}: summarized is not what 0.63.0 was given`);
      if (!same(of("atRisk"), left.filter((id) => !wanted.given.includes(id)))) failures.push(`${label}: at risk is not what 0.63.0 dropped`);
    } else if (!same([...of("summarized"), ...of("atRisk")], wanted.given)) {
      failures.push(`${label}: summarized and at risk are not what pi was given`);
    }
    if (of("dropped").length > 0) failures.push(`${label}: entries outside both ranges`);
  });
  const holes = audit.events.reduce((sum, event) => sum + event.left.filter((entry) => entry.class === "atRisk").length, 0);
  console.log(`${name}: ${events.length} events checked, ${holes} at risk`);
  return failures;
}

await runMain(async () => {
  for (const pi of PIS) await generate(pi);
  if (ARGS.check) {
    const failures = PIS.flatMap((pi) => check(pi.name, resolve(ARGS.check)));
    if (failures.length > 0) {
      for (const failure of failures) console.error(failure);
      process.exit(1);
    }
    console.log("treelog audit agrees with pi 1.6.0, 0.73.1 and 0.63.0");
  }
});
