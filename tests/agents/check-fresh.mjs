// Checks that treelog reads sessions the clients just wrote (make-fixtures.mjs --out DIR) as
// it reads the committed ones: every fresh Claude Code session and Codex rollout converts to
// pi (`treelog convert --json`), and the converted entries have the structure of the
// committed fixture's conversion (entry types, message roles and tool names, in order; texts,
// ids and times differ run to run). .ci/run runs it after make-fixtures.mjs.
//
//   node check-fresh.mjs --treelog PATH DIR
//
// Prints one line per session; exits 1 on a difference or a failure.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const committed = join(here, "..", "data");
const args = process.argv.slice(2);
const at = args.indexOf("--treelog");
const treelog = at >= 0 ? args.splice(at, 2)[1] : join(here, "../../target/debug/treelog");
const [fresh] = args;
if (!fresh) {
  console.error("usage: node check-fresh.mjs --treelog PATH DIR");
  process.exit(2);
}

/** The sessions (not subagents' files) under an agent's folder, sorted by name. */
function sessions(dir) {
  return readdirSync(dir, { recursive: true })
    .filter((name) => name.endsWith(".jsonl") && !name.includes("subagents"))
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .sort();
}

const scratch = mkdtempSync(join(tmpdir(), "treelog-fresh-"));
let n = 0;
/** A session's conversion as one word per entry: `message:role[:tool,...]` or its type. */
function shape(file) {
  const out = join(scratch, `${n++}.jsonl`);
  const report = JSON.parse(execFileSync(treelog, ["convert", file, "--to", "pi", "--all-branches", "-o", out, "--json"], { encoding: "utf8" }));
  const words = readFileSync(out, "utf8").split("\n").filter(Boolean).slice(1).map((line) => {
    const entry = JSON.parse(line);
    if (entry.type !== "message") return entry.type;
    const calls = Array.isArray(entry.message.content)
      ? entry.message.content.filter((b) => b.type === "toolCall").map((b) => b.name)
      : [];
    return [`message:${entry.message.role}`, ...calls].join(":");
  });
  if (words.length !== report.entries) throw new Error(`${file}: ${words.length} lines, the report says ${report.entries} entries`);
  return words;
}

let failed = 0;
try {
  for (const agent of ["claude-code", "codex"]) {
    const mine = sessions(join(fresh, agent));
    const ours = sessions(join(committed, agent));
    if (mine.length !== ours.length) {
      console.log(`${agent}: ${mine.length} fresh sessions, ${ours.length} committed`);
      failed++;
      continue;
    }
    for (const [index, file] of mine.entries()) {
      const got = shape(file);
      const want = shape(ours[index]);
      const same = JSON.stringify(got) === JSON.stringify(want);
      if (!same) failed++;
      console.log(`${same ? "ok  " : "DIFF"} ${agent} ${relative(fresh, file)}: ${got.length} entries${same ? "" : `\n  fresh:     ${got.join(" ")}\n  committed: ${want.join(" ")}`}`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
