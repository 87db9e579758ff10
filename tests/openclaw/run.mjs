// treelog's OpenClaw commands against OpenClaw 2026.9.6's real importer.
//
//   node run.mjs --treelog PATH/TO/treelog
//
// Plants five sessions (plant.mjs: four the importer loses lines of, one clean), runs
// `openclaw doctor --session-sqlite import` on them, and checks that
//   - `treelog openclaw verify` reports each planted loss (line numbers, ids, kinds; a
//     session imported empty) and
//     nothing on the clean session, and exits 0 on a state directory migrated cleanly;
//   - `treelog openclaw export` of an archived session gives the original bytes, and of a
//     session without archive the rows, saying so;
//   - `treelog openclaw list` and the reading commands on openclaw:// answer as the rows do,
//     read here independently (node:sqlite, zlib's zstd) and written to a JSONL file;
//   - `treelog openclaw recover` writes the lost lines, and never touches the databases.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath, pathToFileURL } from "node:url";
import { zstdDecompressSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const at = process.argv.indexOf("--treelog");
const treelog = at > 0 ? process.argv[at + 1] : join(here, "..", "..", "target", "debug", "treelog");
const root = mkdtempSync(join(tmpdir(), "treelog-openclaw-"));
let checks = 0;

function check(name, fn) {
  fn();
  checks++;
  console.log(`ok ${checks} - ${name}`);
}

function run(args, { status = 0, env = {} } = {}) {
  const result = spawnSync(treelog, args, { encoding: "utf8", env: { ...process.env, ...env } });
  assert.equal(result.status, status, `treelog ${args.join(" ")}: exit ${result.status}\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/// A fresh state directory with the named agents' sessions, migrated by OpenClaw.
function migrate(name, agents) {
  const dir = join(root, name);
  execFileSync(process.execPath, [join(here, "plant.mjs"), dir, ...agents]);
  const state = join(dir, ".openclaw");
  const originals = join(dir, "originals");
  cpSync(join(state, "agents"), originals, { recursive: true });
  const started = Date.now();
  const result = spawnSync(
    process.execPath,
    [join(here, "node_modules", "openclaw", "openclaw.mjs"), "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
    { env: { ...process.env, HOME: dir, OPENCLAW_STATE_DIR: state }, encoding: "utf8" },
  );
  // 1 when the importer noticed an issue of its own (the dup-id agent's count mismatch).
  assert.ok(result.status === 0 || result.status === 1, result.stderr);
  console.log(`# ${name}: OpenClaw's importer took ${Date.now() - started} ms (exit ${result.status})`);
  return { state, original: (agent, id) => readFileSync(join(originals, agent, "sessions", `${id}.jsonl`)) };
}

/// A session's rows, read without treelog: the lines in seq order.
function rows(state, agent, session) {
  const db = new DatabaseSync(join(state, "agents", agent, "agent", "openclaw-agent.sqlite"), { readOnly: true });
  const found = db
    .prepare("SELECT event_json, event_zstd FROM transcript_events WHERE session_id = ? ORDER BY seq")
    .all(session)
    .map((row) => row.event_json ?? zstdDecompressSync(row.event_zstd).toString("utf8"));
  db.close();
  return found;
}

const sha = (bytes) => createHash("sha256").update(bytes).digest("hex");
function databases(state) {
  return readdirSync(join(state, "agents")).map((agent) => {
    const path = join(state, "agents", agent, "agent", "openclaw-agent.sqlite");
    return `${agent}:${sha(readFileSync(path))}`;
  });
}

const planted = migrate("planted", []);
const state = planted.state;
const before = databases(state);

check("verify reports each planted loss and nothing on the clean session", () => {
  const out = spawnSync(treelog, ["openclaw", "verify", "--json", state], { encoding: "utf8" });
  assert.equal(out.status, 1, out.stderr);
  const report = JSON.parse(out.stdout);
  const session = (agent) => report.sessions.find((s) => s.agent === agent);
  assert.deepEqual(session("clean").problems, []);
  assert.equal(session("clean").rows, 42);
  assert.equal(session("clean").sha256Matches, true);

  const badJson = session("bad-json");
  assert.equal(badJson.originalLines, 504);
  assert.equal(badJson.rows, rows(state, "bad-json", "s-bad-json").length);
  assert.deepEqual(
    { kind: badJson.problems[0].kind, line: badJson.problems[0].line, id: badJson.problems[0].id },
    { kind: "missing", line: 201, id: null },
  );
  assert.equal(badJson.problems.length, 504 - badJson.rows);

  const badUtf8 = session("bad-utf8");
  assert.equal(badUtf8.problems.length, 504 - badUtf8.rows);
  const last = badUtf8.problems.at(-1);
  assert.equal(last.line, 504);
  assert.equal(last.id, "u0502");
  assert.match(last.detail, /^invalid UTF-8/);

  const dup = session("dup-id");
  assert.equal(dup.source, "live");
  assert.deepEqual(
    dup.problems.map((p) => [p.kind, p.line, p.id]),
    [["dropped-duplicate", 32, "d0009"]],
  );
  const empty = session("empty");
  assert.equal(empty.importedEmpty, true);
  assert.deepEqual([empty.rows, empty.problems.length, empty.problems[0].line], [0, 6, 1]);
  assert.equal(report.sessionsWithLosses, 4);
});

check("verify's text names the lost lines", () => {
  const out = spawnSync(treelog, ["openclaw", "verify", state], { encoding: "utf8" });
  assert.equal(out.status, 1);
  assert.match(out.stdout, /^clean\/s-clean \(agent:clean:main\): ok, 42 line\(s\), 42 row\(s\)/m);
  assert.match(out.stdout, /^  line 201: missing: not JSON/m);
  assert.match(out.stdout, /^  line 32 \(id d0009\): dropped-duplicate/m);
});

check("export of an archived session is the original, byte for byte", () => {
  for (const agent of ["clean", "bad-json"]) {
    const file = join(root, `export-${agent}.jsonl`);
    const out = run(["openclaw", "export", `openclaw://${state}#${agent}/s-${agent}`, file]);
    assert.match(out, /copied the original byte for byte/);
    assert.deepEqual(readFileSync(file), planted.original(agent, `s-${agent}`));
  }
});

check("export without an archived original writes the rows and says they were rewritten", () => {
  const file = join(root, "export-dup-id.jsonl");
  const out = run(["openclaw", "export", "dup-id/s-dup-id", file], { env: { OPENCLAW_STATE_DIR: state } });
  assert.match(out, /OpenClaw rewrote these lines/);
  assert.equal(readFileSync(file, "utf8"), rows(state, "dup-id", "s-dup-id").join("\n") + "\n");
});

// pi 1.6.0's own SessionManager, from the Node package's dependencies (README's test command
// installs them before this harness runs in CI).
const PI = join(here, "..", "..", "bindings", "node", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "core", "session-manager.js");
if (existsSync(PI)) {
  const { SessionManager } = await import(pathToFileURL(PI).href);
  check("an export opens in pi 1.6.0 with the answers treelog gives", () => {
    // The clean session's export is its archived original; dup-id's, without an archive, is
    // the rows: pi's answers on each equal treelog's on the same file, and on the rows' export
    // equal treelog's on the openclaw:// session itself.
    for (const [agent, fromRows] of [["clean", false], ["dup-id", true]]) {
      const address = `openclaw://${state}#${agent}/s-${agent}`;
      const file = join(root, `pi-export-${agent}.jsonl`);
      run(["openclaw", "export", address, file]);
      const sm = SessionManager.open(file);
      const path = sm.getBranch().map((entry) => entry.id);
      const context = sm.buildSessionContext();
      assert.ok(sm.getEntries().length > 10, `${agent}: pi read the entries`);
      for (const source of fromRows ? [file, address] : [file]) {
        const flags = source === file ? ["--no-index-write"] : [];
        assert.deepEqual(path, run([...flags, "path", source]).split("\n").filter(Boolean), `${agent}: path of ${source}`);
        assert.deepEqual(context, JSON.parse(run([...flags, "context", source])), `${agent}: context of ${source}`);
      }
      // The archived original and the rows hold the same entries, in the same tree.
      assert.deepEqual(path, run(["path", address]).split("\n").filter(Boolean), `${agent}: path of the rows`);
    }
  });
} else {
  console.log(`# skipped: pi 1.6.0 is not installed at ${PI} (npm ci in bindings/node)`);
}

check("list and the reading commands answer as the rows in a JSONL file", () => {
  const listed = JSON.parse(run(["openclaw", "list", "--json", state]));
  for (const agent of listed.agents) {
    for (const session of agent.sessions) {
      const lines = rows(state, agent.agent, session.id);
      assert.equal(session.rows, lines.length, `${agent.agent}/${session.id}`);
      assert.equal(session.key, `agent:${agent.agent}:main`);
      // A session imported empty is an empty log (`export` refuses it, as for a 0-byte file).
      if (lines.length === 0) continue;
      const file = join(root, `rows-${session.id}.jsonl`);
      writeFileSync(file, lines.join("\n") + "\n");
      const address = `openclaw://${state}#${agent.agent}/${session.id}`;
      for (const command of [["path"], ["tree"], ["context"], ["export"], ["export", "--format", "json"]]) {
        const fromDb = run([...command, address]);
        const fromFile = run(["--no-index-write", ...command, file]);
        assert.equal(fromDb, fromFile, `${command.join(" ")} ${address}`);
      }
      const info = run(["info", address]);
      assert.match(info, new RegExp(`^session: +${session.id} `, "m"));
    }
  }
  // The clean session's rows are its original's lines, modulo OpenClaw's rewrites.
  assert.equal(rows(state, "clean", "s-clean").length, planted.original("clean", "s-clean").toString().trim().split("\n").length);
});

check("recover writes the lost lines, in file order, after the header", () => {
  const out = join(root, "recovered");
  run(["openclaw", "recover", state, out]);
  const badJson = readFileSync(join(out, "bad-json", "s-bad-json.jsonl"), "utf8").split("\n");
  const original = planted.original("bad-json", "s-bad-json").toString("utf8").split("\n");
  assert.deepEqual(badJson, [original[0], ...original.slice(200)]);
  const dup = readFileSync(join(out, "dup-id", "s-dup-id.jsonl"), "utf8").trim().split("\n");
  assert.equal(dup.length, 2);
  assert.match(run(["--no-index-write", "info", join(out, "dup-id", "s-dup-id.jsonl")]), /entries: +1 /);
  assert.deepEqual(readdirSync(out).sort(), ["bad-json", "bad-utf8", "dup-id", "empty"]);
});

check("treelog never wrote the databases", () => {
  assert.deepEqual(databases(state), before);
});

check("verify finds nothing on a clean migration and exits 0", () => {
  const clean = migrate("clean-only", ["clean"]);
  const out = run(["openclaw", "verify", clean.state]);
  assert.match(out, /^1 session\(s\) checked under .*: nothing lost$/m);
});

rmSync(root, { recursive: true, force: true });
console.log(`# ${checks} checks passed`);
