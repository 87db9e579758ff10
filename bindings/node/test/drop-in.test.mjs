// The drop-in as a pi user meets it: a second writer on the same file, a damaged sidecar, a
// file that is not a session, and where the sidecar lives. Each test names what it proves.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  DATA, clock, installFakeClock, installSeededUuids, pi, prng, restoreRandomUuids, sameJson, tempDir, thrown, treelog,
} from "./helpers.mjs";

const NODE = process.execPath;
const INDEX = fileURLToPath(new URL("../index.js", import.meta.url));
const PI_MANAGER = fileURLToPath(new URL("../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js", import.meta.url));
const user = (text) => ({ role: "user", content: text, timestamp: 1 });

/** A copy of a bundled transcript in a fresh folder. */
function copyOf(name) {
  const dir = tempDir();
  const file = join(dir, "s.jsonl");
  copyFileSync(join(DATA, `${name}.jsonl`), file);
  return file;
}

/** Another process appends one message with pi's own manager (appendFileSync, as pi writes). */
function otherProcessAppends(file, text) {
  execFileSync(NODE, ["--input-type=module", "-e", `
    const { SessionManager } = await import(${JSON.stringify(PI_MANAGER)});
    SessionManager.open(${JSON.stringify(file)}).appendMessage({ role: "user", content: ${JSON.stringify(text)}, timestamp: 2 });
  `]);
}

test("two managers writing alternately: every entry lands, as with pi's (the file is byte-identical)", () => {
  const run = (module) => {
    const file = copyOf("pi16-sample-300");
    installFakeClock(Date.UTC(2026, 0, 1));
    installSeededUuids(prng(3));
    try {
      const first = module.SessionManager.open(file);
      const second = module.SessionManager.open(file);
      for (let i = 0; i < 3; i++) {
        first.appendMessage(user(`first ${i}`));
        second.appendMessage(user(`second ${i}`));
      }
      return { text: readFileSync(file, "utf8"), first: first.getBranch().map((e) => e.id), second: second.getBranch().map((e) => e.id) };
    } finally {
      restoreRandomUuids();
      clock.stop();
    }
  };
  const expected = run(pi);
  const actual = run(treelog);
  assert.equal(actual.text, expected.text);
  assert.deepEqual(actual.first, expected.first);
  assert.deepEqual(actual.second, expected.second);
  assert.equal(actual.text.split("\n").filter((line) => line.includes('"first ') || line.includes('"second ')).length, 6);
});

test("another process appends between appends: by default treelog continues from its own leaf, as pi does", () => {
  const file = copyOf("pi16-gen-b");
  const sm = treelog.SessionManager.open(file);
  const leaf = sm.getLeafId();
  otherProcessAppends(file, "from the other writer");
  const mine = sm.appendMessage(user("mine"));
  assert.equal(sm.getEntry(mine).parentId, leaf, "continues from its own leaf");
  const reopened = pi.SessionManager.open(file);
  const texts = reopened.getEntries().filter((e) => e.type === "message").map((e) => e.message.content);
  assert.ok(texts.includes("from the other writer") && texts.includes("mine"), "both writers' entries are in the file");
  assert.equal(reopened.getEntries().length, sm.getEntries().length, "treelog sees the other writer's entry too");
  sameJson(treelog.SessionManager.open(file).getTree(), reopened.getTree(), "the tree, reopened");
});

test("onConflict 'fail' refuses with TREELOG_CONFLICT and writes nothing; refresh() moves to the newest entry", () => {
  const file = copyOf("pi16-gen-b");
  const sm = treelog.SessionManager.open(file, undefined, undefined, { onConflict: "fail" });
  otherProcessAppends(file, "theirs");
  const before = readFileSync(file, "utf8");
  const error = thrown(() => sm.appendMessage(user("refused")));
  assert.equal(error?.code, "TREELOG_CONFLICT", String(error));
  assert.equal(readFileSync(file, "utf8"), before, "nothing written");
  sm.refresh();
  const theirs = sm.getLeafEntry();
  assert.equal(theirs.message.content, "theirs");
  const mine = sm.appendMessage(user("after refresh"));
  assert.equal(sm.getEntry(mine).parentId, theirs.id);
  assert.equal(thrown(() => treelog.SessionManager.open(file, undefined, undefined, { onConflict: "sometimes" }))?.code, "TREELOG_INVALID_INPUT");
});

