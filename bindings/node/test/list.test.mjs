// SessionManager.list and listAll against pi 1.6.0's on the same session directories: the same
// SessionInfo values (deep-equal, Dates included), the same onProgress calls, whatever the
// files hold (pi's transcripts, names set and cleared, several cwds, files pi does not list,
// and files whose lines pi's own loop must read); allMessagesText built only when read.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { DATA, pi, tempDir, treelog } from "./helpers.mjs";

const header = (id, cwd, extra = {}) =>
  JSON.stringify({ type: "session", version: 3, id, timestamp: "2025-03-01T10:00:00.000Z", cwd, ...extra });
const entry = (id, parentId, fields) => JSON.stringify({ id, parentId, timestamp: "2025-03-01T10:00:05.000Z", ...fields });
const user = (id, parentId, content, timestamp = 1740823200000) =>
  entry(id, parentId, { type: "message", message: { role: "user", content, timestamp } });
const assistant = (id, parentId, content, timestamp = 1740823300000) =>
  entry(id, parentId, { type: "message", message: { role: "assistant", content, timestamp, provider: "p", model: "m" } });
const lines = (...all) => `${all.join("\n")}\n`;

/** Session files with what the listing must get right, by name. */
function handWritten(cwd) {
  return {
    "2025-03-01T10-00-00-000Z_named.jsonl": lines(
      header("named", cwd),
      user("a", null, "first question"),
      assistant("b", "a", [{ type: "text", text: "answer" }, { type: "thinking", thinking: "x" }, { type: "text", text: "more" }]),
      entry("c", "b", { type: "session_info", name: "  my name \u00a0" }),
      user("d", "c", [{ type: "image", data: "..." }]),
      user("e", "d", [{ type: "text", text: "" }, { type: "text", text: "" }]),
    ),
    "2025-03-01T11-00-00-000Z_cleared.jsonl": lines(
      header("cleared", cwd, { parentSession: "/elsewhere/x.jsonl" }),
      entry("n1", null, { type: "session_info", name: "gone" }),
      assistant("a", "n1", "only the assistant", 1740900000000),
      entry("n2", "a", { type: "session_info", name: "   " }),
      entry("t", "n2", { type: "message", message: { role: "toolResult", content: "not listed", timestamp: 1750000000000 } }),
    ),
    "2025-03-01T12-00-00-000Z_empty.jsonl": lines(header("empty", cwd)),
    "2025-03-01T13-00-00-000Z_blank-and-bad.jsonl": `\n  \n${header("blank", cwd)}\nnot json\n0\nnull\n${user("a", null, "after noise")}\r\n[1]\n`,
    "2025-03-01T14-00-00-000Z_not-first.jsonl": lines(user("a", null, "no header first"), header("late", cwd)),
    "2025-03-01T15-00-00-000Z_entry-time.jsonl": lines(
      header("entry-time", cwd),
      entry("a", null, { type: "message", message: { role: "user", content: "no message time" } }),
    ),
    "2025-03-01T16-00-00-000Z_throws.jsonl": lines(header("throws", cwd), entry("a", null, { type: "session_info", name: 5 })),
    "2025-03-01T17-00-00-000Z_bad-header-time.jsonl": lines(
      JSON.stringify({ type: "session", version: 3, id: "bad-time", timestamp: "not a time", cwd }),
      entry("t", null, { type: "message", message: { role: "toolResult", content: "x", timestamp: 5 } }),
    ),
    "not-a-session.txt": "ignored: not .jsonl\n",
    "2025-03-01T18-00-00-000Z_garbage.jsonl": "\u0000\u0001 binary\n",
  };
}

