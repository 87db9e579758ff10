// Every read of pi 1.6.0's SessionManager on the bundled pi-written transcripts, deep-equal
// to pi's own answers (and every read 0.73.1 has, to 0.73.1's, the context where the log holds
// nothing only 1.6 reads); and the module's functions over entry arrays.
import assert from "node:assert/strict";
import { test } from "node:test";
import { copies, pi, pi073, sameJson, thrown, treelog, TRANSCRIPTS, prng, hashSeed } from "./helpers.mjs";

const GETTERS = [
  "getHeader", "getLeafId", "getLeafEntry", "getSessionName", "getSessionId", "getEntryCount",
  "getEntries", "getTree", "getBranch", "buildSessionContext", "buildContextEntries",
  "buildSessionProjection", "getCwd", "getSessionDir", "isPersisted", "usesDefaultSessionDir",
];

/** The getters 0.73.1 has (its surface is a subset of 1.6.0's). */
const GETTERS_073 = [
  "getHeader", "getLeafId", "getLeafEntry", "getSessionName", "getSessionId", "getEntries", "getTree", "getBranch",
  "buildSessionContext", "getCwd", "getSessionDir", "isPersisted",
];

/** Whether a log holds what only pi 1.6's context rules read (format-spec/log.md §7, "1.6 only"). */
const holds16Only = (entries) => entries.some((entry) => entry.type === "usage" || entry.type === "context_edit" ||
  (entry.type === "message" && entry.message?.role === "system") || (entry.type === "compaction" && entry.systemMessage));

for (const name of TRANSCRIPTS) {
  test(`${name}: every getter 0.73.1 has equals 0.73.1's (its context too, unless the log holds 1.6-only entries)`, () => {
    const { forPi, forTreelog } = copies(name);
    const expected = pi073.SessionManager.open(forPi);
    const actual = treelog.SessionManager.open(forTreelog);
    const only16 = holds16Only(expected.getEntries());
    for (const getter of GETTERS_073) {
      if (getter === "buildSessionContext" && only16) continue;
      sameJson(actual[getter](), expected[getter](), `0.73.1 ${getter}`);
    }
  });

  test(`${name}: every getter equals pi's`, () => {
    const { forPi, forTreelog } = copies(name);
    const expected = pi.SessionManager.open(forPi);
    const actual = treelog.SessionManager.open(forTreelog);
    for (const getter of GETTERS) sameJson(actual[getter](), expected[getter](), getter);
    assert.equal(actual.getSessionFile(), forTreelog);
  });

  test(`${name}: per-entry queries and other leaves equal pi's`, () => {
    const { forPi, forTreelog } = copies(name);
    const expected = pi.SessionManager.open(forPi);
    const actual = treelog.SessionManager.open(forTreelog);
    const entries = expected.getEntries();
    const rng = prng(hashSeed(name));
    const sample = entries.filter(() => rng.chance(0.06));
    for (const entry of [...sample, entries[0], entries[entries.length - 1]]) {
      const id = entry.id;
      sameJson(actual.getEntry(id), expected.getEntry(id), `getEntry(${id})`);
      sameJson(actual.getChildren(id), expected.getChildren(id), `getChildren(${id})`);
      sameJson(actual.getLabel(id), expected.getLabel(id), `getLabel(${id})`);
      sameJson(actual.getBranch(id), expected.getBranch(id), `getBranch(${id})`);
      expected.branch(id);
      actual.branch(id);
      for (const getter of ["getLeafId", "getLeafEntry", "buildSessionContext", "buildContextEntries", "buildSessionProjection"]) {
        sameJson(actual[getter](), expected[getter](), `${getter} at ${id}`);
      }
      // The module's functions over the entry array, at the same leaf.
      for (const fn of ["buildSessionContext", "buildContextEntries", "buildSessionProjection"]) {
        sameJson(treelog[fn](entries, id), pi[fn](entries, id), `${fn}(entries, ${id})`);
      }
    }
    for (const leaf of [undefined, null, "no-such-id"]) {
      for (const fn of ["buildSessionContext", "buildContextEntries", "buildSessionProjection"]) {
        sameJson(treelog[fn](entries, leaf), pi[fn](entries, leaf), `${fn}(entries, ${leaf})`);
      }
    }
    sameJson(actual.getEntry("no-such-id"), expected.getEntry("no-such-id"), "getEntry(unknown)");
    sameJson(actual.getChildren("no-such-id"), expected.getChildren("no-such-id"), "getChildren(unknown)");
    sameJson(actual.getBranch("no-such-id"), expected.getBranch("no-such-id"), "getBranch(unknown)");
    assert.ok(thrown(() => expected.branch("no-such-id")));
    const error = thrown(() => actual.branch("no-such-id"));
    assert.equal(error?.code, "TREELOG_NOT_FOUND");
    assert.match(error.message, /^Entry no-such-id not found/);
    actual.resetLeaf();
    expected.resetLeaf();
    for (const getter of GETTERS) sameJson(actual[getter](), expected[getter](), `${getter} after resetLeaf`);
  });

  test(`${name}: loadEntriesFromFile, parse, single-entry projections equal pi's`, () => {
    const { forPi, forTreelog } = copies(name);
    const expected = pi.loadEntriesFromFile(forPi);
    sameJson(treelog.loadEntriesFromFile(forTreelog), expected, "loadEntriesFromFile");
    const entries = expected.slice(1);
    sameJson(treelog.getLatestCompactionEntry(entries), pi.getLatestCompactionEntry(entries), "getLatestCompactionEntry");
    for (const entry of entries) {
      sameJson(treelog.sessionEntryToContextMessages(entry), pi.sessionEntryToContextMessages(entry), `sessionEntryToContextMessages(${entry.id})`);
      const edit = entries.find((other) => other.type === "context_edit" && other.targetId === entry.id);
      if (edit) sameJson(treelog.projectContextEntry(entry, edit), pi.projectContextEntry(entry, edit), `projectContextEntry(${entry.id})`);
    }
  });
}

test("parseSessionEntries, migrateSessionEntries, assertValidSessionId, CURRENT_SESSION_VERSION", () => {
  const text = '\n{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\nnot json\n{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"hookMessage","content":"x"}}\n  \n';
  sameJson(treelog.parseSessionEntries(text), pi.parseSessionEntries(text), "parseSessionEntries");
  const a = treelog.parseSessionEntries(text);
  const b = pi.parseSessionEntries(text);
  treelog.migrateSessionEntries(a);
  pi.migrateSessionEntries(b);
  for (const entries of [a, b]) for (const entry of entries) if (entry.type !== "session") entry.id = "(drawn)";
  sameJson(a, b, "migrateSessionEntries");
  assert.equal(treelog.CURRENT_SESSION_VERSION, pi.CURRENT_SESSION_VERSION);
  for (const id of ["abc", "a.b-c_d", "", "-a", "a b", "ü"]) {
    assert.equal(Boolean(thrown(() => treelog.assertValidSessionId(id))), Boolean(thrown(() => pi.assertValidSessionId(id))), id);
  }
});
