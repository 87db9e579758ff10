// `treelog convert --to pi` checked by pi itself: every session the real Claude Code and Codex
// wrote (tests/data/claude-code/, tests/data/codex/) is converted by the CLI and opened by pi
// 1.6.0's own SessionManager, whose entries, leaf, name and buildSessionContext() must say
// what the source said (the source's active path read here, independently of treelog's code:
// its messages by role and text, after its last compaction). Then a converted Claude Code
// session is continued by treelog-pi --session in print mode against the package's fake model
// on 127.0.0.1, and the turn it appends must hang off the converted leaf with the converted
// history sent to the model. The CLI is TREELOG_CLI when set (scripts/test sets it), else the
// repository's target/debug/treelog; the test fails when there is none.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";

import { ANSWER, MODEL_ARGS, command, copySession, makeAgentDir, piEnv, readJsonl, run, startFakeModel, tempDir } from "./cli/fixture.mjs";
import { pi } from "./helpers.mjs";

const REPOSITORY = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const CLI = process.env.TREELOG_CLI || join(process.env.CARGO_TARGET_DIR ?? join(REPOSITORY, "target"), "debug/treelog");
const CLAUDE = join(REPOSITORY, "tests/data/claude-code/projects/-tmp-treelog-agents-fixtures-project");
const CODEX = join(REPOSITORY, "tests/data/codex/sessions");

/** Every .jsonl file under `dir`. */
function jsonlUnder(dir) {
  return readdirSync(dir, { recursive: true })
    .map((name) => join(dir, name))
    .filter((path) => path.endsWith(".jsonl") && statSync(path).isFile())
    .sort();
}

const sourceLines = (file) =>
  readFileSync(file, "utf8").split("\n").filter((line) => line.trim()).flatMap((line) => {
    try {
      return [JSON.parse(line)];
    } catch {
      return [];
    }
  });

const texts = (content) => (typeof content === "string" ? content : content.filter((b) => b.type === "text").map((b) => b.text).join("\n"));

/** pi's context messages as `role:detail` strings. */
function piDigest(messages) {
  return messages.map((m) => {
    switch (m.role) {
      case "user":
        return `user:${texts(m.content)}`;
      case "assistant":
        return `assistant:${m.content.map((b) => (b.type === "text" ? `text:${b.text}` : b.type === "thinking" ? `thinking:${b.thinking}` : `toolCall:${b.name}`)).join("|")}`;
      case "toolResult":
        return `toolResult:${m.toolName}:${texts(m.content)}`;
      case "compactionSummary":
        return `compactionSummary:${m.summary}`;
      default:
        return m.role;
    }
  });
}

/**
 * Claude Code's conversation on its active path (format-spec/claude-code.md §5): the last
 * `last-prompt`'s leaf, else the last entry (outside sidechains unless all are), up through
 * `parentUuid` and across a compact boundary's `logicalParentUuid`; after the last boundary,
 * its summary, the preserved messages, then what follows. Attachments and system lines are
 * the client's own; assistant lines of one message.id are one message.
 */
