// A real pi agent on treelog's SessionManager: pi's SDK,
// `createAgentSession({ sessionManager, ... })` from 1.6.0 and from 0.73.1, with pi-ai's faux
// provider (no network), runs a conversation of several turns, a tool call included. The same
// conversation runs on pi's own SessionManager with the same clock and ids: the two files must
// be byte-identical. Then pi's own SessionManager reopens treelog's file, and its
// buildSessionContext() must deep-equal treelog's; and a second agent resumes the session from
// its file (SessionManager.open) for one more turn, on both sides, with the same result.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  clock, installFakeClock, installSeededUuids, pi, pi073, prng, restoreRandomUuids, sameJson, tempDir, treelog,
} from "./helpers.mjs";

const START_MS = Date.UTC(2025, 2, 3, 10, 0, 0, 0);

const VERSIONS = {
  "1.6.0": {
    sdk: await import("@earendil-works/pi-coding-agent"),
    ai: await import("@earendil-works/pi-ai"),
    sessionManagers: pi,
  },
  "0.73.1": {
    sdk: await import("@mariozechner/pi-coding-agent"),
    ai: await import("@mariozechner/pi-ai"),
    sessionManagers: pi073,
  },
};

/** The faux model's answers: a tool call and its follow-up, then two plain turns. */
function script(ai) {
  return [
    ai.fauxAssistantMessage(
      [ai.fauxText("Let me read it."), ai.fauxToolCall("read", { path: "notes.txt" }, { id: "call-1" })],
      { stopReason: "toolUse" },
    ),
    ai.fauxAssistantMessage("It lists alpha and beta."),
    ai.fauxAssistantMessage([ai.fauxToolCall("read", { path: "missing.txt" }, { id: "call-2" })], { stopReason: "toolUse" }),
    ai.fauxAssistantMessage("That file does not exist."),
    ai.fauxAssistantMessage("Goodbye."),
  ];
}
const PROMPTS = ["What is in notes.txt?", "And in missing.txt?", "Thanks."];

/** A resource loader that discovers nothing: no extensions, skills or context files. */
function emptyResources(sdk) {
  return {
    getExtensions: () => ({ extensions: [], errors: [], runtime: sdk.createExtensionRuntime() }),
    getSkills: () => ({ skills: [], diagnostics: [] }),
    getPrompts: () => ({ prompts: [], diagnostics: [] }),
    getThemes: () => ({ themes: [], diagnostics: [] }),
    getAgentsFiles: () => ({ agentsFiles: [] }),
    getSystemPrompt: () => "You are a test agent. Be brief.",
    getSystemPromptSource: () => undefined,
    getAppendSystemPrompt: () => [],
    getAppendSystemPromptSources: () => [],
    extendResources: () => {},
    reload: async () => {},
  };
}

/**
 * The model plumbing of each pi version, with the faux provider in it. 1.6.0's
 * createAgentSession looks models up in its own ModelRuntime (pi-ai's compat
 * registerFauxProvider does not reach it): fauxProvider() is registered on an in-memory
 * runtime with an in-memory credential store. 0.73.1 reads pi-ai's global registry.
 */
async function models(version) {
  const { sdk, ai } = VERSIONS[version];
  const options = { api: "faux", provider: "faux", models: [{ id: "faux-1" }] };
  if (version === "1.6.0") {
    const modelRuntime = await sdk.ModelRuntime.create({
      credentials: new ai.InMemoryCredentialStore(), modelsPath: null, allowModelNetwork: false, refreshOnCreate: false,
    });
    const faux = ai.fauxProvider(options);
    modelRuntime.registerNativeProvider(faux.provider);
    return { faux, model: modelRuntime.getModel("faux", "faux-1"), plumbing: { modelRuntime }, release() {} };
  }
  const faux = ai.registerFauxProvider(options);
  const authStorage = sdk.AuthStorage.inMemory();
  authStorage.setRuntimeApiKey("faux", "no-key");
  const modelRegistry = sdk.ModelRegistry.inMemory(authStorage);
  return { faux, model: faux.getModel(), plumbing: { authStorage, modelRegistry }, release: () => faux.unregister() };
}

/**
 * Runs a conversation with pi `version`'s agent on `sessionManager` (the `prompts`, answered by
 * `responses(ai)`); returns the agent's messages.
 */
async function converse(version, sessionManager, cwd, prompts = PROMPTS, responses = script) {
  const { sdk, ai } = VERSIONS[version];
  const { faux, model, plumbing, release } = await models(version);
  faux.setResponses(responses(ai));
  const { session } = await sdk.createAgentSession({
    cwd,
    agentDir: tempDir("treelog-agent-home-"),
    model,
    thinkingLevel: "off",
    ...plumbing,
    resourceLoader: emptyResources(sdk),
    tools: ["read"],
    sessionManager,
    settingsManager: sdk.SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } }),
  });
  try {
    for (const prompt of prompts) {
      clock.advance(1000);
      await session.prompt(prompt);
    }
    return session.messages;
  } finally {
    session.dispose();
    release();
  }
}

