// Differential check on hand-written edge cases: each log of edge_cases.json is opened by
// pi's own SessionManager and by treelog (`treelog path`, and `treelog context --pi-compat
// 0.73`, the context rule of the pi this runs), each on its own copy, and the leaf-to-root ids
// and the context JSON are compared. pi runs in a child process with a time limit: it loops
// forever on a self-parent.
//
// Usage: node edge_cases.mjs [--treelog PATH]. Prints one line per case; exits 1 if a case
// differs in a way not listed in `known` below. pi 0.73.1 is the one bindings/node pins (its
// test/pi-project.mjs).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { resolvePinned } from "../../bindings/node/test/pi-project.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const treelog =
  args[0] === "--treelog" ? args[1] : join(here, "../../target/release/treelog");
const cases = JSON.parse(readFileSync(join(here, "edge_cases.json"), "utf8"));
// Differences that are pi's bugs or treelog's documented rules (format-spec/log.md).
const known = {
  not_object_lines: "pi throws on a line that is JSON but not an object",
  self_parent: "pi loops forever on a self-parent; treelog reads it as a root",
};
const piScript = `
import { SessionManager } from ${JSON.stringify(resolvePinned("@mariozechner/pi-coding-agent"))};
const s = SessionManager.open(process.argv[1]);
console.log(JSON.stringify({ path: s.getBranch().map((e) => e.id), context: s.buildSessionContext() }));
`;
const sorted = (value) =>
  JSON.stringify(value, (_, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
const scratch = mkdtempSync(join(tmpdir(), "treelog-edge-"));
let unexpected = 0;
try {
  for (const [name, lines] of Object.entries(cases)) {
    const text = lines.join("\n") + "\n";
    const piCopy = join(scratch, `pi-${name}.jsonl`);
    const ourCopy = join(scratch, `tl-${name}.jsonl`);
    writeFileSync(piCopy, text);
    writeFileSync(ourCopy, text);
    const pi = spawnSync(process.execPath, ["--input-type=module", "-e", piScript, piCopy], {
      cwd: here,
      encoding: "utf8",
      timeout: 20_000,
      // pi handles SIGTERM itself, which a busy loop never lets run.
      killSignal: "SIGKILL",
    });
    const path = spawnSync(treelog, ["path", ourCopy], { encoding: "utf8" });
    const context = spawnSync(treelog, ["context", "--pi-compat", "0.73", ourCopy], { encoding: "utf8" });
    let verdict;
    if (path.status !== 0 || context.status !== 0) {
      verdict = `treelog failed: ${path.stderr}${context.stderr}`.trim();
    } else if (pi.status !== 0) {
      verdict = pi.error?.code === "ETIMEDOUT" ? "pi timed out" : "pi failed";
    } else {
      const theirs = JSON.parse(pi.stdout);
      const ours = { path: path.stdout.split("\n").filter(Boolean), context: JSON.parse(context.stdout) };
      const samePath = sorted(ours.path) === sorted(theirs.path);
      const sameContext = sorted(ours.context) === sorted(theirs.context);
      verdict =
        samePath && sameContext
          ? "same"
          : `differs (${samePath ? "" : `path pi ${theirs.path} / treelog ${ours.path}; `}${sameContext ? "" : "context"})`;
    }
    const note = verdict === "same" ? "" : known[name] ? ` [known: ${known[name]}]` : " [UNEXPECTED]";
    if (verdict !== "same" && !known[name]) unexpected += 1;
    console.log(`${name}: ${verdict}${note}`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(unexpected > 0 ? 1 : 0);
