// `search` and `reindexSearch` against the CLI they mirror: for many queries
// and every option, the hits deep-equal what `treelog search --json` prints over the same
// directory (same index, same keys, values and order), and the errors carry the package's
// codes where the CLI refuses with exit 2. The CLI is TREELOG_CLI when set (scripts/test sets
// it to the binary `cargo test --workspace` has just built), else built in debug (`cargo build
// -p treelog-cli`, a no-op when it is current) and run from the repository's target directory.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { DATA, TRANSCRIPTS, prng, tempDir as newTempDir, treelog } from "./helpers.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPOSITORY = join(HERE, "../../..");
const CLI = process.env.TREELOG_CLI || join(process.env.CARGO_TARGET_DIR ?? join(REPOSITORY, "target"), "debug/treelog");

before(() => {
  if (process.env.TREELOG_CLI) return;
  const built = spawnSync("cargo", ["build", "--quiet", "-p", "treelog-cli"], { cwd: REPOSITORY, encoding: "utf8" });
  assert.equal(built.status, 0, `cargo build -p treelog-cli failed:\n${built.stderr}`);
});

/** The directories made here, removed when the file's tests end. */
const made = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function tempDir(prefix) {
  const dir = newTempDir(prefix);
  made.push(dir);
  return dir;
}

/** `treelog search --json` with `args`: [hits as parsed, exit code, stderr]. */
function cli(args, cwd = REPOSITORY) {
  const run = spawnSync(CLI, ["search", "--json", ...args], { cwd, encoding: "utf8" });
  const hits = run.stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
  return [hits, run.status, run.stderr];
}

/** The CLI flags of a `search` options object. */
function flags(options) {
  const out = [];
  for (const [key, value] of Object.entries(options)) out.push(`--${key}`, String(value));
  return out;
}

/** A directory with the bundled transcripts, two of them in a subdirectory. */
function bundledDir() {
  const dir = tempDir("treelog-search-bundled-");
  mkdirSync(join(dir, "sub"));
  TRANSCRIPTS.forEach((name, index) => copyFileSync(join(DATA, `${name}.jsonl`), join(dir, index % 2 ? "sub" : "", `${name}.jsonl`)));
  return dir;
}

const WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"];
const DAY_MS = 86_400_000;
const START_MS = Date.parse("2025-03-01T00:00:00Z");

/**
 * `sessions` logs written line by line (header, then user, assistant and tool messages and an
 * occasional compaction), with words drawn from WORDS by a seeded generator and timestamps
 * spread over ten days; some in nested directories.
 */
function generatedDir(seed, sessions, entriesPerSession) {
  const rng = prng(seed);
  const dir = tempDir("treelog-search-generated-");
  const sentence = () => Array.from({ length: rng.int(3, 12) }, () => rng.pick(WORDS)).join(" ");
  for (let session = 0; session < sessions; session++) {
    const sub = join(dir, session % 3 === 0 ? "" : `project-${session % 3}/${session % 2 ? "deep" : ""}`);
    mkdirSync(sub, { recursive: true });
    let ms = START_MS + rng.int(0, 9) * DAY_MS + rng.int(0, DAY_MS);
    const iso = () => new Date(ms).toISOString();
    const lines = [JSON.stringify({ type: "session", version: 3, id: `s-${seed}-${session}`, timestamp: iso(), cwd: "/work/project" })];
    let parentId = null;
    for (let entry = 0; entry < entriesPerSession; entry++) {
      ms += rng.int(1_000, 3_600_000);
      const id = rng.hex(8);
      const kind = rng.weighted({ user: 3, assistant: 4, toolResult: 2, compaction: 1 });
      const base = { id, parentId, timestamp: iso() };
      if (kind === "compaction") {
        lines.push(JSON.stringify({ type: "compaction", ...base, summary: sentence(), firstKeptEntryId: parentId ?? id, tokensBefore: 1000 }));
      } else if (kind === "toolResult") {
        const message = { role: "toolResult", toolCallId: rng.hex(6), toolName: "bash", content: [{ type: "text", text: sentence() }], isError: false, timestamp: ms };
        lines.push(JSON.stringify({ type: "message", ...base, message }));
      } else {
        const content = kind === "user" ? sentence() : [{ type: "text", text: sentence() }];
        lines.push(JSON.stringify({ type: "message", ...base, message: { role: kind, content, timestamp: ms } }));
      }
      parentId = id;
    }
    writeFileSync(join(sub, `session-${session}.jsonl`), `${lines.join("\n")}\n`);
  }
  return dir;
}

