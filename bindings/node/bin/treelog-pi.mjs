#!/usr/bin/env node
// treelog-pi [pi's own arguments]: runs the pi you have installed (TREELOG_PI_ROOT, else this
// project's node_modules, else the global one) in this process, with treelog's SessionManager
// in place of pi's: in pi's bundled CLI (what `pi` runs), or, where its bundle is laid out
// otherwise, in every module of pi's unbundled CLI that imports it. Arguments, environment, stdio, TTY,
// signals and exit code are pi's own. pi 1.6.x only; --unsupported-pi runs another anyway.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

import {
  UNSUPPORTED_FLAG, cacheDir, checkPi, enableCompileCache, fail, findBundledSessionManager, findPi, patchBundledSessionManager, redirectSessionManager,
  takeFlag,
} from "../hook/pi.mjs";

const PROGRAM = "treelog-pi";
enableCompileCache();
const { found: allowUnsupported, args } = takeFlag(process.argv.slice(2), UNSUPPORTED_FLAG);
const pi = findPi();
if (!pi) {
  fail(PROGRAM, "pi (@earendil-works/pi-coding-agent) not found in this project's node_modules, on PATH or in the global npm root; install it or set TREELOG_PI_ROOT to its folder");
}
const version = checkPi(PROGRAM, pi.root, { allowUnsupported });
// pi's own bundle when its SessionManager can be swapped in it (what `pi` runs, and ~1,500
// fewer modules to load than the unbundled CLI); TREELOG_PI_BUNDLE=0 runs the unbundled one.
const bundled = process.env.TREELOG_PI_BUNDLE === "0" ? undefined : findBundledSessionManager(pi.root);
let cli = join(pi.root, "dist/cli.js");
if (bundled && patchBundledSessionManager(pi.root, bundled, { version })) cli = bundled.cli;
else redirectSessionManager(pi.root, { version });
// /resume's listing keeps big sessions' summaries in treelog's cache folder
// (TREELOG_PI_LISTING_CACHE=0 turns that off).
if (cacheDir() && process.env.TREELOG_PI_LISTING_CACHE !== "0") {
  const { keepSummaries } = await import("../lib/listing.js");
  keepSummaries(join(cacheDir(), "listing"));
}
// pi reads its arguments from process.argv.slice(2), and its entry point from process.argv[1].
process.argv = [process.argv[0], cli, ...args];
await import(pathToFileURL(cli).href);
