// Writes tests/data/pi16-demo.jsonl, the transcript `treelog demo` shows, through pi 1.6.0's
// own SDK: `createAgentSession` with pi-ai's faux provider standing in for the model (no
// network, scripted answers), pi's real read, bash and edit tools working on a small project
// in a scratch directory, a branch left with a summary (`navigateTree`), and a manual
// compaction (`compact`). pi's clock and id source are seeded (common.mjs), so the same pi
// gives the same bytes (tools' `durationMs` included: see below). Then writes pi's own answers for the file (oracle.mjs) beside it:
// tests/it/pi_oracle.rs compares treelog with them.
//
//   (cd bindings/node && npm ci --ignore-scripts)
//   bindings/node/node_modules/.bin/node tests/pi-diff/demo_transcript.mjs
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { importPinned } from "../../bindings/node/test/pi-project.mjs";
import { clock, hashSeed, installFakeClock, installSeededUuids, loadPi, prng, runMain, seededUuidV7 } from "./common.mjs";
import { computeOracle, writeOracle } from "./oracle.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const DATA = resolve(HERE, "../data");
const NAME = "pi16-demo";
/** The project the agent works on: a fixed path, so that tool results name the same files. */
const PROJECT = "/tmp/treelog-demo-project";
const START_MS = Date.UTC(2026, 10, 24, 9, 30, 0);

/** The files of the project before the agent starts: a greeting with a bug and its test. */
const PROJECT_FILES = {
  "package.json": `{ "name": "greeter", "version": "1.0.0", "type": "module" }\n`,
  "src/greet.js": `export function greet(name) {\n  return "Hello, " + name;\n}\n`,
  "test.js": [
    `import { greet } from "./src/greet.js";`,
    `const got = greet("Ada");`,
    `if (got !== "Hello, Ada!") {`,
    `  console.log(\`FAIL: expected "Hello, Ada!", got \${JSON.stringify(got)}\`);`,
    `  process.exit(1);`,
    `}`,
    `console.log("ok: 1 test passed");`,
    ``,
  ].join("\n"),
};

