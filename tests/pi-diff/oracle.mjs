// What pi itself derives from a transcript: the oracle treelog is compared with.
//
//   node oracle.mjs FILE --pi 1.6|0.73 [--leaves ID,ID,...] [--compact]
//
// prints one JSON object: header, leafId, sessionName, entryCount, labels, labelTimestamps,
// tree (getTree() flattened depth-first in pre-order) and, for each chosen leaf, the path,
// pi's buildSessionContext, and with pi 1.6.0 buildContextEntries ids and
// buildSessionProjection. --compact prints the form committed under tests/data (messages
// stored once, in `messageTable`, and referred to by index; see README.md).
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { deepEqual, firstDifference, hashSeed, loadPi, parseArgs, prng, runMain } from "./common.mjs";

/** The entry types pi 1.6.0 knows; any other type is "unknown" when choosing leaves. */
const KNOWN_TYPES = new Set([
  "message", "thinking_level_change", "model_change", "usage", "compaction", "branch_summary", "custom",
  "custom_message", "context_edit", "label", "session_info",
]);
/** Kinds of interior entries the oracle always samples a few leaves from, when present. */
const SAMPLED_KINDS = [
  "context_edit", "usage", "compaction", "unknown", "branch_summary", "custom_message", "label",
  "message/system", "message/toolResult", "message/bashExecution", "session_info", "model_change",
];
/** How many leaves are sampled of each kind and of any kind (defaults of chooseLeaves). */
const PER_KIND = 3;
const RANDOM_EXTRA = 6;

const kindOf = (entry) =>
  !KNOWN_TYPES.has(entry.type) ? "unknown" : entry.type === "message" ? `message/${entry.message?.role}` : entry.type;

/**
 * getTree() flattened depth-first in pre-order, children in pi's order. `parentId` is the
 * tree parent (null for a root, an orphan included), `depth` the number of tree ancestors.
 * Iterative: the trees are deep.
 */
export function flattenTree(roots) {
  const rows = [];
  const stack = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push([roots[i], null, 0]);
  while (stack.length > 0) {
    const [node, parentId, depth] = stack.pop();
    rows.push({
      id: node.entry.id,
      parentId,
      depth,
      label: node.label ?? null,
      labelTimestamp: node.labelTimestamp ?? null,
    });
    for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], node.entry.id, depth + 1]);
  }
  return rows;
}

/**
 * The leaves an oracle covers: the file's leaf, every tree leaf, and a deterministic sample
 * of interior entries (a few of each kind in SAMPLED_KINDS, plus some of any kind), seeded by
 * the session id so that both pi versions, and every regeneration, choose the same ones.
 */
export function chooseLeaves(sm, entries, tree, { treeLeavesMax = Infinity, perKind = PER_KIND, randomExtra = RANDOM_EXTRA } = {}) {
  const chosen = [];
  const seen = new Set();
  const add = (id) => {
    if (typeof id === "string" && !seen.has(id)) {
      seen.add(id);
      chosen.push(id);
    }
  };
  add(sm.getLeafId());
  const rng = prng(hashSeed(`leaves:${sm.getHeader()?.id}`));
  const parents = new Set(tree.map((row) => row.parentId));
  const treeLeaves = tree.filter((row) => !parents.has(row.id)).map((row) => row.id);
  // Large transcripts have hundreds of leaves; a live run asks about a sample of them.
  while (treeLeaves.length > treeLeavesMax) treeLeaves.splice(rng.int(0, treeLeaves.length - 1), 1);
  for (const id of treeLeaves) add(id);
  const byKind = new Map();
  for (const entry of entries) {
    const kind = kindOf(entry);
    if (!byKind.has(kind)) byKind.set(kind, []);
    byKind.get(kind).push(entry.id);
  }
  for (const kind of SAMPLED_KINDS) {
    const ids = byKind.get(kind) ?? [];
    for (let i = 0; i < perKind && ids.length > 0; i++) add(ids[rng.int(0, ids.length - 1)]);
  }
  for (let i = 0; i < randomExtra && entries.length > 0; i++) add(entries[rng.int(0, entries.length - 1)].id);
  return chosen;
}

/**
 * pi's answers for `file`, opened with pi `pi` (from common.loadPi) on a private copy: pi
 * 1.6.0 repairs a torn tail and both versions rewrite old-version files on open, and the
 * oracle must not change its input. `leafIds` overrides the chosen leaves (to ask two pi
 * versions about the same ones); the other options go to chooseLeaves (a live run asks
 * about fewer leaves).
 */
