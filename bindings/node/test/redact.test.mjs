// `treelog redact` as pi 1.6.0 sees it: after a redaction pi's own SessionManager opens the log
// with the same entries, tree, leaf and labels, and builds the same context but for the
// replaced text; a pi process that had the session open before the redaction and appends after
// it (in a child process, through pi's own appendMessage) leaves a log every line of which is
// valid and whose new entries hang where pi put them. pi's session manager is imported from its
// package directly (the addon is not needed). The CLI is TREELOG_CLI when set, else built in
// debug (`cargo build -p treelog-cli`).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPOSITORY = join(HERE, "../../..");
const CLI = process.env.TREELOG_CLI || join(process.env.CARGO_TARGET_DIR ?? join(REPOSITORY, "target"), "debug/treelog");
const PI_MODULE = pathToFileURL(join(HERE, "../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js")).href;
const { SessionManager } = await import(PI_MODULE);

const KEY = "AKIAQ3EGRZ7DKX5M7Q2X";
let dir;

before(() => {
  dir = mkdtempSync(join(tmpdir(), "treelog-redact-"));
  if (process.env.TREELOG_CLI) return;
  const built = spawnSync("cargo", ["build", "--quiet", "-p", "treelog-cli"], { cwd: REPOSITORY, encoding: "utf8" });
  assert.equal(built.status, 0, `cargo build -p treelog-cli failed:\n${built.stderr}`);
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** pi's sample session with KEY appended to a user message, a bash output and a label. */
function plantedLog() {
  const lines = readFileSync(join(REPOSITORY, "tests/data/pi16-gen-a.jsonl"), "utf8").split("\n").filter(Boolean);
  const plant = (number, set) => {
    const entry = JSON.parse(lines[number - 1]);
    set(entry);
    lines[number - 1] = JSON.stringify(entry);
  };
  plant(6, (entry) => (entry.message.content[0].text += ` key ${KEY}`));
  plant(20, (entry) => (entry.message.output += ` key ${KEY}`));
  plant(41, (entry) => (entry.label += ` ${KEY}`));
  const file = join(dir, "planted.jsonl");
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** What pi reads from `file`: entries, tree shape, leaf, labels and context, as JSON text. */
function piView(file) {
  const sm = SessionManager.open(file, dir);
  const shape = (nodes) => nodes.map((node) => [node.entry.id, node.label ?? null, shape(node.children)]);
  return {
    entries: JSON.stringify(sm.getEntries()),
    tree: JSON.stringify(shape(sm.getTree())),
    leaf: sm.getLeafId(),
    context: JSON.stringify(sm.buildSessionContext()),
  };
}

/** A child process holding `file` open in pi's SessionManager: appends a message on each
 * line it reads from stdin, answers `ok` after each append. */
function piHolding(file) {
  const code = `
    const { SessionManager } = await import(${JSON.stringify(PI_MODULE)});
    const sm = SessionManager.open(${JSON.stringify(file)}, ${JSON.stringify(dir)});
    process.stdout.write("open\\n");
    let n = 0;
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => {
      for (const _ of chunk.split("\\n").filter(Boolean)) {
        n += 1;
        sm.appendMessage({ role: "user", content: "after " + n, timestamp: 1767225600000 + n });
        process.stdout.write("ok\\n");
      }
    });
    process.stdin.on("end", () => process.exit(0));
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = [];
  let waiting = null;
  let buffer = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    let at;
    while ((at = buffer.indexOf("\n")) >= 0) {
      lines.push(buffer.slice(0, at));
      buffer = buffer.slice(at + 1);
      waiting?.();
    }
  });
  const next = () =>
    new Promise((resolve) => {
      const check = () => {
        if (lines.length > 0) {
          waiting = null;
          resolve(lines.shift());
        } else waiting = check;
      };
      check();
    });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  return { child, next, exited };
}

test("pi reads the redacted log as before but for the text, and a pi holding it appends validly", async () => {
  const file = plantedLog();
  const holder = piHolding(file);
  try {
    await redactUnderHolder(file, holder);
  } finally {
    holder.child.kill();
  }
});

async function redactUnderHolder(file, holder) {
  assert.equal(await holder.next(), "open");
  holder.child.stdin.write("append\n");
  assert.equal(await holder.next(), "ok");
  const before = piView(file);
  assert.ok(before.entries.includes(KEY));

  const run = spawnSync(CLI, ["redact", "--literal", KEY, file], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /replaced 3 occurrence\(s\)/);
  assert.ok(!readFileSync(file, "utf8").includes(KEY));

  const afterRedaction = piView(file);
  const strip = (text) => text.replaceAll(KEY, "[REDACTED]");
  assert.equal(afterRedaction.entries, strip(before.entries));
  assert.equal(afterRedaction.tree, strip(before.tree));
  assert.equal(afterRedaction.leaf, before.leaf);
  assert.equal(afterRedaction.context, strip(before.context));

  // The pi that had the file open appends after the redaction: to the new file, validly.
  holder.child.stdin.write("append\n");
  assert.equal(await holder.next(), "ok");
  holder.child.stdin.end();
  assert.equal(await holder.exited, 0);
  const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
  for (const line of lines) JSON.parse(line);
  const last = JSON.parse(lines.at(-1));
  const previous = JSON.parse(lines.at(-2));
  assert.equal(last.message.content, "after 2");
  assert.equal(last.parentId, previous.id);
  assert.equal(previous.message.content, "after 1");
  const reopened = SessionManager.open(file, dir);
  assert.equal(reopened.getLeafId(), last.id);
  assert.equal(reopened.getEntries().length, JSON.parse(afterRedaction.entries).length + 1);
}
