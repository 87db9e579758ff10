// What treelog-pi (bin/treelog-pi.mjs) and `node --import treelog/pi-hook` (pi-hook.mjs) share:
// finding the pi the user has installed, checking its version, Node's caches, and the module
// hooks that put treelog's SessionManager (index.js) in pi's place: in pi's bundled CLI (the
// one chunk that declares the class), or in every module of pi's unbundled CLI that imports
// pi's own dist/core/session-manager.js.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import module from "node:module";
import { homedir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { applyReplacements } from "./replacements.mjs";
import { openResolveCache } from "./resolve-cache.mjs";

export const PI_PACKAGE = "@earendil-works/pi-coding-agent";
/** The pi releases whose internals treelog's module has been checked against (test/cli.test.mjs). */
export const SUPPORTED = "1.6.x";
export const isSupported = (version) => /^1\.6\.\d+$/.test(version);
/** The flag that runs an unsupported pi anyway; taken out of the arguments pi sees. */
export const UNSUPPORTED_FLAG = "--unsupported-pi";

/** treelog's own module: pi 1.6.0's whole session-manager surface. */
export const TREELOG_MODULE = new URL("../index.js", import.meta.url);

/** A one-line failure: the message on stderr, exit 1. */
export function fail(program, message) {
  process.stderr.write(`${program}: ${message}\n`);
  process.exit(1);
}

const readJson = (file) => {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
};
const isPi = (dir) => readJson(join(dir, "package.json"))?.name === PI_PACKAGE;

/** The nearest folder at or above `start` that is pi's package (by its package.json), or undefined. */
export function piPackageAbove(start) {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json")) && isPi(dir)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** The global npm root without running npm: the prefix npm is told of, else Node's own prefix. */
function guessedGlobalRoots(env) {
  const prefixes = [env.npm_config_prefix, env.NPM_CONFIG_PREFIX, dirname(dirname(process.execPath))].filter(Boolean);
  return prefixes.map((prefix) => (process.platform === "win32" ? join(prefix, "node_modules") : join(prefix, "lib", "node_modules")));
}

/** The `pi` command on PATH when it is an npm install of pi: the package it runs. */
function piOnPath(env) {
  if (process.platform === "win32") return undefined;
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const bin = join(dir, "pi");
    try {
      const root = piPackageAbove(dirname(realpathSync(bin)));
      if (root) return root;
    } catch {
      // not there, or a dangling link: the next folder on PATH
    }
  }
  return undefined;
}

/**
 * The pi to run: TREELOG_PI_ROOT when set; else the nearest node_modules/<pi> at or above
 * `cwd` (the project's); else the global one: the `pi` on PATH when npm installed it, the
 * global npm root as Node's prefix implies, and last `npm root -g` itself. { root, from } or
 * undefined.
 */
export function findPi({ cwd = process.cwd(), env = process.env } = {}) {
  if (env.TREELOG_PI_ROOT) return { root: resolve(cwd, env.TREELOG_PI_ROOT), from: "TREELOG_PI_ROOT" };
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", PI_PACKAGE);
    if (existsSync(join(candidate, "package.json"))) return { root: candidate, from: "the project's node_modules" };
    if (dirname(dir) === dir) break;
  }
  const onPath = piOnPath(env);
  if (onPath) return { root: onPath, from: "the pi on PATH" };
  for (const globalRoot of guessedGlobalRoots(env)) {
    const candidate = join(globalRoot, PI_PACKAGE);
    if (existsSync(join(candidate, "package.json"))) return { root: candidate, from: "the global npm root" };
  }
  try {
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const globalRoot = execFileSync(npm, ["root", "-g"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], shell: process.platform === "win32" }).trim();
    const candidate = join(globalRoot, PI_PACKAGE);
    if (globalRoot && existsSync(join(candidate, "package.json"))) return { root: candidate, from: "the global npm root" };
  } catch {
    // no npm: not found
  }
  return undefined;
}

/**
 * pi's version at `root`, checked: a supported one (1.6.x) runs; another is refused in one
 * line with exit 1, unless `allowUnsupported` (then a one-line warning). Also refuses a root
 * that is not pi's package or lacks the files the hook needs. Returns the version.
 */
