// A resolve cache for pi's unbundled modules: Node's own resolution of each import (stat
// calls, package.json lookups, exports maps, realpath) runs again at every start for every
// one of pi's imports; a cached answer is a Map lookup. Used by the module.registerHooks
// resolve hook of hook/pi.mjs.
//
// What is kept: for each import made from a file inside a package (a node_modules/<name>
// folder, or pi's own root) that resolved to a file inside one, the URL and format Node's
// resolution gave. What keeps it true: a stamp (inode, size, mtime) of each such package's
// package.json, and of each node_modules folder holding one, with its package manager's
// lockfile (.package-lock.json, .modules.yaml, .yarn-integrity): an install, update or
// removal changes one of them, and a cache whose stamps do not all hold is dropped whole.
// The cache file is <cache>/resolve-<hash of Node's version, pi's root and version>.json,
// written at exit when the run resolved anything new. TREELOG_PI_RESOLVE_CACHE=0 turns it off.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

const FORMAT = 1;
const LOCKFILES = [".package-lock.json", ".modules.yaml", ".yarn-integrity"];
const NODE_MODULES = `${sep}node_modules${sep}`;

/** A file's or folder's stamp: inode, size and mtime, or "none" when it does not exist. */
function stampOf(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  return stat ? `${stat.ino}:${stat.size}:${stat.mtimeMs}` : "none";
}

/**
 * The package folder holding `path`: the last node_modules/<name> (or <@scope>/<name>) in it,
 * else `root` when the path lies inside it; undefined otherwise (not cached).
 */
function packageOf(path, root) {
  const at = path.lastIndexOf(NODE_MODULES);
  if (at >= 0) {
    const rest = path.slice(at + NODE_MODULES.length).split(sep);
    const depth = rest[0].startsWith("@") ? 2 : 1;
    if (rest.length > depth) return path.slice(0, at + NODE_MODULES.length) + rest.slice(0, depth).join(sep);
    return undefined;
  }
  return path.startsWith(root + sep) ? root : undefined;
}

/** The node_modules folders above a package folder (its own, and its scope folder). */
function foldersOf(packageDir) {
  const parent = dirname(packageDir);
  return basename(parent).startsWith("@") ? [parent, dirname(parent)] : [parent];
}

/**
 * Opens (or starts) the cache in `dir` for `keyParts` (which must hold pi's real root as its
 * fourth part). Returns { file, resolve(specifier, context, nextResolve) }.
 */
export function openResolveCache(dir, keyParts) {
  const key = JSON.stringify(keyParts);
  const root = keyParts[3];
  const file = join(dir, `resolve-${createHash("sha256").update(key).digest("hex").slice(0, 16)}.json`);

  const urls = [];
  const urlIndex = new Map();
  const conditionSets = [];
  const conditionIndex = new Map();
  const entries = new Map();
  const stamps = new Map();
  const indexOf = (list, index, value) => {
    let at = index.get(value);
    if (at === undefined) {
      at = list.push(value) - 1;
      index.set(value, at);
    }
    return at;
  };

  let saved;
  try {
    saved = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    saved = undefined;
  }
  if (saved?.format === FORMAT && saved.key === key && saved.stamps.every(([path, stamp]) => stampOf(path) === stamp)) {
    for (const url of saved.urls) indexOf(urls, urlIndex, url);
    for (const conditions of saved.conditions) indexOf(conditionSets, conditionIndex, conditions);
    for (const [path, stamp] of saved.stamps) stamps.set(path, stamp);
    for (const [parent, conditions, specifier, url, format] of saved.entries) {
      entries.set(`${parent} ${conditions} ${specifier}`, [url, format]);
    }
  }

  let dirty = false;
  // Node hands every import the same few conditions arrays: each is joined once.
  const joined = new WeakMap();
  const conditionsOf = (list) => {
    if (!list) return "";
    let text = joined.get(list);
    if (text === undefined) joined.set(list, (text = list.join(",")));
    return text;
  };
  const stamp = (packageDir) => {
    const manifest = join(packageDir, "package.json");
    if (stamps.has(manifest)) return;
    stamps.set(manifest, stampOf(manifest));
    for (const folder of foldersOf(packageDir)) {
      if (stamps.has(folder)) continue;
      stamps.set(folder, stampOf(folder));
      if (basename(folder) === "node_modules") for (const lockfile of LOCKFILES) stamps.set(join(folder, lockfile), stampOf(join(folder, lockfile)));
    }
  };

  const save = () => {
    if (!dirty) return;
    const list = [];
    for (const [k, [url, format]] of entries) {
      const first = k.indexOf(" ");
      const second = k.indexOf(" ", first + 1);
      list.push([Number(k.slice(0, first)), Number(k.slice(first + 1, second)), k.slice(second + 1), url, format]);
    }
    const body = JSON.stringify({ format: FORMAT, key, stamps: [...stamps], urls, conditions: conditionSets, entries: list });
    try {
      mkdirSync(dir, { recursive: true });
      const temp = `${file}.${process.pid}.tmp`;
      writeFileSync(temp, body);
      renameSync(temp, file);
    } catch {
      // a cache is an optimisation only
    }
  };
  process.once("exit", save);

  return {
    file,
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      if (parent === undefined || !parent.startsWith("file:") || specifier.startsWith("node:")) return nextResolve(specifier, context);
      const conditions = conditionsOf(context.conditions);
      const parentAt = urlIndex.get(parent);
      const conditionsAt = conditionIndex.get(conditions);
      if (parentAt !== undefined && conditionsAt !== undefined) {
        const hit = entries.get(`${parentAt} ${conditionsAt} ${specifier}`);
        if (hit) return { url: urls[hit[0]], format: hit[1] ?? undefined, shortCircuit: true };
      }
      const resolved = nextResolve(specifier, context);
      if (!resolved.url.startsWith("file:")) return resolved;
      const parentPackage = packageOf(fileURLToPath(parent), root);
      const resolvedPackage = parentPackage && packageOf(fileURLToPath(resolved.url), root);
      if (resolvedPackage) {
        stamp(parentPackage);
        stamp(resolvedPackage);
        const k = `${indexOf(urls, urlIndex, parent)} ${indexOf(conditionSets, conditionIndex, conditions)} ${specifier}`;
        entries.set(k, [indexOf(urls, urlIndex, resolved.url), resolved.format ?? null]);
        dirty = true;
      }
      return resolved;
    },
  };
}
