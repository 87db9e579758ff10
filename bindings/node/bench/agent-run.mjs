// One measurement of pi 1.6.0's agent in a fresh process (agent.mjs runs it):
//
//   agent-run.mjs IMPL FILE PROMPTS   IMPL is treelog or pi-1.6.0; FILE is a private copy of a
//                                     pi-written session, which the run appends to
//   agent-run.mjs reopen FILE OUT     pi 1.6.0's own SessionManager.open(FILE).buildSessionContext(),
//                                     written to OUT as JSON (the correctness check)
//
// The run: SessionManager.open(FILE) and createAgentSession({ sessionManager }) (resume), PROMPTS
// prompts, session.compact(), then session.navigateTree(target, { summarize: true }) to the entry
// NAVIGATE_BACK entries behind the leaf the session was resumed at. pi-ai's faux provider answers
// every model call (prompts and both summaries) at once, offline. The clock (Date and
// performance.now()) is fake and ids are seeded (tests/pi-diff/common.mjs), so pi's run and
// treelog's write the same bytes; the timings read the real performance.now(). Every method of
// the SessionManager instance is wrapped to time the calls pi's agent makes (calls a method makes
// on its own instance are part of the outer call's time, not counted again).
//
// Prints one JSON object: resumeMs, promptMs (one per prompt), compactMs, navigateMs,
// peakRssMiB (RSS sampled every 5 ms and after each step) and methods: per method its calls per
// step, the first call's ms and every later call's ms.
import { closeSync, fstatSync, mkdirSync, openSync, readSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { clock, installFakeClock, installSeededUuids, prng } from "../../../tests/pi-diff/common.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const PI = join(HERE, "../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const [impl, file, third] = process.argv.slice(2);

if (impl === "reopen") {
  const { SessionManager } = await import(pathToFileURL(PI).href);
  writeFileSync(third, JSON.stringify(SessionManager.open(file).buildSessionContext()));
  process.exit(0);
}

/** The last entry of a session file (read from its last MiB: the file may exceed a string). */
function lastEntry(path) {
  const fd = openSync(path, "r");
  const size = fstatSync(fd).size;
  const buffer = Buffer.alloc(Math.min(1 << 20, size));
  readSync(fd, buffer, 0, buffer.length, size - buffer.length);
  closeSync(fd);
  const text = buffer.toString("utf8").trimEnd();
  return JSON.parse(text.slice(text.lastIndexOf("\n") + 1));
}

const NAVIGATE_BACK = 50;
// The fake clock starts a minute after the session's last entry, wherever the machine's clock
// stood when it was written: pi compares new answers' timestamps with its compactions'.
const START_MS = Date.parse(lastEntry(file).timestamp) + 60_000;
const prompts = Number(third);
const sdk = await import("@earendil-works/pi-coding-agent");
const ai = await import("@earendil-works/pi-ai");
const { SessionManager } = await import(pathToFileURL(impl === "treelog" ? join(HERE, "../index.js") : PI).href);

installFakeClock(START_MS);
installSeededUuids(prng(16));
// pi writes durations it measures with performance.now() (an answer's durationMs): they read
// the fake clock too, and the timings below read the real one.
const now = performance.now.bind(performance);
Object.defineProperty(performance, "now", { value: () => clock.now(), configurable: true, writable: true });

// The model plumbing, as test/agent.test.mjs sets it up: 1.6.0's createAgentSession looks
// models up in its own ModelRuntime, here an in-memory one with fauxProvider() registered.
const modelRuntime = await sdk.ModelRuntime.create({
  credentials: new ai.InMemoryCredentialStore(), modelsPath: null, allowModelNetwork: false, refreshOnCreate: false,
});
// A 1M-token context window: automatic compaction stays on (pi's default), so its checks run
// after every answer as in a real session, but it never fires (the 1k session's context is
// about 240k tokens; the larger ones carry compactions), leaving compact() to the step below.
const faux = ai.fauxProvider({ api: "faux", provider: "faux", models: [{ id: "faux-1", contextWindow: 1_000_000 }] });
modelRuntime.registerNativeProvider(faux.provider);
const model = modelRuntime.getModel("faux", "faux-1");
// One plain answer per model call: a prompt, a compaction (one or two calls), a branch summary.
faux.setResponses(Array.from({ length: prompts + 8 }, () => () => ai.fauxAssistantMessage("Noted; carrying on.")));

/** A resource loader that discovers nothing: no extensions, skills or context files. */
const resourceLoader = {
  getExtensions: () => ({ extensions: [], errors: [], runtime: sdk.createExtensionRuntime() }),
  getSkills: () => ({ skills: [], diagnostics: [] }),
  getPrompts: () => ({ prompts: [], diagnostics: [] }),
  getThemes: () => ({ themes: [], diagnostics: [] }),
  getAgentsFiles: () => ({ agentsFiles: [] }),
  getSystemPrompt: () => "You are a benchmark agent. Be brief.",
  getSystemPromptSource: () => undefined,
  getAppendSystemPrompt: () => [],
  getAppendSystemPromptSources: () => [],
  extendResources: () => {},
  reload: async () => {},
};
// Retries and cache warming off: the steps below make the only model calls. keepRecentTokens
// is small so that compact() has something to summarise right after the compaction entries of
// the generated sessions (which keep their last 20 entries, about 5k tokens).
const settingsManager = sdk.SettingsManager.inMemory({
  compaction: { keepRecentTokens: 2000 }, retry: { enabled: false }, cacheWarming: "off",
});
// The same directories on both sides: the cwd is written into the session (pi's system message).
const cwd = join(HERE, ".data/agent-cwd");
const agentDir = join(HERE, ".data/agent-home");
for (const dir of [cwd, agentDir]) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

// ---- per-method timing ----

const methods = {};
let step = "resume";
let depth = 0;
let recording = true;

function instrument(target, name, method) {
  target[name] = function (...args) {
    if (depth > 0 || !recording) return method.apply(this, args);
    depth++;
    const start = now();
    try {
      return method.apply(this, args);
    } finally {
      const ms = now() - start;
      depth--;
      const record = (methods[name] ??= { calls: {}, ms: [] });
      record.calls[step] = (record.calls[step] ?? 0) + 1;
      record.ms.push(ms);
    }
  };
}

/** Wraps every method the instance has (its class's and their parents'), on the instance. */
function instrumentInstance(sessionManager) {
  for (let proto = Object.getPrototypeOf(sessionManager); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const { value } = Object.getOwnPropertyDescriptor(proto, name);
      if (name !== "constructor" && typeof value === "function" && !Object.hasOwn(sessionManager, name)) {
        instrument(sessionManager, name, value);
      }
    }
  }
}