export function checkPi(program, root, { allowUnsupported = false } = {}) {
  const manifest = readJson(join(root, "package.json"));
  if (!manifest) fail(program, `no pi at ${root} (no readable package.json there)`);
  if (manifest.name !== PI_PACKAGE) fail(program, `${root} holds ${manifest.name ?? "a package without a name"}, not pi (${PI_PACKAGE})`);
  const version = String(manifest.version);
  if (!isSupported(version)) {
    if (!allowUnsupported) {
      fail(program, `pi ${version} (at ${root}) is not supported; supported: pi ${SUPPORTED} (${UNSUPPORTED_FLAG} runs it anyway)`);
    }
    process.stderr.write(`${program}: warning: pi ${version} is not a supported version (${SUPPORTED}); running it anyway on treelog's SessionManager (${UNSUPPORTED_FLAG})\n`);
  }
  // pi's own Node floor (1.6: >=22.19.0), said in one line rather than as pi's first syntax error.
  const floor = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(String(manifest.engines?.node ?? "").trim());
  if (floor) {
    const [major, minor, patch] = process.versions.node.split(".").map(Number);
    const [a, b, c] = floor.slice(1).map(Number);
    if (major < a || (major === a && (minor < b || (minor === b && patch < c)))) {
      fail(program, `pi ${version} needs Node ${floor[0].replace(/\s+/g, "")}, and this is Node ${process.version} (${process.execPath})`);
    }
  }
  for (const file of ["dist/cli.js", "dist/core/session-manager.js"]) {
    if (!existsSync(join(root, file))) fail(program, `pi ${version} at ${root} has no ${file}`);
  }
  return version;
}

/** `args` without the launcher's own flag (before a `--`, after which all is pi's message). */
export function takeFlag(args, flag) {
  const end = args.indexOf("--");
  const head = end < 0 ? args : args.slice(0, end);
  const found = head.includes(flag);
  return { found, args: found ? [...head.filter((arg) => arg !== flag), ...(end < 0 ? [] : args.slice(end))] : args };
}

/** treelog's cache folder: $XDG_CACHE_HOME/treelog, else ~/.cache/treelog (undefined without a home). */
export function cacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME || (homedir() ? join(homedir(), ".cache") : undefined);
  return base ? join(base, "treelog") : undefined;
}

/**
 * Node's compile cache (module.enableCompileCache) for every module loaded from here on: in
 * NODE_COMPILE_CACHE when set, else <cache>/compile. Unavailable or failing, it is skipped.
 */
export function enableCompileCache(env = process.env) {
  if (typeof module.enableCompileCache !== "function" || env.NODE_DISABLE_COMPILE_CACHE) return;
  const dir = env.NODE_COMPILE_CACHE || (cacheDir(env) && join(cacheDir(env), "compile"));
  try {
    module.enableCompileCache(dir);
  } catch {
    // a cache is an optimisation only
  }
}

/**
 * Whether this run uses Node's synchronous module hooks (module.registerHooks, Node >= 22.15 /
 * 23.5); TREELOG_PI_HOOKS=async turns them off (for the tests).
 */
const syncHooks = (env) => typeof module.registerHooks === "function" && env.TREELOG_PI_HOOKS !== "async";

/**
 * A resolve hook that asks the resolve cache (resolve-cache.mjs) of pi's modules, kept per
 * Node, pi and `route`, or Node itself when the cache is off (TREELOG_PI_RESOLVE_CACHE=0) or
 * there is no cache folder. Returns [hook, cache file or undefined].
 */
function cachedResolve(piRoot, version, route, env) {
  const cache = env.TREELOG_PI_RESOLVE_CACHE === "0" || !cacheDir(env)
    ? undefined
    : openResolveCache(cacheDir(env), [process.version, process.platform, process.arch, realpathSync(piRoot), version, route]);
  const resolve = (specifier, context, nextResolve) => (cache ? cache.resolve(specifier, context, nextResolve) : nextResolve(specifier, context));
  return [resolve, cache?.file];
}

/**
 * Hands treelog's module to every import of pi's dist/core/session-manager.js at `piRoot`
 * (by the resolved URL, whatever the specifier: ./, ../core/, the package index's re-export).
 * module.registerHooks (synchronous, in this thread; Node >= 22.15 / 23.5) when there is one,
 * with the resolve cache (resolve-cache.mjs) of pi's modules beside it; else module.register
 * with hook/async-hooks.mjs. TREELOG_PI_HOOKS=async forces the latter (for the tests).
 */