/** A session manager of `module` in `dir` whose session id is `id` (0.73.1's create takes no options). */
function created(module, cwd, dir, id, version) {
  if (version === "1.6.0") return module.SessionManager.create(cwd, dir, { id });
  const sessionManager = module.SessionManager.create(cwd, dir);
  sessionManager.newSession({ id });
  return sessionManager;
}

for (const version of Object.keys(VERSIONS)) {
  test(`pi ${version}'s agent on treelog: the file pi's own SessionManager writes, pi reads it back to the same context, and an agent resumes it`, async () => {
    const cwd = tempDir("treelog-agent-cwd-");
    writeFileSync(join(cwd, "notes.txt"), "alpha\nbeta\n");
    const sessionId = "0195a8b0-0000-7000-8000-000000000001";
    const run = async (module) => {
      installFakeClock(START_MS);
      installSeededUuids(prng(20));
      // A tool result's durationMs is measured with performance.now(): the fake clock's too.
      Object.defineProperty(performance, "now", { value: () => clock.now(), configurable: true, writable: true });
      const dir = tempDir("treelog-agent-sessions-");
      mkdirSync(dir, { recursive: true });
      try {
        const sessionManager = created(module, cwd, dir, sessionId, version);
        const messages = await converse(version, sessionManager, cwd);
        const file = sessionManager.getSessionFile();
        const text = readFileSync(file, "utf8");
        // pi's own SessionManager reopens the file (on treelog's side, treelog's file).
        const piReopened = VERSIONS[version].sessionManagers.SessionManager.open(file);
        const reopened = {
          piContext: piReopened.buildSessionContext(), piEntries: piReopened.getEntries(),
          context: sessionManager.buildSessionContext(), entries: sessionManager.getEntries(),
          treelogContext: treelog.SessionManager.open(file).buildSessionContext(),
        };
        // A second agent resumes the session from its file, as pi --continue does.
        const resumed = module.SessionManager.open(sessionManager.getSessionFile());
        const resumedMessages = await converse(version, resumed, cwd, ["One more thing."], (ai) => [ai.fauxAssistantMessage("Sure.")]);
        return { sessionManager, messages, text, reopened, resumed, resumedMessages, resumedText: readFileSync(resumed.getSessionFile(), "utf8") };
      } finally {
        delete performance.now;
        restoreRandomUuids();
        clock.stop();
      }
    };
    const expected = await run(VERSIONS[version].sessionManagers);
    const actual = await run(treelog);

    // Several turns, a tool call and its result (and an error result) among them.
    const roles = actual.messages.map((message) => message.role);
    assert.equal(roles.filter((role) => role === "user").length, PROMPTS.length, roles.join(","));
    assert.equal(roles.filter((role) => role === "assistant").length, 5, roles.join(","));
    assert.equal(roles.filter((role) => role === "toolResult").length, 2, roles.join(","));
    assert.match(JSON.stringify(actual.messages), /alpha\\nbeta/);

    const basename = (path) => path.slice(path.lastIndexOf("/") + 1);
    assert.equal(basename(actual.sessionManager.getSessionFile()), basename(expected.sessionManager.getSessionFile()));
    if (actual.text !== expected.text) {
      const lines = [expected.text.split("\n"), actual.text.split("\n")];
      const at = lines[0].findIndex((line, i) => line !== lines[1][i]);
      assert.fail(`files differ at line ${at + 1}:\npi      ${lines[0][at]}\ntreelog ${lines[1][at]}`);
    }
    sameJson(actual.messages, expected.messages, "the agent's messages");

    // pi's own SessionManager reopened treelog's file: the same context as treelog's.
    const { reopened } = actual;
    sameJson(reopened.context, reopened.piContext, "pi's buildSessionContext of treelog's file");
    const conversation = (messages) => messages.map((message) => message.role).filter((role) => role !== "system");
    assert.deepEqual(conversation(reopened.context.messages), conversation(actual.messages), "the context holds the conversation");
    sameJson(reopened.treelogContext, reopened.context, "treelog's, reopened");
    sameJson(reopened.entries, reopened.piEntries, "getEntries");

    // The resumed agent saw the whole conversation and added to the same file, as pi's did.
    assert.equal(actual.resumedMessages.filter((message) => message.role === "user").length, PROMPTS.length + 1);
    sameJson(actual.resumedMessages, expected.resumedMessages, "the resumed agent's messages");
    assert.ok(actual.resumedText.startsWith(actual.text) && actual.resumedText.length > actual.text.length);
    assert.equal(actual.resumedText, expected.resumedText, "the file after the resumed conversation");
    const file = actual.resumed.getSessionFile();
    sameJson(actual.resumed.buildSessionContext(), VERSIONS[version].sessionManagers.SessionManager.open(file).buildSessionContext(), "pi's context after the resumed conversation");
  });
}

