// Plants pi/OpenClaw JSONL sessions in a fresh OpenClaw state directory, for OpenClaw's
// importer to migrate: four sessions its importer loses lines of, and a clean one.
//
//   node plant.mjs DIR [AGENT…]   writes DIR/.openclaw/agents/<agent>/sessions/{sessions.json,<id>.jsonl}
//                                 (only the AGENTs named, when some are)
//
// Each session has an agent of its own (clean, bad-utf8, bad-json, empty, dup-id): the importer
// archives nothing of an agent with an issue it noticed, so one agent per case lets one run
// show each behaviour.
//
// Everything is deterministic (fixed ids and timestamps), so that a run of the importer on
// it gives the same rows every time.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [root, ...only] = process.argv.slice(2);
if (!root) {
  console.error("usage: node plant.mjs DIR");
  process.exit(2);
}

const base = Date.UTC(2026, 8, 1, 10, 0, 0);
const iso = (i) => new Date(base + i * 1000).toISOString();

function header(id) {
  return JSON.stringify({ type: "session", version: 3, id, timestamp: iso(0), cwd: "/work" });
}

// Entry `i` of a linear conversation: users and assistants in turn, every 7th user long
// enough (and free of \u escapes) for OpenClaw to store it zstd-compressed.
function entry(prefix, i) {
  const id = `${prefix}${String(i).padStart(4, "0")}`;
  const parentId = i === 0 ? null : `${prefix}${String(i - 1).padStart(4, "0")}`;
  const timestamp = base + i * 1000;
  const message =
    i % 2 === 0
      ? { role: "user", content: `question ${i}` + (i % 14 === 0 ? " lorem ipsum".repeat(100) : ""), timestamp }
      : {
          role: "assistant",
          content: [{ type: "text", text: `answer ${i}` }],
          provider: "p",
          model: "m",
          stopReason: "stop",
          timestamp,
        };
  return JSON.stringify({ type: "message", id, parentId, timestamp: iso(i), message });
}

function session(id, count, prefix) {
  const lines = [header(id)];
  for (let i = 0; i < count; i++) lines.push(entry(prefix, i));
  return lines;
}

const files = {};

// Clean: OpenClaw's rewrites only (1.50 → 1.5, an assistant's string content, a \u escape).
{
  const lines = session("s-clean", 40, "c");
  lines.push(
    '{"type":"message","id":"c9000","parentId":"c0039","timestamp":"2026-09-01T10:01:00.000Z","message":{"role":"assistant","content":"plain \\u00e9 text","provider":"p","model":"m","usage":{"cost":{"total":1.50}},"stopReason":"stop","timestamp":1788256860000}}',
  );
  files["s-clean"] = Buffer.from(lines.join("\n") + "\n");
}

// One invalid UTF-8 byte in the last line of a 503-line session.
{
  const lines = session("s-bad-utf8", 502, "u");
  const text = lines.join("\n") + "\n";
  const last = Buffer.from(entry("u", 502).replace("question 502", "question 502 X"));
  last[last.indexOf("X")] = 0xff;
  files["s-bad-utf8"] = Buffer.concat([Buffer.from(text), last, Buffer.from("\n")]);
}

// An unparseable line at line 201 of 504.
{
  const lines = session("s-bad-json", 503, "j");
  lines[200] = lines[200].slice(0, -1) + ',"cut';
  files["s-bad-json"] = Buffer.from(lines.join("\n") + "\n");
}

// A header line cut short: the importer keeps the session, with no row at all.
{
  const lines = session("s-empty", 5, "e");
  lines[0] = lines[0].slice(0, -1);
  files["s-empty"] = Buffer.from(lines.join("\n") + "\n");
}

// An id used twice, the second time with a different body.
{
  const lines = session("s-dup-id", 30, "d");
  const reused = JSON.parse(lines[10]);
  reused.parentId = "d0029";
  reused.message = { ...reused.message, content: "a different question, same id" };
  lines.push(JSON.stringify(reused));
  files["s-dup-id"] = Buffer.from(lines.join("\n") + "\n");
}

for (const [id, bytes] of Object.entries(files)) {
  const agent = id.slice(2);
  if (only.length > 0 && !only.includes(agent)) continue;
  const sessionsDir = join(root, ".openclaw", "agents", agent, "sessions");
  mkdirSync(sessionsDir, { recursive: true });
  writeFileSync(join(sessionsDir, `${id}.jsonl`), bytes);
  const store = { [`agent:${agent}:main`]: { sessionId: id, updatedAt: base } };
  writeFileSync(join(sessionsDir, "sessions.json"), JSON.stringify(store, null, 2) + "\n");
}
