// The size budget per entry (maxEntryBytes / TREELOG_MAX_ENTRY_BYTES): an append over it is
// kept and reported once per source (an extension's customType, a tool's name) as a process
// warning with code TREELOG_ENTRY_LARGE naming the source and the size; nothing is reported
// without a budget or under it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { tempDir, thrown, treelog } from "./helpers.mjs";

/** The TREELOG_ENTRY_LARGE warnings `body` gives (warnings arrive on the next tick). */
async function largeWarnings(body) {
  const seen = [];
  const listener = (warning) => {
    if (warning.code === "TREELOG_ENTRY_LARGE") seen.push(warning);
  };
  process.on("warning", listener);
  try {
    body();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off("warning", listener);
  }
  return seen;
}

const toolResult = (toolName, text) => ({
  role: "toolResult", toolCallId: "c1", toolName, content: [{ type: "text", text }], isError: false, timestamp: 2,
});

test("an append over maxEntryBytes is kept and reported once per extension or tool", async () => {
  const dir = tempDir();
  const sm = treelog.SessionManager.create("/work", dir, { maxEntryBytes: 2000 });
  const big = "x".repeat(5000);
  const warnings = await largeWarnings(() => {
    sm.appendMessage({ role: "user", content: "hi", timestamp: 1 });
    sm.appendCustomEntry("budget-ext/state", { big });
    sm.appendCustomEntry("budget-ext/state", { big });
    sm.appendMessage(toolResult("budget-read", big));
    sm.appendMessage(toolResult("budget-small", "small"));
    sm.appendCustomMessageEntry("budget-ext/note", "small", false);
  });
  assert.deepEqual(warnings.map((warning) => JSON.parse(warning.detail).source), ["extension budget-ext/state", "tool budget-read"]);
  const lines = readFileSync(sm.getSessionFile(), "utf8").split("\n");
  const custom = lines.find((line) => line.includes("budget-ext/state"));
  assert.equal(JSON.parse(warnings[0].detail).bytes, Buffer.byteLength(custom), "the size is the line's");
  assert.match(warnings[0].message, /budget-ext\/state/);
  assert.equal(sm.getEntries().length, 6, "every entry is kept");
});

test("TREELOG_MAX_ENTRY_BYTES sets the budget; without one nothing is reported", async () => {
  const big = "y".repeat(5000);
  const off = treelog.SessionManager.create("/work", tempDir());
  const none = await largeWarnings(() => off.appendCustomEntry("budget-env/off", { big }));
  assert.equal(none.length, 0);
  process.env.TREELOG_MAX_ENTRY_BYTES = "1000";
  let sm;
  try {
    sm = treelog.SessionManager.create("/work", tempDir());
  } finally {
    delete process.env.TREELOG_MAX_ENTRY_BYTES;
  }
  const warnings = await largeWarnings(() => sm.appendCustomEntry("budget-env/on", { big }));
  assert.equal(warnings.length, 1);
  assert.equal(JSON.parse(warnings[0].detail).budget, 1000);
});

test("a budget that is not a positive integer is refused", () => {
  const error = thrown(() => treelog.SessionManager.create("/work", tempDir(), { maxEntryBytes: -3 }));
  assert.equal(error.code, "TREELOG_INVALID_INPUT");
});