test("pi 1.6.0's agent on treelog while another process appends: every prompt succeeds, nothing is lost", async () => {
  const { execFileSync } = await import("node:child_process");
  const { fileURLToPath } = await import("node:url");
  const piManager = fileURLToPath(new URL("../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js", import.meta.url));
  const { sdk, ai } = VERSIONS["1.6.0"];
  const cwd = tempDir("treelog-agent-cwd-");
  const dir = tempDir("treelog-agent-sessions-");
  const sessionManager = treelog.SessionManager.create(cwd, dir);
  const { faux, model, plumbing, release } = await models("1.6.0");
  faux.setResponses([0, 1, 2].map((i) => ai.fauxAssistantMessage(`answer ${i}`)));
  const { session } = await sdk.createAgentSession({
    cwd, agentDir: tempDir("treelog-agent-home-"), model, thinkingLevel: "off", ...plumbing,
    resourceLoader: emptyResources(sdk), tools: [], sessionManager,
    settingsManager: sdk.SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } }),
  });
  try {
    for (let i = 0; i < 3; i++) {
      await session.prompt(`prompt ${i}`);
      // Another process appends to the same file with pi's own manager, as a second pi would.
      execFileSync(process.execPath, ["--input-type=module", "-e", `
        const { SessionManager } = await import(${JSON.stringify(piManager)});
        SessionManager.open(${JSON.stringify(sessionManager.getSessionFile())}).appendMessage({ role: "user", content: "other ${i}", timestamp: 5 });
      `]);
    }
  } finally {
    session.dispose();
    release();
  }
  const file = sessionManager.getSessionFile();
  const reopened = pi.SessionManager.open(file);
  const contents = reopened.getEntries().filter((e) => e.type === "message").map((e) => (typeof e.message.content === "string" ? e.message.content : e.message.content?.[0]?.text));
  for (let i = 0; i < 3; i++) {
    assert.ok(contents.includes(`prompt ${i}`) && contents.includes(`answer ${i}`), `turn ${i} is in the file: ${contents}`);
    assert.ok(contents.includes(`other ${i}`), `the other writer's entry ${i} is in the file`);
  }
  // Every entry is reachable from a root, and pi reopens the same tree as treelog.
  const ids = new Set(reopened.getEntries().map((e) => e.id));
  assert.ok(reopened.getEntries().every((e) => e.parentId === null || ids.has(e.parentId)));
  sameJson(treelog.SessionManager.open(file).getTree(), reopened.getTree(), "the tree");
  // The agent's own turns stay one branch: its last answer's path holds every prompt.
  const lastAnswer = reopened.getEntries().find((e) => e.type === "message" && e.message.content?.[0]?.text === "answer 2");
  const branch = reopened.getBranch(lastAnswer.id).filter((e) => e.type === "message").map((e) => e.message.content?.[0]?.text ?? e.message.content);
  assert.deepEqual(branch.filter((text) => /^(prompt|answer|other)/.test(text)), ["prompt 0", "answer 0", "prompt 1", "answer 1", "prompt 2", "answer 2"]);
});

test("pi 1.6.0's agent resumed past a compaction: navigating back and prompting works as on pi's", async () => {
  // Resuming scans every message's role before the messages behind the compaction are read;
  // navigating back puts them in the agent's context, which pi clones (structuredClone) before
  // each model request: they must be plain messages there, as pi's.
  const version = "1.6.0";
  const { sdk, ai } = VERSIONS[version];
  const cwd = tempDir("treelog-agent-cwd-");
  writeFileSync(join(cwd, "notes.txt"), "alpha\nbeta\n");
  const run = async (module) => {
    installFakeClock(START_MS);
    installSeededUuids(prng(21));
    Object.defineProperty(performance, "now", { value: () => clock.now(), configurable: true, writable: true });
    const dir = tempDir("treelog-agent-sessions-");
    try {
      const first = created(module, cwd, dir, "0195a8b0-0000-7000-8000-000000000002", version);
      await converse(version, first, cwd);
      const target = first.getBranch().find((entry) => entry.type === "message" && entry.message.role === "assistant").id;
      first.appendCompaction("Summary of the earlier turns.", first.getLeafId(), 1000);
      const file = first.getSessionFile();

      const { faux, model, plumbing, release } = await models(version);
      faux.setResponses([ai.fauxAssistantMessage("Back at the start.")]);
      const { session } = await sdk.createAgentSession({
        cwd, agentDir: tempDir("treelog-agent-home-"), model, thinkingLevel: "off", ...plumbing,
        resourceLoader: emptyResources(sdk), tools: ["read"], sessionManager: module.SessionManager.open(file),
        settingsManager: sdk.SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } }),
      });
      try {
        clock.advance(1000);
        await session.navigateTree(target, { summarize: false });
        clock.advance(1000);
        await session.prompt("Where are we?");
        return { messages: session.messages, text: readFileSync(file, "utf8") };
      } finally {
        session.dispose();
        release();
      }
    } finally {
      delete performance.now;
      restoreRandomUuids();
      clock.stop();
    }
  };
  const expected = await run(VERSIONS[version].sessionManagers);
  const actual = await run(treelog);
  assert.equal(expected.messages.at(-1).stopReason, "stop", JSON.stringify(expected.messages.at(-1)));
  sameJson(actual.messages, expected.messages, "the agent's messages after navigating back");
  assert.equal(actual.text, expected.text, "the file");
});
