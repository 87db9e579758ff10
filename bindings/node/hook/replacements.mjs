// The launcher's replacements of pi's own code: where a function of pi scans the whole
// history for an answer treelog's index holds, treelog-pi swaps that code for code that asks
// the index. This file is the one registry: every replacement is a small file of
// hook/replacements/, listed in REPLACEMENTS, and the package README lists each with the pi
// function it replaces and why.
//
// A replacement module exports:
//   name      a short name; its `run` gets the binding __treelog_<name, camelCased> in pi's chunk
//   replaces  the pi function, and the file of pi's unbundled dist that holds it
//   why       what pi's code costs there, and what answers it instead
//   find, replace
//             the exact text of pi's bundled chunk it replaces (found exactly once), and the
//             text put in its place; or
//   patch     patch(source) -> the chunk's source with the replacement made, or undefined when
//             the code it replaces is not there (as pi's bundle holds it, exactly once)
//   run       (optional) what the replaced code calls, imported into pi's chunk by file URL
//             under the binding above; the replaced code passes `__treelog` (this package's
//             module, index.js) to it. Replacement files import nothing at the top: the
//             launcher loads their text before Node's compile cache is on.
//
// Replacements apply to pi's bundled CLI only (the chunk that declares pi's SessionManager,
// where treelog's class is already swapped in; the unbundled route runs pi's own code), and
// only to the pi versions they were written for (WRITTEN_FOR): another version runs pi's own
// code, with one line on stderr saying so. A replacement whose code is not in the chunk is
// off, with one line on stderr naming it. TREELOG_PI_REPLACE=0 turns them all off, and
// TREELOG_PI_REPLACE=-name,-name turns off the ones named (for comparisons with pi's code).
import * as branchSinceCompaction from "./replacements/branch-since-compaction.mjs";
import * as compactionCount from "./replacements/compaction-count.mjs";
import * as footerUsage from "./replacements/footer-usage.mjs";
import * as resumeList from "./replacements/resume-list.mjs";
import * as sessionStats from "./replacements/session-stats.mjs";
import * as sessionUsage from "./replacements/session-usage.mjs";
import * as treeView from "./replacements/tree-view.mjs";

const TREELOG_MODULE_URL = new URL("../index.js", import.meta.url).href;
const here = (file) => new URL(`./replacements/${file}`, import.meta.url);

/** The pi releases the replacements were written for, checked against pi's bundle. */
export const WRITTEN_FOR = "1.6.x";
const writtenFor = (version) => /^1\.6\.\d+$/.test(version);

/** Every replacement, in the order they are applied: its module and that module's URL. */
export const REPLACEMENTS = [
  { module: compactionCount, url: here("compaction-count.mjs") },
  { module: footerUsage, url: here("footer-usage.mjs") },
  { module: branchSinceCompaction, url: here("branch-since-compaction.mjs") },
  { module: sessionStats, url: here("session-stats.mjs") },
  { module: sessionUsage, url: here("session-usage.mjs") },
  { module: treeView, url: here("tree-view.mjs") },
  { module: resumeList, url: here("resume-list.mjs") },
];

/** The binding a replacement's `run` has in pi's chunk. */
export const bindingOf = (name) => `__treelog_${name.replace(/-(\w)/g, (_, c) => c.toUpperCase())}`;

/** `source` with the replacement made, or undefined when its code is not there exactly once. */
function patched(module, source) {
  if (typeof module.patch === "function") return module.patch(source);
  const at = source.indexOf(module.find);
  if (at < 0 || source.indexOf(module.find, at + 1) >= 0) return undefined;
  return source.slice(0, at) + module.replace + source.slice(at + module.find.length);
}

/**
 * pi's chunk `source` with every applicable replacement made: { source, prelude, applied,
 * off } where `prelude` is the imports the replaced code needs (to go before the chunk's
 * own), `applied` the names applied and `off` one line per replacement left off. `version` is
 * pi's; `env` may turn them off (TREELOG_PI_REPLACE).
 */
export function applyReplacements(source, { version, env = process.env, replacements = REPLACEMENTS } = {}) {
  const setting = env.TREELOG_PI_REPLACE ?? "";
  if (setting === "0") return { source, prelude: "", applied: [], off: [] };
  if (!writtenFor(String(version))) {
    return { source, prelude: "", applied: [], off: [`pi ${version}: treelog's replacements of pi's whole-history loops are off (written for pi ${WRITTEN_FOR}); pi's own code runs`] };
  }
  const skipped = new Set(setting.split(",").filter((item) => item.startsWith("-")).map((item) => item.slice(1)));
  let prelude = `import*as __treelog from${JSON.stringify(TREELOG_MODULE_URL)};`;
  const applied = [];
  const off = [];
  for (const { module, url } of replacements) {
    if (skipped.has(module.name)) continue;
    const next = patched(module, source);
    if (next === undefined) {
      off.push(`replacement ${module.name} is off: pi ${version}'s bundle does not hold the code it replaces (${module.replaces}); pi's own code runs`);
      continue;
    }
    source = next;
    if (typeof module.run === "function") prelude += `import{run as ${bindingOf(module.name)}}from${JSON.stringify(url.href)};`;
    applied.push(module.name);
  }
  return { source, prelude: applied.length ? prelude : "", applied, off };
}