function claudeExpected(lines) {
  const kinds = new Set(["user", "assistant", "system", "attachment"]);
  const entries = lines.filter((o) => kinds.has(o.type) && o.uuid);
  const byId = new Map(entries.map((o) => [o.uuid, o]));
  let leaf = null;
  for (const o of lines) if (o.type === "last-prompt" && byId.has(o.leafUuid)) leaf = byId.get(o.leafUuid);
  const main = entries.filter((o) => !o.isSidechain);
  leaf ??= (main.length ? main : entries).at(-1);
  const path = [];
  for (let at = leaf; at; at = byId.get(at.parentUuid ?? at.logicalParentUuid)) path.unshift(at);
  const boundary = path.findLastIndex((o) => o.type === "system" && o.subtype === "compact_boundary");
  let sequence = path;
  const out = [];
  if (boundary >= 0) {
    out.push(`compactionSummary:${texts(path[boundary + 1].message.content)}`);
    const preserved = path[boundary].compactMetadata.preservedMessages.uuids.map((id) => byId.get(id));
    sequence = [...preserved, ...path.slice(boundary + 2)];
  }
  const toolNames = new Map();
  let lastAssistant = null;
  for (const o of sequence) {
    if (o.type === "assistant") {
      const blocks = o.message.content.map((b) => {
        if (b.type === "tool_use") toolNames.set(b.id, b.name);
        return b.type === "text" ? `text:${b.text}` : b.type === "thinking" ? `thinking:${b.thinking}` : `toolCall:${b.name}`;
      });
      if (lastAssistant?.id === o.message.id) {
        lastAssistant.blocks.push(...blocks);
        out[lastAssistant.at] = `assistant:${lastAssistant.blocks.join("|")}`;
      } else {
        lastAssistant = { id: o.message.id, blocks, at: out.length };
        out.push(`assistant:${blocks.join("|")}`);
      }
      continue;
    }
    lastAssistant = null;
    if (o.type !== "user") continue;
    const content = o.message.content;
    if (typeof content === "string") {
      out.push(`user:${content}`);
      continue;
    }
    for (const b of content.filter((b) => b.type === "tool_result")) {
      out.push(`toolResult:${toolNames.get(b.tool_use_id)}:${typeof b.content === "string" ? b.content : texts(b.content)}`);
    }
    if (content.some((b) => b.type === "text")) out.push(`user:${texts(content)}`);
  }
  return out;
}

/**
 * Codex's conversation (format-spec/codex.md): after the last `compacted` line its summary,
 * then the response items; the model's consecutive reasoning, calls and replies are one
 * assistant message, ended by a tool output, a user message or a turn's start or end.
 * Developer messages are Codex's own instructions.
 */
function codexExpected(lines) {
  let out = [];
  let group = null;
  const toolNames = new Map();
  const add = (part) => {
    if (!group) {
      group = { parts: [], at: out.length };
      out.push("");
    }
    group.parts.push(part);
    out[group.at] = `assistant:${group.parts.join("|")}`;
  };
  for (const { type, payload: p } of lines) {
    if (type === "turn_context" || (type === "event_msg" && ["task_started", "task_complete", "turn_aborted"].includes(p.type))) {
      group = null;
    } else if (type === "compacted") {
      out = [`compactionSummary:${p.message}`];
      group = null;
    } else if (type === "response_item") {
      const text = () => p.content.map((c) => c.text).join("\n");
      if (p.type === "message" && p.role === "user") {
        group = null;
        out.push(`user:${text()}`);
      } else if (p.type === "message" && p.role === "assistant") add(`text:${text()}`);
      else if (p.type === "reasoning") add(`thinking:${p.summary.map((s) => s.text).join("\n\n")}`);
      else if (p.type === "function_call") {
        toolNames.set(p.call_id, p.name);
        add(`toolCall:${p.name}`);
      } else if (p.type === "function_call_output") {
        group = null;
        out.push(`toolResult:${toolNames.get(p.call_id)}:${p.output}`);
      }
    }
  }
  return out;
}

function convert(source, output, extra = []) {
  const report = execFileSync(CLI, ["convert", source, "--to", "pi", "-o", output, "--json", ...extra], { encoding: "utf8" });
  return JSON.parse(report);
}

let root;

before(() => {
  assert.ok(existsSync(CLI), `no treelog CLI at ${CLI} (cargo build -p treelog-cli, or set TREELOG_CLI)`);
  root = tempDir("treelog-convert-");
});

after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

const FIXTURES = [
  ...jsonlUnder(CLAUDE).map((file) => ({ file, agent: "claude-code", expected: claudeExpected })),
  ...jsonlUnder(CODEX).map((file) => ({ file, agent: "codex", expected: codexExpected })),
];