/** An agent directory with sessions of two cwds in pi's default directories, and a custom one. */
function agentDir() {
  const root = tempDir("treelog-list-");
  const agent = join(root, "agent");
  const cwdA = join(root, "project-a");
  const cwdB = join(root, "project-b");
  const sessionDir = (cwd) => join(agent, "sessions", `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);
  for (const [cwd, files] of [
    [cwdA, handWritten(cwdA)],
    [cwdB, { "2025-02-01T00-00-00-000Z_b.jsonl": lines(header("b", cwdB), user("a", null, "in b", 1738000000000)) }],
  ]) {
    mkdirSync(sessionDir(cwd), { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(sessionDir(cwd), name), text);
  }
  for (const name of ["pi-sample-200", "pi16-gen-a", "pi16-gen-b", "pi073-gen-a", "pi16-sample-300"]) {
    copyFileSync(join(DATA, `${name}.jsonl`), join(sessionDir(cwdA), `2024-12-31T00-00-00-000Z_${name}.jsonl`));
  }
  // A custom directory holding sessions of both cwds (list filters it by cwd).
  const custom = join(root, "custom");
  mkdirSync(custom);
  writeFileSync(join(custom, "a.jsonl"), lines(header("custom-a", cwdA), user("a", null, "custom a", 1741000000000)));
  writeFileSync(join(custom, "b.jsonl"), lines(header("custom-b", cwdB), user("a", null, "custom b", 1742000000000)));
  return { agent, cwdA, cwdB, custom };
}

/** Runs `call` with pi's agent directory pointing at `agent`. */
async function withAgentDir(agent, call) {
  const before = process.env.PI_CODING_AGENT_DIR;
  process.env.PI_CODING_AGENT_DIR = agent;
  try {
    return await call();
  } finally {
    if (before === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = before;
  }
}

/** The listing and every progress call of one implementation. */
async function listing(SessionManager, how) {
  const calls = [];
  const onProgress = (loaded, total, partial) => calls.push({ loaded, total, partial });
  const sessions = await how(SessionManager, onProgress);
  return { sessions, calls };
}

/** Progress calls agree: the same count, totals and loaded sequence, and the last published
 * partial list is the whole listing. Which calls publish a partial list is compared too for
 * list(), where it depends on the count loaded only; listAll publishes once the first file (by
 * mtime) is loaded, which depends on which read ends first, in pi as here. */
function sameProgress(actual, expected, what) {
  const publishes = !what.startsWith("listAll(onProgress)");
  const shape = (calls) => calls.map(({ loaded, total, partial }) => `${loaded}/${total}${publishes && partial ? "+" : ""}`);
  assert.deepEqual(shape(actual.calls), shape(expected.calls), `${what}: progress calls`);
  // Sessions equally recent keep the order their reads ended in (a stable sort of the loaded
  // list), which depends on timing, in pi as here: compare the partial lists by path.
  const byPath = (list) => (list ? [...list].sort((a, b) => a.path.localeCompare(b.path)) : list);
  const lastPartial = (calls) => byPath(calls.findLast((call) => call.partial)?.partial);
  assert.deepEqual(lastPartial(actual.calls), lastPartial(expected.calls), `${what}: last partial list`);
  if (actual.calls.length > 0) assert.ok(actual.calls.at(-1).partial, `${what}: the last call publishes`);
}

const CASES = [
  ["list(cwd) in pi's default directory", (SM, progress, dirs) => SM.list(dirs.cwdA, undefined, progress)],
  ["list(cwd) of the other cwd", (SM, progress, dirs) => SM.list(dirs.cwdB, undefined, progress)],
  ["list(cwd, custom directory) filters by cwd", (SM, progress, dirs) => SM.list(dirs.cwdB, dirs.custom, progress)],
  ["listAll(onProgress)", (SM, progress) => SM.listAll(progress)],
  ["listAll(sessionDir, onProgress)", (SM, progress, dirs) => SM.listAll(dirs.custom, progress)],
  ["listAll() without progress", (SM) => SM.listAll()],
];

for (const [what, how] of CASES) {
  test(`${what}: the same SessionInfo values and progress calls as pi`, async () => {
    const dirs = agentDir();
    const expected = await withAgentDir(dirs.agent, () => listing(pi.SessionManager, (SM, p) => how(SM, p, dirs)));
    const actual = await withAgentDir(dirs.agent, () => listing(treelog.SessionManager, (SM, p) => how(SM, p, dirs)));
    assert.ok(expected.sessions.length > 0 || what.includes("other"), `${what}: pi lists sessions`);
    assert.deepStrictEqual(actual.sessions, expected.sessions, what);
    sameProgress(actual, expected, what);
  });
}

test("allMessagesText is built when first read, then kept; an assignment replaces it", async () => {
  const dirs = agentDir();
  const sessions = await treelog.SessionManager.list(dirs.cwdA, join(dirs.agent, "sessions", `--${dirs.cwdA.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`));
  const named = sessions.find((session) => session.id === "named");
  assert.equal(typeof Object.getOwnPropertyDescriptor(named, "allMessagesText").get, "function", "not built by list");
  assert.equal(named.allMessagesText, "first question answer more  ");
  assert.equal(Object.getOwnPropertyDescriptor(named, "allMessagesText").value, named.allMessagesText, "kept");
  named.allMessagesText = "replaced";
  assert.equal(named.allMessagesText, "replaced");
  // A session pi's own loop answers (a message without a time of its own) holds it already.
  const entryTime = sessions.find((session) => session.id === "entry-time");
  assert.equal(Object.getOwnPropertyDescriptor(entryTime, "allMessagesText").value, "no message time");
});