test("onConflict 'follow' appends after the other writer's entries", () => {
  const file = copyOf("pi16-gen-b");
  const sm = treelog.SessionManager.open(file, undefined, undefined, { onConflict: "follow" });
  otherProcessAppends(file, "theirs");
  const mine = sm.appendMessage(user("mine"));
  assert.equal(sm.getEntry(sm.getEntry(mine).parentId).message.content, "theirs");
});

/** Damages `bytes` of a sidecar as `mode` says (seeded), in place. */
function damage(bytes, mode, seed) {
  const rng = prng(seed).random;
  const at = (size) => Math.floor(rng() * Math.max(1, bytes.length - size));
  if (mode === "bit-flip") {
    for (let i = 0; i < 8; i++) bytes[at(1)] ^= 1 << Math.floor(rng() * 8);
  } else if (mode === "overwrite-16") {
    const start = at(16);
    for (let i = 0; i < 16; i++) bytes[start + i] = Math.floor(rng() * 256);
  } else if (mode === "zero-page") {
    const start = Math.floor(at(4096) / 4096) * 4096;
    bytes.fill(0, start, start + 4096);
  } else if (mode === "random-page") {
    const start = Math.floor(at(4096) / 4096) * 4096;
    for (let i = start; i < Math.min(bytes.length, start + 4096); i++) bytes[i] = Math.floor(rng() * 256);
  } else if (mode === "truncated") {
    return bytes.subarray(0, at(1));
  }
  return bytes;
}

test("a damaged sidecar: the answers are pi's, the warning says so once in the CLI's words, no panic text", () => {
  const script = `
    const { SessionManager } = await import(${JSON.stringify(INDEX)});
    const sm = SessionManager.open(process.argv[1]);
    process.stdout.write(JSON.stringify({ context: sm.buildSessionContext(), entries: sm.getEntries(), branch: sm.getBranch(), tree: sm.getTree() }));
  `;
  let warned = 0;
  for (const mode of ["bit-flip", "overwrite-16", "zero-page", "random-page", "truncated"]) {
    for (let seed = 1; seed <= 6; seed++) {
      const file = copyOf("pi16-gen-a");
      treelog.SessionManager.open(file);
      const sidecar = `${file}.treelog`;
      writeFileSync(sidecar, damage(readFileSync(sidecar), mode, seed));
      const run = spawnSync(NODE, ["--input-type=module", "-e", script, file], { encoding: "utf8", maxBuffer: 1 << 26 });
      const what = `${mode} seed ${seed}`;
      assert.equal(run.status, 0, `${what}: ${run.stderr}`);
      assert.doesNotMatch(run.stderr, /panicked|RUST_BACKTRACE|stack backtrace/, what);
      const answers = JSON.parse(run.stdout);
      const reference = pi.SessionManager.open(file);
      sameJson(answers, { context: reference.buildSessionContext(), entries: reference.getEntries(), branch: reference.getBranch(), tree: reference.getTree() }, what);
      const warnings = run.stderr.split("\n").filter((line) => line.includes("TREELOG_INDEX_REBUILT"));
      assert.ok(warnings.length <= 1, `${what}: ${run.stderr}`);
      if (warnings.length === 1) {
        warned++;
        assert.match(warnings[0], /treelog: .*s\.jsonl\.treelog: index damaged \(.+\); rebuilt from the log/, what);
      }
    }
  }
  assert.ok(warned >= 5, `only ${warned} of 30 damaged sidecars were reported`);
});