describe("converted sessions, opened by pi 1.6.0's SessionManager", () => {
  test("the fixtures are there: two Claude Code sessions, a subagent's file, two Codex rollouts", () => {
    assert.deepEqual(FIXTURES.map((f) => f.agent), ["claude-code", "claude-code", "claude-code", "codex", "codex"]);
  });

  for (const [index, { file, agent, expected }] of FIXTURES.entries()) {
    for (const allBranches of [false, true]) {
      const name = `${file.slice(REPOSITORY.length + 1)}${allBranches ? " --all-branches" : ""}`;
      test(name, () => {
        const output = join(root, `${index}${allBranches ? "-all" : ""}.jsonl`);
        const report = convert(file, output, allBranches ? ["--all-branches"] : []);
        assert.equal(report.source, agent);
        const session = pi.SessionManager.open(output);
        assert.equal(session.getHeader().id, report.sessionId);
        assert.equal(session.getHeader().version, 3);
        assert.equal(session.getEntries().length, report.entries, "every entry read");
        assert.equal(session.getLeafId(), report.leaf, "the converted leaf is pi's leaf");
        const lines = sourceLines(file);
        const context = session.buildSessionContext();
        assert.deepEqual(piDigest(context.messages), expected(lines), "pi's context is the source's conversation");
        assert.ok(context.messages.length > 0);
        // The model pi restores is the source's last.
        const models = lines.flatMap((o) => (o.type === "assistant" ? [o.message.model] : o.type === "turn_context" ? [o.payload.model] : []));
        assert.equal(context.model?.modelId, models.at(-1));
        // A Claude Code title is pi's session name.
        const title = lines.filter((o) => o.type === "custom-title").at(-1)?.customTitle;
        assert.equal(session.getSessionName(), title);
        // Nothing is dropped unlisted: each source line is an entry's or listed.
        for (const item of report.notCarried) {
          assert.ok(item.line >= 1 && item.kind && item.reason, JSON.stringify(item));
        }
      });
    }
  }

  test("--all-branches carries the other branch of the second Claude Code session", () => {
    const file = join(CLAUDE, "c0de0002-0000-4000-8000-000000000002.jsonl");
    const output = join(root, "branches.jsonl");
    convert(file, output, ["--all-branches"]);
    const prompts = pi.SessionManager.open(output).getEntries()
      .filter((e) => e.type === "message" && e.message.role === "user")
      .map((e) => texts(e.message.content));
    assert.deepEqual(prompts, ["hello from a second session", "a second turn", "a turn on a new branch"]);
  });
});

describe("a converted Claude Code session continued by treelog-pi", () => {
  let model;
  before(async () => {
    model = await startFakeModel();
  });
  after(async () => {
    await model?.close();
  });

  test("print mode appends a turn under the converted leaf, with the history sent", async () => {
    const dir = join(root, "continue");
    const project = join(dir, "project");
    mkdirSync(project, { recursive: true });
    const agentDir = makeAgentDir(dir, model.baseUrl);
    const env = piEnv(dir, agentDir);
    const converted = join(dir, "converted.jsonl");
    const report = convert(join(CLAUDE, "c0de0001-0000-4000-8000-000000000001.jsonl"), converted);
    // pi runs in the header's cwd, which must exist.
    const file = join(dir, "session.jsonl");
    await copySession(converted, file, project);
    const before = readJsonl(file).length;
    const [node, args] = command("treelog-pi", ["-p", "go on from there", ...MODEL_ARGS, "--session", file]);
    const result = await run(node, args, { cwd: project, env });
    assert.equal(result.code, 0, `treelog-pi exits 0 (stderr: ${result.stderr})`);
    assert.equal(result.stdout, `${ANSWER}\n`);
    const appended = readJsonl(file).slice(before);
    // pi records its system prompt as a message first (the converted session has none).
    const messages = appended.filter((e) => e.type === "message" && e.message.role !== "system");
    assert.deepEqual(messages.map((e) => e.message.role), ["user", "assistant"]);
    assert.equal(messages[0].message.content[0]?.text ?? messages[0].message.content, "go on from there");
    assert.equal(appended[0].parentId, report.leaf, "the turn hangs off the converted leaf");
    assert.equal(texts(messages[1].message.content), ANSWER);
    // The model got the converted history: the summary, the last prompt, the new one.
    const sent = JSON.stringify(model.requests.at(-1).messages);
    assert.match(sent, /This session is being continued from a previous conversation/);
    assert.match(sent, /What did we do so far\?/);
    assert.match(sent, /go on from there/);
    // And pi reopens the file with the turn as its leaf.
    const reopened = pi.SessionManager.open(file);
    assert.equal(reopened.getLeafId(), appended.at(-1).id);
  });
});