export function computeOracle(file, pi, { leafIds, ...sample } = {}) {
  const scratch = mkdtempSync(join(tmpdir(), "pi-diff-oracle-"));
  try {
    const copy = join(scratch, basename(file));
    copyFileSync(file, copy);
    return oracleOf(pi, pi.module.SessionManager.open(copy), leafIds, sample);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function oracleOf(pi, sm, leafIds, sample) {
  const { buildSessionContext, buildContextEntries, buildSessionProjection } = pi.module;
  const is16 = pi.short === "1.6";
  const entries = sm.getEntries();
  const tree = flattenTree(sm.getTree());
  const oracle = {
    pi: pi.version,
    header: sm.getHeader(),
    leafId: sm.getLeafId() ?? null,
    sessionName: sm.getSessionName() ?? null,
    // 1.6.0 counts its id map (getEntryCount); 0.73.1 has no such method.
    entryCount: is16 ? sm.getEntryCount() : entries.length,
    // pi's own label maps (public fields of the manager), so that labels of ids that are not
    // entries would be seen too.
    labels: Object.fromEntries(sm.labelsById),
    labelTimestamps: Object.fromEntries(sm.labelTimestampsById),
    tree,
    leaves: [],
  };
  for (const leafId of leafIds ?? chooseLeaves(sm, entries, tree, sample)) {
    const leaf = {
      leafId,
      path: sm.getBranch(leafId).map((entry) => entry.id),
      context: buildSessionContext(entries, leafId),
    };
    if (is16) {
      leaf.contextEntries = buildContextEntries(entries, leafId).map((entry) => entry.id);
      const projection = buildSessionProjection(entries, leafId);
      leaf.projection = {
        entries: projection.entries.map((item) => ({ id: item.sourceEntry.id, messages: item.messages })),
        messages: projection.messages,
        thinkingLevel: projection.thinkingLevel,
        model: projection.model,
      };
      if (!deepEqual(projection.messages, leaf.context.messages)) {
        throw new Error(`pi ${pi.version}: projection and context differ at ${leafId}`);
      }
    }
    oracle.leaves.push(leaf);
  }
  // The module function on the manager's entries is what the manager itself answers.
  const own = oracle.leaves.find((leaf) => leaf.leafId === oracle.leafId);
  if (own && !deepEqual(own.context, sm.buildSessionContext())) {
    throw new Error(`pi ${pi.version}: buildSessionContext(entries, leaf) differs from the manager's own`);
  }
  return JSON.parse(JSON.stringify(oracle));
}

/**
 * Where two oracles (two pi versions on one file) disagree on what both answer, or null.
 * contextEntries and projection exist in 1.6.0 only and are not compared.
 */
export function oracleAgreement(a, b) {
  for (const key of ["header", "leafId", "sessionName", "entryCount", "labels", "labelTimestamps", "tree"]) {
    const difference = firstDifference(a[key], b[key], key);
    if (difference) return difference;
  }
  if (a.leaves.length !== b.leaves.length) return `leaves: ${a.leaves.length} / ${b.leaves.length}`;
  for (let i = 0; i < a.leaves.length; i++) {
    for (const key of ["leafId", "path", "context"]) {
      const difference = firstDifference(a.leaves[i][key], b.leaves[i][key], `leaf ${a.leaves[i].leafId} ${key}`);
      if (difference) return difference;
    }
  }
  return null;
}

/**
 * The committed form: every message object stored once in `messageTable` and referred to by
 * its index from the contexts and projections (a vector's contexts repeat the same messages
 * at every leaf; stored verbatim they would be tens of times the transcript's size).
 */
export function compactOracle(oracle) {
  const table = [];
  const indexOf = new Map();
  const intern = (messages) =>
    messages.map((message) => {
      const key = JSON.stringify(message);
      if (!indexOf.has(key)) {
        indexOf.set(key, table.length);
        table.push(message);
      }
      return indexOf.get(key);
    });
  const leaves = oracle.leaves.map((leaf) => ({
    ...leaf,
    context: { ...leaf.context, messages: intern(leaf.context.messages) },
    ...(leaf.projection
      ? {
          projection: {
            ...leaf.projection,
            entries: leaf.projection.entries.map((item) => ({ id: item.id, messages: intern(item.messages) })),
            messages: intern(leaf.projection.messages),
          },
        }
      : {}),
  }));
  const { leaves: _, ...rest } = oracle;
  return { format: "treelog-pi-oracle/2", ...rest, messageTable: table, leaves };
}

/**
 * JSON text of an oracle, one top-level key per line and one item per line in the long arrays,
 * so that a regenerated oracle diffs line by line in git.
 */
export function oracleText(oracle) {
  const lines = ["{"];
  const keys = Object.keys(oracle);
  keys.forEach((key, i) => {
    const comma = i + 1 < keys.length ? "," : "";
    const value = oracle[key];
    if (Array.isArray(value) && ["tree", "messageTable", "leaves"].includes(key) && value.length > 0) {
      lines.push(`${JSON.stringify(key)}:[`);
      value.forEach((item, j) => lines.push(JSON.stringify(item) + (j + 1 < value.length ? "," : "")));
      lines.push(`]${comma}`);
    } else {
      lines.push(`${JSON.stringify(key)}:${JSON.stringify(value)}${comma}`);
    }
  });
  lines.push("}");
  return `${lines.join("\n")}\n`;
}

export function writeOracle(path, oracle) {
  writeFileSync(path, oracleText(compactOracle(oracle)));
}

async function main() {
  const args = parseArgs(process.argv.slice(2), ["compact"]);
  const [file] = args._;
  if (!file || !args.pi) {
    console.error("usage: node oracle.mjs FILE --pi 1.6|0.73 [--leaves ID,ID,...] [--compact]");
    process.exit(2);
  }
  const pi = await loadPi(args.pi);
  const oracle = computeOracle(resolve(file), pi, { leafIds: args.leaves ? args.leaves.split(",") : undefined });
  process.stdout.write(args.compact ? oracleText(compactOracle(oracle)) : `${JSON.stringify(oracle)}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runMain(main);
}
