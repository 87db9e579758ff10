// One measurement in a fresh process (bench.mjs runs it): IMPL FILE WHAT.
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
if (what === "open") {
  SessionManager.open(file);
} else if (what === "context") {
  const start = performance.now();
  const context = SessionManager.open(file).buildSessionContext();
  result.openContextMs = performance.now() - start;
  peak = Math.max(peak, process.memoryUsage().rss);
  const text = JSON.stringify(context);
  const parseStart = performance.now();
  JSON.parse(text);
  result.parseFloorMs = performance.now() - parseStart;
  result.messages = context.messages.length;
  result.digest = createHash("sha256").update(JSON.stringify(context.messages)).digest("hex");
} else if (what === "walk") {
  const sm = SessionManager.open(file);
  let start = performance.now();
  sm.getEntries();
  result.getEntriesMs = performance.now() - start;
  start = performance.now();
  sm.getTree();
  result.getTreeMs = performance.now() - start;
}
clearInterval(sample);
result.peakRssMiB = Math.round(Math.max(peak, process.memoryUsage().rss) / 1048576);
process.stdout.write(JSON.stringify(result));
