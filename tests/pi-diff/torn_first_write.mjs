// The header is never lost (format-spec/log.md §2): the first write of a new log, its header
// line and first entry as `treelog append` writes them, cut at every byte offset, then one
// `treelog append` on the cut file. pi 1.6.0 and 0.73.1 must then open the file as it is
// (no rewrite, no refusal), with a session header, the one `treelog info` reports, and
// read every entry treelog acknowledged, the last one as their leaf.
//
//   node torn_first_write.mjs [--treelog PATH]
//
// run.mjs runs the same check after its transcripts (the pi step of .ci/run);
// tools/tests/it/cli.rs runs this script when TREELOG_PI_NODE names a Node 24.
// Prints `N passed, M failed`; exits 1 on a failure, 2 when it could not run.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { loadPi, parseArgs } from "./common.mjs";

const here = dirname(fileURLToPath(import.meta.url));

function run(treelog, argv, input) {
  const child = spawnSync(treelog, argv, { input, encoding: "utf8" });
  if (child.error) throw new Error(`treelog ${argv[0]}: ${child.error.message}`);
  return child;
}

/** The ids an append printed, or throws with its stderr. */
function append(treelog, file, message) {
  const child = run(treelog, ["append", file], `${JSON.stringify(message)}\n`);
  if (child.status !== 0) throw new Error(`treelog append exited ${child.status}: ${child.stderr.trim()}`);
  return child.stdout.split("\n").filter(Boolean);
}

/**
 * Runs the check; returns {passed, failures: [{offset, pi, detail}]}. `pis`: the loaded pi
 * versions (common.mjs loadPi).
 */
export function checkTornFirstWrite({ treelog, pis, scratch }) {
  const results = { passed: 0, failures: [], offsets: 0 };
  const first = join(scratch, "first.jsonl");
  const firstIds = append(treelog, first, { role: "user", content: "first", timestamp: 1 });
  const whole = readFileSync(first);
  for (let offset = 0; offset <= whole.length; offset++) {
    results.offsets += 1;
    const file = join(scratch, `cut-${offset}.jsonl`);
    writeFileSync(file, whole.subarray(0, offset));
    let acknowledged;
    let header;
    try {
      acknowledged = append(treelog, file, { role: "user", content: `after a cut at ${offset}`, timestamp: 2 });
      // The uncut write was acknowledged too.
      if (offset === whole.length) acknowledged = [...firstIds, ...acknowledged];
      const info = run(treelog, ["info", file, "--json"]);
      if (info.status !== 0) throw new Error(`treelog info exited ${info.status}: ${info.stderr.trim()}`);
      header = JSON.parse(info.stdout).header;
    } catch (error) {
      results.failures.push({ offset, pi: "-", detail: error.message });
      continue;
    }
    const bytes = readFileSync(file);
    for (const pi of pis) {
      const copy = join(scratch, `cut-${offset}-pi${pi.short}.jsonl`);
      copyFileSync(file, copy);
      const fail = (detail) => results.failures.push({ offset, pi: pi.version, detail });
      let sm;
      try {
        sm = pi.module.SessionManager.open(copy);
      } catch (error) {
        fail(`open throws: ${error.message}`);
        continue;
      }
      const ids = new Set(sm.getEntries().map((entry) => entry.id));
      const missing = acknowledged.filter((id) => !ids.has(id));
      const leaf = acknowledged[acknowledged.length - 1];
      if (!readFileSync(copy).equals(bytes)) fail("pi rewrote the file");
      else if (sm.getHeader()?.type !== "session" || sm.getHeader()?.id !== header?.id) {
        fail(`header ${JSON.stringify(sm.getHeader()?.id)}, treelog's ${JSON.stringify(header?.id)}`);
      } else if (missing.length > 0) fail(`acknowledged entries missing: ${missing.join(", ")}`);
      else if (sm.getLeafId() !== leaf) fail(`leaf ${sm.getLeafId()}, the last acknowledged entry ${leaf}`);
      else results.passed += 1;
    }
  }
  return results;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const treelog = resolve(args.treelog ?? join(here, "../../target/debug/treelog"));
  const pis = [await loadPi("1.6"), await loadPi("0.73")];
  const scratch = mkdtempSync(join(tmpdir(), "pi-diff-torn-"));
  try {
    const results = checkTornFirstWrite({ treelog, pis, scratch });
    for (const failure of results.failures.slice(0, 20)) {
      console.log(`  cut at byte ${failure.offset}, pi ${failure.pi}: ${failure.detail}`);
    }
    console.log(
      `torn first write: ${results.offsets} cuts; ${results.passed} passed, ${results.failures.length} failed`,
    );
    process.exitCode = results.failures.length > 0 ? 1 : 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    await main();
  } catch (error) {
    console.error(`torn_first_write.mjs: ${error.message}`);
    process.exit(2);
  }
}
