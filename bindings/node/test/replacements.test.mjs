// The launcher's replacements of pi's whole-history loops (hook/replacements.mjs): each applies
// to pi 1.6.0's own bundle, is listed in the README, is off with one line for another pi, and
// answers what pi's own code answers on the same session, the bundled transcripts, sessions pi
// writes, and hostile usage values included (where the index cannot answer, pi's own loop
// runs and must be what answers).
import assert from "node:assert/strict";
import { appendFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";

import { REPLACEMENTS, applyReplacements, bindingOf } from "../hook/replacements.mjs";
import * as branchSinceCompaction from "../hook/replacements/branch-since-compaction.mjs";
import * as compactionCount from "../hook/replacements/compaction-count.mjs";
import * as footerUsage from "../hook/replacements/footer-usage.mjs";
import * as sessionStats from "../hook/replacements/session-stats.mjs";
import * as sessionUsage from "../hook/replacements/session-usage.mjs";
import { DATA, TRANSCRIPTS, pi, sameJson, tempDir, treelog } from "./helpers.mjs";

const PI_ROOT = new URL("../node_modules/@earendil-works/pi-coding-agent/", import.meta.url);
const { addUsageToTotals, createUsageTotals } = await import(new URL("dist/core/usage-totals.js", PI_ROOT).href);
const { estimateProjectedContextTokens } = await import(new URL("dist/core/compaction/compaction.js", PI_ROOT).href);
const { calculateContextTokens } = await import(new URL("dist/core/compaction/compaction.js", PI_ROOT).href);
const { computeCacheWaste } = await import(new URL("dist/core/cache-stats.js", PI_ROOT).href);
const { getUsageCostBreakdown } = await import(new URL("dist/core/usage-totals.js", PI_ROOT).href);
const bundleChunk = () => {
  const runtime = readFileSync(new URL("dist/bundle/cli-runtime.js", PI_ROOT), "utf8");
  for (const [, chunk] of runtime.matchAll(/from"\.\/(chunks\/[\w.-]+\.js)"/g)) {
    const source = readFileSync(new URL(`dist/bundle/${chunk}`, PI_ROOT), "utf8");
    if (source.includes("var SessionManager=class _SessionManager{")) return source;
  }
  throw new Error("pi's bundle has no SessionManager chunk");
};

const dir = tempDir("treelog-replacements-");
after(() => rmSync(dir, { recursive: true, force: true }));

/** pi 1.6.0's footer loop itself, as its bundle holds it (the text the replacement keeps). */
const FOOTER_LOOP = footerUsage.find.slice(0, footerUsage.find.indexOf("let contextUsage="));
const piFooterLoop = new Function("sessionManager", "createUsageTotals", "addUsageToTotals", `${FOOTER_LOOP}return{usageTotals,latestCacheHitRate}`);
const piFooter = (manager) => piFooterLoop(manager, createUsageTotals, addUsageToTotals);
/** The replacement's answer for a treelog manager, with pi's loop as its fallback. */
const replacedFooter = (manager) => footerUsage.run(treelog, manager, () => piFooter(manager));

/** pi 1.6.0's AgentSession.getSessionStats loop itself, as its bundle holds it. */
const STATS_LOOP = sessionStats.find.slice("getSessionStats(){".length, sessionStats.find.indexOf("return{sessionFile:"));
const piStatsLoop = new Function("createUsageTotals", "addUsageToTotals", `${STATS_LOOP}return{userMessages,assistantMessages,toolResults,totalMessages,toolCalls,usageTotals}`);
const piStats = (manager) => piStatsLoop.call({ sessionManager: manager }, createUsageTotals, addUsageToTotals);
const replacedStats = (manager) => sessionStats.run(treelog, manager, () => piStats(manager));

/** pi's answer or what it threw, by message: a loop over a hostile session may throw. */
const outcome = (body) => {
  try {
    return { value: body() };
  } catch (error) {
    return { threw: `${error?.constructor?.name}: ${error?.message}` };
  }
};

test("every replacement applies to pi 1.6.0's own bundle, once, and is listed in the README", () => {
  const source = bundleChunk();
  const { applied, off, prelude, source: replaced } = applyReplacements(source, { version: "1.6.0", env: {} });
  assert.deepEqual(off, []);
  assert.deepEqual(applied, REPLACEMENTS.map(({ module }) => module.name));
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  for (const { module, url } of REPLACEMENTS) {
    for (const field of ["name", "replaces", "why"]) assert.equal(typeof module[field], "string", `${module.name}: ${field}`);
    assert.ok(readme.includes(`| \`${module.name}\` |`), `the README lists ${module.name}`);
    assert.ok(module.patch || (source.includes(module.find) && !replaced.includes(module.find)), `${module.name} replaced its text`);
    if (module.run) {
      assert.ok(replaced.includes(bindingOf(module.name)), `${module.name}'s code calls its binding`);
      assert.ok(prelude.includes(url.href), `${module.name} is imported by the chunk`);
    }
  }
});

test("the replacements are off, with one line, for another pi version, or alone when their code is missing", () => {
  const source = bundleChunk();
  const other = applyReplacements(source, { version: "1.7.0", env: {} });
  assert.equal(other.source, source);
  assert.deepEqual(other.applied, []);
  assert.equal(other.off.length, 1);
  assert.match(other.off[0], /pi 1\.7\.0: .*off \(written for pi 1\.6\.x\)/);
  const without = applyReplacements(source.replace(footerUsage.find, ""), { version: "1.6.0", env: {} });
  assert.deepEqual(without.applied, REPLACEMENTS.map(({ module }) => module.name).filter((name) => name !== "footer-usage"));
  assert.equal(without.off.length, 1);
  assert.match(without.off[0], /replacement footer-usage is off/);
  assert.deepEqual(applyReplacements(source, { version: "1.6.0", env: { TREELOG_PI_REPLACE: "0" } }).applied, []);
  assert.deepEqual(
    applyReplacements(source, { version: "1.6.0", env: { TREELOG_PI_REPLACE: "-footer-usage" } }).applied,
    REPLACEMENTS.map(({ module }) => module.name).filter((name) => name !== "footer-usage"),
  );
});

test("the compaction count and the footer's usage totals are pi's on every bundled transcript", () => {
  for (const name of TRANSCRIPTS) {
    const file = join(DATA, `${name}.jsonl`);
    const copy = join(dir, `${name}.jsonl`);
    writeFileSync(copy, readFileSync(file));
    const ours = treelog.SessionManager.open(copy);
    const theirs = pi.SessionManager.open(file);
    assert.equal(compactionCount.run(treelog, ours), theirs.getEntries().filter((e) => e.type === "compaction").length, `${name}: compactions`);
    sameJson(replacedFooter(ours), piFooter(theirs), `${name}: footer totals`);
    assert.ok(treelog.indexedSessionStats(ours), `${name}: the index answers the session statistics`);
    sameJson(replacedStats(ours), piStats(theirs), `${name}: session statistics`);
  }
});

/** A usage of numbers, as pi's providers report it. */
const usage = (input, output, cacheRead, cacheWrite, total) => ({
  input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite,
  cost: { input: total / 2, output: total / 2, cacheRead: 0, cacheWrite: 0, total },
});
const assistant = (n, u) => ({
  role: "assistant", content: [{ type: "text", text: `answer ${n}` }], api: "faux", provider: "faux", model: "m1", usage: u, stopReason: "stop", timestamp: 1735722000000 + n,
});

test("the footer's totals come from the index, follow appends, and add in pi's order", () => {
  const file = join(dir, "appends.jsonl");
  const writer = pi.SessionManager.open(file);
  writer.appendMessage({ role: "user", content: "hi", timestamp: 1 });
  // Costs whose float sum depends on the order they are added in.
  for (let n = 0; n < 50; n++) writer.appendMessage(assistant(n, usage(n * 1000 + 1, n, n % 3 === 0 ? 0 : 500, 7, 0.1 + n * 1e-17)));
  writer.appendMessage({ role: "toolResult", toolCallId: "c", toolName: "bash", content: [], isError: false, timestamp: 2, usage: usage(3, 4, 5, 6, 0.3) });
  writer.appendCompaction("summary", writer.getLeafId(), 1000, undefined, false, usage(11, 12, 13, 14, 0.7));
  const ours = treelog.SessionManager.open(file);
  assert.ok(treelog.indexedUsageTotals(ours), "the index answers");
  sameJson(replacedFooter(ours), piFooter(pi.SessionManager.open(file)), "after the open");
  // Appended by treelog's manager: the totals follow without a reopen.
  ours.appendMessage(assistant(99, usage(1, 2, 3, 4, 0.05)));
  ours.appendCompaction("again", ours.getLeafId(), 5, undefined, false, usage(1, 1, 1, 1, 0.01));
  assert.ok(treelog.indexedUsageTotals(ours));
  sameJson(replacedFooter(ours), piFooter(pi.SessionManager.open(file)), "after appends");
  sameJson(replacedStats(ours), piStats(pi.SessionManager.open(file)), "session statistics after appends");
  assert.equal(compactionCount.run(treelog, ours), 2);
  // The sums stored by the flush are read back by the next open.
  sameJson(replacedFooter(treelog.SessionManager.open(file)), piFooter(pi.SessionManager.open(file)), "after a reopen");
});

test("usage values pi cannot sum as numbers leave the answer to pi's own loop", () => {
  const base = pi.SessionManager.open(join(dir, "base.jsonl"));
  base.appendMessage({ role: "user", content: "hi", timestamp: 1 });
  base.appendMessage(assistant(1, usage(10, 1, 5, 5, 0.2)));
  const baseText = readFileSync(join(dir, "base.jsonl"), "utf8");
  const line = (entry) => `${JSON.stringify({ id: Math.random().toString(16).slice(2, 10), parentId: null, timestamp: "2026-01-01T00:00:00.000Z", ...entry })}\n`;
  const cases = {
    "a string token count": [line({ type: "message", message: assistant(2, { ...usage(1, 1, 1, 1, 1), input: "12" }) })],
    "an assistant without usage": [line({ type: "message", message: { role: "assistant", content: [] } })],
    "a usage entry without usage": [line({ type: "usage", kind: "x", provider: "p", model: "m" })],
    "a null message": [line({ type: "message", message: null })],
    "a truthy non-object tool usage": [line({ type: "message", message: { role: "toolResult", toolCallId: "c", content: [], usage: "yes" } })],
    // Summed or skipped as numbers: the index answers these.
    "a falsy tool usage": [line({ type: "message", message: { role: "toolResult", toolCallId: "c", content: [], usage: 0 } })],
    "a compaction with a null usage": [line({ type: "compaction", summary: "s", firstKeptEntryId: "x", tokensBefore: 1, usage: null })],
    "a usage entry": [line({ type: "usage", kind: "cache_warm", provider: "p", model: "m", usage: usage(1, 2, 3, 4, 0.5) })],
    "a branch summary's usage": [line({ type: "branch_summary", fromId: "root", summary: "s", usage: usage(2, 2, 2, 2, 0.25) })],
    "a zero prompt": [line({ type: "message", message: assistant(3, usage(0, 5, 0, 0, 0)) })],
    "tool calls": [line({ type: "message", message: { ...assistant(4, usage(1, 1, 0, 0, 0)), content: [{ type: "toolCall", id: "a" }, { type: "text" }, "toolCall", 3, [], { type: "toolCall" }] } })],
    "a null content item": [line({ type: "message", message: { ...assistant(5, usage(1, 1, 0, 0, 0)), content: [{ type: "toolCall" }, null] } })],
    "repeated keys": [`{"type":"message","id":"rk000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","usage":{"input":1,"output":1,"cacheRead":1,"cacheWrite":1,"cost":{"total":1}},"usage":{"input":2,"input":3,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5,"total":0.125}}}}\n`],
  };
  const indexed = new Set(["a falsy tool usage", "a compaction with a null usage", "a usage entry", "a branch summary's usage", "a zero prompt", "repeated keys", "tool calls", "a null content item"]);
  const statsIndexed = new Set([...indexed].filter((what) => what !== "a null content item"));
  for (const [what, lines] of Object.entries(cases)) {
    const file = join(dir, `${what.replace(/\W+/g, "-")}.jsonl`);
    writeFileSync(file, baseText);
    for (const text of lines) appendFileSync(file, text);
    const ours = treelog.SessionManager.open(file);
    assert.equal(treelog.indexedUsageTotals(ours) !== undefined, indexed.has(what), `${what}: whether the index answers`);
    assert.deepEqual(outcome(() => replacedFooter(ours)), outcome(() => piFooter(pi.SessionManager.open(file))), what);
    assert.equal(treelog.indexedSessionStats(ours) !== undefined, statsIndexed.has(what), `${what}: whether the index answers the statistics`);
    assert.deepEqual(outcome(() => replacedStats(ours)), outcome(() => piStats(pi.SessionManager.open(file))), `${what}: statistics`);
  }
});

test("for a manager that is not treelog's, the replacements run pi's own code", () => {
  const file = join(dir, "pi-manager.jsonl");
  const manager = pi.SessionManager.open(file);
  manager.appendMessage({ role: "user", content: "hi", timestamp: 1 });
  manager.appendMessage(assistant(1, usage(10, 1, 5, 5, 0.2)));
  assert.equal(treelog.indexedUsageTotals(manager), undefined);
  assert.equal(treelog.indexedKindCount(manager, "compaction"), undefined);
  sameJson(replacedFooter(manager), piFooter(manager), "footer");
  assert.equal(compactionCount.run(treelog, manager), 0);
  sameJson(replacedStats(manager), piStats(manager), "statistics");
});

test("the launcher's chunk imports resolve: the prelude names files that exist and export run", async () => {
  for (const { module, url } of REPLACEMENTS) {
    if (!module.run) continue;
    const loaded = await import(url.href);
    assert.equal(loaded.run, module.run, `${module.name}: the URL is the registered module`);
  }
  assert.equal(typeof (await import(pathToFileURL(join(import.meta.dirname, "../index.js")).href)).indexedUsageTotals, "function");
});

/**
 * pi 1.6.0's AgentSession.getContextUsage after its model checks, with the branch it is
 * handed: what the replaced code computes from the branch since the latest compaction.
 */
function contextUsage(manager, branch, contextWindow = 200000) {
  const projection = manager.buildSessionProjection();
  const latestCompaction = pi.getLatestCompactionEntry(branch);
  if (latestCompaction) {
    const projectedAssistants = new Set(projection.entries.flatMap((entry) => entry.messages.some((message) => message.role === "assistant" &&
      message.stopReason !== "aborted" && message.stopReason !== "error" && calculateContextTokens(message.usage) > 0)
      ? [entry.sourceEntry.id]
      : []));
    const compactionIndex = branch.findIndex((entry) => entry.id === latestCompaction.id);
    const hasPostCompactionUsage = branch.slice(compactionIndex + 1).some((entry) => projectedAssistants.has(entry.id));
    if (!hasPostCompactionUsage) return { tokens: null, contextWindow, percent: null };
  }
  const estimate = estimateProjectedContextTokens(projection, branch);
  return { tokens: estimate.tokens, contextWindow, percent: (estimate.tokens / contextWindow) * 100, estimate };
}

test("the branch since the latest compaction gives pi's context usage, latest compaction and threshold estimate", () => {
  const file = join(dir, "compacted.jsonl");
  const writer = pi.SessionManager.open(file);
  writer.appendMessage({ role: "user", content: "hi", timestamp: 1 });
  const ids = [];
  for (let n = 0; n < 30; n++) {
    ids.push(writer.appendMessage(n % 2 ? assistant(n, usage(100 + n, 10, 50, 5, 0.01)) : { role: "user", content: `q ${n}`, timestamp: 2 + n }));
    if (n === 9 || n === 21) writer.appendCompaction(`summary ${n}`, ids.at(-3), 5000, undefined, false);
  }
  const checks = (what) => {
    const ours = treelog.SessionManager.open(file);
    const theirs = pi.SessionManager.open(file);
    const tail = branchSinceCompaction.run(treelog, ours);
    const whole = ours.getBranch();
    assert.ok(tail.length < whole.length || !whole.some((e) => e.type === "compaction"), `${what}: a tail, when there is a compaction`);
    assert.equal(pi.getLatestCompactionEntry(tail), pi.getLatestCompactionEntry(whole), `${what}: the same latest compaction value`);
    sameJson(pi.getLatestCompactionEntry(tail), pi.getLatestCompactionEntry(theirs.getBranch()), `${what}: pi's latest compaction`);
    sameJson(contextUsage(ours, tail), contextUsage(theirs, theirs.getBranch()), `${what}: context usage`);
    sameJson(estimateProjectedContextTokens(ours.buildSessionProjection(), tail), estimateProjectedContextTokens(theirs.buildSessionProjection(), theirs.getBranch()), `${what}: the threshold estimate`);
  };
  checks("after two compactions and answers");
  // A compaction as the leaf: no usage after it yet.
  writer.appendCompaction("summary last", writer.getLeafId(), 6000, undefined, false);
  checks("a compaction as the leaf");
  // A context edit after the last answer invalidates its usage.
  writer.appendMessage(assistant(40, usage(900, 10, 0, 0, 0.02)));
  writer.appendContextEdit(writer.getLeafId(), null);
  checks("a context edit after the last answer");
  // Back on a branch before any compaction: the whole path.
  writer.branch(ids[3]);
  writer.appendMessage(assistant(41, usage(5, 1, 0, 0, 0)));
  checks("a branch with no compaction");
  for (const name of TRANSCRIPTS) {
    const copy = join(dir, `${name}.jsonl`);
    writeFileSync(copy, readFileSync(join(DATA, `${name}.jsonl`)));
    const ours = treelog.SessionManager.open(copy);
    const theirs = pi.SessionManager.open(join(DATA, `${name}.jsonl`));
    const tail = branchSinceCompaction.run(treelog, ours);
    sameJson(contextUsage(ours, tail), contextUsage(theirs, theirs.getBranch()), `${name}: context usage`);
    sameJson(pi.getLatestCompactionEntry(tail), pi.getLatestCompactionEntry(theirs.getBranch()), `${name}: latest compaction`);
  }
});

/** pi 1.6.0's /session sums, run as pi runs them. */
/** A model registry as pi's modelRuntime answers getModel: a price for some models only. */
const MODELS = { getModel: (provider, model) => (model === "m1" ? { cost: { cacheRead: 0.3 } } : undefined) };
/** What /session computes from the entries it is handed. */
const sessionSums = (entries) => ({ cacheWaste: computeCacheWaste(entries, MODELS), usageBreakdown: getUsageCostBreakdown(entries) });

/** A usage with its cost split as providers report it. */
const pricedUsage = (input, output, cacheRead, cacheWrite) => ({
  input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite,
  cost: { input: input * 3e-6, output: output * 15e-6, cacheRead: cacheRead * 3e-7, cacheWrite: cacheWrite * 3.75e-6, total: input * 3e-6 + output * 15e-6 + cacheRead * 3e-7 + cacheWrite * 3.75e-6 },
});

/** A session pi writes whose /session shows cache misses of every kind and several models. */
function writeCacheSession(file) {
  const writer = pi.SessionManager.open(file);
  writer.appendMessage({ role: "user", content: "hi", timestamp: 1 });
  const turn = (n, model, u, extra = {}) => writer.appendMessage({ ...assistant(n, u), model, timestamp: 1735722000000 + n * 60000, ...extra });
  turn(1, "m1", pricedUsage(100, 10, 0, 20000));
  turn(2, "m1", pricedUsage(50, 10, 20000, 200)); // a hit
  turn(3, "m1", pricedUsage(100, 10, 0, 20300)); // a total miss: priced from the registry
  turn(4, "m1", pricedUsage(5000, 10, 15000, 400)); // a partial miss, priced from its own cost
  turn(5, "m2", pricedUsage(21000, 10, 0, 0), { responseModel: "m2-2025" }); // a model switch, no registry price
  writer.appendMessage({ role: "toolResult", toolCallId: "c", toolName: "bash", content: [], isError: false, timestamp: 2, usage: pricedUsage(3, 4, 5, 6) });
  writer.appendUsage("cache_warm", "faux", "m1", pricedUsage(1, 0, 21000, 0));
  turn(6, "m1", pricedUsage(2000, 10, 0, 19000)); // a miss after a warm-up
  writer.appendCompaction("summary", writer.getLeafId(), 1000, undefined, false, pricedUsage(11, 12, 13, 14));
  turn(7, "m1", pricedUsage(100, 10, 0, 5000)); // after the reset: not a miss
  turn(8, "m1", pricedUsage(3000, 10, 0, 2100)); // a miss again
  writer.appendUsage("other", "faux2", "m9", pricedUsage(7, 7, 0, 0));
  return writer;
}

test("/session's cache waste and cost breakdown over the cut-down entries are pi's, on every transcript and on misses of every kind", () => {
  for (const name of TRANSCRIPTS) {
    const file = join(DATA, `${name}.jsonl`);
    const copy = join(dir, `usage-${name}.jsonl`);
    writeFileSync(copy, readFileSync(file));
    const ours = treelog.SessionManager.open(copy);
    assert.ok(treelog.indexedUsageEntries(ours), `${name}: the index answers`);
    sameJson(sessionSums(sessionUsage.run(treelog, ours)), sessionSums(pi.SessionManager.open(file).getEntries()), `${name}: /session sums`);
  }
  const file = join(dir, "cache-misses.jsonl");
  writeCacheSession(file);
  const theirs = sessionSums(pi.SessionManager.open(file).getEntries());
  assert.equal(theirs.cacheWaste.missCount, 5, "the session holds the misses it is made for");
  assert.equal(theirs.usageBreakdown.length, 4, "and usage of four keys (with a responseModel, tools and summaries, a usage entry)");
  const ours = treelog.SessionManager.open(file);
  sameJson(sessionSums(sessionUsage.run(treelog, ours)), theirs, "after the open");
  // Appended by treelog's manager (not yet flushed): the entries follow.
  ours.appendMessage({ ...assistant(20, pricedUsage(4000, 1, 0, 3000)), model: "m1" });
  ours.branchWithSummary(ours.getLeafId(), "s", undefined, false, pricedUsage(1, 1, 1, 1));
  sameJson(sessionSums(sessionUsage.run(treelog, ours)), sessionSums(pi.SessionManager.open(file).getEntries()), "after appends");
  sameJson(sessionSums(sessionUsage.run(treelog, treelog.SessionManager.open(file))), sessionSums(pi.SessionManager.open(file).getEntries()), "after a reopen");
});

test("/session's sums leave a session whose lines pi reads otherwise, or a manager not treelog's, to pi's getEntries()", () => {
  const file = join(dir, "usage-null-message.jsonl");
  writeCacheSession(file);
  appendFileSync(file, `${JSON.stringify({ type: "message", id: "nullmsg1", parentId: null, timestamp: "2026-01-01T00:00:00.000Z", message: null })}\n`);
  const ours = treelog.SessionManager.open(file);
  assert.equal(treelog.indexedUsageEntries(ours), undefined);
  assert.deepEqual(outcome(() => sessionSums(sessionUsage.run(treelog, ours))), outcome(() => sessionSums(pi.SessionManager.open(file).getEntries())));
  assert.match(outcome(() => sessionSums(sessionUsage.run(treelog, ours))).threw ?? "", /TypeError/, "pi's code throws on it, and so does the replaced code");
  const manager = writeCacheSession(join(dir, "usage-pi-manager.jsonl"));
  assert.equal(treelog.indexedUsageEntries(manager), undefined);
  sameJson(sessionSums(sessionUsage.run(treelog, manager)), sessionSums(manager.getEntries()));
});