async function main() {
  const piVersion = await loadPi("1.6");
  const pi = piVersion.module;
  const ai = await importPinned("@earendil-works/pi-ai");
  const { fauxProvider, fauxAssistantMessage, fauxText, fauxToolCall, InMemoryCredentialStore } = ai;

  const rng = prng(hashSeed(NAME));
  installFakeClock(START_MS);
  installSeededUuids(rng);
  // The agent loop times each tool with performance.now() (`durationMs` of a tool result):
  // read from the fake clock too, it is 0 (the clock moves only between steps), as it must
  // be for the same script to give the same bytes.
  performance.now = () => clock.now() - START_MS;

  rmSync(PROJECT, { recursive: true, force: true });
  for (const [path, text] of Object.entries(PROJECT_FILES)) {
    mkdirSync(dirname(join(PROJECT, path)), { recursive: true });
    writeFileSync(join(PROJECT, path), text);
  }
  const sessionDir = join(PROJECT, ".sessions");

  // The model: pi-ai's faux provider on an in-memory runtime and credential store.
  const faux = fauxProvider({ api: "faux", provider: "faux", models: [{ id: "faux-coder", name: "Faux Coder", contextWindow: 200000, maxTokens: 8192 }] });
  const modelRuntime = await pi.ModelRuntime.create({
    credentials: new InMemoryCredentialStore(),
    modelsPath: null,
    allowModelNetwork: false,
    refreshOnCreate: false,
  });
  modelRuntime.registerNativeProvider(faux.provider);
  await modelRuntime.setRuntimeApiKey?.("faux", "faux-key");
  const model = faux.getModel();

  const sessionManager = pi.SessionManager.create(PROJECT, sessionDir, { id: seededUuidV7(rng, START_MS) });
  const settingsManager = pi.SettingsManager.inMemory({
    compaction: { enabled: false, keepRecentTokens: 60 },
    retry: { enabled: false },
  });
  const { session } = await pi.createAgentSession({
    cwd: PROJECT,
    agentDir: join(PROJECT, ".agent"),
    model,
    thinkingLevel: "off",
    modelRuntime,
    tools: ["read", "bash", "edit"],
    sessionManager,
    settingsManager,
  });

  const step = () => clock.advance(1500 + Math.floor(rng.random() * 4000));
  const answer = (content, stopReason) => () => {
    step();
    return fauxAssistantMessage(content, { stopReason, timestamp: clock.now() });
  };
  const prompt = async (text, responses) => {
    step();
    faux.setResponses(responses);
    await session.prompt(text);
    if (faux.getPendingResponseCount() !== 0) throw new Error(`the agent left ${faux.getPendingResponseCount()} scripted answers unused after "${text}"`);
  };

  await prompt("The greeting test fails. Can you fix it?", [
    answer(fauxToolCall("bash", { command: "node test.js" }, { id: "call_01" }), "toolUse"),
    answer(fauxToolCall("read", { path: "src/greet.js" }, { id: "call_02" }), "toolUse"),
    answer([fauxText("The greeting lacks the exclamation mark the test expects."), fauxToolCall("edit", { path: "src/greet.js", edits: [{ oldText: `"Hello, " + name;`, newText: "`Hello, ${name}!`;" }] }, { id: "call_03" })], "toolUse"),
    answer(fauxToolCall("bash", { command: "node test.js" }, { id: "call_04" }), "toolUse"),
    answer(fauxText("Fixed: `greet` now returns `Hello, NAME!` and the test passes."), "stop"),
  ]);

  session.setSessionName("Fix the greeting test");
  const afterFix = session.sessionManager.getLeafId();
  await prompt("Add a farewell function next to greet.", [
    answer(fauxToolCall("edit", { path: "src/greet.js", edits: [{ oldText: "}\n", newText: "}\n\nexport function farewell(name) {\n  return `Goodbye, ${name}.`;\n}\n" }] }, { id: "call_05" }), "toolUse"),
    answer(fauxText("Added `farewell(name)` to src/greet.js."), "stop"),
  ]);

  // Back to the fix: the farewell branch is left with a summary (pi's /tree).
  step();
  faux.setResponses([answer(fauxText("The user asked for a farewell function; it was added to src/greet.js."), "stop")]);
  await session.navigateTree(afterFix, { summarize: true, label: "farewell in greet.js" });
  await prompt("On second thought, put farewell in its own file, src/farewell.js.", [
    answer(fauxToolCall("bash", { command: "printf 'export function farewell(name) {\\n  return `Goodbye, ${name}.`;\\n}\\n' > src/farewell.js && cat src/farewell.js" }, { id: "call_06" }), "toolUse"),
    answer(fauxText("Created src/farewell.js with `farewell(name)`."), "stop"),
  ]);

  // A manual compaction: pi asks the model for a summary of what came before, and (the cut
  // falling inside the last turn) for one of that turn's beginning.
  step();
  faux.setResponses([
    answer(fauxText("## Goal\nFix the greeting test and add a farewell function.\n\n## Done\n- src/greet.js: greet returns `Hello, NAME!`; the test passes.\n- A farewell function was asked for."), "stop"),
    answer(fauxText("The user asked to move farewell into its own file, src/farewell.js."), "stop"),
  ]);
  const compaction = await session.compact();
  console.log(`compaction keeps from ${compaction.firstKeptEntryId}, ${compaction.tokensBefore} tokens before`);
  faux.setResponses([]);

  await prompt("Run the test once more.", [
    answer(fauxToolCall("bash", { command: "node test.js" }, { id: "call_07" }), "toolUse"),
    answer(fauxText("Still passing: ok: 1 test passed."), "stop"),
  ]);
  session.dispose();

  const [file] = readdirSync(sessionDir).filter((name) => name.endsWith(".jsonl"));
  const target = join(DATA, `${NAME}.jsonl`);
  copyFileSync(join(sessionDir, file), target);
  rmSync(PROJECT, { recursive: true, force: true });
  writeOracle(join(DATA, `${NAME}.oracle.json`), computeOracle(target, piVersion));
  console.log(`wrote ${target} and its oracle`);
}

await runMain(main);
