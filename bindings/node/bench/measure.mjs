// One measurement in a fresh process (bench.mjs runs it): IMPL FILE WHAT, or
// `generate FILE ENTRIES` (a transcript written by pi 1.6.0's own SessionManager).
//
// WHAT:
//   open     open only (treelog: builds the index the measured opens then find)
//   context  open + buildSessionContext(); the floor: JSON.parse of the context's own bytes
//   entries  open + getEntries() (and getEntries() alone, after the open)
//   tree     open + getTree() (and getTree() alone, after the open)
//   list     SessionManager.list(cwd, FILE) of the session directory FILE (and the first
//            read of every allMessagesText after it)
// Prints one JSON object; peakRssMiB is the process's RSS sampled every 5 ms and after the work.
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const [impl, file, what] = process.argv.slice(2);
const piModule = (name) => import(pathToFileURL(join(HERE, "../node_modules", name, "dist/core/session-manager.js")).href);

if (impl === "generate") {
  const { SessionManager } = await piModule("@earendil-works/pi-coding-agent");
  const { writeFileSync } = await import("node:fs");
  writeFileSync(file, "");
  const sm = SessionManager.open(file);
  const pad = "lorem ipsum dolor sit amet ".repeat(36);
  const ids = [];
  for (let n = 0; n < Number(what); n++) {
    if (n > 10 && n % 97 === 0) sm.branch(ids[ids.length - 1 - (n % 7)]);
    const role = n % 3 === 0 ? "user" : n % 3 === 1 ? "assistant" : "toolResult";
    const message =
      role === "user"
        ? { role, content: `question ${n} ${pad}`, timestamp: 1735722000000 + n }
        : role === "assistant"
          ? { role, content: [{ type: "text", text: `answer ${n} ${pad}` }], api: "faux", provider: "faux", model: "m1",
              usage: { input: n, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: n + 1, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
              stopReason: "stop", timestamp: 1735722000000 + n }
          : { role, toolCallId: `c${n}`, toolName: "bash", content: [{ type: "text", text: `output ${n} ${pad}` }], isError: false, timestamp: 1735722000000 + n };
    ids.push(sm.appendMessage(message));
    // A compaction every 2,000 entries, keeping the last 20, as a long pi session has them.
    if (n % 2000 === 1999) ids.push(sm.appendCompaction(`summary ${n}`, ids[ids.length - 20], 150000, undefined, false));
  }
  process.exit(0);
}

const load = {
  treelog: () => import(pathToFileURL(join(HERE, "../index.js")).href),
  "pi-1.6.0": () => piModule("@earendil-works/pi-coding-agent"),
  "pi-0.73.1": () => piModule("@mariozechner/pi-coding-agent"),
}[impl];
const { SessionManager } = await load();
let peak = process.memoryUsage().rss;
const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
const result = {};
const timed = (body) => {
  const start = performance.now();
  const value = body();
  return [value, performance.now() - start];
};
if (what === "open") {
  SessionManager.open(file);
} else if (what === "context") {
  const [context, ms] = timed(() => SessionManager.open(file).buildSessionContext());
  result.ms = ms;
  peak = Math.max(peak, process.memoryUsage().rss);
  const text = JSON.stringify(context);
  result.parseFloorMs = timed(() => JSON.parse(text))[1];
  result.contextBytes = Buffer.byteLength(text);
  result.messages = context.messages.length;
  result.digest = createHash("sha256").update(JSON.stringify(context.messages)).digest("hex");
} else if (what === "entries" || what === "tree") {
  const method = what === "entries" ? "getEntries" : "getTree";
  const [sm, openMs] = timed(() => SessionManager.open(file));
  const [answer, callMs] = timed(() => sm[method]());
  result.ms = openMs + callMs;
  result.callMs = callMs;
  result.count = answer.length;
  // What the answer holds, cheaply: every entry's id in the order given (depth-first for a tree).
  const ids = [];
  const stack = what === "tree" ? [...answer].reverse() : answer.map((entry) => ({ entry, children: [] }));
  if (what === "tree") {
    while (stack.length) {
      const node = stack.pop();
      ids.push(node.entry.id, node.label ?? "");
      for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
    }
  } else {
    for (const node of stack) ids.push(node.entry.id);
  }
  result.digest = createHash("sha256").update(ids.join(",")).digest("hex");
} else if (what === "list") {
  // The sessions' own cwd, so that pi 1.6's cwd filter (a directory not the default) keeps them.
  const { readdirSync, readFileSync } = await import("node:fs");
  const first = readdirSync(file).find((name) => name.endsWith(".jsonl"));
  const head = readFileSync(join(file, first), "utf8").slice(0, 4096).split("\n")[0];
  const start = performance.now();
  const sessions = await SessionManager.list(JSON.parse(head).cwd, file);
  result.ms = performance.now() - start;
  result.count = sessions.length;
  result.textMs = timed(() => sessions.reduce((length, session) => length + session.allMessagesText.length, 0))[1];
  const { basename } = await import("node:path");
  const comparable = sessions.map((session) => ({ ...session, path: basename(session.path) }));
  result.digest = createHash("sha256").update(JSON.stringify(comparable)).digest("hex");
}
clearInterval(sample);
result.peakRssMiB = Math.round(Math.max(peak, process.memoryUsage().rss) / 1048576);
process.stdout.write(JSON.stringify(result));