/** Options for each comparison: none, each filter, both sorts and limits. */
const OPTION_SETS = [
  {},
  { limit: 1 },
  { limit: 7 },
  { limit: 100000 },
  { sort: "newest" },
  { sort: "newest", limit: 3 },
  { sort: "score", role: "user" },
  { role: "assistant" },
  { role: "tool", limit: 50 },
  { type: "compaction" },
  { type: "message", sort: "newest", limit: 50 },
];

/** Compares every query with every option set over `dir`; returns how many comparisons had hits. */
async function compareWithCli(dir, queries, optionSets) {
  let withHits = 0;
  for (const query of queries) {
    for (const options of optionSets) {
      const what = `search(${JSON.stringify(query)}, ${JSON.stringify(options)})`;
      const [expected, status, stderr] = cli([query, dir, ...flags(options)]);
      assert.equal(status, expected.length ? 0 : 1, `${what}: CLI exit ${status}: ${stderr}`);
      const actual = await treelog.search(query, dir, options);
      assert.deepEqual(actual, expected, what);
      if (actual.length > 0) withHits++;
    }
  }
  return withHits;
}

/** Over the bundled pi transcripts, the hits of words, phrases, prefixes and exclusions under every option set deep-equal the CLI's. */
test("search over the bundled transcripts equals treelog search --json", async () => {
  const dir = bundledDir();
  await treelog.reindexSearch(dir);
  const queries = ["the", "error", "file", "\"the file\"", "read*", "test*", "the -file", "-error the", "TOKIO", "cargo", "zzznothing"];
  const withHits = await compareWithCli(dir, queries, OPTION_SETS);
  assert.ok(withHits > queries.length * 3, `only ${withHits} comparisons had hits`);
});

/** Over a generated directory (nested, ten days of timestamps), every query and option set, time windows included, equals the CLI; filters really narrow the hits. */
test("search over a generated directory equals treelog search --json, time windows included", async () => {
  const dir = generatedDir(21, 24, 40);
  const windows = [
    { since: "2025-03-04" },
    { until: "2025-03-04" },
    { since: "2025-03-03", until: "2025-03-05", sort: "newest" },
    { since: "2025-03-02T12:00:00Z", until: "2025-03-06T06:30:00.000Z", role: "user", limit: 100 },
  ];
  const queries = ["alpha", "alpha bravo", "\"charlie delta\"", "ech*", "golf -hotel", "-india juliet", "\"kilo lima\" alpha", "ALPHA"];
  const withHits = await compareWithCli(dir, queries, [...OPTION_SETS, ...windows]);
  assert.ok(withHits > queries.length * 10, `only ${withHits} comparisons had hits`);
  // The filters are not no-ops here: each keeps fewer hits than the unfiltered search.
  const all = await treelog.search("alpha", dir, { limit: 100000 });
  for (const options of [{ role: "user" }, { type: "compaction" }, { since: "2025-03-04" }, { until: "2025-03-04" }]) {
    const some = await treelog.search("alpha", dir, { ...options, limit: 100000 });
    assert.ok(some.length > 0 && some.length < all.length, `${JSON.stringify(options)}: ${some.length} of ${all.length}`);
  }
});