export function redirectSessionManager(piRoot, { env = process.env, version = "" } = {}) {
  const from = pathToFileURL(realpathSync(join(piRoot, "dist/core/session-manager.js"))).href;
  const to = TREELOG_MODULE.href;
  if (syncHooks(env)) {
    const [cached, cacheFile] = cachedResolve(piRoot, version, to, env);
    module.registerHooks({
      resolve(specifier, context, nextResolve) {
        const resolved = cached(specifier, context, nextResolve);
        return resolved.url === from ? { url: to, format: "module", shortCircuit: true } : resolved;
      },
    });
    return { hooks: "registerHooks", cache: cacheFile };
  }
  module.register(new URL("./async-hooks.mjs", import.meta.url), { data: { from, to } });
  return { hooks: "register" };
}

/** How pi 1.6's bundle declares its SessionManager, in the chunk that holds it. */
const BUNDLED_CLASS = "var SessionManager=class _SessionManager{";
/** The same declaration with treelog's class in the binding every user of it reads. */
const BUNDLED_CLASS_REPLACED = "var SessionManager=__treelogSessionManager,__piSessionManager=class _SessionManager{";

/**
 * pi's bundled CLI (dist/bundle/cli.js) and the chunk of it that declares the SessionManager,
 * when it declares it exactly once as pi 1.6's bundle does; undefined otherwise (another
 * layout: the unbundled CLI runs instead). Looks at the chunks the CLI runtime imports by
 * name, the main one first; costs a read of that chunk (2.6 MB in pi 1.6.0).
 */
export function findBundledSessionManager(piRoot) {
  const bundle = join(piRoot, "dist/bundle");
  let runtime;
  try {
    runtime = readFileSync(join(bundle, "cli-runtime.js"), "utf8");
  } catch {
    return undefined;
  }
  if (!existsSync(join(bundle, "cli.js"))) return undefined;
  for (const [, chunk] of runtime.matchAll(/import\{[^}]*\}from"\.\/(chunks\/[\w.-]+\.js)"/g)) {
    let source;
    try {
      source = readFileSync(join(bundle, chunk), "utf8");
    } catch {
      continue;
    }
    const at = source.indexOf(BUNDLED_CLASS);
    if (at < 0) continue;
    if (source.indexOf(BUNDLED_CLASS, at + 1) >= 0) return undefined;
    return { cli: join(bundle, "cli.js"), chunk: realpathSync(join(bundle, chunk)) };
  }
  return undefined;
}

/**
 * Loads the chunk `found.chunk` of pi's bundle (findBundledSessionManager) with treelog's
 * SessionManager in the place of pi's: the chunk imports treelog's module and binds its class
 * to the name the whole bundle uses; pi's class stays, unused, under another name. Needs
 * module.registerHooks (Node >= 22.15 / 23.5): false without it (the caller runs the
 * unbundled CLI). The resolve cache (resolve-cache.mjs) serves the bundle's imports too.
 * The same load applies the replacements of pi's whole-history loops (replacements.mjs).
 */
export function patchBundledSessionManager(piRoot, found, { env = process.env, version = "", program = "treelog-pi" } = {}) {
  if (!syncHooks(env)) return false;
  const chunkUrl = pathToFileURL(found.chunk).href;
  const prelude = `import{SessionManager as __treelogSessionManager}from${JSON.stringify(TREELOG_MODULE.href)};`;
  module.registerHooks({
    resolve: cachedResolve(piRoot, version, "bundle", env)[0],
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      if (url !== chunkUrl) return loaded;
      const text = typeof loaded.source === "string" ? loaded.source : Buffer.from(loaded.source).toString("utf8");
      // pi's whole-history loops that the index answers (hook/replacements.mjs), each off with
      // a line on stderr when this pi's bundle does not hold it.
      const replaced = applyReplacements(text.replace(BUNDLED_CLASS, BUNDLED_CLASS_REPLACED), { version, env });
      for (const line of replaced.off) process.stderr.write(`${program}: ${line}\n`);
      // The chunk opens with its imports (no shebang): more imports go first.
      return { ...loaded, source: prelude + replaced.prelude + replaced.source };
    },
  });
  return true;
}

/** Whether `file` is (a link to) pi's bundled bin, which holds its own SessionManager. */
export function isPiBundle(file, piRoot) {
  try {
    return realpathSync(file).startsWith(join(realpathSync(piRoot), "dist", "bundle")) && statSync(file).isFile();
  } catch {
    return false;
  }
}