// ---- the run ----

let peak = process.memoryUsage().rss;
const samplePeak = () => (peak = Math.max(peak, process.memoryUsage().rss));
const sampler = setInterval(samplePeak, 5);
const result = {};
const timed = async (body) => {
  const start = now();
  await body();
  const ms = now() - start;
  samplePeak();
  return ms;
};

let session;
let sessionManager;
instrument(SessionManager, "open", SessionManager.open);
result.resumeMs = await timed(async () => {
  sessionManager = SessionManager.open(file);
  instrumentInstance(sessionManager);
  ({ session } = await sdk.createAgentSession({
    cwd, agentDir, model, thinkingLevel: "off", modelRuntime, resourceLoader, tools: ["read"], sessionManager, settingsManager,
  }));
});
// The navigation target, found outside the timings: NAVIGATE_BACK entries up from the leaf.
recording = false;
let target = sessionManager.getLeafId();
for (let i = 0; i < NAVIGATE_BACK; i++) target = sessionManager.getEntry(target).parentId ?? target;
recording = true;

step = "prompt";
result.promptMs = [];
for (let i = 0; i < prompts; i++) {
  clock.advance(1000);
  result.promptMs.push(await timed(() => session.prompt(`Question ${i + 1}: what changed since the last answer?`)));
  const answer = session.messages.at(-1);
  if (answer?.role !== "assistant" || answer.stopReason !== "stop") throw new Error(`prompt ${i + 1} got no answer: ${JSON.stringify(answer)}`);
}
step = "compact";
clock.advance(1000);
result.compactMs = await timed(() => session.compact());
step = "navigate";
clock.advance(1000);
let navigation;
result.navigateMs = await timed(async () => (navigation = await session.navigateTree(target, { summarize: true })));
if (navigation.cancelled || !navigation.summaryEntry) throw new Error(`navigateTree wrote no branch summary: ${JSON.stringify(navigation)}`);
clearInterval(sampler);
result.peakRssMiB = Math.round(samplePeak() / 1048576);
session.dispose();
result.methods = methods;
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