test("onNotice takes the notice instead of a process warning", () => {
  const file = copyOf("pi16-gen-a");
  treelog.SessionManager.open(file);
  writeFileSync(`${file}.treelog`, "not a redb file at all");
  const notices = [];
  const sm = treelog.SessionManager.open(file, undefined, undefined, { onNotice: (notice) => notices.push(notice) });
  assert.equal(notices.length, 1);
  assert.equal(notices[0].code, "TREELOG_INDEX_REBUILT");
  assert.match(notices[0].message, /index damaged/);
  sameJson(sm.buildSessionContext(), pi.SessionManager.open(file).buildSessionContext(), "the context");
});

test("a file that is not a session says why, with a code", () => {
  const dir = tempDir();
  const cases = {
    "message first": [`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}\n`, /its type is "message"/],
    "no JSON": ["hello\nworld\n", /no line .* is valid JSON/],
    "header without id": [`{"type":"session","version":3}\n`, /no string id/],
  };
  for (const [name, [text, reason]] of Object.entries(cases)) {
    const file = join(dir, `${name}.jsonl`);
    writeFileSync(file, text);
    const error = thrown(() => treelog.SessionManager.open(file));
    assert.equal(error?.code, "TREELOG_NOT_A_SESSION", name);
    assert.match(error.message, /^Session file is not a valid pi session: /, name);
    assert.match(error.message, reason, name);
    assert.ok(thrown(() => pi.SessionManager.open(file)), `pi refuses ${name} too`);
  }
});

test("a file system error comes as TREELOG_IO naming the path", () => {
  const dir = tempDir();
  const blocker = join(dir, "a-file");
  writeFileSync(blocker, "x");
  const error = thrown(() => treelog.SessionManager.create("/work", join(blocker, "sessions")));
  assert.equal(error?.code, "TREELOG_IO", String(error));
  assert.match(error.message, /a-file/);
});

test("indexDir, TREELOG_INDEX_DIR and indexWrite: the sidecar where the CLI would put it", () => {
  const file = copyOf("pi16-gen-a");
  const indexDir = join(tempDir(), "indexes");
  const sm = treelog.SessionManager.open(file, undefined, undefined, { indexDir });
  sameJson(sm.buildSessionContext(), pi.SessionManager.open(file).buildSessionContext(), "context with indexDir");
  assert.ok(!existsSync(`${file}.treelog`), "nothing beside the log");
  assert.equal(readdirSync(indexDir).filter((name) => name.endsWith(".treelog")).length, 1);

  const other = copyOf("pi16-gen-b");
  const envDir = join(tempDir(), "from-env");
  process.env.TREELOG_INDEX_DIR = envDir;
  try {
    treelog.SessionManager.open(other).getEntries();
  } finally {
    delete process.env.TREELOG_INDEX_DIR;
  }
  assert.ok(!existsSync(`${other}.treelog`) && readdirSync(envDir).length === 1, "TREELOG_INDEX_DIR is the default indexDir");

  const third = copyOf("pi16-sample-300");
  const readOnly = treelog.SessionManager.open(third, undefined, undefined, { indexWrite: false });
  sameJson(readOnly.getBranch(), pi.SessionManager.open(third).getBranch(), "branch without index writes");
  assert.ok(!existsSync(`${third}.treelog`), "indexWrite: false writes no sidecar");
});

test("a folder that cannot take a sidecar: the session works and says so once", () => {
  const file = copyOf("pi16-gen-a");
  mkdirSync(`${file}.treelog`); // a directory where the sidecar file would go
  const notices = [];
  const sm = treelog.SessionManager.open(file, undefined, undefined, { onNotice: (notice) => notices.push(notice) });
  sameJson(sm.buildSessionContext(), pi.SessionManager.open(file).buildSessionContext(), "the context");
  sm.appendMessage(user("still works"));
  assert.equal(notices.length, 1, JSON.stringify(notices));
  assert.equal(notices[0].code, "TREELOG_INDEX_UNWRITTEN");
  assert.match(notices[0].message, /reading the log into memory instead/);
});