/** With no paths the current directory is searched and hits are named from ".", as by the CLI run there; a string path is one path, an array several (merged as the CLI merges them), [] none. */
test("paths: required (no default to the current directory), one string, several, none", async () => {
  const dir = generatedDir(5, 6, 20);
  const saved = process.cwd();
  try {
    process.chdir(dir);
    for (const call of [() => treelog.search("alpha"), () => treelog.search("alpha", null, {})]) {
      await assert.rejects(call, (error) => error.code === "TREELOG_INVALID_INPUT" && /name the sessions to search/.test(error.message));
    }
    assert.ok(!existsSync(join(dir, ".treelog-search")), "nothing written into the current directory");
    const [expected] = cli(["alpha"], dir);
    assert.ok(expected.length > 0 && expected[0].session.startsWith("./"), JSON.stringify(expected[0]));
    assert.deepEqual(await treelog.search("alpha", "."), expected);
  } finally {
    process.chdir(saved);
  }
  const file = join(dir, "session-0.jsonl");
  const sub = join(dir, "project-1");
  const [expectedFile] = cli(["bravo", file]);
  assert.ok(expectedFile.length > 0 && expectedFile.every((hit) => hit.session === file));
  assert.deepEqual(await treelog.search("bravo", file), expectedFile);
  for (const sort of ["score", "newest"]) {
    const [expectedBoth] = cli(["bravo", file, sub, "--sort", sort, "--limit", "9"]);
    assert.deepEqual(await treelog.search("bravo", [file, sub], { sort, limit: 9 }), expectedBoth, sort);
  }
  assert.deepEqual(await treelog.search("bravo", []), []);
});

/** A line appended by another writer (a plain appendFileSync, not this package) is found by the next search, at its line, as the CLI finds it. */
test("an append by another writer is found on the next search", async () => {
  const dir = generatedDir(8, 4, 15);
  const file = join(dir, "session-0.jsonl");
  assert.deepEqual(await treelog.search("zephyrword", dir), []);
  const entry = {
    type: "message", id: "appended1", parentId: null, timestamp: "2025-04-01T00:00:00.000Z",
    message: { role: "user", content: "a zephyrword from elsewhere", timestamp: 1 },
  };
  appendFileSync(file, `${JSON.stringify(entry)}\n`);
  const hits = await treelog.search("zephyrword", dir);
  assert.equal(hits.length, 1);
  assert.equal(hits[0].id, "appended1");
  assert.equal(hits[0].line, 17, "header + 15 entries + the appended line");
  assert.equal(hits[0].session, file);
  assert.deepEqual(hits, cli(["zephyrword", dir])[0]);
});

/** Every file under `root` with its size and mtime: what a call must leave as it was. */
function listing(root) {
  const files = {};
  (function walk(path) {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) walk(child);
      else {
        const stat = statSync(child);
        files[child] = [stat.size, stat.mtimeMs];
      }
    }
  })(root);
  return files;
}

/**
 * indexDir and indexWrite are the CLI's --index-dir and --no-index-write: the index goes to
 * the index directory and the session folder is left as it was; a search that writes nothing
 * leaves every directory as it was and answers as the index would; the hits equal the CLI's
 * with the same flags, and the CLI then finds the same index.
 */
test("indexDir and indexWrite: the CLI's --index-dir and --no-index-write", async () => {
  const dir = generatedDir(11, 5, 20);
  const sessions = listing(dir);
  const cache = tempDir("treelog-search-cache-");
  const hits = await treelog.search("alpha", dir, { indexDir: cache, limit: 50 });
  assert.ok(hits.length > 5, `${hits.length} hits`);
  assert.deepEqual(listing(dir), sessions, "the session folder was written");
  // The search index, and the sidecars of the sessions with hits (opened to say which hits
  // are on their active path), go to the index directory.
  const indexes = readdirSync(cache).filter((name) => name.startsWith("search-"));
  assert.equal(indexes.length, 1);
  assert.match(indexes[0], /^search-[0-9a-f]{16}$/);
  assert.ok(readdirSync(cache).every((name) => name.startsWith("search-") || name.endsWith(".treelog")), readdirSync(cache).join(" "));
  const [cliHits, status, stderr] = cli(["--index-dir", cache, "--limit", "50", "alpha", dir]);
  assert.equal(status, 0);
  assert.equal(stderr, "", "the CLI found the index the package built");
  assert.deepEqual(hits, cliHits);

  const cached = listing(cache);
  assert.deepEqual(await treelog.search("alpha", dir, { indexDir: cache, indexWrite: false, limit: 50 }), hits);
  assert.deepEqual(listing(cache), cached, "a current index read without writing was written");

  const empty = tempDir("treelog-search-unwritten-");
  const notices = [];
  const inMemory = await treelog.search("alpha", dir, { indexDir: empty, indexWrite: false, limit: 50, onNotice: (notice) => notices.push(notice) });
  assert.deepEqual(inMemory, hits, "an index built in memory answers as the one on disk");
  assert.deepEqual(readdirSync(empty), []);
  assert.deepEqual(listing(dir), sessions);
  assert.equal(notices.length, 1);
  assert.equal(notices[0].message, `${join(empty, indexes[0])}: there is no search index yet and index writes are off; building it in memory from the logs, for this search only`);

  const ahead = tempDir("treelog-search-ahead-");
  const summary = await treelog.reindexSearch(dir, { indexDir: ahead });
  assert.equal(summary.readWhole, 5);
  assert.deepEqual(readdirSync(ahead), indexes, "the same key names the directory's index");
  assert.deepEqual(listing(dir), sessions);

  for (const [call, options] of [
    [treelog.search, { indexWrite: "no" }],
    [treelog.search, { indexDir: "" }],
    [treelog.reindexSearch, { indexDir: 5 }],
  ]) {
    const args = call === treelog.search ? ["alpha", dir, options] : [dir, options];
    await assert.rejects(call(...args), { code: "TREELOG_INVALID_INPUT" }, JSON.stringify(options));
  }
});

/** Each bad input is refused with its code and the user's words, where the CLI refuses it with exit 2 (for the same query, path or flag). */
test("errors: bad query, unreadable path, bad option values", async () => {
  const dir = generatedDir(3, 2, 5);
  const missing = join(dir, "missing");
  const cases = [
    ["TREELOG_BAD_QUERY", /bad query: the phrase "open phrase has no closing quote/, ['"open phrase', dir], ['"open phrase', dir]],
    ["TREELOG_BAD_QUERY", /holds no letters or digits/, ["!!!", dir], ["!!!", dir]],
    ["TREELOG_IO", new RegExp(`${missing}: cannot open: no such file or directory`), ["alpha", missing], ["alpha", missing]],
    ["TREELOG_INVALID_INPUT", /role "robot" is not one of user, assistant, tool/, ["alpha", dir, { role: "robot" }], ["alpha", dir, "--role", "robot"]],
    ["TREELOG_INVALID_INPUT", /since "yesterday" is not an ISO time/, ["alpha", dir, { since: "yesterday" }], ["alpha", dir, "--since", "yesterday"]],
    ["TREELOG_INVALID_INPUT", /until "31\/01\/2025" is not an ISO time/, ["alpha", dir, { until: "31/01/2025" }], ["alpha", dir, "--until", "31/01/2025"]],
    ["TREELOG_INVALID_INPUT", /limit must be a whole number of 1 or more, got 0/, ["alpha", dir, { limit: 0 }], ["alpha", dir, "--limit", "0"]],
    ["TREELOG_INVALID_INPUT", /limit must be a whole number of 1 or more, got 1.5/, ["alpha", dir, { limit: 1.5 }], ["alpha", dir, "--limit", "1.5"]],
    ["TREELOG_INVALID_INPUT", /limit must be a whole number of 1 or more, got "5"/, ["alpha", dir, { limit: "5" }], null],
    ["TREELOG_INVALID_INPUT", /sort "oldest" is not one of score, newest/, ["alpha", dir, { sort: "oldest" }], ["alpha", dir, "--sort", "oldest"]],
    ["TREELOG_INVALID_INPUT", /unknown option `limt`/, ["alpha", dir, { limt: 5 }], ["alpha", dir, "--limt", "5"]],
    ["TREELOG_INVALID_INPUT", /the query must be a string, got 42/, [42, dir], null],
    ["TREELOG_INVALID_INPUT", /each path must be a non-empty string, got 7/, ["alpha", [dir, 7]], null],
    ["TREELOG_INVALID_INPUT", /onNotice must be a function/, ["alpha", dir, { onNotice: "yes" }], null],
  ];
  for (const [code, message, args, cliArgs] of cases) {
    const what = `search(${args.map((arg) => JSON.stringify(arg)).join(", ")})`;
    await assert.rejects(treelog.search(...args), (error) => {
      assert.equal(error.code, code, `${what}: ${error.message}`);
      assert.match(error.message, message, what);
      assert.doesNotMatch(error.message, /Some\(|Os \{/, what);
      return true;
    });
    if (cliArgs) assert.equal(cli(cliArgs)[1], 2, `the CLI refuses ${cliArgs.join(" ")}`);
  }
  const file = join(dir, "session-0.jsonl");
  await assert.rejects(treelog.reindexSearch(file), { code: "TREELOG_INVALID_INPUT", message: `${file}: reindexSearch indexes a directory's sessions: name a directory` });
  await assert.rejects(treelog.reindexSearch(missing), (error) => error.code === "TREELOG_IO" && error.message.startsWith(`${missing}: cannot open: no such file or directory`));
  await assert.rejects(treelog.reindexSearch(dir, { force: "yes" }), { code: "TREELOG_INVALID_INPUT" });
});

/** A directory's first search rebuilds its index: onNotice hears the CLI's notice once, before the promise resolves, and onProgress ends with every log byte read; the next search rebuilds nothing. */
test("notices and progress reach the caller before the promise settles", async () => {
  const dir = generatedDir(13, 10, 30);
  const logBytes = (function sum(path) {
    return readdirSync(path, { withFileTypes: true }).reduce(
      (total, entry) => total + (entry.isDirectory() ? sum(join(path, entry.name)) : entry.name.endsWith(".jsonl") ? statSync(join(path, entry.name)).size : 0),
      0,
    );
  })(dir);
  const notices = [];
  const progress = [];
  const hits = await treelog.search("alpha", dir, { onNotice: (notice) => notices.push(notice), onProgress: (step) => progress.push(step) });
  assert.ok(hits.length > 0);
  assert.equal(notices.length, 1, JSON.stringify(notices));
  const indexDir = join(dir, ".treelog-search");
  assert.equal(notices[0].indexDir, indexDir);
  assert.equal(notices[0].reason, "there is no search index yet");
  assert.equal(notices[0].message, `${indexDir}: there is no search index yet; building it from the logs`);
  assert.ok(progress.length > 0);
  assert.deepEqual(progress.at(-1), { plannedBytes: logBytes, indexedBytes: logBytes });
  for (let at = 1; at < progress.length; at++) assert.ok(progress[at].indexedBytes >= progress[at - 1].indexedBytes);
  const again = [];
  await treelog.search("alpha", dir, { onNotice: (notice) => again.push(notice) });
  assert.deepEqual(again, []);
  // reindexSearch --force announces its rebuild and reads every log again.
  const forced = [];
  const summary = await treelog.reindexSearch(dir, { force: true, onNotice: (notice) => forced.push(notice.reason) });
  assert.deepEqual(forced, ["--force"]);
  assert.deepEqual(Object.keys(summary), ["path", "fresh", "caughtUp", "readWhole", "dropped", "bytes", "seconds"]);
  assert.equal(summary.readWhole, 10);
  assert.equal(summary.bytes, logBytes);
  // A callback that throws rejects the call with its error, once the work is done.
  const thrown = new Error("from onNotice");
  await assert.rejects(treelog.reindexSearch(dir, { force: true, onNotice: () => { throw thrown; } }), (error) => error === thrown);
});

/**
 * A search that builds the index of a larger directory (13.7 MB) runs off the event loop: a
 * timer set after the call fires, and a 5 ms interval keeps ticking, before its promise
 * settles (a search on the JS thread would finish inside the call, before either is set).
 */
test("a search does not block the event loop", async () => {
  const dir = tempDir("treelog-search-large-");
  for (let copy = 0; copy < 12; copy++) {
    for (const name of TRANSCRIPTS) copyFileSync(join(DATA, `${name}.jsonl`), join(dir, `${name}-${copy}.jsonl`));
  }
  const order = [];
  let ticks = 0;
  const pending = treelog.search("the", dir, { limit: 5 }).then((hits) => {
    order.push(`search settled after ${ticks} ticks`);
    return hits;
  });
  const interval = setInterval(() => ticks++, 5);
  setTimeout(() => order.push("timer"), 1);
  const hits = await pending;
  clearInterval(interval);
  assert.equal(hits.length, 5);
  assert.equal(order[0], "timer", order.join(", "));
  assert.ok(ticks >= 1, order.join(", "));
});

/**
 * Context edits and branches, as the CLI has them: every hit says whether a context edit
 * replaced its text (`edited`) and whether it lies on its session's active path (`activePath`);
 * `branch: "active"` keeps exactly the on-path hits of `branch: "all"`, in order.
 */
test("edited and activePath as the CLI gives them; branch 'active' keeps the on-path hits", async () => {
  const dir = bundledDir();
  for (const query of ["the", "file", "test*"]) {
    const all = await treelog.search(query, dir, { limit: 1000 });
    const [cliAll] = cli(["--limit", "1000", query, dir]);
    assert.deepEqual(all, cliAll, `${query}: all branches`);
    assert.ok(all.length > 0 && all.every((hit) => typeof hit.edited === "boolean" && typeof hit.activePath === "boolean"), query);
    const active = await treelog.search(query, dir, { limit: 1000, branch: "active" });
    const [cliActive] = cli(["--limit", "1000", "--branch", "active", query, dir]);
    assert.deepEqual(active, cliActive, `${query}: active branch`);
    assert.deepEqual(active, all.filter((hit) => hit.activePath), `${query}: the on-path hits of all`);
  }
  assert.ok((await treelog.search("the", dir, { limit: 1000 })).some((hit) => !hit.activePath), "the bundled logs have hits off their active path");
  await assert.rejects(treelog.search("the", dir, { branch: "some" }), (error) => error.code === "TREELOG_INVALID_INPUT");
});

/**
 * `includeEdited`, as the CLI's `--include-edited`: the original text of a message a context
 * edit removed or replaced is found (read from the log, never from the index), each such hit
 * `original: true`, the text output marking it `[original]`; without it, no hit and no
 * `original` key.
 */
test("includeEdited finds removed and replaced originals as the CLI does", async () => {
  const dir = tempDir("treelog-search-edited-");
  const time = "2025-03-01T00:00:00.000Z";
  const message = (id, parentId, role, content) => JSON.stringify({ type: "message", id, parentId, timestamp: time, message: { role, content } });
  const edit = (id, parentId, targetId, replacement) => JSON.stringify({ type: "context_edit", id, parentId, timestamp: time, targetId, replacement });
  const lines = [
    JSON.stringify({ type: "session", version: 3, id: "s", timestamp: time, cwd: "/w" }),
    message("m1", null, "user", "my password is hunter2zebra"),
    message("m2", "m1", "assistant", "noted alpaca"),
    edit("e1", "m2", "m1", null),
    edit("e2", "e1", "m2", { content: "redacted llama" }),
  ];
  writeFileSync(join(dir, "a.jsonl"), lines.map((line) => `${line}\n`).join(""));
  for (const query of ["hunter2zebra", "alpaca", "llama", "\"password is\"", "hunter*"]) {
    const without = await treelog.search(query, dir);
    assert.deepEqual(without, cli([query, dir])[0], `${query}: without`);
    assert.ok(without.every((hit) => !("original" in hit) && hit.snippet.toLowerCase().includes("llama")), query);
    const withEdited = await treelog.search(query, dir, { includeEdited: true });
    const [cliHits] = cli(["--include-edited", query, dir]);
    assert.deepEqual(withEdited, cliHits, `${query}: with includeEdited`);
    assert.equal(withEdited.length, 1, query);
    assert.equal(withEdited[0].original, query !== "llama", query);
  }
  const [removed] = await treelog.search("hunter2zebra", dir, { includeEdited: true });
  assert.deepEqual([removed.line, removed.id, removed.edited, removed.snippet], [2, "m1", false, "my password is hunter2zebra"]);
  const text = spawnSync(CLI, ["search", "--include-edited", "alpaca", dir], { encoding: "utf8" });
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /a\.jsonl:3 {2}assistant {2}\S+ {2}\[original\] noted alpaca/);
  const indexDir = join(dir, ".treelog-search");
  for (const name of readdirSync(indexDir)) {
    const bytes = readFileSync(join(indexDir, name));
    assert.ok(!bytes.includes("hunter2zebra") && !bytes.includes("alpaca"), `${name} holds an original's words`);
  }
  const bundled = bundledDir();
  for (const query of ["the", "file", "test*"]) {
    const hits = await treelog.search(query, bundled, { limit: 1000, includeEdited: true });
    assert.deepEqual(hits, cli(["--limit", "1000", "--include-edited", query, bundled])[0], query);
    assert.ok(hits.every((hit) => typeof hit.original === "boolean"), query);
  }
  await assert.rejects(treelog.search("the", dir, { includeEdited: "yes" }), (error) => error.code === "TREELOG_INVALID_INPUT");
});
